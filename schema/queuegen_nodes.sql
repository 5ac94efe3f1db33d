-- queuegen_nodes records the worker processes (nodes) of each queue: one row
-- per node and queue, written by the worker when it starts and on each node
-- heartbeat, deleted when it stops gracefully. A row whose heartbeat is older
-- than a few of its intervals is a node that died: the jobs its node id still
-- leases come back when their leases expire.
CREATE TABLE queuegen_nodes (
    node         text        NOT NULL,
    queue        text        NOT NULL,
    concurrency  integer     NOT NULL,
    running      integer     NOT NULL,
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    heartbeat_ms integer     NOT NULL,
    CONSTRAINT queuegen_nodes_pkey PRIMARY KEY (node, queue)
);

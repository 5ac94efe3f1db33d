-- queuegen_queues is the queue registry: one row per queue, written by the
-- migrations queuegen emits, so that tools such as `queuegen migrate status`
-- find every queue table of a database without reading the spec.
CREATE TABLE queuegen_queues (
    name          text        NOT NULL,
    table_name    text        NOT NULL,
    mode          text        NOT NULL,
    paused        boolean     NOT NULL DEFAULT false,
    registered_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT queuegen_queues_pkey PRIMARY KEY (name),
    CONSTRAINT queuegen_queues_table_name_key UNIQUE (table_name),
    CONSTRAINT queuegen_queues_mode_check CHECK (mode IN ('lease', 'transaction'))
);

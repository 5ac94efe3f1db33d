-- queuegen_periodic records the last tick pushed of each periodic job, so
-- that any number of nodes push each tick exactly once: a node advances the
-- tick and pushes the job in one transaction, and of nodes racing for one
-- tick only one advances it.
CREATE TABLE queuegen_periodic (
    queue     text        NOT NULL,
    name      text        NOT NULL,
    last_tick timestamptz NOT NULL,
    CONSTRAINT queuegen_periodic_pkey PRIMARY KEY (queue, name)
);

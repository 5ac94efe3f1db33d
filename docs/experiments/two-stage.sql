-- Two-stage fair scheduling against the one-stage fair claim: an experiment,
-- not generated code, run before the backlog was built. BENCHMARKS.md
-- ("Backlogs: two-stage scheduling") has the figures, and those of the
-- generated statements.
--
-- One table of 1,000,000 queued jobs (900,000 of tenant a, 100,000 over 100
-- other tenants) is claimed by the fair claim queuegen generates for
-- fair_by (one stage). Beside it, the same jobs in a backlog table from
-- which a scheduler step moves 500 at a time, fairly (the same tenant skip
-- and shares), into a small work table that workers claim from in order
-- (two stages). Run it with psql:
--
--   psql -d DB -f docs/experiments/two-stage.sql
--
-- and repeat the last section (each round claims and completes 500 jobs
-- both ways) to see the steady state; \timing prints each statement's time.

DROP TABLE IF EXISTS one, bl, wk;
CREATE TABLE one (id bigserial PRIMARY KEY, state text NOT NULL DEFAULT 'available', attempt int NOT NULL DEFAULT 0, max_attempts int NOT NULL DEFAULT 3, priority smallint NOT NULL DEFAULT 0, created_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz, errors text[] NOT NULL DEFAULT '{}', unique_key text,
  run_after timestamptz NOT NULL DEFAULT now(), attempted_at timestamptz, locked_by text, locked_until timestamptz, tenant text NOT NULL, n int NOT NULL);
CREATE INDEX one_claim ON one (run_after, id) WHERE state = 'available';
CREATE INDEX one_fair ON one (tenant, run_after, id) WHERE state = 'available';
CREATE INDEX one_lease ON one (locked_until) WHERE locked_until IS NOT NULL;
INSERT INTO one (tenant, n) SELECT CASE WHEN g <= 900000 THEN 'a' ELSE 't' || (g % 100) END, g FROM generate_series(1, 1000000) g;
CREATE TABLE bl (id bigserial PRIMARY KEY, run_after timestamptz NOT NULL DEFAULT now(), tenant text NOT NULL, n int NOT NULL);
CREATE INDEX bl_fair ON bl (tenant, run_after, id);
INSERT INTO bl (tenant, n) SELECT CASE WHEN g <= 900000 THEN 'a' ELSE 't' || (g % 100) END, g FROM generate_series(1, 1000000) g;
CREATE TABLE wk (id bigint PRIMARY KEY, state text NOT NULL DEFAULT 'available', attempt int NOT NULL DEFAULT 0, run_after timestamptz NOT NULL,
  attempted_at timestamptz, locked_by text, locked_until timestamptz, tenant text NOT NULL, n int NOT NULL);
CREATE INDEX wk_claim ON wk (run_after, id) WHERE state = 'available';
VACUUM ANALYZE one; VACUUM ANALYZE bl;

\timing on

-- One stage: the fair claim of 500, then their completion.
WITH RECURSIVE expired AS (
    SELECT id
    FROM one
    WHERE state = 'running'
      AND locked_until < coalesce(NULL::timestamptz::timestamptz, now())
      AND attempt < max_attempts
    ORDER BY locked_until
    LIMIT 500::integer
    FOR UPDATE SKIP LOCKED
), keys AS (
    -- Each tenant with due jobs, one index probe a value: the first
    -- value, then the next one above it, until none is left.
    (SELECT tenant AS key
     FROM one
     WHERE state = 'available' AND run_after <= coalesce(NULL::timestamptz::timestamptz, now())
     ORDER BY tenant
     LIMIT 1)
    UNION ALL
    SELECT (SELECT next.tenant
            FROM one AS next
            WHERE next.state = 'available' AND next.run_after <= coalesce(NULL::timestamptz::timestamptz, now()) AND next.tenant > keys.key
            ORDER BY next.tenant
            LIMIT 1)
    FROM keys
    WHERE keys.key IS NOT NULL
), share AS (
    -- Each value's share of the batch, rounded up.
    SELECT ((500::integer + count(*) - 1) / greatest(count(*), 1))::integer AS n
    FROM keys
    WHERE key IS NOT NULL
), due AS (
    -- Up to a share of each value's first due jobs, locked; ranked
    -- within their value, so that the batch takes every value's first
    -- job, then every value's second, and so on.
    SELECT job.id
    FROM keys
    CROSS JOIN share
    CROSS JOIN LATERAL (
        SELECT id, run_after,
               row_number() OVER (ORDER BY run_after, id) AS turn
        FROM (SELECT id, run_after
              FROM one
              WHERE state = 'available' AND run_after <= coalesce(NULL::timestamptz::timestamptz, now()) AND tenant = keys.key
              ORDER BY run_after, id
              LIMIT share.n
              FOR UPDATE SKIP LOCKED) AS first
    ) AS job
    WHERE keys.key IS NOT NULL
    ORDER BY job.turn, job.run_after, job.id
    LIMIT 500::integer
), picked AS (
    SELECT id FROM expired
    UNION ALL
    SELECT id FROM due
    LIMIT 500::integer
)
UPDATE one AS job
SET state = 'running',
    attempt = job.attempt + 1,
    attempted_at = coalesce(NULL::timestamptz::timestamptz, now()),
    locked_by = 'node'::text,
    locked_until = coalesce(NULL::timestamptz::timestamptz, now()) + '30 seconds'::interval
WHERE job.id = ANY(ARRAY(SELECT id FROM picked))
RETURNING job.id, job.state, job.attempt, job.max_attempts, job.priority, job.run_after, job.created_at, job.attempted_at, job.finished_at, job.locked_by, job.locked_until, job.errors, job.unique_key, job.tenant, job.n
;;
DELETE FROM one WHERE locked_until IS NOT NULL;

-- Two stages: the scheduler moves 500 fairly into the work table, a worker
-- claims them in order, then completes them.
WITH RECURSIVE keys AS (
    (SELECT tenant AS key FROM bl ORDER BY tenant LIMIT 1)
    UNION ALL
    SELECT (SELECT next.tenant FROM bl AS next WHERE next.tenant > keys.key ORDER BY next.tenant LIMIT 1)
    FROM keys WHERE keys.key IS NOT NULL
), share AS (
    SELECT ((500 + count(*) - 1) / greatest(count(*), 1))::integer AS n FROM keys WHERE key IS NOT NULL
), pick AS (
    SELECT job.id FROM keys CROSS JOIN share CROSS JOIN LATERAL (
        SELECT id, run_after, row_number() OVER (ORDER BY run_after, id) AS turn
        FROM (SELECT id, run_after FROM bl WHERE tenant = keys.key ORDER BY run_after, id LIMIT share.n) AS first
    ) AS job
    WHERE keys.key IS NOT NULL
    ORDER BY job.turn, job.run_after, job.id LIMIT 500
), moved AS (
    DELETE FROM bl WHERE id = ANY(ARRAY(SELECT id FROM pick)) RETURNING *
)
INSERT INTO wk (id, run_after, tenant, n) SELECT id, run_after, tenant, n FROM moved;
UPDATE wk SET state = 'running', attempt = attempt + 1, attempted_at = now(), locked_by = 'node', locked_until = now() + interval '30 seconds'
WHERE id = ANY(ARRAY(SELECT id FROM wk WHERE state = 'available' ORDER BY run_after, id LIMIT 500 FOR UPDATE SKIP LOCKED)) RETURNING *;
DELETE FROM wk WHERE locked_until IS NOT NULL;

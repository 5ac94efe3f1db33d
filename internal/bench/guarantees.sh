#!/usr/bin/env bash
# guarantees.sh DATABASE_URL [ROUNDS]: drain-500 as pg-limit runs it, against the same with what a lease and a fence add:
#  plain: pg-limit's drain-500
#  lease: + the index that finds expired leases ((locked_until) WHERE locked_until IS NOT NULL): one more entry per claim
#  fence: + the delete fenced by attempt (WHERE id = ANY(ids) AND attempts = attempts[array_position])
#  both
#  Use a scratch database: it creates and drops table pglimit_jobs, as pg-limit.sh does. Prints one line per round, jobs/s.
set -euo pipefail
url=${1:?usage: guarantees.sh DATABASE_URL [ROUNDS]}; rounds=${2:-2}; secs=8; clients=8
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cat >"$dir/plain.sql" <<'SQL'
WITH next AS (SELECT id FROM pglimit_jobs WHERE locked_until IS NULL AND run_after <= now() ORDER BY run_after, id LIMIT 500 FOR UPDATE SKIP LOCKED),
claimed AS (UPDATE pglimit_jobs j SET locked_until = now() + interval '30 s', attempts = attempts + 1 FROM next WHERE j.id = next.id RETURNING j.id)
SELECT coalesce(array_agg(id), '{}') AS ids FROM claimed \gset
DELETE FROM pglimit_jobs WHERE id = ANY(:ids::bigint[]);
SQL
cat >"$dir/fence.sql" <<'SQL'
WITH next AS (SELECT id FROM pglimit_jobs WHERE locked_until IS NULL AND run_after <= now() ORDER BY run_after, id LIMIT 500 FOR UPDATE SKIP LOCKED),
claimed AS (UPDATE pglimit_jobs j SET locked_until = now() + interval '30 s', attempts = attempts + 1 FROM next WHERE j.id = next.id RETURNING j.id, j.attempts)
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(attempts), '{}') AS atts FROM claimed \gset
DELETE FROM pglimit_jobs j WHERE j.id = ANY(:ids::bigint[]) AND j.locked_until IS NOT NULL AND j.attempts = (:atts::int[])[array_position(:ids::bigint[], j.id)];
SQL
run() { # variant
  local script=plain.sql; [[ $1 == fence || $1 == both ]] && script=fence.sql
  psql -q "$url" >/dev/null 2>&1 <<SQL
DROP TABLE IF EXISTS pglimit_jobs;
CREATE TABLE pglimit_jobs (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), run_after timestamptz NOT NULL DEFAULT now(), locked_until timestamptz, attempts int NOT NULL DEFAULT 0, payload jsonb NOT NULL);
CREATE INDEX pglimit_jobs_ready ON pglimit_jobs (run_after, id) WHERE locked_until IS NULL;
SQL
  if [[ $1 == lease || $1 == both ]]; then psql -q "$url" -c "CREATE INDEX pglimit_jobs_lease ON pglimit_jobs (locked_until) WHERE locked_until IS NOT NULL" >/dev/null; fi
  psql -q "$url" -c "INSERT INTO pglimit_jobs (payload) SELECT '{\"to\":\"a@example.com\",\"n\":1}'::jsonb FROM generate_series(1,$((secs*150000)))" >/dev/null
  psql -q "$url" -c "VACUUM ANALYZE pglimit_jobs" -c CHECKPOINT >/dev/null
  local out; out=$(pgbench -n -M prepared -c $clients -j 2 -T $secs -f "$dir/$script" "$url" 2>&1)
  sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | awk '{printf "%.0f", $1*500}'
}
vs=(plain lease fence both)
for r in $(seq 1 "$rounds"); do
  order=("${vs[@]}"); (( r % 2 == 0 )) && order=(both fence lease plain)
  line="r$r load=$(cut -d' ' -f1 /proc/loadavg)"
  for v in "${order[@]}"; do line="$line $v=$(run $v)"; done
  echo "$line"
done
psql -q "$url" -c "DROP TABLE IF EXISTS pglimit_jobs" >/dev/null

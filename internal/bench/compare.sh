#!/usr/bin/env bash
# compare.sh: run the raw-SQL ceiling of the database's engine
# (../shared/bench/pg-limit.sh, or mariadb-limit.sh for a mysql:// address)
# and queuegen bench on the same server, back to back, and print each
# workload's rate as a ratio of its ceiling (see BENCHMARKS.md).
#
# usage: internal/bench/compare.sh DATABASE_URL [path/to/limit-script]
#   DATABASE_URL: postgres://… or mysql://user[:password]@host:port/database
set -euo pipefail
url=${1:?usage: compare.sh DATABASE_URL [limit-script]}
shared=$(cd "$(dirname "$0")/../../.." && pwd)/shared/bench
cd "$(dirname "$0")/../.."
go build -o /tmp/queuegen-bench ./cmd/queuegen
out=$(mktemp); trap 'rm -f "$out"' EXIT
case $url in
  mysql://*|mariadb://*)
    limit=${2:-$shared/mariadb-limit.sh}
    # mariadb-limit.sh takes the connection as client options.
    rest=${url#*://}; auth=${rest%%@*}; hostport=${rest#*@}; hostport=${hostport%%/*}
    user=${auth%%:*}; pass=""; [[ $auth == *:* ]] && pass=${auth#*:}
    host=${hostport%%:*}; port=3306; [[ $hostport == *:* ]] && port=${hostport#*:}
    args="--host=$host --port=$port --user=$user"; [[ -n $pass ]] && args+=" --password=$pass"
    MARIADB_ARGS=$args bash "$limit" queuegen_limit 8 | tee -a "$out"
    workloads="push push-many drain latency latency-poll" ;;
  *)
    limit=${2:-$shared/pg-limit.sh}
    bash "$limit" "$url" 10 8 | tee -a "$out"
    workloads="push push-many drain latency latency-poll" ;;
esac
for w in $workloads; do
  /tmp/queuegen-bench bench --db "$url" --workload "$w" | grep '^bench ' | tee -a "$out"
done
awk '
  /^limit / { limit[$2] = $3 }
  /^bench / { sub(":", "", $2); rate[$2] = $(NF - ($0 ~ /p50=/ ? 3 : 1)) }
  END {
    printf "ratio push (C=8)  / limit push-1    = %.2f\n", rate["push"] / limit["push-1"]
    printf "ratio push-many   / limit push-100  = %.2f\n", rate["push-many"] / limit["push-100"]
    if (limit["drain-500"] > 0) printf "ratio drain       / limit drain-500 = %.2f\n", rate["drain"] / limit["drain-500"]
    printf "ratio drain       / limit drain-100 = %.2f\n", rate["drain"] / limit["drain-100"]
  }' "$out"

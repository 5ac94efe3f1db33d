#!/usr/bin/env bash
# compare.sh: run ../shared/bench/pg-limit.sh and queuegen bench on the same
# database, back to back, and print each workload's rate as a ratio of its
# raw-SQL ceiling (see BENCHMARKS.md).
#
# usage: internal/bench/compare.sh DATABASE_URL [path/to/pg-limit.sh]
set -euo pipefail
url=${1:?usage: compare.sh DATABASE_URL [pg-limit.sh]}
limit=${2:-$(dirname "$0")/../../../shared/bench/pg-limit.sh}
cd "$(dirname "$0")/../.."
go build -o /tmp/queuegen-bench ./cmd/queuegen
out=$(mktemp); trap 'rm -f "$out"' EXIT
bash "$limit" "$url" 10 8 | tee -a "$out"
for w in push push-many drain latency latency-poll; do
  /tmp/queuegen-bench bench --db "$url" --workload "$w" | grep '^bench ' | tee -a "$out"
done
awk '
  /^limit / { limit[$2] = $3 }
  /^bench / { sub(":", "", $2); rate[$2] = $(NF - ($0 ~ /p50=/ ? 3 : 1)) }
  END {
    printf "ratio push (C=8)  / limit push-1    = %.2f (target 0.8)\n", rate["push"] / limit["push-1"]
    printf "ratio push-many   / limit push-100  = %.2f (target 0.8)\n", rate["push-many"] / limit["push-100"]
    printf "ratio drain       / limit drain-100 = %.2f (target 0.9)\n", rate["drain"] / limit["drain-100"]
  }' "$out"

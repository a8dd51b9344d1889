#!/usr/bin/env bash
# Runs the disruption benchmark (pkg/disruption/bench_test.go): one full pass of the pure core
# (emptiness, drift, multi-node then single-node consolidation) over KWOK-catalog clusters of
# 100, 1,000 and 5,000 nodes, and prints a table. BENCHTIME (default 3x) is passed to
# -benchtime; BENCH filters benchmarks (default all).
#   mixed:        half the nodes 85-95% used, half 20-50%
#   busy:         every node 85-95% used
#   nothing-to-do: no node can go, so single-node consolidation evaluates every node
# For scale: upstream bounds multi-node consolidation at 100 candidates and 1 minute, single-node
# at 3 minutes, and users report passes timing out at 300-700 nodes (UPSTREAM-CORE.md §3.3).
# Then the policy comparison (pkg/disruption/sim, BenchmarkConsolidationPolicies): one churning
# workload replayed under WhenEmptyOrUnderutilized, Balanced and WhenEmpty, every decision applied;
# its table gives each policy's moves, evicted pods and $/h against the lower bound. SIM_SEED (default
# 1) draws another workload.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCHTIME=${BENCHTIME:-3x}
BENCH=${BENCH:-.}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test ./pkg/disruption/ -run '^$' -bench "$BENCH" -benchtime "$BENCHTIME" -count 1 | tee "$out" >&2
awk '
BEGIN {
  printf "%-50s %10s %9s %8s %7s %7s %9s %8s %10s\n", "benchmark", "s/pass", "decision", "removed", "replace", "solves", "explained", "MB/op", "allocs/op"
}
/^Benchmark/ {
  name=$1; sub(/-[0-9]+$/, "", name)
  delete v
  for (i = 3; i < NF; i += 2) v[$(i+1)] = $i
  printf "%-50s %10.3f %9d %8d %7d %7d %9d %8.1f %10d\n", name, v["ns/op"]/1e9, v["decisions"], v["nodes_removed"], v["replacements"], v["solves"], v["explained"], v["B/op"]/1e6, v["allocs/op"]
}' "$out"

# The policy comparison is deterministic: one replay per policy gives its figures.
go test ./pkg/disruption/sim/ -run '^$' -bench "$BENCH" -benchtime 1x -count 1 | tee "$out" >&2
awk '
/^Benchmark/ {
  if (!header) {
    printf "\n%-66s %8s %6s %8s %9s %8s %7s %11s %12s %12s %8s\n", "benchmark", "s/replay", "moves", "removed", "replaced", "evicted", "refused", "mean-$/h", "final-$/h", "bound-$/h", "nodes"
    header=1
  }
  name=$1; sub(/-[0-9]+$/, "", name)
  delete v
  for (i = 3; i < NF; i += 2) v[$(i+1)] = $i
  printf "%-66s %8.2f %6d %8d %9d %8d %7d %11.2f %12.2f %12.2f %8d\n", name, v["ns/op"]/1e9, v["moves"], v["nodes-disrupted"], v["replacements"], v["pods-evicted"], v["refused"], v["mean-$/hour"], v["final-$/hour"], v["bound-$/hour"], v["final-nodes"]
}' "$out"

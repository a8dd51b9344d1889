#!/usr/bin/env bash
# 100,000 nodes: the pure core and cluster state at 20,000, 50,000 and 100,000 nodes of ten pods
# each, one run per size (BENCHTIME, default 1x; BENCH filters, default all three):
#   BenchmarkScalePass          pkg/disruption: one full disruption pass (goal < 10 s at 100k)
#   BenchmarkScaleSolveExisting pkg/scheduling: 1,000 pending pods against the existing nodes
#                               (goal < 1 s at 100k)
#   BenchmarkStateMemory        pkg/state/informer: live heap of informer caches + state fed
#                               from recorded objects (goal < 4 GB at 100k)
# cpu-s figures are the process's CPU time, which other load on a shared machine disturbs less
# than wall time. StateMemory at 100,000 nodes holds about 3 GB live, 4.6 GB RSS with GOGC=50.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCHTIME=${BENCHTIME:-1x}
BENCH=${BENCH:-ScalePass|ScaleSolveExisting|StateMemory}
run() { go test "$1" -run '^$' -bench "$2" -benchtime "$BENCHTIME" -count 1 -timeout 3h; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
{
  [[ ScalePass =~ $BENCH ]] && run ./pkg/disruption/ 'ScalePass$'
  [[ ScaleSolveExisting =~ $BENCH ]] && run ./pkg/scheduling/ 'ScaleSolveExisting'
  [[ StateMemory =~ $BENCH ]] && run ./pkg/state/informer/ 'StateMemory'
  true
} | tee "$out" >&2
echo "load: $(uptime | sed 's/.*load average/load average/')"
awk '
/^Benchmark/ {
  name=$1; sub(/-[0-9]+$/, "", name)
  delete v
  for (i = 3; i < NF; i += 2) v[$(i+1)] = $i
  line = sprintf("%-52s wall %8.2f s", name, v["ns/op"]/1e9)
  if ("cpu-s/pass" in v) line = line sprintf("  cpu %7.2f s  removed %6d  pods %8d", v["cpu-s/pass"], v["nodes_removed"], v["pods"])
  if ("cpu-s/solve" in v) line = line sprintf("  cpu %7.2f s  on existing %5d  new nodes %4d", v["cpu-s/solve"], v["pods_on_existing"], v["new_nodes"])
  if ("MiB_heap" in v) line = line sprintf("  heap %7.0f MiB  %6.0f B/node+claim  %5.0f B/pod", v["MiB_heap"], v["B/node+claim"], v["B/pod"])
  print line
}' "$out"

#!/usr/bin/env bash
# make bench-vs-upstream: upstream Karpenter's own scheduling benchmark and ours, side by side
# in one run, and both solvers on identical input.
#
# 1. Builds, in a scratch module under bin/benchvsupstream (copied from hack/benchvsupstream/
#    upstream, which pins the release in its go.mod), upstream's scheduling benchmark
#    (sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling, -tags=test_performance)
#    as a test binary, and a small program that runs upstream's scheduler on a workload file.
#    Both are cached (rebuilt only when that directory changes); upstream's go.mod needs a
#    newer Go than ours, hence UPSTREAM_GOTOOLCHAIN (taken from the Go module proxy).
# 2. For each size, runs upstream's BenchmarkScheduling<N> with -benchtime 1x (one fresh
#    scheduler, one Solve: upstream's benchmark reuses its scheduler across b.N iterations, so
#    only the first is a fresh solve; it solves with 5 workers on every core) and then ours,
#    BenchmarkScheduling/pods=<N>, on one core (-cpu 1, GOMAXPROCS=1), OURS_BENCHTIME fresh
#    solves (every Solve of ours starts from nothing: no Cache). Same for the preference
#    workloads (4,000 pods, preferences respected and ignored).
# 3. Dumps our benchmark input (400 instance types, the pods) as JSON and runs upstream's
#    scheduler on exactly that, printing both solvers' node count and total $/h.
#
#    With it, the EC2 cost benchmark's variants named in EC2 (default unconstrained; "" for none;
#    pkg/scheduling/ec2bench: the real EC2 catalog narrowed by the getting-started NodePool,
#    ~1,000 pods of 60 seeded Deployments).
#
# SIZES (default 1000,2000,5000,10000,20000; "" for none) picks the sizes; PREF_MODES (default "respect
# ignore") the preference workloads ("" for none; upstream's own benchmark has them at 4,000
# pods only, PREFS sets the count for step 3); SAME_INPUT=0 skips step 3. On an idle 2-core
# machine upstream takes about 10 minutes for everything (20,000 pods alone ~100 s per solve,
# 4,000 pods with preferences respected ~130 s); on a loaded one, many times that.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES-1000,2000,5000,10000,20000}
PREFS=${PREFS:-4000}
PREF_MODES=${PREF_MODES-respect ignore}
SAME_INPUT=${SAME_INPUT:-1}
EC2=${EC2-unconstrained}
OURS_BENCHTIME=${OURS_BENCHTIME:-20x}
UPSTREAM_GOTOOLCHAIN=${UPSTREAM_GOTOOLCHAIN:-go1.26.9}
root=$PWD
scratch=$root/bin/benchvsupstream
src=$root/hack/benchvsupstream/upstream
version=$(awk '$1 == "sigs.k8s.io/karpenter" {print $2} $1 == "require" && $2 == "sigs.k8s.io/karpenter" {print $3}' "$src/go.mod")

load() { uptime | sed 's/.*load average: /load /'; }
echo "== bench-vs-upstream: sigs.k8s.io/karpenter $version vs ours ($(git rev-parse --short HEAD)), $(nproc) cores, $(load)"

# 1. Build (cached).
mkdir -p "$scratch"
stamp=$(cat "$src"/go.mod "$src"/go.sum "$src"/*.go | sha256sum | cut -c1-16)
if [[ ! -x $scratch/upstream.test || ! -x $scratch/same-input || $(cat "$scratch/stamp" 2>/dev/null) != "$stamp" ]]; then
  echo "building upstream $version (scratch module $scratch)..." >&2
  cp "$src"/go.mod "$src"/go.sum "$src"/*.go "$scratch"/
  (cd "$scratch" && export GOTOOLCHAIN=$UPSTREAM_GOTOOLCHAIN GOFLAGS=-mod=mod &&
    nice -n 10 go test -c -vet=off -tags=test_performance -o upstream.test sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling &&
    nice -n 10 go build -o same-input .)
  echo "$stamp" >"$scratch/stamp"
fi
nice -n 10 go test -c -o "$scratch/ours.test" ./pkg/scheduling/

# metric NAME FILE: the value before the unit NAME on the first Benchmark line.
metric() { awk -v m="$1" '/^Benchmark/ { for (i = 3; i <= NF; i++) if ($i == m) { print $(i-1); exit } }' "$2"; }

up=$(mktemp) ours=$(mktemp) rows=$(mktemp)
trap 'rm -f "$up" "$ours" "$rows"' EXIT
run_pair() { # label upstream-bench ours-bench
  (cd "$scratch" && ./upstream.test -test.run '^$' -test.bench "^$2\$" -test.benchtime 1x) >"$up" 2>&1 || { cat "$up" >&2; exit 1; }
  (cd "$scratch" && GOMAXPROCS=1 ./ours.test -test.run '^$' -test.bench "^$3\$" -test.benchtime "$OURS_BENCHTIME" -test.cpu 1) >"$ours" 2>&1 || { cat "$ours" >&2; exit 1; }
  local u o
  u=$(metric pods/sec "$up") o=$(metric pods/sec "$ours")
  printf "%-10s %12.1f %12.0f %12.0f %8.0fx %8s %8s   %s\n" "$1" "$u" "$o" "$(metric pods/cpu-sec "$ours")" \
    "$(awk -v o="$o" -v u="$u" 'BEGIN { print o / u }')" "$(metric nodes "$up")" "$(metric nodes "$ours")" "$(load)" | tee -a "$rows"
}

# 2. Speed, interleaved.
echo
echo "Fresh solves: upstream $version's own benchmark (1 solve, 5 workers, all cores) vs ours (one core)"
printf "%-10s %12s %12s %12s %9s %8s %8s   %s\n" "workload" "upstream/s" "ours/s" "ours/cpu-s" "ratio" "up:nodes" "nodes" "machine"
for n in ${SIZES//,/ }; do
  run_pair "pods=$n" "BenchmarkScheduling$n" "BenchmarkScheduling/pods=$n"
done
for m in $PREF_MODES; do
  case $m in
  respect) run_pair "respect" BenchmarkRespectPreferences BenchmarkPreferences/respect ;;
  ignore) run_pair "ignore" BenchmarkIgnorePreferences BenchmarkPreferences/ignore ;;
  *) echo "PREF_MODES: unknown mode $m (respect, ignore)" >&2; exit 2 ;;
  esac
done
echo "(pods/s: wall clock; ratio: ours/s ÷ upstream/s; preference workloads: 4,000 pods; upstream's own benchmark builds"
echo " its own pods (its spread selectors differ from its pods' labels), so its node counts are not comparable: see below)"

# 3. Identical input: nodes and $/h.
if [[ $SAME_INPUT != 0 ]]; then
  echo
  echo "Identical input (our 400 instance types and pods, dumped as JSON): upstream $version vs ours"
  rm -rf "$scratch/input"
  nice -n 10 go run ./hack/benchvsupstream/dump -out "$scratch/input" -sizes "$SIZES" -prefs "$PREFS" -ec2 "$EC2"
  files=()
  for n in ${SIZES//,/ }; do files+=("$scratch/input/pods=$n.json"); done
  for m in $PREF_MODES; do files+=("$scratch/input/$m.json"); done
  for v in ${EC2//,/ }; do files+=("$scratch/input/ec2-$v.json"); done
  "$scratch/same-input" "${files[@]}"
  echo "(upstream's pods/sec here is one fresh solve on this input; \$/h: each claim's cheapest compatible offering)"
  [[ -z $EC2 ]] || echo "(ec2-*: not the 400 types but the real EC2 catalog narrowed by the getting-started NodePool, pkg/scheduling/ec2bench)"
fi
echo "== done, $(load)"

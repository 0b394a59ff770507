#!/usr/bin/env bash
# Before/after benchmarks of two commits for benchstat, in alternating pairs
# (before, after, before, after, …) so that a load that drifts over the run
# falls on both sides alike (docs/testing.md, "Benchmarks before and after").
#
#   bash .ci/bench-pairs.sh BEFORE [AFTER]      # AFTER defaults to HEAD
#   N=6 OUT=/tmp/pairs bash .ci/bench-pairs.sh 970f81d^ main
#
# Each commit is checked out once (git worktree, removed at the end) and
# each test binary built once (`go test -c`); every invocation is one
# -count 1 run under nice. What runs, per side and pair:
#   - sim: the engine's FCFS benchmarks (`make bench`'s -benchtime 5x);
#   - plugins/builtin: BenchmarkCatalog at the higher load of each workload
#     for ten of the papers' policies (CATALOG overrides the pattern);
#   - e2e: the farm overhead benchmark TestRunOverhead at 10^6 arrivals per
#     task (OVERHEAD_ARRIVALS), whose log is turned into benchstat lines:
#     farm CPU per task beyond the replications' own (ms), the same as a
#     percentage, and the replications' CPU per task.
# 8–20 minutes per pair at load 25–80 on 2 cores; the CPU-time figures (farm
# ms/task) hold under load, the ns/event ones drift with it.
set -euo pipefail
cd "$(dirname "$0")/.."
benchstat="$(bash .ci/benchstat.sh)" # before the runs: a fresh machine has none
before="${1:?usage: bench-pairs.sh BEFORE [AFTER]}"
after="${2:-HEAD}"
n="${N:-6}"
out="${OUT:-$(mktemp -d)}"
arrivals="${OVERHEAD_ARRIVALS:-1e6}"
catalog="${CATALOG:-Catalog/^(one-or-all|borg-b)\$/^rho=0.9[02]\$/^(fcfs|msf|serverfilling|static-quickswap|adaptive-quickswap|killsmart|easy-backfill|first-fit|nmsr|greedy-srpt)\$}"
mkdir -p "$out"
trees="$(mktemp -d)"
cleanup() {
	for side in before after; do
		[ -d "$trees/$side" ] && git worktree remove --force "$trees/$side" >/dev/null 2>&1 || true
	done
	rm -rf "$trees"
}
trap cleanup EXIT
for side in before after; do
	ref="$before"
	[ "$side" = after ] && ref="$after"
	git worktree add --quiet --detach "$trees/$side" "$ref"
	(cd "$trees/$side" && for p in sim plugins/builtin e2e; do
		nice -n 10 go test -c -o "$out/$side-$(basename "$p").test" "./$p/"
	done)
	: >"$out/$side.txt"
	: >"$out/$side-overhead.log"
done
echo "load before: $(cat /proc/loadavg)"
for i in $(seq 1 "$n"); do
	for side in before after; do
		d="$trees/$side"
		echo "pair $i $side $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
		(cd "$d/sim" && nice -n 10 "$out/$side-sim.test" -test.run '^$' -test.bench '^BenchmarkFCFS' \
			-test.benchtime 5x -test.count 1 -test.benchmem) >>"$out/$side.txt"
		(cd "$d/plugins/builtin" && nice -n 10 "$out/$side-builtin.test" -test.run '^$' -test.bench "$catalog" \
			-test.benchtime 5x -test.count 1 -test.benchmem) >>"$out/$side.txt"
		# e2e's TestMain builds msjfarm from the tree it runs in: cd there.
		(cd "$d/e2e" && MSJFARM_BENCH_OVERHEAD=1 MSJFARM_BENCH_ARRIVALS="$arrivals" nice -n 10 \
			"$out/$side-e2e.test" -test.run '^TestRunOverhead$' -test.v -test.count 1 -test.timeout 30m) >>"$out/$side-overhead.log"
	done
done
echo "load after: $(cat /proc/loadavg)"
for side in before after; do
	python3 - "$out/$side-overhead.log" >>"$out/$side.txt" <<'EOF'
import re, sys
farm = None
for line in open(sys.argv[1]):
    m = re.search(r"farm process CPU .*? = task CPU ([\d.]+)s \+ [\d.]+s \(([\d.]+)%, ([\d.]+) ms/task", line)
    if m:
        task, pct, farm = float(m.group(1)) * 1000 / 200, float(m.group(2)), float(m.group(3))
    if farm is not None and "runner plugin, 200 tasks" in line:
        print(f"BenchmarkRunOverhead 1 {farm:.3f} farm-ms/task {pct:.2f} farm-cpu-% {task:.2f} task-ms/task")
        farm = None
EOF
done
"$benchstat" "$out/before.txt" "$out/after.txt"

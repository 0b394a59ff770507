#!/usr/bin/env bash
# scale-run.sh TASKS [WORKERS] [SLOTS] — a campaign of TASKS short tasks
# (10^3 arrivals, one-or-all, FCFS; at most 10^4 points) run to the end by
# real processes on loopback: a nats-server ($MSJFARM_NATS_SERVER), `msjfarm
# coordinator`, WORKERS (default 4) `msjfarm worker --runner inprocess
# --workers SLOTS` (default 16) and `msjfarm submit --wait`, with a local
# store. It prints the wall time and the peak resident memory (VmHWM, from
# /usr/bin/time -v) of the coordinator and of the client, the figures
# docs/design.md ("Memory bounds") records. SUBMIT_ONLY=1 stops after the
# submission (no workers): a 10^7-task campaign submitted, its publication
# followed to the end or for PUBLISH_WAIT seconds. Everything is in
# a temporary directory, removed at the end (KEEP=1 keeps it).
set -euo pipefail
n=${1:?usage: scale-run.sh TASKS [WORKERS] [SLOTS]}
workers=${2:-4}
slots=${3:-16}
nats=${MSJFARM_NATS_SERVER:?set MSJFARM_NATS_SERVER to a nats-server binary (.ci/install-nats.sh)}
dir=$(mktemp -d /tmp/msjfarm-scale.XXXXXX)
pids=()
cleanup() {
	# (The coordinator runs under /usr/bin/time: its child is stopped too.)
	for p in "${pids[@]}"; do pkill -TERM -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ "${KEEP:-}" != 1 ]; then rm -rf "$dir"; else echo "kept $dir"; fi
}
trap cleanup EXIT
cd "$(dirname "$0")/.."
go build -o "$dir/msjfarm" ./cmd/msjfarm
bin=$dir/msjfarm
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=nats://127.0.0.1:$port
"$nats" -js -sd "$dir/nats" -a 127.0.0.1 -p "$port" >"$dir/nats.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

# The sweep: min(TASKS/100, 10^4) points of one load axis, each with the
# replications that make TASKS.
python3 - "$n" >"$dir/sweep.yaml" <<'PY'
import sys
n = int(float(sys.argv[1]))
points = max(1, min(n // 100, 10_000))
loads = ", ".join(repr(0.1 + 0.8 * i / points) for i in range(points))
print(f"name: scale-{n}\nseed: 1\nworkload: one-or-all\nreplications: {n // points}\n"
      f"run: {{arrivals: 1e3, warmup: 1e2}}\npolicies: [fcfs]\naxes:\n  load: [{loads}]")
PY

/usr/bin/time -v -o "$dir/coordinator.time" "$bin" coordinator -v --nats-url "$url" --storage "$dir/store" >"$dir/coordinator.log" 2>&1 &
cpid=$!
pids+=($cpid)
if [ "${SUBMIT_ONLY:-}" != 1 ]; then
	for i in $(seq "$workers"); do
		"$bin" worker --nats-url "$url" --storage "$dir/store" --runner inprocess --workers "$slots" --worker-name "w$i" >"$dir/w$i.log" 2>&1 &
		pids+=($!)
	done
fi
wait_flag=--wait
[ "${SUBMIT_ONLY:-}" = 1 ] && wait_flag=
start=$(date +%s)
/usr/bin/time -v -o "$dir/submit.time" "$bin" submit --nats-url "$url" --storage "$dir/store" $wait_flag "$dir/sweep.yaml" 2>"$dir/submit.err" | tee "$dir/submit.out"
end=$(date +%s)
if [ "${SUBMIT_ONLY:-}" = 1 ]; then
	# The publication may go on after the reply: wait for the stream to hold every task.
	# (PUBLISH_WAIT=S: at most S seconds, then the figures so far.)
	limit=$(( $(date +%s) + ${PUBLISH_WAIT:-1000000000} ))
	if ! grep -q ", 0 being published" "$dir/coordinator.log"; then
		until grep -q "in the background" "$dir/coordinator.log" || [ "$(date +%s)" -ge "$limit" ]; do sleep 5; done
	fi
	end=$(date +%s)
fi
# The coordinator's peak so far: VmHWM of the msjfarm process under time.
cproc=$(pgrep -P "$cpid" | head -1)
coord_hwm=$(awk '/VmHWM/ {print $2}' "/proc/$cproc/status")
kill -TERM "$cproc"
wait "$cpid" || true
echo "tasks $n: ${workers}x${slots} slots; wall $((end - start)) s (submit to done$([ "${SUBMIT_ONLY:-}" = 1 ] && echo ": SUBMIT_ONLY, to the end of the publication or PUBLISH_WAIT"))"
if [ "${SUBMIT_ONLY:-}" = 1 ]; then
	echo "stream: $(du -sh "$dir/nats" | cut -f1) on disk"
fi
echo "coordinator peak RSS: $((coord_hwm / 1024)) MiB (VmHWM)"
echo "client (msjfarm submit) peak RSS: $(($(awk -F': ' '/Maximum resident/ {print $2}' "$dir/submit.time") / 1024)) MiB"
grep -E "done:|published" "$dir/coordinator.log" | tail -3 | cut -c1-300 || true

#!/usr/bin/env bash
# Where the test suite's time goes: runs `go test -json` (default
# ./...; any go test arguments may be given instead) with every test
# binary under /usr/bin/time, then prints the slowest packages (wall and
# CPU seconds, the CPU including the servers and plugin processes a test
# binary starts and waits for) and the slowest top-level tests (wall).
#
#   bash .ci/test-times.sh                      # the default suite
#   bash .ci/test-times.sh -tags long ./sim/    # anything go test takes
#   TOP=20 OUT=/tmp/times bash .ci/test-times.sh
#
# On a loaded machine the wall figures grow with the load and the CPU
# figures barely move: compare CPU seconds across runs, and read wall
# times together with the load average printed before and after
# (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"
top="${TOP:-10}"
[ $# -gt 0 ] || set -- -timeout 30m ./...
wrap="$out/time-exec.sh"
cat >"$wrap" <<EOF
#!/usr/bin/env bash
exec /usr/bin/time -a -o "$out/cpu.txt" -f "%U %S %e \$PWD" "\$@"
EOF
chmod +x "$wrap"
: >"$out/cpu.txt"
echo "load before: $(cat /proc/loadavg)"
start=$(date +%s)
rc=0
go test -count=1 -json -exec "$wrap" "$@" >"$out/test.json" || rc=$?
echo "load after:  $(cat /proc/loadavg); go test took $(($(date +%s) - start)) s wall, exit $rc"
python3 - "$out" "$top" "$(pwd)" <<'EOF'
import json, sys
out, top, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pkgs, tests, failed = {}, [], []
for line in open(out + "/test.json"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("Action") not in ("pass", "fail", "skip") or "Elapsed" not in e:
        continue
    p = e["Package"].split("/msjfarm/msjfarm/")[-1] if "/msjfarm/msjfarm/" in e["Package"] else e["Package"]
    if "Test" not in e:
        pkgs[p] = e["Elapsed"]
    elif "/" not in e["Test"]:
        tests.append((e["Elapsed"], p, e["Test"]))
    if e["Action"] == "fail":
        failed.append(p + (" " + e["Test"] if "Test" in e else ""))
cpu = {}
for line in open(out + "/cpu.txt"):
    f = line.split(None, 3)
    if len(f) == 4 and f[0][0].isdigit():
        cpu[f[3].strip().removeprefix(root).lstrip("/") or "."] = float(f[0]) + float(f[1])
print(f"\nslowest packages (of {len(pkgs)}; sum of wall {sum(pkgs.values()):.0f} s, of CPU {sum(cpu.values()):.0f} s):")
print(f"{'wall s':>8} {'cpu s':>8}  package")
for p, w in sorted(pkgs.items(), key=lambda x: -x[1])[:top]:
    c = cpu.get(p)
    print(f"{w:8.1f} {c if c is not None else float('nan'):8.1f}  {p}")
print(f"\nslowest tests (wall s):")
for w, p, t in sorted(tests, reverse=True)[:top]:
    print(f"{w:8.1f}  {p} {t}")
if failed:
    print("\nFAILED:", *failed, sep="\n  ")
print(f"\nraw: {out}/test.json, {out}/cpu.txt")
EOF
exit $rc

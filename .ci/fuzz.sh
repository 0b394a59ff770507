#!/usr/bin/env bash
# Runs every fuzz target for a short fixed time (FUZZTIME, default 20s) on
# top of its committed seed corpus (testdata/fuzz/<FuzzName>/ beside it).
# Exits non-zero on the first failure; the failing input is then written
# by go test under that package's testdata/fuzz/<FuzzName>/ — commit it
# with the fix, so that it stays a regression test. About 2 minutes with
# the default, plus compilation.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-20s}"
# package target: one line each.
targets=(
	"./sweep FuzzParseExpand"
	"./model/swf FuzzRead"
	"./internal/protocol FuzzDecodeTaskMsg"
	"./results/record FuzzDecode"
	"./results/bundle FuzzExtract"
)
start=$(date +%s)
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "== fuzz $pkg $name ($fuzztime)"
	# -parallel 2: the CI machine has 2 cores; -run '^$' skips the
	# package's other tests (the seed corpus still runs as part of -fuzz).
	go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel 2
done
echo "== fuzz: ${#targets[@]} targets in $(( $(date +%s) - start ))s"

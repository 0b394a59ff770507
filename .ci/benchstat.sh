#!/usr/bin/env bash
# Prints the path of a benchstat binary, installing the pinned version with
# `go install` first when none is on PATH or in GOPATH/bin: a fresh machine
# has none, and the benchmark scripts found that out only after their runs
# (the measurements were kept, the tables not printed). The scripts call it
# before they measure.
set -euo pipefail
version=v0.0.0-20260908200009-22c9c6c9d4da # golang.org/x/perf
if b="$(command -v benchstat)"; then
	echo "$b"
	exit 0
fi
b="$(go env GOPATH)/bin/benchstat"
if [ ! -x "$b" ]; then
	go install "golang.org/x/perf/cmd/benchstat@$version" >&2
fi
echo "$b"

#!/usr/bin/env bash
# Runs internal/sandbox's tests as nobody (uid 65534) when this script runs
# as root: a plugin host that is not root takes another launch path (a user
# namespace that owns the plugin's network and mount namespaces, ids mapped
# by the launcher, its private root built, its capabilities dropped), and
# `make test` as root never takes it. The test binary is built as root and
# run from a directory uid 65534 may read; the tests it runs start their
# plugins from that binary alone.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
if [ "$(id -u)" != 0 ]; then
	echo "sandbox-unprivileged: skipped: already not root (make test ran these tests as uid $(id -u))"
	exit 0
fi
if ! command -v setpriv >/dev/null; then
	echo "sandbox-unprivileged: skipped: no setpriv (util-linux) to drop to nobody"
	exit 0
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
"$GO" test -c -o "$dir/sandbox.test" ./internal/sandbox
cd "$dir"
setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin TMPDIR=/tmp \
	"$dir/sandbox.test" -test.count=1 -test.timeout=10m
echo "sandbox-unprivileged: internal/sandbox passed as uid 65534"

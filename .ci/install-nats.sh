#!/usr/bin/env bash
# Ensure a real nats-server binary exists for the farm's integration tests and
# print its path on stdout (everything else goes to stderr).
#
#   bash .ci/install-nats.sh                        # install if missing, print path
#   export MSJFARM_NATS_SERVER="$(bash .ci/install-nats.sh)"
#
# Order of preference: $MSJFARM_NATS_SERVER if it runs; the cached build in
# "${MSJFARM_TOOLS:-$HOME/.cache/msjfarm/bin}/nats-server"; otherwise
# `go install github.com/nats-io/nats-server/v2@<the version in go.mod>` (the
# same server code the embedded server links, so tests exercise one version);
# and only if that fails, `apt-get install -y nats-server` (/usr/sbin/nats-server,
# an older 2.9.x that still has JetStream). Idempotent: a second run just prints
# the path.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${MSJFARM_TOOLS:-$HOME/.cache/msjfarm/bin}"
BIN="$TOOLS_DIR/nats-server"

log() { printf 'install-nats: %s\n' "$*" >&2; }
works() { [ -n "$1" ] && [ -x "$1" ] && "$1" --version >/dev/null 2>&1; }

if works "${MSJFARM_NATS_SERVER:-}"; then
	log "using \$MSJFARM_NATS_SERVER=$MSJFARM_NATS_SERVER ($("$MSJFARM_NATS_SERVER" --version))"
	printf '%s\n' "$MSJFARM_NATS_SERVER"
	exit 0
fi
if works "$BIN"; then
	log "using cached $BIN ($("$BIN" --version))"
	printf '%s\n' "$BIN"
	exit 0
fi

VERSION="${NATS_SERVER_VERSION:-$(awk '$1 == "github.com/nats-io/nats-server/v2" {print $2; exit}' "$ROOT/go.mod")}"
if command -v go >/dev/null 2>&1 && [ -n "$VERSION" ]; then
	mkdir -p "$TOOLS_DIR"
	exec 9>"$TOOLS_DIR/.nats-server.lock"
	command -v flock >/dev/null 2>&1 && flock 9
	if works "$BIN"; then
		printf '%s\n' "$BIN"
		exit 0
	fi
	STAGE="$(mktemp -d "$TOOLS_DIR/.nats-build.XXXXXX")"
	trap 'rm -rf "$STAGE"' EXIT
	log "building github.com/nats-io/nats-server/v2@$VERSION with $(go version)"
	if (cd "$STAGE" && GOWORK=off GOBIN="$STAGE" go install "github.com/nats-io/nats-server/v2@$VERSION" >&2); then
		mv -f "$STAGE/nats-server" "$BIN"
		log "installed $BIN ($("$BIN" --version))"
		printf '%s\n' "$BIN"
		exit 0
	fi
	log "go install failed; trying apt"
fi

for p in /usr/sbin/nats-server /usr/bin/nats-server; do
	if works "$p"; then
		log "using $p"
		printf '%s\n' "$p"
		exit 0
	fi
done
if command -v apt-get >/dev/null 2>&1; then
	SUDO=""
	[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
	log "apt-get install -y nats-server"
	$SUDO apt-get install -y nats-server >&2 || { $SUDO apt-get update >&2 && $SUDO apt-get install -y nats-server >&2; }
	for p in /usr/sbin/nats-server /usr/bin/nats-server; do
		if works "$p"; then
			printf '%s\n' "$p"
			exit 0
		fi
	done
fi
log "no nats-server could be installed"
exit 1

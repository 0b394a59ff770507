#!/usr/bin/env bash
# Ensure a headless-capable Chromium exists for the live page's browser test
# (e2e TestLivePageBrowser) and print its path on stdout (everything else
# goes to stderr).
#
#   bash .ci/install-chromium.sh                    # install if missing, print path
#   export MSJFARM_CHROMIUM="$(bash .ci/install-chromium.sh)"
#
# Order of preference: $MSJFARM_CHROMIUM if it runs; chromium or
# chromium-browser on PATH; otherwise Debian's `chromium` package
# (`apt-get install -y chromium`). Idempotent: a second run just prints the
# path.
set -euo pipefail

log() { printf 'install-chromium: %s\n' "$*" >&2; }
works() { [ -n "$1" ] && [ -x "$1" ] && "$1" --headless --no-sandbox --version >/dev/null 2>&1; }

if works "${MSJFARM_CHROMIUM:-}"; then
	log "using \$MSJFARM_CHROMIUM=$MSJFARM_CHROMIUM"
	printf '%s\n' "$MSJFARM_CHROMIUM"
	exit 0
fi
find_it() {
	for p in "$(command -v chromium 2>/dev/null || true)" "$(command -v chromium-browser 2>/dev/null || true)" /usr/bin/chromium /usr/lib/chromium/chromium; do
		if works "$p"; then
			printf '%s\n' "$p"
			return 0
		fi
	done
	return 1
}
if p="$(find_it)"; then
	log "using $p"
	printf '%s\n' "$p"
	exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
	SUDO=""
	[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
	log "apt-get install -y chromium"
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get install -y --no-install-recommends chromium >&2 ||
		{ $SUDO apt-get update >&2 && $SUDO apt-get install -y --no-install-recommends chromium >&2; }
	if p="$(find_it)"; then
		log "installed $p"
		printf '%s\n' "$p"
		exit 0
	fi
fi
log "no chromium could be installed"
exit 1

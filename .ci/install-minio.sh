#!/usr/bin/env bash
# Ensure a MinIO server binary exists for the storage integration tests and
# print its path on stdout (everything else goes to stderr).
#
#   bash .ci/install-minio.sh                       # build if missing, print path
#   export MSJFARM_MINIO="$(bash .ci/install-minio.sh)"
#
# The binary lives in "${MSJFARM_TOOLS:-$HOME/.cache/msjfarm/bin}/minio" and is
# reused across runs on the same machine (a cold build takes several minutes
# and ~150 MB). MinIO is not packaged in apt, so it is built from source with
# `go install`. Set MINIO_VERSION to override the module version
# (default: @latest, falling back to the pinned version below if @latest does
# not build with the installed Go toolchain).
set -euo pipefail

TOOLS_DIR="${MSJFARM_TOOLS:-$HOME/.cache/msjfarm/bin}"
BIN="$TOOLS_DIR/minio"
# Known-good fallback, used only when @latest fails to build: the version
# @latest resolved to when this script was written (built in ~130 s on 2
# cores with go1.26.8; MinIO tags are RELEASE.* so the module version is a
# pseudo-version).
PINNED_VERSION="${MINIO_PINNED_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
VERSION="${MINIO_VERSION:-latest}"

log() { printf 'install-minio: %s\n' "$*" >&2; }

usable() { [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; }

if usable; then
	log "using cached $BIN ($(go version -m "$BIN" 2>/dev/null | awk '$1 == "mod" {print $2 "@" $3; exit}'))"
	printf '%s\n' "$BIN"
	exit 0
fi

command -v go >/dev/null 2>&1 || { log "go is not on PATH"; exit 1; }
mkdir -p "$TOOLS_DIR"

# Serialise concurrent installs (parallel CI jobs on one machine).
exec 9>"$TOOLS_DIR/.minio.lock"
if command -v flock >/dev/null 2>&1; then
	flock 9
fi
if usable; then # another job finished the build while we waited
	log "using cached $BIN"
	printf '%s\n' "$BIN"
	exit 0
fi

# Build into a private directory and rename into place, so an interrupted
# build never leaves a truncated binary that later runs would "reuse".
STAGE="$(mktemp -d "$TOOLS_DIR/.minio-build.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT

build() {
	local v="$1" start end
	log "building github.com/minio/minio@$v with $(go version) (takes a few minutes)"
	start=$(date +%s)
	# Run outside any module so the caller's go.mod/go.work is not consulted.
	if (cd "$STAGE" && GOWORK=off GOFLAGS="${GOFLAGS:-}" GOBIN="$STAGE" \
		go install "github.com/minio/minio@$v" >&2); then
		end=$(date +%s)
		log "built minio@$v in $((end - start))s"
		return 0
	fi
	log "go install github.com/minio/minio@$v failed"
	return 1
}

if ! build "$VERSION"; then
	if [ "$VERSION" = "$PINNED_VERSION" ]; then
		exit 1
	fi
	log "falling back to pinned version $PINNED_VERSION"
	build "$PINNED_VERSION"
fi

mv -f "$STAGE/minio" "$BIN"
log "installed $BIN ($(go version -m "$BIN" 2>/dev/null | awk '$1 == "mod" {print $2 "@" $3; exit}'))"
printf '%s\n' "$BIN"

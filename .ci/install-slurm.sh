#!/usr/bin/env bash
# Ensure Debian's Slurm (slurmctld, slurmd, the client commands) and MUNGE are
# installed for the Slurm integration test (`make slurm`, e2e/slurm_test.go).
#
#   bash .ci/install-slurm.sh
#
# Only the packages are installed: the test configures and starts its own
# munged, slurmctld and two slurmd in a temporary directory on loopback, with
# its own ports, key and state, and stops them at the end; it does not use the
# system's services or /etc/slurm. Idempotent: with every command present it
# only says so. Needs root (or sudo) and apt.
set -euo pipefail

log() { printf 'install-slurm: %s\n' "$*" >&2; }

cmds=(munged munge slurmctld slurmd sbatch srun scancel squeue sinfo scontrol)
missing() {
	for c in "${cmds[@]}"; do
		command -v "$c" >/dev/null 2>&1 || [ -x "/usr/sbin/$c" ] || { echo "$c"; return 0; }
	done
	return 1
}

if ! m="$(missing)"; then
	log "using $(slurmd -V 2>/dev/null || echo slurmd) and $(munged -V 2>&1 | head -n1)"
	exit 0
fi
log "$m not found; installing slurmctld slurmd slurm-client munge with apt"
if ! command -v apt-get >/dev/null 2>&1; then
	log "no apt-get: install Slurm (slurmctld, slurmd, client commands) and MUNGE with the system's package manager"
	exit 1
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
# A fresh machine has no package lists: update first, always.
$SUDO apt-get update -qq >&2
# Where systemd runs, Debian's packages start munge (with a key of their own)
# and try slurmd/slurmctld, which stop for want of /etc/slurm/slurm.conf; the
# test uses neither.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
	slurmctld slurmd slurm-client munge >&2
if m="$(missing)"; then
	log "$m still missing after apt-get install"
	exit 1
fi
log "installed $(slurmd -V) and $(munged -V 2>&1 | head -n1)"

#!/bin/sh
# Starts nats-server with user/password authorization read from the
# environment (NATS_USER, NATS_PASSWORD) through a config file, so that the
# password is never on nats-server's command line, which every user of the
# host can read (ps, /proc/PID/cmdline). Its arguments are nats-server's.
# docker-compose.yml and deploy/k8s/nats.yaml both run it:
#
#   sh nats-auth.sh -js -sd /data -m 8222
#
# The password may hold any character but a newline: it is written as a
# quoted string of nats-server's config syntax, quotes and backslashes
# escaped (no variable is expanded inside quotes). The file is the
# container's, mode 0600, in its temporary directory.
set -eu
nl='
'
case "${NATS_USER:-}${NATS_PASSWORD:-}" in *"$nl"*)
	echo "nats-auth: NATS_USER or NATS_PASSWORD holds a newline" >&2
	exit 2 ;;
esac
if [ -z "${NATS_USER:-}" ] || [ -z "${NATS_PASSWORD:-}" ]; then
	echo "nats-auth: NATS_USER and NATS_PASSWORD must both be set and not empty" >&2
	exit 2
fi
quote() { printf '%s' "$1" | sed 's/[\\"]/\\&/g'; }
umask 077
conf=$(mktemp)
printf 'authorization {\n  user: "%s"\n  password: "%s"\n}\n' \
	"$(quote "$NATS_USER")" "$(quote "$NATS_PASSWORD")" >"$conf"
exec nats-server -c "$conf" "$@"

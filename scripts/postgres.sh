#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the test suite.
#
#   scripts/postgres.sh start   initdb a fresh cluster in a temporary directory,
#                               start it on a free port of 127.0.0.1 with trust
#                               authentication, and print shell assignments:
#                                 SONDE_TEST_PG_URL=postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
#                                 SONDE_TEST_PG_DIR=/tmp/sonde-pg.XXXX
#   scripts/postgres.sh stop DIR  stop the cluster started in DIR and remove DIR.
#
# Usage from a shell: eval "$(scripts/postgres.sh start)"; …; scripts/postgres.sh stop "$SONDE_TEST_PG_DIR"
#
# When no initdb is found and the script runs as root with apt-get, it installs
# the server packages non-interactively. PostgreSQL refuses to run as root, so
# as root the cluster belongs to the postgres OS user (created when missing).
# Progress goes to stderr; only the assignments go to stdout.
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

find_bindir() {
	local d
	if command -v pg_config >/dev/null 2>&1; then
		d="$(pg_config --bindir 2>/dev/null || true)"
		if [[ -x "$d/initdb" && -x "$d/pg_ctl" ]]; then echo "$d"; return 0; fi
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r) /usr/local/pgsql/bin /usr/local/bin /usr/bin; do
		if [[ -x "$d/initdb" && -x "$d/pg_ctl" ]]; then echo "$d"; return 0; fi
	done
	return 1
}

install_server() {
	if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
		log "no initdb found, and cannot install PostgreSQL here (needs root and apt-get)"
		return 1
	fi
	log "installing the PostgreSQL server packages"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends postgresql >&2
}

# free_port prints a port on 127.0.0.1 that nothing listens on.
free_port() {
	local port i
	for i in $(seq 1 50); do
		port=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	return 1
}

# as_owner runs a command as the cluster's owner.
as_owner() {
	if [[ "$(id -u)" == 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

start() {
	local bindir dir port try
	bindir="$(find_bindir)" || { install_server && bindir="$(find_bindir)"; } || return 1
	dir="$(mktemp -d "${TMPDIR:-/tmp}/sonde-pg.XXXXXX")"
	if [[ "$(id -u)" == 0 ]]; then
		id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
		chown postgres: "$dir"
	fi
	chmod 700 "$dir"
	as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --no-locale -N >"$dir/initdb.log" 2>&1 ||
		{ log "initdb failed:"; cat "$dir/initdb.log" >&2; return 1; }
	for try in 1 2 3 4 5; do
		port="$(free_port)" || return 1
		if as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
			-o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" >&2; then
			log "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, data in $dir"
			echo "SONDE_TEST_PG_URL='postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable'"
			echo "SONDE_TEST_PG_DIR='$dir'"
			echo "export SONDE_TEST_PG_URL SONDE_TEST_PG_DIR"
			return 0
		fi
		log "start on port $port failed (try $try):"
		tail -n 5 "$dir/server.log" >&2 || true
	done
	return 1
}

stop() {
	local dir="${1:-}" bindir
	[[ -n "$dir" && -d "$dir/data" ]] || return 0
	bindir="$(find_bindir)" || return 0
	as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}

case "${1:-}" in
start) start ;;
stop) stop "${2:-}" ;;
*)
	echo "usage: $0 start | stop DIR" >&2
	exit 2
	;;
esac

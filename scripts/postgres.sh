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
# the server packages non-interactively. As root with apt-get it also installs
# the hypopg extension of the server's major version (postgresql-<major>-hypopg),
# which the hypothetical-index tests create in their databases; elsewhere a
# missing hypopg is only reported (those tests then skip, and fail under CI). PostgreSQL refuses to run as root, so
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

# ensure_hypopg installs the hypopg package for the server in bindir when it
# is missing and the script runs as root with apt-get. Never fatal: without
# hypopg only the hypothetical-index tests cannot run.
ensure_hypopg() {
	local bindir="$1" major sharedir pkg
	major="$("$bindir/postgres" --version | sed -E 's/^[^0-9]*([0-9]+).*/\1/')"
	sharedir="$("$bindir/pg_config" --sharedir 2>/dev/null || echo "/usr/share/postgresql/$major")"
	[[ -e "$sharedir/extension/hypopg.control" ]] && return 0
	pkg="postgresql-$major-hypopg"
	if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
		log "hypopg is not installed for PostgreSQL $major (package $pkg); the hypothetical-index tests will skip"
		return 0
	fi
	log "installing $pkg"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q --no-install-recommends "$pkg" >&2 ||
		{ apt-get update -q >&2 && apt-get install -y -q --no-install-recommends "$pkg" >&2; } ||
		log "could not install $pkg; the hypothetical-index tests will skip"
	return 0
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

# preload_opts prints the server option that preloads pg_stat_statements
# when this installation ships it, so the executor's slow-queries reading
# can be tested; nothing otherwise (the reading is then refused, and that
# refusal is what the tests check).
preload_opts() {
	local lib
	lib="$("$1/pg_config" --pkglibdir 2>/dev/null || echo "$1/../lib")"
	if [[ -f "$lib/pg_stat_statements.so" || -f "$lib/pg_stat_statements.dylib" ]]; then
		echo " -c shared_preload_libraries=pg_stat_statements"
	fi
}

start() {
	local bindir dir port try
	bindir="$(find_bindir)" || { install_server && bindir="$(find_bindir)"; } || return 1
	ensure_hypopg "$bindir"
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
			-o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200$(preload_opts "$bindir")" >&2; then
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

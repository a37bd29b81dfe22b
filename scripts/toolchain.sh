#!/usr/bin/env bash
# Makes sure the C toolchain cgo needs is present: the PostgreSQL guard links
# libpg_query and the DuckDB executor links DuckDB's static library (C++).
# On a machine without gcc/g++ it installs them with apt-get when it can.
set -euo pipefail
missing=()
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
	echo "toolchain.sh: installing ${missing[*]} for cgo" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends "${missing[@]}" libc6-dev >&2
	exit 0
fi
echo "toolchain.sh: cgo needs ${missing[*]}; install them (e.g. apt-get install gcc g++) and retry" >&2
exit 1

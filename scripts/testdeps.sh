#!/usr/bin/env bash
# Makes sure what the browser and MCP client tests need is present: Debian's
# chromium (the console's end-to-end tests drive it headless) and Node with
# npm (the official MCP TypeScript SDK client, installed by its test from the
# npm registry). Installs them with apt-get when missing and running as root;
# otherwise says what is missing and leaves it to the tests, which skip with
# the reason (and fail under CI=true).
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
	echo "testdeps.sh: installing ${missing[*]} for the browser and MCP client tests" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
	exit 0
fi
echo "testdeps.sh: ${missing[*]} missing (apt-get install ${missing[*]}); the tests that need them skip, or fail under CI=true" >&2

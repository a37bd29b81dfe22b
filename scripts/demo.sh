#!/usr/bin/env bash
# Starts bin/sonde on the embedded default, runs one investigation of the demo
# database, prints the report, and stops the server. With no model configured
# it uses LLM_PROVIDER=demo: a recorded model replay, labelled as such; the
# database, executor, ledger and services are all real.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LLM_PROVIDER:=demo}"
export LLM_PROVIDER
data=${SONDE_DEMO_DIR:-.sonde-demo}
addr="127.0.0.1:${SONDE_DEMO_PORT:-18080}"
log="${data}/serve.log"
mkdir -p "$data"
./bin/sonde serve --data-dir "$data" --http "$addr" 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
status=0
./bin/sonde ask --wait 60s --server "http://${addr}" --connection demo \
  "${SONDE_DEMO_OBJECTIVE:-Why did orders fall in March 2025?}" || status=$?
if [ "$status" -eq 1 ]; then
  echo "--- sonde serve log ($log) ---" >&2
  tail -n 20 "$log" >&2
fi
exit "$status"

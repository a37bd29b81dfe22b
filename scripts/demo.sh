#!/usr/bin/env bash
# Starts bin/sonde on the embedded default, runs one investigation of the demo
# database, prints the report, and stops the server. With no model configured
# it uses LLM_PROVIDER=demo: a recorded model replay, labelled as such; the
# database, guard, ledger and services are all real.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LLM_PROVIDER:=demo}"
export LLM_PROVIDER
data=${SONDE_DEMO_DIR:-.sonde-demo}
port=${SONDE_DEMO_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 18080)}
addr="127.0.0.1:${port}"
log="${data}/serve.log"
mkdir -p "$data"
./bin/sonde serve --data-dir "$data" --http "$addr" 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  if curl -fsS "http://${addr}/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 $pid 2>/dev/null; then echo "sonde serve exited; see $log" >&2; cat "$log" >&2; exit 1; fi
  sleep 0.2
done
curl -fsS "http://${addr}/readyz" >/dev/null || { echo "sonde did not become ready; see $log" >&2; exit 1; }
./bin/sonde ask --server "http://${addr}" --connection demo \
  "${SONDE_DEMO_OBJECTIVE:-Why did orders fall in March 2025?}"

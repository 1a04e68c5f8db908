#!/usr/bin/env bash
# What each Lua script costs the Redis server against `return 1` (issue 18, item 5): starts a private
# redis-server (the probe resets the server's statistics, so never the shared one), runs every script's
# acquire through redis-benchmark, reads the server's own microseconds per call, then stops the server.
#
#   sluice-benchmarks/script-cost.sh [REQUESTS [CLIENTS]]              (defaults 200000 and 16)
#   sluice-benchmarks/script-cost.sh --callgrind [REQUESTS [CLIENTS]]  (defaults 3000 and 1)
#
# --callgrind runs the server under valgrind's callgrind and adds its instructions per call: the same
# count on a busy machine as on a quiet one (timings are not). SCRIPT_COST_PORT picks the private
# server's port (default 7199). Never part of `./mvnw verify`.
set -euo pipefail
cd "$(dirname "$0")/.."
JAR="${JAR:-sluice-benchmarks/target/benchmarks.jar}" # a class path; JAR=old.jar compares another build
if [[ "${SKIP_BUILD:-}" != "1" ]]; then
  ./mvnw -B -q -pl sluice-benchmarks -am package -DskipTests
fi
PORT="${SCRIPT_COST_PORT:-7199}"
DIR="$(mktemp -d)"
SERVER=(redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR")
if [[ "${1:-}" == "--callgrind" ]]; then
  shift
  valgrind --tool=callgrind --callgrind-out-file="$DIR/callgrind.out.%p" "${SERVER[@]}" >"$DIR/server.log" 2>&1 &
  PID=$!
  export CALLGRIND_PID="$PID" CALLGRIND_DIR="$DIR"
  set -- "${1:-3000}" "${2:-1}"
else
  "${SERVER[@]}" >"$DIR/server.log" 2>&1 &
  PID=$!
fi
trap 'kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT
for _ in $(seq 1 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.2; done
"${JAVA_HOME:+$JAVA_HOME/bin/}java" -cp "$JAR" dev.sluice.benchmarks.ScriptCost "$PORT" "$@"

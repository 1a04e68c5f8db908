#!/usr/bin/env bash
# What a store timeout costs (issue 27, finding 9): how many permits requests answered `timeout` spent
# anyway, on a private redis-server (so that the shared one is neither loaded nor measured with other
# runs' traffic), through dev.sluice.benchmarks.TimeoutCharge. Prints one line a round and a summary
# with the load average before and after.
#
#   sluice-benchmarks/timeout-charge.sh [TIMEOUT_MS [ROUNDS [THREADS [BURN [LIMIT [REQUESTS]]]]]]
#       defaults: 100 (the default --store-timeout and RedisRateLimiter timeout), 20, 64, 0, 100, 3 x LIMIT
#
# BURN spins that many threads in the measuring JVM to load the host further. TIMEOUT_CHARGE_PORT picks
# the private server's port (default 7198); SLUICE_REDIS_URL=redis://... measures an existing server
# instead. Never part of `./mvnw verify`.
set -euo pipefail
cd "$(dirname "$0")/.."
JAR="${JAR:-sluice-benchmarks/target/benchmarks.jar}"
if [[ "${SKIP_BUILD:-}" != "1" ]]; then
  ./mvnw -B -q -pl sluice-benchmarks -am package -DskipTests
fi
URL="${SLUICE_REDIS_URL:-}"
if [[ -z "$URL" ]]; then
  PORT="${TIMEOUT_CHARGE_PORT:-7198}"
  DIR="$(mktemp -d)"
  redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR" >"$DIR/server.log" 2>&1 &
  PID=$!
  trap 'kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT
  for _ in $(seq 1 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.2; done
  URL="redis://127.0.0.1:$PORT"
fi
"${JAVA_HOME:+$JAVA_HOME/bin/}java" -cp "$JAR" dev.sluice.benchmarks.TimeoutCharge "$URL" "${1:-100}" "${2:-20}" "${3:-64}" "${4:-0}" "${5:-100}" ${6:+"$6"}

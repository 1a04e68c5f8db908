#!/usr/bin/env bash
# The throughput figures of issue 17.10, in ONE run on this machine:
#   1. the library's own asynchronous decision rate on Redis (JMH RedisBenchmark.sluiceAsync: one
#      RedisRateLimiter, one connection, 64 decisions in flight, 2,000 keys, every check allowed);
#   2. the service's rate on the same Redis with the same pattern: `wrk -t2 -c64 --latency` against
#      POST /v1/acquire, one policy (so one limiter, one connection), 2 x 1,000 keys, every check allowed;
#   3. the service on the memory store and on PostgreSQL, the same wrk run, and the memory-store
#      service's GET /healthz: the front end's floor, a constant answer with no decision;
# each server warmed for WARMUP first. It prints `uptime` before and after each step, a table, the
# service-on-Redis / library ratio, and what 70 % of the library would leave per request.
#
# Redis is a private redis-server this script starts on REDIS_PORT (default 7180) and stops by its
# pid; PostgreSQL is POSTGRES_URL (default the shared local database `test`) with a table of its own,
# dropped at the end. Needs wrk, redis-server and psql on the PATH and the two jars built:
#   ./mvnw -B -q -DskipTests -pl sluice-server,sluice-benchmarks -am package
# Run from the repository root:  docs/load/run-load.sh   (DURATION=10s WARMUP=30s to change the lengths)
set -euo pipefail

REDIS_PORT=${REDIS_PORT:-7180}
SERVER_PORT=${SERVER_PORT:-7181}
POSTGRES_URL=${POSTGRES_URL:-jdbc:postgresql://127.0.0.1:5432/test?user=postgres}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-30s} # C2 on 2 shared cores: after 5 s the service ran at a quarter of its warm rate
SERVER_JAR=sluice-server/target/sluice-server.jar
BENCH_JAR=sluice-benchmarks/target/benchmarks.jar
for f in "$SERVER_JAR" "$BENCH_JAR"; do
  [ -f "$f" ] || { echo "missing $f; build: ./mvnw -B -q -DskipTests -pl sluice-server,sluice-benchmarks -am package" >&2; exit 2; }
done
for c in wrk redis-server redis-cli psql curl; do
  command -v "$c" >/dev/null || { echo "missing $c on the PATH" >&2; exit 2; }
done

work=$(mktemp -d)
table="sluice_load_$RANDOM$RANDOM"
redis_pid=""
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null || true
  psql "${POSTGRES_URL#jdbc:}" -q -c "DROP TABLE IF EXISTS $table; DROP TABLE IF EXISTS ${table}_spent" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

load() { uptime | sed 's/.*load average: //'; }

# The benchmark's policy (Limiters.Load.ALLOWED): a token bucket that is never empty.
cat > "$work/policies.yaml" <<'EOF'
policies:
  - name: bench
    algorithm: token-bucket
    capacity: 1000000000
    refill-tokens: 1000000000
    refill-period: 1s
EOF

echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(java -version 2>&1 | head -1)"
echo "== uptime: $(uptime)"

redis-server --port "$REDIS_PORT" --save '' --appendonly no --daemonize no > "$work/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

echo "== 1. library: RedisBenchmark.sluiceAsync"
# JMH runs one benchmark at a time on a machine (its /tmp/jmh.lock): wait for another's to end, 15 min at most.
for attempt in $(seq 90); do
  lib_before=$(load)
  if SLUICE_REDIS_URL="redis://127.0.0.1:$REDIS_PORT" java -jar "$BENCH_JAR" 'RedisBenchmark.sluiceAsync$' \
      -p keys=2000 -p maxBatch=64 -t 1 -f 1 -wi 2 -w 3s -i 3 -r 5s -rf json -rff "$work/jmh.json" > "$work/jmh.out" 2>&1; then
    break
  fi
  grep -q 'Unable to acquire the JMH lock' "$work/jmh.out" || { cat "$work/jmh.out"; exit 1; }
  [ "$attempt" = 1 ] && echo "   another JMH run holds /tmp/jmh.lock; waiting for it"
  [ "$attempt" = 90 ] && { echo "   /tmp/jmh.lock still held after 15 min" >&2; exit 1; }
  sleep 10
done
lib_after=$(load)
lib_rate=$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))[0]['primaryMetric']['score']))" "$work/jmh.json")
echo "   $lib_rate decisions/s (load after: $lib_after)"

# serve NAME ARGS...: starts the service, warms it up, measures, stops it; one row of the table.
rows=()
serve() {
  local name=$1; shift
  java -jar "$SERVER_JAR" serve --config "$work/policies.yaml" --port "$SERVER_PORT" "$@" > "$work/serve-$name.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do grep -qs '^sluice: stop with' "$work/serve-$name.log" && break; sleep 0.1; done
  grep -q '^sluice: stop with' "$work/serve-$name.log" || { cat "$work/serve-$name.log"; exit 1; }
  local url="http://127.0.0.1:$SERVER_PORT/v1/acquire"
  POLICY=bench KEYS=1000 wrk -t2 -c64 -d"$WARMUP" -s docs/load/acquire.lua "$url" > /dev/null
  local before; before=$(load)
  POLICY=bench KEYS=1000 wrk -t2 -c64 -d"$DURATION" --latency -s docs/load/acquire.lua "$url" > "$work/wrk-$name.out"
  local after; after=$(load)
  # Decisions the store did not answer in time (--store-timeout), warm-up included, from the server's own meters.
  local timeouts; timeouts=$(curl -s "http://127.0.0.1:$SERVER_PORT/metrics" \
    | awk '/^sluice_decisions_total\{.*reason="timeout"/ {s += $2} END {printf "%d", s}')
  if [ "$name" = memory ]; then
    # The front end's floor: the same warm process answering its liveness probe (no body to read,
    # no decision, a constant answer) under the same wrk load.
    local hurl="http://127.0.0.1:$SERVER_PORT/healthz" hbefore hafter
    wrk -t2 -c64 -d5s "$hurl" > /dev/null
    hbefore=$(load)
    wrk -t2 -c64 -d"$DURATION" --latency "$hurl" > "$work/wrk-healthz.out"
    hafter=$(load)
    rate_healthz=$(awk '/^Requests\/sec/ {printf "%d", $2}' "$work/wrk-healthz.out")
    healthz_row="| the same service's GET /healthz (no body, no decision) | $rate_healthz | $(awk '$1 == "50%" {print $2}' "$work/wrk-healthz.out") | $(awk '$1 == "99%" {print $2}' "$work/wrk-healthz.out") | | $hbefore / $hafter |"
  fi
  kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=""
  local rps p50 p99 answers errors
  rps=$(awk '/^Requests\/sec/ {printf "%d", $2}' "$work/wrk-$name.out")
  p50=$(awk '/^latency p50/ {print $3" ms"}' "$work/wrk-$name.out")
  p99=$(awk '/^latency p50/ {print $6" ms"}' "$work/wrk-$name.out")
  answers=$(sed -n 's/^answers: //p' "$work/wrk-$name.out")
  errors=$(awk '/Socket errors|Non-2xx/ {print}' "$work/wrk-$name.out" | tr '\n' ' ')
  echo "   $name: $rps requests/s, p50 $p50, p99 $p99; $answers; $timeouts store timeouts (warm-up included)${errors:+; wrk: $errors} (load $before before, $after after)"
  rows+=("| service on $name | $rps | $p50 | $p99 | $answers; $timeouts store timeouts | $before / $after |")
  eval "rate_$name=$rps"
}

echo "== 2. service on Redis (private, port $REDIS_PORT)"
serve redis --redis "redis://127.0.0.1:$REDIS_PORT"
echo "== 3. service on the memory store"
serve memory
echo "== 4. service on PostgreSQL ($POSTGRES_URL, table $table)"
serve postgres --postgres "$POSTGRES_URL" --postgres-table "$table"

echo
echo "| what, 64 in flight, $DURATION | decisions/s | p50 | p99 | answers (wrk) | load average (1, 5, 15 min) before / after |"
echo "|---|---|---|---|---|---|"
echo "| library alone on Redis (JMH sluiceAsync) | $lib_rate | | | | $lib_before / $lib_after |"
printf '%s\n' "${rows[@]}"
echo "$healthz_row"
echo
# shellcheck disable=SC2154 # rate_redis is set by serve
echo "service on Redis / library async on Redis: $(python3 -c "print(f'{$rate_redis / $lib_rate:.0%}')") (target: 70 % or more)"
# shellcheck disable=SC2154 # rate_healthz is set by serve
python3 -c "
lib, hz = $lib_rate, $rate_healthz
budget, floor = 1e6 / (0.7 * lib), 1e6 / hz + 1e6 / lib
print(f'70 % of the library leaves {budget:.1f} us of this machine per request; the bare /healthz ({1e6 / hz:.1f} us)'
      f' plus the library\'s own decision ({1e6 / lib:.1f} us) take {floor:.1f} us: '
      + ('within reach' if floor <= budget else 'out of reach on this machine'))"
echo "== uptime: $(uptime)"

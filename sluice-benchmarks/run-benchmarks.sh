#!/usr/bin/env bash
# Runs a short version of every Sluice benchmark and writes docs/benchmarks.md.
#
#   sluice-benchmarks/run-benchmarks.sh            # build benchmarks.jar, run all suites (~13 min)
#   sluice-benchmarks/run-benchmarks.sh --quick    # one short iteration each, to try the script
#   sluice-benchmarks/run-benchmarks.sh --only memory,keyed,heap,probes,redis,postgres
#
# Never part of `./mvnw verify`. Redis and PostgreSQL suites use SLUICE_REDIS_URL and
# SLUICE_POSTGRES_URL (defaults redis://127.0.0.1:6379 and
# jdbc:postgresql://127.0.0.1:5432/test?user=postgres), with their own key prefixes and tables.
set -euo pipefail
cd "$(dirname "$0")/.."

JAR=sluice-benchmarks/target/benchmarks.jar
if [[ "${SKIP_BUILD:-}" != "1" ]]; then
  ./mvnw -B -q -pl sluice-benchmarks -am package -DskipTests
fi
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"

echo "nproc: $(nproc)"; echo "uptime: $(uptime)"; "$JAVA" -version
"$JAVA" -Xmx1g -cp "$JAR" dev.sluice.benchmarks.BenchmarkReport \
  --out docs/benchmarks.md \
  --results sluice-benchmarks/target/results \
  --command "sluice-benchmarks/run-benchmarks.sh${*:+ $*}" \
  "$@"

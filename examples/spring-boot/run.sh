#!/usr/bin/env bash
# Builds the starter and this example through the reactor (nothing is installed into ~/.m2) and starts
# the application on port 8080 (PORT=... to change). SLUICE_STORE=redis keeps the budgets in Redis
# (SLUICE_REDIS_URL, default redis://127.0.0.1:6379) instead of in this process.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
"$root/mvnw" -B -q -f "$root/pom.xml" -pl examples/spring-boot -am package -DskipTests
exec java -jar "$root/examples/spring-boot/target/sluice-example-spring-boot.jar" \
  --server.port="${PORT:-8080}" --sluice.store="${SLUICE_STORE:-memory}" \
  --sluice.redis.url="${SLUICE_REDIS_URL:-redis://127.0.0.1:6379}" "$@"

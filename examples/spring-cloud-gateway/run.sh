#!/usr/bin/env bash
# Builds the gateway module and this example through the reactor (nothing is installed into ~/.m2) and
# starts the gateway on port 8080 (PORT=... to change), its backend on 8081 (BACKEND_PORT=...).
# SLUICE_STORE=redis keeps the budgets in Redis (SLUICE_REDIS_URL, default redis://127.0.0.1:6379).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
"$root/mvnw" -B -q -f "$root/pom.xml" -pl examples/spring-cloud-gateway -am package -DskipTests
exec java -jar "$root/examples/spring-cloud-gateway/target/sluice-example-spring-cloud-gateway.jar" \
  --server.port="${PORT:-8080}" --backend.port="${BACKEND_PORT:-8081}" --sluice.store="${SLUICE_STORE:-memory}" \
  --sluice.redis.url="${SLUICE_REDIS_URL:-redis://127.0.0.1:6379}" "$@"

#!/usr/bin/env bash
# Builds the extension and this example through the reactor (nothing is installed into ~/.m2) and runs
# the application in JVM mode on PORT (default 8080): curl -i localhost:8080/hello four times.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
"$root/mvnw" -B -q -f "$root/pom.xml" -pl examples/quarkus -am package -DskipTests -Djacoco.skip
exec java -Dquarkus.http.port="${PORT:-8080}" -jar "$root/examples/quarkus/target/quarkus-app/quarkus-run.jar"

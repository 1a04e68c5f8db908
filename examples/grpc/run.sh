#!/usr/bin/env bash
# Builds sluice-grpc and this example through the reactor (nothing is installed into ~/.m2) and runs it:
# with no argument, a server on a loopback port and a client that is refused, reads RetryInfo, waits
# exactly that long and is admitted, then both stop; `serve` keeps the server up on PORT (default 50051).
# REDIS_URL=redis://127.0.0.1:6379 keeps the budgets in Redis instead of in this process.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
"$root/mvnw" -B -q -f "$root/pom.xml" -pl examples/grpc -am package -DskipTests -Djacoco.skip
here="$root/examples/grpc/target"
exec java -cp "$here/classes:$(cat "$here/classpath.txt")" dev.sluice.examples.grpc.GrpcExample "$@"

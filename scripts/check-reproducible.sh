#!/usr/bin/env bash
# Builds one commit twice, in two fresh directories, and checks that every jar and SBOM is
# byte-identical: scripts/check-reproducible.sh [REV]   (REV defaults to HEAD; uncommitted
# changes are not part of a commit, so they are not checked).
#
# Each build is the release build without signatures (-Prelease -Dgpg.skip -DskipTests package):
# the jars, sources and javadoc jars, the SBOMs and the service jar. The second build runs in
# another directory, time zone, locale and umask, so anything that leaks a path, a clock or the
# environment into an artifact shows up as a mismatch. On a mismatch both trees are kept for
# comparison (unzip -l, diffoscope) and the script exits 1.
#
# It takes 3 to 4 minutes on a 2-core machine. It needs Maven Central (the SBOM plugin does not run
# offline) unless everything is already in the local repository; it writes nothing to it.
set -euo pipefail

rev="${1:-HEAD}"
root="$(cd "$(dirname "$0")/.." && pwd)"
commit="$(git -C "$root" rev-parse --verify "$rev^{commit}")"
work="$(mktemp -d "${TMPDIR:-/tmp}/sluice-repro.XXXXXX")"
start=$SECONDS

build() { # dir
  mkdir -p "$1"
  git -C "$root" archive "$commit" | tar -x -C "$1"
  (cd "$1" && ./mvnw -B -q -Prelease -Dgpg.skip -DskipTests package > "$1.log" 2>&1) || {
    echo "reproducible: the build in $1 failed; its log is $1.log" >&2
    exit 2
  }
  (cd "$1" && find . -path '*/target/*' \( -name '*.jar' -o -name 'bom.json' \) -not -name 'original-*' \
    -print0 | sort -z | xargs -0 sha256sum) > "$1.sha256"
}

echo "reproducible: building ${commit:0:12} twice in $work"
build "$work/a"
(export TZ=Pacific/Chatham LC_ALL=C.UTF-8; umask 0002; build "$work/b")

count="$(wc -l < "$work/a.sha256")"
if [ "$count" -eq 0 ]; then
  echo "reproducible: the build produced no artifact" >&2
  exit 2
fi
if diff -u "$work/a.sha256" "$work/b.sha256"; then
  echo "reproducible: all $count jars and SBOMs are identical ($((SECONDS - start)) s)"
  rm -rf "$work"
else
  echo "reproducible: the artifacts above differ between $work/a and $work/b ($((SECONDS - start)) s)" >&2
  exit 1
fi

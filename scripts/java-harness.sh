#!/usr/bin/env bash
# Builds the Java Iceberg interoperability harness (tests/interop/java) into
# build-java/iceberg-harness.jar (+ build-java/lib/), idempotently:
#   - nothing to do when the jar is newer than the pom and every source file;
#   - otherwise `mvn -o` (offline) when the local repository already holds
#     every artifact, else the same build online (Maven Central).
# Without java or mvn, or when Maven cannot fetch, it says so and exits 0
# locally: the tests that need the harness skip.  Under CI=true (what
# .ci/run exports) or HS_JAVA_HARNESS_REQUIRED=1 that is an error instead:
# CI must not pass without the only independent Java reader.  A compilation
# error of the harness itself is always an error.
set -euo pipefail
cd "$(dirname "$0")/.."

SRC=tests/interop/java
OUT=build-java
JAR=$OUT/iceberg-harness.jar

required=${HS_JAVA_HARNESS_REQUIRED:-0}
case "${CI:-}" in true|1) required=1 ;; esac

soft_fail() {
  if [ "$required" = 1 ]; then
    echo "java-harness: $* (required: CI=true or HS_JAVA_HARNESS_REQUIRED=1)" >&2
    exit 1
  fi
  echo "java-harness: $*; the Java interop tests will skip" >&2
  exit 0
}

command -v java >/dev/null 2>&1 || soft_fail "java not found"
command -v mvn >/dev/null 2>&1 || soft_fail "mvn not found"

if [ -f "$JAR" ] && [ -d "$OUT/lib" ] && \
   [ -z "$(find "$SRC/pom.xml" "$SRC/src" -newer "$JAR" -type f 2>/dev/null | head -1)" ]; then
  exit 0
fi

mkdir -p "$OUT"
log=$OUT/mvn.log
start=$(date +%s)
# A stale lib/ could hold jars of an older dependency set: rebuild it whole.
rm -rf "$OUT/lib"
if mvn -q -o -B -f "$SRC/pom.xml" package >"$log" 2>&1; then
  how="offline"
elif grep -q "COMPILATION ERROR" "$log"; then
  tail -30 "$log" >&2
  echo "java-harness: the harness does not compile (log: $log)" >&2
  exit 1   # our own code is broken: never a silent skip
else
  echo "java-harness: fetching Maven dependencies (first build; about a minute)" >&2
  rm -rf "$OUT/lib"
  if ! mvn -q -B -f "$SRC/pom.xml" package >"$log" 2>&1; then
    tail -30 "$log" >&2
    soft_fail "the Maven build failed (log: $log)"
  fi
  how="online"
fi
touch "$JAR"
echo "java-harness: built $JAR ($how, $(( $(date +%s) - start )) s)" >&2

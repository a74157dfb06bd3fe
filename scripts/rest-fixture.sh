#!/usr/bin/env bash
# Fetches Apache Iceberg's REST catalog fixture server (RESTCatalogServer from the
# iceberg-open-api test-fixtures jar on Maven Central, with its class path; see
# tests/interop/rest-fixture/pom.xml) into build-java/rest-fixture/lib, idempotently.
# Like scripts/java-harness.sh: without java/mvn or Maven Central it says so and exits
# 0 (the fixture tests skip) unless CI=true or HS_JAVA_HARNESS_REQUIRED=1.
# Run:  java -cp 'build-java/rest-fixture/lib/*' org.apache.iceberg.rest.RESTCatalogServer
#       (env REST_PORT, CATALOG_WAREHOUSE; docs/catalogs.md)
set -euo pipefail
cd "$(dirname "$0")/.."
POM=tests/interop/rest-fixture/pom.xml
OUT=build-java/rest-fixture
required=${HS_JAVA_HARNESS_REQUIRED:-0}
case "${CI:-}" in true|1) required=1 ;; esac
soft_fail() {
  if [ "$required" = 1 ]; then echo "rest-fixture: $*" >&2; exit 1; fi
  echo "rest-fixture: $*; the REST fixture tests will skip" >&2; exit 0
}
command -v java >/dev/null 2>&1 || soft_fail "java not found"
command -v mvn >/dev/null 2>&1 || soft_fail "mvn not found"
if [ -f "$OUT/.done" ] && [ "$OUT/.done" -nt "$POM" ]; then exit 0; fi
mkdir -p "$OUT"
rm -rf "$OUT/lib"
if mvn -q -o -f "$POM" dependency:copy-dependencies -DoutputDirectory="$PWD/$OUT/lib" \
     >"$OUT/mvn.log" 2>&1 ||
   mvn -q -f "$POM" dependency:copy-dependencies -DoutputDirectory="$PWD/$OUT/lib" \
     >"$OUT/mvn.log" 2>&1; then
  touch "$OUT/.done"
  echo "rest-fixture: $(ls "$OUT/lib" | wc -l) jars in $OUT/lib"
else
  tail -20 "$OUT/mvn.log" >&2
  soft_fail "Maven could not fetch the fixture's class path (see $OUT/mvn.log)"
fi

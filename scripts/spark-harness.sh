#!/usr/bin/env bash
# Prepares Apache Spark with Apache Iceberg for the Spark interoperability tests
# (tests/python/test_spark_restcat.py), idempotently:
#   - pyspark (PyPI, pinned below) into .venv, unless it is already there at that version;
#   - iceberg-spark-runtime and iceberg-aws-bundle (S3FileIO) from Maven Central into the
#     local Maven repository (~/.m2, outside the repository; never committed), through
#     `mvn dependency:get` (offline first);
#   - writes build-java/spark/jars (one absolute jar path a line; build-java/ is ignored),
#     which the tests hand to spark.jars.
# Versions that exist together: Spark 3.5 (Scala 2.12) with Iceberg 1.10.x, the newest
# Iceberg line with a Spark 3.5 runtime that also writes v3 deletion vectors (Iceberg 1.8+).
# Without java, mvn or a registry it says so and exits 0 locally (the Spark tests skip);
# under CI=true or HS_SPARK_REQUIRED=1 that is an error: CI must not pass without Spark.
set -euo pipefail
cd "$(dirname "$0")/.."

PYSPARK_VERSION=${HS_PYSPARK_VERSION:-3.5.9}
ICEBERG_VERSION=${HS_ICEBERG_SPARK_VERSION:-1.10.1}
SPARK_LINE=3.5
SCALA=2.12
OUT=build-java/spark

required=${HS_SPARK_REQUIRED:-0}
case "${CI:-}" in true|1) required=1 ;; esac
soft_fail() {
  if [ "$required" = 1 ]; then
    echo "spark-harness: $* (required: CI=true or HS_SPARK_REQUIRED=1)" >&2
    exit 1
  fi
  echo "spark-harness: $*; the Spark tests will skip" >&2
  exit 0
}

command -v java >/dev/null 2>&1 || soft_fail "java not found (scripts/bootstrap.sh installs it)"
command -v mvn >/dev/null 2>&1 || soft_fail "mvn not found (scripts/bootstrap.sh installs it)"
[ -x .venv/bin/python ] || soft_fail ".venv missing (scripts/bootstrap.sh makes it)"

have=$(.venv/bin/python -c "import pyspark; print(pyspark.__version__)" 2>/dev/null || true)
if [ "$have" != "$PYSPARK_VERSION" ]; then
  echo "spark-harness: installing pyspark==$PYSPARK_VERSION into .venv (about 320 MB)" >&2
  .venv/bin/pip install -q "pyspark==$PYSPARK_VERSION" ||
    soft_fail "pip could not install pyspark==$PYSPARK_VERSION"
fi

# Maven's default local repository (HS_MAVEN_REPO when settings.xml moves it).
repo=${HS_MAVEN_REPO:-$HOME/.m2/repository}
mkdir -p "$OUT"
jars=()
for gav in "org.apache.iceberg:iceberg-spark-runtime-${SPARK_LINE}_${SCALA}:$ICEBERG_VERSION" \
           "org.apache.iceberg:iceberg-aws-bundle:$ICEBERG_VERSION"; do
  IFS=: read -r g a v <<<"$gav"
  jar="$repo/${g//.//}/$a/$v/$a-$v.jar"
  if [ ! -s "$jar" ]; then
    echo "spark-harness: fetching $gav with Maven" >&2
    mvn -q -B dependency:get -Dmaven.repo.local="$repo" -Dartifact="$gav" -Dtransitive=false >"$OUT/mvn.log" 2>&1 ||
      { tail -20 "$OUT/mvn.log" >&2; soft_fail "Maven could not fetch $gav"; }
  fi
  [ -s "$jar" ] || soft_fail "$jar missing after the Maven fetch"
  jars+=("$jar")
done
printf '%s\n' "${jars[@]}" >"$OUT/jars.tmp"
mv "$OUT/jars.tmp" "$OUT/jars"

#!/bin/sh
# bench/ingest: streaming ingest rows/s (fsync per batch, group commit) and
# acknowledge-to-searchable latency, HyperStreamDB's append stream against
# LanceDB's table.add and Lucene 8.7's IndexWriter (LuceneIngest.java), ratios
# in one run.  Not part of the tests.
# Usage: bench/ingest/run.sh [BUILD_DIR]
#   env BENCH_ROWS (default 100000), BENCH_BATCH (rows per write, 100),
#       BENCH_DIM (vector dimension, 32), BENCH_WRITERS (group commit, 4),
#       BENCH_LAT_SAMPLES (100)
# Installs lancedb (PyPI) into the venv and liblucene8-java + a JDK (Debian)
# when they are missing.
set -e
cd "$(dirname "$0")/../.."
export HS_BUILD="${1:-${HS_BUILD:-build}}"
PY="${PYTHON:-.venv/bin/python}"
if ! ls /usr/share/java/lucene-core-8*.jar >/dev/null 2>&1 || ! command -v javac >/dev/null; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    liblucene8-java default-jdk-headless >/dev/null
fi
"$PY" -c "import lancedb" 2>/dev/null || "$PY" -m pip install -q -r bench/ingest/requirements.txt
exec "$PY" bench/ingest/bench.py

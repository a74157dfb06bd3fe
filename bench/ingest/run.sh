#!/bin/sh
# bench/ingest: streaming ingest rows/s (fsync per batch, group commit) and
# acknowledge-to-searchable latency, HyperStreamDB's append stream against
# LanceDB's table.add, ratios in one run.  Not part of the tests.
# Usage: bench/ingest/run.sh [BUILD_DIR]
#   env BENCH_ROWS (default 100000), BENCH_BATCH (rows per write, 100),
#       BENCH_DIM (vector dimension, 32), BENCH_WRITERS (group commit, 4),
#       BENCH_LAT_SAMPLES (100)
# Installs lancedb (PyPI) into the venv when it is missing.
set -e
cd "$(dirname "$0")/../.."
export HS_BUILD="${1:-${HS_BUILD:-build}}"
PY="${PYTHON:-.venv/bin/python}"
"$PY" -c "import lancedb" 2>/dev/null || "$PY" -m pip install -q -r bench/ingest/requirements.txt
exec "$PY" bench/ingest/bench.py

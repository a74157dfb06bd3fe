#!/bin/sh
# bench/compact: compaction MB/s against pyarrow reading and rewriting the
# same files, and the index rebuild time, in one run.
# Usage: bench/compact/run.sh [BUILD_DIR]   (env BENCH_FILES, BENCH_ROWS, BENCH_ROUNDS)
set -e
cd "$(dirname "$0")/../.."
export HS_BUILD="${1:-${HS_BUILD:-build}}"
PY="${PYTHON:-.venv/bin/python}"
exec "$PY" bench/compact/bench.py

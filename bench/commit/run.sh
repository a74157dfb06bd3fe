#!/bin/sh
# bench/commit: appends per second and scan planning on a 10,000-file table,
# HyperStreamDB against pyiceberg, ratios in one run.
# Usage: bench/commit/run.sh [BUILD_DIR]   (env BENCH_APPENDS, BENCH_FILES, BENCH_ROUNDS)
set -e
cd "$(dirname "$0")/../.."
export HS_BUILD="${1:-${HS_BUILD:-build}}"
PY="${PYTHON:-.venv/bin/python}"
exec "$PY" bench/commit/bench.py

#!/bin/sh
# bench/s3: requests, bytes and latency per query (point, 0.1% range, filtered vector
# top-10, full scan) on an S3 table, HyperStreamDB against pyiceberg + pyarrow, with an
# injected per-request delay.  Usage: bench/s3/run.sh
# (env BENCH_ROWS, BENCH_FILES, BENCH_DELAYS_MS, BENCH_REPEAT, BENCH_WARMUP, HS_S3_SERVER)
set -e
cd "$(dirname "$0")/../.."
PY="${PYTHON:-.venv/bin/python}"
exec "$PY" bench/s3/bench.py

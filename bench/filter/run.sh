#!/usr/bin/env bash
# bench/filter/run.sh [BUILD_DIR] [--rebuild] [--prepare] - filtered scans with
# scalar indexes, us vs DuckDB vs pyarrow.dataset over the same Parquet files
# (see bench.py).  --rebuild regenerates the cached table; --prepare only
# builds the cache.
#
# What `make bench` calls (not part of `make test`).  Builds the C driver
# (hs_filter_bench.c) against <build>/libhyperstream.so, then runs bench.py,
# which builds the 10M-row, 20-file table and its indexes once (cached under
# bench/filter/data; delete it or pass --rebuild to start over) and prints
# latencies, ratios, index build time and size, and whether the targets hold.
#
# Environment: BENCH_ROWS (default 10000000), BENCH_FILES (default 20),
# BENCH_REPEAT (best of, default 3), BENCH_FILTER_DATA (cache directory,
# default bench/filter/data), PYTHON (default .venv/bin/python).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-${HS_BUILD:-build}}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
py="${PYTHON:-$root/.venv/bin/python}"
shift || true

if [ ! -f "$build/libhyperstream.so" ]; then
    echo "run.sh: $build has no libhyperstream.so; build first (make build)" >&2
    exit 1
fi
cc -std=gnu11 -O2 -Wall -Wextra -I"$root/include" -o "$build/hs_filter_bench" \
    "$here/hs_filter_bench.c" -L"$build" -lhyperstream -Wl,-rpath,"$build"
exec "$py" "$here/bench.py" --build "$build" --driver "$build/hs_filter_bench" \
    --data "${BENCH_FILTER_DATA:-$here/data}" "$@"

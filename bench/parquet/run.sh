#!/usr/bin/env bash
# bench/parquet/run.sh <build dir> - Parquet write and full-scan speed, us vs pyarrow.
#
# What `make bench` calls.  Builds the small C driver (hs_bench.c) against
# <build dir>/libhyperstream.a with the library's link dependencies, then runs
# bench.py, which generates the data, writes it with pyarrow and with us
# (zstd and snappy), scans every file with both readers (single-threaded) and
# prints times, MB/s, file sizes and the us/pyarrow ratios.
#
# Environment: BENCH_ROWS (default 10000000 scalar rows), BENCH_EMB_ROWS
# (default 1000000 rows of the 128-d float32 embedding), BENCH_REPEAT (best of,
# default 2), BENCH_DIR (scratch for the files, default a mktemp dir, removed
# at the end).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
py="${PYTHON:-$root/.venv/bin/python}"

if [ ! -f "$build/libhyperstream.a" ] || [ ! -f "$build/libhyperstream.so" ]; then
    echo "run.sh: $build has no libhyperstream.a/.so; build first (make build)" >&2
    exit 1
fi
libs="$(pkg-config --libs libzstd snappy liblz4 zlib libbrotlidec libbrotlienc jansson libxxhash) -lroaring -lpthread -lm"
cc -std=gnu11 -O2 -march=x86-64-v2 -I"$root/include" -o "$build/hs_bench" \
    "$here/hs_bench.c" "$build/libhyperstream.a" $libs

scratch="${BENCH_DIR:-}"
cleanup=0
if [ -z "$scratch" ]; then
    scratch="$(mktemp -d "${TMPDIR:-/tmp}/hs-bench-parquet.XXXXXX")"
    cleanup=1
fi
status=0
"$py" "$here/bench.py" --build "$build" --dir "$scratch" || status=$?
if [ "$cleanup" = 1 ]; then rm -rf "$scratch"; fi
exit $status

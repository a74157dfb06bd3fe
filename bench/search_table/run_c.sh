#!/usr/bin/env bash
# bench/search_table/run_c.sh TABLE QUERIES.f32 DIM [K EF RERANK FRACS COLUMNS]
# Builds hs_search_bench.c against <build>/libhyperstream.so (HS_BUILD,
# default build) and runs it: what a filter costs a vector search through
# the C API (same text, two texts in turn, a text never seen), see the
# driver's header.  TABLE is a table bench.py kept (--tables-dir): it has
# the range-indexed int64 column "sel" and the vector column "embedding".
# HS_BENCH_CLOCK=cpu times process CPU; QUERIES holds NQ=200 rows.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${HS_BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
if [ $# -lt 3 ]; then
    echo "usage: run_c.sh TABLE QUERIES.f32 DIM [K EF RERANK FRACS COLUMNS]" >&2
    exit 2
fi
cc -std=gnu11 -O2 -Wall -Wextra -I"$root/include" -o "$build/hs_search_bench" \
    "$here/hs_search_bench.c" -L"$build" -lhyperstream -Wl,-rpath,"$build"
exec "$build/hs_search_bench" "$1" embedding "$2" "$3" 200 "${4:-10}" "${5:-0}" "${6:-0}" \
    "${7:-0.5,0.1,0.01,0.001}" "${8:-}"

#!/usr/bin/env bash
# bench/sidx/run.sh [BUILD_DIR] [ROWS] - scalar index micro-benchmark (see
# sidx_bench.c): build time and size of inverted / range / auto indexes
# against the column's Parquet (zstd) write, and lookup latency.  Builds the
# driver against <build>/libhyperstream.a (it uses internal headers).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-${HS_BUILD:-build}}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
rows="${2:-1000000}"
if [ ! -f "$build/libhyperstream.a" ]; then
    echo "run.sh: $build has no libhyperstream.a; build first" >&2
    exit 1
fi
cc -std=gnu11 -O2 -Wall -Wextra -march=x86-64-v2 -I"$root/include" -I"$root/src" \
    -o "$build/hs_sidx_bench" "$here/sidx_bench.c" "$build/libhyperstream.a" \
    $(pkg-config --libs libzstd snappy liblz4 zlib libbrotlidec libbrotlienc jansson libxxhash \
      sqlite3 openblas) -lroaring -l:libpg_query.a -lpthread -lm
exec "$build/hs_sidx_bench" "$rows"

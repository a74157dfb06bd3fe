#!/usr/bin/env bash
# Distance micro-benchmarks: our kernels at every level, the batch paths,
# and (when $HNSWLIB_DIR holds an hnswlib checkout with hnswlib/hnswlib.h)
# hnswlib's kernels timed the same way.  Builds into $OUT (default
# /tmp/hs-bench-distance) from the sources, so it does not need the rest of
# the library to build.   bench/distance/run.sh [--pairs]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/hs-bench-distance}
mkdir -p "$out"
FLAGS="-std=gnu11 -O2 -march=x86-64-v2 -Iinclude -Isrc -Wall -Wextra -Wno-unused-parameter
       -Wno-sign-compare -Wno-missing-field-initializers"
case "$(uname -m)" in aarch64) FLAGS="${FLAGS/-march=x86-64-v2/}";; esac
gcc $FLAGS -o "$out/bench_distance" bench/distance/bench_distance.c src/base/error.c \
    src/base/mem.c src/base/threadpool.c src/index/vector/distance.c \
    src/index/vector/distance_avx2.c src/index/vector/distance_avx512.c \
    src/index/vector/distance_neon.c src/index/vector/vector_api.c \
    $(pkg-config --libs openblas) -lpthread -lm
grep -m1 "model name" /proc/cpuinfo || true
"$out/bench_distance" "$@"
if [ -n "${HNSWLIB_DIR:-}" ] && [ -f "$HNSWLIB_DIR/hnswlib/hnswlib.h" ]; then
    g++ -O3 -march=native -std=c++17 -I"$HNSWLIB_DIR" -o "$out/hnswlib_ref" \
        bench/distance/hnswlib_ref.cc -lpthread
    echo
    "$out/hnswlib_ref"
else
    echo "(set HNSWLIB_DIR to an hnswlib checkout to time hnswlib's kernels too)"
fi

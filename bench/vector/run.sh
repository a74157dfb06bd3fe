#!/usr/bin/env bash
# bench/vector/run.sh [BUILD_DIR] [bench.py options] - HNSW: our hnsw, hnsw_tq8,
# hnsw_tq4 and hnsw_pq against hnswlib and faiss (HNSW flat, HNSW SQ8,
# IVF-PQ) on fashion-mnist (60,000 x 784, L2) and, when helper E2's
# bench/datasets script has made it, the 384-d WordNet text set (cosine).
# Single thread, M=16, ef_construction=200: build time, index memory, QPS at
# recall@10 0.90 / 0.95 / 0.99, and the ratios against hnswlib.
#
# One command, not part of `make test` (about 15 minutes on 2 cores).
# Builds the C driver (vbench.c) against <build>/libhyperstream.a, installs
# bench/requirements.txt into the venv when hnswlib or faiss is missing, then
# runs bench.py.  Options pass through, e.g. --only hnswlib,hnsw,hnsw_tq8
# --no-faiss --queries 1000 --sets fashion-mnist.
#
# Environment: BENCH_DIR (scratch for the raw vectors and ground truth,
# default a mktemp dir, removed at the end), PYTHON (default .venv/bin/python).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-${HS_BUILD:-build}}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
shift || true
py="${PYTHON:-$root/.venv/bin/python}"

if [ ! -f "$build/libhyperstream.a" ]; then
    echo "run.sh: $build has no libhyperstream.a; build first (make build)" >&2
    exit 1
fi
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    echo "run.sh: Debian's dataset-fashion-mnist is not installed" >&2
    exit 1
fi
libs="$(pkg-config --libs libzstd snappy liblz4 zlib libbrotlidec libbrotlienc jansson libxxhash sqlite3 openblas) -lpg_query -lroaring -lpthread -lm"
cc -std=gnu11 -O2 -march=x86-64-v2 -I"$root/include" -I"$root/src" -o "$build/vbench" \
    "$here/vbench.c" "$build/libhyperstream.a" $libs

if ! "$py" -c "import hnswlib, faiss" 2>/dev/null; then
    echo "installing bench/requirements.txt into $("$py" -c 'import sys; print(sys.prefix)')"
    "$py" -m pip install -q -r "$root/bench/requirements.txt"
fi

scratch="${BENCH_DIR:-}"
cleanup=0
if [ -z "$scratch" ]; then
    scratch="$(mktemp -d "${TMPDIR:-/tmp}/hs-bench-vector.XXXXXX")"
    cleanup=1
fi
mkdir -p "$scratch"
status=0
"$py" "$here/bench.py" --vbench "$build/vbench" --dir "$scratch" "$@" || status=$?
if [ "$cleanup" = 1 ]; then rm -rf "$scratch"; fi
exit $status

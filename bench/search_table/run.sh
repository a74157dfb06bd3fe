#!/usr/bin/env bash
# bench/search_table/run.sh [bench.py options] - vector search through the
# table API (every column returned, filters, batches) against LanceDB and
# hnswlib in one run; prints the ratio table (bench.py's docstring says what
# is measured).  Not part of `make test`: about an hour on a busy 2-core
# machine with the defaults (fashion-mnist and wordnet384, hnsw and
# hnsw_tq8, zstd and uncompressed tables), most of it index builds.
#
# Builds the library (make build), installs the hyperstreamdb package and,
# when missing, lancedb and hnswlib into the venv (PYTHON, default
# .venv/bin/python).  Options pass through, e.g. --sets fashion-mnist
# --kinds hnsw,hnsw_tq8,hnsw_pq --layouts zstd --queries 100 --json out.json.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
py="${PYTHON:-$root/.venv/bin/python}"
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    echo "run.sh: Debian's dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)" >&2
    exit 1
fi
make -C "$root" build >/dev/null
"$py" -m pip install -q --no-build-isolation --no-deps "$root"
"$py" -c "import lancedb, hnswlib" 2>/dev/null || "$py" -m pip install -q lancedb hnswlib
cd "$root"
HS_BUILD="${HS_BUILD:-build}" exec "$py" "$here/bench.py" "$@"

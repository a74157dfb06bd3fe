#!/usr/bin/env bash
# bench/sql/run.sh [BUILD_DIR] [bench.py options] - our SQL engine vs DuckDB and
# DataFusion: TPC-H (SF 1 by default), indexed selective queries and vector
# top-k, Table.to_arrow() vs pyarrow (see bench.py).  Not part of `make test`.
#
# Data is generated once and cached under ~/.cache/hyperstreamdb/bench-sql
# (BENCH_SQL_DATA; $XDG_CACHE_HOME if set); delete it to start over.  Only
# TPC-H: run.sh --only tpch.  The engine timed is the installed hyperstreamdb
# package when it has SQL, else BUILD_DIR's library (--backend ctypes forces
# the build directory's).  Environment: BENCH_SQL_SF, BENCH_THREADS (default:
# all cores, the same for every engine), BENCH_REPEAT, BENCH_SQL_ROWS,
# BENCH_SQL_VEC_ROWS, PYTHON (default .venv/bin/python).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-${HS_BUILD:-build}}"
case "$build" in -*) build="${HS_BUILD:-build}" ;; *) shift || true ;; esac
case "$build" in /*) ;; *) build="$root/$build" ;; esac
py="${PYTHON:-$root/.venv/bin/python}"
if [ ! -f "$build/libhyperstream_testing.so" ]; then
    echo "run.sh: $build has no libhyperstream_testing.so; build first (make build)" >&2
    exit 1
fi
"$py" -c "import tpchgen_cli" 2>/dev/null || [ -x "$(dirname "$py")/tpchgen-cli" ] || \
    "$py" -m pip install -q tpchgen-cli
"$py" -c "import datafusion" 2>/dev/null || "$py" -m pip install -q datafusion
cd "$root"
HS_BUILD="$build" exec "$py" "$here/bench.py" "$@"

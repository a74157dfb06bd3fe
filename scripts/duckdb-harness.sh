#!/usr/bin/env bash
# Prepares DuckDB with its Iceberg extension for the DuckDB interoperability test
# (tests/python/test_duckdb_restcat.py), idempotently: a virtual environment
# build-duckdb/venv (build-duckdb/ is ignored) holding duckdb and the iceberg, avro and
# httpfs extensions, which DuckDB publishes on PyPI as duckdb-ext-<name> packages of the
# same DuckDB version (an extension loads only into the DuckDB it was built for, so the
# versions are pinned together here, apart from the newer duckdb of .venv that the other
# tests use as an oracle).  Writes build-duckdb/extensions (the directory holding the
# *.duckdb_extension files) for the test.
# Without pip or a registry it says so and exits 0 locally (the test skips); under
# CI=true or HS_DUCKDB_REQUIRED=1 that is an error: CI must not pass without DuckDB.
set -euo pipefail
cd "$(dirname "$0")/.."

DUCKDB_VERSION=${HS_DUCKDB_ICEBERG_VERSION:-1.4.4}
EXT_BUILD=${HS_DUCKDB_EXT_BUILD:-20260205}
OUT=build-duckdb

required=${HS_DUCKDB_REQUIRED:-0}
case "${CI:-}" in true|1) required=1 ;; esac
soft_fail() {
  if [ "$required" = 1 ]; then
    echo "duckdb-harness: $* (required: CI=true or HS_DUCKDB_REQUIRED=1)" >&2
    exit 1
  fi
  echo "duckdb-harness: $*; the DuckDB interop test will skip" >&2
  exit 0
}

stamp="$OUT/venv/.hs-duckdb-$DUCKDB_VERSION-$EXT_BUILD"
if [ ! -f "$stamp" ]; then
  command -v python3 >/dev/null 2>&1 || soft_fail "python3 not found"
  echo "duckdb-harness: installing duckdb==$DUCKDB_VERSION with its iceberg, avro and httpfs extensions" >&2
  rm -rf "$OUT/venv"
  python3 -m venv "$OUT/venv" || soft_fail "python3 -m venv failed"
  pkgs=("duckdb==$DUCKDB_VERSION")
  for e in iceberg avro httpfs; do pkgs+=("duckdb-ext-$e==$DUCKDB_VERSION.$EXT_BUILD"); done
  "$OUT/venv/bin/pip" install -q "${pkgs[@]}" || soft_fail "pip could not install ${pkgs[*]}"
  touch "$stamp"
fi
ext=$("$OUT/venv/bin/python" - <<'PY'
import glob, os, duckdb, duckdb_ext
base = list(duckdb_ext.__path__)[0]
hits = glob.glob(os.path.join(base, "extensions", "v" + duckdb.__version__, "*", "iceberg.duckdb_extension"))
print(os.path.dirname(hits[0]) if hits else "")
PY
)
[ -n "$ext" ] || soft_fail "no iceberg.duckdb_extension for DuckDB $DUCKDB_VERSION in $OUT/venv"
echo "$ext" >"$OUT/extensions"

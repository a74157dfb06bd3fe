"""Differential test of filtered scans with and without scalar indexes.

Random Iceberg tables (nulls, NaN, +-0.0, +-inf, empty and non-ASCII
strings, int64 extremes; many small data files; partitioned or sorted;
merge-on-read deletes as v2 position-delete files or v3 deletion vectors;
a copy-on-write overwrite) are queried with hundreds of random filter
expressions each, through hs_scan_plan + the Arrow C stream, under four
index configurations of the same table:

    auto      "auto" indexes on several columns declared BEFORE the data
              was written, so every append / delete / overwrite built them
    none      every index dropped
    inverted  "inverted" on every indexable column (hs_table_add_index
              builds them for the existing files)
    range     "range" on every column that accepts it

The oracle is independent of us: pyiceberg plans the live data files and
the deletes that apply to them (Parquet position deletes or Puffin deletion
vectors), DuckDB reads those Parquet files with read_parquet(filename,
file_row_number), the deleted (file, position) pairs are removed, and DuckDB
evaluates the same filter text.  Every configuration must return exactly
DuckDB's rows (compared by the unique rid, then every column, floats
bitwise).  The expected semantics are those of include/hyperstream/table.h
and src/expr/expr.h: SQL three-valued logic, NaN = NaN and NaN above every
number (PostgreSQL/DuckDB), strings as unsigned bytes.

Besides equality with DuckDB, the test checks that the indexed
configurations really used their indexes (hs_index_stats.files_indexed and
index_lookups summed over the run), so that a silently ignored index cannot
pass.  Expression count per table: env HS_DIFF_EXPRS (default 400; three
tables).  When the filter parser accepts SQL forms (BETWEEN, LIKE, 'NaN'::
double; src/expr/expr.h), the generator uses them too.
"""
import ctypes
import os
import time

import numpy as np
import pyarrow as pa
import pytest
from conftest import require, require_module  # noqa: E402

from helpers import idxlib as X

require_module("duckdb")
require_module("pyiceberg")

require(X.LIB.exists(), f"{X.LIB} not built")

N_EXPR = int(os.environ.get("HS_DIFF_EXPRS", "400"))
INDEXABLE = [c for c in X.COLUMNS if c != "rid"]
AUTO_COLS = ["k", "f", "cat", "ts", "big"]

TABLES = {
    # v2: bucket-partitioned, position-delete files, one copy-on-write overwrite
    "v2_bucket": dict(fv=2, spec="bucket(3, k)", sort=None, appends=6, rows=450,
                      deletes=["cat = 'a' OR k = 7", "f > 40 AND f < 60", "big < -4000000000000000000"],
                      overwrite="i32 >= 900 AND flag = true"),
    # v3: unpartitioned, sorted (page/row-group bounds are tight), deletion vectors
    "v3_sorted": dict(fv=3, spec=None, sort="cat, big", appends=10, rows=300,
                      deletes=["name IS NULL", "k IN (1, 2, 3) AND flag = false", "d = '2024-01-05'"],
                      overwrite=None),
    # v2: identity partition on a nullable boolean and bucket(2, i32): more, smaller files
    "v2_identity": dict(fv=2, spec="identity(flag), bucket(2, i32)", sort=None, appends=4, rows=250,
                        deletes=["dec > 500"], overwrite=None),
    # v2, uncompressed pages: selective reads decode pages in place from the
    # file's mapping, and repeated scans (every filter, four configurations,
    # one process) set known pages up from the footer's page notes
    "v2_uncompressed": dict(fv=2, spec=None, sort=None, appends=8, rows=400,
                            deletes=["k = 3 OR name IS NULL"], overwrite=None,
                            props={"write.parquet.compression-codec": "uncompressed",
                                   "write.parquet.page-row-limit": "64"}),
}


@pytest.fixture(scope="module")
def hs():
    h = X.Hs()
    assert h.has_index_api, f"index API not in {X.LIB}: missing {h.missing}"
    return h


def _build_table(hs, tmp_path, cfg, seed):
    rng = np.random.default_rng(seed)
    cat = hs.path_catalog(tmp_path)
    t = hs.create(cat, "t", X.SCHEMA, spec=cfg["spec"], sort=cfg["sort"], fv=cfg["fv"],
                  props=cfg.get("props"))
    # declared before any data: appends, deletes and the overwrite build them
    for c in AUTO_COLS:
        hs.add_index(t, c, "auto")
    parts, rid = [], 0
    for _ in range(cfg["appends"]):
        part = X.random_table(rng, cfg["rows"], rid)
        rid += cfg["rows"]
        parts.append(part)
        hs.append(t, part)
    for d in cfg["deletes"]:
        hs.delete(t, d)
    if cfg["overwrite"]:
        new = X.random_table(rng, 200, rid)
        rid += 200
        parts.append(new)
        s = X.Stream()
        pa.RecordBatchReader.from_batches(new.schema, new.to_batches())._export_to_c(
            ctypes.addressof(s))
        hs.call("hs_table_overwrite", t, ctypes.byref(s), cfg["overwrite"].encode())
    return cat, t, pa.concat_tables(parts), rng


def _drop_all(hs, t):
    for ix in hs.list_indexes(t):
        try:
            hs.drop_index(t, ix["column"], ix["kind"])
        except X.HsFail as e:
            if e.status != "HS_NOT_FOUND":  # dropped with an earlier kind of the column
                raise


def _setup(hs, t, mode):
    """Brings the table to index configuration `mode`; returns the indexed columns."""
    if mode == "auto":
        # built by the appends, deletes and overwrite themselves: every live file has them
        listed = hs.list_indexes(t)
        assert {(ix["column"], ix["kind"]) for ix in listed} == {(c, "auto") for c in AUTO_COLS}
        for ix in listed:
            assert ix["files_indexed"] == ix["files_live"] > 0, f"write path left files unindexed: {ix}"
        return AUTO_COLS
    _drop_all(hs, t)
    assert hs.list_indexes(t) == [], "indexes left after dropping all"
    if mode == "none":
        return []
    cols = []
    for c in INDEXABLE:
        try:
            hs.add_index(t, c, mode)
            cols.append(c)
        except X.HsFail as e:
            # a kind may refuse a type (range on a boolean): only HS_INVALID
            assert e.status == "HS_INVALID", str(e)
            assert mode == "range" and X.COLUMNS[c] == "bool", f"{mode} refused {c}: {e}"
    listed = {(ix["column"], ix["kind"]) for ix in hs.list_indexes(t)}
    assert listed == {(c, mode) for c in cols}, listed
    for ix in hs.list_indexes(t):
        assert ix["files_indexed"] == ix["files_live"], f"not every live file indexed: {ix}"
    return cols


@pytest.mark.parametrize("name", list(TABLES))
def test_filters_match_duckdb_with_and_without_indexes(hs, table_dir, name):
    cfg = TABLES[name]
    seed = 1000 + list(TABLES).index(name)
    t0 = time.monotonic()
    cat, t, data, rng = _build_table(hs, table_dir, cfg, seed)
    oracle = X.Oracle(hs.metadata_location(t), X.SCHEMA.names)
    assert oracle.n_files >= 8, f"want many data files, got {oracle.n_files}"
    assert oracle.n_deleted > 0, "want merge-on-read deletes in the table"
    gen = X.ExprGen(rng, data, X.COLUMNS, ext=True)
    exprs = [gen.expr(focus=AUTO_COLS if i % 2 else None) for i in range(N_EXPR)]
    exprs += ["TRUE", "FALSE", "k = 0", "f = 0.0", "f = -0.0", "cat = ''", "name = ''",
              "cat IS NULL", "big = 9223372036854775807", "big = -9223372036854775808",
              "big <= -9223372036854775808", "f > 1000000", "f < -1000000",
              "f = 'NaN'::double", "f > 'Infinity'::double", "f >= 'NaN'::double",
              "f < 'NaN'::double", "cat LIKE '%'", "name LIKE 'n1%'"]
    wants = [oracle.query(e) for e in exprs]
    assert sum(w.num_rows for w in wants) > 0
    assert any(0 < w.num_rows < oracle.n_rows // 10 for w in wants), "no selective filter"

    modes = ["auto", "none", "inverted", "range"]
    errors = {m: {} for m in modes}   # mode -> {expression number: message}
    per_mode = {}
    for mode in modes:
        indexed = _setup(hs, t, mode)
        totals = dict.fromkeys(X.INDEX_STATS_FIELDS, 0)
        for i, (e, want) in enumerate(zip(exprs, wants)):
            try:
                got, ist, _ = hs.scan(t, e, stats=True)
            except (X.HsFail, X.StreamFail) as ex:
                errors[mode][i] = f"[{name}/{mode}] {e}: {ex}"
                continue
            for k in totals:
                totals[k] += ist[k]
            d = X.compare(got, want, f"[{name}/{mode}] {e}")
            if d:
                errors[mode][i] = d
            if mode == "none":
                assert ist["files_indexed"] == 0 and ist["index_lookups"] == 0, \
                    f"{e}: no index declared but stats say {ist}"
        per_mode[mode] = totals
        if indexed:
            assert totals["files_indexed"] > 0 and totals["index_lookups"] > 0, \
                f"[{name}/{mode}] indexes on {indexed} never used: {totals}"
            assert totals["files_pruned_by_index"] > 0, \
                f"[{name}/{mode}] no file was ever pruned by an index: {totals}"
            assert totals["index_files_skipped"] == 0, \
                f"[{name}/{mode}] healthy sidecars skipped: {totals}"
    hs.close(t)
    hs.close_catalog(cat)
    secs = time.monotonic() - t0
    print(f"{name}: {len(exprs)} filters x {len(modes)} configs, {oracle.n_files} files, "
          f"{oracle.n_rows} live rows, {secs:.1f}s; totals {per_mode}")
    # wrong only with an index first: those are the index's bugs; then the
    # scan's own disagreements with DuckDB (wrong without an index too)
    index_only = [m for mode in modes if mode != "none"
                  for i, m in errors[mode].items() if i not in errors["none"]]
    unindexed = list(errors["none"].values())
    n_all = sum(len(v) for v in errors.values())
    assert not n_all, (
        f"{n_all} mismatches with DuckDB: {len(index_only)} only with an index, "
        f"{len(unindexed)} without an index (per config: "
        f"{ {m: len(v) for m, v in errors.items()} })\n"
        + "\n".join(index_only[:10] + unindexed[:6]))


def test_sql_filter_forms_with_indexes(hs, table_dir):
    """BETWEEN, LIKE prefixes, NaN literals and `literal op column` over
    indexed columns (the forms src/expr/expr.h turns into index ranges)."""
    cfg = TABLES["v2_bucket"]
    cat, t, data, rng = _build_table(hs, table_dir, cfg, 77)
    oracle = X.Oracle(hs.metadata_location(t), X.SCHEMA.names)
    for c in INDEXABLE:
        if c not in AUTO_COLS:
            hs.add_index(t, c, "inverted")
    exprs = ["k BETWEEN -3 AND 4", "k NOT BETWEEN -3 AND 4", "f BETWEEN -0.0 AND 10",
             "f BETWEEN 10 AND 'Infinity'::double", "f = 'NaN'::double",
             "f <> 'NaN'::double", "f > 'Infinity'::double", "f >= 'Infinity'::double",
             "cat LIKE 'a%'", "cat LIKE ''", "cat NOT LIKE 'a%'", "name LIKE 'n%'",
             "name LIKE 'n1%' AND k BETWEEN 0 AND 10", "5 < k", "'b' <= cat",
             "false <> flag", "ts BETWEEN '2024-01-01T00:00:00' AND '2024-01-02T12:00:00'",
             "d BETWEEN '2024-01-01' AND '2024-01-31' OR cat LIKE 'z%'",
             "dec BETWEEN -1.5 AND 1.5", "big BETWEEN -9223372036854775808 AND 0"]
    failures = []
    for e in exprs:
        try:
            got, ist, _ = hs.scan(t, e, stats=True)
        except (X.HsFail, X.StreamFail) as ex:
            failures.append(f"{e}: {ex}")
            continue
        d = X.compare(got, oracle.query(e), e)
        if d:
            failures.append(d)
    hs.close(t)
    hs.close_catalog(cat)
    assert not failures, "\n".join(failures)

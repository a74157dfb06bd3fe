"""Overlay indexing of a table that pyiceberg wrote.

pyiceberg (SqlCatalog on a SQLite file) creates a day(ts)-partitioned table
and appends to it, and deletes by copy-on-write; we open the same catalog
through hs_catalog_open_sql and add indexes (hs_table_add_index) to the
existing files.  Then:

* pyiceberg still loads and reads the table (our commit only added the
  "hyperstream.index-registry" property), with the same rows;
* filtered scans through our C API use the indexes (hs_index_stats: files
  indexed, files pruned by the index) and return exactly what pyiceberg's
  own scan with the same row_filter returns;
* after pyiceberg appends more files (which have no sidecars), overwrites
  and deletes, and after our merge-on-read delete, results still equal
  pyiceberg's; list_indexes reports the unindexed files and declaring the
  index again builds exactly the missing sidecars.

pyiceberg is the oracle.  No NaN in the data: pyiceberg's float comparisons
follow IEEE (NaN > x is false), ours PostgreSQL's.
"""
import datetime as dt

import numpy as np
import pyarrow as pa
import pytest
from conftest import require, require_module  # noqa: E402

from helpers import idxlib as X

require_module("pyiceberg")
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import DayTransform  # noqa: E402
from pyiceberg.types import (DoubleType, IntegerType, LongType, NestedField,  # noqa: E402
                             StringType, TimestampType)

require(X.LIB.exists(), f"{X.LIB} not built")

REGIONS = ["north", "south", "east", "west", "", "\u00e9st"]
T0 = dt.datetime(2024, 3, 1)

ARROW = pa.schema([("id", pa.int64()), ("region", pa.string()), ("code", pa.int32()),
                   ("amount", pa.float64()), ("ts", pa.timestamp("us")), ("label", pa.string())])

# filters in the syntax both pyiceberg and our filter parser read
FILTERS = [
    "region = 'north'",
    "region = ''",
    "region = '\u00e9st'",
    "code = 17",
    "code in (1, 2, 3)",
    "code not in (1, 2, 3)",
    "amount > 190.5",
    "amount <= 10",
    "label = 'L1234'",
    "label in ('L1', 'L99999', 'L20000')",
    "region = 'east' and code < 5",
    "region != 'west' or code = 7",
    "label is null",
    "amount is not null and region = 'south'",
    "not (region = 'north')",
    "ts >= '2024-03-02T06:00:00' and code = 40",
    "id >= 1000 and id < 1100",
]


@pytest.fixture(scope="module")
def hs():
    h = X.Hs()
    assert h.has_index_api, f"index API not in {X.LIB}: missing {h.missing}"
    return h


def batch(rng, lo, n):
    ids = np.arange(lo, lo + n, dtype=np.int64)
    region = [REGIONS[j] for j in rng.integers(0, len(REGIONS), n)]
    code = rng.integers(0, 50, n).astype(np.int32)
    amount = np.round(rng.uniform(0, 200, n), 2)
    ts = [T0 + dt.timedelta(seconds=int(s)) for s in rng.integers(0, 3 * 86400, n)]
    label = [f"L{i}" for i in ids]
    null = rng.random(n) < 0.05
    return pa.table({
        "id": pa.array(ids),
        "region": pa.array(region, mask=rng.random(n) < 0.05),
        "code": pa.array(code, pa.int32()),
        "amount": pa.array(amount, mask=null),
        "ts": pa.array(ts, pa.timestamp("us")),
        "label": pa.array(label, mask=rng.random(n) < 0.02),
    }, schema=ARROW)


def py_rows(pt, flt):
    return pt.scan(row_filter=flt).to_arrow().sort_by("id")


def check_filters(hs, t, pt, filters, want_index=True, indexed=("region", "code", "label")):
    """Ours == pyiceberg for every filter; returns the summed index stats.
    want_index: equality filters on the `indexed` columns must use an index."""
    totals = dict.fromkeys(X.INDEX_STATS_FIELDS, 0)
    for f in filters:
        got, ist, _ = hs.scan(t, f, stats=True)
        want = py_rows(pt, f)
        d = X.compare(got, want, f, key="id")
        assert not d, d
        for k in totals:
            totals[k] += ist[k]
        if want_index and f.startswith(tuple(f"{c} =" for c in indexed)):
            assert ist["files_indexed"] > 0, (f, ist)
    return totals


def test_add_index_to_pyiceberg_table(hs, tmp_path):
    rng = np.random.default_rng(42)
    wh = tmp_path / "wh"
    wh.mkdir()
    db = tmp_path / "cat.db"
    pcat = SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
    pcat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "region", StringType(), required=False),
                    NestedField(3, "code", IntegerType(), required=False),
                    NestedField(4, "amount", DoubleType(), required=False),
                    NestedField(5, "ts", TimestampType(), required=False),
                    NestedField(6, "label", StringType(), required=False))
    spec = PartitionSpec(PartitionField(5, 1000, DayTransform(), "ts_day"))
    pt = pcat.create_table("db.events", schema=schema, partition_spec=spec)
    n = 0
    for _ in range(5):
        pt.append(batch(rng, n, 3000))
        n += 3000
    pt.delete("code = 13")                      # copy-on-write rewrite of every file
    pt = pcat.load_table("db.events")
    n_files = len(list(pt.scan().plan_files()))
    assert n_files >= 10
    before = pt.scan().to_arrow().num_rows

    cat = hs.sql_catalog(db, wh)
    t = hs.open(cat, "db.events")
    # unindexed first: the same answers, and no index used
    totals = check_filters(hs, t, pt, FILTERS[:4], want_index=False)
    assert totals["files_indexed"] == 0 and totals["index_lookups"] == 0, totals

    hs.add_index(t, "region", "inverted")
    hs.add_index(t, "code", "auto")
    hs.add_index(t, "amount", "range")
    hs.add_index(t, "label", "inverted")
    hs.add_index(t, "ts", "range")
    listed = hs.list_indexes(t)
    assert {ix["column"] for ix in listed} == {"region", "code", "amount", "label", "ts"}
    for ix in listed:
        assert ix["files_indexed"] == ix["files_live"] == n_files, ix
        assert ix["bytes"] > 0, ix

    # pyiceberg still reads the table, and sees our registry pointer
    pt = pcat.load_table("db.events")
    assert "hyperstream.index-registry" in pt.properties, pt.properties
    assert pt.scan().to_arrow().num_rows == before

    totals = check_filters(hs, t, pt, FILTERS)
    assert totals["files_pruned_by_index"] > 0, totals
    assert totals["index_files_skipped"] == 0, totals
    # a label lives in exactly one file: every other file is pruned by the index
    _, ist, _ = hs.scan(t, "label = 'L1234'", stats=True)
    assert ist["files_pruned_by_index"] == ist["files_planned"] - 1, ist

    # pyiceberg appends (files without sidecars): still right, partly indexed
    pt.append(batch(rng, n, 2000))
    n += 2000
    pt = pcat.load_table("db.events")
    hs.refresh(t)
    check_filters(hs, t, pt, FILTERS, want_index=True)
    _, ist, _ = hs.scan(t, "region = 'north'", stats=True)
    assert 0 < ist["files_indexed"] < ist["files_planned"], ist
    assert ist["index_files_skipped"] == 0, ist     # no sidecar is not a bad sidecar
    listed = {ix["column"]: ix for ix in hs.list_indexes(t)}
    assert listed["region"]["files_indexed"] < listed["region"]["files_live"], listed
    # declaring again builds the missing sidecars only
    hs.add_index(t, "region", "inverted")
    listed = {ix["column"]: ix for ix in hs.list_indexes(t)}
    assert listed["region"]["files_indexed"] == listed["region"]["files_live"], listed
    _, ist, _ = hs.scan(t, "region = 'north'", stats=True)
    assert ist["files_indexed"] == ist["files_planned"], ist

    # pyiceberg overwrite + copy-on-write delete: registry entries of dead files are ignored
    pt = pcat.load_table("db.events")
    pt.overwrite(batch(rng, 100_000, 500), overwrite_filter="region = 'west'")
    pt = pcat.load_table("db.events")
    pt.delete("code >= 45")
    pt = pcat.load_table("db.events")
    hs.refresh(t)
    totals = check_filters(hs, t, pt, FILTERS, want_index=False)
    assert totals["index_files_skipped"] == 0, totals

    # our merge-on-read delete on the pyiceberg table; pyiceberg applies it too
    assert hs.delete(t, "code = 20 OR region = ''") > 0
    pt = pcat.load_table("db.events")
    assert pt.scan().to_arrow().num_rows == hs.scan(t).num_rows
    check_filters(hs, t, pt, FILTERS, want_index=False)
    hs.close(t)
    hs.close_catalog(cat)


def test_pyiceberg_static_reads_indexed_path_table(hs, table_dir):
    """A path table we index stays readable by pyiceberg's StaticTable, and
    index-pruned scans equal pyiceberg's scans of the same metadata."""
    from pyiceberg.table import StaticTable

    rng = np.random.default_rng(3)
    cat = hs.path_catalog(table_dir)
    t = hs.create(cat, "p", ARROW, spec="bucket(4, code)")
    for i in range(4):
        hs.append(t, batch(rng, i * 2500, 2500))
    hs.add_index(t, "label", "inverted")
    hs.add_index(t, "amount", "auto")
    st = StaticTable.from_metadata(hs.metadata_location(t))
    assert st.scan().to_arrow().num_rows == 10_000
    totals = check_filters(hs, t, st, FILTERS, indexed=("label",))
    assert totals["files_pruned_by_index"] > 0, totals
    hs.close(t)
    hs.close_catalog(cat)

"""Index catch-up (hs_table_refresh_indexes, `hyperstream table index
refresh`, Table.refresh_indexes, the table property
hyperstream.index.auto-refresh) and the incremental registry (format 2).

pyiceberg (SqlCatalog on a SQLite file) creates and appends to a table; we
add indexes through the C API (ctypes); pyiceberg appends more files, which
have no sidecars.  Then:

* before a refresh, scans use the sidecars present and read the other files:
  every filter's rows equal pyiceberg's scan and DuckDB's evaluation of the
  same predicate over the table's rows;
* refresh indexes exactly the files that lack a sidecar: the registry (read
  by an independent reader of the format, helpers/registry.py) covers every
  live file, and an indexed query's counters show every file indexed; a
  second refresh finds nothing and commits nothing;
* pyiceberg's overwrite rewrites files: entries of the files it removed are
  never used (no skipped-sidecar warnings, same rows), refresh indexes the
  files it wrote; a sidecar damaged in place is skipped, never trusted, and
  refresh rebuilds it;
* the CLI verb and auto-refresh on open do the same.

The Python package's Table.refresh_indexes and remove_orphan_indexes (which
takes an age) are checked on a path table.

In the storage matrix (HS_TEST_STORAGE=s3) the SqlCatalog test and the time
travel test keep their tables on the S3 server (the SQLite file stays local;
pyiceberg gets the server's endpoint and keys; the sidecar damaged in place
stays a local check).
"""
import datetime as dt
import json
import os
import pathlib
import subprocess
import time

import numpy as np
import pyarrow as pa
import pytest
from conftest import (ON_S3, require, require_module, s3_fileio_properties,  # noqa: E402
                      storage_server)

from helpers import idxlib as X
from helpers import registry as R

require_module("pyiceberg")
require_module("duckdb")
import duckdb  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import IntegerType, LongType, NestedField, StringType  # noqa: E402

require(X.LIB.exists(), f"{X.LIB} not built")

BUILD = pathlib.Path(os.environ.get("HS_BUILD", "build"))
CLI = BUILD / "hyperstream"
REGIONS = ["north", "south", "east", "west", ""]
ARROW = pa.schema([("id", pa.int64()), ("region", pa.string()), ("code", pa.int32()),
                   ("label", pa.string())])
# filters both our parser and DuckDB read the same way
FILTERS = [
    "region = 'north'",
    "region = ''",
    "code = 17",
    "code in (1, 2, 3)",
    "region = 'east' and code < 5",
    "region <> 'west' or code = 7",
    "label is null",
    "label = 'L1234'",
]
INDEXED = ("region", "code")


@pytest.fixture(scope="module")
def hs():
    h = X.Hs()
    assert "hs_table_refresh_indexes" not in h.missing, h.missing
    return h


def batch(rng, lo, n):
    ids = np.arange(lo, lo + n, dtype=np.int64)
    return pa.table({
        "id": pa.array(ids),
        "region": pa.array([REGIONS[j] for j in rng.integers(0, len(REGIONS), n)],
                           mask=rng.random(n) < 0.05),
        "code": pa.array(rng.integers(0, 50, n).astype(np.int32), pa.int32()),
        "label": pa.array([f"L{i}" for i in ids], mask=rng.random(n) < 0.02),
    }, schema=ARROW)


def check_results(hs, t, pt):
    """Every filter: ours == pyiceberg's scan == DuckDB over the table's rows.
    Returns the index stats of each filter."""
    everything = pt.scan().to_arrow()
    con = duckdb.connect()
    con.register("t", everything)
    stats = {}
    for f in FILTERS:
        got, ist, _ = hs.scan(t, f, stats=True)
        want = pt.scan(row_filter=f).to_arrow().sort_by("id")
        d = X.compare(got, want, f, key="id")
        assert not d, d
        ids = sorted(r[0] for r in con.execute(f"SELECT id FROM t WHERE {f}").fetchall())
        assert sorted(got.column("id").to_pylist()) == ids, f
        stats[f] = ist
    return stats


def live_files(hs, t):
    return {X.strip_file_scheme(f["file_path"]): f["file_size_in_bytes"]
            for f in hs.files(t)}


def covered(hs, t, column_fid):
    """{data file: size} the current registry has an entry for (field id)."""
    reg = R.read_current(X.strip_file_scheme(hs.location(t)), hs.properties(t))
    assert reg is not None and reg["format-version"] == 2, reg
    return {X.strip_file_scheme(e["data-file"]): e["data-file-size"]
            for e in reg["entries"] if e["field-id"] == column_fid}


def test_refresh_indexes_after_pyiceberg_commits(hs, tmp_path, table_dir):
    rng = np.random.default_rng(7)
    wh = table_dir / "wh"
    db = tmp_path / "cat.db"
    if ON_S3:
        pcat = SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=str(wh),
                          **s3_fileio_properties(storage_server()))
    else:
        wh.mkdir()
        pcat = SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
    pcat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "region", StringType(), required=False),
                    NestedField(3, "code", IntegerType(), required=False),
                    NestedField(4, "label", StringType(), required=False))
    pt = pcat.create_table("db.events", schema=schema)
    n = 0
    for _ in range(3):
        pt.append(batch(rng, n, 2000))
        n += 2000

    cat = hs.sql_catalog(db, wh)
    t = hs.open(cat, "db.events")
    hs.add_index(t, "region", "inverted")
    hs.add_index(t, "code", "auto")
    assert set(covered(hs, t, 2).items()) == set(live_files(hs, t).items())

    # pyiceberg appends two files: no sidecars for them
    pt = pcat.load_table("db.events")
    pt.append(batch(rng, n, 1500))
    n += 1500
    pt.append(batch(rng, n, 1500))
    n += 1500
    pt = pcat.load_table("db.events")
    hs.refresh(t)
    live = live_files(hs, t)
    missing = set(live) - set(covered(hs, t, 2))
    assert len(missing) == 2, missing
    stats = check_results(hs, t, pt)
    ist = stats["region = 'north'"]
    assert 0 < ist["files_indexed"] < ist["files_planned"], ist
    assert ist["index_files_skipped"] == 0, ist     # no sidecar is not a bad sidecar

    # refresh: exactly the missing files get an entry per declared index
    meta_before = hs.metadata_location(t)
    assert hs.refresh_indexes(t) == 2 * len(missing)
    assert hs.metadata_location(t) != meta_before
    for fid in (2, 3):
        assert set(covered(hs, t, fid).items()) == set(live.items()), fid
    pt = pcat.load_table("db.events")                 # pyiceberg still reads it
    stats = check_results(hs, t, pt)
    for f in ("region = 'north'", "code = 17"):
        assert stats[f]["files_indexed"] == stats[f]["files_planned"] > 0, (f, stats[f])
        assert stats[f]["index_lookups"] > 0, (f, stats[f])
    listed = {ix["column"]: ix for ix in hs.list_indexes(t)}
    assert all(ix["files_indexed"] == ix["files_live"] for ix in listed.values()), listed
    # nothing missing: no commit
    meta = hs.metadata_location(t)
    assert hs.refresh_indexes(t) == 0
    assert hs.metadata_location(t) == meta

    # pyiceberg overwrite: copy-on-write rewrites; the entries of removed files
    # stay in the registry until pruned but are never used
    pt.overwrite(batch(rng, 100_000, 800), overwrite_filter="region = 'west'")
    pt = pcat.load_table("db.events")
    hs.refresh(t)
    live = live_files(hs, t)
    reg_files = covered(hs, t, 2)
    assert set(reg_files) - set(live), "the overwrite removed no indexed file"
    stats = check_results(hs, t, pt)
    assert all(s["index_files_skipped"] == 0 for s in stats.values()), stats
    added = hs.refresh_indexes(t)
    assert added == 2 * len(set(live) - set(reg_files)) > 0
    for fid in (2, 3):
        cov = covered(hs, t, fid)
        assert all(cov.get(p) == s for p, s in live.items()), fid
    stats = check_results(hs, t, pt)
    assert stats["region = 'north'"]["files_indexed"] == stats["region = 'north'"][
        "files_planned"]

    # a sidecar damaged in place is skipped (never trusted), refresh rebuilds it.
    # Local only: on S3 this process trusts an object's size and ETag from its
    # HEAD cache for HS_S3_HEAD_CACHE_S (sidecars are never rewritten under
    # their name), so a replacement goes unseen that long - as the C matrix
    # skips its damage-in-place checks (docs/storage.md)
    if not ON_S3:
        loc = X.strip_file_scheme(hs.location(t))
        reg = R.read_current(loc, hs.properties(t))
        victim = next(e for e in reg["entries"] if e["field-id"] == 2
                      and X.strip_file_scheme(e["data-file"]) in live)
        side = pathlib.Path(loc, victim["index-file"])
        side.write_bytes(side.read_bytes()[: victim["index-file-size"] // 2])
        stats = check_results(hs, t, pt)
        assert stats["region = 'north'"]["index_files_skipped"] == 1, stats["region = 'north'"]
        assert hs.refresh_indexes(t) == 1
        stats = check_results(hs, t, pt)
        assert stats["region = 'north'"]["index_files_skipped"] == 0
        assert stats["region = 'north'"]["files_indexed"] == stats["region = 'north'"][
            "files_planned"]

    # the CLI verb, after another pyiceberg append
    pt.append(batch(rng, 200_000, 700))
    r = subprocess.run([str(CLI), "table", "index", "refresh", "db.events", "--sql", str(db),
                        "--warehouse", str(wh)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"entries_added": 2}, r.stdout
    hs.refresh(t)
    pt = pcat.load_table("db.events")
    for fid in (2, 3):
        assert set(covered(hs, t, fid).items()) >= set(live_files(hs, t).items())
    check_results(hs, t, pt)

    # auto-refresh on open, asked for by a table property (set by pyiceberg)
    with pt.transaction() as tx:
        tx.set_properties({"hyperstream.index.auto-refresh": "true"})
    pt = pcat.load_table("db.events")
    pt.append(batch(rng, 300_000, 600))
    pt = pcat.load_table("db.events")
    t2 = hs.open(cat, "db.events")
    for fid in (2, 3):
        assert set(covered(hs, t2, fid).items()) >= set(live_files(hs, t2).items())
    stats = check_results(hs, t2, pt)
    assert stats["code = 17"]["files_indexed"] == stats["code = 17"]["files_planned"]
    hs.close(t2)
    hs.close(t)
    hs.close_catalog(cat)


def test_package_refresh_and_orphan_age(tmp_path):
    """Table.refresh_indexes, and remove_orphan_indexes taking its cut-off
    as an age (it used to pass an absolute time where C takes an age, so
    nothing was ever removed)."""
    hdb = require_module("hyperstreamdb")
    t = hdb.Table(tmp_path / "t")
    rng = np.random.default_rng(3)
    t.write_arrow(batch(rng, 0, 500))
    t.commit()
    t.add_index("region", "inverted")
    reg_rel = t.properties["hyperstream.index-registry"]
    # a commit that does not know about indexes (as another engine's): the
    # registry pointer is not there while it writes, then comes back
    t.remove_properties("hyperstream.index-registry")
    t.write_arrow(batch(rng, 500, 500))
    t.commit()
    t.set_properties({"hyperstream.index-registry": reg_rel})
    reg = R.read_current(t.location, t.properties)
    assert len(reg["entries"]) == 1
    assert t.refresh_indexes() == 1
    assert t.refresh_indexes() == 0
    reg = R.read_current(t.location, t.properties)
    assert len(reg["entries"]) == 2 and reg["format-version"] == 2
    got = t.to_arrow(filter="region = 'north'")
    everything = t.to_arrow()
    want = [r for r, g in zip(everything.column("id").to_pylist(),
                              everything.column("region").to_pylist()) if g == "north"]
    assert sorted(got.column("id").to_pylist()) == sorted(want)
    # an orphan sidecar, 2 hours old: an age of 1 hour removes it, 3 hours keeps it
    orphan = pathlib.Path(t.location.removeprefix("file://"), "index", "stray.2.inverted")
    orphan.write_bytes(b"x" * 10)
    old = time.time() - 2 * 3600
    os.utime(orphan, (old, old))
    assert t.remove_orphan_indexes(dt.timedelta(hours=3)) == 0 and orphan.exists()
    assert t.remove_orphan_indexes(dt.datetime.now() - dt.timedelta(hours=3)) == 0
    assert orphan.exists()
    assert t.remove_orphan_indexes(dt.timedelta(hours=1)) == 1
    assert not orphan.exists()
    # the registry's files (root and segments) and live sidecars stay
    reg = R.read_current(t.location, t.properties)
    for p in [reg["root"], *reg["segments"]]:
        assert os.path.exists(p), p
    for e in reg["entries"]:
        assert pathlib.Path(t.location.removeprefix("file://"), e["index-file"]).exists()
    assert sorted(t.to_arrow(filter="region = 'north'").column("id").to_pylist()) == \
        sorted(want)


def test_time_travel_uses_the_indexes_of_then(table_dir):
    """An overwrite drops the registry entries of the files it removes (the
    current registry is smaller); a scan of a snapshot from before still
    uses their sidecars, through the registry the table had then (the
    property of that metadata version), with the rows pyarrow finds."""
    import pyarrow.compute as pc
    hdb = require_module("hyperstreamdb")
    t = hdb.Table(table_dir / "t")
    rng = np.random.default_rng(11)
    written = []
    for k in range(3):
        b = batch(rng, k * 400, 400)
        written.append(b)
        t.write_arrow(b)
        t.commit()
    t.add_index("code", "inverted")
    old = t.current_snapshot_id
    old_files = {e["data-file"] for e in R.read_current(t.location, t.properties)["entries"]}
    assert len(old_files) == 3
    t.overwrite(batch(rng, 10_000, 300))              # every old file goes
    now_files = {e["data-file"] for e in R.read_current(t.location, t.properties)["entries"]}
    assert now_files and not (now_files & old_files)
    everything = pa.concat_tables(written)
    want = sorted(everything.filter(pc.equal(everything["code"], 17))["id"].to_pylist())
    got = t.to_arrow(filter="code = 17", snapshot_id=old)
    assert sorted(got.column("id").to_pylist()) == want
    ex = t.explain(filter="code = 17", snapshot_id=old)
    tot = ex["totals"]
    assert tot["files_planned"] == 3 and tot["files_indexed"] == 3, tot
    assert tot["index_files_skipped"] == 0, tot
    # the current snapshot: only the new file, indexed
    tot = t.explain(filter="code = 17")["totals"]
    assert tot["files_planned"] == tot["files_indexed"] == 1, tot


def test_maintenance_keeps_live_segments(tmp_path):
    """Many appends give a registry of several segments (merged on the way).
    remove_orphan_files, expire_snapshots and remove_orphan_indexes with no
    safety window delete old roots and merged-away segments but never a file
    the current root lists: the registry still reads (independent reader),
    covers every live file, and every file is answered by its index."""
    import pyarrow.compute as pc
    hdb = require_module("hyperstreamdb")
    t = hdb.Table(tmp_path / "t")
    rng = np.random.default_rng(5)
    t.write_arrow(batch(rng, 0, 100))
    t.commit()
    t.add_index("code", "inverted")
    written = []
    for k in range(20):
        b = batch(rng, 1000 + k * 50, 50)
        written.append(b)
        t.write_arrow(b)
        t.commit()
    reg = R.read_current(t.location, t.properties)
    assert 1 < len(reg["segments"]) < 20, reg["segments"]    # appended, and merged
    reg_dir = pathlib.Path(t.location.removeprefix("file://"), "index", "registry")
    n_files_before = len(list(reg_dir.iterdir()))
    later = dt.datetime.now() + dt.timedelta(minutes=1)
    t.remove_orphan_files(older_than=later)
    r = t.expire_snapshots(retain_last=1)
    assert r["expired_snapshot_ids"]
    # (appends keep every data file live: no registry version is all-dead)
    assert not any(f["kind"] == "index-registry" for f in r["deleted_files"])
    t.remove_orphan_indexes(dt.timedelta(0))
    assert len(list(reg_dir.iterdir())) < n_files_before
    reg = R.read_current(t.location, t.properties)
    for p in [reg["root"], *reg["segments"]]:
        assert os.path.exists(p), p
    live = {f["file_path"].removeprefix("file://") for f in t.files()}
    covered = {e["data-file"].removeprefix("file://") for e in reg["entries"]}
    assert len(live) == 21 and live <= covered, live - covered
    tot = t.explain(filter="code = 17")["totals"]
    assert tot["files_indexed"] == tot["files_planned"] == 21, tot
    assert tot["index_files_skipped"] == 0, tot
    everything = t.to_arrow()
    want = sorted(everything.filter(pc.equal(everything["code"], 17))["id"].to_pylist())
    assert sorted(t.to_arrow(filter="code = 17").column("id").to_pylist()) == want


def test_refresh_after_java_appends(tmp_path):
    """Stock Java Iceberg (the harness in tests/interop/java, HadoopTables on
    the same directory) appends to a table we indexed: its files have no
    sidecars until Table.refresh_indexes(); rows always equal Java's own read."""
    import shutil
    require(shutil.which("java") is not None, "java not installed")
    from test_iceberg_java import HARNESS_JAR, JavaHarness
    require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
    hdb = require_module("hyperstreamdb")
    schema = {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "cat", "required": False, "type": "string"}]}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    table = tmp_path / "jt"

    def rows(lo, n):
        return [{"id": i, "cat": [None, "a", "b", "c"][i % 4]} for i in range(lo, lo + n)]

    def java_append(lo, n, k):
        p = tmp_path / f"rows{k}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows(lo, n)))
        java.call("append", str(table), str(p))

    def check(t):
        meta = java.call("current-metadata", str(table))[0]
        want = sorted(r["id"] for r in java.read(meta, tmp=tmp_path) if r["cat"] == "b")
        got = t.to_arrow(filter="cat = 'b'")
        assert sorted(got.column("id").to_pylist()) == want
        return t.explain(filter="cat = 'b'")["totals"]

    java = JavaHarness(HARNESS_JAR)
    try:
        java.call("create", str(table), str(tmp_path / "schema.json"))
        java_append(0, 40, 0)
        t = hdb.Table(table)
        t.add_index("cat", "inverted")
        java_append(40, 40, 1)
        java_append(80, 40, 2)
        t.refresh()
        tot = check(t)
        assert tot["files_planned"] == 3 and tot["files_indexed"] == 1, tot
        assert t.refresh_indexes() == 2
        tot = check(t)
        assert tot["files_planned"] == tot["files_indexed"] == 3, tot
        # Java still reads the table after our registry commit
        meta = java.call("current-metadata", str(table))[0]
        assert sorted(r["id"] for r in java.read(meta, tmp=tmp_path)) == list(range(120))
    finally:
        java.close()

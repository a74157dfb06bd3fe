"""Compaction and concurrent row deletes (issue 14): Iceberg's delete
thresholds for choosing files, and the carry-over of deletes committed
while a compaction runs (between its plan and its commit) to the files it
wrote, so that a compaction is not starved by a stream of small deletes.

Oracles, none of them our own output:
  * rows: the source batches minus every delete the test made, computed by
    DuckDB (an exact multiset: a delete lost or applied to another row
    changes it), compared with what we read, with what pyiceberg reads, and
    with what an index-served filter returns;
  * the number of rows carried over is the number of live rows the
    concurrent deletes removed from files the compaction rewrote, counted
    by DuckDB from the test's own plan of which ids each file held.
"""
import duckdb
import numpy as np
import pyarrow as pa
import pytest
from conftest import require_module

import hyperstreamdb as hdb

pyiceberg_table = require_module("pyiceberg.table")
StaticTable = pyiceberg_table.StaticTable

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("v", pa.float64())])


def make_data(start, n):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "cat": pa.array([f"c{i % 5}" for i in ids], pa.string()),
        "v": pa.array((ids % 97).astype(np.float64)),
    }, schema=SCHEMA)


def expected(batches, where="TRUE"):
    src = pa.concat_tables(batches)  # noqa: F841 (DuckDB reads it by name)
    return sorted(duckdb.sql(f"SELECT id, cat, v FROM src WHERE {where}").fetchall())


def count(batches, where):
    src = pa.concat_tables(batches)  # noqa: F841
    return duckdb.sql(f"SELECT count(*) FROM src WHERE {where}").fetchall()[0][0]


def rows_of(tbl):
    return sorted(zip(tbl.column("id").to_pylist(), tbl.column("cat").to_pylist(),
                      tbl.column("v").to_pylist()))


def pyiceberg_rows(t):
    return rows_of(StaticTable.from_metadata(t.metadata_location).scan().to_arrow())


CASES = {
    # format, declared index, z-order: the streaming rewrite path (v2, no
    # index), with sidecars built from the new files (index), lineage
    # columns (v3), z-order (the in-memory path)
    "v2-stream": (2, False, None),
    "v2-index": (2, True, None),
    "v3-index": (3, True, None),
    "v2-zorder": (2, False, "v, id"),
}


def _table(table_dir, fmt, indexed):
    """6 appends of 100 rows (ids 0..599), then a delete of id % 7 = 3."""
    t = hdb.Table.create(table_dir / "t", SCHEMA, format_version=fmt)
    if indexed:
        t.add_index("cat", "inverted")
    batches = []
    for k in range(6):
        b = make_data(k * 100, 100)
        batches.append(b)
        t.write_arrow(b)
        t.commit()
    t.delete("id % 7 = 3")
    return t, batches


@pytest.mark.parametrize("case", list(CASES))
def test_delete_during_compaction_is_carried_over(table_dir, case):
    """Deletes committed by another handle while the compaction reads its
    files: a range across two files (some of its ids already deleted), and
    every row of a third file (the file leaves the table).  The compaction
    commits; every delete is there exactly once."""
    fmt, indexed, zorder = CASES[case]
    t, batches = _table(table_dir, fmt, indexed)
    other = hdb.Table(t.path)
    state = {"n": 0, "deleted": []}
    conc = "(id >= 150 AND id < 260) OR (id >= 400 AND id < 500)"

    def progress(what, done, total):
        state["n"] += 1
        if state["n"] == 1:
            other.refresh()
            state["deleted"].append(other.delete("id >= 150 AND id < 260"))
            other.refresh()
            state["deleted"].append(other.delete("id >= 400 AND id < 500"))

    r = t.compact(progress=progress, zorder_by=zorder)
    assert state["n"] >= 1 and r["snapshot_id"] is not None
    live_hit = count(batches, f"id % 7 <> 3 AND ({conc})")
    assert sum(state["deleted"]) == live_hit
    assert r["carried_deletes"] == live_hit
    assert r["rewritten_data_files"] == 6
    t.refresh()
    want = expected(batches, f"id % 7 <> 3 AND NOT ({conc})")
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want
    # an index-served filter (the new files' sidecars hold the deleted rows
    # too: the deletes must still apply)
    assert rows_of(t.to_arrow(filter="cat = 'c2'")) == expected(
        batches, f"id % 7 <> 3 AND NOT ({conc}) AND cat = 'c2'")
    # the source files are gone from the snapshot; the data files left are
    # the compaction's (the carried deletes reference them)
    files = t.files()
    assert all(f["file_path"] not in r["groups"][0]["files"] for f in files)
    # a second compaction applies the carried deletes and drops them
    r2 = t.compact(delete_ratio_threshold=0.01)
    assert r2["carried_deletes"] == 0 and r2["removed_delete_files"] >= 1
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want
    other.close()


def test_delete_between_plan_and_commit_v3_lineage(table_dir):
    """v3: the rows that survive keep their _row_id (oracle: appends assign
    ids in order) after a compaction with carried deletion vectors."""
    t, batches = _table(table_dir, 3, False)
    other = hdb.Table(t.path)
    fired = []

    def progress(what, done, total):
        if not fired:
            other.refresh()
            fired.append(other.delete("id % 10 = 0"))

    r = t.compact(progress=progress)
    assert r["carried_deletes"] == fired[0] == count(batches, "id % 7 <> 3 AND id % 10 = 0")
    tb = t.query().select(["id", "_row_id"]).to_arrow()
    got = sorted(zip(tb.column("id").to_pylist(), tb.column("_row_id").to_pylist()))
    assert got == [(i, i) for i in range(600) if i % 7 != 3 and i % 10 != 0]
    assert pyiceberg_rows(t) == expected(batches, "id % 7 <> 3 AND id % 10 <> 0")
    other.close()


def test_concurrent_compaction_wins_the_loser_conflicts(table_dir):
    """Another compaction that moved the same files wins; this one gives up
    (CommitConflictError), leaving the rows as they are."""
    t, batches = _table(table_dir, 2, True)
    other = hdb.Table(t.path)
    fired = []

    def progress(what, done, total):
        if not fired:
            other.refresh()
            fired.append(other.compact())

    with pytest.raises(hdb.CommitConflictError, match="another compaction"):
        t.compact(progress=progress)
    t.refresh()
    want = expected(batches, "id % 7 <> 3")
    assert rows_of(t.to_arrow()) == want and pyiceberg_rows(t) == want
    other.close()


def test_delete_thresholds_choose_files(table_dir):
    """Iceberg's delete-file-threshold / delete-ratio-threshold: a file at
    the target size with few deletes stays; past a threshold it is
    rewritten (option or table property)."""
    t = hdb.Table.create(table_dir / "t", SCHEMA)
    batches = [make_data(0, 1000)]
    t.write_arrow(batches[0])
    t.commit()
    size = t.files()[0]["file_size_in_bytes"]
    t.delete("id < 100")                    # 10% deleted, one delete file
    want = expected(batches, "id >= 100")
    r = t.compact(target_file_size=size, dry_run=True)
    assert r["rewritten_data_files"] == 0   # 0.1 < 0.3, 1 < 2^31-1
    assert t.compact(target_file_size=size, delete_ratio_threshold=0.1,
                     dry_run=True)["rewritten_data_files"] == 1
    assert t.compact(target_file_size=size, delete_ratio_threshold=0.11,
                     dry_run=True)["rewritten_data_files"] == 0
    assert t.compact(target_file_size=size, delete_file_threshold=1,
                     dry_run=True)["rewritten_data_files"] == 1
    t.set_properties({"hyperstream.compact.delete-ratio-threshold": "0.05"})
    r = t.compact(target_file_size=size)
    assert r["rewritten_data_files"] == 1 and r["removed_delete_files"] == 1
    assert rows_of(t.to_arrow()) == want and pyiceberg_rows(t) == want
    # past the default ratio (0.3) without any option
    t.set_properties({"hyperstream.compact.delete-ratio-threshold": "0.3"})
    size = t.files()[0]["file_size_in_bytes"]
    t.delete("id < 500")                    # 400 of 900
    r = t.compact(target_file_size=size)
    assert r["rewritten_data_files"] == 1
    assert rows_of(t.to_arrow()) == expected(batches, "id >= 500")
    with pytest.raises(hdb.InvalidArgumentError):
        t.compact(delete_ratio_threshold=1.5)
    t.set_properties({"hyperstream.compact.delete-ratio-threshold": "lots"})
    with pytest.raises(hdb.InvalidArgumentError, match="not a number"):
        t.compact()

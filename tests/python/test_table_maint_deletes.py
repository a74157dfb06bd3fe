"""rewrite_position_delete_files (issue 14; Iceberg's
RewritePositionDeleteFiles): merging a partition's v2 position delete
files, dropping dangling deletes, folding v2 position deletes into deletion
vectors on v3 tables; Python, CLI and Java-written tables.

Oracles, none of them our own output:
  * rows: the source batches minus every delete the test made, computed by
    DuckDB, compared with what we read and with what pyiceberg reads (v2),
    before and after the rewrite, and for the old snapshot (time travel);
  * the delete files themselves: the live delete-file entries of the
    current snapshot read with fastavro straight from the manifests
    (test_iceberg_java.live_delete_files), and each merged Parquet file read
    with pyarrow: its rows are exactly the deleted positions of live data
    files, sorted by (file_path, pos), each once, with file_path bounds
    that hold every path in it; deletion vectors decoded with pyroaring;
  * Java Iceberg (the harness, IcebergGenerics) writes the position deletes
    of one table and reads it after our rewrite: the same rows.
"""
import json
import os
import pathlib
import shutil
import subprocess

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import require, require_module

import hyperstreamdb as hdb
from test_iceberg_java import HARNESS_JAR, JavaHarness, live_delete_files, read_dv

pyiceberg_table = require_module("pyiceberg.table")
StaticTable = pyiceberg_table.StaticTable

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string())])
FILE_PATH_ID = 2147483546


def make_data(start, n):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "cat": pa.array([f"c{i % 4}" for i in ids], pa.string())},
                    schema=SCHEMA)


def expected(batches, deleted):
    src = pa.concat_tables(batches)  # noqa: F841 (DuckDB reads it by name)
    where = " AND ".join(f"NOT ({d})" for d in deleted) or "TRUE"
    return sorted(duckdb.sql(f"SELECT id, cat FROM src WHERE {where}").fetchall())


def rows_of(tbl):
    return sorted(zip(tbl.column("id").to_pylist(), tbl.column("cat").to_pylist()))


def pyiceberg_rows(t, snapshot_id=None):
    scan = StaticTable.from_metadata(t.metadata_location).scan(snapshot_id=snapshot_id)
    return rows_of(scan.to_arrow())


def local(p):
    return p[len("file://"):] if p.startswith("file://") else p


def data_files(t):
    return {local(f["file_path"]) for f in json.loads(t._handle().files_json())}


def check_merged_file(entry, live_paths):
    """A merged v2 position delete file, read with pyarrow: sorted, each
    (file_path, pos) once, only live data files, within its bounds."""
    tbl = pq.read_table(local(entry["file_path"]))
    pairs = list(zip(tbl.column("file_path").to_pylist(), tbl.column("pos").to_pylist()))
    assert pairs == sorted(pairs) and len(set(pairs)) == len(pairs)
    assert len(pairs) == entry["record_count"]
    assert all(local(p) in live_paths for p, _ in pairs)
    lo = next(b["value"] for b in entry["lower_bounds"] if b["key"] == FILE_PATH_ID)
    hi = next(b["value"] for b in entry["upper_bounds"] if b["key"] == FILE_PATH_ID)
    assert lo.decode() == pairs[0][0] and hi.decode() == pairs[-1][0]
    return pairs


def _table(table_dir, fmt_after=2):
    """Partitioned by cat (4 partitions): 3 appends of 100 rows, then 3
    deletes (each a position delete file per data file it touches); with
    fmt_after=3 the table is upgraded before the last delete (a vector)."""
    t = hdb.Table.create(table_dir / "t", SCHEMA, partition_by="cat")
    batches = []
    for k in range(3):
        b = make_data(k * 100, 100)
        batches.append(b)
        t.write_arrow(b)
        t.commit()
    deleted = ["id % 7 = 3", "id % 13 = 5"]
    for d in deleted:
        t.delete(d)
    if fmt_after == 3:
        t.upgrade_format_version(3)
    deleted.append("id BETWEEN 40 AND 60")
    t.delete(deleted[-1])
    return t, batches, deleted


def test_merge_v2(table_dir):
    t, batches, deleted = _table(table_dir)
    want = expected(batches, deleted)
    assert rows_of(t.to_arrow()) == want
    before = live_delete_files(t.metadata_location)
    assert len(before) > 8
    snap0 = t.current_snapshot_id
    dry = t.rewrite_position_delete_files(dry_run=True)
    assert dry["dry_run"] and dry["snapshot_id"] is None
    assert dry["rewritten_delete_files"] == len(before) and dry["added_delete_files"] == 4
    assert t.current_snapshot_id == snap0
    r = t.rewrite_position_delete_files()
    assert r["rewritten_delete_files"] == len(before) and r["added_delete_files"] == 4
    assert r["dangling_deletes"] == 0 and not r["nothing_to_do"]
    assert sorted(g["partition"][0] for g in r["groups"]) == ["c0", "c1", "c2", "c3"]
    after = live_delete_files(t.metadata_location)
    assert len(after) == 4
    live = data_files(t)
    n_pos = sum(len(check_merged_file(e, live)) for e in after)
    assert n_pos == r["deletes"] == 300 - len(want)
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want
    assert pyiceberg_rows(t, snap0) == want
    assert rows_of(t.to_arrow(filter="cat = 'c1' AND id > 150")) == \
        [x for x in want if x[1] == "c1" and x[0] > 150]
    assert t.rewrite_position_delete_files()["nothing_to_do"]


def test_dangling_and_target_size(table_dir):
    t, batches, deleted = _table(table_dir)
    # min_input_files above every partition's count: nothing to merge
    assert t.rewrite_position_delete_files(min_input_files=100)["nothing_to_do"]
    # a small target: each partition's deletes split over several files,
    # data files in path order, none in two files
    r = t.rewrite_position_delete_files(target_size=1)
    after = live_delete_files(t.metadata_location)
    assert len(after) == r["added_delete_files"] > 4
    live = data_files(t)
    seen = [p for e in after for p, _ in check_merged_file(e, live)]
    per_file = {}
    for e in after:
        for p in {p for p, _ in check_merged_file(e, live)}:
            per_file[p] = per_file.get(p, 0) + 1
    assert all(v == 1 for v in per_file.values())
    assert len(seen) == r["deletes"]
    # remove every row of the first append's c2 file: its deletes dangle
    t.delete("cat = 'c2' AND id < 100")
    deleted.append("cat = 'c2' AND id < 100")
    want = expected(batches, deleted)
    src = pa.concat_tables(batches)  # noqa: F841
    n_dangling = duckdb.sql(
        "SELECT count(*) FROM src WHERE cat = 'c2' AND id < 100 AND ("
        + " OR ".join(deleted[:3]) + ")").fetchall()[0][0]
    r = t.rewrite_position_delete_files(rewrite_all=True)
    assert r["dangling_deletes"] == n_dangling > 0
    live = data_files(t)
    for e in live_delete_files(t.metadata_location):
        check_merged_file(e, live)
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want


def test_fold_into_vectors_v3(table_dir):
    t, batches, deleted = _table(table_dir, fmt_after=3)
    want = expected(batches, deleted)
    before = live_delete_files(t.metadata_location)
    assert any(e["file_format"].upper() == "PARQUET" for e in before)
    r = t.rewrite_position_delete_files()
    assert r["format_version"] == 3 and r["converted_data_files"] > 0
    after = live_delete_files(t.metadata_location)
    assert all(e["file_format"].upper() == "PUFFIN" for e in after)
    # at most one vector a data file, each exactly its file's deleted rows
    refs = [e["referenced_data_file"] for e in after]
    assert len(refs) == len(set(refs))
    assert sum(len(read_dv(e)) for e in after) == 300 - len(want) == r["deletes"]
    assert rows_of(t.to_arrow()) == want
    assert t.rewrite_position_delete_files()["nothing_to_do"]


def cli():
    c = pathlib.Path(os.environ.get("HS_BUILD", "build")) / "hyperstream"
    require(c.exists(), f"{c} not built")
    return str(c)


def test_cli(table_dir):
    t, batches, deleted = _table(table_dir)
    want = expected(batches, deleted)
    path = str(table_dir / "t")
    n = len(live_delete_files(t.metadata_location))
    t.close()

    def run(*args):
        p = subprocess.run([cli(), "table", "rewrite-position-deletes", path, *args],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    r = run("--dry-run")
    assert r["dry_run"] and r["rewritten_delete_files"] == n
    assert run("--min-files", "100")["nothing_to_do"]
    r = run("--target-size", "1000000", "--all")
    assert r["added_delete_files"] == 4
    t = hdb.Table(path)
    assert len(live_delete_files(t.metadata_location)) == 4
    assert rows_of(t.to_arrow()) == want and pyiceberg_rows(t) == want
    t.close()


# ---- Java writes the deletes and reads the rewritten table ----

@pytest.fixture(scope="module")
def java():
    require(shutil.which("java") is not None, "java not installed")
    require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
    h = JavaHarness(HARNESS_JAR)
    yield h
    h.close()


def java_rows(java, path, tmp):
    meta = java.call("current-metadata", str(path))[0]
    return sorted((r["id"], r["cat"]) for r in java.read(meta, tmp=tmp))


@pytest.mark.parametrize("fmt", [2, 3])
def test_java_deletes(java, tmp_path, fmt):
    path = tmp_path / "j"
    t = hdb.Table.create(path, SCHEMA, partition_by="cat")
    batches = []
    for k in range(2):
        b = make_data(k * 50, 50)
        batches.append(b)
        t.write_arrow(b)
        t.commit()
    t.close()
    ids = [3, 8, 17, 22, 61, 64, 90]
    for i in ids:   # Java: one position delete file per data file per call
        java.call("delete", str(path), "id", json.dumps(i))
    t = hdb.Table(path)
    if fmt == 3:
        t.upgrade_format_version(3)
    want = expected(batches, [f"id IN ({', '.join(map(str, ids))})"])
    assert java_rows(java, path, tmp_path) == want
    r = t.rewrite_position_delete_files()
    assert not r["nothing_to_do"]
    after = live_delete_files(t.metadata_location)
    if fmt == 2:
        live = data_files(t)
        assert len(after) == len({(f % 4) for f in ids})
        assert sum(len(check_merged_file(e, live)) for e in after) == len(ids)
        assert pyiceberg_rows(t) == want
    else:
        assert all(e["file_format"].upper() == "PUFFIN" for e in after)
        assert sum(len(read_dv(e)) for e in after) == len(ids)
    assert rows_of(t.to_arrow()) == want
    t.close()
    assert java_rows(java, path, tmp_path) == want
    # and Java deletes more on top of ours: still consistent
    java.call("delete", str(path), "id", json.dumps(30))
    want = [x for x in want if x[0] != 30]
    assert java_rows(java, path, tmp_path) == want
    t = hdb.Table(path)
    assert rows_of(t.to_arrow()) == want
    t.close()


def test_v3_vector_merges_position_deletes(java, tmp_path):
    """A delete on a table upgraded from v2 writes a deletion vector for a
    data file that has v2 position deletes: the vector holds those too, as
    the spec asks (readers such as Java then ignore the position delete
    files for that data file).  Java read 10 deleted rows back before."""
    path = tmp_path / "u"
    t = hdb.Table.create(path, SCHEMA)
    b = make_data(0, 100)
    t.write_arrow(b)
    t.commit()
    t.delete("id < 10")            # a v2 position delete file
    t.upgrade_format_version(3)
    t.delete("id >= 90")           # a deletion vector for the same data file
    want = expected([b], ["id < 10", "id >= 90"])
    assert rows_of(t.to_arrow()) == want
    dvs = [e for e in live_delete_files(t.metadata_location)
           if e["file_format"].upper() == "PUFFIN"]
    assert len(dvs) == 1 and len(read_dv(dvs[0])) == 20
    t.close()
    assert java_rows(java, path, tmp_path) == want

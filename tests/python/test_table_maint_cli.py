"""`hyperstream table compact` flags: the
command line reaches every compaction option of the C and Python APIs
(issue 14).

Oracles, none of them our own output: which files a run rewrites is
decided from the test's own knowledge of each file's rows and deletes
(Iceberg's thresholds and the size-tiered rule, stated in the test); the
rows after a run are the source minus the test's deletes as DuckDB computes
them, compared with what pyiceberg reads.
"""
import json
import os
import pathlib
import subprocess

import duckdb
import pytest
import numpy as np
import pyarrow as pa
from conftest import require, require_module

import hyperstreamdb as hdb

pyiceberg_table = require_module("pyiceberg.table")
StaticTable = pyiceberg_table.StaticTable

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string())])


def make_data(start, n):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "cat": pa.array([f"c{i % 5}" for i in ids], pa.string())},
                    schema=SCHEMA)


def expected(batches, where):
    src = pa.concat_tables(batches)  # noqa: F841 (DuckDB reads it by name)
    return sorted(duckdb.sql(f"SELECT id, cat FROM src WHERE {where}").fetchall())


def pyiceberg_rows(path):
    t = hdb.Table(path)
    try:
        tbl = StaticTable.from_metadata(t.metadata_location).scan().to_arrow()
    finally:
        t.close()
    return sorted(zip(tbl.column("id").to_pylist(), tbl.column("cat").to_pylist()))


def cli():
    c = pathlib.Path(os.environ.get("HS_BUILD", "build")) / "hyperstream"
    require(c.exists(), f"{c} not built")
    return str(c)


def run(*args, rc=0):
    p = subprocess.run([cli(), "table", *args], capture_output=True, text=True)
    assert p.returncode == rc, (p.returncode, p.stdout, p.stderr)
    return json.loads(p.stdout) if rc == 0 else p.stderr


def test_compact_delete_threshold_flags(tmp_path):
    """--delete-ratio-threshold / --delete-file-threshold choose a file at
    the target size by its deletes, as the API options do: 100 of 1000 rows
    deleted in one delete file is a ratio of 0.1."""
    path = str(tmp_path / "t")
    t = hdb.Table.create(path, SCHEMA)
    batches = [make_data(0, 1000)]
    t.write_arrow(batches[0])
    t.commit()
    size = str(t.files()[0]["file_size_in_bytes"])
    t.delete("id < 100")
    t.close()
    base = ["compact", path, "--target-size", size, "--dry-run"]
    assert run(*base)["rewritten_data_files"] == 0          # defaults: 0.3, 2^31-1
    assert run(*base, "--delete-ratio-threshold", "0.1")["rewritten_data_files"] == 1
    assert run(*base, "--delete-ratio-threshold", "0.11")["rewritten_data_files"] == 0
    assert run(*base, "--delete-ratio-threshold", "1e-1")["rewritten_data_files"] == 1
    assert run(*base, "--delete-file-threshold", "1")["rewritten_data_files"] == 1
    assert run(*base, "--delete-file-threshold", "2")["rewritten_data_files"] == 0
    r = run("compact", path, "--target-size", size, "--delete-file-threshold", "1")
    assert r["rewritten_data_files"] == 1 and r["removed_delete_files"] == 1
    assert pyiceberg_rows(path) == expected(batches, "id >= 100")
    # out of range or not numbers: usage errors (exit 2), nothing done
    for flag, v in [("--delete-ratio-threshold", "0"), ("--delete-ratio-threshold", "1.5"),
                    ("--delete-ratio-threshold", "lots"), ("--delete-ratio-threshold", "0,5"),
                    ("--delete-file-threshold", "0"), ("--delete-file-threshold", "x")]:
        assert flag in run("compact", path, flag, v, rc=2)


def test_compact_size_tiered_flag(tmp_path):
    """--size-tiered leaves a small file bigger than the partition's other
    small files together; plain bin-pack rewrites every small file."""
    path = str(tmp_path / "t")
    t = hdb.Table.create(path, SCHEMA)
    batches = [make_data(0, 20000), make_data(20000, 100), make_data(20100, 100)]
    for b in batches:
        t.write_arrow(b)
        t.commit()
    sizes = sorted(f["file_size_in_bytes"] for f in t.files())
    t.close()
    assert sizes[2] > sizes[0] + sizes[1]    # the premise: one file outweighs the rest
    big = str(1 << 30)
    r = run("compact", path, "--target-size", big, "--size-tiered", "--dry-run")
    assert r["rewritten_data_files"] == 2
    assert run("compact", path, "--target-size", big, "--dry-run")["rewritten_data_files"] == 3
    t = hdb.Table(path)   # the Python option, the same rule
    assert t.compact(target_file_size=1 << 30, size_tiered=True,
                     dry_run=True)["rewritten_data_files"] == 2
    assert t.compact(target_file_size=1 << 30, dry_run=True)["rewritten_data_files"] == 3
    t.close()
    r = run("compact", path, "--target-size", big, "--size-tiered")
    assert r["rewritten_data_files"] == 2
    t = hdb.Table(path)
    assert len(t.files()) == 2
    t.close()
    assert pyiceberg_rows(path) == expected(batches, "TRUE")


def test_compact_size_tiered_near_target(tmp_path):
    """--size-tiered counts a file of at least 3/4 of the target as
    full-size (Iceberg's min-file-size-bytes default): compaction output
    lands just under the target, and the rule "a small file larger than the
    other small files together stays" never kept two such files, so every
    automatic compaction rewrote the whole table (the 30-minute soak's
    median storage/live of 1.98).  Two files at ~80% of the target stay;
    plain bin-pack still rewrites every file under the target."""
    path = str(tmp_path / "t")
    t = hdb.Table.create(path, SCHEMA)
    batches = [make_data(0, 20000), make_data(20000, 20000), make_data(40000, 100),
               make_data(40100, 100), make_data(40200, 100)]
    for b in batches:
        t.write_arrow(b)
        t.commit()
    files = {f["file_path"]: f["file_size_in_bytes"] for f in t.files()}
    t.close()
    sizes = sorted(files.values())
    target = int(sizes[-2] / 0.8)            # both big files at ~80% of it
    big = [p for p, n in files.items() if n >= target * 3 // 4]
    # the premises: two files between 3/4 of the target and the target, the
    # bigger of them not larger than the rest together (the old rule
    # rewrote it), and three small ones
    assert len(big) == 2 and all(files[p] < target for p in big)
    assert sizes[-1] <= sum(sizes[:-1])
    r = run("compact", path, "--target-size", str(target), "--size-tiered", "--dry-run")
    assert r["rewritten_data_files"] == 3
    t = hdb.Table(path)
    assert t.compact(target_file_size=target, dry_run=True)["rewritten_data_files"] == 5
    assert t.compact(target_file_size=target, size_tiered=True)["rewritten_data_files"] == 3
    after = {f["file_path"] for f in t.files()}
    t.close()
    assert set(big) <= after and len(after) == 3
    assert pyiceberg_rows(path) == expected(batches, "TRUE")


def test_compact_max_rewrite_fraction(tmp_path):
    """compact(max_rewrite_fraction=f) rewrites at most f of the live data
    files' bytes (what automatic stream maintenance uses so that one
    compaction's bytes, held twice until expiry, stay a bounded part of the
    table): the smallest files first, whole; a partition whose files within
    the budget are fewer than min_input_files is left.  File sizes from the
    table's file listing, rows from pyiceberg against DuckDB."""
    path = str(tmp_path / "t")
    t = hdb.Table.create(path, SCHEMA)
    ns = [100, 200, 300, 400, 2000, 4000, 8000, 16000]
    batches, start = [], 0
    for n in ns:
        batches.append(make_data(start, n))
        start += n
        t.write_arrow(batches[-1])
        t.commit()
    files = {f["file_path"]: f["file_size_in_bytes"] for f in t.files()}
    live = sum(files.values())
    by_size = sorted(files, key=files.get)
    # the budget: the four smallest files fit, the fifth does not
    frac = (sum(files[p] for p in by_size[:4]) + 1) / live
    assert sum(files[p] for p in by_size[:5]) > frac * live
    target = 1 << 30
    r = t.compact(target_file_size=target, max_rewrite_fraction=frac, dry_run=True)
    assert sorted(r["groups"][0]["files"]) == sorted(by_size[:4]), r
    assert r["rewritten_bytes"] <= frac * live
    # too few files within the budget for min_input_files: nothing
    r = t.compact(target_file_size=target, max_rewrite_fraction=frac, min_input_files=5)
    assert r["rewritten_data_files"] == 0 and r["snapshot_id"] is None
    r = t.compact(target_file_size=target, max_rewrite_fraction=frac)
    assert r["rewritten_data_files"] == 4 and r["rewritten_bytes"] <= frac * live, r
    after = {f["file_path"] for f in t.files()}
    assert set(by_size[4:]) <= after and len(after) == 5
    with pytest.raises(hdb.InvalidArgumentError):
        t.compact(max_rewrite_fraction=1.5)
    t.close()
    assert pyiceberg_rows(path) == expected(batches, "TRUE")


def test_partial_progress(tmp_path):
    """--partial-progress / compact(partial_progress=True): the file groups
    (one per partition here) are committed as they finish, in at most
    --max-commits snapshots; every snapshot reads the source rows (DuckDB)
    through pyiceberg."""
    path = tmp_path / "pp"
    t = hdb.Table.create(path, SCHEMA, partition_by="cat")
    batches = []
    for k in range(3):
        b = make_data(k * 100, 100)
        batches.append(b)
        t.write_arrow(b)
        t.commit()
    want = expected(batches, "TRUE")
    r = run("compact", str(path), "--partial-progress", "--max-commits", "2", "--dry-run")
    assert r["commits"] == 2 and r["snapshot_ids"] == []
    r = run("compact", str(path), "--partial-progress", "--max-commits", "2")
    assert r["commits"] == 2 and len(r["snapshot_ids"]) == 2
    assert r["rewritten_data_files"] == 15 and r["added_data_files"] == 5
    assert pyiceberg_rows(path) == want
    for sid in r["snapshot_ids"]:
        tbl = StaticTable.from_metadata(hdb.Table(path).metadata_location).scan(
            snapshot_id=sid).to_arrow()
        assert sorted(zip(tbl.column("id").to_pylist(), tbl.column("cat").to_pylist())) == want
    t.close()
    # Python: one commit a group by default (5 groups < 10 commits)
    path2 = tmp_path / "pp2"
    t = hdb.Table.create(path2, SCHEMA, partition_by="cat")
    for b in batches:
        t.write_arrow(b)
        t.commit()
    r = t.compact(partial_progress=True, progress=False)
    assert r["commits"] == 5 and r["snapshot_id"] == r["snapshot_ids"][-1]
    assert t.current_snapshot_id == r["snapshot_ids"][-1]
    t.close()
    assert pyiceberg_rows(path2) == want
    p = subprocess.run([cli(), "table", "compact", str(path2), "--max-commits", "0"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "--max-commits" in p.stderr

"""Z-order compaction (Table.compact(zorder_by=...), issue 14).

Oracles, none of them our own output:
  * the rows: pyiceberg (StaticTable.from_metadata) reads the compacted
    table equal to the source rows;
  * the order: a numpy implementation of the rank-based z-order written
    here from the definition (dense rank per column scaled to 32 bits, bits
    interleaved most significant first): every output file, read by pyarrow
    in file order, is one contiguous run of that order, and together they
    are all of it;
  * what it is for: each output file covers a narrow range of BOTH columns
    (min/max statistics prune on each), where every input file covered all
    of both; a selective filter on either column prunes most files.
"""
import json
import os
import pathlib
import subprocess

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import require, require_module

import hyperstreamdb as hdb

pyiceberg_table = require_module("pyiceberg.table")
StaticTable = pyiceberg_table.StaticTable

N_FILES, PER_FILE = 16, 2000
SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("y", pa.float64()),
                    ("s", pa.string())])


def _source():
    rng = np.random.default_rng(11)
    batches = []
    for k in range(N_FILES):
        ids = np.arange(k * PER_FILE, (k + 1) * PER_FILE, dtype=np.int64)
        batches.append(pa.table({
            "id": ids,
            "x": rng.integers(-50_000, 50_000, PER_FILE),
            "y": rng.random(PER_FILE),
            "s": pa.array([f"s{i % 13}" for i in ids], pa.string()),
        }, schema=SCHEMA))
    return batches


def _zorder_ids(tbl, cols):
    """Row ids of tbl in rank-based z-order over cols (the definition)."""
    scaled = []
    for c in cols:
        _, inv = np.unique(tbl.column(c).to_numpy(), return_inverse=True)
        d = int(inv.max()) + 1
        r = inv.astype(np.uint64)
        scaled.append(r * np.uint64(0xFFFFFFFF) // np.uint64(max(d - 1, 1)))
    key = np.zeros(tbl.num_rows, dtype=np.uint64)
    n = len(cols)
    assert 32 * n <= 64
    for t in range(32):
        for j in range(n):
            bit = (scaled[j] >> np.uint64(31 - t)) & np.uint64(1)
            key |= bit << np.uint64(63 - (t * n + j))
    order = np.argsort(key, kind="stable")
    return tbl.column("id").to_numpy()[order]


def _data_files(t):
    st = StaticTable.from_metadata(t.metadata_location)
    return [task.file.file_path for task in st.scan().plan_files()]


def _local(p):
    return p[len("file://"):] if p.startswith("file://") else p


def _size(p):
    """A data file's size, from pyarrow's file systems (local or S3)."""
    import pyarrow.fs as pafs
    p = _local(p)
    fs, key = pafs.FileSystem.from_uri(p if "://" in p else os.path.abspath(p))
    return fs.get_file_info(key).size


def test_zorder_compaction(table_dir):
    src = _source()
    t = hdb.Table.create(table_dir / "z", SCHEMA)
    for b in src:
        t.write_arrow(b)
        t.commit()
    t.add_index("s", "inverted")
    whole = pa.concat_tables(src)
    total = sum(_size(p) for p in _data_files(t))
    for p in _data_files(t):   # before: every file spans (nearly) everything
        f = pq.read_table(_local(p))
        assert np.ptp(f.column("x").to_numpy()) > 90_000 and np.ptp(f.column("y").to_numpy()) > 0.9

    target = total // 8
    res = t.compact(zorder_by=["x", "y"], target_file_size=target)
    assert res["zorder_by"] == ["x", "y"] and res["rewritten_data_files"] == N_FILES
    assert 6 <= res["added_data_files"] <= 10, res

    # rows: pyiceberg reads exactly the source rows
    got = StaticTable.from_metadata(t.metadata_location).scan().to_arrow()
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == whole.to_pylist()

    # order: each file is one contiguous run of the z-order, all of them together the whole
    want = _zorder_ids(whole, ["x", "y"])
    pos = {int(i): k for k, i in enumerate(want)}
    runs = []
    areas = 0.0
    for p in _data_files(t):
        f = pq.read_table(_local(p))
        ids = f.column("id").to_numpy()
        at = [pos[int(i)] for i in ids]
        assert at == list(range(at[0], at[0] + len(at))), p
        runs.append((at[0], len(at)))
        # narrow in both columns (a cut by row count may take a few rows of
        # the next z-cell, so the bulk of the rows is measured: 2nd-98th
        # percentile)
        xr = np.subtract(*np.percentile(f.column("x").to_numpy(), [98, 2])) / 100_000
        yr = np.subtract(*np.percentile(f.column("y").to_numpy(), [98, 2]))
        assert xr < 0.6 and yr < 0.6, (p, xr, yr)
        areas += xr * yr
    runs.sort()
    assert runs[0][0] == 0 and sum(n for _, n in runs) == whole.num_rows
    assert all(a + n == b for (a, n), (b, _) in zip(runs, runs[1:]))
    assert areas < 1.5, areas    # the files' boxes about tile the space (16 files before: ~16)

    # pruning on either column alone skips most files; indexes were rebuilt
    for flt in ("x BETWEEN 1000 AND 3000", "y < 0.05"):
        tot = t.explain(filter=flt)["totals"]
        assert tot["files_planned"] <= res["added_data_files"] // 2 + 1, (flt, tot)
    tot = t.explain(filter="s = 's3'")["totals"]
    assert tot["files_indexed"] == tot["files_planned"] == res["added_data_files"], tot
    assert sorted(t.to_arrow(filter="s = 's3'").column("id").to_pylist()) == \
        [i for i in range(whole.num_rows) if i % 13 == 3]


def test_zorder_errors(table_dir):
    t = hdb.Table.create(table_dir / "e", pa.schema([("id", pa.int64()),
                                                    ("v", pa.list_(pa.float32()))]))
    for k in range(2):
        t.write_arrow(pa.table({"id": [k], "v": [[1.0, 2.0]]}))
        t.commit()
    before = t.current_snapshot_id
    with pytest.raises(hdb.NotFoundError, match="nope"):
        t.compact(zorder_by=["id", "nope"])
    with pytest.raises(hdb.InvalidArgumentError, match="has no order"):
        t.compact(zorder_by="v")
    with pytest.raises(hdb.InvalidArgumentError, match="twice"):
        t.compact(zorder_by="id, id")
    t.replace_sort_order(["id"])
    with pytest.raises(hdb.InvalidArgumentError, match="sort order"):
        t.compact(zorder_by="id")
    t.refresh()
    assert t.current_snapshot_id == before


def test_zorder_cli_dry_run(table_dir):
    cli = pathlib.Path(os.environ.get("HS_BUILD", "build")) / "hyperstream"
    require(cli.exists(), f"{cli} not built")
    t = hdb.Table.create(table_dir / "c", SCHEMA)
    for b in _source()[:3]:
        t.write_arrow(b)
        t.commit()
    out = subprocess.run([str(cli), "table", "compact", str(table_dir / "c"), "--zorder", "x, y",
                          "--dry-run"], check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    assert r["dry_run"] is True and r["zorder_by"] == ["x", "y"] and r["snapshot_id"] is None
    assert r["rewritten_data_files"] == 3

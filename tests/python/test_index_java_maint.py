"""Java Iceberg's own maintenance on a table we index (issue 14, acceptance 2).

Stock Java Iceberg (the harness in tests/interop/java, HadoopTables on the
same directory, core API only) runs what Spark's rewrite_data_files and
expire_snapshots do on a table where we declared an inverted index and an
HNSW index and deleted rows:

* after Java's rewrite (every file replaced, deletes applied) the registry
  still lists sidecars of files that are gone: they are never used (no
  skipped-sidecar warnings, no file counted as indexed), the new files are
  read, and filters and vector searches return exactly what Java's own read
  (filters) and a numpy brute force over it (vector top-k) give;
* refresh_indexes indexes exactly the new files, and the answers stay equal;
* after Java's expire_snapshots (which deletes the old data files and knows
  nothing of sidecars) the table opens, answers the same, time travel to an
  expired snapshot fails cleanly, and our orphan removal deletes the
  sidecars of the vanished files and nothing live;
* Java keeps appending and reading after all our commits.
"""
import datetime as dt
import json
import os
import pathlib
import shutil

import numpy as np
import pyarrow as pa
import pytest
from conftest import require, require_module

require(shutil.which("java") is not None, "java not installed")
from test_iceberg_java import HARNESS_JAR, JavaHarness  # noqa: E402

require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
hdb = require_module("hyperstreamdb")

DIM = 8
CATS = [None, "a", "b", "c"]


def _batch(lo, n, rng):
    emb = rng.standard_normal((n, DIM)).astype(np.float32)
    return pa.table({
        "id": pa.array(range(lo, lo + n), pa.int64()),
        "cat": pa.array([CATS[i % 4] for i in range(lo, lo + n)], pa.string()),
        "emb": pa.array([list(map(float, v)) for v in emb], pa.list_(pa.float32())),
    })


def _sidecars(table_dir):
    return sorted(p for p in (table_dir / "index").rglob("*")
                  if p.is_file() and "registry" not in p.parts)


class _Oracle:
    """Java's read of the current snapshot: filter answers and brute-force k-NN."""

    def __init__(self, java, table_dir, tmp):
        meta = java.call("current-metadata", str(table_dir))[0]
        self.rows = java.read(meta, tmp=tmp)

    def ids(self, cat):
        return sorted(r["id"] for r in self.rows if r["cat"] == cat)

    def knn(self, q, k):
        ids = np.array([r["id"] for r in self.rows])
        vecs = np.array([r["emb"] for r in self.rows], dtype=np.float64)
        d = ((vecs - q.astype(np.float64)) ** 2).sum(axis=1)
        return set(ids[np.argsort(d, kind="stable")[:k]].tolist())


def _check(t, oracle, queries, *, indexed, planned=None):
    """indexed: "all", "none" or "some" of the planned files have sidecars."""
    for cat in ("a", "b", "c"):
        got = sorted(t.to_arrow(filter=f"cat = '{cat}'", columns=["id"]).column("id").to_pylist())
        assert got == oracle.ids(cat), cat
    tot = t.explain(filter="cat = 'b'")["totals"]
    assert tot["index_files_skipped"] == 0, tot
    if planned is not None:
        assert tot["files_planned"] == planned, tot
    if indexed == "all":
        assert tot["files_indexed"] == tot["files_planned"], tot
    elif indexed == "none":
        assert tot["files_indexed"] == 0, tot
    else:
        assert 0 < tot["files_indexed"] < tot["files_planned"], tot
    hits = 0
    for q in queries:
        res = t.to_arrow(vector_filter={"column": "emb", "query": q.tolist(), "k": 10},
                         columns=["id"])
        got = set(res.column("id").to_pylist())
        want = oracle.knn(q, 10)
        assert len(got) == 10
        if indexed == "none":
            assert got == want     # files without a usable index are searched exactly
        hits += len(got & want)
    assert hits / (10 * len(queries)) >= 0.95


def test_java_rewrite_and_expire_keep_indexes_consistent(tmp_path):
    rng = np.random.default_rng(7)
    table_dir = tmp_path / "jm"
    t = hdb.Table.create(table_dir, _batch(0, 1, rng).schema, partition_by="bucket(2, id)")
    for k in range(3):
        t.write_arrow(_batch(k * 200, 200, rng))
        t.commit()
    first_snapshot = t.current_snapshot_id
    t.add_index("cat", "inverted")
    t.add_index("emb", "hnsw")
    assert t.delete("id % 7 = 0") > 0
    queries = [rng.standard_normal(DIM).astype(np.float32) for _ in range(8)]
    old_sidecars = _sidecars(table_dir)
    assert old_sidecars

    java = JavaHarness(HARNESS_JAR)
    try:
        _check(t, _Oracle(java, table_dir, tmp_path), queries, indexed="all")

        # Java's rewrite: every data and delete file replaced by new files
        java.call("rewrite", str(table_dir))
        t.refresh()
        oracle = _Oracle(java, table_dir, tmp_path)
        assert len(oracle.rows) == 600 - len(range(0, 600, 7))
        _check(t, oracle, queries, indexed="none", planned=2)

        # catch-up indexes exactly the files Java wrote
        assert t.refresh_indexes() > 0
        _check(t, oracle, queries, indexed="all", planned=2)
        assert t.refresh_indexes() == 0

        # Java appends, then expires all but the last snapshot: Java deletes
        # the files the (now expired) rewrite snapshot removed, and knows
        # nothing of our sidecars
        p = tmp_path / "more.jsonl"
        more = _batch(1000, 50, rng).to_pylist()
        p.write_text("".join(json.dumps(r) + "\n" for r in more))
        java.call("append", str(table_dir), str(p))
        data_before = sorted((table_dir / "data").rglob("*.parquet"))
        java.call("expire", str(table_dir), "--retain-last", "1")
        data_after = sorted((table_dir / "data").rglob("*.parquet"))
        assert len(data_after) == 4 < len(data_before), (data_before, data_after)
        t = hdb.Table(table_dir)
        oracle = _Oracle(java, table_dir, tmp_path)
        _check(t, oracle, queries, indexed="some", planned=4)
        with pytest.raises(hdb.HyperStreamError):
            t.to_arrow(snapshot_id=first_snapshot)
        assert t.refresh_indexes() > 0
        _check(t, oracle, queries, indexed="all", planned=4)

        # our orphan removal: the vanished files' sidecars go, the live ones stay
        live = set(_sidecars(table_dir)) - set(old_sidecars)
        assert live and set(old_sidecars) & set(_sidecars(table_dir))
        t.remove_orphan_indexes(older_than=dt.timedelta(0))
        left = set(_sidecars(table_dir))
        assert left == live, (left - live, live - left)
        t.remove_orphan_files(older_than=dt.timedelta(0))
        t = hdb.Table(table_dir)
        _check(t, oracle, queries, indexed="all", planned=4)
        # and Java still reads the table after all our commits
        assert len(_Oracle(java, table_dir, tmp_path).rows) == len(oracle.rows)
    finally:
        java.close()

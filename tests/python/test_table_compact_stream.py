"""Compaction of indexed and v3 tables streams (docs/tables.md "Memory of a
compaction"): rows go through the writer's buffer, each new file's sidecars
are built from the file as it closes, v3 rows keep their lineage.

Oracles, none of them our own output: the generator's numpy arrays (rows,
vectors); pyarrow reading the new data files directly and pyiceberg
reading the table (StaticTable.from_metadata); numpy brute force for the
range filter and the vector search.  The memory bound itself is checked in
tests/c/test_table_compactmem.c.
"""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ON_S3, require_module

import hyperstreamdb as hdb

pyiceberg_table = require_module("pyiceberg.table")
StaticTable = pyiceberg_table.StaticTable

DIM = 4
EVERY = 7           # rows with a vector: id % EVERY == 0
FILES, PER = 6, 4000
N = FILES * PER

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("s", pa.string()),
                    ("emb", pa.list_(pa.float32()))])


def vectors(ids):
    """The vector of each id (rows without one: id % EVERY != 0)."""
    rng = np.random.default_rng(1234)
    table = rng.standard_normal((N, DIM)).astype(np.float32)
    return table[ids]


def batch(start, n, with_emb=True):
    ids = np.arange(start, start + n, dtype=np.int64)
    cols = {"id": ids, "v": ids * 0.5, "s": [f"k{i:09d}" for i in ids]}
    if with_emb:
        vec = vectors(ids)
        cols["emb"] = pa.array([list(map(float, vec[k])) if i % EVERY == 0 else None
                                for k, i in enumerate(ids)], pa.list_(pa.float32()))
        return pa.table(cols, schema=SCHEMA)
    return pa.table(cols, schema=pa.schema(list(SCHEMA)[:3]))


def check_rows(tbl, ids, with_emb=True):
    """tbl (any column order) holds exactly the rows of ids, as generated."""
    tbl = tbl.sort_by("id")
    got = tbl.column("id").to_numpy()
    assert np.array_equal(got, ids)
    assert np.array_equal(tbl.column("v").to_numpy(), ids * 0.5)
    assert tbl.column("s").to_pylist() == [f"k{i:09d}" for i in ids]
    if with_emb:
        emb = tbl.column("emb").to_pylist()
        has = np.array([e is not None for e in emb])
        assert np.array_equal(has, ids % EVERY == 0)
        got_vec = np.array([e for e in emb if e is not None], dtype=np.float32)
        assert np.array_equal(got_vec, vectors(ids[ids % EVERY == 0]))


def data_files(t):
    return [f["file_path"] for f in t.files()]


def read_raw(path):
    """A data file read by pyarrow itself (local tables; on S3 the other
    oracles stand)."""
    return None if ON_S3 else pq.read_table(path.removeprefix("file://"))


def make(table_dir, fmt, indexed, with_emb=True, props=None, partition_by=None):
    t = hdb.Table.create(table_dir / "t", SCHEMA if with_emb else pa.schema(list(SCHEMA)[:3]),
                         format_version=fmt, properties=props, partition_by=partition_by)
    if indexed:
        t.add_index("id", "range")
        t.add_index("emb", "hnsw")
    for f in range(FILES):
        t.write_arrow(batch(f * PER, PER, with_emb))
        t.commit()
    return t


def check_indexes(t, n_files):
    ix = {i["column"]: i for i in t.indexes()}
    for col in ("id", "emb"):
        assert ix[col]["files_live"] == n_files, ix
        assert ix[col]["files_indexed"] == n_files, ix


def check_queries(t):
    ids = np.arange(N, dtype=np.int64)
    lo, hi = N // 3 + 5, N // 3 + N // 5
    where = f"id >= {lo} AND id < {hi}"
    got = t.to_arrow(filter=where)
    check_rows(got, ids[(ids >= lo) & (ids < hi)])
    ex = t.explain(filter=where)   # the new files' range sidecars answered it
    assert ex["totals"]["index_files_skipped"] == 0, ex
    assert ex["totals"]["rows_selected_by_index"] == hi - lo, ex
    for f in ex["files"]:
        assert f["pruned_by"] == "index" or "1:range" in f["indexes_used"], f
    # vector search against numpy brute force (distances: ties may swap ids)
    have = ids[ids % EVERY == 0]
    vec = vectors(have)
    for q in (np.full(DIM, 0.25, np.float32), vectors(np.array([14]))[0] + 0.01):
        res = t.search("emb", q.tolist(), k=10, columns=["id"], ef_search=256)
        d = np.sqrt(((vec - q) ** 2).sum(axis=1))
        want = np.sort(d)[:10]
        assert np.allclose(np.sort(res["distance"].to_numpy()), want, rtol=1e-5, atol=1e-5)
        pos = np.searchsorted(have, res["id"].to_numpy())
        assert np.allclose(d[pos], res["distance"].to_numpy(), rtol=1e-5, atol=1e-5)


def test_indexed_compaction_streams_and_rebuilds_indexes(table_dir):
    t = make(table_dir, 2, True)
    r = t.compact()
    assert r["rewritten_data_files"] == FILES and r["added_data_files"] == 1, r
    ids = np.arange(N, dtype=np.int64)
    files = data_files(t)
    assert len(files) == 1
    if not ON_S3:
        check_rows(pa.concat_tables([read_raw(f) for f in files]), ids)
    check_rows(StaticTable.from_metadata(t.metadata_location).scan().to_arrow(), ids)
    check_indexes(t, 1)
    check_queries(t)


def test_indexed_compaction_rolls_files_each_with_sidecars(table_dir):
    """A small target: the stream rolls several output files, each gets its
    own sidecars, built from the file once it is closed."""
    t = make(table_dir, 2, True, props={"hyperstream.write.buffer-bytes": str(1 << 20)})
    size = sum(f["file_size_in_bytes"] for f in t.files())
    r = t.compact(target_file_size=size // 2)
    assert r["rewritten_data_files"] >= 2, r
    n_files = len(data_files(t))
    assert n_files >= 2
    ids = np.arange(N, dtype=np.int64)
    check_rows(StaticTable.from_metadata(t.metadata_location).scan().to_arrow(), ids)
    check_indexes(t, n_files)
    check_queries(t)


def test_partitioned_v3_indexed_compaction(table_dir):
    """bucket(3, id): one stream, a file per partition tuple, each with its
    own sidecars; lineage kept."""
    t = make(table_dir, 3, True, partition_by="bucket(3, id)")
    ids = np.arange(N, dtype=np.int64)
    # before: each append's rows got the row ids of its range, in the order
    # of its files (a file per bucket), so _row_id is a permutation of the
    # append's range, not id itself
    before = t.to_arrow(row_lineage=True, columns=["id"]).sort_by("id")
    rid = before.column("_row_id").to_numpy()
    for f in range(FILES):
        assert np.array_equal(np.sort(rid[f * PER:(f + 1) * PER]), ids[f * PER:(f + 1) * PER])
    r = t.compact()
    assert r["rewritten_data_files"] == 3 * FILES and r["added_data_files"] == 3, r
    check_rows(StaticTable.from_metadata(t.metadata_location).scan().to_arrow(), ids)
    lin = t.to_arrow(row_lineage=True, columns=["id"]).sort_by("id")
    assert np.array_equal(lin.column("_row_id").to_numpy(), rid)   # each row kept its own
    assert np.array_equal(lin.column("_last_updated_sequence_number").to_numpy(), ids // PER + 1)
    check_indexes(t, 3)
    check_queries(t)


def test_v3_compaction_streams_lineage_and_deletes(table_dir):
    t = make(table_dir, 3, False, with_emb=False)
    assert t.delete("id % 10 = 3") == N // 10
    r = t.compact()
    assert r["rewritten_data_files"] == FILES and r["added_data_files"] == 1, r
    ids = np.arange(N, dtype=np.int64)
    ids = ids[ids % 10 != 3]
    check_rows(StaticTable.from_metadata(t.metadata_location).scan().to_arrow(), ids, False)
    files = data_files(t)
    assert len(files) == 1
    raw = read_raw(files[0])
    if raw is not None:
        check_rows(raw, ids, False)
        # lineage stored in the file (the spec: a moved row keeps both)
        raw = raw.sort_by("id")
        assert np.array_equal(raw.column("_row_id").to_numpy(), ids)
        assert np.array_equal(raw.column("_last_updated_sequence_number").to_numpy(),
                              ids // PER + 1)
    lin = t.to_arrow(row_lineage=True).sort_by("id")
    assert np.array_equal(lin.column("_row_id").to_numpy(), ids)
    assert np.array_equal(lin.column("_last_updated_sequence_number").to_numpy(), ids // PER + 1)


def test_v3_indexed_compaction(table_dir):
    t = make(table_dir, 3, True)
    r = t.compact()
    assert r["added_data_files"] == 1, r
    ids = np.arange(N, dtype=np.int64)
    check_rows(StaticTable.from_metadata(t.metadata_location).scan().to_arrow(), ids)
    lin = t.to_arrow(row_lineage=True, columns=["id"]).sort_by("id")
    assert np.array_equal(lin.column("_row_id").to_numpy(), ids)
    check_indexes(t, 1)
    check_queries(t)

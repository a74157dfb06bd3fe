"""Invalid inputs to the hyperstreamdb package raise clear Python exceptions,
mapped from the C status (ValueError for HS_INVALID, FileNotFoundError for
HS_NOT_FOUND, CommitConflictError, CorruptDataError, NotImplementedError for
HS_UNSUPPORTED, ...), and never crash the interpreter (a junk-argument sweep
runs in a child process so a crash fails one test, not the run)."""
import glob
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import hyperstreamdb as hdb


@pytest.fixture
def t(tmp_path):
    t = hdb.Table(tmp_path / "t")
    t.write_pandas(pd.DataFrame({"id": np.arange(100), "name": [f"n{i}" for i in range(100)],
                                 "embedding": [[float(i), 1.0, 2.0] for i in range(100)]}))
    t.commit()
    return t


def test_hierarchy():
    assert issubclass(hdb.InvalidArgumentError, ValueError)
    assert issubclass(hdb.NotFoundError, FileNotFoundError)
    assert issubclass(hdb.UnsupportedError, NotImplementedError)
    assert issubclass(hdb.StorageError, OSError)
    for cls in (hdb.InvalidArgumentError, hdb.NotFoundError, hdb.CommitConflictError,
                hdb.CorruptDataError, hdb.UnsupportedError, hdb.StorageError,
                hdb.InternalError):
        assert issubclass(cls, hdb.HyperStreamError)


def test_wrong_types(t, tmp_path):
    cases = [
        lambda: hdb.Table(123),
        lambda: t.to_pandas(filter=5),
        lambda: t.to_pandas(columns=[1, 2]),
        lambda: t.to_pandas(columns=5),
        lambda: t.to_pandas(snapshot_id="1"),
        lambda: t.to_pandas(as_of=12345),
        lambda: t.write_pandas("not a frame"),
        lambda: t.write_arrow(42),
        lambda: t.add_index(5, "inverted"),
        lambda: t.add_index("id", 5),
        lambda: t.to_pandas(vector_filter="embedding"),
        lambda: t.to_pandas(vector_filter={"column": "embedding", "query": [1, 2, 3], "k": "3"}),
        lambda: t.to_pandas(vector_filter={"column": "embedding", "query": "abc", "k": 3}),
        lambda: t.to_pandas(vector_filter={"column": 7, "query": [1, 2, 3], "k": 3}),
        lambda: t.delete(None),
        lambda: t.rollback_to_snapshot("x"),
        lambda: t.update_spec(5),
        lambda: t.replace_sort_order([1]),
        lambda: t.set_properties({1: "x"}),
        lambda: t.add_column("c", object()),
        lambda: hdb.l2_distance("abc", "def"),
        lambda: hdb.l2_distance([1, 2], None),
        lambda: hdb.l2_distance_sparse([1, 2], [1, 2]),
        lambda: hdb.hamming_distance_packed(np.zeros(2, np.float32), np.zeros(2, np.float32)),
        lambda: hdb.l2_distance_batch([1.0, 2.0], "db"),
        lambda: hdb.l2_distance_batch([1.0, 2.0], [[1.0, 2.0]], context="gpu"),
        lambda: hdb.SparseVector([0.5], [1.0], 4),
        lambda: hdb.set_progress("yes"),
        lambda: hdb.Table.create(tmp_path / "x", schema={"id": "long"}),
    ]
    for i, case in enumerate(cases):
        with pytest.raises(TypeError) as ei:
            case()
        assert str(ei.value), i


def test_bad_values(t):
    cases = [
        (lambda: t.to_pandas(vector_filter={"column": "embedding", "query": [1, 2, 3], "k": 0}),
         "k must be > 0"),
        (lambda: t.to_pandas(vector_filter={"column": "embedding", "k": 3}), "'query'"),
        (lambda: t.to_pandas(vector_filter={"column": "embedding", "query": [1], "kk": 3}),
         "unknown keys"),
        (lambda: t.to_pandas(vector_filter={"column": "embedding", "query": [], "k": 3}), "empty"),
        (lambda: t.to_pandas(vector_filter={"column": "embedding", "query": [[1, 2]], "k": 3}),
         "2 dimensions"),   # a batch of one 2-d query against a 3-d column
        (lambda: t.to_pandas(vector_filter={"column": "embedding", "query": [[[1, 2, 3]]],
                                            "k": 3}), "1-D"),
        (lambda: t.move_column("id"), "exactly one"),
        (lambda: hdb.Table(""), "empty"),
        (lambda: hdb.Table("/tmp/x", format_version=1), "format_version"),
        (lambda: t.replace_sort_order(["id", "name"], ascending=[True]), "entries"),
        (lambda: hdb.SparseVector([1, 1], [1.0, 2.0], 4), "increasing"),
        (lambda: hdb.SparseVector([5], [1.0], 4), "outside"),
        (lambda: hdb.SparseVector([1, 2], [1.0], 4), "values"),
        (lambda: hdb.SparseVector([1], [1.0], 0), "dim"),
    ]
    for fn, words in cases:
        with pytest.raises(ValueError) as ei:
            fn()
        assert words.lower() in str(ei.value).lower(), (words, str(ei.value))


def test_wrong_vector_dimensions(t):
    with pytest.raises(ValueError, match="dimension"):
        hdb.l2_distance(np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match="dimension"):
        hdb.cosine_distance_batch(np.ones(3), np.ones((5, 4)))
    with pytest.raises(ValueError, match="dimension"):
        hdb.l2_distance_sparse(hdb.SparseVector([0], [1.0], 10),
                               hdb.SparseVector([0], [1.0], 11))
    with pytest.raises(ValueError, match="lengths"):
        hdb.hamming_distance_packed(np.zeros(2, np.uint8), np.zeros(3, np.uint8))
    # writing vectors of another dimension than the column's: the engine names the row
    t.write_pandas(pd.DataFrame({"id": [1000, 1001], "name": ["a", "b"],
                                 "embedding": [[1.0, 2.0, 3.0], [1.0, 2.0]]}))
    with pytest.raises(ValueError, match="row 1"):
        t.commit()
    t.discard()
    assert t.count() == 100


def test_search_query_of_wrong_dimension(t):
    with pytest.raises(ValueError, match="dimension"):
        t.to_pandas(vector_filter={"column": "embedding", "query": [1.0, 2.0], "k": 3})


def test_nan_vectors(t):
    nan = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        t.to_pandas(vector_filter={"column": "embedding", "query": [1.0, nan, 2.0], "k": 3})
    with pytest.raises(ValueError, match="non-finite"):
        t.query().vector_search("embedding", [np.inf, 1.0, 2.0], k=3)
    # float32 arrays go to _core unchecked by Python: the same errors
    q32 = np.array([1.0, 2.0, -np.inf], np.float32)
    with pytest.raises(ValueError, match=r"query has a non-finite value .* at index 2"):
        t.to_arrow(vector_filter={"column": "embedding", "query": q32, "k": 3})
    b32 = np.ones((3, 3), np.float32)
    b32[2, 1] = nan
    with pytest.raises(ValueError, match=r"non-finite value .* in row 2 at index 1"):
        t.to_arrow(vector_filter={"column": "embedding", "query": b32, "k": 3})
    with pytest.raises(ValueError, match="non-finite"):
        hdb.l2_distance([1.0, nan], [1.0, 2.0])
    with pytest.raises(ValueError, match="non-finite"):
        hdb.inner_product(np.array([1.0, 2.0], np.float16), np.array([np.inf, 1.0], np.float16))
    db = np.ones((10, 2), np.float32)
    db[7, 1] = nan
    with pytest.raises(ValueError, match="database vector 7"):
        hdb.l2_distance_batch([1.0, 1.0], db)
    with pytest.raises(ValueError, match="query 0"):
        hdb.l2_distance_batch([nan, 1.0], np.ones((3, 2)))
    with pytest.raises(ValueError, match="NaN|finite"):
        hdb.SparseVector([1], [nan], 4)
    t.write_pandas(pd.DataFrame({"id": [1000], "name": ["a"], "embedding": [[1.0, nan, 3.0]]}))
    with pytest.raises(ValueError, match="NaN"):
        t.commit()
    t.discard()


def test_unknown_columns(t):
    with pytest.raises(hdb.NotFoundError, match="nope"):
        t.to_pandas(columns=["id", "nope"])
    with pytest.raises(hdb.HyperStreamError, match="nope"):
        t.to_pandas(filter="nope > 3")
    with pytest.raises(hdb.HyperStreamError, match="nope"):
        t.update_spec("bucket(4, nope)")
    with pytest.raises(hdb.HyperStreamError, match="nope"):
        t.replace_sort_order(["nope"])
    with pytest.raises(ValueError, match="nope"):
        t.write_arrow(pa.table({"id": [1], "nope": [2]}))
        t.commit()
    t.discard()
    e = None
    try:
        t.to_pandas(columns=["nope"])
    except hdb.HyperStreamError as exc:
        e = exc
    assert e is not None and e.status == "HS_NOT_FOUND"


@pytest.mark.parametrize("text", ["id >>> 3", "id = ", "(id > 1", "id > 1 AND", "name = 'x",
                                  "id IN ()", "AND", "id > 'abc' + 1", "\u00e9\u00e9 ??"])
def test_bad_filter_text(t, text):
    with pytest.raises(hdb.HyperStreamError) as ei:
        t.to_pandas(filter=text)
    # syntax errors are HS_INVALID; operators the filter language does not
    # have (">>>") are reported as HS_UNSUPPORTED by the engine
    assert isinstance(ei.value, (ValueError, FileNotFoundError, NotImplementedError))
    assert len(str(ei.value)) > 10


def test_filter_with_nul_character(t):
    with pytest.raises(ValueError, match="NUL"):
        t.to_pandas(filter="id > 1\x00 OR 1=1")


def test_bad_index_names(t):
    with pytest.raises(ValueError, match="nonsense_index"):
        t.add_index("id", "nonsense_index")
    with pytest.raises(FileNotFoundError, match="nope"):
        t.add_index("nope", "inverted")
    with pytest.raises(ValueError, match="type"):
        t.add_index("embedding", {"complexity": 4})
    with pytest.raises(ValueError):
        t.add_index("embedding", "inverted")   # a scalar index on a vector column
    with pytest.raises(ValueError):
        t.add_index("embedding", {"type": "hnsw_pq", "complexity": -4})
    assert t.indexes() == []


def test_status_mapping(t, tmp_path):
    # HS_CONFLICT
    with pytest.raises(hdb.CommitConflictError) as ei:
        hdb.Table.create(t.path, pa.schema([("id", pa.int64())]))
    assert ei.value.status == "HS_CONFLICT"
    # HS_UNSUPPORTED (no native gs:// client; s3:// is tests/python/test_s3_table.py's)
    with pytest.raises(NotImplementedError) as ei:
        hdb.Table("gs://bucket/table")
    assert ei.value.status == "HS_UNSUPPORTED"
    # HS_NOT_FOUND
    with pytest.raises(FileNotFoundError):
        hdb.Table.open(tmp_path / "absent")
    with pytest.raises(FileNotFoundError):
        t.rollback_to_snapshot(12345)
    with pytest.raises(FileNotFoundError):
        t.to_arrow(snapshot_id=12345)
    with pytest.raises(FileNotFoundError):
        t.remove_tag("no-such-tag")
    # HS_INVALID: a snapshot that is not an ancestor
    s1 = t.current_snapshot_id
    t.write_arrow(pa.table({"id": [500]}))
    s2 = t.commit()
    t.rollback_to_snapshot(s1)
    with pytest.raises(ValueError):
        t.rollback_to_snapshot(s2)
    # closed handle
    t.close()
    with pytest.raises(ValueError, match="closed"):
        t.to_arrow()


def test_corrupt_metadata_and_data(tmp_path):
    t = hdb.Table(tmp_path / "c")
    t.write_arrow(pa.table({"id": np.arange(1000)}))
    t.commit()
    data = glob.glob(str(tmp_path / "c" / "data" / "*.parquet"))[0]
    with open(data, "r+b") as f:     # clobber the footer
        f.seek(-12, os.SEEK_END)
        f.write(b"\xff" * 12)
    with pytest.raises(hdb.HyperStreamError) as ei:
        hdb.Table(tmp_path / "c").to_arrow()
    assert os.path.basename(data) in str(ei.value) or "parquet" in str(ei.value).lower()
    meta = t.metadata_location.replace("file://", "")
    with open(meta, "w") as f:
        f.write("{ this is not json")
    with pytest.raises(hdb.CorruptDataError) as ei:
        hdb.Table.open(tmp_path / "c")
    assert ei.value.status == "HS_CORRUPT"


JUNK_SWEEP = r'''
import itertools, sys, numpy as np, pyarrow as pa, hyperstreamdb as hdb
t = hdb.Table(sys.argv[1])
t.write_arrow(pa.table({"id": [1, 2, 3], "v": pa.array([[1.0, 2.0]] * 3, pa.list_(pa.float32(), 2))}))
t.commit()
junk = [None, 0, -1, 2**70, 1.5, float("nan"), "", "x" * 5000, "\x00", b"\x00\xff", [], [None],
        ["id", 3], {}, {"a": object()}, object(), np.zeros((2, 2)), np.array(["a"]),
        pa.table({"zz": [1]}), t]
h = t._handle()
methods = [getattr(t, n) for n in ("to_arrow", "to_pandas", "write_arrow", "write_pandas",
            "delete", "add_index", "update_spec", "replace_sort_order", "rollback_to_snapshot",
            "add_column", "set_properties", "overwrite", "create_tag", "explain", "files")]
methods += [getattr(h, n) for n in ("append", "scan", "search", "update_schema",
            "set_properties", "remove_properties", "add_index", "delete", "overwrite")]
methods += [hdb.l2_distance, hdb.l2_distance_batch, hdb.SparseVector, hdb.hamming_distance_packed,
            hdb._core.distance, hdb._core.distance_batch, hdb._core.distance_packed,
            hdb._core.sparse_check, hdb._core.open_table, hdb._core.create_table]
n = 0
for m in methods:
    for args in itertools.chain(((a,) for a in junk), itertools.product(junk[:12], repeat=2)):
        try:
            m(*args)
        except BaseException as e:
            if isinstance(e, (SystemExit, KeyboardInterrupt)):
                raise
        n += 1
    t.discard()
print("survived", n)
'''


def test_junk_arguments_never_crash(tmp_path):
    p = subprocess.run([sys.executable, "-c", JUNK_SWEEP, str(tmp_path / "j")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "survived" in p.stdout

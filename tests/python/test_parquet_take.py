"""Row retrieval by position ("take") through hs_parquet_read_selection,
against pyarrow's Table.take on the same file.

Files of many column types (flat, nested lists and structs, maps, fixed-size
lists, nulls everywhere, dictionary and PLAIN pages, long strings), written
by pyarrow and by us, with every codec, v1 and v2 data pages and small pages
(so selections cross page boundaries); each selection is read twice: the
second read takes its pages from the process's cache of decompressed pages.
Also: a file rewritten under the same name with the same size returns the
new file's rows (issue 11), and a large read of a hot file decompresses
nothing the second time.
"""
import os
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


def _table(n, seed):
    g = np.random.default_rng(seed)
    null = g.random(n) < 0.15
    words = [f"w{i:02d}" for i in range(30)]
    lens = g.integers(0, 4, n)
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    vals = pa.array(g.integers(-1000, 1000, int(offs[-1]), dtype=np.int32),
                    mask=g.random(int(offs[-1])) < 0.1)
    lst = pa.ListArray.from_arrays(pa.array(offs), vals, mask=pa.array(g.random(n) < 0.1))
    slst = pa.array([None if g.random() < 0.1 else
                     [words[int(k)] for k in g.integers(0, 30, int(g.integers(0, 3)))]
                     for _ in range(n)], pa.list_(pa.string()))
    emb = pa.FixedSizeListArray.from_arrays(
        pa.array(g.standard_normal(n * 8).astype(np.float32)), 8)
    nested = pa.array([None if i % 13 == 0 else [[i, i + 1], [], None, [i * 2]] if i % 3 else []
                       for i in range(n)], pa.list_(pa.list_(pa.int64())))
    st = pa.StructArray.from_arrays(
        [pa.array(g.integers(0, 100, n), pa.int64()), pa.array([words[i % 30] for i in range(n)])],
        names=["a", "b"], mask=pa.array(g.random(n) < 0.1))
    mp = pa.array([None if i % 11 == 0 else [(words[i % 30], i), ("k", -i)] for i in range(n)],
                  pa.map_(pa.string(), pa.int64()))
    long_s = pa.array([None if i % 17 == 0 else ("x" * int(g.integers(0, 300))) + str(i)
                       for i in range(n)])
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "i8": pa.array(g.integers(-128, 127, n, dtype=np.int8), mask=null),
        "u16": pa.array(g.integers(0, 65535, n, dtype=np.uint16)),
        "i32": pa.array(g.integers(-2 ** 31, 2 ** 31 - 1, n, dtype=np.int32), mask=null),
        "f32": pa.array(g.standard_normal(n).astype(np.float32), mask=null),
        "f64": pa.array(g.standard_normal(n)),
        "b": pa.array(g.random(n) < 0.4, mask=null),
        "cat": pa.array([words[i] for i in g.integers(0, 30, n)], mask=null),
        "long_s": long_s,
        "bin": pa.array([bytes(g.integers(0, 256, int(k), dtype=np.uint8))
                         for k in g.integers(0, 20, n)]),
        "fsb": pa.array([bytes([i % 256] * 4) for i in range(n)], pa.binary(4)),
        "dec": pa.array([None if i % 7 == 0 else i * 3 - 500 for i in range(n)],
                        pa.int64()).cast(pa.decimal128(24, 0)),
        "date": pa.array(g.integers(0, 20000, n, dtype=np.int32)).view(pa.date32()),
        "ts": pa.array(g.integers(0, 2 ** 50, n), pa.int64()).view(pa.timestamp("us")),
        "lst": lst,
        "slst": slst,
        "emb": emb,
        "nested": nested,
        "st": st,
        "mp": mp,
    })


N = 6000


def _selections(n, page):
    rng = random.Random(5)
    sels = [[0], [n - 1], [page - 1, page, page + 1], [3 * page - 1, 3 * page],
            sorted(rng.sample(range(n), 25)), sorted(rng.sample(range(n), 600)),
            list(range(2 * page - 3, 2 * page + 4)), [i * page for i in range(n // page)]]
    return [s for s in sels if s]


def _check(hs, path, n, page):
    full = pq.read_table(path)
    for rows in _selections(n, page):
        want = full.take(rows)
        for rnd in range(2):   # the second read hits the page cache
            got, stats = hs.read_selection(path, rows)
            assert got.num_rows == len(rows)
            for name in want.column_names:
                g, w = got.column(name), want.column(name)
                what = f"{path.name} rows {rows[:6]}.. column {name} (read {rnd})"
                if g.type != w.type and {pa.types.is_fixed_size_list(g.type),
                                         pa.types.is_fixed_size_list(w.type)} == {True, False}:
                    # a fixed_size_list is a list in the Parquet schema; which
                    # of the two a reader returns depends on its metadata
                    assert g.to_pylist() == w.to_pylist(), what
                    continue
                assert g.equals(w), what


@pytest.fixture(scope="module")
def table():
    return _table(N, 17)


@pytest.mark.parametrize("codec", ["zstd", "snappy", "gzip", "lz4", "brotli", "none"])
@pytest.mark.parametrize("v2", [False, True])
def test_take_pyarrow_files(hs, tmp_path, table, codec, v2):
    path = tmp_path / f"pa-{codec}-{v2}.parquet"
    pq.write_table(table, path, compression=codec, data_page_version="2.0" if v2 else "1.0",
                   data_page_size=2048, write_page_index=True, row_group_size=2500,
                   use_dictionary=["cat", "slst", "st", "i32"])
    _check(hs, path, N, 100)


@pytest.mark.parametrize("codec", ["zstd", "snappy", "none"])
@pytest.mark.parametrize("v2", [False, True])
def test_take_our_files(hs, tmp_path, table, codec, v2):
    path = tmp_path / f"hs-{codec}-{v2}.parquet"
    hs.write(path, table, codec=codec, data_page_v2=v2, row_group_rows=2500, page_rows=97)
    _check(hs, path, N, 97)


def test_rewritten_same_size(hs, tmp_path):
    """Issue 11: the same name, the same size, other bytes: the new rows."""
    n = 5000
    path = tmp_path / "same.parquet"
    a = pa.table({"id": np.arange(n, dtype=np.int64), "v": np.arange(n, dtype=np.int64)})
    b = pa.table({"id": np.arange(n, dtype=np.int64), "v": np.arange(n, dtype=np.int64) + 7})
    kw = dict(compression="none", write_page_index=True, data_page_size=4096,
              use_dictionary=False, write_statistics=False)
    pq.write_table(a, path, **kw)
    rows = [1, 2000, 4999]
    got, _ = hs.read_selection(path, rows)
    assert got.column("v").to_pylist() == [1, 2000, 4999]
    size = os.path.getsize(path)
    tmp = tmp_path / "same.tmp"
    pq.write_table(b, tmp, **kw)
    assert os.path.getsize(tmp) == size
    os.replace(tmp, path)   # another inode under the old name
    got, _ = hs.read_selection(path, rows)
    assert got.column("v").to_pylist() == pq.read_table(path).take(rows).column("v").to_pylist()
    assert got.column("v").to_pylist() == [8, 2007, 5006]

"""Acceptance: statistics and the page index of the files we write, and
selective reads that use the page index.

* pyarrow reads our row-group statistics, and min / max / null_count equal
  the values computed here in Python from the data of each row group; every
  column chunk has a ColumnIndex and an OffsetIndex.
* hs_parquet_read_selection of 3 rows of a 1M-row file with 20000-row pages
  decodes at most 3 pages per leaf column (reported by the scan stats), and
  the rows equal pyarrow's rows at those positions.  Other selections (random,
  several row groups, nested columns, files without a page index, files
  written by pyarrow) return exactly pyarrow's rows at the selected positions.
"""
import decimal
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest


def _stats_table(n, rng):
    g = np.random.default_rng(rng.getrandbits(32))
    null = g.random(n) < 0.1
    strings = ["", "a", "abc", "zz", "é", "漢字", "Z", "b\u0000c"]
    return pa.table({
        "i32": pa.array(g.integers(-2 ** 31, 2 ** 31 - 1, n, dtype=np.int32), mask=null),
        "i64": pa.array(g.integers(-2 ** 63, 2 ** 63 - 1, n, dtype=np.int64)),
        "u32": pa.array(g.integers(0, 2 ** 32 - 1, n, dtype=np.uint32), mask=null),
        "f64": pa.array(g.standard_normal(n) * 1000, mask=null),
        "f32": pa.array(g.standard_normal(n).astype(np.float32)),
        "s": pa.array([strings[i] + str(i % 97) for i in g.integers(0, len(strings), n)],
                      mask=null),
        "bin": pa.array([bytes(g.integers(0, 256, int(k), dtype=np.uint8))
                         for k in g.integers(0, 8, n)]),
        "date": pa.array(g.integers(-10000, 30000, n, dtype=np.int32),
                         pa.int32()).view(pa.date32()),
        "ts": pa.array(g.integers(0, 2 ** 50, n), pa.int64()).view(pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal(int(i)).scaleb(-2)
                         for i in g.integers(-10 ** 8, 10 ** 8, n)], pa.decimal128(12, 2)),
        "all_null": pa.array([None] * n, pa.int64()),
        "b": pa.array(g.random(n) < 0.3),
    })


def _py_min_max(col):
    valid = [v for v in col.to_pylist() if v is not None]
    if not valid:
        return None, None
    if pa.types.is_string(col.type):
        keys = [v.encode() for v in valid]  # Parquet orders byte arrays as unsigned bytes
        return valid[keys.index(min(keys))], valid[keys.index(max(keys))]
    return min(valid), max(valid)


@pytest.mark.parametrize("codec,v2", [("zstd", False), ("snappy", True), ("none", False)])
def test_statistics_match_data(hs, tmp_path, codec, v2):
    rng = random.Random(11)
    table = _stats_table(10000, rng)
    path = tmp_path / "stats.parquet"
    hs.write(path, table, codec=codec, data_page_v2=v2, row_group_rows=3000, page_rows=500)
    pf = pq.ParquetFile(path)
    md = pf.metadata
    assert md.num_row_groups == 4
    names = [md.schema.column(i).name for i in range(md.num_columns)]
    start = 0
    for rg in range(md.num_row_groups):
        rgm = md.row_group(rg)
        n = rgm.num_rows
        part = table.slice(start, n)
        start += n
        for name in table.column_names:
            cc = rgm.column(names.index(name))
            assert cc.has_column_index, f"rg {rg} {name}: no column index"
            assert cc.has_offset_index, f"rg {rg} {name}: no offset index"
            assert cc.is_stats_set, f"rg {rg} {name}: no statistics"
            st = cc.statistics
            col = part.column(name)
            assert st.null_count == col.null_count, f"rg {rg} {name} null_count"
            lo, hi = _py_min_max(col)
            if lo is None:
                assert not st.has_min_max, f"rg {rg} {name}: min/max on an all-null chunk"
                continue
            assert st.has_min_max, f"rg {rg} {name}: no min/max"
            if pa.types.is_boolean(col.type):
                assert (st.min, st.max) == (lo, hi), f"rg {rg} {name}"
                continue
            assert st.min == lo, f"rg {rg} {name}: min {st.min!r}, want {lo!r}"
            assert st.max == hi, f"rg {rg} {name}: max {st.max!r}, want {hi!r}"
    assert start == table.num_rows


def test_page_index_readable_by_pyarrow_filters(hs, tmp_path):
    """pyarrow uses our page index / statistics for filtered reads and gets the right rows."""
    n = 200000
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                      "v": pa.array(np.random.default_rng(3).standard_normal(n))})
    path = tmp_path / "pi.parquet"
    hs.write(path, table, row_group_rows=50000, page_rows=5000)
    got = pq.read_table(path, filters=[("id", ">=", 123456), ("id", "<", 123470)])
    want = table.filter(pc.and_(pc.greater_equal(table["id"], 123456),
                                pc.less(table["id"], 123470)))
    assert got.equals(want)


@pytest.fixture(scope="module")
def million_row_file(tmp_path_factory):
    n = 1_000_000
    g = np.random.default_rng(7)
    words = np.array([f"word{i:03d}" for i in range(100)], dtype=object)
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "x": pa.array(g.standard_normal(n)),
        "s": pa.array(words[g.integers(0, 100, n)].tolist(), pa.string()),
        "l": pa.ListArray.from_arrays(pa.array(np.arange(0, 2 * n + 1, 2, dtype=np.int32)),
                                      pa.array(g.integers(0, 1000, 2 * n, dtype=np.int32))),
    })
    return table


def _write_million(hs, tmp_path_factory, table):
    path = tmp_path_factory.mktemp("sel") / "million.parquet"
    hs.write(path, table, page_rows=20000, row_group_rows=1_000_000, page_bytes=64 << 20)
    return path


def test_three_rows_of_a_million_decode_few_pages(hs, tmp_path_factory, million_row_file):
    path = _write_million(hs, tmp_path_factory, million_row_file)
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 1
    rows = [5, 512_345, 999_999]
    got, stats = hs.read_selection(path, rows)
    want = pq.read_table(path).take(rows)
    assert got.equals(want), f"got {got.to_pylist()}, want {want.to_pylist()}"
    n_leaves = md.num_columns
    assert stats["rows_emitted"] == 3
    assert 0 < stats["pages_decoded"] <= 3 * n_leaves, stats
    # 1M rows / 20000 per page = 50 pages per leaf; all but the 3 are skipped.
    assert stats["pages_skipped"] >= (50 - 3) * n_leaves, stats
    # And the file really has 20000-row pages: a full read decodes them all.
    _, full = hs.read_selection(path, range(0, 1_000_000, 20000))
    assert full["pages_decoded"] >= 50 * n_leaves, full


def test_selection_projection_and_order(hs, tmp_path_factory, million_row_file):
    path = _write_million(hs, tmp_path_factory, million_row_file)
    rows = [999_999, 3, 3, 40_000, 39_999]  # any order, duplicates: file order, once
    got, stats = hs.read_selection(path, rows, columns=["s", "id"])
    want = pq.read_table(path, columns=["s", "id"]).take(sorted(set(rows)))
    assert got.equals(want)
    assert stats["pages_decoded"] <= 4 * 2, stats


def test_random_selection_over_row_groups(hs, tmp_path):
    rng = random.Random(5)
    n = 120_000
    g = np.random.default_rng(5)
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "s": pa.array([None if i % 7 == 0 else f"v{i % 1000}" for i in range(n)]),
        "st": pa.StructArray.from_arrays([pa.array(g.integers(0, 9, n)),
                                          pa.array(g.standard_normal(n))], names=["a", "b"]),
        "l": pa.array([[i] * (i % 4) if i % 11 else None for i in range(n)],
                      pa.list_(pa.int32())),
    })
    path = tmp_path / "rg.parquet"
    hs.write(path, table, row_group_rows=25_000, page_rows=1000)
    whole = pq.read_table(path)
    for k in [0, 1, 17, 2000]:
        rows = sorted(rng.sample(range(n), k))
        got, stats = hs.read_selection(path, rows, batch_size=333)
        assert got.equals(whole.take(pa.array(rows, pa.int64()))), f"k={k}"
        assert stats["rows_emitted"] == k
        if k == 1:
            assert stats["row_groups_read"] <= 1 and stats["row_groups_skipped"] >= 3, stats
    # Ranges crossing page and row-group boundaries.
    rows = list(range(24_990, 25_010)) + list(range(99_999, 100_001))
    got, _ = hs.read_selection(path, rows)
    assert got.equals(whole.take(rows))


@pytest.mark.parametrize("page_index", [True, False])
def test_selection_on_pyarrow_files(hs, tmp_path, page_index):
    n = 50_000
    g = np.random.default_rng(9)
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                      "f": pa.array(g.standard_normal(n).astype(np.float32)),
                      "s": pa.array([f"s{i}" for i in range(n)])})
    path = tmp_path / "pa.parquet"
    pq.write_table(table, path, write_page_index=page_index, data_page_size=4096,
                   row_group_size=20_000)
    rows = [0, 1, 19_999, 20_000, 33_333, 49_999]
    got, stats = hs.read_selection(path, rows)
    assert got.equals(pq.read_table(path).take(rows))
    if page_index:
        assert stats["pages_skipped"] > 0, stats


def test_selection_out_of_range_rows(hs, tmp_path):
    table = pa.table({"a": pa.array(np.arange(100, dtype=np.int32))})
    path = tmp_path / "small.parquet"
    hs.write(path, table)
    got, _ = hs.read_selection(path, [5, 99, 100, 5000])  # positions past the end: ignored
    assert got.column("a").to_pylist() == [5, 99]


def test_empty_selection(hs, tmp_path):
    table = pa.table({"a": pa.array(np.arange(100, dtype=np.int32))})
    path = tmp_path / "small.parquet"
    hs.write(path, table)
    got, stats = hs.read_selection(path, [])
    assert got.num_rows == 0 and got.schema.equals(pq.read_schema(path), check_metadata=False)
    assert stats["pages_decoded"] == 0

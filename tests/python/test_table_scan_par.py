"""A table scan decodes each batch's columns on several threads at once (the scan's
readers waiting on a full queue and the consumer waiting on an empty one take columns
of the batch being decoded; src/table/scan.c, scan_par).  These tables are read with
2 and 4 scan threads and with one, in several batch sizes, and must equal
pyarrow.parquet reading the same data files: flat and nested columns (structs,
lists, maps, strings, decimals, nulls), several files so that the pool runs, and a
filter (the residual and the two-phase read also go through handed-out columns).
"""
import decimal
import glob

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import require_module  # noqa: E402

hdb = require_module("hyperstreamdb")

ROWS = 30_000


def part(seed, n, first):
    rng = np.random.default_rng(seed)
    ids = np.arange(first, first + n, dtype=np.int64)
    mask = rng.random(n) < 0.1
    words = np.array(["alpha", "b", "", "gamma delta", "x" * 40])
    lens = rng.integers(0, 4, n)
    items = [None if m else [int(v) for v in rng.integers(-5, 5, k)] for m, k in zip(mask, lens)]
    return pa.table({
        "id": pa.array(ids),
        "f": pa.array(rng.random(n), mask=mask),
        "i32": pa.array(rng.integers(-1000, 1000, n).astype(np.int32)),
        "s": pa.array(words[rng.integers(0, len(words), n)], mask=rng.random(n) < 0.05),
        "d": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**6, 10**6, n)],
                      pa.decimal128(12, 2)),
        "st": pa.StructArray.from_arrays(
            [pa.array(rng.integers(0, 9, n)), pa.array(words[rng.integers(0, len(words), n)])],
            names=["a", "b"]),
        "l": pa.array(items, pa.list_(pa.int64())),
        "m": pa.array([None if m else [("k%d" % j, float(j)) for j in range(k)]
                       for m, k in zip(mask, lens)], pa.map_(pa.string(), pa.float64())),
        "b": pa.array(rng.random(n) < 0.5),
    })


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("scanpar") / "t")
    t = hdb.Table(path)
    first = 0
    for seed, n in enumerate([ROWS, ROWS // 3, ROWS, 7]):   # 4 files, one tiny
        t.write_arrow(part(seed, n, first))
        t.commit(progress=False)
        first += n
    files = sorted(glob.glob(path + "/data/**/*.parquet", recursive=True))
    assert len(files) == 4
    yield path, pq.read_table(files).sort_by("id")
    hdb.set_config("scan_threads", 0)


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("batch_size", [None, 4096, 5000])
def test_full_scan_equals_pyarrow(table, threads, batch_size):
    path, want = table
    hdb.set_config("scan_threads", threads)
    got = hdb.Table(path).to_arrow(batch_size=batch_size)
    assert got.num_rows == want.num_rows
    assert got.sort_by("id").equals(want.cast(got.schema))


@pytest.mark.parametrize("threads", [2, 4])
def test_filtered_scan_equals_pyarrow(table, threads):
    path, want = table
    hdb.set_config("scan_threads", threads)
    got = hdb.Table(path).to_arrow(filter="i32 > 0 AND id % 3 = 1")
    ids = want.column("id").to_numpy()
    i32 = want.column("i32").to_numpy()
    mask = pa.array((i32 > 0) & (ids % 3 == 1))
    exp = want.filter(mask)
    assert got.num_rows == exp.num_rows
    assert got.sort_by("id").equals(exp.cast(got.schema))


def test_reader_in_order(table):
    """A file's batches come whole and in row order, one file after another: the ids
    (written ascending, a contiguous range per file) form one ascending run per file."""
    path, want = table
    hdb.set_config("scan_threads", 2)
    ids = []
    for b in hdb.Table(path).to_batches(columns=["id", "s", "l"], batch_size=4096):
        ids.extend(b.column(0).to_pylist())
    assert sorted(ids) == want.column("id").to_pylist()
    runs = 1 + sum(1 for a, b in zip(ids, ids[1:]) if b != a + 1)
    assert runs == 4

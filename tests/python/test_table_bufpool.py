"""Column buffers of 256 KiB - 64 MiB that a consumer releases are kept by the
library's buffer pool (src/base/mem.c, "Buffer pool") and handed to the next
scan with whatever bytes they held.  So a scan that follows another one decodes
into dirty memory: validity bitmaps, string offsets and bytes, list offsets and
the values of every type must still come out exactly as pyarrow.parquet reads
the same files.  The tables have 200,000 rows in one file, so a 65,536-row
batch's columns are pool-sized; a differently shaped table is scanned and
released before each read, so the reused blocks hold other data.
"""
import decimal
import glob

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import require_module  # noqa: E402

hdb = require_module("hyperstreamdb")

ROWS = 200_000


def data(seed, n, null_rate):
    rng = np.random.default_rng(seed)
    mask = rng.random(n) < null_rate
    words = np.array(["", "a", "bc", "a much longer string value " * 3, "zz"])
    lens = rng.integers(0, 5, n)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "i64": pa.array(rng.integers(-(1 << 40), 1 << 40, n), mask=mask),
        "f64": pa.array(rng.random(n), mask=rng.random(n) < null_rate),
        "i32": pa.array(rng.integers(-1000, 1000, n).astype(np.int32)),
        "s": pa.array(words[rng.integers(0, len(words), n)], mask=rng.random(n) < null_rate),
        "d": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**9, 10**9, n)],
                      pa.decimal128(15, 2)),
        "l": pa.array([None if m else [int(v) for v in rng.integers(-9, 9, k)]
                       for m, k in zip(mask, lens)], pa.list_(pa.int64())),
        "b": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < null_rate),
    })


def make(path, seed, null_rate):
    t = hdb.Table(path)
    t.write_arrow(data(seed, ROWS, null_rate))
    t.commit(progress=False)
    files = sorted(glob.glob(path + "/data/**/*.parquet", recursive=True))
    assert len(files) == 1
    return pq.read_table(files)


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    base = tmp_path_factory.mktemp("bufpool")
    want = make(str(base / "sparse"), 1, 0.3)   # many nulls: bitmaps with zero bits
    make(str(base / "dense"), 2, 0.0)           # no nulls: every byte written
    yield str(base / "sparse"), str(base / "dense"), want
    hdb.set_config("scan_threads", 0)
    hdb.set_config("buffer_pool_mb", None)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("pool_mb", [None, 0])
def test_scan_after_scan_equals_pyarrow(tables, threads, pool_mb):
    sparse, dense, want = tables
    hdb.set_config("scan_threads", threads)
    hdb.set_config("buffer_pool_mb", pool_mb)
    for _ in range(3):
        junk = hdb.Table(dense).to_arrow()
        assert junk.num_rows == ROWS
        del junk   # its buffers go back to the pool
        got = hdb.Table(sparse).to_arrow()
        assert got.num_rows == ROWS
        assert got.equals(want.cast(got.schema))
        del got


def test_released_batches_reused_by_next_batches(tables):
    """A stream whose batches are released as they come: later batches of
    the same scan decode into the blocks of earlier ones."""
    sparse, _, want = tables
    hdb.set_config("scan_threads", 1)
    hdb.set_config("buffer_pool_mb", None)
    parts = []
    for b in hdb.Table(sparse).to_batches(batch_size=65536):
        parts.append(b.take(np.arange(b.num_rows)))   # a copy; b is released
        del b
    got = pa.Table.from_batches(parts)
    assert got.num_rows == ROWS
    assert got.equals(want.cast(got.schema))

"""A 1M-row, 10-column query result reaches pyarrow without a copy.

Checks, on the result of Table.to_arrow():
* every data buffer pyarrow holds is a buffer the C library exported (the
  addresses the extension saw before the Arrow C stream crossed into
  pyarrow, Result.buffer_addresses(), equal the addresses pyarrow reports);
* pyarrow allocated nothing for it (pa.total_allocated_bytes() unchanged);
* the process heap grew by less than two copies of the data (the reader's
  own scratch, cached by malloc, is the rest; a copy into pyarrow would add
  a whole second copy on top);
* the values equal the source table (pyarrow is the oracle).
bench/python/zero_copy.py measures time and peak memory against
pyarrow.parquet reading the same files.
"""
import numpy as np
import pyarrow as pa
import pytest

import hyperstreamdb as hdb

ROWS, COLS = 1_000_000, 10


def anon_rss_bytes():
    """Resident anonymous memory (heap), leaving out shared libraries that
    pyarrow and numpy map lazily."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    rng = np.random.default_rng(7)
    cols = {}
    for i in range(COLS):
        kind = i % 4
        if kind == 0:
            cols[f"c{i}"] = pa.array(rng.integers(0, 1 << 40, ROWS))
        elif kind == 1:
            cols[f"c{i}"] = pa.array(rng.random(ROWS))
        elif kind == 2:
            cols[f"c{i}"] = pa.array(rng.integers(0, 1000, ROWS).astype(np.int32))
        else:
            cols[f"c{i}"] = pa.array(rng.random(ROWS).astype(np.float32))
    src = pa.table(cols)
    t = hdb.Table(tmp_path_factory.mktemp("zc") / "t")
    t.write_arrow(src)
    t.commit()
    return t, src


def pyarrow_addresses(table):
    out = []

    def walk(arr):
        for b in arr.buffers():
            if b is not None:
                out.append(b.address)

    for col in table.columns:
        for chunk in col.chunks:
            walk(chunk)
    return out


def test_result_buffers_are_the_library_buffers(big):
    t, src = big
    result = t._handle().scan()                  # what to_arrow() does, step by step
    exported = result.buffer_addresses()
    assert result.num_rows == ROWS
    before = pa.total_allocated_bytes()
    got = pa.table(result)                       # __arrow_c_stream__ -> pyarrow
    assert pa.total_allocated_bytes() - before == 0
    seen = pyarrow_addresses(got)
    assert len(seen) == len(exported) and set(seen) == set(exported)
    assert got.num_rows == ROWS and got.num_columns == COLS
    assert got.equals(src)


def test_to_arrow_does_not_copy(big):
    t, src = big
    data_bytes = src.nbytes
    base_rss = anon_rss_bytes()
    before = pa.total_allocated_bytes()
    got = t.to_arrow()
    assert pa.total_allocated_bytes() - before < 1 << 20   # nothing through pyarrow's pool
    grew = anon_rss_bytes() - base_rss
    assert grew < 2 * data_bytes, (grew, data_bytes)
    assert got.equals(src)
    del got

"""Short string group keys packed in one 64-bit value (exec/agg.c
pack_batch: per column a length byte and the bytes, 0xFF for NULL; rows
whose key does not fit take the general row-key map), compared with DuckDB
on the same rows: keys of 0..9 bytes (7 fits one column, 8 does not),
empty strings beside NULLs, two to eight columns whose keys just fit or
just do not (eight NULLs fill the 8 bytes exactly), fitting and
non-fitting rows of one key mixed in one batch, the last value of a
column's buffer (read without the 64-bit load), 1 and 2 threads."""
import numpy as np
import pyarrow as pa
import pytest

from conftest import require_module

duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")

from helpers import duckcompare  # noqa: E402

N = 30_000
WORDS = [None, "", "A", "N", "RF", "abc", "abcdef", "abcdefg", "abcdefgh", "abcdefghi", "\xff",
         "é", "x\x00y"]


def _data():
    rng = np.random.default_rng(17)
    cols = {}
    for c in range(8):
        # column c draws from a few words so that groups repeat; column 0
        # from all of them (lengths 0..9, NULL)
        pool = WORDS if c == 0 else [None, "", "a", "b", "cd"][: 2 + c % 4]
        idx = rng.integers(0, len(pool), N)
        cols[f"c{c}"] = pa.array([pool[i] for i in idx], pa.string())
    # the last row's values are the longest that fit: read at the buffer's end
    t = pa.table(cols)
    last = pa.table({f"c{c}": pa.array(["abcdefg" if c == 0 else None], pa.string())
                     for c in range(8)})
    t = pa.concat_tables([t, last])
    return t.append_column("v", pa.array(np.arange(t.num_rows, dtype=np.int64)))


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("packed")
    data = _data()
    yield from duckcompare.env(root, data, step=10_000)


@pytest.mark.parametrize("keys", [
    "c0",                       # one column, keys of 0..9 bytes
    "c0, c1",                   # a 7-byte key plus a column: does not fit
    "c1, c2, c3",
    "c1, c2, c3, c4, c5, c6, c7",
    "c0, c1, c2, c3, c4, c5, c6, c7",   # eight columns: only all-NULL-ish rows fit
    "c7, c0",
])
@pytest.mark.parametrize("threads", [1, 2])
def test_packed_string_keys_match_duckdb(env, keys, threads):
    s, con = env
    sql = f"SELECT {keys}, count(*), sum(v), min(v) FROM t GROUP BY {keys}"
    duckcompare.check(s, con, sql, threads=threads)

"""Parallel rounds over small batches (docs/executor.md, "Parallel rounds
of small batches"): with threads > 1 a HashAggregate, the Distinct under a
DISTINCT aggregate and a HashJoin's probe take more than `threads` batches
a round when the batches are small (a selective filter below them), the
aggregate's workers and the Distinct's key tasks several batches each, the
join's probe states a run of consecutive batches each.  Results are
compared with DuckDB on the same data at 1, 2, 3 and 4 threads (and
groups by long strings in runs, whose rows take the previous row's group
when every group column matches it); the scan's
filter keeps about 1 row in 9 of each file's 10,000, so batches have some
1,100 rows (checked in EXPLAIN ANALYZE) and rounds hold 4 to 8 batches a
thread."""
import math
import re
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from conftest import require_module

duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")

from sqlsession import Session  # noqa: E402

N = 240_000
PARTS = 24


def _data():
    rng = np.random.default_rng(16)
    return pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "k": pa.array(rng.integers(0, 3000, N), pa.int64(), mask=rng.random(N) < 0.02),
        "g": pa.array([f"g{v:02d}" for v in rng.integers(0, 40, N)], pa.string()),
        "x": pa.array(rng.integers(0, 500, N).astype(np.int32), pa.int32(), mask=rng.random(N) < 0.03),
        "d": pa.array([Decimal(int(v)).scaleb(-2) for v in rng.integers(-5000, 5000, N)],
                      pa.decimal128(12, 2)),
        # long strings (row keys, not packed) in runs of 3, NULL runs among them, and a
        # second column that changes inside some runs: the aggregate reuses the previous
        # row's group only when every group column matches
        "lg": pa.array([None if r % 11 == 5 else f"a long group name {r % 23:02d}"
                        for r in (np.arange(N) // 3).tolist()], pa.string()),
        "sz": pa.array((np.arange(N) // 2 % 5).astype(np.int32), pa.int32(),
                       mask=(np.arange(N) // 2 % 13) == 7),
    })


def _dim():
    rng = np.random.default_rng(61)
    keys = np.arange(0, 3000, 2, dtype=np.int64)   # half the keys: the join drops rows
    return pa.table({"k": pa.array(keys), "name": pa.array([f"n{v % 97}" for v in keys]),
                     "w": pa.array(rng.integers(0, 10, len(keys)), pa.int64())})


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("smallb")
    data, dim = _data(), _dim()
    t = hdb.Table(str(root / "t"))
    step = N // PARTS
    for i in range(PARTS):
        t.write_arrow(data.slice(i * step, step))
        t.commit()
    u = hdb.Table(str(root / "u"))
    u.write_arrow(dim)
    u.commit()
    s = Session()
    s.register("t", str(root / "t"))
    s.register("u", str(root / "u"))
    con = duckdb.connect()
    con.register("t", data)
    con.register("u", dim)
    yield s, con
    s.close()
    con.close()


def _norm(v):
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, Decimal):
        return round(float(v), 6)
    return v


def _key(row):
    return tuple((v is None, v if v is not None else 0) for v in row)


F = "id % 9 = 4"   # about 1 row in 9 passes: batches of some 1,100 rows
QUERIES = [
    f"SELECT g, count(*), sum(x), sum(d), min(x), max(d) FROM t WHERE {F} GROUP BY g",
    f"SELECT k, count(*), sum(d) FROM t WHERE {F} GROUP BY k",
    f"SELECT count(*), sum(x), avg(d) FROM t WHERE {F}",
    f"SELECT g, count(DISTINCT x), count(DISTINCT k) FROM t WHERE {F} GROUP BY g",
    f"SELECT g, count(DISTINCT k) FROM t WHERE {F} GROUP BY g",
    f"SELECT DISTINCT g, x FROM t WHERE {F} AND x < 50",
    "SELECT lg, sz, count(*), sum(x) FROM t GROUP BY lg, sz",
    "SELECT lg, g, count(*) FROM t WHERE id % 3 <> 1 GROUP BY lg, g",
    "SELECT lg, sz, count(DISTINCT k) FROM t GROUP BY lg, sz",
    f"SELECT t.id, t.k, u.name, u.w FROM t JOIN u ON t.k = u.k WHERE {F}",
    f"SELECT u.name, count(*), sum(t.d) FROM t JOIN u ON t.k = u.k WHERE {F} GROUP BY u.name",
    f"SELECT t.id FROM t WHERE {F} AND t.k NOT IN (SELECT k FROM u WHERE w > 3)",
    f"SELECT t.id, u.w FROM t LEFT JOIN u ON t.k = u.k AND u.w > 5 WHERE {F}",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_small_batches_match_duckdb(env, sql):
    s, con = env
    want = sorted((tuple(_norm(v) for v in r) for r in con.execute(sql).fetchall()), key=_key)
    for threads in (1, 2, 3, 4):
        s.sql(f"SET threads = {threads}")
        try:
            t = s.sql(sql)
        finally:
            s.sql("RESET threads")
        cols = [c.to_pylist() for c in t.columns]
        got = sorted((tuple(_norm(c[i]) for c in cols) for i in range(t.num_rows)), key=_key)
        assert len(got) == len(want), f"{sql} (threads={threads}): {len(got)} rows, want {len(want)}"
        assert got == want, f"{sql} (threads={threads})\n got: {got[:5]}\nwant: {want[:5]}"


def test_join_keeps_the_probe_order(env):
    """Each probe state takes a run of consecutive batches, so the join's
    output keeps the order in which the scan hands over the probe side's
    rows (the build side is the small u): its ids are a subsequence of the
    scan's, in the same order."""
    s, con = env
    s.sql("SET threads = 4")
    try:
        scan = s.sql(f"SELECT id FROM t WHERE {F}").column(0).to_pylist()
        ids = s.sql(f"SELECT t.id FROM t JOIN u ON t.k = u.k WHERE {F}").column(0).to_pylist()
    finally:
        s.sql("RESET threads")
    want = {r[0] for r in con.execute(f"SELECT t.id FROM t JOIN u ON t.k = u.k WHERE {F}").fetchall()}
    assert len(ids) > 10_000 and set(ids) == want
    pos = {v: i for i, v in enumerate(scan)}
    at = [pos[v] for v in ids]
    assert at == sorted(at)


def test_batches_are_small(env):
    """The scan must hand over many small batches, or the rounds above
    would hold `threads` batches as before."""
    s, _ = env
    plan = "\n".join(s.sql(f"EXPLAIN ANALYZE SELECT g, count(*) FROM t WHERE {F} GROUP BY g")
                     .column(0).to_pylist())
    m = re.search(r"Scan .*actual rows=(\d+) batches=(\d+)", plan)
    assert m, plan
    rows, batches = int(m.group(1)), int(m.group(2))
    assert batches >= 24 and rows / batches < 2048, plan

"""The final merge of a parallel aggregate on one integer group column
(docs/executor.md, "HashAggregate, one integer group column, parallel"):
at the end of the input the workers' groups are looked up in the adopted
worker's map and in the maps of the workers merged before, never inserted
into one map of all groups.  Results are compared with DuckDB on the same
data at 1, 2, 4 and 8 threads: keys clustered in runs (each worker's groups
nearly disjoint, as TPC-H Q18's l_orderkey) and keys spread over every
batch (each worker sees most groups: found in the adopted map or in an
earlier worker's), NULL keys, int32 and int64 keys, and every aggregate
that merges by value (count, sum of integers/decimals/doubles, avg, min
and max of numbers and strings, bool_and/bool_or, DISTINCT)."""
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from conftest import require_module

duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")

from helpers import duckcompare  # noqa: E402

N = 120_000
PARTS = 6


def _data():
    rng = np.random.default_rng(18)
    run = np.repeat(np.arange(N // 4, dtype=np.int64) * 7 + 3_000_000_000, 4)[:N]   # runs of 4
    spread = rng.integers(0, 5_000, N).astype(np.int32)                              # in every batch
    mid = rng.integers(0, N // 3, N)   # about 3 rows a key: often in 2 workers but not the adopted one
    return pa.table({
        "run": pa.array(run, pa.int64(), mask=rng.random(N) < 0.01),
        "spread": pa.array(spread, pa.int32(), mask=rng.random(N) < 0.02),
        "mid": pa.array(mid, pa.int64(), mask=rng.random(N) < 0.01),
        "x": pa.array(rng.integers(-50, 50, N), pa.int64(), mask=rng.random(N) < 0.05),
        "y": pa.array(rng.integers(-40, 40, N) / 4.0, pa.float64()),
        "s": pa.array([f"s{v:04d}" for v in rng.integers(0, 3000, N)], pa.string(),
                      mask=rng.random(N) < 0.03),
        "d": pa.array([Decimal(int(v)).scaleb(-2) for v in rng.integers(-900, 900, N)],
                      pa.decimal128(12, 2)),
    })


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("aggmerge")
    data = _data()
    # several files: many batches, workers in parallel
    yield from duckcompare.env(root, data, step=N // PARTS)


AGGS = ("count(*), count(x), sum(x), sum(d), avg(x), sum(y), min(x), max(s), min(d), "
        "bool_or(x > 40), bool_and(x > -45)")
QUERIES = [
    f"SELECT run, {AGGS} FROM t GROUP BY run",
    f"SELECT spread, {AGGS} FROM t GROUP BY spread",
    f"SELECT mid, {AGGS} FROM t GROUP BY mid",
    "SELECT run, count(DISTINCT x), sum(x) FROM t GROUP BY run",
    "SELECT spread, count(DISTINCT x), count(*) FROM t GROUP BY spread",
    # TPC-H Q18's shape: the HAVING keeps few of many groups
    "SELECT run FROM t GROUP BY run HAVING sum(x) > 120",
    "SELECT count(*), sum(n) FROM (SELECT spread, count(*) AS n FROM t WHERE x > 0 GROUP BY spread) q",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_integer_group_merge_matches_duckdb(env, sql):
    s, con = env
    want = duckcompare.duck_rows(con, sql)
    for threads in (1, 2, 4, 8):
        duckcompare.check(s, con, sql, want=want, threads=threads)

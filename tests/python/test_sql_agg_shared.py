"""Aggregates that share one state (exec/agg.c share_states, docs/executor.md):
a repeated sum(x), the sum(x) and count(x) that avg(x) plans into next to
a sum(x) or count(x) of the same argument, and a repeated count(*) are
updated once and read from one state.  Results are compared with DuckDB
on the same data (never with our own output): few groups (the per-batch
group-ordered loops) and many groups, serial and parallel, under a memory
limit that makes the aggregate spill, NULL arguments and all-NULL groups,
integers, decimals and doubles, and the aggregates that must not share
(DISTINCT, FILTER, different arguments)."""
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from conftest import require_module

duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")

from helpers import duckcompare  # noqa: E402

N = 40_000


def _data():
    rng = np.random.default_rng(11)
    x = rng.integers(-50, 50, N)
    return pa.table({
        "g": pa.array(rng.integers(0, 4, N).astype(np.int64)),
        "h": pa.array(rng.integers(0, 3000, N).astype(np.int64)),
        # group 3 of g: x is NULL in every row, so its count(x) is 0 and sum(x) NULL
        "x": pa.array(x.astype(np.int32), pa.int32(), mask=(rng.random(N) < 0.2) | (x % 4 == 3)),
        "p": pa.array([None if v < 0 else Decimal(int(v)).scaleb(-2)
                       for v in rng.integers(-5_000, 1_000_000, N).tolist()], pa.decimal128(12, 2)),
        "f": pa.array(rng.integers(-100, 100, N) / 8.0, pa.float64(), mask=rng.random(N) < 0.1),
        "s": pa.array([f"k{v}" for v in rng.integers(0, 3, N)], pa.string()),
    })


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("aggshared")
    data = _data()
    # x NULL wherever g = 3 (the all-NULL group)
    data = data.set_column(2, "x", pa.array(
        [None if g == 3 else v for g, v in zip(data["g"].to_pylist(), data["x"].to_pylist())],
        pa.int32()))
    # several files: several batches, both workers busy
    yield from duckcompare.env(root, data, step=8_000)


AGGS = [
    # TPC-H Q1's shape: sum(x) and avg(x) of the same arguments, counts of them
    "sum(x), sum(p), avg(x), avg(p), count(*), count(x), count(p), avg(f), sum(f)",
    # the count before the sum it reads, a repeated count(*), avg before sum
    "count(x), count(*), avg(p), sum(x), count(*), sum(p), count(p), count(f)",
    # the same aggregate three times
    "sum(p), sum(p), sum(p), count(p), count(p)",
    # must not share: DISTINCT, FILTER (a different argument), other columns
    "count(DISTINCT x), count(x), sum(DISTINCT x), sum(x), "
    "sum(x) FILTER (WHERE g > 0), count(x) FILTER (WHERE f > 0), count(f), min(x), max(x)",
]
GROUPINGS = [
    ("", ""),                       # one global group
    ("g", "g"),                     # 4 groups: the few-group loops
    ("s, g", "s, g"),               # packed string + integer keys, 12 groups
    ("h", "h"),                     # 3000 groups: the general loops, parallel merge
]


@pytest.mark.parametrize("aggs", AGGS)
@pytest.mark.parametrize("keys", GROUPINGS, ids=lambda k: k[0] or "global")
@pytest.mark.parametrize("threads", [1, 2])
def test_shared_aggregates_match_duckdb(env, aggs, keys, threads):
    s, con = env
    by = f" GROUP BY {keys[0]}" if keys[0] else ""
    sel = f"{keys[0]}, {aggs}" if keys[0] else aggs
    duckcompare.check(s, con, f"SELECT {sel} FROM t{by}", threads=threads)


def test_shared_aggregates_spilled_match_duckdb(env):
    """Under a memory limit the aggregate spills its groups to partitions,
    each aggregated again by an operator of its own (with its own sharing)."""
    s, con = env
    sql = ("SELECT h, x, sum(p), avg(p), count(p), count(*), count(*), sum(f), avg(f) "
           "FROM t GROUP BY h, x")
    duckcompare.check(s, con, sql, memory_limit="1MB")
    with duckcompare.settings(s, memory_limit="1MB"):
        plan = "\n".join(s.sql("EXPLAIN ANALYZE " + sql).column(0).to_pylist())
    assert "spill" in plan.lower(), plan


def test_explain_counts_states(env):
    s, _ = env
    plan = "\n".join(s.sql("EXPLAIN SELECT g, sum(p), avg(p), count(*) FROM t GROUP BY g")
                     .column(0).to_pylist())
    # sum(p), and avg's sum(p) and count(p), read one state
    assert "sum(#2), sum(#2), count(*), count(#2) (2 states)" in plan, plan

"""Spilling (issue 13): sorts and hash aggregates past the session's
memory_limit write to temp files in temp_directory instead of failing.
Results under a tiny limit are compared with DuckDB on the same data and
with our own run under the default limit (which does not spill); EXPLAIN
ANALYZE must show that the operators did spill, and the spill directory is
empty afterwards (files are unlinked as soon as they are created)."""
import math
import os

import numpy as np
import pyarrow as pa
import pytest

from conftest import require_module

duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")

from sqlsession import Session, SqlError  # noqa: E402

N = 120_000


def _data():
    rng = np.random.default_rng(7)
    k = rng.integers(0, 40_000, N)
    x = rng.integers(-1000, 1000, N).astype(np.int32)
    y = rng.normal(size=N)
    s = np.array([f"s{v % 25_000:05d}" for v in rng.integers(0, 1 << 30, N)], dtype=object)
    null = rng.random(N) < 0.05
    return pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "k": pa.array(k, pa.int64(), mask=rng.random(N) < 0.01),
        "x": pa.array(x, pa.int32(), mask=null),
        "y": pa.array(y, pa.float64(), mask=rng.random(N) < 0.05),
        "s": pa.array(s, pa.string(), mask=rng.random(N) < 0.02),
    })


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("spill")
    data = _data()
    t = hdb.Table(str(root / "t"))
    t.write_arrow(data)
    t.commit()
    spill = root / "tmp"
    spill.mkdir()
    s = Session()
    s.register("t", str(root / "t"))
    con = duckdb.connect()
    con.register("t", data)
    yield s, con, spill
    s.close()
    con.close()


def _norm(v):
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else round(v, 6)
    if hasattr(v, "as_tuple"):
        return round(float(v), 6)
    return v


def _rows(t):
    cols = [c.to_pylist() for c in t.columns]
    return [tuple(_norm(c[i]) for c in cols) for i in range(t.num_rows)]


def _key(row):
    return tuple((v is None, str(type(v)), v if v is not None else 0) for v in row)


QUERIES = [
    # (sql, ordered, operator that must spill)
    ("SELECT k, count(*), sum(x), avg(y), min(s), max(s), min(y) FROM t GROUP BY k", False,
     "HashAggregate"),
    ("SELECT s, k % 7 AS m, count(x), sum(y), bool_or(x > 0) FROM t GROUP BY s, k % 7", False,
     "HashAggregate"),
    # (DISTINCT, string_agg and array_agg spill only groups not yet in memory;
    # docs/executor.md: their in-memory groups may still outgrow the limit)
    ("SELECT * FROM t ORDER BY y DESC NULLS LAST, id", True, "Sort"),
    ("SELECT s, k, x FROM t ORDER BY s, k NULLS FIRST, id", True, "Sort"),
    ("SELECT k, sum(x) AS sx FROM t GROUP BY k ORDER BY sx DESC NULLS LAST, k NULLS FIRST", True,
     "HashAggregate"),
]


def _run(s, sql, limit, threads, spill):
    s.sql(f"SET memory_limit = '{limit}'")
    s.sql(f"SET threads = {threads}")
    s.sql(f"SET temp_directory = '{spill}'")
    try:
        got = s.sql(sql)
        plan = "\n".join(s.sql("EXPLAIN ANALYZE " + sql).column(0).to_pylist())
    finally:
        s.sql("RESET memory_limit")
        s.sql("RESET threads")
        s.sql("RESET temp_directory")
    return got, plan


@pytest.mark.parametrize("sql,ordered,op", QUERIES)
def test_spilled_results_match_duckdb_and_memory(env, sql, ordered, op):
    s, con, spill = env
    want = [tuple(_norm(v) for v in r) for r in con.execute(sql).fetchall()]
    mem = _rows(s.sql(sql))
    for limit, threads in (("1MB", 1), ("1MB", 2), ("12MB", 4)):
        got, plan = _run(s, sql, limit, threads, spill)
        g = _rows(got)
        line = [ln for ln in plan.splitlines() if op in ln]
        if limit == "1MB":   # (at 12MB on 4 threads the parallel path may or may not spill)
            assert "spilled:" in plan, plan
        if ordered:
            assert g == want, (sql, limit, threads)
            assert g == mem
        else:
            assert sorted(g, key=_key) == sorted(want, key=_key), (sql, limit, threads)
            assert sorted(g, key=_key) == sorted(mem, key=_key)
        assert line, plan
        assert os.listdir(spill) == []


def test_default_limit_does_not_spill(env):
    s, _, _ = env
    plan = "\n".join(s.sql("EXPLAIN ANALYZE " + QUERIES[0][0]).column(0).to_pylist())
    assert "spilled" not in plan, plan


def test_temp_directory_setting(env, tmp_path):
    s, _, spill = env
    s.sql(f"SET temp_directory = '{spill}'")
    assert s.sql("SHOW temp_directory").column(0).to_pylist() == [str(spill)]
    s.sql("RESET temp_directory")
    assert s.sql("SHOW temp_directory").column(0).to_pylist() == [
        os.environ.get("TMPDIR") or "/tmp"]
    # a directory that does not exist: an I/O error, not a crash or a wrong answer
    s.sql("SET memory_limit = '1MB'")
    s.sql(f"SET temp_directory = '{tmp_path / 'nope'}'")
    try:
        with pytest.raises(SqlError) as ei:
            s.sql("SELECT * FROM t ORDER BY y, id")
        assert "spill" in str(ei.value)
    finally:
        s.sql("RESET memory_limit")
        s.sql("RESET temp_directory")
    assert s.sql("SELECT count(*) FROM t").column(0).to_pylist() == [N]

"""Spilling (issue 13): sorts, hash aggregates, hash joins (every kind,
residuals, NULL keys), set operations, DISTINCT and windows past the
session's memory_limit write to temp files in temp_directory instead of
failing.  TopK with a k too large to hold spills like a sort.  Results under a tiny limit are compared with DuckDB on the same
data and with our own run under the default limit (which does not spill);
EXPLAIN ANALYZE must show that the operators did spill and that the
statement's accounted peak stayed near the limit, and the spill directory
is empty afterwards (files are unlinked as soon as they are created).  An
injected spill I/O failure gives a clean error."""
import ctypes
import math
import os
import re

import numpy as np
import pyarrow as pa
import pytest

from conftest import require_module

duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")

from sqlsession import Session, SqlError  # noqa: E402

N = 120_000
M = 60_000


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


def _data_u():
    """The other side of the joins: keys overlapping t's, NULL keys."""
    rng = np.random.default_rng(11)
    k = rng.integers(0, 40_000, M)
    s = np.array([f"s{v % 25_000:05d}" for v in rng.integers(0, 1 << 30, M)], dtype=object)
    return pa.table({
        "id": pa.array(np.arange(M, dtype=np.int64)),
        "k": pa.array(k, pa.int64(), mask=rng.random(M) < 0.02),
        "z": pa.array(rng.integers(-1000, 1000, M).astype(np.int32), pa.int32(),
                      mask=rng.random(M) < 0.05),
        "s": pa.array(s, pa.string(), mask=rng.random(M) < 0.02),
    })


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("spill")
    data, udata = _data(), _data_u()
    for name, tab in (("t", data), ("u", udata)):
        t = hdb.Table(str(root / name))
        t.write_arrow(tab)
        t.commit()
    spill = root / "tmp"
    spill.mkdir()
    s = Session()
    s.register("t", str(root / "t"))
    s.register("u", str(root / "u"))
    con = duckdb.connect()
    con.register("t", data)
    con.register("u", udata)
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
    # TopK whose k rows do not fit: runs of their first k rows, merge cut at k
    ("SELECT * FROM t ORDER BY y DESC NULLS LAST, id LIMIT 60000", True, "TopK"),
    ("SELECT id, s, x FROM t ORDER BY s NULLS FIRST, x, id LIMIT 30000 OFFSET 5000", True,
     "TopK"),
]


# (sql, operator that must spill under 1MB): joins of every kind, with
# residuals and NULL keys; set operations; DISTINCT; windows
SPILL_QUERIES = [
    ("SELECT t.id, u.id FROM t JOIN u ON t.k = u.k", "HashJoin"),
    ("SELECT t.id, t.s, u.z FROM t LEFT JOIN u ON t.k = u.k AND u.z > t.x", "HashJoin"),
    ("SELECT t.id, u.id FROM t RIGHT JOIN u ON t.s = u.s AND t.x < u.z - 1500", "HashJoin"),
    ("SELECT t.id, u.id, u.s FROM t FULL JOIN u ON t.k = u.k AND t.x % 7 = u.z % 7", "HashJoin"),
    ("SELECT t.id, u.id FROM t FULL JOIN u ON t.k = u.k AND t.s = u.s", "HashJoin"),
    ("SELECT id, k FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND u.z > t.x)",
     "HashJoin"),
    ("SELECT id, s FROM t WHERE s IN (SELECT s FROM u WHERE z > 500)", "HashJoin"),
    ("SELECT id FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND u.z < 0)",
     "HashJoin"),
    ("SELECT id FROM t WHERE k NOT IN (SELECT k FROM u WHERE k IS NOT NULL AND z > 0)",
     "HashJoin"),
    ("SELECT id FROM t WHERE k NOT IN (SELECT k FROM u)", "HashJoin"),
    ("SELECT k, s FROM t UNION SELECT k, s FROM u", "Union"),
    ("SELECT k, x FROM t INTERSECT SELECT k, z FROM u", "Intersect"),
    ("SELECT k FROM t INTERSECT ALL SELECT k FROM u", "Intersect"),
    ("SELECT s, k % 3 FROM t EXCEPT SELECT s, k % 3 FROM u WHERE z > 0", "Except"),
    ("SELECT k FROM t EXCEPT ALL SELECT k FROM u", "Except"),
    ("SELECT DISTINCT k, x FROM t", "Distinct"),
    ("SELECT k % 5000 AS g, count(DISTINCT x) FROM t GROUP BY k % 5000", "HashAggregate"),
    ("SELECT id, k, row_number() OVER (PARTITION BY k ORDER BY id), "
     "sum(x) OVER (PARTITION BY k ORDER BY id) FROM t", "Window"),
    ("SELECT id, s, rank() OVER (PARTITION BY s ORDER BY y NULLS LAST, id), "
     "lag(x) OVER (PARTITION BY s ORDER BY id) FROM t", "Window"),
    # RANGE / GROUPS frames and EXCLUDE (segments over prefix sums and trees)
    ("SELECT id, k, sum(x) OVER (PARTITION BY k ORDER BY id RANGE BETWEEN 50 PRECEDING AND 20 FOLLOWING "
     "EXCLUDE CURRENT ROW), max(x) OVER (PARTITION BY k ORDER BY id GROUPS BETWEEN 2 PRECEDING AND 1 FOLLOWING "
     "EXCLUDE GROUP) FROM t", "Window"),
]


def _spilled(plan, op):
    """True when a line of operator op is followed by its 'spilled:' line."""
    lines = plan.splitlines()
    return any(op in ln and i + 1 < len(lines) and "spilled:" in lines[i + 1]
               for i, ln in enumerate(lines))


def _peak(plan):
    m = re.search(r"Peak memory: (\d+) bytes \(limit (\d+)\)", plan)
    assert m, plan
    return int(m.group(1)), int(m.group(2))


def _same(con, a, b):
    """Tables a and b hold the same rows as multisets (columns by position;
    DuckDB compares them, NULLs equal as in EXCEPT ALL)."""
    if a.num_rows != b.num_rows or a.num_columns != b.num_columns:
        return False
    names = [f"c{i}" for i in range(a.num_columns)]
    con.register("_a", a.rename_columns(names))
    con.register("_b", b.rename_columns(names))
    try:
        return con.execute(
            "SELECT (SELECT count(*) FROM (SELECT * FROM _a EXCEPT ALL SELECT * FROM _b)) + "
            "(SELECT count(*) FROM (SELECT * FROM _b EXCEPT ALL SELECT * FROM _a))").fetchall()[0][0] == 0
    finally:
        con.unregister("_a")
        con.unregister("_b")


@pytest.mark.parametrize("sql,op", SPILL_QUERIES)
def test_operators_spill_and_match(env, sql, op):
    s, con, spill = env
    want = con.sql(sql).to_arrow_table()
    assert want.num_rows > 0 or "NOT IN (SELECT k FROM u)" in sql
    assert _same(con, s.sql(sql), want), sql
    for threads in (1, 2):
        got, plan = _run(s, sql, "1MB", threads, spill)
        assert _same(con, got, want), (sql, threads)
        assert _spilled(plan, op), plan
        peak, limit = _peak(plan)
        assert limit == 1 << 20
        # what the operators hold is accounted; batches read ahead may pass
        # the limit by a batch or two
        assert 0 < peak <= limit + limit // 2, plan
        assert os.listdir(spill) == []


def test_join_spill_io_failure(env):
    """An I/O error while spilling (injected at the k-th spill file call)
    fails the statement cleanly; the session and the spill directory
    stay usable and empty."""
    s, con, spill = env
    sql = SPILL_QUERIES[3][0]
    fail = s.lib.xo_spill_fail_after
    fail.argtypes = [ctypes.c_int64]
    for k in (1, 3, 40):
        s.sql("SET memory_limit = '1MB'")
        s.sql(f"SET temp_directory = '{spill}'")
        fail(k)
        try:
            with pytest.raises(SqlError) as ei:
                s.sql(sql)
            assert "spill" in str(ei.value)
            assert ei.value.sqlstate == "58030"
        finally:
            fail(0)
            s.sql("RESET memory_limit")
            s.sql("RESET temp_directory")
        assert os.listdir(spill) == []
    want = con.execute(f"SELECT count(*) FROM ({sql})").fetchone()[0]
    assert s.sql(f"SELECT count(*) FROM ({sql}) q").column(0).to_pylist() == [want]


def test_join_one_key_fails_cleanly(env):
    """A build side whose rows share one key cannot be split by hashing:
    past the last level of spilling, SQLSTATE 53200 instead of a wrong
    answer."""
    s, _, spill = env
    s.sql("SET memory_limit = '256kB'")
    s.sql(f"SET temp_directory = '{spill}'")
    try:
        with pytest.raises(SqlError) as ei:
            s.sql("SELECT count(*) FROM t a JOIN t b ON a.id % 1 = b.id % 1 AND a.id = 1")
        assert ei.value.sqlstate == "53200"
    finally:
        s.sql("RESET memory_limit")
        s.sql("RESET temp_directory")
    assert os.listdir(spill) == []


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
    if not ordered:   # (sorted once: sorting dominates this test's time)
        want, mem = sorted(want, key=_key), sorted(mem, key=_key)
    for limit, threads in (("1MB", 1), ("1MB", 2), ("12MB", 4)):
        got, plan = _run(s, sql, limit, threads, spill)
        g = _rows(got)
        line = [ln for ln in plan.splitlines() if op in ln]
        if limit == "1MB":   # (at 12MB on 4 threads the parallel path may or may not spill)
            assert "spilled:" in plan, plan
            assert op != "TopK" or _spilled(plan, op), plan
        if ordered:
            assert g == want, (sql, limit, threads)
            assert g == mem
        else:
            g = sorted(g, key=_key)
            assert g == want, (sql, limit, threads)
            assert g == mem
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

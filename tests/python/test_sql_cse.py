"""Common subexpressions (issue 13, docs/executor.md): a Project computes a
subexpression that occurs more than once among its expressions once per
chunk (expr/expr.h ex_share), and aggregates whose arguments are equal
read one projected column.  Results are compared with DuckDB on the same
data (never with our own output): decimals, doubles, strings, NULLs,
repeats inside one expression and across several, shared values under
CASE/COALESCE/AND (computed only where every row of the chunk needs them,
so a guarded division by zero stays guarded), and errors that must still
happen.  random() is not bound by our engine (0A000), so no volatile
value can be shared; the test pins that down."""
import math
import re
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from conftest import require_module

duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")

from sqlsession import Session, SqlError  # noqa: E402

N = 5_000


def _data():
    rng = np.random.default_rng(5)
    return pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "x": pa.array(rng.integers(-3, 4, N).astype(np.int32), pa.int32(),
                      mask=rng.random(N) < 0.1),
        "p": pa.array([None if v < 0 else Decimal(v).scaleb(-2)
                       for v in rng.integers(-50, 100_000, N).tolist()], pa.decimal128(12, 2)),
        "d": pa.array([Decimal(v).scaleb(-2) for v in rng.integers(0, 11, N).tolist()],
                      pa.decimal128(12, 2)),
        "f": pa.array(rng.integers(-100, 100, N) / 8.0, pa.float64(), mask=rng.random(N) < 0.1),
        "s": pa.array([f"k{v}" for v in rng.integers(0, 40, N)], pa.string(),
                      mask=rng.random(N) < 0.1),
    })


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("cse")
    data = _data()
    t = hdb.Table(str(root / "t"))
    t.write_arrow(data)
    t.commit()
    s = Session()
    s.register("t", str(root / "t"))
    con = duckdb.connect()
    con.execute("SET integer_division = true")
    con.register("t", data)
    yield s, con
    s.close()
    con.close()


def _norm(v):
    if hasattr(v, "as_tuple"):   # Decimal
        return float(v)
    return v


def _same(a, b):
    """Rows equal, floats within a relative 1e-9 (avg of decimals is
    exact here and a double in DuckDB)."""
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        for x, y in zip(ra, rb):
            if isinstance(x, float) and isinstance(y, float):
                if not (x == y or math.isclose(x, y, rel_tol=1e-9) or (math.isnan(x) and math.isnan(y))):
                    return False
            elif x != y:
                return False
    return True


QUERIES = [
    # Q1's shape: p * (1 - d) in two expressions, once inside the other
    "SELECT id, p * (1 - d), p * (1 - d) * (1 + d), p * (1 - d) - p FROM t ORDER BY id",
    "SELECT sum(p * (1 - d)), sum(p * (1 - d) * (1 + d)), sum(p), avg(p), count(p), max(p) FROM t",
    "SELECT s, sum(p * (1 - d)), avg(p * (1 - d)), sum(p * (1 - d) * (1 + d)) FROM t GROUP BY s",
    # repeats inside one expression, NULLs through them
    "SELECT id, (f + x) * (f + x), (f + x) / 2, abs(f + x) FROM t ORDER BY id",
    "SELECT id, upper(s) || '-' || upper(s), length(upper(s)), upper(s) IS NULL FROM t ORDER BY id",
    # shared values under conditional evaluation: 10 / x only where x <> 0
    "SELECT id, CASE WHEN x <> 0 THEN 10 / x END, CASE WHEN x <> 0 THEN 10 / x + 1 ELSE -1 END "
    "FROM t ORDER BY id",
    "SELECT id, COALESCE(x, 5) * 2, CASE WHEN x > 0 THEN COALESCE(x, 5) * 2 + 1 END, "
    "CASE WHEN x > 0 THEN 100 / x > 20 END, s = 'k1' OR CASE WHEN x > 0 THEN 100 / x > 20 END, "
    "x > 0 AND s = 'k1', x > 0 AND s = 'k1' OR s IS NULL FROM t ORDER BY id",
    "SELECT id, 10 / NULLIF(x, 0), 10 / NULLIF(x, 0) + x, -(f * 2), -(f * 2) + f * 2 FROM t ORDER BY id",
    "SELECT x, count(*), sum(f * 2), sum(f * 2) FILTER (WHERE x > 0), min(f * 2) FROM t GROUP BY x",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_shared_subexpressions_match_duckdb(env, sql):
    s, con = env
    want = [tuple(_norm(v) for v in r) for r in con.execute(sql).fetchall()]
    for threads in (1, 2):
        s.sql(f"SET threads = {threads}")
        try:
            t = s.sql(sql)
        finally:
            s.sql("RESET threads")
        cols = [c.to_pylist() for c in t.columns]
        got = [tuple(_norm(c[i]) for c in cols) for i in range(t.num_rows)]
        if "order by" not in sql.lower():
            key = lambda r: tuple((v is None, str(type(v)), v if v is not None else 0) for v in r)
            got, want = sorted(got, key=key), sorted(want, key=key)
        assert _same(got, want), f"{sql}\n got: {got[:8]}\nwant: {want[:8]}"


def test_errors_still_raised(env):
    """A shared division by zero fails as it does unshared (both engines)."""
    s, con = env
    sql = "SELECT 10 / x, 10 / x + 1 FROM t"
    with pytest.raises(duckdb.Error):
        con.execute(sql).fetchall()
    with pytest.raises(SqlError) as ei:
        s.sql(sql)
    assert ei.value.sqlstate == "22012", ei.value


def test_equal_aggregate_arguments_share_a_column(env):
    s, _ = env
    plan = "\n".join(s.sql("EXPLAIN SELECT sum(p), avg(p), max(p), sum(p * 2), min(p * 2) FROM t")
                     .column(0).to_pylist())
    proj = [ln for ln in plan.splitlines() if "Project" in ln and "(p * 2)" in ln]
    assert proj and proj[-1].count("(p * 2)") == 1 and re.search(r"\(p, \(p \* 2\)\)", proj[-1]), plan


def test_random_is_not_bound(env):
    """No volatile function is bound, so none can be shared by mistake; if
    random() is ever added, ex_share's node_volatile must list it."""
    s, _ = env
    with pytest.raises(SqlError) as ei:
        s.sql("SELECT random(), random() FROM t")
    assert ei.value.sqlstate == "0A000", ei.value

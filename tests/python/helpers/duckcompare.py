"""Our SQL results against DuckDB's on the same rows, for the differential
tests of the executor (test_sql_agg_shared.py, test_sql_agg_merge.py,
test_sql_packed_keys.py, test_sql_parallel_agg.py).

    @pytest.fixture(scope="module")
    def env(tmp_path_factory):
        yield from duckcompare.env(tmp_path_factory.mktemp("x"), data, step=10_000)

    def test_q(env):
        s, con = env
        duckcompare.check(s, con, "SELECT g, sum(x) FROM t GROUP BY g", threads=2)

env() writes the pyarrow table `data` as table `t` of ours (one commit, so
one data file, per `step` rows: the scan reads several batches) and
registers the same rows with an in-memory DuckDB; it yields (Session,
DuckDB connection) and closes both.

Values are compared, never our output with itself: DuckDB computes `want`.
Decimals compare as floats, floats (and decimals) within a relative 1e-9
(sums and averages taken in another order), NaN equals NaN, anything else
exactly (None only equals None).  Rows compare as multisets unless the
query's order is asked for (ordered=True); they are sorted by a key that
rounds floats, so that values equal within the tolerance sort alike.
"""
import contextlib
import math
from decimal import Decimal

REL_TOL = 1e-9


def env(root, data, step, name="t"):
    """Generator for a module fixture: `data` as table `name` of ours (a
    commit per `step` rows) and of DuckDB; yields (Session, connection)."""
    import duckdb
    import hyperstreamdb as hdb
    from sqlsession import Session

    t = hdb.Table(str(root / name))
    for off in range(0, data.num_rows, step):
        t.write_arrow(data.slice(off, step))
        t.commit()
    s = Session()
    s.register(name, str(root / name))
    con = duckdb.connect()
    con.register(name, data)
    try:
        yield s, con
    finally:
        s.close()
        con.close()


def _lit(v):
    return f"'{v}'" if isinstance(v, str) else str(v)


@contextlib.contextmanager
def settings(s, **kv):
    """SET name = value for each of kv (strings quoted) while the block
    runs; RESET afterwards, also when it raises."""
    try:
        for k, v in kv.items():
            s.sql(f"SET {k} = {_lit(v)}")
        yield s
    finally:
        for k in kv:
            s.sql(f"RESET {k}")


def _norm(v):
    return float(v) if isinstance(v, Decimal) else v


def _sort_key(row):
    key = []
    for v in map(_norm, row):
        if v is None:
            key.append((0, "", 0))
        elif isinstance(v, float):
            key.append((1, "nan", 0) if math.isnan(v) else (1, "num", round(v, 6)))
        elif isinstance(v, int) and not isinstance(v, bool):
            key.append((1, "num", v))
        else:
            key.append((1, type(v).__name__, v))
    return tuple(key)


def ours_rows(s, sql):
    """The rows of our result as tuples of Python values."""
    t = s.sql(sql)
    cols = [c.to_pylist() for c in t.columns]
    return [tuple(_norm(c[i]) for c in cols) for i in range(t.num_rows)]


def duck_rows(con, sql):
    """DuckDB's rows for sql, as tuples of Python values."""
    return [tuple(_norm(v) for v in r) for r in con.execute(sql).fetchall()]


def same_value(a, b):
    a, b = _norm(a), _norm(b)
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        if isinstance(a, bool) or isinstance(b, bool):
            return False
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=REL_TOL)
    return a == b


def differences(got, want, ordered=False, limit=5):
    """Lines saying where got and want (lists of row tuples) differ; empty
    when they agree."""
    if not ordered:
        got, want = sorted(got, key=_sort_key), sorted(want, key=_sort_key)
    if len(got) != len(want):
        return [f"{len(got)} rows, want {len(want)}",
                f" got: {got[:limit]}", f"want: {want[:limit]}"]
    bad = []
    for i, (rg, rw) in enumerate(zip(got, want)):
        if len(rg) != len(rw) or not all(same_value(x, y) for x, y in zip(rg, rw)):
            bad.append(f"row {i}: got {rg}, want {rw}")
            if len(bad) >= limit:
                break
    return bad


def check(s, con, sql, ordered=False, want=None, **kv):
    """Asserts that our rows for sql (under SET kv) are DuckDB's (want:
    DuckDB's rows when the caller already has them)."""
    if want is None:
        want = duck_rows(con, sql)
    with settings(s, **kv):
        got = ours_rows(s, sql)
    bad = differences(got, want, ordered)
    where = ", ".join(f"{k}={v}" for k, v in kv.items())
    assert not bad, f"{sql}" + (f" ({where})" if where else "") + "\n" + "\n".join(bad)

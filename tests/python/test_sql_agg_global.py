"""Global aggregates (no GROUP BY) on their own paths (exec/agg.c
update_global, count_known; docs/executor.md): count(*), count(x) and
sum/avg of int32, int64, float64 and decimals summed straight over the
column vectors (decimals within 64 bits in a register, wider ones through
the checked per-row loop), serially; count(*) alone over a table scan
without filter or deletes from the data files' record counts.  Results are
compared with DuckDB over the same rows (never with our own output): NULLs,
an all-NULL column, int64 and decimal(18,s) sums past 2^63 (the result is
numeric(38)), decimal(38,s) values wider than 64 bits, an empty table, a
table with deletes, filters, several files, 1 and 2 threads."""
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from conftest import require_module

duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")

from sqlsession import Session  # noqa: E402

N = 30_000
FILES = 5


def _data():
    rng = np.random.default_rng(13)
    nul = rng.random(N) < 0.15
    big = (1 << 62) + rng.integers(0, 1 << 40, N)          # int64 sums pass 2^63
    d18 = rng.integers(10**17, 10**18 - 1, N)              # decimal(18,2) near the int64 limit
    wide = [None if m else Decimal(int(v) * 10**22 + 7).scaleb(-3)
            for v, m in zip(rng.integers(-10**12, 10**12, N).tolist(), rng.random(N) < 0.1)]
    small = [None if m else Decimal(int(v)).scaleb(-3)     # decimal(38,3) values within 64 bits
             for v, m in zip(rng.integers(-10**9, 10**9, N).tolist(), nul)]
    return pa.table({
        "k": pa.array(np.arange(N, dtype=np.int64)),
        "i32": pa.array(rng.integers(-2**31, 2**31 - 1, N).astype(np.int32), mask=nul),
        "i64": pa.array(big.astype(np.int64)),
        "i64n": pa.array(-big.astype(np.int64), mask=~nul),
        "f": pa.array(rng.integers(-10**6, 10**6, N) / 64.0, pa.float64(), mask=rng.random(N) < 0.2),
        "d18": pa.array([Decimal(int(v)).scaleb(-2) for v in d18.tolist()], pa.decimal128(18, 2)),
        "d18n": pa.array([None if m else Decimal(-int(v)).scaleb(-2) for v, m in zip(d18.tolist(), nul)],
                         pa.decimal128(18, 2)),
        "dw": pa.array(wide, pa.decimal128(38, 3)),
        "ds": pa.array(small, pa.decimal128(38, 3)),
        "nn": pa.array([None] * N, pa.int64()),
        "s": pa.array([f"v{v}" for v in rng.integers(0, 100, N)], pa.string()),
    })


def _table(path, data, files):
    t = hdb.Table(str(path))
    per = max(1, -(-data.num_rows // files))
    for off in range(0, data.num_rows, per):
        t.write_arrow(data.slice(off, per))
        t.commit()
    return t


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("aggglobal")
    data = _data()
    _table(root / "t", data, FILES)
    # deletes: merge-on-read position deletes over two of the files
    d = _table(root / "tdel", data, FILES)
    d.delete("k % 7 = 3")
    d.delete("k >= 20000 AND k < 21000")
    keep = [k % 7 != 3 and not (20000 <= k < 21000) for k in range(N)]
    empty = data.slice(0, 0)
    te = hdb.Table(str(root / "tempty"))
    te.write_arrow(empty)
    te.commit()
    s = Session()
    for name in ("t", "tdel", "tempty"):
        s.register(name, str(root / name))
    con = duckdb.connect()
    con.register("t", data)
    con.register("tdel", data.filter(pa.array(keep)))
    con.register("tempty", empty)
    yield s, con
    s.close()
    con.close()


def _norm(v):
    return float(v) if isinstance(v, float) else v


def _same(x, y):
    if isinstance(x, float) and isinstance(y, float):
        return x == y or math.isclose(x, y, rel_tol=1e-12)
    if isinstance(x, Decimal) and isinstance(y, float):   # DuckDB's avg of decimals
        return math.isclose(float(x), y, rel_tol=1e-12)
    if isinstance(x, float) and isinstance(y, Decimal):
        return math.isclose(x, float(y), rel_tol=1e-12)
    if isinstance(x, Decimal) and isinstance(y, (int, Decimal)):
        return x == y
    return x == y


def _check(s, con, sql, threads):
    want = con.execute(sql).fetchall()
    s.sql(f"SET threads = {threads}")
    try:
        t = s.sql(sql)
    finally:
        s.sql("RESET threads")
    got = [tuple(c[i] for c in (col.to_pylist() for col in t.columns)) for i in range(t.num_rows)]
    assert len(got) == len(want) == 1, (sql, got, want)
    for x, y in zip(got[0], want[0]):
        assert _same(x, y), f"{sql}\n got: {got}\nwant: {want}"


AGGS = [
    "sum(i32), count(*), count(i32), avg(i32)",
    "sum(i64), sum(i64n), count(i64n), avg(k)",
    "sum(d18), sum(d18n), avg(d18), count(d18n)",
    "sum(dw), sum(ds), count(dw), avg(ds)",
    "sum(f), avg(f), count(f), count(*)",
    "sum(nn), count(nn), avg(nn), count(*)",
    # beside aggregates the fast path does not cover (per-row loops, group ids)
    "sum(d18), min(i32), max(d18), count(DISTINCT s), sum(i32), count(s)",
    "count(*)",
    "count(*), count(*)",
]
TABLES = ["t", "tdel", "tempty"]
WHERES = ["", " WHERE k % 3 = 1", " WHERE i32 > 0 AND f IS NOT NULL", " WHERE k < 0"]


@pytest.mark.parametrize("aggs", AGGS)
@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("threads", [1, 2])
def test_global_aggregates_match_duckdb(env, aggs, table, threads):
    s, con = env
    _check(s, con, f"SELECT {aggs} FROM {table}", threads)


@pytest.mark.parametrize("aggs", AGGS)
@pytest.mark.parametrize("where", WHERES[1:])
def test_global_aggregates_filtered_match_duckdb(env, aggs, where):
    s, con = env
    for table in ("t", "tdel"):
        _check(s, con, f"SELECT {aggs} FROM {table}{where}", 2)


def test_count_star_from_record_counts(env):
    """count(*) alone over a whole table is answered from the data files'
    record counts; not with deletes or a filter (the rows are read)."""
    s, con = env
    for sql, counted in [("SELECT count(*) FROM t", True),
                         ("SELECT count(*) FROM tempty", True),
                         ("SELECT count(*) FROM tdel", False),
                         ("SELECT count(*) FROM t WHERE k > 10", False),
                         ("SELECT count(*), sum(i32) FROM t", False)]:
        plan = "\n".join(s.sql("EXPLAIN ANALYZE " + sql).column(0).to_pylist())
        assert ("record counts" in plan) == counted, plan
        _check(s, con, sql, 2)


def test_decimal_sum_overflow_is_an_error(env, tmp_path):
    """A sum past numeric(38)'s 128 bits fails (22003 in PostgreSQL's terms,
    DuckDB: an overflow error) on the fast path too, not a wrapped value."""
    s, con = env
    v = Decimal(10**37 * 9)
    data = pa.table({"d": pa.array([v] * 40, pa.decimal128(38, 0))})
    _table(tmp_path / "ov", data, 2)
    s.register("ov", str(tmp_path / "ov"))
    con.register("ov", data)
    with pytest.raises(Exception):
        con.execute("SELECT sum(d) FROM ov").fetchall()
    with pytest.raises(Exception) as e:
        s.sql("SELECT sum(d) FROM ov")
    assert "overflow" in str(e.value).lower()


def test_scan_errors_keep_their_sqlstate(env):
    """The executor takes the table scan's batches and errors as they are
    (hs_arrow_own_source), so an error of a filter evaluated inside the
    scan keeps its SQLSTATE: division_by_zero is 22012 in PostgreSQL's
    errcodes (it came back as "Arrow stream get_next failed" before)."""
    s, con = env
    with pytest.raises(Exception):
        con.execute("SELECT 1 // (k - k) FROM t").fetchall()   # DuckDB: an error too
    with pytest.raises(Exception) as e:
        s.sql("SELECT count(*) FROM t WHERE 1 / (k - k) > 0")
    assert getattr(e.value, "sqlstate", None) == "22012", e.value
    assert "Arrow stream" not in str(e.value)

"""Intervals as values, differentially against PostgreSQL 15 (the reference
server of ../shared/oracles/postgres-pgvector.sh, fixture shared with
test_sql_fn_pg.py).

Each query runs on both engines.  PostgreSQL's rows come back as JSON
(json_agg: an interval is its IntervalStyle postgres text), ours as Arrow:
an interval is month_day_nano.  PostgreSQL's text is read back into
(months, days, microseconds) here, independently of our formatter, and
  * parts must match exactly, except where the query names a column "s_*":
    there only the span must match (months as 30 days, days as 24 hours),
    because PostgreSQL picks any one of equal intervals (the key of a group
    of '1 mon' and '30 days', min/max ties);
  * "t_*" columns are text (our formatter against PostgreSQL's);
  * row order must match (every ORDER BY here is total);
  * when one engine fails, both must, with the same SQLSTATE class (the
    codes themselves agree except where noted: stddev(interval) is
    PostgreSQL's 42883, ours the 42846 of its cast to double).
"""
import random
import re

import pyarrow as pa
import pytest

from test_sql_fn_pg import Reference, parse_pg_interval as parse_pg  # oracle checks run there

USECS_DAY = 86400 * 1_000_000


@pytest.fixture(scope="module")
def ref():
    r = Reference()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def ours():
    import sqlsession
    s = sqlsession.Session()
    yield s
    s.close()


def span(p):
    return (p[0] * 30 + p[1]) * USECS_DAY + p[2]


def run_ours(sess, q):
    import sqlsession
    try:
        t = sess.sql(q)
    except sqlsession.SqlError as e:
        return ("ERR", e.sqlstate, str(e))
    return ("OK", t)


def ours_value(v, typ):
    if v is None:
        return None
    if pa.types.is_interval(typ):
        assert v.nanoseconds % 1000 == 0
        return ("iv", (v.months, v.days, v.nanoseconds // 1000))
    return v


def pg_value(v, name):
    if v is None:
        return None
    if isinstance(v, str) and not name.startswith("t_") and (
            re.fullmatch(r"([+-]?\d+ (years?|mons?|days?) ?)*([+-]?\d+:\d\d:\d\d(\.\d+)?)?", v)):
        return ("iv", parse_pg(v))
    return v


def same(pg, ov, name):
    if pg is None or ov is None:
        return pg is None and ov is None
    if isinstance(pg, tuple) and isinstance(ov, tuple):
        if name.startswith("s_"):
            return span(pg[1]) == span(ov[1])
        return pg == ov
    if isinstance(pg, float) or isinstance(ov, float):
        return abs(float(pg) - float(ov)) <= 1e-9 * max(1.0, abs(float(pg)))
    return pg == ov


def compare(ref, ours, queries):
    expect = ref.run_many(queries, fn="tryr")
    bad = []
    for q, pg in zip(queries, expect):
        got = run_ours(ours, q)
        if pg[0] == "ERR" or got[0] == "ERR":
            if pg[0] != got[0] or pg[1][:2] != got[1][:2]:
                bad.append(f"{q}\n   PostgreSQL {pg[:2]} {pg[2] if pg[0] == 'ERR' else ''}\n   ours {got[:2]} "
                           f"{got[2] if got[0] == 'ERR' else ''}")
            continue
        t = got[1]
        rows = pg[1]
        names = t.schema.names
        if len(rows) != t.num_rows:
            bad.append(f"{q}\n   PostgreSQL {len(rows)} rows, ours {t.num_rows}: {rows[:5]} / "
                       f"{t.slice(0, 5).to_pylist()}")
            continue
        cols = [[ours_value(v, t.schema.field(i).type) for v in t.column(i).to_pylist()]
                for i in range(t.num_columns)]
        for r, pr in enumerate(rows):
            for i, name in enumerate(names):
                pv = pg_value(pr[name], name)
                if not same(pv, cols[i][r], name):
                    bad.append(f"{q}\n   row {r + 1} column {name}: PostgreSQL {pr[name]!r}, ours {cols[i][r]!r}")
                    break
            else:
                continue
            break
    assert not bad, f"{len(bad)} of {len(queries)} differ:\n" + "\n".join(bad[:20])


EDGE = ["1 mon", "30 days", "720 hours", "1 mon -1 day", "29 days", "-1 mon", "-30 days",
        "1 year", "360 days", "0", "00:00:00.000001", "-00:00:00.000001", "1 day -24 hours",
        "1 mon -30 days", "2 mons 3 days 04:05:06.789", "-2 mons +3 days -04:05:06.5",
        "100 years 1 us", "-178956970 years -8 mons", "178956970 years 7 mons",
        "2147483647 days", "-2147483648 days", "2562047 hours", "-2562047 hours",
        "1 day 02:30:00", "26 hours", "1 day 2 hours", "1 mon 1 day", "31 days",
        "3 days ago", "1.5 hours", "12 mons", "-0.5 seconds"]


def values_sql(rnd, n):
    rows = []
    for k in range(1, n + 1):
        if k <= len(EDGE):
            lit = f"interval '{EDGE[k - 1]}'"
        elif rnd.random() < 0.08:
            lit = "NULL::interval"
        else:
            m = rnd.choice([0, 0, rnd.randint(-30, 30), rnd.randint(-3000, 3000)])
            d = rnd.choice([0, rnd.randint(-60, 60), 30 * rnd.randint(-3, 3)])
            h = rnd.choice([0, rnd.randint(-50, 50), 24 * rnd.randint(-3, 3)])
            us = rnd.choice([0, rnd.randint(-10**9, 10**9), rnd.randint(-999, 999)])
            lit = f"interval '{m} mons {d} days {h} hours {us} microseconds'"
        rows.append(f"({k}, {k % 5}, {lit})")
    return "WITH v(k, g, iv) AS (VALUES " + ", ".join(rows) + ") "


QUERIES = [
    # order (ties broken by k), NULLs first/last, text output
    "SELECT k, iv, iv::text AS t_iv FROM v ORDER BY iv, k",
    "SELECT k, iv FROM v ORDER BY iv DESC, k",
    "SELECT k, iv FROM v ORDER BY iv NULLS FIRST, k DESC",
    "SELECT k, iv FROM v ORDER BY iv DESC NULLS LAST, k LIMIT 7",
    # grouping and DISTINCT by the span ('1 mon' = '30 days')
    "SELECT iv AS s_iv, count(*) AS n, min(k) AS mk FROM v GROUP BY iv ORDER BY min(k)",
    "SELECT DISTINCT iv AS s_iv FROM v ORDER BY iv",
    "SELECT count(DISTINCT iv) AS n, count(iv) AS c, count(*) AS a FROM v",
    "SELECT g, count(DISTINCT iv) AS n FROM v GROUP BY g ORDER BY g",
    # aggregates
    "SELECT g, min(iv) AS s_min, max(iv) AS s_max, count(iv) AS c FROM v GROUP BY g ORDER BY g",
    "SELECT min(iv) AS s_min, max(iv) AS s_max FROM v",
    "SELECT g, sum(iv) AS sm, avg(iv) AS av FROM v WHERE abs(extract(epoch from iv)) < 1e9 "
    "GROUP BY g ORDER BY g",
    "SELECT g, avg(iv) AS av FROM v WHERE k > 40 GROUP BY g ORDER BY g",
    "SELECT sum(iv) AS sm FROM v WHERE iv IS NULL",
    "SELECT avg(iv) AS av FROM v WHERE k < 0",
    # comparisons and joins
    "SELECT k FROM v WHERE iv = interval '1 mon' ORDER BY k",
    "SELECT k FROM v WHERE iv > interval '29 days 23:59:59' AND iv <= interval '1 mon 1 day' ORDER BY k",
    "SELECT k FROM v WHERE iv BETWEEN interval '-1 day' AND interval '1 day' ORDER BY k",
    "SELECT a.k AS ak, b.k AS bk FROM v a JOIN v b ON a.iv = b.iv WHERE a.k < b.k ORDER BY a.k, b.k",
    "SELECT k, iv IN (interval '720 hours', interval '1 year') AS x FROM v ORDER BY k",
    # arithmetic on columns
    "SELECT k, iv * 2 AS a, iv / 3 AS b, -iv AS c, iv + interval '1 mon -1 day' AS d FROM v "
    "WHERE abs(extract(epoch from iv)) < 1e9 ORDER BY k",
    "SELECT k, iv * 1.5 AS a, iv * -0.25 AS b, iv / 7 AS c FROM v "
    "WHERE abs(extract(epoch from iv)) < 1e9 ORDER BY k",
    "SELECT k, extract(day from iv) AS d, extract(hour from iv) AS h, extract(month from iv) AS m, "
    "extract(year from iv) AS y, extract(minute from iv) AS mi FROM v ORDER BY k",
    "SELECT k, date_part('day', iv) AS d, date_part('epoch', iv) AS e FROM v ORDER BY k",
    "SELECT k, justify_interval(iv) AS j FROM v WHERE abs(extract(epoch from iv)) < 1e9 ORDER BY k",
    # timestamp - timestamp, aggregated and ordered
    "SELECT k, (TIMESTAMP '2024-01-31 10:00' + iv) - TIMESTAMP '2024-01-01' AS d FROM v "
    "WHERE abs(extract(epoch from iv)) < 1e9 ORDER BY d, k",
    "SELECT g, sum((TIMESTAMP '2024-01-31 10:00' + iv) - TIMESTAMP '2024-01-01') AS sm, "
    "avg(TIMESTAMP '2024-03-01' - (TIMESTAMP '2024-01-31 10:00' + iv)) AS a FROM v "
    "WHERE abs(extract(epoch from iv)) < 1e9 GROUP BY g ORDER BY g",
    # CASE / COALESCE keep the type
    "SELECT k, coalesce(iv, interval '5 mins') AS c, CASE WHEN k % 2 = 0 THEN iv END AS e FROM v ORDER BY k",
    # set operations dedupe by the span
    "SELECT count(*) AS n FROM (SELECT iv FROM v UNION SELECT interval '30 days') u",
]

CONST = [
    # out of range: 22008 (arithmetic), 22015 (field value)
    "SELECT interval '2147483647 mons' + interval '1 mon' AS x",
    "SELECT interval '-2147483648 days' - interval '1 day' AS x",
    "SELECT -interval '-178956970 years -8 mons' AS x",
    "SELECT interval '2147483647 days' * 2 AS x",
    "SELECT interval '1 day' * 1e300 AS x",
    "SELECT interval '3000000000 days' AS x",
    "SELECT interval '2147483647 days 1 day' AS x",
    "SELECT (interval '9223372036854775807 microseconds')::text AS t_x",
    "SELECT interval '9223372036854775808 microseconds' AS x",
    "SELECT (interval '-2147483648 mons ago')::text AS t_x",
    "SELECT (interval '-2562047788:00:00')::text AS t_x, (interval '2562047788:00:54.775807')::text AS t_y",
    "SELECT interval '2562047788:00:54.775808' AS x",
    "SELECT (interval '1 day' * 2147483647)::text AS t_x",
    "SELECT (interval '1 mon 1 day' * 0.3333333)::text AS t_x, (interval '7 mons' / 3.5)::text AS t_y",
    "SELECT sum(x) AS sm FROM (VALUES (interval '2000000000 days'), (interval '2000000000 days')) a(x)",
    "SELECT avg(x) AS av FROM (VALUES (interval '2000000000 mons'), (interval '2000000000 mons')) a(x)",
    "SELECT interval '1 day' / 0 AS x",
    # avg rounding (interval_div of the sum by the count)
    "SELECT avg(x) AS a FROM (VALUES (interval '1 mon'), (interval '1 day'), (interval '1 us')) a(x)",
    "SELECT avg(x) AS a FROM (VALUES (interval '1 mon'), (interval '2 mons'), (interval '2 mons')) a(x)",
    "SELECT avg(x) AS a FROM (VALUES (interval '1 day'), (interval '0'), (interval '0'), (NULL)) a(x)",
    "SELECT avg(x) AS a FROM (VALUES (interval '-1 mon 1 us'), (interval '1 day -1 us'), "
    "(interval '7 mons 3 days'), (interval '00:00:00.000001')) a(x)",
    "SELECT sum(x) AS a FROM (VALUES (interval '1 mon'), (interval '-30 days'), (interval '-1 mon 30 days')) a(x)",
    # functions that do not take intervals
    "SELECT stddev(x) AS a FROM (VALUES (interval '1 mon')) a(x)",
    "SELECT interval '1 day' + 1 AS x",
    # ordering of equal spans is a tie: ORDER BY a second key
    "SELECT x AS s_x, y FROM (VALUES (interval '1 mon', 2), (interval '30 days', 1), "
    "(interval '720:00:00', 3), (interval '29 days 24 hours', 0)) a(x, y) ORDER BY x, y",
    "SELECT x AS s_x, count(*) AS n FROM (VALUES (interval '1 mon'), (interval '30 days'), "
    "(interval '720:00:00'), (interval '1 mon 1 us')) a(x) GROUP BY x ORDER BY x",
    # PostgreSQL's extremes of the time part (beyond Arrow's nanoseconds: text)
    "SELECT x::text AS t_x FROM (VALUES (interval '2562047788 hours'), (interval '-2562047788 hours'), "
    "(interval '1 mon'), (interval '-2147483648 mons')) a(x) ORDER BY x",
    "SELECT (interval '1 mon')::text AS t_a, (interval '-1 year +2 mons -3 days 04:05:06.000001')::text AS t_b",
    "SELECT interval '1 mon' = interval '30 days' AS a, interval '1 mon' < interval '30 days 1 us' AS b, "
    "interval '1 year' > interval '360 days' AS c, interval '1 year' <> interval '365 days' AS d",
    "SELECT TIMESTAMP '2024-03-01' - TIMESTAMP '2023-02-28 12:00' AS x, "
    "DATE '2024-03-01' - DATE '2024-02-01' AS y",
]


def test_random_and_edge_intervals(ref, ours):
    rnd = random.Random(20261206)
    for _ in range(3):
        w = values_sql(rnd, 60)
        compare(ref, ours, [w + q for q in QUERIES])


def test_constant_cases(ref, ours):
    compare(ref, ours, CONST)


def test_arrow_mapping(ours):
    """Interval results are Arrow month_day_nano (the Python Session too)."""
    t = ours.sql("SELECT interval '1 year 2 mons -3 days 04:05:06.5' AS a, "
                 "TIMESTAMP '2024-01-02' - TIMESTAMP '2024-01-01 12:00' AS b")
    assert t.schema.field("a").type == pa.month_day_nano_interval()
    assert t.column("a").to_pylist() == [pa.scalar((14, -3, 14706500000000),
                                                   type=pa.month_day_nano_interval()).as_py()]
    assert t.column("b")[0].as_py().nanoseconds == 12 * 3600 * 10**9
    import hyperstreamdb
    s = hyperstreamdb.Session()
    r = s.sql("SELECT x FROM (VALUES (interval '1 mon'), (interval '2 days'), (NULL)) a(x) ORDER BY x")
    tab = r.to_arrow()
    assert tab.schema.field("x").type == pa.month_day_nano_interval()
    got = [None if v is None else (v.months, v.days, v.nanoseconds) for v in tab.column("x").to_pylist()]
    assert got == [(0, 2, 0), (1, 0, 0), None]


def test_time_part_beyond_arrow_nanoseconds(ours):
    """PostgreSQL's microseconds reach further than Arrow's int64
    nanoseconds: such a value cannot leave as month_day_nano (a clear
    error from the result stream), while its text can."""
    import sqlsession
    with pytest.raises(sqlsession.SqlError, match="month_day_nano") as ei:
        ours.sql("SELECT interval '2562047788 hours' AS x")
    assert ei.value.sqlstate == "22000" and ei.value.status == "HS_INVALID"
    t = ours.sql("SELECT (interval '2562047788 hours')::text AS x")
    assert t.column(0).to_pylist() == ["2562047788:00:00"]

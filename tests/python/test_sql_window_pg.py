"""Window frames, named windows and grouping sets against PostgreSQL 15
(issue 13; the reference server of ../shared/oracles/postgres-pgvector.sh,
started by test_sql_fn_pg.Reference).

The same table w is written to both engines:

    w(id, g, x, y, n, f, d, ts, txt)   id unique, g a partition with NULLs,
                                     x an integer with ties and NULLs, y an
                                     integer without ties, n numeric(10,2),
                                     f double precision, d date, ts timestamp,
                                     txt text
    e                                the same columns, no rows

Covered: RANGE BETWEEN <offset> PRECEDING/FOLLOWING over integer, numeric,
double, date and timestamp keys (intervals), ASC/DESC, NULLS FIRST/LAST,
GROUPS frames, EXCLUDE CURRENT ROW / GROUP / TIES / NO OTHERS, for count,
sum, avg, min, max, first_value, last_value, nth_value; named windows;
aggregates with FILTER as window functions; GROUPING() and several
grouping sets in one GROUP BY; the errors with their SQLSTATE.

Every query orders its rows completely (ORDER BY id or all grouping
columns), and the value functions (first/last/nth_value) only read frames
of an order without ties, so each result is determined.  Values compare
exactly except doubles and numerics (1e-9 relative: avg is numeric in
PostgreSQL, ours prints fewer digits of it).
"""
import datetime
import decimal
import itertools
import random
import time

import pyarrow as pa
import pytest

import hyperstreamdb as hdb
from test_sql_fn_pg import Reference

N = 60


def _rows():
    rng = random.Random(13)
    ys = rng.sample(range(-200, 200), N)
    rows = []
    for i in range(N):
        rows.append({
            "id": i,
            "g": rng.choice([None, 1, 2, 2, 3, 3, 3]),
            "x": rng.choice([None, -5, 0, 1, 2, 2, 3, 7, 7, 7, 10, 15, 40]),
            "y": ys[i],
            "n": rng.choice([None, decimal.Decimal("1.25"), decimal.Decimal("-3.50"),
                             decimal.Decimal("10.00"), decimal.Decimal("2.75")]),
            "f": rng.choice([None, 0.5, 1.25, -2.0, 8.0, 3.75, 100.5]),
            "d": rng.choice([None, datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randrange(90))]),
            "ts": rng.choice([None, datetime.datetime(2024, 2, 27, 12) + datetime.timedelta(hours=rng.randrange(200))]),
            "txt": rng.choice([None, "a", "b", "cc"]),
        })
    return rows


COLS = [("id", pa.int32(), "int"), ("g", pa.int32(), "int"), ("x", pa.int32(), "int"),
        ("y", pa.int64(), "bigint"), ("n", pa.decimal128(10, 2), "numeric(10,2)"),
        ("f", pa.float64(), "float8"), ("d", pa.date32(), "date"),
        ("ts", pa.timestamp("us"), "timestamp"), ("txt", pa.string(), "text")]


def _lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, (datetime.date, datetime.datetime)):
        return "'" + v.isoformat() + "'"
    return str(v)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    import sqlsession
    rows = _rows()
    root = tmp_path_factory.mktemp("win")
    s = sqlsession.Session()
    for name, rs in (("w", rows), ("e", [])):
        t = hdb.Table(str(root / name))
        t.write_arrow(pa.table({c: pa.array([r[c] for r in rs], ty) for c, ty, _ in COLS}))
        t.commit()
        s.register(name, str(root / name))
    ref = Reference()
    cols = ", ".join(f"{c} {pg}" for c, _, pg in COLS)
    vals = ",".join("(" + ",".join(_lit(r[c]) for c, _, _ in COLS) + ")" for r in rows)
    ref._run(f"CREATE TABLE w ({cols}); INSERT INTO w VALUES {vals}; CREATE TABLE e ({cols});")
    yield s, ref
    s.close()
    ref.stop()


def _norm(v):
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float, decimal.Decimal)):
        return float(v)
    if isinstance(v, datetime.datetime):
        return v.replace(tzinfo=None).isoformat()
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, str) and len(v) == 10 and v[4:5] == "-":
        return v
    if isinstance(v, str):
        try:
            return datetime.datetime.fromisoformat(v).replace(tzinfo=None).isoformat()
        except ValueError:
            return v
    return v


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    return a == b


def _ours(sess, q):
    import sqlsession
    try:
        t = sess.sql(q)
    except sqlsession.SqlError as e:
        return ("ERR", e.sqlstate, str(e))
    return ("OK", [tuple(_norm(v) for v in r.values()) for r in t.to_pylist()])


def compare(env, queries):
    s, ref = env
    expect = ref.run_many(queries, fn="tryr")
    bad = []
    for q, pg in zip(queries, expect):
        got = _ours(s, q)
        if pg[0] == "ERR" or got[0] == "ERR":
            if pg[0] != got[0] or pg[1] != got[1]:
                bad.append(f"{q}\n   PostgreSQL {pg[:2]} {pg[2] if pg[0] == 'ERR' else ''}\n"
                           f"   ours {got[:2]} {got[2] if got[0] == 'ERR' else ''}")
            continue
        prow = [tuple(_norm(v) for v in r.values()) for r in pg[1]]
        orows = got[1]
        ok = len(prow) == len(orows) and all(
            len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b)) for a, b in zip(prow, orows))
        if not ok:
            diff = [(a, b) for a, b in zip(prow, orows) if a != b][:4]
            bad.append(f"{q}\n   PostgreSQL {len(prow)} rows, ours {len(orows)}; first differences {diff}")
    assert not bad, f"{len(bad)} of {len(queries)} differ:\n" + "\n".join(bad)


# ---- frames ----

AGGS = ["count(*)", "count(x)", "sum(x)", "avg(x)", "min(x)", "max(x)", "sum(n)", "sum(f)",
        "max(txt)"]
VALUE_FNS = ["first_value(id)", "last_value(id)", "nth_value(id, 2)"]
RANGE_FRAMES = [
    "RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING",
    "RANGE BETWEEN 10 PRECEDING AND 2 PRECEDING",
    "RANGE BETWEEN 3 FOLLOWING AND 20 FOLLOWING",
    "RANGE BETWEEN CURRENT ROW AND 7 FOLLOWING EXCLUDE TIES",
    "RANGE BETWEEN UNBOUNDED PRECEDING AND 3 FOLLOWING EXCLUDE GROUP",
    "RANGE BETWEEN 2 PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE CURRENT ROW",
    "RANGE 4 PRECEDING",
    "RANGE BETWEEN 0 PRECEDING AND 0 FOLLOWING EXCLUDE NO OTHERS",
]
GROUP_FRAMES = [
    "GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING",
    "GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING EXCLUDE CURRENT ROW",
    "GROUPS BETWEEN 1 FOLLOWING AND 3 FOLLOWING",
    "GROUPS BETWEEN 2 PRECEDING AND 1 PRECEDING EXCLUDE TIES",
    "GROUPS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE GROUP",
    "GROUPS 1 PRECEDING",
]
ROW_FRAMES = [
    "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW",
    "ROWS BETWEEN 2 FOLLOWING AND 1 FOLLOWING",
    "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE TIES",
    "ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING EXCLUDE GROUP",
    "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE TIES",
]
ORDERS = ["ORDER BY x", "ORDER BY x DESC", "ORDER BY x NULLS FIRST", "ORDER BY x DESC NULLS LAST",
          "PARTITION BY g ORDER BY x"]
# no ties: the value functions and ROWS frames are determined
UORDERS = ["ORDER BY y", "ORDER BY y DESC", "PARTITION BY g ORDER BY y DESC"]


def _q(exprs):
    sel = ", ".join(f"{e} AS c{i}" for i, e in enumerate(exprs))
    return f"SELECT id, {sel} FROM w ORDER BY id"


def test_range_and_groups_frames(env):
    qs = []
    for fr, o in itertools.product(RANGE_FRAMES + GROUP_FRAMES, ORDERS):
        qs.append(_q([f"{a} OVER ({o} {fr})" for a in AGGS]))
    for fr, o in itertools.product(RANGE_FRAMES + GROUP_FRAMES + ROW_FRAMES, UORDERS):
        qs.append(_q([f"{a} OVER ({o} {fr})" for a in AGGS + VALUE_FNS]))
    compare(env, qs)


OTHER_KEYS = [
    # numeric, double and temporal keys
    "sum(x) OVER (ORDER BY n RANGE BETWEEN 1.5 PRECEDING AND 1 FOLLOWING)",
    "count(*) OVER (ORDER BY n DESC RANGE BETWEEN 2 PRECEDING AND CURRENT ROW)",
    "sum(y) OVER (ORDER BY f RANGE BETWEEN 1.25 PRECEDING AND 4 FOLLOWING)",
    "max(y) OVER (ORDER BY f DESC NULLS LAST RANGE BETWEEN 2 PRECEDING AND 2.5 FOLLOWING EXCLUDE TIES)",
    "count(x) OVER (ORDER BY d RANGE BETWEEN '7 days' PRECEDING AND CURRENT ROW)",
    "sum(x) OVER (ORDER BY d RANGE BETWEEN INTERVAL '1 month' PRECEDING AND INTERVAL '3 days' FOLLOWING)",
    "min(y) OVER (ORDER BY d DESC RANGE BETWEEN '10 days' PRECEDING AND '1 day' FOLLOWING)",
    "count(*) OVER (PARTITION BY g ORDER BY ts RANGE BETWEEN '1 day' PRECEDING AND '12 hours' FOLLOWING)",
    "max(ts) OVER (ORDER BY ts DESC NULLS LAST RANGE BETWEEN INTERVAL '2 days 3 hours' PRECEDING AND CURRENT ROW)",
    "sum(x) OVER (ORDER BY y RANGE BETWEEN 50 PRECEDING AND 50 FOLLOWING)",
    "sum(x) OVER (ORDER BY x + 0.5 RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING)",
    "count(*) OVER (ORDER BY x RANGE BETWEEN 2147483647 PRECEDING AND 2147483647 FOLLOWING)",
    "count(*) OVER (ORDER BY y::smallint RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING)",
    "count(*) OVER (ORDER BY x RANGE BETWEEN 3::bigint PRECEDING AND 2::smallint FOLLOWING)",
    "avg(f) OVER (ORDER BY y ROWS BETWEEN 5 PRECEDING AND 5 FOLLOWING EXCLUDE CURRENT ROW)",
    "sum(n) OVER (PARTITION BY g ORDER BY x GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE GROUP)",
    "last_value(y) OVER (ORDER BY y RANGE BETWEEN 100 PRECEDING AND 20 PRECEDING)",
    "nth_value(y, 3) OVER (ORDER BY y DESC RANGE BETWEEN 40 PRECEDING AND 40 FOLLOWING EXCLUDE CURRENT ROW)",
    "first_value(y) OVER (ORDER BY y GROUPS BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE CURRENT ROW)",
    "row_number() OVER (ORDER BY y RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING)",
    "rank() OVER (ORDER BY x GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE GROUP)",
    "lag(y) OVER (ORDER BY y ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW)",
    "count(*) OVER (ORDER BY x RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) + sum(x) OVER (ORDER BY y ROWS UNBOUNDED PRECEDING)",
    # FILTER over a window
    "count(*) FILTER (WHERE x > 2) OVER (ORDER BY y)",
    "sum(x) FILTER (WHERE g = 2) OVER (PARTITION BY g ORDER BY y ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
    "avg(f) FILTER (WHERE x IS NOT NULL) OVER (ORDER BY x RANGE BETWEEN 3 PRECEDING AND 3 FOLLOWING)",
    "max(y) FILTER (WHERE txt = 'a') OVER ()",
    "min(d) FILTER (WHERE x < 7) OVER (ORDER BY y DESC)",
    "count(x) FILTER (WHERE y > 0) OVER (PARTITION BY g)",
    "avg(x) FILTER (WHERE y > 0) OVER (ORDER BY y ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING)",
    "sum(x) FILTER (WHERE x > 1) OVER w2",
    "first_value(x) FILTER (WHERE x > 1) OVER (ORDER BY y)",
    "row_number() FILTER (WHERE x > 1) OVER (ORDER BY y)",
]


def test_other_keys_and_filter(env):
    compare(env, [_q([e]) for e in OTHER_KEYS])


SPECIAL = ("WITH v(id, iv, f) AS (VALUES (1, INTERVAL '1 day', 1.0::float8), (2, INTERVAL '25 hours', "
           "'Infinity'), (3, INTERVAL '1 mon', '-Infinity'), (4, INTERVAL '30 days', 'NaN'), (5, NULL, NULL), "
           "(6, INTERVAL '2 days 3 hours', 2.5), (7, INTERVAL '-1 day', -0.5)) ")


def test_interval_keys_and_infinities(env):
    """Interval keys; NaN and infinite double keys and offsets (PostgreSQL's
    in_range_float8_float8: NaN sorts last, inf - inf admits every row but
    NaN)."""
    frames = ["RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING",
              "RANGE BETWEEN 'Infinity' PRECEDING AND 'Infinity' FOLLOWING",
              "RANGE BETWEEN 'Infinity' PRECEDING AND CURRENT ROW",
              "RANGE BETWEEN CURRENT ROW AND 'Infinity' FOLLOWING",
              "RANGE BETWEEN 'Infinity' FOLLOWING AND 'Infinity' FOLLOWING",
              "RANGE BETWEEN 0 PRECEDING AND 'Infinity' PRECEDING"]
    orders = ["ORDER BY f", "ORDER BY f DESC", "ORDER BY f NULLS FIRST", "ORDER BY f DESC NULLS LAST"]
    qs = [SPECIAL + f"SELECT id, count(*) OVER ({o} {fr}) AS c, sum(id) OVER ({o} {fr} EXCLUDE CURRENT ROW) AS e "
          "FROM v ORDER BY id" for fr in frames for o in orders]
    qs += [SPECIAL + f"SELECT id, count(*) OVER (ORDER BY iv{d} RANGE BETWEEN {a} AND {b}) AS c FROM v ORDER BY id"
           for d in ("", " DESC") for a, b in (("'1 day' PRECEDING", "'1 day' FOLLOWING"),
                                                ("CURRENT ROW", "'1 mon' FOLLOWING"),
                                                ("'25 hours' PRECEDING", "'1 hour' PRECEDING"))]
    tz = ("WITH v(id, t) AS (VALUES (1, '2024-03-09 12:00+00'::timestamptz), (2, '2024-03-10 11:30+00'), "
          "(3, '2024-03-10 12:30+00'), (4, NULL), (5, '2024-04-01 00:00+00'), (6, '2024-03-01 00:00+00')) ")
    qs += [tz + "SELECT id, count(*) OVER (ORDER BY t RANGE BETWEEN '1 day' PRECEDING AND CURRENT ROW) AS a, "
           "count(*) OVER (ORDER BY t DESC RANGE BETWEEN '1 mon' PRECEDING AND '1 day' FOLLOWING) AS b, "
           "max(id) OVER (ORDER BY t NULLS FIRST RANGE BETWEEN '23 hours' FOLLOWING AND '10 days' FOLLOWING "
           "EXCLUDE TIES) AS c FROM v ORDER BY id"]
    compare(env, qs)


def test_empty_table(env):
    compare(env, [
        "SELECT id, sum(x) OVER (ORDER BY x RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM e",
        "SELECT id, count(*) OVER (ORDER BY x GROUPS 1 PRECEDING EXCLUDE TIES) FROM e",
        # offsets are checked per partition: no rows, no error
        "SELECT id, sum(x) OVER (ORDER BY x RANGE BETWEEN -1 PRECEDING AND CURRENT ROW) FROM e",
        "SELECT id, sum(x) OVER w FROM e WINDOW w AS (ORDER BY y)",
    ])


NAMED = [
    "SELECT id, sum(x) OVER w AS a, count(*) OVER w AS b FROM w WINDOW w AS (PARTITION BY g ORDER BY y) ORDER BY id",
    "SELECT id, sum(x) OVER (w ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS a FROM w WINDOW w AS (ORDER BY y) ORDER BY id",
    "SELECT id, sum(x) OVER (w ORDER BY y) AS a FROM w WINDOW w AS (PARTITION BY g) ORDER BY id",
    "SELECT id, rank() OVER w2 AS a FROM w WINDOW w1 AS (PARTITION BY g), w2 AS (w1 ORDER BY x DESC) ORDER BY id",
    "SELECT id, sum(y) OVER w AS a FROM w WINDOW w AS (ORDER BY y RANGE BETWEEN 20 PRECEDING AND CURRENT ROW) ORDER BY id",
    "SELECT id, first_value(id) OVER (w GROUPS BETWEEN 1 FOLLOWING AND 2 FOLLOWING) AS a FROM w WINDOW w AS (ORDER BY y DESC) ORDER BY id",
    "SELECT id, row_number() OVER w AS a FROM w WINDOW w AS (ORDER BY y), unused AS (PARTITION BY g) ORDER BY id",
    "SELECT id, sum(x) OVER (w) AS a FROM w WINDOW w AS (PARTITION BY g ORDER BY y) ORDER BY id",
    "SELECT g, sum(sum(x)) OVER w AS a FROM w GROUP BY g WINDOW w AS (ORDER BY g NULLS FIRST) ORDER BY g NULLS FIRST",
    "SELECT id FROM w WINDOW w AS (ORDER BY y) ORDER BY row_number() OVER w DESC LIMIT 5",
]


def test_named_windows(env):
    compare(env, NAMED)


ERRORS = [
    # frames
    "SELECT sum(x) OVER (ORDER BY x, y RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY x RANGE BETWEEN -1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY x RANGE BETWEEN CURRENT ROW AND -2 FOLLOWING) FROM w",
    "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY x GROUPS BETWEEN CURRENT ROW AND -1 FOLLOWING) FROM w",
    "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN NULL PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY x RANGE BETWEEN NULL PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY d RANGE BETWEEN '-1 day' PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY f RANGE BETWEEN 'NaN' PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY x RANGE BETWEEN 1.5 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY txt RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY d RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY n RANGE BETWEEN 1.5::float8 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY x RANGE BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN CURRENT ROW AND UNBOUNDED PRECEDING) FROM w",
    "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM w",
    "SELECT sum(x) OVER (ORDER BY x ROWS UNBOUNDED FOLLOWING) FROM w",
    # offsets of other forms: '2' and 1::bigint are bigints, 1.5 rounds
    "SELECT id, sum(y) OVER (ORDER BY y ROWS BETWEEN '2' PRECEDING AND 1::bigint FOLLOWING) AS a FROM w ORDER BY id",
    "SELECT id, sum(y) OVER (ORDER BY y ROWS BETWEEN 1.5 PRECEDING AND 0.4 FOLLOWING) AS a FROM w ORDER BY id",
    "SELECT id, count(*) OVER (ORDER BY x GROUPS BETWEEN 2.5 PRECEDING AND '1' FOLLOWING) AS a FROM w ORDER BY id",
    "SELECT sum(x) OVER (ORDER BY x GROUPS BETWEEN 'x' PRECEDING AND CURRENT ROW) FROM w",
    # named windows
    "SELECT sum(x) OVER nosuch FROM w",
    "SELECT sum(x) OVER (nosuch ORDER BY y) FROM w",
    "SELECT sum(x) OVER (w1 PARTITION BY g) FROM w WINDOW w1 AS (ORDER BY y)",
    "SELECT sum(x) OVER (w1 ORDER BY x) FROM w WINDOW w1 AS (ORDER BY y)",
    "SELECT sum(x) OVER (w1) FROM w WINDOW w1 AS (ORDER BY y ROWS 1 PRECEDING)",
    "SELECT sum(x) OVER (w1 ROWS 2 PRECEDING) FROM w WINDOW w1 AS (ORDER BY y ROWS 1 PRECEDING)",
    "SELECT sum(x) OVER w1 FROM w WINDOW w1 AS (ORDER BY y), w1 AS (ORDER BY x)",
    "SELECT sum(x) OVER w2 FROM w WINDOW w2 AS (w3 ORDER BY y), w3 AS (PARTITION BY g)",
    "SELECT 1 FROM w WINDOW w1 AS (nosuch)",
    # grouping
    "SELECT GROUPING(x) FROM w",
    "SELECT g, GROUPING(x) FROM w GROUP BY g",
    "SELECT g FROM w GROUP BY g HAVING GROUPING(y) = 0",
]


def test_errors(env):
    compare(env, ERRORS)


GROUPING = [
    "SELECT g, x, GROUPING(g) AS a, GROUPING(x) AS b, GROUPING(g, x) AS c, count(*) AS n FROM w "
    "GROUP BY ROLLUP(g, x) ORDER BY g NULLS FIRST, x NULLS FIRST, c",
    "SELECT g, x, GROUPING(x, g) AS c, sum(y) AS n FROM w GROUP BY CUBE(g, x) "
    "ORDER BY c, g NULLS FIRST, x NULLS FIRST",
    "SELECT g, txt, GROUPING(g, txt) AS c, count(*) AS n FROM w GROUP BY ROLLUP(g), CUBE(txt) "
    "ORDER BY c, g NULLS FIRST, txt NULLS FIRST",
    "SELECT g, txt, x, count(*) AS n FROM w GROUP BY GROUPING SETS ((g), (txt)), GROUPING SETS ((x), ()) "
    "ORDER BY GROUPING(g, txt, x), g NULLS FIRST, txt NULLS FIRST, x NULLS FIRST",
    "SELECT g, txt, count(*) AS n FROM w GROUP BY ROLLUP(g), ROLLUP(txt) "
    "ORDER BY GROUPING(g), GROUPING(txt), g NULLS FIRST, txt NULLS FIRST",
    "SELECT g, x, count(*) AS n FROM w GROUP BY g, ROLLUP(x), CUBE(txt) "
    "HAVING GROUPING(x) = 1 ORDER BY g NULLS FIRST, x NULLS FIRST, n",
    "SELECT g, sum(x) AS n, GROUPING(g) AS gg FROM w GROUP BY ROLLUP(g) HAVING GROUPING(g) = 1 OR sum(x) > 50 "
    "ORDER BY g NULLS FIRST, gg",
    "SELECT g, GROUPING(g) * 10 + count(*) AS n FROM w GROUP BY GROUPING SETS ((g), ()) "
    "ORDER BY GROUPING(g) DESC, g NULLS FIRST",
    "SELECT g, GROUPING(g) AS a FROM w GROUP BY g ORDER BY g NULLS FIRST",
    "SELECT g, x, count(*) AS n FROM w GROUP BY CUBE(g), CUBE(x) ORDER BY GROUPING(g, x), g NULLS FIRST, x NULLS FIRST",
    "SELECT g, txt, count(*) AS n FROM w GROUP BY GROUPING SETS (g, txt), ROLLUP(g) "
    "ORDER BY GROUPING(g, txt), g NULLS FIRST, txt NULLS FIRST, n",
    # GROUP BY DISTINCT: equal sets once
    "SELECT g, x, count(*) AS n FROM w GROUP BY DISTINCT ROLLUP(g), ROLLUP(g, x) "
    "ORDER BY g NULLS FIRST, x NULLS FIRST, n",
    "SELECT g, x, count(*) AS n FROM w GROUP BY DISTINCT g, CUBE(g, x) ORDER BY g NULLS FIRST, x NULLS FIRST, n",
    "SELECT g, x, count(*) AS n FROM w GROUP BY ROLLUP(g), ROLLUP(g, x) ORDER BY g NULLS FIRST, x NULLS FIRST, n",
    # ROLLUP of a parenthesised unit, nested sets, window functions over grouping sets
    "SELECT g, x, txt, count(*) AS n FROM w GROUP BY ROLLUP((g, x), txt) "
    "ORDER BY g NULLS FIRST, x NULLS FIRST, txt NULLS FIRST, n",
    "SELECT g, x, count(*) AS n FROM w GROUP BY GROUPING SETS (g, ROLLUP(x), ()) "
    "ORDER BY g NULLS FIRST, x NULLS FIRST, n",
    "SELECT g, sum(x) AS n, rank() OVER (ORDER BY sum(x) DESC NULLS LAST) AS r FROM w GROUP BY g "
    "ORDER BY g NULLS FIRST, n",
    # DISTINCT over all the sets together
    "SELECT DISTINCT g FROM w GROUP BY ROLLUP(g, x) ORDER BY g NULLS FIRST",
    "SELECT DISTINCT g, GROUPING(x) AS gx FROM w GROUP BY CUBE(g, x) ORDER BY g NULLS FIRST, gx",
    "SELECT DISTINCT g FROM w GROUP BY ROLLUP(g, x) ORDER BY x",
]


def test_grouping(env):
    compare(env, GROUPING)


WINDOWS_OVER_SETS = [
    # window functions over several grouping sets read all the sets' rows
    "SELECT g, x, sum(y) AS n, rank() OVER (ORDER BY sum(y) DESC) AS r FROM w GROUP BY ROLLUP(g, x) "
    "ORDER BY g NULLS FIRST, x NULLS FIRST, n",
    "SELECT g, GROUPING(g, x) AS k, sum(sum(y)) OVER (PARTITION BY GROUPING(g, x) ORDER BY g NULLS FIRST) AS n "
    "FROM w GROUP BY CUBE(g, x) ORDER BY k, g NULLS FIRST, n",
    "SELECT g, txt, count(*) AS n, first_value(txt) OVER v AS f FROM w GROUP BY GROUPING SETS ((g), (g, txt)) "
    "WINDOW v AS (PARTITION BY g ORDER BY txt NULLS FIRST) ORDER BY g NULLS FIRST, txt NULLS FIRST, n",
    "SELECT g + 1 AS h, sum(y) * 2 + count(*) OVER (PARTITION BY GROUPING(g)) AS n FROM w "
    "GROUP BY ROLLUP(g + 1), g ORDER BY h NULLS FIRST, n",
    "SELECT g, max(x) AS m FROM w GROUP BY ROLLUP(g) "
    "ORDER BY dense_rank() OVER (ORDER BY max(x) DESC, g NULLS FIRST), g NULLS FIRST",
]


def test_windows_over_grouping_sets(env):
    compare(env, WINDOWS_OVER_SETS)


def test_moving_range_over_a_million_rows_is_fast():
    """A 1M-row partition under a moving RANGE frame: O(n log n), not
    O(n^2) (PostgreSQL's running aggregate takes ~1 s for this)."""
    import sqlsession
    s = sqlsession.Session()
    try:
        t0 = time.perf_counter()
        got = s.sql("SELECT sum(c) AS c, sum(m) AS m FROM (SELECT "
                    "count(*) OVER (ORDER BY i RANGE BETWEEN 1000 PRECEDING AND 1000 FOLLOWING) AS c, "
                    "max(i % 977) OVER (ORDER BY i RANGE BETWEEN 500 PRECEDING AND CURRENT ROW "
                    "EXCLUDE CURRENT ROW) AS m "
                    "FROM generate_series(1, 1000000) AS g(i)) q").to_pylist()
        took = time.perf_counter() - t0
    finally:
        s.close()
    n, w = 1_000_000, 1000
    # brute force: rows i with |i - j| <= 1000 inside 1..n
    want_c = sum(min(n, i + w) - max(1, i - w) + 1 for i in range(1, n + 1))
    assert int(got[0]["c"]) == want_c
    assert got[0]["m"] is not None
    assert took < 20, f"moving RANGE frame over 1M rows took {took:.1f} s"


OPERAND_WINDOWS = [
    # a window function as the operand of x IN / op ANY / ALL (subquery)
    "SELECT id, row_number() OVER (ORDER BY y) IN (SELECT x FROM w WHERE x IS NOT NULL) AS a FROM w ORDER BY id",
    "SELECT id, rank() OVER (PARTITION BY g ORDER BY x) NOT IN (SELECT id FROM w WHERE id < 5) AS a, "
    "sum(x) OVER (ORDER BY y ROWS 2 PRECEDING) > ALL (SELECT x FROM w WHERE x > 7) AS b FROM w ORDER BY id",
    "SELECT id FROM w ORDER BY row_number() OVER (ORDER BY y DESC) IN (SELECT id FROM w WHERE g = 2), id",
    "SELECT g, sum(x) AS sx, sum(sum(x)) OVER (ORDER BY g NULLS FIRST) IN (SELECT y FROM w) AS a "
    "FROM w GROUP BY g ORDER BY g NULLS FIRST",
    "SELECT id, avg(x) OVER (ORDER BY y ROWS 1 PRECEDING) = ANY (SELECT x FROM w) AS a FROM w ORDER BY id",
    "SELECT id, n IN (SELECT x FROM w) AS a, n + 0.75 IN (SELECT x FROM w) AS b FROM w ORDER BY id",
    # frame offsets as expressions without columns (evaluated once as bigint)
    "SELECT id, sum(y) OVER (ORDER BY y ROWS BETWEEN 1 + 1 PRECEDING AND abs(-1) FOLLOWING) AS a FROM w ORDER BY id",
    "SELECT id, sum(y) OVER (ORDER BY y ROWS BETWEEN (SELECT 2) PRECEDING AND CURRENT ROW) AS a FROM w ORDER BY id",
    "SELECT id, count(*) OVER (ORDER BY x GROUPS BETWEEN 2 * 1 PRECEDING AND 1.5 + 1 FOLLOWING) AS a "
    "FROM w ORDER BY id",
    "SELECT id, sum(x) OVER (ORDER BY y RANGE BETWEEN (SELECT 10) PRECEDING AND 5 * 2 FOLLOWING) AS a "
    "FROM w ORDER BY id",
    "SELECT id, count(*) OVER (ORDER BY d RANGE BETWEEN interval '1 day' * 3 PRECEDING AND CURRENT ROW) AS a "
    "FROM w ORDER BY id",
    # DISTINCT ON with several grouping sets, and without ORDER BY
    "SELECT DISTINCT ON (g) g, x, count(*) AS c FROM w GROUP BY ROLLUP(g, x) ORDER BY g NULLS FIRST, x NULLS FIRST, c",
    "SELECT DISTINCT ON (GROUPING(x)) g, x, count(*) AS c FROM w GROUP BY CUBE(g, x) "
    "ORDER BY GROUPING(x), c DESC, g NULLS FIRST, x NULLS FIRST",
    "SELECT DISTINCT ON (g + 1) g, x FROM w GROUP BY ROLLUP(g, x) ORDER BY g + 1, x DESC NULLS LAST",
    "SELECT DISTINCT ON (1) g, x FROM w GROUP BY ROLLUP(g, x) ORDER BY 1, 2 DESC NULLS LAST",
    "SELECT DISTINCT ON (g, x) g, x, sum(y) AS sy FROM w GROUP BY GROUPING SETS ((g, x), (g), (x)) "
    "ORDER BY g, x, sy LIMIT 7",
    "SELECT DISTINCT ON (g) g FROM w GROUP BY ROLLUP(g, x) ORDER BY g",
    "SELECT count(*) AS c FROM (SELECT DISTINCT ON (g) g FROM w GROUP BY ROLLUP(g, x)) q",
    "SELECT DISTINCT ON (g, txt) g, txt, id FROM w ORDER BY txt, g, id",
    "SELECT DISTINCT ON (g, txt) g, txt FROM w ORDER BY g NULLS FIRST, txt NULLS FIRST",
    "SELECT count(*) AS c FROM (SELECT DISTINCT ON (g) g FROM w) q",
    # errors with PostgreSQL's SQLSTATEs
    "SELECT id FROM w WHERE row_number() OVER (ORDER BY y) IN (SELECT x FROM w)",
    "SELECT id FROM w WHERE row_number() OVER (ORDER BY y) = 1",
    "SELECT g FROM w GROUP BY g HAVING rank() OVER () IN (SELECT x FROM w)",
    "SELECT g FROM w GROUP BY row_number() OVER ()",
    "SELECT sum(rank() OVER ()) FROM w",
    "SELECT id FROM w WHERE EXISTS (SELECT 1 FROM w w2 WHERE rank() OVER () = 1)",
    "SELECT sum(x) OVER (ORDER BY y ROWS BETWEEN x PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY y GROUPS BETWEEN 1 PRECEDING AND g FOLLOWING) FROM w",
    "SELECT sum(x) OVER (ORDER BY y RANGE BETWEEN y PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY y ROWS BETWEEN 1 - 3 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY y ROWS BETWEEN CURRENT ROW AND nullif(1, 1) FOLLOWING) FROM w",
    "SELECT DISTINCT ON (g) g FROM w GROUP BY ROLLUP(g, x) ORDER BY x",
    "SELECT DISTINCT ON (g, txt) g, txt, id FROM w ORDER BY g DESC, id",
    "SELECT DISTINCT ON (g, txt) g, txt, id FROM w ORDER BY g, g, id",
]


def test_operand_windows_frame_expressions_distinct_on(env):
    """Forms that were 0A000 (issue 13): window functions in the operand of
    IN (subquery), frame offsets as expressions, DISTINCT ON over several
    grouping sets or without ORDER BY; and the 42P20 / 42803 / 42P10 /
    22013 / 22004 errors around them."""
    compare(env, OPERAND_WINDOWS)


def test_frame_offsets_as_parameters(env):
    """ROWS / GROUPS / RANGE $1 PRECEDING in a prepared statement, against
    PostgreSQL's PREPARE / EXECUTE."""
    s, ref = env
    cases = [
        ("SELECT id, sum(y) OVER (ORDER BY y ROWS BETWEEN $1 PRECEDING AND $2 FOLLOWING) AS a FROM w ORDER BY id",
         ["int8", "int8"], [2, 1]),
        ("SELECT id, count(*) OVER (ORDER BY x GROUPS BETWEEN $1 PRECEDING AND CURRENT ROW) AS a FROM w ORDER BY id",
         ["int8"], [1]),
        ("SELECT id, sum(x) OVER (ORDER BY y RANGE BETWEEN $1 PRECEDING AND $1 FOLLOWING) AS a FROM w ORDER BY id",
         ["int4"], [25]),
    ]
    for i, (q, types, vals) in enumerate(cases):
        pg = ref._run(f"PREPARE p{i}({', '.join(types)}) AS {q}; "
                      f"EXECUTE p{i}({', '.join(str(v) for v in vals)}); DEALLOCATE p{i};")
        want = [tuple(int(c) if c else None for c in line.split("|"))
                for line in pg.replace("\x1e", "\n").split("\n") if line]
        got = [tuple(r.values()) for r in s.prepared(q, types, vals).to_pylist()]
        assert got == want, q


TIMES = ("WITH v(id, t) AS (VALUES (1, '10:00'::time), (2, '10:30'::time), (3, '12:00'::time), (4, NULL), "
         "(5, '23:59:59.5'::time), (6, '00:00:00.25'::time), (7, '10:30'::time)) ")


def test_time_keys(env):
    """RANGE offsets over a time key (was 0A000): PostgreSQL's
    in_range_time_interval (the interval's months and days ignored, no wrap
    around midnight, a negative time part 22013)."""
    frames = ["RANGE BETWEEN '1 hour' PRECEDING AND CURRENT ROW",
              "RANGE BETWEEN '30 min' PRECEDING AND '1 day 2 hours' FOLLOWING",
              "RANGE BETWEEN CURRENT ROW AND interval '90 minutes 0.5 seconds' FOLLOWING EXCLUDE CURRENT ROW",
              "RANGE BETWEEN '1 mon' PRECEDING AND '1 day' FOLLOWING",
              "RANGE BETWEEN '100 hours' PRECEDING AND '100 hours' FOLLOWING EXCLUDE TIES",
              "RANGE BETWEEN '-1 hour' PRECEDING AND CURRENT ROW",
              "RANGE BETWEEN '1 day -1 hour' PRECEDING AND CURRENT ROW",
              "RANGE BETWEEN 1 PRECEDING AND CURRENT ROW"]
    orders = ["ORDER BY t", "ORDER BY t DESC", "ORDER BY t NULLS FIRST", "ORDER BY t DESC NULLS LAST"]
    compare(env, [TIMES + f"SELECT id, count(*) OVER ({o} {fr}) AS c, sum(id) OVER ({o} {fr}) AS sm "
                  "FROM v ORDER BY id" for fr in frames for o in orders])


LAG_OFFSETS = [
    # lag / lead with offset 0 (the current row), negative (the other
    # direction) and NULL (NULL) offsets, were 0A000; -1 / -2 / 0 are also
    # told apart (libpg_query writes them without their value)
    "SELECT id, lag(y, 0) OVER (ORDER BY y) AS a, lead(x, 0, -1) OVER (ORDER BY y) AS b, "
    "lag(y, -1) OVER (ORDER BY y) AS c, lead(y, -2, 99) OVER (ORDER BY y) AS d, "
    "lag(n, NULL) OVER (ORDER BY y) AS e FROM w ORDER BY id",
    "SELECT id, lag(y, 1 - 3) OVER (PARTITION BY g ORDER BY y) AS a, lead(txt, -1, 'z') OVER (ORDER BY y) AS b "
    "FROM w ORDER BY id",
    "SELECT sum(x + -1) AS a, sum(x + -2) AS b, sum(x + 0) AS c, sum(x - - 3) AS d FROM w",
    "SELECT g, sum(y) FILTER (WHERE x > -1) AS a, sum(y) FILTER (WHERE x > -2) AS b FROM w "
    "GROUP BY g ORDER BY g NULLS FIRST",
]


def test_lag_lead_offsets_and_negative_constants(env):
    compare(env, LAG_OFFSETS)

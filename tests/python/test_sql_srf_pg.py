"""Set-returning functions (unnest, generate_series) in the select list and
in FROM, lateral ones included, and scalar-array comparisons (x op ANY/ALL
of an array column or ARRAY[...]), differentially against PostgreSQL 15 (the
reference server of ../shared/oracles/postgres-pgvector.sh, fixture shared
with test_sql_fn_pg.py).

The same random table (array columns with NULL arrays, empty arrays and
NULL elements) is written into ours (Iceberg, list columns) and into
PostgreSQL (text[] / int[]).  Every query runs on both; rows compare as
multisets unless the query has ORDER BY (then in order), column names must
match, and when one engine fails both must, with the same SQLSTATE class.
(No result column may be named "s": the oracle's wrapper aggregates the
row as `json_agg(s)`, and a column of that name would shadow it.)
Before this module, every query here failed on ours with 0A000.
"""
import datetime
import random

import pyarrow as pa
import pytest

import hyperstreamdb as hdb
from test_sql_fn_pg import Reference  # oracle checks (skips / CI failures) run there

N = 60


def _rows(seed=7):
    rnd = random.Random(seed)
    words = ["a", "b", "c", "dd", "e", "ff", "g"]
    rows = []
    for i in range(N):
        def arr(gen):
            r = rnd.random()
            if r < 0.1:
                return None
            if r < 0.2:
                return []
            return [None if rnd.random() < 0.1 else gen() for _ in range(rnd.randint(1, 5))]
        rows.append({
            "id": i,
            "tags": arr(lambda: rnd.choice(words)),
            "nums": arr(lambda: rnd.randint(-5, 20)),
            "n": None if rnd.random() < 0.1 else rnd.randint(-1, 4),
            "ts": datetime.datetime(2024, 1, 1) + datetime.timedelta(hours=rnd.randint(0, 2000)),
        })
    return rows


def _pg_lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, list):
        return "ARRAY[" + ",".join(_pg_lit(x) for x in v) + "]"
    if isinstance(v, str):
        return "'" + v + "'"
    if isinstance(v, datetime.datetime):
        return f"'{v.isoformat(sep=' ')}'::timestamp"
    return str(v)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    import sqlsession
    rows = _rows()
    tab = pa.table({
        "id": pa.array([r["id"] for r in rows], pa.int32()),
        "tags": pa.array([r["tags"] for r in rows], pa.list_(pa.string())),
        "nums": pa.array([r["nums"] for r in rows], pa.list_(pa.int32())),
        "n": pa.array([r["n"] for r in rows], pa.int32()),
        "ts": pa.array([r["ts"] for r in rows], pa.timestamp("us")),
    })
    root = tmp_path_factory.mktemp("srf")
    t = hdb.Table(str(root / "arr"))
    t.write_arrow(tab)
    t.commit()
    aux = hdb.Table(str(root / "aux"))
    aux.write_arrow(pa.table({"id": pa.array(range(0, N, 2), pa.int32()),
                              "s": pa.array([["a", "b", "dd", "x", None][i % 5] for i in range(0, N, 2)])}))
    aux.commit()
    s = sqlsession.Session()
    s.register("arr", str(root / "arr"))
    s.register("aux", str(root / "aux"))
    ref = Reference()
    def lit(k, v):
        if k in ("tags", "nums") and v is not None:
            return ("ARRAY[" + ",".join(_pg_lit(x) for x in v) + "]" if v else "'{}'") + \
                ("::text[]" if k == "tags" else "::int[]")
        return _pg_lit(v)
    vals = ",".join("(" + ",".join(lit(k, r[k]) for k in ("id", "tags", "nums", "n", "ts")) + ")"
                    for r in rows)
    auxv = ",".join(f"({i}, {_pg_lit(['a', 'b', 'dd', 'x', None][i % 5])})" for i in range(0, N, 2))
    ref._run("CREATE TABLE arr (id int, tags text[], nums int[], n int, ts timestamp);"
             f"INSERT INTO arr VALUES {vals};"
             f"CREATE TABLE aux (id int, s text); INSERT INTO aux VALUES {auxv};")
    yield s, ref
    s.close()
    ref.stop()


def _norm(v):
    if isinstance(v, datetime.datetime):
        return v.replace(tzinfo=None).isoformat()
    if isinstance(v, float) and v == int(v):
        return int(v)
    return v


def _run_ours(sess, q):
    import sqlsession
    try:
        t = sess.sql(q)
    except sqlsession.SqlError as e:
        return ("ERR", e.sqlstate, str(e))
    return ("OK", t.schema.names, [tuple(_norm(v) for v in r.values()) for r in t.to_pylist()])


def compare(env, queries):
    s, ref = env
    expect = ref.run_many(queries, fn="tryr")
    bad = []
    for q, pg in zip(queries, expect):
        got = _run_ours(s, q)
        if pg[0] == "ERR" or got[0] == "ERR":
            if pg[0] != got[0] or pg[1][:2] != got[1][:2]:
                bad.append(f"{q}\n   PostgreSQL {pg[:2]} {pg[2] if pg[0] == 'ERR' else ''}\n"
                           f"   ours {got[:2]} {got[2] if got[0] == 'ERR' else ''}")
            continue
        names = got[1]
        prow = [tuple(_norm(r[k]) for k in r) for r in pg[1]]
        pnames = list(pg[1][0].keys()) if pg[1] else names
        if pnames != names:
            bad.append(f"{q}\n   names: PostgreSQL {pnames}, ours {names}")
            continue
        orows = got[2]
        if "ORDER BY" not in q.upper():
            prow = sorted(prow, key=repr)
            orows = sorted(orows, key=repr)
        if prow != orows:
            bad.append(f"{q}\n   PostgreSQL {len(prow)} rows {prow[:8]}\n   ours {len(orows)} rows {orows[:8]}")
    assert not bad, f"{len(bad)} of {len(queries)} differ:\n" + "\n".join(bad)


SELECT_LIST = [
    "SELECT id, unnest(tags) AS tag FROM arr",
    "SELECT id, unnest(nums) AS x FROM arr WHERE id % 3 = 0",
    "SELECT id, unnest(nums) AS x, unnest(tags) AS y FROM arr",
    "SELECT id, unnest(nums) + 1 AS x FROM arr",
    "SELECT unnest(tags) AS tag FROM arr ORDER BY tag NULLS FIRST, 1 LIMIT 12",
    "SELECT DISTINCT unnest(tags) AS tag FROM arr",
    "SELECT id, unnest(tags) AS tag FROM arr ORDER BY id, tag LIMIT 9 OFFSET 3",
    "SELECT tag, count(*) AS c FROM (SELECT unnest(tags) AS tag FROM arr) s GROUP BY tag",
    "SELECT n, unnest(array_agg(id)) AS i FROM arr GROUP BY n",
    "SELECT id, generate_series(1, n) AS k FROM arr",
    "SELECT id, generate_series(1, n) AS k, unnest(tags) AS tag FROM arr",
    "SELECT generate_series(1, 3) AS a, generate_series(1, 5) AS b",
    "SELECT generate_series(1, 3) AS a, generate_series(7, 5) AS b",
    "SELECT generate_series(5, 1, -2) AS a",
    "SELECT count(*) AS c FROM (SELECT unnest(nums) FROM arr) s",
    "SELECT unnest(ARRAY[1, 2, 3])",
    "SELECT unnest(ARRAY['a', NULL, 'b']) AS v",
    "SELECT unnest(ARRAY[1, 2.5, '3']) AS v",
    "SELECT unnest(ARRAY['1', '2']::int[]) + 1 AS v",
    "SELECT unnest(ARRAY[NULL, NULL]) AS v",
    "SELECT id, unnest(ARRAY[id, n, id * 2]) AS v FROM arr WHERE id < 20",
    "SELECT id, unnest(ARRAY[id, n]) AS v, unnest(nums) AS w FROM arr WHERE id < 30",
    "SELECT unnest(ARRAY[])",
    # errors
    "SELECT id FROM arr WHERE unnest(nums) > 3",
    "SELECT unnest(id) FROM arr",
    "SELECT sum(unnest(nums)) FROM arr",
    "SELECT generate_series(1, 10, 0)",
]

FROM_ITEMS = [
    "SELECT * FROM generate_series(1, 10)",
    "SELECT * FROM generate_series(1, 10, 3)",
    "SELECT * FROM generate_series(10, 1, -3)",
    "SELECT * FROM generate_series(1, 0)",
    "SELECT * FROM generate_series(5, 5)",
    "SELECT * FROM generate_series(1, 10) AS g",
    "SELECT g.i FROM generate_series(1, 4) AS g(i) WHERE g.i <> 2",
    "SELECT * FROM generate_series(3, 9, 2) WITH ORDINALITY AS g(i, n)",
    "SELECT * FROM generate_series(3, 9, 2) WITH ORDINALITY",
    "SELECT sum(i) AS total, count(*) AS c FROM generate_series(1, 100000) AS g(i)",
    "SELECT * FROM generate_series(2147483640, 2147483647)",
    "SELECT * FROM generate_series(3000000000, 3000000003)",
    "SELECT * FROM generate_series(-2147483648, -2147483645)",
    "SELECT * FROM generate_series(1, 10, 0)",
    "SELECT * FROM generate_series(1.5, 3)",
    "SELECT * FROM generate_series(0, 1, 0.25) AS g(x)",
    "SELECT * FROM generate_series(3, 1, -0.5) WITH ORDINALITY",
    "SELECT * FROM generate_series(1, 2, 0.0)",
    "SELECT g::text AS g FROM generate_series(99999999999999999999.5, 100000000000000000001) AS g",
    "SELECT * FROM generate_series(1.5::float8, 3)",
    "SELECT t.id, g FROM arr t, generate_series(0.5, t.n, 0.75) AS g WHERE t.id < 12",
    "SELECT * FROM generate_series('2024-01-31'::timestamp, '2024-07-01', '1 month')",
    "SELECT * FROM generate_series('2024-01-01 00:00'::timestamp, '2024-01-02', '5 hours 30 minutes')",
    "SELECT * FROM generate_series('2024-01-02'::timestamp, '2024-01-01', '-7 hours') AS g(t)",
    "SELECT a.i, b.j FROM generate_series(1, 3) a(i), generate_series(1, 2) b(j)",
    "SELECT i, id FROM generate_series(1, 5) g(i) JOIN arr ON arr.id = g.i",
    "SELECT * FROM ROWS FROM (generate_series(1, 2), generate_series(1, 4)) AS r(a, b)",
    "SELECT * FROM unnest(ARRAY['x', 'y', NULL]) WITH ORDINALITY AS u(v, i)",
    "SELECT * FROM unnest(ARRAY[3, 1, 2]) AS u ORDER BY u",
    "SELECT t.id, v FROM arr t, unnest(ARRAY[t.id, t.n]) AS v WHERE t.id < 15",
    "SELECT * FROM string_to_table('a,b,,c', ',')",
    "SELECT string_to_table('héllo', NULL) AS c",
    "SELECT unnest(string_to_array('x--y--', '--', 'y')) AS p",
    "SELECT * FROM unnest(string_to_array('1 2 3', ' '))",
    "SELECT * FROM string_to_table('', ',')",
    "SELECT * FROM string_to_table('abc', '') WITH ORDINALITY",
    "SELECT id, string_to_table(array_to_string(tags, ','), ',') AS w FROM arr",
    "SELECT t.id, w FROM arr t, string_to_table(array_to_string(t.tags, '-', '*'), '-', '*') AS w",
    # lateral
    "SELECT t.id, u.tag FROM arr t, unnest(t.tags) AS u(tag)",
    "SELECT t.id, u.tag FROM arr t, unnest(t.tags) AS u(tag) WHERE u.tag > 'c' AND t.id < 40",
    "SELECT t.id, u.* FROM arr t CROSS JOIN LATERAL unnest(t.tags) WITH ORDINALITY AS u(tag, i)",
    "SELECT t.id, u.tag FROM arr t LEFT JOIN LATERAL unnest(t.tags) AS u(tag) ON true",
    "SELECT t.id, u.x, u.y FROM arr t, unnest(t.nums, t.tags) AS u(x, y)",
    "SELECT t.id, x FROM arr t, unnest(t.nums) AS x WHERE x > 10",
    "SELECT t.id, g.k FROM arr t, generate_series(1, t.n) AS g(k)",
    "SELECT t.id, g.k FROM arr t JOIN LATERAL generate_series(0, t.n, 2) AS g(k) ON true",
    "SELECT t.id, h FROM arr t, generate_series(t.ts, t.ts + interval '1 day', '8 hours') AS h "
    "WHERE t.id < 10",
    "SELECT u.tag, count(*) AS c, sum(t.id) AS total FROM arr t, unnest(t.tags) u(tag) GROUP BY u.tag",
    "SELECT t.id, u.x FROM arr t, unnest(t.nums) AS u(x) ORDER BY u.x DESC NULLS LAST, t.id LIMIT 10",
    # lateral functions beside joins and subqueries: conditions that read
    # the function's columns run after it, the others where they belong
    "SELECT a.id, u.x FROM aux a, arr b, unnest(b.tags) u(x) WHERE a.id = b.id AND u.x = a.s",
    "SELECT a.id, u.x FROM aux a JOIN arr b ON a.id = b.id, unnest(b.tags) u(x) "
    "WHERE u.x <> a.s OR a.id > 40",
    "SELECT count(*) AS c FROM arr b, unnest(b.tags) u(x) WHERE EXISTS (SELECT 1 FROM aux a WHERE a.s = u.x)",
    "SELECT b.id, u.x FROM arr b, unnest(b.tags) u(x) WHERE u.x NOT IN (SELECT s FROM aux WHERE s IS NOT NULL)",
    "SELECT u.x, (SELECT count(*) FROM aux a WHERE a.s = u.x) AS c FROM arr b, unnest(b.tags) u(x) WHERE b.id < 9",
    "SELECT g.i, a.s AS aux_s FROM generate_series(0, 10) g(i) LEFT JOIN aux a ON a.id = g.i",
    # errors
    "SELECT * FROM unnest(7)",
    "SELECT * FROM unnest(arr.tags)",
    "SELECT * FROM generate_series(1, 'x')",
]


def test_select_list_srfs(env):
    compare(env, SELECT_LIST)


def test_from_srfs(env):
    compare(env, FROM_ITEMS)


ANY_ALL = [
    "SELECT id FROM arr WHERE 'b' = ANY(tags)",
    "SELECT id, 'b' = ANY(tags) AS x, 'b' <> ALL(tags) AS y, 'c' < ANY(tags) AS z, "
    "'c' >= ALL(tags) AS w FROM arr",
    "SELECT id, 5 = ANY(nums) AS x, 5 > ALL(nums) AS y, NULL::int = ANY(nums) AS z, "
    "3 <= ANY(nums) AS w, 3 != ALL(nums) AS v FROM arr",
    "SELECT id FROM arr WHERE n = ANY(nums)",
    "SELECT id FROM arr WHERE NOT (n = ANY(nums))",
    "SELECT id FROM arr WHERE id = ANY(ARRAY[1, 5, n])",
    "SELECT id FROM arr WHERE n <> ALL(ARRAY[1, 2])",
    "SELECT id, n = ANY(ARRAY[1, NULL]) AS x, n <> ALL(ARRAY[1, NULL]) AS y FROM arr",
    "SELECT count(*) AS c FROM arr WHERE 'dd' = ANY(tags) AND id > 10",
    "SELECT id FROM arr WHERE id < ALL(ARRAY['5', '9']::int[])",
    "SELECT t.id, count(*) AS c FROM arr t JOIN aux a ON a.s = ANY(t.tags) GROUP BY t.id",
    "SELECT id FROM arr WHERE 'b' = ANY(ARRAY[])",
    # containment and overlap of an array column and ARRAY[...]
    "SELECT id, tags @> ARRAY['b'] AS c, tags && ARRAY['dd', 'g'] AS o, ARRAY['a'] <@ tags AS d, "
    "tags @> ARRAY['a', 'b'] AS e, tags @> ARRAY[]::text[] AS f, tags && ARRAY[]::text[] AS g FROM arr",
    "SELECT id FROM arr WHERE nums @> ARRAY[5]",
    "SELECT id FROM arr WHERE nums && ARRAY[1, 2, NULL]",
    "SELECT id, tags @> ARRAY[NULL]::text[] AS x, nums @> ARRAY[n] AS y FROM arr",
]


def test_any_all(env):
    compare(env, ANY_ALL)


# The text form of arrays ('{...}'::t[], what drivers send for a list
# parameter): quoting, escapes, whitespace, NULL elements, empty and NULL
# arrays, element types beyond the numeric arrays, and malformed literals
# (22P02 in both).  Before, every query here failed on ours with 0A000.
ARRAY_TEXT = [
    "SELECT id FROM arr WHERE id = ANY('{1,5,9,33}'::int[])",
    "SELECT id FROM arr WHERE id <> ALL('{1,5,9,33}'::int[])",
    "SELECT id FROM arr WHERE 'b' = ANY(tags) AND id = ANY('{2,3,4,5,6,7,8,9,10,11,12}'::bigint[])",
    "SELECT id, n = ANY('{1,NULL,3}'::int[]) AS x, n <> ALL('{1, NULL}'::int[]) AS y, "
    "n = ANY('{}'::int[]) AS z, n <> ALL('{}'::int[]) AS w, n = ANY(NULL::int[]) AS v FROM arr",
    "SELECT id FROM arr WHERE n = ANY(ARRAY[]::int[])",
    "SELECT id FROM arr WHERE n <> ALL(ARRAY[]::int[])",
    "SELECT 'a' = ANY('{a,\"b c\"}'::text[]) AS a, 'b c' = ANY('{a,\"b c\"}'::text[]) AS b, "
    "'b' = ANY('{ a ,  b  }'::text[]) AS c, ' b' = ANY('{ a , \" b\" }'::text[]) AS d",
    "SELECT 'NULL' = ANY('{\"NULL\"}'::text[]) AS a, 'NULL' = ANY('{NULL}'::text[]) AS b, "
    "'null' = ANY('{nulls}'::text[]) AS c, 'nulls' = ANY('{nulls}'::text[]) AS d",
    "SELECT 'a,b' = ANY('{\"a,b\",c}'::text[]) AS a, 'a\"b' = ANY('{\"a\\\\\"b\"}'::text[]) AS b, "
    "'x y' = ANY(E'{x\\\\ y}'::text[]) AS c, '{' = ANY('{\"{\"}'::text[]) AS d",
    "SELECT id FROM arr WHERE ts < ANY('{2024-01-05, 2024-01-10 12:00}'::timestamp[])",
    "SELECT 2.5 = ANY('{1.5, 2.50}'::numeric[]) AS a, 1.0e0 = ANY('{1}'::float8[]) AS b, "
    "DATE '2024-02-29' = ANY('{2024-02-29}'::date[]) AS c, true = ALL('{t,true,yes}'::bool[]) AS d",
    "SELECT id, tags @> '{b}'::text[] AS c, tags && '{dd,g}' AS o, '{a}'::text[] <@ tags AS d, "
    "tags @> '{}'::text[] AS e, tags && '{}'::text[] AS f, tags @> NULL::text[] AS g FROM arr",
    "SELECT id FROM arr WHERE nums @> '{5}'::int[]",
    "SELECT id FROM arr WHERE nums && '{1, 2, NULL}'::int[]",
    # malformed literals and bad elements: errors in both
    "SELECT 1 = ANY('1,2'::int[])",
    "SELECT 1 = ANY('{1,2} x'::int[])",
    "SELECT 1 = ANY('{1,,2}'::int[])",
    "SELECT 1 = ANY('{1,2'::int[])",
    "SELECT 1 = ANY('{\"1}'::int[])",
    "SELECT 1 = ANY('{x}'::int[])",
    "SELECT 1 = ANY('{a\"b}'::text[])",
    # untyped: resolved as the other side's array type
    "SELECT id FROM arr WHERE n = ANY('{1,3}')",
    "SELECT id, 'b' = ANY('{a,b}') AS x, n = ANY('{}') AS y FROM arr WHERE id < 5",
    "SELECT 1 = ANY('{1,x}')",
]


def test_array_text_form(env):
    compare(env, ARRAY_TEXT)


def test_refused_forms(env):
    """Documented gaps (docs/sql.md): 0A000, never a wrong answer."""
    import sqlsession
    s, _ = env
    for q in ["SELECT * FROM arr t LEFT JOIN LATERAL unnest(t.tags) u(x) ON u.x = 'a'",
              "SELECT * FROM arr t, unnest(t.tags) u(x), arr t2"]:
        with pytest.raises(sqlsession.SqlError) as e:
            s.sql(q)
        assert e.value.sqlstate == "0A000", (q, str(e.value))


def test_long_series_streams(env):
    """A series longer than a batch, resumed across batches, and a
    timestamp series resumed mid-row."""
    s, _ = env
    t = s.sql("SELECT count(*) AS c, sum(i) AS s, min(i) AS lo, max(i) AS hi "
              "FROM generate_series(1, 1000000) AS g(i)")
    assert t.to_pylist() == [{"c": 1000000, "s": 500000500000, "lo": 1, "hi": 1000000}]
    t = s.sql("SELECT count(*) AS c, max(h) AS hi FROM generate_series('2020-01-01'::timestamp, "
              "'2021-01-01', '1 minute') AS h")
    assert t.to_pylist() == [{"c": 527041, "hi": datetime.datetime(2021, 1, 1)}]
    # a series of about 6e18 microsecond steps is produced only as far as
    # it is read (walking it ahead, to count it, would never end)
    t = s.sql("SELECT count(*) AS c FROM (SELECT * FROM generate_series('0001-01-01'::timestamp, "
              "'200000-01-01', '1 microsecond') LIMIT 100000) s")
    assert t.to_pylist() == [{"c": 100000}]


# unnest of ARRAY[[...], ...]: the elements in row-major order (was 0A000),
# sub-arrays of different sizes 2202E
MULTIDIM_UNNEST = [
    "SELECT unnest(ARRAY[ARRAY[1, 2]]) AS x",
    "SELECT unnest(ARRAY[[1, 2], [3, 4]]) AS x",
    "SELECT id, unnest(ARRAY[[id, 7], [NULL, id * 2]]) AS x FROM arr",
    "SELECT * FROM unnest(ARRAY[[[1.5], [2]], [[3], [4.25]]]) WITH ORDINALITY AS u(x, i)",
    "SELECT * FROM unnest(ARRAY[['a', 'b'], ['c', NULL]]) AS u(x)",
    "SELECT unnest(ARRAY[[1, 2], [3]]) AS x",
]


def test_unnest_multidimensional(env):
    compare(env, MULTIDIM_UNNEST)

"""Correlated subqueries over FROM functions of the outer row (unnest(t.tags),
generate_series(1, t.n)): the Apply of src/sql/plan_apply.c, differentially
against PostgreSQL 15 (the table, the oracle and the comparison of
test_sql_srf_pg.py: NULL arrays, empty arrays and NULL elements included).
Before plan_apply.c every query here failed on ours with 0A000 ("a lateral
function is supported as a top-level FROM item only").
"""
from test_sql_srf_pg import compare, env  # noqa: F401  (env: the shared fixture)

SCALAR = [
    "SELECT id, (SELECT count(*) FROM unnest(t.tags) x) AS c FROM arr t",
    "SELECT id, (SELECT count(x) FROM unnest(t.tags) x) AS c FROM arr t",
    "SELECT id, (SELECT count(*) FROM unnest(tags) x) AS c FROM arr",
    "SELECT id, (SELECT max(x) FROM unnest(t.nums) x) AS m FROM arr t",
    "SELECT id, (SELECT min(x) FROM unnest(t.nums) x WHERE x > t.n) AS m FROM arr t",
    "SELECT id, (SELECT sum(x) FROM unnest(t.nums) AS u(x)) AS s1 FROM arr t",
    "SELECT id, (SELECT avg(x) FROM unnest(t.nums) x)::float8 AS a FROM arr t",
    "SELECT id, (SELECT string_agg(x, ',') FROM unnest(t.tags) x) AS j FROM arr t",
    "SELECT id, (SELECT string_agg(x, ',' ORDER BY x) FROM unnest(t.tags) x WHERE x <> 'a') AS j FROM arr t",
    "SELECT id, (SELECT count(*) FROM generate_series(1, t.n) g) AS c FROM arr t",
    "SELECT id, (SELECT sum(g) FROM generate_series(1, t.n) g) AS c FROM arr t",
    "SELECT id, (SELECT count(*) FROM unnest(t.nums) x WHERE x > 5) AS c FROM arr t",
    "SELECT id, (SELECT count(*) + 1 FROM unnest(t.nums) x) AS c FROM arr t",
    "SELECT id, (SELECT coalesce(max(x), -1) FROM unnest(t.nums) x) AS c FROM arr t",
    "SELECT id, (SELECT x FROM unnest(t.nums) x ORDER BY x DESC NULLS LAST LIMIT 1) AS top FROM arr t",
    "SELECT id, (SELECT x FROM unnest(t.tags) WITH ORDINALITY AS u(x, i) WHERE i = 2) AS second FROM arr t",
    "SELECT id, (SELECT count(*) FROM unnest(t.tags) x, unnest(t.nums) y) AS c FROM arr t",
    "SELECT id, (SELECT count(DISTINCT x) FROM unnest(t.tags) x) AS c FROM arr t WHERE id < 30",
    "SELECT id, (SELECT max(x) FROM unnest(t.nums) x) - (SELECT min(x) FROM unnest(t.nums) x) AS span FROM arr t",
    "SELECT id, (SELECT count(*) FROM unnest(t.tags) x JOIN aux a ON a.s = x) AS c FROM arr t",
    "SELECT t.id, (SELECT count(*) FROM unnest(t.tags) x WHERE x = a.s) AS c FROM arr t JOIN aux a ON a.id = t.id",
    "SELECT id, (SELECT max(y) FROM (SELECT x * 2 AS y FROM unnest(t.nums) x) d) AS m FROM arr t",
    "SELECT id FROM arr t ORDER BY (SELECT count(*) FROM unnest(t.nums) x), id LIMIT 10",
    "SELECT n, max(c) AS m FROM (SELECT n, (SELECT count(*) FROM unnest(t.nums) x) AS c FROM arr t) d GROUP BY n",
    "SELECT id, (SELECT count(*) FROM aux a JOIN unnest(t.tags) x ON a.s = x) AS c FROM arr t",
    "SELECT id, (SELECT count(*) FROM unnest(t.tags) id) AS c FROM arr t",
    "SELECT id, (SELECT max(id) FROM unnest(t.nums) id) AS c FROM arr t",
    "SELECT id, (SELECT count(*) FROM unnest(t.tags) x WHERE x > (SELECT min(s) FROM aux)) AS c FROM arr t",
    "SELECT id, (SELECT (SELECT count(*) FROM unnest(t.nums) y WHERE y < x) FROM unnest(t.nums) x ORDER BY x LIMIT 1) AS c FROM arr t",
    "SELECT id, (SELECT max(x) FROM unnest(ARRAY[t.id, t.n, NULL]) x) AS m FROM arr t",
    "SELECT id, (SELECT count(*) FROM generate_series(t.n, t.id) x WHERE x > 1) AS c FROM arr t",
    "SELECT id, (SELECT string_agg(x::text, ',' ORDER BY x) FROM generate_series(t.n, 3) x) AS j FROM arr t",
    "SELECT id, (SELECT count(*) FROM unnest(t.nums) x WHERE x = ANY (SELECT y FROM unnest(t.nums) y WHERE y > 3)) AS c FROM arr t",
    "SELECT id, (SELECT count(*) FROM (SELECT * FROM unnest(t.tags)) d) AS c FROM arr t",
    "SELECT id, (SELECT count(*) FROM unnest(t.tags) x UNION ALL SELECT 1 LIMIT 1) AS c FROM arr t",
    # errors
    "SELECT id, (SELECT x FROM unnest(t.nums) x) AS v FROM arr t",
    "SELECT id, (SELECT x, x FROM unnest(t.nums) x) AS v FROM arr t",
    "SELECT id, (SELECT count(*) FROM unnest(t.nope) x) AS v FROM arr t",
    "SELECT id, (SELECT count(*) FROM generate_series(1, 3, t.n - t.n) g) AS v FROM arr t WHERE n IS NOT NULL",
]

PREDICATES = [
    "SELECT id FROM arr t WHERE EXISTS (SELECT 1 FROM unnest(t.nums) x WHERE x > 5)",
    "SELECT id FROM arr t WHERE NOT EXISTS (SELECT 1 FROM unnest(t.nums) x WHERE x > 5)",
    "SELECT id FROM arr t WHERE EXISTS (SELECT 1 FROM unnest(t.tags) x WHERE x = 'a') AND id > 10",
    "SELECT id, EXISTS (SELECT 1 FROM unnest(t.tags) x WHERE x IS NULL) AS e FROM arr t",
    "SELECT id FROM arr t WHERE 3 = ANY (SELECT * FROM unnest(t.nums))",
    "SELECT id FROM arr t WHERE 3 IN (SELECT x FROM unnest(t.nums) x)",
    "SELECT id FROM arr t WHERE 3 NOT IN (SELECT x FROM unnest(t.nums) x)",
    "SELECT * FROM arr t WHERE id IN (SELECT x + 1 FROM unnest(t.nums) x)",
    "SELECT * FROM arr t WHERE id NOT IN (SELECT x FROM unnest(t.nums) x) AND id < 10",
    "SELECT id, 3 = ANY (SELECT * FROM unnest(t.nums)) AS hit FROM arr t",
    "SELECT id, 3 <> ALL (SELECT * FROM unnest(t.nums)) AS miss FROM arr t",
    "SELECT id, n < ANY (SELECT x FROM unnest(t.nums) x) AS lt FROM arr t",
    "SELECT id, n >= ALL (SELECT x FROM unnest(t.nums) x) AS ge FROM arr t",
    "SELECT id, 'a' = ANY (SELECT * FROM unnest(t.tags)) AS a FROM arr t",
    "SELECT id FROM arr t WHERE id IN (SELECT g * 7 FROM generate_series(0, t.n) g)",
    "SELECT id FROM arr t WHERE (SELECT count(*) FROM unnest(t.tags) x) >= 3",
    "SELECT id FROM arr t WHERE (SELECT count(*) FROM unnest(t.tags) x) = 0 OR n = 2",
    "SELECT id FROM arr t WHERE EXISTS (SELECT 1 FROM generate_series(1, t.n) g WHERE g = 3)",
    "SELECT id FROM arr t WHERE EXISTS (SELECT 1 FROM aux a JOIN unnest(t.tags) x ON a.s = x)",
    "SELECT id FROM arr t WHERE NOT EXISTS (SELECT 1 FROM unnest(t.tags) x WHERE x = 'a') OR id < 5",
    "SELECT id FROM arr t WHERE 'a' <> ALL (SELECT * FROM unnest(t.tags))",
    "SELECT id FROM arr t WHERE 2 > ALL (SELECT * FROM unnest(t.nums))",
    "SELECT id FROM arr t WHERE id < 5 OR EXISTS (SELECT * FROM aux a WHERE a.id = t.n)",
    "SELECT id, (SELECT count(*) FROM unnest(t.tags) x) FROM arr t WHERE n = 2",
]


def test_scalar_subqueries_over_outer_functions(env):  # noqa: F811
    compare(env, SCALAR)


def test_predicates_over_outer_functions(env):  # noqa: F811
    compare(env, PREDICATES)

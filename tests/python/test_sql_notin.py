"""[NOT] IN / [NOT] EXISTS with correlated and uncorrelated subqueries under
SQL's NULL rules, against DuckDB on random tables full of NULLs.

A correlated NOT IN used to be planned as a plain anti join on (x, the
correlation keys), which keeps outer rows whose x is NULL and rows whose
group holds a NULL: both must be dropped (NOT IN is then NULL, not true).
"""
import random

import pyarrow as pa
import pytest
from conftest import require_module

import hyperstreamdb as hdb

duckdb = require_module("duckdb")

QUERIES = [
    "SELECT a, c FROM t WHERE a NOT IN (SELECT b FROM u WHERE u.c = t.c)",
    "SELECT a, c FROM t WHERE a NOT IN (SELECT u.a FROM u WHERE u.c = t.c)",
    "SELECT a, c FROM t WHERE a + 1 NOT IN (SELECT b FROM u WHERE u.c = t.c AND u.a > 0)",
    "SELECT a, c FROM t WHERE a NOT IN (SELECT b FROM u WHERE u.c = t.c) AND c > 1",
    "SELECT a, c FROM t WHERE NOT (a IN (SELECT b FROM u WHERE u.c = t.c))",
    "SELECT a, c FROM t WHERE a IN (SELECT b FROM u WHERE u.c = t.c)",
    "SELECT a, c FROM t WHERE a NOT IN (SELECT b FROM u)",
    "SELECT a, c FROM t WHERE a NOT IN (SELECT b FROM u WHERE b IS NOT NULL)",
    "SELECT a, c FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.b = t.a AND u.c = t.c)",
    "SELECT a, c, a NOT IN (SELECT b FROM u WHERE u.c = t.c) AS x FROM t",
]


def _rand_col(rng, n, lo, hi, p_null):
    return pa.array([None if rng.random() < p_null else rng.randint(lo, hi) for _ in range(n)],
                    pa.int64())


@pytest.mark.parametrize("seed", range(6))
def test_not_in_vs_duckdb(tmp_path, seed):
    rng = random.Random(seed)
    nt, nu = rng.randint(0, 30), rng.randint(0, 30)
    tt = pa.table({"a": _rand_col(rng, nt, 0, 6, 0.2), "c": _rand_col(rng, nt, 0, 3, 0.1)})
    uu = pa.table({"a": _rand_col(rng, nu, -1, 3, 0.2), "b": _rand_col(rng, nu, 0, 7, 0.15),
                   "c": _rand_col(rng, nu, 0, 3, 0.1)})
    t = hdb.Table(str(tmp_path / "t"))
    u = hdb.Table(str(tmp_path / "u"))
    for tab, data in ((t, tt), (u, uu)):
        tab.write_arrow(data)
        tab.commit()
    con = duckdb.connect()
    con.register("t", tt)
    con.register("u", uu)
    with hdb.Session() as s:
        s.register("t", t)
        s.register("u", u)
        for q in QUERIES:
            got = sorted(map(tuple, (r.values() for r in s.sql(q).to_arrow().to_pylist())),
                         key=repr)
            want = sorted(con.sql(q).fetchall(), key=repr)
            assert got == want, (q, got, want)

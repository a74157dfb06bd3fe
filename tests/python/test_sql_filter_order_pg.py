"""The terms of a filter's AND run cheapest first (expr/expr_eval.c ev_true,
cheap_term): comparisons of fixed-width columns with constants before
string terms, LIKE and arithmetic, as PostgreSQL orders a scan's quals by
cost (order_qual_clauses).  Differentially against PostgreSQL 15 (the
reference server of ../shared/oracles/postgres-pgvector.sh, fixture from
test_sql_fn_pg.py): the same rows, and an error exactly where PostgreSQL
raises one: `10 / x > 1 AND x <> 0` divides only where x <> 0 in both
engines (ours raised 22012 before), while `x = 0 AND 10 / x > 1` still
fails with 22012.  Several files, so several batches and chunks."""
import datetime
import json
import random

import pyarrow as pa
import pytest

from test_sql_fn_pg import Reference  # oracle checks run there

COLS = ["k", "x", "s", "d", "f"]
ARROW = [pa.int64(), pa.int32(), pa.string(), pa.date32(), pa.float64()]
PG = ["bigint", "integer", "text", "date", "double precision"]


def _rows():
    rnd = random.Random(21)
    d0 = datetime.date(1994, 1, 1)
    rows = []
    for k in range(6000):
        x = rnd.randint(-3, 3) if rnd.random() > 0.05 else None
        s = rnd.choice(["MAIL", "SHIP", "AIR", "TRUCK", "RAIL", ""]) if rnd.random() > 0.05 else None
        d = d0 + datetime.timedelta(days=rnd.randint(0, 900)) if rnd.random() > 0.05 else None
        f = rnd.randint(-100, 100) / 4 if rnd.random() > 0.05 else None
        rows.append((k, x, s, d, f))
    return rows


QUERIES = [
    # TPC-H Q12's shape: a string IN written first, date comparisons after it
    "SELECT k FROM t WHERE s IN ('MAIL', 'SHIP') AND d >= DATE '1994-06-01' "
    "AND d < DATE '1995-01-01' AND x < 2",
    "SELECT k FROM t WHERE s LIKE '%A%' AND f > 3.5 AND x IS NOT NULL AND s <> 'RAIL'",
    "SELECT k FROM t WHERE upper(s) = 'AIR' AND k BETWEEN 100 AND 4000 AND x IN (1, 2, 3)",
    # the guard after the division: PostgreSQL runs the cheaper x <> 0 first
    "SELECT k FROM t WHERE 10 / x > 1 AND x <> 0",
    "SELECT k FROM t WHERE s = 'AIR' AND 100 / x > 30 AND x > 0",
    # nested: an AND inside an OR, NULLs in every column
    "SELECT k FROM t WHERE (s = 'SHIP' AND f < 0 AND d IS NULL) OR (x = 3 AND s IS NULL)",
    # the cheap term keeps rows the division fails on: an error in both
    "SELECT k FROM t WHERE x = 0 AND 10 / x > 1",
    "SELECT k FROM t WHERE s = 'MAIL' AND 10 / x > 1 AND f > -1000",
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    import hyperstreamdb as hdb
    import sqlsession
    rows = _rows()
    path = tmp_path_factory.mktemp("filterorder") / "t"
    t = hdb.Table(str(path))
    for lo in range(0, len(rows), 2000):
        part = rows[lo:lo + 2000]
        t.write_arrow(pa.table({c: pa.array([r[j] for r in part], ARROW[j])
                                for j, c in enumerate(COLS)}))
        t.commit()
    ref = Reference()
    sess = sqlsession.Session()
    try:
        def lit(v):
            return "NULL" if v is None else f"'{v}'"
        ref._run(f"CREATE TABLE t ({', '.join(f'{c} {ty}' for c, ty in zip(COLS, PG))});")
        for lo in range(0, len(rows), 1000):
            vals = ",".join("(" + ",".join(lit(v) for v in r) + ")" for r in rows[lo:lo + 1000])
            ref._run(f"INSERT INTO t VALUES {vals};")
        sess.register("t", path)
        yield ref, sess
    finally:
        sess.close()
        ref.stop()


@pytest.mark.parametrize("i", range(len(QUERIES)))
def test_filter_terms_agree_with_postgres(setup, i):
    import sqlsession
    ref, sess = setup
    q = QUERIES[i]
    out = ref._run(f"SELECT tryr($q${q}$q$);").strip()
    try:
        got = sorted(sess.sql(q).column(0).to_pylist())
        ours = ("OK", got)
    except sqlsession.SqlError as e:
        ours = ("ERR", e.sqlstate)
    if out.startswith("OK"):
        want = sorted(r["k"] for r in json.loads(out[2:]))
        assert ours == ("OK", want), f"{q}: PostgreSQL {len(want)} rows, ours {ours[0]} " \
                                     f"{ours[1] if ours[0] == 'ERR' else len(ours[1])}"
        assert want, q   # every query keeps some rows (a test that can fail)
    else:
        assert ours == ("ERR", out[3:8]), f"{q}: PostgreSQL {out}, ours {ours}"

"""Decimal arithmetic and few-group aggregation fast paths, differentially
against PostgreSQL 15 (the reference server of
../shared/oracles/postgres-pgvector.sh, fixture from test_sql_fn_pg.py).

The fast paths (expr_eval.c dec_fast, agg.c sum_small/order_small and
pack_keys) are taken per chunk / per batch, so the table is written as
three files whose batches differ in what the paths must notice:
  1. no NULLs, every decimal within 64 bits, 6 groups of (f, s);
  2. NULLs in the group key f (beside '' keys), in the measures p, disc,
     m4, w and in g;
  3. w at and beyond the int64 boundary of its unscaled value (the checked
     128-bit loops must take over for those chunks), and g with 20 values
     (more groups than the few-group path takes, after batches of 4).
Every query runs on both engines over the same rows; values must be equal
as exact decimals (PostgreSQL's JSON numbers read as Decimal).
"""
import decimal
import json
import random

import pyarrow as pa
import pytest

from test_sql_fn_pg import Reference  # oracle checks run there

D = decimal.Decimal
I64 = 2 ** 63


def _rows():
    rnd = random.Random(13)
    rows = []

    def dec(lo, hi, scale):
        return D(rnd.randint(lo, hi)).scaleb(-scale)

    for part in range(3):
        for _ in range(2000 if part < 2 else 1500):
            k = len(rows)
            nulls = part == 1
            f = rnd.choice(["A", "N", "R", ""]) if not (nulls and rnd.random() < 0.1) else None
            s = rnd.choice("FO")
            q = dec(100, 5000, 2)
            p = dec(90000, 10494950, 2) if not (nulls and rnd.random() < 0.05) else None
            disc = dec(0, 10, 2) if not (nulls and rnd.random() < 0.05) else None
            tax = dec(0, 8, 2)
            m4 = dec(-999999, 999999, 4) if not (nulls and rnd.random() < 0.05) else None
            if part == 2:
                # unscaled values around +-2^63: in range, at the edge, just past it
                w = D(rnd.choice([I64 - 1, -I64, I64, -I64 - 1, I64 + 12345, 10 ** 19,
                                  -(10 ** 19), rnd.randint(-10 ** 6, 10 ** 6)])).scaleb(-2)
            else:
                w = dec(-10 ** 15, 10 ** 15, 2) if not (nulls and rnd.random() < 0.05) else None
            i = rnd.randint(-2 ** 31, 2 ** 31 - 1)
            b = rnd.randint(-2 ** 62, 2 ** 62)
            g = rnd.randint(0, 19 if part == 2 else 3) if not (nulls and rnd.random() < 0.1) else None
            rows.append((k, f, s, q, p, disc, tax, m4, w, i, b, g))
    return rows


COLS = ["k", "f", "s", "q", "p", "disc", "tax", "m4", "w", "i", "b", "g"]
ARROW = [pa.int64(), pa.string(), pa.string(), pa.decimal128(15, 2), pa.decimal128(15, 2),
         pa.decimal128(15, 2), pa.decimal128(15, 2), pa.decimal128(12, 4), pa.decimal128(20, 2),
         pa.int32(), pa.int64(), pa.int32()]
PG = ["bigint", "text", "text", "numeric(15,2)", "numeric(15,2)", "numeric(15,2)",
      "numeric(15,2)", "numeric(12,4)", "numeric(20,2)", "integer", "bigint", "integer"]

Q1 = ("SELECT f, s, sum(q) AS sum_qty, sum(p) AS sum_base, sum(p * (1 - disc)) AS sum_disc, "
      "sum(p * (1 - disc) * (1 + tax)) AS sum_charge, avg(q) AS avg_qty, avg(p) AS avg_p, "
      "avg(disc) AS avg_disc, count(*) AS n, count(p) AS np, count(disc) AS nd FROM t{w} "
      "GROUP BY f, s")
QUERIES = [
    Q1.format(w=""),
    Q1.format(w=" WHERE k < 2000"),            # file 1 only: no NULLs anywhere
    Q1.format(w=" WHERE k >= 2000 AND k < 4000"),
    # mixed scales: (15,2) with (12,4) (the scale-2 side raised by 100), products at scale 6
    "SELECT f, sum(p + m4) AS a, sum(m4 - p) AS b, sum(p * m4) AS c, sum(q - disc) AS d, "
    "sum(p + 1.5) AS e, sum(2 - m4) AS h, count(m4) AS n FROM t GROUP BY f",
    # operands at and past the int64 boundary of the unscaled value
    "SELECT g, sum(w) AS sw, sum(w * q) AS wq, sum(w + p) AS wp, sum(p - w) AS pw, "
    "sum(w * 1.5) AS w15, min(w * 2) AS mn, max(w - 1) AS mx, avg(w) AS aw FROM t GROUP BY g",
    "SELECT k, w * m4 AS wm4, w + w AS w2, w - 0.01 AS wm, w * disc AS wd FROM t "
    "WHERE k >= 4000 AND abs(w) < 100000000000000000 ORDER BY k",
    # a selection that is not a run of rows (CASE branches)
    "SELECT f, sum(CASE WHEN s = 'F' THEN p * (1 - disc) ELSE p - disc * 3 END) AS cs, "
    "sum(CASE WHEN g = 1 THEN m4 * tax WHEN g = 2 THEN w + m4 END) AS cw FROM t GROUP BY f",
    # few groups, integer key (NULL group kept aside), and then more than the few-group path takes
    "SELECT g, count(*) AS n, count(p) AS np, sum(i) AS si, sum(b) AS sb, avg(i) AS ai, "
    "sum(q) AS sq, count(f) AS nf FROM t GROUP BY g",
    "SELECT g, count(*) AS n, sum(i) AS si, sum(p * disc) AS spd FROM t WHERE k < 4000 GROUP BY g",
    # global aggregates (one group)
    "SELECT count(*) AS n, count(p) AS np, sum(i) AS si, sum(b) AS sb, sum(p * (1 - disc)) AS s1, "
    "avg(q) AS aq, sum(w) AS sw FROM t",
    # string keys with NULLs, one and two columns, in different orders
    "SELECT s, f, count(*) AS n, sum(disc) AS sd FROM t GROUP BY s, f",
    "SELECT f, count(*) AS n, sum(tax * q) AS st FROM t WHERE k >= 2000 GROUP BY f",
]


def _pg_rows(ref, queries):
    lits = ",".join("$q$" + q + "$q$" for q in queries)
    out = ref._run(f"SELECT aggeval_rows(q) FROM unnest(ARRAY[{lits}]::text[]) WITH ORDINALITY "
                   "AS t(q, i) ORDER BY i;")
    res = []
    for r in out.rstrip("\n").split("\x1e"):
        r = r.strip("\n")
        assert r.startswith("OK"), r
        v = json.loads(r[2:], parse_float=D)
        assert isinstance(v, list) and all(isinstance(x, dict) for x in v), r[:300]
        res.append(v)
    assert len(res) == len(queries)
    return res


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return D(a) == D(b)


def _key(row):
    return tuple((v is None, v if v is not None else 0) for v in row)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    import hyperstreamdb as hdb
    import sqlsession
    rows = _rows()
    path = tmp_path_factory.mktemp("aggeval") / "t"
    t = hdb.Table(str(path))
    for lo, hi in ((0, 2000), (2000, 4000), (4000, len(rows))):
        part = rows[lo:hi]
        t.write_arrow(pa.table({c: pa.array([r[j] for r in part], ARROW[j])
                                for j, c in enumerate(COLS)}))
        t.commit()
    ref = Reference()
    sess = sqlsession.Session()
    try:
        def lit(v):
            return "NULL" if v is None else f"'{v}'"
        # (test_sql_fn_pg's tryr names its subquery s: a column here)
        ref._run("CREATE FUNCTION aggeval_rows(q text) RETURNS text LANGUAGE plpgsql AS $$\n"
                 "DECLARE r text;\nBEGIN\n"
                 "  EXECUTE 'SELECT coalesce(json_agg(sub_), ''[]'') FROM (' || q || ') sub_' "
                 "INTO r;\n  RETURN 'OK' || r;\nEND $$;")
        ref._run(f"CREATE TABLE t ({', '.join(f'{c} {ty}' for c, ty in zip(COLS, PG))});")
        for lo in range(0, len(rows), 1000):
            vals = ",".join("(" + ",".join(lit(v) for v in r) + ")" for r in rows[lo:lo + 1000])
            ref._run(f"INSERT INTO t VALUES {vals};")
        sess.register("t", path)
        yield ref, sess, rows
    finally:
        sess.close()
        ref.stop()


def test_decimal_and_few_group_aggregates_agree_with_postgres(setup):
    ref, sess, _ = setup
    expect = _pg_rows(ref, QUERIES)
    bad = []
    for q, pg in zip(QUERIES, expect):
        got = sess.sql(q)
        names = got.schema.names
        ours = sorted((tuple(r) for r in zip(*(got.column(c).to_pylist() for c in names))), key=_key)
        want = sorted((tuple(r[c] for c in names) for r in pg), key=_key)
        if len(ours) != len(want):
            bad.append(f"{q}: {len(want)} rows in PostgreSQL, {len(ours)} here")
            continue
        for o, w in zip(ours, want):
            if any(not _same(a, b) for a, b in zip(o, w)):
                bad.append(f"{q}:\n  PostgreSQL {w}\n  ours       {o}")
    assert not bad, "\n".join(bad)


def test_product_past_38_digits_is_an_error(setup):
    """PostgreSQL's numeric has no 38-digit limit; ours raises numeric field
    overflow (22003) where a value needs more (docs/sql.md): w * w * w of
    the file whose w are past int64 (the checked loop runs there and must
    refuse, not wrap)."""
    import sqlsession
    _, sess, _ = setup
    with pytest.raises(sqlsession.SqlError) as e:
        sess.sql("SELECT sum(w * w * w) FROM t WHERE k >= 4000")
    assert e.value.sqlstate == "22003", e.value

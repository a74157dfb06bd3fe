"""Runtime join filters (issue 13): a hash join's built integer keys become
a filter (range + bitmap or bloom) that the probe side's table scan applies
before decoding its other columns.  Every query is compared with DuckDB
over the same rows (as multisets), so a filter that dropped a matching row
fails here; EXPLAIN ANALYZE must show the filter removing rows where it
applies and no filter on the preserved side of outer joins or the probe
side of a non-reversed anti join.

The fact table f has more rows than a join reads ahead (1M), in several
files, so it is the probe side; its keys have NULLs; d (dense keys: a
bitmap) and w (keys spread over 1e12: a bloom filter) are built."""
import os
import re

import numpy as np
import pyarrow as pa
import pytest

from conftest import require_module

duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")

from sqlsession import Session  # noqa: E402

NF = 1_200_000
ND = 40_000
NW = 60_000


def _tables():
    rng = np.random.default_rng(13)
    fk = rng.integers(0, 2 * ND, NF)
    wk = rng.integers(0, NW, NF) * 16_777_259 + 5       # w's keys, spread
    f = pa.table({
        "id": pa.array(np.arange(NF, dtype=np.int64)),
        "fk": pa.array(fk, pa.int64(), mask=rng.random(NF) < 0.02),
        "fk32": pa.array(fk.astype(np.int32), pa.int32(), mask=rng.random(NF) < 0.02),
        "wk": pa.array(np.where(rng.random(NF) < 0.5, wk, wk + 1), pa.int64()),
        "v": pa.array(rng.integers(-1000, 1000, NF).astype(np.int32)),
        "s": pa.array([f"s{i % 997}" for i in range(NF)]),
    })
    dk = np.arange(ND, dtype=np.int64) * 2               # f's keys reach 2*ND: half match
    d = pa.table({
        "dk": pa.array(dk, pa.int64(), mask=np.arange(ND) % 1000 == 7),
        "dk32": pa.array(dk.astype(np.int32)),
        "grp": pa.array((np.arange(ND) % 50).astype(np.int32)),
        "w": pa.array(rng.integers(-1000, 1000, ND).astype(np.int32)),
        "name": pa.array([f"d{i}" for i in range(ND)]),
    })
    wk_all = np.arange(NW, dtype=np.int64) * 16_777_259 + 5
    w = pa.table({
        "k": pa.array(wk_all, pa.int64()),
        "flag": pa.array(np.arange(NW) % 3 == 0),
    })
    return {"f": f, "d": d, "w": w}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("joinfilter")
    tabs = _tables()
    s = Session()
    con = duckdb.connect()
    for name, tab in tabs.items():
        t = hdb.Table(str(root / name))
        step = 300_000 if name == "f" else tab.num_rows   # f: several files
        for off in range(0, tab.num_rows, step):
            t.write_arrow(tab.slice(off, step))
            t.commit()
        s.register(name, str(root / name))
        con.register(name, tab)
    spill = root / "tmp"
    spill.mkdir()
    yield s, con, spill
    s.close()
    con.close()


def _same(con, a, b):
    if a.num_rows != b.num_rows or a.num_columns != b.num_columns:
        return False
    names = [f"c{i}" for i in range(a.num_columns)]
    con.register("_a", a.rename_columns(names))
    con.register("_b", b.rename_columns(names))
    try:
        return con.execute(
            "SELECT (SELECT count(*) FROM (SELECT * FROM _a EXCEPT ALL SELECT * FROM _b)) + "
            "(SELECT count(*) FROM (SELECT * FROM _b EXCEPT ALL SELECT * FROM _a))"
        ).fetchall()[0][0] == 0
    finally:
        con.unregister("_a")
        con.unregister("_b")


F_COLUMNS = {"id", "fk", "fk32", "wk", "v", "s"}


def _removed(plan):
    """Rows removed per runtime filter line of EXPLAIN ANALYZE on a column
    of f (the big table the filters are for), with its kind."""
    return [(m.group(2), int(m.group(3))) for m in re.finditer(
        r"Runtime filter on (\w+): (\w+) of \d+ keys \(\d+ bytes\); rows \d+ checked, (\d+) removed",
        plan) if m.group(1) in F_COLUMNS]


# (sql, expected filter kind on f's scan or None when no filter may apply
# there)
QUERIES = [
    # inner joins: dense keys (bitmap), int32 probe column, a residual
    ("SELECT f.id, f.v, d.name FROM f JOIN d ON f.fk = d.dk WHERE d.grp = 3", "bitmap"),
    ("SELECT f.id, d.name FROM f JOIN d ON f.fk32 = d.dk WHERE d.grp < 2", "bitmap"),
    ("SELECT f.id, f.s FROM f JOIN d ON f.fk = d.dk AND f.v > d.w WHERE d.grp = 7", "bitmap"),
    # spread keys: a bloom filter
    ("SELECT f.id, f.wk FROM f JOIN w ON f.wk = w.k WHERE w.flag", "bloom"),
    # two keys, through a subquery's projection, and two joins over f
    ("SELECT f.id FROM f JOIN d ON f.fk = d.dk AND f.fk32 = d.dk32 WHERE d.grp = 9", "bitmap"),
    ("SELECT q.id, d.name FROM (SELECT id, fk AS key, v FROM f WHERE v > 0) q "
     "JOIN d ON q.key = d.dk WHERE d.grp = 4", "bitmap"),
    ("SELECT f.id, d.name FROM f JOIN d ON f.fk = d.dk JOIN w ON f.wk = w.k "
     "WHERE d.grp = 5 AND w.flag", "bitmap"),
    # semi join; right join (f probes, d's unmatched rows kept)
    ("SELECT id, v FROM f WHERE fk IN (SELECT dk FROM d WHERE grp = 11)", "bitmap"),
    ("SELECT f.id, dd.name FROM f RIGHT JOIN (SELECT * FROM d WHERE grp = 12) dd "
     "ON f.fk = dd.dk", "bitmap"),
    # empty build side: nothing matches, the files are not read
    ("SELECT f.id FROM f JOIN d ON f.fk = d.dk WHERE d.grp = 99", "empty"),
    # preserved probe side: no filter
    ("SELECT f.id, d.name FROM f LEFT JOIN (SELECT * FROM d WHERE grp = 3) d ON f.fk = d.dk",
     None),
    ("SELECT f.id, d.name FROM f FULL JOIN (SELECT * FROM d WHERE grp = 3) d ON f.fk = d.dk",
     None),
    ("SELECT id FROM f WHERE NOT EXISTS (SELECT 1 FROM d WHERE d.dk = f.fk AND d.grp = 3)",
     None),
    ("SELECT id FROM f WHERE fk NOT IN (SELECT dk FROM d WHERE grp = 3 AND dk IS NOT NULL)",
     None),
    ("SELECT f.id FROM f LEFT JOIN (SELECT * FROM d WHERE grp = 99) d ON f.fk = d.dk", None),
    # the left side read ahead to its end (d filtered, 800 rows) filters
    # the right side before it is read: f's scan under an aggregate grouped
    # by the key (a decorrelated subquery; a LEFT join keeps d's rows), a
    # DISTINCT, an inner join
    ("SELECT d.dk, d.name FROM d WHERE d.grp = 3 AND d.w > "
     "(SELECT avg(v) FROM f WHERE f.fk = d.dk)", "bitmap"),
    ("SELECT d.dk, g.c, g.m FROM d LEFT JOIN (SELECT fk, count(*) AS c, max(v) AS m FROM f "
     "GROUP BY fk) g ON g.fk = d.dk WHERE d.grp = 3", "bitmap"),
    ("SELECT d.dk, g.c FROM d JOIN (SELECT fk32, fk, count(*) AS c FROM f GROUP BY fk32, fk "
     "HAVING count(*) > 1) g ON g.fk = d.dk AND g.fk32 = d.dk32 WHERE d.grp = 6", "bitmap"),
    ("SELECT d.name, x.fk FROM d JOIN (SELECT DISTINCT fk FROM f) x ON x.fk = d.dk "
     "WHERE d.grp = 8", "bitmap"),
    # ... but not through an aggregate's result column, nor into the
    # preserved side of a RIGHT/FULL join
    ("SELECT d.dk, g.fk FROM d JOIN (SELECT fk, count(*) AS c FROM f GROUP BY fk) g "
     "ON g.c = d.dk WHERE d.grp = 3", None),
    ("SELECT d.dk, g.c FROM (SELECT * FROM d WHERE grp = 3) d RIGHT JOIN "
     "(SELECT fk, count(*) AS c FROM f GROUP BY fk) g ON g.fk = d.dk", None),
    ("SELECT d.dk, g.c FROM (SELECT * FROM d WHERE grp = 3) d FULL JOIN "
     "(SELECT fk, count(*) AS c FROM f GROUP BY fk) g ON g.fk = d.dk", None),
]


@pytest.mark.parametrize("sql,kind", QUERIES)
def test_join_filter_matches_duckdb(env, sql, kind):
    s, con, _ = env
    want = con.sql(sql).to_arrow_table()
    for threads in (1, 2):
        s.sql(f"SET threads = {threads}")
        try:
            got = s.sql(sql)
            plan = "\n".join(s.sql("EXPLAIN ANALYZE " + sql).column(0).to_pylist())
        finally:
            s.sql("RESET threads")
        assert _same(con, got, want), (sql, threads, got.num_rows, want.num_rows)
        removed = _removed(plan)
        if kind is None:
            assert removed == [], plan
        else:
            assert any(k == kind and r > 0 for k, r in removed), plan


def test_join_filter_with_spilled_build(env):
    """A build side past the memory limit spills (no filter from a spilled
    build); the probe side's rows all take part."""
    s, con, spill = env
    sql = "SELECT f.id, d.name, f.v FROM f JOIN d ON f.fk = d.dk WHERE d.grp < 40"
    want = con.sql(sql).to_arrow_table()
    s.sql("SET memory_limit = '2MB'")
    s.sql(f"SET temp_directory = '{spill}'")
    try:
        got = s.sql(sql)
        plan = "\n".join(s.sql("EXPLAIN ANALYZE " + sql).column(0).to_pylist())
    finally:
        s.sql("RESET memory_limit")
        s.sql("RESET temp_directory")
    assert _same(con, got, want)
    assert "spilled:" in plan, plan
    assert os.listdir(spill) == []


def _checked(plan, col):
    m = re.search(rf"Runtime filter on {col}: \w+ of \d+ keys \(\d+ bytes\); rows (\d+) checked, "
                  r"(\d+) removed", plan)
    return (int(m.group(1)), int(m.group(2))) if m else None


def test_selective_filter_before_residual(env, tmp_path):
    """A runtime filter that drops most rows is applied before the scan's
    own filter (whose string terms then run on the rows it keeps only):
    it checks every row of f; one that keeps most rows, or any beside a
    filter of cheap comparisons only, is applied after, to the rows the
    scan's filter keeps.  All answers equal DuckDB's."""
    s, con, _ = env
    # e: every key f has, so a filter from it keeps ~98% of f (drops NULLs)
    e = pa.table({"k": pa.array(np.arange(2 * ND, dtype=np.int64))})
    t = hdb.Table(str(tmp_path / "e"))
    t.write_arrow(e)
    t.commit()
    s.register("e", str(tmp_path / "e"))
    con.register("e", e)
    # grp = 3: 800 of d's 40,000 keys, so the filter on f.fk drops ~99%;
    # lower(f.s) keeps f.s's terms in the scan's filter (plain `f.s LIKE`
    # and `f.s <> ...` alone would be judged per dictionary entry by the
    # reader, a cheap term: the runtime filter then runs after them)
    sel = ("SELECT f.id, f.s, d.name FROM f JOIN d ON f.fk = d.dk "
           "WHERE d.grp = 3 AND lower(f.s) LIKE 's1%' AND f.s <> 's10'")
    # f's own filter keeps ~90% (so f is the probe side, e the hash table)
    wide = ("SELECT f.id, e.k FROM f JOIN e ON f.fk = e.k "
            "WHERE f.v > -800 AND f.s <> 's5' AND e.k >= 0")
    # selective, but the scan's own filter is one integer comparison,
    # cheaper than a key lookup: the filter runs after it
    cheap = "SELECT f.id, d.name FROM f JOIN d ON f.fk = d.dk WHERE d.grp = 3 AND f.v > 0"
    for sql, early in ((sel, True), (wide, None), (cheap, None)):
        want = con.sql(sql).to_arrow_table()
        s.sql("SET threads = 1")
        try:
            got = s.sql(sql)
            plan = "\n".join(s.sql("EXPLAIN ANALYZE " + sql).column(0).to_pylist())
        finally:
            s.sql("RESET threads")
        assert _same(con, got, want), (sql, got.num_rows, want.num_rows)
        assert _checked(plan, "fk"), plan
        checked, removed = _checked(plan, "fk")
        if early:
            # every row of f was checked by the filter (the first files at
            # least: it starts once d is built), and it removed most
            assert checked >= NF // 2 and removed > checked * 9 // 10, plan
        else:
            # after the scan's filter: only the rows it keeps reach the filter
            where = sql[sql.index("WHERE"):].replace("d.grp = 3 AND ", "").replace(
                " AND e.k >= 0", "").replace("f.", "")
            kept = con.execute(f"SELECT count(*) FROM f {where}").fetchall()[0][0]
            assert 0 < checked <= kept < NF, plan

"""count(*) over a WHERE that the sidecar indexes decide (exec/agg_global.c
agg_count_known, table/scan.c tbl_scan_index_count): when every planned
file has an index that decides the whole filter exactly, the count is the
index bitmaps' cardinalities less the position-deleted rows, and no data
page is read (EXPLAIN ANALYZE: "count(*) from the index bitmaps'
cardinalities", "pages: 0 decoded").  Otherwise (a file without the
sidecar, a column without an index, another aggregate beside count(*)) the
rows are read as before.  Counts are compared with DuckDB over the same
rows: NULLs in the indexed columns (=, <>, IS NULL, IN, ranges, OR/AND),
a table with merge-on-read deletes, a table one of whose files lost its
sidecar."""
import pathlib

import numpy as np
import pyarrow as pa
import pytest

from conftest import require_module

duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")

from sqlsession import Session  # noqa: E402

N = 24_000
FILES = 4


def _data():
    rng = np.random.default_rng(21)
    cat = np.array([f"c{i:02d}" for i in rng.integers(0, 30, N)], dtype=object)
    cat[rng.random(N) < 0.1] = None
    n = rng.integers(-50, 50, N)
    return pa.table({
        "k": pa.array(np.arange(N, dtype=np.int64)),
        "cat": pa.array(cat.tolist(), pa.string()),
        "n": pa.array(n, pa.int64(), mask=rng.random(N) < 0.12),
        "v": pa.array(rng.standard_normal(N)),
    })


def _table(path, data):
    t = hdb.Table.create(str(path), data.schema)
    per = -(-data.num_rows // FILES)
    for off in range(0, data.num_rows, per):
        t.write_arrow(data.slice(off, per))
        t.commit()
    t.add_index("cat", "inverted")
    t.add_index("n", "range")
    return t


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("countix")
    data = _data()
    _table(root / "t", data).close()
    d = _table(root / "tdel", data)
    d.delete("k % 5 = 2")
    d.delete("k >= 7000 AND k < 9000")
    d.close()
    keep = pa.array([not (k % 5 == 2 or 7000 <= k < 9000) for k in range(N)])
    _table(root / "tmiss", data).close()
    # one file loses its cat sidecar: the scan reads that file (same rows)
    side = sorted((root / "tmiss" / "index").glob("*.inverted"))
    assert len(side) == FILES, side
    side[1].unlink()
    s = Session()
    for name in ("t", "tdel", "tmiss"):
        s.register(name, str(root / name))
    con = duckdb.connect()
    con.register("t", data)
    con.register("tdel", data.filter(keep))
    con.register("tmiss", data)
    yield s, con
    s.close()
    con.close()


WHERES = [
    "cat = 'c07'",
    "cat <> 'c07'",
    "cat IS NULL",
    "cat IS NOT NULL",
    "cat IN ('c01', 'c02', 'zz')",
    "cat = 'nope'",
    "n = 7",
    "n < -40",
    "n >= 10 AND n < 20",
    "n IS NULL",
    "cat = 'c03' OR n > 45",
    "cat = 'c03' AND n < 0",
]


def _plan(s, sql):
    return "\n".join(s.sql("EXPLAIN ANALYZE " + sql).column(0).to_pylist())


def _count(s, sql):
    return s.sql(sql).column(0).to_pylist()


@pytest.mark.parametrize("where", WHERES)
@pytest.mark.parametrize("table", ["t", "tdel"])
def test_count_from_indexes_matches_duckdb(env, table, where):
    s, con = env
    sql = f"SELECT count(*) FROM {table} WHERE {where}"
    want = [r[0] for r in con.execute(sql).fetchall()]
    assert _count(s, sql) == want, sql
    plan = _plan(s, sql)
    assert "count(*) from the index bitmaps' cardinalities" in plan, plan
    assert "pages: 0 decoded" in plan and "Row groups: 0 read" in plan, plan


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM tmiss WHERE cat = 'c07'",      # a file without the sidecar
    "SELECT count(*) FROM tmiss WHERE cat IS NULL",
    "SELECT count(*) FROM t WHERE v > 0.5",               # no index on v
    "SELECT count(*) FROM t WHERE cat = 'c07' AND v > 0", # the index decides only a part
    "SELECT count(*), sum(n) FROM t WHERE cat = 'c07'",   # more than count(*)
    "SELECT count(n) FROM tdel WHERE cat = 'c07'",
])
def test_not_decided_by_indexes_reads_rows(env, sql):
    s, con = env
    want = list(con.execute(sql).fetchall()[0])
    got = s.sql(sql)
    assert [c[0] for c in got.to_pydict().values()] == want, sql
    plan = _plan(s, sql)
    assert "index bitmaps' cardinalities" not in plan, plan
    assert "pages: 0 decoded" not in plan, plan


def test_count_after_new_file_and_groups(env, tmp_path):
    """A file written after add_index gets its sidecar with the write: still
    counted from the indexes; GROUP BY is not a global count (rows read)."""
    s, con = env
    data = _data()
    t = _table(tmp_path / "tn", data)
    more = data.slice(0, 1000)
    t.write_arrow(more)
    t.commit()
    t.close()
    s.register("tn", str(tmp_path / "tn"))
    con.register("tn", pa.concat_tables([data, more]))
    sql = "SELECT count(*) FROM tn WHERE cat = 'c11'"
    assert _count(s, sql) == [con.execute(sql).fetchone()[0]]
    assert "index bitmaps' cardinalities" in _plan(s, sql)
    g = "SELECT cat, count(*) FROM tn WHERE cat IN ('c11', 'c12') GROUP BY cat ORDER BY cat"
    assert s.sql(g).to_pylist() == [dict(zip(("cat", "count"), r)) for r in con.execute(g).fetchall()]
    assert "index bitmaps' cardinalities" not in _plan(s, g)

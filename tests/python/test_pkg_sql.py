"""SQL from Python: hyperstreamdb.Session, Result and Table.execute_sql.

The oracle is DuckDB, run on the same rows (the pyarrow tables written into
our tables), never our own output; vector distances are checked against
numpy.  Covered: results (to_arrow / to_pandas / to_pylist / iteration /
tag / rowcount), parameters typed from Python values, errors with SQLSTATE
and position, cancel from another thread and by SIGINT, the GIL released,
the zero-copy stream into pyarrow and DuckDB, tables borrowed by sessions,
and the SQL examples of the original project's README.
"""
import json
import math
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from conftest import require, require_module, runs_without_the_gil

pa = require_module("pyarrow")
duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")
require(hasattr(hdb, "Session") and hasattr(hdb, "Result"),
        "this hyperstreamdb package has no SQL sessions")

N_USERS = 500
N_ORDERS = 3000


def users_arrow():
    rng = np.random.default_rng(1)
    cats = np.array(["premium", "basic", "trial", None], dtype=object)
    return pa.table({
        "id": pa.array(np.arange(N_USERS, dtype=np.int64)),
        "name": pa.array([f"user{i}" for i in range(N_USERS)]),
        "category": pa.array(cats[rng.integers(0, 4, N_USERS)].tolist(), pa.string()),
        "score": pa.array(np.round(rng.random(N_USERS) * 100, 3)),
        "active": pa.array(rng.random(N_USERS) > 0.3),
    })


def orders_arrow():
    rng = np.random.default_rng(2)
    return pa.table({
        "order_id": pa.array(np.arange(N_ORDERS, dtype=np.int64)),
        "user_id": pa.array(rng.integers(0, N_USERS + 50, N_ORDERS).astype(np.int64)),
        "amount": pa.array(np.round(rng.random(N_ORDERS) * 1000, 2)),
    })


def documents_arrow():
    rng = np.random.default_rng(3)
    n = 400
    emb = rng.random((n, 3), dtype=np.float32)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "content": pa.array([f"doc {i}" for i in range(n)]),
        "category": pa.array([["science", "art", "news"][i % 3] for i in range(n)]),
        "embedding": pa.FixedSizeListArray.from_arrays(pa.array(emb.ravel()), 3),
    })


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("sql")
    out = {}
    for name, make in (("users", users_arrow), ("orders", orders_arrow),
                       ("documents", documents_arrow)):
        src = make()
        t = hdb.Table(root / name)
        t.write_arrow(src)
        t.commit()
        out[name] = (t, src)
    return out


@pytest.fixture()
def session(data):
    s = hdb.Session()
    for name, (t, _) in data.items():
        s.register(name, t)
    yield s
    s.close()


def duck(data, query):
    con = duckdb.connect()
    for name, (_, src) in data.items():
        con.register(name, src)
    return con.sql(query).to_arrow_table()


def norm(v):
    if isinstance(v, float):
        return None if math.isnan(v) else round(v, 6)
    return v


def rows_of(table):
    cols = [c.to_pylist() for c in table.columns]
    return [tuple(norm(v) for v in r) for r in zip(*cols)]


def same_multiset(ours, theirs):
    a, b = rows_of(ours), rows_of(theirs)
    key = lambda r: tuple((x is None, str(type(x)), x if x is not None else 0) for x in r)  # noqa
    assert len(a) == len(b), (len(a), len(b))
    assert sorted(a, key=key) == sorted(b, key=key)


QUERIES = [
    "SELECT * FROM users",
    "SELECT id, name FROM users WHERE id > 100 AND category = 'premium'",
    "SELECT id, score * 2 AS s2 FROM users WHERE score < 10.5",
    "SELECT id FROM users WHERE category IS NULL",
    "SELECT category, count(*) AS n, sum(score) AS total FROM users GROUP BY category",
    "SELECT count(*) AS n, min(amount) AS lo, max(amount) AS hi FROM orders",
    "SELECT u.name, o.amount FROM users u JOIN orders o ON u.id = o.user_id "
    "WHERE u.category = 'premium'",
]


@pytest.mark.parametrize("query", QUERIES)
def test_queries_match_duckdb(data, session, query):
    got = session.sql(query).to_arrow()
    same_multiset(got, duck(data, query))


def test_order_by_limit_matches_duckdb(data, session):
    q = "SELECT id, score FROM users WHERE active ORDER BY score DESC, id LIMIT 17"
    got = session.sql(q).to_arrow()
    assert rows_of(got) == rows_of(duck(data, q))


def test_result_forms(data, session):
    q = "SELECT id, name FROM users WHERE id < 5 ORDER BY id"
    r = session.sql(q)
    assert r.has_rows and r.rowcount == -1       # not read yet
    assert r.columns == ["id", "name"]
    t = r.to_arrow()
    assert r.rowcount == 5
    assert t.column("id").to_pylist() == [0, 1, 2, 3, 4]
    assert r.to_pylist() == [{"id": i, "name": f"user{i}"} for i in range(5)]
    df = r.to_pandas()
    assert list(df["name"]) == [f"user{i}" for i in range(5)]
    assert r.fetchall() == [(i, f"user{i}") for i in range(5)]
    assert pa.table(r).equals(t)                 # after to_arrow: the kept table
    assert len(r) == 5
    assert r.tag.startswith("SELECT")


def test_iteration_reads_record_batches(data, session):
    r = session.sql("SELECT id FROM users")
    ids = []
    for batch in r:
        assert isinstance(batch, pa.RecordBatch)
        ids.extend(batch.column(0).to_pylist())
    assert sorted(ids) == list(range(N_USERS))
    assert r.to_arrow().num_rows == N_USERS      # what iteration read, kept


def test_partial_iteration_then_to_arrow(data, session):
    r = session.sql("SELECT order_id FROM orders")
    it = iter(r)
    first = next(it)
    whole = r.to_arrow()
    assert whole.num_rows == N_ORDERS
    assert whole.column(0).to_pylist()[:first.num_rows] == first.column(0).to_pylist()


# ---- parameters ---------------------------------------------------------

def test_params_typed_from_python_values(data, session):
    q = "SELECT id, name FROM users WHERE id > $1 AND score < $2 AND category = $3"
    got = session.sql(q, params=[100, 50.5, "premium"]).to_arrow()
    same_multiset(got, duck(data, "SELECT id, name FROM users WHERE id > 100 AND "
                                  "score < 50.5 AND category = 'premium'"))


def test_params_bool_null_and_text_with_quotes(data, session):
    got = session.sql("SELECT count(*) AS n FROM users WHERE active = $1", [True]).to_arrow()
    want = duck(data, "SELECT count(*) AS n FROM users WHERE active = true")
    assert rows_of(got) == rows_of(want)
    got = session.sql("SELECT $1::text IS NULL AS a, $2::text AS b", [None, "it's"]).to_pylist()
    assert got == [{"a": True, "b": "it's"}]


def test_params_vector(data, session):
    q = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    r = session.sql("SELECT id, embedding <-> $1 AS d FROM documents ORDER BY d LIMIT 5",
                    [q]).to_arrow()
    emb = np.stack(data["documents"][1].column("embedding").to_numpy(zero_copy_only=False))
    d = np.sqrt(((emb.astype(np.float64) - q.astype(np.float64)) ** 2).sum(axis=1))
    want = np.argsort(d, kind="stable")[:5]
    assert r.column("id").to_pylist() == want.tolist()
    assert np.allclose(r.column("d").to_numpy(), d[want], rtol=1e-5)
    r2 = session.sql("SELECT id FROM documents ORDER BY embedding <-> $1 LIMIT 5",
                     [[0.1, 0.2, 0.3]]).to_arrow()
    assert r2.column("id").to_pylist() == want.tolist()


def test_params_errors():
    s = hdb.Session()
    with pytest.raises(TypeError):
        s.sql("SELECT $1", [object()])
    with pytest.raises(TypeError):
        s.sql("SELECT $1", "not a list")


# ---- errors ---------------------------------------------------------------

def test_error_unknown_table_has_sqlstate_and_position(session):
    q = "SELECT * FROM no_such_table"
    with pytest.raises(hdb.HyperStreamError) as ei:
        session.sql(q).to_arrow()
    e = ei.value
    assert e.sqlstate == "42P01"
    assert e.position == q.index("no_such_table") + 1
    assert "no_such_table" in str(e)


def test_error_unknown_column(session):
    q = "SELECT nope FROM users"
    with pytest.raises(hdb.HyperStreamError) as ei:
        session.sql(q).to_arrow()
    assert ei.value.sqlstate == "42703"
    assert ei.value.position == q.index("nope") + 1


def test_error_syntax(session):
    q = "SELEC 1"
    with pytest.raises(hdb.HyperStreamError) as ei:
        session.sql(q)
    assert ei.value.sqlstate == "42601"
    assert ei.value.position == 1


def test_error_division_by_zero(session):
    with pytest.raises(hdb.HyperStreamError) as ei:
        session.sql("SELECT id / 0 AS x FROM users").to_arrow()
    assert ei.value.sqlstate == "22012"
    assert "division by zero" in str(ei.value)


@pytest.mark.parametrize("query,state,text", [
    ("SELECT 100 / (id - 150000) AS x FROM big", "22012", "division by zero"),
    ("SELECT CAST(CASE WHEN id = 190000 THEN 'x' ELSE '1' END AS integer) FROM big",
     "22P02", "invalid input syntax"),
])
def test_error_while_streaming_has_its_sqlstate(tmp_path, query, state, text):
    # 200,000 rows: the statement returns (its first batch is fine) and the
    # error shows in a later batch, while the rows stream; PostgreSQL reports
    # it with the statement's SQLSTATE, and so must the exception
    t = hdb.Table(tmp_path / "big")
    t.write_arrow(pa.table({"id": pa.array(np.arange(200_000, dtype=np.int64))}))
    t.commit()
    s = hdb.Session()
    s.register("big", t)
    try:
        with pytest.raises(hdb.HyperStreamError) as ei:
            s.sql("SELECT * FROM missing")       # a failed statement first
        assert ei.value.sqlstate == "42P01"
        r = s.sql(query)                          # returns: the first batch is fine
        with pytest.raises(hdb.HyperStreamError) as ei:
            r.to_arrow()
        assert ei.value.sqlstate == state, str(ei.value)
        assert text in str(ei.value)
        assert ei.value.position is None
        assert s.sql("SELECT 1").to_arrow().num_rows == 1   # usable afterwards
    finally:
        s.close()


def test_session_usable_after_error(session):
    with pytest.raises(hdb.HyperStreamError):
        session.sql("SELECT * FROM missing").to_arrow()
    assert session.sql("SELECT count(*) AS n FROM users").to_pylist() == [{"n": N_USERS}]


# ---- Table.execute_sql and the README examples ------------------------------

def test_table_execute_sql(data):
    t, src = data["users"]
    got = t.execute_sql("SELECT * FROM t WHERE id > 100").to_arrow()
    same_multiset(got, duck(data, "SELECT * FROM users WHERE id > 100"))
    assert t.sql("SELECT count(*) AS n FROM t").to_pylist() == [{"n": N_USERS}]


def test_original_readme_sql_examples(data):
    users, _ = data["users"]
    session = hdb.Session()
    session.register("users", users)
    session.register("orders", data["orders"][0])
    session.register("documents", data["documents"][0])

    results = users.execute_sql("SELECT * FROM t WHERE id > 100")
    same_multiset(results.to_arrow(), duck(data, "SELECT * FROM users WHERE id > 100"))

    results = session.sql("""
        SELECT id, content,
               embedding <-> '[0.1, 0.2, 0.3]'::vector AS distance
        FROM documents
        WHERE category = 'science'
        ORDER BY distance
        LIMIT 10
    """).to_pandas()
    docs = data["documents"][1]
    emb = np.stack(docs.column("embedding").to_numpy(zero_copy_only=False)).astype(np.float64)
    d = np.sqrt(((emb - np.array([0.1, 0.2, 0.3], dtype=np.float32)) ** 2).sum(axis=1))
    sci = np.array(docs.column("category").to_pylist()) == "science"
    ids = np.flatnonzero(sci)[np.argsort(d[sci], kind="stable")[:10]]
    assert list(results["id"]) == ids.tolist()
    assert np.allclose(results["distance"].to_numpy(), d[ids], rtol=1e-5)

    results = session.sql("""
        SELECT u.name, o.amount
        FROM users u
        JOIN orders o ON u.id = o.user_id
        WHERE u.category = 'premium'
    """)
    same_multiset(results.to_arrow(), duck(data, "SELECT u.name, o.amount FROM users u JOIN "
                                                 "orders o ON u.id = o.user_id WHERE "
                                                 "u.category = 'premium'"))
    session.close()


# ---- zero copy --------------------------------------------------------------

def test_stream_into_pyarrow_without_copy(data, session):
    r = session.sql("SELECT id, score, name FROM users")
    before = pa.total_allocated_bytes()
    got = pa.table(r)                            # __arrow_c_stream__, streamed
    assert pa.total_allocated_bytes() - before == 0
    same_multiset(got, duck(data, "SELECT id, score, name FROM users"))
    with pytest.raises(RuntimeError):
        r.to_arrow()                             # the rows went to pyarrow


def test_to_arrow_keeps_library_buffers(data, session):
    r = session.sql("SELECT id, score FROM users")
    core = r._r.read_all()                       # what to_arrow() does, step by step
    exported = core.buffer_addresses()
    got = pa.table(core)
    seen = [b.address for col in got.columns for ch in col.chunks for b in ch.buffers()
            if b is not None]
    assert exported and set(seen) == set(exported)


def test_stream_into_duckdb(data, session):
    result = session.sql("SELECT id, category, score FROM users WHERE id % 3 = 0")
    con = duckdb.connect()
    got = con.sql("SELECT category, count(*) AS n, sum(score) AS s FROM result "
                  "GROUP BY category").to_arrow_table()
    want = duck(data, "SELECT category, count(*) AS n, sum(score) AS s FROM users "
                      "WHERE id % 3 = 0 GROUP BY category")
    same_multiset(got, want)
    assert result._streamed                      # DuckDB read the stream, not a copy


# ---- GIL, cancel, Ctrl-C ----------------------------------------------------

SLOW = "SELECT count(*) AS n FROM orders a, orders b, users c WHERE a.amount + b.amount > c.score"


def test_sql_releases_the_gil(data, session):
    q = "SELECT count(*) AS n FROM orders a, users b WHERE a.user_id < b.id"
    assert runs_without_the_gil(lambda: session.sql(q).to_arrow(), attempts=20)


def test_cancel_from_another_thread(data, session):
    stop = threading.Event()

    def cancel_repeatedly():
        while not stop.is_set():
            time.sleep(0.05)
            session.cancel()

    th = threading.Thread(target=cancel_repeatedly)
    th.start()
    try:
        with pytest.raises(KeyboardInterrupt) as ei:
            session.sql(SLOW).to_arrow()
    finally:
        stop.set()
        th.join()
    assert getattr(ei.value, "sqlstate", "57014") == "57014"
    # the session goes on
    assert session.sql("SELECT count(*) AS n FROM users").to_pylist() == [{"n": N_USERS}]


CHILD = r'''
import json, os, signal, sys, threading, time
import pyarrow as pa, numpy as np, hyperstreamdb as hdb
users, orders = hdb.Table(sys.argv[1]), hdb.Table(sys.argv[2])
s = hdb.Session()
s.register("users", users)
s.register("orders", orders)
armed = threading.Event()
def on_sigint(signum, frame):
    if armed.is_set():
        armed.clear()
        signal.default_int_handler(signum, frame)
signal.signal(signal.SIGINT, on_sigint)
def fire():
    while armed.is_set():
        time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)
armed.set()
th = threading.Thread(target=fire)
th.start()
out = {}
try:
    s.sql(sys.argv[3]).to_arrow()
    out["run"] = "finished"
except KeyboardInterrupt:
    out["run"] = "interrupted"
armed.clear()
th.join()
out["after"] = s.sql("SELECT count(*) AS n FROM users").to_pylist()[0]["n"]
print(json.dumps(out))
'''


def test_ctrl_c_cancels_a_statement(data):
    p = subprocess.run([sys.executable, "-c", CHILD, data["users"][0].path,
                        data["orders"][0].path, SLOW],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"run": "interrupted", "after": N_USERS}


# ---- sessions and tables ----------------------------------------------------

def test_register_unregister_and_names(data):
    s = hdb.Session()
    s.register("u", data["users"][0])
    assert s.sql("SELECT count(*) AS n FROM u").to_pylist() == [{"n": N_USERS}]
    assert set(s.tables) == {"u"}
    s.unregister("u")
    with pytest.raises(hdb.HyperStreamError) as ei:
        s.sql("SELECT * FROM u").to_arrow()
    assert ei.value.sqlstate == "42P01"
    with pytest.raises(TypeError):
        s.register("x", "not a table")
    s.close()
    assert s.closed
    with pytest.raises(ValueError):
        s.sql("SELECT 1")


def test_registered_table_outlives_its_close(tmp_path):
    t = hdb.Table(tmp_path / "t")
    t.write_arrow(pa.table({"x": pa.array([1, 2, 3], pa.int64())}))
    t.commit()
    s = hdb.Session()
    s.register("t", t)
    t.close()                                    # deferred: the session borrows it
    assert t._h.closed
    assert s.sql("SELECT sum(x) AS s FROM t").to_pylist() == [{"s": 6}]
    s.close()                                    # now the handle closes
    assert t._h.closed
    with pytest.raises(ValueError):
        t.to_arrow()


def test_result_outlives_session_close(data):
    s = hdb.Session()
    s.register("users", data["users"][0])
    r = s.sql("SELECT id FROM users")
    s.close()                                    # closes when r is gone
    assert r.to_arrow().num_rows == N_USERS
    del r


def test_session_options(data, tmp_path):
    s = hdb.Session(threads=1, memory_limit="64MB")
    s.register("users", data["users"][0])
    assert s.sql("SELECT count(*) AS n FROM users").to_pylist() == [{"n": N_USERS}]
    s.close()
    with pytest.raises(ValueError):
        hdb.Session(threads=0)
    with pytest.raises(ValueError):
        hdb.Session(memory_limit="lots")


def test_sql_catalog_tables_as_namespace_dot_table(tmp_path):
    """pyiceberg creates and fills a table in its SQLite catalog; the session
    opened on that catalog reads it as db.events."""
    pyiceberg_sql = require_module("pyiceberg.catalog.sql")
    db, wh = tmp_path / "cat.db", tmp_path / "wh"
    wh.mkdir()
    cat = pyiceberg_sql.SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
    cat.create_namespace("db")
    src = pa.table({"id": pa.array(np.arange(100, dtype=np.int64)),
                    "kind": pa.array([["a", "b", "c"][i % 3] for i in range(100)])})
    t = cat.create_table("db.events", schema=src.schema)
    t.append(src)
    s = hdb.Session(catalog=db, warehouse=wh)
    got = s.sql("SELECT kind, count(*) AS n FROM db.events WHERE id >= 10 GROUP BY kind").to_arrow()
    con = duckdb.connect()
    con.register("src", src)
    want = con.sql("SELECT kind, count(*) AS n FROM src WHERE id >= 10 GROUP BY kind").to_arrow_table()
    same_multiset(got, want)
    s.close()


def test_path_table_by_quoted_path(data):
    t, src = data["orders"]
    s = hdb.Session()
    got = s.sql(f'SELECT count(*) AS n, sum(amount) AS total FROM "{t.path}"').to_arrow()
    con = duckdb.connect()
    con.register("orders", src)
    same_multiset(got, con.sql("SELECT count(*) AS n, sum(amount) AS total FROM orders")
                  .to_arrow_table())
    s.close()


def test_directory_catalog_registers_its_tables(tmp_path):
    a = pa.table({"x": pa.array([1, 2, 3], pa.int64())})
    b = pa.table({"y": pa.array(["p", "q"])})
    for name, src in (("alpha", a), ("beta", b)):
        t = hdb.Table(tmp_path / name)
        t.write_arrow(src)
        t.commit()
    (tmp_path / "not_a_table").mkdir()
    s = hdb.Session(catalog=tmp_path)
    assert sorted(s.tables) == ["alpha", "beta"]
    got = s.sql("SELECT x, y FROM alpha CROSS JOIN beta").to_arrow()
    con = duckdb.connect()
    con.register("alpha", a)
    con.register("beta", b)
    same_multiset(got, con.sql("SELECT x, y FROM alpha CROSS JOIN beta").to_arrow_table())
    s.close()


def test_dml_tags_rowcounts_and_the_table_after(tmp_path):
    """INSERT / UPDATE / DELETE through a session: tags and rowcounts as
    PostgreSQL reports them; the Table (whose handle the session borrows)
    and DuckDB, given the same statements, hold the same rows after."""
    src = pa.table({"id": pa.array(np.arange(10, dtype=np.int64)),
                    "v": pa.array(np.arange(10, dtype=np.float64) / 2)})
    t = hdb.Table(tmp_path / "t")
    t.write_arrow(src)
    t.commit()
    s = hdb.Session()
    s.register("t", t)
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    steps = [("INSERT INTO t VALUES (100, 1.5), (101, NULL)", "INSERT 0 2", 2),
             ("UPDATE t SET v = v * 10 WHERE id < 3", "UPDATE 3", 3),
             ("DELETE FROM t WHERE id % 4 = 1", "DELETE 4", 4)]
    for stmt, tag, n in steps:
        r = s.sql(stmt)
        assert not r.has_rows
        assert (r.tag, r.rowcount) == (tag, n)
        con.execute(stmt)
        same_multiset(t.to_arrow(), con.sql("SELECT * FROM t").to_arrow_table())
        same_multiset(s.sql("SELECT * FROM t").to_arrow(),
                      con.sql("SELECT * FROM t").to_arrow_table())
    s.close()

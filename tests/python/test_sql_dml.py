"""SQL DML (src/sql/dml.c) against DuckDB, the oracle.

Random statement sequences - INSERT VALUES / INSERT SELECT, DELETE [USING],
UPDATE [FROM], MERGE, COPY FROM csv/parquet, BEGIN ... COMMIT/ROLLBACK -
run on our table through a session (ctypes on hs_session_execute) and on a
DuckDB table with the same rows: after every statement the tables are equal
(as multisets) and the command tags carry DuckDB's row counts.  At the end
pyiceberg reads our table equal to DuckDB's.  PostgreSQL behaviours DuckDB
does not share (MERGE matching a target row twice is 21000) are checked
against values written here.
"""
import ctypes
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import require_module  # noqa: E402

duckdb = require_module("duckdb")
require_module("pyiceberg")
from pyiceberg.table import StaticTable  # noqa: E402
from test_table_pyiceberg import HsFail, Lib, _Err  # noqa: E402


class SqlLib(Lib):
    def __init__(self):
        super().__init__()
        L = self.lib
        vp, cp = ctypes.c_void_p, ctypes.c_char_p
        L.hs_session_open.argtypes = [vp, ctypes.POINTER(vp), vp]
        L.hs_session_register.argtypes = [vp, cp, vp, vp]
        L.hs_session_execute.argtypes = [vp, cp, ctypes.POINTER(vp), vp]
        for n in ("hs_session_open", "hs_session_register", "hs_session_execute"):
            getattr(L, n).restype = ctypes.c_int
        L.hs_session_close.argtypes = [vp]
        L.hs_session_sqlstate.argtypes = [vp]
        L.hs_session_sqlstate.restype = cp
        L.hs_result_tag.argtypes = [vp]
        L.hs_result_tag.restype = cp
        L.hs_result_free.argtypes = [vp]
        L.hs_result_has_rows.argtypes = [vp]
        L.hs_result_has_rows.restype = ctypes.c_int
        L.hs_result_stream.argtypes = [vp, vp, vp]
        L.hs_result_stream.restype = ctypes.c_int

    def session(self):
        s = ctypes.c_void_p()
        self.call("hs_session_open", None, ctypes.byref(s))
        return s

    def register(self, s, name, t):
        self.call("hs_session_register", s, name.encode(), t)

    def execute(self, s, sql):
        """The command tag; raises HsFail with .sqlstate on error."""
        r = ctypes.c_void_p()
        err = _Err()
        rc = self.lib.hs_session_execute(s, sql.encode(), ctypes.byref(r), ctypes.byref(err))
        if rc != 0:
            e = HsFail(rc, err.msg.decode(errors="replace"))
            e.sqlstate = self.lib.hs_session_sqlstate(s).decode()
            raise e
        tag = self.lib.hs_result_tag(r).decode()
        self.lib.hs_result_free(r)
        return tag

    def execute_rows(self, s, sql):
        """(tag, rows as a list of tuples) of a statement that returns rows."""
        r = ctypes.c_void_p()
        err = _Err()
        rc = self.lib.hs_session_execute(s, sql.encode(), ctypes.byref(r), ctypes.byref(err))
        if rc != 0:
            raise HsFail(rc, err.msg.decode(errors="replace"))
        try:
            tag = self.lib.hs_result_tag(r).decode()
            assert self.lib.hs_result_has_rows(r)
            from test_table_pyiceberg import _Stream
            st = _Stream()
            self.call("hs_result_stream", r, ctypes.byref(st))
            tbl = pa.RecordBatchReader._import_from_c(ctypes.addressof(st)).read_all()
        finally:
            self.lib.hs_result_free(r)
        return tag, [tuple(row.values()) for row in tbl.to_pylist()]


@pytest.fixture(scope="module")
def hs():
    return SqlLib()


SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.int32()),
                    ("s", pa.string()), ("v", pa.float64())])
DUCK_DDL = "CREATE TABLE {} (id BIGINT NOT NULL, k INTEGER, s VARCHAR, v DOUBLE)"


def _sorted(rows):
    def key(r):
        return tuple((x is None, x if x is not None else 0) for x in r)
    return sorted(rows, key=key)


def rows_of(table):
    return _sorted([(r["id"], r["k"], r["s"], r["v"]) for r in table.to_pylist()])


def duck_rows(con, name="t"):
    return _sorted([tuple(r) for r in con.execute(f"SELECT id, k, s, v FROM {name}").fetchall()])


def lit(x):
    if x is None:
        return "NULL"
    if isinstance(x, str):
        return "'" + x.replace("'", "''") + "'"
    return repr(x)


def random_row(rng, i):
    return (i, rng.choice([None, rng.randint(-5, 20)]), rng.choice([None, "a", "b", "c", "dd"]),
            rng.choice([None, float(rng.randint(0, 50)) / 2]))


class Pair:
    """Our table in a session + the same table in DuckDB."""

    def __init__(self, hs, tmp, fv, spec=None):
        self.hs = hs
        self.cat = hs.path_catalog(tmp / "wh")
        self.t = hs.create(self.cat, "t", SCHEMA, spec=spec, fv=fv)
        self.src = hs.create(self.cat, "src", SCHEMA, fv=2)
        self.s = hs.session()
        hs.register(self.s, "t", self.t)
        hs.register(self.s, "src", self.src)
        self.duck = duckdb.connect()
        self.duck.execute(DUCK_DDL.format("t"))
        self.duck.execute(DUCK_DDL.format("src"))
        self.tmp = tmp

    def load(self, name, rows):
        tbl = pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)
        self.hs.append(self.t if name == "t" else self.src, tbl)
        if rows:
            self.duck.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?)", rows)

    def ours(self):
        return rows_of(self.hs.scan(self.t))

    def both(self, sql, duck_sql=None, check_tag=True):
        """Runs sql on both; returns our tag.  Counts must agree; with
        RETURNING, the rows returned too (as multisets)."""
        if " RETURNING " in sql:
            tag, rows = self.hs.execute_rows(self.s, sql)
            want = self.duck.execute(duck_sql or sql).fetchall()
            assert _sorted(rows) == _sorted([tuple(r) for r in want]), f"{sql}: RETURNING"
            assert int(tag.split()[-1]) == len(want), f"{sql}: tag {tag}"
            return tag
        tag = self.hs.execute(self.s, sql)
        res = self.duck.execute(duck_sql or sql).fetchall()
        if check_tag and tag.split()[0] in ("INSERT", "UPDATE", "DELETE", "MERGE", "COPY"):
            n = int(tag.split()[-1])
            assert res and res[0][0] == n, f"{sql}: our tag {tag}, DuckDB {res}"
        return tag

    def check(self, what):
        assert self.ours() == duck_rows(self.duck), what

    def close(self):
        self.hs.lib.hs_session_close(self.s)
        self.hs.lib.hs_table_close(self.t)
        self.hs.lib.hs_table_close(self.src)
        self.hs.lib.hs_catalog_close(self.cat)
        self.duck.close()


# statements per random sequence (HS_SQL_DML_STEPS for longer runs)
STEPS = int(os.environ.get("HS_SQL_DML_STEPS", "25"))


def random_statement(rng, next_id):
    """(sql, duckdb sql or None, ids used)"""
    kind = rng.choice(["insert", "insert_cols", "insert_select", "delete", "delete_using",
                       "update", "update_from", "merge", "merge_delete", "subquery"])
    if kind == "subquery":
        c = rng.randint(-5, 15)
        return rng.choice([
            f"DELETE FROM t WHERE id IN (SELECT id FROM src WHERE k > {c})",
            f"DELETE FROM t WHERE k NOT IN (SELECT k FROM src WHERE id < {20 + 2 * c})",
            f"UPDATE t SET v = (SELECT max(v) FROM src WHERE k < {c}) WHERE k < {c}",
            f"UPDATE t SET s = 'e' WHERE EXISTS (SELECT 1 FROM src WHERE k = {c})",
            f"MERGE INTO t USING src ON t.id = src.id AND src.k > (SELECT min(k) FROM src) "
            f"WHEN MATCHED THEN UPDATE SET k = 0"]), None, 0
    if kind == "insert":
        rows = [random_row(rng, next_id + i) for i in range(rng.randint(1, 4))]
        vals = ", ".join("(" + ", ".join(lit(x) for x in r) + ")" for r in rows)
        return f"INSERT INTO t VALUES {vals}", None, len(rows)
    if kind == "insert_cols":
        return (f"INSERT INTO t (v, id) VALUES ({lit(rng.randint(0, 9) / 4)}, {next_id}), "
                f"(NULL, {next_id + 1})"), None, 2
    if kind == "insert_select":
        return (f"INSERT INTO t SELECT id + {next_id}, k, s, v FROM src WHERE k > "
                f"{rng.randint(-5, 15)}"), None, 1000
    if kind == "delete":
        cond = rng.choice([f"k < {rng.randint(-3, 10)}", f"s = {lit(rng.choice('abc'))}",
                           "v IS NULL", f"id % 7 = {rng.randint(0, 6)}",
                           f"k > 3 AND v < {rng.randint(0, 25)}", "s LIKE 'd%' OR k IS NULL"])
        return f"DELETE FROM t WHERE {cond}", None, 0
    if kind == "delete_using":
        return (f"DELETE FROM t USING src WHERE t.id = src.id AND src.k > {rng.randint(-5, 15)}",
                None, 0)
    if kind == "update":
        sets = rng.choice(["v = v + 1", "s = 'u', k = k * 2", "k = NULL",
                           "v = k / 2.0, s = s || 'x'", "k = id % 5"])
        cond = rng.choice([f"k > {rng.randint(-3, 12)}", "s IS NULL", f"id < {rng.randint(0, 60)}",
                           "v > 10 OR s = 'b'"])
        return f"UPDATE t SET {sets} WHERE {cond}", None, 0
    if kind == "update_from":
        return ("UPDATE t SET k = src.k, v = src.v + t.id FROM src WHERE t.id = src.id AND "
                f"src.k < {rng.randint(-5, 20)}"), None, 0
    if kind == "merge":
        c = rng.randint(-5, 15)
        return (f"MERGE INTO t USING src ON t.id = src.id "
                f"WHEN MATCHED AND src.k > {c} THEN UPDATE SET v = src.v, s = 'm' "
                f"WHEN NOT MATCHED AND src.k < {c + 5} THEN INSERT VALUES "
                f"(src.id, src.k, src.s, src.v)"), None, 0
    c = rng.randint(-5, 15)
    return (f"MERGE INTO t AS x USING (SELECT id, k, s, v FROM src WHERE k IS NOT NULL) AS y "
            f"ON x.id = y.id WHEN MATCHED AND y.k < {c} THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET k = y.k + 100 "
            f"WHEN NOT MATCHED THEN INSERT (id, s) VALUES (y.id, 'new')"), None, 0


SEEDS = [(2, None, 1), (3, None, 2), (2, "bucket(3, id)", 3), (3, "identity(s)", 4)] + [
    (2 + i % 2, [None, "bucket(3, id)", "identity(s)"][i % 3], 100 + i)
    for i in range(int(os.environ.get("HS_SQL_DML_SEEDS", "0")))]


@pytest.mark.parametrize("fv,spec,seed", SEEDS)
def test_random_statements_vs_duckdb(hs, tmp_path, fv, spec, seed):
    rng = random.Random(seed)
    p = Pair(hs, tmp_path, fv, spec)
    try:
        p.load("t", [random_row(rng, i) for i in range(40)])
        p.load("src", [random_row(rng, i) for i in range(20, 60)])   # ids unique
        p.check("initial")
        next_id = 1000
        for step in range(STEPS):
            sql, dsql, used = random_statement(rng, next_id)
            if rng.random() < 0.3 and not sql.startswith("MERGE"):
                joined = " FROM src WHERE t." in sql or " USING src " in sql
                sql += rng.choice([" RETURNING t.id, t.k", " RETURNING t.id * 2 AS twice"]
                                  if joined else
                                  [" RETURNING id", " RETURNING id, k, s",
                                   " RETURNING id * 2 AS twice, s IS NULL AS nos"])
            next_id += 100000 if used == 1000 else 10
            p.both(sql, dsql)
            p.check(f"step {step}: {sql}")
        py = StaticTable.from_metadata(hs.metadata_location(p.t)).scan().to_arrow()
        assert rows_of(py) == duck_rows(p.duck), "pyiceberg"
    finally:
        p.close()


def test_transactions(hs, tmp_path):
    p = Pair(hs, tmp_path, 3)
    try:
        p.load("t", [(i, i, "a", float(i)) for i in range(10)])
        before = p.ours()
        assert hs.execute(p.s, "BEGIN") == "BEGIN"
        assert hs.execute(p.s, "DELETE FROM t WHERE id < 3") == "DELETE 3"
        assert hs.execute(p.s, "INSERT INTO t VALUES (100, 1, 'n', 1.5)") == "INSERT 0 1"
        # the transaction sees its own changes
        assert hs.execute(p.s, "UPDATE t SET k = 7 WHERE id = 100 OR id = 1") == "UPDATE 1"
        assert hs.execute(p.s, "DELETE FROM t WHERE k = 7") == "DELETE 2"   # ids 7 and 100
        assert p.ours() == before   # nothing committed yet
        assert hs.execute(p.s, "ROLLBACK") == "ROLLBACK"
        assert p.ours() == before
        assert hs.execute(p.s, "BEGIN") == "BEGIN"
        p.duck.execute("BEGIN")
        for sql in ["DELETE FROM t WHERE id < 3", "INSERT INTO t VALUES (100, 1, 'n', 1.5)",
                    "UPDATE t SET k = 7 WHERE id = 100 OR id = 1", "DELETE FROM t WHERE k = 7",
                    "UPDATE t SET v = v * 2 WHERE id > 5"]:
            hs.execute(p.s, sql)
            p.duck.execute(sql)
            # a SELECT inside the transaction sees its uncommitted changes (as DuckDB's)
            for q in ["SELECT id, k, s, v FROM t",
                      "SELECT a.id, b.k, a.s, b.v FROM t a JOIN t AS b ON a.id = b.id WHERE a.v > 2"]:
                _, got = hs.execute_rows(p.s, q)
                assert _sorted(got) == _sorted([tuple(r) for r in p.duck.execute(q).fetchall()]), \
                    (sql, q)
        p.duck.execute("COMMIT")
        assert hs.execute(p.s, "COMMIT") == "COMMIT"
        p.check("after COMMIT")
        # an error aborts the transaction until ROLLBACK
        hs.execute(p.s, "BEGIN")
        hs.execute(p.s, "DELETE FROM t WHERE id = 9")
        with pytest.raises(HsFail) as e:
            hs.execute(p.s, "UPDATE t SET nope = 1")
        assert e.value.sqlstate == "42703"
        with pytest.raises(HsFail) as e:
            hs.execute(p.s, "DELETE FROM t WHERE id = 8")
        assert e.value.sqlstate == "25P02"
        assert hs.execute(p.s, "COMMIT") == "ROLLBACK"
        p.check("the failed transaction left nothing")
    finally:
        p.close()


def test_merge_errors_and_lineage(hs, tmp_path):
    p = Pair(hs, tmp_path, 3)
    try:
        p.load("t", [(i, i, "a", float(i)) for i in range(5)])
        p.load("src", [(1, 10, "x", 1.0), (1, 11, "y", 2.0), (7, 1, "z", 3.0)])
        before = p.ours()
        with pytest.raises(HsFail) as e:
            hs.execute(p.s, "MERGE INTO t USING src ON t.id = src.id "
                            "WHEN MATCHED THEN UPDATE SET k = src.k")
        assert e.value.sqlstate == "21000"
        assert p.ours() == before
        # matched twice but DO NOTHING is no second action; NOT MATCHED inserts
        assert hs.execute(p.s, "MERGE INTO t USING src ON t.id = src.id "
                               "WHEN MATCHED THEN DO NOTHING "
                               "WHEN NOT MATCHED THEN INSERT (id, k) VALUES (src.id, src.k)") \
            == "MERGE 1"
        ids = {r["id"]: r["_row_id"] for r in hs.scan(p.t, columns=["id", "_row_id"]).to_pylist()}
        hs.execute(p.s, "UPDATE t SET s = 'u' WHERE id IN (2, 3)")
        after = {r["id"]: (r["_row_id"], r["s"])
                 for r in hs.scan(p.t, columns=["id", "_row_id", "s"]).to_pylist()}
        assert after[2] == (ids[2], "u") and after[3] == (ids[3], "u")   # lineage kept
        with pytest.raises(HsFail) as e:
            hs.execute(p.s, "UPDATE t SET id = NULL WHERE id = 1")
        assert e.value.sqlstate == "23502"
        with pytest.raises(HsFail) as e:
            hs.execute(p.s, "UPDATE t SET k = s WHERE id = 1")
        assert e.value.sqlstate == "42804"
    finally:
        p.close()


def test_copy(hs, tmp_path):
    p = Pair(hs, tmp_path, 2)
    try:
        csv = tmp_path / "in.csv"
        csv.write_text('id,k,s,v\n1,2,"a,b",1.5\n2,,"",\n3,4,plain,2\n')
        assert hs.execute(p.s, f"COPY t FROM '{csv}' WITH (FORMAT csv, HEADER)") == "COPY 3"
        # PostgreSQL's CSV rules: a quoted empty cell is the empty string, an
        # unquoted one NULL (DuckDB's reader makes both NULL: not the oracle here)
        p.duck.execute("INSERT INTO t VALUES (1, 2, 'a,b', 1.5), (2, NULL, '', NULL), "
                       "(3, 4, 'plain', 2)")
        p.check("COPY FROM csv")
        csv2 = tmp_path / "in2.txt"
        csv2.write_text("5;6;x;0.25\n")
        assert hs.execute(p.s, f"COPY t FROM '{csv2}' (FORMAT csv, DELIMITER ';')") == "COPY 1"
        p.duck.execute(f"INSERT INTO t VALUES (5, 6, 'x', 0.25)")
        pq_in = tmp_path / "in.parquet"
        pq.write_table(pa.table({"v": [9.5], "id": pa.array([10], pa.int32())}), pq_in)
        assert hs.execute(p.s, f"COPY t FROM '{pq_in}'") == "COPY 1"
        p.duck.execute("INSERT INTO t (id, v) VALUES (10, 9.5)")
        p.check("COPY FROM parquet")
        # CSV out, PostgreSQL's text forms and quoting (values written here)
        out_csv = tmp_path / "out.csv"
        assert hs.execute(p.s, f"COPY (SELECT id, k, s, v, k > 3 AS big FROM t WHERE id <= 3 "
                               f"ORDER BY id) TO '{out_csv}' WITH (FORMAT csv, HEADER)") == "COPY 3"
        assert out_csv.read_text() == ('id,k,s,v,big\n1,2,"a,b",1.5,f\n2,,"",,\n'
                                       '3,4,plain,2,t\n')
        # a column list: the file holds those columns, in that order
        csv3 = tmp_path / "in3.csv"
        csv3.write_text("x,20\n,21\n")
        assert hs.execute(p.s, f"COPY t (s, id) FROM '{csv3}' (FORMAT csv)") == "COPY 2"
        p.duck.execute("INSERT INTO t (s, id) VALUES ('x', 20), (NULL, 21)")
        p.check("COPY FROM csv with a column list")
        out = tmp_path / "out.parquet"
        assert hs.execute(p.s, f"COPY (SELECT id, s FROM t WHERE id > 1) TO '{out}'") == "COPY 6"
        got = sorted(pq.read_table(out).to_pylist(), key=lambda r: r["id"])
        want = p.duck.execute("SELECT id, s FROM t WHERE id > 1 ORDER BY id").fetchall()
        assert [(r["id"], r["s"]) for r in got] == want
    finally:
        p.close()


def test_java_reads_sql_result(hs, tmp_path):
    """Stock Java Iceberg (tests/python/test_iceberg_java.py's harness) reads
    what a random v3 statement sequence left, equal to DuckDB's table."""
    import shutil
    from conftest import require
    from test_iceberg_java import HARNESS_JAR, JavaHarness, _local
    require(shutil.which("java") is not None, "java not installed")
    require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
    rng = random.Random(77)
    p = Pair(hs, tmp_path, 3, "bucket(2, id)")
    java = JavaHarness(HARNESS_JAR)
    try:
        p.load("t", [random_row(rng, i) for i in range(40)])
        p.load("src", [random_row(rng, i) for i in range(20, 60)])
        next_id = 1000
        for _ in range(15):
            sql, dsql, used = random_statement(rng, next_id)
            next_id += 100000 if used == 1000 else 10
            p.both(sql, dsql)
        meta = _local(hs.metadata_location(p.t))
        jrows = java.read(meta, columns=["id", "k", "s", "v"], tmp=tmp_path)
        assert _sorted([(r["id"], r["k"], r["s"], r["v"]) for r in jrows]) == duck_rows(p.duck)
    finally:
        java.close()
        p.close()


@pytest.mark.parametrize("fv", [2, 3])
def test_indexed_table(hs, tmp_path, fv):
    """A table with declared sidecar indexes: the files a statement writes
    get their sidecars (row deltas build them as appends do), and filtered
    queries that use the indexes keep returning DuckDB's rows."""
    rng = random.Random(500 + fv)
    p = Pair(hs, tmp_path, fv)
    try:
        p.load("t", [random_row(rng, i) for i in range(60)])
        p.load("src", [random_row(rng, i) for i in range(30, 80)])
        hs.execute(p.s, "CREATE INDEX ON t (k)")
        hs.execute(p.s, "CREATE INDEX ON t USING hash (s)")
        next_id = 1000
        for step in range(15):
            sql, dsql, used = random_statement(rng, next_id)
            next_id += 100000 if used == 1000 else 10
            p.both(sql, dsql)
            for flt in (f"k = {rng.randint(-5, 20)}", f"s = '{rng.choice('abc')}'",
                        f"k > {rng.randint(0, 10)} AND s IS NOT NULL"):
                ours = rows_of(hs.scan(p.t, flt=flt))
                want = _sorted([tuple(r) for r in p.duck.execute(
                    f"SELECT id, k, s, v FROM t WHERE {flt}").fetchall()])
                assert ours == want, f"step {step}: {sql}; filter {flt}"
    finally:
        p.close()


def test_vector_columns(hs, tmp_path):
    """pgvector columns (list<float32>): text literals and vector
    expressions are assigned with a cast to vector; the values read back are
    the ones written here; a vector-distance WHERE selects the rows."""
    cat = hs.path_catalog(tmp_path)
    sch = pa.schema([pa.field("id", pa.int64(), nullable=False), ("emb", pa.list_(pa.float32()))])
    t = hs.create(cat, "t", sch, fv=3)
    s = hs.session()
    try:
        hs.append(t, pa.table({"id": pa.array([1, 2], pa.int64()),
                               "emb": pa.array([[1, 2, 3], [4, 5, 6]], pa.list_(pa.float32()))}))
        hs.register(s, "t", t)
        assert hs.execute(s, "INSERT INTO t VALUES (3, '[7,8,9]')") == "INSERT 0 1"
        assert hs.execute(s, "UPDATE t SET emb = '[0,0,1]' WHERE id = 1") == "UPDATE 1"
        assert hs.execute(s, "UPDATE t SET emb = emb + '[1,1,1]'::vector WHERE id = 2") == \
            "UPDATE 1"
        assert hs.execute(s, "MERGE INTO t USING (SELECT 3 AS id, '[9,9,9]'::vector AS e) AS q "
                             "ON t.id = q.id WHEN MATCHED THEN UPDATE SET emb = q.e") == "MERGE 1"
        assert hs.execute_rows(s, "DELETE FROM t WHERE emb <-> '[0,0,1]' < 0.5 RETURNING id") == \
            ("DELETE 1", [(1,)])
        got = sorted((r["id"], r["emb"]) for r in hs.scan(t).to_pylist())
        assert got == [(2, [5.0, 6.0, 7.0]), (3, [9.0, 9.0, 9.0])]
        with pytest.raises(HsFail) as e:   # a list of integers is no vector column
            hs.execute(s, "UPDATE t SET emb = 5")
        assert e.value.sqlstate == "42804"
    finally:
        hs.lib.hs_session_close(s)
        hs.lib.hs_table_close(t)
        hs.lib.hs_catalog_close(cat)

"""SQL DDL (src/sql/ddl.c): CREATE TABLE (PARTITION BY / Spark's PARTITIONED BY
with Iceberg transforms, WITH options), CREATE TABLE AS, ALTER TABLE, DROP
TABLE, CREATE/DROP SCHEMA, in a session over a SQLite catalog and on path
tables.

Oracles: pyiceberg reads what the statements made (schema types, partition
spec, format version, properties, and the rows); DuckDB computes what CREATE
TABLE AS must hold from the same source rows; the SQLSTATEs are PostgreSQL's
codes for the same mistakes (42P07, 42P01, 42701, 42P06, 2BP01, 3F000).
"""
import decimal

import duckdb
import pyarrow as pa
import pytest
from conftest import require_module

hdb = require_module("hyperstreamdb")
pyiceberg_catalog = require_module("pyiceberg.catalog.sql")
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform  # noqa: E402
from pyiceberg.types import (  # noqa: E402
    BooleanType, DateType, DecimalType, DoubleType, FloatType, IntegerType, ListType, LongType,
    StringType, TimestamptzType,
)


@pytest.fixture()
def env(tmp_path):
    uri = f"sqlite:///{tmp_path}/cat.db"
    wh = tmp_path / "wh"
    cat = hdb.Catalog(uri, warehouse=str(wh))
    s = hdb.Session(catalog=cat)
    py = pyiceberg_catalog.SqlCatalog("default", uri=uri, warehouse=f"file://{wh}")
    yield s, cat, py
    cat.close()


def _state(excinfo):
    return getattr(excinfo.value, "sqlstate", None)


def test_create_table_types_partitioning_options(env):
    s, cat, py = env
    s.sql("CREATE SCHEMA db")
    s.sql("CREATE TABLE db.t (id bigint NOT NULL, n integer, name text, price numeric(10,2), "
          "r real, x double precision, ts timestamptz, d date, ok boolean, emb vector(3)) "
          "PARTITIONED BY (bucket(4, id), days(ts), name) "
          "WITH (format_version = 3, \"write.target-file-size-bytes\" = 1048576, owner = 'qa')")
    t = py.load_table("db.t")
    assert t.format_version == 3
    types = {f.name: (f.field_type, f.required) for f in t.schema().fields}
    assert types["id"] == (LongType(), True)
    assert types["n"] == (IntegerType(), False)
    assert types["name"][0] == StringType()
    assert types["price"][0] == DecimalType(10, 2)
    assert types["r"][0] == FloatType() and types["x"][0] == DoubleType()
    assert types["ts"][0] == TimestamptzType() and types["d"][0] == DateType()
    assert types["ok"][0] == BooleanType()
    assert isinstance(types["emb"][0], ListType) and types["emb"][0].element_type == FloatType()
    spec = t.spec()
    got = [(t.schema().find_field(f.source_id).name, f.transform) for f in spec.fields]
    assert got == [("id", BucketTransform(4)), ("ts", DayTransform()),
                   ("name", IdentityTransform())]
    assert t.properties["write.target-file-size-bytes"] == "1048576"
    assert t.properties["owner"] == "qa"

    # rows inserted through SQL read back by pyiceberg
    s.sql("INSERT INTO db.t VALUES (1, 10, 'a', 1.50, 0.5, 2.25, '2024-01-02 03:04:05+00', "
          "'2024-01-02', true, '[1,2,3]'), (2, NULL, 'b', NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
    rows = sorted(py.load_table("db.t").scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [r["id"] for r in rows] == [1, 2]
    assert rows[0]["price"] == decimal.Decimal("1.50") and rows[0]["emb"] == [1.0, 2.0, 3.0]
    assert rows[1]["n"] is None and rows[1]["ts"] is None

    # PostgreSQL's own syntax too: PARTITION BY <strategy> (...)
    s.sql("CREATE TABLE db.p (k int, v text) PARTITION BY LIST (truncate(2, v), k)")
    spec = py.load_table("db.p").spec()
    assert [str(f.transform) for f in spec.fields] == ["truncate[2]", "identity"]

    # IF NOT EXISTS does nothing; errors carry PostgreSQL's SQLSTATEs
    s.sql("CREATE TABLE IF NOT EXISTS db.t (z int)")
    assert [f.name for f in py.load_table("db.t").schema().fields][0] == "id"
    cases = [
        ("CREATE TABLE db.t (z int)", "42P07"),
        ("CREATE TABLE db.u (a int, a text)", "42701"),
        ("CREATE TABLE nons (a int)", "3F000"),
        ("CREATE SCHEMA db", "42P06"),
        ("DROP TABLE db.nothere", "42P01"),
        ("ALTER TABLE db.nothere ADD COLUMN c int", "42P01"),
        ("CREATE TABLE db.u (a int PRIMARY KEY)", "0A000"),
        ("CREATE TABLE db.u (a int) PARTITION BY RANGE (sqrt(a))", "0A000"),
        ("CREATE TABLE db.u (a int) WITH (format_version = 1)", "22023"),
    ]
    for q, state in cases:
        with pytest.raises(hdb.HyperStreamError) as e:
            s.sql(q)
        assert _state(e) == state, (q, _state(e), str(e.value))
    assert "db.u" not in cat.list_tables("db")


def test_ddl_refused_in_transaction(env):
    s, cat, py = env
    s.sql("CREATE SCHEMA db")
    s.sql("CREATE TABLE db.t (a int)")
    s.sql("BEGIN")
    s.sql("INSERT INTO db.t VALUES (1)")
    with pytest.raises(hdb.HyperStreamError) as e:
        s.sql("CREATE TABLE db.u (a int)")
    assert _state(e) == "0A000"
    s.sql("ROLLBACK")
    assert "db.u" not in cat.list_tables("db")


def test_create_table_as(env):
    s, cat, py = env
    s.sql("CREATE SCHEMA db")
    src = pa.table({"id": pa.array(range(200), pa.int64()),
                    "cat": pa.array([f"c{i % 7}" for i in range(200)]),
                    "v": pa.array([i * 0.5 for i in range(200)])})
    t = cat.create_table("db.src", src.schema)
    t.write(src)
    t.commit()
    q = "SELECT cat, count(*) AS n, sum(v) AS total FROM {} WHERE id % 3 <> 0 GROUP BY cat"
    r = s.sql("CREATE TABLE db.agg AS " + q.format("db.src"))
    want = sorted(duckdb.sql(q.format("src")).fetchall())
    got = py.load_table("db.agg").scan().to_arrow()
    assert sorted(zip(*(got.column(c).to_pylist() for c in ("cat", "n", "total")))) == want
    assert r.rows_affected == len(want) if hasattr(r, "rows_affected") else True
    # column names from the statement; WITH NO DATA creates it empty
    s.sql("CREATE TABLE db.ren (a, b) AS SELECT id, cat FROM db.src WHERE id < 5")
    ren = py.load_table("db.ren")
    assert [f.name for f in ren.schema().fields] == ["a", "b"]
    assert sorted(ren.scan().to_arrow().column("a").to_pylist()) == [0, 1, 2, 3, 4]
    s.sql("CREATE TABLE db.empty AS SELECT * FROM db.src WITH NO DATA")
    e = py.load_table("db.empty")
    assert [f.name for f in e.schema().fields] == ["id", "cat", "v"]
    assert e.scan().to_arrow().num_rows == 0
    # a failing query creates nothing
    with pytest.raises(hdb.HyperStreamError):
        s.sql("CREATE TABLE db.bad AS SELECT 1 / (id - id) FROM db.src")
    assert "db.bad" not in cat.list_tables("db")


def test_alter_drop_rename(env, tmp_path):
    s, cat, py = env
    s.sql("CREATE SCHEMA db")
    s.sql("CREATE TABLE db.t (id int NOT NULL, name text, flag boolean)")
    s.sql("INSERT INTO db.t VALUES (1, 'a', true), (2, 'b', false)")
    s.sql("ALTER TABLE db.t ADD COLUMN extra int")
    s.sql("ALTER TABLE db.t ALTER COLUMN extra TYPE bigint")
    s.sql("ALTER TABLE db.t ALTER COLUMN id TYPE bigint")
    s.sql("ALTER TABLE db.t ALTER COLUMN id DROP NOT NULL")
    s.sql("ALTER TABLE db.t RENAME COLUMN name TO title")
    s.sql("ALTER TABLE db.t DROP COLUMN flag")
    s.sql("ALTER TABLE db.t SET (\"commit.retry.num-retries\" = 7, owner = 'qa', tmp = 1)")
    s.sql("ALTER TABLE db.t RESET (tmp)")
    s.sql("INSERT INTO db.t VALUES (3, 'c', 30)")
    t = py.load_table("db.t")
    types = {f.name: (f.field_type, f.required) for f in t.schema().fields}
    assert types == {"id": (LongType(), False), "title": (StringType(), False),
                     "extra": (LongType(), False)}
    assert t.properties["commit.retry.num-retries"] == "7" and t.properties["owner"] == "qa"
    assert "tmp" not in t.properties
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "title": "a", "extra": None}, {"id": 2, "title": "b", "extra": None},
                    {"id": 3, "title": "c", "extra": 30}]
    assert sorted(r["title"] for r in s.sql("SELECT title FROM db.t").to_arrow().to_pylist()) == \
        ["a", "b", "c"]
    # Iceberg's promotions only (PostgreSQL would rewrite the column)
    with pytest.raises(hdb.HyperStreamError):
        s.sql("ALTER TABLE db.t ALTER COLUMN extra TYPE int")
    # rename the table within its namespace, then drop it
    s.sql("ALTER TABLE db.t RENAME TO t2")
    assert cat.list_tables("db") == ["db.t2"]
    assert s.sql("SELECT count(*) AS n FROM db.t2").to_arrow().to_pylist() == [{"n": 3}]
    s.sql("DROP TABLE db.t2")
    assert cat.list_tables("db") == []
    with pytest.raises(hdb.HyperStreamError) as e:
        s.sql("SELECT * FROM db.t2")
    assert _state(e) == "42P01"
    s.sql("DROP TABLE IF EXISTS db.t2")
    # schemas: a non-empty one is not dropped
    s.sql("CREATE TABLE db.k (a int)")
    with pytest.raises(hdb.HyperStreamError) as e:
        s.sql("DROP SCHEMA db")
    assert _state(e) == "2BP01"
    s.sql("DROP TABLE db.k")
    s.sql("DROP SCHEMA db")
    s.sql("DROP SCHEMA IF EXISTS db")
    assert "db" not in cat.list_namespaces()


def test_path_tables(tmp_path):
    s = hdb.Session()
    p = tmp_path / "pt"
    s.sql(f'CREATE TABLE "{p}" (a int, b text) WITH (format_version = 3)')
    s.sql(f"INSERT INTO \"{p}\" VALUES (1, 'x'), (2, 'y')")
    t = hdb.Table(str(p))
    assert t.format_version == 3
    assert sorted(t.to_arrow().column("a").to_pylist()) == [1, 2]
    s.sql(f'CREATE TABLE "{tmp_path}/copy" AS SELECT b, a * 10 AS a10 FROM "{p}"')
    c = hdb.Table(str(tmp_path / "copy"))
    assert sorted(c.to_arrow().to_pylist(), key=lambda r: r["a10"]) == [
        {"b": "x", "a10": 10}, {"b": "y", "a10": 20}]
    s.register("alias", t)
    with pytest.raises(hdb.HyperStreamError) as e:
        s.sql("DROP TABLE alias")
    assert _state(e) == "0A000"
    s.sql(f'DROP TABLE "{tmp_path}/copy"')
    assert not hdb.Table(str(tmp_path / "copy")).exists


def test_numeric_without_typmod_is_refused(env):
    """A column of PostgreSQL's unconstrained numeric keeps each value's own
    scale; a decimal128 column has one, so `numeric` / `decimal` without
    (p, s) is 0A000 in CREATE TABLE and ALTER TABLE (it used to become
    decimal(18,3) silently, rounding values to 3 digits); numeric(p) and
    numeric(p,s) are Iceberg decimals (pyiceberg reads them)."""
    s, cat, py = env
    s.sql("CREATE SCHEMA db")
    for q in ("CREATE TABLE db.u (a numeric)", "CREATE TABLE db.u (a decimal, b int)",
              "CREATE TABLE db.u (a numeric[])"):
        with pytest.raises(Exception) as ei:
            s.sql(q)
        assert _state(ei) == "0A000", q
        assert "numeric without precision and scale" in str(ei.value), q
    s.sql("CREATE TABLE db.u (a numeric(38,20), b decimal(12), c numeric(5,5))")
    types = {f.name: f.field_type for f in py.load_table("db.u").schema().fields}
    assert types == {"a": DecimalType(38, 20), "b": DecimalType(12, 0), "c": DecimalType(5, 5)}
    for q in ("ALTER TABLE db.u ADD COLUMN d numeric", "ALTER TABLE db.u ALTER COLUMN b TYPE numeric"):
        with pytest.raises(Exception) as ei:
            s.sql(q)
        assert _state(ei) == "0A000", q

"""The tables of the SQL golden corpus, built deterministically.

Each table is defined once here as a pyarrow table (seeded generators, no
clock, no randomness from the environment) plus how it is stored in
HyperStreamDB: partition spec, number of commits (= data files), scalar
indexes, and deletes applied after loading.  The same definition feeds both
sides of the comparison:

* the oracle (gen_expected.py): DuckDB loads each pyarrow table with
  CREATE TABLE AS and runs the same DELETE ... WHERE statements itself;
* our engine (runner.py): hyperstreamdb.Table.create + write_arrow/commit per
  chunk, add_index, Table.delete(filter) -- merge-on-read deletes.

Nothing here depends on our engine's output.

Tables
------
  t_all    200 rows, every column type SQL reads (bool, int16/32/64, float32/64,
           decimal(12,3), string, binary, date, timestamp, timestamptz, uuid,
           list<int32>, struct<x int32, y string>), NULLs in every column but id;
           4 data files
  t_empty  t_all's schema, no rows
  t_part   300 rows, partitioned by identity(region) and bucket(4, id)
  t_idx    3000 rows in 6 files, inverted index on cat, range index on k,
           then rows deleted (k % 97 = 0 via a filter, and cat = 'c7')
  t_del    300 rows, then two deletes (a < 20; s = 'gamma')
  dept, emp       a small schema for joins (NULL keys, duplicates, unmatched rows,
                  a self-referencing manager_id)
  s1, s2          integer/string multisets with duplicates and NULLs for set operations
  t_vec    2000 rows of 8-dimensional embeddings (list<float32>, 5% NULL) in 2 files,
           HNSW index on emb, inverted index on cat ('rare': 40 rows)
"""
import datetime as dt
import decimal
import random
import uuid

import pyarrow as pa

WORDS = ["alpha", "beta", "gamma", "delta", "Epsilon", "zeta", "eta", "Theta", "iota",
         "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau",
         "upsilon", "phi", "chi", "psi", "omega", "a_b", "50%", "two words", " padded ",
         "", "x"]
GROUPS = ["a", "b", "c", "d", "e"]


def _maybe(rng, p_null, value):
    return None if rng.random() < p_null else value


def t_all_schema():
    return pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        ("b", pa.bool_()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("i64", pa.int64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(12, 3)),
        ("s", pa.string()),
        ("grp", pa.string()),
        ("bin", pa.binary()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us")),
        ("tstz", pa.timestamp("us", tz="UTC")),
        ("u", pa.uuid()),
        ("li", pa.list_(pa.int32())),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ])


def make_t_all(n=200, seed=1):
    rng = random.Random(seed)
    base_d = dt.date(2020, 1, 1)
    base_ts = dt.datetime(2021, 6, 15, 12, 0, 0)
    cols = {k: [] for k in t_all_schema().names}
    for i in range(n):
        p = 0.12
        cols["id"].append(i + 1)
        cols["b"].append(_maybe(rng, p, rng.random() < 0.5))
        cols["i16"].append(_maybe(rng, p, rng.randint(-300, 300)))
        cols["i32"].append(_maybe(rng, p, rng.randint(-100000, 100000)))
        cols["i64"].append(_maybe(rng, p, rng.randint(-(2 ** 40), 2 ** 40)))
        # float32 values exactly representable (quarters), float64 on an
        # eighth grid plus a fixed irrational-looking tail on some rows.
        cols["f32"].append(_maybe(rng, p, rng.randint(-4000, 4000) / 4.0))
        f = rng.randint(-80000, 80000) / 8.0
        if i % 5 == 0:
            f += 0.1
        cols["f64"].append(_maybe(rng, p, f))
        cols["dec"].append(_maybe(rng, p, decimal.Decimal(rng.randint(-99999999, 99999999))
                                  .scaleb(-3)))
        cols["s"].append(_maybe(rng, p, rng.choice(WORDS)))
        cols["grp"].append(_maybe(rng, 0.08, rng.choice(GROUPS)))
        cols["bin"].append(_maybe(rng, p, bytes(rng.randrange(256)
                                                for _ in range(rng.randint(0, 6)))))
        cols["d"].append(_maybe(rng, p, base_d + dt.timedelta(days=rng.randint(-400, 1500))))
        cols["ts"].append(_maybe(rng, p, base_ts + dt.timedelta(seconds=rng.randint(-10 ** 8, 10 ** 8),
                                                                  microseconds=rng.choice([0, 0, 250000, 1]))))
        cols["tstz"].append(_maybe(rng, p, (base_ts + dt.timedelta(seconds=rng.randint(-10 ** 8, 10 ** 8)))
                                   .replace(tzinfo=dt.timezone.utc)))
        cols["u"].append(_maybe(rng, p, uuid.UUID(int=rng.getrandbits(128)).bytes))
        cols["li"].append(_maybe(rng, p, [_maybe(rng, 0.1, rng.randint(-50, 50))
                                           for _ in range(rng.randint(0, 4))]))
        cols["st"].append(_maybe(rng, p, {"x": _maybe(rng, 0.1, rng.randint(0, 9)),
                                           "y": _maybe(rng, 0.1, rng.choice(WORDS[:8]))}))
    return pa.table(cols, schema=t_all_schema())


def make_t_part(n=300, seed=2):
    rng = random.Random(seed)
    regions = ["north", "south", "east", "west", None]
    rows = {"id": [], "region": [], "day": [], "amount": [], "qty": [], "note": []}
    for i in range(n):
        rows["id"].append(i + 1)
        rows["region"].append(rng.choice(regions))
        rows["day"].append(_maybe(rng, 0.05, dt.date(2023, 1, 1) + dt.timedelta(days=rng.randint(0, 364))))
        rows["amount"].append(_maybe(rng, 0.1, decimal.Decimal(rng.randint(0, 1000000)).scaleb(-2)))
        rows["qty"].append(_maybe(rng, 0.1, rng.randint(1, 50)))
        rows["note"].append(_maybe(rng, 0.3, rng.choice(WORDS)))
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("region", pa.string()),
                        ("day", pa.date32()), ("amount", pa.decimal128(10, 2)),
                        ("qty", pa.int32()), ("note", pa.string())])
    return pa.table(rows, schema=schema)


def make_t_idx(n=3000, seed=3):
    rng = random.Random(seed)
    rows = {"id": [], "k": [], "cat": [], "v": [], "tag": []}
    for i in range(n):
        rows["id"].append(i + 1)
        rows["k"].append(_maybe(rng, 0.02, rng.randint(0, 999)))
        rows["cat"].append(_maybe(rng, 0.03, f"c{rng.randint(0, 19)}"))
        rows["v"].append(_maybe(rng, 0.05, rng.randint(-10000, 10000) / 16.0))
        rows["tag"].append(_maybe(rng, 0.2, rng.choice(WORDS)))
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.int32()),
                        ("cat", pa.string()), ("v", pa.float64()), ("tag", pa.string())])
    return pa.table(rows, schema=schema)


def make_t_del(n=300, seed=4):
    rng = random.Random(seed)
    rows = {"id": [], "a": [], "s": [], "x": []}
    for i in range(n):
        rows["id"].append(i + 1)
        rows["a"].append(_maybe(rng, 0.05, rng.randint(0, 200)))
        rows["s"].append(_maybe(rng, 0.1, rng.choice(WORDS[:6])))
        rows["x"].append(_maybe(rng, 0.1, rng.randint(-1000, 1000) / 4.0))
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int32()),
                        ("s", pa.string()), ("x", pa.float64())])
    return pa.table(rows, schema=schema)


def make_dept():
    rows = [(1, "Engineering", 1000000, "SF"), (2, "Sales", 400000, "NY"),
            (3, "Marketing", 250000, "NY"), (4, "Research", None, "SF"),
            (5, "Legal", 150000, None), (6, "Empty dept", 10, "LA"),
            (7, "Sales", 300000, "LA"), (None, "No id", 5, "SF")]
    return pa.table({"dept_id": pa.array([r[0] for r in rows], pa.int32()),
                     "dname": [r[1] for r in rows],
                     "budget": pa.array([r[2] for r in rows], pa.int64()),
                     "city": [r[3] for r in rows]})


def make_emp(n=40, seed=5):
    rng = random.Random(seed)
    rows = {"emp_id": [], "ename": [], "dept_id": [], "salary": [], "manager_id": [],
            "hired": [], "city": []}
    for i in range(n):
        rows["emp_id"].append(i + 1)
        rows["ename"].append(f"emp{i + 1:02d}")
        rows["dept_id"].append(rng.choice([1, 1, 2, 2, 3, 4, 5, 9, None]))
        rows["salary"].append(_maybe(rng, 0.1, rng.randint(30, 200) * 1000))
        rows["manager_id"].append(None if i < 3 else rng.randint(1, max(1, i)))
        rows["hired"].append(_maybe(rng, 0.05, dt.date(2010, 1, 1) + dt.timedelta(days=rng.randint(0, 5000))))
        rows["city"].append(_maybe(rng, 0.1, rng.choice(["SF", "NY", "LA", "Austin"])))
    schema = pa.schema([pa.field("emp_id", pa.int32(), nullable=False), ("ename", pa.string()),
                        ("dept_id", pa.int32()), ("salary", pa.int64()),
                        ("manager_id", pa.int32()), ("hired", pa.date32()), ("city", pa.string())])
    return pa.table(rows, schema=schema)


def make_s(which):
    if which == 1:
        a = [1, 1, 2, 3, 3, 3, None, None, 5, 8]
        b = ["x", "x", "y", "z", "z", "w", None, None, "v", "u"]
    else:
        a = [1, 3, 3, 4, None, 8, 8, 9]
        b = ["x", "z", "z", "q", None, "u", "t", "s"]
    return pa.table({"a": pa.array(a, pa.int32()), "b": b})


def make_t_vec(n=2000, dim=8, seed=6):
    """Embeddings (list<float32>, read by SQL as pgvector's vector) on a
    0.01 grid, 5% NULL, and a filter column."""
    rng = random.Random(seed)
    rows = {"id": [], "cat": [], "emb": []}
    for i in range(n):
        rows["id"].append(i + 1)
        rows["cat"].append(f"v{rng.randint(0, 9)}" if i % 50 else "rare")
        rows["emb"].append(_maybe(rng, 0.05, [rng.randint(-100, 100) / 100.0 for _ in range(dim)]))
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string()),
                        ("emb", pa.list_(pa.float32()))])
    return pa.table(rows, schema=schema)


class TableDef:
    def __init__(self, name, data, chunks=1, partition_by=None, indexes=(), deletes=()):
        self.name, self.data, self.chunks = name, data, chunks
        self.partition_by, self.indexes, self.deletes = partition_by, list(indexes), list(deletes)


def table_defs():
    """The corpus's tables, in creation order.  deletes are predicates valid
    both as our filter strings and as DuckDB WHERE clauses."""
    t_all = make_t_all()
    return [
        TableDef("t_all", t_all, chunks=4),
        TableDef("t_empty", t_all.slice(0, 0)),
        TableDef("t_part", make_t_part(), chunks=2, partition_by="region, bucket(4, id)"),
        TableDef("t_idx", make_t_idx(), chunks=6,
                 indexes=[("cat", "inverted"), ("k", "range")],
                 deletes=["k % 97 = 0", "cat = 'c7'"]),
        TableDef("t_del", make_t_del(), chunks=3, deletes=["a < 20", "s = 'gamma'"]),
        TableDef("dept", make_dept()),
        TableDef("emp", make_emp(), chunks=2),
        TableDef("s1", make_s(1)),
        TableDef("s2", make_s(2)),
        TableDef("t_vec", make_t_vec(), chunks=2, indexes=[("emb", "hnsw"), ("cat", "inverted")]),
    ]


DUCKDB_SETTINGS = [
    # PostgreSQL semantics where DuckDB has a switch for them.
    "SET integer_division = true",          # int / int truncates like PostgreSQL
    "SET default_null_order = 'nulls_last_on_asc_first_on_desc'",  # PostgreSQL's default
    "SET TimeZone = 'UTC'",
    "SET threads = 1",
]


def load_duckdb(con, defs=None):
    """Creates every table in the DuckDB connection con and applies the deletes."""
    for s in DUCKDB_SETTINGS:
        con.execute(s)
    for td in defs or table_defs():
        src = td.data  # noqa: F841  (DuckDB's replacement scan reads the local)
        con.execute(f'CREATE TABLE "{td.name}" AS SELECT * FROM src')
        for pred in td.deletes:
            con.execute(f'DELETE FROM "{td.name}" WHERE {pred}')


def load_hyperstream(hdb, root, defs=None):
    """Creates every table under directory root with the hyperstreamdb package;
    returns {name: hdb.Table}."""
    import os
    out = {}
    for td in defs or table_defs():
        path = os.path.join(root, td.name)
        t = hdb.Table.create(path, td.data.schema, partition_by=td.partition_by)
        n = td.data.num_rows
        if n:
            step = -(-n // td.chunks)
            for off in range(0, n, step):
                t.write_arrow(td.data.slice(off, step))
                t.commit()
        for col, kind in td.indexes:
            t.add_index(col, kind)
        for pred in td.deletes:
            t.delete(pred)
        out[td.name] = t
    return out

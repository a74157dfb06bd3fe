"""The scan's dictionary filter (table/scan.c, "the dictionary filter"):
filter terms on one string column (=, <>, <, >=, BETWEEN, IN, NOT IN,
LIKE, NOT LIKE, ILIKE, IS [NOT] NULL, OR/NOT of them) are judged once per
dictionary entry and the rows take their entry's verdict.  Checked against
DuckDB on the same rows, with NULLs, empty strings, prefixes of one another
and non-ASCII bytes (compared as bytes, PostgreSQL's C collation), over

* our own files (dictionary pages), several files and row groups;
* files pyarrow wrote through pyiceberg with a tiny dictionary page limit,
  so that column chunks start with dictionary pages and fall back to PLAIN
  pages part way (mixed pages in one chunk), and columns with no dictionary;

for the filter column projected or not, alone or beside other terms.
"""
import random

import pyarrow as pa
import pytest
from conftest import require_module

import hyperstreamdb as hdb

duckdb = require_module("duckdb")

WORDS = ["", "a", "ab", "abc", "MAIL", "SHIP", "MAIL ", "mail", "AIR", "REG AIR",
         "SM CASE", "SM BOX", "LG PACK", "abcdefghijklmnopq", "x" * 33, "é", "éa", "Z"]


def _rows(rng, n, many):
    s, u, k = [], [], []
    for i in range(n):
        if rng.random() < 0.1:
            s.append(None)
        elif many and rng.random() < 0.5:
            s.append("".join(rng.choice("abcMAIé ") for _ in range(rng.randint(0, 12))))
        else:
            s.append(rng.choice(WORDS))
        u.append(None if rng.random() < 0.2 else rng.choice(WORDS[:8]))
        k.append(rng.randint(0, 9))
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array(s, pa.string()),
                     "u": pa.array(u, pa.string()), "k": pa.array(k, pa.int32())})


TERMS = ["s = 'MAIL'", "s <> 'MAIL'", "s IN ('MAIL', 'SHIP')", "s NOT IN ('MAIL', 'SHIP', '')",
         "s IN ('MAIL', NULL)", "s NOT IN ('a', NULL)", "s LIKE 'SM%'", "s NOT LIKE '%A%'",
         "s ILIKE 'mail%'", "s < 'MAIL'", "s >= 'ab'", "s BETWEEN 'a' AND 'abc'", "s = ''",
         "s IS NULL", "s IS NOT NULL", "(s = 'AIR' OR s LIKE 'é%')", "NOT (s = 'AIR')",
         "(s IS NULL OR s = 'SHIP')", "s > 'é'", "s IS DISTINCT FROM 'MAIL'",
         "(s = 'MAIL') IS NOT TRUE"]


def _queries(rng):
    qs = []
    for t in TERMS:
        qs.append(f"SELECT id FROM t WHERE {t}")
        qs.append(f"SELECT id, s FROM t WHERE {t}")
        qs.append(f"SELECT count(*) FROM t WHERE {t}")
    for _ in range(25):
        a, b = rng.sample(TERMS, 2)
        ut = rng.choice(["u = 'MAIL'", "u IN ('a', 'ab', '')", "u IS NULL", "u LIKE 'a%'"])
        qs.append(f"SELECT id, u FROM t WHERE {a} AND k < 7 AND {ut}")
        qs.append(f"SELECT id, s, k FROM t WHERE {a} AND {b}")
        qs.append(f"SELECT s, count(*) FROM t WHERE {a} AND k <> 3 GROUP BY s")
        # the column also read by a term that is not judged by value: no verdicts for it
        qs.append(f"SELECT id FROM t WHERE {a} AND (s = 'ab' OR k = 2)")
    return qs


def _check(session, con, qs):
    for q in qs:
        got = sorted(map(tuple, (r.values() for r in session.sql(q).to_arrow().to_pylist())),
                     key=repr)
        want = sorted(con.sql(q).fetchall(), key=repr)
        assert got == want, q


def _duck(data):
    con = duckdb.connect()
    con.register("t", data)
    return con


@pytest.mark.parametrize("seed,many", [(0, False), (1, True)])
def test_dictionary_pages_vs_duckdb(tmp_path, seed, many):
    rng = random.Random(seed)
    data = _rows(rng, 30000, many)
    props = {"write.parquet.page-row-limit": "1000", "write.parquet.row-group-size-bytes": "65536"}
    t = hdb.Table(str(tmp_path / "t"), properties=props)
    for lo in range(0, data.num_rows, 10000):   # three files
        t.write_arrow(data.slice(lo, 10000))
        t.commit()
    with hdb.Session(threads=2) as s:
        s.register("t", t)
        _check(s, _duck(data), _queries(rng))


def test_plain_fallback_pages_from_pyarrow_vs_duckdb(tmp_path):
    require_module("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog
    rng = random.Random(7)
    data = _rows(rng, 40000, True)
    wh = tmp_path / "wh"
    wh.mkdir()
    db = tmp_path / "cat.db"
    pcat = SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
    pcat.create_namespace("db")
    # pyiceberg writes with pyarrow: a 256-byte dictionary page limit makes
    # the writer fall back to PLAIN pages after the first dictionary page
    pt = pcat.create_table("db.t", schema=data.schema, properties={
        "write.parquet.dict-size-bytes": "256", "write.parquet.page-size-bytes": "2048",
        "write.parquet.row-group-limit": "15000"})
    pt.append(data.slice(0, 25000))
    pt.append(data.slice(25000))
    import pyarrow.parquet as pq
    encs = set()
    for task in pt.scan().plan_files():
        md = pq.ParquetFile(task.file.file_path.removeprefix("file://")).metadata
        for g in range(md.num_row_groups):
            encs.add(tuple(sorted(md.row_group(g).column(1).encodings)))
    assert any("PLAIN" in e and "RLE_DICTIONARY" in e for e in encs), encs
    cat = hdb.Catalog(f"sqlite:///{db}", warehouse=str(wh))
    t = cat.load_table("db.t")
    with hdb.Session(threads=2) as s:
        s.register("t", t)
        _check(s, _duck(data), _queries(rng))
    t.close()
    cat.close()

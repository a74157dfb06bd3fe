"""String filters against constants (the evaluator's fast paths: `=` / `<>`
compare lengths before bytes; IN of up to 4 non-null constants, of more
through the hashed set, and with a NULL item through the general path)
against DuckDB on random strings full of NULLs, empty strings, prefixes of
one another and lengths around 8 and 16 bytes, read from Parquet pages both
dictionary-encoded (few distinct values) and plain (many).
"""
import random

import pyarrow as pa
import pytest
from conftest import require_module

import hyperstreamdb as hdb

duckdb = require_module("duckdb")

WORDS = ["", "a", "ab", "abc", "MAIL", "SHIP", "MAIL ", "AIR", "REG AIR", "abcdefgh",
         "abcdefghi", "abcdefghijklmnop", "abcdefghijklmnopq", "x" * 31, "x" * 32, "x" * 33,
         "é", "éa"]

CONSTS = ["''", "'a'", "'MAIL'", "'SHIP'", "'REG AIR'", "'abcdefgh'", "'abcdefghi'",
          "'abcdefghijklmnop'", "'abcdefghijklmnopq'", "'" + "x" * 32 + "'", "'é'", "'zz'"]


def _queries(rng):
    qs = []
    for _ in range(12):
        k = rng.choice(CONSTS)
        qs.append(f"SELECT id FROM t WHERE s = {k}")
        qs.append(f"SELECT id FROM t WHERE s <> {k}")
        qs.append(f"SELECT id, s = {k} AS e, s <> {k} AS ne FROM t")
    for m in (1, 2, 3, 4, 5, 7):
        for _ in range(4):
            items = ", ".join(rng.sample(CONSTS, m))
            qs.append(f"SELECT id FROM t WHERE s IN ({items})")
            qs.append(f"SELECT id FROM t WHERE s NOT IN ({items})")
            qs.append(f"SELECT id, s IN ({items}) AS x FROM t")
            qs.append(f"SELECT id, s NOT IN ({items}, NULL) AS x FROM t")
            qs.append(f"SELECT id FROM t WHERE s IN ({items}) AND id % 3 <> 1")
    return qs


@pytest.mark.parametrize("seed,distinct", [(0, True), (1, True), (2, False), (3, False)])
def test_string_compare_and_in_vs_duckdb(tmp_path, seed, distinct):
    rng = random.Random(seed)
    n = 20000
    if distinct:   # few values: dictionary-encoded pages
        vals = [None if rng.random() < 0.1 else rng.choice(WORDS) for _ in range(n)]
    else:          # many values: plain pages, with the words mixed in
        vals = [None if rng.random() < 0.1 else
                rng.choice(WORDS) if rng.random() < 0.5 else
                "".join(rng.choice("abcxyz") for _ in range(rng.randint(0, 40)))
                for _ in range(n)]
    data = pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array(vals, pa.string())})
    t = hdb.Table(str(tmp_path / "t"))
    t.write_arrow(data)
    t.commit()
    con = duckdb.connect()
    con.register("t", data)
    with hdb.Session() as s:
        s.register("t", t)
        for q in _queries(rng):
            got = sorted(map(tuple, (r.values() for r in s.sql(q).to_arrow().to_pylist())))
            want = sorted(con.sql(q).fetchall())
            assert got == want, q

"""Aggregates that are all DISTINCT over one argument run as a HashAggregate
over Distinct(group columns, argument) (exec/agg.c); when the argument is an
integer the Distinct keeps its keys packed: (prefix id, value) pairs for
values within int32, whole row keys for NULLs and wider values (TPC-H Q16's
count(DISTINCT ps_suppkey) GROUP BY p_brand, p_type, p_size).  Checked
against DuckDB with string, integer and NULL group columns, runs of rows
with one prefix, values at and past the int32 bounds, int8/int16/int32/
int64/date arguments, 1 and 2 threads, and a memory limit small enough to
spill the Distinct (test_sql_spill.py checks that such a query spills).
"""
import datetime as dt
import random

import pyarrow as pa
import pytest
from conftest import require_module

import hyperstreamdb as hdb

duckdb = require_module("duckdb")

BIG = [2 ** 31 - 1, -2 ** 31, 2 ** 31, -2 ** 31 - 1, 2 ** 40, -2 ** 62]


def _data(rng, n, vtype):
    brand, typ, size, v = [], [], [], []
    i = 0
    while i < n:
        run = rng.randint(1, 6)   # rows of one (brand, type, size) in a row
        b = None if rng.random() < 0.05 else f"Brand#{rng.randint(1, 5)}{rng.randint(1, 5)}"
        t = rng.choice(["", "SMALL PLATED COPPER", "STANDARD POLISHED BRASS", None, "é x"])
        sz = None if rng.random() < 0.05 else rng.randint(1, 9)
        for _ in range(run):
            brand.append(b)
            typ.append(t)
            size.append(sz)
            r = rng.random()
            if r < 0.05:
                v.append(None)
            elif vtype == "int64" and r < 0.15:
                v.append(rng.choice(BIG))
            else:
                v.append(rng.randint(-50, 50))
        i += run
    if vtype == "date":
        varr = pa.array([None if x is None else dt.date(2000, 1, 1) + dt.timedelta(days=x)
                         for x in v], pa.date32())
    else:
        varr = pa.array(v, getattr(pa, vtype)())
    return pa.table({"brand": pa.array(brand, pa.string()), "typ": pa.array(typ, pa.string()),
                     "size": pa.array(size, pa.int32()), "v": varr})


QUERIES = [
    "SELECT brand, typ, size, count(DISTINCT v) AS c FROM t GROUP BY brand, typ, size",
    "SELECT brand, count(DISTINCT v) AS c, min(DISTINCT v) AS lo, max(DISTINCT v) AS hi "
    "FROM t GROUP BY brand",
    "SELECT typ, size, count(DISTINCT v) FROM t WHERE size IS NOT NULL GROUP BY typ, size",
]


@pytest.mark.parametrize("seed,vtype,threads,mem", [
    (0, "int32", 2, None), (1, "int64", 2, None), (2, "int64", 1, None), (3, "int8", 2, None),
    (4, "int16", 1, None), (5, "date", 2, None), (6, "int64", 2, "1MB"), (7, "int32", 1, "1MB")])
def test_packed_distinct_vs_duckdb(tmp_path, seed, vtype, threads, mem):
    rng = random.Random(seed)
    data = _data(rng, 60000 if mem else 20000, vtype)
    t = hdb.Table(str(tmp_path / "t"))
    for lo in range(0, data.num_rows, 15000):
        t.write_arrow(data.slice(lo, 15000))
        t.commit()
    con = duckdb.connect()
    con.register("t", data)
    kw = {"threads": threads}
    if mem:
        kw["memory_limit"] = mem
    with hdb.Session(**kw) as s:
        s.register("t", t)
        for q in QUERIES:
            got = sorted(map(tuple, (r.values() for r in s.sql(q).to_arrow().to_pylist())),
                         key=repr)
            want = sorted(con.sql(q).fetchall(), key=repr)
            assert got == want, q

"""Window functions over several different windows in one SELECT, against
DuckDB: each function keeps its own offset and default (a later window's
lead() used to inherit an earlier window's lag() offset and default: wrong
rows, or a type error when the types differed)."""
import random

import pyarrow as pa
from conftest import require_module

import hyperstreamdb as hdb

duckdb = require_module("duckdb")

QUERIES = [
    "SELECT id, lag(x, 2, -1) OVER (ORDER BY id) AS a, lead(s) OVER (PARTITION BY g ORDER BY id) AS b FROM t",
    "SELECT id, lag(x, 3) OVER (ORDER BY id) AS a, lead(x) OVER (PARTITION BY g ORDER BY id) AS b, "
    "lag(s) OVER (PARTITION BY g ORDER BY id DESC) AS c FROM t",
    "SELECT id, lead(x, 2, 0) OVER (ORDER BY id) AS a, lag(x) OVER (PARTITION BY g ORDER BY id) AS b, "
    "first_value(s) OVER (PARTITION BY g ORDER BY id) AS c FROM t",
]


def test_window_functions_over_several_windows(tmp_path):
    rng = random.Random(5)
    n = 60
    data = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "g": pa.array([rng.choice([None, 1, 2, 3]) for _ in range(n)], pa.int64()),
        "x": pa.array([rng.choice([None, -4, 0, 5, 9]) for _ in range(n)], pa.int32()),
        "s": pa.array([rng.choice([None, "", "a", "bc"]) for _ in range(n)], pa.string()),
    })
    t = hdb.Table(str(tmp_path / "t"))
    t.write_arrow(data)
    t.commit()
    con = duckdb.connect()
    con.register("t", data)
    with hdb.Session() as s:
        s.register("t", t)
        for q in QUERIES:
            got = s.sql(q + " ORDER BY id").to_arrow()
            want = con.sql(q + " ORDER BY id").to_arrow_table()
            assert [c.to_pylist() for c in got.columns] == [c.to_pylist() for c in want.columns], q

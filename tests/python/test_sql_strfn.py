"""String functions replace, strpos/position, left, right, repeat, reverse,
split_part: DuckDB (same semantics for these arguments) on random UTF-8
strings, through SQL and through a table filter (pushed-down predicates);
PostgreSQL's documented answers for what DuckDB does differently (negative
counts, split_part from the end, errors)."""
import random

import pyarrow as pa
import pytest
from conftest import require_module

import hyperstreamdb as hdb

duckdb = require_module("duckdb")

ALPHA = ["a", "b", "ab", "é", "日本", " ", ",", ""]

EXPRS = [
    "replace(s, 'ab', 'X')", "replace(s, 'é', '')", "replace(s, '', 'z')",
    "replace(s, s, 'q')", "strpos(s, 'b')", "strpos(s, '日本')", "strpos(s, '')",
    "position('é' IN s)", "left(s, 2)", "right(s, 3)", "left(s, 0)", "repeat(s, 3)",
    "repeat(s, 0)", "reverse(s)", "split_part(s, ',', 1)", "split_part(s, ',', 2)",
    "split_part(s, ',', 5)", "length(replace(s, 'a', 'aa'))",
]


def _rand(rng):
    return None if rng.random() < 0.1 else "".join(rng.choice(ALPHA) for _ in range(rng.randint(0, 6)))


def test_string_functions_vs_duckdb(tmp_path):
    rng = random.Random(1)
    data = pa.table({"id": pa.array(range(300), pa.int64()),
                     "s": pa.array([_rand(rng) for _ in range(300)], pa.string())})
    t = hdb.Table(str(tmp_path / "t"))
    t.write_arrow(data)
    t.commit()
    con = duckdb.connect()
    con.register("t", data)
    with hdb.Session() as s:
        s.register("t", t)
        for e in EXPRS:
            q = f"SELECT id, {e} AS v FROM t ORDER BY id"
            got = s.sql(q).to_arrow().column("v").to_pylist()
            want = con.sql(q).fetchall()
            assert got == [w[1] for w in want], e
        # as filters (the scan's predicate path)
        for f in ("strpos(s, 'b') = 2", "left(s, 1) = 'a'", "reverse(s) = 'ba'",
                  "split_part(s, ',', 2) = 'a'", "replace(s, 'a', '') = ''"):
            got = sorted(t.to_arrow(filter=f, columns=["id"]).column("id").to_pylist())
            want = sorted(r[0] for r in con.sql(f"SELECT id FROM t WHERE {f}").fetchall())
            assert got == want, f


def test_postgres_semantics():
    with hdb.Session() as s:
        row = s.sql("SELECT left('abcdé', -2) AS a, right('abcdé', -2) AS b, "
                    "split_part('a,b,c', ',', -1) AS c, split_part('a,b,c', ',', -3) AS d, "
                    "split_part('a,b,c', ',', -4) AS e, split_part('abc', '', 1) AS f, "
                    "split_part('abc', '', 2) AS g, repeat('ab', -1) AS h, "
                    "position('' IN 'abc') AS i, strpos('日本語', '語') AS j").to_pylist()[0]
        # PostgreSQL 15's answers
        assert row == {"a": "abc", "b": "cdé", "c": "c", "d": "a", "e": "", "f": "abc",
                       "g": "", "h": "", "i": 1, "j": 3}
        with pytest.raises(hdb.HyperStreamError, match="field position must not be zero"):
            s.sql("SELECT split_part('a,b', ',', 0)").to_arrow()
        with pytest.raises(hdb.HyperStreamError, match="requested length too large"):
            s.sql("SELECT repeat('abc', 1000000000)").to_arrow()

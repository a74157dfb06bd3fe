"""TPC-H through the SQL engine: the 22 queries (tests/sql/tpch.py, PostgreSQL
dialect) over data from tpchgen-cli written into our tables with the
hyperstreamdb package; expected results from DuckDB over the same Parquet
files tpchgen-cli wrote.  Scale factor 0.01 by default (seconds);
HS_TPCH_SF=1 runs the acceptance scale (minutes; not in CI); HS_TPCH_DATA=DIR
keeps the data under DIR/tpch-sf<SF> between runs (bench/sql's cache,
~/.cache/hyperstreamdb/bench-sql, has the same layout).

HS_SQL_BACKEND=selftest checks the harness (DuckDB over our tables' rows).

A query listed in tests/sql/known_failures.txt (id tpch_qNN) is an expected
failure; once it passes, the test fails until its line is deleted.

Each query runs in a child process (tests/sql/runner.py), so a crash or a
hang (HS_TPCH_TIMEOUT seconds, default 300) fails that query only.
"""
import os
import pathlib
import sys

import pytest

from conftest import require, require_module

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "sql"))

import runner  # noqa: E402
import sqlcompare  # noqa: E402
import tpch  # noqa: E402

SF = os.environ.get("HS_TPCH_SF", "0.01")
TIMEOUT = float(os.environ.get("HS_TPCH_TIMEOUT", "300"))


@pytest.fixture(scope="module")
def tpch_results(tmp_path_factory):
    require_module("duckdb")
    hdb = require_module("hyperstreamdb")
    require(tpch.tpchgen_exe() is not None, "tpchgen-cli is not installed (pip install tpchgen-cli)")
    backend, why = runner.pick_backend(os.environ.get("HS_SQL_BACKEND", "auto"))
    require(backend is not None, f"no SQL engine to run TPC-H: {why}")
    cache = os.environ.get("HS_TPCH_DATA")   # e.g. the bench's cache: generated and loaded once
    base = (pathlib.Path(cache) / f"tpch-sf{SF}") if cache else tmp_path_factory.mktemp(f"tpch-sf{SF}")
    pq_dir = tpch.generate(SF, base / "parquet")
    tables = tpch.load_ours(hdb, pq_dir, str(base / "tables"), rows_per_commit=1 << 20)
    con = tpch.duckdb_connect(pq_dir)
    con.execute("SET arrow_lossless_conversion = true")
    recs = []
    for n, (sql, keys, limited) in tpch.QUERIES.items():
        t = con.sql(sql).to_arrow_table()
        recs.append({"id": f"tpch_q{n:02d}", "sql": sql, "keys": keys, "limited": limited,
                     "columns": t.schema.names, "rows": sqlcompare.canonical_rows(t)})
    return _Results(runner.run_records(backend, recs, tables, timeout=TIMEOUT))


class _Results(dict):
    """The per-query results (a short repr keeps pytest's failure reports readable)."""

    def __repr__(self):
        return f"<{sum(v[0] == 'pass' for v in self.values())}/{len(self)} TPC-H queries pass>"


@pytest.mark.parametrize("q", sorted(tpch.QUERIES))
def test_tpch(q, tpch_results):
    qid = f"tpch_q{q:02d}"
    status, detail = tpch_results[qid]
    known = runner.load_known_failures()
    if qid in known:
        assert status != "pass", (f"TPC-H Q{q} passes but tests/sql/known_failures.txt lists it "
                                  f"({known[qid]}): delete its line")
        pytest.xfail(f"known failure ({known[qid]}): {status}: {(detail or '')[:200]}")
    assert status == "pass", f"TPC-H Q{q} (SF {SF}): {status}: {detail}"

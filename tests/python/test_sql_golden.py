"""The SQL golden corpus (tests/sql/): 770 queries over tables of every
column type, NULLs, an empty table, a partitioned table, indexed tables and
tables after deletes; expected results produced by DuckDB in PostgreSQL mode
(tests/sql/gen_expected.py), never by our engine.

One test per category runs its queries through the SQL engine (the C session
API through ctypes, or hyperstreamdb.Session once it runs SQL; see
tests/sql/runner.py) and fails on any mismatch, crash or timeout that
tests/sql/known_failures.txt does not list with a reason, and on a listed
query that passes (delete its line).  The comparison itself is tested first
(test_compare_*), and test_harness_selftest runs one category through DuckDB
over our tables' rows to show the harness agrees with itself.
HS_SQL_BACKEND=ctypes/package/selftest picks the backend (default auto).
"""
import os
import pathlib
import sys

import pytest

from conftest import require

HERE = pathlib.Path(__file__).resolve().parent
SQL_DIR = HERE.parent / "sql"
sys.path.insert(0, str(SQL_DIR))

import runner  # noqa: E402
import sqlcompare  # noqa: E402

CATEGORIES = sorted(p.stem for p in (SQL_DIR / "expected").glob("*.json"))


def test_corpus_size_and_sources():
    recs = runner.load_expected()
    assert len(recs) >= 500
    assert len({r["id"] for r in recs}) == len(recs)
    for r in recs:
        # DuckDB's answer; PostgreSQL's SQLSTATE for errors; PostgreSQL's answer
        # where it differs from DuckDB (check_postgres.py, DuckDB's kept beside it).
        assert (r["source"].startswith("duckdb") or (r["source"] == "postgresql" and "error" in r)
                or (r["source"].startswith("postgresql 15 (") and "duckdb_rows" in r)), r["id"]
    known = runner.load_known_failures()
    ids = {r["id"] for r in recs}
    ids |= {f"tpch_q{n:02d}" for n in range(1, 23)}
    assert not set(known) - ids, f"known_failures.txt names unknown queries: {set(known) - ids}"


def test_compare_multiset():
    exp = {"keys": None, "limited": False, "columns": ["a", "b"],
           "rows": [[1, "x"], [2, None], [2, None], [3.5, {"date": "2020-01-01"}]]}
    assert sqlcompare.compare(exp, [[3.5000000001, {"date": "2020-01-01"}], [2, None], [1, "x"],
                                    [2, None]]) is None
    assert sqlcompare.compare(exp, [[1, "x"], [2, None], [3.5, {"date": "2020-01-01"}]])
    assert sqlcompare.compare(exp, [[1, "x"], [2, None], [2, "y"], [3.5, {"date": "2020-01-01"}]])
    assert sqlcompare.compare(exp, [[1, "x"], [2, None], [2, None], [3.6, {"date": "2020-01-01"}]])
    assert sqlcompare.compare(exp, [[1, "x"], [2, None], [2, None], [3.5, {"ts": "2020-01-01"}]])
    assert sqlcompare.compare(exp, [[1], [2], [2], [3.5]])
    assert sqlcompare.compare(exp, [[True, "x"], [2, None], [2, None], [3.5, {"date": "2020-01-01"}]])


def test_compare_ordered_with_ties_and_limit():
    rows = [[1, "a"], [2, "b"], [2, "c"], [3, "d"], [4, "e"], [4, "f"]]
    exp = {"keys": [0], "limited": False, "columns": ["k", "v"], "rows": rows}
    swapped = [rows[0], rows[2], rows[1]] + rows[3:]
    assert sqlcompare.compare(exp, swapped) is None          # ties in any order
    assert sqlcompare.compare(exp, [rows[1], rows[0]] + rows[2:])  # keys out of order
    assert sqlcompare.compare(exp, rows[:3] + [[3, "z"]] + rows[4:])  # wrong row in a group
    lim = dict(exp, limited=True)
    # LIMIT cutting a tie group: the last group may hold another tied row.
    assert sqlcompare.compare(lim, rows[:5] + [[4, "other"]]) is None
    assert sqlcompare.compare(lim, rows[:5] + [[5, "f"]])
    assert sqlcompare.compare(lim, rows[:2] + [[2, "zz"]] + rows[3:])  # inner groups still checked


@pytest.mark.parametrize("category", ["filter"])
def test_harness_selftest(category):
    """DuckDB over Table.to_arrow() of our tables: must agree with DuckDB over
    the source rows, or the tables/harness are wrong (not an engine test)."""
    results = runner.run_all("selftest", [category], timeout=120)
    pg_only = {r["id"] for r in runner.load_expected([category])
               if r["source"].startswith("postgresql 15")}
    bad = {k: v for k, v in results.items() if v[0] != "pass" and k not in pg_only}
    assert len(results) > 100
    assert not bad, bad


@pytest.fixture(scope="module")
def backend():
    name, why = runner.pick_backend(os.environ.get("HS_SQL_BACKEND", "auto"))
    require(name is not None, f"no SQL engine to run the golden corpus: {why}")
    return name


class _Results(dict):
    """{id: (status, detail)} (a short repr keeps pytest's failure reports readable)."""

    def __repr__(self):
        return f"<{sum(v[0] == 'pass' for v in self.values())}/{len(self)} golden queries pass>"


@pytest.fixture(scope="module")
def golden_results(backend):
    """The whole corpus, run once (one set of tables, one child process unless
    a query crashes or hangs)."""
    return _Results(runner.run_all(backend, timeout=120))


@pytest.mark.parametrize("category", CATEGORIES)
def test_golden(category, golden_results):
    results = {k: v for k, v in golden_results.items() if k.rsplit("_", 1)[0] == category}
    assert results, f"no results for category {category}"
    lines = []
    problems = runner.summarize(results, runner.load_known_failures(), log=lines.append)
    assert not problems, "\n".join(lines + problems[:60])

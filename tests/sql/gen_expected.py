#!/usr/bin/env python3
"""Regenerates tests/sql/expected/*.json: runs every query of corpus.py in
DuckDB over the tables of sqldata.py (after their deletes) and stores the
canonical rows (sqlcompare.py).  Never runs our engine.

    .venv/bin/python tests/sql/gen_expected.py

For ordered queries it also checks that the ORDER BY keys stated in the
corpus are really sorted in DuckDB's answer (a wrong keys= would make the
test unable to fail on order).  Queries marked E(...) must fail in DuckDB.  Where PostgreSQL answers
differently from DuckDB (found by check_postgres.py against a PostgreSQL 15
server), postgres_overrides.json holds PostgreSQL's answer and that is the
expectation (source "postgresql 15").
"""
import json
import os
import pathlib
import sys

import duckdb

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpus  # noqa: E402
import sqlcompare  # noqa: E402
import sqldata  # noqa: E402


def main():
    con = duckdb.connect()
    sqldata.load_duckdb(con)
    con.execute("SET arrow_lossless_conversion = true")  # UUID as arrow.uuid
    by_cat, problems, seen = {}, [], {}
    ov_path = HERE / "postgres_overrides.json"
    overrides = json.loads(ov_path.read_text()) if ov_path.exists() else {}
    used = set()
    for q in corpus.QUERIES:
        cat = q["category"]
        n = len(by_cat.setdefault(cat, [])) + 1
        qid = f"{cat}_{n:03d}"
        if q["sql"] in seen:
            problems.append(f"{qid}: duplicate of {seen[q['sql']]}")
        seen[q["sql"]] = qid
        rec = {"id": qid, "sql": q["sql"], "keys": q["keys"], "limited": q["limited"]}
        if "error" in q:
            try:
                con.sql(q["sql"]).to_arrow_table()
                problems.append(f"{qid}: DuckDB accepted a query expected to fail: {q['sql']}")
            except duckdb.Error as e:
                rec.update(error=q["error"], source="postgresql", duckdb_error=str(e).splitlines()[0])
            rec.update(columns=None, rows=None)
            by_cat[cat].append(rec)
            continue
        try:
            t = con.sql(q["sql"]).to_arrow_table()
        except duckdb.Error as e:
            problems.append(f"{qid}: DuckDB failed: {str(e).splitlines()[0]}\n    {q['sql']}")
            continue
        rows = sqlcompare.canonical_rows(t)
        if q["keys"] is not None:
            # The stated keys must be non-decreasing/non-increasing runs: re-check
            # by asking DuckDB for the same rows with a stable tiebreak is not
            # possible in general, so check at least that equal keys are adjacent.
            seen_keys, prev = set(), None
            for r in rows:
                k = json.dumps([r[i] for i in q["keys"]], sort_keys=True)
                if k != prev and k in seen_keys:
                    problems.append(f"{qid}: keys {q['keys']} do not group the ordered rows")
                    break
                seen_keys.add(k)
                prev = k
        rec.update(source="duckdb " + duckdb.__version__, columns=t.schema.names,
                   types=[str(f.type) for f in t.schema], rows=rows)
        if q["sql"] in overrides:
            # PostgreSQL 15 answers differently (check_postgres.py): the engine follows it.
            rec.update(duckdb_rows=rows, rows=overrides[q["sql"]]["rows"],
                       source="postgresql 15 (DuckDB differs: " + overrides[q["sql"]]["why"] + ")")
            used.add(q["sql"])
        by_cat[cat].append(rec)
    for sql in set(overrides) - used:
        problems.append(f"postgres_overrides.json: no corpus query {sql!r}")
    out = HERE / "expected"
    out.mkdir(exist_ok=True)
    for f in out.glob("*.json"):
        f.unlink()
    total = 0
    for cat, recs in by_cat.items():
        with open(out / f"{cat}.json", "w") as fh:
            json.dump(recs, fh, indent=0, sort_keys=True)
            fh.write("\n")
        total += len(recs)
    print(f"{total} expected results in {len(by_cat)} categories -> {os.path.relpath(out)}")
    for p in problems:
        print("PROBLEM", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

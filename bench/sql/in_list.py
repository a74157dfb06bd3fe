"""Constant IN lists of strings (TPC-H Q12's `l_shipmode IN ('MAIL', 'SHIP')`):
our engine (the build's libhyperstream_testing.so through tests/python/sqlsession.py)
against the same filter written as ORs, and against DuckDB on the same Parquet data.

    HS_BUILD=build .venv/bin/python bench/sql/in_list.py [rows]
"""
import os
import sys
import tempfile
import time

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
import sqlsession  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 6_000_000
MODES = ["MAIL", "SHIP", "AIR", "TRUCK", "RAIL", "FOB", "REG AIR"]


def best(f, reps=5):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = f()
        ts.append(time.perf_counter() - t0)
    return min(ts), r


def main():
    rng = np.random.default_rng(7)
    m = pa.array(np.array(MODES, dtype=object)[rng.integers(0, len(MODES), N)], pa.string())
    tab = pa.table({"id": pa.array(np.arange(N, dtype=np.int64)), "m": m})
    d = tempfile.mkdtemp(prefix="hs-inbench-")
    pqf = os.path.join(d, "t.parquet")
    pq.write_table(tab, pqf, row_group_size=1 << 20)
    s = sqlsession.Session()
    # a table of ours from the Parquet rows
    import hyperstreamdb as hdb
    path = os.path.join(d, "t")
    t = hdb.Table.create(path, tab.schema)
    t.write_arrow(tab)
    t.commit()
    t.close()
    s.register("t", path)
    con = duckdb.connect()
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{pqf}')")
    queries = {
        "scan only": "SELECT count(*) FROM t WHERE m IS NOT NULL",
        "= 1": "SELECT count(*) FROM t WHERE m = 'MAIL'",
        "IN 2": "SELECT count(*) FROM t WHERE m IN ('MAIL', 'SHIP')",
        "OR 2": "SELECT count(*) FROM t WHERE m = 'MAIL' OR m = 'SHIP'",
        "IN 6": "SELECT count(*) FROM t WHERE m IN ('MAIL', 'SHIP', 'AIR', 'X', 'Y', 'RAIL')",
        "NOT IN 2": "SELECT count(*) FROM t WHERE m NOT IN ('MAIL', 'SHIP')",
        "CASE IN": "SELECT sum(CASE WHEN m IN ('MAIL', 'SHIP') THEN 1 ELSE 0 END) FROM t",
    }
    print(f"rows {N}; load: {os.getloadavg()}")
    print(f"{'query':10s} {'ours ms':>9s} {'duckdb ms':>10s} {'ratio':>6s}")
    for name, q in queries.items():
        to, ro = best(lambda: s.sql(q).column(0)[0].as_py())
        td, rd = best(lambda: con.execute(q).fetchone()[0])
        assert ro == rd, (name, ro, rd)
        print(f"{name:10s} {to * 1e3:9.1f} {td * 1e3:10.1f} {to / td:6.2f}")
    s.close()


if __name__ == "__main__":
    main()

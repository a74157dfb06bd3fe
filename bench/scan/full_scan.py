"""bench/scan/full_scan.py - full-table reads from Python, hyperstreamdb against
pyarrow.parquet and DuckDB on the same Parquet files (issue 13's acceptance:
Table.to_arrow() at least 1.0x pyarrow.parquet.read_table, SQL SELECT * and a
full-table aggregate keeping the lead).

    .venv/bin/python bench/scan/full_scan.py [--rounds 5] [--only lineitem,wide,files8]

Tables (made once, cached under ~/.cache/hyperstreamdb/bench-scan; lineitem is
bench/sql's TPC-H SF1 table, made by bench/sql/run.sh):
  lineitem  6,001,215 rows x 16 columns, 7 files (zstd)
  wide      1M rows x 10 columns (int64, float64, int32, float32 in turn), 1 file
  files8    4M rows x 10 columns of the same kinds, 8 files (8 appends)

Per table, each round runs every reader once, interleaved (ours, then the
peer, then the next pair), in this one warm process with the page cache warm
(every reader runs once before the rounds); the report is each reader's best
and median over the rounds, and the ratios of the medians (peer / ours: above
1 means ours is faster).  Readers:
  to_arrow   Table(path).to_arrow()              vs pq.read_table(data files)
  select *   Session.sql("SELECT * FROM t").to_arrow()
                                                 vs DuckDB read_parquet(files)
  aggregate  SELECT sum(c), count(*) FROM t      vs DuckDB on the same files
Threads: every engine uses all cores (pyarrow's pool, DuckDB's threads, our
scan_threads default).  The load average is printed before and after: on a
shared machine compare only numbers of the same run.
"""
import argparse
import glob
import os
import statistics
import sys
import time

CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "hyperstreamdb")


def lineitem_path():
    base = os.environ.get("BENCH_SQL_DATA", os.path.join(CACHE, "bench-sql"))
    return os.path.join(base, "tpch-sf1", "tables", "lineitem")


def make_columns(rows, cols, seed):
    import numpy as np
    import pyarrow as pa
    rng = np.random.default_rng(seed)
    data = {}
    for i in range(cols):
        kind = i % 4
        if kind == 0:
            data[f"c{i}"] = rng.integers(0, 1 << 40, rows)
        elif kind == 1:
            data[f"c{i}"] = rng.random(rows)
        elif kind == 2:
            data[f"c{i}"] = rng.integers(0, 1000, rows).astype(np.int32)
        else:
            data[f"c{i}"] = rng.random(rows).astype(np.float32)
    return pa.table(data)


def made_table(name, rows, cols, parts):
    """A cached table of rows x cols written in `parts` appends (one file each)."""
    import hyperstreamdb as hdb
    path = os.path.join(CACHE, "bench-scan", f"{name}-{rows}x{cols}-{parts}")
    if glob.glob(path + "/data/**/*.parquet", recursive=True):
        return path
    t = hdb.Table(path)
    per = rows // parts
    for p in range(parts):
        t.write_arrow(make_columns(per if p < parts - 1 else rows - per * (parts - 1), cols, p))
        t.commit(progress=False)
    return path


def data_files(path):
    return sorted(glob.glob(path + "/data/**/*.parquet", recursive=True))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1e3, out


def bench_table(label, path, agg_col, rounds, only_readers):
    import duckdb
    import pyarrow.parquet as pq
    import hyperstreamdb as hdb
    files = data_files(path)
    t = hdb.Table(path)
    sess = hdb.Session()
    sess.register("t", t)
    con = duckdb.connect()
    flist = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
    con.sql(f"CREATE VIEW t AS SELECT * FROM read_parquet({flist})")
    agg = f"SELECT sum({agg_col}), count(*) FROM t"
    pairs = {
        "to_arrow": (lambda: t.to_arrow(), lambda: pq.read_table(files), "pyarrow"),
        "select *": (lambda: sess.sql("SELECT * FROM t").to_arrow(),
                     lambda: con.sql("SELECT * FROM t").to_arrow_table(), "DuckDB"),
        "aggregate": (lambda: sess.sql(agg).to_arrow(),
                      lambda: con.sql(agg).to_arrow_table(), "DuckDB"),
    }
    pairs = {k: v for k, v in pairs.items() if k in only_readers}
    # warm: the page cache, our footers, DuckDB's metadata; and check the answers
    n_rows = None
    for k, (ours, theirs, _) in pairs.items():
        a, b = ours(), theirs()
        if k == "aggregate":
            if [a.column(1)[0].as_py()] != [b.column(1)[0].as_py()] or \
                    abs(float(a.column(0)[0].as_py()) - float(b.column(0)[0].as_py())) > 1e-6 * abs(
                        float(b.column(0)[0].as_py())) + 1e-6:
                sys.exit(f"{label} aggregate: ours {a.to_pylist()} vs DuckDB {b.to_pylist()}")
        elif a.num_rows != b.num_rows:
            sys.exit(f"{label} {k}: {a.num_rows} rows vs {b.num_rows}")
        n_rows = a.num_rows if k != "aggregate" else n_rows
        del a, b
    times = {k: ([], []) for k in pairs}
    for _ in range(rounds):
        for k, (ours, theirs, _) in pairs.items():
            ms, r = timed(ours)
            del r
            times[k][0].append(ms)
            ms, r = timed(theirs)
            del r
            times[k][1].append(ms)
    rows = f"{n_rows} rows, " if n_rows is not None else ""
    print(f"\n{label} ({rows}{len(files)} files), {rounds} rounds")
    print(f"  {'reader':<10} {'ours best':>10} {'median':>8}   {'peer':<8} {'best':>8} {'median':>8}   "
          f"{'ratio (medians)':>15}")
    out = []
    for k, (ours_t, theirs_t) in times.items():
        peer = pairs[k][2]
        mo, mt = statistics.median(ours_t), statistics.median(theirs_t)
        print(f"  {k:<10} {min(ours_t):>10.1f} {mo:>8.1f}   {peer:<8} {min(theirs_t):>8.1f} {mt:>8.1f}   "
              f"{mt / mo:>14.2f}x")
        out.append((k, mt / mo))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="lineitem,wide,files8")
    ap.add_argument("--readers", default="to_arrow,select *,aggregate")
    args = ap.parse_args()
    import hyperstreamdb as hdb
    only = set(args.only.split(","))
    readers = set(args.readers.split(","))
    print(f"hyperstreamdb {os.path.dirname(hdb.__file__)}; load average {os.getloadavg()[0]:.2f} "
          f"{os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; {os.cpu_count()} cores")
    summary = []
    if "lineitem" in only:
        p = lineitem_path()
        if data_files(p):
            for k, r in bench_table("lineitem", p, "l_quantity", args.rounds, readers):
                summary.append(f"lineitem {k}: {r:.2f}x")
        else:
            print(f"\nlineitem: no table at {p} (bench/sql/run.sh --only tpch makes it)")
    if "wide" in only:
        for k, r in bench_table("1M x 10 columns", made_table("wide", 1_000_000, 10, 1), "c0",
                                args.rounds, readers):
            summary.append(f"1M x 10 {k}: {r:.2f}x")
    if "files8" in only:
        for k, r in bench_table("4M x 10 columns in 8 files", made_table("files8", 4_000_000, 10, 8),
                                "c0", args.rounds, readers):
            summary.append(f"4M x 10 / 8 files {k}: {r:.2f}x")
    la = os.getloadavg()
    print(f"\nload average at the end {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    print("ratios (peer median / ours median; >= 1.00: ours at least as fast): " + "; ".join(summary))


if __name__ == "__main__":
    main()

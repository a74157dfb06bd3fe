"""bench/filter/threads.py: the queries of bench.py, single-threaded and on
all cores, us against DuckDB, in one run.

    .venv/bin/python bench/filter/threads.py --build build [--repeat 3] [--layout zstd]

Needs the table cached by bench.py (run bench/filter/run.sh --prepare first)
and the driver bench/filter/run.sh builds (<build>/hs_filter_bench).  Sides:

  ours-1     hs_filter_bench with HS_SCAN_THREADS=1 (one scan thread)
  ours-all   hs_filter_bench with the default (one scan thread per core, up to 8)
  duck-1     DuckDB, SET threads = 1
  duck-all   DuckDB, its default (one thread per core)

Prints best-of wall milliseconds, process CPU seconds and the ratios
duck/ours for both thread counts (> 1: we are faster).  On a shared
machine the wall times of the all-core runs are the noisiest numbers here;
the single-thread ones and the CPU seconds are steadier.
"""
import argparse
import json
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402  (queries(), best_of(), run_driver(), the cached tables)


def run_ours(driver, table, filters, repeat, threads):
    env = dict(os.environ)
    if threads:
        env["HS_SCAN_THREADS"] = str(threads)
    else:
        env.pop("HS_SCAN_THREADS", None)
    return bench.run_driver(driver, table, filters, repeat, env=env)[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("HS_BUILD", "build"))
    ap.add_argument("--data", default=str(HERE / "data"))
    ap.add_argument("--repeat", type=int, default=int(os.environ.get("BENCH_REPEAT", "3")))
    ap.add_argument("--layout", default="uncompressed", choices=sorted(bench.LAYOUTS),
                    help="which cached table of bench.py (data/<layout>)")
    a = ap.parse_args()
    build = pathlib.Path(a.build).resolve()
    driver = build / "hs_filter_bench"
    meta_path = pathlib.Path(a.data) / a.layout / "meta.json"
    if not meta_path.exists() or not driver.exists():
        sys.exit("threads.py: run bench/filter/run.sh --prepare (table cache and driver) first")
    meta = json.loads(meta_path.read_text())
    if not meta.get("indexed"):
        sys.exit("threads.py: the cached table has no indexes yet (bench/filter/run.sh --prepare)")
    import duckdb

    qs = bench.queries(meta)
    filters = [q[1] for q in qs]
    ours1 = run_ours(driver, meta["table"], filters, a.repeat, 1)
    oursn = run_ours(driver, meta["table"], filters, a.repeat, 0)
    files = meta["data_files"]
    file_list = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
    con1 = duckdb.connect()
    con1.execute("SET threads = 1")
    conn = duckdb.connect()
    n_threads = conn.execute("SELECT current_setting('threads')").fetchall()[0][0]
    print(f"best of {a.repeat}; {os.cpu_count()} cpus; duckdb {duckdb.__version__} "
          f"(all = {n_threads} threads); ours all = HS_SCAN_THREADS default; ratios duck/ours "
          "(> 1: we are faster)\n")
    print(f"{'query':10s} {'rows':>8s} | {'ours-1':>8s} {'duck-1':>8s} {'ratio':>6s} | "
          f"{'ours-all':>8s} {'duck-all':>8s} {'ratio':>6s} | cpu s: ours-1 duck-1 ours-all duck-all")
    out = []
    for (name, sql, _, _), o1, on in zip(qs, ours1, oursn):
        q = f"SELECT * FROM read_parquet({file_list}) WHERE {sql}"
        d1, d1c, r1 = bench.best_of(lambda: con1.sql(q).to_arrow_table().num_rows, a.repeat)
        dn, dnc, rn = bench.best_of(lambda: conn.sql(q).to_arrow_table().num_rows, a.repeat)
        if not (o1["rows"] == on["rows"] == r1 == rn):
            print(f"!! {name}: row counts differ: ours {o1['rows']}/{on['rows']} duckdb {r1}/{rn}")
        print(f"{name:10s} {o1['rows']:8d} | {o1['best_s'] * 1e3:8.1f} {d1 * 1e3:8.1f} "
              f"{d1 / o1['best_s']:6.2f} | {on['best_s'] * 1e3:8.1f} {dn * 1e3:8.1f} "
              f"{dn / on['best_s']:6.2f} | {o1['best_cpu_s']:.3f} {d1c:.3f} "
              f"{on['best_cpu_s']:.3f} {dnc:.3f}")
        out.append({"query": name, "rows": o1["rows"], "ours1_s": o1["best_s"],
                    "ours1_cpu_s": o1["best_cpu_s"], "oursn_s": on["best_s"],
                    "oursn_cpu_s": on["best_cpu_s"], "duck1_s": d1, "duck1_cpu_s": d1c,
                    "duckn_s": dn, "duckn_cpu_s": dnc})
    print(f"\n(load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus)")
    od = HERE.parents[1] / "bench" / "out"
    od.mkdir(exist_ok=True)
    (od / "filter_threads.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

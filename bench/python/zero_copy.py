"""bench/python/zero_copy.py - a full-table query from Python, hyperstreamdb vs
pyarrow.parquet reading the same Parquet files.

    .venv/bin/python bench/python/zero_copy.py [--rows 1000000] [--cols 10] [--repeat 3]

Writes one table (ROWS x COLS: int64, float64, int32, float32 columns in
turn) with hyperstreamdb, then measures in fresh child processes, each best
of REPEAT:
  hdb      Table(path).to_arrow()                       -> pyarrow.Table
  pyarrow  pyarrow.parquet.read_table(<the table's data files>)
           (default: pyarrow's thread pool; --pa-threads 1 for one thread)
and reports wall time, peak RSS growth over the child's baseline (VmHWM,
reset after the imports, minus VmRSS then: the reads only), and for hdb whether the pyarrow
buffers are exactly the buffers the C library exported (zero copy).  Both
produce the same table (checked).  Needs the hyperstreamdb package installed
(make test-python installs it).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

CHILD = r'''
import json, sys, time, glob
import pyarrow as pa, pyarrow.parquet as pq
import hyperstreamdb as hdb
which, path, repeat, pa_threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"

def status_kb(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0

# peak RSS of the reads only: reset the high-water mark after the imports
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = status_kb("VmRSS")
files = sorted(glob.glob(path + "/data/**/*.parquet", recursive=True))
best, out = None, {}
t = hdb.Table(path)
for _ in range(repeat):
    t0 = time.perf_counter()
    if which == "hdb":
        tab = t.to_arrow()
    else:
        tab = pq.read_table(files, use_threads=pa_threads)
    dt = time.perf_counter() - t0
    best = dt if best is None else min(best, dt)
    rows = tab.num_rows
    del tab
out["seconds"] = best
out["rows"] = rows
out["peak_mb"] = (status_kb("VmHWM") - base) / 1024
if which == "hdb":
    r = t._handle().scan()
    addrs = set(r.buffer_addresses())
    before = pa.total_allocated_bytes()
    tab = pa.table(r)
    seen = {b.address for c in tab.columns for ch in c.chunks for b in ch.buffers() if b is not None}
    out["zero_copy"] = seen == addrs and pa.total_allocated_bytes() == before
    out["data_mb"] = tab.nbytes / 1e6
    ref = pq.read_table(files)
    out["equal_to_pyarrow"] = tab.sort_by("c0").equals(ref.sort_by("c0"))
print(json.dumps(out))
'''


def make_table(path, rows, cols):
    import numpy as np
    import pyarrow as pa
    import hyperstreamdb as hdb
    rng = np.random.default_rng(1)
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
    t = hdb.Table(path)
    t.write_arrow(pa.table(data))
    t.commit(progress=False)


def run_child(which, path, repeat, pa_threads):
    p = subprocess.run([sys.executable, "-c", CHILD, which, path, str(repeat),
                        "1" if pa_threads else "0"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{which} child failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cols", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pa-threads", type=int, default=0,
                    help="1: pyarrow reads single-threaded (default: its thread pool)")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    scratch = args.dir or tempfile.mkdtemp(prefix="hs-bench-zc.")
    path = os.path.join(scratch, "t")
    try:
        shutil.rmtree(path, ignore_errors=True)
        make_table(path, args.rows, args.cols)
        files = glob.glob(path + "/data/**/*.parquet", recursive=True)
        size_mb = sum(os.path.getsize(f) for f in files) / 1e6
        hdb_r = run_child("hdb", path, args.repeat, False)
        pa_r = run_child("pyarrow", path, args.repeat, args.pa_threads != 1)
        print(f"table: {args.rows} rows x {args.cols} columns, {len(files)} file(s), "
              f"{size_mb:.1f} MB on disk, {hdb_r['data_mb']:.1f} MB in memory")
        print(f"{'reader':<26}{'seconds':>9}{'peak MB':>10}")
        print(f"{'hyperstreamdb to_arrow':<26}{hdb_r['seconds']:>9.3f}{hdb_r['peak_mb']:>10.1f}")
        label = "pyarrow.parquet" + (" (1 thread)" if args.pa_threads == 1 else "")
        print(f"{label:<26}{pa_r['seconds']:>9.3f}{pa_r['peak_mb']:>10.1f}")
        print(f"time ratio hdb/pyarrow: {hdb_r['seconds'] / pa_r['seconds']:.2f}   "
              f"peak ratio: {hdb_r['peak_mb'] / max(pa_r['peak_mb'], 1e-9):.2f}")
        print(f"zero copy into pyarrow: {hdb_r['zero_copy']}   "
              f"same table as pyarrow: {hdb_r['equal_to_pyarrow']}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"hdb": hdb_r, "pyarrow": pa_r, "rows": args.rows,
                           "cols": args.cols, "size_mb": size_mb}, f, indent=1)
        if not (hdb_r["zero_copy"] and hdb_r["equal_to_pyarrow"]):
            sys.exit(1)
    finally:
        if not args.dir:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()

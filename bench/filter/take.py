"""bench/filter/take.py - row retrieval by position ("take") per column type.

    .venv/bin/python bench/filter/take.py --build build [--rows 20000] [--takes 200]

Writes one Parquet file per layout with the table writer's defaults (zstd,
20000-row pages or 4096 for indexed tables, the writer's page byte cap) and
the uncompressed layout, columns of every kind: int64, double, a dictionary
string, long strings (~300 B), list<int32> with nulls, a struct, a nested
list and a 784-float embedding (fixed_size_list, as fashion-mnist).  Then
hs_take_bench (public C API, hs_parquet_read_selection of one row, Arrow C
stream drained) takes TAKES random rows, one column at a time and all
columns, three passes: pass 1 decompresses every page it touches (cold),
passes 2-3 find them in the page cache; and once more with the cache off
(HS_PAGE_CACHE_MB=0).  Prints cpu microseconds per take (wall time on a
loaded machine measures the queue for the cpu; the driver reports both).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))


def table(n):
    g = np.random.default_rng(3)
    words = [f"w{i:02d}" for i in range(40)]
    lens = g.integers(0, 5, n)
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    lst = pa.ListArray.from_arrays(pa.array(offs), pa.array(g.integers(0, 1000, int(offs[-1]),
                                                                    dtype=np.int32)),
                                   mask=pa.array(g.random(n) < 0.1))
    emb = pa.FixedSizeListArray.from_arrays(
        pa.array((g.random(n * 784) * 255).astype(np.uint8).astype(np.float32)), 784)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "f64": pa.array(g.standard_normal(n)),
        "cat": pa.array([words[i] for i in g.integers(0, 40, n)]),
        "long_s": pa.array([("lorem ipsum " * 25) + str(i) for i in range(n)]),
        "lst": lst,
        "st": pa.StructArray.from_arrays([pa.array(g.integers(0, 9, n)),
                                          pa.array([words[i % 40] for i in range(n)])],
                                         names=["a", "b"]),
        "nested": pa.array([[[i], [i, i + 1]] if i % 4 else None for i in range(n)],
                           pa.list_(pa.list_(pa.int64()))),
        "emb": emb,
    })


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--takes", type=int, default=200)
    ap.add_argument("--dir", default="/tmp/hs_take_bench")
    a = ap.parse_args()
    build = pathlib.Path(a.build).resolve()
    os.environ["HS_BUILD"] = str(build)
    import conftest
    hs = conftest.HyperStream(build / "libhyperstream.so")
    drv = build / "hs_take_bench"
    subprocess.run(["cc", "-std=gnu11", "-O2", "-I", str(ROOT / "include"), "-o", str(drv),
                    str(HERE / "hs_take_bench.c"), "-L", str(build), "-lhyperstream",
                    f"-Wl,-rpath,{build}"], check=True)
    d = pathlib.Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    t = table(a.rows)
    cols = t.column_names + ["*"]
    layouts = {"zstd, 20000-row pages": dict(codec="zstd"),
               "zstd, 4096-row pages (indexed)": dict(codec="zstd", page_rows=4096),
               "uncompressed": dict(codec="none")}
    print(f"{a.rows} rows, {a.takes} random single-row takes per column; cpu us per take "
          "(pass 1 cold / passes 2-3 warm / cache off)")
    for name, kw in layouts.items():
        path = d / (name.split(",")[0].replace(" ", "_") + f"-{kw.get('page_rows', 0)}.parquet")
        hs.write(path, t, **kw)
        print(f"\n== {name}: {os.path.getsize(path) / 1e6:.1f} MB")
        res = {}
        for env_mb in (None, "0"):
            env = dict(os.environ)
            if env_mb is not None:
                env["HS_PAGE_CACHE_MB"] = env_mb
            r = subprocess.run([str(drv), str(path), str(a.rows), str(a.takes), "3"] + cols,
                               capture_output=True, text=True, env=env, check=True)
            for line in r.stdout.splitlines():
                j = json.loads(line)
                res.setdefault(j["column"], []).append([p["cpu_us"] for p in j["passes"]])
        print(f"{'column':8s} {'cold us':>10s} {'warm us':>10s} {'no cache us':>12s}")
        for c in cols:
            on, off = res[c]
            print(f"{c:8s} {on[0]:10.1f} {min(on[1:]):10.1f} {min(off):12.1f}")


if __name__ == "__main__":
    main()

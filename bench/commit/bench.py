"""bench/commit: commit throughput and scan planning, HyperStreamDB vs pyiceberg.

1. Small-batch appends: N appends of 10 rows each into a table of a SQLite
   catalog (ours through the C API via ctypes; pyiceberg through its
   SqlCatalog), appends per second; R rounds alternating the two, each into
   a fresh table, best round of each reported (the machine is noisy).
   Our tables use the default hyperstream.commit.fsync=false, which matches
   pyiceberg's and Java's local FileIO (no fsync); see docs/tables.md.
2. Scan planning on a table of F data files (written by us in one append,
   identity-partitioned on `id`, so one file per row): the time to plan a
   full scan and a point filter `id = F/2`, ours (hs_scan_plan) against
   pyiceberg's plan_files() on the same metadata; ours cold (the decoded-
   manifest cache off, HS_MANIFEST_CACHE_MB=0) and warm (a process that
   planned the snapshot before).

Prints one line per measurement and the ratios.  Env: HS_BUILD, BENCH_APPENDS
(default 50), BENCH_FILES (default 10000), BENCH_ROUNDS (default 3).
"""
import ctypes
import os
import sys
import tempfile
import time

import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "python"))
import test_table_pyiceberg as T  # noqa: E402  (the ctypes wrapper of the table API)
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.table import StaticTable  # noqa: E402

N = int(os.environ.get("BENCH_APPENDS", "50"))
F = int(os.environ.get("BENCH_FILES", "10000"))
R = int(os.environ.get("BENCH_ROUNDS", "3"))


def small(i):
    return pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                     "s": [f"s{k}" for k in range(10)]})


def main():
    hs = T.Lib()
    L = hs.lib
    L.hs_scan_plan.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                               ctypes.c_void_p]
    L.hs_scan_free.argtypes = [ctypes.c_void_p]
    tmp = tempfile.mkdtemp(prefix="hs-bench-commit-")
    # ---- appends: R rounds alternating ours / pyiceberg, each into a fresh
    # table, best round of each (the machine is shared and noisy: the best
    # round is the one least disturbed, as timeit reports the minimum)
    cat = hs.sql_catalog(os.path.join(tmp, "ours.db"), os.path.join(tmp, "ours"))
    hs.call("hs_catalog_create_namespace", cat, b"b")
    pcat = SqlCatalog("default", uri=f"sqlite:///{tmp}/py.db", warehouse=f"file://{tmp}/py")
    pcat.create_namespace("b")
    ours_r, py_r = [], []
    for r in range(R):
        t = hs.create(cat, f"b.t{r}", small(0).schema)
        t0 = time.perf_counter()
        for i in range(N):
            hs.append(t, small(i))
        ours_r.append(N / (time.perf_counter() - t0))
        assert hs.scan(t).num_rows == 10 * N
        hs.lib.hs_table_close(t)
        pt = pcat.create_table(f"b.t{r}", schema=small(0).schema)
        t0 = time.perf_counter()
        for i in range(N):
            pt.append(small(i))
        py_r.append(N / (time.perf_counter() - t0))
    ours_aps, py_aps = max(ours_r), max(py_r)
    print(f"appends/s (10-row batches, {N} commits, best of {R} rounds): hyperstream "
          f"{ours_aps:.1f}  pyiceberg {py_aps:.1f}  ratio {ours_aps / py_aps:.1f}x  "
          f"(rounds: ours {' '.join(f'{x:.0f}' for x in ours_r)}; "
          f"pyiceberg {' '.join(f'{x:.1f}' for x in py_r)})")
    # ---- planning on F files
    data = pa.table({"id": pa.array(range(F), pa.int64()), "v": pa.array(range(F), pa.int64())})
    t = hs.create(cat, "b.wide", data.schema, spec="id")
    t0 = time.perf_counter()
    hs.append(t, data)
    print(f"wrote {F} data files in one append: {time.perf_counter() - t0:.1f} s")
    meta = hs.metadata_location(t)

    def ours_plan(flt):
        o = T._ScanOpts()
        o.filter = flt.encode() if flt else None
        sc = ctypes.c_void_p()
        t0 = time.perf_counter()
        hs.call("hs_scan_plan", t, ctypes.byref(o), ctypes.byref(sc))
        dtm = time.perf_counter() - t0
        L.hs_scan_free(sc)
        return dtm

    st = StaticTable.from_metadata(meta)

    def py_plan(flt):
        t0 = time.perf_counter()
        tasks = list(st.scan(row_filter=flt).plan_files()) if flt else list(st.scan().plan_files())
        return time.perf_counter() - t0, len(tasks)

    for flt in (None, f"id = {F // 2}"):
        # cold: the decoded-manifest cache off (every plan reads and decodes
        # the manifests, as pyiceberg does); warm: a process that planned
        # the snapshot before (table/mcache.c)
        # (a setting, hyperstream/config.h: the environment is read once)
        hs.lib.hs_config_set_int(b"manifest_cache_mb", ctypes.c_int64(0), None)
        cold = min(ours_plan(flt) for _ in range(3))
        hs.lib.hs_config_set(b"manifest_cache_mb", None, None)
        ours_plan(flt)
        warm = min(ours_plan(flt) for _ in range(3))
        py = min(py_plan(flt)[0] for _ in range(2))
        n = py_plan(flt)[1]
        print(f"plan {F} files, filter {flt or 'none'} ({n} files kept): hyperstream cold "
              f"{cold * 1e3:.1f} ms, warm {warm * 1e3:.1f} ms  pyiceberg {py * 1e3:.1f} ms  "
              f"ratio cold {py / cold:.1f}x, warm {py / warm:.1f}x")
    hs.lib.hs_table_close(t)
    hs.lib.hs_catalog_close(cat)


if __name__ == "__main__":
    main()

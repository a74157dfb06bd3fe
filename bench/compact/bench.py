"""bench/compact: bin-pack compaction, HyperStreamDB vs pyarrow.

A table of F small files (F appends of R rows: int64 id, a string of 8
categories, a float64, a 40-byte string) is compacted into one file:

  ours            Table.compact() on an unindexed table: read with deletes
                  applied (none here), write, commit one "replace" snapshot
  ours + index    the same table with an inverted index on `cat`: compaction
                  also builds the sidecar of the new file (reported apart:
                  the difference is the index rebuild)
  pyarrow         pq.read_table of the same F files + pq.write_table of one
                  file (zstd, as ours), no commit: the floor of the work

MB/s is input bytes (the F files' sizes) per second.  Best of BENCH_ROUNDS
(default 3) rounds, each on fresh copies.  Env: HS_BUILD, BENCH_FILES
(default 40), BENCH_ROWS (rows per file, default 50000).
"""
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import hyperstreamdb as hdb

F = int(os.environ.get("BENCH_FILES", "40"))
R = int(os.environ.get("BENCH_ROWS", "50000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))


def data(k):
    rng = np.random.default_rng(k)
    ids = np.arange(k * R, (k + 1) * R, dtype=np.int64)
    return pa.table({
        "id": ids,
        "cat": pa.array(np.array([f"c{i}" for i in range(8)])[rng.integers(0, 8, R)]),
        "x": rng.random(R),
        "s": pa.array([f"{i:040d}" for i in ids]),
    })


def make(path, indexed):
    t = hdb.Table.create(path, data(0).schema)
    if indexed:
        t.add_index("cat", "inverted")
    for k in range(F):
        t.write_arrow(data(k))
        t.commit()
    return t


def input_bytes(t):
    return sum(f["file_size_in_bytes"] for f in t.files())


def main():
    root = tempfile.mkdtemp(prefix="bench-compact-")
    try:
        best = {}
        mb = 0.0
        for r in range(ROUNDS):
            for indexed in (False, True):
                t = make(os.path.join(root, f"t{r}{int(indexed)}"), indexed)
                paths = [f["file_path"] for f in t.files()]
                mb = input_bytes(t) / 1e6
                t0 = time.perf_counter()
                res = t.compact()
                dt = time.perf_counter() - t0
                assert res["added_data_files"] == 1 and t.count() == F * R
                key = "ours + index" if indexed else "ours"
                best[key] = min(best.get(key, 1e9), dt)
                if not indexed:
                    t0 = time.perf_counter()
                    tab = pq.read_table(paths)
                    pq.write_table(tab, os.path.join(root, f"pa{r}.parquet"), compression="zstd")
                    best["pyarrow"] = min(best.get("pyarrow", 1e9), time.perf_counter() - t0)
                t.close()
        print(f"{F} files x {R} rows, {mb:.1f} MB of input")
        for k in ("ours", "ours + index", "pyarrow"):
            print(f"  {k:14s} {best[k]:7.3f} s  {mb / best[k]:7.1f} MB/s")
        print(f"  ratio ours / pyarrow time: {best['ours'] / best['pyarrow']:.2f}x "
              f"(target <= 1.5x); index rebuild: {best['ours + index'] - best['ours']:.3f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

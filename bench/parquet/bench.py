"""Parquet benchmark: HyperStreamDB vs pyarrow, single-threaded, one command.

Data (seeded):
  scalars     BENCH_ROWS rows (default 10M):
                id   int64, sequential with small random gaps
                x    float64, random normal
                cat  string, ~100 distinct values (low cardinality)
                uid  string, unique, 16-24 random letters (high cardinality)
  embeddings  BENCH_EMB_ROWS rows (default 1M; 10M x 128 float32 would be
              5 GB per copy, too much for a 24 GB machine holding the input
              and a read-back copy):
                id   int64
                emb  fixed_size_list<float32, 128>   (pyarrow writes it as a
                     Parquet LIST, as it always does; so do we)

For each dataset and codec (zstd, snappy): pyarrow writes a file
(pq.write_table, defaults otherwise) and we write one (hs_parquet_write via
ctypes, from the same Arrow table, defaults otherwise); then every file is
fully scanned by pyarrow (pq.read_table(use_threads=False)) and by us
(bench/parquet/hs_bench: hs_parquet_read, batches streamed and released).
pyarrow runs with pa.set_cpu_count(1) and pa.set_io_thread_count(1).
Times are the best of BENCH_REPEAT runs, as process CPU seconds (both sides
are single-threaded, so CPU time is what the work costs, and it stays stable
on a machine shared with other jobs) and as wall seconds.  MB/s is the
in-memory Arrow size of the data (table.nbytes) per CPU second.  Ratios are
us / pyarrow (time: < 1 means we are faster; size: < 1 means our file is
smaller).
"""
import argparse
import ctypes
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


class _HsError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


class _WriteOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),  # 0: the 0.1 layout
                ("codec", ctypes.c_char_p), ("codec_level", ctypes.c_int),
                ("row_group_rows", ctypes.c_int64), ("page_bytes", ctypes.c_int64),
                ("dictionary", ctypes.c_int), ("data_page_v2", ctypes.c_int),
                ("column_encodings", ctypes.c_char_p), ("page_rows", ctypes.c_int64)]


class _Stream(ctypes.Structure):
    _fields_ = [(n, ctypes.c_void_p) for n in
                ("get_schema", "get_next", "get_last_error", "release", "private_data")]


def gen_scalars(n, seed=1):
    g = np.random.default_rng(seed)
    ids = np.cumsum(g.integers(1, 4, n, dtype=np.int64))
    x = g.standard_normal(n)
    words = pa.array([f"category_{i:03d}_{'x' * (i % 7)}" for i in range(100)])
    cat = pa.DictionaryArray.from_arrays(pa.array(g.integers(0, 100, n, dtype=np.int32)),
                                         words).dictionary_decode()
    lens = g.integers(16, 25, n, dtype=np.int32)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    data = g.integers(97, 123, int(offsets[-1]), dtype=np.uint8)
    uid = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
    return pa.table({"id": ids, "x": x, "cat": cat, "uid": uid})


def gen_embeddings(n, d=128, seed=2):
    g = np.random.default_rng(seed)
    values = pa.array(g.standard_normal(n * d, dtype=np.float32))
    emb = pa.FixedSizeListArray.from_arrays(values, d)
    return pa.table({"id": np.arange(n, dtype=np.int64), "emb": emb})


class Hs:
    def __init__(self, build):
        self.lib = ctypes.CDLL(str(pathlib.Path(build) / "libhyperstream.so"))
        self.lib.hs_parquet_write.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                              ctypes.c_void_p, ctypes.c_void_p]
        self.lib.hs_parquet_write.restype = ctypes.c_int
        self.bench = str(pathlib.Path(build) / "hs_bench")

    def write(self, table, path, codec):
        reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        stream = _Stream()
        reader._export_to_c(ctypes.addressof(stream))
        opt = _WriteOptions(codec=codec.encode())
        err = _HsError()
        t0, c0 = time.perf_counter(), time.process_time()
        rc = self.lib.hs_parquet_write(str(path).encode(), ctypes.byref(stream),
                                       ctypes.byref(opt), ctypes.byref(err))
        t = (time.process_time() - c0, time.perf_counter() - t0)
        if rc:
            raise RuntimeError(f"hs_parquet_write {path}: {err.msg.decode()}")
        return t

    def scan(self, path, repeat):
        out = subprocess.run([self.bench, "read", str(path), str(repeat)], check=True,
                             capture_output=True, text=True)
        r = json.loads(out.stdout)
        return (r["best_cpu_s"], r["best_s"]), r["rows"]


def pa_write(table, path, codec):
    t0, c0 = time.perf_counter(), time.process_time()
    pq.write_table(table, path, compression=codec)
    return time.process_time() - c0, time.perf_counter() - t0


def pa_scan(path, repeat):
    best, rows = (float("inf"), float("inf")), 0
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        t = pq.read_table(path, use_threads=False)
        best = min(best[0], time.process_time() - c0), min(best[1], time.perf_counter() - t0)
        rows = t.num_rows
        del t
    return best, rows


def best_of(fn, repeat):
    """(best CPU seconds, best wall seconds) of repeat calls of fn."""
    runs = [fn() for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    rows = int(os.environ.get("BENCH_ROWS", 10_000_000))
    emb_rows = int(os.environ.get("BENCH_EMB_ROWS", 1_000_000))
    repeat = int(os.environ.get("BENCH_REPEAT", 2))
    out = pathlib.Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    hs = Hs(args.build)

    print(f"pyarrow {pa.__version__}; scalars {rows:,} rows; embeddings {emb_rows:,} rows "
          f"x 128 float32; best of {repeat}; single-threaded", flush=True)
    results = []
    for name, gen, n in [("scalars", gen_scalars, rows), ("embeddings", gen_embeddings, emb_rows)]:
        t0 = time.perf_counter()
        table = gen(n)
        mb = table.nbytes / 1e6
        print(f"generated {name}: {table.num_rows:,} rows, {mb:,.0f} MB in memory "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
        for codec in ["zstd", "snappy"]:
            row = {"data": name, "codec": codec, "mb": mb}
            paths = {"pa": out / f"{name}.{codec}.pyarrow.parquet",
                     "hs": out / f"{name}.{codec}.hs.parquet"}
            row["w_pa"] = best_of(lambda: pa_write(table, paths["pa"], codec), repeat)
            row["w_hs"] = best_of(lambda: hs.write(table, paths["hs"], codec), repeat)
            row["size_pa"] = paths["pa"].stat().st_size
            row["size_hs"] = paths["hs"].stat().st_size
            for f in ["pa", "hs"]:
                t, r = pa_scan(paths[f], repeat)
                assert r == table.num_rows, (f, r)
                row[f"r_pa_{f}"] = t
                t, r = hs.scan(paths[f], repeat)
                assert r == table.num_rows, (f, r)
                row[f"r_hs_{f}"] = t
            results.append(row)
            print(f"  {name}/{codec} done", flush=True)
        del table

    def line(cells, widths):
        return "  ".join(str(c).rjust(w) for c, w in zip(cells, widths))

    print()
    print("Write (each writer its own file); s = CPU seconds, wall in parentheses")
    w = [10, 6, 15, 15, 8, 8, 6, 10, 10, 10]
    print(line(["data", "codec", "pa s", "us s", "pa MB/s", "us MB/s", "us/pa", "pa MB", "us MB",
                "size us/pa"], w))
    for r in results:
        (pc, pw), (hc, hw) = r["w_pa"], r["w_hs"]
        print(line([r["data"], r["codec"], f"{pc:.3f} ({pw:.2f})", f"{hc:.3f} ({hw:.2f})",
                    f"{r['mb'] / pc:.0f}", f"{r['mb'] / hc:.0f}", f"{hc / pc:.2f}",
                    f"{r['size_pa'] / 1e6:.1f}", f"{r['size_hs'] / 1e6:.1f}",
                    f"{r['size_hs'] / r['size_pa']:.3f}"], w))
    print()
    print("Full scan (reader x file writer); s = CPU seconds, wall in parentheses")
    w = [10, 6, 8, 15, 15, 8, 8, 6]
    print(line(["data", "codec", "file", "pa s", "us s", "pa MB/s", "us MB/s", "us/pa"], w))
    for r in results:
        for f, label in [("pa", "pyarrow"), ("hs", "ours")]:
            (pc, pw), (hc, hw) = r[f"r_pa_{f}"], r[f"r_hs_{f}"]
            print(line([r["data"], r["codec"], label, f"{pc:.3f} ({pw:.2f})",
                        f"{hc:.3f} ({hw:.2f})", f"{r['mb'] / pc:.0f}", f"{r['mb'] / hc:.0f}",
                        f"{hc / pc:.2f}"], w))
    return 0


if __name__ == "__main__":
    sys.exit(main())

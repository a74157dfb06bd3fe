#!/usr/bin/env python3
"""Quantizer quality on a real data set: recall@10 of brute force over codes,
with and without exact reranking, against the exact ground truth that
make_text_embeddings.py wrote with numpy.

    .venv/bin/python bench/datasets/eval_quantizers.py [--queries 500] [--name wordnet384]

Loads $HS_BUILD/libhyperstream.so (default build/) and calls the internal
quantizer API (src/index/vector/vq.h) through ctypes.  Prints one line per
quantizer: bytes per vector, relative reconstruction MSE, recall@10 from the
codes alone and after reranking the best 40 / 100 candidates exactly, and the
time per estimated distance (vq_query_dist_many over the whole set).
"""
import argparse
import ctypes
import os
import pathlib
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
F32P = ctypes.POINTER(ctypes.c_float)
U8P = ctypes.POINTER(ctypes.c_uint8)
TYPES = {"TQ8": 1, "TQ4": 2, "PQ": 3, "BIN": 4}
METRICS = {"l2": 0, "cosine": 1, "ip": 2}


class Params(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("metric", ctypes.c_int), ("pq_m", ctypes.c_int),
                ("train_max", ctypes.c_int), ("seed", ctypes.c_uint64), ("n_threads", ctypes.c_int)]


class Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


def load_lib():
    build = pathlib.Path(os.environ.get("HS_BUILD", "build"))
    lib = ctypes.CDLL(str((build if build.is_absolute() else REPO / build) / "libhyperstream_testing.so"))
    vp = ctypes.c_void_p
    lib.vq_train.argtypes = [ctypes.POINTER(Params), F32P, ctypes.c_size_t, ctypes.c_size_t,
                             ctypes.POINTER(vp), ctypes.POINTER(Err)]
    lib.vq_free.argtypes = [vp]
    lib.vq_code_size.argtypes = [vp]
    lib.vq_code_size.restype = ctypes.c_size_t
    lib.vq_encode.argtypes = [vp, F32P, ctypes.c_size_t, U8P]
    lib.vq_decode.argtypes = [vp, U8P, ctypes.c_size_t, F32P, ctypes.POINTER(Err)]
    lib.vq_query_new.argtypes = [vp, F32P, ctypes.POINTER(vp), ctypes.POINTER(Err)]
    lib.vq_query_free.argtypes = [vp]
    lib.vq_query_dist_many.argtypes = [vp, U8P, ctypes.c_size_t, F32P]
    return lib


def exact_order(metric, q, x):
    if metric == "l2":
        return ((x - q) ** 2).sum(1)
    if metric == "ip":
        return -(x @ q)
    return 1 - (x @ q) / (np.linalg.norm(x, axis=1) * np.linalg.norm(q))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="wordnet384")
    ap.add_argument("--data", type=pathlib.Path, default=HERE / "data")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--metric", default="cosine", choices=list(METRICS))
    ap.add_argument("--types", default="TQ8,TQ4,PQ,BIN")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()

    train = np.load(a.data / f"{a.name}.train.npy").astype(np.float32)
    query = np.load(a.data / f"{a.name}.query.npy").astype(np.float32)[: a.queries]
    gt = np.load(a.data / f"{a.name}.gt.npy")[: a.queries, :10]
    n, d = train.shape
    lib = load_lib()
    x64 = train.astype(np.float64)
    print(f"{a.name}: {n} x {d}, {len(query)} queries, metric {a.metric}")
    for name in a.types.split(","):
        p = Params(TYPES[name], METRICS[a.metric], 0, 0, 7, a.threads)
        h, err = ctypes.c_void_p(), Err()
        t0 = time.time()
        if lib.vq_train(ctypes.byref(p), train.ctypes.data_as(F32P), n, d, ctypes.byref(h),
                        ctypes.byref(err)):
            raise SystemExit(err.msg.decode())
        t_train = time.time() - t0
        cs = lib.vq_code_size(h)
        codes = np.zeros((n, cs), dtype=np.uint8)
        t0 = time.time()
        lib.vq_encode(h, train.ctypes.data_as(F32P), n, codes.ctypes.data_as(U8P))
        t_enc = time.time() - t0
        rec = np.zeros((n, d), dtype=np.float32)
        lib.vq_decode(h, codes.ctypes.data_as(U8P), n, rec.ctypes.data_as(F32P), ctypes.byref(err))
        ref = train / np.linalg.norm(train, axis=1, keepdims=True) if a.metric == "cosine" else train
        mse = float(np.mean(((rec - ref) ** 2).sum(1) / (ref ** 2).sum(1)))
        est = np.zeros(n, dtype=np.float32)
        hits = {0: 0, 40: 0, 100: 0}
        t_dist = 0.0
        for qi, qv in enumerate(query):
            qq = ctypes.c_void_p()
            lib.vq_query_new(h, qv.ctypes.data_as(F32P), ctypes.byref(qq), ctypes.byref(err))
            t0 = time.perf_counter()
            lib.vq_query_dist_many(qq, codes.ctypes.data_as(U8P), n, est.ctypes.data_as(F32P))
            t_dist += time.perf_counter() - t0
            lib.vq_query_free(qq)
            top = np.argpartition(est, 100)[:100]
            top = top[np.argsort(est[top], kind="stable")]
            truth = set(gt[qi].tolist())
            hits[0] += len(truth & set(top[:10].tolist()))
            for r in (40, 100):
                c = top[:r]
                ex = exact_order(a.metric, qv.astype(np.float64), x64[c])
                hits[r] += len(truth & set(c[np.argsort(ex, kind="stable")[:10]].tolist()))
        lib.vq_free(h)
        nq = 10.0 * len(query)
        print(f"  {name:4s} {cs:4d} B/vector  MSE {mse:.5f}  recall@10 codes {hits[0] / nq:.4f}"
              f"  rerank 40: {hits[40] / nq:.4f}  rerank 100: {hits[100] / nq:.4f}"
              f"  {1e9 * t_dist / (len(query) * n):.1f} ns/distance"
              f"  (train {t_train:.1f} s, encode {1e6 * t_enc / n:.1f} us/vector)")


if __name__ == "__main__":
    main()

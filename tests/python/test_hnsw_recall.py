"""HNSW recall on real data: 10,000 fashion-mnist images (Debian's
dataset-fashion-mnist), 200 test images as queries, L2.

Oracle: exact nearest neighbours computed here with numpy in float64.  The
index is driven through ctypes (the internal hnsw_* functions are exported by
libhyperstream.so); quantized indexes get exact vectors through a Python
fetch callback.  Checks recall@10 >= 0.95 for the flat and the TQ8 index, and
that filtered search returns exactly min(k, allowed) rows with recall >= 0.95
at 10% and 1% selectivity (graph walk and exact path).
"""
import ctypes
import gzip
import pathlib
import struct

import numpy as np
import pytest

from conftest import LIB_PATH, require

FMNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")
N, NQ, K = 10000, 200, 10
HS_METRIC_L2 = 0
VQ_FLAT, VQ_TQ8 = 0, 1


class VqParams(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("metric", ctypes.c_int), ("pq_m", ctypes.c_int),
                ("train_max", ctypes.c_int), ("seed", ctypes.c_uint64),
                ("n_threads", ctypes.c_int)]


class HnswParams(ctypes.Structure):
    _fields_ = [("M", ctypes.c_int), ("ef_construction", ctypes.c_int),
                ("ef_search", ctypes.c_int), ("metric", ctypes.c_int), ("quant", VqParams),
                ("rerank", ctypes.c_int), ("ivf_lists", ctypes.c_int),
                ("ivf_nprobe", ctypes.c_int), ("seed", ctypes.c_uint64),
                ("n_threads", ctypes.c_int)]


FETCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32),
                         ctypes.c_size_t, ctypes.POINTER(ctypes.c_float), ctypes.c_void_p)


class SearchOpts(ctypes.Structure):
    _fields_ = [("k", ctypes.c_int), ("ef", ctypes.c_int), ("nprobe", ctypes.c_int),
                ("allow", ctypes.c_void_p), ("exact_threshold", ctypes.c_int64),
                ("fetch", FETCH), ("fetch_ctx", ctypes.c_void_p),
                ("rerank", ctypes.c_int), ("vectors", ctypes.c_void_p),
                ("allow_bits", ctypes.c_void_p)]   # hnsw.h


class Hit(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32), ("dist", ctypes.c_float)]


class SearchStats(ctypes.Structure):
    _fields_ = [("distances", ctypes.c_int64), ("reranked", ctypes.c_int64),
                ("widenings", ctypes.c_int), ("exact", ctypes.c_int)]


class HsError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


def _images(path, n):
    with gzip.open(path, "rb") as f:
        magic, total, rows, cols = struct.unpack(">IIII", f.read(16))
        assert magic == 2051
        data = np.frombuffer(f.read(n * rows * cols), dtype=np.uint8)
    return np.ascontiguousarray(data.reshape(n, rows * cols).astype(np.float32))


@pytest.fixture(scope="module")
def env():
    require(LIB_PATH.exists(), f"{LIB_PATH} not built (set HS_BUILD)")
    require((FMNIST / "train-images-idx3-ubyte.gz").exists(), "dataset-fashion-mnist not installed")
    lib = ctypes.CDLL(str(LIB_PATH))
    lib.hnsw_build.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
                               ctypes.POINTER(HnswParams), ctypes.c_void_p, ctypes.c_void_p,
                               ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(HsError)]
    lib.hnsw_search.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(SearchOpts),
                                ctypes.POINTER(Hit), ctypes.POINTER(ctypes.c_int),
                                ctypes.POINTER(SearchStats), ctypes.POINTER(HsError)]
    lib.hnsw_free.argtypes = [ctypes.c_void_p]
    lib.roaring_bitmap_create.restype = ctypes.c_void_p
    lib.roaring_bitmap_add_many.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                            ctypes.POINTER(ctypes.c_uint32)]
    lib.roaring_bitmap_free.argtypes = [ctypes.c_void_p]
    x = _images(FMNIST / "train-images-idx3-ubyte.gz", N)
    q = _images(FMNIST / "t10k-images-idx3-ubyte.gz", NQ)
    return lib, x, q


def _truth(x, q, rows=None):
    """Exact top-K row ids per query (float64), over `rows` (default all)."""
    ids = np.arange(len(x)) if rows is None else rows
    xs = x[ids].astype(np.float64)
    qd = q.astype(np.float64)
    d = (qd ** 2).sum(1)[:, None] - 2 * qd @ xs.T + (xs ** 2).sum(1)[None, :]
    order = np.argsort(d, axis=1, kind="stable")[:, :min(K, len(ids))]
    return ids[order]


def _build(lib, x, quant):
    p = HnswParams(M=16, ef_construction=100, metric=HS_METRIC_L2, n_threads=2, rerank=1)
    p.quant.type = quant
    ix = ctypes.c_void_p()
    err = HsError()
    rc = lib.hnsw_build(x.ctypes.data, x.shape[0], x.shape[1], ctypes.byref(p), None, None,
                        ctypes.byref(ix), ctypes.byref(err))
    assert rc == 0, err.msg
    return ix


def _search_all(lib, ix, x, q, ef=64, allow=None, threshold=0):
    d = x.shape[1]

    @FETCH
    def fetch(ctx, ids, n, out, err):
        rows = np.ctypeslib.as_array(ids, shape=(n,))
        dst = np.ctypeslib.as_array(out, shape=(n, d))
        dst[:] = x[rows]
        return 0

    hits = (Hit * K)()
    got = ctypes.c_int()
    stats = SearchStats()
    err = HsError()
    res, exact = [], 0
    for i in range(len(q)):
        qi = np.ascontiguousarray(q[i])
        o = SearchOpts(k=K, ef=ef, allow=allow, exact_threshold=threshold, fetch=fetch)
        rc = lib.hnsw_search(ix, qi.ctypes.data, ctypes.byref(o), hits, ctypes.byref(got),
                             ctypes.byref(stats), ctypes.byref(err))
        assert rc == 0, err.msg
        res.append([hits[j].id for j in range(got.value)])
        exact += stats.exact
    return res, exact


def _recall(found, truth):
    return np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth) if len(t)])


@pytest.mark.parametrize("quant", [VQ_FLAT, VQ_TQ8], ids=["flat", "tq8"])
def test_recall_and_filters(env, quant):
    lib, x, q = env
    ix = _build(lib, x, quant)
    try:
        truth = _truth(x, q)
        found, _ = _search_all(lib, ix, x, q)
        r = _recall(found, truth)
        assert r >= 0.95, f"recall@10 {r:.3f}"
        assert all(len(f) == K for f in found)

        rng = np.random.default_rng(11)
        for sel in (0.1, 0.01):
            rows = np.sort(np.nonzero(rng.random(N) < sel)[0]).astype(np.uint32)
            bm = lib.roaring_bitmap_create()
            lib.roaring_bitmap_add_many(bm, len(rows),
                                        rows.ctypes.data_as(ctypes.POINTER(ctypes.c_uint32)))
            try:
                ftruth = _truth(x, q, rows)
                for threshold in (1, 0):  # forced graph walk, then the default
                    found, exact = _search_all(lib, ix, x, q, allow=bm, threshold=threshold)
                    assert all(len(f) == min(K, len(rows)) for f in found)
                    assert all(set(f) <= set(rows.tolist()) for f in found)
                    r = _recall(found, ftruth)
                    assert r >= 0.95, f"selectivity {sel}, threshold {threshold}: {r:.3f}"
                    if threshold == 1:
                        assert exact == 0
            finally:
                lib.roaring_bitmap_free(bm)
    finally:
        lib.hnsw_free(ix)

"""Quantizers and k-means (src/index/vector/vq*.c, kmeans.c) against numpy/scipy.

Oracles: numpy linear algebra (the rotation is an orthogonal matrix; exact
distances to decoded vectors; brute-force nearest centroids) and
scipy.cluster.vq.kmeans2 (k-means objective on the same data).  The library's
internal vq_* functions are called through ctypes (libhyperstream.so exports
them).
"""
import ctypes

import numpy as np
import pytest
from conftest import LIB_PATH, require

from scipy.cluster.vq import kmeans2

VQ = {"flat": 0, "tq8": 1, "tq4": 2, "pq": 3, "bin": 4}
METRIC = {"l2": 0, "cosine": 1, "ip": 2}
F32P = ctypes.POINTER(ctypes.c_float)
U8P = ctypes.POINTER(ctypes.c_uint8)


class _Params(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("metric", ctypes.c_int), ("pq_m", ctypes.c_int),
                ("train_max", ctypes.c_int), ("seed", ctypes.c_uint64),
                ("n_threads", ctypes.c_int)]


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


@pytest.fixture(scope="module")
def lib():
    require(LIB_PATH.exists(), f"{LIB_PATH} not built (set HS_BUILD)")
    L = ctypes.CDLL(str(LIB_PATH))
    require(hasattr(L, "vq_train"), "library built without the quantizers")
    vp = ctypes.c_void_p
    L.vq_train.argtypes = [ctypes.POINTER(_Params), F32P, ctypes.c_size_t, ctypes.c_size_t,
                           ctypes.POINTER(vp), ctypes.POINTER(_Err)]
    L.vq_free.argtypes = [vp]
    L.vq_code_size.argtypes = [vp]
    L.vq_code_size.restype = ctypes.c_size_t
    L.vq_encode.argtypes = [vp, F32P, ctypes.c_size_t, U8P]
    L.vq_decode.argtypes = [vp, U8P, ctypes.c_size_t, F32P, ctypes.POINTER(_Err)]
    L.vq_rotate.argtypes = [vp, F32P, ctypes.c_size_t, F32P, ctypes.POINTER(_Err)]
    L.vq_query_new.argtypes = [vp, F32P, ctypes.POINTER(vp), ctypes.POINTER(_Err)]
    L.vq_query_free.argtypes = [vp]
    L.vq_query_dist_many.argtypes = [vp, U8P, ctypes.c_size_t, F32P]
    L.vq_kmeans.argtypes = [F32P, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                            ctypes.c_uint64, ctypes.c_int, F32P,
                            ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(_Err)]
    return L


def _f32(a):
    return a.ctypes.data_as(F32P)


def _check(rc, err):
    assert rc == 0, err.msg.decode()


class Quantizer:
    def __init__(self, lib, kind, metric, x, pq_m=0, seed=3):
        self.lib, self.d = lib, x.shape[1]
        x = np.ascontiguousarray(x, dtype=np.float32)
        p = _Params(VQ[kind], METRIC[metric], pq_m, 0, seed, 1)
        self.h, err = ctypes.c_void_p(), _Err()
        _check(lib.vq_train(ctypes.byref(p), _f32(x), x.shape[0], self.d, ctypes.byref(self.h),
                            ctypes.byref(err)), err)
        self.cs = lib.vq_code_size(self.h)

    def close(self):
        self.lib.vq_free(self.h)

    def encode(self, x):
        x = np.ascontiguousarray(x, dtype=np.float32)
        codes = np.zeros((x.shape[0], self.cs), dtype=np.uint8)
        self.lib.vq_encode(self.h, _f32(x), x.shape[0], codes.ctypes.data_as(U8P))
        return codes

    def decode(self, codes):
        out = np.zeros((codes.shape[0], self.d), dtype=np.float32)
        err = _Err()
        _check(self.lib.vq_decode(self.h, codes.ctypes.data_as(U8P), codes.shape[0], _f32(out),
                                  ctypes.byref(err)), err)
        return out

    def rotate(self, x):
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = np.zeros_like(x)
        err = _Err()
        _check(self.lib.vq_rotate(self.h, _f32(x), x.shape[0], _f32(out), ctypes.byref(err)), err)
        return out

    def dists(self, q, codes):
        q = np.ascontiguousarray(q, dtype=np.float32)
        qq, err = ctypes.c_void_p(), _Err()
        _check(self.lib.vq_query_new(self.h, _f32(q), ctypes.byref(qq), ctypes.byref(err)), err)
        out = np.zeros(codes.shape[0], dtype=np.float32)
        self.lib.vq_query_dist_many(qq, codes.ctypes.data_as(U8P), codes.shape[0], _f32(out))
        self.lib.vq_query_free(qq)
        return out


def _clustered(rng, n, d, k=20, spread=0.3):
    centres = rng.standard_normal((k, d))
    x = centres[rng.integers(0, k, n)] + spread * rng.standard_normal((n, d))
    return (x * rng.uniform(0.5, 1.5, (n, 1))).astype(np.float32)


@pytest.mark.parametrize("d", [1, 6, 100, 384, 785])
def test_rotation_is_orthogonal(lib, d):
    rng = np.random.default_rng(d)
    q = Quantizer(lib, "tq4", "l2", rng.standard_normal((10, d)).astype(np.float32))
    try:
        # rows of R^T: the images of the basis vectors
        rt = q.rotate(np.eye(d, dtype=np.float32)).astype(np.float64)
        np.testing.assert_allclose(rt @ rt.T, np.eye(d), atol=2e-5)
        x = rng.standard_normal((5, d)).astype(np.float32)
        np.testing.assert_allclose(q.rotate(x), x @ rt.astype(np.float32), rtol=1e-4, atol=1e-5)
    finally:
        q.close()


@pytest.mark.parametrize("kind,mse_lo,mse_hi", [("tq8", 6e-5, 1.1e-4), ("tq4", 0.0085, 0.0105),
                                                ("bin", 0.30, 0.40)])
def test_unit_vector_mse(lib, kind, mse_lo, mse_hi):
    """TurboQuant's distortion for unit vectors: 4 bits ~0.009, 1 bit 1-2/pi;
    TQ8's uniform levels ~8.8e-5 (the best uniform 8-bit quantizer of a Gaussian)."""
    rng = np.random.default_rng(1)
    d = 512
    x = rng.standard_normal((1500, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = Quantizer(lib, kind, "l2", x[:1000])
    try:
        y = q.decode(q.encode(x[1000:])).astype(np.float64)
        mse = np.mean(np.sum((y - x[1000:]) ** 2, axis=1))
        assert mse_lo < mse < mse_hi, mse
    finally:
        q.close()


@pytest.mark.parametrize("kind", ["flat", "tq8", "tq4", "pq"])
@pytest.mark.parametrize("metric", ["l2", "cosine", "ip"])
def test_estimates_are_distances_to_decoded(lib, kind, metric):
    rng = np.random.default_rng(7)
    d = 50
    x = _clustered(rng, 1000, d)
    qs = _clustered(rng, 4, d)
    q = Quantizer(lib, kind, metric, x, pq_m=10)
    try:
        codes = q.encode(x)
        y = q.decode(codes).astype(np.float64)
        if kind in ("tq8", "tq4"):  # the stored norm, not ||y||, enters L2
            norms = codes[:, :4].copy().view(np.float32)[:, 0].astype(np.float64)
        for qv in qs.astype(np.float64):
            est = q.dists(qv, codes)
            ip = y @ qv
            if metric == "ip":
                want = -ip
            elif metric == "cosine":
                want = 1 - ip / np.linalg.norm(qv)
            elif kind in ("tq8", "tq4"):
                want = qv @ qv + norms ** 2 - 2 * ip
            else:
                want = np.sum((y - qv) ** 2, axis=1)
            scale = 1.0 if metric == "cosine" else np.linalg.norm(qv) * np.linalg.norm(y, axis=1)
            err = np.max(np.abs(est - want) / scale)
            assert err < (0.01 if kind == "tq4" else 1e-4), err
    finally:
        q.close()


def test_pq_codes_are_nearest_centroids(lib):
    rng = np.random.default_rng(3)
    d, m = 30, 4  # uneven subspaces: 8, 8, 7, 7
    x = _clustered(rng, 800, d)
    q = Quantizer(lib, "pq", "l2", x, pq_m=m)
    try:
        codes = q.encode(x)
        # all 256 centroids of every subspace, from decoding the codes 0..255
        table = q.decode(np.repeat(np.arange(256, dtype=np.uint8)[:, None], m, axis=1))
        bounds = [0, 8, 16, 23, 30]
        for s in range(m):
            a, b = bounds[s], bounds[s + 1]
            dd = ((x[:, None, a:b].astype(np.float64) - table[None, :, a:b]) ** 2).sum(-1)
            best = dd.min(axis=1)
            got = dd[np.arange(len(x)), codes[:, s]]
            assert np.all(got <= best * (1 + 1e-5) + 1e-9)
    finally:
        q.close()


def _kmeans(lib, x, k, seed, iters=25):
    n, d = x.shape
    cent = np.zeros((k, d), dtype=np.float32)
    assign = np.zeros(n, dtype=np.uint32)
    err = _Err()
    _check(lib.vq_kmeans(_f32(x), n, d, k, iters, seed, 2, _f32(cent),
                         assign.ctypes.data_as(ctypes.POINTER(ctypes.c_uint32)),
                         ctypes.byref(err)), err)
    return cent, assign


@pytest.mark.parametrize("n,d,k", [(3000, 8, 16), (2000, 48, 40)])
def test_kmeans_vs_scipy(lib, n, d, k):
    rng = np.random.default_rng(n + d)
    x = _clustered(rng, n, d, k=k, spread=0.5)
    x64 = x.astype(np.float64)
    ours = []
    for seed in range(1, 6):
        cent, assign = _kmeans(lib, x, k, seed)
        dist = ((x64[:, None, :] - cent.astype(np.float64)[None]) ** 2).sum(-1)
        # assignments are the brute-force nearest centroids
        mine = dist[np.arange(n), assign]
        assert np.all(mine <= dist.min(axis=1) * (1 + 1e-5) + 1e-6)
        ours.append(mine.sum())
    # scipy's k-means++ reaches about the same objectives (k-means has local
    # optima: compare the medians over 5 seeds)
    theirs = []
    for seed in range(5):
        c, lab = kmeans2(x64, k, iter=25, minit="++", seed=seed)
        theirs.append(((x64 - c[lab]) ** 2).sum())
    assert np.median(ours) <= np.median(theirs) * 1.05, (sorted(ours), sorted(theirs))

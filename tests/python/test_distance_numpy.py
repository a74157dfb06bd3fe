"""Distance API (hyperstream/vector.h) against numpy and scipy.spatial.distance.

The library is loaded with ctypes from $HS_BUILD/libhyperstream.so (see
conftest.py).  Every SIMD level this CPU has is forced in turn with
hs_simd_set_level; levels it lacks are skipped.  Oracles: scipy's
euclidean, cosine, cityblock, hamming (a fraction: times d gives our count),
jaccard on booleans and cdist; numpy float64 dot products; np.unpackbits
for packed bits.  Nothing is compared with our own output.
"""
import ctypes

import numpy as np
import pytest

from conftest import LIB_PATH, require, require_module

ssd = require_module("scipy.spatial.distance")

L2, COSINE, IP, L1, HAMMING, JACCARD = range(6)
HS_OK, HS_INVALID, HS_UNSUPPORTED = 0, 3, 7
LEVELS = ["scalar", "avx2", "avx512", "neon"]
DIMS = [1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129,
        383, 384, 385, 784, 785, 960]


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


@pytest.fixture(scope="module")
def lib():
    require(LIB_PATH.exists(), f"{LIB_PATH} not built (set HS_BUILD)")
    lib = ctypes.CDLL(str(LIB_PATH))
    p, sz, d = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_double
    for name in ("hs_distance_f32", "hs_distance_f16", "hs_distance_i8"):
        getattr(lib, name).argtypes = [ctypes.c_int, p, p, sz]
        getattr(lib, name).restype = d
    lib.hs_distance_packed.argtypes = [ctypes.c_int, p, p, sz]
    lib.hs_distance_packed.restype = d
    lib.hs_distance_sparse.argtypes = [ctypes.c_int, p, p, sz, p, p, sz]
    lib.hs_distance_sparse.restype = d
    lib.hs_sparse_check.argtypes = [p, p, sz, ctypes.c_uint32, p]
    lib.hs_sparse_check.restype = ctypes.c_int
    lib.hs_distance_batch_f32.argtypes = [ctypes.c_int, p, sz, p, sz, sz, p, ctypes.c_int, p]
    lib.hs_distance_batch_f32.restype = ctypes.c_int
    lib.hs_simd_set_level.argtypes = [ctypes.c_char_p, p]
    lib.hs_simd_set_level.restype = ctypes.c_int
    lib.hs_simd_level.argtypes = []
    lib.hs_simd_level.restype = ctypes.c_char_p
    lib.hs_metric_from_name.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), p]
    lib.hs_metric_from_name.restype = ctypes.c_int
    lib.hs_metric_name.argtypes = [ctypes.c_int]
    lib.hs_metric_name.restype = ctypes.c_char_p
    return lib


# What each level needs, by the kernel's names in /proc/cpuinfo (which
# lists a vector extension only when the OS also saves its registers).
LEVEL_FLAGS = {"scalar": set(), "avx2": {"avx2", "fma", "f16c"},
               "avx512": {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl"},
               "neon": {"asimd"}}


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


@pytest.fixture(params=LEVELS)
def level(lib, request):
    err = _Err()
    rc = lib.hs_simd_set_level(request.param.encode(), ctypes.byref(err))
    if rc == HS_UNSUPPORTED:
        # the oracle of "not available": the CPU's flags as the kernel lists them
        flags = _cpu_flags()
        assert flags is None or not LEVEL_FLAGS[request.param] <= flags, \
            f"{request.param}: HS_UNSUPPORTED on a CPU with {sorted(LEVEL_FLAGS[request.param])}"
        pytest.skip(f"{request.param} not available on this CPU")  # skip-ok: hardware
    assert rc == HS_OK, err.msg
    assert lib.hs_simd_level().decode() == request.param
    yield request.param
    assert lib.hs_simd_set_level(None, None) == HS_OK


def ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def f32(lib, m, a, b):
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    return lib.hs_distance_f32(m, ptr(a), ptr(b), a.size)


def rel_ok(got, want, scale, rtol=1e-5, atol=1e-30):
    return abs(got - want) <= rtol * scale + atol


def pair_inputs(rng, d):
    a = rng.standard_normal(d).astype(np.float32)
    b = rng.standard_normal(d).astype(np.float32)
    a[::3] = 0                       # zeros for the set metrics
    b[::5] = a[::5]                  # equal positions for hamming
    return a, b


# ---------------------------------------------------------------- dense


def test_dense_f32_vs_scipy(lib, level):
    rng = np.random.default_rng(1)
    for d in DIMS:
        for _ in range(3):
            a, b = pair_inputs(rng, d)
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            want = ssd.euclidean(a64, b64)
            assert rel_ok(f32(lib, L2, a, b), want, want), (level, d)
            want = ssd.cityblock(a64, b64)
            assert rel_ok(f32(lib, L1, a, b), want, want), (level, d)
            assert rel_ok(f32(lib, IP, a, b), float(a64 @ b64), float(np.abs(a64 * b64).sum()))
            if np.any(a) and np.any(b):
                assert abs(f32(lib, COSINE, a, b) - ssd.cosine(a64, b64)) <= 1e-5
            assert f32(lib, HAMMING, a, b) == round(ssd.hamming(a, b) * d)
            assert abs(f32(lib, JACCARD, a, b) - ssd.jaccard(a != 0, b != 0)) <= 1e-12


def test_dense_extremes(lib, level):
    """Large, tiny and subnormal magnitudes against float64 numpy."""
    rng = np.random.default_rng(2)
    pool = np.array([0, 1e-30, 1e-40, 1e-44, 1e-3, 1, 1e15, 3], np.float32)
    for d in (1, 7, 16, 33, 129, 385, 785):
        a = (pool[rng.integers(0, len(pool), d)] * rng.choice([-1, 1], d)).astype(np.float32)
        b = (pool[rng.integers(0, len(pool), d)] * rng.choice([-1, 1], d)).astype(np.float32)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        tiny = 1e-40 * d
        want = float(((a64 - b64) ** 2).sum())
        assert rel_ok(f32(lib, L2, a, b) ** 2, want, want, atol=tiny)
        assert rel_ok(f32(lib, IP, a, b), float(a64 @ b64), float(np.abs(a64 * b64).sum()),
                      atol=tiny)
        want = float(np.abs(a64 - b64).sum())
        assert rel_ok(f32(lib, L1, a, b), want, want, atol=tiny)
    # sums past the float range are infinite, never NaN
    a = np.ones(100, np.float32)
    a[37] = 1e30
    assert f32(lib, L2, a, np.zeros(100, np.float32)) == np.inf
    assert f32(lib, IP, a, a) == np.inf


def test_f16_vs_numpy(lib, level):
    rng = np.random.default_rng(3)
    for d in DIMS:
        a = (rng.standard_normal(d) * 4).astype(np.float16)
        b = (rng.standard_normal(d) * 4).astype(np.float16)
        a[::4] = 0
        b[::6] = a[::6]
        a[1::9] = np.float16(3e-6)        # a subnormal half
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        au, bu = a.view(np.uint16), b.view(np.uint16)

        def h(m):
            return lib.hs_distance_f16(m, ptr(au), ptr(bu), d)

        want = ssd.euclidean(a64, b64)
        assert rel_ok(h(L2), want, want)
        want = ssd.cityblock(a64, b64)
        assert rel_ok(h(L1), want, want)
        assert rel_ok(h(IP), float(a64 @ b64), float(np.abs(a64 * b64).sum()))
        if np.any(a) and np.any(b):
            assert abs(h(COSINE) - ssd.cosine(a64, b64)) <= 1e-5
        assert h(HAMMING) == round(ssd.hamming(a64, b64) * d)
        assert abs(h(JACCARD) - ssd.jaccard(a != 0, b != 0)) <= 1e-12


def test_i8_vs_numpy(lib, level):
    rng = np.random.default_rng(4)
    for d in DIMS + [40000]:
        a = rng.integers(-128, 128, d, dtype=np.int8)
        b = rng.integers(-128, 128, d, dtype=np.int8)
        a[::4] = 0
        b[::7] = a[::7]
        a64, b64 = a.astype(np.int64), b.astype(np.int64)

        def i8(m):
            return lib.hs_distance_i8(m, ptr(a), ptr(b), d)

        assert i8(L2) == np.sqrt(float(((a64 - b64) ** 2).sum()))   # exact integer sums
        assert i8(IP) == float(a64 @ b64)
        assert i8(L1) == float(np.abs(a64 - b64).sum())
        if np.any(a) and np.any(b):
            assert abs(i8(COSINE) - ssd.cosine(a64.astype(float), b64.astype(float))) <= 1e-12
        else:
            assert np.isnan(i8(COSINE))
        assert i8(HAMMING) == round(ssd.hamming(a, b) * d)
        assert abs(i8(JACCARD) - ssd.jaccard(a != 0, b != 0)) <= 1e-12


# ---------------------------------------------------------------- packed


def test_packed_vs_unpackbits(lib, level):
    rng = np.random.default_rng(5)
    for nbits in list(range(0, 70)) + [127, 128, 129, 256, 511, 1000, 4096, 8191]:
        u = rng.random(nbits) < 0.3
        v = rng.random(nbits) < (0.0 if nbits % 11 == 0 else 0.5)
        pu, pv = np.packbits(u), np.packbits(v)       # zero-padded to whole bytes
        assert np.array_equal(np.unpackbits(pu)[:nbits], u)
        n = pu.size
        ham = lib.hs_distance_packed(HAMMING, ptr(pu), ptr(pv), n)
        jac = lib.hs_distance_packed(JACCARD, ptr(pu), ptr(pv), n)
        if nbits:
            assert ham == round(ssd.hamming(u, v) * nbits)
            assert abs(jac - ssd.jaccard(u, v)) <= 1e-12
        else:
            assert ham == 0 and jac == 0
    z = np.zeros(16, np.uint8)
    assert lib.hs_distance_packed(JACCARD, ptr(z), ptr(z), 16) == 0.0   # two empty sets
    assert np.isnan(lib.hs_distance_packed(L2, ptr(z), ptr(z), 16))


# ---------------------------------------------------------------- sparse


def test_sparse_vs_dense(lib):
    rng = np.random.default_rng(6)
    for _ in range(200):
        dim = int(rng.integers(1, 500))
        a = np.where(rng.random(dim) < rng.random(), rng.standard_normal(dim), 0.0)
        b = np.where(rng.random(dim) < rng.random(), rng.standard_normal(dim), 0.0)
        a, b = a.astype(np.float32), b.astype(np.float32)
        ai = np.flatnonzero(a).astype(np.uint32)
        bi = np.flatnonzero(b).astype(np.uint32)
        av, bv = a[ai], b[bi]
        assert lib.hs_sparse_check(ptr(ai), ptr(av), ai.size, dim, None) == HS_OK

        def sp(m):
            return lib.hs_distance_sparse(m, ptr(ai), ptr(av), ai.size, ptr(bi), ptr(bv), bi.size)

        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        assert abs(sp(L2) - ssd.euclidean(a64, b64)) <= 1e-9 * (1 + ssd.euclidean(a64, b64))
        assert abs(sp(L1) - ssd.cityblock(a64, b64)) <= 1e-9 * (1 + ssd.cityblock(a64, b64))
        assert abs(sp(IP) - a64 @ b64) <= 1e-9 * (1 + np.abs(a64 * b64).sum())
        if ai.size and bi.size:
            assert abs(sp(COSINE) - ssd.cosine(a64, b64)) <= 1e-9
        else:
            assert np.isnan(sp(COSINE))
        assert sp(HAMMING) == round(ssd.hamming(a, b) * dim)
        assert abs(sp(JACCARD) - ssd.jaccard(a != 0, b != 0)) <= 1e-12


def test_sparse_check_rejects(lib):
    err = _Err()
    idx = np.array([1, 4, 4], np.uint32)
    val = np.ones(3, np.float32)
    assert lib.hs_sparse_check(ptr(idx), ptr(val), 3, 10, ctypes.byref(err)) == HS_INVALID
    assert b"strictly increasing" in err.msg
    err = _Err()
    assert lib.hs_sparse_check(ptr(idx), ptr(val), 2, 4, ctypes.byref(err)) == HS_INVALID
    assert b"dimension 4" in err.msg


# ---------------------------------------------------------------- batches


def batch(lib, m, q, x, threads=1):
    q = np.ascontiguousarray(q, np.float32)
    x = np.ascontiguousarray(x, np.float32)
    out = np.empty((q.shape[0], x.shape[0]), np.float32)
    err = _Err()
    rc = lib.hs_distance_batch_f32(m, ptr(q), q.shape[0], ptr(x), x.shape[0], q.shape[1],
                                   ptr(out), threads, ctypes.byref(err))
    assert rc == HS_OK, err.msg
    return out


# (nq, nx, d): the last two are large enough for the OpenBLAS path
SHAPES = [(1, 1, 3), (3, 17, 9), (5, 300, 33), (16, 200, 385), (64, 600, 128), (40, 400, 784)]


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_vs_cdist(lib, level, shape):
    nq, nx, d = shape
    rng = np.random.default_rng(nq * 1000 + d)
    q = rng.standard_normal((nq, d)).astype(np.float32)
    x = rng.standard_normal((nx, d)).astype(np.float32)
    k = min(nq, nx)
    x[:k] = q[:k] * (1 + 1e-4 * rng.standard_normal((k, d))).astype(np.float32)  # near duplicates
    x[-1] = 0                                                           # zero vector
    q64, x64 = q.astype(np.float64), x.astype(np.float64)
    threads = 2 if d % 2 else 0

    want = ssd.cdist(q64, x64, "euclidean")
    got = batch(lib, L2, q, x, threads)
    assert np.all(np.abs(got - want) <= 1e-5 * want + 1e-30)

    want = q64 @ x64.T
    got = batch(lib, IP, q, x, threads)
    assert np.all(np.abs(got - want) <= 1e-5 * (np.abs(q64) @ np.abs(x64).T) + 1e-30)

    with np.errstate(invalid="ignore", divide="ignore"):
        want = ssd.cdist(q64, x64, "cosine")
    got = batch(lib, COSINE, q, x, threads)
    assert np.all(np.isnan(got[:, -1]))                   # zero vector: NaN (pgvector)
    assert np.all(np.abs(got[:, :-1] - want[:, :-1]) <= 2e-5)
    assert np.all((got[:, :-1] >= 0) & (got[:, :-1] <= 2))

    want = ssd.cdist(q64, x64, "cityblock")
    got = batch(lib, L1, q, x, threads)
    assert np.all(np.abs(got - want) <= 1e-5 * want)

    qs, xs = q.copy(), x.copy()
    qs[:, ::3] = 0
    xs[:, ::4] = 0
    got = batch(lib, HAMMING, qs, xs, threads)
    assert np.array_equal(got, np.rint(ssd.cdist(qs, xs, "hamming") * d))
    got = batch(lib, JACCARD, qs, xs, threads)
    assert np.allclose(got, ssd.cdist(qs != 0, xs != 0, "jaccard"), rtol=0, atol=1e-6)


def test_batch_equals_pairwise(lib):
    """Small batches use the pair kernels: the same numbers, bit for bit."""
    rng = np.random.default_rng(8)
    q = rng.standard_normal((3, 129)).astype(np.float32)
    x = rng.standard_normal((20, 129)).astype(np.float32)
    for m in (L2, IP, L1):
        got = batch(lib, m, q, x)
        want = np.array([[f32(lib, m, a, b) for b in x] for a in q], np.float32)
        assert np.array_equal(got, want)


def test_batch_errors(lib):
    q = np.ones((2, 4), np.float32)
    out = np.empty(4, np.float32)
    err = _Err()
    assert lib.hs_distance_batch_f32(9, ptr(q), 2, ptr(q), 2, 4, ptr(out), 1,
                                     ctypes.byref(err)) == HS_INVALID
    err = _Err()
    assert lib.hs_distance_batch_f32(L2, ptr(q), 2, ptr(q), 2, 4, None, 1,
                                     ctypes.byref(err)) == HS_INVALID


# ---------------------------------------------------------------- semantics


def test_pgvector_semantics(lib):
    z = np.zeros(8, np.float32)
    a = np.arange(1, 9, dtype=np.float32)
    assert np.isnan(f32(lib, COSINE, z, a))
    assert f32(lib, COSINE, a, -a) == 2.0
    assert 0 <= f32(lib, COSINE, a, a) <= 1e-7
    assert f32(lib, IP, a, a) == float(a.astype(np.float64) @ a)
    assert f32(lib, JACCARD, z, z) == 0.0
    assert f32(lib, HAMMING, a, z) == 8.0


def test_metric_names(lib):
    m = ctypes.c_int()
    for name, want in [("l2", L2), ("Euclidean", L2), ("cosine", COSINE), ("ip", IP),
                       ("inner_product", IP), ("DOT", IP), ("l1", L1), ("manhattan", L1),
                       ("hamming", HAMMING), ("jaccard", JACCARD)]:
        assert lib.hs_metric_from_name(name.encode(), ctypes.byref(m), None) == HS_OK
        assert m.value == want
    err = _Err()
    assert lib.hs_metric_from_name(b"nope", ctypes.byref(m), ctypes.byref(err)) == HS_INVALID
    assert b"nope" in err.msg
    assert [lib.hs_metric_name(i).decode() for i in range(6)] == \
        ["l2", "cosine", "ip", "l1", "hamming", "jaccard"]
    assert lib.hs_simd_set_level(b"mmx", None) == HS_INVALID

"""The hyperstreamdb distance API (over include/hyperstream/vector.h) against
numpy / scipy: single pairs, many-to-many batches, sparse vectors, packed
binary vectors, input conversions, GPU contexts (CPU only in this build), and
that batches release the GIL.

Tolerance: the library sums in float32 with SIMD lanes (vector.h), so
results are compared with rtol 1e-4 against float64 references."""
import math

import numpy as np
import pytest
from scipy.spatial import distance as sd

import hyperstreamdb as hdb
from conftest import runs_without_the_gil

RNG = np.random.default_rng(42)


def ref(metric, a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if metric == "l2":
        return sd.euclidean(a, b)
    if metric == "cosine":
        return sd.cosine(a, b)
    if metric == "ip":
        return float(np.dot(a, b))
    if metric == "l1":
        return sd.cityblock(a, b)
    if metric == "hamming":
        return float(np.sum(a != b))
    if metric == "jaccard":
        return sd.jaccard(a != 0, b != 0)
    raise ValueError(metric)


FUNCS = {"l2": hdb.l2_distance, "cosine": hdb.cosine_distance, "ip": hdb.inner_product,
         "l1": hdb.l1_distance, "hamming": hdb.hamming_distance,
         "jaccard": hdb.jaccard_distance}
BATCH = {"l2": hdb.l2_distance_batch, "cosine": hdb.cosine_distance_batch,
         "ip": hdb.inner_product_batch, "l1": hdb.l1_distance_batch,
         "hamming": hdb.hamming_distance_batch, "jaccard": hdb.jaccard_distance_batch}
SPARSE = {"l2": hdb.l2_distance_sparse, "cosine": hdb.cosine_distance_sparse,
          "ip": hdb.inner_product_sparse, "l1": hdb.l1_distance_sparse,
          "hamming": hdb.hamming_distance_sparse, "jaccard": hdb.jaccard_distance_sparse}


def vec(d, sparse_frac=0.0, rng=RNG):
    v = rng.standard_normal(d).astype(np.float32)
    if sparse_frac:
        v[rng.random(d) < sparse_frac] = 0
    return v


@pytest.mark.parametrize("metric", list(FUNCS))
@pytest.mark.parametrize("d", [0, 1, 3, 17, 128, 769])
def test_pair_vs_scipy(metric, d):
    a, b = vec(d, 0.3), vec(d, 0.3)
    if d == 0 and metric in ("cosine", "jaccard"):
        # vector.h: two empty vectors are at distance 0, NaN for cosine
        # (scipy warns and divides by zero here)
        got = FUNCS[metric](a, b)
        assert math.isnan(got) if metric == "cosine" else got == 0.0, got
        return
    if metric == "hamming":
        a, b = np.round(a), np.round(b)
    got = FUNCS[metric](a, b)
    assert isinstance(got, float)
    assert got == pytest.approx(ref(metric, a, b), rel=1e-4, abs=1e-4)


def test_readme_example_values():
    vec1 = np.array([1.0, 2.0, 3.0])          # float64 input: converted to float32
    vec2 = np.array([4.0, 5.0, 6.0])
    assert hdb.cosine_distance(vec1, vec2) == pytest.approx(sd.cosine(vec1, vec2), rel=1e-5)
    assert hdb.l2_distance([1, 2, 3], (4, 5, 6)) == pytest.approx(np.sqrt(27), rel=1e-6)
    assert hdb.inner_product(vec1, vec2) == pytest.approx(32.0)


def test_input_kinds():
    a32, b32 = vec(64), vec(64)
    want = ref("l2", a32, b32)
    # float16 and int8 buffers are read in place by their own kernels
    a16, b16 = a32.astype(np.float16), b32.astype(np.float16)
    assert hdb.l2_distance(a16, b16) == pytest.approx(ref("l2", a16, b16), rel=1e-3)
    a8 = (a32 * 20).astype(np.int8)
    b8 = (b32 * 20).astype(np.int8)
    assert hdb.l1_distance(a8, b8) == pytest.approx(ref("l1", a8, b8), rel=1e-6)
    # non-contiguous, read-only, mixed dtypes, lists
    big = np.stack([a32, b32], axis=1)
    assert hdb.l2_distance(big[:, 0], big[:, 1]) == pytest.approx(want, rel=1e-5)
    ro = a32.copy()
    ro.setflags(write=False)
    assert hdb.l2_distance(ro, b32) == pytest.approx(want, rel=1e-5)
    assert hdb.l2_distance(a16, b32) == pytest.approx(ref("l2", a16, b32), rel=1e-3)
    assert hdb.l2_distance(a32.tolist(), b32.tolist()) == pytest.approx(want, rel=1e-5)
    # a zero vector's cosine distance is NaN by definition, not an error
    assert np.isnan(hdb.cosine_distance(np.zeros(4, np.float32), np.ones(4, np.float32)))


@pytest.mark.parametrize("metric", list(BATCH))
def test_batch_vs_scipy_cdist(metric):
    d = 48
    db = RNG.standard_normal((1500, d)).astype(np.float32)
    qs = RNG.standard_normal((4, d)).astype(np.float32)
    if metric in ("hamming", "jaccard"):
        db = np.round(db)
        qs = np.round(qs)
    scipy_metric = {"l2": "euclidean", "cosine": "cosine", "l1": "cityblock"}.get(metric)
    if scipy_metric:
        want = sd.cdist(qs.astype(np.float64), db.astype(np.float64), scipy_metric)
    elif metric == "ip":
        want = qs.astype(np.float64) @ db.astype(np.float64).T
    elif metric == "hamming":
        want = sd.cdist(qs, db, "hamming") * d
    else:
        want = sd.cdist(qs != 0, db != 0, "jaccard")
    got = BATCH[metric](qs, db)
    assert got.shape == (4, 1500) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    one = BATCH[metric](qs[0], db)            # one query -> 1-D
    assert one.shape == (1500,)
    np.testing.assert_allclose(one, want[0], rtol=1e-4, atol=1e-4)


def test_batch_topk_matches_brute_force_and_context():
    ctx = hdb.GPUContext.auto_detect()
    assert ctx.backend == "cpu" and not ctx.gpu_accelerated
    query = RNG.standard_normal(96).astype(np.float32)
    database = RNG.standard_normal((20000, 96)).astype(np.float32)
    distances = hdb.l2_distance_batch(query, database, context=ctx)
    k = 10
    top = np.argsort(distances)[:k]
    want = np.argsort(np.linalg.norm(database.astype(np.float64) - query, axis=1))[:k]
    assert list(top) == list(want)


def test_batch_releases_the_gil():
    q = RNG.standard_normal((16, 256)).astype(np.float32)
    db = RNG.standard_normal((20000, 256)).astype(np.float32)
    assert runs_without_the_gil(lambda: hdb.l1_distance_batch(q, db))


def sparse_pair(dim=1000, nnz=40):
    out = []
    for _ in range(2):
        idx = np.sort(RNG.choice(dim, nnz, replace=False)).astype(np.int32)
        val = RNG.standard_normal(nnz).astype(np.float32)
        out.append(hdb.SparseVector(indices=idx, values=val, dim=dim))
    return out


@pytest.mark.parametrize("metric", list(SPARSE))
def test_sparse_vs_dense_reference(metric):
    a, b = sparse_pair()
    got = SPARSE[metric](a, b)
    assert got == pytest.approx(ref(metric, a.to_dense(), b.to_dense()), rel=1e-4, abs=1e-5)


def test_sparse_readme_example_and_api():
    s1 = hdb.SparseVector(indices=np.array([0, 5, 100], dtype=np.int32),
                          values=np.array([1.0, 2.5, 0.8], dtype=np.float32), dim=1000)
    s2 = hdb.SparseVector(indices=np.array([5, 50, 100], dtype=np.int32),
                          values=np.array([2.0, 1.5, 0.9], dtype=np.float32), dim=1000)
    want = np.sqrt(1.0 + 0.5 ** 2 + 1.5 ** 2 + 0.1 ** 2)
    assert hdb.l2_distance_sparse(s1, s2) == pytest.approx(want, rel=1e-5)
    assert s1.nnz == 3 and s1.dim == 1000
    assert hdb.SparseVector.from_dense(s1.to_dense()) == s1
    empty = hdb.SparseVector(indices=np.array([], np.int32), values=np.array([], np.float32),
                             dim=10)
    assert hdb.l2_distance_sparse(empty, hdb.SparseVector([3], [4.0], 10)) == pytest.approx(4.0)


def test_packed_binary_vs_numpy():
    for nbits in (8, 128, 1000):
        a = RNG.integers(0, 2, nbits)
        b = RNG.integers(0, 2, nbits)
        pa_, pb = np.packbits(a), np.packbits(b)
        assert hdb.hamming_distance_packed(pa_, pb) == float(np.sum(a != b))
        union = np.sum((a | b) != 0)
        want = 1 - np.sum(a & b) / union if union else 0.0
        assert hdb.jaccard_distance_packed(pa_, pb) == pytest.approx(want, rel=1e-6)
    z = np.zeros(4, np.uint8)
    assert hdb.jaccard_distance_packed(z, z) == 0.0
    assert hdb.hamming_distance_packed(bytes([255]), bytes([0])) == 8.0


def test_devices():
    ctx = hdb.GPUContext.auto_detect()
    assert ctx.backend == "cpu" and ctx.available
    dev = hdb.Device.auto_detect()
    assert dev.activate() is dev and hdb.Device.active() is dev and dev.backend == "cpu"
    with pytest.raises(NotImplementedError, match="no GPU backend"):
        hdb.GPUContext("cuda")
    with pytest.raises(ValueError):
        hdb.GPUContext("quantum")
    assert hdb.simd_level() in ("scalar", "avx2", "avx512", "neon")
    assert hdb.l2_distance([1, 2], [1, 2], context=ctx) == 0.0

"""Vector distances (include/hyperstream/vector.h) and compute contexts.

Semantics are pgvector's, shared with SQL and the search engine:
  l2_distance       sqrt(sum (a-b)^2)                                   (<->)
  cosine_distance   1 - a.b / (|a| |b|); NaN when a vector is all zeros  (<=>)
  inner_product     a.b                                                 (<#> orders by -a.b)
  l1_distance       sum |a-b|                                           (<+>)
  hamming_distance  positions where a != b (packed: popcount(a ^ b))    (<~>)
  jaccard_distance  1 - |a & b| / |a | b| over nonzero positions / bits  (<%>)

Inputs: numpy arrays are read in place through the buffer protocol when they
are C-contiguous float32 (or float16 / int8); anything else (lists, float64
arrays) is converted to float32 first.  NaN or infinite values raise
ValueError.  *_batch functions run many-to-many with the GIL released
(OpenBLAS for large L2 / cosine / inner-product batches) and return float32
numpy arrays.

GPUs: this build has no GPU backend; GPUContext.auto_detect() and
Device.auto_detect() return the CPU, and every computation runs on the CPU
(SIMD: see simd_level()).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from . import _core

_FAST = (np.float32, np.float16, np.int8)


def _err(cls, msg, status):
    e = cls(msg)
    e.status = status
    return e


def _dense(x, what: str) -> np.ndarray:
    if isinstance(x, SparseVector):
        raise TypeError(f"{what} is a SparseVector: use the *_sparse functions")
    if isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype.type in _FAST and \
            x.flags.c_contiguous and x.dtype.isnative:
        return x
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{what} must be a vector of numbers, not {type(x).__name__}")
    try:
        a = np.ascontiguousarray(x, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must be a vector of numbers: {e}") from None
    if a.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {a.shape}")
    return a


def _pair(a, b):
    a, b = _dense(a, "a"), _dense(b, "b")
    if a.dtype != b.dtype:
        a, b = a.astype(np.float32), b.astype(np.float32)
    return a, b


def _check_context(context) -> None:
    if context is not None and not isinstance(context, (GPUContext, Device)):
        raise TypeError(f"context must be a hyperstreamdb.GPUContext, not "
                        f"{type(context).__name__}")


def _distance(metric: str, a, b, context=None) -> float:
    _check_context(context)
    a, b = _pair(a, b)
    return _core.distance(metric, a, b)


def l2_distance(a, b, context=None) -> float:
    """Euclidean distance sqrt(sum (a-b)^2) (pgvector <->)."""
    return _distance("l2", a, b, context)


def cosine_distance(a, b, context=None) -> float:
    """1 - cos(a, b) (pgvector <=>); NaN when a vector is all zeros."""
    return _distance("cosine", a, b, context)


def inner_product(a, b, context=None) -> float:
    """The inner product a.b (pgvector's <#> orders by its negation)."""
    return _distance("ip", a, b, context)


def l1_distance(a, b, context=None) -> float:
    """Manhattan distance sum |a-b| (pgvector <+>)."""
    return _distance("l1", a, b, context)


def hamming_distance(a, b, context=None) -> float:
    """Number of positions where a and b differ (pgvector <~>)."""
    return _distance("hamming", a, b, context)


def jaccard_distance(a, b, context=None) -> float:
    """1 - |A & B| / |A | B| for the sets of nonzero positions (pgvector <%>)."""
    return _distance("jaccard", a, b, context)


def _matrix(x, what: str) -> np.ndarray:
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{what} must be an array of numbers, not {type(x).__name__}")
    try:
        a = np.ascontiguousarray(x, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must be an array of numbers: {e}") from None
    return a


def _distance_batch(metric: str, query, database, context=None, n_threads: int = 0):
    _check_context(context)
    q = _matrix(query, "query")
    db = _matrix(database, "database")
    single = q.ndim == 1
    if single:
        q = q.reshape(1, -1)
    if q.ndim != 2:
        raise ValueError(f"query must be 1-D (one vector) or 2-D (one per row), got shape "
                         f"{q.shape}")
    if db.ndim != 2:
        raise ValueError(f"database must be 2-D (one vector per row), got shape {db.shape}")
    if q.shape[1] != db.shape[1]:
        raise ValueError(f"query dimension {q.shape[1]} != database dimension {db.shape[1]}")
    if not isinstance(n_threads, int) or n_threads < 0:
        raise ValueError("n_threads must be an int >= 0")
    out = np.empty((q.shape[0], db.shape[0]), dtype=np.float32)
    _core.distance_batch(metric, q, db, out, n_threads)
    return out[0] if single else out


def l2_distance_batch(query, database, context=None, n_threads: int = 0) -> np.ndarray:
    """L2 distances from query (d,) or queries (nq, d) to every row of
    database (n, d): shape (n,) or (nq, n), float32."""
    return _distance_batch("l2", query, database, context, n_threads)


def cosine_distance_batch(query, database, context=None, n_threads: int = 0) -> np.ndarray:
    """Cosine distances, as l2_distance_batch."""
    return _distance_batch("cosine", query, database, context, n_threads)


def inner_product_batch(query, database, context=None, n_threads: int = 0) -> np.ndarray:
    """Inner products, as l2_distance_batch."""
    return _distance_batch("ip", query, database, context, n_threads)


def l1_distance_batch(query, database, context=None, n_threads: int = 0) -> np.ndarray:
    """L1 distances, as l2_distance_batch."""
    return _distance_batch("l1", query, database, context, n_threads)


def hamming_distance_batch(query, database, context=None, n_threads: int = 0) -> np.ndarray:
    """Hamming distances (differing positions), as l2_distance_batch."""
    return _distance_batch("hamming", query, database, context, n_threads)


def jaccard_distance_batch(query, database, context=None, n_threads: int = 0) -> np.ndarray:
    """Jaccard distances (nonzero positions as sets), as l2_distance_batch."""
    return _distance_batch("jaccard", query, database, context, n_threads)


class SparseVector:
    """A sparse vector: ``indices`` (strictly increasing, < dim) and their
    ``values``, of dimension ``dim``.

        hdb.SparseVector(indices=np.array([0, 5], np.int32),
                         values=np.array([1.0, 2.5], np.float32), dim=1000)
    """

    __slots__ = ("_indices", "_values", "_dim")

    def __init__(self, indices, values, dim: int):
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
            raise TypeError(f"dim must be an int, not {type(dim).__name__}")
        if dim <= 0 or dim >= 2**32:
            raise ValueError(f"dim must be in 1 .. 2**32-1, got {dim}")
        try:
            idx = np.asarray(indices)
            val = np.ascontiguousarray(values, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise TypeError(f"indices and values must be arrays of numbers: {e}") from None
        if idx.ndim != 1 or val.ndim != 1:
            raise ValueError("indices and values must be 1-D")
        if idx.size and not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"indices must be integers, not {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= dim):
            bad = int(np.flatnonzero((idx < 0) | (idx >= dim))[0])
            raise ValueError(f"index {int(idx[bad])} at position {bad} is outside 0 .. {dim - 1}")
        idx = np.ascontiguousarray(idx, dtype=np.uint32)
        if idx.shape != val.shape:
            raise ValueError(f"{idx.size} indices but {val.size} values")
        _core.sparse_check(idx, val, int(dim))
        self._indices, self._values, self._dim = idx, val, int(dim)

    @classmethod
    def from_dense(cls, dense) -> "SparseVector":
        d = np.asarray(dense, dtype=np.float32)
        if d.ndim != 1:
            raise ValueError("from_dense takes a 1-D vector")
        nz = np.flatnonzero(d)
        return cls(nz.astype(np.uint32), d[nz], d.size)

    @property
    def indices(self) -> np.ndarray:
        return self._indices

    @property
    def values(self) -> np.ndarray:
        return self._values

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def nnz(self) -> int:
        return int(self._indices.size)

    def to_dense(self) -> np.ndarray:
        out = np.zeros(self._dim, dtype=np.float32)
        out[self._indices] = self._values
        return out

    def __eq__(self, other) -> bool:
        if not isinstance(other, SparseVector):
            return NotImplemented
        return (self._dim == other._dim and np.array_equal(self._indices, other._indices)
                and np.array_equal(self._values, other._values))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SparseVector(nnz={self.nnz}, dim={self._dim})"


def _sparse(metric: str, a, b, context=None) -> float:
    _check_context(context)
    if not isinstance(a, SparseVector) or not isinstance(b, SparseVector):
        raise TypeError("the *_sparse functions take two hyperstreamdb.SparseVector")
    if a.dim != b.dim:
        raise ValueError(f"sparse vectors have different dimensions: {a.dim} and {b.dim}")
    return _core.distance_sparse(metric, a._indices, a._values, b._indices, b._values)


def l2_distance_sparse(a, b, context=None) -> float:
    """L2 distance of two SparseVectors."""
    return _sparse("l2", a, b, context)


def cosine_distance_sparse(a, b, context=None) -> float:
    """Cosine distance of two SparseVectors."""
    return _sparse("cosine", a, b, context)


def inner_product_sparse(a, b, context=None) -> float:
    """Inner product of two SparseVectors."""
    return _sparse("ip", a, b, context)


def l1_distance_sparse(a, b, context=None) -> float:
    """L1 distance of two SparseVectors."""
    return _sparse("l1", a, b, context)


def hamming_distance_sparse(a, b, context=None) -> float:
    """Positions where two SparseVectors differ."""
    return _sparse("hamming", a, b, context)


def jaccard_distance_sparse(a, b, context=None) -> float:
    """Jaccard distance of the nonzero positions of two SparseVectors."""
    return _sparse("jaccard", a, b, context)


def _packed(x, what: str) -> np.ndarray:
    if isinstance(x, np.ndarray) and x.dtype == np.uint8 and x.ndim == 1 and \
            x.flags.c_contiguous:
        return x
    if isinstance(x, (bytes, bytearray, memoryview)):
        return np.frombuffer(x, dtype=np.uint8)
    a = np.asarray(x)
    if a.dtype != np.uint8 or a.ndim != 1:
        raise TypeError(f"{what} must be a 1-D uint8 array of packed bits (numpy.packbits), "
                        f"got {a.dtype} with shape {a.shape}")
    return np.ascontiguousarray(a)


def hamming_distance_packed(a, b, context=None) -> float:
    """popcount(a XOR b) of bit-packed vectors (numpy.packbits output)."""
    _check_context(context)
    return _core.distance_packed("hamming", _packed(a, "a"), _packed(b, "b"))


def jaccard_distance_packed(a, b, context=None) -> float:
    """1 - |a AND b| / |a OR b| of bit-packed vectors (0 when both are empty)."""
    _check_context(context)
    return _core.distance_packed("jaccard", _packed(a, "a"), _packed(b, "b"))


def simd_level() -> str:
    """The SIMD level of the distance kernels: "avx512", "avx2", "neon" or "scalar"."""
    return _core.simd_level()


_BACKENDS = ("cpu", "cuda", "rocm", "mps", "xpu", "intel", "auto")


class GPUContext:
    """Where vector computations run.  This build has only the CPU backend:
    ``GPUContext.auto_detect()`` returns ``GPUContext("cpu")``; asking for a
    GPU backend raises NotImplementedError (UnsupportedError)."""

    __slots__ = ("_backend", "_device_id")

    def __init__(self, backend: str = "cpu", device_id: int = 0):
        if not isinstance(backend, str):
            raise TypeError("backend must be a str")
        b = backend.lower()
        if b == "auto":
            b = "cpu"
        if b not in _BACKENDS:
            raise ValueError(f"unknown backend {backend!r} (known: {', '.join(_BACKENDS)})")
        if b != "cpu":
            raise _err(_core.UnsupportedError,
                       f"GPU backend {backend!r}: this build of HyperStreamDB has no GPU "
                       f"backend; use GPUContext('cpu') or GPUContext.auto_detect()",
                       "HS_UNSUPPORTED")
        self._backend, self._device_id = b, int(device_id)

    @classmethod
    def auto_detect(cls) -> "GPUContext":
        """The best available backend: always the CPU in this build."""
        return cls("cpu")

    @property
    def backend(self) -> str:
        return self._backend

    @property
    def device_id(self) -> int:
        return self._device_id

    @property
    def gpu_accelerated(self) -> bool:
        return False

    @property
    def available(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"GPUContext(backend={self._backend!r})"


ComputeContext = GPUContext

_active_device: Optional["Device"] = None


class Device:
    """A compute device for queries.  ``Device.auto_detect().activate()``
    selects the best one: the CPU in this build (no GPU backend exists)."""

    __slots__ = ("_ctx",)

    def __init__(self, backend: str = "cpu", device_id: int = 0):
        self._ctx = GPUContext(backend, device_id)

    @classmethod
    def auto_detect(cls) -> "Device":
        return cls("cpu")

    @classmethod
    def active(cls) -> "Device":
        """The activated device (the CPU when none was activated)."""
        return _active_device if _active_device is not None else cls("cpu")

    def activate(self) -> "Device":
        """Makes this device the default for later computations; returns it."""
        global _active_device
        _active_device = self
        return self

    @property
    def backend(self) -> str:
        return self._ctx.backend

    @property
    def device_id(self) -> int:
        return self._ctx.device_id

    @property
    def context(self) -> GPUContext:
        return self._ctx

    def __repr__(self) -> str:
        return f"Device(backend={self.backend!r})"

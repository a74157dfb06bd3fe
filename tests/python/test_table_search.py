"""Vector search on tables (hs_table_search, include/hyperstream/index.h) and
the vector half of hs_table_add_index, against brute force in numpy.

The table: several data files with a vector column (list<float>, some null
vectors), an id, a string category and a `sel` column holding a permutation
of 0..N-1 (so "sel < m" keeps exactly m rows: any selectivity), and
merge-on-read deletes.  The oracle is numpy over the rows we wrote, minus the
rows we deleted: distances in float64, nearest first, ties by id.

* exact search (no index), l2 / cosine / ip, with and without filter and
  deletes: the same ids as brute force, distances within 1e-4;
* hnsw, hnsw_tq8, hnsw_tq4, hnsw_pq (and ivf_hnsw) sidecars: recall@10 >=
  0.95, every returned distance the true distance, nearest first;
* filtered search at 50%, 10%, 1%, 0.1%, 0.01% selectivity: exactly
  min(k, matching rows) rows, recall >= 0.95;
* a corrupt, truncated, deleted or stale sidecar: a warning through the
  warning handler (hs_set_warning_handler) and the same answer as brute
  force (exact search for that file);
* a query of the wrong dimension, a non-vector column, bad parameters:
  clear errors; cancelling add_index from the progress callback registers
  nothing;
* a table pyiceberg wrote (list<float> without a dimension property) is
  indexed and searched;
* `hyperstream table search` prints the same rows as JSON Lines.
"""
import ctypes
import json
import os
import pathlib
import shutil
import struct
import subprocess

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401
import pytest
from conftest import ON_S3, as_path, require, require_module  # noqa: E402

from helpers import idxlib as X
from helpers import registry as R

require(X.LIB.exists(), f"{X.LIB} not built")

DIM = 24
PER_FILE = 3000
N_FILES = 4
N = PER_FILE * N_FILES
RNG = np.random.default_rng(20261203)


class SearchOpts(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),  # 0: the 0.1 layout
                ("column", X.cp), ("query", ctypes.POINTER(ctypes.c_float)),
                ("dim", ctypes.c_int), ("k", ctypes.c_int), ("metric", X.cp),
                ("ef_search", ctypes.c_int), ("nprobe", ctypes.c_int),
                ("distance_column", X.cp)]


class SearchOptsRerank(ctypes.Structure):
    """hs_search_options with the field appended after 0.1 (struct_size set)."""
    _fields_ = SearchOpts._fields_ + [("rerank", ctypes.c_int)]


PROGRESS = ctypes.CFUNCTYPE(ctypes.c_int, X.vp, X.cp, X.i64, X.i64)


class Hs(X.Hs):
    def __init__(self):
        super().__init__()
        if not hasattr(self.lib, "hs_table_search"):
            self.missing.append("hs_table_search")
        else:
            self.lib.hs_table_search.argtypes = [X.vp, X.vp, X.vp, X.vp, X.vp]
            self.lib.hs_table_search.restype = ctypes.c_int

    def search(self, t, column, q, k, metric=None, flt=None, columns=None, ef=0,
               dist_col=None, rerank=None):
        q = np.ascontiguousarray(q, dtype=np.float32)
        so = SearchOpts() if rerank is None else SearchOptsRerank()
        if rerank is not None:
            so.struct_size = ctypes.sizeof(SearchOptsRerank)
            so.rerank = rerank
        so.column = column.encode()
        so.query = q.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        so.dim = len(q)
        so.k = k
        so.metric = metric.encode() if metric else None
        so.ef_search = ef
        so.distance_column = dist_col.encode() if dist_col else None
        o, keep = self._scan_opts(flt, columns)
        st = X.Stream()
        self.call("hs_table_search", t, ctypes.byref(o), ctypes.byref(so), ctypes.byref(st),
                  what=f"search {column} k={k} {flt!r}")
        del keep
        reader = pa.RecordBatchReader._import_from_c(ctypes.addressof(st))
        return reader.read_all()

    def search_batch(self, t, column, qs, k, flt=None, columns=None, ef=0):
        """hs_table_search_batch over the rows of qs (2-D)."""
        qs = np.ascontiguousarray(qs, dtype=np.float32)
        so = SearchOpts()
        so.column = column.encode()
        so.query = qs.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        so.dim = qs.shape[1]
        so.k = k
        so.ef_search = ef
        o, keep = self._scan_opts(flt, columns)
        st = X.Stream()
        self.lib.hs_table_search_batch.argtypes = [X.vp, X.vp, X.vp, ctypes.c_int, X.vp, X.vp]
        self.lib.hs_table_search_batch.restype = ctypes.c_int
        self.call("hs_table_search_batch", t, ctypes.byref(o), ctypes.byref(so), len(qs),
                  ctypes.byref(st), what=f"search_batch {column} k={k} {flt!r}")
        del keep
        return pa.RecordBatchReader._import_from_c(ctypes.addressof(st)).read_all()

    def add_index_cb(self, t, column, kind, params, cb):
        o = X.IndexOpts()
        o.kind = kind.encode()
        o.params_json = json.dumps(params).encode() if params else None
        fn = PROGRESS(cb)
        o.progress = ctypes.cast(fn, X.vp)
        o.n_threads = 1
        self.call("hs_table_add_index", t, column.encode(), ctypes.byref(o),
                  what=f"add_index {column} {kind}")


@pytest.fixture(scope="module")
def hs():
    h = Hs()
    assert h.has_index_api and "hs_table_search" not in h.missing, \
        f"index API not in {X.LIB}: missing {h.missing}"
    return h


class Warnings:
    """The library's warnings, collected through hs_set_warning_handler (the
    library never prints; without a handler warnings are dropped)."""
    FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)

    def __init__(self, lib):
        self.got = []
        self.lib = lib
        self.fn = self.FN(lambda user, msg: self.got.append(msg.decode()))
        lib.hs_set_warning_handler.argtypes = [self.FN, ctypes.c_void_p]
        lib.hs_set_warning_handler.restype = None
        lib.hs_set_warning_handler(self.fn, None)

    def take(self):
        """The warnings since the last take, one a line."""
        out, self.got = "\n".join(self.got), []
        return out

    def close(self):
        self.lib.hs_set_warning_handler(self.FN(), None)


@pytest.fixture
def warns(hs):
    w = Warnings(hs.lib)
    yield w
    w.close()


# ----------------------------------------------------------------------------
# data and oracle

def vectors_table(lo, vecs, nulls, sel, dim=DIM):
    n = len(vecs)
    ids = np.arange(lo, lo + n, dtype=np.int64)
    emb = pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1), pa.float32()), dim)
    emb = pa.array(emb.to_pylist(), pa.list_(pa.float32()))
    emb = pa.array([None if nulls[i] else v for i, v in enumerate(emb.to_pylist())],
                   pa.list_(pa.float32()))
    cat = np.array(["a", "b", "c", "d"])[ids % 4]
    return pa.table({"id": ids, "cat": pa.array(cat), "sel": pa.array(sel, pa.int64()),
                     "embedding": emb})


class Oracle:
    """The rows as written, minus deletes: numpy brute force."""

    def __init__(self, vecs, nulls, sel):
        self.vecs = vecs.astype(np.float64)
        self.live = ~nulls
        self.sel = sel
        self.ids = np.arange(len(vecs))

    def delete(self, mask):
        self.live &= ~mask

    def dist(self, q, metric, idx=None):
        v = self.vecs if idx is None else self.vecs[idx]
        q = np.asarray(q, np.float64)
        if metric == "l2":
            return np.sqrt(((v - q) ** 2).sum(axis=1))
        if metric == "cosine":
            return 1 - (v @ q) / (np.linalg.norm(v, axis=1) * np.linalg.norm(q))
        return v @ q

    def topk(self, q, k, metric="l2", mask=None):
        m = self.live if mask is None else self.live & mask
        idx = self.ids[m]
        d = self.dist(q, metric, idx)
        order = np.lexsort((idx, -d if metric == "ip" else d))[:k]
        return idx[order], d[order]


_DATA = {}


def build(hs, wh, name):
    """Path table wh/name of N_FILES files with the module's rows: 3% null
    vectors, merge-on-read deletes (a range, and scattered rows in every
    file).  Returns (catalog, table, oracle)."""
    if not _DATA:
        _DATA.update(vecs=RNG.standard_normal((N, DIM)).astype(np.float32),
                     nulls=RNG.random(N) < 0.03, sel=RNG.permutation(N),
                     scattered=sorted(int(i) for i in RNG.choice(N, 60, replace=False)))
    vecs, nulls, sel = _DATA["vecs"], _DATA["nulls"], _DATA["sel"]
    cat = hs.path_catalog(wh)
    schema = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("sel", pa.int64()),
                        ("embedding", pa.list_(pa.float32(), DIM))])
    t = hs.create(cat, name, schema)
    for f in range(N_FILES):
        lo = f * PER_FILE
        hs.append(t, vectors_table(lo, vecs[lo:lo + PER_FILE], nulls[lo:lo + PER_FILE],
                                   sel[lo:lo + PER_FILE]))
    orc = Oracle(vecs, nulls, sel)
    hs.delete(t, "id >= 100 AND id < 400")
    hs.delete(t, "id IN (" + ", ".join(map(str, _DATA["scattered"])) + ")")
    gone = np.zeros(N, bool)
    gone[100:400] = True
    gone[_DATA["scattered"]] = True
    orc.delete(gone)
    return cat, t, orc


@pytest.fixture(scope="module")
def table(hs, table_dir_factory):
    wh = table_dir_factory.mktemp("search")
    cat, t, orc = build(hs, wh, "t")
    yield hs, cat, t, orc, wh
    hs.close(t)
    hs.close_catalog(cat)


def copy_table(hs, wh, name):
    """A table of its own with the same rows, for tests that index or damage
    it.  Returns (catalog, table)."""
    cat, t, _ = build(hs, wh, name)
    return cat, t


def check_exact(got, orc, q, k, metric, mask=None, dist_col="_distance"):
    want_ids, want_d = orc.topk(q, k, metric, mask)
    ids = got.column("id").to_numpy()
    assert len(ids) == len(want_ids), (len(ids), len(want_ids))
    assert list(ids) == list(want_ids)
    np.testing.assert_allclose(got.column(dist_col).to_numpy(), want_d, rtol=1e-4, atol=1e-4)


def recall(got_ids, want_ids):
    if len(want_ids) == 0:
        return 1.0 if len(got_ids) == 0 else 0.0
    return len(set(got_ids) & set(want_ids)) / len(want_ids)


# ----------------------------------------------------------------------------
# exact search

@pytest.mark.parametrize("metric", ["l2", "cosine", "ip"])
def test_exact_search_matches_numpy(table, metric):
    hs, cat, t, orc, wh = table
    for k in (1, 10, 57):
        q = RNG.standard_normal(DIM).astype(np.float32)
        got = hs.search(t, "embedding", q, k, metric=metric)
        assert got.column_names == ["id", "cat", "sel", "embedding", "_distance"]
        assert got.schema.field("_distance").type == pa.float64()
        check_exact(got, orc, q, k, metric)
        # the vectors come back too, and are the rows' vectors
        emb = np.array(got.column("embedding").to_pylist(), np.float64)
        np.testing.assert_array_equal(emb, orc.vecs[got.column("id").to_numpy()])


def test_exact_search_filter_projection_and_k_beyond_matches(table):
    hs, cat, t, orc, wh = table
    q = RNG.standard_normal(DIM).astype(np.float32)
    mask = (orc.ids % 4 == 1) & (orc.sel < N // 3)
    got = hs.search(t, "embedding", q, 25, flt="cat = 'b' AND sel < %d" % (N // 3),
                    columns=["sel", "id"], dist_col="score")
    assert got.column_names == ["sel", "id", "score"]
    check_exact(got, orc, q, 25, "l2", mask, dist_col="score")
    # k larger than the matching rows: exactly the matching rows with a vector
    few = (orc.ids >= 390) & (orc.ids < 420)   # rows 390..399 are deleted
    got = hs.search(t, "embedding", q, 1000, flt="id >= 390 AND id < 420")
    check_exact(got, orc, q, 1000, "l2", few)
    assert len(got) == int((few & orc.live).sum()) < 30
    # no matching row: an empty answer with the schema
    got = hs.search(t, "embedding", q, 5, flt="id < 0")
    assert len(got) == 0 and got.column_names[-1] == "_distance"


def test_errors(table):
    hs, cat, t, orc, wh = table
    q = np.ones(DIM + 1, np.float32)
    with pytest.raises(X.HsFail) as ei:
        hs.search(t, "embedding", q, 5)
    assert ei.value.status == "HS_INVALID" and "dimension" in ei.value.msg, ei.value.msg
    with pytest.raises(X.HsFail) as ei:
        hs.search(t, "cat", np.ones(DIM), 5)
    assert ei.value.status == "HS_INVALID" and "vector" in ei.value.msg
    with pytest.raises(X.HsFail) as ei:
        hs.search(t, "nope", np.ones(DIM), 5)
    assert ei.value.status == "HS_NOT_FOUND" and "nope" in ei.value.msg
    with pytest.raises(X.HsFail) as ei:
        hs.search(t, "embedding", np.ones(DIM), 0)
    assert ei.value.status == "HS_INVALID"
    with pytest.raises(X.HsFail) as ei:
        hs.search(t, "embedding", np.full(DIM, np.nan), 3)
    assert ei.value.status == "HS_INVALID" and "finite" in ei.value.msg
    with pytest.raises(X.HsFail) as ei:
        hs.search(t, "embedding", np.ones(DIM), 3, metric="hamming")
    assert ei.value.status == "HS_INVALID"
    with pytest.raises(X.HsFail) as ei:
        hs.search(t, "embedding", np.ones(DIM), 3, dist_col="id")
    assert ei.value.status == "HS_INVALID" and "collides" in ei.value.msg


def test_bad_index_declarations(table):
    hs, cat, t, orc, wh = table
    for col, kind, params in [("cat", "hnsw", None), ("embedding", "hnsw", {"m": 1}),
                              ("embedding", "hnsw", {"bogus": 3}),
                              ("embedding", "hnsw", {"metric": "hamming"}),
                              ("embedding", "hnsw_pq", {"complexity": -4}),
                              ("embedding", "hnsw", {"ivf_lists": 4}),
                              ("embedding", "hnsw_tq8", {"compression": 8}),
                              ("embedding", "hnsw_zz", None)]:
        with pytest.raises(X.HsFail) as ei:
            hs.add_index(t, col, kind, params)
        # (an unknown name that looks like a vector kind may read "not available")
        ok = ("HS_INVALID", "HS_UNSUPPORTED") if kind == "hnsw_zz" else ("HS_INVALID",)
        assert ei.value.status in ok, (col, kind, params, ei.value)
    assert hs.list_indexes(t) == []


# ----------------------------------------------------------------------------
# indexes

@pytest.mark.parametrize("kind,params", [
    ("hnsw", {"m": 12, "ef_construction": 80}),
    ("hnsw_tq8", {"m": 12, "ef_construction": 80}),
    ("hnsw_tq4", {"m": 12, "ef_construction": 80}),
    ("hnsw_pq", {"complexity": 12, "quality": 80, "compression": 12}),
    ("ivf_hnsw", {"m": 12, "ef_construction": 80, "ivf_lists": 4, "nprobe": 4}),
])
def test_index_recall_and_filtered_selectivities(table, kind, params, warns):
    hs, cat0, t0, orc, wh = table
    cat, t = copy_table(hs, wh, "t_" + kind)
    try:
        hs.add_index(t, "embedding", kind, params, n_threads=2)
        listed = hs.list_indexes(t)
        assert len(listed) == 1 and listed[0]["kind"] == kind
        assert listed[0]["files_indexed"] == listed[0]["files_live"] == N_FILES
        recalls = []
        for _ in range(8):
            q = RNG.standard_normal(DIM).astype(np.float32)
            got = hs.search(t, "embedding", q, 10, ef=64)
            want, _ = orc.topk(q, 10)
            ids = got.column("id").to_numpy()
            assert len(ids) == 10
            assert orc.live[ids].all()
            recalls.append(recall(ids, want))
            d = got.column("_distance").to_numpy()
            np.testing.assert_allclose(d, orc.dist(q, "l2", ids), rtol=1e-4, atol=1e-4)
            assert list(d) == sorted(d)
        assert np.mean(recalls) >= 0.95, recalls
        # filtered: exactly min(k, matches) rows, recall against the filtered oracle
        for frac in (0.5, 0.1, 0.01, 0.001, 0.0001):
            m = max(1, int(N * frac))
            while not (orc.live & (orc.sel < m)).any():
                m += 1   # at least one live row with a vector matches
            mask = orc.sel < m
            rs = []
            for _ in range(3):
                q = RNG.standard_normal(DIM).astype(np.float32)
                got = hs.search(t, "embedding", q, 10, flt=f"sel < {m}", ef=64)
                want, _ = orc.topk(q, 10, mask=mask)
                ids = got.column("id").to_numpy()
                assert len(ids) == len(want) == min(10, int((mask & orc.live).sum())), frac
                assert (orc.sel[ids] < m).all() and orc.live[ids].all()
                rs.append(recall(ids, want))
            assert np.mean(rs) >= 0.95, (frac, rs)
        assert "skipped" not in warns.take()
    finally:
        hs.close(t)
        hs.close_catalog(cat)


# (not hnsw_tq4: 4-bit codes of 16 dimensions rank too coarsely for 0.95
# at ef 32 with or without a filter; test_index_recall_and_filtered_selectivities
# covers it with its own ef)
@pytest.mark.parametrize("kind", ["hnsw", "hnsw_tq8", "hnsw_pq"])
def test_filtered_walk_on_a_small_file(hs, table_dir_factory, kind, warns):
    """One file of 8,000 rows, 1/16 to 1/4 of them allowed: the two-hop band,
    where the graph walk measures allowed rows only and is used above
    sqrt(4 ef n) rows (hnsw.c's default_exact_threshold; before, the flat
    floors sent everything up to 2,000 rows to exact search), reading the
    allow-list as a dense bitset the table layer builds once per prepared
    file (hnsw_allow_bits), gathering allowed neighbours before stepping
    through rejected ones.  Filter and deletes together form the allow-list;
    against numpy: exactly k rows, every one allowed and live, true
    distances, recall >= 0.95; a batch under the same filter (the same
    prepared bitset shared by its queries) answers each query as a single
    call does."""
    n, dim = 8000, 16
    rng = np.random.default_rng(77)
    centres = rng.standard_normal((10, dim)).astype(np.float32) * 4
    vecs = (centres[rng.integers(0, 10, n)] +
            rng.standard_normal((n, dim)).astype(np.float32)).astype(np.float32)
    nulls = rng.random(n) < 0.02
    sel = rng.permutation(n)
    wh = table_dir_factory.mktemp("band")
    cat = hs.path_catalog(wh)
    schema = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("sel", pa.int64()),
                        ("embedding", pa.list_(pa.float32(), dim))])
    t = hs.create(cat, "t", schema)
    try:
        hs.append(t, vectors_table(0, vecs, nulls, sel, dim))
        orc = Oracle(vecs, nulls, sel)
        gone = np.zeros(n, bool)
        gone[rng.choice(n, 300, replace=False)] = True
        hs.delete(t, "id IN (" + ", ".join(map(str, np.flatnonzero(gone))) + ")")
        orc.delete(gone)
        hs.add_index(t, "embedding", kind, {"m": 16, "ef_construction": 100,
                                            **({"pq_m": 8} if kind == "hnsw_pq" else {})},
                     n_threads=2)
        for m in (700, 1200, 1800):   # 8.75%, 15%, 22.5% of the rows
            mask = sel < m
            rs = []
            for _ in range(12):
                q = (centres[rng.integers(0, 10)] +
                     rng.standard_normal(dim)).astype(np.float32)
                got = hs.search(t, "embedding", q, 10, flt=f"sel < {m}", ef=32)
                want, _ = orc.topk(q, 10, mask=mask)
                ids = got.column("id").to_numpy()
                assert len(ids) == 10
                assert (sel[ids] < m).all() and orc.live[ids].all()
                np.testing.assert_allclose(got.column("_distance").to_numpy(),
                                           orc.dist(q, "l2", ids), rtol=1e-4, atol=1e-4)
                rs.append(recall(ids, want))
            assert np.mean(rs) >= 0.95, (m, rs)
            qs = (centres[rng.integers(0, 10, 5)] +
                  rng.standard_normal((5, dim)).astype(np.float32)).astype(np.float32)
            got = hs.search_batch(t, "embedding", qs, 10, flt=f"sel < {m}", ef=32)
            for i, q in enumerate(qs):
                part = got.filter(pa.compute.equal(got.column("query_index"), i))
                one = hs.search(t, "embedding", q, 10, flt=f"sel < {m}", ef=32)
                assert part.drop_columns(["query_index"]).equals(one), (m, i)
        assert "skipped" not in warns.take()
    finally:
        hs.close(t)
        hs.close_catalog(cat)


def test_cosine_index_and_metric_choice(table):
    hs, cat0, t0, orc, wh = table
    cat, t = copy_table(hs, wh, "t_cos")
    try:
        hs.add_index(t, "embedding", "hnsw", {"metric": "cosine", "m": 12,
                                              "ef_construction": 80}, n_threads=2)
        rs = []
        for _ in range(5):
            q = RNG.standard_normal(DIM).astype(np.float32)
            got = hs.search(t, "embedding", q, 10)   # metric: the index's (cosine)
            want, _ = orc.topk(q, 10, "cosine")
            ids = got.column("id").to_numpy()
            rs.append(recall(ids, want))
            np.testing.assert_allclose(got.column("_distance").to_numpy(),
                                       orc.dist(q, "cosine", ids), atol=1e-4)
            # another metric than the index's: exact search
            check_exact(hs.search(t, "embedding", q, 10, metric="ip"), orc, q, 10, "ip")
        assert np.mean(rs) >= 0.95, rs
    finally:
        hs.close(t)
        hs.close_catalog(cat)


def sidecars(hs, t):
    loc = as_path(hs.location(t))
    props = hs.properties(t)
    reg = R.read(loc, props["hyperstream.index-registry"])
    return [loc / e["index-file"] for e in reg["entries"]]


def test_damaged_sidecars_give_exact_results(table, warns):
    hs, cat0, t0, orc, wh = table
    cat, t = copy_table(hs, wh, "t_dmg")
    try:
        hs.add_index(t, "embedding", "hnsw_tq8", {"m": 8, "ef_construction": 40}, n_threads=2)
        files = sidecars(hs, t)
        assert len(files) == N_FILES
        warns.take()
        # one damage per file: a flipped byte, truncation, deletion, and the
        # sidecar of another data file in its place (stale)
        orig = [f.read_bytes() for f in files]
        b = bytearray(orig[0])
        # locally every search maps the whole sidecar, so a flip anywhere is
        # seen; on S3 a filtered search that goes exact reads only the head
        # (header, map, exact vectors, graph header and payloads, each with
        # its checksum; src/table/vindex.c) and never the links, so there the
        # flip goes into the exact vectors, which every search reads
        b[sidecar_header(files[0])[4] + 40 if ON_S3 else len(b) // 2] ^= 0x40
        files[0].write_bytes(bytes(b))
        files[1].write_bytes(orig[1][:-100])
        files[2].unlink()
        files[3].write_bytes(orig[0])
        for metric in ("l2", "cosine"):
            for k in (10, 40):
                q = RNG.standard_normal(DIM).astype(np.float32)
                check_exact(hs.search(t, "embedding", q, k, metric=metric), orc, q, k, metric)
                mask = orc.sel < 500
                check_exact(hs.search(t, "embedding", q, k, metric=metric, flt="sel < 500"),
                            orc, q, k, metric, mask)
        err = warns.take()
        # 4 files x 3 l2 preparations (cosine: exact): the two unfiltered
        # searches and the first filtered one; the second filtered search
        # reuses the handle's kept preparation of "sel < 500" (same answers)
        assert err.count("skipped") == 4 * 3, err
        # restored: the index answers again, without warnings
        for f, o in zip(files, orig):
            f.write_bytes(o)
        if ON_S3:
            # another client rewrote the objects: this process trusts the sizes
            # and ETags it saw for HS_S3_HEAD_CACHE_S (docs/storage.md);
            # forgetting them is what that time running out does
            hs.lib.hs_s3_reset()
        q = RNG.standard_normal(DIM).astype(np.float32)
        got = hs.search(t, "embedding", q, 10)
        assert recall(got.column("id").to_numpy(), orc.topk(q, 10)[0]) >= 0.8
        assert "skipped" not in warns.take()
    finally:
        hs.close(t)
        hs.close_catalog(cat)


def sidecar_header(path):
    """(version, flags, n vectors, dim, offset of the exact vectors) of a
    vector sidecar (src/table/vindex.c's header)."""
    b = path.read_bytes()
    version, = struct.unpack_from("<I", b, 8)
    nv, = struct.unpack_from("<Q", b, 32)
    dim, flags = struct.unpack_from("<II", b, 44)
    vec_off = (64 + (nv * 4 if flags & 1 else 0) + 63) // 64 * 64
    return version, flags, nv, dim, vec_off


def check_vectors(got, orc):
    """The embedding column holds the rows' vectors bit for bit."""
    ids = got.column("id").to_numpy()
    emb = np.array(got.column("embedding").to_pylist(), np.float32)
    np.testing.assert_array_equal(emb, orc.vecs[ids].astype(np.float32))


# (kind, params, sidecar version): quantized kinds and a cosine flat graph keep
# the exact vectors (version 2); an L2 flat graph holds them already (1)
SIDECAR_VECTOR_KINDS = [
    ("hnsw", {"m": 12, "ef_construction": 80}, 1),
    ("hnsw_tq8", {"m": 12, "ef_construction": 80}, 2),
    ("hnsw_pq", {"m": 12, "ef_construction": 80, "pq_m": 6}, 2),
    ("hnsw_bin", {"m": 12, "ef_construction": 80}, 2),
    ("hnsw", {"m": 12, "ef_construction": 80, "metric": "cosine"}, 2),
]


@pytest.mark.parametrize("kind,params,version", SIDECAR_VECTOR_KINDS)
def test_sidecar_vectors_rerank_exactly_and_come_back(table, kind, params, version, warns):
    """With the whole file as candidates (ef >= rows) the index answer is the
    exact ORDER BY distance of brute force, for every kind: reranking reads
    exact vectors (from the sidecar), and the vector column returned is the
    rows' vectors bit for bit; deletes and filters hold."""
    hs, cat0, t0, orc, wh = table
    metric = params.get("metric", "l2")
    cat, t = copy_table(hs, wh, f"t_sv_{kind}_{metric}")
    try:
        hs.add_index(t, "embedding", kind, params, n_threads=2)
        assert {sidecar_header(f)[0] for f in sidecars(hs, t)} == {version}
        warns.take()
        for k in (1, 10, 33):
            q = RNG.standard_normal(DIM).astype(np.float32)
            got = hs.search(t, "embedding", q, k, ef=4 * PER_FILE)
            check_exact(got, orc, q, k, metric)
            check_vectors(got, orc)
            mask = orc.sel < N // 10
            got = hs.search(t, "embedding", q, k, flt=f"sel < {N // 10}", ef=4 * PER_FILE,
                            columns=["embedding", "id", "sel"])
            assert got.column_names == ["embedding", "id", "sel", "_distance"]
            check_exact(got, orc, q, k, metric, mask)
            check_vectors(got, orc)
        # the vector column alone
        got = hs.search(t, "embedding", q, 5, columns=["embedding"], ef=4 * PER_FILE)
        want, _ = orc.topk(q, 5, metric)
        np.testing.assert_array_equal(np.array(got.column("embedding").to_pylist(), np.float32),
                                      orc.vecs[want].astype(np.float32))
        assert "skipped" not in warns.take()
    finally:
        hs.close(t)
        hs.close_catalog(cat)


@pytest.mark.parametrize("kind", ["hnsw_tq8", "hnsw_pq"])
def test_rerank_option_through_the_c_api(table, kind, warns):
    """hs_search_options.rerank (appended after 0.1, so read only with a
    struct_size that covers it): with k * rerank >= the rows of a file every
    candidate is reranked exactly and the answer is brute force's, deletes,
    null vectors and filters included, even at ef = k; rerank = 1 returns
    exact distances; a negative or huge rerank is HS_INVALID."""
    hs, cat0, t0, orc, wh = table
    cat, t = copy_table(hs, wh, f"t_rerank_{kind}")
    try:
        params = {"m": 12, "ef_construction": 80}
        if kind == "hnsw_pq":
            params["pq_m"] = 6
        hs.add_index(t, "embedding", kind, params, n_threads=2)
        warns.take()
        k = 10
        for _ in range(3):
            q = RNG.standard_normal(DIM).astype(np.float32)
            got = hs.search(t, "embedding", q, k, ef=k, rerank=PER_FILE // k + 1)
            check_exact(got, orc, q, k, "l2")
            mask = orc.sel < N // 4
            got = hs.search(t, "embedding", q, k, flt=f"sel < {N // 4}", ef=k,
                            rerank=PER_FILE // k + 1)
            check_exact(got, orc, q, k, "l2", mask)
            one = hs.search(t, "embedding", q, k, ef=k, rerank=1)
            ids = one.column("id").to_numpy()
            assert len(ids) == k
            want = np.linalg.norm(orc.vecs[ids].astype(np.float64) - q, axis=1)
            np.testing.assert_allclose(one.column("_distance").to_numpy(), want, rtol=1e-4,
                                       atol=1e-4)
        for bad in (-1, 10001):
            with pytest.raises(X.HsFail) as ei:
                hs.search(t, "embedding", q, k, rerank=bad)
            assert ei.value.status == "HS_INVALID" and "rerank" in ei.value.msg
        assert "skipped" not in warns.take()
    finally:
        hs.close(t)
        hs.close_catalog(cat)


def test_old_format_sidecars_answer_the_same(table, warns):
    """Sidecars without exact vectors (format version 1, what earlier
    releases wrote for every kind; "exact_vectors": false writes it) still
    work: reranking reads the data file, the answers are identical to those
    of a version 2 sidecar of the same graph (one build thread: the same
    graph) and exact at full ef."""
    hs, cat0, t0, orc, wh = table
    p = {"m": 12, "ef_construction": 80}
    cat1, t1 = copy_table(hs, wh, "t_v1")
    cat2, t2 = copy_table(hs, wh, "t_v2")
    try:
        hs.add_index(t1, "embedding", "hnsw_tq8", dict(p, exact_vectors=False), n_threads=1)
        hs.add_index(t2, "embedding", "hnsw_tq8", p, n_threads=1)
        assert {(h[0], h[1] & 2) for h in map(sidecar_header, sidecars(hs, t1))} == {(1, 0)}
        assert {(h[0], h[1] & 2) for h in map(sidecar_header, sidecars(hs, t2))} == {(2, 2)}
        assert hs.list_indexes(t1)[0]["params"]["exact_vectors"] is False
        warns.take()
        for flt in (None, "sel < 600"):
            for ef in (0, 64, 4 * PER_FILE):
                q = RNG.standard_normal(DIM).astype(np.float32)
                a = hs.search(t1, "embedding", q, 10, flt=flt, ef=ef)
                b = hs.search(t2, "embedding", q, 10, flt=flt, ef=ef)
                assert a.equals(b), (flt, ef)
                check_vectors(a, orc)
                if ef == 4 * PER_FILE:
                    check_exact(a, orc, q, 10, "l2", None if flt is None else orc.sel < 600)
        assert "skipped" not in warns.take()
    finally:
        for c, t in ((cat1, t1), (cat2, t2)):
            hs.close(t)
            hs.close_catalog(c)


def test_damaged_exact_vectors_fall_back(table, warns):
    """A flipped bit inside the exact vectors of a version 2 sidecar: that
    file is searched exactly (a warning), the answer is brute force's, and
    the vectors returned are the data file's."""
    hs, cat0, t0, orc, wh = table
    cat, t = copy_table(hs, wh, "t_vdmg")
    try:
        hs.add_index(t, "embedding", "hnsw_pq", {"m": 8, "ef_construction": 40, "pq_m": 4},
                     n_threads=2)
        files = sidecars(hs, t)
        version, flags, nv, dim, off = sidecar_header(files[1])
        assert version == 2 and dim == DIM
        b = bytearray(files[1].read_bytes())
        b[off + nv * dim * 2 + 1] ^= 0x10        # inside the vectors, not the header
        files[1].write_bytes(bytes(b))
        warns.take()
        for k in (10, 40):
            q = RNG.standard_normal(DIM).astype(np.float32)
            got = hs.search(t, "embedding", q, k, ef=4 * PER_FILE)
            check_exact(got, orc, q, k, "l2")
            check_vectors(got, orc)
        err = warns.take()
        assert err.count("skipped") == 2 and "exact vectors" in err, err
    finally:
        hs.close(t)
        hs.close_catalog(cat)


@pytest.mark.parametrize("kind", [None, "hnsw_tq8"])
def test_batch_search_matches_single_queries_and_brute_force(table, kind):
    """hs_table_search_batch: per query the rows of hs_table_search, in
    query order, with query_index; exact against brute force (no index, or
    an index at full ef); with a filter and deletes."""
    hs, cat0, t0, orc, wh = table
    cat, t = (cat0, t0) if kind is None else copy_table(hs, wh, "t_batch")
    try:
        if kind:
            hs.add_index(t, "embedding", kind, {"m": 12, "ef_construction": 80}, n_threads=2)
        qs = RNG.standard_normal((13, DIM)).astype(np.float32)
        for flt, mask in ((None, None), ("sel < 1200", orc.sel < 1200),
                          ("cat = 'b'", orc.ids % 4 == 1)):
            for ef in (0, 4 * PER_FILE):
                got = hs.search_batch(t, "embedding", qs, 7, flt=flt, ef=ef)
                assert got.column_names == ["query_index", "id", "cat", "sel", "embedding",
                                            "_distance"]
                assert got.schema.field("query_index").type == pa.int32()
                qi = got.column("query_index").to_numpy()
                assert list(qi) == sorted(qi) and set(qi) == set(range(len(qs)))
                for i, q in enumerate(qs):
                    part = got.filter(pa.compute.equal(got.column("query_index"), i))
                    one = hs.search(t, "embedding", q, 7, flt=flt, ef=ef)
                    assert part.drop_columns(["query_index"]).equals(one), (flt, ef, i)
                    if kind is None or ef:
                        check_exact(part, orc, q, 7, "l2", mask)
                        check_vectors(part, orc)
        # projection, and one query as a batch of one
        got = hs.search_batch(t, "embedding", qs[:1], 3, columns=["id"])
        assert got.column_names == ["query_index", "id", "_distance"] and len(got) == 3
        with pytest.raises(X.HsFail) as ei:
            hs.search_batch(t, "embedding", np.ones((2, DIM + 1)), 3)
        assert ei.value.status == "HS_INVALID" and "dimension" in ei.value.msg
    finally:
        if kind:
            hs.close(t)
            hs.close_catalog(cat)


def test_appends_build_declared_vector_indexes(table):
    hs, cat0, t0, orc, wh = table
    cat, t = copy_table(hs, wh, "t_app")
    try:
        hs.add_index(t, "embedding", "hnsw", {"m": 12, "ef_construction": 80}, n_threads=2)
        # a later append builds the sidecar of its file in the same commit
        extra = RNG.standard_normal((500, DIM)).astype(np.float32)
        nul = np.zeros(500, bool)
        nul[::50] = True
        hs.append(t, vectors_table(N, extra, nul, np.arange(N, N + 500)))
        ix = hs.list_indexes(t)[0]
        assert ix["files_indexed"] == ix["files_live"] == N_FILES + 1, ix
        both = Oracle(np.vstack([orc.vecs, extra]).astype(np.float32),
                      np.concatenate([~orc.live, nul]), np.concatenate([orc.sel, np.arange(N, N + 500)]))
        rs = []
        for _ in range(6):
            q = RNG.standard_normal(DIM).astype(np.float32)
            got = hs.search(t, "embedding", q, 10, flt=f"id >= {N - 2000}")
            want, _ = both.topk(q, 10, mask=both.ids >= N - 2000)
            rs.append(recall(got.column("id").to_numpy(), want))
        assert np.mean(rs) >= 0.95, rs
    finally:
        hs.close(t)
        hs.close_catalog(cat)


def test_cancel_from_progress_registers_nothing(table):
    hs, cat0, t0, orc, wh = table
    cat, t = copy_table(hs, wh, "t_cancel")
    try:
        calls = []

        def cb(ctx, what, done, total):
            calls.append((done, total))
            return 1 if done >= 1 else 0     # cancel after the first file
        with pytest.raises(X.HsFail) as ei:
            hs.add_index_cb(t, "embedding", "hnsw", {"m": 8}, cb)
        assert ei.value.status == "HS_CANCELLED", ei.value
        assert calls and calls[0] == (0, N_FILES), calls
        assert hs.list_indexes(t) == []
        assert "hyperstream.index-registry" not in hs.properties(t)
        loc = as_path(hs.location(t))
        left = [p.name for p in (loc / "index").glob("*")] if (loc / "index").exists() else []
        assert [n for n in left if n != "registry"] == [], left
        # and the search still answers exactly
        q = RNG.standard_normal(DIM).astype(np.float32)
        check_exact(hs.search(t, "embedding", q, 10), orc, q, 10, "l2")
    finally:
        hs.close(t)
        hs.close_catalog(cat)


# ----------------------------------------------------------------------------
# a table pyiceberg wrote: list<float> without a dimension property

def test_pyiceberg_table_indexed_and_searched(hs, tmp_path):
    require_module("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import FloatType, ListType, LongType, NestedField, StringType

    wh = tmp_path / "wh"
    wh.mkdir()
    db = tmp_path / "cat.db"
    pcat = SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
    pcat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "tag", StringType(), required=False),
                    NestedField(3, "vec", ListType(4, FloatType(), element_required=False),
                                required=False))
    pt = pcat.create_table("db.docs", schema=schema)
    dim, per = 16, 1500
    vecs = RNG.standard_normal((3 * per, dim)).astype(np.float32)
    nulls = RNG.random(3 * per) < 0.02
    arrow = pa.schema([("id", pa.int64()), ("tag", pa.string()),
                       ("vec", pa.list_(pa.field("element", pa.float32())))])
    for f in range(3):
        lo = f * per
        rows = [None if nulls[i] else vecs[i].tolist() for i in range(lo, lo + per)]
        pt.append(pa.table({"id": np.arange(lo, lo + per), "tag": [f"t{i % 3}" for i in
                                                                   range(lo, lo + per)],
                            "vec": rows}, schema=arrow))
    orc = Oracle(vecs, nulls, np.arange(3 * per))
    cat = hs.sql_catalog(db, wh)
    t = hs.open(cat, "db.docs")
    try:
        assert not any(k.startswith("hyperstream.vector-dimension") for k in hs.properties(t))
        q = RNG.standard_normal(dim).astype(np.float32)
        check_exact(hs.search(t, "vec", q, 10), orc, q, 10, "l2")
        with pytest.raises(X.HsFail) as ei:
            hs.search(t, "vec", np.ones(dim + 3), 10)
        assert ei.value.status == "HS_INVALID" and "dimension" in ei.value.msg
        hs.add_index(t, "vec", "hnsw_tq8", {"m": 12, "ef_construction": 80}, n_threads=2)
        ix = hs.list_indexes(t)[0]
        assert ix["files_indexed"] == ix["files_live"] == 3, ix
        rs = []
        for _ in range(6):
            q = RNG.standard_normal(dim).astype(np.float32)
            mask = orc.ids % 3 == 1
            got = hs.search(t, "vec", q, 10, flt="tag = 't1'")
            want, _ = orc.topk(q, 10, mask=mask)
            ids = got.column("id").to_numpy()
            assert (ids % 3 == 1).all()
            rs.append(recall(ids, want))
        assert np.mean(rs) >= 0.95, rs
        # pyiceberg still reads the table
        assert pcat.load_table("db.docs").scan().to_arrow().num_rows == 3 * per
        # a vector of another length in a later file: a clear error naming it
        pt = pcat.load_table("db.docs")
        pt.append(pa.table({"id": [9999], "tag": ["x"], "vec": [[1.0, 2.0]]}, schema=arrow))
        hs.refresh(t)
        with pytest.raises(X.HsFail) as ei:
            hs.search(t, "vec", q, 10)
        assert ei.value.status == "HS_INVALID" and "dimension" in ei.value.msg, ei.value
    finally:
        hs.close(t)
        hs.close_catalog(cat)


# ----------------------------------------------------------------------------
# the command line

def test_cli_table_search(table, tmp_path):
    hs, cat, t, orc, wh = table
    cli = X.CLI
    require(cli.exists(), f"{cli} not built")
    loc = X.strip_file_scheme(hs.location(t))
    q = RNG.standard_normal(DIM).astype(np.float32)
    qtext = "[" + ", ".join(repr(float(x)) for x in q) + "]"
    r = subprocess.run([str(cli), "table", "search", loc, "--column", "embedding", "--query",
                        qtext, "--k", "7", "--filter", "cat = 'c'", "--columns", "id,cat",
                        "--metric", "cosine"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    want, wd = orc.topk(q, 7, "cosine", mask=orc.ids % 4 == 2)
    assert [row["id"] for row in rows] == list(want)
    assert all(list(row) == ["id", "cat", "_distance"] and row["cat"] == "c" for row in rows)
    np.testing.assert_allclose([row["_distance"] for row in rows], wd, atol=1e-4)
    # the query from a file, comma-separated
    qf = tmp_path / "q.txt"
    qf.write_text(",".join(repr(float(x)) for x in q))
    r = subprocess.run([str(cli), "table", "search", loc, "--column", "embedding", "--query",
                        f"@{qf}", "--k", "3", "--distance-column", "d"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == list(orc.topk(q, 3)[0])
    # errors: wrong dimension (exit 1), bad query text and missing options (exit 2)
    r = subprocess.run([str(cli), "table", "search", loc, "--column", "embedding", "--query",
                        "[1, 2]", "--k", "3"], capture_output=True, text=True)
    assert r.returncode == 1 and "dimension" in r.stderr, r.stderr
    r = subprocess.run([str(cli), "table", "search", loc, "--column", "embedding", "--query",
                        "[1, nan]", "--k", "3"], capture_output=True, text=True)
    assert r.returncode == 2 and "finite" in r.stderr, r.stderr
    r = subprocess.run([str(cli), "table", "search", loc, "--query", "[1]"],
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stderr

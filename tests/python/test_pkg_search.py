"""Indexes and vector search through the hyperstreamdb package (over
hs_table_add_index / hs_table_search of include/hyperstream/index.h), checked
against brute force in numpy and against pandas for filters.

* exact search (no index) returns exactly the brute-force top k, nearest
  first, with the distances numpy computes;
* with an HNSW index (plain, TQ8, TQ4, PQ dict form) recall@10 against brute
  force stays high and every returned distance is the true distance;
* hybrid search (filter + vector) returns only matching rows, the nearest
  among them;
* query().vector_search().select() gives the same rows;
* scalar indexes never change filter results (pandas oracle), and explain()
  reports their use.
"""
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute  # noqa: F401
import pytest

import hyperstreamdb as hdb

DIM, ROWS, FILES = 32, 3000, 3
RNG = np.random.default_rng(11)


def brute(vectors, q, k, metric="l2", mask=None):
    v = vectors.astype(np.float64)
    q = np.asarray(q, np.float64)
    if metric == "l2":
        d = np.linalg.norm(v - q, axis=1)
    elif metric == "cosine":
        d = 1 - (v @ q) / (np.linalg.norm(v, axis=1) * np.linalg.norm(q))
    else:  # inner product: nearest = largest
        d = v @ q
    idx = np.arange(len(v))
    if mask is not None:
        idx, d = idx[mask], d[mask]
    order = np.argsort(-d if metric == "ip" else d, kind="stable")[:k]
    return idx[order], d[order]


@pytest.fixture(scope="module")
def data(table_dir_factory):
    vecs = RNG.standard_normal((ROWS, DIM)).astype(np.float32)
    cats = np.array(["science", "art", "news"])[RNG.integers(0, 3, ROWS)]
    df = pd.DataFrame({"id": np.arange(ROWS), "category": cats,
                       "embedding": list(vecs)})
    path = table_dir_factory.mktemp("search") / "t"
    t = hdb.Table(path)
    per = ROWS // FILES
    for i in range(FILES):
        t.write_pandas(df.iloc[i * per:(i + 1) * per])
        t.commit()
    return path, df, vecs


def check_exact(got: pd.DataFrame, vecs, q, k, metric="l2", mask=None):
    want_idx, want_d = brute(vecs, q, k, metric, mask)
    assert len(got) == len(want_idx)
    assert list(got["id"]) == list(want_idx)
    np.testing.assert_allclose(got["distance"].to_numpy(), want_d, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("metric", ["l2", "cosine", "ip"])
def test_exact_search_without_index(data, metric):
    path, df, vecs = data
    t = hdb.Table(path)
    for _ in range(3):
        q = RNG.standard_normal(DIM).astype(np.float32)
        got = t.to_pandas(vector_filter={"column": "embedding", "query": q, "k": 10,
                                         "metric": metric})
        check_exact(got, vecs, q, 10, metric)


def test_hybrid_and_fluent_and_k_larger_than_matches(data):
    path, df, vecs = data
    t = hdb.Table(path)
    q = RNG.standard_normal(DIM)
    mask = (df["category"] == "art").to_numpy() & (df["id"] > 100).to_numpy()
    got = t.to_pandas(filter="category = 'art' AND id > 100",
                      vector_filter={"column": "embedding", "query": q.tolist(), "k": 7})
    assert set(got["category"]) == {"art"}
    check_exact(got, vecs, q, 7, mask=mask)
    fl = (t.query().filter("category = 'art'").filter("id > 100")
          .vector_search("embedding", q, k=7).select(["id", "distance"]).to_pandas())
    assert list(fl.columns) == ["id", "distance"]
    assert list(fl["id"]) == list(got["id"])
    few = t.to_pandas(filter="id < 5", vector_filter={"column": "embedding", "query": q,
                                                      "k": 50})
    assert sorted(few["id"]) == [0, 1, 2, 3, 4]          # min(k, matching rows)
    sel = t.to_arrow(columns=["id"], vector_filter={"column": "embedding", "query": q, "k": 3})
    assert sel.column_names == ["id", "distance"]
    assert t.search("embedding", q, k=3)["id"].tolist() == list(brute(vecs, q, 3)[0])


@pytest.mark.parametrize("kind", ["hnsw", "hnsw_tq8", "hnsw_tq4",
                                  {"type": "hnsw_pq", "complexity": 16, "quality": 100,
                                   "compression": 8}])
def test_hnsw_recall_vs_brute_force(data, table_dir, kind):
    path, df, vecs = data
    t = hdb.Table(table_dir / "copy")
    t.write_pandas(df)
    t.commit()
    calls = []
    t.add_index("embedding", kind, progress=lambda *a: calls.append(a))
    assert calls
    idx = t.indexes()
    assert len(idx) == 1 and idx[0]["column"] == "embedding"
    recalls = []
    for _ in range(10):
        q = RNG.standard_normal(DIM).astype(np.float32)
        got = t.to_pandas(vector_filter={"column": "embedding", "query": q, "k": 10,
                                         "ef_search": 128})
        want_idx, _ = brute(vecs, q, 10)
        assert len(got) == 10
        recalls.append(len(set(got["id"]) & set(want_idx)) / 10)
        true = np.linalg.norm(vecs[got["id"].to_numpy()].astype(np.float64) - q, axis=1)
        np.testing.assert_allclose(got["distance"].to_numpy(), true, rtol=1e-3, atol=1e-3)
        assert list(got["distance"]) == sorted(got["distance"])
    assert np.mean(recalls) >= 0.9, recalls
    t.drop_index("embedding")
    assert t.indexes() == []


@pytest.mark.parametrize("kind", ["hnsw_tq8", "hnsw_pq", "hnsw"])
def test_rerank_option(data, tmp_path, kind):
    """vector_filter's "rerank" sets the candidates reranked with exact
    vectors (max(k * rerank, ef_search)) per query: enough of them make a
    quantized index's answer the exact brute-force top k even at a small
    ef; rerank=1 still returns exact distances, nearest first; a flat graph
    ignores it.  Negative or huge values are refused."""
    path, df, vecs = data
    t = hdb.Table(tmp_path / "copy")
    t.write_pandas(df)
    t.commit()
    t.add_index("embedding", kind, progress=False)
    k = 10
    rr = ROWS // k + 1                      # k * rr >= every row: all reranked
    for _ in range(5):
        q = RNG.standard_normal(DIM).astype(np.float32)
        vf = {"column": "embedding", "query": q, "k": k, "ef_search": k}
        got = t.to_pandas(vector_filter={**vf, "rerank": rr})
        if kind != "hnsw":
            check_exact(got, vecs, q, k)
        mask = (df["category"] == "art").to_numpy()
        got = t.to_pandas(filter="category = 'art'", vector_filter={**vf, "rerank": rr})
        if kind != "hnsw":
            check_exact(got, vecs, q, k, mask=mask)
        one = t.to_pandas(vector_filter={**vf, "rerank": 1})
        assert len(one) == k
        true = np.linalg.norm(vecs[one["id"].to_numpy()].astype(np.float64) - q, axis=1)
        np.testing.assert_allclose(one["distance"].to_numpy(), true, rtol=1e-4, atol=1e-4)
        assert list(one["distance"]) == sorted(one["distance"])
        if kind == "hnsw":   # no codes: the same answer whatever rerank says
            plain = t.to_pandas(vector_filter=vf)
            assert list(one["id"]) == list(plain["id"])
        # batches take it too
        qs = RNG.standard_normal((3, DIM)).astype(np.float32)
        b = t.to_arrow(vector_filter={**vf, "query": qs, "rerank": rr})
        if kind != "hnsw":
            qi = b.column("query_index").to_numpy()
            for i in range(3):
                assert list(b.column("id").to_numpy()[qi == i]) == list(brute(vecs, qs[i], k)[0])
    with pytest.raises(ValueError):
        t.to_arrow(vector_filter={"column": "embedding", "query": vecs[0], "k": 3, "rerank": -1})
    with pytest.raises(ValueError, match="rerank"):
        t.to_arrow(vector_filter={"column": "embedding", "query": vecs[0], "k": 3,
                                  "rerank": 10001})


def test_readme_style_index_then_write(table_dir):
    t = hdb.Table(table_dir / "r")
    t.write_pandas(pd.DataFrame({"id": [1, 2, 3],
                                 "embedding": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]}))
    t.commit()
    t.add_index("embedding", "hnsw_tq8")
    t.write_pandas(pd.DataFrame({"id": [4], "embedding": [[0.15, 0.26]]}))
    t.commit()                                      # later writes build the index too
    got = t.to_pandas(vector_filter={"column": "embedding", "query": [0.15, 0.25], "k": 10})
    assert list(got["id"]) == [4, 1, 2, 3]
    assert t.indexes()[0]["files_indexed"] == t.indexes()[0]["files_live"] == 2


def test_scalar_index_keeps_results_and_is_used(data, table_dir):
    path, df, vecs = data
    t = hdb.Table(table_dir / "s")
    for i in range(FILES):
        t.write_pandas(df.iloc[i * 1000:(i + 1) * 1000])
        t.commit()
    filters = {"category = 'news'": df["category"] == "news",
               "id < 10 OR id >= 2990": (df["id"] < 10) | (df["id"] >= 2990),
               "category IN ('art') AND id > 1500": (df["category"] == "art") & (df["id"] > 1500)}
    before = {f: sorted(t.to_pandas(filter=f)["id"]) for f in filters}
    t.add_index("category", "inverted")
    t.add_index("id", "range")
    for f, m in filters.items():
        got = sorted(t.to_pandas(filter=f)["id"])
        assert got == before[f] == sorted(df[m]["id"]), f
    rep = t.explain(filter="category = 'news'")
    assert rep and "files_indexed" in str(rep)


@pytest.mark.parametrize("kind", [None, "hnsw_tq8"])
def test_batch_query_through_the_package(data, table_dir, kind):
    """A 2-D query is a batch: one call, a query_index column, per query the
    rows of the single query; exact against numpy (no index, or full ef)."""
    path, df, vecs = data
    if kind:
        t = hdb.Table(table_dir / "b")
        for i in range(FILES):
            t.write_pandas(df.iloc[i * 1000:(i + 1) * 1000])
            t.commit()
        t.add_index("embedding", kind, progress=False)
    else:
        t = hdb.Table(path)
    qs = RNG.standard_normal((9, DIM)).astype(np.float32)
    mask = (df["category"] == "news").to_numpy()
    for flt, m in ((None, None), ("category = 'news'", mask), ("id < 30", df["id"] < 30)):
        vf = {"column": "embedding", "query": qs, "k": 6, "ef_search": ROWS}
        got = t.to_arrow(filter=flt, vector_filter=vf, columns=["id", "embedding"])
        assert got.column_names == ["query_index", "id", "embedding", "distance"]
        qi = got.column("query_index").to_numpy()
        assert list(qi) == sorted(qi) and set(qi) == set(range(len(qs)))
        for i, q in enumerate(qs):
            part = got.filter(pa.compute.equal(got.column("query_index"), i))
            one = t.to_arrow(filter=flt, columns=["id", "embedding"],
                             vector_filter=dict(vf, query=q))
            assert part.drop_columns(["query_index"]).equals(one)
            want, wd = brute(vecs, q, 6, mask=None if m is None else np.asarray(m))
            assert list(part.column("id").to_numpy()) == list(want)
            np.testing.assert_allclose(part.column("distance").to_numpy(), wd, rtol=1e-4,
                                       atol=1e-4)
            np.testing.assert_array_equal(np.array(part.column("embedding").to_pylist(),
                                                   np.float32), vecs[want])
    # a list of lists is a batch too; bad batches are clear errors
    got = t.to_arrow(vector_filter={"column": "embedding", "query": qs[:2].tolist(), "k": 2})
    assert list(got.column("query_index").to_numpy()) == [0, 0, 1, 1]
    bad = qs[:2].copy()
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match="row 1"):
        t.to_arrow(vector_filter={"column": "embedding", "query": bad, "k": 2})
    with pytest.raises(ValueError):
        t.to_arrow(vector_filter={"column": "embedding", "query": np.ones((0, DIM)), "k": 2})
    with pytest.raises(hdb.InvalidArgumentError, match="dimension"):
        t.to_arrow(vector_filter={"column": "embedding", "query": np.ones((2, DIM + 1)),
                                  "k": 2})


@pytest.mark.parametrize("kind", ["hnsw", "hnsw_tq8", "hnsw_pq"])
def test_index_answers_after_deletes_and_in_the_past(data, table_dir, kind):
    """Sidecars cover immutable data files: after a delete the deleted rows
    never come back, and the snapshot before it still returns them; at full
    ef every answer is numpy's ORDER BY distance, vectors included."""
    path, df, vecs = data
    t = hdb.Table(table_dir / "d")
    t.write_pandas(df)
    t.commit()
    t.add_index("embedding", kind, progress=False)
    before = t.current_snapshot_id
    gone = (df["id"] % 7 == 3).to_numpy()
    t.delete("id IN (" + ", ".join(str(i) for i in df["id"][gone]) + ")")
    for _ in range(4):
        q = RNG.standard_normal(DIM).astype(np.float32)
        vf = {"column": "embedding", "query": q, "k": 12, "ef_search": ROWS}
        now = t.to_arrow(vector_filter=vf, columns=["id", "embedding"])
        want, wd = brute(vecs, q, 12, mask=~gone)
        assert list(now.column("id").to_numpy()) == list(want)
        np.testing.assert_allclose(now.column("distance").to_numpy(), wd, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(np.array(now.column("embedding").to_pylist(), np.float32),
                                      vecs[want])
        then = t.to_arrow(vector_filter=vf, columns=["id", "embedding"], snapshot_id=before)
        want, wd = brute(vecs, q, 12)
        assert list(then.column("id").to_numpy()) == list(want)
        np.testing.assert_array_equal(np.array(then.column("embedding").to_pylist(), np.float32),
                                      vecs[want])


def test_search_follows_commits_of_the_same_table(data, table_dir):
    """The table handle keeps the plan of an unfiltered search between calls
    (table/search.c): searches before and after a delete, an append and
    another handle's commit (after refresh) each give numpy's answer for
    the table as it is then."""
    path, df, vecs = data
    t = hdb.Table(table_dir / "c")
    t.write_pandas(df.iloc[:2000])
    t.commit()
    q = RNG.standard_normal(DIM).astype(np.float32)
    vf = {"column": "embedding", "query": q, "k": 15}
    live = np.zeros(ROWS, bool)
    live[:2000] = True
    for _ in range(2):
        check_exact(t.to_pandas(vector_filter=vf), vecs, q, 15, mask=live)
    near = brute(vecs, q, 5, mask=live)[0]
    t.delete("id IN (" + ", ".join(str(i) for i in near) + ")")
    live[near] = False
    check_exact(t.to_pandas(vector_filter=vf), vecs, q, 15, mask=live)
    t.write_pandas(df.iloc[2000:])
    t.commit()
    live[2000:] = True
    check_exact(t.to_pandas(vector_filter=vf), vecs, q, 15, mask=live)
    other = hdb.Table(table_dir / "c")
    near = brute(vecs, q, 3, mask=live)[0]
    other.delete("id IN (" + ", ".join(str(i) for i in near) + ")")
    before = live.copy()
    live[near] = False
    check_exact(other.to_pandas(vector_filter=vf), vecs, q, 15, mask=live)
    t.refresh()
    check_exact(t.to_pandas(vector_filter=vf), vecs, q, 15, mask=live)

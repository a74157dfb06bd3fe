"""Clustered vector sections (table/vcluster.h): a vector index declared with
a cluster column and included columns answers `cluster = v` / `IN` filtered
top-k searches from one block per data file.

Oracles: numpy brute force over the filtered rows (ids and distances), and
the same table's answer through the other path (a projection outside the
included columns, which reads the data files); on S3 the proxy's request log
(one ranged GET per sidecar, no data file read).  Runs on local disk and on
the S3 matrix (HS_TEST_STORAGE=s3), plus S3-only request checks."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest
from conftest import ON_S3, REPO, storage_server  # noqa: E402

import hyperstreamdb as hdb  # noqa: E402

DIM = 8
PER = 1200
FILES = 3
CATS = 9


def frame(f):
    rng = np.random.default_rng(100 + f)
    ids = np.arange(f * PER, (f + 1) * PER, dtype=np.int64)
    cat = [None if i % 97 == 5 else f"c{(i * 7) % CATS}" for i in ids]
    return pd.DataFrame({
        "id": ids,
        "cat": cat,
        "catn": pd.array([(i * 5) % CATS for i in ids], dtype="int32"),
        "title": [None if i % 11 == 0 else f"title {i} é" for i in ids],
        "score": rng.standard_normal(PER),
        "emb": list(rng.standard_normal((PER, DIM)).astype(np.float32)),
    })


def make(loc, clustered=True, cluster="cat", include=("id", "title", "score")):
    t = hdb.Table(loc)
    frames = [frame(f) for f in range(FILES)]
    for f in frames:
        t.write_pandas(f)
        t.commit()
    if clustered:
        t.add_index("emb", "hnsw", cluster=cluster, include=list(include))
    else:
        t.add_index("emb", "hnsw")
    return t, pd.concat(frames, ignore_index=True)


def brute(df, sel, q, k, deleted=()):
    sel = sel & ~df["id"].isin(list(deleted)).to_numpy()
    emb = np.stack(df["emb"].to_numpy())[sel]
    d = np.linalg.norm(emb.astype(np.float64) - q.astype(np.float64), axis=1)
    order = np.lexsort((df["id"].to_numpy()[sel], d))[:k]   # ties: file order = id order
    return df["id"].to_numpy()[sel][order].tolist(), d[order]


def search(t, flt, q, k=10, columns=("id", "title", "score")):
    return t.to_arrow(filter=flt, columns=list(columns),
                      vector_filter={"column": "emb", "query": q.tolist(), "k": k})


@pytest.fixture
def clustered(table_dir):
    return make(table_dir / "c")


def test_equality_matches_numpy_and_other_path(clustered):
    t, df = clustered
    rng = np.random.default_rng(1)
    for cat in ("c0", "c4", "c8"):
        q = rng.standard_normal(DIM).astype(np.float32)
        r = search(t, f"cat = '{cat}'", q)
        want, wd = brute(df, (df["cat"] == cat).to_numpy(), q, 10)
        assert r["id"].to_pylist() == want
        np.testing.assert_allclose(r["distance"].to_numpy(), wd, rtol=1e-5, atol=1e-5)
        # included columns come back as written (nulls too)
        byid = df.set_index("id")
        for i, title, score in zip(r["id"].to_pylist(), r["title"].to_pylist(),
                                   r["score"].to_pylist()):
            exp = byid.loc[i, "title"]
            assert title == (None if exp is None or (isinstance(exp, float) and np.isnan(exp))
                             else exp)
            assert score == byid.loc[i, "score"]
        # the other path (value is not included: the data files are read)
        other = search(t, f"cat = '{cat}'", q, columns=("id", "catn"))
        assert other["id"].to_pylist() == want


def test_no_data_file_read(tmp_path):
    # local: the answer comes from the sidecars alone (the data files moved
    # away: the clustered path still answers; the other path cannot)
    t, df = make(tmp_path / "c")
    q = np.random.default_rng(11).standard_normal(DIM).astype(np.float32)
    want, _ = brute(df, (df["cat"] == "c2").to_numpy(), q, 10)
    for f in (tmp_path / "c" / "data").glob("*.parquet"):
        f.rename(str(f) + ".away")
    assert search(t, "cat = 'c2'", q)["id"].to_pylist() == want
    with pytest.raises(Exception):
        search(t, "cat = 'c2'", q, columns=("id", "catn"))


def test_in_list_and_projection_of_cluster_and_vector(clustered):
    t, df = clustered
    q = np.random.default_rng(2).standard_normal(DIM).astype(np.float32)
    r = search(t, "cat IN ('c1', 'c2', 'c7', 'c1')", q, k=25,
               columns=("id", "cat", "emb"))
    want, _ = brute(df, df["cat"].isin(["c1", "c2", "c7"]).to_numpy(), q, 25)
    assert r["id"].to_pylist() == want
    byid = df.set_index("id")
    assert r["cat"].to_pylist() == [byid.loc[i, "cat"] for i in want]
    got = np.array(r["emb"].to_pylist(), dtype=np.float32)
    np.testing.assert_array_equal(got, np.stack([byid.loc[i, "emb"] for i in want]))


def test_missing_value_and_k_larger_than_matches(clustered):
    t, df = clustered
    q = np.zeros(DIM, np.float32)
    assert search(t, "cat = 'nope'", q)["id"].to_pylist() == []
    n = int((df["cat"] == "c3").sum())
    r = search(t, "cat = 'c3'", q, k=n + 50)
    want, _ = brute(df, (df["cat"] == "c3").to_numpy(), q, n + 50)
    assert len(want) == n and r["id"].to_pylist() == want


def test_position_deletes_applied(clustered, table_dir):
    t, df = clustered
    q = np.random.default_rng(3).standard_normal(DIM).astype(np.float32)
    before, _ = brute(df, (df["cat"] == "c5").to_numpy(), q, 10)
    gone = before[:3] + [before[7]]
    t.delete("id IN (" + ", ".join(str(i) for i in gone) + ")")
    if not ON_S3:   # the blocks and the delete files answer: no data file is read
        for f in (table_dir / "c" / "data").glob("*.parquet"):
            if "-deletes" not in f.name:
                f.rename(str(f) + ".away")
    r = search(t, "cat = 'c5'", q)
    want, _ = brute(df, (df["cat"] == "c5").to_numpy(), q, 10, deleted=gone)
    assert r["id"].to_pylist() == want
    assert not set(gone) & set(r["id"].to_pylist())


def test_integer_cluster_column(table_dir):
    t, df = make(table_dir / "n", cluster="catn", include=("id",))
    q = np.random.default_rng(4).standard_normal(DIM).astype(np.float32)
    r = search(t, "catn = 4", q, columns=("id", "catn"))
    want, _ = brute(df, (df["catn"] == 4).to_numpy(), q, 10)
    assert r["id"].to_pylist() == want
    assert r["catn"].to_pylist() == [4] * 10
    assert r.schema.field("catn").type == "int32"


def test_batch_queries(clustered):
    t, df = clustered
    qs = np.random.default_rng(5).standard_normal((3, DIM)).astype(np.float32)
    r = t.to_arrow(filter="cat = 'c6'", columns=["id"],
                   vector_filter={"column": "emb", "query": qs.tolist(), "k": 4})
    sel = (df["cat"] == "c6").to_numpy()
    want = sum((brute(df, sel, q, 4)[0] for q in qs), [])
    assert r["id"].to_pylist() == want
    assert r["query_index"].to_pylist() == [0] * 4 + [1] * 4 + [2] * 4


def test_bad_declarations(table_dir):
    t = hdb.Table(table_dir / "bad")
    t.write_pandas(frame(0))
    t.commit()
    with pytest.raises(Exception, match="not a top-level column"):
        t.add_index("emb", "hnsw", cluster="nope")
    with pytest.raises(Exception, match="cluster column"):
        t.add_index("emb", "hnsw", cluster="score")       # a float: not a cluster type
    with pytest.raises(Exception, match="included column"):
        t.add_index("emb", "hnsw", cluster="cat", include=["emb"])
    with pytest.raises(Exception, match="include"):
        t.add_index("emb", "hnsw", cluster="cat", include=5)


def test_new_files_get_the_section(clustered):
    # a write after the declaration builds the section for its file too
    t, df = clustered
    extra = frame(FILES)
    t.write_pandas(extra)
    t.commit()
    df = pd.concat([df, extra], ignore_index=True)
    q = np.random.default_rng(6).standard_normal(DIM).astype(np.float32)
    r = search(t, "cat = 'c2'", q)
    assert r["id"].to_pylist() == brute(df, (df["cat"] == "c2").to_numpy(), q, 10)[0]


# ---- S3: what it costs, and a damaged block ----

WORKER = textwrap.dedent('''
    import json, sys
    import hyperstreamdb as hdb
    t = hdb.Table(sys.argv[1])
    for line in sys.stdin:
        q = json.loads(line)
        r = t.to_arrow(filter=q["filter"], columns=q["columns"],
                       vector_filter={"column": "emb", "query": q["vec"], "k": 10})
        print(json.dumps(r["id"].to_pylist()), flush=True)
''')


def run_worker(s3, uri, queries, proxy, env_extra=None):
    env = dict(os.environ, **s3.env, **(env_extra or {}))
    env["AWS_ENDPOINT_URL"] = proxy.endpoint
    env.pop("AWS_ENDPOINT_URL_S3", None)
    p = subprocess.Popen([sys.executable, "-c", WORKER, uri], env=env, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = []
    try:
        for q in queries:
            time.sleep(q.pop("sleep", 0))
            if q.pop("quiet", False):   # until the background warming is done
                w = quiet(proxy)
                if getattr(proxy, "warmings", None) is not None:
                    proxy.warmings.append(w)
            with proxy.lock:
                proxy.trace.clear()
            p.stdin.write(json.dumps(q) + "\n")
            p.stdin.flush()
            line = p.stdout.readline()
            assert line, p.stderr.read()
            with proxy.lock:
                out.append((json.loads(line), list(proxy.trace)))
                proxy.trace.clear()   # what follows the answer: the next query's or quiet()'s
    finally:
        p.stdin.close()
        p.wait(60)
    return out, p.stderr.read()


def quiet(proxy, still=0.6, limit=60):
    """Waits until no request has reached the proxy, and every answer has
    been written, for `still` seconds; returns the requests until then."""
    t_end = time.time() + limit
    last = None
    while time.time() < t_end:
        with proxy.lock:
            now = (proxy.requests, proxy.answered)
        if now == last and now[0] == now[1]:
            break
        last = now
        time.sleep(still)
    with proxy.lock:
        return list(proxy.trace)


def test_s3_one_ranged_get_per_file():
    sys.path.insert(0, str(REPO / "tests" / "s3"))
    from faultproxy import FaultProxy
    s3 = storage_server()
    uri = s3.uri(f"vcluster/t-{os.getpid()}")
    t, df = make(uri)
    q = np.random.default_rng(8).standard_normal(DIM).astype(np.float32)
    want, _ = brute(df, (df["cat"] == "c3").to_numpy(), q, 10)
    want2, _ = brute(df, (df["cat"] == "c6").to_numpy(), q, 10)
    with FaultProxy(s3.port) as proxy:
        proxy.trace = []
        (r1, tr1), (r2, tr2), (r3, tr3) = run_worker(s3, uri, [
            {"filter": "cat = 'c3'", "columns": ["id", "title"], "vec": q.tolist()},
            {"filter": "cat = 'c6'", "columns": ["id", "catn"], "vec": q.tolist()},
            # another value once the sections have arrived in the background
            {"filter": "cat = 'c6'", "columns": ["id", "title"], "vec": q.tolist(),
             "sleep": 1.0}], proxy)[0]
    assert r1 == want and r2 == want2 and r3 == want2
    assert [tg for _, m, tg, r in tr3 if ".hnsw" in tg or ".parquet" in tg] == [], tr3
    side = [(m, tg, r) for _, m, tg, r in tr1 if ".hnsw" in tg]
    data = [tg for _, m, tg, r in tr1 if tg.split("?")[0].endswith(".parquet")]
    # one ranged GET per file's sidecar (not its head: not at 0), no data file
    assert len(side) == FILES and len({tg for _, tg, _ in side}) == FILES, side
    assert all(m == "GET" and r.startswith("bytes=") and not r.startswith("bytes=0-")
               for m, _, r in side), side
    assert data == [], "\n".join(map(str, tr1))
    # the whole query: the table's metadata (version hint, metadata file,
    # the probe for a newer one), the manifest list and the registry root,
    # the blocks: nothing else (no manifest, no segment, no footer)
    rest = [tg for _, m, tg, r in tr1 if ".hnsw" not in tg]
    assert all("/metadata/" in tg or "/index/registry/" in tg for tg in rest), rest
    assert len([tg for tg in rest if "/index/registry/" in tg]) == 1, rest
    assert len([tg for tg in rest if "snap-" in tg]) == 1, rest
    assert len(tr1) <= 5 + FILES, tr1
    # the other projection reads the data files (the current path)
    assert any(tg.split("?")[0].endswith(".parquet") for _, m, tg, r in tr2), tr2


def test_s3_corrupt_block_falls_back():
    import boto3
    sys.path.insert(0, str(REPO / "tests" / "s3"))
    from faultproxy import FaultProxy
    s3 = storage_server()
    uri = s3.uri(f"vcluster/bad-{os.getpid()}")
    t, df = make(uri)
    c = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1",
                     aws_access_key_id=s3.access_key, aws_secret_access_key=s3.secret_key)
    bucket, prefix = uri[len("s3://"):].split("/", 1)
    keys = [o["Key"] for o in c.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]
            if ".hnsw" in o["Key"]]
    body = bytearray(c.get_object(Bucket=bucket, Key=keys[0])["Body"].read())
    body[-20] ^= 0xFF          # inside the last block: its checksum fails
    c.put_object(Bucket=bucket, Key=keys[0], Body=bytes(body))   # same size
    q = np.random.default_rng(9).standard_normal(DIM).astype(np.float32)
    last = sorted({v for v in df["cat"].dropna()})[-1]
    want, _ = brute(df, (df["cat"] == last).to_numpy(), q, 10)
    with FaultProxy(s3.port) as proxy:
        proxy.trace = []
        (res, _), = run_worker(s3, uri, [{"filter": f"cat = '{last}'", "columns": ["id"],
                                          "vec": q.tolist()}], proxy)[0]
    assert res == want


def test_sql_create_index_include_cluster(tmp_path):
    t, df = make(tmp_path / "s", clustered=False)
    t.drop_index("emb")
    with hdb.Session() as s:
        s.register("items", t)
        s.sql("CREATE INDEX items_emb ON items USING hnsw (emb vector_l2_ops) "
              "INCLUDE (id, title) WITH (cluster = 'cat', m = 8)")
        with pytest.raises(Exception, match="INCLUDE needs a vector index"):
            s.sql("CREATE INDEX items_id ON items USING btree (id) INCLUDE (title)")
        q = np.random.default_rng(12).standard_normal(DIM).astype(np.float32)
        want, _ = brute(df, (df["cat"] == "c7").to_numpy(), q, 10)
        vec = "[" + ",".join(repr(float(x)) for x in q) + "]"
        got = s.sql(f"SELECT id FROM items WHERE cat = 'c7' ORDER BY emb <-> '{vec}' "
                    "LIMIT 10").to_arrow()
        assert got["id"].to_pylist() == want
    t.refresh()
    ix = [i for i in t.indexes() if i["column"] == "emb"]
    assert len(ix) == 1 and '"cluster"' in json.dumps(ix[0]) and '"title"' in json.dumps(ix[0])
    # the blocks answer: the data files moved away, the search still does
    for f in (tmp_path / "s" / "data").glob("*.parquet"):
        f.rename(str(f) + ".away")
    r = search(hdb.Table(str(tmp_path / "s")), "cat = 'c7'", q, columns=("id", "title"))
    assert r["id"].to_pylist() == want


def test_truncated_or_damaged_sidecar_falls_back(tmp_path):
    # a sidecar whose size is not the registry's (cut short) or whose block
    # is damaged in place: the search goes down the other path (the graph,
    # or exact search over the data file) and still answers as numpy does
    t, df = make(tmp_path / "d")
    q = np.random.default_rng(13).standard_normal(DIM).astype(np.float32)
    sidecars = sorted((tmp_path / "d" / "index").glob("*.hnsw"))
    assert len(sidecars) == FILES
    with open(sidecars[0], "r+b") as f:
        f.truncate(os.path.getsize(sidecars[0]) - 100)
    body = bytearray(sidecars[1].read_bytes())
    body[-50] ^= 0x11
    sidecars[1].write_bytes(bytes(body))
    for cat in ("c1", "c8"):
        want, _ = brute(df, (df["cat"] == cat).to_numpy(), q, 10)
        assert search(hdb.Table(str(tmp_path / "d")), f"cat = '{cat}'", q)["id"].to_pylist() == want


def test_equality_deletes_fall_back(tmp_path):
    # an equality delete (written through pyiceberg, as Flink/Spark do) on a
    # file: the blocks cannot apply it, so the search takes the other path
    # (it reads the data files: moved away, it fails) and its answer leaves
    # the deleted ids out
    from test_table_maint_eqdelete import commit_equality_delete
    from pyiceberg.catalog.sql import SqlCatalog
    db, wh = tmp_path / "cat.db", tmp_path / "wh"
    wh.mkdir()
    cat = hdb.Catalog(f"sqlite:///{db}", warehouse=str(wh))
    cat.create_namespace("db")
    frames = [frame(f) for f in range(FILES)]
    t = cat.create_table("db.t", pa_schema())
    for f in frames:
        t.write_pandas(f)
        t.commit()
    t.add_index("emb", "hnsw", cluster="cat", include=["id"])
    df = pd.concat(frames, ignore_index=True)
    q = np.random.default_rng(14).standard_normal(DIM).astype(np.float32)
    before, _ = brute(df, (df["cat"] == "c4").to_numpy(), q, 10)
    assert search(t, "cat = 'c4'", q, columns=("id",))["id"].to_pylist() == before
    # before the delete the blocks answer alone
    data = list(wh.rglob("*.parquet"))
    for f in data:
        f.rename(str(f) + ".away")
    assert search(cat.load_table("db.t"), "cat = 'c4'", q,
                  columns=("id",))["id"].to_pylist() == before
    for f in data:
        pathlib.Path(str(f) + ".away").rename(f)
    pc = SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=str(wh))
    gone = before[:2]
    commit_equality_delete(pc.load_table("db.t"), gone)
    t = cat.load_table("db.t")
    want, _ = brute(df, (df["cat"] == "c4").to_numpy(), q, 10, deleted=gone)
    assert search(t, "cat = 'c4'", q, columns=("id",))["id"].to_pylist() == want
    for f in wh.rglob("*.parquet"):
        if not f.name.startswith("eq-"):
            f.rename(str(f) + ".away")
    with pytest.raises(Exception):
        search(cat.load_table("db.t"), "cat = 'c4'", q, columns=("id",))


def pa_schema():
    import pyarrow as pa
    return pa.schema([("id", pa.int64()), ("cat", pa.string()), ("catn", pa.int32()),
                      ("title", pa.string()), ("score", pa.float64()),
                      ("emb", pa.list_(pa.float32()))])


# ---- S3: the sections fetched in the background after a clustered search ----

WDIM = 64
WPER = 3000


def make_wide(loc, files=2):
    """Sections of about 800 KB a file (9 blocks of ~330 rows x 268 bytes):
    several chunks each (table/vcache.h: runs of whole blocks of at least
    256 KiB)."""
    t = hdb.Table(loc)
    frames = []
    for f in range(files):
        rng = np.random.default_rng(200 + f)
        ids = np.arange(f * WPER, (f + 1) * WPER, dtype=np.int64)
        frames.append(pd.DataFrame({"id": ids, "cat": [f"c{i % CATS}" for i in ids],
                                    "emb": list(rng.standard_normal((WPER, WDIM))
                                                .astype(np.float32))}))
        t.write_pandas(frames[-1])
        t.commit()
    t.add_index("emb", "hnsw", cluster="cat", include=["id"])
    return t, pd.concat(frames, ignore_index=True)


def sidecar_sizes(s3, uri):
    import boto3
    c = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1",
                     aws_access_key_id=s3.access_key, aws_secret_access_key=s3.secret_key)
    bucket, prefix = uri[len("s3://"):].split("/", 1)
    return {o["Key"]: o["Size"] for o in c.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]
            if ".hnsw" in o["Key"]}


def ranges_of(trace):
    """{sidecar key: [(first, last) byte of each ranged GET]} of a trace."""
    out = {}
    for _, m, tg, r in trace:
        if ".hnsw" in tg:
            assert m == "GET" and r.startswith("bytes="), (m, tg, r)
            a, b = r[len("bytes="):].split("-")
            out.setdefault(tg.split("?")[0].split("/", 2)[2], []).append((int(a), int(b)))
    return {k: sorted(v) for k, v in out.items()}


def test_s3_sections_fetched_in_parallel_chunks():
    # after a cold clustered search each sidecar's section comes in several
    # ranged GETs (runs of whole blocks) that tile it exactly, from the first
    # block to the sidecar's end, no byte twice; a search of another value
    # then reads no sidecar and no data file (answers vs numpy)
    sys.path.insert(0, str(REPO / "tests" / "s3"))
    from faultproxy import FaultProxy
    s3 = storage_server()
    uri = s3.uri(f"vcluster/warm-{os.getpid()}")
    t, df = make_wide(uri)
    sizes = sidecar_sizes(s3, uri)
    assert len(sizes) == 2
    q = np.random.default_rng(21).standard_normal(WDIM).astype(np.float32)
    want = {c: brute(df, (df["cat"] == c).to_numpy(), q, 10)[0] for c in ("c1", "c5", "c8")}
    with FaultProxy(s3.port) as proxy:
        proxy.trace = []
        runs = run_worker(s3, uri, [
            {"filter": "cat = 'c1'", "columns": ["id"], "vec": q.tolist()},
            {"filter": "cat = 'c5'", "columns": ["id"], "vec": q.tolist(), "quiet": True},
            {"filter": "cat = 'c8'", "columns": ["id", "cat"], "vec": q.tolist()}], proxy)[0]
    (r1, tr1), (r2, tr2), (r3, tr3) = runs
    assert [r1, r2, r3] == [want["c1"], want["c5"], want["c8"]]
    cold = ranges_of(tr1)
    assert len(cold) == 2 and all(len(v) == 1 for v in cold.values()), cold
    # the warm searches: no sidecar, no data file
    for tr in (tr2, tr3):
        assert [tg for _, m, tg, r in tr if ".hnsw" in tg or ".parquet" in tg] == [], tr


def test_s3_section_chunks_tile_the_section():
    sys.path.insert(0, str(REPO / "tests" / "s3"))
    from faultproxy import FaultProxy
    s3 = storage_server()
    uri = s3.uri(f"vcluster/tile-{os.getpid()}")
    t, df = make_wide(uri)
    sizes = sidecar_sizes(s3, uri)
    q = np.random.default_rng(22).standard_normal(WDIM).astype(np.float32)
    with FaultProxy(s3.port) as proxy:
        proxy.trace, proxy.warmings = [], []
        (r1, tr1), (r2, tr2) = run_worker(s3, uri, [
            {"filter": "cat = 'c3'", "columns": ["id"], "vec": q.tolist()},
            {"filter": "cat = 'c4'", "columns": ["id"], "vec": q.tolist(), "quiet": True}],
            proxy)[0]
    assert r1 == brute(df, (df["cat"] == "c3").to_numpy(), q, 10)[0]
    assert r2 == brute(df, (df["cat"] == "c4").to_numpy(), q, 10)[0]
    cold, warm = ranges_of(tr1), ranges_of(proxy.warmings[0])
    assert sorted(warm) == sorted(cold) and len(warm) == 2, (cold, warm)
    assert ranges_of(tr2) == {}, tr2
    for key, rs in warm.items():
        size = sizes[key]
        # tiles [first block, end of the sidecar): contiguous, no overlap
        assert rs[-1][1] == size - 1, (key, rs, size)
        for (a0, b0), (a1, b1) in zip(rs, rs[1:]):
            assert a1 == b0 + 1, rs
        # several GETs (a section of ~800 KB in runs of >= 256 KiB), none over 2 MiB
        assert 2 <= len(rs) <= 4, rs
        assert all(b - a + 1 <= 2 << 20 for a, b in rs), rs
        # the cold query's block lies inside the section
        (ca, cb), = cold[key]
        assert rs[0][0] <= ca and cb <= size - 1


def test_s3_section_cache_bound():
    # HS_CLUSTER_CACHE_MB=1: of two sections of ~800 KB only one is fetched
    # (the bound holds); a search of another value then reads the other
    # file's block (one GET) and nothing of the cached one.  0: no warming.
    sys.path.insert(0, str(REPO / "tests" / "s3"))
    from faultproxy import FaultProxy
    s3 = storage_server()
    uri = s3.uri(f"vcluster/bound-{os.getpid()}")
    t, df = make_wide(uri)
    q = np.random.default_rng(23).standard_normal(WDIM).astype(np.float32)
    want = {c: brute(df, (df["cat"] == c).to_numpy(), q, 10)[0] for c in ("c2", "c6")}
    for mb, fetched in (("1", 1), ("0", 0)):
        with FaultProxy(s3.port) as proxy:
            proxy.trace, proxy.warmings = [], []
            (r1, tr1), (r2, tr2) = run_worker(s3, uri, [
                {"filter": "cat = 'c2'", "columns": ["id"], "vec": q.tolist()},
                {"filter": "cat = 'c6'", "columns": ["id"], "vec": q.tolist(), "quiet": True}],
                proxy, env_extra={"HS_CLUSTER_CACHE_MB": mb})[0]
        assert r1 == want["c2"] and r2 == want["c6"], mb
        warm = ranges_of(proxy.warmings[0])
        assert len(warm) == fetched, (mb, warm)
        assert sum(b - a + 1 for rs in warm.values() for a, b in rs) <= int(mb) << 20
        # the search of another value: one block GET per file not cached
        side = ranges_of(tr2)
        assert len(side) == 2 - fetched and all(len(v) == 1 for v in side.values()), (mb, side)

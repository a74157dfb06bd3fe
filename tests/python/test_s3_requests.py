"""What a query costs on S3, counted at a proxy in front of the server
(tests/s3/faultproxy.py tracing every request, failing none): a filtered
vector query reads each HNSW sidecar with exactly one GET (the registry's
size for it, no tail GET to open it first), those of all files in one round
(also with one search thread), in the same round as the filter's own reads
(the head's GET starts before the allow-list is known), and a second query in the same
process reads no sidecar again.  A filter this selective is searched
exactly, so that GET is of the sidecar's head only (its exact vectors, not
the graph: table/vindex.h tbl_vindex_acquire_head); a later query whose
search wants the graph reads the whole sidecar and agrees with numpy too.

Oracles: numpy brute force for the nearest rows among the filtered ones
(the sidecar's search must agree); the proxy's own request log."""
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, require_module, storage_server  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "s3"))
from faultproxy import FaultProxy  # noqa: E402

import hyperstreamdb as hdb  # noqa: E402

DIM = 8
FILES = 3
PER = 1500


@pytest.fixture(scope="module")
def s3():
    yield storage_server()


def frame(f):
    rng = np.random.default_rng(f)
    ids = np.arange(f * PER, (f + 1) * PER, dtype=np.int64)
    return pd.DataFrame({"id": ids, "cat": [f"c{i % 7}" for i in ids],
                         "emb": list(rng.standard_normal((PER, DIM)).astype(np.float32))})


WORKER = textwrap.dedent('''
    import json, sys
    import hyperstreamdb as hdb
    uri = sys.argv[1]
    t = hdb.Table(uri)
    for line in sys.stdin:
        q = json.loads(line)
        r = t.to_arrow(filter=f"cat = '{q['cat']}'", columns=["id"],
                       vector_filter={"column": "emb", "query": q["vec"], "k": 5,
                                      "ef_search": q.get("ef")})
        print(json.dumps(r["id"].to_pylist()), flush=True)
''')


def test_vector_sidecar_one_get(s3):
    uri = s3.uri(f"requests/t-{os.getpid()}")
    t = hdb.Table(uri)
    frames = [frame(f) for f in range(FILES)]
    for f in frames:
        t.write_pandas(f)
        t.commit()
    t.add_index("emb", "hnsw")
    allrows = pd.concat(frames, ignore_index=True)
    emb = np.stack(allrows["emb"].to_numpy())
    rng = np.random.default_rng(7)
    delay = 0.2
    with FaultProxy(s3.port, delay_s=delay) as proxy:
        proxy.trace = []
        env = dict(os.environ, **s3.env)
        env["AWS_ENDPOINT_URL"] = proxy.endpoint
        env.pop("AWS_ENDPOINT_URL_S3", None)
        # one search thread: the sidecars must still be requested together
        # (I/O parallelism does not follow the core count)
        env["HS_SEARCH_THREADS"] = "1"
        p = subprocess.Popen([sys.executable, "-c", WORKER, uri], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            sizes = {o["Key"]: o["Size"] for o in s3_objects(s3, uri) if ".hnsw" in o["Key"]}
            assert len(sizes) == FILES
            # ef 1 in the last query: a walk of k = 5 wants the graph (hnsw.c's
            # default_exact_threshold in the two-hop band: sqrt(4 * 5 * 1500) =
            # 173 < 214 rows allowed), which the heads alone cannot serve
            for i, (cat, ef) in enumerate((("c3", None), ("c5", None), ("c4", 1))):
                vec = rng.standard_normal(DIM).astype(np.float32)
                with proxy.lock:
                    proxy.trace.clear()
                p.stdin.write(json.dumps({"cat": cat, "vec": vec.tolist(), "ef": ef}) + "\n")
                p.stdin.flush()
                got = json.loads(p.stdout.readline())
                sel = (allrows["cat"] == cat).to_numpy()
                d = np.linalg.norm(emb[sel] - vec, axis=1)
                want = allrows["id"].to_numpy()[sel][np.argsort(d, kind="stable")[:5]]
                assert got == want.tolist()
                with proxy.lock:
                    hnsw = [(m, tg, r) for _, m, tg, r in proxy.trace if ".hnsw" in tg]
                    starts = [t0 for t0, _, tg, _ in proxy.trace if ".hnsw" in tg]
                    data = [t0 for t0, _, tg, _ in proxy.trace
                            if tg.split("?")[0].endswith(".parquet")]
                if i == 0:
                    # one GET per sidecar, of all of it: no tail GET before it
                    assert len(hnsw) == FILES, hnsw
                    # all in one round (before: one file after the other)
                    assert max(starts) - min(starts) < delay / 2, starts
                    # and in the round of the filter's own reads (cat has no
                    # index: the data files, whose tails hold these small
                    # files' pages too), not a round after them: the heads
                    # are asked for before the allow-lists are known
                    assert data and min(starts) < min(data) + delay / 2, (starts, data)
                    assert all(m == "GET" and r.startswith("bytes=0-") for m, tg, r in hnsw), hnsw
                    assert len({tg for _, tg, _ in hnsw}) == FILES
                    # the head only: exact vectors (32 bytes a row of 1500), not
                    # the graph's links beside them (~ 70 bytes a row)
                    for _, tg, r in hnsw:
                        key = next(k for k in sizes if tg.endswith(k))
                        end = int(r.split("-")[1]) + 1
                        assert end < sizes[key] // 2, (r, sizes[key])
                elif i == 1:
                    assert hnsw == []   # the decoded heads are cached
                    # and the winners' ids too: the first search read the id
                    # column of every file in the background (tbl_plan_warm_pages)
                    with proxy.lock:
                        assert proxy.trace == [], proxy.trace
                else:
                    # the graph: the whole of each sidecar, once
                    assert len({tg for _, tg, _ in hnsw}) == FILES, hnsw
        finally:
            p.stdin.close()
            p.wait(60)


def test_vector_unselective_filter_reads_rest_after_head(s3):
    # 5000 rows in one file, a filter allowing half of them: more than
    # max(2000, rows / 50), so the search wants the graph.  The head went out
    # before the allow-list was known; the rest of the sidecar is then read
    # after it (two GETs, the head's bytes not read again), and the answer
    # is numpy's.
    uri = s3.uri(f"requests/u-{os.getpid()}")
    n = 5000
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"id": np.arange(n, dtype=np.int64),
                       "cat": [f"c{i % 2}" for i in range(n)],
                       "emb": list(rng.standard_normal((n, DIM)).astype(np.float32))})
    t = hdb.Table(uri)
    t.write_pandas(df)
    t.commit()
    t.add_index("emb", "hnsw")
    size = next(o["Size"] for o in s3_objects(s3, uri) if ".hnsw" in o["Key"])
    emb = np.stack(df["emb"].to_numpy())
    vec = rng.standard_normal(DIM).astype(np.float32)
    with FaultProxy(s3.port) as proxy:
        proxy.trace = []
        env = dict(os.environ, **s3.env)
        env["AWS_ENDPOINT_URL"] = proxy.endpoint
        env.pop("AWS_ENDPOINT_URL_S3", None)
        p = subprocess.Popen([sys.executable, "-c", WORKER, uri], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            p.stdin.write(json.dumps({"cat": "c1", "vec": vec.tolist(), "ef": 400}) + "\n")
            p.stdin.flush()
            got = json.loads(p.stdout.readline())
        finally:
            p.stdin.close()
            p.wait(60)
        with proxy.lock:
            hnsw = sorted((r, m) for _, m, tg, r in proxy.trace if ".hnsw" in tg)
    sel = (df["cat"] == "c1").to_numpy()
    d = np.linalg.norm(emb[sel] - vec, axis=1)
    want = df["id"].to_numpy()[sel][np.argsort(d, kind="stable")[:5]]
    # ef 400 over 2500 allowed rows of an M=16 graph: the walk finds the
    # exact top 5 (numpy's) on this data
    assert got == want.tolist()
    assert all(m == "GET" for _, m in hnsw), hnsw
    spans = sorted(tuple(int(x) for x in r[len("bytes="):].split("-")) for r, _ in hnsw)
    assert len(spans) == 2, hnsw
    # the second starts inside the head's last 64 KiB block (io/s3.c's byte
    # cache reads whole blocks), not at 0, and ends at the object's end
    head_end = spans[0][1] + 1
    assert spans[0][0] == 0 and 0 < spans[1][0] <= head_end < spans[1][0] + 65536, (spans, size)
    assert spans[1][1] == size - 1, (spans, size)


def s3_objects(s3, uri):
    import boto3
    c = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1",
                     aws_access_key_id=s3.access_key, aws_secret_access_key=s3.secret_key)
    bucket, prefix = uri[len("s3://"):].split("/", 1)
    out = []
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out += page.get("Contents", [])
    return out


SCALAR_WORKER = textwrap.dedent('''
    import json, sys
    import hyperstreamdb as hdb
    t = hdb.Table(sys.argv[1])
    for line in sys.stdin:
        r = t.to_arrow(filter=f"tag = '{line.strip()}'", columns=["id"])
        print(json.dumps(r["id"].to_pylist()), flush=True)
''')


def test_scalar_sidecar_one_get(s3):
    # 20,000 distinct tags: an inverted sidecar far larger than the 64 KiB
    # tail an open fetches, read whole in one GET by the registry's size
    uri = s3.uri(f"requests/s-{os.getpid()}")
    n = 20000
    t = hdb.Table(uri)
    t.write_pandas(pd.DataFrame({"id": np.arange(n, dtype=np.int64),
                                 "tag": [f"tag-{i:06d}-{'x' * (i % 17)}" for i in range(n)]}))
    t.commit()
    t.add_index("tag", "inverted")
    with FaultProxy(s3.port) as proxy:
        proxy.trace = []
        env = dict(os.environ, **s3.env)
        env["AWS_ENDPOINT_URL"] = proxy.endpoint
        env.pop("AWS_ENDPOINT_URL_S3", None)
        p = subprocess.Popen([sys.executable, "-c", SCALAR_WORKER, uri], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            for i in (123, 19999):
                with proxy.lock:
                    proxy.trace.clear()
                p.stdin.write(f"tag-{i:06d}-{'x' * (i % 17)}\n")
                p.stdin.flush()
                assert json.loads(p.stdout.readline()) == [i]
                with proxy.lock:
                    side = [(m, r) for _, m, tg, r in proxy.trace if "/index/" in tg and
                            "/registry/" not in tg]
                if i == 123:
                    assert len(side) == 1 and side[0][1].startswith("bytes=0-"), side
                    size = int(side[0][1].split("-")[1]) + 1
                    assert size > 65536, size   # really larger than a tail
                else:
                    assert side == []
        finally:
            p.stdin.close()
            p.wait(60)


POINT_WORKER = textwrap.dedent('''
    import json, sys, tempfile, time
    import pandas as pd
    import hyperstreamdb as hdb
    # first-call costs (pyarrow's lazy imports: ~0.5 s after the first scan's
    # last read) paid on a local table, so that the query returns right after
    # its own reads, before the background warming starts
    lt = hdb.Table(tempfile.mkdtemp() + "/warmup")
    lt.write_pandas(pd.DataFrame({"id": [1], "cat": ["a"]}))
    lt.commit()
    lt.to_arrow(filter="id = 1", columns=["id", "cat"]).to_pydict()
    t = None
    for line in sys.stdin:
        q = json.loads(line)
        if t is None:
            t = hdb.Table(sys.argv[1])   # the metadata file's location: opened in the timed part
        r = t.to_arrow(filter=f"id = {q['id']}", columns=["id", "cat"])
        # when it returned (CLOCK_MONOTONIC, the proxy's clock too)
        print(json.dumps([r.to_pydict(), time.perf_counter()]), flush=True)
''')


def wait_quiet(proxy, delay):
    """The requests that reach the proxy until none has for 4 x delay (the
    process's background warming is done); clears the trace."""
    seen = []
    while True:
        time.sleep(4 * delay)
        with proxy.lock:
            new = list(proxy.trace)
            proxy.trace.clear()
        if not new:
            return seen
        seen += new


def test_point_lookup_rounds(s3):
    """A cold point lookup opened from the metadata file's location: one GET of
    that file (no version-hint.text, no probe, no HEAD); the index registry
    is its root alone (segments inline), asked for with the manifest list; in
    all at most 6 requests in at most 4 dependent round trips, and no
    manifest (the registry root's manifest summaries rule out two of the
    three, and carry the third's files). Once the process is idle it warms the next lookup in the
    background (the other files' footers and range sidecars, the pages of
    the columns read: none of it before the first
    query has returned), so a lookup of a key in another file then costs no
    request at all. Oracle: the rows written (pandas) and the proxy's request
    log."""
    uri = s3.uri(f"requests/p-{os.getpid()}")
    t = hdb.Table(uri)
    frames = [frame(f) for f in range(FILES)]
    for f in frames:
        t.write_pandas(f)
        t.commit()
    t.add_index("id", "range")
    meta = t.metadata_location
    assert meta.startswith("s3://") and meta.endswith(".metadata.json")
    allrows = pd.concat(frames, ignore_index=True)
    delay = 0.15
    with FaultProxy(s3.port, delay_s=delay) as proxy:
        proxy.trace = []
        env = dict(os.environ, **s3.env)
        env["AWS_ENDPOINT_URL"] = proxy.endpoint
        env.pop("AWS_ENDPOINT_URL_S3", None)
        p = subprocess.Popen([sys.executable, "-c", POINT_WORKER, meta], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            for i, key in enumerate((PER // 2, PER * 2 + 17)):
                with proxy.lock:
                    proxy.trace.clear()
                p.stdin.write(json.dumps({"id": key}) + "\n")
                p.stdin.flush()
                got, t_end = json.loads(p.stdout.readline())
                want = allrows[allrows["id"] == key]
                assert got == {"id": want["id"].tolist(), "cat": want["cat"].tolist()}
                # the query's requests: those that reached the proxy before it
                # returned (the background warming for the next one waits until
                # the process is idle)
                with proxy.lock:
                    trace = sorted(x for x in proxy.trace if x[0] <= t_end)
                    proxy.trace[:] = [x for x in proxy.trace if x[0] > t_end]
                paths = [tg.split("?", 1)[0] for _, _, tg, _ in trace]
                if i == 0:
                    assert not any(m == "HEAD" for _, m, _, _ in trace), trace
                    assert not any(x.endswith("version-hint.text") for x in paths), paths
                    assert sum(x.endswith(".metadata.json") for x in paths) == 1, paths
                    # the registry: its root only (which carries this small
                    # registry's segments inline), sent with the manifest list
                    reg = [(t0, tg) for (t0, _, tg, _) in trace if "/registry/" in tg]
                    lst = [t0 for (t0, _, tg, _) in trace if "/snap-" in tg]
                    assert len(reg) == 1 and "/registry/seg-" not in reg[0][1], paths
                    assert abs(reg[0][0] - lst[0]) < delay / 2, (reg, lst)
                    # in all: metadata, list, root, sidecar, footer, pages
                    assert len(paths) <= 6, paths
                    rounds, last = 0, None
                    for t0, *_ in trace:
                        if last is None or t0 - last > delay / 2:
                            rounds += 1
                        last = t0
                    assert rounds <= 4, [(round(t0 - trace[0][0], 3), tg) for t0, _, tg, _ in trace]
                    # the registry root's manifest summaries ruled out the
                    # other files' manifests, and carry the candidate's
                    # manifest's files: no manifest read at all, not three
                    assert sum("-m" in x and x.endswith(".avro") and "/snap-" not in x
                               for x in paths) == 0, paths
                    # the warming starts once the process is idle: the requests
                    # above are the query's own, and more follow
                    warm = wait_quiet(proxy, delay)
                    wpaths = [tg.split("?", 1)[0] for _, _, tg, _ in warm]
                    # (no manifest: the root carries their files too)
                    assert not any(x.endswith(".avro") for x in wpaths), wpaths
                    assert sum(x.endswith(".range") for x in wpaths) == 2, wpaths
                else:
                    # another file's key: manifest, footer, sidecar and pages
                    # were all warmed: no request
                    assert paths == [], paths
        finally:
            p.stdin.close()
            p.wait(60)


TOP1_WORKER = textwrap.dedent('''
    import json, sys
    import hyperstreamdb as hdb
    t = hdb.Table(sys.argv[1])
    for line in sys.stdin:
        q = json.loads(line)
        r = t.to_arrow(filter=f"cat = '{q['cat']}'", columns=["id"],
                       vector_filter={"column": "emb", "query": q["vec"], "k": 1})
        print(json.dumps(r["id"].to_pylist()), flush=True)
''')


@pytest.mark.parametrize("warm_mb", [None, "0"])
def test_second_search_reads_no_page(s3, warm_mb):
    """Files whose id pages lie outside the 64 KiB tail a footer fetch
    brings (20,000 random 62-bit ids a file, then the embeddings): the first
    filtered top-1, whose winner is in file 0, reads the id column of every
    file in the background while the sidecars load (tbl_plan_warm_pages),
    so a second one, whose winner is in file 1 (a row's own vector as the
    query), sends no request at all; with HS_WARM_PAGES_MB=0 it reads file
    1's id page itself.  Oracle: numpy brute force, the proxy's log."""
    uri = s3.uri(f"requests/w{warm_mb}-{os.getpid()}")
    n = 20000
    rng = np.random.default_rng(5)
    t = hdb.Table(uri)
    frames = []
    for f in range(2):
        # random 62-bit ids: 160 KB a file that no compression shrinks
        ids = rng.integers(1, 1 << 62, n, dtype=np.int64)
        df = pd.DataFrame({"id": ids, "cat": [f"c{i % 7}" for i in range(n)],
                           "emb": list(rng.standard_normal((n, DIM)).astype(np.float32))})
        frames.append(df)
        t.write_pandas(df)
        t.commit()
    t.add_index("emb", "hnsw")
    allrows = pd.concat(frames, ignore_index=True)
    emb = np.stack(allrows["emb"].to_numpy())
    with FaultProxy(s3.port) as proxy:
        proxy.trace = []
        env = dict(os.environ, **s3.env)
        env["AWS_ENDPOINT_URL"] = proxy.endpoint
        env.pop("AWS_ENDPOINT_URL_S3", None)
        if warm_mb is not None:
            env["HS_WARM_PAGES_MB"] = warm_mb
        p = subprocess.Popen([sys.executable, "-c", TOP1_WORKER, uri], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            for i, cat in enumerate(("c2", "c5")):
                # the query: the vector of a row of file i in category cat
                row = int(np.flatnonzero((allrows["cat"] == cat).to_numpy()
                                         & (np.arange(2 * n) // n == i))[17])
                vec = emb[row]
                with proxy.lock:
                    proxy.trace.clear()
                p.stdin.write(json.dumps({"cat": cat, "vec": vec.tolist()}) + "\n")
                p.stdin.flush()
                got = json.loads(p.stdout.readline())
                sel = (allrows["cat"] == cat).to_numpy()
                d = np.linalg.norm(emb[sel] - vec, axis=1)
                want = allrows["id"].to_numpy()[sel][np.argsort(d, kind="stable")[:1]]
                assert got == want.tolist() == [int(allrows["id"][row])]
                with proxy.lock:
                    trace = list(proxy.trace)
                if i == 1:
                    data = [r for _, _, tg, r in trace if tg.split("?")[0].endswith(".parquet")]
                    if warm_mb is None:
                        assert trace == [], trace
                    else:
                        assert data, trace
                time.sleep(1.0)   # the background fetches are done by the next query
        finally:
            p.stdin.close()
            p.wait(60)


DAMAGE_WORKER = textwrap.dedent('''
    import json, sys
    import hyperstreamdb as hdb
    t = hdb.Table(sys.argv[1])
    q = json.loads(sys.argv[2])
    r = t.to_arrow(filter="cat = 'c3'", columns=["id"],
                   vector_filter={"column": "emb", "query": q, "k": 5})
    print(json.dumps(r["id"].to_pylist()), flush=True)
''')


@pytest.mark.parametrize("kind", ["hnsw", "hnsw_tq8"])
def test_damaged_head_gives_exact_results(s3, kind):
    # a byte of the sidecar's head flipped in place (the same size: the
    # registry entry still matches): a flat sidecar's head ends with the
    # graph's vectors (their checksum), a tq8 sidecar's holds the exact
    # vectors (theirs); either way that file is searched exactly from its data
    # file, with a warning, and the answer is numpy's
    import boto3
    uri = s3.uri(f"requests/d-{kind}-{os.getpid()}")
    t = hdb.Table(uri)
    frames = [frame(f) for f in range(2)]
    for f in frames:
        t.write_pandas(f)
        t.commit()
    t.add_index("emb", kind)
    allrows = pd.concat(frames, ignore_index=True)
    emb = np.stack(allrows["emb"].to_numpy())
    c = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1",
                     aws_access_key_id=s3.access_key, aws_secret_access_key=s3.secret_key)
    bucket = uri[len("s3://"):].split("/", 1)[0]
    side = sorted(o["Key"] for o in s3_objects(s3, uri) if o["Key"].endswith("." + kind))
    assert len(side) == 2
    body = bytearray(c.get_object(Bucket=bucket, Key=side[0])["Body"].read())
    # the 40th vector of the head: after the 64-byte header (no map), the
    # graph's 128-byte header (flat) or nothing (tq8: exact vectors first)
    at = 64 + (128 if kind == "hnsw" else 0) + 40 * DIM * 4 + 5
    body[at] ^= 0x10
    c.put_object(Bucket=bucket, Key=side[0], Body=bytes(body))
    vec = np.random.default_rng(11).standard_normal(DIM).astype(np.float32)
    env = dict(os.environ, **s3.env)
    r = subprocess.run([sys.executable, "-c", DAMAGE_WORKER, uri, json.dumps(vec.tolist())],
                       env=env, text=True, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    sel = (allrows["cat"] == "c3").to_numpy()
    d = np.linalg.norm(emb[sel] - vec, axis=1)
    want = allrows["id"].to_numpy()[sel][np.argsort(d, kind="stable")[:5]]
    assert json.loads(r.stdout) == want.tolist()
    assert "skipped, searching exactly" in r.stderr, r.stderr
    # the head's own checks fired (the whole image's checksum is not read)
    assert ("payload checksum mismatch" if kind == "hnsw"
            else "checksum mismatch in the exact vectors") in r.stderr, r.stderr


MANY_WORKER = textwrap.dedent('''
    import json, sys
    import hyperstreamdb as hdb
    t = hdb.Table(sys.argv[1])
    out = []
    for f in json.loads(sys.argv[2]):
        r = t.to_arrow(filter=f, columns=["id", "cat"])
        out.append(sorted(zip(r["id"].to_pylist(), r["cat"].to_pylist())))
    print(json.dumps(out), flush=True)
''')


def test_manifest_summaries_stay_exact_across_other_engines(s3, tmp_path):
    """Manifests that the index registry root's summaries rule out are not
    read, and the answers stay exact when other engines commit after the
    root was written: pyiceberg (through a SqlCatalog on the same objects)
    appends a file and deletes rows of one of ours (new manifests, which no
    summary covers, so they are read), then we append again (our root then
    summarises pyiceberg's manifests too).  Oracle: pyiceberg's own scan of
    the same metadata for each filter; the proxy's request log for which
    manifests were fetched."""
    pa = require_module("pyarrow")
    sql = require_module("pyiceberg.catalog.sql")
    from conftest import s3_fileio_properties
    uri = s3.uri(f"requests/m-{os.getpid()}")
    t = hdb.Table(uri)
    for f in range(FILES):
        t.write_pandas(frame(f))
        t.commit()
    t.add_index("id", "range")
    filters = [f"id = {PER // 2}", f"id = {PER + 600}", f"id = {2 * PER + 17}",
               "id = 10050", f"id >= {PER + 590} AND id < {PER + 610}", "id = 99999",
               "cat = 'c3' AND id < 40", "id IS NULL"]

    def ours(meta, with_proxy=False):
        env = dict(os.environ, **s3.env)
        if not with_proxy:
            r = subprocess.run([sys.executable, "-c", MANY_WORKER, meta, json.dumps(filters)],
                               env=env, text=True, capture_output=True, timeout=120)
            assert r.returncode == 0, r.stderr
            return json.loads(r.stdout), None
        with FaultProxy(s3.port) as proxy:
            proxy.trace = []
            env["AWS_ENDPOINT_URL"] = proxy.endpoint
            env.pop("AWS_ENDPOINT_URL_S3", None)
            # the plan's own reads: no warming of the next query (which
            # fetches the skipped manifests once the process is idle)
            env["HS_WARM_FILES"] = "0"
            r = subprocess.run([sys.executable, "-c", MANY_WORKER, meta,
                                json.dumps(filters[:1])],
                               env=env, text=True, capture_output=True, timeout=120)
            assert r.returncode == 0, r.stderr
            with proxy.lock:
                paths = [tg.split("?", 1)[0] for _, _, tg, _ in proxy.trace]
            return json.loads(r.stdout), [x for x in paths
                                          if x.endswith(".avro") and "/snap-" not in x]

    def oracle(tbl):
        out = []
        for f in filters:
            a = tbl.scan(row_filter=f.replace("IS NULL", "is null"),
                         selected_fields=("id", "cat")).to_arrow()
            out.append(sorted([i, c] for i, c in zip(a["id"].to_pylist(), a["cat"].to_pylist())))
        return out

    cat = sql.SqlCatalog("c", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=s3.uri("requests/wh"),
                         **s3_fileio_properties(s3))
    cat.create_namespace("ns")
    pt = cat.register_table("ns.t", t.metadata_location)
    got, mans = ours(t.metadata_location, with_proxy=True)
    # one of three manifests may match, and the root carries its files: none read
    assert len(mans) == 0, mans
    got, _ = ours(t.metadata_location)
    assert got == oracle(pt)
    # pyiceberg appends a file and deletes rows of our second file
    schema = pt.schema().as_arrow()
    ids = np.arange(10000, 10100, dtype=np.int64)
    extra = pa.table({"id": ids, "cat": [f"c{i % 7}" for i in ids],
                      "emb": [list(map(float, r)) for r in
                              np.random.default_rng(5).standard_normal((100, DIM))]})
    pt.append(extra.cast(schema))
    pt.delete(f"id >= {PER + 595} and id < {PER + 605}")
    pt = cat.load_table("ns.t")
    want = oracle(pt)
    assert want[3] == [[10050, "c5"]] and want[1] == []   # the oracle saw both commits
    got, mans = ours(pt.metadata_location, with_proxy=True)
    got, _ = ours(pt.metadata_location)
    assert got == want
    # we append again: the new root summarises every manifest, pyiceberg's too
    t2 = hdb.Catalog(f"sqlite:///{tmp_path}/cat.db", name="c").load_table("ns.t")
    t2.write_pandas(frame(FILES))
    t2.commit()
    meta = t2.metadata_location
    pt = cat.load_table("ns.t")
    assert pt.metadata_location == meta
    want = oracle(pt)
    got, mans = ours(meta, with_proxy=True)
    # id = PER // 2: our first file's manifest only may match, and the new root
    # carries its files (pyiceberg's manifests too, all unpartitioned): none read
    assert len(mans) == 0, mans
    got, _ = ours(meta)
    assert got == want


def test_refresh_gives_an_old_root_its_summaries(s3):
    """A registry root written before manifest summaries existed (simulated:
    the key removed from the current root) makes a point lookup read every
    manifest; refresh_indexes, with nothing to build, writes a root that
    has them (with the manifests' files), and the lookup reads none. Oracle: the rows
    written (pandas) and the proxy's request log."""
    import boto3
    uri = s3.uri(f"requests/old-root-{os.getpid()}")
    t = hdb.Table(uri)
    frames = [frame(f) for f in range(FILES)]
    for f in frames:
        t.write_pandas(f)
        t.commit()
    t.add_index("id", "range")
    c = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1",
                     aws_access_key_id=s3.access_key, aws_secret_access_key=s3.secret_key)
    bucket, prefix = uri[len("s3://"):].split("/", 1)
    rel = t.properties["hyperstream.index-registry"]
    key = f"{prefix}/{rel}"
    root = json.loads(c.get_object(Bucket=bucket, Key=key)["Body"].read())
    assert len(root.pop("manifests")) == FILES
    c.put_object(Bucket=bucket, Key=key, Body=json.dumps(root).encode())
    key_id = PER + 33

    def manifests_read(meta):
        with FaultProxy(s3.port) as proxy:
            proxy.trace = []
            env = dict(os.environ, **s3.env)
            env["AWS_ENDPOINT_URL"] = proxy.endpoint
            env.pop("AWS_ENDPOINT_URL_S3", None)
            env["HS_WARM_FILES"] = "0"   # the plan's reads only (no next-query warming)
            r = subprocess.run([sys.executable, "-c", MANY_WORKER, meta,
                                json.dumps([f"id = {key_id}"])],
                               env=env, text=True, capture_output=True, timeout=120)
            assert r.returncode == 0, r.stderr
            assert json.loads(r.stdout) == [[[key_id, f"c{key_id % 7}"]]]
            with proxy.lock:
                return [tg for _, _, tg, _ in proxy.trace
                        if tg.split("?")[0].endswith(".avro") and "/snap-" not in tg]

    assert len(manifests_read(t.metadata_location)) == FILES
    before = t.metadata_location
    t.refresh_indexes()
    assert t.metadata_location != before   # a registry commit: the new root
    assert len(manifests_read(t.metadata_location)) == 0   # summaries with files
    after = t.metadata_location
    t.refresh_indexes()   # summaries current: no commit
    assert t.metadata_location == after


def test_refresh_gives_old_summaries_their_files(s3):
    """A registry root whose manifest summaries were written before they
    carried the manifests' files (simulated: "files" and "seq" removed from
    the current root's summaries) makes a point lookup read the candidate
    file's manifest (the bounds still skip the others); refresh_indexes, with
    nothing to build, writes a root whose summaries have the files, and the
    lookup reads no manifest. Oracle: the rows written (pandas) and the
    proxy's request log."""
    import boto3
    uri = s3.uri(f"requests/old-files-{os.getpid()}")
    t = hdb.Table(uri)
    frames = [frame(f) for f in range(FILES)]
    for f in frames:
        t.write_pandas(f)
        t.commit()
    t.add_index("id", "range")
    c = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1",
                     aws_access_key_id=s3.access_key, aws_secret_access_key=s3.secret_key)
    bucket, prefix = uri[len("s3://"):].split("/", 1)
    key = f"{prefix}/{t.properties['hyperstream.index-registry']}"
    root = json.loads(c.get_object(Bucket=bucket, Key=key)["Body"].read())
    assert len(root["manifests"]) == FILES
    for m in root["manifests"]:
        assert m.pop("files") and "seq" in m
        m.pop("seq")
    c.put_object(Bucket=bucket, Key=key, Body=json.dumps(root).encode())
    key_id = PER + 33

    def manifests_read(meta):
        with FaultProxy(s3.port) as proxy:
            proxy.trace = []
            env = dict(os.environ, **s3.env)
            env["AWS_ENDPOINT_URL"] = proxy.endpoint
            env.pop("AWS_ENDPOINT_URL_S3", None)
            env["HS_WARM_FILES"] = "0"   # the plan's reads only (no next-query warming)
            r = subprocess.run([sys.executable, "-c", MANY_WORKER, meta,
                                json.dumps([f"id = {key_id}"])],
                               env=env, text=True, capture_output=True, timeout=120)
            assert r.returncode == 0, r.stderr
            assert json.loads(r.stdout) == [[[key_id, f"c{key_id % 7}"]]]
            with proxy.lock:
                return [tg for _, _, tg, _ in proxy.trace
                        if tg.split("?")[0].endswith(".avro") and "/snap-" not in tg]

    assert len(manifests_read(t.metadata_location)) == 1   # bounds, no files
    before = t.metadata_location
    t.refresh_indexes()
    assert t.metadata_location != before   # a registry commit: the new root
    root = json.loads(c.get_object(
        Bucket=bucket, Key=f"{prefix}/{t.properties['hyperstream.index-registry']}")["Body"].read())
    assert all(len(m["files"]) == 1 for m in root["manifests"]), root["manifests"]
    assert len(manifests_read(t.metadata_location)) == 0
    after = t.metadata_location
    t.refresh_indexes()   # summaries current, files included: no commit
    assert t.metadata_location == after
    # exact after the refresh: a delete of the key (the root's files are then
    # the deleted snapshot's, with its delete file), and the refreshed
    # metadata read again (time travel to before the delete) still has it
    assert t.delete(f"id = {key_id} OR id = {key_id + 1}") == 2
    env = dict(os.environ, **s3.env)
    r = subprocess.run([sys.executable, "-c", MANY_WORKER, t.metadata_location,
                        json.dumps([f"id = {key_id}", f"id >= {key_id} AND id < {key_id + 3}"])],
                       env=env, text=True, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    allrows = pd.concat(frames, ignore_index=True)
    want = allrows[allrows["id"] == key_id + 2]
    assert json.loads(r.stdout) == [[], [[int(i), c] for i, c in zip(want["id"], want["cat"])]]
    r = subprocess.run([sys.executable, "-c", MANY_WORKER, after,
                        json.dumps([f"id = {key_id}"])],
                       env=env, text=True, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [[[key_id, f"c{key_id % 7}"]]]

"""What a query costs on S3, counted at a proxy in front of the server
(tests/s3/faultproxy.py tracing every request, failing none): a filtered
vector query reads each HNSW sidecar with exactly one GET (the registry's
size for it, no tail GET to open it first), and a second query in the same
process reads no sidecar again.

Oracles: numpy brute force for the nearest rows among the filtered ones
(the sidecar's search must agree); the proxy's own request log."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, storage_server  # noqa: E402

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
                       vector_filter={"column": "emb", "query": q["vec"], "k": 5})
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
    with FaultProxy(s3.port) as proxy:
        proxy.trace = []
        env = dict(os.environ, **s3.env)
        env["AWS_ENDPOINT_URL"] = proxy.endpoint
        env.pop("AWS_ENDPOINT_URL_S3", None)
        p = subprocess.Popen([sys.executable, "-c", WORKER, uri], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            for i, cat in enumerate(("c3", "c5")):
                vec = rng.standard_normal(DIM).astype(np.float32)
                with proxy.lock:
                    proxy.trace.clear()
                p.stdin.write(json.dumps({"cat": cat, "vec": vec.tolist()}) + "\n")
                p.stdin.flush()
                got = json.loads(p.stdout.readline())
                sel = (allrows["cat"] == cat).to_numpy()
                d = np.linalg.norm(emb[sel] - vec, axis=1)
                want = allrows["id"].to_numpy()[sel][np.argsort(d, kind="stable")[:5]]
                assert got == want.tolist()
                with proxy.lock:
                    hnsw = [(m, tg, r) for _, m, tg, r in proxy.trace if ".hnsw" in tg]
                if i == 0:
                    # one GET per sidecar, of all of it: no tail GET before it
                    assert len(hnsw) == FILES, hnsw
                    assert all(m == "GET" and r.startswith("bytes=0-") for m, tg, r in hnsw), hnsw
                    assert len({tg for _, tg, _ in hnsw}) == FILES
                else:
                    assert hnsw == []   # the decoded images are cached
        finally:
            p.stdin.close()
            p.wait(60)


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

"""Tables on S3 (s3:// locations) against a real S3-compatible server that the
tests start and stop (tests/s3/s3server.py: moto by default, SeaweedFS with
HS_S3_SERVER=seaweedfs: the test matrix switch), optionally behind the
fault-injecting proxy (tests/s3/faultproxy.py).

Oracles, never our own output: the source rows filtered by pandas; pyarrow's
own S3 client (pyarrow.fs.S3FileSystem) reading the Parquet objects we wrote;
pyiceberg (StaticTable over s3:// with its PyArrow FileIO) reading the table
from its metadata; brute-force numpy nearest neighbours.

Concurrency and faults: four processes append to one table at once, through
the proxy failing 10% of requests (drops before and after the server applied
the request, 500s, 503 SlowDown, slow and truncated answers): every
acknowledged commit is present exactly once and every commit is all-or-nothing.
HS_LONG_TESTS=1 runs more commits per process.
"""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from conftest import ON_S3, require, require_module, storage_server  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests/s3"))
from faultproxy import FaultProxy  # noqa: E402

require_module("moto")
pyiceberg_table = require_module("pyiceberg.table")
import hyperstreamdb as hdb  # noqa: E402

LONG = os.environ.get("HS_LONG_TESTS") == "1"


@pytest.fixture(scope="module")
def s3():
    # the session's one S3 server (conftest.storage_server, also the storage
    # matrix's): the library reads the endpoint once per process
    yield storage_server()


def arrow_fs(s3):
    return pafs.S3FileSystem(access_key=s3.env["AWS_ACCESS_KEY_ID"],
                             secret_key=s3.env["AWS_SECRET_ACCESS_KEY"],
                             endpoint_override=s3.endpoint.replace("http://", ""),
                             scheme="http", region="us-east-1")


def iceberg_arrow(s3, metadata_location):
    props = {"s3.endpoint": s3.endpoint, "s3.access-key-id": s3.env["AWS_ACCESS_KEY_ID"],
             "s3.secret-access-key": s3.env["AWS_SECRET_ACCESS_KEY"],
             "s3.region": "us-east-1"}
    st = pyiceberg_table.StaticTable.from_metadata(metadata_location, properties=props)
    return st.scan().to_arrow()


def make_df(n, start=0, seed=0, dim=16):
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pd.DataFrame({
        "id": ids,
        "category": np.array(["science", "art", "sports", "news"])[rng.integers(0, 4, n)],
        "score": rng.random(n),
        "embedding": list(rng.standard_normal((n, dim)).astype(np.float32)),
    })


def rows(t: pa.Table, cols=("id", "category", "score")):
    return t.select(list(cols)).sort_by("id").to_pylist()


def test_table_on_s3_matches_pyarrow_and_pyiceberg(s3):
    uri = s3.uri("tables/basic")
    t = hdb.Table(uri)
    parts = [make_df(700, start=i * 700, seed=i) for i in range(3)]
    for p in parts:
        t.write_pandas(p)
        t.commit()
    df = pd.concat(parts, ignore_index=True)
    want = pa.Table.from_pandas(df, preserve_index=False)
    assert rows(t.to_arrow()) == rows(want)
    # a fresh handle (s3a:// spelling) sees the same table
    t2 = hdb.Table(uri.replace("s3://", "s3a://"))
    assert t2.to_arrow().num_rows == len(df)
    # filter vs pandas
    m = (df["category"] == "art") & (df["score"] > 0.5)
    got = t.to_arrow(filter="category = 'art' AND score > 0.5")
    assert rows(got) == rows(pa.Table.from_pandas(df[m], preserve_index=False))
    # pyiceberg reads the table from its metadata on S3
    assert t.metadata_location.startswith("s3://")
    assert rows(iceberg_arrow(s3, t.metadata_location)) == rows(want)
    # pyarrow's own S3 client reads the Parquet objects we wrote
    fs = arrow_fs(s3)
    infos = fs.get_file_info(pafs.FileSelector(f"{s3.bucket}/tables/basic/data", recursive=True))
    files = [i.path for i in infos if i.path.endswith(".parquet")]
    assert len(files) == 3
    direct = pa.concat_tables([pq.read_table(f, filesystem=fs) for f in files])
    assert rows(direct) == rows(want)
    # the metadata files: v1 (create) + three appends, and the hint
    meta = {i.base_name for i in fs.get_file_info(
        pafs.FileSelector(f"{s3.bucket}/tables/basic/metadata"))}
    assert {"v1.metadata.json", "v4.metadata.json", "version-hint.text"} <= meta
    with fs.open_input_stream(f"{s3.bucket}/tables/basic/metadata/version-hint.text") as f:
        assert f.read() == b"4"


def test_indexes_and_vector_search_on_s3(s3):
    uri = s3.uri("tables/indexed")
    t = hdb.Table(uri)
    parts = [make_df(1000, start=i * 1000, seed=10 + i) for i in range(2)]
    for p in parts:
        t.write_pandas(p)
        t.commit()
    df = pd.concat(parts, ignore_index=True)
    vecs = np.stack(df["embedding"].to_numpy()).astype(np.float64)
    t.add_index("category", "inverted")
    t.add_index("id", "range")
    t.add_index("embedding", "hnsw")
    assert {i["column"] for i in t.indexes()} == {"category", "id", "embedding"}
    for f, m in {"category = 'news'": df["category"] == "news",
                 "id >= 120 AND id < 140": (df["id"] >= 120) & (df["id"] < 140)}.items():
        assert sorted(t.to_pandas(filter=f)["id"]) == sorted(df[m]["id"]), f
    rep = t.explain(filter="category = 'news'")
    assert "files_indexed" in str(rep)
    rng = np.random.default_rng(5)
    recalls = []
    for _ in range(5):
        q = rng.standard_normal(vecs.shape[1])
        want = np.argsort(np.linalg.norm(vecs - q, axis=1), kind="stable")[:10]
        got = t.to_pandas(vector_filter={"column": "embedding", "query": q, "k": 10,
                                         "ef_search": 128})
        assert len(got) == 10
        recalls.append(len(set(got["id"]) & set(df["id"].to_numpy()[want])) / 10)
        # filtered top-k: exact against brute force over the allowed rows
        mask = (df["category"] == "science").to_numpy()
        d = np.linalg.norm(vecs - q, axis=1)
        d[~mask] = np.inf
        want_f = df["id"].to_numpy()[np.argsort(d, kind="stable")[:10]]
        got_f = t.to_pandas(filter="category = 'science'",
                            vector_filter={"column": "embedding", "query": q, "k": 10,
                                           "ef_search": 400})
        assert set(got_f["category"]) == {"science"}
        assert len(set(got_f["id"]) & set(want_f)) >= 9
    assert np.mean(recalls) >= 0.9, recalls
    # the sidecars are objects next to the data
    fs = arrow_fs(s3)
    idx = fs.get_file_info(pafs.FileSelector(f"{s3.bucket}/tables/indexed/index", recursive=True))
    assert any(i.type == pafs.FileType.File for i in idx)


def test_exclusive_create_and_errors(s3):
    t = hdb.Table(s3.uri("tables/excl"))
    t.write_pandas(make_df(10))
    t.commit()
    # creating the same table again through the C create path conflicts (conditional PUT)
    u = hdb.Table(s3.uri("tables/excl"))
    assert u.to_arrow().num_rows == 10
    with pytest.raises(hdb.NotFoundError):
        hdb.Table(s3.uri("tables/nothing-here")).to_arrow()
    with pytest.raises(Exception, match="gs"):
        hdb.Table("gs://bucket/t").to_arrow()


APPENDER = textwrap.dedent("""
    import json, sys, time
    import numpy as np, pandas as pd
    import hyperstreamdb as hdb
    uri, worker, n_commits, rows_per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if len(sys.argv) > 5:   # the commit lock directory, set through the API (not HS_S3_LOCK_DIR)
        hdb.set_config("s3_lock_dir", sys.argv[5])
    t = hdb.Table(uri)
    for c in range(n_commits):
        base = (worker * 1000 + c) * rows_per
        df = pd.DataFrame({"id": np.arange(base, base + rows_per, dtype=np.int64),
                           "batch": np.full(rows_per, worker * 1000 + c, dtype=np.int64)})
        t.write_pandas(df)
        try:
            t.commit()
            print(json.dumps({"acked": worker * 1000 + c}), flush=True)
        except Exception as e:
            t.discard()
            print(json.dumps({"failed": worker * 1000 + c, "error": str(e)[:300]}), flush=True)
""")


def run_appenders(s3, uri, endpoint, n_procs, n_commits, rows_per, lock_dir=None):
    env = dict(os.environ, **s3.env)
    env["AWS_ENDPOINT_URL"] = endpoint
    extra = []
    if lock_dir is not None:   # a store without conditional writes: the local commit lock
        env["HS_S3_CONDITIONAL_WRITES"] = "0"
        env.pop("HS_S3_LOCK_DIR", None)
        extra = [str(lock_dir)]
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, uri, str(w), str(n_commits),
                               str(rows_per), *extra], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for w in range(n_procs)]
    acked, failed = set(), {}
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        for line in out.splitlines():
            rec = json.loads(line)
            if "acked" in rec:
                acked.add(rec["acked"])
            else:
                failed[rec["failed"]] = rec["error"]
    return acked, failed


def check_all_or_nothing(s3, uri, acked, rows_per):
    t = hdb.Table(uri)
    got = t.to_arrow()
    ids = got["id"].to_numpy()
    assert len(ids) == len(set(ids.tolist())), "a row is present twice"
    per_batch = pd.Series(got["batch"].to_numpy()).value_counts().to_dict()
    for b, n in per_batch.items():
        assert n == rows_per, f"batch {b} half-applied: {n} of {rows_per} rows"
    present = set(per_batch)
    assert acked <= present, f"acknowledged commits missing: {sorted(acked - present)}"
    # pyiceberg agrees with our scan
    oracle = iceberg_arrow(s3, t.metadata_location)
    assert sorted(oracle["id"].to_pylist()) == sorted(ids.tolist())
    return present


def test_concurrent_appenders_conditional_put(s3):
    uri = s3.uri("tables/concurrent")
    t = hdb.Table(uri)
    t.write_pandas(pd.DataFrame({"id": pd.Series([], dtype="int64"),
                                 "batch": pd.Series([], dtype="int64")}))
    t.commit()
    n_commits = 12 if LONG else 4
    acked, failed = run_appenders(s3, uri, s3.endpoint, 4, n_commits, 5)
    assert not failed, failed   # no faults: every commit succeeds (rebasing on conflicts)
    assert len(acked) == 4 * n_commits
    present = check_all_or_nothing(s3, uri, acked, 5)
    assert present == acked


def test_concurrent_appenders_lock_dir_set_through_the_api(s3, tmp_path):
    """Without conditional writes the commit point is a local lock file in
    the s3_lock_dir setting's directory; the writers set it with
    hdb.set_config (no HS_S3_LOCK_DIR in their environment).  Every
    acknowledged commit is present exactly once (pyarrow reads the data
    objects), and the lock file is where the setting said."""
    uri = s3.uri("tables/locked")
    t = hdb.Table(uri)
    t.write_pandas(pd.DataFrame({"id": pd.Series([], dtype="int64"),
                                 "batch": pd.Series([], dtype="int64")}))
    t.commit()
    locks = tmp_path / "locks"
    locks.mkdir()
    acked, failed = run_appenders(s3, uri, s3.endpoint, 3, 3, 5, lock_dir=locks)
    assert not failed, failed
    assert len(acked) == 9
    assert check_all_or_nothing(s3, uri, acked, 5) == acked
    names = [p.name for p in locks.iterdir()]
    assert len(names) == 1 and names[0].startswith("s3-") and names[0].endswith(".lock"), names


def test_concurrent_appenders_through_faults(s3):
    uri = s3.uri("tables/faulty")
    t = hdb.Table(uri)
    t.write_pandas(pd.DataFrame({"id": pd.Series([], dtype="int64"),
                                 "batch": pd.Series([], dtype="int64")}))
    t.commit()
    n_commits = 10 if LONG else 3
    with FaultProxy(s3.port, rate=0.10, slow_s=0.3, seed=7) as proxy:
        acked, failed = run_appenders(s3, uri, proxy.endpoint, 4, n_commits, 5)
        faults = dict(proxy.faults)
        requests = proxy.requests
    assert requests > 50 and sum(faults.values()) > 0, (requests, faults)
    present = check_all_or_nothing(s3, uri, acked, 5)
    # a failed commit may still have landed (its answer was lost), never half
    assert acked | set(failed) >= present
    assert len(acked) >= 4 * n_commits * 0.9, (failed, faults)
    assert not failed, failed   # the retries absorb 10% failures


def test_cli_on_s3(s3, tmp_path):
    cli = REPO / os.environ.get("HS_BUILD", "build") / "hyperstream"
    require(cli.exists(), f"{cli} not built")
    src = tmp_path / "in.parquet"
    df = make_df(50, seed=3).drop(columns=["embedding"])
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), src)
    uri = s3.uri("tables/cli")
    env = dict(os.environ, **s3.env)

    def run(*args):
        r = subprocess.run([str(cli), "table", *args], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    run("create", uri, "--like", str(src))
    run("append", uri, str(src))
    run("index", "add", uri, "category", "--kind", "inverted")
    out = run("scan", uri, "--filter", "category = 'art'")
    got = sorted(json.loads(line)["id"] for line in out.splitlines())
    assert got == sorted(df[df["category"] == "art"]["id"])
    # pyarrow's S3 client reads the data object the CLI wrote
    fs = arrow_fs(s3)
    files = [i.path for i in fs.get_file_info(
        pafs.FileSelector(f"{s3.bucket}/tables/cli/data", recursive=True))]
    assert len(files) == 1
    assert sorted(pq.read_table(files[0], filesystem=fs)["id"].to_pylist()) == sorted(df["id"])

"""Append streams on S3 tables (table/stream.c: the write-ahead log on local
disk, flushes committed to the store with conditional PUTs), on a moto server
started by the test.

* kill -9 of a writer in the middle of a stream of acknowledged batches, then
  a reopen in a new process with the same local log directory: every
  acknowledged row is in the table exactly once (rows written but not yet
  acknowledged may or may not be), and nothing of the log is on S3;
* near-real-time reads: acknowledged rows are visible to the stream's table
  handle before any commit, then committed by a flush; an explicit wal_dir
  holds the log, with an id that suffixes the committed-seq keys;
* two logs on one table keep their own seqs;
* flushes through tests/s3/faultproxy.py failing a quarter of the requests
  (HS_TEST_SEED picks the faults): every acknowledged row committed once.

The writers run in subprocesses with the server's AWS_* variables and their
own XDG_CACHE_HOME (the default log directory's root).  Oracles: pyiceberg's
StaticTable on the table's current metadata (read from S3 with its own
settings), and the writer's own log of acknowledgements.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest
from conftest import REPO, require, require_module  # noqa: E402

require_module("hyperstreamdb")
pyiceberg_table = require_module("pyiceberg.table")
StaticTable = pyiceberg_table.StaticTable

sys.path.insert(0, str(REPO / "tests" / "s3"))
from s3server import S3Server  # noqa: E402


@pytest.fixture(scope="module")
def s3():
    server = S3Server(kind="moto")
    try:
        server.start()
    except RuntimeError as e:
        server.stop()
        require(False, f"moto did not start: {e}")
    yield server
    server.stop()


def _env(s3, cache):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HS_S3_"))}
    env.update({k: v for k, v in s3.env.items() if k.startswith("AWS_")})
    env["XDG_CACHE_HOME"] = str(cache)
    return env


def _run(s3, cache, code, *args, timeout=300):
    p = subprocess.run([sys.executable, "-c", code, *args], env=_env(s3, cache),
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def _fileio(s3):
    return {"s3.endpoint": s3.endpoint, "s3.access-key-id": s3.access_key,
            "s3.secret-access-key": s3.secret_key, "s3.region": "us-east-1"}


def _committed_ids(s3, metadata_location):
    t = StaticTable.from_metadata(metadata_location, properties=_fileio(s3))
    return t.scan().to_arrow()["id"].to_pylist()


def _keys(s3, prefix):
    import boto3
    b = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1",
                     aws_access_key_id=s3.access_key, aws_secret_access_key=s3.secret_key)
    out = b.list_objects_v2(Bucket=s3.bucket, Prefix=prefix)
    return [o["Key"] for o in out.get("Contents", [])]


WRITER = r"""
import sys
import pyarrow as pa
import hyperstreamdb as hdb
uri = sys.argv[1]
schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
t = hdb.Table.create(uri, schema)
t.add_index("id", "inverted")
s = t.stream(flush_interval_ms=200, flush_rows=1_000_000)
i = 0
while True:
    ids = list(range(i * 50, i * 50 + 50))
    seq = s.write(pa.table({"id": ids, "s": [f"r{x}" for x in ids]}, schema=schema))
    print(f"ack {seq} {ids[-1]}", flush=True)
    i += 1
"""

REOPEN = r"""
import json, sys
import hyperstreamdb as hdb
t = hdb.Table(sys.argv[1])           # opening recovers the crashed stream's log
ids = t.to_arrow()["id"].to_pylist()
hit = t.to_arrow(filter="id = 120")["s"].to_pylist()
with t.stream() as s:
    replayed = s.stats()["replayed_rows"]
print(json.dumps({"ids": ids, "hit": hit, "replayed": replayed,
                  "metadata_location": t.metadata_location}))
"""


def test_kill9_then_reopen_with_the_same_log(s3, tmp_path):
    cache = tmp_path / "cache"
    uri = s3.uri(f"streams/{tmp_path.name}/t")
    p = subprocess.Popen([sys.executable, "-c", WRITER, uri], env=_env(s3, cache),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acked = []
    deadline = time.time() + 240
    try:
        while len(acked) < 60 and time.time() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            _, seq, last = line.split()
            acked.append((int(seq), int(last)))
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
        err = p.stderr.read()
        p.stdout.close()
        p.stderr.close()
    assert len(acked) >= 60, err
    assert [a[0] for a in acked] == list(range(1, len(acked) + 1))
    # the log is on local disk under the cache, keyed by the location; none on S3
    logs = list((cache / "hyperstream" / "wal").glob("*"))
    assert len(logs) == 1 and "streams" in logs[0].name, logs
    assert (logs[0] / "wal-id").exists()
    assert not [k for k in _keys(s3, f"streams/{tmp_path.name}/t/") if "/wal" in k]

    # what S3 held at the kill (the newest metadata file): some acknowledged
    # rows were only in the local log, so the reopen has something to recover
    prefix = f"streams/{tmp_path.name}/t/metadata/"
    versions = [int(k.rsplit("/v", 1)[1].split(".")[0]) for k in _keys(s3, prefix)
                if k.endswith(".metadata.json")]
    at_kill = _committed_ids(s3, s3.uri(f"{prefix}v{max(versions)}.metadata.json"))
    assert len(at_kill) == len(set(at_kill)) and len(at_kill) < acked[-1][1] + 1

    got = _run(s3, cache, REOPEN, uri)
    ids = got["ids"]
    last_acked = acked[-1][1]
    assert len(ids) == len(set(ids)), "a row was committed twice"
    assert set(range(last_acked + 1)) <= set(ids), "an acknowledged row was lost"
    # rows past the acknowledged ones were written whole batches at a time, if at all
    assert set(ids) == set(range(max(ids) + 1)) and (max(ids) + 1) % 50 == 0
    assert got["hit"] == ["r120"]
    assert got["replayed"] == 0   # the open already committed the log
    # the oracle reads the same rows from S3, through the committed metadata
    assert sorted(_committed_ids(s3, got["metadata_location"])) == sorted(ids)
    assert not list(logs[0].glob("*.wal")) or all(
        f.stat().st_size <= 64 for f in logs[0].glob("*.wal"))


NRT = r"""
import json, sys, pathlib
import pyarrow as pa
import hyperstreamdb as hdb
uri, wal_dir = sys.argv[1:3]
schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
t = hdb.Table.create(uri, schema)
s = t.stream(wal_dir=wal_dir, refresh_ms=-1, flush_interval_ms=3_600_000,
             flush_rows=1_000_000)
s.write(pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}, schema=schema))
s.write(pa.table({"id": [4], "s": ["d"]}, schema=schema))
before = {"visible": sorted(t.to_arrow()["id"].to_pylist()), "count": t.count(),
          "filtered": t.to_arrow(filter="id > 2")["id"].to_pylist(),
          "metadata_location": t.metadata_location,
          "segments": len(list(pathlib.Path(wal_dir).glob("*.wal")))}
s.flush()
t.refresh()
after = {"visible": sorted(t.to_arrow()["id"].to_pylist()),
         "metadata_location": t.metadata_location,
         "properties": {k: v for k, v in t.properties.items() if "wal" in k}}
s.close()
print(json.dumps({"before": before, "after": after,
                  "wal_id": (pathlib.Path(wal_dir) / "wal-id").read_text()}))
"""


def test_near_real_time_reads_and_explicit_wal_dir(s3, tmp_path):
    uri = s3.uri(f"streams/{tmp_path.name}/nrt")
    wal_dir = tmp_path / "mywal"
    got = _run(s3, tmp_path / "cache", NRT, uri, str(wal_dir))
    b, a = got["before"], got["after"]
    # acknowledged rows are read before any commit...
    assert b["visible"] == [1, 2, 3, 4] and b["count"] == 4 and sorted(b["filtered"]) == [3, 4]
    assert b["segments"] >= 1
    assert _committed_ids(s3, b["metadata_location"]) == []   # ...and not in S3 yet
    # the flush committed them, once, under the log's own keys
    assert sorted(_committed_ids(s3, a["metadata_location"])) == [1, 2, 3, 4]
    assert a["visible"] == [1, 2, 3, 4]
    wid = got["wal_id"]
    assert a["properties"] == {f"hyperstream.wal.committed-seq.{wid}": "2"}
    assert not (tmp_path / "cache").exists()   # the explicit directory was used


def test_two_logs_on_one_s3_table_keep_their_own_seqs(s3, tmp_path):
    """Two streams (two machines, here two log directories used one after the
    other) on one S3 table: each log's seqs start at 1, and neither takes the
    other's committed seq for its own (no row skipped, none twice)."""
    uri = s3.uri(f"streams/{tmp_path.name}/two")
    code = r"""
import json, sys
import pyarrow as pa
import hyperstreamdb as hdb
uri, wal_dir, first, create = sys.argv[1:5]
schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
t = hdb.Table.create(uri, schema) if create == "1" else hdb.Table(uri)
with t.stream(wal_dir=wal_dir) as s:
    seqs = [s.write(pa.table({"id": [int(first) + k], "s": ["x"]}, schema=schema))
            for k in range(3)]
t.refresh()
print(json.dumps({"seqs": seqs, "metadata_location": t.metadata_location}))
"""
    one = _run(s3, tmp_path / "c1", code, uri, str(tmp_path / "w1"), "0", "1")
    two = _run(s3, tmp_path / "c2", code, uri, str(tmp_path / "w2"), "100", "0")
    assert one["seqs"] == [1, 2, 3] and two["seqs"] == [1, 2, 3]
    assert sorted(_committed_ids(s3, two["metadata_location"])) == [0, 1, 2, 100, 101, 102]


FAULTY = r"""
import json, sys, time
import pyarrow as pa
import hyperstreamdb as hdb
uri, n = sys.argv[1], int(sys.argv[2])
schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
t = hdb.Table.create(uri, schema)
acked, err = 0, None
try:
    s = t.stream(flush_interval_ms=100)
    for i in range(n):
        ids = list(range(i * 20, i * 20 + 20))
        s.write(pa.table({"id": ids, "s": ["x"] * 20}, schema=schema))
        acked = ids[-1] + 1
        time.sleep(0.02)            # several flushes during the run
    s.close()
except Exception as e:          # a flush that failed for good: rows stay in the log
    err = repr(e)
print(json.dumps({"acked": acked, "err": err}))
"""


def test_flushes_through_a_faulty_store(s3, tmp_path):
    """A quarter of the store's requests fail (500, 503 SlowDown, dropped before or
    after reaching the server, truncated answers) while a stream flushes every
    100 ms; then a process without faults opens the table with the same log.
    Every acknowledged row is committed exactly once."""
    from faultproxy import FaultProxy
    proxy = FaultProxy(s3.port, rate=0.25, seed=int(os.environ.get("HS_TEST_SEED", "7"))).start()
    uri = s3.uri(f"streams/{tmp_path.name}/faulty")
    cache = tmp_path / "cache"
    try:
        env = _env(s3, cache)
        env["AWS_ENDPOINT_URL"] = proxy.endpoint
        p = subprocess.run([sys.executable, "-c", FAULTY, uri, "60"], env=env,
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        got = json.loads(p.stdout.strip().splitlines()[-1])
    finally:
        faults = dict(proxy.faults)
        proxy.stop()
    assert got["acked"] == 1200, got
    assert sum(faults.values()) > 0, faults
    again = _run(s3, cache, REOPEN, uri)
    ids = again["ids"]
    assert sorted(ids) == list(range(1200)), (got, len(ids), len(set(ids)))
    assert sorted(_committed_ids(s3, again["metadata_location"])) == list(range(1200))

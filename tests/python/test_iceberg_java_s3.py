"""Java Iceberg reads and writes our tables on S3 (tests/interop/java: the
harness's S3FileIO from iceberg-aws over the AWS SDK v2), against the
session's S3 server (SeaweedFS when installed, else moto: conftest's
storage_server; the harness takes the endpoint and keys from the same AWS_*
variables).

* read: a table we write at an s3:// location (appends, a delete, an index)
  read by Java from its metadata on S3, rows compared with the rows we put
  in (pyarrow), and with pyiceberg's reading of the same metadata;
* write: Java's RESTCatalog creates and appends to a table on S3 through
  `hyperstream serve --rest` with an s3:// warehouse; we and pyiceberg read
  it; we append and Java reads the result from S3;
* remote signing: the same Java writes with no S3 keys at all, to a server
  started with --remote-signing: Java's S3V4RestSignerClient has each request
  signed by our signer (the store checks the signatures).
"""
import json
import os
import shutil
import signal
import subprocess
import time

import pyarrow as pa
import pytest
from conftest import _build_dir, require, require_module, s3_fileio_properties, storage_server
from test_iceberg_java import HARNESS_JAR, JavaHarness

require_module("pyiceberg")
hdb = require_module("hyperstreamdb")
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.table import StaticTable  # noqa: E402

CLI = _build_dir() / "hyperstream"
TOKEN = "java-s3-t0ken"
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])


@pytest.fixture(scope="module")
def s3():
    return storage_server()


class _EnvHarness(JavaHarness):
    """JavaHarness with its own environment (JavaHarness inherits ours)."""

    def __init__(self, jar, env):
        self.proc = subprocess.Popen(["java", "-Xss4m", "-jar", str(jar), "serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, encoding="utf-8", env=env)
        self.n = 0


def _harness(env):
    require(shutil.which("java") is not None, "java not installed")
    require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
    return _EnvHarness(HARNESS_JAR, env)


@pytest.fixture(scope="module")
def java(s3):
    h = _harness(dict(os.environ, **s3.env))
    yield h
    h.close()


def _rows(ids):
    return pa.table({"id": list(ids), "name": [f"n{i}" for i in ids]}, schema=SCHEMA)


def test_java_reads_our_s3_table(java, s3, tmp_path):
    uri = s3.uri(f"java-read-{os.getpid()}")
    t = hdb.Table(uri)
    t.write_arrow(_rows(range(0, 50)))
    t.commit()
    t.add_index("id", "inverted")
    t.write_arrow(_rows(range(50, 80)))
    t.commit()
    assert t.delete("id < 10") == 10
    mloc = t.metadata_location
    assert mloc.startswith("s3://")
    want = [{"id": i, "name": f"n{i}"} for i in range(10, 80)]
    got = sorted(java.read(mloc, tmp=tmp_path), key=lambda r: r["id"])
    assert got == want
    # an earlier snapshot too (before the delete)
    first = [s.snapshot_id for s in StaticTable.from_metadata(
        mloc, properties=s3_fileio_properties(s3)).snapshots()][0]
    got0 = java.read(mloc, snapshot=first, tmp=tmp_path)
    assert sorted(r["id"] for r in got0) == list(range(50))
    # pyiceberg agrees on the current snapshot
    pt = StaticTable.from_metadata(mloc, properties=s3_fileio_properties(s3))
    assert sorted(pt.scan().to_arrow()["id"].to_pylist()) == list(range(10, 80))
    # the s3a:// spelling of the same metadata
    got_a = java.read(mloc.replace("s3://", "s3a://", 1), tmp=tmp_path)
    assert sorted(r["id"] for r in got_a) == list(range(10, 80))


def _serve(tmp_path, s3, *extra):
    require(CLI.exists(), f"{CLI} not built")
    port_file = tmp_path / "port"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HS_S3_"))}
    env.update({k: v for k, v in s3.env.items() if k.startswith("AWS_")},
               HYPERSTREAM_REST_TOKEN=TOKEN)
    wh = s3.uri(f"java-wh-{tmp_path.name}")
    proc = subprocess.Popen([str(CLI), "serve", "--rest", "--catalog", str(tmp_path / "r.db"),
                             "--warehouse", wh, "--port", "0", "--port-file", str(port_file),
                             *extra], env=env, stderr=subprocess.PIPE)
    for _ in range(400):
        if port_file.exists() and port_file.read_text().strip():
            break
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode())
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}", wh


def _stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()


def _schema_file(tmp_path):
    f = tmp_path / "schema.json"
    f.write_text(json.dumps({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "name", "required": False, "type": "string"}]}))
    return str(f)


def _jsonl(tmp_path, ids):
    f = tmp_path / f"rows-{ids[0]}.jsonl"
    f.write_text("".join(json.dumps({"id": i, "name": f"n{i}"}) + "\n" for i in ids))
    return str(f)


def _java_writes_then_all_read(java, s3, tmp_path, url, wh):
    spec = f"rest:{url}|{TOKEN}|jdb.t"
    java.call("create", spec, _schema_file(tmp_path), "--partition", "bucket(4, id)")
    java.call("append", spec, _jsonl(tmp_path, list(range(0, 20))))
    mloc = java.call("current-metadata", spec)[-1]
    assert mloc.startswith(wh + "/")
    # pyiceberg (its own keys) and we (through the catalog) read what Java wrote
    pc = RestCatalog("p", uri=url, token=TOKEN, **s3_fileio_properties(s3))
    assert sorted(pc.load_table("jdb.t").scan().to_arrow()["id"].to_pylist()) == list(range(20))
    ours = hdb.Catalog(url, token=TOKEN).load_table("jdb.t")
    assert sorted(ours.to_arrow()["id"].to_pylist()) == list(range(20))
    # we append; Java appends after us and reads everything from S3
    ours.write_arrow(_rows(range(20, 25)))
    ours.commit()
    java.call("append", spec, _jsonl(tmp_path, list(range(25, 30))))
    mloc = java.call("current-metadata", spec)[-1]
    assert sorted(r["id"] for r in java.read(mloc, tmp=tmp_path)) == list(range(30))
    assert sorted(pc.load_table("jdb.t").scan().to_arrow()["id"].to_pylist()) == list(range(30))


def test_java_writes_s3_through_our_rest_catalog(java, s3, tmp_path):
    proc, url, wh = _serve(tmp_path, s3)
    try:
        _java_writes_then_all_read(java, s3, tmp_path, url, wh)
    finally:
        _stop(proc)


def test_java_remote_signing(s3, tmp_path):
    """Java with no S3 keys: every S3 request it makes is signed by our server."""
    proc, url, wh = _serve(tmp_path, s3, "--remote-signing")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_EC2_METADATA_DISABLED="true", AWS_REGION="us-east-1")
    keyless = _harness(env)
    try:
        spec = f"rest:{url}|{TOKEN}|jdb.t"
        keyless.call("create", spec, _schema_file(tmp_path))
        keyless.call("append", spec, _jsonl(tmp_path, list(range(0, 7))))
        pc = RestCatalog("p", uri=url, token=TOKEN, **s3_fileio_properties(s3))
        t = pc.load_table("jdb.t")
        assert sorted(t.scan().to_arrow()["id"].to_pylist()) == list(range(7))
        assert t.metadata.location.startswith(wh + "/")
    finally:
        keyless.close()
        _stop(proc)

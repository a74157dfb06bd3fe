"""Storage settings a REST catalog vends (catalog/rest.c -> io/s3_scope.c): a
client with no S3 configuration at all (no AWS_* variables, no ~/.aws) reads
and writes an S3 table because the catalog's config endpoint names the S3
endpoint and its LoadTableResult "config" (or "storage-credentials") carries
the keys, as Polaris, Unity and Tabular vend them.

The catalog is `hyperstream serve` with an s3:// warehouse on a moto server
(it writes metadata with its own keys from its environment), behind a small
proxy (VendingProxy, below) that adds the FileIO properties to the answers the
way a vending catalog does.  The client runs in a subprocess with a scrubbed
environment.  Oracles: pyiceberg's RestCatalog (with its own S3 settings)
reads what our client wrote, and boto3 lists the objects; a table pyiceberg
wrote to S3 is registered and read by the client through the proxy.  Wrong
vended keys must fail (moto checks SigV4 signatures), so the keys that made
the other runs work are the vended ones.
"""
import http.client
import http.server
import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest
from conftest import REPO, _build_dir, require, require_module  # noqa: E402

require_module("pyiceberg")
require_module("hyperstreamdb")
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "s3"))
from s3server import S3Server  # noqa: E402

CLI = _build_dir() / "hyperstream"
TOKEN = "vend-t0ken"
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])


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


def _scrubbed_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "HS_S3_", "HS_TEST_"))}
    return dict(env, **extra)


@pytest.fixture()
def server(s3, tmp_path):
    require(CLI.exists(), f"{CLI} not built")
    port_file = tmp_path / "port"
    env = _scrubbed_env(HYPERSTREAM_REST_TOKEN=TOKEN, **{k: v for k, v in s3.env.items()
                                                         if k.startswith("AWS_")})
    wh = s3.uri(f"wh-{tmp_path.name}")
    proc = subprocess.Popen([str(CLI), "serve", "--rest", "--catalog", str(tmp_path / "r.db"),
                             "--warehouse", wh, "--port", "0", "--port-file", str(port_file)],
                            env=env, stderr=subprocess.PIPE)
    for _ in range(200):
        if port_file.exists() and port_file.read_text().strip():
            break
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode())
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port_file.read_text().strip()}"
    yield url, wh
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()


class VendingProxy(http.server.ThreadingHTTPServer):
    """Forwards to the catalog at upstream; adds FileIO properties:
    config_overrides to GET /v1/config's "overrides", table_config to every
    LoadTableResult's "config", storage_credentials to its
    "storage-credentials"."""

    daemon_threads = True

    def __init__(self, upstream, config_overrides=None, table_config=None,
                 storage_credentials=None, prefix=None):
        self.upstream = upstream.split("://", 1)[1]
        self.prefix = prefix          # announced in the config; stripped before forwarding
        self.paths = []               # the paths the client asked for
        self.config_overrides = config_overrides or {}
        self.table_config = table_config
        self.storage_credentials = storage_credentials
        self.vended = 0
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def rewrite(self, path, body):
        if path.split("?")[0] == "/v1/config":
            body.setdefault("overrides", {}).update(self.config_overrides)
            if self.prefix:
                body["overrides"]["prefix"] = self.prefix
        elif isinstance(body, dict) and "metadata-location" in body and "metadata" in body:
            if self.table_config is not None:
                body["config"] = dict(body.get("config") or {}, **self.table_config)
            if self.storage_credentials is not None:
                body["storage-credentials"] = self.storage_credentials
            self.vended += 1
        return body


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _forward(self):
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else None
        conn = http.client.HTTPConnection(self.server.upstream, timeout=60)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("host", "content-length", "connection")}
        path = self.path
        self.server.paths.append(path)
        pre = f"/v1/{self.server.prefix}/" if self.server.prefix else None
        if pre and path.startswith(pre):
            path = "/v1/" + path[len(pre):]
        conn.request(self.command, path, body=data, headers=headers)
        r = conn.getresponse()
        out = r.read()
        if out and r.headers.get("Content-Type", "").startswith("application/json"):
            out = json.dumps(self.server.rewrite(self.path, json.loads(out))).encode()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)
        conn.close()

    do_GET = do_POST = do_DELETE = do_HEAD = _forward


CLIENT = r"""
import json, sys
import pyarrow as pa
import hyperstreamdb as hdb
url, token, mode, arg, props = sys.argv[1:6]
cat = hdb.Catalog(url, token=token, properties=json.loads(props))
schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
if mode == "write":
    cat.create_namespace("db")
    t = cat.create_table("db.t", schema)
    t.write_arrow(pa.table({"id": [3, 1, 2], "s": ["c", "a", "b"]}, schema=schema))
    t.commit()
    t.add_index("id", "inverted")
    t.write_arrow(pa.table({"id": [4], "s": ["d"]}, schema=schema))
    t.commit()
    name = "db.t"
elif mode == "stream":
    t = cat.load_table(arg)
    with t.stream(refresh_ms=-1, flush_interval_ms=3_600_000) as s:
        s.write(pa.table({"id": [10, 11], "s": ["j", "k"]}, schema=schema))
        assert sorted(t.to_arrow()["id"].to_pylist())[-2:] == [10, 11]   # before the flush
    name = arg
elif mode == "register":
    cat.create_namespace("imp")
    t = cat.register_table("imp.t", arg)
    assert t.metadata_location == arg
    name = "imp.t"
else:
    name = arg
t = cat.load_table(name)
print(json.dumps({"ids": sorted(t.to_arrow()["id"].to_pylist()),
                  "hit": t.to_arrow(filter="id = 2")["s"].to_pylist(),
                  "location": t.metadata["location"]}))
"""


def _client(tmp_path, url, mode, arg="", expect_ok=True, properties=None):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    # no S3 settings at all: no AWS_* variables, an empty HOME (no ~/.aws),
    # no instance metadata service
    env = _scrubbed_env(HOME=str(home), AWS_EC2_METADATA_DISABLED="true",
                        HS_S3_MAX_ATTEMPTS="2")
    p = subprocess.run([sys.executable, "-c", CLIENT, url, TOKEN, mode, arg,
                        json.dumps(properties or {})], env=env,
                       capture_output=True, text=True, timeout=300)
    if expect_ok:
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])
    assert p.returncode != 0, p.stdout
    return p.stderr


def _pyiceberg_rest(url, s3):
    return RestCatalog("rest", uri=url, token=TOKEN, **{
        "s3.endpoint": s3.endpoint, "s3.access-key-id": s3.access_key,
        "s3.secret-access-key": s3.secret_key, "s3.region": "us-east-1"})


def _keys(s3):
    return {"s3.access-key-id": s3.access_key, "s3.secret-access-key": s3.secret_key}


def test_vended_endpoint_and_keys(server, s3, tmp_path):
    url, wh = server
    proxy = VendingProxy(url, config_overrides={"s3.endpoint": s3.endpoint,
                                                "s3.path-style-access": "true",
                                                "client.region": "us-east-1"},
                         table_config=_keys(s3))
    try:
        got = _client(tmp_path, proxy.url, "write")
        assert got["ids"] == [1, 2, 3, 4] and got["hit"] == ["b"]
        assert got["location"].startswith(wh + "/")
        assert proxy.vended > 0
        # oracles: pyiceberg with its own S3 settings, straight to the server;
        # boto3 sees data files, index sidecars and metadata in the bucket
        pt = _pyiceberg_rest(url, s3).load_table("db.t")
        assert sorted(pt.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
        assert "hyperstream.index-registry" in pt.properties
        import boto3
        b = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1",
                         aws_access_key_id=s3.access_key, aws_secret_access_key=s3.secret_key)
        prefix = got["location"].split(f"s3://{s3.bucket}/", 1)[1] + "/"
        keys = [o["Key"] for o in b.list_objects_v2(Bucket=s3.bucket, Prefix=prefix)["Contents"]]
        assert any(k.endswith(".parquet") for k in keys)
        assert any("/index/" in k for k in keys)
        assert any(k.endswith(".metadata.json") for k in keys)
    finally:
        proxy.shutdown()

    # the same client without the vended keys: moto refuses the signature
    # (so the keys above came from the catalog, not from anywhere else)
    wrong = VendingProxy(url, config_overrides={"s3.endpoint": s3.endpoint},
                         table_config={"s3.access-key-id": s3.access_key,
                                       "s3.secret-access-key": "not-the-secret"})
    try:
        err = _client(tmp_path, wrong.url, "read", "db.t", expect_ok=False)
        assert "StorageError" in err and ("403" in err or "Signature" in err), err
    finally:
        wrong.shutdown()


def test_storage_credentials_and_register(server, s3, tmp_path):
    """pyiceberg writes a table to S3 under its own SqlCatalog; our client
    (no S3 settings) registers it through the catalog, which vends everything
    as spec 1.7's "storage-credentials" ({prefix, config}), and reads it."""
    url, wh = server
    other = SqlCatalog("other", uri=f"sqlite:///{tmp_path / 'other.db'}",
                       warehouse=s3.uri(f"other-{tmp_path.name}"),
                       **{"s3.endpoint": s3.endpoint, "s3.access-key-id": s3.access_key,
                          "s3.secret-access-key": s3.secret_key, "s3.region": "us-east-1"})
    other.create_namespace("src")
    pt = other.create_table("src.t", schema=SCHEMA)
    pt.append(pa.table({"id": [5, 2, 9], "s": ["e", "b", "i"]}, schema=SCHEMA))
    mloc = other.load_table("src.t").metadata_location
    assert mloc.startswith("s3://")

    creds = [{"prefix": s3.uri(""), "config": dict(_keys(s3), **{
        "s3.endpoint": s3.endpoint, "s3.region": "us-east-1"})}]
    proxy = VendingProxy(url, storage_credentials=creds)
    try:
        got = _client(tmp_path, proxy.url, "register", mloc)
        assert got["ids"] == [2, 5, 9] and got["hit"] == ["b"]
    finally:
        proxy.shutdown()
    assert _pyiceberg_rest(url, s3).load_table("imp.t").metadata_location == mloc


def test_without_vending_the_client_has_no_s3(server, s3, tmp_path):
    """The control: the same client straight to the catalog (nothing vended)
    cannot read the table it could read through the vending proxy."""
    url, _ = server
    proxy = VendingProxy(url, config_overrides={"s3.endpoint": s3.endpoint},
                         table_config=_keys(s3))
    try:
        assert _client(tmp_path, proxy.url, "write")["ids"] == [1, 2, 3, 4]
    finally:
        proxy.shutdown()
    t0 = time.time()
    err = _client(tmp_path, url, "read", "db.t", expect_ok=False)
    # (here: "Could not resolve host: hs-test.s3.us-east-1.amazonaws.com")
    assert "StorageError" in err and "s3://" in err, err
    assert time.time() - t0 < 120


def test_stream_into_a_vended_s3_table(server, s3, tmp_path):
    """An append stream on a catalog's S3 table in a process with no S3
    settings: the log stays in the local cache (the empty HOME's), the flush
    commits through the REST catalog with the vended keys."""
    url, _ = server
    proxy = VendingProxy(url, config_overrides={"s3.endpoint": s3.endpoint},
                         table_config=_keys(s3))
    try:
        assert _client(tmp_path, proxy.url, "write")["ids"] == [1, 2, 3, 4]
        got = _client(tmp_path, proxy.url, "stream", "db.t")
        assert got["ids"] == [1, 2, 3, 4, 10, 11]
    finally:
        proxy.shutdown()
    assert sorted(_pyiceberg_rest(url, s3).load_table("db.t").scan().to_arrow()["id"]
                  .to_pylist()) == [1, 2, 3, 4, 10, 11]
    logs = list((tmp_path / "home" / ".cache" / "hyperstream" / "wal").glob("*"))
    assert len(logs) == 1 and (logs[0] / "wal-id").exists()


def test_config_prefix_is_honoured(server, s3, tmp_path):
    """The config endpoint's override "prefix" goes into every later path
    (/v1/{prefix}/namespaces/...), as the spec says."""
    url, _ = server
    proxy = VendingProxy(url, config_overrides={"s3.endpoint": s3.endpoint},
                         table_config=_keys(s3), prefix="cat-1")
    try:
        assert _client(tmp_path, proxy.url, "write")["ids"] == [1, 2, 3, 4]
        later = [p for p in proxy.paths if not p.startswith("/v1/config")]
        assert later and all(p.startswith("/v1/cat-1/") for p in later), later
    finally:
        proxy.shutdown()


def test_s3_settings_as_catalog_options(server, s3, tmp_path):
    """No vending: the client passes the FileIO keys as catalog options
    (pyiceberg's way), straight to the catalog."""
    url, _ = server
    props = dict(_keys(s3), **{"s3.endpoint": s3.endpoint, "s3.region": "us-east-1"})
    got = _client(tmp_path, url, "write", properties=props)
    assert got["ids"] == [1, 2, 3, 4] and got["hit"] == ["b"]


def test_no_vending_without_the_option(server, s3, tmp_path):
    """`hyperstream serve` without --vend-credentials hands out no keys: the
    LoadTableResult's config is empty, it has no storage-credentials, and the
    credentials endpoint answers an empty list (the spec's shape)."""
    url, wh = server
    pc = _pyiceberg_rest(url, s3)
    pc.create_namespace("nv")
    pc.create_table("nv.t", SCHEMA)

    def get(path):
        conn = http.client.HTTPConnection(url.split("://", 1)[1], timeout=30)
        conn.request("GET", path, headers={"Authorization": f"Bearer {TOKEN}"})
        r = conn.getresponse()
        body = r.read()
        conn.close()
        assert r.status == 200, body
        return json.loads(body)

    lt = get("/v1/namespaces/nv/tables/t")
    assert lt["config"] == {} and "storage-credentials" not in lt
    assert get("/v1/namespaces/nv/tables/t/credentials") == {"storage-credentials": []}

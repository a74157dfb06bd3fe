"""Vended credentials that expire, refreshed (catalog/rest.c's refresher over
io/s3_scope.c): `hyperstream serve --vend-credentials` hands its clients its
own temporary S3 keys with s3.session-token-expires-at-ms and serves
GET .../tables/{t}/credentials; a client with no S3 configuration at all keeps
one table handle for several key lifetimes and keeps working, fetching new keys
from the credentials endpoint before the old ones expire.

The keys are real temporary keys: moto's STS AssumeRole mints them (moto
checks the signature and that the session token belongs to the key), through
an AWS profile's credential_process that the server runs whenever its keys
come due (TTL seconds each).  Moto does not expire keys, so a small proxy in
front of it (ExpiryProxy) does: it knows each minted token's deadline and
answers S3's 403 ExpiredToken to any request carrying a token past it - both
the server's writes and the client's go through it.  Oracles: pyiceberg reads
the table straight from moto with long-lived keys; the proxy's log says which
tokens the client's requests used.
"""
import http.client
import http.server
import json
import os
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
require_module("boto3")
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "s3"))
from s3server import S3Server  # noqa: E402
from test_restcat_vended import VendingProxy  # noqa: E402

CLI = _build_dir() / "hyperstream"
TOKEN = "refresh-t0ken"
TTL = 6   # seconds each minted key lives

MINT = r"""
import datetime, json, os, sys, time, uuid
import boto3
sts = boto3.client("sts", endpoint_url=os.environ["VEND_STS_ENDPOINT"], region_name="us-east-1",
                   aws_access_key_id=os.environ["VEND_BASE_KEY"],
                   aws_secret_access_key=os.environ["VEND_BASE_SECRET"])
ttl = int(os.environ["VEND_TTL"])
c = sts.assume_role(RoleArn=os.environ["VEND_ROLE_ARN"], RoleSessionName=uuid.uuid4().hex[:16],
                    DurationSeconds=900)["Credentials"]
deadline = int(time.time()) + ttl
with open(os.environ["VEND_TOKENS"], "a") as f:
    f.write(json.dumps({"token": c["SessionToken"], "deadline": deadline}) + "\n")
print(json.dumps({"Version": 1, "AccessKeyId": c["AccessKeyId"],
                  "SecretAccessKey": c["SecretAccessKey"], "SessionToken": c["SessionToken"],
                  "Expiration": datetime.datetime.fromtimestamp(deadline, datetime.timezone.utc)
                  .strftime("%Y-%m-%dT%H:%M:%SZ")}))
"""


class ExpiryProxy(http.server.ThreadingHTTPServer):
    """Forwards S3 requests to upstream unchanged (the Host header too, so
    signatures still verify), except those whose x-amz-security-token is a
    minted token past its deadline: 403 ExpiredToken."""

    daemon_threads = True

    def __init__(self, upstream, tokens_file):
        self.upstream = upstream.split("://", 1)[1]
        self.tokens_file = tokens_file
        self.lock = threading.Lock()
        self.log = []          # (method, token, status)
        super().__init__(("127.0.0.1", 0), _ExpiryHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def deadline(self, token):
        try:
            with open(self.tokens_file) as f:
                for line in f:
                    e = json.loads(line)
                    if e["token"] == token:
                        return e["deadline"]
        except FileNotFoundError:
            pass
        return None


class _ExpiryHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _forward(self):
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        token = self.headers.get("x-amz-security-token")
        dl = self.server.deadline(token) if token else None
        if dl is not None and time.time() > dl:
            body = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>ExpiredToken</Code>"
                    b"<Message>The provided token has expired.</Message></Error>")
            with self.server.lock:
                self.server.log.append((self.command, token, 403))
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(0 if self.command == "HEAD" else len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            return
        conn = http.client.HTTPConnection(self.server.upstream, timeout=60)
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in self.headers.items():
            if k.lower() not in ("connection", "content-length"):
                conn.putheader(k, v)
        conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        r = conn.getresponse()
        out = r.read()
        with self.server.lock:
            self.server.log.append((self.command, token, r.status))
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(int(r.headers.get("Content-Length") or 0)
                                               if self.command == "HEAD" else len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)
        conn.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward


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


def _role(s3):
    import boto3
    iam = boto3.client("iam", endpoint_url=s3.endpoint, region_name="us-east-1",
                       aws_access_key_id=s3.access_key, aws_secret_access_key=s3.secret_key)
    name = f"vend-{os.getpid()}-{time.monotonic_ns()}"
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                 "Principal": {"AWS": "*"}}]}))["Role"]["Arn"]
    iam.put_role_policy(RoleName=name, PolicyName="all", PolicyDocument=json.dumps(
        {"Version": "2012-10-17",
         "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    return arn


def _scrubbed_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "HS_S3_", "HS_TEST_"))}
    return dict(env, **extra)


@pytest.fixture()
def vending(s3, tmp_path):
    """(catalog url, warehouse, proxy): the server vends keys minted for TTL s."""
    require(CLI.exists(), f"{CLI} not built")
    tokens = tmp_path / "tokens.jsonl"
    proxy = ExpiryProxy(s3.endpoint, str(tokens))
    mint = tmp_path / "mint.py"
    mint.write_text(MINT)
    cfg = tmp_path / "aws-config"
    cfg.write_text(f"[profile vend]\ncredential_process = {sys.executable} {mint}\n")
    port_file = tmp_path / "port"
    env = _scrubbed_env(AWS_CONFIG_FILE=str(cfg), AWS_PROFILE="vend",
                        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
                        AWS_ENDPOINT_URL=proxy.endpoint, AWS_REGION="us-east-1",
                        AWS_EC2_METADATA_DISABLED="true", HOME=str(tmp_path),
                        HYPERSTREAM_REST_TOKEN=TOKEN,
                        VEND_STS_ENDPOINT=s3.endpoint, VEND_BASE_KEY=s3.access_key,
                        VEND_BASE_SECRET=s3.secret_key, VEND_ROLE_ARN=_role(s3),
                        VEND_TTL=str(TTL), VEND_TOKENS=str(tokens))
    wh = s3.uri(f"wh-{tmp_path.name}")
    proc = subprocess.Popen([str(CLI), "serve", "--rest", "--catalog", str(tmp_path / "r.db"),
                             "--warehouse", wh, "--port", "0", "--port-file", str(port_file),
                             "--vend-credentials"], env=env, stderr=subprocess.PIPE)
    for _ in range(200):
        if port_file.exists() and port_file.read_text().strip():
            break
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode())
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port_file.read_text().strip()}", wh, proxy, tokens
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    proxy.shutdown()


CLIENT = r"""
import json, sys, time
import pyarrow as pa
import hyperstreamdb as hdb
url, token, rounds, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
cat = hdb.Catalog(url, token=token)
schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
cat.create_namespace("db")
t = cat.create_table("db.t", schema)
seen = []
for i in range(rounds):
    # the handle sat idle past (most of) its keys' life: the data file's
    # PUT needs new keys before the commit reaches the catalog
    time.sleep(pause)
    t.write_arrow(pa.table({"id": list(range(i * 100, i * 100 + 100)),
                            "s": [f"r{i}"] * 100}, schema=schema))
    t.commit()
    seen.append(t.count())
t2 = cat.load_table("db.t")
time.sleep(pause)
# a read of the files through a handle whose keys came due meanwhile
ids = sorted(t2.to_arrow()["id"].to_pylist())
print(json.dumps({"counts": seen, "ids": ids}))
"""


def _client(tmp_path, url, rounds, pause):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = _scrubbed_env(HOME=str(home), AWS_EC2_METADATA_DISABLED="true",
                        HS_S3_MAX_ATTEMPTS="2")
    p = subprocess.run([sys.executable, "-c", CLIENT, url, TOKEN, str(rounds), str(pause)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


class _Counter(VendingProxy):
    """Passes the catalog's answers through, counting LoadTableResults (a
    load's answer has "config"; a commit's has not); with hide_endpoint the
    catalog does not announce the credentials endpoint (older servers), so
    clients must load the table again instead."""

    def __init__(self, upstream, hide_endpoint):
        self.hide_endpoint = hide_endpoint
        self.loads = 0
        super().__init__(upstream)

    def rewrite(self, path, body):
        if path.split("?")[0] == "/v1/config" and self.hide_endpoint:
            body["endpoints"] = [e for e in body.get("endpoints", [])
                                 if not e.endswith("/credentials")]
        elif isinstance(body, dict) and "metadata" in body and "config" in body:
            self.loads += 1
        return body


@pytest.mark.parametrize("endpoint", [True, False], ids=["credentials", "reload"])
def test_vended_keys_refresh_across_lifetimes(vending, s3, tmp_path, endpoint):
    url, wh, proxy, tokens = vending
    rounds = 4
    # a pass-through in front of the catalog counts the client's requests
    counter = _Counter(url, hide_endpoint=not endpoint)
    try:
        got = _client(tmp_path, counter.url, rounds, pause=TTL * 0.8)
    except AssertionError:
        minted = {json.loads(x)["token"]: json.loads(x)["deadline"]
                  for x in tokens.read_text().splitlines()}
        print("minted", [(t[-8:], d) for t, d in minted.items()])
        print("log", [(m, t[-8:] if t else None, st) for m, t, st in proxy.log])
        raise
    assert got["counts"] == [100 * (i + 1) for i in range(rounds)]
    assert got["ids"] == list(range(100 * rounds))

    minted = [json.loads(x)["token"] for x in tokens.read_text().splitlines()]
    # the client's requests (and the server's) used several generations of keys,
    # and none went out with a token past its deadline: each request that was
    # refused (a refresh racing a deadline) was retried with new keys
    used = {tok for (_, tok, st) in proxy.log if tok and st < 300}
    print(f"{len(minted)} keys minted, {len(used)} used, {len(proxy.log)} S3 requests, "
          f"{sum(1 for x in proxy.log if x[2] == 403)} refused as expired")
    assert len(minted) >= 3 and len(used) >= 3, (len(minted), len(used))
    assert used <= set(minted)
    refused = [x for x in proxy.log if x[2] == 403]
    assert len(refused) <= len(minted)
    # the keys came from the refresher: the credentials endpoint when the
    # catalog announces it, else loads of the table (the client's script
    # loads it once itself, at the end)
    creds = [p for p in counter.paths if p.endswith("/credentials")]
    print(f"{len(creds)} credential requests, {counter.loads} loads")
    # the script's own loads: the stage-create, one before each append's
    # commit (after its data files are written), the one at the end
    own = rounds + 2
    if endpoint:
        assert len(creds) >= rounds - 1 and counter.loads == own, counter.paths
    else:
        assert not creds and counter.loads >= own + rounds - 1, counter.paths
    counter.shutdown()

    # oracle: pyiceberg, with long-lived keys straight to moto
    pc = RestCatalog("rest", uri=url, token=TOKEN, **{
        "s3.endpoint": s3.endpoint, "s3.access-key-id": s3.access_key,
        "s3.secret-access-key": s3.secret_key, "s3.region": "us-east-1"})
    pt = pc.load_table("db.t")
    arrow = pt.scan().to_arrow()
    assert sorted(arrow["id"].to_pylist()) == list(range(100 * rounds))
    assert sorted(set(arrow["s"].to_pylist())) == [f"r{i}" for i in range(rounds)]
    # what the server vends: keys with their expiry, at load and at /credentials
    lt = json.loads(_get(url, "/v1/namespaces/db/tables/t"))
    cfg = lt["config"]
    assert cfg["s3.session-token"] in [json.loads(x)["token"]
                                       for x in tokens.read_text().splitlines()]
    assert int(cfg["s3.session-token-expires-at-ms"]) > time.time() * 1000
    assert lt["storage-credentials"][0]["prefix"] == lt["metadata"]["location"]
    cr = json.loads(_get(url, "/v1/namespaces/db/tables/t/credentials"))
    assert cr["storage-credentials"][0]["config"]["s3.endpoint"] == proxy.endpoint
    assert "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials" in \
        json.loads(_get(url, "/v1/config"))["endpoints"]
    # the spec's errors: no such table, other methods
    status, body = _request(url, "GET", "/v1/namespaces/db/tables/nope/credentials")
    assert status == 404 and json.loads(body)["error"]["type"] == "NoSuchTableException"
    status, body = _request(url, "POST", "/v1/namespaces/db/tables/t/credentials")
    assert status == 405


def _request(url, method, path):
    conn = http.client.HTTPConnection(url.split("://", 1)[1], timeout=30)
    conn.request(method, path, body=b"{}" if method == "POST" else None,
                 headers={"Authorization": f"Bearer {TOKEN}"})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body


def _get(url, path):
    status, body = _request(url, "GET", path)
    assert status == 200, body
    return body

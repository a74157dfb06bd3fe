"""OAuth2 tokens that expire, against our REST catalog client (catalog/rest.c
through hdb.Catalog and the tables it opens).

An independent token issuer stands in front of `hyperstream serve`: a
scripted proxy that answers POST /v1/oauth/tokens for its own client
(client_credentials, tokens living EXPIRES seconds, or revoked on demand),
refuses any other request without a live token of its own with 401
NotAuthorizedException (the spec's shape), and forwards the rest to the
server with the server's token.  Checked:

* a session longer than several token lives (namespaces, create, appends,
  scans, listing) sees no 401: the client fetches a new token before the old
  one expires (min(5 min, half its life) ahead);
* a token revoked early (or without expires_in) gets one 401, a new token,
  and the request again: the operation succeeds;
* a fixed token= that is revoked, or a secret rotated away, is a clear
  "not authorized" error after at most one token request: no loop.
"""
import http.server
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from conftest import require_module  # noqa: E402

require_module("pyiceberg")
from test_restcat_pyiceberg import TOKEN, Server  # noqa: E402

hdb = require_module("hyperstreamdb")
pa = require_module("pyarrow")

CLIENT, SECRET = "app", "app-secret"


class _Issuer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, backend, expires=None):
        super().__init__(("127.0.0.1", 0), _IssuerHandler)
        self.backend = backend
        self.expires = expires          # seconds; None = no expires_in, never expires
        self.secret = SECRET
        self.lock = threading.Lock()
        self.live = {}                  # token -> expiry (monotonic) or None
        self.issued = 0
        self.refused = 0                # 401s for a dead or unknown token
        self.forwarded = 0
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def revoke_all(self):
        with self.lock:
            self.live.clear()


class _IssuerHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, status, body):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _handle(self):
        s = self.server
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        path = urllib.parse.urlsplit(self.path).path
        if path == "/v1/oauth/tokens":
            form = urllib.parse.parse_qs((body or b"").decode())
            if form.get("grant_type") != ["client_credentials"]:
                return self._send(400, {"error": "unsupported_grant_type"})
            if form.get("client_id") != [CLIENT] or form.get("client_secret") != [s.secret]:
                return self._send(401, {"error": "invalid_client"})
            with s.lock:
                s.issued += 1
                tok = f"tok-{s.issued}"
                s.live[tok] = time.monotonic() + s.expires if s.expires else None
            out = {"access_token": tok, "token_type": "bearer",
                   "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}
            if s.expires:
                out["expires_in"] = s.expires
            return self._send(200, out)
        auth = self.headers.get("Authorization") or ""
        tok = auth[7:] if auth.startswith("Bearer ") else None
        with s.lock:
            ok = tok in s.live and (s.live[tok] is None or time.monotonic() < s.live[tok])
            if not ok:
                s.refused += 1
        if not ok:
            return self._send(401, {"error": {"message": "token expired or unknown",
                                              "type": "NotAuthorizedException", "code": 401}})
        req = urllib.request.Request(s.backend + self.path, data=body, method=self.command)
        req.add_header("Authorization", f"Bearer {TOKEN}")
        if body is not None:
            req.add_header("Content-Type", self.headers.get("Content-Type", "application/json"))
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, data = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, data = e.code, e.read()
        with s.lock:
            s.forwarded += 1
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_DELETE = do_HEAD = _handle


@pytest.fixture()
def backend(tmp_path):
    s = Server(tmp_path)
    yield s
    s.stop()


def _issuer(backend, expires):
    iss = _Issuer(backend.url, expires)
    return iss


def _batch(lo, n):
    return pa.table({"id": pa.array(range(lo, lo + n), pa.int64()),
                     "name": pa.array([f"n{i}" for i in range(lo, lo + n)], pa.string())})


def test_token_refreshed_before_it_expires(backend):
    iss = _issuer(backend, expires=2)
    try:
        cat = hdb.Catalog(iss.url, credential=f"{CLIENT}:{SECRET}")
        cat.create_namespace("ns")
        t = cat.create_table("ns.events", _batch(0, 0).schema)
        rows = 0
        end = time.monotonic() + 7          # three and a half token lives
        while time.monotonic() < end:
            t.write_arrow(_batch(rows, 100))
            t.commit()
            rows += 100
            assert cat.list_tables("ns") == ["ns.events"]
            time.sleep(0.3)
        got = cat.load_table("ns.events").to_arrow()
        assert sorted(got.column("id").to_pylist()) == list(range(rows))
        # the catalog handle and the table's own connection each renewed
        # their token ahead of time: nothing was refused
        assert iss.refused == 0, (iss.refused, iss.issued)
        assert iss.issued >= 4, iss.issued
        cat.close()
    finally:
        iss.shutdown()


def test_revoked_token_gets_one_401_then_a_new_token(backend):
    iss = _issuer(backend, expires=None)    # no expires_in: only a 401 says so
    try:
        cat = hdb.Catalog(iss.url, credential=f"{CLIENT}:{SECRET}")
        cat.create_namespace("ns")
        t = cat.create_table("ns.t", _batch(0, 0).schema)
        t.write_arrow(_batch(0, 10))
        t.commit()
        issued = iss.issued
        iss.revoke_all()
        assert cat.list_tables("ns") == ["ns.t"]         # 401, new token, again
        assert (iss.refused, iss.issued) == (1, issued + 1)
        t.write_arrow(_batch(10, 10))
        t.commit()  # the table's connection too
        assert (iss.refused, iss.issued) == (2, issued + 2)
        assert sorted(cat.load_table("ns.t").to_arrow().column("id").to_pylist()) == \
            list(range(20))
        cat.close()
    finally:
        iss.shutdown()


def test_rotated_secret_is_a_clear_error_not_a_loop(backend):
    iss = _issuer(backend, expires=None)
    try:
        cat = hdb.Catalog(iss.url, credential=f"{CLIENT}:{SECRET}")
        cat.create_namespace("ns")
        iss.secret = "rotated"
        iss.revoke_all()
        issued, refused = iss.issued, iss.refused
        with pytest.raises(hdb.HyperStreamError, match="not authorized"):
            cat.list_tables("ns")
        assert iss.refused == refused + 1 and iss.issued == issued   # one try, no loop
        cat.close()
        # a fixed bearer token is never renewed: revoked -> the error at once
        iss.secret = SECRET
        tok_cat = hdb.Catalog(iss.url, credential=f"{CLIENT}:{SECRET}")
        tok = f"tok-{iss.issued}"
        fixed = hdb.Catalog(iss.url, token=tok)
        assert fixed.list_namespaces() == ["ns"]
        iss.revoke_all()
        issued, refused = iss.issued, iss.refused
        with pytest.raises(hdb.HyperStreamError, match="not authorized"):
            fixed.list_namespaces()
        assert (iss.issued, iss.refused) == (issued, refused + 1)
        fixed.close()
        tok_cat.close()
    finally:
        iss.shutdown()

"""List pagination of the Iceberg REST catalog (the spec's pageToken /
pageSize query parameters and next-page-token), both sides:

* our server (`hyperstream serve`) pages listNamespaces / listTables /
  listViews: walked with raw HTTP (page sizes, tokens, the null last token,
  everything in one response without the parameters, 400 for a bad pageSize),
  and pyiceberg's RestCatalog with rest-page-size follows the pages and gets
  what pyiceberg's SqlCatalog finds in the same SQLite file;
* our client (catalog/rest.c through hdb.Catalog) follows next-page-token to
  the last page: against our server with rest-page-size, and against an
  independent scripted server that pages by its own opaque tokens whatever
  pageSize says, and one that repeats a token (an error, not a loop).
"""
import http.server
import json
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest
from conftest import require_module  # noqa: E402

require_module("pyiceberg")
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from test_restcat_pyiceberg import TOKEN, Server  # noqa: E402

hdb = require_module("hyperstreamdb")

NAMESPACES = [f"ns{i:02d}" for i in range(11)]
TABLES = [f"t{i:02d}" for i in range(13)]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("paging"))
    sql = SqlCatalog("default", uri=f"sqlite:///{s.db}", warehouse=str(s.wh))
    import pyarrow as pa
    schema = pa.schema([pa.field("id", pa.int64())])
    for ns in NAMESPACES:
        sql.create_namespace(ns)
    for t in TABLES:
        sql.create_table(f"ns00.{t}", schema=schema)
    yield s
    s.stop()


def _walk(server, path, key, page_size):
    pages, token = [], ""
    while True:
        q = urllib.parse.urlencode({"pageToken": token, "pageSize": page_size})
        status, body = server.http("GET", f"{path}?{q}")
        assert status == 200, body
        pages.append(body[key])
        token = body["next-page-token"]
        if token is None:
            return pages
        assert isinstance(token, str) and token


def test_server_pages(server):
    sql = SqlCatalog("default", uri=f"sqlite:///{server.db}", warehouse=str(server.wh))
    want_ns = sorted(".".join(n) for n in sql.list_namespaces())
    want_t = sorted(t[-1] for t in sql.list_tables("ns00"))
    assert want_ns == NAMESPACES and want_t == TABLES

    pages = _walk(server, "/v1/namespaces", "namespaces", 4)
    assert [len(p) for p in pages] == [4, 4, 3]
    assert [".".join(n) for p in pages for n in p] == want_ns
    pages = _walk(server, "/v1/namespaces/ns00/tables", "identifiers", 5)
    assert [len(p) for p in pages] == [5, 5, 3]
    assert [i["name"] for p in pages for i in p] == want_t
    # a size equal to the count: one page, token null
    pages = _walk(server, "/v1/namespaces/ns00/tables", "identifiers", 13)
    assert [len(p) for p in pages] == [13]
    assert _walk(server, "/v1/namespaces/ns00/views", "identifiers", 2) == [[]]

    # without pageToken/pageSize: everything in one response, token null
    status, body = server.http("GET", "/v1/namespaces/ns00/tables")
    assert status == 200 and body["next-page-token"] is None
    assert [i["name"] for i in body["identifiers"]] == want_t
    for bad in ("0", "-3", "x", ""):
        status, body = server.http("GET", f"/v1/namespaces/ns00/tables?pageSize={bad}")
        assert status == 400 and body["error"]["type"] == "BadRequestException", bad

    pc = RestCatalog("rest", uri=server.url, token=TOKEN, **{"rest-page-size": "3"})
    assert sorted(".".join(n) for n in pc.list_namespaces()) == want_ns
    assert sorted(t[-1] for t in pc.list_tables("ns00")) == want_t
    assert pc.list_views("ns00") == []


def test_our_client_against_our_paging_server(server):
    for size in ("1", "4", "1000"):
        cat = hdb.Catalog(server.url, token=TOKEN, properties={"rest-page-size": size})
        assert cat.list_namespaces() == NAMESPACES
        assert cat.list_tables("ns00") == [f"ns00.{t}" for t in TABLES]
        assert cat.list_views("ns00") == []
    cat = hdb.Catalog(server.url, token=TOKEN)
    assert cat.list_tables("ns00") == [f"ns00.{t}" for t in TABLES]
    with pytest.raises(hdb.HyperStreamError, match="rest-page-size"):
        hdb.Catalog(server.url, token=TOKEN, properties={"rest-page-size": "0"})


class _Scripted(http.server.ThreadingHTTPServer):
    """An Iceberg REST server of its own: pages of 3 with tokens "p<offset>"
    (or a token that never changes, loop=True), pageSize ignored."""

    def __init__(self, loop=False):
        super().__init__(("127.0.0.1", 0), _ScriptedHandler)
        self.loop = loop
        self.requests = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ScriptedHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
        self.server.requests.append((u.path, q))
        if u.path == "/v1/config":
            return self._send({"defaults": {}, "overrides": {}})
        if u.path == "/v1/namespaces":
            key, items = "namespaces", [[n] for n in NAMESPACES]
        elif u.path == "/v1/namespaces/db/tables":
            key, items = "identifiers", [{"namespace": ["db"], "name": t} for t in TABLES]
        elif u.path == "/v1/namespaces/db/views":
            key, items = "identifiers", [{"namespace": ["db"], "name": v}
                                         for v in ("v_a", "v_b", "v_c", "v_d")]
        else:
            return self._send({"error": {"message": "no", "type": "NotFound", "code": 404}},
                              404)
        if "pageToken" not in q:   # the spec: no token, no pages
            return self._send({key: items, "next-page-token": None})
        tok = q["pageToken"][0]
        start = int(tok[1:]) if tok else 0
        nxt = start + 3
        token = "p0" if self.server.loop else (f"p{nxt}" if nxt < len(items) else None)
        self._send({key: items[start:nxt], "next-page-token": token})

    def _send(self, obj, status=200):
        b = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)


def test_our_client_follows_an_independent_servers_pages():
    srv = _Scripted()
    try:
        cat = hdb.Catalog(srv.url, properties={"rest-page-size": "2"})
        assert cat.list_namespaces() == NAMESPACES
        assert cat.list_tables("db") == [f"db.{t}" for t in TABLES]
        assert cat.list_views("db") == ["db.v_a", "db.v_b", "db.v_c", "db.v_d"]
        tables = [q for p, q in srv.requests if p == "/v1/namespaces/db/tables"]
        assert [q["pageToken"] for q in tables] == [[""], ["p3"], ["p6"], ["p9"], ["p12"]]
        assert all(q["pageSize"] == ["2"] for q in tables)
        # and pyiceberg, the oracle, reads the same lists from it
        pc = RestCatalog("scripted", uri=srv.url)
        assert sorted(".".join(n) for n in pc.list_namespaces()) == cat.list_namespaces()
        assert sorted(".".join(t) for t in pc.list_tables("db")) == cat.list_tables("db")
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_server_repeating_a_token_is_an_error():
    srv = _Scripted(loop=True)
    try:
        cat = hdb.Catalog(srv.url)
        with pytest.raises(hdb.HyperStreamError, match="twice"):
            cat.list_tables("db")
    finally:
        srv.shutdown()
        srv.server_close()

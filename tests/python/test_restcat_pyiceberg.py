"""`hyperstream serve` (the Iceberg REST catalog server) driven by pyiceberg's
RestCatalog, the independent client, and checked through pyiceberg's
SqlCatalog on the same SQLite file (the storage the server writes) and raw
HTTP for the spec's status codes and error shapes.

The server is started by the fixture (build/hyperstream serve --port 0) with a
bearer token, and stopped at the end.

* a scripted session: create namespace (with properties), create table,
  append pyarrow data twice, read back, schema evolution (add column), a
  row-level delete, list, rename, drop with purge, drop namespace;
* commits are compare-and-swap: a client holding stale metadata gets 409
  CommitFailedException through pyiceberg (CommitFailedException);
* HyperStreamDB indexes survive pyiceberg's commits through the server (the
  registry pointer is a table property the server keeps);
* auth (401 without or with a wrong token; OAuth2 client credentials) and
  bad requests (400 with the spec's error JSON, never a crash).
"""
import json
import logging
import os
import pathlib
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pyarrow as pa
import pytest
from conftest import _build_dir, require, require_module  # noqa: E402

require_module("pyiceberg")
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.exceptions import (  # noqa: E402
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.types import StringType  # noqa: E402

CLI = _build_dir() / "hyperstream"
TOKEN = "t0ken-for-tests"


class Server:
    def __init__(self, tmp: pathlib.Path, extra=()):
        require(CLI.exists(), f"{CLI} not built")
        self.db = tmp / "rest.db"
        self.wh = tmp / "wh"
        port_file = tmp / "port"
        secret = tmp / "secret"
        secret.write_text("s3cret\n")
        env = dict(os.environ, HYPERSTREAM_REST_TOKEN=TOKEN)
        self.proc = subprocess.Popen(
            [str(CLI), "serve", "--rest", "--catalog", str(self.db), "--warehouse", str(self.wh),
             "--port", "0", "--port-file", str(port_file), "--client-id", "tester",
             "--client-secret-file", str(secret), *extra],
            env=env, stderr=subprocess.PIPE)
        for _ in range(200):
            if port_file.exists() and port_file.read_text().strip():
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read().decode()}")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{port_file.read_text().strip()}"

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            assert self.proc.wait(timeout=20) == 0
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.stderr.close()

    def http(self, method, path, body=None, token=TOKEN, raw=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                            else None)
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                text = r.read()
                return r.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as e:
            text = e.read()
            return e.code, (json.loads(text) if text else None)


@pytest.fixture()
def server(tmp_path):
    s = Server(tmp_path)
    yield s
    s.stop()


def _rest(server, **kw):
    return RestCatalog("rest", uri=server.url, token=TOKEN, **kw)


def _sql(server):
    return SqlCatalog("default", uri=f"sqlite:///{server.db}", warehouse=str(server.wh))


SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])


def _rows(ids):
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "name": pa.array([f"n{i}" for i in ids], pa.string())}, schema=SCHEMA)


def test_pyiceberg_session(server):
    cat = _rest(server)
    cat.create_namespace("db", {"owner": "alice"})
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace("db")
    assert cat.list_namespaces() == [("db",)]
    assert cat.load_namespace_properties("db")["owner"] == "alice"
    assert cat.namespace_exists("db") and not cat.namespace_exists("nope")
    r = cat.update_namespace_properties("db", removals={"owner", "gone"}, updates={"x": "1"})
    assert r.removed == ["owner"] and r.missing == ["gone"] and r.updated == ["x"]

    t = cat.create_table("db.events", schema=SCHEMA)
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("db.events", schema=SCHEMA)
    t.append(_rows(range(0, 100)))
    t.append(_rows(range(100, 150)))
    got = cat.load_table("db.events").scan().to_arrow().sort_by("id")
    assert got.equals(_rows(range(150)))

    # the storage is a SqlCatalog file: pyiceberg's own SqlCatalog agrees
    sql = _sql(server)
    st = sql.load_table("db.events")
    assert st.metadata_location == cat.load_table("db.events").metadata_location
    assert st.scan().to_arrow().num_rows == 150

    # schema evolution and a row-level delete, read back through both
    with t.update_schema() as u:
        u.add_column("extra", StringType())
    t = cat.load_table("db.events")
    assert [f.name for f in t.schema().fields] == ["id", "name", "extra"]
    t.delete("id < 10")
    ids = sorted(cat.load_table("db.events").scan().to_arrow()["id"].to_pylist())
    assert ids == list(range(10, 150))
    assert sorted(sql.load_table("db.events").scan().to_arrow()["id"].to_pylist()) == ids
    # the metadata log names the previous files, newest last
    meta = cat.load_table("db.events").metadata
    assert len(meta.metadata_log) >= 4
    assert len(meta.snapshots) >= 3

    # rename, exists, drop with purge, drop namespace
    assert cat.list_tables("db") == [("db", "events")]
    cat.rename_table("db.events", "db.ev2")
    assert cat.table_exists("db.ev2") and not cat.table_exists("db.events")
    with pytest.raises(NoSuchTableError):
        cat.load_table("db.events")
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("db")
    loc = cat.load_table("db.ev2").location()
    cat.purge_table("db.ev2")
    assert not os.path.exists(loc.replace("file://", ""))
    assert cat.list_tables("db") == []
    assert cat.list_views("db") == []
    cat.drop_namespace("db")
    with pytest.raises(NoSuchNamespaceError):
        cat.drop_namespace("db")
    assert cat.list_namespaces() == []


def test_commit_is_compare_and_swap(server, caplog):
    cat = _rest(server)
    cat.create_namespace("db")
    t = cat.create_table("db.t", schema=SCHEMA)
    t.append(_rows([1]))
    stale = cat.load_table("db.t")
    t.append(_rows([2]))
    old_snap = stale.metadata.current_snapshot_id
    # stale's requirement (main at the old snapshot) fails on the server with
    # 409; pyiceberg 0.12 then reloads and retries its append
    with caplog.at_level(logging.WARNING):
        stale.append(_rows([9]))
    assert "concurrent update" in caplog.text
    assert sorted(cat.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2, 9]
    code, body = server.http("POST", "/v1/namespaces/db/tables/t", body={
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                          "snapshot-id": old_snap}],
        "updates": [{"action": "set-properties", "updates": {"never": "1"}}]})
    assert code == 409 and body["error"]["type"] == "CommitFailedException"
    assert "never" not in cat.load_table("db.t").properties
    # a property change only asserts the table uuid: it applies on the newer base
    with stale.transaction() as tx:
        tx.set_properties(k="v")
    t = cat.load_table("db.t")
    assert t.properties["k"] == "v"
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2, 9]
    # a staged create (create_table_transaction) commits with assert-create
    with cat.create_table_transaction("db.staged", schema=SCHEMA) as tx:
        tx.set_properties(p="1")
    st = cat.load_table("db.staged")
    assert st.properties["p"] == "1"
    st.append(_rows([5, 6]))
    assert cat.load_table("db.staged").scan().to_arrow().num_rows == 2


def test_our_indexes_survive_pyiceberg_commits(server):
    hdb = require_module("hyperstreamdb")
    cat = _rest(server)
    cat.create_namespace("db")
    t = cat.create_table("db.idx", schema=SCHEMA)
    t.append(_rows(range(1000)))
    # we index the table through the same SQLite catalog
    ours = hdb.Catalog(f"sqlite:///{server.db}", warehouse=str(server.wh))
    ht = ours.load_table("db.idx")
    ht.add_index("id", "inverted")
    reg = ht.properties["hyperstream.index-registry"]
    # pyiceberg appends through the REST server
    t = cat.load_table("db.idx")
    assert t.properties["hyperstream.index-registry"] == reg
    t.append(_rows(range(1000, 1100)))
    assert cat.load_table("db.idx").properties["hyperstream.index-registry"] == reg
    ht.refresh()
    assert ht.indexes()[0]["column"] == "id"
    got = ht.to_arrow(filter="id = 1050")
    assert got["id"].to_pylist() == [1050]
    assert ht.to_arrow(filter="id >= 990").num_rows == 110


def test_auth_and_errors(server):
    assert server.http("GET", "/v1/config", token=None)[0] == 401
    code, body = server.http("GET", "/v1/namespaces", token="wrong")
    assert code == 401 and body["error"]["type"] == "NotAuthorizedException"
    code, body = server.http("GET", "/v1/config")
    assert code == 200 and "GET /v1/{prefix}/namespaces" in body["endpoints"]

    # OAuth2 client credentials -> the token; pyiceberg's credential= flow
    form = b"grant_type=client_credentials&client_id=tester&client_secret=s3cret"
    code, body = server.http("POST", "/v1/oauth/tokens", raw=form, token=None)
    assert code == 200 and body["access_token"] == TOKEN
    bad = b"grant_type=client_credentials&client_id=tester&client_secret=nope"
    assert server.http("POST", "/v1/oauth/tokens", raw=bad, token=None)[0] == 401
    oc = RestCatalog("rest", uri=server.url, credential="tester:s3cret")
    oc.create_namespace("viaoauth")
    assert ("viaoauth",) in oc.list_namespaces()

    def err(code, typ, *a, **kw):
        c, body = server.http(*a, **kw)
        assert c == code, (c, body)
        assert body["error"]["code"] == code and body["error"]["type"] == typ
        assert body["error"]["message"]

    err(400, "BadRequestException", "POST", "/v1/namespaces", raw=b"{not json")
    err(400, "BadRequestException", "POST", "/v1/namespaces", raw=b"[1,2]")
    err(400, "BadRequestException", "POST", "/v1/namespaces", body={"namespace": "db"})
    err(400, "BadRequestException", "POST", "/v1/namespaces", body={"namespace": ["a.b"]})
    err(404, "NoSuchNamespaceException", "GET", "/v1/namespaces/nope")
    err(404, "NoSuchNamespaceException", "GET", "/v1/namespaces/nope/tables")
    err(404, "NoSuchTableException", "GET", "/v1/namespaces/viaoauth/tables/nope")
    err(404, "NoSuchRouteException", "GET", "/v2/whatever")
    err(405, "MethodNotAllowedException", "PUT", "/v1/namespaces")
    err(400, "BadRequestException", "POST", "/v1/namespaces/viaoauth/tables",
        body={"name": "t"})
    err(400, "BadRequestException", "POST", "/v1/namespaces/viaoauth/tables",
        body={"name": "t", "schema": {"type": "struct", "fields": [{"id": 1}]}})
    err(400, "BadRequestException", "POST", "/v1/namespaces/viaoauth/tables",
        body={"name": "t", "schema": {"type": "struct", "fields": []}, "properties": {"a": 1}})
    cat = _rest(server)
    cat.create_table("viaoauth.t", schema=SCHEMA)
    for updates in ([{"action": "add-snapshot"}], [{"action": "no-such"}], "x",
                    [{"action": "set-current-schema", "schema-id": 99}],
                    [{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                      "snapshot-id": 123}],
                    [{"action": "set-properties", "updates": {"a": []}}]):
        err(400, "BadRequestException", "POST", "/v1/namespaces/viaoauth/tables/t",
            body={"requirements": [], "updates": updates})
    err(409, "CommitFailedException", "POST", "/v1/namespaces/viaoauth/tables/t",
        body={"requirements": [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-"
                                "0000-000000000000"}], "updates": []})
    err(409, "CommitFailedException", "POST", "/v1/namespaces/viaoauth/tables/t",
        body={"requirements": [{"type": "assert-create"}], "updates": []})
    err(422, "UnprocessableEntityException", "POST", "/v1/namespaces/viaoauth/properties",
        body={"removals": ["a"], "updates": {"a": "1"}})
    # the table is untouched by all of that
    assert cat.load_table("viaoauth.t").metadata.last_column_id == 2
    # views: listed (none)
    code, body = server.http("GET", "/v1/namespaces/viaoauth/views")
    assert code == 200 and body["identifiers"] == []


def test_register_table(server, tmp_path):
    cat = _rest(server)
    cat.create_namespace("db")
    t = cat.create_table("db.orig", schema=SCHEMA)
    t.append(_rows([1, 2, 3]))
    mloc = cat.load_table("db.orig").metadata_location
    r = cat.register_table(("db", "copy"), mloc)
    # the catalog points at that very file (Java's registerTable), no copy
    assert r.metadata_location == mloc
    assert cat.load_table("db.copy").metadata_location == mloc
    assert sorted(r.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    with pytest.raises(TableAlreadyExistsError):
        cat.register_table(("db", "copy"), mloc)
    code, body = server.http("POST", "/v1/namespaces/db/register",
                             body={"name": "gone", "metadata-location": str(tmp_path / "x.json")})
    assert code == 400 and body["error"]["type"] == "BadRequestException"
    code, body = server.http("POST", "/v1/namespaces/nope/register",
                             body={"name": "n", "metadata-location": mloc})
    assert code == 404 and body["error"]["type"] == "NoSuchNamespaceException"
    # views: listed (none), an unknown one is the spec's NoSuchViewException
    code, body = server.http("GET", "/v1/namespaces/db/views")
    assert code == 200 and body["identifiers"] == []
    code, body = server.http("GET", "/v1/namespaces/db/views/v")
    assert code == 404 and body["error"]["type"] == "NoSuchViewException"
    assert body["error"]["code"] == 404 and body["error"]["message"]
    assert cat.list_views("db") == []


def test_our_client_registers_what_pyiceberg_wrote(server, tmp_path):
    """pyiceberg's SqlCatalog (another catalog, another file) writes a table;
    our client registers its metadata file in our server; pyiceberg's
    RestCatalog then reads through the registered name what it wrote, and we
    read the same rows."""
    hdb = require_module("hyperstreamdb")
    other = SqlCatalog("other", uri=f"sqlite:///{tmp_path / 'other.db'}",
                       warehouse=str(tmp_path / "otherwh"))
    other.create_namespace("src")
    pt = other.create_table("src.t", schema=SCHEMA)
    pt.append(_rows([7, 8, 9]))
    mloc = other.load_table("src.t").metadata_location

    cat = hdb.Catalog(server.url, token=TOKEN)
    cat.create_namespace("db")
    t = cat.register_table("db.imported", mloc)
    assert t.metadata_location == mloc
    assert sorted(t.to_arrow()["id"].to_pylist()) == [7, 8, 9]
    rest = _rest(server)
    assert rest.load_table("db.imported").metadata_location == mloc
    assert sorted(rest.load_table("db.imported").scan().to_arrow()["id"].to_pylist()) == \
        [7, 8, 9]
    with pytest.raises(hdb.CommitConflictError):
        cat.register_table("db.imported", mloc)
    # we commit on the registered table; pyiceberg sees it
    t.write_arrow(_rows([10]))
    t.commit()
    assert sorted(rest.load_table("db.imported").scan().to_arrow()["id"].to_pylist()) == \
        [7, 8, 9, 10]
    assert cat.list_views("db") == []
    with pytest.raises(hdb.NotFoundError):
        cat.list_views("nope")


def test_refuses_to_start_without_token(tmp_path):
    require(CLI.exists(), f"{CLI} not built")
    env = {k: v for k, v in os.environ.items() if k != "HYPERSTREAM_REST_TOKEN"}
    p = subprocess.run([str(CLI), "serve", "--catalog", str(tmp_path / "c.db"), "--port", "0"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "token" in p.stderr


# ---- our REST client (catalog/rest.c through hdb.Catalog) against our server,
# ---- with pyiceberg (RestCatalog and SqlCatalog) as the oracle


def test_our_rest_client_session(server):
    hdb = require_module("hyperstreamdb")
    cat = hdb.Catalog(server.url, token=TOKEN)
    assert cat.kind == "rest"
    cat.create_namespace("db", {"owner": "carol"})
    cat.create_namespace("db.sub")
    assert cat.list_namespaces() == ["db"]
    assert cat.list_namespaces("db") == ["db.sub"]
    assert cat.namespace_properties("db")["owner"] == "carol"
    t = cat.create_table("db.events", SCHEMA, partition_by="bucket(4, id)",
                         properties={"k": "v"})
    t.write_arrow(_rows(range(0, 60)))
    t.commit()
    t.write_arrow(_rows(range(60, 100)))
    t.commit()
    t.add_column("extra", "string")
    t.add_index("id", "inverted")

    pc = _rest(server)
    pt = pc.load_table("db.events")
    assert pt.metadata_location == t.metadata_location
    assert pt.metadata.table_uuid.hex == t.metadata["table-uuid"].replace("-", "")
    assert pt.properties["k"] == "v"
    assert [f.name for f in pt.schema().fields] == ["id", "name", "extra"]
    assert str(pt.spec()).count("bucket[4]") == 1
    got = pt.scan().to_arrow().sort_by("id")
    assert got.select(["id", "name"]).equals(_rows(range(100)))
    assert _sql(server).load_table("db.events").scan().to_arrow().num_rows == 100

    # pyiceberg commits in between: ours rebases (a 409, then a retry), and
    # our index registry property survives pyiceberg's commit
    pt.append(pa.table({"id": pa.array([500], pa.int64()), "name": ["x"],
                        "extra": ["e"]}))
    t.write_arrow(_rows([501]))
    t.commit()
    ids = sorted(pc.load_table("db.events").scan().to_arrow()["id"].to_pylist())
    assert ids == list(range(100)) + [500, 501]
    assert "hyperstream.index-registry" in pc.load_table("db.events").properties
    assert t.to_arrow(filter="id = 500")["extra"].to_pylist() == ["e"]
    # row-level delete by us, read by pyiceberg
    t.delete("id < 50")
    assert sorted(pc.load_table("db.events").scan().to_arrow()["id"].to_pylist()) == \
        list(range(50, 100)) + [500, 501]

    # concurrent handles: both commits land (the loser reloads and rebases)
    t2 = cat.load_table("db.events")
    t.write_arrow(_rows([600]))
    t.commit()
    t2.write_arrow(_rows([601]))
    t2.commit()
    assert {600, 601} <= set(pc.load_table("db.events").scan().to_arrow()["id"].to_pylist())

    assert cat.list_tables("db") == ["db.events"]
    assert cat.table_exists("db.events") and not cat.table_exists("db.nope")
    with pytest.raises(hdb.NotFoundError):
        cat.load_table("db.nope")
    with pytest.raises(hdb.CommitConflictError):
        cat.create_table("db.events", SCHEMA)
    with pytest.raises(hdb.NotFoundError):
        cat.create_table("nope.t", SCHEMA)
    cat.rename_table("db.events", "db.renamed")
    assert pc.list_tables("db") == [("db", "renamed")]
    with pytest.raises(hdb.InvalidArgumentError, match="not empty"):
        cat.drop_namespace("db")
    cat.drop_table("db.renamed", purge=True)
    cat.drop_namespace("db.sub")
    cat.drop_namespace("db")
    assert pc.list_namespaces() == []


def test_our_rest_client_auth(server):
    hdb = require_module("hyperstreamdb")
    with pytest.raises(hdb.InvalidArgumentError, match="401"):
        hdb.Catalog(server.url, token="wrong")
    with pytest.raises(hdb.InvalidArgumentError, match="401"):
        hdb.Catalog(server.url)
    cat = hdb.Catalog(server.url, credential="tester:s3cret")   # OAuth2 client credentials
    cat.create_namespace("o")
    assert _rest(server).list_namespaces() == [("o",)]
    with pytest.raises(hdb.InvalidArgumentError, match="invalid_client"):
        hdb.Catalog(server.url, credential="tester:bad")
    with pytest.raises(hdb.StorageError):
        hdb.Catalog("http://127.0.0.1:9", token=TOKEN)   # nothing listens there


# ---- Java's RESTCatalog (the Java interop harness, tests/interop/java) against
# ---- our server, pyiceberg and our client reading what it wrote


def test_java_restcatalog_session(server, tmp_path):
    import shutil
    from test_iceberg_java import HARNESS_JAR, JavaHarness
    hdb = require_module("hyperstreamdb")
    require(shutil.which("java") is not None, "java not installed")
    require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
    java = JavaHarness(HARNESS_JAR)
    try:
        spec = f"rest:{server.url}|{TOKEN}|jdb.events"
        schema = tmp_path / "schema.json"
        schema.write_text(json.dumps({"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": False, "type": "long"},
            {"id": 2, "name": "name", "required": False, "type": "string"}]}))
        java.call("create", spec, str(schema), "--partition", "bucket(4, id)")

        def rows(ids):
            f = tmp_path / f"rows-{ids[0]}.jsonl"
            f.write_text("".join(json.dumps({"id": i, "name": f"n{i}"}) + "\n" for i in ids))
            return str(f)

        java.call("append", spec, rows(list(range(0, 10))))
        pc = _rest(server)
        assert sorted(pc.load_table("jdb.events").scan().to_arrow()["id"].to_pylist()) == \
            list(range(10))
        # we append and index through our REST client; Java commits after us
        ours = hdb.Catalog(server.url, token=TOKEN)
        t = ours.load_table("jdb.events")
        t.write_arrow(_rows(range(10, 15)))
        t.commit()
        t.add_index("id", "inverted")
        java.call("append", spec, rows(list(range(15, 20))))
        java.call("delete", spec, "id", "3")
        mloc = java.call("current-metadata", spec)[-1]
        assert mloc == pc.load_table("jdb.events").metadata_location
        want = sorted(set(range(20)) - {3})
        assert sorted(r["id"] for r in java.read(mloc, tmp=tmp_path)) == want
        assert sorted(pc.load_table("jdb.events").scan().to_arrow()["id"].to_pylist()) == want
        t.refresh()
        assert "hyperstream.index-registry" in t.properties
        assert sorted(t.to_arrow()["id"].to_pylist()) == want
        assert t.to_arrow(filter="id = 17")["name"].to_pylist() == ["n17"]
        assert t.to_arrow(filter="id = 3").num_rows == 0
    finally:
        java.close()


def test_sql_session_resolves_through_rest(server):
    hdb = require_module("hyperstreamdb")
    cat = _rest(server)
    cat.create_namespace("db")
    t = cat.create_table("db.nums", schema=SCHEMA)
    t.append(_rows(list(range(100))))
    for catalog in (hdb.Catalog(server.url, token=TOKEN), f"sqlite:///{server.db}"):
        s = hdb.Session(catalog=catalog)
        r = s.sql("SELECT count(*) AS n, sum(id) AS s FROM db.nums WHERE id >= 10").to_arrow()
        assert r.to_pylist() == [{"n": 90, "s": sum(range(10, 100))}]
        s.close()


def test_cli_register_and_views(server, tmp_path):
    """`hyperstream table register|views` with --catalog (our REST server)
    and --sql; pyiceberg reads the registered tables."""
    other = SqlCatalog("other", uri=f"sqlite:///{tmp_path / 'other.db'}",
                       warehouse=str(tmp_path / "otherwh"))
    other.create_namespace("src")
    other.create_table("src.t", schema=SCHEMA).append(_rows([1, 2]))
    mloc = other.load_table("src.t").metadata_location
    rest = _rest(server)
    rest.create_namespace("db")
    cat = ["--catalog", server.url, "--catalog-option", f"token={TOKEN}"]

    def cli(*args):
        return subprocess.run([str(CLI), "table", *args], capture_output=True, text=True,
                              timeout=60)
    p = cli("register", "db.imp", mloc, *cat)
    assert p.returncode == 0, p.stderr
    assert rest.load_table("db.imp").metadata_location == mloc
    assert sorted(rest.load_table("db.imp").scan().to_arrow()["id"].to_pylist()) == [1, 2]
    p = cli("register", "db.imp", mloc, *cat)
    assert p.returncode == 1 and "exists" in p.stderr
    p = cli("scan", "db.imp", *cat)
    assert p.returncode == 0 and sorted(json.loads(x)["id"] for x in p.stdout.split()) == [1, 2]
    p = cli("views", "db", *cat)
    assert p.returncode == 0 and json.loads(p.stdout) == []
    # a SQL catalog file (pyiceberg's layout) takes a registration too
    p = cli("register", "src.again", mloc, "--sql", str(tmp_path / "other.db"),
            "--catalog-name", "other")
    assert p.returncode == 0, p.stderr
    assert other.load_table("src.again").metadata_location == mloc
    p = cli("register", "db.x", mloc)
    assert p.returncode == 2 and "--sql" in p.stderr

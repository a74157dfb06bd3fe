"""Our REST catalog client (catalog/rest.c, through hdb.Catalog) against Apache
Iceberg's own REST catalog fixture server (org.apache.iceberg.rest.RESTCatalogServer
from the iceberg-open-api 1.11.0 test-fixtures jar, a JdbcCatalog on SQLite behind
Java's RESTCatalogAdapter), so the client is never tested only against our server.
pyiceberg's RestCatalog is the oracle for what the fixture then holds.

scripts/rest-fixture.sh fetches the fixture's class path from Maven Central into
build-java/rest-fixture/lib (the test runs it when the jars are missing); the
fixture is started on a free port and stopped by the test.  It announces
namespace-separator "%2E" in its config overrides, which the client must honour.
"""
import json
import shutil
import socket
import subprocess
import time
import urllib.request

import pyarrow as pa
import pytest
from conftest import REPO, require, require_module  # noqa: E402

require_module("pyiceberg")
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402

hdb = require_module("hyperstreamdb")
LIB = REPO / "build-java" / "rest-fixture" / "lib"


@pytest.fixture(scope="module")
def fixture_url(tmp_path_factory):
    require(shutil.which("java") is not None, "java not installed")
    if not LIB.exists():
        subprocess.run([str(REPO / "scripts" / "rest-fixture.sh")], check=True, timeout=900)
    require(LIB.exists() and any(LIB.glob("iceberg-open-api-*")),
            "Iceberg REST fixture not fetched (scripts/rest-fixture.sh)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    wh = tmp_path_factory.mktemp("fixture-wh")
    env = {"PATH": "/usr/bin:/bin", "CATALOG_REST_PORT": str(port),
           "CATALOG_WAREHOUSE": str(wh)}
    log = open(wh / "fixture.log", "w")
    proc = subprocess.Popen(["java", "-cp", f"{LIB}/*",
                             "org.apache.iceberg.rest.RESTCatalogServer"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url + "/v1/config", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError((wh / "fixture.log").read_text())
                time.sleep(0.1)
        else:
            raise RuntimeError("the REST fixture did not start in 60 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])


def _rows(ids):
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "name": pa.array([f"n{i}" for i in ids], pa.string())}, schema=SCHEMA)


def test_our_client_against_iceberg_fixture(fixture_url):
    cat = hdb.Catalog(fixture_url)
    cat.create_namespace("db", {"owner": "dora"})
    cat.create_namespace("db.sub")
    assert cat.list_namespaces() == ["db"]
    assert cat.list_namespaces("db") == ["db.sub"]
    assert cat.namespace_properties("db")["owner"] == "dora"
    with pytest.raises(hdb.CommitConflictError):
        cat.create_namespace("db")

    t = cat.create_table("db.events", SCHEMA, partition_by="bucket(4, id)",
                         properties={"k": "v"})
    t.write_arrow(_rows(list(range(0, 50))))
    t.commit()
    t.add_column("extra", "string")
    t.add_index("id", "inverted")
    t.delete("id < 5")

    pc = RestCatalog("fixture", uri=fixture_url)
    pt = pc.load_table("db.events")
    assert pt.metadata_location == t.metadata_location
    assert pt.metadata.table_uuid.hex == t.metadata["table-uuid"].replace("-", "")
    assert pt.properties["k"] == "v"
    assert [f.name for f in pt.schema().fields] == ["id", "name", "extra"]
    assert sorted(pt.scan().to_arrow()["id"].to_pylist()) == list(range(5, 50))

    # pyiceberg commits; ours rebases on it; our registry property survives
    pt.append(pa.table({"id": pa.array([100], pa.int64()), "name": ["x"], "extra": ["e"]}))
    t.write_arrow(_rows([101]))
    t.commit()
    assert sorted(pc.load_table("db.events").scan().to_arrow()["id"].to_pylist()) == \
        list(range(5, 50)) + [100, 101]
    t.refresh()
    assert "hyperstream.index-registry" in t.properties
    assert t.to_arrow(filter="id = 100")["extra"].to_pylist() == ["e"]

    # nested namespace tables, exists, rename, drops
    cat.create_table("db.sub.t2", SCHEMA)
    assert cat.list_tables("db.sub") == ["db.sub.t2"]
    assert pc.list_tables(("db", "sub")) == [("db", "sub", "t2")]
    assert cat.table_exists("db.events") and not cat.table_exists("db.nope")
    with pytest.raises(hdb.NotFoundError):
        cat.load_table("db.nope")
    with pytest.raises(hdb.CommitConflictError):
        cat.create_table("db.events", SCHEMA)
    cat.rename_table("db.events", "db.renamed")
    assert pc.list_tables("db") == [("db", "renamed")]
    cat.drop_table("db.renamed", purge=True)
    cat.drop_table("db.sub.t2")
    cat.drop_namespace("db.sub")
    cat.drop_namespace("db")
    assert pc.list_namespaces() == []


def _post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")


def test_register_and_views_against_iceberg_fixture(fixture_url, tmp_path):
    """registerTable and listViews of our client against Java's own server:
    a table pyiceberg's SqlCatalog wrote elsewhere is registered by us, and
    pyiceberg's RestCatalog reads it through the fixture; a view created by a
    raw CreateViewRequest is listed by us and by pyiceberg."""
    from pyiceberg.catalog.sql import SqlCatalog
    other = SqlCatalog("other", uri=f"sqlite:///{tmp_path / 'other.db'}",
                       warehouse=str(tmp_path / "otherwh"))
    other.create_namespace("src")
    src = other.create_table("src.t", schema=SCHEMA)
    src.append(_rows([3, 1, 2]))
    mloc = other.load_table("src.t").metadata_location

    cat = hdb.Catalog(fixture_url)
    cat.create_namespace("reg")
    t = cat.register_table("reg.imported", mloc)
    assert t.metadata_location == mloc
    assert sorted(t.to_arrow()["id"].to_pylist()) == [1, 2, 3]
    pc = RestCatalog("fixture", uri=fixture_url)
    assert pc.load_table("reg.imported").metadata_location == mloc
    with pytest.raises(hdb.CommitConflictError):
        cat.register_table("reg.imported", mloc)
    # our commit on the registered table; pyiceberg reads it
    t.write_arrow(_rows([4]))
    t.commit()
    assert sorted(pc.load_table("reg.imported").scan().to_arrow()["id"].to_pylist()) == \
        [1, 2, 3, 4]
    # Java's catalogs refuse overwrite (406 UnsupportedOperationException):
    # a clear error, the table untouched (ours does overwrite, test_restcat.c)
    with pytest.raises(hdb.UnsupportedError, match="overwrite"):
        cat.register_table("reg.imported", mloc, overwrite=True)
    assert pc.load_table("reg.imported").metadata_location == t.metadata_location

    assert cat.list_views("reg") == []
    _post(f"{fixture_url}/v1/namespaces/reg/views", {
        "name": "v1",
        "schema": {"type": "struct", "schema-id": 0,
                   "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]},
        "view-version": {"version-id": 1, "timestamp-ms": int(time.time() * 1000),
                         "schema-id": 0, "summary": {"engine-name": "test"},
                         "default-namespace": ["reg"],
                         "representations": [{"type": "sql", "sql": "SELECT id FROM imported",
                                              "dialect": "spark"}]},
        "properties": {}})
    assert cat.list_views("reg") == ["reg.v1"]
    assert [tuple(v) for v in pc.list_views("reg")] == [("reg", "v1")]
    assert "reg.v1" not in cat.list_tables("reg")
    cat.drop_table("reg.imported")

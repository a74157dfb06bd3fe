"""hyperstreamdb.Catalog and hyperstreamdb.Table on catalog tables, against
pyiceberg (the independent oracle):

* pyiceberg's SqlCatalog creates namespaces and tables and appends rows; our
  Catalog("sqlite:///...") lists the same namespaces, properties and tables,
  and load_table reads the rows pyiceberg wrote.  hdb.Table(location) on that
  table's directory (no version-hint.text) and on its metadata file opens it
  read-only at pyiceberg's current metadata.
* our Catalog creates namespaces and tables and commits rows; pyiceberg's
  SqlCatalog lists and loads them and reads our rows; a commit pyiceberg makes
  afterwards is seen by our table after refresh(), and ours by pyiceberg.
* drop_table / drop_namespace / rename_table as pyiceberg then sees them.
* a directory of path tables as a catalog: namespaces are directories.

In the storage matrix (HS_TEST_STORAGE=s3) the warehouses are on the S3
server (SQLite files stay local); pyiceberg gets the server's endpoint and
keys, and file checks go through pyarrow's S3 client (conftest.as_path).
"""
import os

import pyarrow as pa
import pytest
from conftest import (ON_S3, as_path, local_only, require_module,  # noqa: E402
                      s3_fileio_properties, storage_server)

pyiceberg = require_module("pyiceberg")
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402

import hyperstreamdb as hdb  # noqa: E402


def _pyi(tmp_path, wh):
    if ON_S3:
        return SqlCatalog("default", uri=f"sqlite:///{tmp_path / 'cat.db'}", warehouse=str(wh),
                          **s3_fileio_properties(storage_server()))
    return SqlCatalog("default", uri=f"sqlite:///{tmp_path / 'cat.db'}", warehouse=f"file://{wh}")


def _ours(tmp_path, wh):
    return hdb.Catalog(f"sqlite:///{tmp_path / 'cat.db'}", warehouse=str(wh))


def _rows(n, off=0):
    return pa.table({"id": pa.array(range(off, off + n), pa.int64()),
                     "name": pa.array([f"n{i}" for i in range(off, off + n)], pa.string())})


def _sorted(t, cols=("id", "name")):
    return t.select(list(cols)).sort_by("id").to_pylist()


def test_we_read_what_pyiceberg_sqlcatalog_wrote(tmp_path, table_dir):
    wh = table_dir / "wh"
    if not ON_S3:
        wh.mkdir()
    pc = _pyi(tmp_path, wh)
    pc.create_namespace("db", {"owner": "alice"})
    pc.create_namespace("db2")
    pt = pc.create_table("db.events", schema=_rows(0).schema)
    pt.append(_rows(50))
    pt.append(_rows(25, 50))
    expect = _sorted(pt.scan().to_arrow())

    cat = _ours(tmp_path, wh)
    assert cat.list_namespaces() == ["db", "db2"]
    assert cat.namespace_properties("db")["owner"] == "alice"
    assert cat.list_tables("db") == ["db.events"]
    assert cat.table_exists("db.events") and not cat.table_exists("db.nope")
    t = cat.load_table("db.events")
    assert not t.read_only
    assert t.metadata_location == pc.load_table("db.events").metadata_location
    assert _sorted(t.to_arrow()) == expect

    # hdb.Table on the location: the directory has no version-hint.text
    loc = pt.location()
    assert loc.startswith("s3://" if ON_S3 else "file://")
    assert not (as_path(loc) / "metadata" / "version-hint.text").exists()
    bare = loc if ON_S3 else loc[7:]   # a plain path (local)
    for where in (loc, bare, pc.load_table("db.events").metadata_location):
        ro = hdb.Table(where)
        assert ro.read_only and ro.exists
        assert _sorted(ro.to_arrow()) == expect
        assert ro.metadata_location.endswith(
            os.path.basename(pc.load_table("db.events").metadata_location))
        ro.write_arrow(_rows(1, 999))
        with pytest.raises(hdb.UnsupportedError, match="read-only"):
            ro.commit()
        ro.discard()
    # an older metadata file opens at that version
    log = pc.load_table("db.events").metadata.metadata_log
    assert hdb.Table(log[-1].metadata_file).to_arrow().num_rows == 50
    assert hdb.Table.open(loc).read_only

    # a newer commit by pyiceberg: the directory's newest file follows it
    ro = hdb.Table(loc)
    pt.append(_rows(5, 75))
    assert ro.to_arrow().num_rows == 75
    assert ro.refresh().to_arrow().num_rows == 80
    assert t.refresh().to_arrow().num_rows == 80


def test_pyiceberg_reads_what_our_catalog_wrote(tmp_path, table_dir):
    wh = table_dir / "wh"
    cat = _ours(tmp_path, wh)
    cat.create_namespace("db", {"owner": "bob"})
    cat.create_namespace("db.sub")
    t = cat.create_table("db.items", _rows(0).schema, properties={"k": "v"})
    t.write_arrow(_rows(40))
    t.commit()
    t.write_arrow(_rows(10, 40))
    t.commit()

    pc = _pyi(tmp_path, wh)
    assert ("db",) in pc.list_namespaces()
    assert pc.load_namespace_properties("db")["owner"] == "bob"
    assert pc.list_tables("db") == [("db", "items")]
    pt = pc.load_table("db.items")
    assert pt.metadata_location == t.metadata_location
    assert pt.properties["k"] == "v"
    assert _sorted(pt.scan().to_arrow()) == _sorted(_rows(50))

    # pyiceberg commits on top of ours; we see it after refresh, and the reverse
    pt.append(_rows(5, 50))
    assert t.to_arrow().num_rows == 50
    t.refresh()
    assert _sorted(t.to_arrow()) == _sorted(_rows(55))
    t.write_arrow(_rows(5, 55))
    t.commit()   # compare-and-swap on pyiceberg's metadata location
    assert _sorted(pc.load_table("db.items").scan().to_arrow()) == _sorted(_rows(60))

    # a second handle loses the race cleanly and retries (appends rebase)
    t2 = cat.load_table("db.items")
    t.write_arrow(_rows(1, 60))
    t.commit()
    t2.write_arrow(_rows(1, 61))
    t2.commit()
    assert pc.load_table("db.items").scan().to_arrow().num_rows == 62

    # namespace properties
    cat.update_namespace_properties("db", {"x": "1"}, ["owner"])
    props = pc.load_namespace_properties("db")
    assert props.get("x") == "1" and "owner" not in props
    assert cat.list_namespaces("db") == ["db.sub"]

    # rename and drop, as pyiceberg sees them
    cat.rename_table("db.items", "db.things")
    assert pc.list_tables("db") == [("db", "things")]
    with pytest.raises(hdb.InvalidArgumentError):
        cat.drop_namespace("db")
    with pytest.raises(hdb.CommitConflictError):
        cat.create_namespace("db")
    cat.drop_table("db.things")
    assert pc.list_tables("db") == []
    with pytest.raises(hdb.NotFoundError):
        cat.load_table("db.things")
    cat.drop_namespace("db.sub")
    cat.drop_namespace("db")
    assert ("db",) not in pc.list_namespaces()
    with pytest.raises(hdb.NotFoundError):
        cat.drop_namespace("db")


def test_catalog_errors(tmp_path):
    with pytest.raises(hdb.InvalidArgumentError, match="SQLite file"):
        hdb.Catalog("sqlite:///:memory:")
    with pytest.raises(hdb.UnsupportedError, match="scheme"):
        hdb.Catalog("ftp://x/y")
    cat = _ours(tmp_path, tmp_path / "wh")
    with pytest.raises(ValueError, match="identifier"):
        cat.load_table("db..x")
    with pytest.raises(TypeError):
        cat.load_table(42)
    with pytest.raises(hdb.NotFoundError):
        cat.load_table("nope.t")
    with pytest.raises(hdb.NotFoundError):
        cat.namespace_properties("nope")
    cat.close()
    with pytest.raises(ValueError, match="closed"):
        cat.list_namespaces()


def test_path_catalog(tmp_path):
    # a directory of path tables as a catalog is local: hdb.Catalog refuses
    # s3:// (its namespaces are directories, which object stores lack; path
    # tables on S3 open by their URI, test_pkg_table)
    local_only("a path catalog is a local directory")
    wh = tmp_path / "wh"
    cat = hdb.Catalog(wh)
    assert cat.kind == "path"
    cat.create_namespace("db")
    t = cat.create_table(("db", "t1"), _rows(0).schema)
    t.write_arrow(_rows(7))
    t.commit()
    assert (wh / "db" / "t1" / "metadata" / "version-hint.text").exists()
    assert cat.list_namespaces() == ["db"]
    assert cat.list_tables("db") == ["db.t1"]
    assert cat.namespace_properties("db") == {}
    # the same table opened by path, and by pyiceberg's StaticTable
    from pyiceberg.table import StaticTable
    st = StaticTable.from_metadata(str(wh / "db" / "t1" / "metadata" / "v2.metadata.json"))
    assert _sorted(st.scan().to_arrow()) == _sorted(_rows(7))
    assert _sorted(hdb.Table(wh / "db" / "t1").to_arrow()) == _sorted(_rows(7))
    assert not hdb.Table(wh / "db" / "t1").read_only
    with pytest.raises(hdb.InvalidArgumentError, match="not empty"):
        cat.drop_namespace("db")
    with pytest.raises(hdb.UnsupportedError):
        cat.rename_table("db.t1", "db.t2")
    cat.drop_table("db.t1", purge=True)
    assert cat.list_tables("db") == []
    cat.drop_namespace("db")
    assert cat.list_namespaces() == []

"""Our catalogs against pyiceberg, the independent oracle.

* pyiceberg's SqlCatalog opens the SQLite file our SQL catalog wrote and loads
  our tables (namespaces, properties, the current metadata location), and it
  can commit on top of them: we then load its commit.
* We open the SQLite file pyiceberg's SqlCatalog wrote, load its tables (with
  data appended by pyiceberg), commit to them with compare-and-swap, and lose
  the race correctly when pyiceberg committed first.
* pyiceberg's StaticTable reads our path table, both from the metadata file
  and from the table directory through version-hint.text.

The library is driven through ctypes over the cat_* functions (exported by
libhyperstream.so).  Metadata documents are hand-written minimal v2 JSON, so
this test checks the catalog layer alone.
"""
import ctypes
import json
import os
import pathlib

import pytest

from conftest import LIB_PATH, require, require_module

pyiceberg = require_module("pyiceberg")
pa = require_module("pyarrow")


HS_CONFLICT = 5
HS_NOT_FOUND = 6


class HsError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


class HsBuf(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("len", ctypes.c_size_t), ("cap", ctypes.c_size_t)]


class CatError(Exception):
    def __init__(self, code, msg):
        self.code = code
        super().__init__(f"status {code}: {msg}")


@pytest.fixture(scope="module")
def lib():
    require(LIB_PATH.exists(), f"{LIB_PATH} not built (set HS_BUILD)")
    lib = ctypes.CDLL(str(LIB_PATH))
    require(hasattr(lib, "cat_sql_open"), "library built without the catalog module")
    p, s, e = ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(HsError)
    pp = ctypes.POINTER(ctypes.c_void_p)
    sigs = {
        "cat_sql_open": [s, s, s, pp, e],
        "cat_path_open": [s, pp, e],
        "cat_namespace_create": [p, s, p, p, ctypes.c_size_t, e],
        "cat_default_location": [p, s, pp, e],
        "cat_create_json": [p, s, s, ctypes.c_size_t, pp, e],
        "cat_load_json": [p, s, ctypes.POINTER(HsBuf), pp, e],
        "cat_commit_json": [p, s, s, s, ctypes.c_size_t, pp, e],
    }
    for name, args in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int
    lib.cat_free.argtypes = [p]
    lib.cat_free.restype = None
    lib.hs_free.argtypes = [p]
    lib.hs_free.restype = None
    lib.hs_buf_free.argtypes = [ctypes.POINTER(HsBuf)]
    lib.hs_buf_free.restype = None
    return lib


class Catalog:
    """A cat_catalog handle."""

    def __init__(self, lib, handle):
        self.lib, self.h = lib, handle

    @classmethod
    def sql(cls, lib, db, name="default", warehouse=None):
        h, err = ctypes.c_void_p(), HsError()
        _check(lib.cat_sql_open(str(db).encode(), name.encode(),
                                warehouse.encode() if warehouse else None,
                                ctypes.byref(h), ctypes.byref(err)), err)
        return cls(lib, h)

    @classmethod
    def path(cls, lib, root):
        h, err = ctypes.c_void_p(), HsError()
        _check(lib.cat_path_open(str(root).encode(), ctypes.byref(h), ctypes.byref(err)), err)
        return cls(lib, h)

    def close(self):
        self.lib.cat_free(self.h)

    def _take_str(self, p):
        v = ctypes.string_at(p.value).decode()
        self.lib.hs_free(p)
        return v

    def create_namespace(self, ns):
        err = HsError()
        _check(self.lib.cat_namespace_create(self.h, ns.encode(), None, None, 0,
                                             ctypes.byref(err)), err)

    def default_location(self, ident):
        out, err = ctypes.c_void_p(), HsError()
        _check(self.lib.cat_default_location(self.h, ident.encode(), ctypes.byref(out),
                                             ctypes.byref(err)), err)
        return self._take_str(out)

    def create(self, ident, meta):
        text = json.dumps(meta).encode()
        out, err = ctypes.c_void_p(), HsError()
        _check(self.lib.cat_create_json(self.h, ident.encode(), text, len(text),
                                        ctypes.byref(out), ctypes.byref(err)), err)
        return self._take_str(out)

    def load(self, ident):
        buf, out, err = HsBuf(), ctypes.c_void_p(), HsError()
        rc = self.lib.cat_load_json(self.h, ident.encode(), ctypes.byref(buf), ctypes.byref(out),
                                    ctypes.byref(err))
        try:
            _check(rc, err)
            return json.loads(ctypes.string_at(buf.data, buf.len)), self._take_str(out)
        finally:
            self.lib.hs_buf_free(ctypes.byref(buf))

    def commit(self, ident, base, meta):
        text = json.dumps(meta).encode()
        out, err = ctypes.c_void_p(), HsError()
        _check(self.lib.cat_commit_json(self.h, ident.encode(), base.encode(), text, len(text),
                                        ctypes.byref(out), ctypes.byref(err)), err)
        return self._take_str(out)


def _check(rc, err):
    if rc != 0:
        raise CatError(rc, err.msg.decode("utf-8", "replace"))


def minimal_metadata(location, props):
    return {
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": location,
        "last-sequence-number": 0,
        "last-updated-ms": 1700000000000,
        "last-column-id": 2,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": False, "type": "long"},
            {"id": 2, "name": "name", "required": False, "type": "string"}]}],
        "current-schema-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "default-spec-id": 0,
        "last-partition-id": 999,
        "properties": props,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "default-sort-order-id": 0,
        "current-snapshot-id": -1,
        "snapshots": [],
        "snapshot-log": [],
        "metadata-log": [],
        "refs": {},
    }


def sql_catalog(db, warehouse):
    from pyiceberg.catalog.sql import SqlCatalog
    return SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=warehouse)


def test_pyiceberg_sqlcatalog_reads_our_catalog(lib, tmp_path):
    db = tmp_path / "cat.db"
    wh = str(tmp_path / "wh")
    ours = Catalog.sql(lib, db, warehouse=wh)
    try:
        ours.create_namespace("db")
        loc = ours.default_location("db.t")
        assert loc == f"{wh}/db/t"
        m0 = ours.create("db.t", minimal_metadata(loc, {"n": "1"}))
        assert os.path.basename(m0).startswith("00000-")
        meta, base = ours.load("db.t")
        meta["properties"]["n"] = "2"
        meta["metadata-log"] = [{"timestamp-ms": meta["last-updated-ms"], "metadata-file": base}]
        m1 = ours.commit("db.t", base, meta)
        assert os.path.basename(m1).startswith("00001-")

        cat = sql_catalog(db, wh)
        assert ("db",) in cat.list_namespaces()
        assert cat.load_namespace_properties("db") == {"exists": "true"}
        assert cat.list_tables("db") == [("db", "t")]
        t = cat.load_table("db.t")
        assert t.metadata_location == m1
        assert t.properties["n"] == "2"
        assert [f.name for f in t.schema().fields] == ["id", "name"]
        assert t.scan().to_arrow().num_rows == 0

        # pyiceberg commits on top of our table (its CAS on our row), then writes data.
        with t.transaction() as tx:
            tx.set_properties(n="3")
        t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                           "name": pa.array(["a", "b", "c"])}))
        meta, cur = ours.load("db.t")
        assert cur == cat.load_table("db.t").metadata_location
        assert meta["properties"]["n"] == "3"
        assert meta["current-snapshot-id"] == t.current_snapshot().snapshot_id

        # A commit from our stale base loses the race.
        with pytest.raises(CatError) as ei:
            ours.commit("db.t", m1, minimal_metadata(loc, {"n": "99"}))
        assert ei.value.code == HS_CONFLICT
        assert cat.load_table("db.t").properties["n"] == "3"
    finally:
        ours.close()


def test_we_read_pyiceberg_sqlcatalog(lib, tmp_path):
    db = tmp_path / "py.db"
    wh = "file://" + str(tmp_path / "wh")
    cat = sql_catalog(db, wh)
    cat.create_namespace("ns")
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "s": pa.array(["x", "y"])})
    t = cat.create_table("ns.events", schema=data.schema)
    t.append(data)
    t = cat.load_table("ns.events")

    ours = Catalog.sql(lib, db)
    try:
        meta, loc = ours.load("ns.events")
        assert loc == t.metadata_location
        assert meta["current-snapshot-id"] == t.current_snapshot().snapshot_id
        assert meta["location"] == t.location()

        # Our commit (a property) through compare-and-swap; pyiceberg sees it.
        meta["properties"]["owner"] = "hyperstream"
        new_loc = ours.commit("ns.events", loc, meta)
        assert os.path.basename(new_loc).startswith("00002-")
        t2 = cat.load_table("ns.events")
        assert t2.metadata_location == new_loc
        assert t2.properties["owner"] == "hyperstream"
        assert t2.scan().to_arrow().num_rows == 2

        # pyiceberg commits again; our commit from the old base is refused.
        t2.append(data)
        with pytest.raises(CatError) as ei:
            ours.commit("ns.events", new_loc, meta)
        assert ei.value.code == HS_CONFLICT
        with pytest.raises(CatError) as ei:
            ours.load("ns.missing")
        assert ei.value.code == HS_NOT_FOUND
    finally:
        ours.close()


def test_static_table_reads_our_path_table(lib, tmp_path):
    from pyiceberg.table import StaticTable
    ours = Catalog.path(lib, tmp_path)
    try:
        tdir = str(tmp_path / "pt")
        m1 = ours.create("pt", minimal_metadata(tdir, {"n": "1"}))
        meta, base = ours.load("pt")
        meta["properties"]["n"] = "2"
        m2 = ours.commit("pt", base, meta)
        assert m2.endswith("/pt/metadata/v2.metadata.json") and m1.endswith("v1.metadata.json")
        hint = pathlib.Path(tdir, "metadata", "version-hint.text").read_bytes()
        assert hint == b"2"

        st = StaticTable.from_metadata(m2)
        assert st.properties["n"] == "2"
        assert [f.name for f in st.schema().fields] == ["id", "name"]
        # From the directory: pyiceberg follows version-hint.text.
        sd = StaticTable.from_metadata(tdir)
        assert sd.metadata_location.endswith("v2.metadata.json")
        assert sd.properties["n"] == "2"
    finally:
        ours.close()

"""Lists of the public C API as Arrow streams (hs_*_stream), called through
ctypes on the public libhyperstream.so and imported into pyarrow.

Oracles: pyiceberg (Table.inspect.snapshots(), .history(), .refs() over the
same metadata file; SqlCatalog.list_tables over the same SQLite catalog),
pyarrow's Parquet metadata (record counts of the files an explain report
lists), the sidecar files on disk (index bytes); and each stream must carry
exactly the content of the JSON form of the same call.
"""
import ctypes
import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import _build_dir, _ArrowArrayStream, _HsErrorStruct, require, require_module

pyiceberg = require_module("pyiceberg")
from pyiceberg.table import StaticTable  # noqa: E402

PUBLIC = _build_dir() / "libhyperstream.so"
require(PUBLIC.exists(), f"{PUBLIC} not built")

vp, cp = ctypes.c_void_p, ctypes.c_char_p


class _ScanOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("use_snapshot_id", ctypes.c_int), ("snapshot_id", ctypes.c_int64),
                ("use_as_of", ctypes.c_int), ("as_of_ms", ctypes.c_int64),
                ("ref", cp), ("columns", vp), ("n_columns", ctypes.c_int), ("filter", cp),
                ("include_row_lineage", ctypes.c_int), ("batch_size", ctypes.c_int64)]


@pytest.fixture(scope="module")
def lib():
    L = ctypes.CDLL(str(PUBLIC))
    E = ctypes.POINTER(_HsErrorStruct)
    S = ctypes.POINTER(_ArrowArrayStream)
    sigs = {
        "hs_table_open_metadata": [cp, ctypes.POINTER(vp), E],
        "hs_table_close": [vp],
        "hs_catalog_open_sql": [cp, cp, cp, ctypes.POINTER(vp), E],
        "hs_catalog_open_path": [cp, ctypes.POINTER(vp), E],
        "hs_table_open": [vp, cp, ctypes.POINTER(vp), E],
        "hs_catalog_close": [vp],
        "hs_string_free": [vp],
        "hs_table_snapshots": [vp, ctypes.POINTER(vp), E],
        "hs_table_history": [vp, ctypes.POINTER(vp), E],
        "hs_table_refs": [vp, ctypes.POINTER(vp), E],
        "hs_table_list_indexes": [vp, ctypes.POINTER(vp), E],
        "hs_catalog_list_tables": [vp, cp, ctypes.POINTER(vp), E],
        "hs_table_explain": [vp, ctypes.POINTER(_ScanOptions), ctypes.POINTER(vp), E],
        "hs_table_snapshots_stream": [vp, S, E],
        "hs_table_history_stream": [vp, S, E],
        "hs_table_refs_stream": [vp, S, E],
        "hs_table_list_indexes_stream": [vp, S, E],
        "hs_catalog_list_tables_stream": [vp, cp, S, E],
        "hs_table_explain_stream": [vp, ctypes.POINTER(_ScanOptions), S, E],
    }
    for name, args in sigs.items():
        f = getattr(L, name)
        f.argtypes = args
        f.restype = None if name in ("hs_table_close", "hs_catalog_close", "hs_string_free") \
            else ctypes.c_int
    return L


def _check(rc, err):
    assert rc == 0, err.msg.decode()


def _json(lib, fn, *args):
    out, err = vp(), _HsErrorStruct()
    _check(getattr(lib, fn)(*args, ctypes.byref(out), ctypes.byref(err)), err)
    text = ctypes.string_at(out.value).decode()
    lib.hs_string_free(out)
    return json.loads(text)


def _stream(lib, fn, *args):
    s, err = _ArrowArrayStream(), _HsErrorStruct()
    _check(getattr(lib, fn)(*args, ctypes.byref(s), ctypes.byref(err)), err)
    return pa.RecordBatchReader._import_from_c(ctypes.addressof(s)).read_all()


def _metadata_path(table_dir):
    hint = (table_dir / "metadata" / "version-hint.text").read_text().strip()
    return table_dir / "metadata" / f"v{hint}.metadata.json"


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory):
    import hyperstreamdb as hdb
    d = tmp_path_factory.mktemp("lists") / "t"
    t = hdb.Table(d)
    for i in range(3):
        t.write_arrow(pa.table({"id": pa.array(range(i * 100, i * 100 + 100), pa.int64()),
                                "cat": pa.array([f"c{j % 4}" for j in range(100)])}))
        t.commit()
    t.delete("id < 10")
    t.create_tag("first", t.snapshots()[0].snapshot_id)
    t.add_index("cat", "inverted")
    t.close()
    return d


@pytest.fixture()
def handle(lib, table_dir):
    h, err = vp(), _HsErrorStruct()
    _check(lib.hs_table_open_metadata(str(_metadata_path(table_dir)).encode(), ctypes.byref(h),
                                      ctypes.byref(err)), err)
    yield h
    lib.hs_table_close(h)


def test_snapshots_stream_matches_pyiceberg_and_json(lib, table_dir, handle):
    got = _stream(lib, "hs_table_snapshots_stream", handle)
    want = StaticTable.from_metadata(str(_metadata_path(table_dir))).inspect.snapshots()
    assert got.num_rows == want.num_rows >= 4          # 3 appends and a delete at least
    names = want.schema.names
    assert got.schema.names[:len(names)] == names
    for n in names:
        assert got.schema.field(n).type == want.schema.field(n).type, n
    assert got.select(names).to_pylist() == want.to_pylist()
    js = _json(lib, "hs_table_snapshots", handle)
    assert [s["snapshot-id"] for s in js] == got.column("snapshot_id").to_pylist()
    assert [s.get("sequence-number") for s in js] == got.column("sequence_number").to_pylist()
    assert [{k: v for k, v in s["summary"].items() if k != "operation"} for s in js] == \
        [dict(m) for m in got.column("summary").to_pylist()]


def test_history_and_refs_streams_match_pyiceberg(lib, table_dir, handle):
    st = StaticTable.from_metadata(str(_metadata_path(table_dir)))
    got = _stream(lib, "hs_table_history_stream", handle)
    want = st.inspect.history()
    assert got.schema.names == want.schema.names
    assert got.to_pylist() == want.to_pylist()
    assert got.to_pylist() == [
        dict(h, made_current_at=got.column("made_current_at")[i].as_py())
        for i, h in enumerate(_json(lib, "hs_table_history", handle))]

    got = _stream(lib, "hs_table_refs_stream", handle)
    want = st.inspect.refs()
    assert got.schema.names == want.schema.names
    key = lambda r: r["name"]  # noqa: E731
    g = sorted(got.to_pylist(), key=key)
    w = sorted(want.to_pylist(), key=key)
    assert [dict(r, type=r["type"].upper()) for r in g] == w
    assert {r["name"] for r in g} == {"main", "first"}
    js = _json(lib, "hs_table_refs", handle)
    assert {r["name"]: r["snapshot_id"] for r in g} == {k: v["snapshot-id"] for k, v in js.items()}


def test_indexes_stream(lib, table_dir, handle):
    got = _stream(lib, "hs_table_list_indexes_stream", handle).to_pylist()
    js = _json(lib, "hs_table_list_indexes", handle)
    assert len(got) == len(js) == 1
    for g, j in zip(got, js):
        assert json.loads(g.pop("params")) == j.pop("params")
        assert g == j
    # oracle: the sidecar files of the table
    sidecars = [p for p in (table_dir / "index").glob("*") if p.is_file()]
    assert got[0]["column"] == "cat" and got[0]["kind"] == "inverted"
    assert got[0]["files_indexed"] == got[0]["files_live"] == len(sidecars) == 3
    assert got[0]["bytes"] == sum(p.stat().st_size for p in sidecars)


def test_explain_stream(lib, table_dir, handle):
    o = _ScanOptions(filter=b"cat = 'c1' AND id >= 0")
    got = _stream(lib, "hs_table_explain_stream", handle, ctypes.byref(o))
    js = _json(lib, "hs_table_explain", handle, ctypes.byref(o))["files"]
    assert got.to_pylist() == js
    # oracle: the record counts of the files, from their Parquet footers
    for row in got.to_pylist():
        path = row["file"].removeprefix("file://")
        assert row["record_count"] == pq.read_metadata(path).num_rows
    assert got.schema.field("indexes_used").type == pa.list_(pa.string())
    assert any(r["indexes_used"] for r in got.to_pylist())


def test_list_tables_stream_matches_pyiceberg(lib, tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog
    db = tmp_path / "cat.db"
    cat = SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=f"file://{tmp_path}")
    schema = pa.schema([pa.field("x", pa.int64())])
    cat.create_namespace("a")
    cat.create_namespace("b")
    for ident in ("a.t1", "a.t2", "b.t3"):
        cat.create_table(ident, schema)
    h, err = vp(), _HsErrorStruct()
    _check(lib.hs_catalog_open_sql(str(db).encode(), b"default", str(tmp_path).encode(),
                                   ctypes.byref(h), ctypes.byref(err)), err)
    try:
        for ns in ("a", "b"):
            got = _stream(lib, "hs_catalog_list_tables_stream", h, ns.encode())
            want = sorted(cat.list_tables(ns))
            assert sorted(zip(got.column("namespace").to_pylist(),
                              got.column("name").to_pylist())) == \
                [(".".join(w[:-1]), w[-1]) for w in want]
            assert got.column("identifier").to_pylist() == \
                _json(lib, "hs_catalog_list_tables", h, ns.encode())
    finally:
        lib.hs_catalog_close(h)


def test_list_tables_gives_identifiers_that_open(lib, tmp_path):
    """Every kind lists full identifiers that hs_table_open accepts on the
    same catalog: "ns.name" (SQL) and "dir/name" (path catalogs, whose
    namespaces are directories) - oracles: pyiceberg's SqlCatalog and the
    directories pyarrow-written tables sit in."""
    import hyperstreamdb as hdb
    from pyiceberg.catalog.sql import SqlCatalog
    schema = pa.schema([pa.field("x", pa.int64())])
    wh = tmp_path / "wh"
    for rel in ("top", "a/t1", "a/t2", "a/b/t3"):
        t = hdb.Table.create(wh / rel, schema)
        t.write_arrow(pa.table({"x": [1]}, schema=schema))
        t.commit()
        t.close()
    (wh / "a" / "not-a-table").mkdir()
    h, err = vp(), _HsErrorStruct()
    _check(lib.hs_catalog_open_path(str(wh).encode(), ctypes.byref(h), ctypes.byref(err)), err)
    try:
        want = {None: ["top"], "a": ["a/t1", "a/t2"], "a/": ["a/t1", "a/t2"], "a/b": ["a/b/t3"]}
        for ns, ids in want.items():
            got = _json(lib, "hs_catalog_list_tables", h, ns.encode() if ns else None)
            assert got == ids
            for ident in got:   # the oracle: the table directories on disk
                assert (wh / ident / "metadata" / "version-hint.text").exists()
                t, e2 = vp(), _HsErrorStruct()
                _check(lib.hs_table_open(h, ident.encode(), ctypes.byref(t), ctypes.byref(e2)),
                       e2)
                lib.hs_table_close(t)
            st = _stream(lib, "hs_catalog_list_tables_stream", h, ns.encode() if ns else None)
            assert st.column("identifier").to_pylist() == ids
            assert st.column("name").to_pylist() == [i.rsplit("/", 1)[-1] for i in ids]
            assert st.column("namespace").to_pylist() == \
                [i.rsplit("/", 1)[0] if "/" in i else None for i in ids]
    finally:
        lib.hs_catalog_close(h)
    # Python's Catalog speaks dotted identifiers for every kind
    assert hdb.Catalog(str(wh)).list_tables("a.b") == ["a.b.t3"]
    assert hdb.Catalog(str(wh)).list_tables("a") == ["a.t1", "a.t2"]

    db = tmp_path / "cat.db"
    pc = SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=f"file://{tmp_path}")
    pc.create_namespace("n")
    pc.create_namespace("n.m")
    pc.create_table("n.m.t", schema)
    pc.create_table("n.u", schema)
    _check(lib.hs_catalog_open_sql(str(db).encode(), b"default", str(tmp_path).encode(),
                                   ctypes.byref(h), ctypes.byref(err)), err)
    try:
        for ns in ("n", "n.m"):
            got = _json(lib, "hs_catalog_list_tables", h, ns.encode())
            assert got == sorted(".".join(i) for i in pc.list_tables(ns))
            for ident in got:
                t, e2 = vp(), _HsErrorStruct()
                _check(lib.hs_table_open(h, ident.encode(), ctypes.byref(t), ctypes.byref(e2)),
                       e2)
                lib.hs_table_close(t)
    finally:
        lib.hs_catalog_close(h)


def test_empty_lists_have_a_schema(lib, tmp_path):
    import hyperstreamdb as hdb
    t = hdb.Table.create(tmp_path / "e", pa.schema([pa.field("id", pa.int64())]))
    t.close()
    h, err = vp(), _HsErrorStruct()
    _check(lib.hs_table_open_metadata(str(_metadata_path(tmp_path / "e")).encode(),
                                      ctypes.byref(h), ctypes.byref(err)), err)
    try:
        for fn in ("hs_table_snapshots_stream", "hs_table_history_stream",
                   "hs_table_list_indexes_stream"):
            got = _stream(lib, fn, h)
            assert got.num_rows == 0 and got.num_columns >= 4, fn
    finally:
        lib.hs_table_close(h)

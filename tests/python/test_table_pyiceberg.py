"""Iceberg tables written by HyperStreamDB read by pyiceberg, and tables
written by pyiceberg read by HyperStreamDB.

pyiceberg is the independent oracle: for every table our C API writes
(ctypes on $HS_BUILD/libhyperstream.so) pyiceberg reads it through
StaticTable.from_metadata and through its SqlCatalog on our SQLite file, and
the rows must equal what we wrote and what our own scan returns.  In the
other direction pyiceberg writes tables (appends, overwrites, deletes, schema
evolution, partitioned) and our scan must equal pyiceberg's scan.  The CLI
(`hyperstream table ...`) is exercised end to end too.

Skips when the library or pyiceberg is absent.
"""
import ctypes
import datetime as dt
import decimal
import glob
import json
import os
import pathlib
import re
import subprocess
import uuid
import warnings

import pyarrow as pa
import pytest
from conftest import as_path, require, require_module  # noqa: E402

pyiceberg = require_module("pyiceberg")
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.table import StaticTable  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
BUILD = pathlib.Path(os.environ.get("HS_BUILD", "build"))
if not BUILD.is_absolute():
    BUILD = REPO / BUILD
LIB = BUILD / "libhyperstream_testing.so"
CLI = BUILD / "hyperstream"

require(LIB.exists(), "libhyperstream.so not built")


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


class _Stream(ctypes.Structure):
    _fields_ = [("get_schema", ctypes.c_void_p), ("get_next", ctypes.c_void_p),
                ("get_last_error", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("private_data", ctypes.c_void_p)]


class _CreateOpts(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),  # 0: the 0.1 layout
                ("arrow_schema", ctypes.c_void_p), ("schema_json", ctypes.c_char_p),
                ("partition_spec", ctypes.c_char_p), ("sort_order", ctypes.c_char_p),
                ("property_keys", ctypes.c_void_p), ("property_values", ctypes.c_void_p),
                ("n_properties", ctypes.c_int), ("format_version", ctypes.c_int),
                ("location", ctypes.c_char_p)]


class _ScanOpts(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),  # 0: the 0.1 layout
                ("use_snapshot_id", ctypes.c_int), ("snapshot_id", ctypes.c_int64),
                ("use_as_of", ctypes.c_int), ("as_of_ms", ctypes.c_int64),
                ("ref", ctypes.c_char_p), ("columns", ctypes.c_void_p),
                ("n_columns", ctypes.c_int), ("filter", ctypes.c_char_p),
                ("include_row_lineage", ctypes.c_int), ("batch_size", ctypes.c_int64)]


class HsFail(Exception):
    def __init__(self, code, msg):
        self.code = code
        super().__init__(f"status {code}: {msg}")


class Lib:
    def __init__(self):
        self.lib = ctypes.CDLL(str(LIB))
        L = self.lib
        vp, cp = ctypes.c_void_p, ctypes.c_char_p
        for name, args in {
            "hs_catalog_open_path": [cp, ctypes.POINTER(vp), vp],
            "hs_catalog_open_sql": [cp, cp, cp, ctypes.POINTER(vp), vp],
            "hs_catalog_create_namespace": [vp, cp, vp],
            "hs_table_create": [vp, cp, vp, ctypes.POINTER(vp), vp],
            "hs_table_open": [vp, cp, ctypes.POINTER(vp), vp],
            "hs_table_open_metadata": [cp, ctypes.POINTER(vp), vp],
            "hs_table_append": [vp, vp, vp],
            "hs_table_overwrite": [vp, vp, cp, vp],
            "hs_table_delete": [vp, cp, ctypes.POINTER(ctypes.c_int64), vp],
            "hs_table_scan": [vp, vp, vp, vp],
            "hs_table_update_schema": [vp, cp, vp],
            "hs_table_update_spec": [vp, cp, vp],
            "hs_table_upgrade_format_version": [vp, ctypes.c_int, vp],
            "hs_table_refresh": [vp, vp],
        }.items():
            getattr(L, name).argtypes = args
            getattr(L, name).restype = ctypes.c_int
        L.hs_table_metadata_location.argtypes = [vp]
        L.hs_table_metadata_location.restype = cp
        L.hs_table_close.argtypes = [vp]
        L.hs_catalog_close.argtypes = [vp]

    def call(self, fn, *args):
        err = _Err()
        rc = getattr(self.lib, fn)(*args, ctypes.byref(err))
        if rc != 0:
            raise HsFail(rc, err.msg.decode(errors="replace"))

    def path_catalog(self, warehouse):
        c = ctypes.c_void_p()
        self.call("hs_catalog_open_path", str(warehouse).encode(), ctypes.byref(c))
        return c

    def sql_catalog(self, db, warehouse, name="default"):
        c = ctypes.c_void_p()
        self.call("hs_catalog_open_sql", str(db).encode(), name.encode(), str(warehouse).encode(),
                  ctypes.byref(c))
        return c

    def create(self, cat, name, schema, spec=None, sort=None, fv=2):
        c_schema = ctypes.create_string_buffer(9 * 8)  # struct ArrowSchema
        addr = ctypes.addressof(c_schema)
        schema._export_to_c(addr)
        o = _CreateOpts()
        o.arrow_schema = addr
        o.partition_spec = spec.encode() if spec else None
        o.sort_order = sort.encode() if sort else None
        o.format_version = fv
        t = ctypes.c_void_p()
        try:
            self.call("hs_table_create", cat, name.encode(), ctypes.byref(o), ctypes.byref(t))
        finally:
            # we own the exported schema: release it
            pa.Schema._import_from_c(addr)
        return t

    def open(self, cat, name):
        t = ctypes.c_void_p()
        self.call("hs_table_open", cat, name.encode(), ctypes.byref(t))
        return t

    def _stream(self, table):
        s = _Stream()
        reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        reader._export_to_c(ctypes.addressof(s))
        return s

    def append(self, t, table):
        s = self._stream(table)
        self.call("hs_table_append", t, ctypes.byref(s))

    def overwrite(self, t, table, flt):
        s = self._stream(table)
        self.call("hs_table_overwrite", t, ctypes.byref(s), flt.encode() if flt else None)

    def delete(self, t, flt):
        n = ctypes.c_int64()
        self.call("hs_table_delete", t, flt.encode(), ctypes.byref(n))
        return n.value

    def scan(self, t, flt=None, columns=None, snapshot=None, lineage=False):
        o = _ScanOpts()
        o.filter = flt.encode() if flt else None
        keep = None
        if columns:
            keep = (ctypes.c_char_p * len(columns))(*[c.encode() for c in columns])
            o.columns = ctypes.cast(keep, ctypes.c_void_p)
            o.n_columns = len(columns)
        if snapshot is not None:
            o.use_snapshot_id = 1
            o.snapshot_id = snapshot
        o.include_row_lineage = 1 if lineage else 0
        s = _Stream()
        self.call("hs_table_scan", t, ctypes.byref(o), ctypes.byref(s))
        return pa.RecordBatchReader._import_from_c(ctypes.addressof(s)).read_all()

    def metadata_location(self, t):
        return self.lib.hs_table_metadata_location(t).decode()


@pytest.fixture(scope="module")
def hs():
    return Lib()


def rows(table, key="id"):
    """Rows as sorted list of dicts (the comparison form)."""
    lst = table.to_pylist()
    return sorted(lst, key=lambda r: (r[key] is None, r[key]))


def latest_metadata(table_dir):
    metas = glob.glob(os.path.join(table_dir, "metadata", "*.metadata.json"))
    def ver(p):
        m = re.match(r"v?(\d+)", os.path.basename(p))
        return int(m.group(1))
    return max(metas, key=ver)


def py_static(hs, t):
    return StaticTable.from_metadata(hs.metadata_location(t)).scan().to_arrow()


def all_types_table(n=40):
    ids = list(range(n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "i32": pa.array([None if i % 7 == 0 else i * 3 - 50 for i in ids], pa.int32()),
        "f32": pa.array([i / 4 for i in ids], pa.float32()),
        "f64": pa.array([None if i % 5 == 0 else i * 1.25 for i in ids], pa.float64()),
        "b": pa.array([i % 2 == 0 for i in ids], pa.bool_()),
        "s": pa.array([None if i % 6 == 0 else f"str-{i:03d}-" + "x" * (i % 30) for i in ids]),
        "bin": pa.array([bytes([i, 255 - i]) for i in ids], pa.binary()),
        "dec": pa.array([decimal.Decimal(i * 101) / 100 for i in ids], pa.decimal128(9, 2)),
        "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i * 17) for i in ids], pa.date32()),
        "t": pa.array([dt.time(i % 24, i % 60, 1) for i in ids], pa.time64("us")),
        "ts": pa.array([dt.datetime(2021, 3, 4, 5) + dt.timedelta(hours=i * 13) for i in ids],
                       pa.timestamp("us")),
        "tstz": pa.array([dt.datetime(2022, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=i * 97)
                          for i in ids], pa.timestamp("us", tz="UTC")),
        "lst": pa.array([[i, i + 1] if i % 4 else None for i in ids], pa.list_(pa.int64())),
        "st": pa.array([{"a": i, "b": f"b{i}"} for i in ids],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "m": pa.array([[("k", i)] for i in ids], pa.map_(pa.string(), pa.int64())),
    })


def norm(table):
    """pyiceberg may return large_* types; normalise to compare values."""
    return rows(table)


def test_all_types_roundtrip_static_and_sql(hs, tmp_path):
    db = tmp_path / "cat.db"
    wh = tmp_path / "wh"
    cat = hs.sql_catalog(db, wh)
    hs.call("hs_catalog_create_namespace", cat, b"ns")
    data = all_types_table()
    t = hs.create(cat, "ns.types", data.schema)
    hs.append(t, data.slice(0, 25))
    hs.append(t, data.slice(25))
    ours = hs.scan(t)
    assert norm(ours) == norm(data)
    # StaticTable on our metadata file
    theirs = py_static(hs, t)
    assert norm(theirs) == norm(data)
    # SqlCatalog on our SQLite file
    pcat = SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
    pt = pcat.load_table("ns.types")
    assert norm(pt.scan().to_arrow()) == norm(data)
    # filters agree with pyiceberg's
    for ours_f, theirs_f in [("id >= 10 AND id < 20", "id >= 10 and id < 20"),
                             ("s IS NULL", "s is null"),
                             ("i32 IN (-50, 1, 4)", "i32 in (-50, 1, 4)")]:
        a = hs.scan(t, flt=ours_f)
        b = pt.scan(row_filter=theirs_f).to_arrow()
        assert norm(a) == norm(b), ours_f
    hs.lib.hs_table_close(t)
    hs.lib.hs_catalog_close(cat)


@pytest.mark.parametrize("spec,flt", [
    ("identity(cat)", "cat = 'c1'"),
    ("bucket(8, id)", "id = 17"),
    ("truncate(3, name)", "name >= 'n2'"),
    ("truncate(10, id)", "id < 25"),
    ("year(ts)", "ts >= '2020-06-01T00:00:00'"),
    ("month(ts)", "ts < '2020-09-01T00:00:00'"),
    ("day(d)", "d = '2020-02-05'"),
    ("hour(ts)", "ts > '2020-03-01T00:00:00'"),
    ("bucket(4, name), month(d)", "name = 'n5' OR d > '2021-01-01'"),
])
def test_partition_transforms(hs, table_dir, spec, flt):
    n = 120
    data = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "name": [f"n{i}" for i in range(n)],
        "cat": [f"c{i % 4}" for i in range(n)],
        "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i * 5) for i in range(n)]),
        "ts": pa.array([dt.datetime(2020, 1, 1) + dt.timedelta(hours=i * 83) for i in range(n)],
                       pa.timestamp("us")),
    })
    cat = hs.path_catalog(table_dir)
    t = hs.create(cat, "p", data.schema, spec=spec, sort="id DESC")
    hs.append(t, data)
    st = StaticTable.from_metadata(hs.metadata_location(t))
    assert norm(st.scan().to_arrow()) == norm(data)
    ours = hs.scan(t, flt=flt)
    theirs = st.scan(row_filter=flt.replace("'", "'")).to_arrow()
    assert norm(ours) == norm(theirs)
    assert len(ours) > 0
    hs.lib.hs_table_close(t)
    hs.lib.hs_catalog_close(cat)


@pytest.mark.parametrize("fv", [2, 3])
def test_evolution_and_deletes(hs, table_dir, fv):
    cat = hs.path_catalog(table_dir)
    data = pa.table({"id": pa.array(range(60), pa.int64()),
                     "name": [f"n{i}" for i in range(60)],
                     "v": pa.array([i * 0.5 for i in range(60)], pa.float32()),
                     "cat": [f"c{i % 3}" for i in range(60)]})
    t = hs.create(cat, "e", data.schema, spec="cat", fv=fv)
    hs.append(t, data)
    assert hs.delete(t, "id < 10") == 10
    assert hs.delete(t, "id >= 10 AND id < 13") == 3
    hs.call("hs_table_update_schema", t,
            b'[{"op":"rename","name":"name","to":"label"},{"op":"add","name":"extra","type":"long"},'
            b'{"op":"update","name":"v","type":"double"}]')
    hs.call("hs_table_update_spec", t, b"bucket(4, id)")
    more = pa.table({"id": pa.array([100, 101], pa.int64()), "label": ["x", "y"],
                     "v": pa.array([1.0, 2.0]), "cat": ["c0", "c1"],
                     "extra": pa.array([7, None], pa.int64())})
    hs.append(t, more)
    assert hs.delete(t, "cat = 'c2'") > 0
    ours = hs.scan(t)
    theirs = py_static(hs, t)
    assert norm(ours) == norm(theirs)
    expect = [i for i in range(13, 60) if i % 3 != 2] + [100, 101]
    assert sorted(ours.column("id").to_pylist()) == expect
    assert ours.column_names == ["id", "label", "v", "cat", "extra"]
    # overwrite by filter
    hs.overwrite(t, pa.table({"id": pa.array([500], pa.int64()), "label": ["o"],
                              "v": pa.array([0.0]), "cat": ["c0"],
                              "extra": pa.array([None], pa.int64())}), "cat = 'c0' AND id < 30")
    ours = hs.scan(t)
    assert norm(ours) == norm(py_static(hs, t))
    assert 500 in ours.column("id").to_pylist()
    assert 15 not in ours.column("id").to_pylist()
    hs.lib.hs_table_close(t)
    hs.lib.hs_catalog_close(cat)


def test_row_lineage_v3(hs, table_dir):
    cat = hs.path_catalog(table_dir)
    data = pa.table({"id": pa.array(range(10), pa.int64())})
    t = hs.create(cat, "l", data.schema, fv=3)
    hs.append(t, data.slice(0, 4))
    hs.append(t, data.slice(4))
    r = hs.scan(t, lineage=True)
    # first snapshot: first-row-id 0, 4 rows -> ids 0..3; second: 4..9
    got = sorted(zip(r.column("id").to_pylist(), r.column("_row_id").to_pylist(),
                     r.column("_last_updated_sequence_number").to_pylist()))
    assert got == [(i, i, 1 if i < 4 else 2) for i in range(10)]
    meta = json.loads(as_path(hs.metadata_location(t)).read_text())
    assert meta["next-row-id"] == 10
    assert py_static(hs, t).num_rows == 10
    hs.lib.hs_table_close(t)
    hs.lib.hs_catalog_close(cat)


def _py_catalog(tmp_path):
    wh = tmp_path / "pywh"
    wh.mkdir()
    db = tmp_path / "py.db"
    pcat = SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
    pcat.create_namespace("db")
    return pcat, db, wh


def test_read_tables_written_by_pyiceberg(hs, tmp_path):
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import BucketTransform, DayTransform
    from pyiceberg.types import LongType, NestedField, StringType, TimestampType, DoubleType

    pcat, db, wh = _py_catalog(tmp_path)
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False),
                    NestedField(3, "ts", TimestampType(), required=False),
                    NestedField(4, "v", DoubleType(), required=False))
    spec = PartitionSpec(PartitionField(3, 1000, DayTransform(), "ts_day"),
                         PartitionField(1, 1001, BucketTransform(4), "id_bucket"))
    pt = pcat.create_table("db.events", schema=schema, partition_spec=spec)
    def batch(lo, hi):
        return pa.table({"id": pa.array(range(lo, hi), pa.int64()),
                         "name": [f"n{i}" for i in range(lo, hi)],
                         "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(hours=7 * i)
                                         for i in range(lo, hi)], pa.timestamp("us")),
                         "v": pa.array([i * 1.5 for i in range(lo, hi)])})
    pt.append(batch(0, 50))
    pt.append(batch(50, 80))
    pt.delete("id < 5")
    pt.overwrite(batch(200, 203), overwrite_filter="id >= 70")
    with pt.update_schema() as u:
        u.add_column("extra", StringType())
        u.rename_column("name", "label")
    pt = pcat.load_table("db.events")
    pt.append(pa.table({"id": pa.array([300], pa.int64()), "label": ["z"],
                        "ts": pa.array([dt.datetime(2024, 5, 1)], pa.timestamp("us")),
                        "v": pa.array([1.0]), "extra": ["e"]}))
    pt = pcat.load_table("db.events")
    expected = pt.scan().to_arrow()
    cat = hs.sql_catalog(db, wh)
    t = hs.open(cat, "db.events")
    ours = hs.scan(t)
    assert norm(ours) == norm(expected)
    ours_f = hs.scan(t, flt="id >= 20 AND id < 40")
    assert norm(ours_f) == norm(pt.scan(row_filter="id >= 20 and id < 40").to_arrow())
    # time travel to pyiceberg's first snapshot
    first = pt.history()[0].snapshot_id
    assert norm(hs.scan(t, snapshot=first)) == norm(pt.scan(snapshot_id=first).to_arrow())
    hs.lib.hs_table_close(t)
    hs.lib.hs_catalog_close(cat)


def test_read_after_pyiceberg_delete(hs, tmp_path):
    """A pyiceberg delete read back.  pyiceberg 0.12 cannot write merge-on-read
    deletes: asked to, it warns and rewrites the data file (copy-on-write), so
    this reads an overwrite snapshot, not delete files.  Real position-delete
    files and deletion vectors (written by Java Iceberg) are read in
    test_iceberg_java.py::test_java_written_deletes."""
    pcat, db, wh = _py_catalog(tmp_path)
    data = pa.table({"id": pa.array(range(30), pa.int64()), "s": [f"s{i}" for i in range(30)]})
    pt = pcat.create_table("db.mor", schema=data.schema,
                           properties={"write.delete.mode": "merge-on-read"})
    pt.append(data)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Merge on read is not yet supported")
        pt.delete("id > 25")
    pt = pcat.load_table("db.mor")
    cat = hs.sql_catalog(db, wh)
    t = hs.open(cat, "db.mor")
    got = hs.scan(t)
    assert norm(got) == norm(pt.scan().to_arrow())
    assert sorted(got.column("id").to_pylist()) == list(range(26))
    hs.lib.hs_table_close(t)
    hs.lib.hs_catalog_close(cat)


def test_cli_roundtrip(tmp_path):
    require(CLI.exists(), f"{CLI} not built")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "name": f"n{i}", "ts": f"2024-01-0{1 + i % 5}T00:00:00.000000"}) + "\n"
                           for i in range(20)))
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"fields": [{"name": "id", "type": "int64", "nullable": False},
                                             {"name": "name", "type": "string"},
                                             {"name": "ts", "type": "timestamp[us]"}]}))
    tdir = tmp_path / "t"
    def run(*args):
        r = subprocess.run([str(CLI), "table", *args], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return r.stdout
    run("create", str(tdir), "--schema", str(schema), "--partition", "day(ts)")
    run("append", str(tdir), str(src))
    out = [json.loads(line) for line in run("scan", str(tdir), "--filter", "id < 5").splitlines()]
    assert sorted(r["id"] for r in out) == [0, 1, 2, 3, 4]
    snaps = json.loads(run("snapshots", str(tdir)))
    assert snaps[0]["summary"]["total-records"] == "20"
    st = StaticTable.from_metadata(latest_metadata(str(tdir)))
    assert st.scan().to_arrow().num_rows == 20
    r = subprocess.run([str(CLI), "table", "scan", str(tdir), "--filter", "nope = 1"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "nope" in r.stderr

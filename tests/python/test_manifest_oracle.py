"""Iceberg manifests, manifest lists and Puffin deletion vectors against
independent oracles: fastavro (raw Avro + field ids), pyiceberg (its manifest
reader, its SqlCatalog-written tables, its Puffin/deletion-vector reader) and
pyroaring (hand-built deletion-vector blobs from the spec).

The C side is reached through ctypes debug entry points:
ice_manifest_debug_write (JSON description -> manifest + list),
ice_manifest_list_debug_json / ice_manifest_debug_json (file -> JSON),
ice_puffin_debug_write / ice_puffin_debug_read.
"""
import ctypes
import json
import os
import struct
import zlib

import pytest

from conftest import LIB_PATH, require, require_module

fastavro = require_module("fastavro")
pyiceberg = require_module("pyiceberg")


class HsError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


@pytest.fixture(scope="module")
def lib():
    require(LIB_PATH.exists(), f"{LIB_PATH} not built (set HS_BUILD)")
    lib = ctypes.CDLL(str(LIB_PATH))
    lib.ice_manifest_debug_write.restype = ctypes.c_int
    lib.ice_manifest_debug_write.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                             ctypes.POINTER(HsError)]
    for fn in ("ice_manifest_list_debug_json",):
        getattr(lib, fn).restype = ctypes.c_void_p
        getattr(lib, fn).argtypes = [ctypes.c_char_p, ctypes.POINTER(HsError)]
    lib.ice_manifest_debug_json.restype = ctypes.c_void_p
    lib.ice_manifest_debug_json.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                            ctypes.POINTER(HsError)]
    lib.ice_manifest_debug_free.argtypes = [ctypes.c_void_p]
    lib.ice_puffin_debug_write.restype = ctypes.c_void_p
    lib.ice_puffin_debug_write.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(HsError)]
    lib.ice_puffin_debug_read.restype = ctypes.c_void_p
    lib.ice_puffin_debug_read.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64,
                                          ctypes.POINTER(HsError)]
    lib.ice_puffin_debug_free.argtypes = [ctypes.c_void_p]
    return lib


def _take(lib, ptr, err, free):
    if not ptr:
        raise RuntimeError(err.msg.decode())
    s = ctypes.string_at(ptr).decode()
    free(ptr)
    return json.loads(s)


def c_list_json(lib, path):
    err = HsError()
    return _take(lib, lib.ice_manifest_list_debug_json(str(path).encode(), ctypes.byref(err)), err,
                 lib.ice_manifest_debug_free)


def c_manifest_json(lib, path, list_path=None, idx=-1):
    err = HsError()
    p = lib.ice_manifest_debug_json(str(path).encode(), str(list_path).encode() if list_path else None,
                                    idx, ctypes.byref(err))
    return _take(lib, p, err, lib.ice_manifest_debug_free)


SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "name", "required": False, "type": "string"},
    {"id": 3, "name": "ts", "required": False, "type": "timestamp"},
    {"id": 4, "name": "price", "required": False, "type": "decimal(9,2)"},
    {"id": 5, "name": "d", "required": False, "type": "date"},
]}
SPEC = {"spec-id": 0, "fields": [
    {"name": "name", "transform": "identity", "source-id": 2, "field-id": 1000},
    {"name": "ts_day", "transform": "day", "source-id": 3, "field-id": 1001},
    {"name": "id_bucket", "transform": "bucket[8]", "source-id": 1, "field-id": 1002},
    {"name": "price", "transform": "identity", "source-id": 4, "field-id": 1003},
]}


def _entries(n):
    out = []
    for k in range(n):
        out.append({
            "status": 1, "content": 0, "file_path": f"s3://b/t/data/f{k}.parquet",
            "file_format": "PARQUET", "record_count": 10 + k, "file_size_in_bytes": 1000 + k,
            "partition": [None if k == 1 else f"n{k}", "2024-01-0%d" % (k + 1), k % 8,
                          "%d.25" % (k * 3)],
            "column_sizes": {"1": 100 + k, "2": 200}, "value_counts": {"1": 10 + k},
            "null_value_counts": {"1": 0, "2": k}, "nan_value_counts": {},
            "lower_bounds": {"1": "0100000000000000", "2": "6161"},
            "upper_bounds": {"1": "0900000000000000", "2": "7a7a"},
            "split_offsets": [4], "sort_order_id": 0,
        })
    return out


def _write(lib, tmp_path, version, codec="deflate", entries=None):
    m = tmp_path / f"m-v{version}-{codec}.avro"
    l = tmp_path / f"snap-v{version}-{codec}.avro"
    desc = {"format_version": version, "schema": SCHEMA, "spec": SPEC, "snapshot_id": 4242,
            "parent_id": 4141, "sequence_number": 7, "first_row_id": 100, "codec": codec,
            "entries": entries if entries is not None else _entries(3)}
    err = HsError()
    rc = lib.ice_manifest_debug_write(json.dumps(desc).encode(), str(m).encode(), str(l).encode(),
                                      ctypes.byref(err))
    assert rc == 0, err.msg.decode()
    return m, l


def _ids(schema_node, acc):
    """Collects field-id per dotted Avro field name."""
    if isinstance(schema_node, list):
        for b in schema_node:
            _ids(b, acc)
    elif isinstance(schema_node, dict):
        if schema_node.get("type") == "record":
            for f in schema_node["fields"]:
                acc[f["name"]] = f.get("field-id")
                _ids(f["type"], acc)
        elif schema_node.get("type") == "array":
            _ids(schema_node["items"], acc)


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("codec", ["deflate", "null"])
def test_fastavro_reads_our_manifest(lib, tmp_path, version, codec):
    m, l = _write(lib, tmp_path, version, codec)
    with open(m, "rb") as f:
        r = fastavro.reader(f)
        meta = r.metadata
        recs = list(r)
        schema = json.loads(meta["avro.schema"])
    assert meta["avro.codec"] == codec
    assert meta["format-version"] == str(version)
    assert json.loads(meta["schema"])["fields"][0]["id"] == 1
    assert [f["field-id"] for f in json.loads(meta["partition-spec"])] == [1000, 1001, 1002, 1003]
    assert meta["partition-spec-id"] == "0"
    if version >= 2:
        assert meta["content"] == "data"
    ids = {}
    _ids(schema, ids)
    expect = {"status": 0, "snapshot_id": 1, "data_file": 2, "file_path": 100, "file_format": 101,
              "partition": 102, "record_count": 103, "file_size_in_bytes": 104,
              "column_sizes": 108, "value_counts": 109, "null_value_counts": 110,
              "nan_value_counts": 137, "lower_bounds": 125, "upper_bounds": 128,
              "key_metadata": 131, "split_offsets": 132, "sort_order_id": 140,
              "name": 1000, "ts_day": 1001, "id_bucket": 1002, "price": 1003}
    if version >= 2:
        expect.update({"sequence_number": 3, "file_sequence_number": 4, "content": 134,
                       "equality_ids": 135, "referenced_data_file": 143})
    if version >= 3:
        expect.update({"first_row_id": 142, "content_offset": 144, "content_size_in_bytes": 145})
    for k, v in expect.items():
        assert ids.get(k) == v, k
    assert ("block_size_in_bytes" in ids) == (version == 1)
    assert len(recs) == 3
    for k, rec in enumerate(recs):
        df = rec["data_file"]
        assert rec["status"] == 1
        assert df["file_path"] == f"s3://b/t/data/f{k}.parquet"
        assert df["record_count"] == 10 + k
        p = df["partition"]
        assert p["name"] == (None if k == 1 else f"n{k}")
        assert p["id_bucket"] == k % 8
        assert {e["key"]: e["value"] for e in df["column_sizes"]} == {1: 100 + k, 2: 200}
        assert {e["key"]: e["value"] for e in df["lower_bounds"]}[2] == b"aa"
    with open(l, "rb") as f:
        r = fastavro.reader(f)
        lm = r.metadata
        lrecs = list(r)
    assert lm["snapshot-id"] == "4242" and lm["parent-snapshot-id"] == "4141"
    assert lm["format-version"] == str(version)
    if version >= 2:
        assert lm["sequence-number"] == "7"
    if version >= 3:
        assert lm["first-row-id"] == "100"
        assert lrecs[0]["first_row_id"] == 100
    mf = lrecs[0]
    assert mf["manifest_path"] == str(m)
    assert mf["manifest_length"] == os.path.getsize(m)
    assert mf["partitions"][0]["contains_null"] is True
    assert mf["partitions"][0]["lower_bound"] == b"n0" and mf["partitions"][0]["upper_bound"] == b"n2"


@pytest.mark.parametrize("version", [1, 2, 3])
def test_pyiceberg_reads_our_manifest(lib, tmp_path, version):
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import read_manifest_list

    m, l = _write(lib, tmp_path, version)
    io = PyArrowFileIO()
    mfs = list(read_manifest_list(io.new_input(str(l))))
    assert len(mfs) == 1
    mf = mfs[0]
    assert mf.manifest_path == str(m)
    assert mf.manifest_length == os.path.getsize(m)
    assert mf.added_snapshot_id == 4242
    assert mf.added_files_count == 3 and mf.added_rows_count == 10 + 11 + 12
    if version >= 2:
        assert mf.sequence_number == 7 and mf.min_sequence_number == 7
    entries = mf.fetch_manifest_entry(io, discard_deleted=False)
    assert len(entries) == 3
    for k, e in enumerate(entries):
        assert e.snapshot_id == 4242
        if version >= 2:
            assert e.sequence_number == 7
        df = e.data_file
        assert df.file_path == f"s3://b/t/data/f{k}.parquet"
        assert df.record_count == 10 + k and df.file_size_in_bytes == 1000 + k
        assert df.column_sizes == {1: 100 + k, 2: 200}
        assert df.null_value_counts == {1: 0, 2: k}
        assert df.lower_bounds[2] == b"aa" and df.upper_bounds[1] == bytes([9, 0, 0, 0, 0, 0, 0, 0])
        assert df.split_offsets == [4]
        part = df.partition
        assert part[0] == (None if k == 1 else f"n{k}")
        assert part[2] == k % 8


def _pyiceberg_table(tmp_path, version):
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform
    from pyiceberg.types import (DoubleType, LongType, NestedField, StringType,
                                 TimestampType)

    wh = tmp_path / "wh"
    wh.mkdir()
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{wh}")
    cat.create_namespace("ns")
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False),
                    NestedField(3, "ts", TimestampType(), required=False),
                    NestedField(4, "x", DoubleType(), required=False))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name"),
                         PartitionField(3, 1001, DayTransform(), "ts_day"),
                         PartitionField(1, 1002, BucketTransform(4), "id_bucket"))
    t = cat.create_table("ns.t", schema, partition_spec=spec,
                         properties={"format-version": str(version)})
    import datetime
    for batch in range(2):
        rows = 20
        tbl = pa.table({
            "id": pa.array([batch * 100 + i for i in range(rows)], pa.int64()),
            "name": pa.array([None if i % 7 == 0 else f"name{i % 3}" for i in range(rows)]),
            "ts": pa.array([datetime.datetime(2024, 1, 1 + i % 3, 5) for i in range(rows)],
                           pa.timestamp("us")),
            "x": pa.array([float(i) if i % 5 else float("nan") for i in range(rows)]),
        })
        t.append(tbl)
    t.delete("id = 3")
    return t.refresh() if hasattr(t, "refresh") else t


@pytest.mark.parametrize("version", [1, 2])
def test_we_read_pyiceberg_manifests(lib, tmp_path, version):
    t = _pyiceberg_table(tmp_path, version)
    io = t.io
    snap = t.current_snapshot()
    lst = snap.manifest_list
    local_list = lst.replace("file://", "")
    ours = c_list_json(lib, local_list)
    theirs = snap.manifests(io)
    assert len(ours["manifests"]) == len(theirs)
    if version >= 2:
        assert ours["sequence_number"] == snap.sequence_number
    assert ours["snapshot_id"] == snap.snapshot_id
    for i, (a, b) in enumerate(zip(ours["manifests"], theirs)):
        assert a["manifest_path"] == b.manifest_path
        assert a["manifest_length"] == b.manifest_length
        assert a["partition_spec_id"] == b.partition_spec_id
        assert a["content"] == int(b.content)
        assert a["sequence_number"] == (b.sequence_number or 0)
        assert a["added_snapshot_id"] == b.added_snapshot_id
        assert a["added_files_count"] == b.added_files_count
        assert a["existing_rows_count"] == b.existing_rows_count
        assert len(a["partitions"]) == len(b.partitions or [])
        for sa, sb in zip(a["partitions"], b.partitions or []):
            assert sa["contains_null"] == sb.contains_null
            assert sa["lower_bound"] == (sb.lower_bound.hex() if sb.lower_bound is not None else None)
        m = c_manifest_json(lib, b.manifest_path.replace("file://", ""), local_list, i)
        pe = b.fetch_manifest_entry(io, discard_deleted=False)
        assert len(m["entries"]) == len(pe)
        for ea, eb in zip(m["entries"], pe):
            assert ea["status"] == int(eb.status)
            assert ea["snapshot_id"] == eb.snapshot_id
            if version >= 2:
                assert ea["sequence_number"] == eb.sequence_number
                assert ea["file_sequence_number"] == eb.file_sequence_number
            da, db = ea["data_file"], eb.data_file
            assert da["file_path"] == db.file_path
            assert da["file_format"].upper() == str(db.file_format.value).upper()
            assert da["record_count"] == db.record_count
            assert da["file_size_in_bytes"] == db.file_size_in_bytes
            assert {int(k): v for k, v in da["column_sizes"].items()} == (db.column_sizes or {})
            assert {int(k): v for k, v in da["value_counts"].items()} == (db.value_counts or {})
            assert {int(k): v for k, v in da["null_value_counts"].items()} == (db.null_value_counts or {})
            assert {int(k): v for k, v in da["nan_value_counts"].items()} == (db.nan_value_counts or {})
            assert {int(k): bytes.fromhex(v) for k, v in da["lower_bounds"].items()} == (db.lower_bounds or {})
            assert {int(k): bytes.fromhex(v) for k, v in da["upper_bounds"].items()} == (db.upper_bounds or {})
            assert da["split_offsets"] == list(db.split_offsets or [])
            # partition: name (string), ts_day (date as days), id_bucket (int)
            assert da["partition"] == list(db.partition)


def test_pyiceberg_puffin_reads_our_deletion_vectors(lib, tmp_path):
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile

    dvs = [{"file": "s3://b/data/a.parquet", "positions": [0, 3, 5, 100000]},
           {"file": "data/b.parquet", "positions": list(range(1000, 70000, 2)) + list(range(200000, 300000))},
           {"file": "data/c.parquet", "positions": []}]
    path = tmp_path / "dv.puffin"
    err = HsError()
    locs = _take(lib, lib.ice_puffin_debug_write(str(path).encode(), json.dumps(dvs).encode(),
                                                 ctypes.byref(err)), err, lib.ice_puffin_debug_free)
    data = path.read_bytes()
    pf = PuffinFile(data)
    assert [b.type for b in pf.footer.blobs] == ["deletion-vector-v1"] * 3
    for b, loc, dv in zip(pf.footer.blobs, locs, dvs):
        assert b.offset == loc["offset"] and b.length == loc["length"]
        assert b.properties["referenced-data-file"] == dv["file"]
        assert b.properties["cardinality"] == str(len(dv["positions"]))
        assert b.snapshot_id == -1 and b.sequence_number == -1
    # (pyiceberg cannot turn a vector without buckets into an Arrow array)
    got = {d.referenced_data_file: d.to_vector().to_pylist() if d._bitmaps else []
           for d in deletion_vectors_from_puffin_file(pf)}
    for dv in dvs:
        assert got[dv["file"]] == dv["positions"]


def test_we_read_spec_built_deletion_vector(lib, tmp_path):
    pyroaring = require_module("pyroaring")
    positions = [1, 2, 3, 10, 65536, 65537, 1 << 20] + list(range(5000, 9000))
    bm = pyroaring.BitMap(positions)
    bm.run_optimize()
    vec = struct.pack("<Q", 1) + struct.pack("<I", 0) + bm.serialize()
    body = bytes([0xD1, 0xD3, 0x39, 0x64]) + vec
    blob = struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    footer = json.dumps({"blobs": [{"type": "deletion-vector-v1", "fields": [2147483645],
                                    "snapshot-id": -1, "sequence-number": -1, "offset": 4,
                                    "length": len(blob),
                                    "properties": {"referenced-data-file": "x",
                                                   "cardinality": str(len(bm))}}]}).encode()
    data = b"PFA1" + blob + b"PFA1" + footer + struct.pack("<i", len(footer)) + b"\0\0\0\0" + b"PFA1"
    path = tmp_path / "hand.puffin"
    path.write_bytes(data)
    err = HsError()
    got = _take(lib, lib.ice_puffin_debug_read(str(path).encode(), 4, len(blob), ctypes.byref(err)),
                err, lib.ice_puffin_debug_free)
    assert got == sorted(set(positions))
    # a flipped CRC is refused
    bad = bytearray(data)
    bad[4 + len(blob) - 1] ^= 1
    path.write_bytes(bytes(bad))
    err = HsError()
    assert not lib.ice_puffin_debug_read(str(path).encode(), 4, len(blob), ctypes.byref(err))
    assert err.code == 2 and b"CRC" in err.msg


def test_metrics_match_pyiceberg(lib, tmp_path):
    """Our metrics from a pyarrow-written Parquet footer equal pyiceberg's own
    (data_file_statistics_from_parquet_metadata, default truncate(16) mode)."""
    import datetime
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import (compute_statistics_plan, data_file_statistics_from_parquet_metadata,
                                      parquet_path_to_id_mapping)
    from pyiceberg.schema import Schema
    from pyiceberg.types import (BinaryType, DateType, DecimalType, DoubleType, FloatType, IntegerType,
                                 ListType, LongType, NestedField, StringType, TimestampType,
                                 TimestamptzType, BooleanType)

    schema = Schema(
        NestedField(1, "i", IntegerType(), required=False),
        NestedField(2, "l", LongType(), required=False),
        NestedField(3, "s", StringType(), required=False),
        NestedField(4, "b", BinaryType(), required=False),
        NestedField(5, "d", DoubleType(), required=False),
        NestedField(6, "f", FloatType(), required=False),
        NestedField(7, "dec", DecimalType(9, 2), required=False),
        NestedField(8, "dt", DateType(), required=False),
        NestedField(9, "ts", TimestampType(), required=False),
        NestedField(10, "tz", TimestamptzType(), required=False),
        NestedField(11, "lst", ListType(12, LongType(), element_required=False), required=False),
        NestedField(13, "ok", BooleanType(), required=False),
        NestedField(14, "dec18", DecimalType(18, 3), required=False),
    )
    n = 300

    def fid(name, i):
        return pa.field(name, i[0], nullable=True, metadata={b"PARQUET:field_id": str(i[1]).encode()})

    arrow_schema = pa.schema([
        fid("i", (pa.int32(), 1)), fid("l", (pa.int64(), 2)), fid("s", (pa.string(), 3)),
        fid("b", (pa.binary(), 4)), fid("d", (pa.float64(), 5)), fid("f", (pa.float32(), 6)),
        fid("dec", (pa.decimal128(9, 2), 7)), fid("dt", (pa.date32(), 8)),
        fid("ts", (pa.timestamp("us"), 9)), fid("tz", (pa.timestamp("us", tz="UTC"), 10)),
        pa.field("lst", pa.list_(pa.field("element", pa.int64(), metadata={b"PARQUET:field_id": b"12"})),
                 metadata={b"PARQUET:field_id": b"11"}),
        fid("ok", (pa.bool_(), 13)), fid("dec18", (pa.decimal128(18, 3), 14)),
    ])
    base = datetime.datetime(2024, 3, 1, 12)
    tbl = pa.table({
        "i": [None if k % 11 == 0 else k - 150 for k in range(n)],
        "l": [k * 1000003 - 7 for k in range(n)],
        "s": [None if k % 13 == 0 else ("ünïcode-" * (k % 4)) + "x" * (k % 23) + str(k) for k in range(n)],
        "b": [bytes([255] * (k % 20)) + bytes([k % 256]) for k in range(n)],
        "d": [float("nan") if k % 17 == 0 else k / 3.0 - 20 for k in range(n)],
        "f": [float(k) for k in range(n)],
        "dec": [decimal.Decimal(k * 37 - 5000) / 100 for k in range(n)],
        "dt": [datetime.date(2020, 1, 1) + datetime.timedelta(days=k) for k in range(n)],
        "ts": [base + datetime.timedelta(minutes=k) for k in range(n)],
        "tz": [base + datetime.timedelta(hours=k) for k in range(n)],
        "lst": [[k, k + 1] if k % 3 else None for k in range(n)],
        "ok": [k % 2 == 0 for k in range(n)],
        "dec18": [decimal.Decimal(k * 123456789 - 10 ** 10) / 1000 for k in range(n)],
    }, schema=arrow_schema)
    path = tmp_path / "m.parquet"
    pq.write_table(tbl, path, row_group_size=128, store_schema=False)
    md = pq.read_metadata(path)
    stats = data_file_statistics_from_parquet_metadata(
        parquet_metadata=md, stats_columns=compute_statistics_plan(schema, {}),
        parquet_column_mapping=parquet_path_to_id_mapping(schema))
    theirs = stats.to_serialized_dict()
    err = HsError()
    lib.ice_metrics_debug_json.restype = ctypes.c_void_p
    lib.ice_metrics_debug_json.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(HsError)]
    lib.ice_metrics_debug_free.argtypes = [ctypes.c_void_p]
    ours = _take(lib, lib.ice_metrics_debug_json(str(path).encode(), schema.model_dump_json().encode(),
                                                 ctypes.byref(err)), err, lib.ice_metrics_debug_free)
    assert ours["record_count"] == theirs["record_count"] == n
    as_int = lambda d: {int(k): v for k, v in d.items()}  # noqa: E731
    assert as_int(ours["column_sizes"]) == theirs["column_sizes"]
    assert as_int(ours["value_counts"]) == theirs["value_counts"]
    assert as_int(ours["null_value_counts"]) == theirs["null_value_counts"]
    lo = {int(k): bytes.fromhex(v) for k, v in ours["lower_bounds"].items()}
    hi = {int(k): bytes.fromhex(v) for k, v in ours["upper_bounds"].items()}
    # pyiceberg keeps float bounds even when a row group holds NaN (pyarrow
    # leaves NaN out of min/max); we do the same since the stats are NaN-free.
    assert set(lo) == {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 14}  # not the list element
    assert len(lo[3]) <= 16 * 2 and lo[4] == b"\x00"
    assert lo == theirs["lower_bounds"]
    assert hi == theirs["upper_bounds"]
    assert ours["split_offsets"] == theirs["split_offsets"]

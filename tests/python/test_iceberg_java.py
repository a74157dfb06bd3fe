"""Java Iceberg as an oracle: stock Java Iceberg (iceberg-core, iceberg-data's
IcebergGenerics, iceberg-parquet; the harness in tests/interop/java, built by
scripts/java-harness.sh into build-java/) reads tables and prints JSON Lines
(docs/jsonl.md).  Three readers are compared on every table:

    reader         how                                      tables
    -----------    --------------------------------------   ------------------------
    Java           harness `read <metadata.json>`           all
    pyiceberg      StaticTable.from_metadata(...).scan()    all
    HyperStreamDB  hs_table_scan over ctypes (public API)   ours, once the table API
                                                            is in libhyperstream.so

Tables are written by pyiceberg (proves the harness itself: Java == pyiceberg),
by Java (the reverse direction: position deletes and deletion vectors, which
pyiceberg cannot write) and by HyperStreamDB (include/hyperstream/table.h).

Values are compared in one canonical form (docs/jsonl.md's text forms, floats
as repr of the exact float/float32 value, decimals as plain strings), rows as
a multiset (scan order is not specified).

Skips when java, the harness jar or pyiceberg are missing, except under
CI=true, where that fails (conftest.require).
"""
import base64
import ctypes
import datetime
import decimal
import json
import math
import os
import pathlib
import shutil
import subprocess
import uuid
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import (LIB_PATH, REPO, HsError, _ArrowArrayStream, _HsErrorStruct, require,
                      require_module)

pyiceberg = require_module("pyiceberg")
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.table import StaticTable  # noqa: E402
from pyiceberg.transforms import (BucketTransform, DayTransform, HourTransform,  # noqa: E402
                                  IdentityTransform, MonthTransform, TruncateTransform,
                                  YearTransform)
from pyiceberg.types import (DateType, DoubleType, IntegerType, LongType,  # noqa: E402
                             NestedField, StringType, TimestampType, TimestamptzType)

HARNESS_JAR = pathlib.Path(os.environ.get("HS_JAVA_HARNESS")
                           or REPO / "build-java" / "iceberg-harness.jar")


# --------------------------------------------------------------------------
# The harness, one JVM for the whole session ("serve" mode)

class JavaHarness:
    def __init__(self, jar):
        self.proc = subprocess.Popen(["java", "-Xss4m", "-jar", str(jar), "serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, encoding="utf-8")
        self.n = 0

    def call(self, *args):
        """Runs one command; returns what it printed (lines), raises on failure."""
        assert all("\t" not in a and "\n" not in a for a in args)
        self.proc.stdin.write("\t".join(args) + "\n")
        self.proc.stdin.flush()
        out = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"harness died (exit {self.proc.wait()}) running {args}")
            line = line.rstrip("\n")
            if line.startswith("##done "):
                if line != "##done 0":
                    raise RuntimeError(f"harness {args[0]} failed: {line[9:]}")
                return out
            out.append(line)

    def read(self, metadata, snapshot=None, columns=None, tmp=None):
        """The rows of the table at metadata (JSON objects, in Java's order)."""
        self.n += 1
        out = pathlib.Path(tmp or "/tmp") / f"java-read-{os.getpid()}-{self.n}.jsonl"
        args = ["read", str(metadata), "--out", str(out)]
        if snapshot is not None:
            args += ["--snapshot", str(snapshot)]
        if columns:
            args += ["--columns", ",".join(columns)]
        self.call(*args)
        text = out.read_text(encoding="utf-8")
        out.unlink()
        return [json.loads(line) for line in text.splitlines()]

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def java():
    require(shutil.which("java") is not None, "java not installed")
    require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
    h = JavaHarness(HARNESS_JAR)
    yield h
    h.close()


# --------------------------------------------------------------------------
# Canonical values

def _ts_text(v, digits, utc):
    if isinstance(v, str):
        return v
    if isinstance(v, int):  # raw count of units (pyarrow without pandas)
        unit = 10 ** digits
        secs, frac = divmod(v, unit)
        d = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=secs)
    else:
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc)
        d = v
        frac = v.microsecond
        if digits == 9:
            frac = frac * 1000 + getattr(v, "nanosecond", 0)
    return (f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:"
            f"{d.second:02d}.{frac:0{digits}d}" + ("Z" if utc else ""))


def canon(v, t, quirks=False):
    """v (a pyarrow to_pylist value or a parsed docs/jsonl.md value) in canonical
    form for the Arrow type t.  quirks=True folds what pyiceberg 0.12 cannot
    tell apart: it reads (and writes) a null list of structs as an empty list
    (ArrowProjectionVisitor.list rebuilds such lists from their offsets alone,
    dropping the validity bitmap), so comparisons against pyiceberg treat a
    null list<struct> as [] on both sides."""
    if v is None:
        if quirks and (pa.types.is_list(t) or pa.types.is_large_list(t)) \
                and pa.types.is_struct(t.value_type):
            return []
        return None
    if pa.types.is_floating(t):
        f = float(v)  # "NaN", "Infinity", "-Infinity" parse too
        if pa.types.is_float32(t) or pa.types.is_float16(t):
            f = float(np.float32(f))
        return "NaN" if math.isnan(f) else repr(f)
    if pa.types.is_decimal(t):
        return format(decimal.Decimal(str(v)), "f")
    if pa.types.is_date(t):
        return v if isinstance(v, str) else f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
    if pa.types.is_time(t):
        if isinstance(v, str):
            return v
        return f"{v.hour:02d}:{v.minute:02d}:{v.second:02d}.{v.microsecond:06d}"
    if pa.types.is_timestamp(t):
        return _ts_text(v, 9 if t.unit == "ns" else 6, t.tz is not None)
    if isinstance(v, uuid.UUID):
        return str(v)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return v if isinstance(v, str) else base64.b64encode(v).decode()
    if pa.types.is_map(t):
        out = []
        for e in v:
            k, x = (e["key"], e["value"]) if isinstance(e, dict) else e
            out.append({"key": canon(k, t.key_type, quirks),
                        "value": canon(x, t.item_type, quirks)})
        return out
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [canon(x, t.value_type, quirks) for x in v]
    if pa.types.is_struct(t):
        return {f.name: canon(v.get(f.name), f.type, quirks) for f in t}
    if isinstance(t, pa.ExtensionType) and isinstance(v, (bytes, bytearray)):
        return str(uuid.UUID(bytes=bytes(v)))
    return v


def canon_arrow(table, quirks=False):
    """pyarrow Table -> sorted list of canonical row texts."""
    rows = table.to_pylist()
    fields = list(table.schema)
    out = [json.dumps({f.name: canon(r[f.name], f.type, quirks) for f in fields},
                      sort_keys=True)
           for r in rows]
    return sorted(out)


def canon_jsonl(rows, schema, quirks=False):
    """Parsed JSON Lines rows -> sorted canonical row texts, read by the Arrow
    schema of the same table (checks that every row has exactly its columns,
    in schema order)."""
    names = schema.names
    out = []
    for r in rows:
        assert list(r.keys()) == names, f"columns {list(r.keys())}, want {names}"
        out.append(json.dumps({f.name: canon(r[f.name], f.type, quirks) for f in schema},
                              sort_keys=True))
    return sorted(out)


def assert_same_rows(got, want, what):
    if got == want:
        return
    g, w = set(got), set(want)
    extra = sorted(g - w)[:3]
    missing = sorted(w - g)[:3]
    raise AssertionError(f"{what}: {len(got)} rows vs {len(want)}; "
                         f"only in first: {extra}; only in second: {missing}")


def check_java_equals_pyiceberg(java, metadata, tmp_path, snapshot_id=None, what=""):
    """Java's read of the table at `metadata` equals pyiceberg's scan (up to
    pyiceberg's known quirks, see canon).  Returns (pyiceberg's Arrow table,
    Java's rows)."""
    st = StaticTable.from_metadata(str(metadata))
    scan = st.scan(snapshot_id=snapshot_id) if snapshot_id is not None else st.scan()
    want = scan.to_arrow()
    rows = java.read(metadata, snapshot=snapshot_id, tmp=tmp_path)
    assert_same_rows(canon_jsonl(rows, want.schema, quirks=True),
                     canon_arrow(want, quirks=True), f"{what} java vs pyiceberg")
    return want, rows


# --------------------------------------------------------------------------
# Tables written by pyiceberg: proves the harness against pyiceberg's scan

@pytest.fixture
def catalog(tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()
    cat = SqlCatalog("default", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}")
    cat.create_namespace("db")
    return cat


def all_types_table():
    d = decimal.Decimal
    return pa.table({
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "i": pa.array([-(2 ** 31), 0, None, 2 ** 31 - 1], pa.int32()),
        "flag": pa.array([True, False, None, True]),
        "s": pa.array(["a", "b\n\"x\\", None, "caf\u00e9 \u2603 \U0001F600"]),
        "f": pa.array([1.5, float("nan"), None, 0.1], pa.float32()),
        "g": pa.array([-0.0, float("inf"), float("-inf"), 1e300]),
        "d": pa.array([d("1.20"), None, d("-3.45"), d("0.01")], pa.decimal128(10, 2)),
        "big": pa.array([d("12345678901234567890.123456"), None, d("0.000001"),
                         d("-1.000000")], pa.decimal128(38, 6)),
        "dt": pa.array([datetime.date(2024, 2, 29), None, datetime.date(1, 1, 1),
                        datetime.date(1969, 12, 31)]),
        "tm": pa.array([datetime.time(1, 2, 3, 4000), None, datetime.time(23, 59, 59, 999999),
                        datetime.time(0)], pa.time64("us")),
        "ts": pa.array([datetime.datetime(2024, 1, 1, 0, 0, 37, 500000), None,
                        datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
                        datetime.datetime(2000, 1, 1)], pa.timestamp("us")),
        "tz": pa.array([datetime.datetime(2024, 1, 1, 0, 0, 37, 500000), None, None,
                        datetime.datetime(1900, 6, 1, 12)], pa.timestamp("us", tz="UTC")),
        "b": pa.array([b"\x00\xff", None, b"", b"hello"]),
        "fx": pa.array([b"abcd", None, b"\x00\x00\x00\x00", b"wxyz"], pa.binary(4)),
        "l": pa.array([[1, None, 3], None, [], [7]], pa.list_(pa.int32())),
        "st": pa.array([{"a": 1, "b": "x"}, None, {"a": None, "b": None}, {"a": 2, "b": "y"}],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "m": pa.array([[("k", 1), ("j", None)], None, [], [("z", 26)]],
                      pa.map_(pa.string(), pa.int64())),
        "ls": pa.array([[{"x": 1.5, "y": [1, 2]}], None, [None], []],
                       pa.list_(pa.struct([("x", pa.float64()),
                                           ("y", pa.list_(pa.int64()))]))),
        "nest": pa.array([{"in": {"deep": "v"}, "n": 1}, {"in": None, "n": None}, None,
                          {"in": {"deep": None}, "n": 3}],
                         pa.struct([("in", pa.struct([("deep", pa.string())])),
                                    ("n", pa.int64())])),
    })


def test_pyiceberg_all_types(java, catalog, tmp_path):
    data = all_types_table()
    tbl = catalog.create_table("db.types", data.schema)
    tbl.append(data)
    tbl.append(data.slice(1, 2))
    got, _ = check_java_equals_pyiceberg(java, tbl.metadata_location, tmp_path,
                                         what="all types")
    assert got.num_rows == 6


def test_pyiceberg_partitioned(java, catalog, tmp_path):
    # pyiceberg writes at most one partition field per source column.
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "cat", StringType(), required=False),
        NestedField(3, "ts", TimestampType(), required=False),
        NestedField(4, "n", IntegerType(), required=False),
        NestedField(5, "dt", DateType(), required=False),
        NestedField(6, "tz", TimestamptzType(), required=False),
    )
    spec = PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="cat"),
        PartitionField(source_id=1, field_id=1001, transform=BucketTransform(4), name="id_b"),
        PartitionField(source_id=3, field_id=1002, transform=DayTransform(), name="ts_day"),
        PartitionField(source_id=4, field_id=1003, transform=TruncateTransform(10), name="n_t"),
        PartitionField(source_id=5, field_id=1004, transform=YearTransform(), name="dt_year"),
        PartitionField(source_id=6, field_id=1005, transform=HourTransform(), name="tz_hour"),
    )
    tbl = catalog.create_table("db.parts", schema, partition_spec=spec)
    base = datetime.datetime(2024, 1, 30, 22)
    data = pa.table({
        "id": pa.array(range(40), pa.int64()),
        "cat": pa.array([["x", "y", "zz", None][i % 4] for i in range(40)]),
        "ts": pa.array([base + datetime.timedelta(hours=7 * i) if i % 5 else None
                        for i in range(40)], pa.timestamp("us")),
        "n": pa.array([i * 3 for i in range(40)], pa.int32()),
        "dt": pa.array([datetime.date(2020 + i % 3, 1 + i % 12, 1) for i in range(40)]),
        "tz": pa.array([base + datetime.timedelta(minutes=50 * i) for i in range(40)],
                       pa.timestamp("us", tz="UTC")),
    })
    tbl.append(data)
    first = tbl.current_snapshot().snapshot_id
    # Partition evolution: old files keep their spec.
    with tbl.update_spec() as u:
        u.remove_field("ts_day")
        u.add_field("ts", MonthTransform(), "ts_month")
    tbl.append(data.slice(0, 17))
    check_java_equals_pyiceberg(java, tbl.metadata_location, tmp_path, what="partitioned")
    check_java_equals_pyiceberg(java, tbl.metadata_location, tmp_path, snapshot_id=first,
                                what="partitioned, first snapshot")


def test_pyiceberg_schema_evolution_and_time_travel(java, catalog, tmp_path):
    data = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "a": ["x", "y", None],
                     "f": pa.array([1.0, 2.5, None], pa.float32()), "gone": [1, 2, 3]})
    tbl = catalog.create_table("db.evo", data.schema)
    tbl.append(data)
    snaps = [tbl.current_snapshot().snapshot_id]
    with tbl.update_schema() as u:
        u.add_column("extra", StringType())
        u.rename_column("a", "a2")
        u.delete_column("gone")
        u.update_column("id", LongType())
        u.update_column("f", DoubleType())
    tbl.append(pa.table({"id": pa.array([4], pa.int64()), "a2": ["w"],
                         "f": pa.array([0.1], pa.float64()), "extra": ["e"]}))
    snaps.append(tbl.current_snapshot().snapshot_id)
    # A copy-on-write delete and an overwrite by filter.
    tbl.delete("id = 2")
    snaps.append(tbl.current_snapshot().snapshot_id)
    tbl.overwrite(pa.table({"id": pa.array([30], pa.int64()), "a2": ["o"],
                            "f": pa.array([3.0], pa.float64()),
                            "extra": pa.array([None], pa.string())}),
                  overwrite_filter="id = 3")
    snaps.append(tbl.current_snapshot().snapshot_id)
    got, _ = check_java_equals_pyiceberg(java, tbl.metadata_location, tmp_path,
                                         what="evolved")
    assert sorted(got.column("id").to_pylist()) == [1, 4, 30]
    for i, s in enumerate(snaps):
        check_java_equals_pyiceberg(java, tbl.metadata_location, tmp_path, snapshot_id=s,
                                    what=f"snapshot {i}")


# --------------------------------------------------------------------------
# Tables written by Java (reverse direction): merge-on-read deletes that
# pyiceberg cannot write, read by pyiceberg (and by us once we can)

JAVA_SCHEMA = {
    "type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "cat", "required": False, "type": "string"},
        {"id": 3, "name": "ts", "required": False, "type": "timestamptz"},
        {"id": 4, "name": "v", "required": False, "type": "double"},
        {"id": 5, "name": "d", "required": False, "type": "decimal(9,3)"},
        {"id": 6, "name": "tags", "required": False,
         "type": {"type": "list", "element-id": 7, "element": "string",
                  "element-required": False}},
    ]}


def java_rows(n, start=0):
    out = []
    for i in range(start, start + n):
        out.append({"id": i, "cat": ["a", "b", None][i % 3],
                    "ts": None if i % 7 == 0 else f"2024-03-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
                    "v": ["NaN", -0.0, i / 4][i % 3], "d": f"{i}.{i % 1000:03d}",
                    "tags": None if i % 4 == 0 else [f"t{i}", None]})
    return out


def live_delete_files(metadata):
    """The live delete-file entries of the current snapshot at `metadata`,
    read straight from the manifest list and manifests with fastavro (not
    through any Iceberg library): dicts of the manifest's data_file fields."""
    fastavro = require_module("fastavro")
    import io
    from conftest import as_path   # local paths, file:// and s3:// (the storage matrix)
    meta = json.loads(as_path(metadata).read_text())
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    out = []
    manifests = list(fastavro.reader(io.BytesIO(as_path(snap["manifest-list"]).read_bytes())))
    for m in manifests:
        if m.get("content", 0) != 1:   # 1: a delete manifest
            continue
        for e in fastavro.reader(io.BytesIO(as_path(m["manifest_path"]).read_bytes())):
            if e["status"] != 2:   # 2: DELETED
                out.append(e["data_file"])
    return out


def read_dv(entry):
    """The positions of one Puffin deletion-vector-v1 blob (Iceberg v3 spec:
    4-byte big-endian length of magic + vector, magic D1 D3 39 64, the
    64-bit portable roaring bitmap, CRC-32 of magic + vector), decoded here
    with pyroaring."""
    pyroaring = require_module("pyroaring")
    from conftest import as_path
    at = entry["content_offset"]
    blob = as_path(entry["file_path"]).read_bytes()[at:at + entry["content_size_in_bytes"]]
    assert len(blob) == entry["content_size_in_bytes"] >= 20
    n = int.from_bytes(blob[:4], "big")
    assert n == len(blob) - 8 and blob[4:8] == bytes([0xD1, 0xD3, 0x39, 0x64]), blob[:8]
    assert int.from_bytes(blob[-4:], "big") == zlib.crc32(blob[4:-4])
    return sorted(pyroaring.BitMap64.deserialize(blob[8:-4]))


@pytest.mark.parametrize("fmt", [2, 3])
def test_java_written_deletes(java, ours, tmp_path, fmt):
    """Real merge-on-read deletes written by Java Iceberg (pyiceberg 0.12
    writes none: it falls back to copy-on-write): position-delete files (v2)
    or Puffin deletion vectors (v3), including a second delete on a data file
    that already has one.  The manifests must list them and hold exactly the
    deleted rows' positions (decoded with pyarrow / pyroaring); Java,
    pyiceberg and HyperStreamDB must read the same rows."""
    table = tmp_path / f"jt{fmt}"
    (tmp_path / "schema.json").write_text(json.dumps(JAVA_SCHEMA))
    java.call("create", str(table), str(tmp_path / "schema.json"), "--partition",
              "cat, bucket(4, id)", "--format-version", str(fmt))
    for k in range(2):
        p = tmp_path / f"rows{k}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in java_rows(30, 30 * k)))
        java.call("append", str(table), str(p))
    before = java.call("current-metadata", str(table))[0]
    assert live_delete_files(before) == []
    # where every row lives (file, position), by Java
    where = {r["id"]: (r["_file"], r["_pos"])
             for r in java.read(before, columns=["id", "_file", "_pos"], tmp=tmp_path)}
    assert sorted(where) == list(range(60))
    java.call("delete", str(table), "cat", '"a"')   # every third row, several files
    # then twice more in one data file that keeps live rows
    by_file = {}
    for i in sorted(where):
        if i % 3:
            by_file.setdefault(where[i][0], []).append(i)
    path, ids_in = max(by_file.items(), key=lambda kv: (len(kv[1]), kv[0]))
    assert len(ids_in) >= 3, by_file
    x1, x2 = ids_in[0], ids_in[-1]
    java.call("delete", str(table), "id", str(x1))
    java.call("delete", str(table), "id", str(x2))
    meta = java.call("current-metadata", str(table))[0]
    deleted = [i for i in range(60) if i % 3 == 0 or i in (x1, x2)]
    want_pos = {}
    for i in deleted:
        want_pos.setdefault(where[i][0], set()).add(where[i][1])

    # the delete files, as the manifests list them
    dfs = live_delete_files(meta)
    assert dfs and all(d["content"] == 1 for d in dfs), dfs   # 1: position deletes
    got_pos = {}
    if fmt == 2:
        assert all(d["file_format"].upper() == "PARQUET" for d in dfs), dfs
        # one file per data file of cat "a" (all but `path`), one per later delete
        assert len(dfs) == (len(want_pos) - 1) + 2, (len(dfs), len(want_pos))
        for d in dfs:
            t = pq.read_table(_local(d["file_path"]))
            assert t.num_rows == d["record_count"]
            for fp, pos in zip(t.column("file_path").to_pylist(), t.column("pos").to_pylist()):
                assert pos not in got_pos.get(fp, set()), (fp, pos)
                got_pos.setdefault(fp, set()).add(pos)
    else:
        assert all(d["file_format"].upper() == "PUFFIN" for d in dfs), dfs
        refs = [d["referenced_data_file"] for d in dfs]
        assert len(refs) == len(set(refs)) == len(want_pos), refs   # one DV per data file
        for d in dfs:
            pos = read_dv(d)
            assert len(pos) == d["record_count"], d
            got_pos[d["referenced_data_file"]] = set(pos)
        assert len(got_pos[path]) == len(want_pos[path])   # the merged DV of the 3 deletes
    assert got_pos == want_pos

    # three readers agree, and on the right rows
    got, jrows = check_java_equals_pyiceberg(java, meta, tmp_path,
                                             what=f"java v{fmt} deletes")
    assert sorted(got.column("id").to_pylist()) == [i for i in range(60) if i not in deleted]
    t = ours.open_metadata(meta)
    try:
        mine = ours.scan(t)
    finally:
        ours.lib.hs_table_close(t)
    assert_same_rows(canon_arrow(mine), canon_jsonl(jrows, mine.schema),
                     f"java v{fmt} deletes: ours vs java")
    check_java_equals_pyiceberg(java, before, tmp_path, what=f"java v{fmt} before deletes")
    if fmt == 3:
        rows = java.read(meta, columns=["id", "_row_id", "_last_updated_sequence_number"],
                         tmp=tmp_path)
        # Row lineage (spec): the first append's rows get _row_id 0..29 at
        # sequence number 1, the second's 30..59 at 2, each file numbered from
        # its manifest's first_row_id (so ids pair with row ids only by range).
        assert len(rows) == 60 - len(deleted) and len({r["_row_id"] for r in rows}) == len(rows)
        for r in rows:
            first = r["id"] < 30
            assert (r["_row_id"] < 30) == first, r
            assert r["_last_updated_sequence_number"] == (1 if first else 2), r


# --------------------------------------------------------------------------
# Tables written by HyperStreamDB through the public C API

class _CreateOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),  # 0: the 0.1 layout
                ("arrow_schema", ctypes.c_void_p), ("schema_json", ctypes.c_char_p),
                ("partition_spec", ctypes.c_char_p), ("sort_order", ctypes.c_char_p),
                ("property_keys", ctypes.c_void_p), ("property_values", ctypes.c_void_p),
                ("n_properties", ctypes.c_int), ("format_version", ctypes.c_int),
                ("location", ctypes.c_char_p)]


class _ScanOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),  # 0: the 0.1 layout
                ("use_snapshot_id", ctypes.c_int), ("snapshot_id", ctypes.c_int64),
                ("use_as_of", ctypes.c_int), ("as_of_ms", ctypes.c_int64),
                ("ref", ctypes.c_char_p), ("columns", ctypes.c_void_p),
                ("n_columns", ctypes.c_int), ("filter", ctypes.c_char_p),
                ("include_row_lineage", ctypes.c_int), ("batch_size", ctypes.c_int64)]


class _ArrowSchemaBuf(ctypes.Structure):
    _fields_ = [("format", ctypes.c_void_p), ("name", ctypes.c_void_p),
                ("metadata", ctypes.c_void_p), ("flags", ctypes.c_int64),
                ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
                ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("private_data", ctypes.c_void_p)]


class OurTables:
    """ctypes over include/hyperstream/table.h (the calls these tests need)."""

    def __init__(self, lib):
        self.lib = lib
        p, c, i64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64
        sigs = {
            "hs_catalog_open_path": [c, p, p],
            "hs_catalog_close": [p],
            "hs_table_create": [p, c, p, p, p],
            "hs_table_close": [p],
            "hs_table_append": [p, p, p],
            "hs_table_delete": [p, c, p, p],
            "hs_table_update_schema": [p, c, p],
            "hs_table_update_spec": [p, c, p],
            "hs_table_scan": [p, p, p, p],
            "hs_table_metadata_location": [p],
            "hs_table_open_metadata": [c, p, p],
            "hs_table_current_snapshot_id": [p],
        }
        for name, args in sigs.items():
            f = getattr(lib, name)
            f.argtypes = args
            f.restype = ctypes.c_int
        lib.hs_catalog_close.restype = None
        lib.hs_table_close.restype = None
        lib.hs_table_metadata_location.restype = c
        lib.hs_table_current_snapshot_id.restype = i64

    @staticmethod
    def _check(rc, err):
        if rc != 0:
            raise HsError(rc, err.msg.decode("utf-8", "replace"))

    def open_catalog(self, warehouse):
        cat, err = ctypes.c_void_p(), _HsErrorStruct()
        self._check(self.lib.hs_catalog_open_path(str(warehouse).encode(), ctypes.byref(cat),
                                                  ctypes.byref(err)), err)
        return cat

    def create(self, cat, name, schema, spec=None, fmt=2):
        sch = _ArrowSchemaBuf()
        schema._export_to_c(ctypes.addressof(sch))
        opt = _CreateOptions(arrow_schema=ctypes.addressof(sch),
                             partition_spec=spec.encode() if spec else None,
                             format_version=fmt)
        t, err = ctypes.c_void_p(), _HsErrorStruct()
        try:
            rc = self.lib.hs_table_create(cat, name.encode(), ctypes.byref(opt),
                                          ctypes.byref(t), ctypes.byref(err))
        finally:
            pa.Schema._import_from_c(ctypes.addressof(sch))  # borrowed: release it here
        self._check(rc, err)
        return t

    def append(self, t, data):
        stream = _ArrowArrayStream()
        reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
        reader._export_to_c(ctypes.addressof(stream))
        err = _HsErrorStruct()
        rc = self.lib.hs_table_append(t, ctypes.byref(stream), ctypes.byref(err))
        assert stream.release is None, "hs_table_append did not release its input"
        self._check(rc, err)

    def delete(self, t, filt):
        n, err = ctypes.c_int64(), _HsErrorStruct()
        self._check(self.lib.hs_table_delete(t, filt.encode(), ctypes.byref(n),
                                             ctypes.byref(err)), err)
        return n.value

    def update_schema(self, t, changes):
        err = _HsErrorStruct()
        self._check(self.lib.hs_table_update_schema(t, json.dumps(changes).encode(),
                                                    ctypes.byref(err)), err)

    def update_spec(self, t, spec):
        err = _HsErrorStruct()
        self._check(self.lib.hs_table_update_spec(t, spec.encode(), ctypes.byref(err)), err)

    def scan(self, t, snapshot_id=None, row_lineage=False):
        opt = _ScanOptions(include_row_lineage=1 if row_lineage else 0)
        if snapshot_id is not None:
            opt.use_snapshot_id, opt.snapshot_id = 1, snapshot_id
        stream, err = _ArrowArrayStream(), _HsErrorStruct()
        self._check(self.lib.hs_table_scan(t, ctypes.byref(opt), ctypes.byref(stream),
                                           ctypes.byref(err)), err)
        return pa.RecordBatchReader._import_from_c(ctypes.addressof(stream)).read_all()

    def open_metadata(self, path):
        """Read-only handle on one metadata file; caller closes with hs_table_close."""
        t, err = ctypes.c_void_p(), _HsErrorStruct()
        self._check(self.lib.hs_table_open_metadata(str(path).encode(), ctypes.byref(t),
                                                    ctypes.byref(err)), err)
        return t

    def metadata_location(self, t):
        return self.lib.hs_table_metadata_location(t).decode()

    def snapshot_id(self, t):
        return self.lib.hs_table_current_snapshot_id(t)


@pytest.fixture(scope="module")
def ours():
    require(LIB_PATH.exists(), f"{LIB_PATH} not built (set HS_BUILD)")
    lib = ctypes.CDLL(str(LIB_PATH))
    return OurTables(lib)


def _local(path):
    return path[len("file://"):] if path.startswith("file://") else path


def check_three_way(java, ours, t, tmp_path, snapshot_id=None, what=""):
    """Java == pyiceberg (up to its quirks) and Java == our scan exactly, on a
    table we wrote."""
    meta = _local(ours.metadata_location(t))
    want, jrows = check_java_equals_pyiceberg(java, meta, tmp_path, snapshot_id=snapshot_id,
                                              what=what)
    got = ours.scan(t, snapshot_id=snapshot_id)
    assert got.schema.names == want.schema.names, f"{what}: columns differ"
    assert_same_rows(canon_arrow(got), canon_jsonl(jrows, got.schema), f"{what} ours vs java")
    return want


def test_ours_all_types(java, ours, tmp_path):
    data = all_types_table()
    cat = ours.open_catalog(tmp_path / "wh")
    t = ours.create(cat, "types", data.schema)
    try:
        ours.append(t, data)
        ours.append(t, data.slice(1, 2))
        got = check_three_way(java, ours, t, tmp_path, what="ours, all types")
        assert got.num_rows == 6
    finally:
        ours.lib.hs_table_close(t)
        ours.lib.hs_catalog_close(cat)


@pytest.mark.parametrize("spec", [
    "identity(cat)", "bucket(4, id)", "truncate(2, cat)", "day(ts)", "month(ts)",
    "year(ts)", "hour(ts)", "void(n)", "cat, bucket(3, n), day(ts)",
])
def test_ours_partitioned(java, ours, tmp_path, spec):
    base = datetime.datetime(2023, 12, 31, 20)
    data = pa.table({
        "id": pa.array(range(30), pa.int64()),
        "cat": pa.array([["xy", "yz", "zzz", None][i % 4] for i in range(30)]),
        "ts": pa.array([base + datetime.timedelta(hours=5 * i) if i % 6 else None
                        for i in range(30)], pa.timestamp("us")),
        "n": pa.array([i * 7 for i in range(30)], pa.int32()),
    })
    cat = ours.open_catalog(tmp_path / "wh")
    t = ours.create(cat, "parts", data.schema, spec=spec)
    try:
        ours.append(t, data)
        check_three_way(java, ours, t, tmp_path, what=f"ours, partitioned by {spec}")
    finally:
        ours.lib.hs_table_close(t)
        ours.lib.hs_catalog_close(cat)


@pytest.mark.parametrize("fmt", [2, 3])
def test_ours_evolution_deletes_time_travel(java, ours, tmp_path, fmt):
    data = pa.table({"id": pa.array(range(20), pa.int32()),
                     "a": pa.array([f"s{i}" for i in range(20)]),
                     "f": pa.array([i / 2 for i in range(20)], pa.float32()),
                     "gone": pa.array(range(20), pa.int64())})
    cat = ours.open_catalog(tmp_path / "wh")
    t = ours.create(cat, "evo", data.schema, spec="bucket(2, id)", fmt=fmt)
    try:
        ours.append(t, data)
        snaps = [ours.snapshot_id(t)]
        ours.update_schema(t, [{"op": "add", "name": "extra", "type": "string"},
                               {"op": "rename", "name": "a", "to": "a2"},
                               {"op": "drop", "name": "gone"},
                               {"op": "update", "name": "id", "type": "long"},
                               {"op": "update", "name": "f", "type": "double"}])
        ours.append(t, pa.table({"id": pa.array([100, 101], pa.int64()),
                                 "a2": ["n1", "n2"], "f": pa.array([0.1, None]),
                                 "extra": ["e", None]}))
        snaps.append(ours.snapshot_id(t))
        ours.update_spec(t, "truncate(2, a2)")
        ours.append(t, pa.table({"id": pa.array([200], pa.int64()), "a2": ["p"],
                                 "f": pa.array([2.0]), "extra": ["x"]}))
        snaps.append(ours.snapshot_id(t))
        assert ours.delete(t, "id < 5 OR id = 101") == 6  # position deletes / DVs
        snaps.append(ours.snapshot_id(t))
        assert ours.delete(t, "id = 7") == 1               # a second delete on one file
        snaps.append(ours.snapshot_id(t))
        got = check_three_way(java, ours, t, tmp_path, what=f"ours v{fmt} current")
        assert sorted(got.column("id").to_pylist()) == \
            [i for i in range(5, 20) if i != 7] + [100, 200]
        for i, s in enumerate(snaps):
            check_three_way(java, ours, t, tmp_path, snapshot_id=s,
                            what=f"ours v{fmt} snapshot {i}")
        if fmt == 3:
            meta = _local(ours.metadata_location(t))
            jrows = java.read(meta, columns=["id", "_row_id", "_last_updated_sequence_number"],
                              tmp=tmp_path)
            mine = ours.scan(t, row_lineage=True).to_pylist()
            key = lambda r: (r["id"], r["_row_id"], r["_last_updated_sequence_number"])  # noqa
            assert sorted(map(key, jrows)) == sorted(map(key, mine))
    finally:
        ours.lib.hs_table_close(t)
        ours.lib.hs_catalog_close(cat)

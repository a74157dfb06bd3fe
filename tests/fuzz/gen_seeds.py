#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets that read Avro, Iceberg and
Parquet files: tests/fuzz/seeds-fuzz_{avro,manifest,parquet_file}/.

The files come from independent writers (fastavro, pyiceberg, pyarrow), so the
fuzzers start from inputs that other engines produce, and none of them needs
../shared.  Run from the repository root with the test venv:
    .venv/bin/python tests/fuzz/gen_seeds.py
The outputs are committed; rerunning rewrites them (pyiceberg's file names
and UUIDs change, the structure does not)."""
import io
import os
import shutil
import struct
import sys
import tempfile
import zlib

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))


def out_dir(target):
    d = os.path.join(HERE, "seeds-" + target)
    os.makedirs(d, exist_ok=True)
    return d


def write(target, name, data):
    with open(os.path.join(out_dir(target), name), "wb") as f:
        f.write(data)


def avro_bytes(schema, records, codec="null", sync_interval=16000):
    b = io.BytesIO()
    fastavro.writer(b, fastavro.parse_schema(schema), records, codec=codec,
                    sync_interval=sync_interval)
    return b.getvalue()


def avro_seeds():
    entry = {
        "type": "record", "name": "manifest_entry", "fields": [
            {"name": "status", "type": "int", "field-id": 0},
            {"name": "snapshot_id", "type": ["null", "long"], "default": None, "field-id": 1},
            {"name": "data_file", "field-id": 2, "type": {
                "type": "record", "name": "r2", "fields": [
                    {"name": "file_path", "type": "string", "field-id": 100},
                    {"name": "record_count", "type": "long", "field-id": 103},
                    {"name": "column_sizes", "field-id": 108, "default": None, "type": [
                        "null", {"type": "array", "logicalType": "map", "items": {
                            "type": "record", "name": "k117_v118", "fields": [
                                {"name": "key", "type": "int", "field-id": 117},
                                {"name": "value", "type": "long", "field-id": 118}]}}]},
                    {"name": "lower", "type": ["null", "bytes"], "field-id": 125},
                    {"name": "ratio", "type": "double"},
                    {"name": "f", "type": "float"},
                    {"name": "ok", "type": "boolean"},
                    {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
                    {"name": "uuid", "type": ["null", {"type": "fixed", "name": "u16", "size": 16}]},
                    {"name": "props", "type": {"type": "map", "values": "string"}},
                ]}},
        ]}
    recs = []
    for i in range(6):
        recs.append({"status": i % 3, "snapshot_id": None if i % 2 else 1000 + i, "data_file": {
            "file_path": "data/%05d.parquet" % i, "record_count": i * 10,
            "column_sizes": None if i == 3 else [{"key": k, "value": k * i} for k in range(i)],
            "lower": None if i % 2 else bytes([i, 255 - i]), "ratio": i / 3, "f": -1.5 * i,
            "ok": bool(i & 1), "kind": "AB"[i % 2], "uuid": None if i == 1 else bytes(range(i, i + 16)),
            "props": {"k%d" % j: "v" * j for j in range(i % 3)}}})
    write("fuzz_avro", "manifest_like_null.avro", avro_bytes(entry, recs))
    write("fuzz_avro", "manifest_like_deflate.avro", avro_bytes(entry, recs, "deflate"))
    for codec in ("snappy", "zstandard"):   # need cramjam / zstandard beside fastavro
        try:
            write("fuzz_avro", "manifest_like_%s.avro" % codec, avro_bytes(entry, recs, codec))
        except ValueError as e:
            print("skipping the %s seed: %s" % (codec, e), file=sys.stderr)
    # many small blocks, nested arrays and maps
    nested = {"type": "record", "name": "n", "fields": [
        {"name": "a", "type": {"type": "array", "items": {"type": "array", "items": "int"}}},
        {"name": "m", "type": {"type": "map", "values": {"type": "map", "values": "long"}}},
        {"name": "u", "type": ["null", "string", "double"]}]}
    recs = [{"a": [[j] * j for j in range(i)], "m": {"x%d" % j: {"y": j} for j in range(i)},
             "u": [None, "s", 1.5][i % 3]} for i in range(8)]
    write("fuzz_avro", "nested_small_blocks.avro", avro_bytes(nested, recs, sync_interval=1))
    write("fuzz_avro", "long_only.avro", avro_bytes("long", list(range(-5, 50))))
    write("fuzz_avro", "empty_record.avro",
          avro_bytes({"type": "record", "name": "e", "fields": []}, [{}] * 3))


def iceberg_seeds():
    from pyiceberg.catalog.sql import SqlCatalog
    tmp = tempfile.mkdtemp(prefix="hs-seeds-")
    try:
        cat = SqlCatalog("seed", uri="sqlite:///%s/cat.db" % tmp, warehouse="file://%s" % tmp)
        cat.create_namespace("ns")
        from pyiceberg.partitioning import PartitionSpec, PartitionField
        from pyiceberg.schema import Schema
        from pyiceberg.transforms import IdentityTransform
        from pyiceberg.types import NestedField, LongType, StringType, DoubleType
        schema = Schema(NestedField(1, "id", LongType(), required=False),
                        NestedField(2, "cat", StringType(), required=False),
                        NestedField(3, "x", DoubleType(), required=False))
        spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(),
                                            name="cat"))
        for name, sp, props in (("unpart_v2", PartitionSpec(), {}),
                                ("part_v2", spec, {}),
                                ("unpart_v1", PartitionSpec(), {"format-version": "1"})):
            t = cat.create_table("ns." + name, schema=schema, partition_spec=sp, properties=props)
            data = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                             "cat": ["a", "b", None], "x": [0.5, None, float("nan")]})
            t.append(data)
            t.append(data.slice(0, 1))
            t.delete("id = 2")   # copy-on-write: a manifest with deleted entries
            t = cat.load_table("ns." + name)
            meta_dir = os.path.join(t.location().replace("file://", ""), "metadata")
            for f in sorted(os.listdir(meta_dir)):
                if not f.endswith(".avro"):
                    continue
                kind = "list" if f.startswith("snap-") else "manifest"
                with open(os.path.join(meta_dir, f), "rb") as fh:
                    data_bytes = fh.read()
                # one manifest and one list per table keep the corpus small
                tag = "%s_%s.avro" % (name, kind)
                if not os.path.exists(os.path.join(out_dir("fuzz_manifest"), tag)) or kind == "list":
                    write("fuzz_manifest", tag, data_bytes)
    finally:
        shutil.rmtree(tmp)
    # a deletion-vector-v1 blob (Iceberg v3 spec) over positions {1, 5, 70000}: a
    # portable roaring bitmap per high 32 bits, length and CRC big-endian
    write("fuzz_manifest", "dv_blob.bin", dv_blob([1, 5, 70000]))
    # the same blob inside a Puffin file, with its footer
    blob = dv_blob([0, 2, 4])
    footer = ('{"blobs":[{"type":"deletion-vector-v1","fields":[2147483645],"snapshot-id":-1,'
              '"sequence-number":-1,"offset":4,"length":%d,"properties":{"referenced-data-file":'
              '"data/a.parquet","cardinality":"3"}}],"properties":{"created-by":"seed"}}'
              % len(blob)).encode()
    puffin = b"PFA1" + blob + b"PFA1" + footer + struct.pack("<II", len(footer), 0) + b"PFA1"
    write("fuzz_manifest", "dv.puffin", puffin)


def portable_roaring(values):
    """CRoaring's portable format, array containers only (no runs)."""
    by_key = {}
    for v in sorted(set(values)):
        by_key.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(by_key)
    out = struct.pack("<II", 12346, len(keys))
    for k in keys:
        out += struct.pack("<HH", k, len(by_key[k]) - 1)
    off = len(out) + 4 * len(keys)
    for k in keys:
        out += struct.pack("<I", off)
        off += 2 * len(by_key[k])
    for k in keys:
        out += b"".join(struct.pack("<H", x) for x in by_key[k])
    return out


def dv_blob(positions):
    body = struct.pack("<Q", 1) + struct.pack("<I", 0) + portable_roaring(positions)
    magic = bytes([0xD1, 0xD3, 0x39, 0x64])
    crc = zlib.crc32(magic + body) & 0xFFFFFFFF
    return struct.pack(">I", 4 + len(body)) + magic + body + struct.pack(">I", crc)


def parquet_seeds():
    t = pa.table({"i": pa.array([1, None, 3, 4], pa.int32()),
                  "s": ["a", "bb", None, "a"],
                  "d": pa.array([0.5, 1.5, None, -2.0]),
                  "l": pa.array([[1.0, 2.0], None, [], [3.0]], pa.list_(pa.float32())),
                  "b": [True, False, None, True]})
    for name, kw in (("plain_none", dict(compression="none", use_dictionary=False)),
                     ("dict_zstd", dict(compression="zstd")),
                     ("snappy_pageindex", dict(compression="snappy", write_page_index=True,
                                               data_page_size=64)),
                     ("v2_pages", dict(compression="none", data_page_version="2.0"))):
        b = io.BytesIO()
        pq.write_table(t, b, **kw)
        write("fuzz_parquet_file", name + ".parquet", b.getvalue())


if __name__ == "__main__":
    avro_seeds()
    iceberg_seeds()
    parquet_seeds()
    for t in ("fuzz_avro", "fuzz_manifest", "fuzz_parquet_file"):
        d = out_dir(t)
        print(t, len(os.listdir(d)), "files", sum(os.path.getsize(os.path.join(d, f))
                                                  for f in os.listdir(d)), "bytes", file=sys.stderr)

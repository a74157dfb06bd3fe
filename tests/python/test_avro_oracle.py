"""Our Avro container codec against fastavro, the independent oracle.

fastavro writes containers (null and deflate codecs, several blocks) that we
must read; we write containers that fastavro must read back equal, with the
Iceberg attributes (field-id, element-id) and header metadata intact.
"""
import ctypes
import io
import json
import math
import os
import random

import pytest

from conftest import LIB_PATH, require, require_module

fastavro = require_module("fastavro")


class HsError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


@pytest.fixture(scope="module")
def lib():
    require(LIB_PATH.exists(), f"{LIB_PATH} not built (set HS_BUILD)")
    lib = ctypes.CDLL(str(LIB_PATH))
    lib.hs_avro_file_to_jsonl.restype = ctypes.c_void_p
    lib.hs_avro_file_to_jsonl.argtypes = [ctypes.c_char_p, ctypes.POINTER(HsError)]
    lib.hs_avro_jsonl_to_file.restype = ctypes.c_int
    lib.hs_avro_jsonl_to_file.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                          ctypes.c_char_p, ctypes.POINTER(HsError)]
    lib.hs_free.argtypes = [ctypes.c_void_p]
    return lib


SCHEMA = {
    "type": "record", "name": "manifest_entry", "fields": [
        {"name": "status", "type": "int", "field-id": 0},
        {"name": "snapshot_id", "type": ["null", "long"], "default": None, "field-id": 1},
        {"name": "data_file", "field-id": 2, "type": {
            "type": "record", "name": "r2", "fields": [
                {"name": "file_path", "type": "string", "field-id": 100},
                {"name": "record_count", "type": "long", "field-id": 103},
                {"name": "value_counts", "field-id": 109, "default": None, "type": ["null", {
                    "type": "array", "logicalType": "map", "items": {
                        "type": "record", "name": "k119_v120", "fields": [
                            {"name": "key", "type": "int", "field-id": 119},
                            {"name": "value", "type": "long", "field-id": 120}]}}]},
                {"name": "lower", "type": ["null", "bytes"], "default": None, "field-id": 125},
                {"name": "ratio", "type": "double"},
                {"name": "f32", "type": "float"},
                {"name": "ok", "type": "boolean"},
                {"name": "uuid", "type": ["null", {"type": "fixed", "name": "u16", "size": 16}]},
                {"name": "props", "type": {"type": "map", "values": "string"}},
                {"name": "split_offsets", "type": ["null", {"type": "array", "items": "long",
                                                             "element-id": 133}]},
            ]}},
    ]}


def random_record(rng):
    return {
        "status": rng.choice([0, 1, 2]),
        "snapshot_id": rng.choice([None, rng.randint(-2**63, 2**63 - 1)]),
        "data_file": {
            "file_path": "".join(rng.choice("abcé/日本.-_") for _ in range(rng.randint(0, 40))),
            "record_count": rng.randint(-2**63, 2**63 - 1),
            "value_counts": rng.choice([None, [{"key": rng.randint(-2**31, 2**31 - 1),
                                                "value": rng.randint(0, 2**40)}
                                               for _ in range(rng.randint(0, 5))]]),
            "lower": rng.choice([None, bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 20)))]),
            "ratio": rng.choice([0.0, -0.0, 1.5, rng.uniform(-1e300, 1e300), math.inf, -math.inf]),
            "f32": rng.choice([0.0, 1.5, -2.25, 3.0e38]),
            "ok": rng.random() < 0.5,
            "uuid": rng.choice([None, bytes(rng.randint(0, 255) for _ in range(16))]),
            "props": {f"k{i}": f"v{rng.randint(0, 9)}" for i in range(rng.randint(0, 3))},
            "split_offsets": rng.choice([None, [rng.randint(0, 2**50) for _ in range(rng.randint(0, 4))]]),
        },
    }


def to_ours(rec):
    """fastavro's Python values -> the JSON Lines conventions of hs_avro_to_jsonl."""
    def conv(v):
        if isinstance(v, bytes):
            return v.hex()
        if isinstance(v, float):
            if math.isnan(v):
                return "NaN"
            if math.isinf(v):
                return "Infinity" if v > 0 else "-Infinity"
            return v
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v
    return conv(rec)


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_we_read_fastavro(lib, tmp_path, codec):
    rng = random.Random(7)
    recs = [random_record(rng) for _ in range(3000)]
    path = tmp_path / "fa.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(SCHEMA), recs, codec=codec, sync_interval=4000,
                        metadata={"format-version": "2", "partition-spec": "[]"})
    err = HsError()
    p = lib.hs_avro_file_to_jsonl(str(path).encode(), ctypes.byref(err))
    assert p, err.msg.decode()
    text = ctypes.string_at(p).decode()
    lib.hs_free(p)
    got = [json.loads(line) for line in text.splitlines()]
    assert len(got) == len(recs)
    for g, r in zip(got, recs):
        # floats: fastavro stores f32 as float32; compare through the same rounding
        want = to_ours(r)
        assert _close(g, want), (g, want)


def _close(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-7)
    return a == b


@pytest.mark.parametrize("deflate", [0, 1])
def test_fastavro_reads_ours(lib, tmp_path, deflate):
    rng = random.Random(11)
    recs = [random_record(rng) for _ in range(2000)]
    jsonl = "\n".join(json.dumps(to_ours(r)) for r in recs)
    path = tmp_path / "ours.avro"
    err = HsError()
    rc = lib.hs_avro_jsonl_to_file(json.dumps(SCHEMA).encode(), jsonl.encode(), deflate,
                                   str(path).encode(), ctypes.byref(err))
    assert rc == 0, err.msg.decode()
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        got = list(reader)
        # the schema text we wrote is kept verbatim: Iceberg's attributes survive
        schema = json.loads(reader.metadata["avro.schema"])
        assert reader.metadata["avro.codec"] == ("deflate" if deflate else "null")
    df = schema["fields"][2]["type"]["fields"]
    assert schema["fields"][0]["field-id"] == 0
    assert df[2]["field-id"] == 109
    assert df[2]["type"][1]["items"]["fields"][0]["field-id"] == 119
    assert df[-1]["type"][1]["element-id"] == 133
    assert len(got) == len(recs)
    for g, r in zip(got, recs):
        assert _close(to_ours(g), to_ours(r))

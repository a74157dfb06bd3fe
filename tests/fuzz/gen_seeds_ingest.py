#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_ingest (tests/fuzz/seeds-fuzz_ingest/):
CSV and JSON Lines written by Python's csv and json modules, with and
without a given schema, covering every type family the reader knows.

Input layout (see tests/fuzz/fuzz_ingest.c): one mode byte (bit 0 CSV,
bit 1 given schema, bits 2+ batch/sample rows - 1), then for a given schema
its text up to a NUL, then the data.  Needs no ../shared; rerun from the
repository root with `python3 tests/fuzz/gen_seeds_ingest.py`."""
import csv
import io
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "seeds-fuzz_ingest")

ROWS = [
    {"id": 1, "name": "alpha", "score": 1.5, "ok": True, "day": "2024-01-02",
     "ts": "2024-01-02T03:04:05.123456", "tags": ["a", "b"], "pt": {"x": 1, "y": -2.5},
     "bin": "AQI=", "dec": "-12.340", "m": [{"key": "k", "value": 3}]},
    {"id": -9223372036854775808, "name": "", "score": "NaN", "ok": False, "day": "-0044-03-15",
     "ts": "1969-12-31T23:59:59.999999", "tags": [], "pt": None, "bin": "", "dec": "0.000",
     "m": []},
    {"id": None, "name": "quote \" comma , newline \n tab \t é ☃", "score": "-Infinity",
     "ok": None, "day": None, "ts": None, "tags": None, "pt": {"x": None, "y": 1e300},
     "bin": None, "dec": None, "m": None},
    {"id": 18446744073709551615, "name": "x" * 40, "score": 5e-324, "ok": True,
     "day": "9999-12-31", "ts": "2262-04-11T23:47:16.854775", "tags": ["", None],
     "pt": {"x": 2147483647, "y": -0.0}, "bin": "////", "dec": "99999999.999", "m": None},
]

SCHEMA = ("struct<id: int64, name: string, score: double, ok: bool, day: date32, "
          "ts: timestamp[us], tags: list<string>, pt: struct<x: int32, y: double>, "
          "bin: binary, dec: decimal128(11, 3), m: map<string, int64>>")


def jsonl(rows):
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def csvtext(rows, delim=","):
    b = io.StringIO()
    w = csv.writer(b, delimiter=delim, lineterminator="\r\n")
    keys = list(rows[0])
    w.writerow(keys)
    for r in rows:
        w.writerow(["" if r[k] is None else
                    json.dumps(r[k]) if isinstance(r[k], (list, dict)) else
                    ("true" if r[k] else "false") if isinstance(r[k], bool) else r[k]
                    for k in keys])
    return b.getvalue().encode()


def mode(csv_, given, rows=3):
    return bytes([(1 if csv_ else 0) | (2 if given else 0) | ((rows - 1) << 2)])


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {
        "jsonl_infer": mode(False, False) + jsonl(ROWS),
        "jsonl_given": mode(False, True) + SCHEMA.encode() + b"\0" + jsonl(ROWS),
        "jsonl_infer_one": mode(False, False, 1) + jsonl(ROWS[:1]) + b"{}\n\n{\"id\": 2}\n",
        "jsonl_schema_json": mode(False, True, 2) + json.dumps({"fields": [
            {"name": "id", "type": "int64", "nullable": False, "field_id": 1},
            {"name": "v", "type": "fixed_size_list<float>[3]"},
            {"name": "u", "type": "uuid"},
            {"name": "t", "type": "timestamp[ns, tz=UTC]"},
            {"name": "h", "type": "float16"}]}).encode() + b"\0" + jsonl([
                {"id": 1, "v": [1, 2.5, -3], "u": "0123abcd-0000-4000-8000-00000000beef",
                 "t": "2024-01-02T03:04:05.123456789Z", "h": 0.333},
                {"id": 2, "v": None, "u": None, "t": None, "h": "Infinity"}]),
        "csv_infer": mode(True, False) + csvtext(ROWS),
        "csv_given": mode(True, True) + SCHEMA.encode() + b"\0" + csvtext(ROWS),
        "csv_plain": mode(True, False, 2) + b"a,b,c\n1,2.5,x\n,,\n3,NaN,\"y\"\"z\"\n4,1e10,\n",
        "csv_ragged": mode(True, False, 2) + b"a,b\n1\n2,3,4\n\"open\n",
        "jsonl_types": mode(False, False, 4) + b"".join(json.dumps(v).encode() + b"\n" for v in [
            {"a": 1, "b": [1, [2]], "c": {"d": {"e": None}}},
            {"a": 1.5, "b": None, "c": {"d": {"e": "s"}}},
            {"a": "x", "b": [], "c": None, "z": True},
            {"a": 12345678901234567890123, "b": [None], "c": {"d": None}},
        ]),
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()

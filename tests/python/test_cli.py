"""Black-box tests of the `hyperstream` CLI's Parquet tools against pyarrow.

The oracle is pyarrow: `parquet cat` output must equal pyarrow's reading of the
same file put through `arrow_to_json` below, an independent implementation of
the JSON Lines conventions of docs/jsonl.md; `convert` output must read back in
pyarrow as the input rows; `meta` numbers must equal pyarrow's metadata.

The binary is $HS_BUILD/hyperstream (default build/hyperstream); the tests skip
when it is absent.  Corpus tests skip when ../shared/testdata is absent.
"""
import base64
import datetime
import decimal
import json
import math
import os
import random
import subprocess
import uuid

import pytest
from conftest import PARQUET_TESTING, require, require_module  # noqa: E402

pa = require_module("pyarrow")
pq = require_module("pyarrow.parquet")
np = require_module("numpy")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("HS_BUILD", os.path.join(ROOT, "build"))
if not os.path.isabs(BUILD):
    BUILD = os.path.join(ROOT, BUILD)
HS = os.path.join(BUILD, "hyperstream")
CORPUS = str(PARQUET_TESTING / "data")   # $HS_TESTDATA or ../shared/testdata

require(os.access(HS, os.X_OK), "no hyperstream binary at " + HS)


def run(*args, check=True):
    p = subprocess.run([HS, *args], capture_output=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError("hyperstream %s failed (%d): %s" % (" ".join(args), p.returncode,
                                                                 p.stderr.decode(errors="replace")))
    return p


# ---------------------------------------------------------------------------
# pyarrow -> the JSON Lines conventions (docs/jsonl.md), written independently


def _float(x):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


EPOCH = datetime.datetime(1970, 1, 1)


def _date(days):
    d = datetime.date(1970, 1, 1) + datetime.timedelta(days=days)
    return "%04d-%02d-%02d" % (d.year, d.month, d.day)


UNITS = {"s": 1, "ms": 1000, "us": 1000000, "ns": 1000000000}


def _time_of_day(v, unit):
    per = UNITS[unit]
    secs, frac = divmod(v, per)
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    if unit == "ns":
        f = "%09d" % frac
    else:
        f = "%06d" % (frac * (1000000 // per))
    return "%02d:%02d:%02d.%s" % (h, m, s, f)


def _timestamp(v, unit, tz):
    per = UNITS[unit]
    days, rem = divmod(v, per * 86400)
    text = _date(days) + "T" + _time_of_day(rem, unit)
    return text + "Z" if tz is not None else text


def _decimal(d):
    return format(d, "f")


def arrow_to_json(arr):
    """List of JSON-convention Python values for a pyarrow Array."""
    t = arr.type
    n = len(arr)
    if pa.types.is_dictionary(t):
        return arrow_to_json(arr.dictionary_decode())
    if isinstance(arr, pa.ExtensionArray):
        if str(t) in ("extension<arrow.uuid>", "uuid"):
            raw = arr.storage.to_pylist()
            return [None if b is None else str(uuid.UUID(bytes=b)) for b in raw]
        return arrow_to_json(arr.storage)
    if pa.types.is_null(t):
        return [None] * n
    valid = arr.is_valid().to_pylist() if n else []

    def mask(values):
        return [v if ok else None for v, ok in zip(values, valid)]

    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        return arr.to_pylist()
    if pa.types.is_float16(t):
        return mask([_float(float(np.float16(x))) if x is not None else None
                     for x in arr.to_numpy(zero_copy_only=False)]) if n else []
    if pa.types.is_float32(t):
        vals = arr.fill_null(0).to_numpy(zero_copy_only=False) if n else []
        # numpy's str() of a float32 is its shortest round-trip text
        return mask([_float(float(str(np.float32(x)))) if not np.isnan(x) else "NaN" for x in vals])
    if pa.types.is_float64(t):
        return [None if x is None else _float(x) for x in arr.to_pylist()]
    if pa.types.is_decimal(t):
        return [None if x is None else _decimal(x) for x in arr.to_pylist()]
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        days = arr.cast(pa.date32()).cast(pa.int32()).to_pylist()
        return [None if x is None else _date(x) for x in days]
    if pa.types.is_time(t):
        raw = arr.cast(pa.int64() if t.bit_width == 64 else pa.int32()).to_pylist()
        return [None if x is None else _time_of_day(x, t.unit) for x in raw]
    if pa.types.is_timestamp(t):
        raw = arr.cast(pa.int64()).to_pylist()
        return [None if x is None else _timestamp(x, t.unit, t.tz) for x in raw]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        raw = arr.cast(pa.large_binary()).to_pylist()
        return [None if b is None else b.decode("utf-8", "replace") for b in raw]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return [None if b is None else base64.b64encode(b).decode() for b in arr.to_pylist()]
    if pa.types.is_map(t):
        offs = arr.offsets.to_pylist()
        keys = arrow_to_json(arr.keys)
        items = arrow_to_json(arr.items)
        return mask([[{"key": keys[j], "value": items[j]} for j in range(offs[i], offs[i + 1])]
                     for i in range(n)])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offs = arr.offsets.to_pylist()
        child = arrow_to_json(arr.values)
        return mask([child[offs[i]:offs[i + 1]] for i in range(n)])
    if pa.types.is_fixed_size_list(t):
        w = t.list_size
        child = arrow_to_json(arr.values)
        base = arr.offset
        return mask([child[(base + i) * w:(base + i + 1) * w] for i in range(n)])
    if pa.types.is_struct(t):
        kids = [arrow_to_json(arr.field(k)) for k in range(t.num_fields)]
        names = [t.field(k).name for k in range(t.num_fields)]
        return mask([{names[k]: kids[k][i] for k in range(len(names))} for i in range(n)])
    raise NotImplementedError(str(t))


def table_to_rows(table):
    cols = []
    for name in table.column_names:
        vals = []
        for chunk in table.column(name).chunks:
            vals.extend(arrow_to_json(chunk))
        cols.append(vals)
    return [{name: cols[k][i] for k, name in enumerate(table.column_names)}
            for i in range(table.num_rows)]


def cat_rows(path, *extra):
    out = run("parquet", "cat", path, *extra).stdout.decode("utf-8")
    lines = [ln for ln in out.split("\n") if ln]
    return [json.loads(ln) for ln in lines], lines


# ---------------------------------------------------------------------------
# corpus: cat == pyarrow

def corpus_files():
    if not os.path.isdir(CORPUS):
        return []
    return sorted(f for f in os.listdir(CORPUS) if f.endswith(".parquet"))


@pytest.mark.parametrize("name", corpus_files() or ["<no corpus>"])
def test_cat_matches_pyarrow(name):
    if name == "<no corpus>":
        pytest.skip("parquet-testing corpus absent")  # skip-ok: ../shared/testdata (README)
    path = os.path.join(CORPUS, name)
    try:
        table = pq.read_table(path)
        want = table_to_rows(table)
    except Exception as e:  # pyarrow cannot read it (or our converter has no rule): not comparable
        pytest.skip("pyarrow: %s" % e)  # skip-ok: the oracle cannot read this file
    got, lines = cat_rows(path)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert list(g.keys()) == table.column_names, "row %d key order" % i
        assert g == w, "%s row %d:\n got  %s\n want %s" % (name, i, lines[i], w)


def test_cat_limit_and_columns(tmp_path):
    t = pa.table({"a": pa.array(range(100000), pa.int64()), "b": pa.array([str(i) for i in range(100000)]),
                  "c": pa.array([i * 0.5 for i in range(100000)])})
    path = str(tmp_path / "t.parquet")
    pq.write_table(t, path, row_group_size=30000)
    got, _ = cat_rows(path, "--limit", "5", "--columns", "c,a")
    assert len(got) == 5
    assert [set(r.keys()) for r in got] == [{"a", "c"}] * 5
    assert [(r["a"], r["c"]) for r in got] == [(i, i * 0.5) for i in range(5)]
    got, _ = cat_rows(path, "--limit", "65540")
    assert len(got) == 65540 and got[-1] == {"a": 65539, "b": "65539", "c": 65539 * 0.5}
    assert cat_rows(path, "--limit", "0")[0] == []
    p = run("parquet", "cat", path, "--columns", "nope", check=False)
    assert p.returncode == 1 and b"nope" in p.stderr


def test_cat_all_types(tmp_path):
    """Types the corpus lacks, written by pyarrow."""
    n = 7
    rnd = random.Random(7)
    t = pa.table({
        "i8": pa.array([-128, 127, 0, None, 5, 6, 7], pa.int8()),
        "u64": pa.array([0, 2 ** 64 - 1, 2 ** 63, None, 1, 2, 3], pa.uint64()),
        "f32": pa.array([0.1, float("nan"), float("inf"), -0.0, 3.4028234663852886e38, None, 1e-45],
                        pa.float32()),
        "f64": pa.array([0.1, 1 / 3, float("-inf"), 5e-324, None, 1e300, 0.1 + 0.2]),
        "dec": pa.array([decimal.Decimal("-12.340"), decimal.Decimal("0.005"), None,
                         decimal.Decimal("99999.999"), decimal.Decimal(0), decimal.Decimal("-0.001"),
                         decimal.Decimal("1")], pa.decimal128(8, 3)),
        "d": pa.array([0, -1, 11016, 2932896, -719162, None, 19000], pa.date32()),
        "t32": pa.array([0, 86399999, 3723004, None, 1, 2, 3], pa.time32("ms")),
        "t64": pa.array([0, 86399999999999, 45296789012345, None, 1, 2, 3], pa.time64("ns")),
        "ts": pa.array([0, -1, 1700000000123456, None, 253402300799000000, 1, 2],
                       pa.timestamp("us", tz="UTC")),
        "tsn": pa.array([0, -1, 1700000000123456789, None, 1, 2, 3], pa.timestamp("ns")),
        "s": pa.array(["a\"b\\c\n\t\x01", "é😀", "", None, "x" * 100, "\u2028", "z"]),
        "bin": pa.array([b"", b"\x00\xff", b"abc", None, b"abcd", bytes(range(256)), b"q"]),
        "fb": pa.array([bytes([i] * 3) for i in range(n)], pa.binary(3)),
        "l": pa.array([[1, None], [], None, [3], [4, 5, 6], [7], []], pa.list_(pa.int32())),
        "fl": pa.array([[rnd.random(), rnd.random()] for _ in range(n)], pa.list_(pa.float32(), 2)),
        "st": pa.array([{"a": 1, "b": "x"}, None, {"a": None, "b": None}, {"a": 2, "b": "y"},
                        {"a": 3, "b": ""}, {"a": 4, "b": "z"}, {"a": 5, "b": "w"}],
                       pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "m": pa.array([[("k", 1), ("z", None)], [], None, [("a", 2)], [], [("b", 3)], []],
                      pa.map_(pa.string(), pa.int64())),
    })
    path = str(tmp_path / "all.parquet")
    pq.write_table(t, path)
    got, lines = cat_rows(path)
    want = table_to_rows(pq.read_table(path))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, "row %d:\n got  %s\n want %s" % (i, lines[i], w)
    # spot-check literal encodings (docs/jsonl.md)
    assert '"u64":18446744073709551615' in lines[1]
    assert '"f32":0.1,' in lines[0] and '"f32":"NaN"' in lines[1] and '"f32":-0.0' in lines[3]
    assert '"dec":"-12.340"' in lines[0] and '"d":"1969-12-31"' in lines[1]
    assert '"ts":"1969-12-31T23:59:59.999999Z"' in lines[1]
    assert '"tsn":"2023-11-14T22:13:20.123456789"' in lines[2]


# ---------------------------------------------------------------------------
# convert

SCHEMA = {"fields": [
    {"name": "id", "type": "int64", "nullable": False, "field_id": 1},
    {"name": "u", "type": "uint64", "field_id": 2},
    {"name": "x", "type": "double"},
    {"name": "f", "type": "float32"},
    {"name": "ok", "type": "bool"},
    {"name": "name", "type": "string"},
    {"name": "blob", "type": "binary"},
    {"name": "ts", "type": "timestamp[us, UTC]"},
    {"name": "tn", "type": "timestamp[ns]"},
    {"name": "day", "type": "date32"},
    {"name": "tod", "type": "time64[us]"},
    {"name": "price", "type": "decimal(10,2)"},
    {"name": "tags", "type": "list<string>"},
    {"name": "vec", "type": "fixed_size_list<float32>[4]"},
    {"name": "s", "type": "struct<a: int32, b: list<double>>"},
    {"name": "m", "type": "map<string, int64>"},
    {"name": "id2", "type": "uuid"},
]}


def _f32(x):
    return float(str(np.float32(x)))


def price(rnd):
    whole, cents = rnd.randint(0, 99999999), rnd.randint(0, 99)
    sign = "-" if rnd.random() < 0.3 and (whole or cents) else ""
    return "%s%d.%02d" % (sign, whole, cents)


def random_rows(n, seed):
    rnd = random.Random(seed)

    def maybe(v):
        return None if rnd.random() < 0.1 else v

    words = ["alpha", "béta", "quote\"d", "back\\slash", "new\nline", "tab\t", "", "😀", "a,b"]
    rows = []
    for i in range(n):
        rows.append({
            "id": i,
            "u": maybe(rnd.choice([0, 1, 2 ** 64 - 1, 2 ** 63, rnd.getrandbits(64)])),
            "x": maybe(rnd.choice([rnd.uniform(-1e6, 1e6), 0.1, -0.0, 1e-300, "NaN", "Infinity", "-Infinity"])),
            "f": maybe(_f32(rnd.uniform(-10, 10))),
            "ok": maybe(rnd.random() < 0.5),
            "name": maybe(rnd.choice(words) + str(rnd.randint(0, 9))),
            "blob": maybe(base64.b64encode(rnd.randbytes(rnd.randint(0, 9))).decode()),
            "ts": maybe(_timestamp(rnd.randint(-10 ** 15, 10 ** 16), "us", "UTC")),
            "tn": maybe(_timestamp(rnd.randint(-10 ** 18, 10 ** 18), "ns", None)),
            "day": maybe(_date(rnd.randint(-700000, 2900000))),
            "tod": maybe(_time_of_day(rnd.randint(0, 86400 * 10 ** 6 - 1), "us")),
            "price": maybe(price(rnd)),
            "tags": maybe([maybe(rnd.choice(words)) for _ in range(rnd.randint(0, 3))]),
            "vec": maybe([_f32(rnd.uniform(-1, 1)) for _ in range(4)]),
            "s": maybe({"a": maybe(rnd.randint(-2 ** 31, 2 ** 31 - 1)),
                        "b": maybe([rnd.uniform(-1, 1) for _ in range(rnd.randint(0, 2))])}),
            "m": maybe([{"key": "k%d" % j, "value": maybe(rnd.randint(-5, 5))} for j in range(rnd.randint(0, 2))]),
            "id2": maybe(str(uuid.UUID(int=rnd.getrandbits(128)))),
        })
    return rows


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def test_convert_jsonl_with_schema_reads_back_in_pyarrow(tmp_path):
    rows = random_rows(3000, 1)
    src, sch, out = str(tmp_path / "in.jsonl"), str(tmp_path / "s.json"), str(tmp_path / "o.parquet")
    write_jsonl(src, rows)
    with open(sch, "w") as f:
        json.dump(SCHEMA, f)
    run("parquet", "convert", src, out, "--schema", sch, "--row-group-size", "1000", "--codec", "snappy")
    table = pq.read_table(out)
    assert table.num_rows == len(rows)
    assert str(table.schema.field("ts").type) == "timestamp[us, tz=UTC]"
    assert table.schema.field("id").metadata[b"PARQUET:field_id"] == b"1"
    got = table_to_rows(table)
    for i, (g, w) in enumerate(zip(got, rows)):
        assert g == w, "row %d:\n got  %s\n want %s" % (i, g, w)
    md = pq.ParquetFile(out).metadata
    assert md.num_row_groups == 3
    assert md.row_group(0).column(0).compression == "SNAPPY"
    # round trip: convert -> cat equals the input
    got2, _ = cat_rows(out)
    assert got2 == rows


def test_convert_jsonl_inferred(tmp_path):
    rows = [{"a": i, "b": i * 0.25, "c": "s%d" % i, "d": i % 2 == 0, "e": [i, i + 1],
             "f": {"g": i, "h": None}, "n": None} for i in range(50)]
    rows[3]["b"] = 7  # int among doubles stays double
    src, out = str(tmp_path / "in.jsonl"), str(tmp_path / "o.parquet")
    write_jsonl(src, rows)
    run("parquet", "convert", src, out)
    table = pq.read_table(out)
    types = {f.name: str(f.type) for f in table.schema}
    assert types["a"] == "int64" and types["b"] == "double" and types["c"] == "string"
    assert types["d"] == "bool" and types["e"].startswith("list<") and types["f"].startswith("struct<")
    assert table.column("b").to_pylist()[3] == 7.0
    assert table.column("e").to_pylist()[5] == [5, 6]
    assert table.column("f").to_pylist()[2] == {"g": 2, "h": None}


def _csv_field(v):
    if v is None:
        return ""
    s = str(v)
    if v == "" or any(c in s for c in ",\"\n\r"):
        return '"' + s.replace('"', '""') + '"'
    return s


def test_convert_csv_reads_back_in_pyarrow(tmp_path):
    rnd = random.Random(5)
    n = 2000
    ints = [None if rnd.random() < 0.1 else rnd.randint(-2 ** 63, 2 ** 63 - 1) for _ in range(n)]
    floats = [None if rnd.random() < 0.1 else rnd.uniform(-1e9, 1e9) for _ in range(n)]
    texts = [None if rnd.random() < 0.1 else rnd.choice(["x", "a,b", "q\"q", "line\nbreak", "", "é"])
             for _ in range(n)]
    bools = [None if rnd.random() < 0.1 else rnd.random() < 0.5 for _ in range(n)]
    src, out = str(tmp_path / "in.csv"), str(tmp_path / "o.parquet")
    with open(src, "w", encoding="utf-8", newline="") as f:
        f.write("i,x,s,b\r\n")
        for i in range(n):
            f.write(",".join([_csv_field(ints[i]), _csv_field(repr(floats[i]) if floats[i] is not None else None),
                              _csv_field(texts[i]),
                              _csv_field(None if bools[i] is None else ("true" if bools[i] else "false"))]) + "\r\n")
    run("parquet", "convert", src, out)
    t = pq.read_table(out)
    assert [str(f.type) for f in t.schema] == ["int64", "double", "string", "bool"]
    assert t.column("i").to_pylist() == ints
    assert t.column("x").to_pylist() == floats
    assert t.column("s").to_pylist() == texts
    assert t.column("b").to_pylist() == bools


def test_convert_options(tmp_path):
    rows = [{"id": i, "cat": "c%d" % (i % 3), "v": i * 1.5} for i in range(5000)]
    src = str(tmp_path / "in.jsonl")
    write_jsonl(src, rows)
    out = str(tmp_path / "o.parquet")
    run("parquet", "convert", src, out, "--codec", "gzip", "--no-dictionary", "--page-size", "4096",
        "--encoding", "id=delta_binary_packed", "--encoding", "v=byte_stream_split")
    md = pq.ParquetFile(out).metadata
    cols = {md.row_group(0).column(k).path_in_schema: md.row_group(0).column(k) for k in range(3)}
    assert cols["id"].compression == "GZIP"
    assert "DELTA_BINARY_PACKED" in cols["id"].encodings
    assert "BYTE_STREAM_SPLIT" in cols["v"].encodings
    assert not any("DICTIONARY" in e for e in cols["cat"].encodings)
    assert pq.read_table(out).to_pylist() == rows


# ---------------------------------------------------------------------------
# meta / schema

def test_meta_matches_pyarrow(tmp_path):
    t = pa.table({"a": pa.array(range(10000), pa.int64()), "s": pa.array(["v%d" % (i % 7) for i in range(10000)])})
    path = str(tmp_path / "t.parquet")
    pq.write_table(t, path, row_group_size=3000, write_page_index=True)
    md = pq.ParquetFile(path).metadata
    text = run("parquet", "meta", path).stdout.decode()
    assert "num_rows: %d" % md.num_rows in text
    assert "num_row_groups: %d" % md.num_row_groups in text
    for g in range(md.num_row_groups):
        assert "row group %d: rows %d," % (g, md.row_group(g).num_rows) in text
    assert "min 0 max 2999" in text and 'min "v0" max "v6"' in text
    assert "offset index yes, pages" in text
    js = json.loads(run("parquet", "meta", path, "--json").stdout)
    assert js["num_rows"] == md.num_rows
    assert len(js["row_groups"]) == md.num_row_groups


@pytest.mark.parametrize("name", corpus_files() or ["<no corpus>"])
def test_meta_corpus_counts(name):
    if name == "<no corpus>":
        pytest.skip("parquet-testing corpus absent")  # skip-ok: ../shared/testdata (README)
    path = os.path.join(CORPUS, name)
    try:
        md = pq.ParquetFile(path).metadata
    except Exception as e:
        pytest.skip("pyarrow: %s" % e)  # skip-ok: the oracle cannot read this file
    p = run("parquet", "meta", path, check=False)
    if p.returncode != 0:
        pytest.fail(p.stderr.decode(errors="replace"))
    text = p.stdout.decode(errors="replace")
    assert "num_rows: %d\n" % md.num_rows in text
    assert "num_row_groups: %d\n" % md.num_row_groups in text


def test_schema_output(tmp_path):
    t = pa.table({"id": pa.array([1], pa.int64()), "tags": pa.array([["a"]], pa.list_(pa.string()))})
    path = str(tmp_path / "t.parquet")
    pq.write_table(t, path)
    text = run("parquet", "schema", path).stdout.decode()
    assert "message schema {" in text and "optional int64 id;" in text
    assert "optional group tags (LIST) {" in text and "binary element (STRING);" in text
    assert "  tags: list<string>" in text


# ---------------------------------------------------------------------------
# errors and usage

def test_bad_input_names_line_and_column(tmp_path):
    src, sch, out = str(tmp_path / "bad.jsonl"), str(tmp_path / "s.json"), str(tmp_path / "o.parquet")
    with open(src, "w") as f:
        f.write('{"age": 1}\n{"age": 2}\n{"age": "x"}\n')
    with open(sch, "w") as f:
        json.dump({"fields": [{"name": "age", "type": "int64"}]}, f)
    p = run("parquet", "convert", src, out, "--schema", sch, check=False)
    assert p.returncode == 1
    assert p.stderr.decode().strip() == 'hyperstream: %s:3: column "age": expected int64, got string "x"' % src
    assert not os.path.exists(out)
    with open(src, "w") as f:
        f.write('{"age": 1}\n{"age": 2,}\n')
    p = run("parquet", "convert", src, out, check=False)
    assert p.returncode == 1 and (":2: column " in p.stderr.decode())
    csv = str(tmp_path / "bad.csv")
    with open(csv, "w") as f:
        f.write("a,b\n1,2\n3,x\n")
    with open(sch, "w") as f:
        json.dump({"fields": [{"name": "a", "type": "int64"}, {"name": "b", "type": "int32"}]}, f)
    p = run("parquet", "convert", csv, out, "--schema", sch, check=False)
    assert p.returncode == 1
    assert p.stderr.decode().strip() == 'hyperstream: %s:3: column "b": expected int32, got "x"' % csv


def test_usage_and_help(tmp_path):
    assert run("--help").stdout.startswith(b"Usage: hyperstream")
    assert b"convert IN OUT" in run("parquet", "--help").stdout
    assert run("parquet", check=False).returncode == 2
    assert run("parquet", "frobnicate", check=False).returncode == 2
    assert run("nosuchcommand", check=False).returncode == 2
    assert run("parquet", "cat", check=False).returncode == 2
    p = run("parquet", "cat", str(tmp_path / "missing.parquet"), check=False)
    assert p.returncode == 1 and p.stderr.startswith(b"hyperstream: ")
    notpq = str(tmp_path / "x.parquet")
    with open(notpq, "wb") as f:
        f.write(b"hello world, not parquet")
    p = run("parquet", "meta", notpq, check=False)
    assert p.returncode == 1 and p.stderr.startswith(b"hyperstream: ")


def test_demo_round_trip_is_byte_identical(tmp_path):
    """The demo table (make run): convert then cat reproduces the input bytes."""
    src, out, sch = str(tmp_path / "d.jsonl"), str(tmp_path / "d.parquet"), str(tmp_path / "s.json")
    run("demo", "generate", "3000", src)
    with open(sch, "w") as f:
        json.dump({"fields": [
            {"name": "id", "type": "int64", "nullable": False}, {"name": "category", "type": "string"},
            {"name": "price", "type": "double"}, {"name": "ts", "type": "timestamp[us, tz=UTC]"},
            {"name": "tags", "type": "list<string>"},
            {"name": "embedding", "type": "fixed_size_list<float not null>[8]"}]}, f)
    run("parquet", "convert", src, out, "--schema", sch, "--row-group-size", "1000")
    with open(src, "rb") as f:
        assert run("parquet", "cat", out).stdout == f.read()
    t = pq.read_table(out)
    assert t.num_rows == 3000 and str(t.schema.field("ts").type) == "timestamp[us, tz=UTC]"
    with open(src) as f:
        assert table_to_rows(t) == [json.loads(ln) for ln in f]

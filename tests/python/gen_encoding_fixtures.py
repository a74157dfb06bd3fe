"""Writes raw Parquet page payloads produced by pyarrow, the independent oracle
for src/parquet/encoding.c (tests/c/test_parquet_encoding.c reads them).

Each fixture is one column written by pyarrow into a tiny uncompressed file with
a single data page (v1 unless noted); we cut the page payload out of the file:

    <name>.bin   the page payload (values, or levels then values)
    <name>.txt   what it must decode to, one per line: integers in decimal,
                 FLOAT/DOUBLE as hex of their bits, byte arrays as hex
    manifest.txt one line per fixture:
                 name kind encoding_id type_id type_length n
                 kind: exact  = decode, and our encoder must reproduce the bytes
                       values = decode only (the format leaves the writer choices)
                       dict   = dictionary indices (type_length = dictionary size)
                       levels = v1 definition levels (type_length = max level)

Usage: gen_encoding_fixtures.py OUTDIR   (default tests/c/data/encoding)
"""
import io
import os
import random
import struct
import sys

import pyarrow as pa
import pyarrow.parquet as pq

ENC = {"PLAIN": 0, "RLE": 3, "DELTA_BINARY_PACKED": 5, "DELTA_LENGTH_BYTE_ARRAY": 6,
       "DELTA_BYTE_ARRAY": 7, "RLE_DICTIONARY": 8, "BYTE_STREAM_SPLIT": 9}
TYPE = {"BOOLEAN": 0, "INT32": 1, "INT64": 2, "FLOAT": 4, "DOUBLE": 5, "BYTE_ARRAY": 6,
        "FIXED_LEN_BYTE_ARRAY": 7}


def _varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i


def _page_sizes(b, i):
    """Fields 1-3 of a thrift-compact PageHeader: type, uncompressed, compressed size."""
    vals = []
    for _ in range(3):
        h = b[i]
        i += 1
        assert h & 0x0F == 5 and h >> 4 == 1, "expected fields 1, 2, 3 (i32)"
        v, i = _varint(b, i)
        vals.append((v >> 1) ^ -(v & 1))
    return vals


def _payload(table, **kw):
    """Writes table (one column) and returns the payload of its only data page."""
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="NONE", use_dictionary=kw.pop("use_dictionary", False),
                   data_page_size=1 << 20, write_statistics=False, **kw)
    raw = sink.getvalue()
    md = pq.ParquetFile(io.BytesIO(raw)).metadata
    assert md.num_row_groups == 1
    col = md.row_group(0).column(0)
    start = col.data_page_offset
    first = col.dictionary_page_offset if col.has_dictionary_page else start
    chunk = raw[start:first + col.total_compressed_size]
    ptype, _, csize = _page_sizes(chunk, 0)
    assert ptype in (0, 3), ptype
    assert len(chunk) > csize
    return chunk[len(chunk) - csize:]


def _hex(b):
    return bytes(b).hex()


def generate(outdir):
    os.makedirs(outdir, exist_ok=True)
    rnd = random.Random(20240509)
    manifest = []

    def emit(name, kind, enc, typ, tl, lines, payload):
        assert len(payload) < 8192, (name, len(payload))
        with open(os.path.join(outdir, name + ".bin"), "wb") as f:
            f.write(payload)
        with open(os.path.join(outdir, name + ".txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        manifest.append(f"{name} {kind} {ENC[enc]} {TYPE[typ]} {tl} {len(lines)}")

    def column(arr, nullable=False):
        return pa.table({"x": arr}, schema=pa.schema([pa.field("x", arr.type, nullable=nullable)]))

    i32 = [rnd.randint(-1000, 1000) for _ in range(200)] + [2**31 - 1, -2**31, 0, 5, 5, 5] + \
          list(range(100, 400, 3))
    i64 = [rnd.randint(-2**40, 2**40) for _ in range(150)] + [2**63 - 1, -2**63, 7, -7] + \
          [10**12 + k * k for k in range(120)]
    f32 = [rnd.uniform(-1e6, 1e6) for _ in range(300)] + [0.0, -0.0, float("inf")]
    f64 = [rnd.uniform(-1e12, 1e12) for _ in range(200)] + [1e-300, float("-inf")]
    words = ["", "a", "apple", "applesauce", "apply", "banana", "band", "bandana", "can", "x" * 40]
    strs = [rnd.choice(words) + (str(rnd.randint(0, 99)) if rnd.random() < 0.5 else "")
            for _ in range(250)]
    srt = sorted(strs)
    flba = [bytes(rnd.randrange(256) for _ in range(6)) for _ in range(120)]
    bools = [rnd.random() < 0.3 for _ in range(500)] + [True] * 100 + [False] * 37

    def ints(v):
        return [str(x) for x in v]

    def fbits(v, fmt):
        return [format(int.from_bytes(struct.pack("<" + fmt, x), "little"), "x") for x in v]

    # PLAIN: fixed layout, so our encoder must produce the same bytes.
    emit("plain_i32", "exact", "PLAIN", "INT32", 0, ints(i32),
         _payload(column(pa.array(i32, pa.int32())), column_encoding={"x": "PLAIN"}))
    emit("plain_i64", "exact", "PLAIN", "INT64", 0, ints(i64),
         _payload(column(pa.array(i64, pa.int64())), column_encoding={"x": "PLAIN"}))
    emit("plain_f64", "exact", "PLAIN", "DOUBLE", 0, fbits(f64, "d"),
         _payload(column(pa.array(f64, pa.float64())), column_encoding={"x": "PLAIN"}))
    emit("plain_bool", "exact", "PLAIN", "BOOLEAN", 0, ints(int(b) for b in bools),
         _payload(column(pa.array(bools, pa.bool_())), column_encoding={"x": "PLAIN"}))
    emit("plain_str", "exact", "PLAIN", "BYTE_ARRAY", 0, [_hex(s.encode()) for s in strs],
         _payload(column(pa.array(strs, pa.string())), column_encoding={"x": "PLAIN"}))
    emit("plain_flba", "exact", "PLAIN", "FIXED_LEN_BYTE_ARRAY", 6, [_hex(b) for b in flba],
         _payload(column(pa.array(flba, pa.binary(6))), column_encoding={"x": "PLAIN"}))

    # DELTA_BINARY_PACKED: for INT32 pyarrow uses blocks of 128 in 4 miniblocks,
    # like us (and parquet-mr); for INT64 blocks of 256, so decode only.
    emit("dbp_i32", "exact", "DELTA_BINARY_PACKED", "INT32", 0, ints(i32),
         _payload(column(pa.array(i32, pa.int32())), column_encoding={"x": "DELTA_BINARY_PACKED"}))
    emit("dbp_i64", "values", "DELTA_BINARY_PACKED", "INT64", 0, ints(i64),
         _payload(column(pa.array(i64, pa.int64())), column_encoding={"x": "DELTA_BINARY_PACKED"}))
    one = [123456789]
    emit("dbp_one", "values", "DELTA_BINARY_PACKED", "INT64", 0, ints(one),
         _payload(column(pa.array(one, pa.int64())), column_encoding={"x": "DELTA_BINARY_PACKED"}))
    emit("dbp_i32_v2", "exact", "DELTA_BINARY_PACKED", "INT32", 0, ints(i32[:129]),
         _payload(column(pa.array(i32[:129], pa.int32())), data_page_version="2.0",
                  column_encoding={"x": "DELTA_BINARY_PACKED"}))

    emit("dlba_str", "exact", "DELTA_LENGTH_BYTE_ARRAY", "BYTE_ARRAY", 0,
         [_hex(s.encode()) for s in strs],
         _payload(column(pa.array(strs, pa.string())),
                  column_encoding={"x": "DELTA_LENGTH_BYTE_ARRAY"}))
    emit("dba_str", "exact", "DELTA_BYTE_ARRAY", "BYTE_ARRAY", 0, [_hex(s.encode()) for s in srt],
         _payload(column(pa.array(srt, pa.string())), column_encoding={"x": "DELTA_BYTE_ARRAY"}))
    emit("dba_str_unsorted", "exact", "DELTA_BYTE_ARRAY", "BYTE_ARRAY", 0,
         [_hex(s.encode()) for s in strs],
         _payload(column(pa.array(strs, pa.string())), column_encoding={"x": "DELTA_BYTE_ARRAY"}))
    emit("dba_flba", "exact", "DELTA_BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY", 6,
         [_hex(b) for b in sorted(flba)],
         _payload(column(pa.array(sorted(flba), pa.binary(6))),
                  column_encoding={"x": "DELTA_BYTE_ARRAY"}))

    emit("bss_f32", "exact", "BYTE_STREAM_SPLIT", "FLOAT", 0, fbits(f32, "f"),
         _payload(column(pa.array(f32, pa.float32())), column_encoding={"x": "BYTE_STREAM_SPLIT"}))
    emit("bss_f64", "exact", "BYTE_STREAM_SPLIT", "DOUBLE", 0, fbits(f64, "d"),
         _payload(column(pa.array(f64, pa.float64())), column_encoding={"x": "BYTE_STREAM_SPLIT"}))
    emit("bss_i32", "exact", "BYTE_STREAM_SPLIT", "INT32", 0, ints(i32),
         _payload(column(pa.array(i32, pa.int32())), column_encoding={"x": "BYTE_STREAM_SPLIT"}))
    emit("bss_i64", "exact", "BYTE_STREAM_SPLIT", "INT64", 0, ints(i64),
         _payload(column(pa.array(i64, pa.int64())), column_encoding={"x": "BYTE_STREAM_SPLIT"}))
    emit("bss_flba", "exact", "BYTE_STREAM_SPLIT", "FIXED_LEN_BYTE_ARRAY", 6,
         [_hex(b) for b in flba],
         _payload(column(pa.array(flba, pa.binary(6))), column_encoding={"x": "BYTE_STREAM_SPLIT"}))

    # BOOLEAN RLE (4-byte length + hybrid); run choices are the writer's.
    emit("rle_bool", "values", "RLE", "BOOLEAN", 0, ints(int(b) for b in bools),
         _payload(column(pa.array(bools, pa.bool_())), data_page_version="2.0",
                  column_encoding={"x": "RLE"}))

    # Dictionary indices: pyarrow numbers entries in order of first appearance.
    dvals = [rnd.choice(words[:7]) for _ in range(300)] + ["zz"] * 40 + \
            [rnd.choice(words) for _ in range(50)]
    order = {}
    idx = [order.setdefault(v, len(order)) for v in dvals]
    emit("dict_idx", "dict", "RLE_DICTIONARY", "INT32", len(order), ints(idx),
         _payload(column(pa.array(dvals, pa.string())), use_dictionary=True))

    # v1 definition levels of a nullable column: 4-byte length + hybrid.
    nv = [None if rnd.random() < 0.2 else k for k in range(300)] + [None] * 20 + list(range(30))
    emit("def_levels", "levels", "RLE", "INT32", 1, ints(0 if v is None else 1 for v in nv),
         _payload(column(pa.array(nv, pa.int32()), nullable=True), column_encoding={"x": "PLAIN"}))

    with open(os.path.join(outdir, "manifest.txt"), "w") as f:
        f.write("# name kind encoding type type_length n (see gen_encoding_fixtures.py)\n")
        f.write("\n".join(manifest) + "\n")
    return manifest


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "c", "data", "encoding")
    for line in generate(out):
        print(line)

"""Acceptance: Parquet files round-trip between us, pyarrow and duckdb.

Property tests over seeded random data (plain `random` + numpy, so a failing
case reproduces from its seed):

* written by us (hs_parquet_write), with every codec, dictionary on/off, v1
  and v2 data pages, small pages and row groups (many pages and groups),
  read by pyarrow AND by duckdb: equal to the input;
* written by pyarrow with every codec, data_page_version 1.0/2.0,
  use_dictionary on/off, every column_encoding pyarrow supports and small
  data pages, read by us: equal to pyarrow's own reading of the file.

What Parquet itself cannot carry, and so is allowed to change on the way
through a file without Arrow schema metadata (expected_after_parquet):

  input type                  read back as           why
  --------------------------  ---------------------  ------------------------------
  fixed_size_list<T, d>       list<T>                Parquet has no fixed-size list
  time32[s]                   time32[ms]             Parquet TIME has no seconds unit

A reader that restores the exact input type (from ARROW:schema) passes too.
DuckDB is compared on canonical types (duckdb_canon): its TIME is
microseconds (nanosecond times are compared truncated), its BLOB has no
fixed width, fixed-size lists become lists, timestamps compare as instants;
uuid columns are skipped for duckdb because duckdb returns them as strings.

Data generation (random_schema / random_table) draws every type we write:
primitives, decimals, temporals, strings, binary, fixed-size binary, uuid,
list, fixed_size_list<float32, d>, struct, map and nested combinations, with
nulls at every level (sometimes all null), empty lists, empty strings,
multi-byte unicode, NaN / +-inf / -0.0 and extreme integers.
"""
import random
import zlib

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import HsError, arrays_equal, assert_tables_equal

# ---------------------------------------------------------------------------
# data generation
# ---------------------------------------------------------------------------

PRIMITIVES = [
    pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(),
    pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(), pa.float32(), pa.float64(),
    "decimal", pa.date32(), pa.time32("s"), pa.time32("ms"), pa.time64("us"),
    pa.time64("ns"), "timestamp", pa.string(), pa.binary(), "fixed_binary", pa.uuid(),
]
NESTED = ["list", "fixed_list", "struct", "map"]
UNICODE = "abcxyzAZ09 _-é漢字😀\u0000ßΩж"


def random_type(rng, depth=0):
    if depth < 3 and rng.random() < (0.35 if depth == 0 else 0.2):
        kind = rng.choice(NESTED)
        if kind == "list":
            return pa.list_(pa.field("element", random_type(rng, depth + 1),
                                     nullable=rng.random() < 0.8))
        if kind == "fixed_list":
            return pa.list_(pa.field("element", pa.float32(), nullable=rng.random() < 0.3),
                            rng.choice([1, 3, 8, 128]))
        if kind == "struct":
            return pa.struct([pa.field(f"f{i}", random_type(rng, depth + 1),
                                       nullable=rng.random() < 0.8)
                              for i in range(rng.randint(1, 3))])
        key = rng.choice([pa.string(), pa.int32(), pa.int64()])
        return pa.map_(key, random_type(rng, depth + 1))
    t = rng.choice(PRIMITIVES)
    if t == "decimal":
        p = rng.choice([1, 4, 9, 10, 18, 19, 25, 38])
        return pa.decimal128(p, rng.randint(0, p))
    if t == "timestamp":
        return pa.timestamp(rng.choice(["ms", "us", "ns"]), tz=rng.choice([None, "UTC"]))
    if t == "fixed_binary":
        return pa.binary(rng.choice([1, 3, 16]))
    return t


def random_schema(rng, n_cols=None):
    n_cols = n_cols or rng.randint(1, 7)
    return pa.schema([pa.field(f"c{i}", random_type(rng), nullable=rng.random() < 0.85)
                      for i in range(n_cols)])


def _mask(rng, n, nullable):
    """numpy bool mask (True = null) or None."""
    if not nullable or n == 0:
        return None
    p = rng.choice([0.0, 0.05, 0.3, 0.3, 1.0 if rng.random() < 0.1 else 0.5])
    if p == 0.0:
        return None
    nrng = np.random.default_rng(rng.getrandbits(32))
    return nrng.random(n) < p


def _np(rng):
    return np.random.default_rng(rng.getrandbits(32))


def _int_values(rng, n, dtype):
    info = np.iinfo(dtype)
    g = _np(rng)
    mode = rng.random()
    if mode < 0.3:  # small values: dictionary-friendly, bit-packing-friendly
        v = g.integers(max(info.min, -50), min(info.max, 50), size=n, endpoint=True)
    elif mode < 0.5:  # sorted-ish: delta-friendly
        v = np.cumsum(g.integers(0, 5, size=n)) + (0 if info.min == 0 else -10)
        v = np.clip(v, info.min, info.max)
    else:
        v = g.integers(info.min, info.max, size=n, endpoint=True, dtype=dtype)
    v = v.astype(dtype)
    if n > 2:
        v[0], v[-1] = info.min, info.max
    return v


def _float_values(rng, n, dtype):
    g = _np(rng)
    v = (g.standard_normal(n) * 10 ** rng.randint(0, 6)).astype(dtype)
    if rng.random() < 0.5 and n:
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype=dtype)
        idx = g.integers(0, n, size=max(1, n // 10))
        v[idx] = specials[g.integers(0, len(specials), size=len(idx))]
    if rng.random() < 0.3 and n:  # low cardinality: dictionary-friendly
        v = np.round(v[g.integers(0, min(n, 20), size=n)], 1).astype(dtype)
    return v


def _random_string(rng, max_len):
    k = rng.randint(0, max_len)
    return "".join(rng.choice(UNICODE) for _ in range(k))


def random_array(t, n, rng, nullable=True):
    mask = _mask(rng, n, nullable)
    if pa.types.is_list(t) or pa.types.is_map(t):
        lens = np.array([rng.choice([0, 0, 1, 2, 3, 5]) for _ in range(n)], dtype=np.int32)
        if mask is not None:
            lens[mask] = 0
        offsets = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32))
        total = int(lens.sum())
        if pa.types.is_map(t):
            keys = random_array(t.key_type, total, rng, nullable=False)
            items = random_array(t.item_type, total, rng, nullable=t.item_field.nullable)
            return pa.MapArray.from_arrays(offsets, keys, items, type=t,
                                           mask=pa.array(mask) if mask is not None else None)
        values = random_array(t.value_type, total, rng, nullable=t.value_field.nullable)
        return pa.ListArray.from_arrays(offsets, values, type=t,
                                        mask=pa.array(mask) if mask is not None else None)
    if pa.types.is_fixed_size_list(t):
        values = random_array(t.value_type, n * t.list_size, rng,
                              nullable=t.value_field.nullable)
        return pa.FixedSizeListArray.from_arrays(values, type=t,
                                                 mask=pa.array(mask) if mask is not None else None)
    if pa.types.is_struct(t):
        children = [random_array(f.type, n, rng, nullable=f.nullable) for f in t]
        return pa.StructArray.from_arrays(children, fields=list(t),
                                          mask=pa.array(mask) if mask is not None else None)
    return _primitive_array(t, n, rng, mask)


def _primitive_array(t, n, rng, mask):
    g = _np(rng)
    if pa.types.is_boolean(t):
        return pa.array(g.random(n) < rng.random(), type=t, mask=mask)
    if pa.types.is_integer(t):
        return pa.array(_int_values(rng, n, t.to_pandas_dtype()), type=t, mask=mask)
    if pa.types.is_floating(t):
        return pa.array(_float_values(rng, n, t.to_pandas_dtype()), type=t, mask=mask)
    if pa.types.is_decimal(t):
        # Unscaled integers as 16-byte little-endian two's complement (Arrow's layout).
        hi = 10 ** t.precision - 1
        raw = bytearray()
        for _ in range(n):
            r = rng.random()
            i = hi if r < 0.05 else -hi if r < 0.1 else rng.randint(-hi, hi) \
                if r < 0.7 else rng.randint(-min(hi, 1000), min(hi, 1000))
            raw += i.to_bytes(16, "little", signed=True)
        validity = None
        if mask is not None:
            validity = pa.array(~mask).buffers()[1]
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(bytes(raw))])
    if pa.types.is_date32(t):
        v = g.integers(-100000, 100000, size=n).astype(np.int32)
        return pa.array(v, pa.int32(), mask=mask).view(t)
    if pa.types.is_time32(t):
        hi = 86400 if t.unit == "s" else 86400 * 1000
        return pa.array(g.integers(0, hi, size=n).astype(np.int32), pa.int32(),
                        mask=mask).view(t)
    if pa.types.is_time64(t):
        hi = 86400 * (10 ** 6 if t.unit == "us" else 10 ** 9)
        return pa.array(g.integers(0, hi, size=n), pa.int64(), mask=mask).view(t)
    if pa.types.is_timestamp(t):
        # +-127 years around 1970 in every unit (converts to ns without overflow)
        lim = {"ms": 4 * 10 ** 12, "us": 4 * 10 ** 15, "ns": 4 * 10 ** 18}[t.unit]
        return pa.array(g.integers(-lim, lim, size=n), pa.int64(), mask=mask).view(t)
    if pa.types.is_string(t):
        max_len = rng.choice([0, 3, 20, 100])
        if rng.random() < 0.3:  # low cardinality
            pool = [_random_string(rng, max_len) for _ in range(10)]
            vals = [pool[i] for i in g.integers(0, len(pool), size=n)]
        else:
            vals = [_random_string(rng, max_len) for _ in range(n)]
        return pa.array(vals, type=t, mask=mask)
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        w = t.byte_width if pa.types.is_fixed_size_binary(t) else None
        vals = [g.bytes(w if w is not None else int(g.integers(0, 30))) for _ in range(n)]
        return pa.array(vals, type=t, mask=mask)
    if isinstance(t, pa.UuidType):
        storage = pa.array([g.bytes(16) for _ in range(n)], pa.binary(16), mask=mask)
        return pa.ExtensionArray.from_storage(t, storage)
    raise AssertionError(f"no generator for {t}")


def random_table(schema, n, rng):
    return pa.Table.from_arrays([random_array(f.type, n, rng, f.nullable) for f in schema],
                                schema=schema)


def all_types_schema():
    """One column of every type, and a few nested combinations (fixed, for grid tests)."""
    fields = [
        pa.field("b", pa.bool_()), pa.field("i8", pa.int8()), pa.field("i16", pa.int16()),
        pa.field("i32", pa.int32()), pa.field("i64", pa.int64(), nullable=False),
        pa.field("u8", pa.uint8()), pa.field("u16", pa.uint16()),
        pa.field("u32", pa.uint32()), pa.field("u64", pa.uint64()),
        pa.field("f32", pa.float32()), pa.field("f64", pa.float64()),
        pa.field("d9", pa.decimal128(9, 2)), pa.field("d18", pa.decimal128(18, 6)),
        pa.field("d38", pa.decimal128(38, 10)), pa.field("date", pa.date32()),
        pa.field("t_ms", pa.time32("ms")), pa.field("t_us", pa.time64("us")),
        pa.field("t_ns", pa.time64("ns")), pa.field("ts_ms", pa.timestamp("ms")),
        pa.field("ts_us_utc", pa.timestamp("us", tz="UTC")),
        pa.field("ts_ns", pa.timestamp("ns")), pa.field("s", pa.string()),
        pa.field("s_req", pa.string(), nullable=False), pa.field("bin", pa.binary()),
        pa.field("fsb", pa.binary(5)), pa.field("uuid", pa.uuid()),
        pa.field("l_i32", pa.list_(pa.int32())),
        pa.field("l_s", pa.list_(pa.field("element", pa.string(), nullable=False))),
        pa.field("emb", pa.list_(pa.float32(), 8)),
        pa.field("st", pa.struct([pa.field("x", pa.int64()), pa.field("y", pa.string()),
                                  pa.field("z", pa.list_(pa.float64()))])),
        pa.field("m", pa.map_(pa.string(), pa.int64())),
        pa.field("l_st", pa.list_(pa.struct([pa.field("a", pa.int32()),
                                             pa.field("m", pa.map_(pa.int32(),
                                                                   pa.string()))]))),
        pa.field("ll", pa.list_(pa.list_(pa.int16()))),
    ]
    return pa.schema(fields)



# ---------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------


def _after_parquet_type(t):
    """The type a Parquet file without ARROW:schema gives back for input type t."""
    if pa.types.is_fixed_size_list(t):
        f = t.value_field
        return pa.list_(f.with_type(_after_parquet_type(f.type)))
    if pa.types.is_list(t):
        f = t.value_field
        return pa.list_(f.with_type(_after_parquet_type(f.type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_after_parquet_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_after_parquet_type(t.key_type)),
                       t.item_field.with_type(_after_parquet_type(t.item_type)))
    if pa.types.is_time32(t) and t.unit == "s":
        return pa.time32("ms")
    return t


def expected_after_parquet(table, got_schema):
    """The input as it should come back: exact, or with the documented changes."""
    if got_schema.equals(table.schema, check_metadata=False):
        return table
    schema = pa.schema([f.with_type(_after_parquet_type(f.type)) for f in table.schema])
    return table.cast(schema)


def duckdb_canon(t):
    """Canonical type both duckdb's and the expected columns are cast to."""
    if pa.types.is_fixed_size_binary(t) or pa.types.is_large_binary(t) \
            or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_time(t):
        return pa.time64("us")
    if pa.types.is_timestamp(t):
        return pa.timestamp("ns", tz="UTC" if t.tz else None)
    if pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t) \
            or pa.types.is_list_view(t):
        return pa.list_(duckdb_canon(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, duckdb_canon(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(duckdb_canon(t.key_type), duckdb_canon(t.item_type))
    return t


def _has_uuid(t):
    if isinstance(t, pa.UuidType):
        return True
    if pa.types.is_struct(t):
        return any(_has_uuid(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        return _has_uuid(t.value_type)
    if pa.types.is_map(t):
        return _has_uuid(t.key_type) or _has_uuid(t.item_type)
    return False


def _nullable_canon(t):
    return pa.schema([pa.field("x", duckdb_canon(t))]).field("x").type


def duckdb_read(path):
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    con.execute("SET threads=1")
    q = "select * from read_parquet('" + str(path).replace("'", "''") + "')"
    return con.sql(q).to_arrow_table()


def assert_duckdb_equal(path, want, what=""):
    got = duckdb_read(path)
    assert got.num_rows == want.num_rows, f"{what}: duckdb {got.num_rows} rows"
    assert got.column_names == want.column_names, f"{what}: duckdb columns {got.column_names}"
    for name in want.column_names:
        w = want.column(name)
        if _has_uuid(w.type):
            continue
        canon = _nullable_canon(w.type)
        try:
            g = got.column(name).cast(canon, safe=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise AssertionError(f"{what}: duckdb column {name} {got.column(name).type} "
                                 f"does not cast to {canon}: {e}")
        w = w.cast(canon, safe=False)  # truncates ns times like duckdb does
        d = arrays_equal(g, w)
        assert not d, f"{what}: duckdb column {name}: {d}"


# ---------------------------------------------------------------------------
# written by us -> read by pyarrow and duckdb
# ---------------------------------------------------------------------------

OUR_CODECS = ["none", "snappy", "gzip", "zstd", "lz4_raw"]


def _write_ours_and_check(hs, tmp_path, table, what, **opts):
    path = tmp_path / "ours.parquet"
    hs.write(path, table, **opts)
    got = pq.read_table(path)
    want = expected_after_parquet(table, got.schema)
    assert_tables_equal(got, want, f"{what} pyarrow")
    assert_duckdb_equal(path, want, f"{what} duckdb")
    return path


@pytest.mark.parametrize("seed", range(40))
def test_ours_random(hs, tmp_path, seed):
    rng = random.Random(seed)
    schema = random_schema(rng)
    if seed % 10 == 0:
        n = 0
    elif seed % 10 == 1:
        n = 1
    elif seed % 10 == 7:
        n = rng.randint(20000, 50000)
        schema = random_schema(rng, n_cols=3)
    else:
        n = rng.randint(2, 3000)
    table = random_table(schema, n, rng)
    opts = dict(codec=OUR_CODECS[seed % len(OUR_CODECS)],
                dictionary=(seed // 5) % 2 == 0,
                data_page_v2=(seed // 2) % 2 == 1,
                page_bytes=rng.choice([0, 512, 4096, 65536]),
                page_rows=rng.choice([0, 1, 100, 1000]),
                row_group_rows=rng.choice([0, 1, 1000, 7777]) if n < 20000 else
                rng.choice([0, 10000]))
    if opts["row_group_rows"] == 1 and n > 500:
        opts["row_group_rows"] = 333
    if opts["page_rows"] == 1 and n > 500:
        opts["page_rows"] = 37
    _write_ours_and_check(hs, tmp_path, table, f"seed={seed} n={n} {opts}", **opts)


@pytest.mark.parametrize("codec", OUR_CODECS)
@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
@pytest.mark.parametrize("dictionary", [True, False], ids=["dict", "plain"])
def test_ours_all_types_grid(hs, tmp_path, codec, v2, dictionary):
    rng = random.Random(zlib.crc32(repr((codec, v2, dictionary)).encode()))
    table = random_table(all_types_schema(), 2000, rng)
    path = _write_ours_and_check(hs, tmp_path, table, f"{codec} v2={v2} dict={dictionary}",
                                 codec=codec, data_page_v2=v2, dictionary=dictionary,
                                 page_bytes=4096, row_group_rows=700)
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 3
    want_codec = {"none": ["UNCOMPRESSED"], "lz4_raw": ["LZ4_RAW", "LZ4"]}.get(
        codec, [codec.upper()])  # pyarrow names LZ4_RAW "LZ4"
    assert md.row_group(0).column(0).compression in want_codec


@pytest.mark.parametrize("n", [0, 1])
def test_ours_tiny_tables(hs, tmp_path, n):
    table = random_table(all_types_schema(), n, random.Random(n))
    _write_ours_and_check(hs, tmp_path, table, f"n={n}")


def test_ours_default_options(hs, tmp_path):
    """NULL options: zstd, dictionary, statistics, page index."""
    table = random_table(all_types_schema(), 500, random.Random(5))
    path = tmp_path / "d.parquet"
    hs.write(path, table)
    md = pq.ParquetFile(path).metadata
    col = md.row_group(0).column(md.schema.names.index("i64"))
    assert col.compression == "ZSTD"
    assert col.is_stats_set and col.has_offset_index and col.has_column_index
    assert_tables_equal(pq.read_table(path), expected_after_parquet(
        table, pq.read_table(path).schema), "defaults")


def test_ours_float_specials_bitwise(hs, tmp_path):
    vals = [0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1e-310, -1.5, None]
    table = pa.table({"f64": pa.array(vals, pa.float64()),
                      "f32": pa.array(vals, pa.float32())})
    for enc in [None, "BYTE_STREAM_SPLIT", "PLAIN"]:
        for dictionary in [True, False]:
            path = tmp_path / f"f{enc}{dictionary}.parquet"
            hs.write(path, table, dictionary=dictionary,
                     column_encodings={"f64": enc, "f32": enc} if enc else None)
            got = pq.read_table(path)
            for name in ["f64", "f32"]:
                g = got.column(name).to_numpy(zero_copy_only=False)
                w = table.column(name).to_numpy(zero_copy_only=False)
                assert np.array_equal(np.isnan(g), np.isnan(w))
                gi = g.view(np.uint64 if name == "f64" else np.uint32)
                wi = w.view(np.uint64 if name == "f64" else np.uint32)
                ok = ~np.isnan(w)
                ok[-1] = False  # the null slot's bits are unspecified
                assert np.array_equal(gi[ok], wi[ok]), f"{name} enc={enc} dict={dictionary}"
                assert got.column(name).null_count == 1


OUR_ENCODINGS = [
    # (encoding, columns of all_types_schema it applies to)
    ("PLAIN", ["i32", "i64", "f64", "s", "bin", "fsb", "b"]),
    ("DELTA_BINARY_PACKED", ["i8", "i16", "i32", "i64", "u32", "u64", "date", "ts_ns"]),
    ("DELTA_LENGTH_BYTE_ARRAY", ["s", "bin", "s_req"]),
    ("DELTA_BYTE_ARRAY", ["s", "bin", "s_req"]),
    ("BYTE_STREAM_SPLIT", ["f32", "f64", "i32", "i64"]),
    ("RLE", ["b"]),
]


@pytest.mark.parametrize("encoding,columns", OUR_ENCODINGS, ids=[e for e, _ in OUR_ENCODINGS])
@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_ours_column_encodings(hs, tmp_path, encoding, columns, v2):
    table = random_table(all_types_schema(), 3000, random.Random(len(encoding)))
    _write_ours_and_check(hs, tmp_path, table, encoding, data_page_v2=v2, page_bytes=2048,
                          column_encodings={c: encoding for c in columns})
    path = tmp_path / "ours.parquet"
    md = pq.ParquetFile(path).metadata
    names = [md.schema.column(i).path for i in range(md.num_columns)]
    for c in columns:
        encs = md.row_group(0).column(names.index(c)).encodings
        assert encoding in encs, f"{c}: {encs}"


def test_ours_bad_options_release_stream(hs, tmp_path):
    table = pa.table({"a": [1, 2, 3]})
    for kw in [dict(codec="nope"), dict(column_encodings="a=NOPE"),
               dict(column_encodings="justtext")]:
        path = tmp_path / "bad.parquet"
        with pytest.raises(HsError) as e:
            hs.write(path, table, **kw)  # the wrapper asserts the stream was released
        assert e.value.status == "HS_INVALID", kw
        assert not path.exists()


def test_ours_write_into_missing_directory(hs, tmp_path):
    with pytest.raises(HsError):
        hs.write(tmp_path / "no" / "such" / "dir.parquet", pa.table({"a": [1]}))


def test_ours_failed_stream_leaves_no_file(hs, tmp_path):
    """A producer error mid-stream fails the write and leaves nothing under the name."""
    schema = pa.schema([("a", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array([1, 2, 3])], schema=schema)
        raise ValueError("producer failed")

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    path = tmp_path / "partial.parquet"
    with pytest.raises(HsError):
        hs.write(path, reader)
    assert not path.exists()
    assert not list(tmp_path.iterdir()), "temporary file left behind"


def test_ours_sliced_and_chunked_input(hs, tmp_path):
    """Arrays with non-zero offsets and many chunks (import copies them)."""
    rng = random.Random(77)
    table = random_table(all_types_schema(), 1000, rng)
    sliced = pa.concat_tables([table.slice(3, 400), table.slice(500, 1), table.slice(600, 399)])
    _write_ours_and_check(hs, tmp_path, sliced, "sliced")


# ---------------------------------------------------------------------------
# written by pyarrow -> read by us
# ---------------------------------------------------------------------------

PA_CODECS = ["none", "snappy", "gzip", "zstd", "lz4", "brotli"]


def _check_ours_reads(hs, path, what):
    want = pq.read_table(path)
    got = hs.read(path)
    assert_tables_equal(got, want, what)


@pytest.mark.parametrize("codec", PA_CODECS)
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False], ids=["dict", "plain"])
def test_pyarrow_written_grid(hs, tmp_path, codec, version, dictionary):
    rng = random.Random(zlib.crc32(repr((codec, version, dictionary)).encode()))
    table = random_table(all_types_schema(), 2000, rng)
    path = tmp_path / "pa.parquet"
    pq.write_table(table, path, compression=codec, data_page_version=version,
                   use_dictionary=dictionary, data_page_size=2048, row_group_size=700,
                   store_schema=False, write_page_index=True)
    _check_ours_reads(hs, path, f"{codec} {version} dict={dictionary}")


PA_ENCODINGS = [
    ("PLAIN", ["b", "i32", "i64", "f32", "f64", "s", "bin", "fsb", "d38", "ts_ns", "l_i32"]),
    ("DELTA_BINARY_PACKED", ["i8", "i16", "i32", "i64", "u8", "u64", "date", "t_ms", "ts_us_utc",
                             "d9", "d18", "l_i32"]),
    ("DELTA_LENGTH_BYTE_ARRAY", ["s", "s_req", "bin", "l_s"]),
    ("DELTA_BYTE_ARRAY", ["s", "s_req", "bin", "fsb", "l_s", "d38"]),
    ("BYTE_STREAM_SPLIT", ["f32", "f64", "i32", "i64", "fsb", "emb"]),
    ("RLE", ["b"]),
]


@pytest.mark.parametrize("encoding,columns", PA_ENCODINGS, ids=[e for e, _ in PA_ENCODINGS])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_pyarrow_column_encodings(hs, tmp_path, encoding, columns, version):
    rng = random.Random(len(encoding) * 3 + len(version))
    full = random_table(all_types_schema(), 3000, rng)
    table = full.select(columns)
    path = tmp_path / "pa_enc.parquet"
    pq.write_table(table, path, use_dictionary=False,
                   column_encoding={c: encoding for c in columns},
                   data_page_version=version, data_page_size=1024, store_schema=False,
                   store_decimal_as_integer=True)
    md = pq.ParquetFile(path).metadata
    assert encoding in md.row_group(0).column(0).encodings
    _check_ours_reads(hs, path, f"{encoding} {version}")


@pytest.mark.parametrize("seed", range(24))
def test_pyarrow_random(hs, tmp_path, seed):
    rng = random.Random(1000 + seed)
    schema = random_schema(rng)
    n = [0, 1][seed] if seed < 2 else rng.randint(2, 4000)
    table = random_table(schema, n, rng)
    path = tmp_path / "pa_rand.parquet"
    pq.write_table(table, path, compression=PA_CODECS[seed % len(PA_CODECS)],
                   data_page_version=rng.choice(["1.0", "2.0"]),
                   use_dictionary=rng.random() < 0.5,
                   data_page_size=rng.choice([256, 4096, 1 << 20]),
                   row_group_size=rng.choice([100, 1000, 1 << 20]),
                   store_schema=False, write_page_index=rng.random() < 0.5,
                   write_statistics=rng.random() < 0.8)
    _check_ours_reads(hs, path, f"seed={seed}")


def test_pyarrow_written_with_arrow_schema(hs, tmp_path):
    """Files carrying ARROW:schema (pyarrow's default) read the same; the
    columns chosen are those whose Arrow type Parquet carries exactly."""
    table = random_table(all_types_schema(), 1500, random.Random(3)).drop_columns(["emb"])
    path = tmp_path / "pa_schema.parquet"
    pq.write_table(table, path, row_group_size=500, data_page_size=4096)
    assert b"ARROW:schema" in pq.ParquetFile(path).metadata.metadata
    _check_ours_reads(hs, path, "store_schema")

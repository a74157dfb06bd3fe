"""Arrow C Data / C Stream Interface of the columnar layer, checked against pyarrow.

pyarrow is the independent oracle: it exports an array (or a stream) through
the C Data Interface, libhyperstream imports it into hs_columns, validates it,
deep-copies it (hs_col_slice, so the data really passes through our layout)
and exports the copy; pyarrow imports that and must see the same values, the
same type and the same field metadata.  The library is loaded with ctypes from
$HS_BUILD/libhyperstream.so (default "build"); the test skips when it is absent.
"""
import ctypes
import decimal
import gc
import math
import os
import pathlib

import pytest
from conftest import require, require_module  # noqa: E402

pa = require_module("pyarrow")
np = require_module("numpy")

ROOT = pathlib.Path(__file__).resolve().parents[2]
SIZEOF_SCHEMA, SIZEOF_ARRAY, SIZEOF_STREAM = 72, 80, 40


class HsError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


def _load():
    build = pathlib.Path(os.environ.get("HS_BUILD", "build"))
    if not build.is_absolute():
        build = ROOT / build
    so = build / "libhyperstream_testing.so"
    require(so.exists(), f"{so} not built")
    lib = ctypes.CDLL(str(so))
    for name in ("hs_arrow_roundtrip", "hs_arrow_stream_roundtrip"):
        require(hasattr(lib, name), f"{so} lacks {name}")
    lib.hs_arrow_roundtrip.argtypes = [ctypes.c_void_p] * 4 + [ctypes.POINTER(HsError)]
    lib.hs_arrow_roundtrip.restype = ctypes.c_int
    lib.hs_arrow_stream_roundtrip.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(HsError)]
    lib.hs_arrow_stream_roundtrip.restype = ctypes.c_int
    lib.hs_mem_live_count.restype = ctypes.c_int64
    return lib


@pytest.fixture(scope="module")
def lib():
    return _load()


def _addr(buf):
    return ctypes.addressof(buf)


def roundtrip(lib, arr, field=None):
    """Sends arr (typed by field, if given) through hs and back; returns (field, array)."""
    field = field if field is not None else pa.field("x", arr.type)
    s_in = ctypes.create_string_buffer(SIZEOF_SCHEMA)
    a_in = ctypes.create_string_buffer(SIZEOF_ARRAY)
    s_out = ctypes.create_string_buffer(SIZEOF_SCHEMA)
    a_out = ctypes.create_string_buffer(SIZEOF_ARRAY)
    field._export_to_c(_addr(s_in))
    arr._export_to_c(_addr(a_in))
    err = HsError()
    rc = lib.hs_arrow_roundtrip(_addr(s_in), _addr(a_in), _addr(s_out), _addr(a_out), ctypes.byref(err))
    # Moved / released by the library whatever happened: release pointers are NULL.
    assert ctypes.c_void_p.from_buffer(s_in, 56).value is None
    assert ctypes.c_void_p.from_buffer(a_in, 64).value is None
    if rc != 0:
        return rc, err.msg.decode()
    out_field = pa.Field._import_from_c(_addr(s_out))
    out = pa.Array._import_from_c(_addr(a_out), out_field.type)
    return out_field, out


def _norm(v):
    """to_pylist value with NaN made comparable."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, list):
        return [_norm(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_norm(x) for x in v)
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    return v


def check(lib, arr, expect=None, field=None):
    expect = arr if expect is None else expect
    base = lib.hs_mem_live_count()
    f, out = roundtrip(lib, arr, field)
    assert isinstance(f, pa.Field), out
    out.validate(full=True)
    assert out.type == expect.type, (out.type, expect.type)
    assert out.null_count == expect.null_count
    try:
        want = expect.to_pylist()
    except (OverflowError, ValueError):  # e.g. timestamps outside Python's datetime range
        want = None
    if want is not None:
        assert _norm(out.to_pylist()) == _norm(want)
    if want is None or not _has_nan(want):
        assert out.equals(expect)
    del out  # reference counting frees it now (no cycles): pyarrow calls our release
    assert lib.hs_mem_live_count() == base  # our exported memory was freed by pyarrow's release
    return f


def _has_nan(values):
    def walk(v):
        if isinstance(v, float):
            return math.isnan(v)
        if isinstance(v, (list, tuple)):
            return any(walk(x) for x in v)
        if isinstance(v, dict):
            return any(walk(x) for x in v.values())
        return False
    return walk(values)


INT_CASES = [
    (pa.int8(), -2**7, 2**7 - 1), (pa.int16(), -2**15, 2**15 - 1),
    (pa.int32(), -2**31, 2**31 - 1), (pa.int64(), -2**63, 2**63 - 1),
    (pa.uint8(), 0, 2**8 - 1), (pa.uint16(), 0, 2**16 - 1),
    (pa.uint32(), 0, 2**32 - 1), (pa.uint64(), 0, 2**64 - 1),
]


@pytest.mark.parametrize("typ,lo,hi", INT_CASES, ids=[str(c[0]) for c in INT_CASES])
def test_integers(lib, typ, lo, hi):
    arr = pa.array([lo, None, hi, 0, 1, None] * 5 + [hi], typ)
    check(lib, arr)
    check(lib, arr.slice(3, 20))
    check(lib, pa.array([], typ))
    check(lib, pa.array([lo, hi], typ))  # no validity bitmap


def test_floats_bitwise(lib):
    vals = [1.5, None, float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 3.4e38]
    for typ, ityp in ((pa.float32(), pa.int32()), (pa.float64(), pa.int64())):
        arr = pa.array(vals, typ)
        check(lib, arr)
        _, out = roundtrip(lib, arr)
        assert out.view(ityp).equals(arr.view(ityp))  # -0.0 and NaN bits preserved
    h = pa.array(np.array([1.5, np.nan, -0.0, 65504], dtype=np.float16), mask=np.array([0, 0, 0, 1], bool))
    check(lib, h)


def test_bool(lib):
    arr = pa.array([True, False, None, True, True, False, None, False, True, True, False])
    check(lib, arr)
    for start in range(1, 9):
        check(lib, arr.slice(start, 11 - start))
    check(lib, pa.array([True] * 70))


def test_null_type(lib):
    check(lib, pa.nulls(7))
    check(lib, pa.nulls(0))


def test_decimal(lib):
    typ = pa.decimal128(38, 10)
    D = decimal.Decimal
    arr = pa.array([D("1234567890123456789012345678.0123456789"), None, D("-0.0000000001"),
                    D("-9999999999999999999999999999.9999999999"), D(0)], typ)
    f = check(lib, arr)
    assert f.type == typ
    check(lib, pa.array([D("1.23"), None], pa.decimal128(5, 2)).slice(1))


def test_temporal(lib):
    cases = [
        pa.array([0, None, -719162, 2932896], pa.date32()),
        pa.array([0, None, 86399], pa.time32("s")),
        pa.array([0, None, 86399999], pa.time32("ms")),
        pa.array([0, None, 86399999999], pa.time64("us")),
        pa.array([0, None, 86399999999999], pa.time64("ns")),
    ]
    for unit in ("s", "ms", "us", "ns"):
        for tz in (None, "UTC", "America/New_York", "+05:30"):
            cases.append(pa.array([0, None, -2**62, 2**62], pa.timestamp(unit, tz)))
    for arr in cases:
        f = check(lib, arr)
        assert f.type == arr.type


def test_month_day_nano_interval(lib):
    """month_day_nano imports as PostgreSQL's interval (microseconds: the
    nanoseconds are truncated toward zero) and exports back as month_day_nano;
    sliced input included."""
    t = pa.month_day_nano_interval()
    vals = [(1, 2, 3_000_000_000), None, (-14, 3, -4_500), (2**31 - 1, -2**31, 999),
            (0, 0, -(2**62) + 1_001)]
    arr = pa.array(vals, t)
    def trunc(ns):
        return ns // 1000 * 1000 if ns >= 0 else -(-ns // 1000 * 1000)
    want = [None if v is None else (v[0], v[1], trunc(v[2])) for v in vals]
    for a, w in ((arr, want), (arr.slice(1, 3), want[1:4])):
        f, out = roundtrip(lib, a)
        assert f.type == t
        got = [None if v is None else (v.months, v.days, v.nanoseconds) for v in out.to_pylist()]
        assert got == w


def test_strings_and_binary(lib):
    s = pa.array(["alpha", "", None, "été ✓ 𝄞", None, "z" * 1000, "\x00nul"])
    check(lib, s)
    check(lib, s.slice(2, 4))
    check(lib, pa.array([""] * 5))     # all empty: zero value bytes
    check(lib, pa.array([], pa.string()))
    check(lib, pa.array([None, None], pa.string()))
    b = pa.array([b"\x00\xff", None, b"", b"abc"], pa.binary())
    check(lib, b)
    check(lib, b.slice(1))
    fb = pa.array([b"abc", None, b"\x00\x00\x01"], pa.binary(3))
    check(lib, fb)
    check(lib, fb.slice(1))


def test_large_and_view_variants(lib):
    ls = pa.array(["x", None, "", "yz" * 50], pa.large_string())
    check(lib, ls, ls.cast(pa.string()))
    check(lib, ls.slice(1), ls.slice(1).cast(pa.string()))
    lb = pa.array([b"\x01", None, b""], pa.large_binary())
    check(lib, lb, lb.cast(pa.binary()))
    ll = pa.array([[1, 2], None, [], [3]], pa.large_list(pa.int32()))
    check(lib, ll, ll.cast(pa.list_(pa.int32())))
    check(lib, ll.slice(1), ll.slice(1).cast(pa.list_(pa.int32())))
    if hasattr(pa, "string_view"):
        sv = pa.array(["short", None, "a string longer than twelve bytes", ""], pa.string_view())
        check(lib, sv, sv.cast(pa.string()))
        check(lib, sv.slice(1), sv.slice(1).cast(pa.string()))
        bv = pa.array([b"0123456789abcdef", None], pa.binary_view())
        check(lib, bv, bv.cast(pa.binary()))


def test_dictionary_decoded(lib):
    d = pa.array(["a", "b", None, "a", "ccc"]).dictionary_encode()
    check(lib, d, d.dictionary_decode())
    check(lib, d.slice(2), d.slice(2).dictionary_decode())
    d8 = pa.DictionaryArray.from_arrays(pa.array([1, 0, None, 1], pa.int8()), pa.array([10, 20], pa.int64()))
    check(lib, d8, d8.dictionary_decode())
    du = pa.DictionaryArray.from_arrays(pa.array([2, 0, 1], pa.uint32()),
                                        pa.array([[1], None, [2, 3]], pa.list_(pa.int16())))
    check(lib, du, du.dictionary_decode())


def test_lists(lib):
    li = pa.array([[1, None, 3], None, [], [4], [None]], pa.list_(pa.int64()))
    check(lib, li)
    check(lib, li.slice(1, 3))
    nested = pa.array([[[1], [], None], None, [[2, 3]], []], pa.list_(pa.list_(pa.int8())))
    check(lib, nested)
    check(lib, nested.slice(2))
    ls = pa.array([["a", None], [], None, ["bcd"]], pa.list_(pa.string()))
    check(lib, ls.slice(1))
    # A null list row that owns elements (allowed by Arrow): dropped on import.
    owning = pa.ListArray.from_arrays(pa.array([0, 2, 4, 5], pa.int32()), pa.array([1, 2, 3, 4, 5]),
                                      mask=pa.array([False, True, False]))
    assert owning.offsets.to_pylist() == [0, 2, 4, 5]
    check(lib, owning)
    m = pa.MapArray.from_arrays(pa.array([0, 1, 2], pa.int32()), pa.array(["a", "b"]), pa.array([1, 2]),
                                mask=pa.array([True, False]))
    check(lib, m)


def test_struct_of_list_of_struct_nulls_everywhere(lib):
    inner = pa.struct([("x", pa.int32()), ("y", pa.string())])
    typ = pa.struct([("a", pa.list_(inner)), ("b", pa.int64()), ("c", pa.bool_())])
    rows = [
        {"a": [{"x": 1, "y": "p"}, None, {"x": None, "y": "q"}], "b": 10, "c": True},
        None,
        {"a": None, "b": 30, "c": None},
        {"a": [], "b": None, "c": False},
        {"a": [{"x": 5, "y": None}], "b": 50, "c": True},
    ]
    arr = pa.array(rows, typ)
    check(lib, arr)
    for start in range(5):
        check(lib, arr.slice(start))
    # A struct whose children are themselves sliced at different offsets.
    s = pa.StructArray.from_arrays([pa.array([9, 1, 2, 3]).slice(1), pa.array(["q", "a", "b", "c"]).slice(1)],
                                   names=["i", "s"])
    check(lib, s)
    check(lib, s.slice(1))


def test_maps(lib):
    typ = pa.map_(pa.string(), pa.int64())
    arr = pa.array([[("a", 1), ("b", None)], None, [], [("c", 3)]], typ)
    check(lib, arr)
    check(lib, arr.slice(1))
    sorted_typ = pa.map_(pa.int32(), pa.list_(pa.string()), keys_sorted=True)
    arr2 = pa.array([[(1, ["x", None]), (2, None)], [], None], sorted_typ)
    f = check(lib, arr2)
    assert f.type.keys_sorted


def test_fixed_size_list_vectors(lib):
    rng = np.random.default_rng(7)
    vals = rng.standard_normal(128 * 20).astype(np.float32)
    vals[5] = np.nan
    flat = pa.array(vals)
    mask = np.zeros(20, bool)
    mask[[3, 11]] = True
    arr = pa.FixedSizeListArray.from_arrays(flat, 128, mask=pa.array(mask))
    check(lib, arr)
    check(lib, arr.slice(4, 9))
    small = pa.array([[1, None], None, [3, 4]], pa.list_(pa.int16(), 2))
    check(lib, small)
    check(lib, small.slice(1))


def test_field_metadata_and_nullability(lib):
    field = pa.field("id", pa.int64(), nullable=False,
                     metadata={"PARQUET:field_id": "7", "doc": "the key"})
    f = check(lib, pa.array([1, 2, 3]), field=field)
    assert f.name == "id" and not f.nullable
    assert f.metadata == {b"PARQUET:field_id": b"7", b"doc": b"the key"}
    nested = pa.field("s", pa.struct([pa.field("k", pa.string(), metadata={"PARQUET:field_id": "2"})]),
                      metadata={"PARQUET:field_id": "1"})
    f = check(lib, pa.array([{"k": "v"}, None], nested.type), field=nested)
    assert f.metadata[b"PARQUET:field_id"] == b"1"
    assert f.type.field(0).metadata == {b"PARQUET:field_id": b"2"}


def test_uuid_extension(lib):
    require(hasattr(pa, "uuid"), "pyarrow without the uuid extension type")
    storage = pa.array([bytes(range(16)), None, b"\xff" * 16], pa.binary(16))
    arr = pa.ExtensionArray.from_storage(pa.uuid(), storage)
    f, out = roundtrip(lib, arr, pa.field("u", pa.uuid()))
    assert f.type == pa.uuid()
    assert out.storage.equals(storage)


def test_unsupported_format_is_an_error(lib):
    base = lib.hs_mem_live_count()
    arr = pa.array([1, 2], pa.decimal256(40, 2))
    rc, msg = roundtrip(lib, arr)
    assert rc != 0 and "not supported" in msg
    union = pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])])
    rc, msg = roundtrip(lib, union)
    assert rc != 0 and "not supported" in msg
    gc.collect()
    assert lib.hs_mem_live_count() == base


def test_stream_roundtrip(lib):
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False, metadata={"PARQUET:field_id": "1"}),
        pa.field("name", pa.string(), metadata={"PARQUET:field_id": "2"}),
        pa.field("vec", pa.list_(pa.float32(), 4)),
        pa.field("tags", pa.map_(pa.string(), pa.string())),
    ])
    batches = []
    for b in range(3):
        n = 5 + b
        batches.append(pa.record_batch([
            pa.array(range(b * 10, b * 10 + n), pa.int64()),
            pa.array([None if i % 3 == 0 else f"row {b}-{i} é" for i in range(n)]),
            pa.array([None if i == 1 else [i, -i, 0.5, float(b)] for i in range(n)], pa.list_(pa.float32(), 4)),
            pa.array([[("k", str(i)), ("n", None)] if i % 2 else None for i in range(n)],
                     pa.map_(pa.string(), pa.string())),
        ], schema=schema))
    table = pa.Table.from_batches(batches)
    base = lib.hs_mem_live_count()
    sent = batches[:2] + [table.slice(12).to_batches()[0]]  # the last one sliced: offset != 0
    assert sent[2].column(0).offset == 1
    reader = pa.RecordBatchReader.from_batches(schema, sent)
    s_in = ctypes.create_string_buffer(SIZEOF_STREAM)
    s_out = ctypes.create_string_buffer(SIZEOF_STREAM)
    reader._export_to_c(_addr(s_in))
    err = HsError()
    assert lib.hs_arrow_stream_roundtrip(_addr(s_in), _addr(s_out), ctypes.byref(err)) == 0, err.msg
    assert ctypes.c_void_p.from_buffer(s_in, 24).value is None  # moved
    out = pa.RecordBatchReader._import_from_c(_addr(s_out))
    assert out.schema.equals(schema, check_metadata=True)
    got = out.read_all()
    assert got.num_rows == 5 + 6 + 6
    assert got.equals(pa.Table.from_batches(sent))
    del out, got, reader
    gc.collect()
    assert lib.hs_mem_live_count() == base


def test_stream_error_propagates(lib):
    def gen():
        yield pa.record_batch([pa.array([1, 2])], names=["a"])
        raise ValueError("producer broke")
    reader = pa.RecordBatchReader.from_batches(pa.schema([("a", pa.int64())]), gen())
    s_in = ctypes.create_string_buffer(SIZEOF_STREAM)
    s_out = ctypes.create_string_buffer(SIZEOF_STREAM)
    reader._export_to_c(_addr(s_in))
    err = HsError()
    assert lib.hs_arrow_stream_roundtrip(_addr(s_in), _addr(s_out), ctypes.byref(err)) == 0
    out = pa.RecordBatchReader._import_from_c(_addr(s_out))
    assert out.read_next_batch().num_rows == 2
    with pytest.raises(Exception, match="producer broke"):
        out.read_next_batch()

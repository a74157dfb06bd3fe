"""Oracle: our footer decoder (src/parquet/meta.c) against pyarrow's.

For every non-encrypted file of the parquet-testing corpus, the footer as we
decode it (hs_parquet_footer_json, a JSON view of pq_file_meta with binary
values in hex) is compared with pyarrow.parquet.ParquetFile(f).metadata, an
independent Thrift decoder (Arrow C++):

  file        num_rows, num_row_groups, created_by, key/value metadata,
              number of leaf columns and their physical types and names
  row group   num_rows, total_byte_size, num_columns
  column      physical type, path_in_schema, codec, num_values, total
              compressed/uncompressed sizes, data/dictionary page
              offsets, file_offset, file_path, encodings (as a set),
              offset/column index presence, bloom filter offset/length,
              statistics: min/max raw bytes (when pyarrow reports them),
              null count, distinct count

Documented differences (applied to pyarrow's side only):
  - pyarrow names the legacy Hadoop LZ4 codec (id 5) "LZ4_HADOOP"/"UNKNOWN" and
    LZ4_RAW (id 7) "LZ4".
  - pyarrow drops statistics it distrusts (old writers, unknown sort orders):
    we only compare statistics when pyarrow reports them.
  - pyarrow's statistics come from min_value/max_value when present, else from
    the legacy min/max fields; we pick ours the same way.
Files pyarrow cannot open are still required to decode on our side.
"""
import ctypes
import json
import math
import struct

import pyarrow.parquet as pq
import pytest

from conftest import LIB_PATH, PARQUET_TESTING, _HsErrorStruct, require

DATA = PARQUET_TESTING / "data"
FILES = sorted(DATA.rglob("*.parquet")) if DATA.is_dir() else []

_LIB = None


def _lib():
    global _LIB
    require(LIB_PATH.exists(), f"{LIB_PATH} not built (set HS_BUILD)")
    if _LIB is None:
        lib = ctypes.CDLL(str(LIB_PATH))
        lib.hs_parquet_footer_json.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        lib.hs_parquet_footer_json.restype = ctypes.c_void_p
        lib.hs_string_free.argtypes = [ctypes.c_void_p]
        lib.hs_string_free.restype = None
        _LIB = lib
    return _LIB


def footer_json(path):
    """Our decode of the file's footer, as a dict; raises on error."""
    lib = _lib()
    err = _HsErrorStruct()
    p = lib.hs_parquet_footer_json(str(path).encode(), ctypes.byref(err))
    if not p:
        raise RuntimeError(f"code {err.code}: {err.msg.decode('utf-8', 'replace')}")
    try:
        text = ctypes.string_at(p).decode("utf-8")
    finally:
        lib.hs_string_free(p)
    return json.loads(text)


def _is_encrypted(path):
    with open(path, "rb") as f:
        f.seek(-4, 2)
        return f.read(4) == b"PARE"


CODEC_NAMES = {  # ours -> names pyarrow may use
    "UNCOMPRESSED": {"UNCOMPRESSED"}, "SNAPPY": {"SNAPPY"}, "GZIP": {"GZIP"},
    "LZO": {"LZO", "UNKNOWN"}, "BROTLI": {"BROTLI"}, "LZ4": {"LZ4_HADOOP", "UNKNOWN"},
    "ZSTD": {"ZSTD"}, "LZ4_RAW": {"LZ4", "LZ4_RAW"},
}


def _raw_to_bytes(value, ptype):
    """pyarrow Statistics.min_raw/max_raw -> the plain-encoded bytes."""
    if ptype == "BOOLEAN":
        return bytes([1 if value else 0])
    if ptype == "INT32":
        return struct.pack("<I", value & 0xFFFFFFFF)
    if ptype == "INT64":
        return struct.pack("<Q", value & 0xFFFFFFFFFFFFFFFF)
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def _same_stat(ours_hex, theirs, ptype):
    ours = bytes.fromhex(ours_hex)
    if ptype in ("FLOAT", "DOUBLE"):
        fmt = "<f" if ptype == "FLOAT" else "<d"
        if len(ours) != struct.calcsize(fmt):
            return False
        (v,) = struct.unpack(fmt, ours)
        if math.isnan(v) or math.isnan(theirs):
            return math.isnan(v) and math.isnan(theirs)
        return v == theirs
    return ours == _raw_to_bytes(theirs, ptype)


def _compare_column(i_rg, i_col, ours, col):
    where = f"row group {i_rg} column {i_col}"
    md = ours["meta_data"]
    assert md["type"] == col.physical_type, where
    assert ".".join(md["path_in_schema"]) == col.path_in_schema, where
    assert col.compression in CODEC_NAMES.get(md["codec"], {md["codec"]}), \
        f"{where}: codec {md['codec']} vs {col.compression}"
    assert md["num_values"] == col.num_values, where
    assert md["total_compressed_size"] == col.total_compressed_size, where
    assert md["total_uncompressed_size"] == col.total_uncompressed_size, where
    assert md["data_page_offset"] == col.data_page_offset, where
    assert ("dictionary_page_offset" in md) == col.has_dictionary_page, where
    if col.has_dictionary_page:
        assert md["dictionary_page_offset"] == col.dictionary_page_offset, where
    assert ours["file_offset"] == col.file_offset, where
    assert (ours.get("file_path") or "") == (col.file_path or ""), where
    assert set(md["encodings"]) == set(col.encodings), where
    assert ("offset_index_offset" in ours) == col.has_offset_index, where
    assert ("column_index_offset" in ours) == col.has_column_index, where
    if col.bloom_filter_offset is not None:
        assert md.get("bloom_filter_offset") == col.bloom_filter_offset, where
    if col.bloom_filter_length is not None:
        assert md.get("bloom_filter_length") == col.bloom_filter_length, where

    st = col.statistics if col.is_stats_set else None
    if st is None:
        return
    ost = md.get("statistics")
    assert ost is not None, f"{where}: pyarrow has statistics, we do not"
    if st.has_null_count:
        assert ost.get("null_count") == st.null_count, where
    if st.has_distinct_count:
        assert ost.get("distinct_count") == st.distinct_count, where
    if st.has_min_max:
        omin = ost.get("min_value", ost.get("min"))
        omax = ost.get("max_value", ost.get("max"))
        assert omin is not None and omax is not None, where
        assert _same_stat(omin, st.min_raw, md["type"]), \
            f"{where}: min {omin} vs {st.min_raw!r}"
        assert _same_stat(omax, st.max_raw, md["type"]), \
            f"{where}: max {omax} vs {st.max_raw!r}"


@pytest.mark.parametrize("path", FILES, ids=[str(f.relative_to(DATA)) for f in FILES])
def test_footer_matches_pyarrow(path):
    if _is_encrypted(path):
        pytest.skip("encrypted footer")  # skip-ok: not in scope (docs/parquet.md)
    ours = footer_json(path)  # must decode even when pyarrow refuses the file
    try:
        meta = pq.ParquetFile(path).metadata
    except Exception as e:  # noqa: BLE001 - any pyarrow refusal
        pytest.skip(f"pyarrow cannot open it: {e}")  # skip-ok: no oracle for it

    assert ours["num_rows"] == meta.num_rows
    assert ours["num_row_groups"] == meta.num_row_groups == len(ours["row_groups"])
    assert (ours["created_by"] or "") == (meta.created_by or "")
    theirs_kv = meta.metadata or {}
    ours_kv = {kv["key"].encode(): (kv["value"] or "").encode()
               for kv in ours["key_value_metadata"]}
    # Keys/values that are not valid UTF-8 are shown with U+FFFD by us: compare the rest.
    for k, v in theirs_kv.items():
        try:
            k.decode("utf-8")
            v.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert ours_kv.get(k) == v, k

    leaves = [e for e in ours["schema"][1:] if e["num_children"] == 0]
    assert len(leaves) == meta.num_columns
    schema = meta.schema
    for i, e in enumerate(leaves):
        assert e["type"] == schema.column(i).physical_type
        assert e["name"] == schema.column(i).name

    for i_rg, rg in enumerate(ours["row_groups"]):
        trg = meta.row_group(i_rg)
        assert rg["num_rows"] == trg.num_rows
        assert rg["total_byte_size"] == trg.total_byte_size
        assert len(rg["columns"]) == trg.num_columns
        for i_col, c in enumerate(rg["columns"]):
            _compare_column(i_rg, i_col, c, trg.column(i_col))


def test_errors_are_reported(tmp_path):
    lib = _lib()
    err = _HsErrorStruct()
    assert not lib.hs_parquet_footer_json(str(tmp_path / "missing.parquet").encode(),
                                          ctypes.byref(err))
    assert err.code == 6  # HS_NOT_FOUND
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1" + b"\x15\x02\x19\xfc\xff\xff\xff\xff\x07" + b"\x09\x00\x00\x00PAR1")
    err = _HsErrorStruct()
    assert not lib.hs_parquet_footer_json(str(bad).encode(), ctypes.byref(err))
    assert err.code == 2  # HS_CORRUPT
    assert b"exceeds remaining" in err.msg

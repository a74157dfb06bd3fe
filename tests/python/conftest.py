"""Shared fixtures of the Python oracle tests.

The tests load the C library (``$HS_BUILD/libhyperstream.so``, HS_BUILD
defaulting to ``build`` under the repository root) with ctypes and move data
across the Arrow C Stream Interface:

* reading:  hs_parquet_read fills an ArrowArrayStream that pyarrow imports
  with ``RecordBatchReader._import_from_c`` (pyarrow then owns and releases it);
* writing:  pyarrow exports a RecordBatchReader with ``_export_to_c`` and
  hs_parquet_write consumes (releases) it.

Tests needing the library skip when it is not built; tests needing
../shared/testdata skip when it is absent.  Nothing here compares against our
own output: the oracles are pyarrow and duckdb.
"""
import ctypes
import os
import pathlib

import pyarrow as pa
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def _build_dir():
    b = pathlib.Path(os.environ.get("HS_BUILD", "build"))
    return b if b.is_absolute() else REPO / b


LIB_PATH = _build_dir() / "libhyperstream.so"
TESTDATA = pathlib.Path(os.environ.get("HS_TESTDATA") or (REPO.parent / "shared" / "testdata"))
PARQUET_TESTING = TESTDATA / "parquet-testing"

STATUS_NAMES = ["HS_OK", "HS_IO", "HS_CORRUPT", "HS_INVALID", "HS_NOMEM", "HS_CONFLICT",
                "HS_NOT_FOUND", "HS_UNSUPPORTED", "HS_INTERNAL"]


class _HsErrorStruct(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


class _WriteOptions(ctypes.Structure):
    _fields_ = [("codec", ctypes.c_char_p), ("codec_level", ctypes.c_int),
                ("row_group_rows", ctypes.c_int64), ("page_bytes", ctypes.c_int64),
                ("dictionary", ctypes.c_int), ("data_page_v2", ctypes.c_int),
                ("column_encodings", ctypes.c_char_p), ("page_rows", ctypes.c_int64)]


class _ScanStats(ctypes.Structure):
    _fields_ = [("row_groups_read", ctypes.c_int64), ("row_groups_skipped", ctypes.c_int64),
                ("pages_decoded", ctypes.c_int64), ("pages_skipped", ctypes.c_int64),
                ("bytes_read", ctypes.c_int64), ("rows_emitted", ctypes.c_int64)]


class _ArrowArrayStream(ctypes.Structure):
    _fields_ = [("get_schema", ctypes.c_void_p), ("get_next", ctypes.c_void_p),
                ("get_last_error", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("private_data", ctypes.c_void_p)]


class HsError(Exception):
    """A non-OK hs_status from the library: .status is e.g. 'HS_NOT_FOUND'."""

    def __init__(self, code, msg):
        self.code = code
        self.status = STATUS_NAMES[code] if 0 <= code < len(STATUS_NAMES) else str(code)
        super().__init__(f"{self.status}: {msg}")


def _names_array(columns):
    if columns is None:
        return None, 0
    arr = (ctypes.c_char_p * max(1, len(columns)))(*[c.encode() for c in columns])
    return arr, len(columns)


class HyperStream:
    """ctypes wrapper of the public Parquet C API returning pyarrow objects."""

    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(str(path))
        p = ctypes.c_void_p
        lib.hs_parquet_read.argtypes = [ctypes.c_char_p, p, ctypes.c_int, ctypes.c_int64, p, p]
        lib.hs_parquet_read.restype = ctypes.c_int
        lib.hs_parquet_read_selection.argtypes = [ctypes.c_char_p, p, ctypes.c_int, p,
                                                  ctypes.c_int64, ctypes.c_int64, p, p, p]
        lib.hs_parquet_read_selection.restype = ctypes.c_int
        lib.hs_parquet_write.argtypes = [ctypes.c_char_p, p, p, p]
        lib.hs_parquet_write.restype = ctypes.c_int

    @staticmethod
    def _check(rc, err):
        if rc != 0:
            raise HsError(rc, err.msg.decode("utf-8", "replace"))

    def _import(self, stream):
        # pyarrow moves the stream (sets its release to NULL) and releases it later.
        return pa.RecordBatchReader._import_from_c(ctypes.addressof(stream))

    def reader(self, path, columns=None, batch_size=0):
        """A pyarrow RecordBatchReader over hs_parquet_read."""
        err = _HsErrorStruct()
        stream = _ArrowArrayStream()
        names, n = _names_array(columns)
        rc = self.lib.hs_parquet_read(str(path).encode(), names, n, batch_size,
                                      ctypes.byref(stream), ctypes.byref(err))
        self._check(rc, err)
        return self._import(stream)

    def read(self, path, columns=None, batch_size=0):
        """hs_parquet_read -> pyarrow.Table."""
        r = self.reader(path, columns, batch_size)
        return r.read_all()

    def read_selection(self, path, rows, columns=None, batch_size=0):
        """hs_parquet_read_selection -> (pyarrow.Table, scan stats dict)."""
        err = _HsErrorStruct()
        stream = _ArrowArrayStream()
        stats = _ScanStats()
        names, n = _names_array(columns)
        rows = list(rows)
        rows_arr = (ctypes.c_uint32 * max(1, len(rows)))(*rows)
        rc = self.lib.hs_parquet_read_selection(str(path).encode(), names, n, rows_arr,
                                                len(rows), batch_size, ctypes.byref(stats),
                                                ctypes.byref(stream), ctypes.byref(err))
        self._check(rc, err)
        r = self._import(stream)
        table = r.read_all()
        del r  # releases the stream: stats are final
        return table, {f: getattr(stats, f) for f, _ in _ScanStats._fields_}

    def write(self, path, data, codec=None, codec_level=0, row_group_rows=0, page_bytes=0,
              page_rows=0, dictionary=True, data_page_v2=False, column_encodings=None):
        """hs_parquet_write from a pyarrow Table / RecordBatch / RecordBatchReader.

        column_encodings: dict {column: "DELTA_BINARY_PACKED"} or the C string form."""
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if isinstance(data, pa.Table):
            data = pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
        if isinstance(column_encodings, dict):
            column_encodings = ",".join(f"{k}={v}" for k, v in column_encodings.items())
        opt = _WriteOptions(codec=codec.encode() if codec else None, codec_level=codec_level,
                            row_group_rows=row_group_rows, page_bytes=page_bytes,
                            dictionary=1 if dictionary else -1,
                            data_page_v2=1 if data_page_v2 else 0,
                            column_encodings=column_encodings.encode() if column_encodings else None,
                            page_rows=page_rows)
        stream = _ArrowArrayStream()
        data._export_to_c(ctypes.addressof(stream))
        err = _HsErrorStruct()
        rc = self.lib.hs_parquet_write(str(path).encode(), ctypes.byref(stream),
                                       ctypes.byref(opt), ctypes.byref(err))
        # The library must have released the stream whatever happened.
        assert stream.release is None, "hs_parquet_write did not release its input stream"
        self._check(rc, err)


_HS = None


@pytest.fixture(scope="session")
def hs():
    global _HS
    if not LIB_PATH.exists():
        pytest.skip(f"{LIB_PATH} not built (set HS_BUILD)")
    if _HS is None:
        _HS = HyperStream(LIB_PATH)
    return _HS


@pytest.fixture(scope="session")
def parquet_testing():
    if not (PARQUET_TESTING / "data").is_dir():
        pytest.skip(f"{PARQUET_TESTING} absent")
    return PARQUET_TESTING


def table_diff(got, want, max_rows=5):
    """A readable description of how two tables differ ('' when equal)."""
    if got.equals(want):
        return ""
    out = []
    if not got.schema.equals(want.schema):
        out.append(f"schema differs:\n  got:  {got.schema}\n  want: {want.schema}")
    if got.num_rows != want.num_rows:
        out.append(f"rows: got {got.num_rows}, want {want.num_rows}")
    for name in want.column_names:
        if name not in got.column_names:
            out.append(f"column {name!r} missing")
            continue
        g, w = got.column(name), want.column(name)
        if g.type != w.type or len(g) != len(w):
            continue
        if g.equals(w):
            continue
        gl, wl = g.to_pylist(), w.to_pylist()
        bad = [i for i in range(len(wl)) if not _same(gl[i], wl[i])][:max_rows]
        if not bad:
            out.append(f"column {name!r}: differs (layout only?)")
        for i in bad:
            out.append(f"column {name!r} row {i}: got {gl[i]!r}, want {wl[i]!r}")
    return "\n".join(out) or "tables differ"


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b

"""Shared fixtures of the Python oracle tests.

The tests load the C library (``$HS_BUILD/libhyperstream.so``, HS_BUILD
defaulting to ``build`` under the repository root) with ctypes and move data
across the Arrow C Stream Interface:

* reading:  hs_parquet_read fills an ArrowArrayStream that pyarrow imports
  with ``RecordBatchReader._import_from_c`` (pyarrow then owns and releases it);
* writing:  pyarrow exports a RecordBatchReader with ``_export_to_c`` and
  hs_parquet_write consumes (releases) it.

Missing pieces: ``require(cond, why)`` and ``require_module(name)`` skip a
test (or a whole module) when an oracle (pyiceberg, duckdb, the Java harness,
...) or the built library is missing, except under ``CI=true`` (what
``.ci/run`` exports), where they fail: a CI run that lost an oracle must not
pass.  Tests needing ../shared/testdata skip when it is absent (documented in
README.md; not an oracle of ours).  Nothing here compares against our own
output: the oracles are pyarrow and duckdb.
"""
import ctypes
import importlib
import math
import os
import pathlib
import select
import struct
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]


IN_CI = os.environ.get("CI", "").lower() in ("true", "1")


def require(cond, why):
    """Nothing when cond holds.  Otherwise skips the test (or, called at module
    level, the module), except under CI=true, where it fails: an oracle or a
    built piece that CI must have is missing."""
    if cond:
        return
    if IN_CI:
        pytest.fail(f"required under CI=true: {why}", pytrace=False)
    pytest.skip(why, allow_module_level=True)


def require_module(name):
    """importlib.import_module(name), or require() fails/skips naming it."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        require(False, f"Python module {name} is not installed ({e})")


def runs_without_the_gil(call, attempts=50):
    """Whether call() lets another Python thread run while it is inside.

    No timing decides it: the switch interval is raised to ~forever, so
    the interpreter never takes the GIL from the running thread by itself.
    An observer thread, woken just before call() starts, records whether the
    call is still in progress when it first runs.  If call() holds the GIL
    throughout, the observer can only run after it returned and records
    False every time; if call() releases it, the observer runs inside it and
    records True (given `attempts` calls to be scheduled, so a loaded machine
    only makes it take more of them).  Returns the first observed True, or
    False after `attempts` calls."""
    in_call = [False]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e6)
    try:
        for _ in range(attempts):
            go, seen = threading.Event(), []

            def observe():
                go.wait()
                seen.append(in_call[0])

            th = threading.Thread(target=observe)
            th.start()
            in_call[0] = True
            go.set()
            call()
            in_call[0] = False
            th.join()
            if seen[0]:
                return True
        return False
    finally:
        sys.setswitchinterval(old)


def _build_dir():
    b = pathlib.Path(os.environ.get("HS_BUILD", "build"))
    return b if b.is_absolute() else REPO / b


# The test library: every symbol (internal ones too), same objects as the
# public libhyperstream.so, which exports only the hs_ API (CMakeLists.txt).
LIB_PATH = _build_dir() / "libhyperstream_testing.so"
TESTDATA = pathlib.Path(os.environ.get("HS_TESTDATA") or (REPO.parent / "shared" / "testdata"))
PARQUET_TESTING = TESTDATA / "parquet-testing"

STATUS_NAMES = ["HS_OK", "HS_IO", "HS_CORRUPT", "HS_INVALID", "HS_NOMEM", "HS_CONFLICT",
                "HS_NOT_FOUND", "HS_UNSUPPORTED", "HS_INTERNAL"]


class _HsErrorStruct(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


class _WriteOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),  # 0: the 0.1 layout
                ("codec", ctypes.c_char_p), ("codec_level", ctypes.c_int),
                ("row_group_rows", ctypes.c_int64), ("page_bytes", ctypes.c_int64),
                ("dictionary", ctypes.c_int), ("data_page_v2", ctypes.c_int),
                ("column_encodings", ctypes.c_char_p), ("page_rows", ctypes.c_int64)]


class _ScanStats(ctypes.Structure):
    # output struct: the caller sets struct_size (0 = the 0.1 layout)
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("row_groups_read", ctypes.c_int64), ("row_groups_skipped", ctypes.c_int64),
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
        """hs_parquet_read -> pyarrow.Table (checked to be well formed)."""
        r = self.reader(path, columns, batch_size)
        t = r.read_all()
        t.validate(full=True)
        return t

    def read_selection(self, path, rows, columns=None, batch_size=0):
        """hs_parquet_read_selection -> (pyarrow.Table, scan stats dict)."""
        err = _HsErrorStruct()
        stream = _ArrowArrayStream()
        stats = _ScanStats(ctypes.sizeof(_ScanStats))
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
        return table, {f: getattr(stats, f) for f, _ in _ScanStats._fields_[1:]}

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


class StreamError(Exception):
    """The stream's get_next failed (the library's message from get_last_error)."""


class ReaderCrashed(Exception):
    """The isolated reader process died (signal or abort) or hung."""


_WORKER = r"""
import os, struct, sys
import pyarrow as pa
sys.path.insert(0, sys.argv[1])
proto = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)  # whatever the library prints goes to stderr, not into the protocol
from conftest import HyperStream, HsError, LIB_PATH
hs = HyperStream(LIB_PATH)
for line in sys.stdin.buffer:
    path = line.decode().rstrip("\n")
    try:
        t = hs.read(path)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, t.schema) as w:
            w.write_table(t)
        payload = b"T" + sink.getvalue().to_pybytes()
    except HsError as e:
        payload = b"E" + struct.pack("<i", e.code) + str(e).encode()
    except (pa.ArrowException, OSError) as e:  # an error from the stream's get_next
        payload = b"S" + str(e).encode()
    except Exception as e:
        payload = b"X" + f"{type(e).__name__}: {e}".encode()
    proto.write(struct.pack("<Q", len(payload)) + payload)
    proto.flush()
"""


class IsolatedReader:
    """hs_parquet_read in a child process, so that a crash fails one test
    (ReaderCrashed) instead of killing the whole run.  Tables come back as
    Arrow IPC; HsError and other exceptions are re-raised here."""

    def __init__(self):
        self.proc = None

    def _start(self):
        env = dict(os.environ, HS_BUILD=str(LIB_PATH.parent))
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER, str(HERE)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def _read_exact(self, n, deadline):
        out = b""
        fd = self.proc.stdout.fileno()
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.close()
                raise ReaderCrashed("reader process hung (timeout)")
            chunk = os.read(fd, n - len(out))
            if not chunk:
                rc = self.proc.wait()
                self.proc = None
                raise ReaderCrashed(f"reader process died (exit status {rc})")
            out += chunk
        return out

    def read(self, path, timeout=120):
        if self.proc is None:
            self._start()
        self.proc.stdin.write(str(path).encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        (n,) = struct.unpack("<Q", self._read_exact(8, deadline))
        payload = self._read_exact(n, deadline)
        kind, body = payload[:1], payload[1:]
        if kind == b"T":
            return pa.ipc.open_stream(body).read_all()
        if kind == b"E":
            (code,) = struct.unpack("<i", body[:4])
            raise HsError(code, body[4:].decode("utf-8", "replace").split(": ", 1)[-1])
        if kind == b"S":
            raise StreamError(body.decode("utf-8", "replace"))
        raise RuntimeError(body.decode("utf-8", "replace"))

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture(scope="session")
def hs_isolated(hs):
    r = IsolatedReader()
    yield r
    r.close()


_HS = None


@pytest.fixture(scope="session")
def hs():
    global _HS
    require(LIB_PATH.exists(), f"{LIB_PATH} not built (set HS_BUILD)")
    if _HS is None:
        _HS = HyperStream(LIB_PATH)
    return _HS


@pytest.fixture(scope="session")
def parquet_testing():
    if not (PARQUET_TESTING / "data").is_dir():
        pytest.skip(f"{PARQUET_TESTING} absent")
    return PARQUET_TESTING


def _same_value(a, b):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return struct.pack("<d", a) == struct.pack("<d", b)  # -0.0 != 0.0
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    return a == b


def _has_float(t):
    if pa.types.is_floating(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_float(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_large_list(t):
        return _has_float(t.value_type)
    if pa.types.is_map(t):
        return _has_float(t.key_type) or _has_float(t.item_type)
    return False


def _first_diff(g, w):
    gl, wl = g.to_pylist(), w.to_pylist()
    for i, (x, y) in enumerate(zip(gl, wl)):
        if not _same_value(x, y):
            return f"row {i}: got {x!r}, want {y!r}"
    return "values differ"


def arrays_equal(g, w):
    """'' if the arrays hold the same values, else what differs.  Floats are
    compared bitwise (NaN == NaN, -0.0 != 0.0), which Array.equals does not do;
    nested arrays are compared through their flattened children."""
    if isinstance(g, pa.ChunkedArray):
        g = g.combine_chunks() if g.num_chunks else pa.array([], g.type)
    if isinstance(w, pa.ChunkedArray):
        w = w.combine_chunks() if w.num_chunks else pa.array([], w.type)
    if g.type != w.type:
        return f"type {g.type} != {w.type}"
    if len(g) != len(w):
        return f"length {len(g)} != {len(w)}"
    t = w.type
    if not _has_float(t):
        return "" if g.equals(w) else _first_diff(g, w)
    if not g.is_null().equals(w.is_null()):
        return "nulls differ: " + _first_diff(g, w)
    if pa.types.is_floating(t):
        bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[t.bit_width // 8]
        gz = g.fill_null(0).to_numpy(zero_copy_only=False)
        wz = w.fill_null(0).to_numpy(zero_copy_only=False)
        if np.array_equal(gz.view(bits), wz.view(bits)):
            return ""
        gn, wn = np.isnan(gz), np.isnan(wz)  # NaN payloads may differ: any NaN is NaN
        if np.array_equal(gn, wn) and np.array_equal(gz[~gn].view(bits), wz[~wn].view(bits)):
            return ""
        return _first_diff(g, w)
    if pa.types.is_struct(t):
        for i, (gc, wc) in enumerate(zip(g.flatten(), w.flatten())):
            d = arrays_equal(gc, wc)
            if d:
                return f"field {t.field(i).name}: {d}"
        return ""
    if pa.types.is_map(t):
        lt = pa.list_(pa.field("entries", pa.struct([t.key_field, t.item_field]),
                               nullable=False))
        return arrays_equal(g.cast(lt), w.cast(lt))
    if pa.types.is_fixed_size_list(t):
        lt = pa.list_(t.value_field)
        return arrays_equal(g.cast(lt), w.cast(lt))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        gl = g.value_lengths().fill_null(0)
        wl = w.value_lengths().fill_null(0)
        if not gl.equals(wl):
            return "list lengths differ: " + _first_diff(g, w)
        d = arrays_equal(g.flatten(), w.flatten())
        return f"list values: {d}" if d else ""
    return "" if g.equals(w) else _first_diff(g, w)


def assert_tables_equal(got, want, what=""):
    """Schema equal (metadata aside) and values equal; floats compared bitwise
    (NaN == NaN, -0.0 != 0.0), which Table.equals does not do."""
    assert got.schema.equals(want.schema, check_metadata=False), \
        f"{what}: schema differs\n got:  {got.schema}\n want: {want.schema}"
    assert got.num_rows == want.num_rows, f"{what}: {got.num_rows} rows, want {want.num_rows}"
    for name in want.column_names:
        d = arrays_equal(got.column(name), want.column(name))
        assert not d, f"{what}: column {name}: {d}"


# ---- the storage matrix switch (HS_TEST_STORAGE=local|s3) ----
#
# HS_TEST_STORAGE=s3 puts the tables of the table, index, vector and Python
# table tests on an S3 server (tests/s3/s3server.py: SeaweedFS when installed,
# else moto; HS_S3_SERVER=seaweedfs|moto picks one) that this session starts
# once and stops at its end.
# Tests take `table_dir` instead of `tmp_path` for where their tables live:
# tmp_path locally, an s3://<bucket>/<test>/ prefix (os.PathLike, so
# hdb.Table(table_dir / "t") works) on S3.  pyiceberg's StaticTable.from_metadata
# (the oracle) gets the server's endpoint and keys for s3:// locations
# (pyarrow's own S3 client takes them from the AWS_* environment).  Tests that
# are local by nature (they edit files in place, mmap, permissions, kill -9 of a
# local WAL) call local_only("why") or use tmp_path, which stays local.

STORAGE = os.environ.get("HS_TEST_STORAGE", "local")
if STORAGE not in ("local", "s3"):
    raise RuntimeError(f"HS_TEST_STORAGE={STORAGE}: expected local or s3")
ON_S3 = STORAGE == "s3"
_S3_SERVER = None


def storage_server():
    """The session's S3 server (started at the first call; stopped at exit).
    Its AWS_* variables go into os.environ before the library's first S3
    request (the library reads them once per process)."""
    global _S3_SERVER
    if _S3_SERVER is None:
        import atexit
        sys.path.insert(0, str(REPO / "tests" / "s3"))
        from s3server import S3Server
        server = S3Server()
        try:
            server.start()
        except RuntimeError as e:
            server.stop()
            require(False, f"S3 server {server.kind} did not start: {e}")
        atexit.register(server.stop)
        os.environ.update(server.env)
        _S3_SERVER = server
    return _S3_SERVER


def s3_fileio_properties(server):
    """pyiceberg FileIO properties for the test server."""
    return {"s3.endpoint": server.endpoint, "s3.access-key-id": server.access_key,
            "s3.secret-access-key": server.secret_key, "s3.region": "us-east-1"}


class S3Path(os.PathLike):
    """An s3:// prefix that joins like a pathlib.Path (`p / "t"`)."""

    def __init__(self, uri):
        self.uri = uri.rstrip("/")

    def __truediv__(self, name):
        return S3Path(f"{self.uri}/{name}")

    def __fspath__(self):
        return self.uri

    def __str__(self):
        return self.uri

    def __repr__(self):
        return f"S3Path({self.uri!r})"

    def __eq__(self, other):
        return isinstance(other, S3Path) and self.uri == other.uri

    def __lt__(self, other):
        return self.uri < other.uri

    def __hash__(self):
        return hash(self.uri)

    @property
    def name(self):
        return self.uri.rsplit("/", 1)[-1]

    # the few pathlib.Path reads and writes the tests make, through pyarrow's
    # own S3 client (an oracle independent of ours; it takes the AWS_* variables)
    def _fs(self):
        import pyarrow.fs as pafs
        fs, key = pafs.FileSystem.from_uri(self.uri)
        return fs, key

    def read_bytes(self):
        fs, key = self._fs()
        with fs.open_input_stream(key) as f:
            return f.read()

    def read_text(self):
        return self.read_bytes().decode()

    def write_bytes(self, data):
        fs, key = self._fs()
        with fs.open_output_stream(key) as f:
            f.write(data)

    def write_text(self, text):
        self.write_bytes(text.encode())

    def unlink(self):
        fs, key = self._fs()
        fs.delete_file(key)

    def exists(self):
        import pyarrow.fs as pafs
        fs, key = self._fs()
        if fs.get_file_info(key).type != pafs.FileType.NotFound:
            return True
        return bool(fs.get_file_info(pafs.FileSelector(key, allow_not_found=True)))

    def is_file(self):
        """An object (S3 has no directories; a prefix is not a file)."""
        import pyarrow.fs as pafs
        fs, key = self._fs()
        return fs.get_file_info(key).type == pafs.FileType.File

    def glob(self, pattern):
        import fnmatch
        import pyarrow.fs as pafs
        fs, key = self._fs()
        for info in fs.get_file_info(pafs.FileSelector(key, allow_not_found=True)):
            if fnmatch.fnmatch(info.base_name, pattern):
                yield self / info.base_name


def as_path(location):
    """pathlib.Path of a local path or file:// URI; S3Path of an s3:// URI."""
    s = os.fspath(location)
    if s.startswith(("s3://", "s3a://")):
        return S3Path("s3://" + s.split("://", 1)[1])
    if s.startswith("file://"):
        s = s[len("file://"):]
    elif s.startswith("file:"):
        s = s[len("file:"):]
    return pathlib.Path(s)


def local_only(why):
    """Skips the calling test when the storage matrix is on S3 (never a
    failure: these tests are local by nature and run in the local matrix)."""
    if ON_S3:
        pytest.skip(f"local storage only: {why}")


_TABLE_DIRS = [0]


@pytest.fixture
def table_dir(request, tmp_path):
    """Where the test's tables live: tmp_path, or a fresh s3:// prefix on the
    session's S3 server with HS_TEST_STORAGE=s3."""
    if not ON_S3:
        return tmp_path
    server = storage_server()
    _TABLE_DIRS[0] += 1
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in request.node.name)[:80]
    return S3Path(server.uri(f"py-{os.getpid()}/{_TABLE_DIRS[0]}-{safe}"))


if ON_S3:
    try:
        from pyiceberg.table import StaticTable as _StaticTable

        _orig_from_metadata = _StaticTable.from_metadata.__func__

        def _from_metadata(cls, metadata_location, properties=None):
            props = dict(properties or {})
            if str(metadata_location).startswith(("s3://", "s3a://")):
                props = {**s3_fileio_properties(storage_server()), **props}
            return _orig_from_metadata(cls, metadata_location, props)

        _StaticTable.from_metadata = classmethod(_from_metadata)
    except ImportError:
        pass


class _S3DirFactory:
    """tmp_path_factory's mktemp for s3:// prefixes."""

    def mktemp(self, name):
        _TABLE_DIRS[0] += 1
        return S3Path(storage_server().uri(f"py-{os.getpid()}/{_TABLE_DIRS[0]}-{name}"))


@pytest.fixture(scope="session")
def table_dir_factory(tmp_path_factory):
    """tmp_path_factory, or its s3:// counterpart with HS_TEST_STORAGE=s3."""
    return _S3DirFactory() if ON_S3 else tmp_path_factory

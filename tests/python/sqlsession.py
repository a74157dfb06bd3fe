"""ctypes client of the SQL session API (hyperstream/sql.h) for the tests.

Tables are written with the hyperstreamdb package, opened here through a
path catalog (hs_catalog_open_path(NULL)) and registered by name; results
come back as pyarrow Tables through the ArrowArrayStream of hs_result_stream.

Errors raise SqlError with the session's SQLSTATE, also an error met while
the result streams (the stream's get_next fails; the session records the
statement's SQLSTATE, e.g. 22012 for a division by zero in a later batch),
as the hyperstreamdb package does (python/hyperstreamdb/_core_sql.c
raise_sql_stream_error).
"""
import ctypes
import errno

import pyarrow as pa

from conftest import LIB_PATH, STATUS_NAMES, _ArrowArrayStream, _HsErrorStruct

STATUS = STATUS_NAMES + ["HS_CANCELLED"]

# A stream's get_next error (pyarrow's exception for the errno it returned,
# columnar/arrow_c.c status_errno) -> the status, and the SQLSTATE class of
# that status when the session recorded none (as the package does).
_STREAM_ERRNO = {errno.ENOENT: "HS_NOT_FOUND", errno.EBADMSG: "HS_CORRUPT",
                 errno.ECANCELED: "HS_CANCELLED"}
_CLASS_STATE = {"HS_INVALID": "22000", "HS_NOMEM": "53200", "HS_CANCELLED": "57014",
                "HS_UNSUPPORTED": "0A000", "HS_NOT_FOUND": "42704", "HS_IO": "58030",
                "HS_CORRUPT": "XX001"}


def _stream_status(e):
    if isinstance(e, pa.ArrowInvalid):
        return "HS_INVALID"
    if isinstance(e, pa.ArrowMemoryError):
        return "HS_NOMEM"
    if isinstance(e, pa.ArrowNotImplementedError):
        return "HS_UNSUPPORTED"
    return _STREAM_ERRNO.get(getattr(e, "errno", None), "HS_IO")


class SqlError(Exception):
    def __init__(self, code, msg, sqlstate, position):
        self.status = STATUS[code] if 0 <= code < len(STATUS) else str(code)
        self.sqlstate = sqlstate
        self.position = position
        super().__init__(f"{self.status} [{sqlstate}] {msg}")


class Session:
    def __init__(self, lib_path=LIB_PATH):
        self.lib = lib = ctypes.CDLL(str(lib_path))
        p, c = ctypes.c_void_p, ctypes.c_char_p
        for name, args, res in [
            ("hs_session_open", [p, p, p], ctypes.c_int),
            ("hs_session_close", [p], None),
            ("hs_session_register", [p, c, p, p], ctypes.c_int),
            ("hs_session_execute", [p, c, p, p], ctypes.c_int),
            ("hs_session_sqlstate", [p], c),
            ("hs_session_error_position", [p], ctypes.c_int),
            ("hs_session_cancel", [p], None),
            ("hs_session_prepare", [p, c, ctypes.c_int, p, p, p], ctypes.c_int),
            ("hs_prepared_execute", [p, ctypes.c_int, p, p, p], ctypes.c_int),
            ("hs_prepared_param_count", [p], ctypes.c_int),
            ("hs_prepared_free", [p], None),
            ("hs_result_tag", [p], c),
            ("hs_result_has_rows", [p], ctypes.c_int),
            ("hs_result_stream", [p, p, p], ctypes.c_int),
            ("hs_result_free", [p], None),
            ("hs_catalog_open_path", [c, p, p], ctypes.c_int),
            ("hs_catalog_close", [p], None),
            ("hs_table_open", [p, c, p, p], ctypes.c_int),
            ("hs_table_close", [p], None),
        ]:
            f = getattr(lib, name)
            f.argtypes = args
            f.restype = res
        self.s = p()
        err = _HsErrorStruct()
        assert lib.hs_session_open(None, ctypes.byref(self.s), ctypes.byref(err)) == 0, err.msg
        self.cat = p()
        assert lib.hs_catalog_open_path(None, ctypes.byref(self.cat), ctypes.byref(err)) == 0
        self.tables = []

    def close(self):
        if self.s:
            self.lib.hs_session_close(self.s)
            self.s = None
        for t in self.tables:
            self.lib.hs_table_close(t)
        self.tables = []
        if self.cat:
            self.lib.hs_catalog_close(self.cat)
            self.cat = None

    def register(self, name, path):
        err = _HsErrorStruct()
        t = ctypes.c_void_p()
        rc = self.lib.hs_table_open(self.cat, str(path).encode(), ctypes.byref(t), ctypes.byref(err))
        assert rc == 0, err.msg
        self.tables.append(t)
        rc = self.lib.hs_session_register(self.s, name.encode(), t, ctypes.byref(err))
        assert rc == 0, err.msg

    def _raise(self, rc, err):
        raise SqlError(rc, err.msg.decode("utf-8", "replace"),
                       self.lib.hs_session_sqlstate(self.s).decode(),
                       self.lib.hs_session_error_position(self.s))

    def _result(self, r):
        try:
            tag = self.lib.hs_result_tag(r).decode()
            if not self.lib.hs_result_has_rows(r):
                return tag
            err = _HsErrorStruct()
            st = _ArrowArrayStream()
            rc = self.lib.hs_result_stream(r, ctypes.byref(st), ctypes.byref(err))
            assert rc == 0, err.msg
            reader = pa.RecordBatchReader._import_from_c(ctypes.addressof(st))
            try:
                return reader.read_all()
            except (pa.ArrowException, OSError) as e:
                self._raise_stream(e)
        finally:
            self.lib.hs_result_free(r)

    def _raise_stream(self, e):
        """An error from the result stream's get_next as SqlError."""
        status = _stream_status(e)
        state = self.lib.hs_session_sqlstate(self.s).decode()
        if state == "00000":   # not an error the statement recorded (e.g. exporting a batch)
            state = _CLASS_STATE.get(status, "XX000")
        raise SqlError(STATUS.index(status), str(e), state,
                       self.lib.hs_session_error_position(self.s)) from e

    def sql(self, text):
        err = _HsErrorStruct()
        r = ctypes.c_void_p()
        rc = self.lib.hs_session_execute(self.s, text.encode(), ctypes.byref(r), ctypes.byref(err))
        if rc != 0:
            self._raise(rc, err)
        return self._result(r)

    def prepared(self, text, types, values):
        err = _HsErrorStruct()
        pr = ctypes.c_void_p()
        tarr = (ctypes.c_char_p * max(1, len(types)))(*[t.encode() if t else None for t in types])
        rc = self.lib.hs_session_prepare(self.s, text.encode(), len(types), tarr, ctypes.byref(pr),
                                         ctypes.byref(err))
        if rc != 0:
            self._raise(rc, err)
        try:
            varr = (ctypes.c_char_p * max(1, len(values)))(
                *[None if v is None else str(v).encode() for v in values])
            r = ctypes.c_void_p()
            rc = self.lib.hs_prepared_execute(pr, len(values), varr, ctypes.byref(r), ctypes.byref(err))
            if rc != 0:
                self._raise(rc, err)
            return self._result(r)
        finally:
            self.lib.hs_prepared_free(pr)

"""Errors through the ctypes test harness (sqlsession.py) carry the
statement's SQLSTATE, as the hyperstreamdb package's do: PostgreSQL's
22012 (division_by_zero) for a division by zero, whether the statement
fails before its result exists, while the result streams (a later batch:
the stream's get_next fails), or inside the table scan whose Arrow stream
the executor reads (a filter pushed into the scan).  Before, the second
raised pyarrow's ArrowInvalid without a SQLSTATE and the third reported
58030 (an I/O error)."""
import ctypes

import numpy as np
import pyarrow as pa
import pytest

from conftest import _HsErrorStruct, require_module

hdb = require_module("hyperstreamdb")

import sqlsession  # noqa: E402

FILES = 4
ROWS = 50_000


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    path = tmp_path_factory.mktemp("sqlerr") / "t"
    t = hdb.Table(str(path))
    # x = 0 only in the last row of the last file: the first batches divide fine
    for f in range(FILES):
        x = np.arange(f * ROWS, (f + 1) * ROWS, dtype=np.int64) - (FILES * ROWS - 1)
        t.write_arrow(pa.table({"k": pa.array(np.arange(f * ROWS, (f + 1) * ROWS)), "x": x}))
        t.commit()
    s = sqlsession.Session()
    s.register("t", path)
    s.sql("SET threads = 1")
    p = hdb.Session()
    p.register("t", hdb.Table(str(path)))
    yield s, p
    s.close()


def _package_state(p, sql):
    with pytest.raises(Exception) as ei:
        p.sql(sql).to_arrow()
    return ei.value.sqlstate


@pytest.mark.parametrize("sql", [
    "SELECT k, 10 / x FROM t",                       # the projection, after the first batch
    "SELECT k FROM t WHERE 10 / x > 1000",           # the filter pushed into the scan
    "SELECT 10 / (x - x) FROM t",                    # the first batch already
])
def test_division_by_zero_is_22012(env, sql):
    s, p = env
    with pytest.raises(sqlsession.SqlError) as ei:
        s.sql(sql)
    assert ei.value.sqlstate == "22012", str(ei.value)
    assert ei.value.status == "HS_INVALID", str(ei.value)
    assert "division by zero" in str(ei.value)
    assert _package_state(p, sql) == "22012"


def test_the_projection_fails_while_streaming(env):
    """The premise of the first case: the statement starts (its first
    batch computes) and only the stream's get_next fails."""
    s, _ = env
    err = _HsErrorStruct()
    r = ctypes.c_void_p()
    rc = s.lib.hs_session_execute(s.s, b"SELECT k, 10 / x FROM t", ctypes.byref(r),
                                  ctypes.byref(err))
    assert rc == 0, err.msg
    s.lib.hs_result_free(r)
    s.sql("SELECT 1")   # the session stays usable after a stream error
    with pytest.raises(sqlsession.SqlError):
        s.sql("SELECT k, 10 / x FROM t")
    assert s.sql("SELECT count(*) FROM t").column(0).to_pylist() == [FILES * ROWS]

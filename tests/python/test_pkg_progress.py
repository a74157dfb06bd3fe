"""Progress reporting of long operations: callables get (what, done, total)
with done increasing up to total; progress=True draws a bar (tqdm when
importable, else a text bar on stderr); the default is off when stderr is not
a terminal; set_progress switches it globally; an exception raised by a
callback cancels the operation and nothing is published."""
import sys

import numpy as np
import pyarrow as pa
import pytest

import hyperstreamdb as hdb

ROWS = 300_000


def frame(start=0, n=ROWS):
    return pa.table({"id": np.arange(start, start + n, dtype=np.int64),
                     "x": np.random.default_rng(start).random(n)})


def chunked(t, rows=10_000):
    return pa.Table.from_batches(t.to_batches(max_chunksize=rows))


@pytest.fixture(autouse=True)
def reset_switch():
    yield
    hdb.set_progress(None)


def test_callback_gets_increasing_counts(table_dir):
    t = hdb.Table(table_dir / "t")
    calls = []
    t.write_arrow(chunked(frame()))
    t.commit(progress=lambda what, done, total: calls.append((what, done, total)))
    assert calls, "no progress reported"
    assert all(c[0] == "write" and c[2] == ROWS for c in calls)
    dones = [c[1] for c in calls]
    assert dones == sorted(dones) and dones[-1] == ROWS
    assert t.count() == ROWS


def test_text_bar_when_tqdm_is_absent(table_dir, capfd, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)       # import tqdm -> ImportError
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    t = hdb.Table(table_dir / "t")
    t.write_arrow(chunked(frame()))
    t.commit(progress=True)
    err = capfd.readouterr().err
    assert "writing" in err and "100%" in err and f"{ROWS}/{ROWS}" in err


def test_off_by_default_off_a_terminal_and_global_switch(table_dir, capfd, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    t = hdb.Table(table_dir / "t")
    t.write_arrow(chunked(frame()))
    t.commit()                          # stderr is captured: not a TTY -> no bar
    assert capfd.readouterr().err == ""
    hdb.set_progress(True)
    assert hdb.get_progress() is True
    t.write_arrow(chunked(frame(ROWS)))
    t.commit()
    assert "100%" in capfd.readouterr().err
    hdb.set_progress(False)
    t.write_arrow(chunked(frame(2 * ROWS)))
    t.commit()
    t.write_arrow(chunked(frame(3 * ROWS)))
    t.commit(progress=False)
    assert capfd.readouterr().err == ""
    assert t.count() == 4 * ROWS


def test_callback_exception_cancels_and_publishes_nothing(table_dir):
    t = hdb.Table(table_dir / "t")
    t.write_arrow(frame(n=10))
    first = t.commit()

    def boom(what, done, total):
        raise RuntimeError("stop here")

    t.write_arrow(chunked(frame(100)))
    with pytest.raises(RuntimeError, match="stop here"):
        t.commit(progress=boom)
    assert t.current_snapshot_id == first and t.count() == 10
    assert t.pending_rows == ROWS            # still buffered: commit() can be retried
    t.commit()
    assert t.count() == 10 + ROWS


def test_add_index_progress_and_cancel(table_dir):
    t = hdb.Table(table_dir / "t")
    for i in range(3):
        t.write_arrow(frame(i * 50_000, 50_000))
        t.commit()
    calls = []
    t.add_index("id", "inverted", progress=lambda *a: calls.append(a))
    assert calls and calls[-1][1] == calls[-1][2]
    assert [i["column"] for i in t.indexes()] == ["id"]

    def boom(*a):
        raise RuntimeError("cancel the build")

    with pytest.raises(RuntimeError, match="cancel the build"):
        t.add_index("x", "range", progress=boom)
    assert [i["column"] for i in t.indexes()] == ["id"]

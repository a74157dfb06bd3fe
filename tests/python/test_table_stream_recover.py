"""Recovery of an append stream's log when the table is opened without a
stream (issue 14: "recovery after a crash replays exactly the records not
yet committed"): a plain hdb.Table(path) / hs_table_open commits what a
crashed stream left in <table>/wal/, unless a live stream holds the log or
the table property hyperstream.wal.recover-on-open is false.

Oracles: DuckDB over the rows the test wrote (or, after kill -9, over the
child's log of acknowledged batches), and pyiceberg reading the table's
metadata file (so the rows are committed, not only in a handle's tail).
"""
import os
import pathlib
import signal
import subprocess
import sys
import time

import duckdb
import numpy as np
import pyarrow as pa
from conftest import require_module

import hyperstreamdb as hdb

pyiceberg_table = require_module("pyiceberg.table")
StaticTable = pyiceberg_table.StaticTable

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("v", pa.float64())])


def make_data(start, n):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "cat": pa.array([f"c{i % 5}" for i in ids], pa.string()),
        "v": pa.array((ids % 97).astype(np.float64)),
    }, schema=SCHEMA)


def expected(batches):
    src = pa.concat_tables(batches)  # noqa: F841
    return sorted(duckdb.sql("SELECT id, cat, v FROM src").fetchall())


def rows_of(tbl):
    return sorted(zip(tbl.column("id").to_pylist(), tbl.column("cat").to_pylist(),
                      tbl.column("v").to_pylist()))


def pyiceberg_rows(path):
    t = hdb.Table(path)
    loc = t.metadata_location
    t.close()
    return rows_of(StaticTable.from_metadata(loc).scan().to_arrow())


def segments(t):
    return sorted(pathlib.Path(t.location, "wal").glob("*.wal"))


def test_open_commits_a_crashed_streams_log(tmp_path):
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    t.add_index("cat", "inverted")
    s = t.stream(flush_interval_ms=3_600_000)
    batches = [make_data(0, 30), make_data(30, 50)]
    for b in batches:
        s.write(b)
    s.abort()                                   # a crash: rows only in the log
    t.close()
    t2 = hdb.Table(tmp_path / "t")               # this open recovers
    assert segments(t2) == []
    assert rows_of(t2.to_arrow()) == expected(batches)
    assert rows_of(t2.to_arrow(filter="cat = 'c3'")) == [
        r for r in expected(batches) if r[1] == "c3"]
    assert pyiceberg_rows(t2.path) == expected(batches)
    # nothing replayed twice: a stream opened now has nothing to replay
    with t2.stream() as s2:
        assert s2.stats()["replayed_rows"] == 0
    assert rows_of(t2.to_arrow()) == expected(batches)
    t2.close()


def test_open_leaves_a_live_streams_log_alone(tmp_path):
    """Another handle's open stream holds the log: opening the table does
    not touch it (the rows are the stream's to commit)."""
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    s = t.stream(flush_interval_ms=3_600_000, refresh_ms=-1)
    s.write(make_data(0, 20))
    other = hdb.Table(t.path)
    # the open committed nothing (the process's handles see the stream's
    # acknowledged rows through its tail; pyiceberg sees the commits only)
    assert other.current_snapshot_id is None
    assert pyiceberg_rows(t.path) == [] and segments(t)
    s.close()                                   # the stream commits its rows
    other.refresh()
    assert rows_of(other.to_arrow()) == expected([make_data(0, 20)])
    other.close()


def test_recover_on_open_off(tmp_path):
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    t.set_properties({"hyperstream.wal.recover-on-open": "false"})
    s = t.stream(flush_interval_ms=3_600_000)
    s.write(make_data(0, 20))
    s.abort()
    t.close()
    t2 = hdb.Table(tmp_path / "t")
    assert t2.count() == 0 and segments(t2)
    with t2.stream() as s2:                     # the stream recovers
        assert s2.stats()["replayed_rows"] == 20
    assert rows_of(t2.to_arrow()) == expected([make_data(0, 20)])
    t2.close()


_CHILD = r"""
import os, sys
import numpy as np, pyarrow as pa
import hyperstreamdb as hdb
path, log, base = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = hdb.Table(path)
s = t.stream(fsync="batch", flush_rows=400, flush_interval_ms=5000)
fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
print("ready", flush=True)
nxt = base
while True:
    n = 37
    ids = np.arange(nxt, nxt + n, dtype=np.int64)
    s.write(pa.table({"id": ids, "cat": pa.array([f"c{i % 5}" for i in ids]),
                      "v": pa.array((ids % 97).astype(np.float64))}))
    os.write(fd, f"{nxt} {n}\n".encode())
    nxt += n
"""


def test_kill9_then_plain_open(tmp_path):
    """A child streaming with fsync per batch is killed; a plain open
    commits every acknowledged row exactly once (a batch written but not
    yet acknowledged may be there too, whole)."""
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    path = t.path
    t.close()
    log = tmp_path / "acks.log"
    for r in range(3):
        p = subprocess.Popen([sys.executable, "-c", _CHILD, path, str(log), str(r * 1_000_000)],
                             stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.3 + 0.2 * r)
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        acked = set()
        for line in log.read_text().splitlines():
            a, n = (int(x) for x in line.split())
            acked.update(range(a, a + n))
        t = hdb.Table(path)
        ids = t.to_arrow(columns=["id"]).column("id").to_pylist()
        t.close()
        assert len(ids) == len(set(ids)), "a row is present twice"
        assert not acked - set(ids), f"round {r}: acknowledged rows lost"
        extra = set(ids) - acked
        assert len(extra) % 37 == 0
        assert len(pyiceberg_rows(path)) == len(ids)
        assert not list(pathlib.Path(path, "wal").glob("*.wal"))
    assert os.path.exists(path)

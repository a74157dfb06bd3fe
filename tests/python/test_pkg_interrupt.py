"""Ctrl-C and the GIL in the hyperstreamdb package.

* A long scan is interrupted by SIGINT (KeyboardInterrupt); the table is
  intact afterwards (same snapshot, every row readable).  Runs in a child
  process whose SIGINT handler is Python's default one (once), a thread
  sending the signal from the call's start on (at once, then every 5 ms):
  no assumption on how long the scan takes.
* An append whose input stream is slow is interrupted the same way and
  publishes nothing (the library fails the append before its commit).
* Scans release the GIL: another Python thread keeps running during them.
"""
import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import hyperstreamdb as hdb
from conftest import runs_without_the_gil

CHILD = r'''
import json, os, signal, sys, threading, time
import numpy as np, pyarrow as pa, hyperstreamdb as hdb

path = sys.argv[1]
out = {}
t = hdb.Table(path)
n_files, rows = 4, 250_000
for i in range(n_files):
    t.write_arrow(pa.table({"id": np.arange(i * rows, (i + 1) * rows, dtype=np.int64),
                            "x": np.random.default_rng(i).random(rows),
                            "s": pa.array(np.char.mod("v%d", np.arange(rows) % 997))}))
    t.commit()
snap = t.current_snapshot_id
total = n_files * rows

# SIGINT is sent at once and then every 5 ms until one has been turned into
# KeyboardInterrupt; the handler is Python's default one while armed, and
# ignores later signals.  The firing thread starts before the call, so the
# first signal goes out within one switch interval (5 ms) of the call's
# start, not after a fixed delay: the scan below takes 20-40 times that.
armed = threading.Event()

def on_sigint(signum, frame):
    if armed.is_set():
        armed.clear()
        signal.default_int_handler(signum, frame)

signal.signal(signal.SIGINT, on_sigint)

def interrupted(call):
    """Runs call() under repeated SIGINT: "interrupted" or "finished"."""
    go = threading.Event()
    def fire():
        go.wait()
        while armed.is_set():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.005)
    th = threading.Thread(target=fire)
    th.start()
    try:
        try:
            armed.set()   # on_sigint clears it when it raises
            go.set()
            call()
            return "finished"
        finally:
            armed.clear()
    except KeyboardInterrupt:
        return "interrupted"
    finally:
        go.set()
        th.join()

# 1. scan
t0 = time.monotonic()
out["scan"] = interrupted(lambda: t.to_arrow(batch_size=4096))
out["scan_seconds"] = time.monotonic() - t0
out["snapshot_unchanged"] = t.current_snapshot_id == snap
out["rows_after"] = t.to_arrow(columns=["id"]).num_rows
out["total"] = total

# 2. append from a slow stream: interrupted before the commit
def slow_batches():
    for i in range(200):
        time.sleep(0.02)
        yield pa.record_batch({"id": pa.array([10**9 + i], pa.int64()),
                               "x": pa.array([0.5]), "s": pa.array(["z"])})
schema = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string())])
reader = pa.RecordBatchReader.from_batches(schema, slow_batches())
done = []
out["append"] = interrupted(lambda: t._handle().append(reader, done=done))
out["append_published"] = bool(done)
out["snapshot_unchanged_after_append"] = t.current_snapshot_id == snap
out["rows_after_append"] = hdb.Table(path).count()
print(json.dumps(out))
'''


def test_ctrl_c_interrupts_scan_and_append(tmp_path):
    p = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "t")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["scan"] == "interrupted", out
    assert out["snapshot_unchanged"] and out["rows_after"] == out["total"], out
    assert out["append"] == "interrupted", out
    assert not out["append_published"], out
    assert out["snapshot_unchanged_after_append"] and out["rows_after_append"] == out["total"]


def test_scan_releases_the_gil(tmp_path):
    t = hdb.Table(tmp_path / "g")
    rows = 500_000
    for i in range(3):
        t.write_arrow(pa.table({"id": np.arange(i * rows, (i + 1) * rows),
                                "x": np.random.default_rng(i).random(rows)}))
        t.commit()
    got = []
    assert runs_without_the_gil(lambda: got.append(t.to_arrow(filter="x > 0.5")))
    assert got[0].num_rows == pytest.approx(3 * rows / 2, rel=0.01)

"""Ctrl-C and the GIL in the hyperstreamdb package.

* A long scan is interrupted by SIGINT (KeyboardInterrupt); the table is
  intact afterwards (same snapshot, every row readable).  Runs in a child
  process whose SIGINT handler is Python's default one (once), a thread
  sending the signal while the main thread is inside the C scan.
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

# SIGINT is sent every 20 ms until one has been turned into KeyboardInterrupt
# (so a busy machine cannot make the scan finish before the first signal);
# the handler is Python's default one while armed, and ignores later signals.
armed = threading.Event()

def on_sigint(signum, frame):
    if armed.is_set():
        armed.clear()
        signal.default_int_handler(signum, frame)

signal.signal(signal.SIGINT, on_sigint)

def interrupt_repeatedly():
    armed.set()
    def fire():
        while armed.is_set():
            time.sleep(0.02)
            os.kill(os.getpid(), signal.SIGINT)
    th = threading.Thread(target=fire)
    th.start()
    return th

# 1. scan
th = interrupt_repeatedly()
t0 = time.monotonic()
try:
    got = t.to_arrow(batch_size=4096)
    out["scan"] = "finished"
except KeyboardInterrupt:
    out["scan"] = "interrupted"
out["scan_seconds"] = time.monotonic() - t0
armed.clear()
th.join()
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
th = interrupt_repeatedly()
done = []
try:
    t._handle().append(reader, done=done)
    out["append"] = "finished"
except KeyboardInterrupt:
    out["append"] = "interrupted"
armed.clear()
th.join()
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

"""Races between maintenance and everything else, across processes
(issue 14, fault suites): two compactions at once; a compaction racing
appends, deletes and a schema change from another process; expiry racing a
reader that planned an old snapshot.

Oracles, none of them our own output:
  * rows: every process logs what it committed (the batches it appended, the
    ids its deletes removed, the schema change) to a JSON Lines file; the
    expected multiset is computed by DuckDB from those logs and compared
    with what we read and with what pyiceberg reads;
  * conflicts: a compaction that loses a race must raise CommitConflictError
    and leave nothing behind (orphan removal afterwards finds only the
    files such attempts wrote, never a reachable one).
"""
import json
import os
import pathlib
import subprocess
import sys
import time

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from conftest import require_module

import hyperstreamdb as hdb

pyiceberg_table = require_module("pyiceberg.table")
StaticTable = pyiceberg_table.StaticTable

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("v", pa.float64())])


def make_data(start, n, extra=False):
    ids = np.arange(start, start + n, dtype=np.int64)
    cols = {
        "id": ids,
        "cat": pa.array([f"c{i % 5}" for i in ids], pa.string()),
        "v": pa.array((ids % 97).astype(np.float64)),
    }
    if extra:
        cols["extra"] = pa.array(ids * 2, pa.int64())
    return pa.table(cols)


def expected_from_logs(logs, where="TRUE"):
    """(id, cat, v, extra) rows that the logged appends added and no logged
    delete removed, via DuckDB; extra is NULL for rows appended before the
    column existed."""
    appended, deleted = [], []
    for path in logs:
        for line in pathlib.Path(path).read_text().splitlines():
            ev = json.loads(line)
            if ev["op"] == "append":
                appended.append((ev["start"], ev["n"], ev.get("extra", False)))
            elif ev["op"] == "delete":
                deleted.append(ev["id"])
    ranges = pa.table({"start": [a[0] for a in appended], "n": [a[1] for a in appended],
                       "extra": [a[2] for a in appended]})  # noqa: F841
    dels = pa.table({"id": pa.array(deleted, pa.int64())})  # noqa: F841
    q = f"""
        WITH rows AS (
            SELECT r.start + g.i AS id, r.extra AS has_extra
            FROM ranges r, LATERAL (SELECT unnest(range(r.n)) AS i) g)
        SELECT id, 'c' || CAST(id % 5 AS VARCHAR) AS cat, CAST(id % 97 AS DOUBLE) AS v,
               CASE WHEN has_extra THEN id * 2 END AS extra
        FROM rows WHERE id NOT IN (SELECT id FROM dels) AND ({where})"""
    return sorted(duckdb.sql(q).fetchall(), key=repr)


def rows_of(tbl, extra=True):
    cols = [tbl.column("id").to_pylist(), tbl.column("cat").to_pylist(),
            tbl.column("v").to_pylist()]
    cols.append(tbl.column("extra").to_pylist() if extra and "extra" in tbl.column_names
                else [None] * tbl.num_rows)
    return sorted(zip(*cols), key=repr)


def pyiceberg_rows(t):
    return rows_of(StaticTable.from_metadata(t.metadata_location).scan().to_arrow())


_CHILD = r"""
import json, os, sys, time
import numpy as np, pyarrow as pa
import hyperstreamdb as hdb
path, role, log, base, n_ops = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
go = sys.argv[6]

def make_data(start, n, extra=False):
    ids = np.arange(start, start + n, dtype=np.int64)
    cols = {"id": ids, "cat": pa.array([f"c{i % 5}" for i in ids], pa.string()),
            "v": pa.array((ids % 97).astype(np.float64))}
    if extra:
        cols["extra"] = pa.array(ids * 2, pa.int64())
    return pa.table(cols)

t = hdb.Table(path)
out = open(log, "a")
def note(**ev):
    out.write(json.dumps(ev) + "\n"); out.flush()
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.001)
stats = {"ok": 0, "conflict": 0}
if role == "compact":
    for i in range(n_ops):
        try:
            t.refresh()
            t.compact(min_input_files=2)
            stats["ok"] += 1
        except hdb.CommitConflictError:
            stats["conflict"] += 1
elif role == "writer":
    extra = False
    nxt = base
    for i in range(n_ops):
        if i == n_ops // 2:
            t.refresh()
            t.add_column("extra", pa.int64())
            extra = True
            note(op="schema")
        if i % 4 == 3:
            # delete one row appended earlier by this writer
            victim = base + (i * 37) % max(1, nxt - base)
            if victim < nxt:
                n = t.delete(f"id = {victim}")
                if n:
                    note(op="delete", id=victim)
            continue
        b = make_data(nxt, 40, extra)
        t.write_arrow(b)
        t.commit()
        note(op="append", start=nxt, n=40, extra=extra)
        nxt += 40
        stats["ok"] += 1
print(json.dumps(stats), flush=True)
"""


def _spawn(path, role, log, base, n_ops, go):
    p = subprocess.Popen([sys.executable, "-c", _CHILD, path, role, str(log), str(base),
                          str(n_ops), str(go)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def _finish(p):
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out
    return json.loads(out.strip().splitlines()[-1])


def _seed(tmp_path, log, n_batches=8):
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    t.add_index("cat", "inverted")
    with open(log, "a") as f:
        for k in range(n_batches):
            t.write_arrow(make_data(k * 50, 50))
            t.commit()
            f.write(json.dumps({"op": "append", "start": k * 50, "n": 50}) + "\n")
    return t


def _check_table(t, logs):
    t.refresh()
    want = expected_from_logs(logs)
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want
    # the index answers the same as DuckDB on the logs (every file indexed)
    assert rows_of(t.to_arrow(filter="cat = 'c3'")) == expected_from_logs(logs, "id % 5 = 3")
    ex = t.explain(filter="cat = 'c3'")
    assert ex["totals"]["index_files_skipped"] == 0
    # what failed attempts left is only unreferenced files: orphan removal
    # takes them and the table reads the same
    t.expire_snapshots(retain_last=1)
    t.remove_orphan_files(older_than=int(time.time() * 1000) + 5000)
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want


def test_two_compactions_at_once(tmp_path):
    """Two processes compact the same table from the same snapshot at the
    same moment, several rounds: each round at most one replace of a given
    file set wins; the loser gets CommitConflictError; rows are exactly the
    appended ones throughout."""
    log = tmp_path / "seed.jsonl"
    t = _seed(tmp_path, log)
    total_ok = total_conflict = 0
    for rnd in range(3):
        go = tmp_path / f"go{rnd}"
        ps = [_spawn(t.path, "compact", tmp_path / "c.jsonl", 0, 1, go) for _ in range(2)]
        go.touch()
        res = [_finish(p) for p in ps]
        total_ok += sum(r["ok"] for r in res)
        total_conflict += sum(r["conflict"] for r in res)
        t.refresh()
        want = expected_from_logs([log])
        assert rows_of(t.to_arrow()) == want
        # more small files for the next round
        with open(log, "a") as f:
            for k in range(3):
                start = 10_000 + rnd * 1000 + k * 50
                t.write_arrow(make_data(start, 50))
                t.commit()
                f.write(json.dumps({"op": "append", "start": start, "n": 50}) + "\n")
    assert total_ok >= 3   # every round at least one compaction committed
    _check_table(t, [log])


def test_compaction_races_appends_deletes_and_schema_change(tmp_path):
    """One process compacts in a loop while another appends, deletes rows it
    appended and adds a column halfway: appends and the schema change always
    survive the compaction; a delete of rows a compaction rewrote is never
    lost (the delete rebases or the compaction gives up with a conflict)."""
    log = tmp_path / "seed.jsonl"
    wlog = tmp_path / "writer.jsonl"
    t = _seed(tmp_path, log)
    go = tmp_path / "go"
    writer = _spawn(t.path, "writer", wlog, 100_000, 40, go)
    comp = _spawn(t.path, "compact", tmp_path / "c.jsonl", 0, 12, go)
    go.touch()
    w, c = _finish(writer), _finish(comp)
    assert w["ok"] == 30
    assert c["ok"] + c["conflict"] == 12 and c["ok"] >= 1
    t.refresh()
    assert "extra" in t.schema.names
    _check_table(t, [log, wlog])


def test_expiry_racing_a_reader_of_an_old_snapshot(tmp_path):
    """docs/tables.md "Readers and expiry": a handle that planned snapshot S
    before S was replaced and expired.  (0) Expiry in the same process keeps
    S while a handle or a scan of the process is on it (src/table/pins.c):
    the planned scan returns S's rows exactly.  Expiry by another process
    does not know this process's readers: (1) a reader whose handle still
    points at S (not refreshed) and starts a scan after S's files are gone
    gets the rows of the current snapshot: planning finds the manifest list
    missing, refreshes once and re-plans (same rows: the compaction did not
    change them).  (2) A scan planned before the expiry and read after it
    either returns S's rows exactly (files already open, or still there) or
    raises an error naming the missing file: never a partial or wrong
    answer (here: files were opened lazily, so the error).  (3) Time travel
    to an expired snapshot id is NotFoundError."""
    log = tmp_path / "seed.jsonl"
    t = _seed(tmp_path, log)
    want = expected_from_logs([log])
    old = t.current_snapshot_id
    reader = hdb.Table(t.path)
    assert reader.current_snapshot_id == old
    planned = reader.to_reader(columns=["id", "cat", "v"])   # planned now, read later
    t.compact()
    assert t.current_snapshot_id != old
    # (0) this process's reader is on S: kept
    t.expire_snapshots(retain_last=1)
    assert old in [s.snapshot_id for s in t.snapshots()]
    assert rows_of(planned.read_all(), extra=False) == want
    del planned
    planned = reader.to_reader(columns=["id", "cat", "v"])   # on S again, read later
    # another process expires S
    subprocess.run([sys.executable, "-c", "import sys, hyperstreamdb as hdb; "
                    "hdb.Table(sys.argv[1]).expire_snapshots(retain_last=1)", str(t.path)],
                   check=True)
    t.refresh()
    assert old not in [s.snapshot_id for s in t.snapshots()]
    # (2) the stream planned on S
    try:
        got = rows_of(planned.read_all(), extra=False)
        assert got == want
        outcome2 = "rows"
    except OSError as e:   # NotFoundError, StorageError, or pyarrow's OSError
        assert "No such file" in str(e) or "not found" in str(e).lower(), str(e)
        outcome2 = "error"
    # (1) the stale handle: re-planned on the current snapshot, same rows
    assert rows_of(reader.to_arrow(), extra=False) == want
    assert reader.current_snapshot_id == t.current_snapshot_id
    outcome1 = "rows"
    # (3) time travel to the expired id
    with pytest.raises(hdb.NotFoundError):
        reader.query().snapshot(old).to_arrow()
    print(f"planned-then-expired: {outcome2}; stale handle: {outcome1}")
    reader.close()

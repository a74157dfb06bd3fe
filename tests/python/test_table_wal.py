"""Streaming ingest from Python: Table.stream() (the write-ahead log,
near-real-time reads, flushes) and `hyperstream table ingest`.

Oracles, none of them our own output:
  * rows: the batches the test wrote, filtered by DuckDB (the expected
    multiset), compared with what the table returns before and after
    flushes, and with pyiceberg reading the committed table;
  * the kill -9 suite: a log of acknowledgements the child writes after each
    write() returned (a row acknowledged must be present exactly once after
    recovery; a row never acknowledged may be present, once at most);
  * the CLI: the JSON Lines fed to it, read back by pyarrow.

HS_LONG_TESTS=1 runs 200 kill -9 rounds instead of 8.
"""
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import REPO, require, require_module

import hyperstreamdb as hdb

pyiceberg_table = require_module("pyiceberg.table")
StaticTable = pyiceberg_table.StaticTable

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("v", pa.float64())])


def make_data(start, n):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "cat": pa.array([None if i % 11 == 0 else f"c{i % 5}" for i in ids], pa.string()),
        "v": pa.array((ids % 97).astype(np.float64)),
    }, schema=SCHEMA)


def expected(batches, where="TRUE"):
    src = pa.concat_tables(batches)  # noqa: F841 (DuckDB reads it by name)
    return sorted(duckdb.sql(f"SELECT id, cat, v FROM src WHERE {where}").fetchall(),
                  key=repr)


def rows_of(tbl):
    return sorted(zip(tbl.column("id").to_pylist(), tbl.column("cat").to_pylist(),
                      tbl.column("v").to_pylist()), key=repr)


def pyiceberg_rows(t):
    return rows_of(StaticTable.from_metadata(t.metadata_location).scan().to_arrow())


def summary_seq(t):
    snap = t.snapshot()
    return int(snap.summary.get("hyperstream.wal.seq", -1)) if snap else -1


def test_stream_reads_and_flushes_match_duckdb(tmp_path):
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    batches = []
    with t.stream(refresh_ms=-1, flush_interval_ms=3_600_000) as s:
        seqs = []
        for k in range(6):
            b = make_data(k * 100, 100)
            batches.append(b)
            if k % 3 == 0:
                seqs.append(s.write(b))                       # pyarrow Table
            elif k % 3 == 1:
                seqs.append(s.write(b.to_pandas()))           # pandas
            else:
                seqs.append(s.write(b.to_batches()[0]))       # RecordBatch
        assert seqs == [1, 2, 3, 4, 5, 6]
        assert t.current_snapshot_id is None                  # nothing committed yet
        assert rows_of(t.to_arrow()) == expected(batches)
        for where in ("cat = 'c3' AND v > 10", "id BETWEEN 120 AND 377", "cat IS NULL",
                      "v < 5 OR cat = 'c1'"):
            assert rows_of(t.to_arrow(filter=where)) == expected(batches, where), where
        assert t.count() == 600
        assert t.to_arrow(columns=["v", "id"]).column_names == ["v", "id"]
        s.flush()
        st = s.stats()
        assert st["committed_seq"] == 6 and st["tail_rows"] == 0 and st["flushes"] == 1
        assert summary_seq(t) == 6
        assert pyiceberg_rows(t) == expected(batches)
        # rows after the flush: committed + tail, once each
        b = make_data(600, 50)
        batches.append(b)
        assert s.write(b) == 7
        assert rows_of(t.to_arrow()) == expected(batches)
        assert rows_of(t.to_arrow(filter="id >= 590")) == expected(batches, "id >= 590")
    assert summary_seq(t) == 7
    assert rows_of(t.to_arrow()) == expected(batches)
    assert pyiceberg_rows(t) == expected(batches)
    assert not list(pathlib.Path(t.location, "wal").glob("*.wal"))   # log truncated


def test_stream_builds_declared_indexes(tmp_path):
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    t.add_index("cat", "inverted")
    batches = [make_data(k * 200, 200) for k in range(3)]
    with t.stream(flush_rows=250) as s:
        for b in batches:
            s.write(b)
    want = expected(batches, "cat = 'c2'")
    assert rows_of(t.to_arrow(filter="cat = 'c2'")) == want
    ex = t.explain(filter="cat = 'c2'")
    assert ex["totals"]["files_indexed"] >= 1
    assert ex["totals"]["index_files_skipped"] == 0
    assert pyiceberg_rows(t) == expected(batches)


def test_default_refresh_interval(tmp_path):
    """Acknowledged rows become readable within the default 1 s interval
    (and at once after refresh())."""
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    with t.stream(flush_interval_ms=3_600_000) as s:
        s.write(make_data(0, 10))
        t0 = time.monotonic()
        while t.count() < 10:
            assert time.monotonic() - t0 < 1.5, "not visible within the refresh interval"
            time.sleep(0.02)
        s.write(make_data(10, 10))
        s.refresh()
        assert t.count() == 20


def test_busy_error_when_flushes_fail(tmp_path):
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    data = pathlib.Path(t.location, "data")
    if data.exists():
        data.rmdir()
    data.write_text("not a directory")   # every flush fails
    s = t.stream(memory_bytes=32 * 1024, busy_timeout_ms=200, flush_interval_ms=3_600_000,
                 refresh_ms=-1)
    written = []
    with pytest.raises(hdb.BusyError) as e:
        for k in range(1000):
            b = make_data(k * 100, 100)
            s.write(b)
            written.append(b)
    assert e.value.status == "HS_BUSY"
    assert written and rows_of(t.to_arrow()) == expected(written)
    data.unlink()                           # flushes work again
    b = make_data(10**6, 100)
    s.write(b)
    written.append(b)
    s.close()
    assert pyiceberg_rows(t) == expected(written)


def test_second_stream_is_busy_and_reopen_recovers(tmp_path):
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    s = t.stream(flush_interval_ms=3_600_000)
    other = hdb.Table.open(tmp_path / "t")
    with pytest.raises(hdb.BusyError):
        other.stream()
    s.write(make_data(0, 30))
    s.abort()                               # as if the process died
    assert other.count() == 0
    with other.stream() as s2:
        assert s2.stats()["replayed_rows"] == 30
    assert rows_of(other.to_arrow()) == expected([make_data(0, 30)])


def test_vector_search_sees_the_tail(tmp_path):
    """k nearest over committed + unflushed rows equal numpy brute force
    (exact search: no vector index, so the answer is deterministic)."""
    d = 8
    schema = pa.schema([("id", pa.int64()), ("cat", pa.string()),
                        ("vec", pa.list_(pa.float32(), d))])
    rng = np.random.default_rng(5)

    def vb(start, n):
        v = rng.standard_normal((n, d), dtype=np.float32)
        ids = np.arange(start, start + n, dtype=np.int64)
        return pa.table({"id": ids, "cat": pa.array([f"c{i % 3}" for i in ids]),
                         "vec": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), d)},
                        schema=schema), v
    t = hdb.Table.create(tmp_path / "t", schema)
    all_ids, all_v, cats = [], [], []
    with t.stream(refresh_ms=-1, flush_interval_ms=3_600_000) as s:
        for k in range(4):
            b, v = vb(k * 50, 50)
            s.write(b)
            all_ids.extend(b.column("id").to_pylist())
            all_v.append(v)
            cats.extend(b.column("cat").to_pylist())
            if k == 1:
                s.flush()                      # half committed, half in the tail
        V = np.concatenate(all_v)
        ids = np.array(all_ids)
        for q in rng.standard_normal((5, d), dtype=np.float32):
            dist = np.sqrt(((V - q) ** 2).sum(axis=1))
            want = ids[np.argsort(dist, kind="stable")[:10]].tolist()
            got = t.search("vec", q, k=10, metric="l2")
            assert got["id"].tolist() == want
            dcol = [c for c in got.columns if "distance" in c][0]
            np.testing.assert_allclose(got[dcol].to_numpy(), np.sort(dist)[:10], rtol=1e-5)
            mask = np.array([c == "c1" for c in cats])
            fw = ids[mask][np.argsort(dist[mask], kind="stable")[:7]].tolist()
            assert t.search("vec", q, k=7, filter="cat = 'c1'", metric="l2")["id"].tolist() == fw
        # a batch of queries: each answered as above
        Q = rng.standard_normal((3, d), dtype=np.float32)
        res = t.to_arrow(vector_filter={"column": "vec", "query": Q, "k": 4, "metric": "l2"})
        for qi in range(3):
            dist = np.sqrt(((V - Q[qi]) ** 2).sum(axis=1))
            want = ids[np.argsort(dist, kind="stable")[:4]].tolist()
            got = [r["id"] for r in res.to_pylist() if r["query_index"] == qi]
            assert got == want


@pytest.mark.parametrize("data_path_is_root", [False, True])
def test_orphan_removal_keeps_the_log(tmp_path, data_path_is_root):
    """wal/ is referenced by no Iceberg metadata, yet remove_orphan_files
    must never delete it (also when write.data.path is the table root, so
    that the sweep walks the table's own directory)."""
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    if data_path_is_root:
        t.set_properties({"write.data.path": t.location})
    s = t.stream(flush_interval_ms=3_600_000)
    s.write(make_data(0, 40))
    s.abort()                                          # rows only in the log
    segs = sorted(pathlib.Path(t.location, "wal").glob("*.wal"))
    assert segs
    res = t.remove_orphan_files(older_than=int(time.time() * 1000) + 60_000)
    deleted = [d["path"] for d in res["deleted_files"]]
    assert not [p for p in deleted if "/wal/" in p]
    assert all(p.exists() for p in segs)
    with t.stream():
        pass                                           # recovery + flush
    assert rows_of(t.to_arrow()) == expected([make_data(0, 40)])


# ---- kill -9 -----------------------------------------------------------------

_CHILD = r"""
import os, sys, random
import numpy as np, pyarrow as pa
import hyperstreamdb as hdb
path, log, base, policy, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
rng = random.Random(seed)
t = hdb.Table.open(path)
s = t.stream(fsync=policy, flush_rows=rng.choice([50, 300, 2000]), flush_interval_ms=rng.choice([20, 200, 5000]))
fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
print("ready", flush=True)
nxt = base
while True:
    n = rng.randint(1, 60)
    ids = np.arange(nxt, nxt + n, dtype=np.int64)
    b = pa.table({"id": ids, "cat": pa.array([f"c{i % 5}" for i in ids]),
                  "v": pa.array((ids % 97).astype(np.float64))})
    seq = s.write(b)
    os.write(fd, f"{seq} {nxt} {n}\n".encode())
    nxt += n
    if rng.random() < 0.05:
        s.flush()
"""


def _acked(log):
    out = set()
    if not os.path.exists(log):
        return out
    for line in pathlib.Path(log).read_text().splitlines():
        seq, start, n = (int(x) for x in line.split())
        out.update(range(start, start + n))
    return out


def test_kill9_during_ingest(tmp_path):
    """A child streams batches and logs each acknowledgement; it is killed
    at a random moment (writing, syncing, flushing or truncating); reopening
    the stream recovers: every acknowledged row exactly once, no row twice,
    pyiceberg reads the same rows."""
    rounds = 200 if os.environ.get("HS_LONG_TESTS") else 8
    rng = random.Random(4321)
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    log = str(tmp_path / "acks.log")
    acked = set()
    for r in range(rounds):
        policy = ("batch", "interval", "none")[r % 3]
        p = subprocess.Popen([sys.executable, "-c", _CHILD, t.path, log, str(r * 10_000_000),
                              policy, str(rng.randrange(1 << 30))],
                             stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.05 + rng.random() * 0.6)
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        acked |= _acked(log)
        with t.stream() as s:           # recovery, then a flush at close
            st = s.stats()
            assert st["tail_rows"] == st["replayed_rows"]
        t.refresh()
        ids = t.to_arrow(columns=["id"]).column("id").to_pylist()
        assert len(ids) == len(set(ids)), "a row is present twice"
        missing = acked - set(ids)
        assert not missing, f"round {r}: {len(missing)} acknowledged rows lost"
        # unacknowledged rows come in whole batches of the child's writes
        extra = set(ids) - acked
        assert all((i // 10_000_000) <= r for i in extra)
        assert not list(pathlib.Path(t.location, "wal").glob("*.wal"))
    got = sorted(pyiceberg_rows(t))
    assert sorted(got) == sorted(rows_of(t.to_arrow()))
    assert acked <= {row[0] for row in got}


# ---- CLI ---------------------------------------------------------------------

def test_cli_ingest_jsonl(tmp_path):
    build = os.environ.get("HS_BUILD", str(REPO / "build"))
    hs = os.path.join(build if os.path.isabs(build) else str(REPO / build), "hyperstream")
    require(os.path.exists(hs), f"{hs} is not built")
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    rows = [{"id": i, "cat": None if i % 11 == 0 else f"c{i % 5}", "v": float(i % 97)}
            for i in range(2500)]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    out = subprocess.run([hs, "table", "ingest", t.path, "--batch-rows", "1000"],
                         input=text.encode(), capture_output=True, check=True)
    lines = [json.loads(x) for x in out.stdout.decode().splitlines()]
    acks = [x for x in lines if "seq" in x]
    assert [a["rows"] for a in acks] == [1000, 1000, 500]
    assert [a["seq"] for a in acks] == [1, 2, 3]
    assert lines[-1]["acked_rows"] == 2500 and lines[-1]["snapshot_id"] > 0
    t.refresh()
    want = sorted(pa.Table.from_pylist(rows, schema=SCHEMA).to_pylist(), key=repr)
    got = sorted(t.to_arrow().to_pylist(), key=repr)
    assert got == want
    assert pyiceberg_rows(t) == rows_of(pa.Table.from_pylist(rows, schema=SCHEMA))
    # a bad line is a clear error naming the lines; nothing of that record lands
    bad = subprocess.run([hs, "table", "ingest", t.path], input=b'{"id": "x"}\n',
                         capture_output=True)
    assert bad.returncode == 1 and b"stdin" in bad.stderr


def test_other_handles_and_deletes_see_unflushed_rows(tmp_path):
    """Every handle of the table in the process reads the stream's
    acknowledged rows; a delete through any handle first has the stream
    commit them, so it removes matching unflushed rows too (DuckDB's rows
    of the written batches are the expectation; pyiceberg reads the end)."""
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    other = hdb.Table(t.path)
    b1, b2 = make_data(0, 100), make_data(100, 20)
    with t.stream(refresh_ms=-1, flush_interval_ms=3_600_000) as s:
        s.write(b1)
        assert s.stats()["committed_seq"] == 0
        assert rows_of(other.to_arrow()) == expected([b1])
        assert other.count(filter="id >= 50") == 50
        assert other.delete("id < 10 OR id = 99") == 11
        assert s.stats()["committed_seq"] == 1 and s.stats()["tail_rows"] == 0
        want = expected([b1], "id >= 10 AND id <> 99")
        assert rows_of(other.to_arrow()) == want
        assert rows_of(t.to_arrow()) == want
        s.write(b2)
        assert rows_of(other.to_arrow()) == expected([b1, b2], "id >= 10 AND id <> 99")
        # SQL DML plans from committed rows: refused while rows are pending
        with pytest.raises(hdb.BusyError, match="flush the stream"):
            other.execute_sql("DELETE FROM t WHERE id = 105")
        s.flush()
        other.execute_sql("DELETE FROM t WHERE id = 105")
    assert pyiceberg_rows(t) == expected([b1, b2], "id >= 10 AND id <> 99 AND id <> 105")
    other.close()


def test_compact_max_rewrite_fraction_property(tmp_path):
    """hyperstream.wal.compact-max-rewrite-fraction outside [0, 1] or not a
    number: the stream does not open (a clear error naming the property);
    a valid one opens and the rows commit (DuckDB over the batches)."""
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    for bad in ("1.5", "-0.1", "a tenth"):
        t.set_properties({"hyperstream.wal.compact-max-rewrite-fraction": bad})
        with pytest.raises(hdb.InvalidArgumentError, match="compact-max-rewrite-fraction"):
            t.stream()
    t.set_properties({"hyperstream.wal.compact-max-rewrite-fraction": "0.25",
                      "hyperstream.wal.compact-min-files": "2"})
    batches = [make_data(k * 100, 100) for k in range(4)]
    with t.stream(refresh_ms=-1) as s:
        for b in batches:
            s.write(b)
            s.flush()
    t.refresh()
    assert rows_of(t.to_arrow()) == expected(batches)

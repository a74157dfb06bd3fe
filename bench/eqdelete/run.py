"""bench/eqdelete: what applying equality deletes costs our scans.

1M rows in 4 data files written by us, 100k ids deleted by one equality
delete file written by Java Iceberg (tests/interop/java harness: build it
with scripts/java-harness.sh).  Prints the first (cold) full scan and point
lookup in a process, then medians of 5 warm runs of the snapshot before the
delete vs after, pyarrow reading the same 4 data files, and Java's
IcebergGenerics read (which includes writing JSON Lines: only for scale).

usage: python bench/eqdelete/run.py OUT_DIR
"""
import sys, json, pathlib, time, statistics
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "python"))
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
import hyperstreamdb as hdb
from test_iceberg_java import JavaHarness, HARNESS_JAR
tmp = pathlib.Path(sys.argv[1]); tmp.mkdir(exist_ok=True)
N = 1_000_000
path = tmp / "t"
t = hdb.Table.create(str(path), pa.schema([pa.field("id", pa.int64(), nullable=False),
                                           ("cat", pa.string()), ("v", pa.float64())]))
for k in range(4):
    ids = np.arange(k * N // 4, (k + 1) * N // 4)
    t.write_arrow(pa.table({"id": ids, "cat": pa.array([f"c{i % 100}" for i in ids]),
                            "v": ids / 3.0}))
    t.commit()
before = t.current_snapshot_id
t.close()
rng = np.random.default_rng(1)
gone = rng.choice(N, 100_000, replace=False)
(tmp / "gone.jsonl").write_text("".join(f'{{"id": {int(i)}}}\n' for i in gone))
java = JavaHarness(HARNESS_JAR)
java.call("eqdelete", str(path), "id", str(tmp / "gone.jsonl"))
meta = java.call("current-metadata", str(path))[0]
def med(f, n=5):
    ts = []
    for _ in range(n):
        a = time.perf_counter(); r = f(); ts.append(time.perf_counter() - a)
    return statistics.median(ts), r
import subprocess
cold_pt = subprocess.run([sys.executable, "-c", f'''
import time, hyperstreamdb as hdb
t = hdb.Table.open("{path}"); t.to_arrow(filter="id = 1", snapshot_id={before})
a = time.perf_counter(); n = t.to_arrow(filter="id = 12347").num_rows
print(time.perf_counter() - a, n)'''], capture_output=True, text=True).stdout.split()
with hdb.Table.open(str(path)) as t:
    t.to_arrow(filter="id = 1", snapshot_id=before)
    a = time.perf_counter(); t.to_arrow(); cold_full = time.perf_counter() - a
    tb, rb = med(lambda: t.to_arrow(snapshot_id=before))
    ta, ra = med(lambda: t.to_arrow())
    tp, rp = med(lambda: t.to_arrow(filter="id = 12345"))
    tpb, _ = med(lambda: t.to_arrow(filter="id = 12345", snapshot_id=before))
with hdb.Table.open(str(path)) as t:
    files = [f["file_path"].removeprefix("file://") for f in t.files(snapshot_id=before)]
assert len(files) == 4, files
tq, _ = med(lambda: pq.read_table(files))
tj, _ = med(lambda: java.read(meta, tmp=tmp), n=3)
java.close()
assert rb.num_rows == N and ra.num_rows == N - 100_000, (rb.num_rows, ra.num_rows)
print(f"cold (first query in the process): full scan {cold_full*1e3:.0f} ms, point lookup "
      f"{float(cold_pt[0])*1e3:.0f} ms ({cold_pt[1]} row)")
print(f"full scan: before {tb*1e3:.0f} ms, with 100k eq deletes {ta*1e3:.0f} ms "
      f"(x{ta/tb:.2f}); point lookup {tpb*1e3:.1f} -> {tp*1e3:.1f} ms; "
      f"pyarrow read of the 4 data files {tq*1e3:.0f} ms; Java IcebergGenerics read+JSON {tj*1e3:.0f} ms")

"""bench/ingest: streaming ingest, HyperStreamDB's append stream vs LanceDB
and Lucene 8.7.

Data: BENCH_ROWS rows (id int64, cat string of 8 values, x float64, vec
fixed_size_list<float32>[BENCH_DIM]) written in batches of BENCH_BATCH rows
into a table with a scalar index on `cat` and an HNSW index on `vec`.

  ours, fsync per batch   one writer, Table.stream(fsync="batch"): every
                          write() returns after fdatasync; flushes (100k
                          rows or 5 s) write Parquet + both indexes meanwhile
  ours, group commit      BENCH_WRITERS threads, fsync="interval" (5 ms):
                          one fdatasync acknowledges every waiting write
  LanceDB                 table.add(batch) per batch on a table whose scalar
                          (BTREE on cat) and vector (IVF_PQ on vec) indexes
                          were built on the first 10% of the rows (as a
                          LanceDB user creates them); one writer
  Lucene 8.7              bench/ingest/LuceneIngest.java on the same rows
                          (Debian liblucene8-java; id as LongPoint, cat as
                          StringField, x and vec stored: Lucene 8 has no
                          vector index): commit() per batch (durable ack),
                          group commit from BENCH_WRITERS threads, and
                          ack -> searchable through a SearcherManager
                          refreshed every second
  ack -> searchable       a write of a fresh id, then polling a filtered
                          scan (id = X) on the same handle until the row is
                          returned, BENCH_LAT_SAMPLES times at random gaps;
                          ours at the default refresh (1 s); LanceDB reads
                          its own writes at once

rows/s counts the write loop (acknowledged rows); "with close" adds the
final flush (ours, first round) so nothing is left unindexed.  The machine
this runs on is often shared, so the rows/s rounds of ours and LanceDB
alternate (BENCH_REPEATS rounds, medians printed); Lucene (25x slower) runs
once.  Env: HS_BUILD, BENCH_ROWS, BENCH_BATCH, BENCH_DIM, BENCH_WRITERS,
BENCH_LAT_SAMPLES, BENCH_REPEATS (3), BENCH_LUCENE (1; 0 skips it).
"""
import os
import random
import shutil
import tempfile
import threading
import time

import numpy as np
import pyarrow as pa

import hyperstreamdb as hdb

N = int(os.environ.get("BENCH_ROWS", "100000"))
B = int(os.environ.get("BENCH_BATCH", "100"))
D = int(os.environ.get("BENCH_DIM", "32"))
W = int(os.environ.get("BENCH_WRITERS", "4"))
LAT = int(os.environ.get("BENCH_LAT_SAMPLES", "100"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
LUCENE = os.environ.get("BENCH_LUCENE", "1") != "0"

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("x", pa.float64()),
                    ("vec", pa.list_(pa.float32(), D))])
CATS = np.array([f"c{i}" for i in range(8)])


def batch(start, n, seed=0):
    rng = np.random.default_rng(start + seed)
    ids = np.arange(start, start + n, dtype=np.int64)
    vec = rng.standard_normal((n, D), dtype=np.float32)
    return pa.table({
        "id": ids,
        "cat": pa.array(CATS[ids % 8]),
        "x": rng.random(n),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), D),
    }, schema=SCHEMA)


BATCHES = [batch(k, min(B, N - k)) for k in range(0, N, B)]


def pct(a, p):
    a = sorted(a)
    return a[min(len(a) - 1, int(round(p / 100 * (len(a) - 1))))]


def ours_table(root):
    t = hdb.Table.create(os.path.join(root, "t"), SCHEMA)
    t.add_index("cat", "inverted")
    t.add_index("vec", "hnsw")
    return t


def finish(t, s, t0, close):
    """Closes the stream (the final flush, timed) or, on repeats, aborts it
    after checking every row was acknowledged; (rows/s with close or None)."""
    if not close:
        assert s.stats()["rows_written"] == N
        s.abort()
        return None
    s.close()
    total = time.perf_counter() - t0
    assert t.count() == N
    return N / total


def ours_single(root, close=True):
    t = ours_table(root)
    s = t.stream(fsync="batch")
    t0 = time.perf_counter()
    for b in BATCHES:
        s.write(b)
    loop = time.perf_counter() - t0
    return N / loop, finish(t, s, t0, close)


def ours_group(root, close=True):
    t = ours_table(root)
    s = t.stream(fsync="interval")
    parts = [BATCHES[i::W] for i in range(W)]

    def run(bs):
        for b in bs:
            s.write(b)
    threads = [threading.Thread(target=run, args=(p,)) for p in parts]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    loop = time.perf_counter() - t0
    return N / loop, finish(t, s, t0, close)


def ours_latency(root):
    t = ours_table(root)
    s = t.stream(fsync="batch")
    for b in BATCHES[: max(1, len(BATCHES) // 10)]:
        s.write(b)
    rng = random.Random(7)
    lat = []
    for k in range(LAT):
        x = 10**9 + k
        s.write(batch(x, 1))
        ack = time.perf_counter()
        while t.count(filter=f"id = {x}") != 1:
            time.sleep(0.002)
        lat.append(time.perf_counter() - ack)
        time.sleep(rng.random() * 0.2)
    s.close()
    return lat


def lance_run(root, lat_samples=LAT):
    import lancedb
    db = lancedb.connect(os.path.join(root, "lance"))
    warm = BATCHES[: max(1, len(BATCHES) // 10)]
    tbl = db.create_table("t", data=pa.concat_tables(warm), schema=SCHEMA)
    tbl.create_scalar_index("cat")
    n_warm = sum(b.num_rows for b in warm)
    tbl.create_index(vector_column_name="vec", metric="l2",
                     num_partitions=max(1, n_warm // 4096), num_sub_vectors=max(1, D // 8))
    rest = BATCHES[len(warm):]
    t0 = time.perf_counter()
    for b in rest:
        tbl.add(b)
    loop = time.perf_counter() - t0
    rows = sum(b.num_rows for b in rest)
    assert tbl.count_rows() == N
    rng = random.Random(7)
    lat = []
    for k in range(lat_samples):
        x = 10**9 + k
        tbl.add(batch(x, 1))
        ack = time.perf_counter()
        while tbl.count_rows(f"id = {x}") != 1:
            time.sleep(0.002)
        lat.append(time.perf_counter() - ack)
        time.sleep(rng.random() * 0.2)
    return rows / loop, lat


LUCENE_JARS = ["/usr/share/java/lucene-core-8.7.0.jar"]


def lucene_run(root):
    """Runs LuceneIngest.java over BATCHES' rows; None when Lucene or a JDK is missing."""
    import glob
    import subprocess
    jars = [j for j in LUCENE_JARS if os.path.exists(j)] or \
        sorted(glob.glob("/usr/share/java/lucene-core-8*.jar"))
    if not jars or not shutil.which("javac"):
        return None
    os.makedirs(root)
    rows = os.path.join(root, "rows.bin")
    rec = np.dtype([("id", "<i8"), ("cat", "u1"), ("x", "<f8"), ("vec", "<f4", (D,))])
    with open(rows, "wb") as f:
        for b in BATCHES:
            a = np.zeros(b.num_rows, dtype=rec)
            ids = b.column("id").to_numpy()
            a["id"] = ids
            a["cat"] = ids % 8
            a["x"] = b.column("x").to_numpy()
            a["vec"] = b.column("vec").combine_chunks().flatten().to_numpy().reshape(-1, D)
            f.write(a.tobytes())
    cls = os.path.join(root, "classes")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "LuceneIngest.java")
    cp = ":".join(jars)
    subprocess.run(["javac", "-d", cls, "-cp", cp, src], check=True)
    out = subprocess.run(["java", "-cp", cp + ":" + cls, "LuceneIngest", rows, str(N), str(D),
                          str(B), str(W), str(LAT), os.path.join(root, "idx")],
                         check=True, capture_output=True, text=True).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def med(a):
    return sorted(a)[len(a) // 2]


def main():
    root = tempfile.mkdtemp(prefix="bench-ingest-")
    try:
        print(f"bench/ingest: {N} rows, batches of {B}, vec dim {D}, indexes: inverted(cat), "
              f"hnsw(vec); {REPEATS} rounds of ours fsync/batch, ours group commit, LanceDB "
              f"(interleaved; medians)")
        try:
            import lancedb  # noqa: F401
            have_lance = True
        except ImportError:
            have_lance = False
            print("  LanceDB: not installed (bench/ingest/run.sh installs it)")
        single, group, lance = [], [], []
        single_total = group_total = None
        for r in range(REPEATS):
            a, at = ours_single(os.path.join(root, f"a{r}"), close=r == 0)
            g, gt = ours_group(os.path.join(root, f"b{r}"), close=r == 0)
            single.append(a)
            group.append(g)
            single_total = single_total or at
            group_total = group_total or gt
            line = f"  round {r + 1}: ours fsync/batch {a:8.0f}  group x{W} {g:8.0f}"
            if have_lance:
                lr, _ = lance_run(os.path.join(root, f"d{r}"), lat_samples=0)
                lance.append(lr)
                line += f"  lance {lr:8.0f}"
            print(line + " rows/s", flush=True)
        single, group = med(single), med(group)
        print(f"  ours   fsync per batch   {single:10.0f} rows/s   (with close/flush, round 1: "
              f"{single_total:.0f})")
        print(f"  ours   group commit x{W}   {group:10.0f} rows/s   (with close/flush, round 1: "
              f"{group_total:.0f})")
        lat = ours_latency(os.path.join(root, "c"))
        print(f"  ours   ack->searchable   p50 {pct(lat, 50) * 1000:7.1f} ms   p99 "
              f"{pct(lat, 99) * 1000:7.1f} ms   (refresh 1 s)", flush=True)
        if have_lance:
            _, llat = lance_run(os.path.join(root, "d"))
            lance = med(lance)
            print(f"  lance  table.add         {lance:10.0f} rows/s")
            print(f"  lance  ack->searchable   p50 {pct(llat, 50) * 1000:7.1f} ms   p99 "
                  f"{pct(llat, 99) * 1000:7.1f} ms")
            print(f"  ratio  ours fsync/batch vs lance: {single / lance:.2f}x   group commit vs "
                  f"lance: {group / lance:.2f}x", flush=True)
        luc = lucene_run(os.path.join(root, "e")) if LUCENE else None
        if luc is None:
            print("  Lucene: not run (BENCH_LUCENE=0) or not installed (run.sh installs "
                  "liblucene8-java)")
        else:
            print(f"  lucene commit per batch  {luc['batch']:10.0f} rows/s   (one round)")
            print(f"  lucene group commit x{W}  {luc['group']:10.0f} rows/s")
            print(f"  lucene ack->searchable   p50 {luc['p50'] * 1000:7.1f} ms   p99 "
                  f"{luc['p99'] * 1000:7.1f} ms   (SearcherManager refreshed every 1 s)")
            print(f"  ratio  ours vs lucene: fsync/batch {single / luc['batch']:.2f}x   group "
                  f"commit {group / luc['group']:.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

"""bench/s3: requests, bytes and latency per query on an S3 table,
HyperStreamDB against pyiceberg + pyarrow, in one run.

A table of BENCH_ROWS rows (id sorted, category of 100 values, value,
embedding float32[32]) in BENCH_FILES data files is written to a local S3
server (moto, or SeaweedFS with HS_S3_SERVER=seaweedfs) with indexes on id
(range), category (inverted) and embedding (HNSW).  Each engine then runs
every query in a fresh process (cold: empty caches, the table opened inside
the timed region) and a second, different query of the same kind in the same
process (warm, not repeated), through tests/s3/faultproxy.py, which counts the
requests and response bytes and adds a fixed delay per request (BENCH_DELAYS_MS,
default "0,20": a round trip to a remote store).

Queries:
  point      id = X                                 (columns id, category, value)
  range      X <= id < X + rows/1000 (0.1%)         (same columns)
  vector     top-10 nearest to q among category = C (ours: the HNSW index with the
             filter as allow-list; pyiceberg: scan the filtered rows' embeddings,
             numpy brute force)
  full       every row, columns id, category, value

Prints one line per (delay, engine, query, cold/warm): latency, the process's
CPU time during the query (all threads; on a loaded machine latency minus
rounds x delay is mostly CPU queueing), requests, bytes,
the requests by purpose (hint, metadata, manifest-list, manifest, registry,
sidecar-vector, sidecar-scalar, data, list; from the first run's trace) and
the dependent round trips ("rounds": waves of requests, each started after an
answer); then the ratios
(pyiceberg / ours) for requests and latency.  Env: BENCH_ROWS (default
200000; 1000000 for the issue's target), BENCH_FILES (default 4),
BENCH_DELAYS_MS, BENCH_REPEAT (cold runs per query, median; default 3),
BENCH_TRACE=1 (print each request of the first cold and warm run, with its
time since the query started), BENCH_ENGINES (default "ours,pyiceberg";
"base" is ours run by the interpreter BENCH_BASE_PYTHON, e.g. another
checkout's venv, for before/after numbers in the same run),
BENCH_KINDS (default "point,range,vector,full"), BENCH_VECTOR_COLUMNS (ours' filtered top-10
projection, default "id"; "id,value" lies outside the clustered index's included
columns, so it runs the search path before it on the same table), BENCH_CLUSTER (default 1: the
vector index declared with cluster="category", include=["id"]; 0: a plain one), BENCH_SETTLE_S (default 0.5:
the warm query waits until no request has reached the proxy for this long
after the cold one and every answer has been sent, and those requests, the engine's background warming, are
printed on their own line with the time their last answer arrived after the cold
query's; 0: the warm query follows at once), BENCH_WARM_AFTER_S=T (instead: the warm
query is issued T seconds after the cold query's answer, whether the warming is done or
not; the warming's requests until then are counted apart, later ones in the warm
query's), BENCH_REWRITE_MANIFESTS=1
(run rewrite_manifests on the table first: one manifest instead of one per
append; a maintenance step, report it as its own row), BENCH_OPEN (ours: "metadata", default, opens the metadata file's location as
pyiceberg does; "path" opens the table directory), BENCH_TABLE_CACHE=DIR (keep
the written table's objects there and restore them in later runs), BENCH_WARMUP=0 (no
warm-up query: the cold query then includes the engine's first-query initialisation;
either way each engine's start-up, the import and the warm-up query, is printed on its
own line: a user's fresh process pays import + warm-up-or-initialisation + cold).
"""
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "s3"))
from faultproxy import FaultProxy  # noqa: E402
from s3server import S3Server  # noqa: E402

ROWS = int(os.environ.get("BENCH_ROWS", "200000"))
FILES = int(os.environ.get("BENCH_FILES", "4"))
DELAYS = [float(x) for x in os.environ.get("BENCH_DELAYS_MS", "0,20").split(",")]
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
ENGINES = os.environ.get("BENCH_ENGINES", "ours,pyiceberg").split(",")
KINDS = os.environ.get("BENCH_KINDS", "point,range,vector,full").split(",")
# how ours opens the table: "metadata" (the metadata file's location, as pyiceberg's
# StaticTable and every catalog hand it over) or "path" (the table directory:
# version-hint.text, then the current metadata file and a probe for a newer one)
OPEN = os.environ.get("BENCH_OPEN", "metadata")
# 0: no warm-up query on a local table: the cold query pays first-query initialisation
WARMUP = os.environ.get("BENCH_WARMUP", "1") != "0"
DIM = 32
# the vector index with a cluster column (category) and the id included
# (table/vcluster.h): a filtered top-10 reads one block per file.  0: the
# plain HNSW index (the layout before it; main's build reads only that one)
CLUSTER = os.environ.get("BENCH_CLUSTER", "1") != "0"
CATS = 100
COLS = ["id", "category", "value"]

WORKER = r'''
import json, sys, time
t_start = time.perf_counter()
import numpy as np
engine, uri, meta, endpoint, key, secret = sys.argv[1:7]
rows = int(sys.argv[7])
OPEN = sys.argv[9]
COLS = ["id", "category", "value"]
import os
# the filtered top-10's projection (BENCH_VECTOR_COLUMNS, default "id"; "id,value"
# is outside the clustered index's included columns: the path before it)
VEC_COLS = os.environ.get("BENCH_VECTOR_COLUMNS", "id").split(",")
if engine in ("ours", "base"):
    import hyperstreamdb as hdb
else:
    from pyiceberg.table import StaticTable
    from pyiceberg.expressions import EqualTo, And, GreaterThanOrEqual, LessThan
    props = {"s3.endpoint": endpoint, "s3.access-key-id": key, "s3.secret-access-key": secret,
             "s3.region": "us-east-1"}
t = None
def table():
    global t
    if t is None:
        if engine in ("ours", "base"):
            t = hdb.Table(meta if OPEN == "metadata" else uri)
        else:
            t = StaticTable.from_metadata(meta, properties=props)
    return t
def run(q):
    kind, a = q["kind"], q["arg"]
    if engine in ("ours", "base"):
        tb = table()
        if kind == "point":
            return tb.to_arrow(filter=f"id = {a}", columns=COLS).num_rows
        if kind == "range":
            return tb.to_arrow(filter=f"id >= {a} AND id < {a + rows // 1000}", columns=COLS).num_rows
        if kind == "vector":
            r = tb.to_arrow(filter=f"category = 'c{a}'", columns=VEC_COLS,
                            vector_filter={"column": "embedding", "query": q["vec"], "k": 10})
            return r["id"].to_pylist()
        return tb.to_arrow(columns=COLS).num_rows
    tb = table()
    if kind == "point":
        return tb.scan(row_filter=EqualTo("id", a), selected_fields=tuple(COLS)).to_arrow().num_rows
    if kind == "range":
        f = And(GreaterThanOrEqual("id", a), LessThan("id", a + rows // 1000))
        return tb.scan(row_filter=f, selected_fields=tuple(COLS)).to_arrow().num_rows
    if kind == "vector":
        r = tb.scan(row_filter=EqualTo("category", f"c{a}"), selected_fields=("id", "embedding")).to_arrow()
        emb = np.stack(r["embedding"].to_numpy(zero_copy_only=False)).astype(np.float32)
        d = np.linalg.norm(emb - np.asarray(q["vec"], np.float32), axis=1)
        return r["id"].to_numpy()[np.argsort(d, kind="stable")[:10]].tolist()
    return tb.scan(selected_fields=tuple(COLS)).to_arrow().num_rows
# warm the engine up (imports, first-query initialisation) on a local table, so that
# "cold" measures empty S3 caches, not interpreter and library start-up (both timed
# and reported apart: what a user's fresh process adds before its first answer);
# BENCH_WARMUP=0 skips the local query, so the cold query pays the first-query
# initialisation itself
t_import = time.perf_counter()
warm_meta = sys.argv[8]
if sys.argv[10] == "1":
    if engine in ("ours", "base"):
        hdb.Table(warm_meta.rsplit("/metadata/", 1)[0]).to_arrow(filter="id = 1", columns=COLS)
    else:
        StaticTable.from_metadata(warm_meta).scan(row_filter=EqualTo("id", 1),
                                                 selected_fields=tuple(COLS)).to_arrow()
t_ready = time.perf_counter()
print("READY " + json.dumps({"import_ms": (t_import - t_start) * 1000,
                             "warmup_ms": (t_ready - t_import) * 1000}), flush=True)
for line in sys.stdin:
    q = json.loads(line)
    t0, c0 = time.perf_counter(), time.process_time()
    res = run(q)
    ms = (time.perf_counter() - t0) * 1000
    cpu = (time.process_time() - c0) * 1000   # all threads of the process
    print(json.dumps({"ms": ms, "cpu": cpu, "result": res}), flush=True)
'''


WARM_META = None


def build_warmup_table(tmp):
    """A tiny local table of the same schema for the workers' warm-up."""
    import hyperstreamdb as hdb
    t = hdb.Table(os.path.join(tmp, "warm"))
    t.write_pandas(pd.DataFrame({"id": np.arange(10, dtype=np.int64),
                                 "category": ["c1"] * 10, "value": np.zeros(10),
                                 "embedding": list(np.zeros((10, DIM), np.float32))}))
    t.commit()
    return t.metadata_location


def s3_client(s3):
    import boto3
    return boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1",
                        aws_access_key_id=s3.access_key, aws_secret_access_key=s3.secret_key)


def build_table(s3):
    """Writes and indexes the table, or, with BENCH_TABLE_CACHE=DIR, restores the
    objects saved there by an earlier run of the same ROWS/FILES (writing and indexing
    1M rows takes tens of minutes on a small machine; the objects' keys and the bucket
    are the same every run, only the server's endpoint differs, and no object names it)."""
    import hyperstreamdb as hdb
    uri = s3.uri(f"bench/t{ROWS}")
    prefix = f"bench/t{ROWS}/"
    cache = os.environ.get("BENCH_TABLE_CACHE")
    cdir = os.path.join(cache, f"t{ROWS}-f{FILES}" + ("-cl" if CLUSTER else "")) if cache else None
    if cdir and os.path.exists(os.path.join(cdir, "DONE")):
        c = s3_client(s3)
        for root, _dirs, files in os.walk(cdir):
            for fn in files:
                full = os.path.join(root, fn)
                rel = os.path.relpath(full, cdir)
                if rel == "DONE":
                    continue
                c.upload_file(full, s3.bucket, prefix + rel)
        with open(os.path.join(cdir, "DONE")) as f:
            return uri, f.read().strip()
    rng = np.random.default_rng(1)
    t = hdb.Table(uri)
    per = ROWS // FILES
    for f in range(FILES):
        ids = np.arange(f * per, (f + 1) * per if f < FILES - 1 else ROWS, dtype=np.int64)
        df = pd.DataFrame({"id": ids,
                           "category": [f"c{c}" for c in rng.integers(0, CATS, len(ids))],
                           "value": rng.random(len(ids)),
                           "embedding": list(rng.standard_normal((len(ids), DIM)).astype(np.float32))})
        t.write_pandas(df)
        t.commit()
    t.add_index("id", "range")
    t.add_index("category", "inverted")
    if CLUSTER:   # the clustered vector section (docs/storage.md): blocks by category
        t.add_index("embedding", "hnsw", cluster="category", include=["id"])
    else:
        t.add_index("embedding", "hnsw")
    if cdir:
        c = s3_client(s3)
        for page in c.get_paginator("list_objects_v2").paginate(Bucket=s3.bucket, Prefix=prefix):
            for o in page.get("Contents", []):
                dst = os.path.join(cdir, o["Key"][len(prefix):])
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                c.download_file(s3.bucket, o["Key"], dst)
        with open(os.path.join(cdir, "DONE"), "w") as f:
            f.write(t.metadata_location)
    return uri, t.metadata_location


class Worker:
    def __init__(self, engine, uri, meta, s3, endpoint):
        env = dict(os.environ, **s3.env)
        env["AWS_ENDPOINT_URL"] = endpoint
        # "base": ours from another build (BENCH_BASE_PYTHON, e.g. main's venv),
        # for before/after in one run
        exe = os.environ["BENCH_BASE_PYTHON"] if engine == "base" else sys.executable
        self.p = subprocess.Popen(
            [exe, "-c", WORKER, engine, uri, meta, endpoint, s3.access_key,
             s3.secret_key, str(ROWS), WARM_META, OPEN, "1" if WARMUP else "0"], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self.p.stdout.readline().strip()
        assert ready.startswith("READY "), ready
        self.startup = json.loads(ready[6:])

    def ask(self, q):
        self.p.stdin.write(json.dumps(q) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("worker died")
        return json.loads(line)

    def close(self):
        self.p.stdin.close()
        self.p.wait(60)


def queries(rng):
    vec = rng.standard_normal(DIM).astype(np.float32).tolist()
    qs = [{"kind": "point", "arg": int(rng.integers(0, ROWS))},
          {"kind": "range", "arg": int(rng.integers(0, ROWS - ROWS // 1000))},
          {"kind": "vector", "arg": int(rng.integers(0, CATS)), "vec": vec},
          {"kind": "full", "arg": 0}]
    return [q for q in qs if q["kind"] in KINDS]   # the same draws whatever is run


TRACE = os.environ.get("BENCH_TRACE") == "1"

# what each request was for, from its path (the table layout: metadata/, data/,
# index/registry/, index/ sidecars; ours names vector sidecars *.hnsw*, pyiceberg
# reads none)
CLASSES = ("hint", "metadata", "manifest-list", "manifest", "registry", "sidecar-vector",
           "sidecar-scalar", "data", "list", "other")


def classify(method, target):
    path = target.split("?", 1)[0]
    if "list-type=" in target:
        return "list"
    if path.endswith("version-hint.text"):
        return "hint"
    if "/metadata/" in path:
        if path.endswith(".metadata.json"):
            return "metadata"
        return "manifest-list" if "/snap-" in path else "manifest"
    if "/index/registry/" in path:
        return "registry"
    if "/index/" in path:
        return "sidecar-vector" if ("hnsw" in path or ".vec" in path) else "sidecar-scalar"
    if path.endswith(".parquet"):
        return "data"
    return "other"


def measure(proxy, w, q, label=""):
    proxy.reset_counters()
    t0 = time.perf_counter()
    r = w.ask(q)
    t_answer = time.perf_counter()
    # the query's requests are those that reached the proxy before its answer
    # did; any after it (background warming for the next query) are settle()'s
    with proxy.lock:
        n_req, n_bytes = proxy.requests, proxy.bytes_out
        trace = list(proxy.trace or [])
    if TRACE and label and trace:
        print(f"  trace {label} {q['kind']}: {len(trace)} requests, {r['ms']:.1f} ms")
        for t, method, target, rng in trace:
            print(f"    {(t - t0) * 1000:8.1f} ms  {method:4s} {target[:90]} {rng}")
    by = {}
    for _t, method, target, _rng in trace:
        c = classify(method, target)
        by[c] = by.get(c, 0) + 1
    # dependent round trips: requests that start more than half the injected
    # delay after the previous one waited for an answer (a new wave)
    rounds, last = 0, None
    for t, *_ in sorted(trace):
        if last is None or t - last > max(DELAY_NOW[0] / 2000, 0.005):
            rounds += 1
        last = t
    by["rounds"] = rounds
    return {"ms": r["ms"], "cpu": r["cpu"], "requests": n_req, "bytes": n_bytes,
            "result": r["result"], "by": by, "t_answer": t_answer}


DELAY_NOW = [0.0]   # the injected delay of the current run, ms

# Between the cold and the warm query: wait until no request has reached the
# proxy for this long (the engine's background warming is done), and count
# those requests apart; 0 = issue the warm query at once (then they count in
# the warm query's, and may delay it).
SETTLE_S = float(os.environ.get("BENCH_SETTLE_S", "0.5"))
WARM_AFTER_S = os.environ.get("BENCH_WARM_AFTER_S")


def settle(proxy, t_answer):
    """Requests and bytes that arrive after a query has returned, until the
    process is quiet for SETTLE_S (at most 60 s), or for BENCH_WARM_AFTER_S
    after the answer; and when the last of their answers arrived (ms after
    the query's answer; 0 when none)."""
    if WARM_AFTER_S is None and SETTLE_S <= 0:
        return 0, 0, 0.0
    proxy.reset_counters()
    if WARM_AFTER_S is not None:
        time.sleep(max(0.0, t_answer + float(WARM_AFTER_S) - time.perf_counter()))
    else:
        t_end = time.time() + 60
        last = -1
        while time.time() < t_end:
            with proxy.lock:   # no new request, and no answer still on its way
                n = (proxy.requests, proxy.answered)
            if n == last and n[0] == n[1]:
                break
            last = n
            time.sleep(SETTLE_S)
    with proxy.lock:
        done = (proxy.last_answer - t_answer) * 1000 if proxy.answered else 0.0
        return proxy.requests, proxy.bytes_out, done


def main():
    global WARM_META
    import tempfile
    tmp = tempfile.mkdtemp(prefix="bench-s3-")
    WARM_META = build_warmup_table(tmp)
    with S3Server() as s3:
        os.environ.update(s3.env)
        t0 = time.time()
        uri, meta = build_table(s3)
        print(f"bench/s3: {ROWS} rows in {FILES} files on {s3.kind} "
              f"(written and indexed in {time.time() - t0:.1f}s)", flush=True)
        if os.environ.get("BENCH_REWRITE_MANIFESTS") == "1":
            # maintenance, for a second, labelled row: the appends' manifests merged
            import hyperstreamdb as hdb
            t = hdb.Table(uri)
            t.rewrite_manifests()
            meta = t.metadata_location
            print(f"bench/s3: after rewrite_manifests: {meta}", flush=True)
        results = {}
        for delay in DELAYS:
            DELAY_NOW[0] = delay
            with FaultProxy(s3.port, delay_s=delay / 1000) as proxy:
                proxy.trace = []   # classified per query (BENCH_TRACE=1 prints it too)
                for engine in ENGINES:
                    rng = np.random.default_rng(42)   # the same queries for both engines
                    cold = {}
                    warm = {}
                    starts = []
                    for rep in range(REPEAT):
                        qs, qs2 = queries(rng), queries(rng)
                        for q, q2 in zip(qs, qs2):
                            w = Worker(engine, uri, meta, s3, proxy.endpoint)
                            starts.append(w.startup)
                            c = measure(proxy, w, q, f"{engine} cold" if rep == 0 else "")
                            c["warming"], c["warming_bytes"], c["warming_ms"] = \
                                settle(proxy, c["t_answer"])
                            m = measure(proxy, w, q2, f"{engine} warm" if rep == 0 else "")
                            w.close()
                            cold.setdefault(q["kind"], []).append(c)
                            warm.setdefault(q["kind"], []).append(m)
                    print(f"delay={delay:>4.0f}ms {engine:9s} start-up (not in the cold column): "
                          f"import {statistics.median(x['import_ms'] for x in starts):6.0f} ms, "
                          f"first local query {statistics.median(x['warmup_ms'] for x in starts):6.0f} ms"
                          f" (BENCH_WARMUP={int(WARMUP)})", flush=True)
                    for kind in cold:
                        w = cold[kind]
                        print(f"delay={delay:>4.0f}ms {engine:9s} {kind:6s} warming after cold: "
                              f"{statistics.median(r['warming'] for r in w):6.0f} requests  "
                              f"{statistics.median(r['warming_bytes'] for r in w) / 1e6:9.3f} MB, "
                              f"the last answer {statistics.median(r['warming_ms'] for r in w):6.0f} ms "
                              f"after the cold one (runs: "
                              + ", ".join(f"{r['warming_ms']:.0f}" for r in w) + ") "
                              f"(in the background, before the warm query; "
                              + (f"BENCH_WARM_AFTER_S={WARM_AFTER_S})" if WARM_AFTER_S is not None
                                 else f"BENCH_SETTLE_S={SETTLE_S})"),
                              flush=True)
                        for label, runs in (("cold", cold[kind]), ("warm", warm[kind])):
                            rec = {k: statistics.median(r[k] for r in runs)
                                   for k in ("ms", "cpu", "requests", "bytes")}
                            results[(delay, engine, kind, label)] = rec
                            by = runs[0]["by"]   # the first run's requests, by purpose
                            print(f"delay={delay:>4.0f}ms {engine:9s} {kind:6s} {label}: "
                                  f"{rec['ms']:9.1f} ms p50 (cpu {rec['cpu']:7.1f} ms)  "
                                  f"{rec['requests']:6.0f} requests  "
                                  f"{rec['bytes'] / 1e6:9.3f} MB   ["
                                  + " ".join(f"{c}={by[c]}" for c in CLASSES if by.get(c))
                                  + f"] rounds={by.get('rounds', 0)}  runs: "
                                  + ", ".join(f"{r['ms']:.1f}" for r in runs), flush=True)
                    # the answers agree (vector: the filtered top-10 of ours vs brute force)
                    results[(delay, engine, "answers")] = [r["result"] for k in cold for r in cold[k]]
        for delay in DELAYS if set(ENGINES) >= {"ours", "pyiceberg"} else ():
            a = results[(delay, "ours", "answers")]
            b = results[(delay, "pyiceberg", "answers")]
            agree = sum(1 for x, y in zip(a, b)
                        if (x == y) or (isinstance(x, list) and len(set(x) & set(y)) >= 9))
            print(f"delay={delay:.0f}ms: {agree}/{len(a)} answers agree with pyiceberg's")
            for kind in [k for k in ("point", "range", "vector", "full") if k in KINDS]:
                for label in ("cold", "warm"):
                    o = results[(delay, "ours", kind, label)]
                    p = results[(delay, "pyiceberg", kind, label)]
                    print(f"delay={delay:>4.0f}ms {kind:6s} {label}: requests x{p['requests'] / max(o['requests'], 1):.1f}"
                          f"  latency x{p['ms'] / max(o['ms'], 1e-3):.1f}  (pyiceberg / ours)")


if __name__ == "__main__":
    try:
        main()
    finally:
        if WARM_META:
            import shutil
            shutil.rmtree(WARM_META.rsplit("/warm/", 1)[0], ignore_errors=True)

#!/usr/bin/env python3
"""HNSW benchmark: our hnsw / hnsw_tq8 / hnsw_tq4 / hnsw_pq against hnswlib and
faiss (HNSW flat, HNSW SQ8, IVF-PQ), single thread, M=16, ef_construction=200.

Data sets:
  fashion-mnist  Debian's dataset-fashion-mnist (60,000 x 784 train as the base,
                 the first --queries test images as queries), L2.
  wordnet384     bench/datasets/data/wordnet384.*.npy when helper E2's
                 make_text_embeddings.py has produced them (unit vectors, cosine).

Per index: build time (single thread), index memory, and recall@10 / QPS for a
sweep of ef (nprobe for IVF-PQ).  QPS at recall 0.90 / 0.95 / 0.99 is read off
the sweep by linear interpolation between the two neighbouring points (in
log QPS); "-" when the sweep never reaches it.  Ratios are against hnswlib.

Ground truth: exact top-10 with numpy (float32 matrix product for candidates,
then the best 100 re-ranked in float64), cached next to the data.

Memory: hnswlib's and faiss's serialized index size (hnswlib's file is exactly
n * (4d + 4 + 8M + 8) + upper levels); ours hnsw_info.memory_bytes (the image
size, i.e. what is mapped for search).

Times are CPU times (time.process_time here, clock_gettime CPU clocks in
vbench), so that other work on a shared machine does not count; every index is
built and searched with one thread.

All libraries run queries one at a time from a loop in C/C++ (hnswlib and
faiss get the whole query matrix in one call with one thread; vbench loops in
C), so no Python call overhead is counted for anyone.
"""
import argparse
import gzip
import json
import math
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FMNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")
TEXT = ROOT / "bench" / "datasets" / "data"
K = 10
M = 16
EFC = 200
TARGETS = (0.90, 0.95, 0.99)
EF_SWEEP = [10, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128, 192, 256]


def read_idx_images(path):
    with gzip.open(path, "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 2051:
            raise SystemExit(f"{path}: not an idx3 image file (magic {magic})")
        data = np.frombuffer(f.read(n * rows * cols), dtype=np.uint8)
    return data.reshape(n, rows * cols).astype(np.float32)


def ground_truth(base, queries, metric, k=K):
    """Exact top-k ids (nearest first): float32 candidates, float64 re-rank."""
    cand = min(100, len(base) - 1)
    if cand < k:  # tiny sets: everything, in float64
        v = base.astype(np.float64)
        out = np.empty((len(queries), k), dtype=np.int32)
        for i, q in enumerate(queries.astype(np.float64)):
            dd = ((v - q) ** 2).sum(1) if metric == "l2" else -(v @ q)
            out[i] = np.lexsort((np.arange(len(v)), dd))[:k]
        return out
    out = np.empty((len(queries), k), dtype=np.int32)
    bn = (base.astype(np.float64) ** 2).sum(1)
    for s in range(0, len(queries), 256):
        q = queries[s:s + 256]
        if metric == "l2":
            d = (base @ q.T).T * -2.0 + bn[None, :].astype(np.float32)
        else:  # cosine on unit vectors, ip: larger is nearer
            d = -(base @ q.T).T
        idx = np.argpartition(d, cand, axis=1)[:, :cand]
        for i in range(len(q)):
            c = idx[i]
            v = base[c].astype(np.float64)
            qq = q[i].astype(np.float64)
            if metric == "l2":
                dd = ((v - qq) ** 2).sum(1)
            else:
                dd = -(v @ qq)
            order = np.lexsort((c, dd))[:k]
            out[s + i] = c[order]
    return out


def recall(found, gt):
    hit = 0
    for f, g in zip(found, gt):
        hit += len(set(int(x) for x in f if x >= 0) & set(int(x) for x in g))
    return hit / (len(gt) * gt.shape[1])


def qps_at(points, target):
    """points: [(param, recall, qps)] in sweep order; interpolated QPS at target."""
    pts = sorted(points, key=lambda p: p[1])
    prev = None
    for p in pts:
        if p[1] >= target:
            if prev is None or prev[1] >= target:
                return p[2], p[0]
            t = (target - prev[1]) / (p[1] - prev[1])
            return math.exp(math.log(prev[2]) + t * (math.log(p[2]) - math.log(prev[2]))), p[0]
        prev = p
    return None, None


def sweep_until(run_one, params, stop_recall=0.995):
    pts = []
    for prm in params:
        r, q = run_one(prm)
        pts.append((prm, r, q))
        if r >= stop_recall:
            break
    return pts


# ---- peers -------------------------------------------------------------------

def bench_hnswlib(base, queries, gt, space, tmp):
    import hnswlib
    n, d = base.shape
    idx = hnswlib.Index(space=space, dim=d)
    idx.init_index(max_elements=n, M=M, ef_construction=EFC, random_seed=100)
    idx.set_num_threads(1)
    t = time.process_time()
    idx.add_items(base, np.arange(n), num_threads=1)
    build = time.process_time() - t
    path = os.path.join(tmp, "hnswlib.bin")
    idx.save_index(path)
    mem = os.path.getsize(path)
    os.unlink(path)

    def one(ef):
        idx.set_ef(ef)
        idx.knn_query(queries[:200], k=K, num_threads=1)  # warm-up
        t = time.process_time()
        lab, _ = idx.knn_query(queries, k=K, num_threads=1)
        dt = time.process_time() - t
        return recall(lab, gt), len(queries) / dt
    return build, mem, sweep_until(one, EF_SWEEP)


def faiss_mem(index):
    import faiss
    return int(faiss.serialize_index(index).nbytes)


def bench_faiss_hnsw(base, queries, gt, kind, metric):
    import faiss
    faiss.omp_set_num_threads(1)
    n, d = base.shape
    fm = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    if kind == "flat":
        index = faiss.IndexHNSWFlat(d, M, fm)
    else:
        index = faiss.IndexHNSWSQ(d, faiss.ScalarQuantizer.QT_8bit, M, fm)
    index.hnsw.efConstruction = EFC
    t = time.process_time()
    if kind != "flat":
        index.train(base)
    index.add(base)
    build = time.process_time() - t
    mem = faiss_mem(index)

    def one(ef):
        index.hnsw.efSearch = ef
        index.search(queries[:200], K)
        t = time.process_time()
        _, lab = index.search(queries, K)
        dt = time.process_time() - t
        return recall(lab, gt), len(queries) / dt
    return build, mem, sweep_until(one, EF_SWEEP)


def bench_faiss_ivfpq(base, queries, gt, metric):
    import faiss
    faiss.omp_set_num_threads(1)
    n, d = base.shape
    fm = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    nlist = int(4 * math.sqrt(n))
    m = next(m for m in (d // 8, d // 7, d // 14, d // 16, d // 4, d // 2) if m and d % m == 0)
    quant = faiss.IndexFlat(d, fm)
    index = faiss.IndexIVFPQ(quant, d, nlist, m, 8, fm)
    # rerank with exact vectors, like our quantized indexes do
    rindex = faiss.IndexRefineFlat(index)
    t = time.process_time()
    rindex.train(base)
    rindex.add(base)
    build = time.process_time() - t
    mem = faiss_mem(index)  # the IVF-PQ codes only (the refine vectors stay on disk for us)
    rindex.k_factor = 4

    def one(nprobe):
        faiss.ParameterSpace().set_index_parameter(rindex, "nprobe", nprobe)
        rindex.search(queries[:200], K)
        t = time.process_time()
        _, lab = rindex.search(queries, K)
        dt = time.process_time() - t
        return recall(lab, gt), len(queries) / dt
    return build, mem, sweep_until(one, [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128])


# ---- ours --------------------------------------------------------------------

def run_vbench(vbench, files, n, d, nq, quant, metric, efs, env_extra, rerank=1):
    env = dict(os.environ, VBENCH_METRIC=metric, **env_extra)
    cmd = [str(vbench), files["base"], str(n), str(d), files["queries"], str(nq), files["gt"],
           str(K), quant, str(M), str(EFC), "1", ",".join(map(str, efs)), str(rerank)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"vbench failed: {out.stderr}")
    return [json.loads(l) for l in out.stdout.splitlines() if l.strip()]


def bench_ours(vbench, files, n, d, nq, quant, metric, image):
    # rerank 1: a quantized index reranks max(k, ef) candidates, so the ef
    # sweep is also the rerank-depth sweep
    lines = run_vbench(vbench, files, n, d, nq, quant, metric, EF_SWEEP,
                       {"VBENCH_SAVE": image})
    head = lines[0]
    pts = [(l["ef"], l["recall"], l["qps"]) for l in lines[1:]]
    return head["build_s"], head["memory_bytes"], pts


def bench_filtered(args, files, base, queries, metric, images, tmp):
    """Our indexes under allow-lists of each selectivity (default path:
    exact below the threshold, else the filtered graph walk), ef 64."""
    n, d = base.shape
    nq = min(len(queries), 500)
    rng = np.random.default_rng(7)
    print(f"\nfiltered search ({nq} queries, ef 64, k {K}; ground truth: numpy over the allowed rows)")
    print(f"{'index':<12}{'selectivity':>12}{'rows':>8}{'recall@10':>11}{'QPS':>10}"
          f"{'exact path':>12}")
    for sel in (0.5, 0.1, 0.01, 0.001, 0.0001):
        allow = np.sort(np.nonzero(rng.random(n) < sel)[0]).astype(np.uint32)
        allow_path = pathlib.Path(tmp) / "allow.u32"
        allow.tofile(allow_path)
        kk = min(K, len(allow))
        gt = np.full((nq, K), -1, dtype=np.int32)
        if kk:
            sub = ground_truth(base[allow], queries[:nq], metric, kk)
            gt[:, :kk] = allow[sub]
        fgt = pathlib.Path(tmp) / "gt_filtered.i32"
        gt.tofile(fgt)
        ff = dict(files, gt=str(fgt))
        for label, (quant, image) in images.items():
            lines = run_vbench(args.vbench, ff, n, d, nq, quant, metric, [64],
                               {"VBENCH_LOAD": image, "VBENCH_ALLOW": str(allow_path)})
            r = lines[1]
            print(f"{label:<12}{sel:>12}{len(allow):>8}{r['recall']:>11.3f}{r['qps']:>10.0f}"
                  f"{r['exact']:>12.2f}", flush=True)


# ---- report -------------------------------------------------------------------

def report(name, results, ref="hnswlib"):
    print(f"\n== {name} ==")
    hdr = f"{'index':<16}{'build s':>9}{'memory MB':>11}" + "".join(
        f"{'QPS@' + format(t, '.2f'):>12}" for t in TARGETS)
    print(hdr + "   (param reaching it)")
    base = results.get(ref)
    for label, (build, mem, pts) in results.items():
        cells = []
        params = []
        for t in TARGETS:
            q, prm = qps_at(pts, t)
            cells.append(f"{q:>12.0f}" if q else f"{'-':>12}")
            params.append(str(prm) if prm else "-")
        print(f"{label:<16}{build:>9.1f}{mem / 1e6:>11.1f}" + "".join(cells) +
              "   (" + "/".join(params) + ")")
    if base:
        print(f"\nratios against {ref} (build time, memory: lower is better; QPS: higher):")
        for label, (build, mem, pts) in results.items():
            if label == ref:
                continue
            cells = []
            for t in TARGETS:
                q, _ = qps_at(pts, t)
                qb, _ = qps_at(base[2], t)
                cells.append(f"{q / qb:>12.2f}" if q and qb else f"{'-':>12}")
            print(f"{label:<16}{build / base[0]:>9.2f}{mem / base[1]:>11.2f}" + "".join(cells))
    print("\nsweeps (param: recall, QPS):")
    for label, (_, _, pts) in results.items():
        print(f"  {label:<14} " + "  ".join(f"{p}: {r:.3f} {q:.0f}" for p, r, q in pts))
    sys.stdout.flush()


def run_set(args, name, base, queries, metric, tmp):
    n, d = base.shape
    nq = len(queries)
    gt_path = pathlib.Path(tmp) / f"{name}.gt.i32"
    print(f"\n{name}: {n} x {d}, {nq} queries, {metric}; ground truth with numpy ...",
          flush=True)
    gt = ground_truth(base, queries, metric)
    files = {"base": str(pathlib.Path(tmp) / f"{name}.base.f32"),
             "queries": str(pathlib.Path(tmp) / f"{name}.q.f32"), "gt": str(gt_path)}
    base.astype(np.float32).tofile(files["base"])
    queries.astype(np.float32).tofile(files["queries"])
    gt.astype(np.int32).tofile(files["gt"])
    space = "l2" if metric == "l2" else "cosine"
    results = {}
    want = set(args.only.split(",")) if args.only else None

    def run(label, fn):
        if want and label not in want:
            return
        print(f"  {label} ...", flush=True)
        results[label] = fn()
        b, m, pts = results[label]
        print(f"    build {b:.1f} s, {m / 1e6:.1f} MB, " +
              ", ".join(f"{p}: {r:.3f}/{q:.0f}" for p, r, q in pts), flush=True)

    run("hnswlib", lambda: bench_hnswlib(base, queries, gt, space, tmp))
    images = {}
    for label, quant in (("hnsw", "flat"), ("hnsw_tq8", "tq8"), ("hnsw_tq4", "tq4"),
                         ("hnsw_pq", "pq")):
        img = str(pathlib.Path(tmp) / f"{name}.{label}.img")
        run(label, lambda quant=quant, img=img: bench_ours(args.vbench, files, n, d, nq, quant,
                                                          metric, img))
        if os.path.exists(img):
            images[label] = (quant, img)
    if not args.no_faiss:
        run("faiss_hnsw", lambda: bench_faiss_hnsw(base, queries, gt, "flat", metric))
        run("faiss_hnsw_sq8", lambda: bench_faiss_hnsw(base, queries, gt, "sq8", metric))
        run("faiss_ivfpq", lambda: bench_faiss_ivfpq(base, queries, gt, metric))
    report(name, results)
    filt = {k: v for k, v in images.items() if k in ("hnsw", "hnsw_tq8")}
    if filt and not args.no_filtered:
        bench_filtered(args, files, base, queries, metric, filt, tmp)
    for _, img in images.values():
        os.unlink(img)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vbench", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--only", default="", help="comma-separated index labels")
    ap.add_argument("--no-faiss", action="store_true")
    ap.add_argument("--no-filtered", action="store_true")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N base vectors")
    ap.add_argument("--sets", default="fashion-mnist,wordnet384")
    args = ap.parse_args()
    sets = args.sets.split(",")
    if "fashion-mnist" in sets:
        train = read_idx_images(FMNIST / "train-images-idx3-ubyte.gz")
        test = read_idx_images(FMNIST / "t10k-images-idx3-ubyte.gz")
        if args.limit:
            train = train[:args.limit]
        run_set(args, "fashion-mnist", train, test[:args.queries], "l2", args.dir)
    if "wordnet384" in sets:
        tr, qu = TEXT / "wordnet384.train.npy", TEXT / "wordnet384.query.npy"
        if tr.is_file() and qu.is_file():
            base = np.load(tr).astype(np.float32)
            if args.limit:
                base = base[:args.limit]
            q = np.load(qu).astype(np.float32)[:args.queries]
            run_set(args, "wordnet384", base, q, "cosine", args.dir)
        else:
            print(f"\nwordnet384: {tr} not found (bench/datasets/make_text_embeddings.py "
                  "makes it); skipped")


if __name__ == "__main__":
    main()

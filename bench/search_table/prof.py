"""Quick per-query profile of table vector search (development aid)."""
import gzip, struct, sys, time, os, pathlib
import numpy as np, pyarrow as pa
import hyperstreamdb as hdb

def fm():
    p = "/usr/share/datasets/fashion-mnist/"
    def rd(f):
        with gzip.open(p + f, "rb") as fh:
            m, n, r, c = struct.unpack(">IIII", fh.read(16))
            return np.frombuffer(fh.read(), np.uint8).reshape(n, r * c).astype(np.float32)
    return rd("train-images-idx3-ubyte.gz"), rd("t10k-images-idx3-ubyte.gz")

d = sys.argv[1]
kinds = sys.argv[2].split(",")
train, test = fm()
if not os.path.exists(d):
    t = hdb.Table(d)
    emb = pa.FixedSizeListArray.from_arrays(pa.array(train.ravel()), 784) if False else \
        pa.array(list(train), pa.list_(pa.float32()))
    t.write_arrow(pa.table({"id": np.arange(len(train), dtype=np.int64), "embedding": emb,
                            "sel": np.random.default_rng(1).permutation(len(train))}))
    t.commit()
t = hdb.Table(d)
for kind in kinds:
    names = [i for i in (t.indexes() if hasattr(t, "indexes") else [])]
    try:
        t0 = time.time(); t.add_index("embedding", kind, progress=False); print("build", kind, time.time() - t0)
    except Exception as e:
        print("add_index", kind, e)
    for cols in (["id"], ["id", "embedding"]):
        qs = test[:200]
        t.to_arrow(vector_filter={"column": "embedding", "query": qs[0], "k": 10}, columns=cols)
        t0 = time.perf_counter()
        for q in qs:
            r = t.to_arrow(vector_filter={"column": "embedding", "query": q, "k": 10}, columns=cols)
        print(kind, cols, "%.3f ms" % ((time.perf_counter() - t0) / len(qs) * 1e3))
    t.drop_index("embedding") if hasattr(t, "drop_index") else None

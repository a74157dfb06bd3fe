"""The graph image layout a vector sidecar gets follows the table's
location: local tables write version 1 images (each row's vector or code
beside its links, the layout the local walk is fastest on), object stores
version 2 (vectors apart from the links, so that an exact search reads only
the sidecar's head: tests/python/test_s3_requests.py checks those requests).

Search answers are checked against numpy's brute force, so the layout
choice cannot change a result unnoticed.
"""
import struct

import numpy as np
import pyarrow as pa
import pytest

import hyperstreamdb as hdb
from conftest import ON_S3

MAGIC = b"HSHNSWIX"


def graph_versions(root):
    out = []
    for p in sorted((root / "index").glob("*")):
        if not p.is_file():
            continue
        data = p.read_bytes()
        at = data.find(MAGIC)
        if at >= 0:
            out.append(struct.unpack_from("<I", data, at + 8)[0])
    return out


@pytest.mark.parametrize("kind", ["hnsw", "hnsw_tq8"])
def test_sidecar_graph_layout_follows_the_location(table_dir, kind):
    """Version 1 on local disk, 2 with the storage matrix on S3."""
    rng = np.random.default_rng(3)
    n, d = 3000, 16
    emb = rng.standard_normal((n, d)).astype(np.float32)
    t = hdb.Table(str(table_dir / "t"))
    t.write_arrow(pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                            "emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.ravel()), d)}))
    t.commit()
    t.add_index("emb", kind)
    assert graph_versions(table_dir / "t") == [2 if ON_S3 else 1]
    for q in rng.standard_normal((5, d)).astype(np.float32):
        got = t.to_arrow(vector_filter={"column": "emb", "query": q, "k": 5, "ef_search": 400},
                         columns=["id"]).column("id").to_pylist()
        want = np.argsort(np.linalg.norm(emb - q, axis=1), kind="stable")[:5].tolist()
        assert got == want

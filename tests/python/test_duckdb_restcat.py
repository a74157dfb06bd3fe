"""DuckDB reads and writes our tables through our Iceberg REST catalog server
(`hyperstream serve --rest`, bearer token): DuckDB 1.4 with its Iceberg
extension (from PyPI, scripts/duckdb-harness.sh, in a virtual environment of
its own, helpers/duckdb_iceberg.py), ATTACHed to the server as any user would
(docs/catalogs.md, "DuckDB"), with the warehouse on local disk and on the
tests' S3 server (DuckDB then reads and writes the objects with its own S3
client, httpfs).

* DuckDB reads an indexed table we wrote, with our position deletes, and a
  partitioned one: its rows are ours (and pyarrow's reading of our files is
  not involved: DuckDB has its own Parquet and Iceberg readers);
* DuckDB commits INSERT, DELETE (its position deletes) and UPDATE to our
  indexed table; we read exactly the rows DuckDB then reads, the index
  declarations survive DuckDB's commits, refresh_indexes indexes DuckDB's
  files, and our indexed answers (an inverted-index filter, HNSW search)
  equal DuckDB's answers and numpy brute force over DuckDB's rows;
* we commit again after DuckDB (append and delete) and DuckDB reads that.

Under CI=true a missing DuckDB/extension fails instead of skipping.
"""
import json
import subprocess
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pytest
from conftest import REPO, _build_dir, require, require_module, storage_server  # noqa: E402
from helpers.restserver import RestServer

hdb = require_module("hyperstreamdb")

CLI = _build_dir() / "hyperstream"
TOKEN = "duck-t0ken"
HARNESS = REPO / "scripts/duckdb-harness.sh"
DUCK_PY = REPO / "build-duckdb/venv/bin/python"
EXT_FILE = REPO / "build-duckdb/extensions"
RUNNER = REPO / "tests/python/helpers/duckdb_iceberg.py"
D = 8


def _harness():
    r = subprocess.run([str(HARNESS)], timeout=900, capture_output=True, text=True)
    require(r.returncode == 0, f"scripts/duckdb-harness.sh failed: {r.stderr[-2000:]}")
    require(EXT_FILE.exists() and DUCK_PY.exists(),
            f"DuckDB with the Iceberg extension not prepared: {r.stderr[-2000:]}")
    return EXT_FILE.read_text().strip()


def _duck(ext, server, statements=(), queries=None, s3=None):
    job = {"endpoint": server.url, "token": TOKEN, "statements": list(statements),
           "queries": queries or {}}
    if s3 is not None:
        job["s3"] = {"key": s3.env["AWS_ACCESS_KEY_ID"], "secret": s3.env["AWS_SECRET_ACCESS_KEY"],
                     "endpoint": urlparse(s3.endpoint).netloc}
    r = subprocess.run([str(DUCK_PY), str(RUNNER), ext], input=json.dumps(job),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)["queries"]


def _rows(tbl):
    cols = [tbl.column(n).to_pylist() for n in ("id", "cat", "x", "emb")]
    return sorted([list(r) for r in zip(*cols)], key=lambda r: r[0])


def _f32(v):
    return float(np.float32(v))


def _data(rng, ids):
    n = len(ids)
    emb = rng.standard_normal((n, D)).astype(np.float32)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": pa.array([f"c{i % 5}" for i in ids]),
        "x": pa.array(rng.random(n)),
        "emb": pa.array(emb.tolist(), pa.list_(pa.float32())),
    })


def _values(tbl):
    """A DuckDB VALUES list of tbl's rows (float32 values printed exactly)."""
    out = []
    for i, c, x, e in zip(*(tbl.column(n).to_pylist() for n in ("id", "cat", "x", "emb"))):
        vec = ", ".join(repr(_f32(v)) for v in e)
        out.append(f"({i}, '{c}', {x!r}, [{vec}]::FLOAT[])")
    return ", ".join(out)


@pytest.mark.parametrize("where", ["local", "s3"])
def test_duckdb_reads_and_writes_our_indexed_table(tmp_path, where):
    ext = _harness()
    require(CLI.exists(), f"{CLI} not built")
    s3 = None
    if where == "s3":
        require_module("moto")
        s3 = storage_server()
        server = RestServer(CLI, tmp_path / "srv", s3.uri("wh-duck"), TOKEN, env=s3.env)
    else:
        server = RestServer(CLI, tmp_path / "srv", str(tmp_path / "wh"), TOKEN)
    duck = (lambda *a, **k: _duck(*a, s3=s3, **k))
    rng = np.random.default_rng(11)
    try:
        cat = hdb.Catalog(server.url, token=TOKEN)
        cat.create_namespace("db")
        first = _data(rng, list(range(2000)))
        t = cat.create_table("db.t", first.schema)
        t.write(first)
        t.commit()
        t.add_index("cat", "inverted")
        t.add_index("emb", "hnsw", metric="l2")
        assert t.delete("id % 11 = 0") > 0
        p = cat.create_table("db.p", first.schema, partition_by=["cat"])
        p.write(first.slice(0, 500))
        p.commit()

        # 1. DuckDB reads what we wrote
        r = duck(ext, server, queries={
            "t": "SELECT id, cat, x, emb FROM cat.db.t ORDER BY id",
            "p": "SELECT id, cat, x, emb FROM cat.db.p WHERE cat = 'c2' ORDER BY id",
        })
        assert r["t"] == _rows(t.to_arrow())
        assert len(r["t"]) == 2000 - len(range(0, 2000, 11))
        assert r["p"] == _rows(p.to_arrow(filter="cat = 'c2'")) and len(r["p"]) == 100

        # 2. DuckDB writes to our indexed table: one commit per statement
        new = _data(rng, list(range(5000, 5300)))
        r = duck(ext, server, statements=[
            f"INSERT INTO cat.db.t VALUES {_values(new)}",
            "DELETE FROM cat.db.t WHERE id % 7 = 0 AND id < 1000",
            "UPDATE cat.db.t SET cat = 'upd' WHERE id BETWEEN 100 AND 130",
        ], queries={
            "all": "SELECT id, cat, x, emb FROM cat.db.t ORDER BY id",
            "upd": "SELECT id FROM cat.db.t WHERE cat = 'upd' ORDER BY id",
        })
        duck_rows = r["all"]
        assert len(duck_rows) == 2000 - len(range(0, 2000, 11)) + 300 - len(
            [i for i in range(1000) if i % 7 == 0 and i % 11 != 0])
        assert [row[0] for row in r["upd"]] == [i for i in range(100, 131)
                                                if i % 7 and i % 11]

        # 3. we read DuckDB's commits; our indexes survive and catch up
        t2 = cat.load_table("db.t")
        assert t2.current_snapshot_id != t.current_snapshot_id
        assert _rows(t2.to_arrow()) == duck_rows
        assert sorted(ix["column"] for ix in t2.indexes()) == ["cat", "emb"]
        assert t2.refresh_indexes() >= 1
        got = t2.to_arrow(filter="cat = 'upd'")
        assert sorted(got.column("id").to_pylist()) == [row[0] for row in r["upd"]]
        ex = t2.explain(filter="cat = 'upd'")
        assert ex["totals"]["index_files_skipped"] == 0
        assert all(f["indexes_used"] for f in ex["files"]), ex["files"]
        ids = np.array([row[0] for row in duck_rows])
        mat = np.array([row[3] for row in duck_rows], np.float32)
        hits = total = 0
        for _ in range(10):
            q = rng.standard_normal(D).astype(np.float32)
            dist = np.sqrt(((mat - q) ** 2).sum(axis=1))
            want = set(ids[np.argsort(dist, kind="stable")[:10]].tolist())
            res = t2.search("emb", q, k=10)
            assert len(res) == 10
            by_id = dict(zip(ids.tolist(), dist.tolist()))
            for i, dd in zip(res["id"], res["distance"]):
                assert abs(dd - by_id[int(i)]) < 1e-4
            hits += len(want & set(res["id"].tolist()))
            total += 10
        assert hits / total >= 0.95, hits / total

        # 4. our commits after DuckDB's: DuckDB reads them
        t2.write(_data(rng, list(range(9000, 9010))))
        t2.commit()
        assert t2.delete("id = 5001") == 1
        r = duck(ext, server, queries={"agg": "SELECT count(*), sum(id) FROM cat.db.t"})
        final = t2.to_arrow()
        assert r["agg"] == [[final.num_rows, sum(final.column("id").to_pylist())]]
    finally:
        server.stop()

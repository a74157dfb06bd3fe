"""Embedding columns through an Iceberg table, checked against pyarrow and pyiceberg.

A Parquet file whose vector column is fixed_size_list<float>[d] (written by our
converter) is appended to a table created --like it; Iceberg stores the column as
list<float>. The table's rows, read by our scan and by pyiceberg, must equal what
pyarrow reads from the source file, null vectors included.
"""
import json
import os
import random
import subprocess

import pytest
from conftest import require, require_module  # noqa: E402

pa = require_module("pyarrow")
pq = require_module("pyarrow.parquet")
pyiceberg_table = require_module("pyiceberg.table")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("HS_BUILD", os.path.join(ROOT, "build"))
HS = os.path.join(BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD), "hyperstream")


def run(*args):
    p = subprocess.run([HS, *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(scope="module", autouse=True)
def need_cli():
    require(os.path.exists(HS), f"{HS} not built")


def test_fixed_size_list_append_and_scan(tmp_path, table_dir):
    rng = random.Random(5)
    dim = 16
    rows = []
    for i in range(3000):
        vec = None if i % 97 == 0 else [rng.uniform(-1, 1) for _ in range(dim)]
        rows.append({"id": i, "v": vec})
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"fields": [
        {"name": "id", "type": "int64", "nullable": False},
        {"name": "v", "type": f"fixed_size_list<float32>[{dim}]"}]}))
    pfile = tmp_path / "in.parquet"
    run("parquet", "convert", str(src), str(pfile), "--schema", str(schema))

    table = table_dir / "t"
    run("table", "create", str(table), "--like", str(pfile))
    run("table", "append", str(table), str(pfile))

    want = pq.read_table(pfile).to_pylist()
    got = [json.loads(line) for line in run("table", "scan", str(table)).splitlines()]
    assert len(got) == len(want) == 3000
    got.sort(key=lambda r: r["id"])
    for g, w in zip(got, want):
        assert g["id"] == w["id"]
        if w["v"] is None:
            assert g["v"] is None
        else:
            assert g["v"] == pytest.approx(w["v"], rel=1e-6)

    hint = (table / "metadata" / "version-hint.text").read_text()
    static = pyiceberg_table.StaticTable.from_metadata(str(table / "metadata" / f"v{hint}.metadata.json"))
    ice = sorted(static.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert len(ice) == 3000
    for r, w in zip(ice, want):
        assert (r["v"] is None) == (w["v"] is None)
        if w["v"] is not None:
            assert r["v"] == pytest.approx(w["v"], rel=1e-6)


def _props(table):
    hint = (table / "metadata" / "version-hint.text").read_text()
    meta = json.loads((table / "metadata" / f"v{hint}.metadata.json").read_text())
    return meta


def test_vector_dimension_recorded_and_enforced(tmp_path, table_dir):
    """A fixed_size_list<float32>[4] column records its dimension in the table
    properties; appends of vectors of another length, with NaN, infinity or a
    null element fail naming the row, and leave the table as it was."""
    src = tmp_path / "good.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in [
        {"id": 0, "v": [0.0, 1, 2, 3]}, {"id": 1, "v": None}, {"id": 2, "v": [4.0, 5, 6, 7]}]) + "\n")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"fields": [
        {"name": "id", "type": "int64", "nullable": False},
        {"name": "v", "type": "fixed_size_list<float32>[4]"}]}))
    gfile = tmp_path / "good.parquet"
    run("parquet", "convert", str(src), str(gfile), "--schema", str(schema))
    table = table_dir / "t"
    run("table", "create", str(table), "--like", str(gfile))
    meta = _props(table)
    vid = [f["id"] for f in meta["schemas"][-1]["fields"] if f["name"] == "v"][0]
    assert meta["properties"][f"hyperstream.vector-dimension.{vid}"] == "4"
    run("table", "append", str(table), str(gfile))

    bad_cases = {
        "dimensions": [[0.0, 1, 2, 3], [1.0, 2, 3]],
        "NaN": [[0.0, 1, 2, 3], [1.0, float("nan"), 3, 4]],
        "infinite": [[0.0, 1, 2, 3], [1.0, float("inf"), 3, 4]],
        "null": [[0.0, 1, 2, 3], [1.0, None, 3, 4]],
    }
    for word, vecs in bad_cases.items():
        bad = pa.table({"id": pa.array([10, 11], pa.int64()),
                        "v": pa.array(vecs, pa.list_(pa.float32()))})
        bfile = tmp_path / f"bad_{word}.parquet"
        pq.write_table(bad, bfile)
        p = subprocess.run([HS, "table", "append", str(table), str(bfile)],
                           capture_output=True, text=True)
        assert p.returncode != 0, word
        assert "row 1" in p.stderr and '"v"' in p.stderr and word in p.stderr, p.stderr
    got = [json.loads(line) for line in run("table", "scan", str(table)).splitlines()]
    assert sorted(r["id"] for r in got) == [0, 1, 2]

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

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pyiceberg_table = pytest.importorskip("pyiceberg.table")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("HS_BUILD", os.path.join(ROOT, "build"))
HS = os.path.join(BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD), "hyperstream")


def run(*args):
    p = subprocess.run([HS, *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(scope="module", autouse=True)
def need_cli():
    if not os.path.exists(HS):
        pytest.skip(f"{HS} not built")


def test_fixed_size_list_append_and_scan(tmp_path):
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

    table = tmp_path / "t"
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

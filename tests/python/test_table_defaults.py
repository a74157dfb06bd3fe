"""v3 initial-default: rows written before a column was added read its initial default.

The spec (Iceberg v3, "Default values") says a reader must fill a field missing from
a data file with the field's initial-default. Expected values here come from the
spec's JSON single-value forms, not from our own output.
"""
import json
import os
import subprocess

import pytest
from conftest import require  # noqa: E402

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


def test_initial_default_fills_old_files(tmp_path, table_dir):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"fields": [{"name": "id", "type": "int64", "nullable": False}]}))
    old = tmp_path / "a.jsonl"
    old.write_text('{"id":1}\n{"id":2}\n')
    t = table_dir / "t"
    run("table", "create", str(t), "--schema", str(schema), "--format-version", "3")
    run("table", "append", str(t), str(old))
    changes = [
        {"op": "add", "name": "score", "type": "double", "required": True, "default": 1.5},
        {"op": "add", "name": "tag", "type": "string", "default": "x"},
        {"op": "add", "name": "d", "type": "date", "default": "2024-01-02"},
        {"op": "add", "name": "n", "type": "long"},
    ]
    run("table", "schema", str(t), "--update", json.dumps(changes))
    new = tmp_path / "b.jsonl"
    new.write_text('{"id":3,"score":2.5,"tag":null,"d":null,"n":7}\n')
    run("table", "append", str(t), str(new))
    rows = sorted((json.loads(l) for l in run("table", "scan", str(t)).splitlines()),
                  key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "score": 1.5, "tag": "x", "d": "2024-01-02", "n": None},
        {"id": 2, "score": 1.5, "tag": "x", "d": "2024-01-02", "n": None},
        {"id": 3, "score": 2.5, "tag": None, "d": None, "n": 7},
    ]
    # a filter on the defaulted column sees the default too
    got = [json.loads(l)["id"] for l in
           run("table", "scan", str(t), "--filter", "tag = 'x'").splitlines()]
    assert sorted(got) == [1, 2]
    got = [json.loads(l)["id"] for l in
           run("table", "scan", str(t), "--filter", "score = 1.5").splitlines()]
    assert sorted(got) == [1, 2]
    got = [json.loads(l)["id"] for l in
           run("table", "scan", str(t), "--filter", "score > 2").splitlines()]
    assert got == [3]


def test_write_default_fills_appended_rows(tmp_path, table_dir):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"fields": [{"name": "id", "type": "int64", "nullable": False}]}))
    t = table_dir / "t"
    run("table", "create", str(t), "--schema", str(schema), "--format-version", "3")
    run("table", "schema", str(t), "--update", json.dumps(
        [{"op": "add", "name": "w", "type": "int", "required": True, "default": 42}]))
    # a Parquet file without the column: its rows take the write-default
    rows = tmp_path / "a.jsonl"
    rows.write_text('{"id":1}\n{"id":2}\n')
    pfile = tmp_path / "a.parquet"
    run("parquet", "convert", str(rows), str(pfile), "--schema", str(schema))
    run("table", "append", str(t), str(pfile))
    got = sorted((json.loads(l) for l in run("table", "scan", str(t)).splitlines()),
                 key=lambda r: r["id"])
    assert got == [{"id": 1, "w": 42}, {"id": 2, "w": 42}]

"""v3 overwrite keeps row lineage: surviving rows keep their _row_id.

The spec (row lineage) requires a row that stays in the table to keep its _row_id
and _last_updated_sequence_number. Expected values are computed from the spec's
rules (first-row-id 0 for the first append: ids 0..4; the overwrite's new row gets
next-row-id 5 and sequence number 2); pyiceberg is the independent reader of the rows.
"""
import json
import os
import subprocess

import pytest
from conftest import require, require_module  # noqa: E402

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


@pytest.mark.parametrize("version", [2, 3])
def test_overwrite_by_filter(tmp_path, table_dir, version):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"fields": [{"name": "id", "type": "int64", "nullable": False}]}))
    t = table_dir / "t"
    run("table", "create", str(t), "--schema", str(schema), "--format-version", str(version))
    first = tmp_path / "a.jsonl"
    first.write_text("".join(f'{{"id":{i}}}\n' for i in range(5)))
    run("table", "append", str(t), str(first))
    new = tmp_path / "n.jsonl"
    new.write_text('{"id":100}\n')
    run("table", "overwrite", str(t), str(new), "--filter", "id < 2")

    args = ["table", "scan", str(t)] + (["--row-lineage"] if version == 3 else [])
    rows = sorted((json.loads(l) for l in run(*args).splitlines()), key=lambda r: r["id"])
    if version == 3:
        assert rows == [
            {"id": 2, "_row_id": 2, "_last_updated_sequence_number": 1},
            {"id": 3, "_row_id": 3, "_last_updated_sequence_number": 1},
            {"id": 4, "_row_id": 4, "_last_updated_sequence_number": 1},
            {"id": 100, "_row_id": 5, "_last_updated_sequence_number": 2},
        ]
    else:
        assert [r["id"] for r in rows] == [2, 3, 4, 100]

    hint = (t / "metadata" / "version-hint.text").read_text()
    static = pyiceberg_table.StaticTable.from_metadata(str(t / "metadata" / f"v{hint}.metadata.json"))
    assert sorted(r["id"] for r in static.scan().to_arrow().to_pylist()) == [2, 3, 4, 100]

"""Every Python code block of README.md's "Python quick start" runs as
written, in order, in one fresh interpreter (as a user would paste them),
with the table path replaced by a temporary directory.  A failing block
does not stop the others; the test fails naming every block that raised.
"""
import json
import pathlib
import re
import subprocess
import sys


README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
QUICKSTART_PATH = "/tmp/hyperstreamdb-quickstart"

RUNNER = r'''
import json, sys, traceback
blocks = json.load(open(sys.argv[1]))
ns = {"__name__": "__main__"}
for i, code in enumerate(blocks):
    try:
        exec(compile(code, f"<README python block {i + 1}>", "exec"), ns)
        status = "ok"
        detail = ""
    except Exception:
        status, detail = "error", traceback.format_exc()
    print("RESULT " + json.dumps({"block": i + 1, "status": status, "detail": detail}),
          flush=True)
'''


def quickstart_blocks():
    text = README.read_text()
    m = re.search(r"^## Python quick start\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, "README.md has no '## Python quick start' section"
    blocks = re.findall(r"```python\n(.*?)```", m.group(1), re.S)
    assert blocks, "no python blocks in the quick start"
    return blocks


def test_readme_quickstart_blocks_run(tmp_path):
    blocks = quickstart_blocks()
    assert any(QUICKSTART_PATH in b for b in blocks)
    table_dir = str(tmp_path / "quickstart")
    blocks = [b.replace(QUICKSTART_PATH, table_dir) for b in blocks]
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps(blocks))
    p = subprocess.run([sys.executable, "-c", RUNNER, str(spec)], capture_output=True,
                       text=True, timeout=600, cwd=tmp_path)
    results = [json.loads(line[7:]) for line in p.stdout.splitlines()
               if line.startswith("RESULT ")]
    assert p.returncode == 0 and len(results) == len(blocks), p.stderr[-3000:]
    errors = [r for r in results if r["status"] == "error"]
    assert not errors, "\n\n".join(f"block {r['block']}:\n{r['detail']}" for r in errors)

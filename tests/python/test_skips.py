"""Tests that cannot hide a missing oracle (issue 11, "tests that hide
failures").

* Under CI=true (.ci/run exports it) conftest.require / require_module fail
  instead of skipping; without it they skip.  Checked in child processes,
  since conftest reads CI once, at import.
* scripts/java-harness.sh without java: exit 1 under CI=true, exit 0 (the
  Java tests skip) otherwise.
* Source check: no test module skips by itself (pytest.skip, importorskip,
  skipif, mark.skip) except where a `# skip-ok: <why>` comment on the line
  or the line above says why the skip is not a missing oracle (hardware,
  ../shared/testdata, an input no oracle can read, a parameter combination
  that does not apply).  Everything else goes through require().
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

from conftest import HERE, REPO

_CHILD = r'''
import sys
sys.path.insert(0, sys.argv[1])
import pytest
import conftest
out = []
for call in (lambda: conftest.require(False, "an oracle"),
             lambda: conftest.require_module("no_such_module_hs_test")):
    try:
        call()
        out.append("passed")
    except pytest.fail.Exception:
        out.append("failed")
    except pytest.skip.Exception:
        out.append("skipped")
conftest.require(True, "present")
print(" ".join(out))
'''


def _require_outcomes(ci):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    r = subprocess.run([sys.executable, "-c", _CHILD, str(HERE)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_require_fails_under_ci_and_skips_otherwise():
    assert _require_outcomes("true") == ["failed", "failed"]
    assert _require_outcomes("1") == ["failed", "failed"]
    assert _require_outcomes(None) == ["skipped", "skipped"]
    assert _require_outcomes("false") == ["skipped", "skipped"]


def test_java_harness_script_fails_under_ci_without_java(tmp_path):
    # a PATH with the tools the script needs before its java check, and no java
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "env", "dirname"):
        path = shutil.which(tool)
        assert path, tool
        os.symlink(path, bin_dir / tool)
    script = REPO / "scripts" / "java-harness.sh"

    def run(extra):
        env = {"PATH": str(bin_dir), "HOME": str(tmp_path), **extra}
        return subprocess.run([str(bin_dir / "bash"), str(script)], env=env,
                              capture_output=True, text=True, timeout=60)

    r = run({"CI": "true"})
    assert r.returncode == 1 and "java not found" in r.stderr, (r.returncode, r.stderr)
    r = run({"HS_JAVA_HARNESS_REQUIRED": "1"})
    assert r.returncode == 1, (r.returncode, r.stderr)
    r = run({})
    assert r.returncode == 0 and "will skip" in r.stderr, (r.returncode, r.stderr)


_SKIP = re.compile(r"\bpytest\.(skip\(|importorskip\(|mark\.skipif\b|mark\.skip\b)|"
                   r"\bimportorskip\(")


def skips_without_reason(text):
    """(line number, line) of each skip in a module's text that has no
    `# skip-ok:` comment on its line or the line above."""
    lines = text.splitlines()
    bad = []
    for i, line in enumerate(lines):
        code = line.split("#", 1)[0]
        if not _SKIP.search(code):
            continue
        if "# skip-ok:" in line or (i > 0 and lines[i - 1].strip().startswith("# skip-ok:")):
            continue
        bad.append((i + 1, line.strip()))
    return bad


def test_no_module_skips_past_require():
    bad = []
    for f in sorted(HERE.rglob("*.py")):   # helpers/ too
        if f.name in ("conftest.py", pathlib.Path(__file__).name):
            continue
        rel = f.relative_to(HERE)
        bad += [f"{rel}:{n}: {line}" for n, line in skips_without_reason(f.read_text())]
    assert bad == [], ("skips that CI=true would not turn into failures: use "
                       "conftest.require / require_module, or say why with # skip-ok:\n"
                       + "\n".join(bad))


def test_the_source_check_sees_skips():
    src = ('np = pytest.importorskip("numpy")\n'
           'pytestmark = pytest.mark.skipif(True, reason="x")\n'
           '    pytest.skip("not built")\n'
           '    pytest.skip("no AVX")  # skip-ok: hardware\n'
           '    # skip-ok: an input no oracle reads\n'
           '    pytest.skip("pyarrow cannot read it")\n'
           '    require(False, "skip when absent")   # pytest.skip(...) in a comment\n')
    assert [n for n, _ in skips_without_reason(src)] == [1, 2, 3]

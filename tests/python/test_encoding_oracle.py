"""pyarrow as the oracle for src/parquet/encoding.c.

Writes fresh page payloads with the installed pyarrow (every encoding it can
write: PLAIN, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY,
BYTE_STREAM_SPLIT, BOOLEAN RLE, dictionary indices, v1 definition levels) and
runs the C unit test test_parquet_encoding against them: our decoders must
return pyarrow's values, and our encoders must reproduce pyarrow's bytes where
the format leaves no choice, and be no larger where it does.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_encoding_fixtures  # noqa: E402
from conftest import require  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _test_binary():
    build = os.environ.get("HS_BUILD", "build")
    path = os.path.join(build if os.path.isabs(build) else os.path.join(REPO, build),
                        "test_parquet_encoding")
    return path if os.access(path, os.X_OK) else None


def test_fixture_generation(tmp_path):
    manifest = gen_encoding_fixtures.generate(str(tmp_path))
    kinds = {line.split()[1] for line in manifest}
    assert {"exact", "values", "dict", "levels"} <= kinds
    for line in manifest:
        name = line.split()[0]
        assert (tmp_path / (name + ".bin")).stat().st_size < 8192


def test_decoders_and_encoders_match_pyarrow(tmp_path):
    binary = _test_binary()
    require(binary is not None, "test_parquet_encoding is not built (set HS_BUILD)")
    gen_encoding_fixtures.generate(str(tmp_path))
    env = dict(os.environ, HS_ENCODING_FIXTURES=str(tmp_path))
    r = subprocess.run([binary], env=env, capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "ok   test_pyarrow_fixtures" in out, out
    assert "SKIP test_pyarrow_fixtures" not in out, out

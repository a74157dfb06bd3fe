"""The table suite's core cases under locales whose decimal point is not '.'.

A Python program that calls ``locale.setlocale(locale.LC_ALL, ...)`` switches
LC_NUMERIC for the C library too, so libc's strtod stops at the '.' of "1.5"
and printf("%g") writes "1,5".  The engine must not care: a child process
sets de_DE.UTF-8 (decimal comma) or ps_AF.UTF-8 (a two-byte decimal point,
U+066B) and then creates tables, appends floats/doubles/decimals,
filters with float literals, reads everything back, writes a table
partitioned by a float and a decimal column, and runs vector searches.  It
hands its results back as Arrow IPC and JSON; this process (in the default
"C" locale) compares them with pyarrow, DuckDB and numpy brute force over the
same source rows.  The CLI is run with LC_ALL=de_DE.UTF-8 as well.

The locales come from scripts/bootstrap.sh.  Without them the tests skip,
except under CI=true (conftest.require), where they fail: CI must not
pass without running them.
"""
import decimal
import json
import os
import re
import subprocess
import sys
import textwrap
import urllib.parse

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from conftest import require

LOCALES = ["de_DE.UTF-8", "ps_AF.UTF-8"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("HS_BUILD", os.path.join(ROOT, "build"))
HS = os.path.join(BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD), "hyperstream")

N, DIM = 600, 8
P_VALUES = [0.5, 1.25, 2.75]                      # float32 partition values
DEC_VALUES = [decimal.Decimal("1.25"), decimal.Decimal("10.50"), decimal.Decimal("-3.75")]

# Filters with float literals in every form; each is valid DuckDB SQL with the same meaning.
FILTERS = [
    "x > 1.5",
    "x <= 2.5e-1",
    "x >= 15E-1 AND x < 2.0",
    "x BETWEEN 0.75 AND 1.25",
    "x IN (0.5, 1.5, 3.875)",
    "x = 3.875",
    "f < 0.5",
    "f >= 0.25e0",
    "p = 1.25",
    "p > 1.0 AND dec < 5.0",
    "dec >= 10.5",
    "dec = -3.75",
    "x > CAST('1.5' AS DOUBLE)",
    "CAST(x AS VARCHAR) = '1.5'",
    "score > 0.5 OR score IS NULL",
]


def need_locale(name):
    code = ("import locale; locale.setlocale(locale.LC_ALL, %r); "
            "assert locale.localeconv()['decimal_point'] != '.'" % name)
    if subprocess.run([sys.executable, "-c", code], capture_output=True).returncode != 0:
        require(False, f"locale {name} is not installed (scripts/bootstrap.sh generates it)")


def source_rows():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 32, N) / 8.0               # exact binary fractions: = and IN are exact
    f = (rng.integers(0, 16, N) / 16.0).astype(np.float32)
    score = rng.random(N)
    score_mask = rng.random(N) < 0.1
    p = np.array(P_VALUES, np.float32)[rng.integers(0, 3, N)]
    dec = [DEC_VALUES[i] for i in rng.integers(0, 3, N)]
    emb = rng.standard_normal((N, DIM)).astype(np.float32)
    return pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "x": pa.array(x),
        "f": pa.array(f),
        "score": pa.array(score, mask=score_mask),
        "p": pa.array(p),
        "dec": pa.array(dec, pa.decimal128(9, 2)),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.ravel()), DIM),
    }), emb


# Runs under de_DE.UTF-8: everything the engine is asked goes through hyperstreamdb;
# results leave as Arrow IPC files and JSON (Python's own float text is locale-free).
CHILD = textwrap.dedent("""
    import json, locale, os, sys
    import numpy as np
    import pyarrow as pa, pyarrow.ipc as ipc
    locale.setlocale(locale.LC_ALL, sys.argv[3])
    assert locale.localeconv()["decimal_point"] != "."
    import hyperstreamdb as hdb

    src, out = sys.argv[1], sys.argv[2]
    filters = json.loads(sys.argv[4])
    queries = np.load(os.path.join(out, "queries.npy"))
    data = ipc.open_file(src).read_all()
    res = {}

    def attempt(fn):  # an engine error becomes a string the parent's assertion shows
        try:
            return fn()
        except hdb.HyperStreamError as e:
            return "error: " + str(e)

    def save(name, table):
        with ipc.new_file(os.path.join(out, name + ".arrow"), table.schema) as w:
            w.write_table(table)

    for name, part in (("plain", None), ("part", "p, dec")):
        t = hdb.Table(os.path.join(out, name), partition_by=part)
        t.write_arrow(data.slice(0, 300))
        t.commit()
        t.write_arrow(data.slice(300))
        t.commit()
        save(name, t.to_arrow())
        res[name] = {"filters": {}}
        for f in filters:
            res[name]["filters"][f] = attempt(
                lambda: t.to_arrow(filter=f, columns=["id"])["id"].to_pylist())
        res[name]["files"] = [fi["file_path"] for fi in t.files()]
        res[name]["explain"] = attempt(lambda: t.explain(filter="x > 1.5"))
        res[name]["metadata"] = t.metadata
        res[name]["search"] = []
        for q in queries:
            got = attempt(lambda: t.to_arrow(filter="x > 1.5", columns=["id"],
                                             vector_filter={"column": "emb", "query": q, "k": 5}))
            res[name]["search"].append(got if isinstance(got, str) else
                                       [got["id"].to_pylist(), got["distance"].to_pylist()])
        t.close()
    with open(os.path.join(out, "results.json"), "w") as fh:
        json.dump(res, fh, default=str)
""")


@pytest.fixture(scope="module", params=LOCALES)
def child(request, tmp_path_factory):
    need_locale(request.param)
    d = tmp_path_factory.mktemp("locale")
    data, emb = source_rows()
    with ipc.new_file(str(d / "src.arrow"), data.schema) as w:
        w.write_table(data)
    queries = np.random.default_rng(6).standard_normal((3, DIM)).astype(np.float32)
    np.save(d / "queries.npy", queries)
    p = subprocess.run([sys.executable, "-c", CHILD, str(d / "src.arrow"), str(d), request.param,
                        json.dumps(FILTERS)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    with open(d / "results.json") as fh:
        res = json.load(fh)
    return d, data, emb, queries, res, request.param


def read_ipc(path):
    return ipc.open_file(str(path)).read_all()


@pytest.mark.parametrize("name", ["plain", "part"])
def test_read_back_equals_source(child, name):
    d, data, _, _, _, _ = child
    got = read_ipc(d / f"{name}.arrow").sort_by("id")
    assert got.column_names == data.column_names
    assert got.num_rows == data.num_rows
    for col in data.column_names:
        assert got[col].to_pylist() == data[col].to_pylist(), col


@pytest.mark.parametrize("name", ["plain", "part"])
def test_float_literal_filters_match_duckdb(child, name):
    _, data, _, _, res, _ = child
    src = data.drop_columns(["emb"])
    con = duckdb.connect()
    con.register("src", src)
    for f in FILTERS:
        want = [r[0] for r in con.execute(f"SELECT id FROM src WHERE {f} ORDER BY id").fetchall()]
        got = res[name]["filters"][f]
        assert not isinstance(got, str), f"{f}: {got}"
        assert sorted(got) == want, f
        assert want, f"{f}: the oracle selects no row, the case proves nothing"


def test_partition_paths_use_a_decimal_point(child):
    _, data, _, _, res, _ = child
    files = res["part"]["files"]
    want = {(float(np.float32(p)), decimal.Decimal(dec)) for p, dec in
            zip(data["p"].to_pylist(), data["dec"].to_pylist())}
    got = set()
    for path in files:
        segs = dict(s.split("=", 1) for s in path.split("/") if "=" in s)
        p_txt, dec_txt = (urllib.parse.unquote(segs[k]) for k in ("p", "dec"))
        assert re.fullmatch(r"-?[0-9]+\.[0-9]+", p_txt), path      # Java's Float.toString
        assert re.fullmatch(r"-?[0-9]+\.[0-9]{2}", dec_txt), path  # scale 2
        got.add((float(p_txt), decimal.Decimal(dec_txt)))
    assert got == want


def test_explain_and_metadata_parse(child):
    _, _, _, _, res, _ = child
    for name in ("plain", "part"):
        assert not isinstance(res[name]["explain"], str), res[name]["explain"]
        text = json.dumps(res[name]["explain"], ensure_ascii=False)
        assert "1,5" not in text and "1\u066b5" not in text, text
        assert "1.5" in text, text
        assert res[name]["metadata"]["format-version"] == 2
    specs = res["part"]["metadata"]["partition-specs"]
    assert [f["name"] for f in specs[-1]["fields"]] == ["p", "dec"]


@pytest.mark.parametrize("name", ["plain", "part"])
def test_vector_search_matches_brute_force(child, name):
    _, data, emb, queries, res, _ = child
    mask = np.asarray(data["x"]) > 1.5
    for q, found in zip(queries, res[name]["search"]):
        assert not isinstance(found, str), found
        ids, dists = found
        d = np.linalg.norm(emb.astype(np.float64) - q.astype(np.float64), axis=1)
        idx = np.arange(N)[mask]
        order = np.argsort(d[mask], kind="stable")[:5]
        assert ids == list(idx[order])
        np.testing.assert_allclose(dists, d[mask][order], rtol=1e-5, atol=1e-5)


def test_cli_scan_under_the_locale(child):
    d, data, _, _, _, loc = child
    require(os.path.exists(HS), f"{HS} not built")
    env = dict(os.environ, LC_ALL=loc)
    p = subprocess.run([HS, "table", "scan", str(d / "part"), "--filter", "x > 1.5e0"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    con = duckdb.connect()
    con.register("src", data.drop_columns(["emb"]))
    want = con.execute("SELECT id, x, f, p, CAST(dec AS VARCHAR) FROM src WHERE x > 1.5 "
                       "ORDER BY id").fetchall()
    got = sorted((r["id"], r["x"], r["f"], r["p"], r["dec"]) for r in rows)
    assert got == [tuple(w) for w in want]


# ---- sources: every locale-dependent conversion goes through base/numfmt ----------

RAW_PARSE = re.compile(r"\b(strtod|strtof|strtold|atof|json_(loads|loadb|loadf|load_file|"
                       r"load_callback|dumps|dumpb|dumpf|dump_file|dump_callback))\s*\(")
FLOAT_FMT = re.compile(r'"(?:[^"\\]|\\.)*%[-+ #0-9*]*(?:\.[0-9*]+)?[lL]?[aAeEfFgG](?:[^"\\]|\\.)*"')
LIBC_PRINTF = {"printf", "fprintf", "sprintf", "snprintf", "vprintf", "vfprintf", "vsprintf",
               "vsnprintf", "dprintf", "asprintf", "sscanf", "fscanf", "scanf"}


def _strip_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group()), text,
                  flags=re.S)


def raw_conversions(text):
    """(line, what) of each libc/jansson call in C source `text` that depends on the locale."""
    text = _strip_comments(text)
    found = [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in RAW_PARSE.finditer(text)]
    for m in FLOAT_FMT.finditer(text):
        i, depth = m.start() - 1, 0   # the call whose argument list holds the literal
        while i >= 0 and text[i] not in ";{}":
            if text[i] == ")":
                depth += 1
            elif text[i] == "(":
                if depth == 0:
                    break
                depth -= 1
            i -= 1
        call = re.search(r"([A-Za-z_]\w*)\s*$", text[max(0, i - 80):i]) if i >= 0 else None
        if call and text[i] == "(" and call.group(1) in LIBC_PRINTF:
            found.append((text.count("\n", 0, m.start()) + 1, call.group(1) + " " + m.group()))
    return found


def test_lint_finds_raw_conversions():
    src = ('x = strtod(s, &e); /* strtod( in a comment */\n'
           'n = snprintf(b, sizeof b, "%.*g", p, d);\n'
           'j = json_loadb(t, n, 0, NULL);\n'
           'n = hs_snprintf_c(b, sizeof b, "%.17g", d); y = hs_strtod(s, NULL);\n'
           'st = hs_buf_printf(o, "a %d "\n "%.2f", 1, r);\n'
           'if (is_real(v) && fabs(x) < 1)\n  n = snprintf(t, sizeof t, "%.*f", f(s), x);\n')
    assert raw_conversions(src) == [(1, "strtod"), (3, "json_loadb"),
                                    (2, 'snprintf "%.*g"'), (8, 'snprintf "%.*f"')]


def test_sources_use_numfmt():
    bad = []
    for top in ("src", "cli", "python/hyperstreamdb"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in names:
                path = os.path.join(dirpath, n)
                if not n.endswith((".c", ".h")) or path.endswith(os.path.join("base", "numfmt.c")):
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    bad += [f"{os.path.relpath(path, ROOT)}:{line}: {what}"
                            for line, what in raw_conversions(fh.read())]
    assert not bad, ("locale-dependent conversions (use base/numfmt.h: hs_strtod, "
                     "hs_snprintf_c, hs_json_*):\n" + "\n".join(bad))

"""Black-box tests of `hyperstream sql` (cli/cmd_sql.c): batch mode (-c, -f),
the shell fed on stdin (meta-commands, multi-line statements), the terminal
mode under a pty (libedit prompt and history), output formats and errors.

Oracles: DuckDB on the same rows (CSV and JSON Lines output parsed back and
compared as multisets); the aligned layout and the error report are
psql's, written out literally below.
"""
import csv
import io
import json
import os
import pty
import select
import subprocess
import time

import pytest

from conftest import require, require_module

pa = require_module("pyarrow")
np = require_module("numpy")
duckdb = require_module("duckdb")
hdb = require_module("hyperstreamdb")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("HS_BUILD", os.path.join(ROOT, "build"))
if not os.path.isabs(BUILD):
    BUILD = os.path.join(ROOT, BUILD)
HS = os.path.join(BUILD, "hyperstream")
require(os.access(HS, os.X_OK), "no hyperstream binary at " + HS)


def people():
    return pa.table({
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "name": pa.array(["ann", "bob, jr", None, 'say "hi"'], pa.string()),
        "score": pa.array([1.5, -2.25, None, 1e20], pa.float64()),
        "ok": pa.array([True, False, None, True]),
    })


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    """A warehouse of path tables: <wh>/people."""
    root = tmp_path_factory.mktemp("wh")
    t = hdb.Table(root / "people")
    t.write_arrow(people())
    t.commit()
    rng = np.random.default_rng(5)
    big = pa.table({"k": pa.array(rng.integers(0, 10, 2000), pa.int64()),
                    "v": pa.array(rng.random(2000))})
    t2 = hdb.Table(root / "nums")
    t2.write_arrow(big)
    t2.commit()
    return root, {"people": people(), "nums": big}


def sql(wh, *args, stdin=None, check=False):
    root, _ = wh
    p = subprocess.run([HS, "sql", *args, str(root)], input=stdin, capture_output=True,
                       text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}: {p.stderr}")
    return p


def duck(wh, q):
    con = duckdb.connect()
    for name, t in wh[1].items():
        con.register(name, t)
    return con.sql(q).fetchall()


def norm_rows(rows):
    return sorted([tuple("" if v is None else str(v) for v in r) for r in rows])


def test_csv_output_matches_duckdb(wh):
    q = "SELECT k, count(*) AS n, sum(v) AS s FROM nums GROUP BY k"
    p = sql(wh, "--format", "csv", "-c", q, check=True)
    rows = list(csv.reader(io.StringIO(p.stdout)))
    assert rows[0] == ["k", "n", "s"]
    got = sorted((int(k), int(n), float(s)) for k, n, s in rows[1:])
    want = sorted(duck(wh, q))
    assert [r[:2] for r in got] == [r[:2] for r in want]
    assert all(abs(a[2] - b[2]) <= 1e-9 * abs(b[2]) for a, b in zip(got, want))


def test_csv_quoting_and_nulls(wh):
    p = sql(wh, "--format", "csv", "-c", "SELECT id, name, ok FROM people ORDER BY id",
            check=True)
    assert p.stdout == ('id,name,ok\n1,ann,t\n2,"bob, jr",f\n3,,\n4,"say ""hi""",t\n')


def test_jsonl_output_matches_duckdb(wh):
    p = sql(wh, "--format", "jsonl", "-c", "SELECT id, name, score FROM people", check=True)
    got = [json.loads(line) for line in p.stdout.splitlines()]
    want = duck(wh, "SELECT id, name, score FROM people")
    assert sorted((r["id"], r["name"], r["score"]) for r in got) == \
        sorted(want, key=lambda r: r[0])


def test_aligned_output_is_psqls(wh):
    p = sql(wh, "-c", "SELECT id, name FROM people WHERE id <= 2 ORDER BY id", check=True)
    assert p.stdout == (" id |  name   \n"
                        "----+---------\n"
                        "  1 | ann\n"
                        "  2 | bob, jr\n"
                        "(2 rows)\n\n")


def test_error_exits_1_with_psql_report(wh):
    q = "SELECT id,\n       nope FROM people"
    p = sql(wh, "-c", q)
    assert p.returncode == 1
    lines = p.stderr.splitlines()
    assert lines[0].startswith("ERROR:  ") and "nope" in lines[0]
    assert lines[1] == "LINE 2:        nope FROM people"
    assert lines[2] == " " * len("LINE 2:        ") + "^"


def test_file_mode_stops_at_first_error(wh, tmp_path):
    f = tmp_path / "s.sql"
    f.write_text("SELECT count(*) AS n\n  FROM people;\n"
                 "SELECT * FROM missing_table;\n"
                 "SELECT 42 AS never;\n")
    p = sql(wh, "--format", "csv", "-f", str(f))
    assert p.returncode == 1
    assert p.stdout == "n\n4\n"
    assert p.stderr.startswith("ERROR:  ") and "missing_table" in p.stderr
    assert "never" not in p.stdout


def test_semicolons_inside_quotes_and_comments(wh):
    q = ("SELECT 'a;b' AS x, \"id\" -- a comment; with a semicolon\n"
         "FROM people /* block; comment */ WHERE name = 'bob, jr';")
    p = sql(wh, "--format", "csv", "-c", q, check=True)
    assert p.stdout == "x,id\na;b,2\n"


def test_stdin_shell_with_meta_commands(wh, tmp_path):
    out = tmp_path / "out.csv"
    inc = tmp_path / "inc.sql"
    inc.write_text("SELECT max(id) AS m FROM people;\n")
    script = (
        "\\pset format csv\n"
        "SELECT id\n"
        "  FROM people\n"
        "  WHERE id = 3;\n"
        f"\\o {out}\n"
        "SELECT name FROM people WHERE id = 1;\n"
        "\\o\n"
        f"\\i {inc}\n"
        "\\d\n"
        "\\d people\n"
        "\\timing on\n"
        "SELECT 1 AS one;\n"
        "\\q\n"
        "SELECT 'after quit' AS no;\n"
    )
    p = sql(wh, stdin=script, check=True)
    assert out.read_text() == "name\nann\n"
    assert "id\n3\n" in p.stdout
    assert "m\n4\n" in p.stdout
    assert "people" in p.stdout and "nums" in p.stdout               # \d
    assert "bigint" in p.stdout and "double precision" in p.stdout  # \d people
    assert "Timing is on." in p.stdout and "Time: " in p.stdout
    assert "after quit" not in p.stdout


def test_stdin_shell_goes_on_after_an_error_and_exits_1(wh):
    p = sql(wh, "--format", "csv", stdin="SELECT nope;\nSELECT 7 AS x;\n")
    assert p.returncode == 1
    assert "ERROR:  " in p.stderr
    assert p.stdout == "x\n7\n"


def test_usage_errors(wh):
    p = subprocess.run([HS, "sql", "--format", "xml", "-c", "SELECT 1"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2
    p = subprocess.run([HS, "sql", "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "hyperstream sql" in p.stdout


def test_terminal_mode_prompt_and_history(wh, tmp_path):
    root, _ = wh
    hist = tmp_path / "hist"
    env = dict(os.environ, HS_HISTFILE=str(hist), TERM="dumb")
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(HS, [HS, "sql", "--format", "csv", str(root)], env)
    out = b""

    def read_until(token, count=1, timeout=60):
        nonlocal out
        end = time.monotonic() + timeout
        while out.count(token) < count and time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    break
        return out.count(token) >= count

    assert read_until(b"hyperstream=> ")
    os.write(fd, b"SELECT 6 * 7\n")
    assert read_until(b"hyperstream-> ")           # continuation prompt
    os.write(fd, b"  AS answer;\n")
    assert read_until(b"42")
    os.write(fd, b"SELECT 'not finished\n")
    assert read_until(b"hyperstream-> ", 2)
    prompts = out.count(b"hyperstream=> ")
    time.sleep(0.3)                                  # let libedit reach its read
    os.write(fd, b"\x03")                            # Ctrl-C drops the statement typed so far
    assert read_until(b"hyperstream=> ", prompts + 1), out
    os.write(fd, b"SELECT 5 AS five;\n")
    assert read_until(b"five\r\n5")
    os.write(fd, b"\\q\n")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.WEXITSTATUS(status) == 0
    # libedit's history file encodes blanks as \040
    assert "SELECT 6 * 7" in hist.read_text().replace("\\040", " ")


def test_sql_catalog_option(tmp_path):
    """--sql: the tables of a SQLite catalog (made by pyiceberg) as namespace.table."""
    pyiceberg_sql = require_module("pyiceberg.catalog.sql")
    db, wh = tmp_path / "cat.db", tmp_path / "wh"
    wh.mkdir()
    cat = pyiceberg_sql.SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
    cat.create_namespace("db")
    src = pa.table({"id": pa.array(list(range(10)), pa.int64())})
    cat.create_table("db.ten", schema=src.schema).append(src)
    p = subprocess.run([HS, "sql", "--sql", str(db), str(wh), "--format", "csv",
                        "-c", "SELECT count(*) AS n, sum(id) AS s FROM db.ten"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "n,s\n10,45\n"
    p = subprocess.run([HS, "sql", "--sql", str(db), str(wh)], input="\\d\n",
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and " db     | ten" in p.stdout

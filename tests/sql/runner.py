#!/usr/bin/env python3
"""Runs the SQL golden corpus against our engine and compares with the
expected results DuckDB (or PostgreSQL, where the two differ) produced
(expected/*.json, see gen_expected.py).

    HS_BUILD=build .venv/bin/python tests/sql/runner.py [-v] [-k SUBSTRING] [--backend B]
        [--categories a,b] [--timeout S] [--write-known | --prune-known]

Tables: built from sqldata.py with the hyperstreamdb package in a temporary
directory (the same definitions DuckDB loaded).  Engine backends:

  ctypes   the C session API of $HS_BUILD/libhyperstream_testing.so
           (hs_session_open/register/execute, hs_result_stream imported into
           pyarrow with RecordBatchReader._import_from_c); tables opened by path
  package  hyperstreamdb.Session().register()/.sql()
  auto     (default) package if Session.sql works, else ctypes
  selftest DuckDB over Table.to_arrow() of our tables: checks the harness and
           the table loading, not the engine

Queries run in a child process that reports each one as a JSON line; a
query that crashes the child or runs past --timeout seconds is recorded as
such and the child restarts at the next query, so one bad query never hides
the others.  Prints a summary per category; exit status 1 when a query that
is not in known_failures.txt fails, or a listed one passes (keep the list
honest: delete its line).

known_failures.txt: one line per query, "<id>  <reason>"; '#' comments.
--write-known appends a drafted line for every unlisted failure (review the
reasons), --prune-known deletes the lines of queries that now pass.
"""
import argparse
import ctypes
import json
import os
import pathlib
import select
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import sqlcompare  # noqa: E402

KNOWN_FAILURES = HERE / "known_failures.txt"


def load_expected(categories=None):
    recs = []
    for f in sorted((HERE / "expected").glob("*.json")):
        if categories and f.stem not in categories:
            continue
        recs.extend(json.loads(f.read_text()))
    return recs


def load_known_failures(path=KNOWN_FAILURES):
    known = {}
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            qid, _, reason = line.partition(" ")
            if not reason.strip():
                raise ValueError(f"{path.name}: {qid} has no reason")
            known[qid] = reason.strip()
    return known


# ----------------------------------------------------------------- backends

class EngineError(Exception):
    def __init__(self, msg, sqlstate=None):
        super().__init__(msg)
        self.sqlstate = sqlstate


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


class _Stream(ctypes.Structure):
    _fields_ = [("get_schema", ctypes.c_void_p), ("get_next", ctypes.c_void_p),
                ("get_last_error", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("private_data", ctypes.c_void_p)]


class _SessionOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("threads", ctypes.c_int),
                ("memory_limit", ctypes.c_int64), ("catalog", ctypes.c_void_p)]


def lib_path():
    b = pathlib.Path(os.environ.get("HS_BUILD", "build"))
    b = b if b.is_absolute() else REPO / b
    return b / "libhyperstream_testing.so"


def ctypes_available():
    p = lib_path()
    if not p.exists():
        return False, f"{p} is not built"
    lib = ctypes.CDLL(str(p))
    if not hasattr(lib, "hs_session_open"):
        return False, f"{p} has no hs_session_open (no SQL engine in this build)"
    return True, ""


class CtypesEngine:
    """The C session API through ctypes; tables opened by path."""

    def __init__(self, tables, threads=0):
        self.lib = lib = ctypes.CDLL(str(lib_path()))
        P, I, C = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
        for name, args, res in [
            ("hs_catalog_open_path", [C, P, P], I), ("hs_catalog_close", [P], None),
            ("hs_table_open", [P, C, P, P], I), ("hs_table_close", [P], None),
            ("hs_session_open", [P, P, P], I), ("hs_session_close", [P], None),
            ("hs_session_register", [P, C, P, P], I), ("hs_session_execute", [P, C, P, P], I),
            ("hs_session_sqlstate", [P], C), ("hs_session_cancel", [P], None),
            ("hs_result_has_rows", [P], I), ("hs_result_stream", [P, P, P], I),
            ("hs_result_free", [P], None)]:
            f = getattr(lib, name)
            f.argtypes, f.restype = args, res
        self.cat, self.tables, self.sess = P(), [], P()
        self._call(lib.hs_catalog_open_path(None, ctypes.byref(self.cat), ctypes.byref(err := _Err())), err)
        opt = _SessionOptions(ctypes.sizeof(_SessionOptions), threads, 0, None)
        self._call(lib.hs_session_open(ctypes.byref(opt), ctypes.byref(self.sess), ctypes.byref(err)), err)
        for name, path in tables.items():
            t = P()
            self._call(lib.hs_table_open(self.cat, str(path).encode(), ctypes.byref(t), ctypes.byref(err)), err)
            self.tables.append(t)
            self._call(lib.hs_session_register(self.sess, name.encode(), t, ctypes.byref(err)), err)

    def _call(self, rc, err):
        if rc != 0:
            state = None
            if self.sess:
                s = self.lib.hs_session_sqlstate(self.sess)
                state = s.decode() if s else None
            raise EngineError(f"status {rc}: {err.msg.decode('utf-8', 'replace')}", state)

    def cancel(self):
        self.lib.hs_session_cancel(self.sess)

    def execute(self, sql):
        import pyarrow as pa
        err, res = _Err(), ctypes.c_void_p()
        self._call(self.lib.hs_session_execute(self.sess, sql.encode(), ctypes.byref(res),
                                               ctypes.byref(err)), err)
        try:
            if not self.lib.hs_result_has_rows(res):
                return None
            stream = _Stream()
            self._call(self.lib.hs_result_stream(res, ctypes.byref(stream), ctypes.byref(err)), err)
            reader = pa.RecordBatchReader._import_from_c(ctypes.addressof(stream))
            try:
                return reader.read_all()
            except pa.ArrowException as e:
                # The stream reports errors through get_last_error only: the
                # session's SQLSTATE is that of its last call (hs_session_execute,
                # which succeeded), so the class cannot be checked here.
                s = self.lib.hs_session_sqlstate(self.sess)
                s = s.decode() if s else None
                raise EngineError(f"reading the result: {e}", None if s == "00000" else s)
        finally:
            self.lib.hs_result_free(res)

    def close(self):
        self.lib.hs_session_close(self.sess)
        for t in self.tables:
            self.lib.hs_table_close(t)
        self.lib.hs_catalog_close(self.cat)


def package_available():
    try:
        import hyperstreamdb as hdb
    except ImportError as e:
        return False, f"hyperstreamdb is not installed ({e})"
    try:
        hdb.Session().sql("SELECT 1")
    except NotImplementedError as e:
        return False, f"hyperstreamdb.Session.sql is not implemented ({e})"
    except Exception:  # noqa: BLE001 - any other answer means there is an engine
        pass
    return True, ""


class PackageEngine:
    def __init__(self, tables, threads=0):
        import hyperstreamdb as hdb
        self.tables = {n: hdb.Table.open(str(p)) for n, p in tables.items()}
        self.sess = hdb.Session()
        for n, t in self.tables.items():
            self.sess.register(n, t)
        if threads:
            self.sess.sql(f"SET threads = {int(threads)}")

    def cancel(self):
        pass

    def execute(self, sql):
        import pyarrow as pa
        try:
            r = self.sess.sql(sql)
            return pa.table(r) if not hasattr(r, "to_arrow") else r.to_arrow()
        except Exception as e:  # noqa: BLE001 - every engine error is a result here
            raise EngineError(f"{type(e).__name__}: {e}", getattr(e, "sqlstate", None))

    def close(self):
        for t in self.tables.values():
            t.close()


class SelftestEngine:
    """Not an engine test: DuckDB over the rows our tables return
    (Table.to_arrow()), to check the harness itself (table loading, result
    canonicalization, comparison) -- every query should pass."""

    def __init__(self, tables, threads=0):
        import duckdb
        import hyperstreamdb as hdb
        import sqldata
        self.con = duckdb.connect()
        for st in sqldata.DUCKDB_SETTINGS:
            self.con.execute(st)
        self.con.execute("SET arrow_lossless_conversion = true")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        for n, p in tables.items():
            with hdb.Table.open(str(p)) as t:
                data = t.to_arrow()  # noqa: F841 (DuckDB's replacement scan)
                self.con.execute(f'CREATE TABLE "{n}" AS SELECT * FROM data')

    def cancel(self):
        self.con.interrupt()

    def execute(self, sql):
        import duckdb
        try:
            return self.con.sql(sql).to_arrow_table()
        except duckdb.Error as e:
            raise EngineError(str(e).splitlines()[0])

    def close(self):
        self.con.close()


def pick_backend(name):
    if name == "selftest":
        return "selftest", ""
    if name in ("auto", "package"):
        ok, why = package_available()
        if ok:
            return "package", ""
        if name == "package":
            return None, why
    ok, why = ctypes_available()
    return ("ctypes", "") if ok else (None, why)


# ----------------------------------------------------------------- one query

def judge(rec, engine):
    """Runs one expected record; returns (status, detail) with status
    'pass' or 'fail'."""
    try:
        t = engine.execute(rec["sql"])
    except EngineError as e:
        if "error" in rec:
            if e.sqlstate and e.sqlstate[:2] != rec["error"][:2]:
                return "fail", f"SQLSTATE {e.sqlstate}, expected {rec['error']} ({e})"
            return "pass", None
        return "fail", f"error {e.sqlstate or ''}: {e}"
    if "error" in rec:
        return "fail", f"no error, expected SQLSTATE {rec['error']}"
    if t is None:
        return "fail", "no rows returned (not a query result)"
    try:
        rows = sqlcompare.canonical_rows(t)
    except Exception as e:  # noqa: BLE001
        return "fail", f"result not comparable: {e}"
    diff = sqlcompare.compare(rec, rows)
    return ("fail", diff) if diff else ("pass", None)


def child_main(args):
    """Runs the records of $HS_SQL_RECORDS from index --start, one JSON line
    each on stdout."""
    recs = json.loads(pathlib.Path(os.environ["HS_SQL_RECORDS"]).read_text())
    tables = json.loads(os.environ["HS_SQL_TABLES"])
    engine = {"package": PackageEngine, "selftest": SelftestEngine}.get(args.backend, CtypesEngine)(
        tables, args.threads)
    out = sys.stdout
    for i in range(args.start, len(recs)):
        out.write(json.dumps({"start": i}) + "\n")
        out.flush()
        t0 = time.perf_counter()
        status, detail = judge(recs[i], engine)
        times = [time.perf_counter() - t0]
        # bench/sql: "repeat" more timed runs after the checked one.
        # Approximate answers (vector top-k, scored by the caller) are timed
        # as often as exact ones: the first run also loads the indexes.
        ok = status == "pass" or (recs[i].get("approximate") and status == "fail")
        n_more = recs[i].get("repeat", 0) if ok else 0
        if times[0] > recs[i].get("repeat_below", float("inf")):
            n_more = 0  # slow enough that one timing says it
        for _ in range(n_more):
            t0 = time.perf_counter()
            engine.execute(recs[i]["sql"])
            times.append(time.perf_counter() - t0)
        msg = {"i": i, "id": recs[i]["id"], "status": status, "detail": detail, "times": times}
        if recs[i].get("return_rows") and not (detail or "").startswith("error"):
            # bench/sql scores approximate (vector) answers itself.
            msg["rows"] = sqlcompare.canonical_rows(engine.execute(recs[i]["sql"]))
        out.write(json.dumps(msg) + "\n")
        out.flush()
    engine.close()
    out.write(json.dumps({"done": True}) + "\n")
    out.flush()


def build_tables(root):
    import hyperstreamdb as hdb
    import sqldata
    tables = sqldata.load_hyperstream(hdb, root)
    paths = {n: t.path for n, t in tables.items()}
    for t in tables.values():
        t.close()
    return paths


def run_all(backend, categories=None, k=None, timeout=60.0, threads=0, verbose=False,
            log=print):
    """Runs the golden corpus on freshly built tables; returns {id: (status, detail)}."""
    recs = load_expected(categories)
    if k:
        recs = [r for r in recs if k in r["id"] or k in r["sql"]]
    with tempfile.TemporaryDirectory(prefix="hs-sql-golden-") as root:
        return run_records(backend, recs, build_tables(root), timeout, threads, verbose, log)


def run_records(backend, recs, tables, timeout=60.0, threads=0, verbose=False, log=print,
                timings=None, progress=None):
    """Runs expected records (dicts as in expected/*.json) against the tables
    {name: path} in child processes; returns {id: (status, detail)} with
    status pass, fail, crash or timeout.  timings (a dict) receives each
    query's run times in seconds (the checked run, then rec["repeat"] more);
    progress(msg), when given, sees each query's report as it arrives."""
    results = {}
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="hs-sql-recs-", delete=False) as fh:
        json.dump(recs, fh)
        recs_path = fh.name
    env = dict(os.environ, HS_SQL_TABLES=json.dumps({n: str(p) for n, p in tables.items()}),
               HS_SQL_RECORDS=recs_path)
    try:
        start = 0
        while start < len(recs):
            cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--child",
                   "--backend", backend, "--start", str(start), "--threads", str(threads)]
            # stdout unbuffered and split here: a line already read into a file
            # buffer would be invisible to select() (a "start" seen late = no timeout).
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                 bufsize=0)
            current, last, pending, eof, killed = None, time.monotonic(), b"", False, False
            while not eof:
                r, _, _ = select.select([p.stdout], [], [], 1.0)
                if r:
                    chunk = os.read(p.stdout.fileno(), 1 << 16)
                    if not chunk:
                        eof = True
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        msg = json.loads(line)
                        last = time.monotonic()
                        if "start" in msg:
                            current = msg["start"]
                        elif "i" in msg:
                            results[msg["id"]] = (msg["status"], msg["detail"])
                            if timings is not None:
                                timings[msg["id"]] = msg.get("times", [])
                                if "rows" in msg:
                                    timings[msg["id"] + ":rows"] = msg["rows"]
                            if verbose and msg["status"] != "pass":
                                log(f"{msg['id']}: {msg['status']}: {msg['detail']}")
                            if progress:
                                progress(msg)
                            current = None
                            start = msg["i"] + 1
                        elif msg.get("done"):
                            start = len(recs)
                elif current is not None and time.monotonic() - last > timeout:
                    p.kill()
                    killed = True
                    results[recs[current]["id"]] = ("timeout", f"no answer in {timeout:.0f} s")
                    if verbose:
                        log(f"{recs[current]['id']}: timeout")
                    start = current + 1
                    current = None
                    break
                elif p.poll() is not None and not r:
                    break
            p.wait()
            err = p.stderr.read().decode("utf-8", "replace")
            p.stderr.close()
            p.stdout.close()
            if current is not None:  # died inside a query
                results[recs[current]["id"]] = ("crash", f"exit {p.returncode}: {err[-400:].strip()}")
                if verbose:
                    log(f"{recs[current]['id']}: crash (exit {p.returncode})")
                start = current + 1
            elif start < len(recs) and p.returncode != 0 and not killed:
                raise RuntimeError(f"the runner's child failed outside the queries: {err[-2000:]}")
    finally:
        os.unlink(recs_path)
    return results


def summarize(results, known, log=print):
    """Prints the per-category summary; returns the list of problems
    (unexpected failures and allow-listed queries that pass)."""
    by_cat = {}
    problems = []
    for qid, (status, detail) in sorted(results.items()):
        cat = qid.rsplit("_", 1)[0]
        c = by_cat.setdefault(cat, {"total": 0, "pass": 0, "known": 0, "new": 0})
        c["total"] += 1
        if status == "pass":
            c["pass"] += 1
            if qid in known:
                problems.append(f"{qid}: passes but is listed in known_failures.txt "
                                f"({known[qid]}): delete its line")
        elif qid in known:
            c["known"] += 1
        else:
            c["new"] += 1
            problems.append(f"{qid}: {status}: {detail}")
    log(f"{'category':<12} {'queries':>7} {'pass':>6} {'known':>6} {'new fail':>8}")
    tot = {"total": 0, "pass": 0, "known": 0, "new": 0}
    for cat, c in sorted(by_cat.items()):
        log(f"{cat:<12} {c['total']:>7} {c['pass']:>6} {c['known']:>6} {c['new']:>8}")
        for key in tot:
            tot[key] += c[key]
    log(f"{'TOTAL':<12} {tot['total']:>7} {tot['pass']:>6} {tot['known']:>6} {tot['new']:>8}")
    return problems


def known_reason(status, detail):
    """A first draft of an allow-list reason: 'unsupported (SQLSTATE): what'
    for an honest refusal, 'WRONG ANSWER: ...' for a result that differs,
    'WRONG ERROR' / 'NO ERROR' for error queries, else the status."""
    import re
    d = (detail or "").splitlines()[0] if detail else ""
    d = re.sub(r" at character \d+", "", d)
    m = re.match(r"error (\w{5})?: (?:\w+Error: |status \d+: )?(.*)", d)
    if status == "fail" and m and m.group(1) == "0A000":
        return f"unsupported (0A000): {m.group(2)[:140]}"
    if status == "fail" and m:
        return f"WRONG ERROR ({m.group(1)}): {m.group(2)[:140]}"
    if status == "fail" and d.startswith("no error"):
        return f"NO ERROR: {d[:140]}"
    if status == "fail" and d.startswith("SQLSTATE"):
        return f"WRONG SQLSTATE: {d[:140]}"
    if status == "fail":
        return f"WRONG ANSWER: {d[:150]}"
    return f"{status.upper()}: {d[:150]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="auto", choices=["auto", "ctypes", "package", "selftest"])
    ap.add_argument("--categories", type=lambda s: s.split(","), default=None)
    ap.add_argument("-k", default=None, help="only queries whose id or text contains this")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--write-known", action="store_true",
                    help="append every unlisted failure to known_failures.txt with its detail "
                         "as the reason (review the lines before committing)")
    ap.add_argument("--prune-known", action="store_true",
                    help="delete the known_failures.txt lines of queries that now pass")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child_main(args)
    backend, why = pick_backend(args.backend)
    if backend is None:
        print(f"no SQL engine to test: {why}")
        return 2
    print(f"backend: {backend}")
    results = run_all(backend, args.categories, args.k, args.timeout, args.threads, args.verbose)
    known = load_known_failures()
    problems = summarize(results, known)
    if args.write_known:
        with open(KNOWN_FAILURES, "a") as fh:
            for qid, (status, detail) in sorted(results.items()):
                if status != "pass" and qid not in known:
                    fh.write(f"{qid}  {known_reason(status, detail)}\n")
    if args.prune_known:
        passing = {q for q, (st, _) in results.items() if st == "pass" and q in known}
        lines = KNOWN_FAILURES.read_text().splitlines()
        KNOWN_FAILURES.write_text("".join(l + "\n" for l in lines if l.split(" ")[0] not in passing))
        print(f"pruned {len(passing)} lines of known_failures.txt")
    for p in problems[:200]:
        print("  " + p)
    if len(problems) > 200:
        print(f"  ... and {len(problems) - 200} more")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

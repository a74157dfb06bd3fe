"""The process-level public C API, seen from outside the library.

* libhyperstream.so (the public shared library) exports exactly the hs_
  functions the public headers declare with HS_API; the test library
  (libhyperstream_testing.so, which the ctypes tests load) exports more.
  Oracle: binutils nm and the headers' text.
* hs_version() and the HS_VERSION_* macros equal pyproject.toml's version.
* Settings (hyperstream/config.h) are read from the environment once;
  hs_config_set changes them; a bad environment value reaches the warning
  handler (a ctypes callback) instead of stderr.
* A process that forks while its threads scan (Python multiprocessing with
  the fork start method) has children that can use the library: each child
  scans the table and returns pyarrow's row count; a child stuck on a cache
  mutex would make the pool time out.
"""
import ctypes
import multiprocessing
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import warnings

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from conftest import REPO, _build_dir, require

BUILD = _build_dir()
PUBLIC = BUILD / "libhyperstream.so"
TESTING = BUILD / "libhyperstream_testing.so"
HEADERS = sorted((REPO / "include" / "hyperstream").glob("*.h"))


@pytest.fixture(autouse=True)
def _built():
    # skips locally, fails under CI=true (conftest.require)
    require(PUBLIC.exists(), f"{PUBLIC} not built")


def _pyproject_version():
    m = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    return m.group(1)


def _declared_api():
    names = set()
    for h in HEADERS:
        for line in h.read_text().splitlines():
            if line.startswith("HS_API "):
                names.add(re.search(r"(hs_\w+)\s*\(", line).group(1))
    return names


def _exports(lib):
    nm = shutil.which("nm")
    assert nm, "binutils nm is needed"
    out = subprocess.run([nm, "-D", "--defined-only", str(lib)], check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def test_public_library_exports_only_the_api():
    api = _declared_api()
    assert len(api) > 60 and "hs_version" in api and "hs_config_set" in api
    exported = _exports(PUBLIC)
    assert sorted(s for s in exported if not s.startswith("hs_")) == []
    assert exported == api
    # the test library keeps the internals the ctypes tests call
    internal = _exports(TESTING)
    assert api <= internal and "hs_malloc" in internal and len(internal - api) > 200


def test_version_matches_pyproject():
    want = _pyproject_version()
    lib = ctypes.CDLL(str(PUBLIC))
    lib.hs_version.restype = ctypes.c_char_p
    assert lib.hs_version().decode() == want
    text = (REPO / "include" / "hyperstream" / "version.h").read_text()
    macros = dict(re.findall(r"#define HS_VERSION_(MAJOR|MINOR|PATCH) (\d+)", text))
    assert f"{macros['MAJOR']}.{macros['MINOR']}.{macros['PATCH']}" == want
    assert f'#define HS_VERSION_STRING "{want}"' in text
    lib.hs_version_number.restype = ctypes.c_int
    major, minor, patch = (int(x) for x in want.split("."))
    assert lib.hs_version_number() == major * 1000000 + minor * 1000 + patch
    import hyperstreamdb
    assert hyperstreamdb.__version__ == want
    assert hyperstreamdb._core.version() == want


_CONSUMER = r"""
#include "hyperstream/table.h"
#include "hyperstream/config.h"
#include <stdio.h>
int main(void)
{
    hs_error err = {0};
    int64_t v = -1;
    if (hs_config_get_int("mmap", &v, &err) != HS_OK)
        return 2;
    printf("%s %d %d %s %lld\n", hs_version(), hs_version_number(), HS_VERSION_NUMBER,
           hs_status_name(HS_CONFLICT), (long long)v);
    return 0;
}
"""


def test_each_header_compiles_alone_and_a_program_links_the_public_library(tmp_path):
    """A C programmer's view: each public header compiles on its own (C11
    and C++11, -pedantic -Werror; version.h did not: it used HS_API without
    including common.h), and a program that sees only include/ links
    against libhyperstream.so and runs."""
    cc, cxx = shutil.which("cc") or shutil.which("gcc"), shutil.which("c++") or shutil.which("g++")
    assert cc and cxx, "a C and a C++ compiler are needed"
    inc = str(REPO / "include")
    failed = []
    for h in HEADERS:
        for compiler, ext, std in ((cc, "c", "-std=c11"), (cxx, "cpp", "-std=c++11")):
            src = tmp_path / f"only_{h.stem}.{ext}"
            src.write_text(f'#include "hyperstream/{h.name}"\n'
                           f'#include "hyperstream/{h.name}"\n')   # and include guards
            r = subprocess.run([compiler, std, "-Wall", "-Wextra", "-pedantic", "-Werror",
                                "-I", inc, "-c", str(src), "-o", str(tmp_path / "o.o")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                failed.append(f"{h.name} ({ext}): {r.stderr.strip()[:300]}")
    assert failed == []
    prog = tmp_path / "consumer.c"
    prog.write_text(_CONSUMER)
    exe = tmp_path / "consumer"
    r = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-I", inc, str(prog), "-o", str(exe),
                        "-L", str(BUILD), "-lhyperstream", f"-Wl,-rpath,{BUILD}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    want = _pyproject_version()
    major, minor, patch = (int(x) for x in want.split("."))
    number = str(major * 1000000 + minor * 1000 + patch)
    assert r.stdout.split()[:4] == [want, number, number, "HS_CONFLICT"]
    assert r.stdout.split()[4] in ("0", "1")   # the mmap switch


# The environment, the API and the warning handler, in a fresh process (the
# environment is read once per process).
_CHILD = textwrap.dedent("""
    import ctypes, json, os, sys
    lib = ctypes.CDLL(sys.argv[1])
    WARN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
    got = []
    handler = WARN(lambda user, msg: got.append(msg.decode()))
    lib.hs_set_warning_handler(handler, None)
    lib.hs_config_get_int.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p]
    lib.hs_config_set_int.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p]
    lib.hs_config_set.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p]
    def get(k):
        v = ctypes.c_int64(-1)
        assert lib.hs_config_get_int(k.encode(), ctypes.byref(v), None) == 0
        return v.value
    out = {"first": {k: get(k) for k in ("manifest_cache_mb", "index_cache_mb", "mmap")}}
    os.environ["HS_INDEX_CACHE_MB"] = "99"
    out["after_env_change"] = get("index_cache_mb")
    out["set_rc"] = lib.hs_config_set_int(b"index_cache_mb", 33, None)
    out["after_set"] = get("index_cache_mb")
    out["bad_rc"] = lib.hs_config_set(b"mmap", b"maybe", None)
    out["unknown_rc"] = lib.hs_config_set(b"nope", b"1", None)
    lib.hs_config_set(b"index_cache_mb", None, None)
    out["restored"] = get("index_cache_mb")
    out["warnings"] = got
    print(json.dumps(out))
""")


def test_settings_read_once_and_warnings_through_the_handler():
    env = dict(os.environ, HS_MANIFEST_CACHE_MB="plenty", HS_INDEX_CACHE_MB="12", HS_MMAP="0")
    r = subprocess.run([sys.executable, "-c", _CHILD, str(PUBLIC)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr          # the handler got it, not stderr
    import json
    out = json.loads(r.stdout)
    assert out["first"] == {"manifest_cache_mb": 64, "index_cache_mb": 12, "mmap": 0}
    assert out["after_env_change"] == 12
    assert out["set_rc"] == 0 and out["after_set"] == 33
    assert out["bad_rc"] == 3 and out["unknown_rc"] == 6     # HS_INVALID, HS_NOT_FOUND
    assert out["restored"] == 12
    assert len(out["warnings"]) == 1
    assert "HS_MANIFEST_CACHE_MB" in out["warnings"][0] and "plenty" in out["warnings"][0]


_SILENT = textwrap.dedent("""
    import ctypes, sys
    lib = ctypes.CDLL(sys.argv[1])
    lib.hs_config_get_int.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p]
    v = ctypes.c_int64(-1)
    assert lib.hs_config_get_int(b"manifest_cache_mb", ctypes.byref(v), None) == 0
    print(v.value)
""")


def test_library_never_prints_and_the_cli_prints_warnings(tmp_path):
    """Without a handler a warning (here: an environment value that does not
    parse) is dropped: the library writes nothing to stdout or stderr.  The
    CLI installs a handler that prints it."""
    env = dict(os.environ, HS_MANIFEST_CACHE_MB="plenty")
    r = subprocess.run([sys.executable, "-c", _SILENT, str(PUBLIC)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["64"] and r.stderr == ""
    cli = BUILD / "hyperstream"
    require(cli.exists(), f"{cli} not built")
    t = tmp_path / "t"
    import hyperstreamdb as hdb
    tb = hdb.Table(t)
    tb.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64())}))
    tb.commit()
    r = subprocess.run([str(cli), "table", "scan", str(t)], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 2
    assert "hyperstream: warning: HS_MANIFEST_CACHE_MB" in r.stderr and "plenty" in r.stderr


def test_package_config():
    import hyperstreamdb as hdb
    keys = hdb._core.config_keys()
    assert {"manifest_cache_mb", "index_cache_mb", "vindex_cache_mb", "dict_cache_mb", "mmap",
            "scan_threads", "search_threads", "page_cache_mb", "parquet_max_page_mb",
            "decode_limit_mb", "decode_limit_per_byte", "warm_files", "warm_pages_mb",
            "eq_delete_mb", "filter_cache", "search_filter_cache", "cluster_cache_mb",
            "buffer_pool_mb", "s3_lock_dir"} == set(keys)
    old = hdb.get_config("scan_threads")
    try:
        hdb.set_config("scan_threads", 3)
        assert hdb.get_config("SCAN_THREADS") == 3
        hdb.set_config("mmap", False)
        assert hdb.get_config("mmap") == 0
        hdb.set_config("mmap", "on")
        assert hdb.get_config("mmap") == 1
        with pytest.raises(hdb.InvalidArgumentError, match="scan_threads"):
            hdb.set_config("scan_threads", 1000)
        with pytest.raises(hdb.NotFoundError):
            hdb.set_config("no_such_key", 1)
        with pytest.raises(TypeError):
            hdb.set_config("mmap", 1.5)
    finally:
        hdb.set_config("scan_threads", None)
        hdb.set_config("mmap", None)
    assert hdb.get_config("scan_threads") == old


# A text setting: s3_lock_dir, its environment default HS_S3_LOCK_DIR read once.
_TEXT_CHILD = textwrap.dedent("""
    import ctypes, json, os, pathlib, sys
    import hyperstreamdb as hdb
    # the public C library (its own copy of the settings): any setting reads as text
    lib = ctypes.CDLL(sys.argv[2])
    lib.hs_config_get_str.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
                                      ctypes.c_void_p]
    buf = ctypes.create_string_buffer(4096)
    assert lib.hs_config_get_str(b"s3_lock_dir", buf, 4096, None) == 0
    out = {"c_public": buf.value.decode()}
    assert lib.hs_config_get_str(b"warm_files", buf, 4096, None) == 0
    out["c_warm_files"] = buf.value.decode()
    out["first"] = hdb.get_config("s3_lock_dir")
    os.environ["HS_S3_LOCK_DIR"] = "/changed/later"
    out["after_env_change"] = hdb.get_config("HS_S3_LOCK_DIR")
    hdb.set_config("s3_lock_dir", pathlib.Path(sys.argv[1]) / "locks")
    out["after_set"] = hdb.get_config("s3_lock_dir")
    hdb.set_config("s3_lock_dir", "")
    out["empty"] = hdb.get_config("s3_lock_dir")
    errors = []
    for bad in (5, "x" * 5000):
        try:
            hdb.set_config("s3_lock_dir", bad)
        except hdb.InvalidArgumentError as e:
            errors.append(str(e))
    out["errors"] = errors
    try:
        hdb.set_config("mmap", pathlib.Path("/tmp"))
    except hdb.InvalidArgumentError:
        out["mmap_path_refused"] = True
    hdb.set_config("s3_lock_dir", None)
    out["restored"] = hdb.get_config("s3_lock_dir")
    print(json.dumps(out))
""")


def test_text_setting_s3_lock_dir(tmp_path):
    env = dict(os.environ, HS_S3_LOCK_DIR=str(tmp_path / "from-env"))
    r = subprocess.run([sys.executable, "-c", _TEXT_CHILD, str(tmp_path), str(PUBLIC)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    import json
    out = json.loads(r.stdout)
    assert out["first"] == str(tmp_path / "from-env")
    assert out["after_env_change"] == str(tmp_path / "from-env")    # read once
    assert out["after_set"] == str(tmp_path / "locks")
    assert out["empty"] == ""
    assert len(out["errors"]) == 2 and "text" in out["errors"][0] and "bytes" in out["errors"][1]
    assert out["mmap_path_refused"]
    assert out["restored"] == str(tmp_path / "from-env")
    assert out["c_public"] == str(tmp_path / "from-env") and out["c_warm_files"] == "64"


# ---- fork ----

# at file scope (unindented), or static inside a function
_MUTEX_DEF = re.compile(r"^(?:[ \t]*static[ \t]+)?pthread_(mutex|rwlock)_t\s+(\w+)\s*(?:\[[^\]]*\])?"
                        r"\s*(?:=|;)", re.M)
_MUTEX_IN_STRUCT = re.compile(r"^\}\s*(\w+)\s*=\s*\{\s*PTHREAD_MUTEX_INITIALIZER", re.M)


def test_every_process_wide_mutex_is_fork_guarded():
    """Source check: each mutex that lives as long as the process (a static
    or file-scope pthread_mutex_t, an array of them, or the first member of a
    file-scope struct) is registered with base/fork.h in its file
    (HS_FORK_GUARD / hs_fork_guard), so that a child forked while another
    thread holds it does not hang (the page cache, the snapshot pins, the
    stream registry, the S3 state and the forced-sync list were not: found by
    this check).  rwlocks have no fork guard: none may be process-wide.
    The caches of table/fcache.h register themselves (fcache.c)."""
    missing = []
    for f in sorted((REPO / "src").rglob("*.c")):
        if f.name == "fork.c":      # the registry's own mutex: its handlers take it
            continue
        text = f.read_text()
        names = [(m.group(1), m.group(2)) for m in _MUTEX_DEF.finditer(text)]
        names += [("mutex", m.group(1) + ".mu") for m in _MUTEX_IN_STRUCT.finditer(text)]
        for kind, name in names:
            rel = f.relative_to(REPO)
            if kind == "rwlock":
                missing.append(f"{rel}: {name} (a process-wide rwlock)")
                continue
            n = re.escape(name)
            if not (re.search(r"HS_FORK_GUARD\(\s*%s\s*," % n, text)
                    or re.search(r"hs_fork_guard\(\s*&\s*%s\b" % n, text)):
                missing.append(f"{rel}: {name}")
    assert missing == [], f"process-wide mutexes without a fork guard (base/fork.h): {missing}"
    # the check sees what it should
    assert len(list(_MUTEX_DEF.finditer((REPO / "src/parquet/pcache.c").read_text()))) == 1
    assert _MUTEX_IN_STRUCT.search((REPO / "src/table/plan.c").read_text())


_TABLE_PATH = None


def _child_scan(i):
    # a forked child: the library's caches (manifests, footers, Avro
    # schemas, ...) came from the parent, mid-use by its scanning thread.
    # The child opens the table itself: a handle another thread was using
    # at the fork stays locked in the child (docs/capi.md).
    import hyperstreamdb as hdb
    t = hdb.Table.open(_TABLE_PATH)
    try:
        return t.to_arrow(filter=f"id >= {i}").num_rows
    finally:
        t.close()


def test_multiprocessing_fork_while_scanning(tmp_path):
    global _TABLE_PATH
    import hyperstreamdb as hdb
    n_files, per_file = 4, 500
    t = hdb.Table(tmp_path / "t")
    for f in range(n_files):
        t.write_arrow(pa.table({"id": pa.array(range(f * per_file, (f + 1) * per_file),
                                               pa.int64())}))
        t.commit()
    _TABLE_PATH = str(tmp_path / "t")
    total = n_files * per_file
    # the oracle: pyarrow over the table's data files
    files = sorted((tmp_path / "t" / "data").rglob("*.parquet"))
    assert sum(pq.read_metadata(f).num_rows for f in files) == total

    stop = threading.Event()
    scans = [0]

    def scan_loop():
        while not stop.is_set():
            assert t.to_arrow(filter="id >= 0").num_rows == total
            scans[0] += 1

    th = threading.Thread(target=scan_loop)
    th.start()
    try:
        ctx = multiprocessing.get_context("fork")
        with warnings.catch_warnings():
            # Python 3.12+ warns that forking a threaded process may deadlock:
            # this is what the library must survive
            warnings.simplefilter("ignore", DeprecationWarning)
            with ctx.Pool(2, maxtasksperchild=1) as pool:   # one fork per task
                starts = list(range(0, total, total // 16))
                res = pool.map_async(_child_scan, starts)
                got = res.get(timeout=120)
    finally:
        stop.set()
        th.join()
        _TABLE_PATH = None
    assert got == [total - s for s in starts]
    assert scans[0] > 0


def test_package_routes_library_warnings_to_python_warnings(tmp_path):
    import hyperstreamdb as hdb
    t = hdb.Table(tmp_path / "w")
    for f in range(2):
        t.write_arrow(pa.table({"id": pa.array(range(f * 200, f * 200 + 200), pa.int64()),
                                "cat": pa.array([f"c{i % 5}" for i in range(200)])}))
        t.commit()
    t.add_index("cat", "inverted")
    sidecars = sorted(p for p in (tmp_path / "w" / "index").glob("*") if p.is_file()
                      and p.parent.name == "index")
    assert len(sidecars) == 2
    data = bytearray(sidecars[0].read_bytes())
    data[len(data) // 2:] = b"\xff" * (len(data) - len(data) // 2)
    sidecars[0].write_bytes(bytes(data))
    # oracle for the answer: pyarrow over the data files
    want = sum(pc.sum(pc.equal(pq.read_table(p)["cat"], "c1")).as_py()
               for p in (tmp_path / "w" / "data").rglob("*.parquet"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = t.to_arrow(filter="cat = 'c1'").num_rows
        for _ in range(1000):   # pending calls run at the next bytecode boundaries
            pass
    assert got == want == 80
    ours = [w for w in caught if issubclass(w.category, hdb.HyperStreamWarning)]
    assert ours, [str(w.message) for w in caught]
    assert issubclass(hdb.HyperStreamWarning, RuntimeWarning)
    assert any(sidecars[0].name in str(w.message) and "reading the data" in str(w.message)
               for w in ours), [str(w.message) for w in ours]

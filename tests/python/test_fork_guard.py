"""Every process-wide mutex of the library is registered with base/fork.h.

A forked child (Python multiprocessing's fork start method) has one thread
and a copy of every mutex as it was: a mutex another thread of the parent
held at the fork stays held forever, and the child deadlocks at its next
lookup.  base/fork.c's pthread_atfork handlers take and release every mutex
registered with HS_FORK_GUARD / hs_fork_guard, so every file-scope mutex
must be registered.  tests/c/test_api.c's test_fork_scans is the stress
form (it hung in 1 of 5 to 30 runs while table/pins.c's mutex was not
registered: a child's first scan waited on it forever); this check is the
deterministic one, and test_lint_flags_unguarded shows it can fail.
"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PLAIN = re.compile(r"^(?:static\s+)?pthread_mutex_t\s+(\w+)\s*=\s*PTHREAD_MUTEX_INITIALIZER", re.M)
ARRAY = re.compile(r"^(?:static\s+)?pthread_mutex_t\s+(\w+)\s*\[", re.M)
STRUCT = re.compile(r"^\}\s*(\w+)\s*=\s*\{\s*PTHREAD_MUTEX_INITIALIZER", re.M)


def unguarded(text):
    """File-scope mutexes of one C source that are never registered."""
    out = []
    for name in PLAIN.findall(text):
        if not re.search(r"HS_FORK_GUARD\(\s*%s\s*," % name, text) and \
                not re.search(r"hs_fork_guard\(\s*&%s\s*," % name, text):
            out.append(name)
    for name in ARRAY.findall(text):
        if not re.search(r"hs_fork_guard\(\s*&%s\[" % name, text):
            out.append(name + "[]")
    for name in STRUCT.findall(text):
        if not re.search(r"HS_FORK_GUARD\(\s*%s\.\w+\s*," % name, text):
            out.append(name)
    return out


def test_lint_flags_unguarded():
    assert unguarded("static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;\n") == ["g_mu"]
    assert unguarded("static pthread_mutex_t g_l[4];\n") == ["g_l[]"]
    assert unguarded("} g_c = {PTHREAD_MUTEX_INITIALIZER, NULL};\n") == ["g_c"]
    assert unguarded("static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;\n"
                     "HS_FORK_GUARD(g_mu, HS_FORK_RANK_LEAF)\n") == []
    assert unguarded("static pthread_mutex_t g_l[4];\n"
                     "    hs_fork_guard(&g_l[i], HS_FORK_RANK_LEAF);\n") == []


def test_every_process_wide_mutex_is_fork_guarded():
    bad = []
    n = 0
    for d, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in files:
            if not f.endswith(".c") or f == "fork.c":
                continue
            p = os.path.join(d, f)
            text = open(p, encoding="utf-8").read()
            n += len(PLAIN.findall(text)) + len(ARRAY.findall(text)) + len(STRUCT.findall(text))
            bad += ["%s: %s" % (os.path.relpath(p, ROOT), m) for m in unguarded(text)]
    assert n >= 10, "the lint found almost no mutexes: its patterns no longer match the code"
    assert not bad, "process-wide mutexes without HS_FORK_GUARD / hs_fork_guard:\n" + "\n".join(bad)

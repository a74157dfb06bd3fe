"""Counters prove that indexes avoid work, and damaged indexes change no result.

1. Point lookups on a 400 000-row table of 20 data files (20 000 rows each)
   whose indexed columns span the same range in every file, so that
   partition and min/max pruning cannot help: a value planted in 3 of the 20
   files.  hs_index_stats must show 17 files pruned by the index, the index
   used in every planned file, exactly the planted rows as index candidates,
   and no more pages decoded than those 3 files hold (measured against a
   full scan of the same table); explain's per-file report must show zero
   pages decoded for the 17 files.  An unindexed predicate uses no index.
   The rows are compared with DuckDB over the live Parquet files.
2. Deleting, truncating, corrupting or swapping sidecar index files (and
   losing the registry) changes no result: every query still equals DuckDB,
   and index_files_skipped counts the damaged sidecars a query consulted.
3. The CLI: `hyperstream table index add|list|drop`, `table explain
   --filter`, `table scan --filter` on the same kind of table.

Skips while the index API (include/hyperstream/index.h) is not in the
library.  The expectations on counters follow the definitions in index.h.
"""
import glob
import json
import os
import pathlib
import subprocess

import numpy as np
import pyarrow as pa
import pytest
from conftest import require, require_module  # noqa: E402

from helpers import idxlib as X

require_module("duckdb")
require_module("pyiceberg")
require(X.LIB.exists(), f"{X.LIB} not built")

N_FILES = 20
ROWS_PER_FILE = 20_000
V = 500_000_000              # the planted key
V_FILES = [3, 11, 17]        # files that hold it (2 rows each)
NEEDLE = "c25x"              # a category between 'c25' and 'c26': inside every file's bounds
NEEDLE_FILES = [11, 14]
W = 123_456_789              # a second planted key, file 5 only

SCHEMA = pa.schema([("id", pa.int64()), ("key", pa.int64()), ("cat", pa.string()),
                    ("ts", pa.timestamp("us")), ("amount", pa.float64()), ("note", pa.string())])


@pytest.fixture(scope="module")
def hs():
    h = X.Hs()
    assert h.has_index_api, f"index API not in {X.LIB}: missing {h.missing}"
    return h


def file_batch(rng, i, n=ROWS_PER_FILE):
    """File i's rows: key uniform in [0, 1e9) with 0 and 1e9-1 present (so
    every file's key bounds are the same), categories c00..c49 all present."""
    key = rng.integers(0, 1_000_000_000, n)
    key[(key == V) | (key == W)] += 1
    key[0], key[1] = 0, 999_999_999
    cat = np.array([f"c{j:02d}" for j in rng.integers(0, 50, n)], dtype=object)
    cat[2], cat[3] = "c00", "c49"
    if i in V_FILES:
        key[[100, n - 100]] = V
    if i == 5:
        key[n // 2] = W
    if i in NEEDLE_FILES:
        cat[[7, 100, n // 3, n - 7]] = NEEDLE  # row 100 of file 11 also holds key V
    ts = np.datetime64("2024-01-01T00:00:00") + rng.integers(0, 86400 * 30, n).astype(
        "timedelta64[s]")
    return pa.table({
        "id": pa.array(np.arange(i * n, (i + 1) * n, dtype=np.int64)),
        "key": pa.array(key, pa.int64()),
        "cat": pa.array(cat, pa.string()),
        "ts": pa.array(ts.astype("datetime64[us]"), pa.timestamp("us")),
        "amount": pa.array(np.round(rng.normal(100, 30, n), 2)),
        "note": pa.array([f"note {x}" for x in rng.integers(0, 1000, n)]),
    }, schema=SCHEMA)


def make_table(hs, root, n_files, rows, seed=7, deletes=()):
    rng = np.random.default_rng(seed)
    cat = hs.path_catalog(root)
    t = hs.create(cat, "t", SCHEMA)
    for i in range(n_files):
        hs.append(t, file_batch(rng, i, rows))
    for d in deletes:
        hs.delete(t, d)
    return cat, t


def per_file_entries(explain):
    """The per-data-file records of an explain report: a list of dicts that
    name a file and report pages decoded."""
    found = []

    def walk(o):
        if isinstance(o, list) and o and all(isinstance(x, dict) for x in o):
            if all(any("file" in k or "path" in k for k in x) for x in o) and \
                    any("pages_decoded" in x for x in o):
                found.append(o)
        if isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(explain)
    return found[0] if found else None


def entry_path(e):
    for k in ("file_path", "path", "file", "data_file"):
        if isinstance(e.get(k), str):
            return X.strip_file_scheme(e[k])
    for k, v in e.items():
        if isinstance(v, str) and v.endswith(".parquet"):
            return X.strip_file_scheme(v)
    return None


@pytest.fixture(scope="module")
def big(hs, tmp_path_factory):
    root = tmp_path_factory.mktemp("counters")
    cat, t = make_table(hs, root, N_FILES, ROWS_PER_FILE)
    hs.add_index(t, "key", "range")
    hs.add_index(t, "cat", "inverted")
    hs.add_index(t, "ts", "auto")
    oracle = X.Oracle(hs.metadata_location(t), SCHEMA.names)
    files = [f["file_path"] for f in hs.files(t)]
    assert len(files) == N_FILES
    # which data file holds which planted value, from the Parquet files themselves
    holders = {}
    for where in (f"key = {V}", f"cat = '{NEEDLE}'", f"key = {W}",
                  f"key = {V} AND cat = '{NEEDLE}'"):
        holders[where] = {X.strip_file_scheme(r[0]) for r in oracle.con.execute(
            "SELECT DISTINCT filename FROM read_parquet(?, hive_partitioning=false, "
            f"filename=true) WHERE {where}", [[X.strip_file_scheme(f) for f in files]]).fetchall()}
    assert len(holders[f"key = {V}"]) == 3 and len(holders[f"cat = '{NEEDLE}'"]) == 2
    _, full, _ = hs.scan(t, None, stats=True)
    yield dict(cat=cat, t=t, oracle=oracle, holders=holders, full=full, root=root)
    hs.close(t)
    hs.close_catalog(cat)


@pytest.mark.parametrize("where,n_holding", [
    (f"key = {V}", 3),
    (f"cat = '{NEEDLE}'", 2),
    (f"key = {V} AND cat = '{NEEDLE}'", 1),
    (f"key = {W}", 1),
    (f"key IN ({V}, {W}, 7)", 4),
])
def test_point_lookup_decodes_only_holding_files(hs, big, where, n_holding):
    t, oracle = big["t"], big["oracle"]
    got, ist, sst = hs.scan(t, where, stats=True)
    want = oracle.query(where, order="id")
    assert not X.compare(got, want, where, key="id"), X.compare(got, want, where, key="id")
    assert want.num_rows > 0
    assert ist["files_planned"] == N_FILES, f"bounds should not prune here: {ist}"
    assert ist["files_pruned_by_index"] == N_FILES - n_holding, ist
    assert ist["files_indexed"] == N_FILES, ist
    assert ist["index_lookups"] >= N_FILES, ist
    assert ist["index_files_skipped"] == 0, ist
    assert ist["rows_selected_by_index"] == want.num_rows, ist   # equality / IN are exact
    assert ist["rows_emitted"] == want.num_rows, ist
    # pages: at most what the holding files have (files are alike: same rows, same columns)
    full = big["full"]
    assert full["pages_decoded"] >= N_FILES * len(SCHEMA), full
    per_file_pages = full["pages_decoded"] / N_FILES
    assert ist["pages_decoded"] <= n_holding * per_file_pages, (ist, full)
    assert ist["rows_decoded"] <= n_holding * ROWS_PER_FILE, ist
    # explain: the same totals, and per file zero pages for files without the value
    ex = hs.explain(t, where)
    for k in ("files_pruned_by_index", "pages_decoded", "rows_emitted"):
        got_k = X.find_key(ex.get("totals", ex), k)
        assert got_k == ist[k], f"explain {k}: {got_k} != {ist[k]}"
    entries = per_file_entries(ex)
    assert entries is not None, f"explain has no per-file entries: {json.dumps(ex)[:2000]}"
    holding = big["holders"].get(where)
    if holding is not None:
        for e in entries:
            p = entry_path(e)
            assert p is not None, e
            if p not in holding:
                assert e["pages_decoded"] == 0, f"{p} has no matching row but decoded pages: {e}"


def test_unindexed_predicate_uses_no_index(hs, big):
    t, oracle = big["t"], big["oracle"]
    for where in ["note = 'note 17'", "amount > 190", f"key = {V} OR note = 'note 3'"]:
        got, ist, _ = hs.scan(t, where, stats=True)
        want = oracle.query(where, order="id")
        assert not X.compare(got, want, where, key="id"), X.compare(got, want, where, key="id")
        assert ist["files_pruned_by_index"] == 0, (where, ist)
        if "key" not in where:
            assert ist["files_indexed"] == 0 and ist["index_lookups"] == 0, (where, ist)


def test_dropping_the_index_restores_the_full_read(hs, tmp_path):
    cat, t = make_table(hs, tmp_path, 6, 5000, seed=3)
    hs.add_index(t, "key", "inverted")
    _, with_ix, _ = hs.scan(t, f"key = {V}", stats=True)
    hs.drop_index(t, "key")
    assert hs.list_indexes(t) == []
    _, without, _ = hs.scan(t, f"key = {V}", stats=True)
    assert with_ix["files_pruned_by_index"] == 5 and without["files_pruned_by_index"] == 0  # V: file 3
    assert without["files_indexed"] == 0
    assert without["pages_decoded"] > with_ix["pages_decoded"], (with_ix, without)
    assert without["rows_decoded"] >= 6 * 5000 > with_ix["rows_decoded"], (with_ix, without)
    # the dropped index's sidecars are orphans now: removed by age 0 (older
    # registry versions may go too); the count is what was deleted
    tdir = X.strip_file_scheme(hs.location(t))
    orphans = sidecars(tdir, 2)
    assert len(orphans) == 6, orphans
    n_before = len(glob.glob(os.path.join(tdir, "index", "**"), recursive=True))
    n_removed = hs.remove_orphan_indexes(t, 0)
    assert sidecars(tdir, 2) == []
    assert n_removed == n_before - len(glob.glob(os.path.join(tdir, "index", "**"),
                                                 recursive=True)) >= 6
    reg = X.strip_file_scheme(hs.properties(t).get("hyperstream.index-registry", ""))
    if reg:  # the current registry version stays
        assert os.path.isfile(reg if os.path.isabs(reg) else os.path.join(tdir, reg)), reg
    with pytest.raises(X.HsFail) as e:
        hs.drop_index(t, "key")
    assert e.value.status == "HS_NOT_FOUND"
    with pytest.raises(X.HsFail) as e:
        hs.add_index(t, "no_such_column", "inverted")
    assert e.value.status == "HS_NOT_FOUND"
    with pytest.raises(X.HsFail) as e:
        hs.add_index(t, "key", "no_such_kind")
    assert e.value.status == "HS_INVALID"
    hs.close(t)
    hs.close_catalog(cat)


# ---------------------------------------------------------------------------
# damaged index files

def sidecars(table_dir, field_id):
    """Sidecar files of one column (DESIGN.md: index/<data-file-stem>.<field-id>.<kind>)."""
    return sorted(p for p in glob.glob(os.path.join(table_dir, "index", f"*.{field_id}.*"))
                  if os.path.isfile(p))


def damage(paths, mode, rng):
    """Damages the sidecar files `paths` in place."""
    originals = [pathlib.Path(p).read_bytes() for p in paths]
    for i, (p, data) in enumerate(zip(paths, originals)):
        path = pathlib.Path(p)
        if mode == "delete":
            path.unlink()
        elif mode == "truncate_half":
            path.write_bytes(data[: len(data) // 2])
        elif mode == "truncate_zero":
            path.write_bytes(b"")
        elif mode == "flip_middle":
            b = bytearray(data)
            for j in range(len(b) // 3, len(b) // 3 + 8):
                b[j] ^= 0x5A
            path.write_bytes(bytes(b))
        elif mode == "flip_last":
            b = bytearray(data)
            b[-1] ^= 0x01
            path.write_bytes(bytes(b))
        elif mode == "garbage":
            path.write_bytes(rng.bytes(len(data)))
        elif mode == "swap":  # a well-formed index of another data file
            path.write_bytes(originals[(i + 1) % len(paths)])
        else:
            raise ValueError(mode)


DAMAGE_FILES = 8
DAMAGE_ROWS = 3000


@pytest.mark.parametrize("mode", ["delete", "truncate_half", "truncate_zero", "flip_middle",
                                  "flip_last", "garbage", "swap"])
def test_damaged_sidecars_change_no_result(hs, tmp_path, mode):
    rng = np.random.default_rng(11)
    cat, t = make_table(hs, tmp_path, DAMAGE_FILES, DAMAGE_ROWS, seed=5,
                        deletes=["amount > 150", f"id = {3 * DAMAGE_ROWS + 100}"])
    hs.add_index(t, "key", "range")     # field id 2
    hs.add_index(t, "cat", "inverted")  # field id 3
    hs.add_index(t, "ts", "auto")       # field id 4
    oracle = X.Oracle(hs.metadata_location(t), SCHEMA.names)
    tdir = X.strip_file_scheme(hs.location(t))
    key_sc, cat_sc = sidecars(tdir, 2), sidecars(tdir, 3)
    assert len(key_sc) == DAMAGE_FILES and len(cat_sc) == DAMAGE_FILES, (key_sc, cat_sc)
    damaged_key = key_sc[:3]
    damage(damaged_key, mode, rng)
    damage(cat_sc[5:7], mode, rng)

    data = pa.concat_tables([file_batch(np.random.default_rng(0), i, 200) for i in range(4)])
    gen = X.ExprGen(rng, data, {"key": "int", "cat": "str", "ts": "ts", "amount": "float",
                                "id": "int"})
    exprs = [f"key = {V}", f"cat = '{NEEDLE}'", f"key IN ({V}, {W})", "cat >= 'c40'",
             f"key = {V} OR cat = 'c01'"] + [gen.expr(focus=["key", "cat"]) for _ in range(40)]
    failures = []
    for e in exprs:
        try:
            got, ist, _ = hs.scan(t, e, stats=True)
        except (X.HsFail, X.StreamFail) as ex:
            failures.append(f"{e}: {ex}")
            continue
        d = X.compare(got, oracle.query(e, order="id"), e, key="id")
        if d:
            failures.append(d)
        if e == f"key = {V}":
            # every planned file consults its key index: the 3 damaged ones are skipped
            assert ist["index_files_skipped"] == 3, (mode, ist)
            assert ist["files_indexed"] == DAMAGE_FILES - 3, (mode, ist)
        if e == f"cat = '{NEEDLE}'":
            assert ist["index_files_skipped"] == 2, (mode, ist)
    assert not failures, f"[{mode}] " + "\n".join(failures[:10])
    # a fresh handle sees the same (nothing cached from before the damage)
    t2 = hs.open(cat, "t")
    got, ist, _ = hs.scan(t2, f"key = {V}", stats=True)
    assert not X.compare(got, oracle.query(f"key = {V}", order="id"), "reopened", key="id")
    assert ist["index_files_skipped"] == 3
    hs.close(t2)
    hs.close(t)
    hs.close_catalog(cat)


@pytest.mark.parametrize("mode", ["delete", "garbage"])
def test_damaged_registry_changes_no_result(hs, tmp_path, mode):
    """The registry version named by hyperstream.index-registry missing or
    not JSON: queries still answer (by scanning)."""
    cat, t = make_table(hs, tmp_path, 4, 2000, seed=9)
    hs.add_index(t, "key", "inverted")
    props = hs.properties(t)
    reg = props.get("hyperstream.index-registry")
    assert reg, f"no hyperstream.index-registry property: {props}"
    tdir = X.strip_file_scheme(hs.location(t))
    path = X.strip_file_scheme(reg)
    if not os.path.isabs(path):
        path = os.path.join(tdir, path)
    assert os.path.isfile(path), f"registry {reg} -> {path} not found"
    if mode == "delete":
        os.remove(path)
    else:
        pathlib.Path(path).write_bytes(b"{\"not\": [a registry")
    oracle = X.Oracle(hs.metadata_location(t), SCHEMA.names)
    t2 = hs.open(cat, "t")
    for e in [f"key = {V}", "cat = 'c07'", "key < 1000000"]:
        got = hs.scan(t2, e)
        d = X.compare(got, oracle.query(e, order="id"), f"[{mode}] {e}", key="id")
        assert not d, d
    hs.close(t2)
    hs.close(t)
    hs.close_catalog(cat)


# ---------------------------------------------------------------------------
# CLI

def cli(*args, check=True):
    r = subprocess.run([str(X.CLI), "table", *args], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, f"hyperstream table {' '.join(args)}: {r.stderr}"
    return r


def test_cli_index_add_list_explain_drop(hs, tmp_path):
    require(X.CLI.exists(), f"{X.CLI} not built")
    cat, t = make_table(hs, tmp_path, 5, 4000, seed=13)
    tdir = X.strip_file_scheme(hs.location(t))
    hs.close(t)
    hs.close_catalog(cat)
    cli("index", "add", tdir, "key", "--kind", "range")
    cli("index", "add", tdir, "cat")  # default kind: auto
    listed = json.loads(cli("index", "list", tdir).stdout)
    kinds = {ix["column"]: ix for ix in listed}
    assert set(kinds) == {"key", "cat"}, listed
    assert kinds["key"]["kind"] == "range"
    assert all(ix["files_indexed"] == ix["files_live"] == 5 for ix in listed), listed
    ex = json.loads(cli("explain", tdir, "--filter", f"key = {V}").stdout)
    assert X.find_key(ex, "files_pruned_by_index") == 5 - 1   # V is in file 3 only
    assert X.find_key(ex, "index_files_skipped") == 0
    rows = [json.loads(line) for line in
            cli("scan", tdir, "--filter", f"key = {V} OR cat = '{NEEDLE}'").stdout.splitlines()]
    oracle = X.Oracle(X.latest_metadata(tdir), SCHEMA.names)
    want = oracle.query(f"key = {V} OR cat = '{NEEDLE}'", order="id")
    assert sorted(r["id"] for r in rows) == want.column("id").to_pylist()
    cli("index", "drop", tdir, "key")
    listed = json.loads(cli("index", "list", tdir).stdout)
    assert [ix["column"] for ix in listed] == ["cat"]
    r = cli("index", "drop", tdir, "key", check=False)
    assert r.returncode == 1 and "key" in r.stderr
    r = cli("index", "add", tdir, "nope", check=False)
    assert r.returncode == 1 and "nope" in r.stderr
    r = cli("index", "add", tdir, "key", "--kind", "bogus", check=False)
    assert r.returncode in (1, 2) and "bogus" in r.stderr

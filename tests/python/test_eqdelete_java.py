"""Equality delete files written by Java Iceberg (what Flink, Spark and the
Java API write), read by HyperStreamDB (issues 14 and 15).

Java Iceberg (the harness in tests/interop/java: `eqdelete` writes equality
delete files with FileWriterFactory.newEqualityDeleteWriter and commits a
RowDelta; `read` reads with IcebergGenerics, which applies them) is the
oracle: after every step our reads (the C scan through ctypes, the Python
package's to_arrow with and without filters, counts, SQL, index-assisted
lookups) must return exactly the rows Java returns.  Covered: unpartitioned
and partitioned (identity) tables, several equality columns, NULL keys
(NULL = NULL), float keys (NaN = NaN, -0.0 != 0.0 as Java compares them),
deletes applying only to strictly lower data sequence numbers (a row
re-inserted after the delete survives), equality deletes mixed with
position deletes, schema evolution of an equality column (int -> long,
rename), our SQL DELETE/UPDATE on such tables, delete sets larger than the
memory budget (eq_delete_mb: applied in chunks), and our compaction (it
applies and drops the equality deletes; Java and pyiceberg then read the
same rows).  Before equality deletes were read, every read here failed with
UnsupportedError.
"""
import json
import math
import pathlib
import shutil

import pytest
from conftest import require, require_module

import hyperstreamdb as hdb
from test_iceberg_java import HARNESS_JAR, JavaHarness, live_delete_files, ours  # noqa: F401

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "cat", "required": False, "type": "string"},
    {"id": 3, "name": "k", "required": False, "type": "int"},
    {"id": 4, "name": "v", "required": False, "type": "double"}]}
COLS = ("id", "cat", "k", "v")


@pytest.fixture(scope="module")
def java():
    require(shutil.which("java") is not None, "java not installed")
    require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
    h = JavaHarness(HARNESS_JAR)
    yield h
    h.close()


def rows(start, n):
    out = []
    for i in range(start, start + n):
        out.append({"id": i, "cat": ["a", "b", None][i % 3],
                    "k": None if i % 5 == 0 else i % 4,
                    "v": [i / 4, "NaN", -0.0][i % 3] if i % 7 else 0.0})
    return out


def canon_value(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return ("-0.0" if math.copysign(1, v) < 0 else "0.0") if v == 0 else v
    if v == "NaN":
        return "NaN"
    return v


def canon(dicts, cols=COLS):
    return sorted((tuple(canon_value(r[c]) for c in cols) for r in dicts),
                  key=lambda t: json.dumps(t))


class Tbl:
    """One Java-created table, written by Java and by us, read by both."""

    def __init__(self, java, tmp_path, name, spec=None, schema=SCHEMA):
        self.java, self.tmp, self.dir = java, tmp_path, tmp_path / name
        self.n = 0
        (tmp_path / f"{name}.schema.json").write_text(json.dumps(schema))
        args = ["create", str(self.dir), str(tmp_path / f"{name}.schema.json")]
        if spec:
            args += ["--partition", spec]
        java.call(*args, "--format-version", "2")

    def _jsonl(self, rs):
        self.n += 1
        p = self.tmp / f"{self.dir.name}-{self.n}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in rs))
        return str(p)

    def append(self, rs):
        self.java.call("append", str(self.dir), self._jsonl(rs))

    def eqdelete(self, cols, rs, full=False):
        extra = ["--full-rows"] if full else []
        self.java.call("eqdelete", str(self.dir), ",".join(cols), self._jsonl(rs), *extra)

    def posdelete(self, col, value):
        self.java.call("delete", str(self.dir), col, json.dumps(value))

    def meta(self):
        return self.java.call("current-metadata", str(self.dir))[0]

    def java_rows(self):
        return self.java.read(self.meta(), tmp=self.tmp)

    def ours(self):
        return hdb.Table.open(str(self.dir))


def check_same(tb, ours_c, what, cols=COLS):
    """Java's rows == the C scan's == the Python package's, returned."""
    want = canon(tb.java_rows(), cols)
    t = ours_c.open_metadata(tb.meta())
    try:
        mine_c = ours_c.scan(t).to_pylist()
    finally:
        ours_c.lib.hs_table_close(t)
    assert canon(mine_c, cols) == want, f"{what}: C scan vs Java"
    with tb.ours() as t:
        assert canon(t.to_arrow().to_pylist(), cols) == want, f"{what}: to_arrow vs Java"
        assert t.count() == len(want), what
    return want


def current_summary(tb):
    meta = json.loads(pathlib.Path(tb.meta().removeprefix("file://")).read_text())
    snap = next(x for x in meta["snapshots"] if x["snapshot-id"] == meta["current-snapshot-id"])
    return snap["summary"]


def check_summary_totals(tb, before):
    """The current snapshot's summary counts equal the manifests' (read with
    fastavro): total-equality-deletes and total-delete-files are what the
    live delete files hold, and the removed-* counts are the files that went
    since `before` (the live delete files then).  Returns the live files."""
    live = live_delete_files(tb.meta())
    s = current_summary(tb)
    eq = [d for d in live if d["content"] == 2]
    assert int(s["total-equality-deletes"]) == sum(d["record_count"] for d in eq), s
    assert int(s["total-delete-files"]) == len(live), s
    assert int(s["total-position-deletes"]) == sum(d["record_count"] for d in live
                                                   if d["content"] == 1), s
    if before is not None:
        now = {d["file_path"] for d in live}
        gone = [d for d in before if d["file_path"] not in now]
        gone_eq = [d for d in gone if d["content"] == 2]
        assert int(s.get("removed-delete-files", 0)) == len(gone), s
        assert int(s.get("removed-equality-delete-files", 0)) == len(gone_eq), s
        assert int(s.get("removed-equality-deletes", 0)) == sum(d["record_count"]
                                                                for d in gone_eq), s
    return live


def eq_kinds(tb):
    return sorted(d["content"] for d in live_delete_files(tb.meta()))


def test_unpartitioned_mixed(java, ours, tmp_path):
    tb = Tbl(java, tmp_path, "u")
    tb.append(rows(0, 40))
    tb.append(rows(40, 40))
    tb.eqdelete(["id"], [{"id": 1}, {"id": 5}, {"id": 7}, {"id": 1000}])
    tb.append([{"id": 5, "cat": "z", "k": 1, "v": 1.5}])   # re-inserted: survives
    # two columns, NULL = NULL: (cat NULL, k NULL) and (b, 1)
    tb.eqdelete(["cat", "k"], [{"id": -1, "cat": None, "k": None},
                               {"id": -1, "cat": "b", "k": 1}])
    tb.posdelete("id", 22)                                  # a position delete too
    tb.eqdelete(["v"], [{"id": -1, "v": -0.0}])             # -0.0, not 0.0
    want = check_same(tb, ours, "mixed deletes")
    ids = sorted(r[0] for r in want)
    assert 1 not in ids and 7 not in ids and 22 not in ids and 5 in ids
    assert all(not (r[1] is None and r[2] is None) for r in want)
    assert any(r[3] == "0.0" for r in want) and not any(r[3] == "-0.0" for r in want)
    assert eq_kinds(tb) == [1, 2, 2, 2]

    # filters, SQL and index-assisted reads see the same rows
    with tb.ours() as t:
        for flt, keep in [("id < 30", lambda r: r[0] < 30),
                          ("cat = 'b'", lambda r: r[1] == "b"),
                          ("k IS NULL", lambda r: r[2] is None),
                          ("id IN (1, 2, 5, 7, 8)", lambda r: r[0] in (1, 2, 5, 7, 8))]:
            got = canon(t.to_arrow(filter=flt).to_pylist())
            assert got == [r for r in want if keep(r)], flt
        res = t.execute_sql("SELECT count(*) AS n, sum(id) AS s FROM t").to_pylist()
        assert res == [{"n": len(want), "s": sum(r[0] for r in want)}]
        t.add_index("id")
        t.add_index("cat")
    with tb.ours() as t:
        assert t.to_arrow(filter="id = 7").num_rows == 0
        assert t.to_arrow(filter="id = 1").num_rows == 0
        assert canon(t.to_arrow(filter="id = 5").to_pylist()) == [r for r in want if r[0] == 5]
        got = canon(t.to_arrow(filter="cat = 'b'").to_pylist())
        assert got == [r for r in want if r[1] == "b"]
        assert t.count(filter="id IN (1, 7, 22, 8, 9)") == sum(r[0] in (8, 9) for r in want) == 1

    # our DML on the table keeps the equality deletes working
    with tb.ours() as t:
        t.execute_sql("DELETE FROM t WHERE id = 2")
        t.execute_sql("UPDATE t SET k = 99 WHERE id = 3")
    want2 = check_same(tb, ours, "after our DELETE/UPDATE")
    exp = [(r[0], r[1], 99 if r[0] == 3 else r[2], r[3]) for r in want if r[0] != 2]
    assert want2 == canon([dict(zip(COLS, r)) for r in exp])

    # schema evolution of an equality column: int -> long, then a rename
    with tb.ours() as t:
        t.update_column("k", "long")
        t.rename_column("k", "kk")
    cols = ("id", "cat", "kk", "v")
    want3 = check_same(tb, ours, "after promoting and renaming k", cols)
    assert want3 == want2

    # our compaction applies and drops them; Java and pyiceberg agree
    with tb.ours() as t:
        res = t.compact(min_input_files=1, delete_file_threshold=1)
        assert res, res
    want4 = check_same(tb, ours, "after compaction", cols)
    assert want4 == want3
    assert 2 not in eq_kinds(tb), "compaction left equality deletes"
    from pyiceberg.table import StaticTable
    py = StaticTable.from_metadata(tb.meta()).scan().to_arrow().to_pylist()
    assert canon(py, cols) == want4


def test_partitioned(java, ours, tmp_path):
    tb = Tbl(java, tmp_path, "p", spec="cat")
    tb.append(rows(0, 60))
    # k = 1 deleted in partition a only; k NULL in partition b only; and in
    # the NULL partition the key (id) of one row
    tb.eqdelete(["k"], [{"id": -1, "cat": "a", "k": 1}, {"id": -1, "cat": "b", "k": None}])
    tb.eqdelete(["id"], [{"id": 2, "cat": None}, {"id": 4, "cat": None}])   # 4 is in "b"
    tb.append(rows(60, 30))                              # newer: untouched
    tb.eqdelete(["id", "k"], [{"id": 61, "cat": "b", "k": 1}], full=True)
    want = check_same(tb, ours, "partitioned")
    ids = {r[0] for r in want}
    assert 2 not in ids and 4 in ids and 61 not in ids
    assert any(r[1] == "b" and r[2] == 1 for r in want)
    assert not any(r[1] == "a" and r[2] == 1 and r[0] < 60 for r in want)
    assert any(r[1] == "a" and r[2] == 1 and r[0] >= 60 for r in want)
    with tb.ours() as t:
        got = canon(t.to_arrow(filter="cat = 'a'").to_pylist())
        assert got == [r for r in want if r[1] == "a"]
        t.compact(min_input_files=1, delete_file_threshold=1)
    assert check_same(tb, ours, "partitioned, compacted") == want
    assert 2 not in eq_kinds(tb)


def test_delete_set_past_memory_budget(java, ours, tmp_path):
    """A delete set larger than eq_delete_mb is applied in chunks."""
    tb = Tbl(java, tmp_path, "big")
    tb.append([{"id": i, "cat": f"c{i % 7}", "k": i % 11, "v": 1.0} for i in range(60000)])
    tb.eqdelete(["id", "cat"], [{"id": i, "cat": f"c{i % 7}"} for i in range(0, 60000, 2)]
                + [{"id": i, "cat": "nope"} for i in range(1, 60000, 2)])
    old = hdb.get_config("eq_delete_mb")
    hdb.set_config("eq_delete_mb", 1)
    try:
        want = check_same(tb, ours, "chunked")
    finally:
        hdb.set_config("eq_delete_mb", old)
    assert sorted(r[0] for r in want) == list(range(1, 60000, 2))
    assert check_same(tb, ours, "cached") == want


def test_vector_search_and_index(java, tmp_path):
    """Our table (vector column, HNSW and scalar indexes), equality deletes
    committed by Java: exact and indexed vector search never return a
    deleted row; exact search equals brute force over Java's live rows."""
    np = require_module("numpy")
    pa = require_module("pyarrow")
    rng = np.random.default_rng(5)
    n, dim = 600, 8
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    path = tmp_path / "vec"
    t = hdb.Table.create(str(path), pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                ("grp", pa.string()),
                                                ("emb", pa.list_(pa.float32(), dim))]))
    for part in range(3):
        lo, hi = part * 200, (part + 1) * 200
        t.write_arrow(pa.table({"id": pa.array(range(lo, hi), pa.int64()),
                                "grp": pa.array([f"g{i % 4}" for i in range(lo, hi)]),
                                "emb": pa.FixedSizeListArray.from_arrays(
                                    pa.array(vecs[lo:hi].ravel()), dim)}))
        t.commit()
    t.add_index("emb", "hnsw")
    t.add_index("id")
    t.close()
    q = rng.standard_normal(dim).astype(np.float32)
    near = np.argsort(np.linalg.norm(vecs - q, axis=1), kind="stable")
    gone = [int(i) for i in near[:15:2]] + [int(i) for i in near[1:40:7]]
    p = tmp_path / "gone.jsonl"
    p.write_text("".join(json.dumps({"id": i}) + "\n" for i in gone))
    java.call("eqdelete", str(path), "id", str(p))
    p.write_text(json.dumps({"id": -1, "grp": "g3"}) + "\n")
    java.call("eqdelete", str(path), "grp", str(p))
    meta = java.call("current-metadata", str(path))[0]
    live = sorted(r["id"] for r in java.read(meta, columns=["id"], tmp=tmp_path))
    assert len(live) == n - len(set(gone) | {i for i in range(n) if i % 4 == 3})
    with hdb.Table.open(str(path)) as t:
        assert sorted(t.to_arrow(columns=["id"])["id"].to_pylist()) == live
        mask = np.zeros(n, bool)
        mask[live] = True
        order = [int(i) for i in near if mask[i]]
        got = t.search("emb", q, k=10)["id"].tolist()   # HNSW
        assert not set(got) - set(live), "a deleted row surfaced from the vector index"
        assert len(got) == 10 and len(set(got) & set(order[:10])) >= 8, (got, order[:10])
        got_f = t.search("emb", q, k=5, filter="id < 300")["id"].tolist()
        assert not set(got_f) - set(live)
        assert all(i < 300 for i in got_f)
        for i in gone[:5]:
            assert t.count(filter=f"id = {i}") == 0   # scalar index lookup
        assert t.count(filter=f"id IN ({', '.join(map(str, order[:5]))})") == 5
        t.drop_index("emb")
        assert t.search("emb", q, k=10)["id"].tolist() == order[:10]   # exact


def test_spec_evolution_global_and_partition_scoped(java, ours, tmp_path):
    """A table partitioned by cat, then (our update_spec) unpartitioned:
    an equality delete written under the old spec applies only to its
    partition's older files; one written under the unpartitioned spec is
    global (every older file, of either spec)."""
    tb = Tbl(java, tmp_path, "ev", spec="cat")
    tb.append(rows(0, 30))
    tb.eqdelete(["k"], [{"id": -1, "cat": "a", "k": 2}])      # partition a only
    with tb.ours() as t:
        t.update_spec([])
    tb.append(rows(30, 30))                                    # unpartitioned files
    tb.eqdelete(["k"], [{"id": -1, "k": 3}])                   # global
    tb.append(rows(60, 30))                                    # newer: untouched
    want = check_same(tb, ours, "spec evolution")
    assert not any(r[2] == 3 and r[0] < 60 for r in want)
    assert any(r[2] == 3 and r[0] >= 60 for r in want)
    assert not any(r[1] == "a" and r[2] == 2 and r[0] < 30 for r in want)
    assert any(r[1] != "a" and r[2] == 2 and r[0] < 30 for r in want)
    assert any(r[2] == 2 and 30 <= r[0] < 60 for r in want)
    with tb.ours() as t:
        t.compact(min_input_files=1, delete_file_threshold=1)
    assert check_same(tb, ours, "spec evolution, compacted") == want


def test_many_small_delete_files_upsert_stream(java, ours, tmp_path):
    """What a Flink upsert stream leaves: many small equality delete files
    on the key, each followed by the re-inserted new version of the rows it
    deletes (partitioned, so the files of a partition share their list of
    deletes: one union set per list)."""
    tb = Tbl(java, tmp_path, "ups", spec="cat")
    tb.append(rows(0, 90))
    version = {}
    for step in range(12):
        keys = [(step * 7 + j * 5) % 90 for j in range(4)]
        cur = {i: (["a", "b", None][i % 3]) for i in keys}
        tb.eqdelete(["id"], [{"id": i, "cat": c} for i, c in cur.items()])
        tb.append([{"id": i, "cat": c, "k": 100 + step, "v": float(step)} for i, c in cur.items()])
        for i in keys:
            version[i] = step
    want = check_same(tb, ours, "upsert stream")
    assert sorted(r[0] for r in want) == list(range(90))   # one live version per key
    for r in want:
        if r[0] in version:
            assert r[2] == 100 + version[r[0]], r
    with tb.ours() as t:
        assert t.count(filter="k >= 100") == len(version)
        t.compact(min_input_files=1, delete_file_threshold=1)
    assert check_same(tb, ours, "upsert stream, compacted") == want
    assert 2 not in eq_kinds(tb)


def test_pruned_by_column_bounds(java, ours, tmp_path):
    """Planning leaves out an equality delete file for a data file when the
    bounds (or null counts) of one of its equality columns cannot meet the
    data file's: three files of ids 0-99, 100-199, 200-299 (k in 0..3 or
    NULL), and five delete files written by Java.  Which pairs apply is
    worked out here from the rows the test wrote; Java is the oracle for the
    rows read."""
    tb = Tbl(java, tmp_path, "prune")
    for k in range(3):
        tb.append(rows(k * 100, 100))
    deletes = [
        (["id"], [{"id": 5}, {"id": 17}]),          # [5, 17]: the first file only
        (["id"], [{"id": 150}, {"id": 250}]),       # [150, 250]: the second and third
        (["k"], [{"k": None}]),                      # NULL only: every file has NULL k
        (["cat", "id"], [{"cat": "a", "id": 999}]),  # id 999: none
        (["k"], [{"k": 7}]),                         # 7 > every k, no NULL: none
    ]
    for cols, rs in deletes:
        tb.eqdelete(cols, rs)
    applied = 0
    ranges = [(0, 99), (100, 199), (200, 299)]
    for cols, rs in deletes:
        for lo, hi in ranges:
            ids = [r["id"] for r in rs if "id" in r]
            if "id" in cols:
                hit = any(lo <= i <= hi for i in ids)
            else:   # k: NULL matches NULL (every file has some); 7 matches nothing
                hit = any(r["k"] is None for r in rs)
            applied += hit
    checked = check_same(tb, ours, "pruned eq deletes")
    assert sorted(r[0] for r in checked) == \
        [i for i in range(300) if i % 5 != 0 and i not in (5, 17, 150, 250)]
    with tb.ours() as t:
        plan = t.explain()["planning"]
        assert plan["eq_delete_pairs_applied"] == applied == 6
        assert plan["eq_delete_pairs_pruned"] == 5 * 3 - applied
        per_file = sorted(len(f["deletes"]) for f in json.loads(t._handle().files_json()))
        assert per_file == [2, 2, 2]
        # a filter that needs the second file only: still the same rows
        got = canon(t.to_arrow(filter="id BETWEEN 140 AND 160").to_pylist())
        assert got == [r for r in checked if 140 <= r[0] <= 160]


def test_compaction_drops_unusable_eq_deletes(java, ours, tmp_path):
    """Compaction drops the equality delete files that can no longer apply
    to any live data file: those that applied only to files it rewrote
    (their rows moved to newer sequence numbers), and those whose every pair
    was left out by column bounds (before, an equality delete that matched
    no file stayed referenced for good).  The ones that still apply to a
    file it did not rewrite stay.  Java (IcebergGenerics) and a brute-force
    oracle over the rows the test wrote agree after each step (pyiceberg
    reads no equality deletes, and two stay here);
    which delete files remain is read from the manifests with fastavro and
    their rows with pyarrow."""
    pq = require_module("pyarrow.parquet")
    tb = Tbl(java, tmp_path, "dropeq")
    written = []
    for k in range(3):
        tb.append(rows(k * 100, 100))
        written += rows(k * 100, 100)
    deletes = [
        (["id"], [{"id": 5}, {"id": 17}]),          # the first file only
        (["id"], [{"id": 150}, {"id": 250}]),       # the second and third
        (["k"], [{"k": None}]),                      # every file (NULL k)
        (["cat", "id"], [{"cat": "a", "id": 999}]),  # bounds: no file
        (["k"], [{"k": 7}]),                         # bounds: no file
    ]
    for cols, rs in deletes:
        tb.eqdelete(cols, rs)

    def oracle():
        # the k = NULL delete applies to the files written before it only
        gone = {5, 17, 150, 250}
        return canon([r for r in written
                      if r["id"] not in gone and (r["k"] is not None or r["id"] >= 300)])

    def remaining():
        """The live equality delete files, each as its sorted rows."""
        out = []
        for d in live_delete_files(tb.meta()):
            assert d["content"] == 2, d
            t = pq.read_table(d["file_path"].removeprefix("file://"))
            out.append(sorted(json.dumps(r, sort_keys=True) for r in t.to_pylist()))
        return sorted(out)

    def as_rows(rs):
        return sorted(json.dumps(r, sort_keys=True) for r in rs)

    assert len(remaining()) == 5
    assert check_same(tb, ours, "before compaction") == oracle()
    live = check_summary_totals(tb, None)   # Java's own commit
    # rewrite the first file only: delete 1 applied only to it, deletes 4
    # and 5 to no file; 2 and 3 still apply to the files left as they are
    with tb.ours() as t:
        res = t.compact(filter="id < 100", min_input_files=1, delete_file_threshold=1)
        assert res["rewritten_data_files"] == 1, res
        assert res["removed_delete_files"] == 3, res
    assert remaining() == sorted([as_rows(deletes[1][1]), as_rows(deletes[2][1])])
    live = check_summary_totals(tb, live)
    assert check_same(tb, ours, "after the first compaction") == oracle()
    # a new file, then a delete whose bounds meet no file: a compaction with
    # nothing to rewrite still drops that delete file, and only it
    tb.append(rows(300, 100))
    written += rows(300, 100)
    tb.eqdelete(["id"], [{"id": 5000}])
    assert len(remaining()) == 3
    live = check_summary_totals(tb, None)
    with tb.ours() as t:
        res = t.compact(min_input_files=50)
        assert res["rewritten_data_files"] == 0 and res["removed_delete_files"] == 1, res
        assert res["snapshot_id"] is not None, res
    assert remaining() == sorted([as_rows(deletes[1][1]), as_rows(deletes[2][1])])
    check_summary_totals(tb, live)
    assert check_same(tb, ours, "after the second compaction") == oracle()
    # nothing left to drop: no commit
    with tb.ours() as t:
        res = t.compact(min_input_files=50)
        assert res["snapshot_id"] is None, res

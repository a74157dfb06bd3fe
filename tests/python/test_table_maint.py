"""Table maintenance from Python: compact, expire_snapshots,
remove_orphan_files, rewrite_manifests, cherrypick_snapshot.

Oracles, none of them our own output:
  * rows: the source data filtered by DuckDB (the expected multiset), and
    pyiceberg reading the table (StaticTable.from_metadata) after each
    operation;
  * files: the set of files each metadata version reaches, computed here
    with fastavro from the metadata JSON, manifest lists and manifests (the
    files expire deletes must be exactly reach(before) - reach(after), and
    everything reach(after) names must still exist);
  * Java Iceberg (scripts/java-harness.sh), when built, reads the compacted
    and expired table equal to the expected rows.
"""
import datetime as dt
import io
import json
import os
import pathlib
import shutil
import time

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from conftest import REPO, as_path, local_only, require, require_module

import hyperstreamdb as hdb
from helpers import registry as R

fastavro = require_module("fastavro")
pyiceberg_table = require_module("pyiceberg.table")
StaticTable = pyiceberg_table.StaticTable


SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("v", pa.float64())])


def make_data(start, n):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "cat": pa.array([f"c{i % 5}" for i in ids], pa.string()),
        "v": pa.array((ids % 97).astype(np.float64)),
    }, schema=SCHEMA)


def expected(batches, where="TRUE"):
    """Rows of the source batches matching a SQL condition, via DuckDB, as a
    sorted list of tuples."""
    src = pa.concat_tables(batches)  # noqa: F841 (DuckDB reads it by name)
    rows = duckdb.sql(f"SELECT id, cat, v FROM src WHERE {where}").fetchall()
    return sorted(rows)


def rows_of(tbl):
    return sorted(zip(tbl.column("id").to_pylist(), tbl.column("cat").to_pylist(),
                      tbl.column("v").to_pylist()))


def pyiceberg_rows(t, snapshot_id=None):
    st = StaticTable.from_metadata(t.metadata_location)
    scan = st.scan(snapshot_id=snapshot_id) if snapshot_id else st.scan()
    return rows_of(scan.to_arrow())


def _local(p):
    return p[len("file://"):] if p.startswith("file://") else p


def _exists(p):
    """A local file or an S3 object (the storage matrix), by pyarrow's S3 client."""
    return as_path(p).exists()


def _avro(p):
    """A fastavro reader over a local file or an S3 object."""
    return fastavro.reader(io.BytesIO(as_path(p).read_bytes()))


def reach(metadata_path):
    """{path: kind} of every file the snapshots of this metadata version
    reach, read with fastavro (live entries only: status != DELETED)."""
    meta = json.loads(as_path(metadata_path).read_text())
    out, seen = {}, set()
    for s in meta.get("snapshots", []):
        ml = _local(s["manifest-list"])
        out[ml] = "manifest-list"
        manifests = [r["manifest_path"] for r in _avro(ml)]
        for mp in manifests:
            mp = _local(mp)
            out[mp] = "manifest"
            if mp in seen:
                continue
            seen.add(mp)
            for e in _avro(mp):
                if e["status"] == 2:
                    continue
                df = e["data_file"]
                kind = {0: "data", 1: "deletes", 2: "deletes"}[df["content"]]
                out[_local(df["file_path"])] = kind
    return out


def registry_sidecars(t):
    """{data file: [sidecar paths]} of the current index registry."""
    rel = t.properties.get("hyperstream.index-registry")
    if not rel:
        return {}
    reg = R.read(t.location, rel)
    out = {}
    for e in reg["entries"]:
        out.setdefault(e["data-file"], []).append(str(as_path(t.location) / e["index-file"]))
    return out


@pytest.fixture
def table(table_dir):
    """A v2 table of 6 appends (600 rows) with an index on cat, then a
    delete of id % 7 = 3 (position delete files)."""
    t = hdb.Table.create(table_dir / "t", SCHEMA)
    t.add_index("cat", "inverted")
    batches = []
    for k in range(6):
        b = make_data(k * 100, 100)
        batches.append(b)
        t.write_arrow(b)
        t.commit()
    assert t.delete("id % 7 = 3") == len(expected(batches, "id % 7 = 3"))
    return t, batches


def test_compact_rows_indexes_and_pyiceberg(table):
    t, batches = table
    want = expected(batches, "id % 7 <> 3")
    before_snap = t.current_snapshot_id
    assert pyiceberg_rows(t) == want
    plan = t.compact(dry_run=True)
    assert plan["rewritten_data_files"] == 6 and plan["snapshot_id"] is None
    assert t.current_snapshot_id == before_snap
    seen = []
    r = t.compact(progress=lambda what, done, total: seen.append((done, total)))
    assert r["rewritten_data_files"] == 6 and r["added_data_files"] == 1
    assert r["removed_delete_files"] == 6
    assert seen and seen[-1][0] == seen[-1][1] == r["rows"]
    assert t.snapshot().operation == "replace"
    # the rows: ours, pyiceberg's, DuckDB's expectation
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want
    assert pyiceberg_rows(t, before_snap) == want
    # one data file, no deletes, every declared index built for it
    files = t.files()
    assert len(files) == 1 and not files[0].get("deletes")
    side = registry_sidecars(t)
    assert list(side) == [files[0]["file_path"]] and all(_exists(p) for p in side[files[0]["file_path"]])
    # the filtered query uses the rebuilt index and returns DuckDB's rows
    ex = t.explain(filter="cat = 'c2'")
    assert ex["totals"]["files_indexed"] == 1 and ex["totals"]["index_files_skipped"] == 0
    assert rows_of(t.to_arrow(filter="cat = 'c2'")) == expected(batches,
                                                                "id % 7 <> 3 AND cat = 'c2'")


def test_compact_concurrent_append_survives(tmp_path, table):
    t, batches = table
    other = hdb.Table(t.path)
    extra = make_data(10_000, 25)
    state = {"done": False}

    def progress(what, done, total):
        if not state["done"]:
            state["done"] = True
            other.write_arrow(extra)
            other.commit()

    t.compact(progress=progress)
    assert state["done"]
    want = expected(batches + [extra], "id % 7 <> 3 OR id >= 10000")
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want
    other.close()


def test_compact_concurrent_delete_carried_over(table):
    """A delete committed while the compaction runs is carried over to the
    new files in the compaction's snapshot (test_table_maint_carry.py has
    the thorough forms)."""
    t, batches = table
    other = hdb.Table(t.path)
    before = t.current_snapshot_id

    def progress(what, done, total):
        if other.current_snapshot_id == before:
            other.delete("id = 1")

    r = t.compact(progress=progress)
    assert r["carried_deletes"] == 1
    t.refresh()
    want = expected(batches, "id % 7 <> 3 AND id <> 1")
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want
    other.close()


def test_expire_deletes_exactly_the_unreachable(table):
    t, batches = table
    t.compact()
    t.rewrite_manifests()
    want = expected(batches, "id % 7 <> 3")
    meta_before = t.metadata_location
    reach_before = reach(meta_before)
    old_sidecars = [p for ps in registry_sidecars_of_versions(t).values() for p in ps]
    registries = {str(f): R.read(t.location, str(f)) for f in R.roots(t.location)}
    current_reg = str(as_path(t.location) / t.properties["hyperstream.index-registry"])
    dry = t.expire_snapshots(retain_last=1, dry_run=True)
    assert t.metadata_location == meta_before
    r = t.expire_snapshots(retain_last=1)
    assert sorted(r["expired_snapshot_ids"]) == sorted(dry["expired_snapshot_ids"])
    assert len(t.snapshots()) == 1
    reach_after = reach(t.metadata_location)
    deleted = {_local(f["path"]): f["kind"] for f in r["deleted_files"]}
    # the Iceberg files deleted are exactly those no remaining snapshot reaches
    iceberg_deleted = {p for p, k in deleted.items() if k not in ("index", "index-registry")}
    assert iceberg_deleted == set(reach_before) - set(reach_after)
    assert {_local(f["path"]) for f in dry["deleted_files"]} == set(deleted)
    for p in deleted:
        assert not _exists(p)
    for p in reach_after:
        assert _exists(p)
    # the 6 old data files and their 6 sidecars are gone; the live sidecar stays
    assert sum(k == "data" for k in deleted.values()) == 6
    assert sum(k == "index" for k in deleted.values()) == 6
    for p in old_sidecars:
        live = any(p in ps for ps in registry_sidecars(t).values())
        assert _exists(p) == live
    # registry versions: deleted exactly when not current, with entries, none
    # of which names a data file a remaining snapshot reaches
    gone_roots = {f for f, reg in registries.items()
                  if f != current_reg and reg["entries"]
                  and not any(_local(e["data-file"]) in reach_after for e in reg["entries"])}
    # ... with their segments that no root that stays lists
    staying = {s for f, reg in registries.items() if f not in gone_roots for s in reg["segments"]}
    want_gone = gone_roots | {s for f in gone_roots for s in registries[f]["segments"]
                              if s not in staying}
    assert want_gone and {p for p, k in deleted.items() if k == "index-registry"} == want_gone
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want
    ex = t.explain(filter="cat = 'c4'")
    assert ex["totals"]["files_indexed"] == 1 and ex["totals"]["index_files_skipped"] == 0
    # nothing under the table is an orphan now (every file is reachable)
    assert t.remove_orphan_files(older_than=int(time.time() * 1000) + 5000,
                                 dry_run=True)["deleted_files"] == []


def registry_sidecars_of_versions(t):
    """{data file: [sidecars]} over every registry version on disk."""
    out = {}
    for f in R.roots(t.location):
        for e in R.read(t.location, str(f))["entries"]:
            out.setdefault(e["data-file"], []).append(str(pathlib.Path(t.location) /
                                                          e["index-file"]))
    return out


def root_when_current(metadata_path, snapshot_id):
    """The registry root (absolute path) the table had while snapshot_id was
    current: the property of the newest metadata file of the log (read here
    from the JSON files) whose current snapshot is snapshot_id."""
    meta = json.loads(as_path(metadata_path).read_text())
    files = [e["metadata-file"] for e in meta.get("metadata-log", [])] + [metadata_path]
    found = None
    for f in files:
        m = json.loads(as_path(f).read_text())
        if m.get("current-snapshot-id") == snapshot_id:
            rel = m.get("properties", {}).get("hyperstream.index-registry")
            found = str(as_path(m["location"]) / rel) if rel else None
    return found


def test_expire_keeps_registry_versions_kept_snapshots_need(table_dir):
    """Registry versions go with the snapshots that needed them: expiry
    deletes a registry version only when no kept snapshot's data file is in
    it (and it is not current), so time travel to a kept snapshot still
    finds that snapshot's indexes after a delete and a compaction dropped
    its files from the current registry.

    S1 append F1, S2 append F2, S3 delete all of F1 (F1 removed), S4 append
    F3 (tagged), S5 compaction (one file).  Expiring all but the current
    and the tag: F1's registry version goes (no kept snapshot reaches F1),
    those naming F2/F3 stay, and a scan of S4 uses the index on both of its
    files with DuckDB's rows.  With the tag removed and S4 expired too, the
    rest go."""
    t = hdb.Table.create(table_dir / "t", SCHEMA)
    t.add_index("cat", "inverted")
    loc = as_path(t.location)
    batches, snaps, roots = [], [], []

    def note():
        snaps.append(t.current_snapshot_id)
        roots.append(str(loc / t.properties["hyperstream.index-registry"]))

    for k in range(2):
        batches.append(make_data(k * 100, 100))
        t.write_arrow(batches[-1])
        t.commit()
        note()
    assert t.delete("id < 100") == 100
    note()
    assert len(t.files()) == 1                     # F1 removed, not position-deleted
    batches.append(make_data(200, 100))
    t.write_arrow(batches[-1])
    t.commit()
    note()
    t.create_tag("keep", snaps[3])
    r = t.compact()
    assert r["rewritten_data_files"] == 2
    note()
    # each commit wrote its own registry version; check the premise
    assert len(set(roots)) == 5
    for i in range(4):
        assert root_when_current(t.metadata_location, snaps[i]) == roots[i]
    want_s4 = expected(batches[1:], "cat = 'c3'")
    ex = t.explain(filter="cat = 'c3'", snapshot_id=snaps[3])
    assert ex["totals"]["files_indexed"] == 2
    versions = {f: R.read(t.location, f) for f in map(str, R.roots(t.location))}

    def check(r, kept_ids):
        reach_after = reach(t.metadata_location)
        deleted = {_local(f["path"]) for f in r["deleted_files"] if f["kind"] == "index-registry"}
        current = str(loc / t.properties["hyperstream.index-registry"])
        # the oracle: a version goes when not current, it has entries, and
        # none of them names a data file a kept snapshot reaches
        gone = {f for f, v in versions.items()
                if f != current and v["entries"]
                and not any(_local(e["data-file"]) in reach_after for e in v["entries"])}
        staying = {sg for f, v in versions.items() if f not in gone for sg in v["segments"]}
        want = gone | {sg for f in gone for sg in versions[f]["segments"] if sg not in staying}
        assert deleted == want
        for f in deleted:
            assert not _exists(f)
        # what every kept snapshot's time travel needs is on disk
        for sid in kept_ids:
            root = root_when_current(t.metadata_location, sid)
            if root:
                assert _exists(root)
                for sg in versions[root]["segments"]:
                    assert _exists(sg)
        return gone

    r = t.expire_snapshots(retain_last=1)
    assert sorted(r["expired_snapshot_ids"]) == sorted(snaps[:3])
    gone = check(r, [snaps[3], snaps[4]])
    assert gone == {roots[0]}                      # F1's version only
    # time travel to the kept S4: its indexes, DuckDB's rows, pyiceberg's
    t.refresh()
    ex = t.explain(filter="cat = 'c3'", snapshot_id=snaps[3])
    assert ex["totals"]["files_indexed"] == 2 and ex["totals"]["index_files_skipped"] == 0
    assert rows_of(t.to_arrow(filter="cat = 'c3'", snapshot_id=snaps[3])) == want_s4
    assert pyiceberg_rows(t, snaps[3]) == expected(batches[1:])
    # the tag removed, S4 expires: every old version with entries goes
    t.remove_tag("keep")
    versions = {f: v for f, v in versions.items() if _exists(f)}
    r = t.expire_snapshots(retain_last=1)
    assert r["expired_snapshot_ids"] == [snaps[3]]
    gone = check(r, [snaps[4]])
    assert gone == set(roots[1:4])
    with pytest.raises(hdb.NotFoundError):
        t.to_arrow(snapshot_id=snaps[3])
    ex = t.explain(filter="cat = 'c3'")
    assert ex["totals"]["files_indexed"] == 1
    assert rows_of(t.to_arrow(filter="cat = 'c3'")) == expected(batches[1:], "cat = 'c3'")
    assert pyiceberg_rows(t) == expected(batches[1:])


def test_expire_keeps_tags_branches_and_recent(tmp_path):
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    batches, snaps = [], []
    for k in range(5):
        b = make_data(k * 10, 10)
        batches.append(b)
        t.write_arrow(b)
        snaps.append(t.commit())
    t.create_tag("v1", snaps[1])
    # older_than an hour ago: all are recent, nothing goes
    assert t.expire_snapshots(older_than=dt.timedelta(hours=1))["expired_snapshot_ids"] == []
    r = t.expire_snapshots(older_than=dt.datetime.now() + dt.timedelta(seconds=5))
    # default retain_last 1 (history.expire.min-snapshots-to-keep) + the tag
    assert sorted(r["expired_snapshot_ids"]) == sorted([snaps[0], snaps[2], snaps[3]])
    assert {s.snapshot_id for s in t.snapshots()} == {snaps[1], snaps[4]}
    assert pyiceberg_rows(t, snaps[1]) == expected(batches[:2])
    assert pyiceberg_rows(t) == expected(batches)
    with pytest.raises(hdb.InvalidArgumentError, match="referenced by a branch or tag"):
        t.expire_snapshots(snapshot_ids=[snaps[1]])


def test_remove_orphan_files_window(table):
    t, batches = table
    local_only("file ages set with os.utime (S3: tests/python/test_s3_orphans.py)")
    loc = pathlib.Path(t.location)
    old = time.time() - 4 * 86400
    strays = [loc / "data" / "stray-old.parquet", loc / "metadata" / "stray-old-m0.avro",
              loc / "index" / "stray.3.inverted", loc / "index" / "registry" / "stray.json"]
    for p in strays:
        p.write_bytes(b"junk")
        os.utime(p, (old, old))
    recent = loc / "data" / "stray-new.parquet"
    recent.write_bytes(b"junk")
    all_before = {str(p) for p in loc.rglob("*") if p.is_file()}
    r = t.remove_orphan_files(dry_run=True)
    assert {f["path"] for f in r["deleted_files"]} == {str(p) for p in strays}
    assert {str(p) for p in loc.rglob("*") if p.is_file()} == all_before
    r = t.remove_orphan_files()
    assert not any(p.exists() for p in strays) and recent.exists()
    want = expected(batches, "id % 7 <> 3")
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want
    # every snapshot still reads in pyiceberg (nothing reachable was deleted)
    for s in t.snapshots():
        pyiceberg_rows(t, s.snapshot_id)


def test_rewrite_manifests_and_cherrypick(table_dir):
    t = hdb.Table.create(table_dir / "t", SCHEMA, partition_by="cat")
    batches = []
    for k in range(6):
        b = make_data(k * 10, 10)
        batches.append(b)
        t.write_arrow(b)
        t.commit()
    r = t.rewrite_manifests()
    assert r["rewritten_manifests"] == 6 and r["added_manifests"] == 1
    assert t.snapshot().operation == "replace"
    assert pyiceberg_rows(t) == expected(batches)
    # cherrypick an append left aside by a rollback
    snaps = [s.snapshot_id for s in t.snapshots()]
    extra = make_data(1000, 5)
    t.write_arrow(extra)
    picked = t.commit()
    t.rollback_to_snapshot(snaps[-1])
    more = make_data(2000, 5)
    t.write_arrow(more)
    t.commit()
    t.cherrypick_snapshot(picked)
    assert t.snapshot().summary.get("source-snapshot-id") == str(picked)
    want = expected(batches + [extra, more])
    assert rows_of(t.to_arrow()) == want
    assert pyiceberg_rows(t) == want


def test_compact_partitioned_sorted(table_dir):
    t = hdb.Table.create(table_dir / "t", SCHEMA, partition_by="cat",
                         sort_order="v DESC, id")
    batches = []
    for k in range(4):
        b = make_data(k * 50, 50)
        batches.append(b)
        t.write_arrow(b)
        t.commit()
    t.delete("v < 3")
    r = t.compact()
    assert r["rewritten_data_files"] == 20 and r["added_data_files"] == 5
    want = expected(batches, "v >= 3")
    assert pyiceberg_rows(t) == want
    # each new file is sorted by the table's order (pyiceberg reads one file)
    st = StaticTable.from_metadata(t.metadata_location)
    for task in st.scan().plan_files():
        import pyarrow.parquet as pq
        tb = pq.read_table(_local(task.file.file_path))
        keys = list(zip((-tb.column("v").to_numpy()).tolist(), tb.column("id").to_pylist()))
        assert keys == sorted(keys)


HARNESS_JAR = pathlib.Path(os.environ.get("HS_JAVA_HARNESS")
                           or REPO / "build-java" / "iceberg-harness.jar")


def test_java_reads_compacted_and_expired(table, tmp_path):
    local_only("the Java harness reads tables by local path")
    require(shutil.which("java") is not None, "java not installed")
    require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
    from test_iceberg_java import JavaHarness
    t, batches = table
    t.compact()
    t.expire_snapshots(retain_last=1)
    h = JavaHarness(HARNESS_JAR)
    try:
        rows = h.read(t.metadata_location, tmp=tmp_path)
    finally:
        h.close()
    got = sorted((r["id"], r["cat"], float(r["v"])) for r in rows)
    assert got == expected(batches, "id % 7 <> 3")


def _cli():
    build = os.environ.get("HS_BUILD", str(REPO / "build"))
    hs = pathlib.Path(build if os.path.isabs(build) else REPO / build) / "hyperstream"
    require(hs.exists(), f"{hs} not built")
    return str(hs)


def test_cli_maintenance(tmp_path, table_dir):
    import subprocess
    hs = _cli()

    def run(*args, rc=0):
        p = subprocess.run([hs, "table", *args], capture_output=True, text=True)
        assert p.returncode == rc, p.stderr
        return json.loads(p.stdout) if p.stdout.strip() else None

    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps({"id": i, "cat": f"c{i % 5}", "v": float(i % 97)}) + "\n"
                           for i in range(30)))
    t = str(table_dir / "t")
    run("create", t, "--like", str(src), "--format", "jsonl")
    for _ in range(3):
        run("append", t, str(src), "--format", "jsonl")
    run("delete", t, "--filter", "id = 4")
    plan = run("compact", t, "--dry-run")
    assert plan["rewritten_data_files"] == 3 and plan["snapshot_id"] is None
    done = run("compact", t, "--min-files", "2")
    assert done["added_data_files"] == 1 and done["removed_delete_files"] == 3
    assert run("rewrite-manifests", t, "--dry-run")["dry_run"] is True
    exp = run("expire", t, "--retain-last", "1")
    assert len(exp["expired_snapshot_ids"]) == 4   # 3 appends + the delete
    assert all(not _exists(f["path"]) for f in exp["deleted_files"])
    assert run("remove-orphans", t, "--older-than", "2999-01-01T00:00:00",
               "--dry-run")["deleted_files"] == []
    run("cherrypick", t, "12345", rc=1)
    run("expire", t, "--retain-last", "x", rc=2)
    table = hdb.Table(t)
    rows = sorted(r for r in rows_of(StaticTable.from_metadata(table.metadata_location)
                                     .scan().to_arrow()))
    want = sorted((i, f"c{i % 5}", float(i % 97)) for i in range(30) if i != 4) * 3
    assert rows == sorted(want)


def test_compact_v3_deletion_vectors_and_lineage(table_dir):
    """v3: deletion vectors are applied and dropped, rows keep _row_id and
    _last_updated_sequence_number (oracle: appends assign ids in order, one
    sequence number per commit), pyiceberg reads the same rows."""
    t = hdb.Table.create(table_dir / "t", SCHEMA, format_version=3)
    batches = []
    for k in range(3):
        b = make_data(k * 40, 40)
        batches.append(b)
        t.write_arrow(b)
        t.commit()
    t.delete("id % 7 = 3")
    want = expected(batches, "id % 7 <> 3")
    assert pyiceberg_rows(t) == want

    def lineage():
        tb = t.query().select(["id", "_row_id", "_last_updated_sequence_number"]).to_arrow()
        return sorted(zip(*(tb.column(c).to_pylist() for c in tb.column_names)))

    before = lineage()
    assert before == [(i, i, 1 + i // 40) for i in range(120) if i % 7 != 3]
    r = t.compact()
    assert r["removed_delete_files"] == 3 and r["added_data_files"] == 1
    assert lineage() == before
    assert not t.files()[0].get("deletes")
    assert pyiceberg_rows(t) == want
    t.expire_snapshots(retain_last=1)
    assert pyiceberg_rows(t) == want and lineage() == before


def test_java_reads_compacted_v3(tmp_path):
    require(shutil.which("java") is not None, "java not installed")
    require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
    from test_iceberg_java import JavaHarness
    t = hdb.Table.create(tmp_path / "t", SCHEMA, format_version=3)
    batches = [make_data(k * 40, 40) for k in range(3)]
    for b in batches:
        t.write_arrow(b)
        t.commit()
    t.delete("id % 7 = 3")
    t.compact()
    t.expire_snapshots(retain_last=1)
    h = JavaHarness(HARNESS_JAR)
    try:
        rows = h.read(t.metadata_location, tmp=tmp_path)
    finally:
        h.close()
    got = sorted((r["id"], r["cat"], float(r["v"])) for r in rows)
    assert got == expected(batches, "id % 7 <> 3")


_KILL_CHILD = r"""
import sys, hyperstreamdb as hdb
t = hdb.Table(sys.argv[1])
print("ready", flush=True)
if sys.argv[2] == "compact":
    t.compact(progress=False)
else:
    t.expire_snapshots(retain_last=2)
print("done", flush=True)
"""


def test_kill9_during_compaction_and_expiry(tmp_path):
    """kill -9 at a random moment of compaction or expiry: the table always
    opens, ours and pyiceberg read exactly the rows written, and orphan
    removal afterwards leaves only reachable files.  HS_LONG_TESTS=1 runs
    200 rounds instead of 12."""
    import random
    import signal
    import subprocess
    import sys
    rounds = 200 if os.environ.get("HS_LONG_TESTS") else 12
    rng = random.Random(1234)
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    t.add_index("cat", "inverted")
    batches = []
    env = dict(os.environ)
    for r in range(rounds):
        for k in range(6):
            b = make_data(len(batches) * 50, 50)
            batches.append(b)
            t.write_arrow(b)
            t.commit()
        op = "compact" if r % 3 != 2 else "expire"
        p = subprocess.Popen([sys.executable, "-c", _KILL_CHILD, t.path, op],
                             stdout=subprocess.PIPE, text=True, env=env)
        assert p.stdout.readline().strip() == "ready"
        time.sleep(rng.random() * 0.3)
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        t.refresh()
        want = expected(batches)
        assert rows_of(t.to_arrow()) == want
        assert pyiceberg_rows(t) == want
        assert rows_of(t.to_arrow(filter="cat = 'c3'")) == expected(batches, "cat = 'c3'")
    t.expire_snapshots(retain_last=1)
    t.remove_orphan_files(older_than=int(time.time() * 1000) + 5000)
    reachable = reach(t.metadata_location)
    on_disk = {str(f) for f in pathlib.Path(t.location, "data").rglob("*") if f.is_file()}
    assert on_disk == {p for p, k in reachable.items() if k in ("data", "deletes")}
    assert pyiceberg_rows(t) == expected(batches)
    ex = t.explain(filter="cat = 'c1'")
    assert ex["totals"]["index_files_skipped"] == 0


_ORPHAN_WRITER = r"""
import sys
import numpy as np, pyarrow as pa
import hyperstreamdb as hdb
path, start = sys.argv[1], int(sys.argv[2])
def make_data(s, n):
    ids = np.arange(s, s + n, dtype=np.int64)
    return pa.table({"id": ids, "cat": pa.array([f"c{i % 5}" for i in ids], pa.string()),
                     "v": pa.array((ids % 97).astype(np.float64))})
t = hdb.Table(path)
print("ready", flush=True)
nxt, k = start, 0
while True:
    k += 1
    if k % 4 == 0 and nxt - start > 20:
        lo = start + (k * 37) % (nxt - start - 10)
        print(f"begin del {lo} {lo + 5}", flush=True)
        t.delete(f"id >= {lo} AND id < {lo + 5}")
    else:
        print(f"begin add {nxt} 40", flush=True)
        t.write_arrow(make_data(nxt, 40)); t.commit()
        nxt += 40
    print("done", flush=True)
"""

_ORPHAN_REMOVER = r"""
import sys, hyperstreamdb as hdb
t = hdb.Table(sys.argv[1])
print("ready", flush=True)
while True:
    t.remove_orphan_files()   # the default age: 3 days
"""


def test_kill9_orphan_removal(tmp_path):
    """kill -9 during orphan removal, and during commits made while it runs:
    each round every file of the table is made 4 days old (so only
    reachability protects the committed ones), 600 old orphans (data,
    manifest, sidecar) are planted, and a writer (appends, range deletes) and an orphan remover
    at its default age (3 days) run in two processes, each killed at a
    random moment, the writer usually mid-commit.  After every round: the
    table opens; every file its snapshots reach and every sidecar of its
    registry exists (no committed file lost); ours and pyiceberg read
    exactly the rows of the writer's log (the op in flight at the kill
    wholly or not at all); a second orphan run removes every planted orphan
    the killed one left.  At the end, after all is old, one more run leaves
    exactly the reachable files.  HS_LONG_TESTS=1 runs 100 rounds, else 10."""
    import random
    import signal
    import subprocess
    import sys
    rounds = 100 if os.environ.get("HS_LONG_TESTS") else 10
    rng = random.Random(99)
    t = hdb.Table.create(tmp_path / "t", SCHEMA)
    t.add_index("cat", "inverted")
    loc = pathlib.Path(t.location)
    added, deleted = [], set()   # (start, n) ranges; deleted ids

    def want(where=None):
        ids = [i for s, n in added for i in range(s, s + n) if i not in deleted]
        rs = sorted((i, f"c{i % 5}", float(i % 97)) for i in ids)
        return [r for r in rs if where is None or where(r)]

    killed_orphans = 0
    for r in range(rounds):
        old = time.time() - 4 * 86400
        for f in loc.rglob("*"):
            if f.is_file():
                os.utime(f, (old, old))
        planted = []
        for k in range(600):
            p = [loc / "data" / f"orphan-{r}-{k}.parquet",
                 loc / "metadata" / f"orphan-{r}-{k}-m0.avro",
                 loc / "index" / f"orphan-{r}-{k}.2.inverted"][k % 3]
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"orphan" * 100)
            os.utime(p, (old, old))
            planted.append(p)
        base = 1_000_000 * (r + 1)
        w = subprocess.Popen([sys.executable, "-c", _ORPHAN_WRITER, t.path, str(base)],
                             stdout=subprocess.PIPE, text=True)
        assert w.stdout.readline().strip() == "ready"
        log = []
        # a few commits first, then the remover starts while the writer goes on
        for _ in range(rng.randint(1, 4)):
            while True:
                log.append(w.stdout.readline().strip())
                if log[-1] == "done":
                    break
        o = subprocess.Popen([sys.executable, "-c", _ORPHAN_REMOVER, t.path],
                             stdout=subprocess.PIPE, text=True)
        assert o.stdout.readline().strip() == "ready"
        # the kills: the remover or the writer first, early (the remover
        # in its first pass over the planted orphans) or late (after many
        # of its passes raced the writer's commits)
        first, second = (o, w) if r % 2 else (w, o)
        time.sleep(rng.random() * (0.15 if r % 4 < 2 else 1.5))
        first.send_signal(signal.SIGKILL)
        time.sleep(rng.random() * 0.3)
        second.send_signal(signal.SIGKILL)
        w.wait()
        o.wait()
        log += w.stdout.read().splitlines()
        w.stdout.close()
        o.stdout.close()
        killed_orphans += any(p.exists() for p in planted)
        # the writer's log: ops done, and the one in flight (maybe committed)
        inflight = None
        for line in log:
            if line.startswith("begin"):
                _, kind, a, b = line.split()
                inflight = (kind, int(a), int(b))
            elif line == "done" and inflight:
                kind, a, b = inflight
                if kind == "add":
                    added.append((a, b))
                else:
                    deleted.update(range(a, b))
                inflight = None
        t.refresh()
        got = rows_of(t.to_arrow())
        if inflight and got != want():   # the op in flight committed, whole
            kind, a, b = inflight
            if kind == "add":
                added.append((a, b))
            else:
                deleted.update(range(a, b))
        assert got == want(), f"round {r}: rows differ (in flight {inflight})"
        assert pyiceberg_rows(t) == want()
        assert rows_of(t.to_arrow(filter="cat = 'c3'")) == want(lambda x: x[1] == "c3")
        # no committed file lost: everything the kept snapshots reach, and
        # the sidecars of the current registry
        missing = [p for p in reach(t.metadata_location) if not _exists(p)]
        assert not missing, f"round {r}: {missing[:5]}"
        side = [p for ps in registry_sidecars(t).values() for p in ps if not _exists(p)]
        assert not side, f"round {r}: {side[:5]}"
        assert t.explain(filter="cat = 'c1'")["totals"]["index_files_skipped"] == 0
        # a second run removes what the killed one left of the planted orphans
        t.remove_orphan_files()
        assert not any(p.exists() for p in planted), f"round {r}"
    # most rounds killed the remover before it finished or raced the writer;
    # at the end, with everything old, one run leaves exactly what is reachable
    old = time.time() - 4 * 86400
    for f in loc.rglob("*"):
        if f.is_file():
            os.utime(f, (old, old))
    t.remove_orphan_files()
    reachable = reach(t.metadata_location)
    on_disk = {str(f) for f in (loc / "data").rglob("*") if f.is_file()}
    assert on_disk == {p for p, k in reachable.items() if k in ("data", "deletes")}
    t.refresh()
    assert rows_of(t.to_arrow()) == want()
    assert pyiceberg_rows(t) == want()
    print(f"\nkill -9 orphan removal: {rounds} rounds, {len(added)} appends, "
          f"{len(deleted)} ids deleted, {killed_orphans} rounds where the killed "
          f"remover had left planted orphans")

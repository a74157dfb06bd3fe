"""Compaction racing an equality delete (issue 14): another engine commits
an equality delete (as Flink or Spark merge-on-read do) between the
compaction's plan and its commit.  The moved rows would get a newer data
sequence number, so the equality delete would no longer apply to them: the
compaction must give up cleanly (CommitConflictError, nothing committed,
its files removed) rather than resurrect the deleted rows or lose others.
A compaction planned after it applies the equality delete and drops it.

The equality delete is written here without the library: a Parquet file of
the deleted ids (pyarrow, with Iceberg field ids), a delete manifest and a
manifest list written by pyiceberg's own writers, and the snapshot
committed through pyiceberg's SqlCatalog on the SQLite catalog the table
lives in.

Oracles, none of them our own output:
  * pyiceberg: the current snapshot after the failed compaction is the
    equality delete's, its data and delete files are the ones pyiceberg
    committed on, and the snapshot before it reads (pyiceberg) as DuckDB's
    rows of the source; after the second compaction (no equality delete
    left) pyiceberg reads the source minus the deleted ids;
  * Java Iceberg (scripts/java-harness.sh, which applies equality deletes;
    pyiceberg refuses them), when built: the table reads as the source
    minus the deleted ids, by DuckDB (local storage: the harness reads local
    paths).

In the storage matrix (HS_TEST_STORAGE=s3) the warehouse is on the S3 server
(the SQLite file stays local): the delete file and manifests go there through
pyiceberg's FileIO, and the file checks read it with pyarrow's S3 client.
"""
import io
import os
import pathlib
import shutil
import time
import uuid

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import (ON_S3, REPO, as_path, require, require_module, s3_fileio_properties,
                      storage_server)

import hyperstreamdb as hdb

fastavro = require_module("fastavro")
require_module("pyiceberg.catalog.sql")
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.manifest import (DataFile, DataFileContent, FileFormat,  # noqa: E402
                                ManifestContent, ManifestEntry, ManifestEntryStatus,
                                ManifestWriterV2, write_manifest_list)
from pyiceberg.table.refs import SnapshotRefType  # noqa: E402
from pyiceberg.table.snapshots import Operation, Snapshot, Summary  # noqa: E402
from pyiceberg.table.update import (AddSnapshotUpdate, AssertRefSnapshotId,  # noqa: E402
                                    SetSnapshotRefUpdate)
from pyiceberg.typedef import Record  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string())])
HARNESS_JAR = pathlib.Path(os.environ.get("HS_JAVA_HARNESS")
                           or REPO / "build-java" / "iceberg-harness.jar")


def make_data(start, n):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "cat": pa.array([f"c{i % 5}" for i in ids], pa.string())},
                    schema=SCHEMA)


def expected(batches, where="TRUE"):
    src = pa.concat_tables(batches)  # noqa: F841 (DuckDB reads it by name)
    return sorted(duckdb.sql(f"SELECT id, cat FROM src WHERE {where}").fetchall())


class _DeleteManifestWriter(ManifestWriterV2):
    """pyiceberg's v2 manifest writer, for a delete manifest."""

    def content(self):
        return ManifestContent.DELETES

    @property
    def _meta(self):
        return {**super()._meta, "content": "deletes"}


def _int_equality_ids(path):
    """pyiceberg 0.12 writes equality_ids as list<long> (the spec: list<int>,
    field 135); Java Iceberg refuses that.  Rewrites the manifest with the
    spec's type, entries and key-value metadata unchanged; returns its new
    size."""
    r = fastavro.reader(io.BytesIO(as_path(path).read_bytes()))
    schema, meta, records = r.writer_schema, dict(r.metadata), list(r)

    def fix(node):
        if isinstance(node, dict):
            if node.get("name") == "equality_ids":
                t = node["type"]
                arr = next(x for x in t if isinstance(x, dict)) if isinstance(t, list) else t
                assert arr["items"] == "long"
                arr["items"] = "int"
            for v in node.values():
                fix(v)
        elif isinstance(node, list):
            for v in node:
                fix(v)

    fix(schema)
    codec = meta.pop("avro.codec", "null")
    meta.pop("avro.schema", None)
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec, metadata=meta)
    as_path(path).write_bytes(out.getvalue())
    return len(out.getvalue())


def commit_equality_delete(pt, ids):
    """Commits, through pyiceberg table pt (SqlCatalog), one equality delete
    on field "id" (field id 1) of the given ids; returns the snapshot id."""
    meta = pt.metadata
    parent = pt.current_snapshot()
    loc = pt.location().removeprefix("file://")
    path = f"{loc}/data/eq-{uuid.uuid4()}.parquet"
    field = pa.field("id", pa.int64(), nullable=False, metadata={"PARQUET:field_id": "1"})
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}, schema=pa.schema([field])), buf)
    as_path(path).write_bytes(buf.getvalue())
    df = DataFile.from_args(content=DataFileContent.EQUALITY_DELETES, file_path=path,
                            file_format=FileFormat.PARQUET, partition=Record(),
                            record_count=len(ids), file_size_in_bytes=len(buf.getvalue()),
                            equality_ids=[1])
    df.spec_id = pt.spec().spec_id
    snap_id = meta.new_snapshot_id()
    seq = meta.next_sequence_number()
    mpath = f"{loc}/metadata/{uuid.uuid4()}-m0.avro"
    with _DeleteManifestWriter(pt.spec(), pt.schema(), pt.io.new_output(mpath), snap_id,
                               "deflate") as w:
        w.add_entry(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED,
                                            snapshot_id=snap_id, data_file=df))
    mf = w.to_manifest_file()
    mf._data[1] = _int_equality_ids(mpath)   # manifest_length (no setter)
    lpath = f"{loc}/metadata/snap-{snap_id}-0-{uuid.uuid4()}.avro"
    with write_manifest_list(2, pt.io.new_output(lpath), snap_id, parent.snapshot_id, seq,
                             "deflate") as lw:
        lw.add_manifests(parent.manifests(pt.io) + [mf])
    snap = Snapshot(snapshot_id=snap_id, parent_snapshot_id=parent.snapshot_id,
                    sequence_number=seq, timestamp_ms=int(time.time() * 1000),
                    manifest_list=lpath, summary=Summary(Operation.DELETE),
                    schema_id=pt.schema().schema_id)
    pt.catalog.commit_table(
        pt, (AssertRefSnapshotId(snapshot_id=parent.snapshot_id, ref="main"),),
        (AddSnapshotUpdate(snapshot=snap),
         SetSnapshotRefUpdate(ref_name="main", type=SnapshotRefType.BRANCH, snapshot_id=snap_id)))
    return snap_id, path


def test_compaction_gives_up_on_concurrent_equality_delete(tmp_path, table_dir):
    db, wh = tmp_path / "cat.db", table_dir / "wh"
    if not ON_S3:
        wh.mkdir()
    cat = hdb.Catalog(f"sqlite:///{db}", warehouse=str(wh))
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    batches = [make_data(k * 100, 100) for k in range(4)]
    for b in batches:
        t.write_arrow(b)
        t.commit()
    before = t.current_snapshot_id
    pc = SqlCatalog("default", uri=f"sqlite:///{db}", warehouse=str(wh),
                    **(s3_fileio_properties(storage_server()) if ON_S3 else {}))
    deleted = [5, 150, 151, 399]
    injected = []

    def progress(what, done, total):
        # mid-compaction: its plan is made, its files being written
        if not injected:
            injected.append(commit_equality_delete(pc.load_table("db.t"), deleted))

    # the commit attempt re-plans on the new base: the equality delete
    # applies to rewritten files but would not apply to the moved rows
    with pytest.raises(hdb.CommitConflictError, match="concurrent commit added equality"):
        t.compact(progress=progress)
    assert injected
    eq_snap, eq_path = injected[0]
    # nothing committed: the equality delete's snapshot is current, on the
    # files it was committed on (pyiceberg's view)
    pt = pc.load_table("db.t")
    eq_meta = pt.metadata_location
    assert pt.current_snapshot().snapshot_id == eq_snap
    assert pt.current_snapshot().parent_snapshot_id == before
    data, deletes = set(), set()
    for m in pt.current_snapshot().manifests(pt.io):
        for e in m.fetch_manifest_entry(pt.io):
            (data if e.data_file.content == DataFileContent.DATA else deletes).add(
                e.data_file.file_path.removeprefix("file://"))
    assert len(data) == 4 and deletes == {eq_path}
    for p in data:
        assert as_path(p).exists()
    # the compaction's own files are gone (only the four data files remain)
    on_disk = {str(p) for p in as_path(eq_path.rsplit("/", 1)[0]).glob("*.parquet")}
    assert on_disk == data | {eq_path}
    t.refresh()
    assert t.current_snapshot_id == eq_snap
    rows = pt.scan(snapshot_id=before).to_arrow()
    assert sorted(zip(rows["id"].to_pylist(), rows["cat"].to_pylist())) == expected(batches)
    want = expected(batches, f"id NOT IN ({', '.join(map(str, deleted))})")
    got = t.to_arrow()
    assert sorted(zip(got["id"].to_pylist(), got["cat"].to_pylist())) == want
    # a compaction planned now applies the equality delete and drops it
    res = t.compact()
    assert res["rewritten_data_files"] == 4, res
    pt = pc.load_table("db.t")
    kinds = [e.data_file.content for m in pt.current_snapshot().manifests(pt.io)
             for e in m.fetch_manifest_entry(pt.io)]
    assert DataFileContent.EQUALITY_DELETES not in kinds
    rows = pt.scan().to_arrow()
    assert sorted(zip(rows["id"].to_pylist(), rows["cat"].to_pylist())) == want
    t.close()
    # the rows with the equality delete applied, by Java Iceberg, before and
    # after our compaction
    if ON_S3:
        return   # the Java harness reads tables by local path (the local leg runs it)
    require(shutil.which("java") is not None, "java not installed")
    require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
    from test_iceberg_java import JavaHarness
    h = JavaHarness(HARNESS_JAR)
    try:
        for meta in (eq_meta, pt.metadata_location):
            got = h.read(meta, tmp=tmp_path)
            assert sorted((r["id"], r["cat"]) for r in got) == want, meta
    finally:
        h.close()

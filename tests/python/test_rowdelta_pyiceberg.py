"""Row deltas (hs_row_delta_*, what UPDATE/DELETE/MERGE commit) read by pyiceberg.

Random sequences of row deltas (deletes by _file/_pos, updates = delete +
re-add with the row's _row_id, inserts) on v2 (position delete files) and v3
(deletion vectors) tables, unpartitioned and partitioned: after every commit
the rows pyiceberg reads (StaticTable on the new metadata) equal the model
kept here in Python, and so do our own scan's.  v3: an updated row keeps its
_row_id (spec "Row Lineage"), checked against the ids read before the update.
The model is the oracle; pyiceberg is the independent reader.
"""
import ctypes
import random

import pyarrow as pa
import pytest
from conftest import require_module  # noqa: E402

require_module("pyiceberg")
from pyiceberg.table import StaticTable  # noqa: E402
from test_table_pyiceberg import Lib, _Err, HsFail  # noqa: E402


class RdLib(Lib):
    def __init__(self):
        super().__init__()
        L = self.lib
        vp = ctypes.c_void_p
        L.hs_row_delta_open.argtypes = [vp, ctypes.c_int64, ctypes.POINTER(vp), vp]
        L.hs_row_delta_delete.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64),
                                          ctypes.c_int64, vp]
        L.hs_row_delta_add.argtypes = [vp, vp, vp]
        L.hs_row_delta_commit.argtypes = [vp, vp]
        L.hs_row_delta_free.argtypes = [vp]
        L.hs_table_current_snapshot_id.argtypes = [vp]
        L.hs_table_current_snapshot_id.restype = ctypes.c_int64
        for n in ("hs_row_delta_open", "hs_row_delta_delete", "hs_row_delta_add",
                  "hs_row_delta_commit"):
            getattr(L, n).restype = ctypes.c_int

    def row_delta(self, t, read_snap, deletes, adds):
        """deletes: {file: [pos...]}; adds: a pyarrow table or None."""
        d = ctypes.c_void_p()
        self.call("hs_row_delta_open", t, read_snap, ctypes.byref(d))
        try:
            for f, ps in deletes.items():
                arr = (ctypes.c_int64 * len(ps))(*ps)
                self.call("hs_row_delta_delete", d, f.encode(), arr, len(ps))
            if adds is not None:
                s = self._stream(adds)
                self.call("hs_row_delta_add", d, ctypes.byref(s))
            self.call("hs_row_delta_commit", d)
        finally:
            self.lib.hs_row_delta_free(d)


@pytest.fixture(scope="module")
def hs():
    return RdLib()


SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string()),
                    ("val", pa.float64())])


def table_of(rows, with_row_id=False):
    cols = {"id": pa.array([r[0] for r in rows], pa.int64()),
            "cat": pa.array([r[1] for r in rows], pa.string()),
            "val": pa.array([r[2] for r in rows], pa.float64())}
    if with_row_id:
        cols["_row_id"] = pa.array([r[3] for r in rows], pa.int64())
    return pa.table(cols)


@pytest.mark.parametrize("fv,spec", [(2, None), (3, None), (2, "identity(cat)"),
                                     (3, "bucket(4, id)")])
def test_random_row_deltas_pyiceberg(hs, table_dir, fv, spec):
    rng = random.Random(1000 * fv + (7 if spec else 0))
    cat = hs.path_catalog(table_dir)
    t = hs.create(cat, "t", SCHEMA, spec=spec, fv=fv)
    model = {}
    next_id = 0
    for _ in range(3):   # three appends: several data files
        batch = []
        for _ in range(40):
            batch.append((next_id, rng.choice("abc"), float(rng.randint(0, 99))))
            next_id += 1
        hs.append(t, table_of(batch))
        model.update({r[0]: r[1:] for r in batch})
    for step in range(8):
        cols = ["id", "cat", "val", "_file", "_pos"] + (["_row_id"] if fv >= 3 else [])
        cur = hs.scan(t, columns=cols).to_pylist()
        assert sorted(r["id"] for r in cur) == sorted(model)
        snap = hs.lib.hs_table_current_snapshot_id(t)
        ids = list(model)
        rng.shuffle(ids)
        n_del, n_upd = rng.randint(0, 10), rng.randint(0, 10)
        if step == 3:   # a whole data file's worth of rows, and more
            n_del = min(len(ids), 50)
        dels, upds = set(ids[:n_del]), set(ids[n_del:n_del + n_upd])
        deletes, adds = {}, []
        before_row_id = {}
        for r in cur:
            if r["id"] in dels or r["id"] in upds:
                deletes.setdefault(r["_file"], []).append(r["_pos"])
            if r["id"] in upds:
                v = float(rng.randint(100, 199))
                adds.append((r["id"], r["cat"], v, r.get("_row_id")))
                before_row_id[r["id"]] = r.get("_row_id")
        for _ in range(rng.randint(0, 5)):
            adds.append((next_id, rng.choice("abcd"), float(rng.randint(0, 99)), None))
            next_id += 1
        hs.row_delta(t, snap, deletes, table_of(adds, with_row_id=True) if adds else None)
        for i in dels:
            del model[i]
        for r in adds:
            model[r[0]] = (r[1], r[2])
        want = sorted((k, v[0], v[1]) for k, v in model.items())
        ours = sorted((r["id"], r["cat"], r["val"]) for r in hs.scan(t).to_pylist())
        assert ours == want, f"step {step}: our scan"
        py = StaticTable.from_metadata(hs.metadata_location(t)).scan().to_arrow().to_pylist()
        assert sorted((r["id"], r["cat"], r["val"]) for r in py) == want, f"step {step}: pyiceberg"
        if fv >= 3:
            lin = {r["id"]: r["_row_id"] for r in hs.scan(t, columns=["id", "_row_id"]).to_pylist()}
            for i, rid in before_row_id.items():
                assert lin[i] == rid, f"step {step}: updated row {i} lost its _row_id"
            assert len(set(lin.values())) == len(lin), "row ids must stay unique"
    hs.lib.hs_table_close(t)
    hs.lib.hs_catalog_close(cat)


def test_conflict_reported(hs, table_dir):
    cat = hs.path_catalog(table_dir)
    t = hs.create(cat, "t", SCHEMA, fv=2)
    hs.append(t, table_of([(i, "a", 1.0) for i in range(5)]))
    snap = hs.lib.hs_table_current_snapshot_id(t)
    cur = hs.scan(t, columns=["id", "_file", "_pos"]).to_pylist()
    f = cur[0]["_file"]
    hs.row_delta(t, snap, {f: [0]}, None)
    with pytest.raises(HsFail) as e:
        hs.row_delta(t, snap, {f: [1]}, None)
    assert e.value.code == 5 and "concurrent" in str(e.value)
    hs.lib.hs_table_close(t)
    hs.lib.hs_catalog_close(cat)


@pytest.mark.parametrize("fv", [2, 3])
def test_java_reads_row_delta(hs, tmp_path, fv):
    """Stock Java Iceberg (the harness of test_iceberg_java) reads a row
    delta's result: rows equal the model; v3 lineage columns equal the
    spec's values (updated rows: old _row_id, the new sequence number)."""
    from test_iceberg_java import HARNESS_JAR, JavaHarness, _local
    import shutil
    from conftest import require
    require(shutil.which("java") is not None, "java not installed")
    require(HARNESS_JAR.exists(), f"{HARNESS_JAR} not built (scripts/java-harness.sh)")
    java = JavaHarness(HARNESS_JAR)
    cat = hs.path_catalog(tmp_path / "wh")
    t = hs.create(cat, "t", SCHEMA, spec="bucket(2, id)", fv=fv)
    try:
        hs.append(t, table_of([(i, "a", float(i)) for i in range(10)]))
        cols = ["id", "cat", "val", "_file", "_pos"] + (["_row_id"] if fv >= 3 else [])
        cur = {r["id"]: r for r in hs.scan(t, columns=cols).to_pylist()}
        snap = hs.lib.hs_table_current_snapshot_id(t)
        deletes = {}
        for i in (1, 2, 5, 6, 7):   # 1, 2 deleted; 5, 6, 7 updated
            deletes.setdefault(cur[i]["_file"], []).append(cur[i]["_pos"])
        adds = [(i, "u", 100.0 + i, cur[i].get("_row_id")) for i in (5, 6, 7)]
        adds.append((50, "n", 50.0, None))
        hs.row_delta(t, snap, deletes, table_of(adds, with_row_id=True))
        want = sorted([(i, "a", float(i)) for i in range(10) if i not in (1, 2, 5, 6, 7)] +
                      [(a[0], a[1], a[2]) for a in adds])
        meta = _local(hs.metadata_location(t))
        jcols = ["id", "cat", "val"] + (["_row_id", "_last_updated_sequence_number"]
                                        if fv >= 3 else [])
        jrows = java.read(meta, columns=jcols, tmp=tmp_path)
        assert sorted((r["id"], r["cat"], r["val"]) for r in jrows) == want
        if fv >= 3:
            got = {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in jrows}
            for i in range(10):
                if i in (1, 2):
                    continue
                seq = 2 if i in (5, 6, 7) else 1
                assert got[i] == (cur[i]["_row_id"], seq), i
            # a fresh id at or past next-row-id (10), unique, the new sequence number
            assert got[50][0] >= 10 and got[50][1] == 2
            assert len({v[0] for v in got.values()}) == len(got)
    finally:
        java.close()
        hs.lib.hs_table_close(t)
        hs.lib.hs_catalog_close(cat)

"""Streaming appends (hs_table_append over a RecordBatchReader far larger
than the append buffer) read by independent readers.

The C API is driven through ctypes on $HS_BUILD/libhyperstream.so with a
small buffer (hyperstream.write.buffer-bytes) and target file size, so one
append goes through many chunks, files stay open across chunks and roll.
Oracles: the generator's own data (pyarrow compute over the batches it
produced), pyiceberg's scan of the written table, and pyarrow.parquet reading
every data file - whose true min/max/null counts must equal the metrics in
the manifests (merged across the slices a file was written in).  The memory
bound itself is measured in tests/c/test_table_stream.c.
"""
import ctypes
import os
import pathlib

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
BUILD = pathlib.Path(os.environ.get("HS_BUILD", "build"))
if not BUILD.is_absolute():
    BUILD = REPO / BUILD
LIB = BUILD / "libhyperstream.so"


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


class _Stream(ctypes.Structure):
    _fields_ = [("get_schema", ctypes.c_void_p), ("get_next", ctypes.c_void_p),
                ("get_last_error", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("private_data", ctypes.c_void_p)]


class _CreateOpts(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),  # 0: the 0.1 layout
                ("arrow_schema", ctypes.c_void_p), ("schema_json", ctypes.c_char_p),
                ("partition_spec", ctypes.c_char_p), ("sort_order", ctypes.c_char_p),
                ("property_keys", ctypes.c_void_p), ("property_values", ctypes.c_void_p),
                ("n_properties", ctypes.c_int), ("format_version", ctypes.c_int),
                ("location", ctypes.c_char_p)]


SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64()),
                    ("cat", pa.string())])


def batches(n_batches, rows=20000, seed=1):
    """Deterministic generator: ids ascending, shuffled categories, nulls in v."""
    import numpy as np
    rng = np.random.default_rng(seed)
    for b in range(n_batches):
        ids = np.arange(b * rows, (b + 1) * rows, dtype=np.int64)
        v = rng.random(rows) * 1000 - 500
        mask = rng.random(rows) < 0.07
        cats = np.array(["alpha", "beta", "gamma", "delta"])[rng.integers(0, 4, rows)]
        names = [f"name-{i:09d}-{'x' * int(i % 7)}" for i in ids]
        yield pa.record_batch([pa.array(ids), pa.array(names),
                               pa.array(v, mask=mask), pa.array(cats)], schema=SCHEMA)


class Lib:
    def __init__(self):
        self.lib = L = ctypes.CDLL(str(LIB))
        vp, cp = ctypes.c_void_p, ctypes.c_char_p
        for name, args in {
            "hs_catalog_open_path": [cp, ctypes.POINTER(vp), vp],
            "hs_table_create": [vp, cp, vp, ctypes.POINTER(vp), vp],
            "hs_table_append": [vp, vp, vp],
        }.items():
            getattr(L, name).argtypes = args
            getattr(L, name).restype = ctypes.c_int
        L.hs_table_metadata_location.argtypes = [vp]
        L.hs_table_metadata_location.restype = cp
        L.hs_table_close.argtypes = [vp]
        L.hs_catalog_close.argtypes = [vp]

    def call(self, fn, *args):
        err = _Err()
        rc = getattr(self.lib, fn)(*args, ctypes.byref(err))
        if rc != 0:
            raise RuntimeError(f"{fn}: status {rc}: {err.msg.decode(errors='replace')}")

    def create(self, warehouse, name, props, spec=None, sort=None):
        cat = ctypes.c_void_p()
        self.call("hs_catalog_open_path", str(warehouse).encode(), ctypes.byref(cat))
        c_schema = ctypes.create_string_buffer(9 * 8)
        addr = ctypes.addressof(c_schema)
        SCHEMA._export_to_c(addr)
        keys = (ctypes.c_char_p * len(props))(*[k.encode() for k in props])
        vals = (ctypes.c_char_p * len(props))(*[v.encode() for v in props.values()])
        o = _CreateOpts()
        o.arrow_schema = addr
        o.partition_spec = spec.encode() if spec else None
        o.sort_order = sort.encode() if sort else None
        o.property_keys = ctypes.cast(keys, ctypes.c_void_p)
        o.property_values = ctypes.cast(vals, ctypes.c_void_p)
        o.n_properties = len(props)
        o.format_version = 2
        t = ctypes.c_void_p()
        try:
            self.call("hs_table_create", cat, name.encode(), ctypes.byref(o), ctypes.byref(t))
        finally:
            pa.Schema._import_from_c(addr)
        return cat, t

    def append_reader(self, t, reader):
        s = _Stream()
        reader._export_to_c(ctypes.addressof(s))
        self.call("hs_table_append", t, ctypes.byref(s))


@pytest.fixture(scope="module")
def hs():
    if not LIB.exists():
        pytest.fail(f"{LIB} is not built")
    return Lib()


def field_id(tbl, name):
    return tbl.schema().find_field(name).field_id


@pytest.mark.parametrize("layout", ["plain", "partitioned_sorted"])
def test_streamed_append_read_by_pyiceberg(hs, tmp_path, layout):
    n_batches = 12   # 240k rows, about 13 MB in Arrow: a chunk per batch (1 MiB budget)
    target = 256 << 10
    props = {"hyperstream.write.buffer-bytes": str(1 << 20),
             "write.target-file-size-bytes": str(target)}
    spec, sort = (("cat", "id DESC") if layout == "partitioned_sorted" else (None, None))
    cat, t = hs.create(tmp_path, "t", props, spec, sort)
    reader = pa.RecordBatchReader.from_batches(SCHEMA, batches(n_batches))
    hs.append_reader(t, reader)
    meta = hs.lib.hs_table_metadata_location(t).decode()
    hs.lib.hs_table_close(t)
    hs.lib.hs_catalog_close(cat)

    want = pa.Table.from_batches(list(batches(n_batches)), schema=SCHEMA)
    tbl = StaticTable.from_metadata(meta)
    snaps = tbl.metadata.snapshots
    assert len(snaps) == 1 and snaps[0].summary.operation.value == "append"
    got = tbl.scan().to_arrow()
    assert got.num_rows == want.num_rows
    assert pc.sum(got["id"]).as_py() == pc.sum(want["id"]).as_py()
    assert got["v"].null_count == want["v"].null_count
    assert pc.sum(got["v"]).as_py() == pytest.approx(pc.sum(want["v"]).as_py(), rel=1e-12)
    assert sorted(got["name"].to_pylist()) == sorted(want["name"].to_pylist())

    # every file's manifest metrics equal the file's true contents
    ids = {n: field_id(tbl, n) for n in ("id", "name", "v", "cat")}
    tasks = list(tbl.scan().plan_files())
    assert len(tasks) > (4 if layout == "plain" else 8)   # rolled / several runs
    total = 0
    for task in tasks:
        df = task.file
        path = df.file_path.removeprefix("file://")
        data = pq.read_table(path)
        assert data.num_rows == df.record_count
        total += data.num_rows
        for name, fid in ids.items():
            col = data[name]
            assert df.value_counts[fid] == len(col), name
            assert df.null_value_counts[fid] == col.null_count, name
        lo = int.from_bytes(df.lower_bounds[ids["id"]], "little", signed=True)
        hi = int.from_bytes(df.upper_bounds[ids["id"]], "little", signed=True)
        assert (lo, hi) == (pc.min(data["id"]).as_py(), pc.max(data["id"]).as_py())
        names = data["name"].drop_null()
        assert df.lower_bounds[ids["name"]].decode() == min(names.to_pylist())[:16]
        if layout == "partitioned_sorted":
            assert len(pc.unique(data["cat"])) == 1
            assert f"/cat={data['cat'][0].as_py()}/" in path
            id_list = data["id"].to_pylist()
            assert id_list == sorted(id_list, reverse=True)   # one sorted run per file
    assert total == want.num_rows
    if layout == "plain":   # files roll at the target: only the last one is smaller
        assert sum(t.file.file_size_in_bytes < target for t in tasks) <= 1

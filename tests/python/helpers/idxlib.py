"""Shared pieces of the scalar-index acceptance tests and of bench/filter.

* Hs: ctypes binding of the public C API used by the tests (catalogs, tables,
  appends, deletes, scans, and the index API of include/hyperstream/index.h:
  hs_table_add_index, hs_table_drop_index, hs_table_list_indexes,
  hs_table_explain, hs_scan_get_index_stats).  Scans are read through the
  Arrow C stream by hand, so that hs_scan_get_index_stats can be called
  after the last batch and before the stream (which owns the hs_scan) is
  released.
* Oracle: the independent answer.  pyiceberg plans the table (live data
  files and the delete files that apply to them: Parquet position deletes or
  Puffin deletion vectors, decoded with pyiceberg's Puffin reader); DuckDB
  reads the live data files with read_parquet(filename, file_row_number) and
  the deleted (file, position) pairs are anti-joined away.  Filters are then
  evaluated by DuckDB over that relation.
* random_table / ExprGen: random tables with nulls, NaN, +-0.0, +-inf,
  empty and non-ASCII strings, int64 extremes; random filter expressions in
  the subset of the filter grammar that DuckDB evaluates with the same
  meaning (include/hyperstream/table.h "filter"; src/expr/expr.h), with
  literals drawn mostly from the data so that equality and IN hit rows.
* compare(): our rows against DuckDB's, by the unique `rid` column, then
  every column value (floats bitwise, NaN == NaN, -0.0 != 0.0).

Nothing here compares our output against our own output.
"""
import ctypes
import datetime as dt
import decimal
import json
import os
import pathlib

import numpy as np
import pyarrow as pa

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]


def build_dir():
    b = pathlib.Path(os.environ.get("HS_BUILD", "build"))
    return b if b.is_absolute() else REPO / b


LIB = build_dir() / "libhyperstream_testing.so"
CLI = build_dir() / "hyperstream"

# ----------------------------------------------------------------------------
# ctypes binding

vp, cp, i64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64


class Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512),
                ("src_file", ctypes.c_char_p), ("src_line", ctypes.c_int)]


class Stream(ctypes.Structure):
    _fields_ = [("get_schema", vp), ("get_next", vp), ("get_last_error", vp),
                ("release", vp), ("private_data", vp)]


class CArray(ctypes.Structure):
    _fields_ = [("length", i64), ("null_count", i64), ("offset", i64), ("n_buffers", i64),
                ("n_children", i64), ("buffers", vp), ("children", vp), ("dictionary", vp),
                ("release", vp), ("private_data", vp)]


class CSchema(ctypes.Structure):
    _fields_ = [("format", vp), ("name", vp), ("metadata", vp), ("flags", i64),
                ("n_children", i64), ("children", vp), ("dictionary", vp), ("release", vp),
                ("private_data", vp)]


_GET_SCHEMA = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp)
_GET_NEXT = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp)
_GET_ERR = ctypes.CFUNCTYPE(ctypes.c_char_p, vp)
_RELEASE = ctypes.CFUNCTYPE(None, vp)


class CreateOpts(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),  # 0: the 0.1 layout
                ("arrow_schema", vp), ("schema_json", cp), ("partition_spec", cp),
                ("sort_order", cp), ("property_keys", vp), ("property_values", vp),
                ("n_properties", ctypes.c_int), ("format_version", ctypes.c_int),
                ("location", cp)]


class ScanOpts(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),  # 0: the 0.1 layout
                ("use_snapshot_id", ctypes.c_int), ("snapshot_id", i64),
                ("use_as_of", ctypes.c_int), ("as_of_ms", i64), ("ref", cp),
                ("columns", vp), ("n_columns", ctypes.c_int), ("filter", cp),
                ("include_row_lineage", ctypes.c_int), ("batch_size", i64)]


class IndexOpts(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),  # 0: the 0.1 layout
                ("kind", cp), ("params_json", cp), ("progress", vp), ("progress_ctx", vp),
                ("n_threads", ctypes.c_int)]


INDEX_STATS_FIELDS = ["files_planned", "files_pruned_by_index", "files_indexed", "index_lookups",
                      "index_files_skipped", "row_groups_read", "row_groups_skipped",
                      "pages_decoded", "pages_skipped", "rows_decoded", "rows_selected_by_index",
                      "rows_emitted"]


class IndexStats(ctypes.Structure):
    # output structs: the caller sets struct_size (the library writes no more)
    _fields_ = [("struct_size", ctypes.c_size_t)] + [(f, i64) for f in INDEX_STATS_FIELDS]

    def __init__(self):
        super().__init__(ctypes.sizeof(IndexStats))


SCAN_STATS_FIELDS = ["manifests_total", "manifests_pruned", "data_files_total",
                     "data_files_pruned", "delete_files", "rows_deleted", "rows_emitted"]


class ScanStats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t)] + [(f, i64) for f in SCAN_STATS_FIELDS]

    def __init__(self):
        super().__init__(ctypes.sizeof(ScanStats))


STATUS = ["HS_OK", "HS_IO", "HS_CORRUPT", "HS_INVALID", "HS_NOMEM", "HS_CONFLICT",
          "HS_NOT_FOUND", "HS_UNSUPPORTED", "HS_INTERNAL", "HS_CANCELLED"]


class HsFail(Exception):
    """A non-OK status: .code (int), .status ('HS_INVALID'), .msg."""

    def __init__(self, code, msg, what=""):
        self.code = code
        self.status = STATUS[code] if 0 <= code < len(STATUS) else str(code)
        self.msg = msg
        super().__init__(f"{what}{': ' if what else ''}{self.status}: {msg}")


class StreamFail(Exception):
    pass


INDEX_SYMBOLS = ("hs_table_add_index", "hs_table_drop_index", "hs_table_list_indexes",
                 "hs_table_explain", "hs_scan_get_index_stats")


class Hs:
    """The public C API through ctypes; handles are ctypes.c_void_p."""

    def __init__(self, path=LIB):
        self.lib = L = ctypes.CDLL(str(path))
        P = ctypes.POINTER
        sigs = {
            "hs_catalog_open_path": [cp, P(vp), vp],
            "hs_catalog_open_sql": [cp, cp, cp, P(vp), vp],
            "hs_catalog_create_namespace": [vp, cp, vp],
            "hs_table_create": [vp, cp, vp, P(vp), vp],
            "hs_table_open": [vp, cp, P(vp), vp],
            "hs_table_open_metadata": [cp, P(vp), vp],
            "hs_table_refresh": [vp, vp],
            "hs_table_append": [vp, vp, vp],
            "hs_table_delete": [vp, cp, P(i64), vp],
            "hs_table_overwrite": [vp, vp, cp, vp],
            "hs_table_scan": [vp, vp, vp, vp],
            "hs_scan_plan": [vp, vp, P(vp), vp],
            "hs_scan_stream": [vp, vp, vp],
            "hs_scan_files_json": [vp, P(vp), vp],
            "hs_table_properties": [vp, P(vp), vp],
            # index API (include/hyperstream/index.h)
            "hs_table_add_index": [vp, cp, vp, vp],
            "hs_table_drop_index": [vp, cp, cp, vp],
            "hs_table_list_indexes": [vp, P(vp), vp],
            "hs_table_remove_orphan_indexes": [vp, i64, P(i64), vp],
            "hs_table_explain": [vp, vp, P(vp), vp],
            "hs_table_refresh_indexes": [vp, vp, P(i64), vp],
        }
        self.missing = []
        for name, args in sigs.items():
            if not hasattr(L, name):
                self.missing.append(name)
                continue
            fn = getattr(L, name)
            fn.argtypes = args
            fn.restype = ctypes.c_int
        L.hs_table_metadata_location.argtypes = [vp]
        L.hs_table_metadata_location.restype = cp
        L.hs_table_location.argtypes = [vp]
        L.hs_table_location.restype = cp
        L.hs_table_close.argtypes = [vp]
        L.hs_catalog_close.argtypes = [vp]
        L.hs_scan_free.argtypes = [vp]
        L.hs_scan_get_stats.argtypes = [vp, vp]
        L.hs_string_free.argtypes = [vp]
        if hasattr(L, "hs_scan_get_index_stats"):
            L.hs_scan_get_index_stats.argtypes = [vp, vp]
            L.hs_scan_get_index_stats.restype = None
        else:
            self.missing.append("hs_scan_get_index_stats")

    @property
    def has_index_api(self):
        return not any(s in self.missing for s in INDEX_SYMBOLS)

    # -- plumbing
    def call(self, fn, *args, what=""):
        err = Err()
        rc = getattr(self.lib, fn)(*args, ctypes.byref(err))
        if rc != 0:
            raise HsFail(rc, err.msg.decode(errors="replace"), what or fn)

    def _take_string(self, p):
        try:
            return ctypes.string_at(p.value).decode() if p.value else None
        finally:
            self.lib.hs_string_free(p)

    # -- catalogs and tables
    def path_catalog(self, warehouse=None):
        c = vp()
        self.call("hs_catalog_open_path", str(warehouse).encode() if warehouse else None,
                  ctypes.byref(c))
        return c

    def sql_catalog(self, db, warehouse, name="default"):
        c = vp()
        self.call("hs_catalog_open_sql", str(db).encode(), name.encode(), str(warehouse).encode(),
                  ctypes.byref(c))
        return c

    def create(self, cat, name, schema, spec=None, sort=None, fv=2, props=None):
        c_schema = CSchema()
        addr = ctypes.addressof(c_schema)
        schema._export_to_c(addr)
        o = CreateOpts()
        o.arrow_schema = addr
        o.partition_spec = spec.encode() if spec else None
        o.sort_order = sort.encode() if sort else None
        o.format_version = fv
        keep = []
        if props:
            ks = (cp * len(props))(*[k.encode() for k in props])
            vs = (cp * len(props))(*[str(v).encode() for v in props.values()])
            keep += [ks, vs]
            o.property_keys = ctypes.cast(ks, vp)
            o.property_values = ctypes.cast(vs, vp)
            o.n_properties = len(props)
        t = vp()
        try:
            self.call("hs_table_create", cat, name.encode(), ctypes.byref(o), ctypes.byref(t))
        finally:
            pa.Schema._import_from_c(addr)  # we own the exported schema: release it
        return t

    def open(self, cat, name):
        t = vp()
        self.call("hs_table_open", cat, name.encode(), ctypes.byref(t))
        return t

    def close(self, t):
        self.lib.hs_table_close(t)

    def close_catalog(self, c):
        self.lib.hs_catalog_close(c)

    def refresh(self, t):
        self.call("hs_table_refresh", t)

    def metadata_location(self, t):
        return self.lib.hs_table_metadata_location(t).decode()

    def location(self, t):
        return self.lib.hs_table_location(t).decode()

    def properties(self, t):
        p = vp()
        self.call("hs_table_properties", t, ctypes.byref(p))
        return json.loads(self._take_string(p))

    def append(self, t, table):
        s = Stream()
        reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        reader._export_to_c(ctypes.addressof(s))
        self.call("hs_table_append", t, ctypes.byref(s))

    def delete(self, t, flt):
        n = i64()
        self.call("hs_table_delete", t, flt.encode(), ctypes.byref(n), what=f"delete {flt!r}")
        return n.value

    # -- scans
    @staticmethod
    def _scan_opts(flt, columns):
        o = ScanOpts()
        o.filter = flt.encode() if flt else None
        keep = None
        if columns:
            keep = (cp * len(columns))(*[c.encode() for c in columns])
            o.columns = ctypes.cast(keep, vp)
            o.n_columns = len(columns)
        return o, keep

    def scan(self, t, flt=None, columns=None, stats=False):
        """Rows matching flt as a pyarrow.Table.  stats=True: returns
        (table, index_stats dict or None, scan_stats dict), the counters read
        after the last batch and before the stream is released."""
        o, keep = self._scan_opts(flt, columns)
        s = vp()
        self.call("hs_scan_plan", t, ctypes.byref(o), ctypes.byref(s), what=f"plan {flt!r}")
        scan_handle = s.value
        st = Stream()
        self.call("hs_scan_stream", s, ctypes.byref(st), what=f"stream {flt!r}")
        addr = ctypes.addressof(st)
        try:
            csch = CSchema()
            rc = _GET_SCHEMA(st.get_schema)(addr, ctypes.addressof(csch))
            if rc != 0:
                raise StreamFail(f"get_schema {rc}: {_GET_ERR(st.get_last_error)(addr)}")
            schema = pa.Schema._import_from_c(ctypes.addressof(csch))
            batches = []
            while True:
                arr = CArray()
                rc = _GET_NEXT(st.get_next)(addr, ctypes.addressof(arr))
                if rc != 0:
                    msg = _GET_ERR(st.get_last_error)(addr)
                    raise StreamFail(f"filter {flt!r}: get_next {rc}: "
                                     f"{msg.decode(errors='replace') if msg else ''}")
                if not arr.release:
                    break
                batches.append(pa.RecordBatch._import_from_c(ctypes.addressof(arr), schema))
            ist = None
            sst = ScanStats()
            self.lib.hs_scan_get_stats(vp(scan_handle), ctypes.byref(sst))
            if "hs_scan_get_index_stats" not in self.missing:
                x = IndexStats()
                self.lib.hs_scan_get_index_stats(vp(scan_handle), ctypes.byref(x))
                ist = {f: getattr(x, f) for f in INDEX_STATS_FIELDS}
        finally:
            if st.release:
                _RELEASE(st.release)(addr)
        del keep
        table = pa.Table.from_batches(batches, schema)
        if stats:
            return table, ist, {f: getattr(sst, f) for f in SCAN_STATS_FIELDS}
        return table

    def files(self, t, flt=None):
        o, keep = self._scan_opts(flt, None)
        s = vp()
        self.call("hs_scan_plan", t, ctypes.byref(o), ctypes.byref(s))
        p = vp()
        try:
            self.call("hs_scan_files_json", s, ctypes.byref(p))
        finally:
            self.lib.hs_scan_free(s)
        del keep
        return json.loads(self._take_string(p))

    # -- indexes
    def add_index(self, t, column, kind=None, params=None, n_threads=1):
        o = IndexOpts()
        o.kind = kind.encode() if kind else None
        o.params_json = json.dumps(params).encode() if params else None
        o.n_threads = n_threads
        self.call("hs_table_add_index", t, column.encode(), ctypes.byref(o),
                  what=f"add_index {column} {kind}")

    def drop_index(self, t, column, kind=None):
        self.call("hs_table_drop_index", t, column.encode(), kind.encode() if kind else None,
                  what=f"drop_index {column} {kind}")

    def list_indexes(self, t):
        p = vp()
        self.call("hs_table_list_indexes", t, ctypes.byref(p))
        return json.loads(self._take_string(p))

    def remove_orphan_indexes(self, t, older_than_ms=-1):
        n = i64()
        self.call("hs_table_remove_orphan_indexes", t, older_than_ms, ctypes.byref(n))
        return n.value

    def refresh_indexes(self, t, n_threads=1):
        """Index catch-up (hs_table_refresh_indexes): registry entries added."""
        o = IndexOpts()
        o.n_threads = n_threads
        n = i64()
        self.call("hs_table_refresh_indexes", t, ctypes.byref(o), ctypes.byref(n),
                  what="refresh_indexes")
        return n.value

    def explain(self, t, flt=None, columns=None):
        o, keep = self._scan_opts(flt, columns)
        p = vp()
        self.call("hs_table_explain", t, ctypes.byref(o), ctypes.byref(p), what=f"explain {flt!r}")
        del keep
        return json.loads(self._take_string(p))


def find_key(obj, key):
    """The first value of `key` anywhere in a JSON tree (depth first), or None."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = find_key(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = find_key(v, key)
            if r is not None:
                return r
    return None


def latest_metadata(table_dir):
    """The metadata file named by a path table's version-hint.text."""
    hint = pathlib.Path(table_dir, "metadata", "version-hint.text").read_text().strip()
    return str(pathlib.Path(table_dir, "metadata", f"v{hint}.metadata.json"))


def strip_file_scheme(p):
    if p.startswith("file://"):
        return p[len("file://"):]
    if p.startswith("file:"):
        return p[len("file:"):]
    return p


# ----------------------------------------------------------------------------
# The oracle: pyiceberg plans, DuckDB reads the Parquet files and filters.

def iceberg_live_files(metadata_path):
    """[(data file path, sorted deleted positions)] of the current snapshot,
    planned by pyiceberg; position deletes decoded from Parquet delete files
    or Puffin deletion vectors."""
    import pyarrow.parquet as pq
    from pyiceberg.table import StaticTable

    st = StaticTable.from_metadata(str(metadata_path))
    out = []
    cache = {}
    for task in st.scan().plan_files():
        path = strip_file_scheme(task.file.file_path)
        dels = set()
        for d in task.delete_files:
            dpath = strip_file_scheme(d.file_path)
            fmt = str(getattr(d.file_format, "value", d.file_format)).upper()
            if fmt == "PUFFIN":
                if dpath not in cache:
                    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
                    from pyiceberg.table.puffin import PuffinFile
                    pf = PuffinFile(_read_bytes(dpath))
                    cache[dpath] = {
                        strip_file_scheme(v.referenced_data_file):
                            (v.to_vector().to_pylist() if v._bitmaps else [])
                        for v in deletion_vectors_from_puffin_file(pf)}
                dels.update(cache[dpath].get(path, []))
            else:
                if dpath not in cache:
                    src = ("s3://" + dpath.split("://", 1)[1]
                           if dpath.startswith(("s3://", "s3a://")) else dpath)
                    cache[dpath] = pq.read_table(src, columns=["file_path", "pos"])
                dt_ = cache[dpath]
                fp = [strip_file_scheme(x) for x in dt_.column("file_path").to_pylist()]
                pos = dt_.column("pos").to_pylist()
                dels.update(p for f, p in zip(fp, pos) if f == path)
        out.append((path, sorted(dels)))
    return out


def _read_bytes(path):
    """A file's bytes: local paths directly, s3:// through pyarrow's own S3
    client (an oracle independent of ours; it takes the AWS_* variables)."""
    if path.startswith(("s3://", "s3a://")):
        import pyarrow.fs as pafs
        fs, key = pafs.FileSystem.from_uri("s3://" + path.split("://", 1)[1])
        with fs.open_input_stream(key) as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def _object_files_table(fnames, columns):
    """The data files on an object store read by pyarrow (DuckDB's httpfs is
    not installed here), with the filename and file_row_number columns that
    DuckDB's read_parquet adds."""
    import pyarrow.parquet as pq
    parts = []
    for f in fnames:
        t = pq.read_table("s3://" + f.split("://", 1)[1], columns=columns)
        t = t.append_column("filename", pa.array([f] * t.num_rows, pa.string()))
        parts.append(t.append_column("file_row_number",
                                     pa.array(np.arange(t.num_rows, dtype=np.int64))))
    return pa.concat_tables(parts, promote_options="permissive")


class Oracle:
    """DuckDB over the live data files of an Iceberg table, deletes applied
    (files on S3 read by pyarrow first)."""

    def __init__(self, metadata_path, columns):
        import duckdb

        self.columns = list(columns)
        self.con = duckdb.connect()
        self.con.execute("SET threads TO 1")
        files = iceberg_live_files(metadata_path)
        self.n_files = len(files)
        self.n_deleted = sum(len(d) for _, d in files)
        fnames = [f for f, _ in files]
        dels = pa.table({"filename": pa.array([f for f, d in files for _ in d], pa.string()),
                         "pos": pa.array([p for _, d in files for p in d], pa.int64())})
        self.con.register("dels", dels)
        cols = ", ".join(f'"{c}"' for c in self.columns)
        if fnames and fnames[0].startswith(("s3://", "s3a://")):
            self.con.register("files", _object_files_table(fnames, self.columns))
            self.con.execute(
                f"CREATE TABLE live AS SELECT {cols} FROM files r WHERE NOT EXISTS (SELECT 1 "
                f"FROM dels WHERE dels.filename = r.filename AND dels.pos = r.file_row_number)")
        elif fnames:
            self.con.execute(
                f"CREATE TABLE live AS SELECT {cols} FROM read_parquet(?, hive_partitioning=false, "
                f"filename=true, "
                f"file_row_number=true) r WHERE NOT EXISTS (SELECT 1 FROM dels "
                f"WHERE dels.filename = r.filename AND dels.pos = r.file_row_number)", [fnames])
        else:
            raise ValueError("table has no live data files")
        self.n_rows = self.con.execute("SELECT count(*) FROM live").fetchall()[0][0]

    def query(self, where, order="rid"):
        cols = ", ".join(f'"{c}"' for c in self.columns)
        return self.con.sql(
            f"SELECT {cols} FROM live WHERE {where} ORDER BY {order}").to_arrow_table()

    def count(self, where):
        return self.con.execute(f"SELECT count(*) FROM live WHERE {where}").fetchall()[0][0]


# ----------------------------------------------------------------------------
# Comparison

def _float_equal(g, w):
    bits = {4: np.uint32, 8: np.uint64}[g.type.bit_width // 8]
    if not g.is_null().equals(w.is_null()):
        return False
    gz = g.fill_null(0).to_numpy(zero_copy_only=False)
    wz = w.fill_null(0).to_numpy(zero_copy_only=False)
    gn, wn = np.isnan(gz), np.isnan(wz)
    return bool(np.array_equal(gn, wn) and np.array_equal(gz[~gn].view(bits), wz[~wn].view(bits)))


def _norm_type(t):
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    return t


def compare(got, want, what="", key="rid"):
    """'' when `got` (our scan) holds the same rows as `want` (the oracle,
    ordered by key), else a description of the first difference."""
    if got.num_rows != want.num_rows:
        gk = set(got.column(key).to_pylist())
        wk = set(want.column(key).to_pylist())
        extra, missing = sorted(gk - wk)[:5], sorted(wk - gk)[:5]
        return (f"{what}: {got.num_rows} rows, want {want.num_rows} "
                f"(extra {key}s {extra}, missing {missing})")
    if got.num_rows == 0:
        return ""
    got = got.sort_by(key)
    for name in want.column_names:
        g = got.column(name).combine_chunks()
        w = want.column(name).combine_chunks()
        if _norm_type(g.type) != _norm_type(w.type):
            try:
                g = g.cast(w.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return f"{what}: column {name}: type {g.type} vs {w.type}"
        else:
            g, w = g.cast(_norm_type(g.type)), w.cast(_norm_type(w.type))
        if pa.types.is_floating(w.type):
            ok = _float_equal(g, w)
        else:
            ok = g.equals(w)
        if not ok:
            gl, wl = g.to_pylist(), w.to_pylist()
            keys = want.column(key).to_pylist()
            for i, (x, y) in enumerate(zip(gl, wl)):
                if repr(x) != repr(y):
                    return f"{what}: column {name}, {key}={keys[i]}: got {x!r}, want {y!r}"
            return f"{what}: column {name} differs"
    return ""


# ----------------------------------------------------------------------------
# Random tables

STRINGS = ["", "a", "b", "B", "ab", "abc", "abd", "z", "zz", "o'neil", "\u00e9t\u00e9",
           "\u65e5\u672c", "a b", "%", "_x", "\U0001F600"]
SPECIAL_F = [0.0, -0.0, 1.5, -2.25, float("nan"), float("inf"), float("-inf"), 100.0]
BIG_EDGES = [-(2 ** 63), 2 ** 63 - 1, 0, -1, 1, 2 ** 53, -(2 ** 53) - 1]
TS0 = dt.datetime(2023, 12, 30, 0, 0, 0)
D0 = dt.date(2023, 12, 1)

# name -> kind; the schema of random_table
COLUMNS = {"rid": "int", "k": "int", "big": "int", "i32": "int", "f": "float", "cat": "str",
           "name": "str", "flag": "bool", "d": "date", "ts": "ts", "dec": "dec"}
SCHEMA = pa.schema([("rid", pa.int64()), ("k", pa.int64()), ("big", pa.int64()),
                    ("i32", pa.int32()), ("f", pa.float64()), ("cat", pa.string()),
                    ("name", pa.string()), ("flag", pa.bool_()), ("d", pa.date32()),
                    ("ts", pa.timestamp("us")), ("dec", pa.decimal128(9, 2))])


def _nulls(rng, n, p):
    return rng.random(n) < p


def random_table(rng, n, first_rid=0, null_p=0.1):
    """n rows of SCHEMA; rid = first_rid.. (unique), every other column
    nullable with probability null_p, plus the edge values listed above."""
    def masked(values, typ, p=null_p):
        m = _nulls(rng, n, p)
        return pa.array(values, typ, mask=m)

    k = rng.integers(-20, 21, n)
    big = rng.integers(-(2 ** 62), 2 ** 62, n, dtype=np.int64)
    e = rng.random(n) < 0.05
    big[e] = rng.choice(np.array(BIG_EDGES, dtype=np.int64), int(e.sum()))
    i32 = rng.integers(-1000, 1000, n).astype(np.int32)
    f = np.round(rng.normal(0, 50, n), 2)
    e = rng.random(n) < 0.15
    f[e] = rng.choice(np.array(SPECIAL_F), int(e.sum()))
    cat = [STRINGS[j] for j in rng.integers(0, len(STRINGS), n)]
    # high cardinality, variable length, some empty
    name = ["" if x < 3 else f"n{x:x}" * (1 + x % 3) for x in rng.integers(0, 1 << 20, n)]
    flag = rng.random(n) < 0.3
    d = [D0 + dt.timedelta(days=int(x)) for x in rng.integers(0, 120, n)]
    ts = [TS0 + dt.timedelta(seconds=int(x)) for x in rng.integers(0, 86400 * 10, n)]
    dec = [decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-99999, 99999, n)]
    return pa.table({
        "rid": pa.array(np.arange(first_rid, first_rid + n, dtype=np.int64)),
        "k": masked(k, pa.int64()),
        "big": masked(big, pa.int64()),
        "i32": masked(i32, pa.int32()),
        "f": masked(f, pa.float64()),
        "cat": masked(cat, pa.string()),
        "name": masked(name, pa.string()),
        "flag": masked(flag, pa.bool_()),
        "d": masked(d, pa.date32()),
        "ts": masked(ts, pa.timestamp("us")),
        "dec": masked(dec, pa.decimal128(9, 2)),
    }, schema=SCHEMA)


# ----------------------------------------------------------------------------
# Random filter expressions

def lit(kind, v):
    """SQL text of literal v for a column of `kind`: the same text means the
    same value to our filter parser and to DuckDB."""
    if kind == "int":
        return str(int(v))
    if kind == "float":
        if isinstance(v, int):
            return str(v)
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError("no literal for NaN/inf in the basic grammar")
        r = repr(float(v))
        if "e" in r:
            r = f"{v:.2f}"
        return r
    if kind == "str":
        return "'" + v.replace("'", "''") + "'"
    if kind == "bool":
        return "true" if v else "false"
    if kind == "date":
        return f"'{v.isoformat()}'"
    if kind == "ts":
        return f"'{v.strftime('%Y-%m-%dT%H:%M:%S')}'" if v.microsecond == 0 else \
            f"'{v.strftime('%Y-%m-%dT%H:%M:%S.%f')}'"
    if kind == "dec":
        return str(v)
    raise ValueError(kind)


OPS = ["=", "==", "!=", "<>", "<", "<=", ">", ">="]
MIRROR = {"=": "=", "==": "==", "!=": "!=", "<>": "<>", "<": ">", "<=": ">=", ">": "<",
          ">=": "<="}


class ExprGen:
    """Random filters over the columns `cols` (name -> kind) of `data` (a
    pyarrow Table whose values seed the literals).  ext=True adds SQL forms
    of src/expr/expr.h (BETWEEN, LIKE prefix, NaN literal)."""

    def __init__(self, rng, data, cols, ext=False):
        self.rng = rng
        self.cols = dict(cols)
        self.names = list(self.cols)
        self.ext = ext
        self.pool = {}
        for c, kind in self.cols.items():
            vals = [v for v in data.column(c).to_pylist() if v is not None]
            if kind == "float":
                vals = [v for v in vals if v == v and abs(v) != float("inf")]
            # a sample of the data's values plus edge and absent values
            idx = rng.choice(len(vals), min(200, len(vals)), replace=False) if vals else []
            pool = [vals[i] for i in idx]
            if kind == "int":
                pool += [-21, 21, 0, -1, 10 ** 12] + (BIG_EDGES if c == "big" else [])
            elif kind == "float":
                pool += [0.0, -0.0, 1.5, 100.0, -1000.5, 3]
            elif kind == "str":
                pool += STRINGS + ["aa", "\u00e9", "zzz", "n"]
            elif kind == "bool":
                pool += [True, False]
            elif kind == "date":
                pool += [D0 - dt.timedelta(days=1), D0 + dt.timedelta(days=200)]
            elif kind == "ts":
                pool += [TS0, TS0 + dt.timedelta(days=3, microseconds=5),
                         TS0 - dt.timedelta(days=1)]
            elif kind == "dec":
                pool += [decimal.Decimal("0.00"), decimal.Decimal("-0.01"),
                         decimal.Decimal("999.99")]
            self.pool[c] = pool

    def _val(self, c):
        p = self.pool[c]
        return p[int(self.rng.integers(0, len(p)))]

    def leaf(self, c=None):
        rng = self.rng
        c = c or self.names[int(rng.integers(0, len(self.names)))]
        kind = self.cols[c]
        r = rng.random()
        q = f'"{c}"' if rng.random() < 0.1 else c
        if self.ext and r < 0.12:
            return self._ext_leaf(c, q, kind)
        if r < 0.55:
            op = OPS[int(rng.integers(0, len(OPS)))]
            if kind == "bool":
                op = ["=", "!=", "<>"][int(rng.integers(0, 3))]
            v = lit(kind, self._val(c))
            # (`false <> flag` needs the SQL parser: the simple grammar reads a
            # leading true/false as the constant predicate)
            if rng.random() < 0.15 and (kind != "bool" or self.ext):
                return f"{v} {MIRROR[op]} {q}"
            return f"{q} {op} {v}"
        if r < 0.8:
            n = int(rng.integers(1, 6))
            vs = ", ".join(lit(kind, self._val(c)) for _ in range(n))
            neg = "NOT " if rng.random() < 0.3 else ""
            return f"{q} {neg}IN ({vs})"
        if r < 0.95:
            return f"{q} IS {'NOT ' if rng.random() < 0.5 else ''}NULL"
        return "TRUE" if rng.random() < 0.5 else "FALSE"

    def _ext_leaf(self, c, q, kind):
        rng = self.rng
        r = rng.random()
        if kind in ("int", "float", "date", "ts", "dec") and r < 0.5:
            a, b = sorted([self._val(c), self._val(c)])
            neg = "NOT " if rng.random() < 0.2 else ""
            return f"{q} {neg}BETWEEN {lit(kind, a)} AND {lit(kind, b)}"
        if kind == "str":
            v = self._val(c)
            pre = v[: int(rng.integers(0, 3))].replace("%", "").replace("_", "")
            return f"{q} LIKE {lit('str', pre + '%')}"
        if kind == "float":
            op = ["=", "!=", "<", ">=", ">"][int(rng.integers(0, 5))]
            return f"{q} {op} 'NaN'::double"
        return self.leaf(c)

    def expr(self, depth=0, focus=None):
        """A random boolean expression; focus: column names preferred for
        leaves (the indexed ones)."""
        rng = self.rng
        if depth >= 3 or rng.random() < (0.45 if depth == 0 else 0.6):
            c = None
            if focus and rng.random() < 0.8:
                c = focus[int(rng.integers(0, len(focus)))]
            return self.leaf(c)
        r = rng.random()
        if r < 0.15:
            return f"NOT ({self.expr(depth + 1, focus)})"
        op = "AND" if r < 0.65 else "OR"
        n = int(rng.integers(2, 4))
        return "(" + f" {op} ".join(self.expr(depth + 1, focus) for _ in range(n)) + ")"

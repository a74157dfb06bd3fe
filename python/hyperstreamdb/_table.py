"""Tables and queries: the user-facing API over ``_core.TableHandle``.

Write semantics (as the original HyperStreamDB Python API):
``write_pandas`` / ``write_arrow`` *buffer* rows in memory (pyarrow tables,
no copy of Arrow input); ``commit()`` writes them as Parquet files and
publishes them in ONE Iceberg snapshot.  Reads see committed data only.
``Table(path, autocommit=True)`` commits on every write instead.  Every other
mutating method (delete, overwrite, schema / spec / sort-order changes,
properties, rollback, tags, add_index) commits immediately.

A table that does not exist yet is created by the first ``commit()``, from
the schema of the buffered rows (plus the ``partition_by`` / ``sort_order`` /
``properties`` / ``format_version`` given to the constructor).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from . import _core
from ._progress import Progress, ProgressArg

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_VECTOR_KEYS = {"column", "query", "k", "metric", "ef_search", "nprobe", "distance_column",
                "rerank"}


def _err(cls, msg: str, status: str):
    e = cls(msg)
    e.status = status
    return e


def _normalize_path(path) -> str:
    if isinstance(path, Table):
        return path.path
    try:
        p = os.fspath(path)
    except TypeError:
        raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}") from None
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    if not p:
        raise ValueError("path must not be empty")
    if "://" in p:
        return p
    return os.path.abspath(p)


def _as_of_ms(as_of) -> Optional[int]:
    if as_of is None:
        return None
    if isinstance(as_of, _dt.datetime):
        aware = as_of if as_of.tzinfo is not None else as_of.astimezone()  # naive = local
        return (aware - _EPOCH) // _dt.timedelta(milliseconds=1)
    if isinstance(as_of, _dt.date):
        return _as_of_ms(_dt.datetime(as_of.year, as_of.month, as_of.day))
    if isinstance(as_of, np.datetime64):
        return int(as_of.astype("datetime64[ms]").astype(np.int64))
    raise TypeError(f"as_of must be a datetime (naive = local time), not "
                    f"{type(as_of).__name__}; for a snapshot id pass snapshot_id=")


def _time_ms(t) -> int:
    """Epoch milliseconds of a datetime / date / numpy datetime64, of a
    timedelta (that long before now), or of an int (already milliseconds)."""
    if isinstance(t, _dt.timedelta):
        return int((_dt.datetime.now().timestamp() - t.total_seconds()) * 1000)
    if isinstance(t, (int, np.integer)) and not isinstance(t, bool):
        return int(t)
    return _as_of_ms(t)


def _columns_arg(columns) -> Optional[List[str]]:
    if columns is None:
        return None
    if isinstance(columns, str):
        return [columns]
    try:
        cols = list(columns)
    except TypeError:
        raise TypeError(f"columns must be a list of str, not {type(columns).__name__}") from None
    for c in cols:
        if not isinstance(c, str):
            raise TypeError(f"columns must be a list of str, got an item of type "
                            f"{type(c).__name__}")
    return cols


def _query_vector(q, what="query") -> np.ndarray:
    if (type(q) is np.ndarray and q.dtype == np.float32 and q.ndim == 1 and q.size
            and q.flags.c_contiguous and np.isfinite(q).all()):
        return q      # the common case, without copies (a search runs in ~0.1 ms)
    if isinstance(q, (str, bytes)) or q is None:
        raise TypeError(f"{what} must be a vector of numbers, not {type(q).__name__}")
    try:
        a = np.asarray(q, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must be a vector of numbers: {e}") from None
    if a.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{what} is empty")
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise ValueError(f"{what} has a non-finite value (NaN or infinity) at index {bad[0]}")
    return np.ascontiguousarray(a)


def _query_vectors(q, what="query") -> np.ndarray:
    """One query (1-D) or a batch of queries (2-D: one row per query)."""
    if isinstance(q, (list, tuple)) and q and not isinstance(q[0], (int, float, np.number)):
        try:
            q = np.asarray(q, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{what} must be a vector of numbers or a 2-D array of them: "
                            f"{e}") from None
    if isinstance(q, np.ndarray) and q.ndim == 2:
        if q.shape[0] == 0 or q.shape[1] == 0:
            raise ValueError(f"{what}: an empty batch of shape {q.shape}")
        a = np.ascontiguousarray(q, dtype=np.float32)
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            r, c = divmod(int(bad[0]), a.shape[1])
            raise ValueError(f"{what} has a non-finite value (NaN or infinity) in row {r} at "
                             f"index {c}")
        return a
    return _query_vector(q, what)


def _to_arrow_table(data) -> pa.Table:
    """Anything Arrow-like -> pyarrow.Table without copying Arrow buffers.
    Query results come through here, not pa.table(): that asks pyarrow's
    pandas shim whether its argument is a DataFrame, which imports pandas
    (0.5 to 1.4 s of a fresh process's first query, measured by bench/s3's
    start-up line) even for a stream."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if _is_pandas(data):
        return _pandas_to_arrow(data, None)
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data).read_all()
    if hasattr(data, "__arrow_c_array__"):
        batch = pa.record_batch(data)
        return pa.Table.from_batches([batch])
    if isinstance(data, dict):
        return pa.table(data)
    if isinstance(data, (list, tuple)) and data and all(isinstance(b, pa.RecordBatch) for b in data):
        return pa.Table.from_batches(list(data))
    raise TypeError(f"expected Arrow data (pyarrow Table / RecordBatch / RecordBatchReader, or "
                    f"an object with __arrow_c_stream__ / __arrow_c_array__ such as a polars "
                    f"DataFrame), a pandas DataFrame or a dict of columns; got "
                    f"{type(data).__name__}")


def _is_pandas(obj) -> bool:
    mod = type(obj).__module__
    return mod.startswith("pandas") and type(obj).__name__ == "DataFrame"


def _vectorize(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column of equal-length lists of floats (how pandas holds embeddings)
    becomes fixed_size_list<float32>[d]: a vector column whose dimension the
    table records and enforces.  Other columns are returned unchanged."""
    t = arr.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return arr
    if not (pa.types.is_floating(t.value_type) or pa.types.is_integer(t.value_type)):
        return arr
    if pa.types.is_integer(t.value_type):
        return arr  # integer lists stay integer lists
    lengths = pa.compute.list_value_length(arr).drop_null()
    if len(lengths) == 0:
        return arr
    mn, mx = pa.compute.min_max(lengths).values()
    if mn.as_py() != mx.as_py() or mn.as_py() == 0:
        return arr
    d = mn.as_py()
    flat = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if flat.null_count == 0 and pa.compute.any(pa.compute.is_null(flat.flatten())).as_py():
        return arr  # null elements inside vectors: not a vector column
    return pa.chunked_array([flat.cast(pa.list_(pa.float32())).cast(pa.list_(pa.float32(), d))])


def _holds_sequences(s) -> bool:
    """Whether an object column's cells are lists / tuples / arrays."""
    if s.dtype != object:
        return False
    for v in s:
        if v is None or (isinstance(v, float) and v != v):
            continue
        return isinstance(v, (list, tuple, np.ndarray))
    return False


def _pandas_to_arrow(df, target: Optional[pa.Schema], preserve_index: bool = False) -> pa.Table:
    """A pandas DataFrame -> pyarrow.Table.  Columns the table (target schema)
    already has are converted to its types; others are inferred, and for a
    new table lists of floats of one length become vector columns."""
    if preserve_index:
        df = df.reset_index()
    arrays, names = [], []
    for name in df.columns:
        if not isinstance(name, str):
            raise TypeError(f"DataFrame column names must be str, got {name!r}")
        ty = None
        if target is not None and name in target.names:
            ty = target.field(name).type
        s = df[name]
        try:
            if _holds_sequences(s):
                # cells are lists / arrays (vectors): a NaN inside one is data,
                # not "missing" (from_pandas would turn it into a null element);
                # a NaN cell itself is a missing vector
                try:
                    a = pa.array(s, type=ty, from_pandas=False)
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    s = s.map(lambda v: None if isinstance(v, float) and v != v else v)
                    a = pa.array(s, type=ty, from_pandas=False)
            else:
                a = pa.array(s, type=ty, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
            raise _err(_core.InvalidArgumentError,
                       f"column {name!r}: cannot convert to {ty or 'Arrow'}: {e}",
                       "HS_INVALID") from None
        col = pa.chunked_array([a]) if isinstance(a, pa.Array) else a
        if ty is None and target is None:
            col = _vectorize(col)
        arrays.append(col)
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def _ms_to_dt(ms: Optional[int]) -> Optional[_dt.datetime]:
    if ms is None:
        return None
    return _dt.datetime.fromtimestamp(ms / 1000.0, tz=_dt.timezone.utc)


@dataclass(frozen=True)
class Snapshot:
    """One snapshot of the table (Iceberg metadata ``snapshots[]``)."""
    snapshot_id: int
    parent_snapshot_id: Optional[int]
    sequence_number: int
    timestamp_ms: int
    operation: Optional[str]
    summary: Dict[str, str] = field(default_factory=dict)
    manifest_list: Optional[str] = None
    schema_id: Optional[int] = None

    @property
    def timestamp(self) -> _dt.datetime:
        """Commit time as an aware UTC datetime."""
        return _ms_to_dt(self.timestamp_ms)

    @property
    def parent_id(self) -> Optional[int]:
        return self.parent_snapshot_id


@dataclass(frozen=True)
class HistoryEntry:
    """One entry of the snapshot log: when a snapshot became current."""
    made_current_at_ms: int
    snapshot_id: int
    parent_id: Optional[int]
    is_current_ancestor: bool

    @property
    def made_current_at(self) -> _dt.datetime:
        return _ms_to_dt(self.made_current_at_ms)


def _iceberg_type(t) -> Union[str, dict]:
    """A column type for schema changes: an Iceberg type string ("long",
    "decimal(10,2)"), Iceberg type JSON (dict), or a pyarrow DataType."""
    if isinstance(t, (str, dict)):
        return t
    if isinstance(t, type) and t in (int, float, str, bool, bytes):
        return {int: "long", float: "double", str: "string", bool: "boolean",
                bytes: "binary"}[t]
    if isinstance(t, pa.DataType):
        simple = {pa.int8(): "int", pa.int16(): "int", pa.int32(): "int", pa.int64(): "long",
                  pa.uint8(): "int", pa.uint16(): "int", pa.uint32(): "long",
                  pa.float16(): "float", pa.float32(): "float", pa.float64(): "double",
                  pa.bool_(): "boolean", pa.string(): "string", pa.large_string(): "string",
                  pa.binary(): "binary", pa.large_binary(): "binary", pa.date32(): "date"}
        if t in simple:
            return simple[t]
        if pa.types.is_timestamp(t):
            return "timestamptz" if t.tz else "timestamp"
        if pa.types.is_time(t):
            return "time"
        if pa.types.is_decimal(t):
            return f"decimal({t.precision},{t.scale})"
        if pa.types.is_fixed_size_binary(t):
            return f"fixed[{t.byte_width}]"
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            return {"type": "list", "element-id": 0,
                    "element": _iceberg_type(t.value_type),
                    "element-required": not t.value_field.nullable}
    raise TypeError(f"unsupported column type {t!r}: give an Iceberg type string such as "
                    f"'long', 'string', 'decimal(10,2)', or a pyarrow type")


def _quote(name: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"column names must be str, not {type(name).__name__}")
    if '"' not in name:
        return f'"{name}"'
    if "`" not in name:
        return f"`{name}`"
    raise ValueError(f"column name {name!r} has both quote characters")


def _is_object_metadata(path: str) -> bool:
    """An s3:// (s3a://) URI of a *.metadata.json file."""
    return path.startswith(("s3://", "s3a://")) and path.endswith(".metadata.json")


class Table:
    """An Apache Iceberg table of Parquet files with sidecar indexes.

    ``Table(path)`` opens the table at ``path`` (a local directory or a
    ``file://`` URI); when none exists yet, the first ``commit()`` creates it
    from the schema of the written rows.  ``path`` may also be a
    ``*.metadata.json`` file (local, or ``s3://`` where that one GET is the
    whole open, as for pyiceberg's StaticTable), or the directory of a table that a catalog
    (pyiceberg's SqlCatalog, JDBC, REST) wrote and that has no
    version-hint.text: such a table opens read-only (``read_only``) at that
    file, or at the newest metadata file; ``hyperstreamdb.Catalog(uri)
    .load_table("ns.name")`` opens it for writing.

    Writing::

        t = hdb.Table("/tmp/events")
        t.write_pandas(df)          # buffered in memory
        t.write_arrow(arrow_table)  # also buffered
        t.commit()                  # one Iceberg snapshot with all of it

    Reading::

        t.to_pandas(filter="id > 10 AND category = 'science'",
                    columns=["id", "title"])
        t.to_arrow(snapshot_id=...) / t.to_arrow(as_of=datetime(...))
        t.to_pandas(vector_filter={"column": "embedding", "query": q, "k": 10})
        t.query().filter("id > 1").vector_search("embedding", q, k=5).select(["id"]).to_pandas()

    Evolution: add_column / drop_column / rename_column / move_column /
    update_column / make_optional / update_schema, update_spec,
    replace_sort_order, set_properties, upgrade_format_version.
    History: snapshots(), history(), refs(), rollback_to_snapshot(id),
    create_tag(name), remove_tag(name).
    Indexes: add_index(column, kind), indexes(), drop_index(column), explain().

    Every call releases the GIL while the C library works; one Table may be
    shared by threads (calls on it are serialized).  Errors are Python
    exceptions carrying the library's message (see hyperstreamdb.HyperStreamError).
    """

    def __init__(self, path, *, format_version: int = 2, partition_by=None,
                 sort_order=None, properties: Optional[Dict[str, str]] = None,
                 autocommit: bool = False, progress: ProgressArg = None):
        self._path = _normalize_path(path)
        if format_version not in (2, 3):
            raise ValueError(f"format_version must be 2 or 3, got {format_version!r}")
        self._create_opts = dict(format_version=format_version,
                                 partition_spec=self._spec_text(partition_by)
                                 if partition_by is not None else None,
                                 sort_order=sort_order if sort_order is None or
                                 isinstance(sort_order, str) else self._sort_text(
                                     _columns_arg(sort_order), None, None),
                                 properties=self._props_arg(properties) if properties else None)
        self._autocommit = bool(autocommit)
        self._progress = progress
        self._pending: List[pa.Table] = []
        self._lock = threading.RLock()
        self._h = None
        self._cat: Dict[str, str] = {}
        self._static: Optional[str] = None
        if _is_object_metadata(self._path):
            # a metadata file on an object store: read it alone (no probe for a
            # path table under it first: each probe is a round trip)
            self._static = "file"
            self._h = _core.open_table(self._path, metadata=True)
            return
        try:
            self._h = _core.open_table(self._path)
        except _core.NotFoundError:
            # no path table: a metadata file, or a catalog's table directory
            # (no version-hint.text), read-only; else created by the first commit()
            self._h = self._open_static()

    def _open_static(self):
        """A read-only handle on the metadata file self._path, or on the newest
        metadata file of the table directory self._path when it has no
        version-hint.text (tables that pyiceberg's SqlCatalog, JDBC or REST
        catalogs wrote); None when neither is there."""
        p = self._path
        local = p[len("file://"):] if p.startswith("file://") else p
        if p.startswith(("s3://", "s3a://")):
            # an object store has no directories: list the metadata/ prefix
            # (one request; nothing there = a table the first commit creates)
            try:
                m = _core.find_metadata(p)
            except _core.NotFoundError:
                return None
            self._static = "dir"
            return _core.open_table(m, metadata=True)
        if "://" in local:
            return None
        if local.endswith(".metadata.json") and os.path.isfile(local):
            self._static = "file"
            return _core.open_table(p, metadata=True)
        if os.path.isdir(os.path.join(local, "metadata")):
            try:
                m = _core.find_metadata(p)
            except _core.NotFoundError:
                return None
            self._static = "dir"
            return _core.open_table(m, metadata=True)
        return None

    @classmethod
    def _from_catalog(cls, ident: str, handle, cat: Dict[str, str]) -> "Table":
        """A table of hyperstreamdb.Catalog: ident is the catalog's name for
        it, cat the open_table/create_table keywords naming the catalog."""
        t = cls.__new__(cls)
        t._path = ident
        t._create_opts = dict(format_version=2, partition_spec=None, sort_order=None,
                              properties=None)
        t._autocommit, t._progress = False, None
        t._pending, t._lock, t._h = [], threading.RLock(), handle
        t._cat, t._static = dict(cat), None
        return t

    # ---- construction ------------------------------------------------------

    @classmethod
    def open(cls, path) -> "Table":
        """Opens an existing table (NotFoundError, a FileNotFoundError, if absent)."""
        t = cls.__new__(cls)
        t._path = _normalize_path(path)
        t._create_opts = dict(format_version=2, partition_spec=None, sort_order=None,
                              properties=None)
        t._autocommit, t._progress = False, None
        t._pending, t._lock, t._h = [], threading.RLock(), None
        t._cat, t._static = {}, None
        if _is_object_metadata(t._path):
            t._static = "file"
            t._h = _core.open_table(t._path, metadata=True)
            return t
        try:
            t._h = _core.open_table(t._path)
        except _core.NotFoundError:
            t._h = t._open_static()
            if t._h is None:
                raise
        return t

    @classmethod
    def create(cls, path, schema, *, partition_by=None, sort_order=None,
               properties: Optional[Dict[str, str]] = None, format_version: int = 2,
               autocommit: bool = False) -> "Table":
        """Creates an empty table with ``schema`` (a pyarrow.Schema or anything
        exporting ``__arrow_c_schema__``).  CommitConflictError if one exists.

        partition_by: "bucket(16, id), day(ts)" or a list of such terms.
        sort_order: "ts DESC, id" or a list of column names (ascending)."""
        t = cls.__new__(cls)
        t._path = _normalize_path(path)
        t._autocommit, t._progress = bool(autocommit), None
        t._pending, t._lock, t._h = [], threading.RLock(), None
        t._cat, t._static = {}, None
        if isinstance(schema, pa.Schema):
            schema = _strip_field_ids(schema)
        spec = cls._spec_text(partition_by) if partition_by is not None else None
        sort = sort_order if sort_order is None or isinstance(sort_order, str) else \
            cls._sort_text(_columns_arg(sort_order), None, None)
        t._create_opts = dict(format_version=format_version, partition_spec=spec,
                              sort_order=sort,
                              properties=cls._props_arg(properties) if properties else None)
        t._h = _core.create_table(t._path, schema, **t._create_opts)
        return t

    def _handle(self):
        if self._h is None:
            raise _err(_core.NotFoundError,
                       f"{self._path}: no table here yet (the first commit() of written "
                       f"rows creates it)", "HS_NOT_FOUND")
        if self._h.closed:
            raise ValueError("the table is closed")
        return self._h

    def close(self) -> None:
        """Releases the table handle (buffered, uncommitted rows are dropped)."""
        with self._lock:
            self._pending.clear()
            if self._h is not None:
                self._h.close()

    def __enter__(self) -> "Table":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        pending = getattr(self, "_pending", None)
        if pending:
            rows = sum(t.num_rows for t in pending)
            warnings.warn(f"hyperstreamdb.Table({self._path!r}) dropped with {rows} written "
                          f"rows that were never committed (call commit())", ResourceWarning,
                          stacklevel=2)

    def __repr__(self) -> str:
        if self._h is None:
            return f"hyperstreamdb.Table({self._path!r}, not created yet)"
        if self._h.closed:
            return f"hyperstreamdb.Table({self._path!r}, closed)"
        i = self._h.info()
        snap = i["current_snapshot_id"]
        return (f"hyperstreamdb.Table({self._path!r}, format v{i['format_version']}, "
                f"snapshot {snap if snap >= 0 else None})")

    # ---- properties --------------------------------------------------------

    @property
    def path(self) -> str:
        """The path the table was opened with (absolute for local paths)."""
        return self._path

    @property
    def read_only(self) -> bool:
        """True for a table opened from a metadata file, or from a directory
        without version-hint.text (its newest metadata file): only its catalog
        knows the current version, so changes go through hyperstreamdb.Catalog."""
        return self._static is not None

    @property
    def exists(self) -> bool:
        """Whether the table has been created (the first commit() creates it)."""
        return self._h is not None

    @property
    def location(self) -> str:
        return self._handle().info()["location"]

    @property
    def metadata_location(self) -> str:
        """Path of the current metadata.json (what pyiceberg's StaticTable opens)."""
        return self._handle().info()["metadata_location"]

    @property
    def format_version(self) -> int:
        return self._handle().info()["format_version"]

    @property
    def current_snapshot_id(self) -> Optional[int]:
        """The current snapshot's id, or None before the first commit of rows."""
        s = self._handle().info()["current_snapshot_id"]
        return s if s >= 0 else None

    @property
    def schema(self) -> pa.Schema:
        """The current schema (field ids in "PARQUET:field_id" field metadata)."""
        return pa.schema(self._handle().schema())

    @property
    def properties(self) -> Dict[str, str]:
        return json.loads(self._handle().properties_json())

    @property
    def metadata(self) -> dict:
        """The current metadata.json, parsed."""
        return json.loads(self._handle().metadata_json())

    @property
    def pending_rows(self) -> int:
        """Rows written but not committed yet."""
        with self._lock:
            return sum(t.num_rows for t in self._pending)

    def refresh(self) -> "Table":
        """Reloads the current metadata (to see other writers' commits)."""
        if self._h is None:
            try:
                self._h = _core.open_table(self._path, **self._cat)
            except _core.NotFoundError:
                if not self._cat:
                    self._h = self._open_static()
        elif self._static == "dir":   # the newest metadata file may have changed
            old, self._h = self._h, _core.open_table(_core.find_metadata(self._path),
                                                     metadata=True)
            old.close()
        else:
            self._handle().refresh()
        return self

    # ---- writing -----------------------------------------------------------

    def _target_schema(self) -> Optional[pa.Schema]:
        if self._h is not None and not self._h.closed:
            return self.schema
        if self._pending:
            return self._pending[0].schema
        return None

    def write_pandas(self, df, *, preserve_index: bool = False,
                     progress: ProgressArg = None) -> None:
        """Buffers the rows of a pandas DataFrame; commit() publishes them.

        Columns the table already has are converted to the table's types.
        For a new table, types are inferred by pyarrow, and a column whose
        cells are equal-length lists (or arrays) of floats becomes a vector
        column fixed_size_list<float32>[d] (stored as Iceberg list<float> with
        the dimension recorded), ready for add_index("col", "hnsw").  Pass a
        pyarrow table to write_arrow to choose types yourself."""
        if not _is_pandas(df):
            raise TypeError(f"write_pandas expects a pandas DataFrame, not {type(df).__name__}"
                            f" (use write_arrow for Arrow data)")
        with self._lock:
            table = _pandas_to_arrow(df, self._target_schema(), preserve_index)
            self._buffer(table, progress)

    def write_arrow(self, data, *, progress: ProgressArg = None) -> None:
        """Buffers Arrow data; commit() publishes it.  ``data``: a pyarrow Table,
        RecordBatch, RecordBatchReader or list of batches, or any object
        exporting the Arrow PyCapsule interface (__arrow_c_stream__ /
        __arrow_c_array__: polars, DuckDB results, ...).  Arrow buffers are not
        copied until the rows are written."""
        with self._lock:
            if _is_pandas(data):
                table = _pandas_to_arrow(data, self._target_schema())
            else:
                table = _to_arrow_table(data)
            self._buffer(table, progress)

    def write(self, data, *, progress: ProgressArg = None) -> None:
        """write_pandas or write_arrow, by the type of ``data``."""
        if _is_pandas(data):
            self.write_pandas(data, progress=progress)
        else:
            self.write_arrow(data, progress=progress)

    def _buffer(self, table: pa.Table, progress: ProgressArg) -> None:
        if table.num_columns == 0:
            raise _err(_core.InvalidArgumentError, "cannot write data without columns",
                       "HS_INVALID")
        self._pending.append(table)
        if self._autocommit:
            self.commit(progress=progress)

    def discard(self) -> int:
        """Drops the buffered, uncommitted rows; returns how many there were."""
        with self._lock:
            n = sum(t.num_rows for t in self._pending)
            self._pending.clear()
            return n

    def commit(self, *, progress: ProgressArg = None) -> Optional[int]:
        """Writes the buffered rows as Parquet data files and publishes them in
        one Iceberg snapshot (an "append"); creates the table first if needed.
        Returns the current snapshot id (None if there is none).

        Shows a progress bar for large writes (see set_progress).  Ctrl-C
        while rows are handed to the engine raises KeyboardInterrupt and
        publishes nothing; the rows stay buffered (retry commit() or
        discard())."""
        with self._lock:
            if not self._pending:
                return self.current_snapshot_id if self._h is not None else None
            if len(self._pending) == 1:
                table = self._pending[0]
            else:
                try:
                    table = pa.concat_tables(self._pending, promote_options="default")
                except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
                    raise _err(_core.InvalidArgumentError,
                               f"the buffered writes have incompatible schemas: {e}",
                               "HS_INVALID") from None
            if self._h is None:
                self._create_from(table.schema)
            if progress is None:
                progress = self._progress
            n_buffered = len(self._pending)
            done: List[int] = []
            try:
                with Progress(progress if table.num_rows >= 100_000 or progress else False,
                              "writing", "rows") as cb:
                    self._handle().append(table, progress=cb, total=table.num_rows, done=done)
            finally:
                # done is filled by C before control returns: a KeyboardInterrupt
                # raised on the way out must not keep rows that were published
                if done:
                    del self._pending[:n_buffered]
            return done[0] if done[0] >= 0 else None

    def _create_from(self, schema: pa.Schema) -> None:
        try:
            self._h = _core.create_table(self._path, _strip_field_ids(schema),
                                         **self._create_opts, **self._cat)
        except _core.CommitConflictError:
            self._h = _core.open_table(self._path, **self._cat)  # created concurrently

    def overwrite(self, data=None, filter: Optional[str] = None, *,
                  progress: ProgressArg = None) -> Optional[int]:
        """Replaces rows in one "overwrite" snapshot, committed now: deletes the
        rows matching ``filter`` (all rows when None), then adds ``data``
        (may be None to only delete).  Returns the new snapshot id."""
        with self._lock:
            h = self._handle()
            if data is not None:
                data = (_pandas_to_arrow(data, self.schema) if _is_pandas(data)
                        else _to_arrow_table(data))
                with Progress(progress if data.num_rows >= 100_000 or progress else False,
                              "writing", "rows") as cb:
                    snap = h.overwrite(data, filter, progress=cb, total=data.num_rows)
            else:
                snap = h.overwrite(None, filter)
            return snap if snap >= 0 else None

    def overwrite_partitions(self, data) -> Optional[int]:
        """Dynamic partition overwrite: replaces every partition the rows of
        ``data`` fall in, in one snapshot committed now."""
        with self._lock:
            h = self._handle()
            data = _pandas_to_arrow(data, self.schema) if _is_pandas(data) else \
                _to_arrow_table(data)
            snap = h.overwrite_partitions(data)
            return snap if snap >= 0 else None

    def delete(self, filter: str) -> int:
        """Deletes the rows matching ``filter`` (merge-on-read: position deletes
        on v2, deletion vectors on v3); commits now; returns the row count."""
        if not isinstance(filter, str) or not filter.strip():
            raise TypeError("delete() needs a non-empty filter string, e.g. \"id < 10\"")
        return self._handle().delete(filter)

    # ---- reading -----------------------------------------------------------

    def _scan_kw(self, filter, columns, snapshot_id, as_of, ref, row_lineage,
                 batch_size) -> dict:
        if filter is not None and not isinstance(filter, str):
            raise TypeError(f"filter must be a str such as \"id > 1 AND name = 'x'\", not "
                            f"{type(filter).__name__}")
        if snapshot_id is not None and (not isinstance(snapshot_id, (int, np.integer))
                                        or isinstance(snapshot_id, bool)):
            raise TypeError(f"snapshot_id must be an int, not {type(snapshot_id).__name__}")
        kw = dict(columns=_columns_arg(columns), filter=filter,
                  snapshot_id=int(snapshot_id) if snapshot_id is not None else None,
                  as_of_ms=_as_of_ms(as_of), ref=ref, row_lineage=bool(row_lineage))
        if batch_size is not None:
            kw["batch_size"] = int(batch_size)
        return kw

    def _vector_kw(self, vf: dict) -> dict:
        if not isinstance(vf, dict):
            raise TypeError("vector_filter must be a dict {'column': str, 'query': vector, "
                            "'k': int}")
        if not _VECTOR_KEYS.issuperset(vf):
            unknown = set(vf) - _VECTOR_KEYS
            raise ValueError(f"vector_filter: unknown keys {sorted(unknown)} (known: "
                             f"{sorted(_VECTOR_KEYS)})")
        for key in ("column", "query"):
            if key not in vf:
                raise ValueError(f"vector_filter requires the {key!r} key")
        return self._search_kw(vf["column"], vf["query"], vf.get("k", 10), vf.get("metric"),
                               vf.get("ef_search"), vf.get("nprobe"), vf.get("distance_column"),
                               vf.get("rerank"))

    def _search_kw(self, column, query, k, metric=None, ef_search=None, nprobe=None,
                   distance_column=None, rerank=None) -> dict:
        if not isinstance(column, str):
            raise TypeError(f"the vector column must be a str, not {type(column).__name__}")
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
            raise TypeError(f"k must be an int, not {type(k).__name__}")
        if k <= 0:
            raise ValueError(f"k must be > 0, got {k}")
        if (type(query) is np.ndarray and query.dtype == np.float32 and query.size
                and (query.ndim == 1 or query.ndim == 2) and query.flags.c_contiguous):
            q = query    # read in place; _core checks that the values are finite
        else:
            q = _query_vectors(query)
        if distance_column is None:
            distance_column = self._default_distance_column()
        kw = dict(column=column, query=q, k=int(k), metric=metric,
                  ef_search=int(ef_search or 0), nprobe=int(nprobe or 0),
                  distance_column=distance_column)
        if rerank:   # quantized kinds: candidates reranked = max(k * rerank, ef_search)
            kw["rerank"] = int(rerank)
        return kw

    def _default_distance_column(self) -> str:
        """"distance", or "_distance" when the table has a column "distance";
        remembered per metadata version (the schema costs ~70 us to convert,
        more than a search)."""
        h = self._h
        if h is None or h.closed:
            return "distance"
        key = h.info()["metadata_location"]
        memo = getattr(self, "_distance_memo", None)
        if memo is None or memo[0] != key:
            memo = (key, "_distance" if "distance" in self.schema.names else "distance")
            self._distance_memo = memo
        return memo[1]

    def to_arrow(self, filter: Optional[str] = None, vector_filter: Optional[dict] = None,
                 columns: Optional[Sequence[str]] = None, snapshot_id: Optional[int] = None,
                 as_of=None, *, ref: Optional[str] = None, row_lineage: bool = False,
                 batch_size: Optional[int] = None, context=None) -> pa.Table:
        """Reads the table into a pyarrow.Table (the library's buffers, not a copy).

        filter:        "id > 1 AND category = 'science'" (indexes are used when
                       present).
        vector_filter: {"column": "embedding", "query": vec, "k": 10, optional
                       "metric", "ef_search", "nprobe", "rerank"}: the k nearest rows
                       (among those matching ``filter``), nearest first, with a
                       "distance" column appended.  A 2-D query (one row per
                       query) is a batch searched on threads in one call: the
                       answers of all queries, in query order, with a first
                       column "query_index" (int32).
        columns:       the columns to read, in output order.
        snapshot_id / as_of (datetime) / ref (tag or branch): time travel.
        row_lineage:   append _row_id and _last_updated_sequence_number (v3).
        Ctrl-C interrupts a long read (KeyboardInterrupt)."""
        if context is not None:
            _check_context(context)
        h = self._handle()
        kw = self._scan_kw(filter, columns, snapshot_id, as_of, ref, row_lineage, batch_size)
        if vector_filter is not None:
            skw = self._vector_kw(vector_filter)
            kw.pop("batch_size", None)
            return _to_arrow_table(h.search(**skw, **kw))
        return _to_arrow_table(h.scan(**kw))

    def to_pandas(self, filter: Optional[str] = None, vector_filter: Optional[dict] = None,
                  columns: Optional[Sequence[str]] = None, snapshot_id: Optional[int] = None,
                  as_of=None, *, ref: Optional[str] = None, row_lineage: bool = False,
                  context=None, **pandas_kwargs):
        """to_arrow(...).to_pandas(**pandas_kwargs); see to_arrow for the arguments."""
        return self.to_arrow(filter, vector_filter, columns, snapshot_id, as_of, ref=ref,
                             row_lineage=row_lineage, context=context).to_pandas(**pandas_kwargs)

    def to_reader(self, filter: Optional[str] = None, columns: Optional[Sequence[str]] = None,
                  snapshot_id: Optional[int] = None, as_of=None, *, ref: Optional[str] = None,
                  row_lineage: bool = False, batch_size: Optional[int] = None
                  ) -> pa.RecordBatchReader:
        """A pyarrow.RecordBatchReader reading lazily, batch by batch (for
        results larger than memory)."""
        kw = self._scan_kw(filter, columns, snapshot_id, as_of, ref, row_lineage, batch_size)
        return pa.RecordBatchReader.from_stream(self._handle().scan_stream(**kw))

    def to_batches(self, *args, **kwargs) -> Iterator[pa.RecordBatch]:
        """Iterates the record batches of to_reader(...)."""
        return iter(self.to_reader(*args, **kwargs))

    def __arrow_c_stream__(self, requested_schema=None):
        """The whole current snapshot as an Arrow C stream (PyCapsule protocol),
        so pyarrow.table(t), polars.DataFrame(t), duckdb read the table."""
        return self._handle().scan_stream().__arrow_c_stream__(requested_schema)

    def query(self) -> "Query":
        """A fluent query: t.query().filter(..).vector_search(..).select([..]).to_pandas()."""
        return Query(self)

    def search(self, column: str, query, k: int = 10, filter: Optional[str] = None,
               columns: Optional[Sequence[str]] = None, *, metric: Optional[str] = None,
               ef_search: Optional[int] = None, context=None):
        """The k rows nearest to ``query`` in ``column`` as a pandas DataFrame
        (same as to_pandas(filter=filter, vector_filter={...}))."""
        vf = {"column": column, "query": query, "k": k}
        if metric is not None:
            vf["metric"] = metric
        if ef_search is not None:
            vf["ef_search"] = ef_search
        return self.to_pandas(filter=filter, vector_filter=vf, columns=columns, context=context)

    def files(self, filter: Optional[str] = None, snapshot_id: Optional[int] = None,
              as_of=None, *, ref: Optional[str] = None) -> List[dict]:
        """The data files a scan would read after partition and bounds pruning."""
        kw = self._scan_kw(filter, None, snapshot_id, as_of, ref, False, None)
        kw.pop("columns")
        return json.loads(self._handle().files_json(**kw))

    def explain(self, filter: Optional[str] = None, columns: Optional[Sequence[str]] = None,
                snapshot_id: Optional[int] = None, as_of=None, *,
                ref: Optional[str] = None) -> dict:
        """Runs the scan and reports how it was planned: pruning per stage,
        indexes used per file, rows and pages decoded."""
        kw = self._scan_kw(filter, columns, snapshot_id, as_of, ref, False, None)
        return json.loads(self._handle().explain(**kw))

    def count(self, filter: Optional[str] = None) -> int:
        """Number of rows (matching ``filter``)."""
        h = self._handle()
        schema = self.schema
        if not schema.names:
            return 0
        t = _to_arrow_table(h.scan(filter=filter, columns=[schema.names[0]]))
        return t.num_rows

    # ---- snapshots and history ----------------------------------------------

    def snapshots(self) -> List[Snapshot]:
        """Every snapshot in the metadata, oldest first (as Iceberg stores them)."""
        out = []
        for s in json.loads(self._handle().snapshots_json()):
            summary = dict(s.get("summary") or {})
            out.append(Snapshot(
                snapshot_id=s["snapshot-id"], parent_snapshot_id=s.get("parent-snapshot-id"),
                sequence_number=s.get("sequence-number", 0), timestamp_ms=s["timestamp-ms"],
                operation=summary.get("operation"), summary=summary,
                manifest_list=s.get("manifest-list"), schema_id=s.get("schema-id")))
        return out

    def snapshot(self, snapshot_id: Optional[int] = None) -> Optional[Snapshot]:
        """One snapshot by id (None = the current one; None if there is none)."""
        if snapshot_id is None:
            snapshot_id = self.current_snapshot_id
            if snapshot_id is None:
                return None
        for s in self.snapshots():
            if s.snapshot_id == snapshot_id:
                return s
        raise _err(_core.NotFoundError, f"no snapshot {snapshot_id}", "HS_NOT_FOUND")

    def history(self) -> List[HistoryEntry]:
        """The snapshot log: when each snapshot became current, oldest first."""
        return [HistoryEntry(made_current_at_ms=h["made_current_at"],
                             snapshot_id=h["snapshot_id"], parent_id=h.get("parent_id"),
                             is_current_ancestor=bool(h.get("is_current_ancestor")))
                for h in json.loads(self._handle().history_json())]

    def refs(self) -> Dict[str, dict]:
        """Branches and tags: {"main": {"snapshot-id": .., "type": "branch"}, ..}."""
        return json.loads(self._handle().refs_json())

    def rollback_to_snapshot(self, snapshot_id: int) -> None:
        """Makes an ancestor snapshot current again (no new snapshot; the later
        ones stay in the metadata for time travel)."""
        if not isinstance(snapshot_id, (int, np.integer)) or isinstance(snapshot_id, bool):
            raise TypeError(f"snapshot_id must be an int, not {type(snapshot_id).__name__}")
        self._handle().rollback(int(snapshot_id))

    def create_tag(self, name: str, snapshot_id: Optional[int] = None) -> None:
        """Names a snapshot (default: the current one); read it with ref=name."""
        self._handle().create_tag(name, -1 if snapshot_id is None else int(snapshot_id))

    def remove_tag(self, name: str) -> None:
        self._handle().remove_tag(name)

    # ---- evolution -----------------------------------------------------------

    def update_schema(self, changes: Union[List[dict], str]) -> None:
        """Applies schema changes as one new schema; ``changes`` is a list of
        {"op": "add"|"drop"|"rename"|"move"|"update"|"make_optional", ...}
        (see docs/tables.md) or its JSON text."""
        if not isinstance(changes, str):
            if not isinstance(changes, (list, tuple)):
                raise TypeError("changes must be a list of dicts or a JSON string")
            changes = json.dumps(list(changes))
        self._handle().update_schema(changes)

    def add_column(self, name: str, type, *, required: bool = False, doc: Optional[str] = None,
                   parent: Optional[str] = None) -> None:
        """Adds a column (type: "long", "string", "decimal(10,2)", a pyarrow type,
        or Iceberg type JSON).  Existing rows read it as null."""
        ch: Dict[str, Any] = {"op": "add", "name": name, "type": _iceberg_type(type)}
        if required:
            ch["required"] = True
        if doc is not None:
            ch["doc"] = doc
        if parent is not None:
            ch["parent"] = parent
        self.update_schema([ch])

    def drop_column(self, name: str) -> None:
        self.update_schema([{"op": "drop", "name": name}])

    def rename_column(self, name: str, new_name: str) -> None:
        self.update_schema([{"op": "rename", "name": name, "to": new_name}])

    def move_column(self, name: str, *, first: bool = False, before: Optional[str] = None,
                    after: Optional[str] = None) -> None:
        """Moves a column: first=True, before="x" or after="x" (exactly one)."""
        if sum([bool(first), before is not None, after is not None]) != 1:
            raise ValueError("move_column needs exactly one of first=True, before=, after=")
        ch: Dict[str, Any] = {"op": "move", "name": name}
        if first:
            ch["first"] = True
        elif before is not None:
            ch["before"] = before
        else:
            ch["after"] = after
        self.update_schema([ch])

    def update_column(self, name: str, type) -> None:
        """Widens a column's type (int -> long, float -> double, decimal precision)."""
        self.update_schema([{"op": "update", "name": name, "type": _iceberg_type(type)}])

    def make_optional(self, name: str) -> None:
        self.update_schema([{"op": "make_optional", "name": name}])

    @staticmethod
    def _spec_text(spec) -> str:
        if isinstance(spec, str):
            return spec
        if isinstance(spec, (list, tuple)):
            for s in spec:
                if not isinstance(s, str):
                    raise TypeError("partition terms must be str such as 'day(ts)' or "
                                    "'bucket(16, id)'")
            return ", ".join(spec)
        raise TypeError(f"partition spec must be a str or a list of str, not "
                        f"{type(spec).__name__}")

    def update_spec(self, spec) -> None:
        """Makes a new partition spec the default: "bucket(16, id), day(ts)",
        or a list of terms; "" / [] = unpartitioned.  Existing files keep the
        spec they were written with."""
        self._handle().update_spec(self._spec_text(spec))

    @staticmethod
    def _sort_text(columns, ascending, nulls_first) -> str:
        n = len(columns)

        def per_col(v, what):
            if v is None or isinstance(v, bool):
                return [v] * n
            v = list(v)
            if len(v) != n:
                raise ValueError(f"{what} has {len(v)} entries for {n} columns")
            for x in v:
                if not isinstance(x, bool):
                    raise TypeError(f"{what} entries must be bool")
            return v

        asc = per_col(ascending, "ascending")
        nf = per_col(nulls_first, "nulls_first")
        terms = []
        for c, a, f in zip(columns, asc, nf):
            t = _quote(c) + (" DESC" if a is False else " ASC")
            if f is not None:
                t += " NULLS FIRST" if f else " NULLS LAST"
            terms.append(t)
        return ", ".join(terms)

    def replace_sort_order(self, columns, ascending=None, nulls_first=None) -> None:
        """Sets the sort order later writes use: columns (list of names, or the
        text form "ts DESC, id"), ascending (bool or list of bool), nulls_first.
        [] or "" = unsorted."""
        if isinstance(columns, str):
            if ascending is not None or nulls_first is not None:
                raise ValueError("give ascending / nulls_first with a list of columns, not "
                                 "with the text form")
            text = columns
        else:
            text = self._sort_text(_columns_arg(columns), ascending, nulls_first)
        self._handle().replace_sort_order(text)

    @staticmethod
    def _props_arg(props) -> Dict[str, str]:
        if not isinstance(props, dict):
            raise TypeError("properties must be a dict of str to str")
        out = {}
        for k, v in props.items():
            if not isinstance(k, str):
                raise TypeError(f"property names must be str, got {k!r}")
            out[k] = v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)
        return out

    def set_properties(self, properties: Optional[Dict[str, str]] = None, **kwargs: str) -> None:
        """Sets table properties in one commit (values converted with str())."""
        props = dict(properties or {})
        props.update(kwargs)
        self._handle().set_properties(self._props_arg(props))

    def remove_properties(self, *keys: str) -> None:
        """Removes table properties in one commit: remove_properties("a", "b")."""
        if len(keys) == 1 and isinstance(keys[0], (list, tuple)):
            keys = tuple(keys[0])
        self._handle().remove_properties(list(keys))

    def upgrade_format_version(self, format_version: int = 3) -> None:
        """Raises the format version (2 -> 3) without rewriting data."""
        self._handle().upgrade(int(format_version))

    upgrade = upgrade_format_version

    # ---- indexes ----------------------------------------------------------

    def add_index(self, column: str, kind: Union[str, dict, None] = "auto", *,
                  progress: ProgressArg = None, n_threads: int = 0, **params) -> None:
        """Declares and builds an index on ``column`` for every live data file
        (later writes build it as part of the write), in one commit.

        kind: "inverted", "range", "auto" (scalar columns); "hnsw", "hnsw_tq8",
        "hnsw_tq4", "hnsw_pq", "hnsw_bin", "ivf_hnsw", ... (vector columns);
        or a dict {"type": "hnsw_pq", "complexity": 32, "quality": 300,
        "compression": 32}.  Extra keyword arguments are parameters too
        (m=, ef_construction=, metric=, ...; for a vector index also
        cluster="category", include=["id", ...]: each sidecar then keeps its
        vectors grouped by that column's value with the included columns, so
        a top-k filtered by `category = X` or `IN (...)` whose columns are
        among those reads one block per data file; docs/search.md "The
        clustered section").  Shows a progress bar (see
        set_progress); Ctrl-C cancels (KeyboardInterrupt) and registers
        nothing."""
        if not isinstance(column, str):
            raise TypeError(f"column must be a str, not {type(column).__name__}")
        if isinstance(kind, dict):
            params = {**{k: v for k, v in kind.items() if k != "type"}, **params}
            kind = kind.get("type")
            if kind is None:
                raise ValueError("the index dict needs a 'type' key, e.g. {'type': 'hnsw_pq'}")
        if kind is not None and not isinstance(kind, str):
            raise TypeError(f"index kind must be a str or a dict, not {type(kind).__name__}")
        params_json = json.dumps(params) if params else None
        if progress is None:
            progress = self._progress
        with Progress(progress, f"indexing {column}", "") as cb:
            self._handle().add_index(column, kind, params_json, progress=cb,
                                     n_threads=int(n_threads))

    def drop_index(self, column: str, kind: Optional[str] = None) -> None:
        """Removes the index declaration(s) of a column (kind None = all)."""
        self._handle().drop_index(column, kind)

    def indexes(self) -> List[dict]:
        """The declared indexes with their coverage of the live data files."""
        return json.loads(self._handle().indexes_json())

    def remove_orphan_indexes(self, older_than=None) -> int:
        """Deletes sidecar index files no live data file references and older
        than ``older_than`` (a datetime or timedelta; default: 1 hour ago)."""
        if older_than is None:
            older_than = _dt.timedelta(hours=1)
        # the engine takes an age (how long ago), not a point in time
        if isinstance(older_than, _dt.timedelta):
            age_ms = int(older_than.total_seconds() * 1000)
        else:
            age_ms = int(_dt.datetime.now().timestamp() * 1000) - _as_of_ms(older_than)
        return self._handle().remove_orphan_indexes(max(age_ms, 0))

    def refresh_indexes(self, *, progress: ProgressArg = None, n_threads: int = 0) -> int:
        """Index catch-up: builds every declared index for the live data files
        that lack one (files pyiceberg, Spark or Java committed after
        add_index, or whose sidecar is missing or stale) and commits them in
        one registry change.  Until then scans use the indexes present and
        read the other files, with the same results.  Returns the number of
        registry entries added (0: nothing was missing).  The table property
        ``hyperstream.index.auto-refresh = "true"`` runs this whenever the
        table is opened."""
        if progress is None:
            progress = self._progress
        with Progress(progress, "refreshing indexes", "") as cb:
            return self._handle().refresh_indexes(progress=cb, n_threads=int(n_threads))

    # ---- maintenance the engine does not have yet ---------------------------

    def _not_yet(self, what: str, hint: str):
        raise _err(_core.UnsupportedError,
                   f"{what}: not implemented by this build of HyperStreamDB (the table is "
                   f"unchanged). {hint}", "HS_UNSUPPORTED")

    def compact(self, target_file_size: Optional[int] = None, min_input_files: int = 2,
                filter: Optional[str] = None, dry_run: bool = False,
                progress: ProgressArg = None,
                zorder_by: Union[str, Sequence[str], None] = None,
                delete_file_threshold: int = 0,
                delete_ratio_threshold: float = 0.0, size_tiered: bool = False,
                partial_progress: bool = False, max_commits: Optional[int] = None,
                max_rewrite_fraction: float = 0.0) -> dict:
        """Bin-pack compaction (Iceberg rewrite_data_files): within each
        partition, files smaller than ``target_file_size`` bytes (default: the
        table property write.target-file-size-bytes, 512 MiB) and files with
        many deletes are rewritten, deletes applied, as files of about that
        size, sorted by the table's sort order, with every declared index
        built; one "replace" snapshot.  "Many deletes" is Iceberg's rule: at
        least ``delete_file_threshold`` delete files or
        ``delete_ratio_threshold`` of the rows deleted (0 = the table
        properties hyperstream.compact.delete-file-threshold, default
        2^31-1, and hyperstream.compact.delete-ratio-threshold, default 0.3).
        Appends committed meanwhile are kept; rows of rewritten files deleted
        meanwhile (position deletes, deletion vectors) are deleted from the
        new files in the same snapshot (result key "carried_deletes"); a
        concurrent equality delete on a rewritten file raises ConflictError
        (nothing committed).  ``filter`` limits it to files that may hold matching rows.
        ``zorder_by`` (column names, or "a, b") instead clusters the rows in
        the z-order of those columns (the table must have no sort order):
        up to the table property hyperstream.compact.zorder-group-bytes
        (1 GiB) of a partition's files are sorted as one and cut into files
        of the target size, so min/max pruning works on each column.
        ``size_tiered`` (what automatic stream maintenance does) leaves a
        small file larger than all the partition's other small files together
        (unless it has many deletes), so a row is rewritten about
        log2(partition size / flush size) times rather than at every
        compaction, and counts a file of at least 3/4 of the target size as
        full-size (Iceberg's min-file-size-bytes default).
        ``partial_progress`` (Iceberg's partial-progress.enabled) commits the
        file groups as they finish, in at most ``max_commits`` (default 10)
        snapshots, so that a failure or a cancel keeps the groups committed
        before it (result keys "commits" and "snapshot_ids").
        ``max_rewrite_fraction`` (0 = no bound) rewrites at most that
        fraction of the live data files' bytes, the smallest eligible files
        first, whole (what automatic stream maintenance uses to bound the
        bytes held twice until expiry).  Returns what
        was (with ``dry_run``: would be) rewritten.  Shows a progress bar
        (see set_progress); Ctrl-C cancels."""
        if progress is None:
            progress = self._progress
        if zorder_by is not None and not isinstance(zorder_by, str):
            zorder_by = ", ".join(_columns_arg(zorder_by))
        with Progress(progress, "compacting", " rows") as cb:
            out = self._handle().maintain("compact", target_size_bytes=int(target_file_size or 0),
                                          min_input_files=int(min_input_files), filter=filter,
                                          dry_run=bool(dry_run), progress=cb,
                                          zorder_by=zorder_by,
                                          delete_file_threshold=int(delete_file_threshold),
                                          delete_ratio_threshold=float(delete_ratio_threshold),
                                          size_tiered=bool(size_tiered),
                                          partial_progress=bool(partial_progress),
                                          max_commits=int(max_commits or 0),
                                          max_rewrite_fraction=float(max_rewrite_fraction))
        return json.loads(out)

    rewrite_data_files = compact

    def expire_snapshots(self, older_than=None, retain_last: Optional[int] = None,
                         snapshot_ids: Optional[Sequence[int]] = None, dry_run: bool = False,
                         keep_files: bool = False) -> dict:
        """Removes old snapshots (Iceberg ExpireSnapshots) and deletes the files
        only they reached (manifest lists, manifests, data and delete files,
        their index sidecars and registry versions).  ``older_than``: a
        datetime, a timedelta (that long ago) or epoch milliseconds;
        ``retain_last``: keep at least that many recent snapshots of each
        branch; with neither, the table properties decide (5 days, 1).  The
        current snapshot and snapshots of branches and tags are never
        expired.  Returns {"expired_snapshot_ids": [...], "deleted_files":
        [{"path", "kind"}], ...}; ``dry_run`` only lists."""
        ms = None if older_than is None else _time_ms(older_than)
        out = self._handle().maintain("expire_snapshots", older_than_ms=ms,
                                      retain_last=int(retain_last or 0),
                                      snapshot_ids=None if snapshot_ids is None
                                      else [int(i) for i in snapshot_ids],
                                      dry_run=bool(dry_run), keep_files=bool(keep_files))
        return json.loads(out)

    def remove_orphan_files(self, older_than=None, dry_run: bool = False) -> dict:
        """Deletes files under the table's metadata/, data/ and index/
        directories that no snapshot, metadata file or index registry
        references and that are older than ``older_than`` (a datetime, a
        timedelta or epoch milliseconds; default 3 days ago, so that files of
        commits in progress are safe).  Returns {"deleted_files": [...]}."""
        ms = None if older_than is None else _time_ms(older_than)
        out = self._handle().maintain("remove_orphan_files", older_than_ms=ms,
                                      dry_run=bool(dry_run))
        return json.loads(out)

    def rewrite_manifests(self, target_size: Optional[int] = None, dry_run: bool = False) -> dict:
        """Merges small manifests into ones of about ``target_size`` bytes
        (default commit.manifest.target-size-bytes, 8 MiB) in one "replace"
        snapshot; the data is unchanged."""
        out = self._handle().maintain("rewrite_manifests",
                                      target_size_bytes=int(target_size or 0),
                                      dry_run=bool(dry_run))
        return json.loads(out)

    def rewrite_position_delete_files(self, min_input_files: Optional[int] = None,
                                      target_size: Optional[int] = None,
                                      rewrite_all: bool = False,
                                      dry_run: bool = False) -> dict:
        """Iceberg's rewrite_position_delete_files.  Format v2: merges each
        partition's position delete files (when it has at least
        ``min_input_files``, default 2, or with ``rewrite_all``) into files of
        about ``target_size`` bytes (default write.delete.target-file-size-bytes,
        64 MiB) and drops deletes of data files that are no longer live.
        Format v3: folds position delete files into deletion vectors, merges
        several vectors of one data file, removes dangling vectors.  One
        "replace" snapshot with the same rows; a delete committed meanwhile
        makes it redo its work against the new snapshot, never lost.
        Returns the result dict (``nothing_to_do`` when nothing changed)."""
        out = self._handle().maintain("rewrite_position_delete_files",
                                      min_input_files=int(min_input_files or 0),
                                      target_size_bytes=int(target_size or 0),
                                      rewrite_all=bool(rewrite_all),
                                      dry_run=bool(dry_run))
        return json.loads(out)

    def cherrypick_snapshot(self, snapshot_id: int) -> None:
        """Applies an append snapshot that is not an ancestor of the current
        one (a rolled-back or branch snapshot) to main; fast-forwards when its
        parent is the current snapshot."""
        if not isinstance(snapshot_id, (int, np.integer)) or isinstance(snapshot_id, bool):
            raise TypeError(f"snapshot_id must be an int, not {type(snapshot_id).__name__}")
        self._handle().cherrypick(int(snapshot_id))

    def execute_sql(self, query: str, params=None):
        """Runs one SQL statement with this table registered as ``t`` (a
        session of its own; see hyperstreamdb.Session for the language,
        parameters and errors).  Returns a hyperstreamdb.Result::

            table.execute_sql("SELECT * FROM t WHERE id > 100").to_pandas()
        """
        from ._sql import Session
        s = Session()
        s.register("t", self)
        try:
            return s.sql(query, params)
        finally:
            s.close()   # takes effect once the result is dropped

    sql = execute_sql

    # ---- streaming ingest -----------------------------------------------------

    def stream(self, *, fsync: Optional[str] = None, fsync_interval_ms: int = 0,
               flush_rows: int = 0, flush_bytes: int = 0, flush_interval_ms: int = 0,
               memory_bytes: int = 0, busy_timeout_ms: int = 0, refresh_ms: int = 0,
               segment_bytes: int = 0, wal_dir=None) -> "AppendStream":
        """Opens the table's append stream (docs/streaming.md): each write()
        goes to the write-ahead log and returns, once durable, its sequence
        number; reads of this Table (to_arrow, to_pandas, count, ...) see
        acknowledged rows within the refresh interval (default 1 s;
        stream.refresh() for at once); flushes commit them as one snapshot
        each.  Opening it recovers rows a crashed stream acknowledged but did
        not commit.  Use as a context manager (close() flushes)::

            with t.stream() as s:
                s.write(batch)

        fsync: "batch" (fdatasync per write), "interval" (group commit every
        fsync_interval_ms) or "none"; None and the 0s take the table
        properties hyperstream.wal.* (or their defaults).  refresh_ms < 0:
        every acknowledged row visible at once.

        wal_dir: a local directory for the write-ahead log (default: the
        table property hyperstream.wal.dir, else <table>/wal; for an s3://
        table, a directory under ~/.cache/hyperstream/wal keyed by the table
        location).  Recovery after a crash needs the same directory."""
        h = self._handle()
        return AppendStream(self, _core.AppendStream(
            h, fsync, int(fsync_interval_ms), int(flush_rows), int(flush_bytes),
            int(flush_interval_ms), int(memory_bytes), int(busy_timeout_ms), int(refresh_ms),
            int(segment_bytes), None if wal_dir is None else os.fspath(wal_dir)))


class AppendStream:
    """The append stream of a Table (Table.stream()): write(), flush(),
    refresh(), stats(), close().  write() may be called from several threads
    (their fsyncs are shared under the "interval" policy)."""

    def __init__(self, table: "Table", handle):
        self._table = table
        self._s = handle

    def write(self, data) -> int:
        """Writes a pyarrow Table / RecordBatch / reader, a pandas DataFrame
        (converted to the table's types) or any Arrow PyCapsule exporter as
        one log record; returns its sequence number once it is durable (0 for
        no rows).  BusyError (status "HS_BUSY") when the
        unflushed rows fill the memory budget for the busy timeout."""
        if _is_pandas(data):
            data = _pandas_to_arrow(data, self._table.schema)
        elif isinstance(data, dict):
            data = pa.table(data)
        elif isinstance(data, (list, tuple)):
            data = _to_arrow_table(data)
        return self._s.write(data)

    def flush(self) -> None:
        """Commits every acknowledged row now (one snapshot; none when none);
        the Table then reads the new metadata."""
        self._s.flush()
        self._table.refresh()

    def refresh(self) -> None:
        """Makes every acknowledged row visible to reads of the Table now."""
        self._s.refresh()

    def stats(self) -> Dict[str, int]:
        """Counters: acked_seq, committed_seq, visible_seq, tail_rows,
        tail_bytes, wal_bytes, wal_segments, flushes, rows_written,
        replayed_records, replayed_rows, busy_rejections, and of the
        automatic maintenance (table properties hyperstream.wal.compact-
        min-files and expire-age-ms): compactions, expirations,
        maintenance_failures."""
        return self._s.stats()

    @property
    def closed(self) -> bool:
        return self._s.closed

    def close(self) -> None:
        """Flushes, then ends the stream (on a failed flush the rows stay in
        the write-ahead log for the next stream; the error is raised)."""
        self._s.close()
        if not self._table._h.closed:
            self._table.refresh()

    def abort(self) -> None:
        """Ends the stream without flushing (rows stay in the log)."""
        self._s.abort()

    def __enter__(self) -> "AppendStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._s.closed:
            return "hyperstreamdb.AppendStream(closed)"
        st = self._s.stats()
        return (f"hyperstreamdb.AppendStream(acked_seq={st['acked_seq']}, "
                f"committed_seq={st['committed_seq']}, tail_rows={st['tail_rows']})")


def _strip_field_ids(schema: pa.Schema) -> pa.Schema:
    """Field ids are assigned by the table; drop pandas / field-id metadata so
    nothing stale is carried into a new table."""
    return pa.schema([f.remove_metadata() if f.metadata else f for f in schema])


def _check_context(context) -> None:
    from ._vector import _check_context as check
    check(context)


class Query:
    """A fluent query over one table; each method returns the query itself.

        t.query().filter("age > 25").vector_search("embedding", q, k=10) \\
                 .select(["name", "score"]).to_pandas()

    filter() may be called several times (the filters are ANDed).  Terminal
    methods: to_arrow(), to_pandas(), execute() (= to_pandas), to_batches(),
    to_reader(), explain(); the query is also an Arrow stream source
    (__arrow_c_stream__), so pyarrow.table(query) works."""

    def __init__(self, table: Table):
        self._table = table
        self._filters: List[str] = []
        self._vector: Optional[dict] = None
        self._columns: Optional[List[str]] = None
        self._time: Dict[str, Any] = {}
        self._limit: Optional[int] = None

    def filter(self, expr: str) -> "Query":
        if not isinstance(expr, str):
            raise TypeError(f"filter must be a str, not {type(expr).__name__}")
        self._filters.append(expr)
        return self

    where = filter

    def vector_search(self, column: str, query, k: int = 10, *, metric: Optional[str] = None,
                      ef_search: Optional[int] = None, nprobe: Optional[int] = None) -> "Query":
        """Keep the k rows nearest to ``query``, nearest first, with a
        "distance" column (filters still apply: hybrid search)."""
        self._vector = self._table._search_kw(column, query, k, metric, ef_search, nprobe)
        return self

    def select(self, columns) -> "Query":
        self._columns = _columns_arg(columns)
        return self

    def snapshot(self, snapshot_id: int) -> "Query":
        self._time = {"snapshot_id": snapshot_id}
        return self

    def as_of(self, when) -> "Query":
        self._time = {"as_of": when}
        return self

    def ref(self, name: str) -> "Query":
        self._time = {"ref": name}
        return self

    def limit(self, n: int) -> "Query":
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
            raise ValueError("limit must be an int >= 0")
        self._limit = int(n)
        return self

    def _filter_text(self) -> Optional[str]:
        if not self._filters:
            return None
        if len(self._filters) == 1:
            return self._filters[0]
        return " AND ".join(f"({f})" for f in self._filters)

    def _scan_kw(self) -> dict:
        return self._table._scan_kw(self._filter_text(), None, self._time.get("snapshot_id"),
                                    self._time.get("as_of"), self._time.get("ref"), False, None)

    def _output_columns(self):
        """(columns for the engine, final order or None)."""
        if self._columns is None or self._vector is None:
            return self._columns, None
        dcol = self._vector["distance_column"]
        scan_cols = [c for c in self._columns if c != dcol]
        if dcol in self._columns:
            return scan_cols, list(self._columns)
        return scan_cols, None

    def to_arrow(self) -> pa.Table:
        h = self._table._handle()
        kw = self._scan_kw()
        cols, order = self._output_columns()
        kw["columns"] = cols
        if self._vector is not None:
            kw.pop("batch_size", None)
            t = _to_arrow_table(h.search(**self._vector, **kw))
        elif self._limit is not None:
            reader = pa.RecordBatchReader.from_stream(h.scan_stream(**kw))
            batches, n = [], 0
            for b in reader:
                if n >= self._limit:
                    break
                batches.append(b)
                n += b.num_rows
            t = pa.Table.from_batches(batches, schema=reader.schema)
        else:
            t = _to_arrow_table(h.scan(**kw))
        if order is not None:
            t = t.select(order)
        if self._limit is not None:
            t = t.slice(0, self._limit)
        return t

    def to_pandas(self, **pandas_kwargs):
        return self.to_arrow().to_pandas(**pandas_kwargs)

    def execute(self):
        """Runs the query; returns a pandas DataFrame (as to_pandas())."""
        return self.to_pandas()

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return iter(self.to_reader())

    def to_reader(self) -> pa.RecordBatchReader:
        if self._vector is not None or self._limit is not None:
            t = self.to_arrow()
            return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())
        kw = self._scan_kw()
        kw["columns"] = self._columns
        return pa.RecordBatchReader.from_stream(self._table._handle().scan_stream(**kw))

    def __arrow_c_stream__(self, requested_schema=None):
        if self._vector is None and self._limit is None:
            kw = self._scan_kw()
            kw["columns"] = self._columns
            return self._table._handle().scan_stream(**kw).__arrow_c_stream__(requested_schema)
        return self.to_arrow().__arrow_c_stream__(requested_schema)

    def explain(self) -> dict:
        kw = self._scan_kw()
        kw["columns"] = self._columns
        return json.loads(self._table._handle().explain(**kw))

    def __repr__(self) -> str:
        parts = [f"hyperstreamdb.Query({self._table.path!r}"]
        if self._filters:
            parts.append(f"filter={self._filter_text()!r}")
        if self._vector:
            parts.append(f"vector_search={self._vector['column']!r}, k={self._vector['k']}")
        if self._columns is not None:
            parts.append(f"select={self._columns!r}")
        return ", ".join(parts) + ")"

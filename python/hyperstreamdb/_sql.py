"""SQL from Python: ``Session`` and ``Result`` over ``_core.Session`` (the C
session API, include/hyperstream/sql.h; the language is docs/sql.md).

    session = hdb.Session()
    session.register("users", users_table)
    session.sql("SELECT name FROM users WHERE id > $1", params=[100]).to_pandas()

Execution.  ``sql()`` runs the statement with the GIL released; rows are read
batch by batch, also with the GIL released, when the result is consumed
(``to_arrow()``, iteration, or an Arrow consumer through
``__arrow_c_stream__``, which streams the library's batches without a copy).
Ctrl-C in the main thread cancels the running statement (or batch read) in
the library and raises KeyboardInterrupt; ``Session.cancel()`` does the same
from another thread.

Parameters ($1, $2, ...) are typed from the Python values: int -> bigint
(numeric past 64 bits), float -> double precision, str -> text, bytes ->
bytea, bool -> boolean, None -> NULL, Decimal -> numeric, datetime ->
timestamp / timestamptz (aware), date -> date, time -> time, timedelta ->
interval, UUID -> uuid, a 1-D sequence or numpy array of numbers -> vector,
hyperstreamdb.SparseVector -> sparsevec.

Errors are the package's exceptions (HyperStreamError and its subclasses)
with two more attributes: ``sqlstate`` (PostgreSQL's code, e.g. "42P01")
and ``position`` (1-based character of the query the error points at, or
None).
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math
import os
import re
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from . import _core


def _stream_table(stream) -> pa.Table:
    """A result stream (__arrow_c_stream__) -> pyarrow.Table.  Not pa.table():
    that asks pyarrow's pandas shim whether its argument is a DataFrame, which
    imports pandas (0.5 s or more on a fresh process's first result)."""
    return pa.RecordBatchReader.from_stream(stream).read_all()


_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "kib": 1 << 10, "mb": 1 << 20, "mib": 1 << 20,
          "gb": 1 << 30, "gib": 1 << 30, "tb": 1 << 40, "tib": 1 << 40}


def _memory_bytes(v) -> int:
    if v is None:
        return 0
    if isinstance(v, bool):
        raise TypeError("memory_limit must be a number of bytes or a string like '4GB'")
    if isinstance(v, (int, np.integer)):
        if v <= 0:
            raise ValueError(f"memory_limit must be positive, got {v}")
        return int(v)
    if isinstance(v, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", v)
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"memory_limit: cannot read {v!r} (use bytes or e.g. '512MB', '4GB')")
        n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
        if n <= 0:
            raise ValueError(f"memory_limit must be positive, got {v!r}")
        return n
    raise TypeError(f"memory_limit must be an int or a str, not {type(v).__name__}")


def _float_text(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return repr(x)


def _vector_text(a: np.ndarray) -> str:
    if a.dtype == np.float16 or a.dtype == np.float32:
        items = [_float_text(float(x)) if not np.isfinite(x) else str(x) for x in a]
    else:
        items = [_float_text(float(x)) for x in a.astype(np.float64)]
    return "[" + ",".join(items) + "]"


def _param(v) -> Tuple[Optional[str], Optional[str]]:
    """One parameter value -> (PostgreSQL type name, text in its input format)."""
    if v is None:
        return (None, None)
    if isinstance(v, (bool, np.bool_)):
        return ("boolean", "true" if v else "false")
    if isinstance(v, (int, np.integer)):
        i = int(v)
        return ("bigint" if -(1 << 63) <= i < (1 << 63) else "numeric", str(i))
    if isinstance(v, (float, np.floating)):
        return ("double precision", _float_text(float(v)))
    if isinstance(v, str):
        return ("text", v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return ("bytea", "\\x" + bytes(v).hex())
    if isinstance(v, decimal.Decimal):
        return ("numeric", str(v))
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            return ("timestamp with time zone", v.isoformat(sep=" "))
        return ("timestamp", v.isoformat(sep=" "))
    if isinstance(v, _dt.date):
        return ("date", v.isoformat())
    if isinstance(v, _dt.time):
        return ("time", v.isoformat())
    if isinstance(v, _dt.timedelta):
        us = (v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds
        return ("interval", f"{us} microseconds")
    if isinstance(v, uuid.UUID):
        return ("uuid", str(v))
    from ._vector import SparseVector
    if isinstance(v, SparseVector):
        body = ",".join(f"{int(i) + 1}:{_float_text(float(x))}"
                        for i, x in zip(v.indices, v.values))
        return ("sparsevec", "{" + body + "}/" + str(int(v.dim)))
    if isinstance(v, np.ndarray) or (isinstance(v, (list, tuple)) and
                                     all(isinstance(x, (int, float, np.number)) and
                                         not isinstance(x, (bool, np.bool_)) for x in v)):
        a = np.asarray(v)
        if a.ndim != 1 or not (np.issubdtype(a.dtype, np.floating) or
                               np.issubdtype(a.dtype, np.integer)):
            raise TypeError(f"a vector parameter must be a 1-D sequence of numbers, got "
                            f"shape {a.shape} of {a.dtype}")
        return ("vector", _vector_text(a))
    raise TypeError(f"cannot pass a {type(v).__name__} as an SQL parameter (int, float, str, "
                    f"bytes, bool, None, Decimal, date/time, UUID, a vector of numbers)")


class Result:
    """The result of one statement.

    Rows are read once from the library, as Arrow record batches, when first
    consumed: ``to_arrow()`` (a pyarrow.Table, kept), ``to_pandas()``,
    ``to_pylist()``, iterating (record batches), or any Arrow consumer of
    ``__arrow_c_stream__`` (``pyarrow.table(result)``, ``polars.from_arrow``,
    ``duckdb.sql("SELECT * FROM result")``), which gets the library's
    batches streamed, without a copy.  After ``to_arrow()`` every way of
    reading sees the same rows again.

    ``tag`` is the command tag ("SELECT 3", "INSERT 0 5", "CREATE INDEX");
    ``rowcount`` the rows a DML statement changed, or for a query the rows
    it returned once they were all read (-1 before)."""

    def __init__(self, core_result):
        self._r = core_result
        self._batches: List[pa.RecordBatch] = []   # read by iteration so far
        self._table: Optional[pa.Table] = None      # all rows, once read
        self._streamed = False                      # handed to an Arrow consumer
        self._schema: Optional[pa.Schema] = None
        self._has_rows = bool(core_result.has_rows)
        self._final = None                          # (tag, rows_affected) once freed

    # ---- metadata --------------------------------------------------------

    @property
    def tag(self) -> str:
        """The command tag, as PostgreSQL reports it ("SELECT 3", "UPDATE 2")."""
        if self._final is not None:
            return self._final[0]
        return self._r.tag

    @property
    def has_rows(self) -> bool:
        """Whether the statement returns rows (queries, EXPLAIN, SHOW, ... RETURNING)."""
        return self._has_rows

    @property
    def rowcount(self) -> int:
        if self._has_rows:
            return self._table.num_rows if self._table is not None else -1
        return self._final[1] if self._final is not None else self._r.rows_affected

    @property
    def schema(self) -> pa.Schema:
        """The columns (a pyarrow.Schema; empty for statements without rows)."""
        if self._table is not None:
            return self._table.schema
        if self._schema is None:
            if not self._has_rows:
                self._schema = pa.schema([])
            elif self._streamed:
                raise RuntimeError("the rows were handed to an Arrow consumer")
            else:
                self._schema = pa.schema(self._r)
        return self._schema

    @property
    def columns(self) -> List[str]:
        return list(self.schema.names)

    # ---- reading ---------------------------------------------------------

    def _check_streamed(self):
        if self._streamed:
            raise RuntimeError("this result's rows were handed to an Arrow consumer "
                               "(__arrow_c_stream__) and cannot be read again; call "
                               "to_arrow() first to keep them")

    def to_arrow(self) -> pa.Table:
        """All rows as a pyarrow.Table (the library's buffers, not copied)."""
        if self._table is None:
            self._check_streamed()
            if not self._has_rows:
                self._table = pa.table({})
            else:
                rest = _stream_table(self._r.read_all())
                if self._batches:
                    rest = pa.Table.from_batches(self._batches + rest.to_batches(),
                                                 schema=rest.schema)
                self._table = rest
                self._batches = []
            self._free()
        return self._table

    def to_pandas(self, **kwargs):
        """All rows as a pandas DataFrame (keyword arguments go to pyarrow's
        Table.to_pandas)."""
        return self.to_arrow().to_pandas(**kwargs)

    def to_pylist(self) -> List[Dict[str, Any]]:
        """All rows as a list of dicts."""
        return self.to_arrow().to_pylist()

    def to_pydict(self) -> Dict[str, List[Any]]:
        return self.to_arrow().to_pydict()

    def fetchall(self) -> List[tuple]:
        """All rows as a list of tuples (DB-API style)."""
        t = self.to_arrow()
        cols = [c.to_pylist() for c in t.columns]
        return list(zip(*cols)) if cols else [()] * t.num_rows

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        """The rows as pyarrow.RecordBatch objects, read one at a time."""
        if self._table is not None:
            yield from self._table.to_batches()
            return
        if not self._has_rows:
            return
        self._check_streamed()
        yield from list(self._batches)
        while self._table is None:
            b = self._r.read_batch()
            if b is None:
                if self._table is None:
                    self.to_arrow()
                return
            for batch in _stream_table(b).to_batches():
                self._batches.append(batch)
                yield batch

    def __len__(self) -> int:
        return self.to_arrow().num_rows

    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow PyCapsule stream protocol.  Before any other reading, the
        library's stream itself (batches move to the consumer as they are
        produced; once); after to_arrow(), the kept table's stream."""
        if self._table is None and not self._batches and self._has_rows \
                and not self._streamed:
            cap = self._r.__arrow_c_stream__(requested_schema)
            self._streamed = True
            return cap
        return self.to_arrow().__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self):
        return self.schema.__arrow_c_schema__()

    def _free(self) -> None:
        if self._final is None:
            self._final = (self._r.tag, self._r.rows_affected)
        self._r.close()

    def close(self) -> None:
        """Frees what the library holds for this result (rows not read are dropped)."""
        self._free()

    def __repr__(self) -> str:
        return f"<hyperstreamdb.Result {self.tag!r}>"


def _catalog_kind(path: str) -> str:
    if os.path.isdir(path):
        return "path"
    if os.path.isfile(path) or path.endswith((".db", ".sqlite", ".sqlite3")):
        return "sql"
    return "path"


class Session:
    """A SQL session: PostgreSQL 15 grammar with pgvector semantics over
    HyperStreamDB tables (docs/sql.md).

    ``Session(threads=None, memory_limit=None, catalog=None, warehouse=None)``:
    threads runs one statement on that many workers (None: the library's
    scan_threads setting, all cores by default); memory_limit (bytes, or a
    string like "4GB") bounds hash tables and sorts before they spill to
    disk; catalog is a hyperstreamdb.Catalog or a catalog URI ("sqlite:///...",
    "http(s)://..." REST; docs/catalogs.md), a SQLite catalog file (pyiceberg's SQL catalog schema;
    its tables are ``namespace.table``; new tables go under ``warehouse``) or
    a directory of path tables (each registered by its directory name).  A path table is always reachable by its
    quoted path: ``SELECT * FROM "/data/t"``.

    Tables registered with ``register(name, table)`` are visible by name.
    A session is used by one thread at a time (calls are serialized);
    ``cancel()`` may be called from any thread."""

    def __init__(self, threads: Optional[int] = None, memory_limit=None, catalog=None, *,
                 warehouse=None):
        if threads is not None and (isinstance(threads, bool) or not isinstance(
                threads, (int, np.integer)) or threads < 1):
            raise ValueError(f"threads must be a positive int or None, got {threads!r}")
        cat = kind = None
        wh = os.path.abspath(os.fspath(warehouse)) if warehouse is not None else None
        from ._catalog import Catalog
        if isinstance(catalog, Catalog) or (isinstance(catalog, str) and catalog.startswith(
                ("sqlite:", "http://", "https://"))):
            # a catalog URI (docs/catalogs.md): namespace.table resolves through it
            if not isinstance(catalog, Catalog):
                catalog = Catalog(catalog, warehouse=wh)
            cat, kind = catalog.uri, "uri"
            wh = catalog._opts or "{}"
        elif catalog is not None:
            cat = os.path.abspath(os.fspath(catalog))
            kind = _catalog_kind(cat)
        self._tables: Dict[str, Any] = {}
        self._s = _core.Session(threads=int(threads or 0),
                                memory_limit=_memory_bytes(memory_limit),
                                catalog=cat, catalog_kind=kind or "path", warehouse=wh)
        if kind == "path":
            self._register_warehouse(cat)

    def _register_warehouse(self, root: str) -> None:
        """A directory of path tables: each table directory (one holding
        metadata/version-hint.text or metadata/*.metadata.json) directly
        under root is registered by its name, as `hyperstream sql WAREHOUSE`
        does."""
        from ._table import Table
        for name in sorted(os.listdir(root)):
            meta = os.path.join(root, name, "metadata")
            if not os.path.isdir(meta) or not any(
                    f == "version-hint.text" or f.endswith(".metadata.json")
                    for f in os.listdir(meta)):
                continue
            self.register(name, Table.open(os.path.join(root, name)))

    def register(self, name: str, table) -> None:
        """Makes ``table`` (a hyperstreamdb.Table) visible to SQL as ``name``
        (unquoted identifiers fold to lower case, as in PostgreSQL).
        Registering a name again replaces it."""
        from ._table import Table
        if not isinstance(name, str) or not name:
            raise TypeError("the table name must be a non-empty str")
        if not isinstance(table, Table):
            raise TypeError(f"register() takes a hyperstreamdb.Table, not {type(table).__name__}")
        self._s.register(name, table._handle())
        self._tables[name] = table

    def unregister(self, name: str) -> None:
        """Removes a registered name (NotFoundError if absent)."""
        self._s.unregister(name)
        self._tables.pop(name, None)

    @property
    def tables(self) -> Dict[str, Any]:
        """The registered tables by name."""
        return dict(self._tables)

    def sql(self, query: str, params: Optional[Sequence[Any]] = None) -> Result:
        """Runs one statement; ``params`` fill $1, $2, ... (typed from the
        Python values, see the module's documentation).  Returns a Result."""
        if not isinstance(query, str):
            raise TypeError(f"the query must be a str, not {type(query).__name__}")
        if params is None:
            return Result(self._s.execute(query))
        if isinstance(params, (str, bytes, dict)) or not hasattr(params, "__iter__"):
            raise TypeError(f"params must be a list of values, not {type(params).__name__}")
        return Result(self._s.execute(query, [_param(v) for v in params]))

    execute = sql

    def cancel(self) -> None:
        """Cancels the statement running in this session (from any thread):
        it raises KeyboardInterrupt in the thread that runs it."""
        self._s.cancel()

    def close(self) -> None:
        """Closes the session (its results' unread rows stay readable until
        they are dropped)."""
        self._s.close()

    @property
    def closed(self) -> bool:
        return self._s.closed

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        names = ", ".join(sorted(self._tables))
        return f"<hyperstreamdb.Session tables=[{names}]{' closed' if self.closed else ''}>"

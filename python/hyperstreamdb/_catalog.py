"""hyperstreamdb.Catalog: where tables are found by name.

    cat = hdb.Catalog("sqlite:////data/catalog.db", warehouse="/data/wh")  # pyiceberg SqlCatalog layout
    cat = hdb.Catalog("/data/wh")                                       # a directory of path tables
    cat = hdb.Catalog("http://127.0.0.1:8181", token="...")             # an Iceberg REST catalog

    cat.create_namespace("db")
    t = cat.create_table("db.events", pa.schema([("id", pa.int64())]))
    t.write_arrow(...); t.commit()
    cat.load_table("db.events").to_pandas()
    cat.list_namespaces(), cat.list_tables("db"), cat.drop_table("db.events")
    cat.register_table("db.other", "s3://b/wh/other/metadata/00003-....metadata.json")
    cat.list_views("db")

The URI forms are those of the C function hs_catalog_open_uri
(docs/catalogs.md).  Identifiers are "ns.name" strings (nested namespaces
"a.b.name") or tuples ("ns", "name") as pyiceberg takes them.  In a path
catalog a namespace is a directory under the root and "db.events" is the
table directory db/events.

Tables come back as ordinary hyperstreamdb.Table objects that commit through
the catalog (compare-and-swap of the SQL row, the REST commit endpoint, or
the path table's version files); each holds its own connection, so it
outlives the Catalog object.
"""
import json
import os
from typing import Dict, List, Optional, Sequence, Tuple, Union

import pyarrow as pa

from . import _core
from ._table import Table, _columns_arg, _strip_field_ids

Identifier = Union[str, Sequence[str]]


def _ident(identifier: Identifier) -> str:
    if isinstance(identifier, str):
        s = identifier
    elif isinstance(identifier, (tuple, list)) and identifier and \
            all(isinstance(p, str) for p in identifier):
        s = ".".join(identifier)
    else:
        raise TypeError(f"a table or namespace identifier is a str or a tuple of str, "
                        f"not {identifier!r}")
    if not s or s.startswith(".") or s.endswith(".") or ".." in s:
        raise ValueError(f"invalid identifier {s!r}: want 'namespace.name'")
    return s


class Catalog:
    """A catalog of Iceberg tables: a SQLite file in pyiceberg's SqlCatalog /
    Java's JdbcCatalog layout ("sqlite:///relative.db", "sqlite:////abs.db"),
    an Iceberg REST catalog ("http://host:port", optional token= or
    credential="client_id:secret" for OAuth2 client credentials), or a
    directory of path tables (any other string or os.PathLike).

    name: the SQL catalog's catalog_name (pyiceberg's SqlCatalog name, default
    "default").  warehouse: where new tables go (SQL: default the directory of
    the SQLite file; REST: sent to the server's config endpoint)."""

    def __init__(self, uri, *, name: str = "default", warehouse: Optional[str] = None,
                 token: Optional[str] = None, credential: Optional[str] = None,
                 properties: Optional[Dict[str, str]] = None):
        if not isinstance(uri, str):
            uri = os.fspath(uri)
            if isinstance(uri, bytes):
                uri = os.fsdecode(uri)
        if not uri:
            raise ValueError("catalog URI must not be empty")
        self._kind = ("sql" if uri.startswith("sqlite:") else
                      "rest" if uri.startswith(("http://", "https://")) else "path")
        if self._kind == "path" and "://" not in uri:
            uri = os.path.abspath(uri)
        opts = dict(properties or {})
        for k, v in (("name", name), ("warehouse", warehouse), ("token", token),
                     ("credential", credential)):
            if v is not None:
                opts[k] = os.fspath(v) if k == "warehouse" else v
        for k, v in opts.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"catalog option {k!r}: keys and values must be str")
        self._uri = uri
        self._opts = json.dumps(opts) if opts else None
        self._h = _core.open_catalog(uri, self._opts)

    # ---- plumbing --------------------------------------------------------------

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def kind(self) -> str:
        """"sql", "rest" or "path"."""
        return self._kind

    def _name(self, identifier: Identifier) -> str:
        s = _ident(identifier)
        return s.replace(".", "/") if self._kind == "path" else s

    def _table_kw(self) -> Dict[str, str]:
        kw = {"catalog": self._uri}
        if self._opts:
            kw["catalog_options"] = self._opts
        return kw

    def close(self) -> None:
        """Closes the catalog's own connection (tables it opened stay usable)."""
        self._h.close()

    def __enter__(self) -> "Catalog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"hyperstreamdb.Catalog({self._uri!r}, {self._kind})"

    # ---- namespaces ------------------------------------------------------------

    def list_namespaces(self, parent: Optional[Identifier] = None) -> List[str]:
        """Namespaces directly under parent (None = the top level), as dotted
        names ("db", "db.sub")."""
        return json.loads(self._h.list_namespaces(None if parent is None else _ident(parent)))

    def create_namespace(self, namespace: Identifier,
                         properties: Optional[Dict[str, str]] = None) -> None:
        """CommitConflictError if it exists."""
        self._h.create_namespace(_ident(namespace),
                                 json.dumps(properties) if properties else None)

    def create_namespace_if_not_exists(self, namespace: Identifier,
                                       properties: Optional[Dict[str, str]] = None) -> None:
        try:
            self.create_namespace(namespace, properties)
        except _core.CommitConflictError:
            pass

    def drop_namespace(self, namespace: Identifier) -> None:
        """Drops an empty namespace (NotFoundError if absent,
        InvalidArgumentError if it holds tables)."""
        self._h.drop_namespace(_ident(namespace))

    def namespace_properties(self, namespace: Identifier) -> Dict[str, str]:
        return json.loads(self._h.namespace_properties(_ident(namespace)))

    def update_namespace_properties(self, namespace: Identifier,
                                    updates: Optional[Dict[str, str]] = None,
                                    removals: Optional[Sequence[str]] = None) -> None:
        self._h.update_namespace_properties(_ident(namespace),
                                            json.dumps(dict(updates or {})),
                                            json.dumps(list(removals or [])))

    def namespace_exists(self, namespace: Identifier) -> bool:
        try:
            self.namespace_properties(namespace)
            return True
        except _core.NotFoundError:
            return False

    # ---- tables ----------------------------------------------------------------

    def list_tables(self, namespace: Optional[Identifier] = None) -> List[str]:
        """Identifiers ("ns.name") of the tables in namespace (path catalogs:
        None = the root directory; the C list gives "ns/dir/name" there)."""
        ns = None if namespace is None else _ident(namespace)
        if ns is not None and self._kind == "path":
            pns = ns.replace(".", "/")
            names = json.loads(self._h.list_tables(pns))
            return [ns + "." + n[len(pns) + 1:] for n in names]
        return json.loads(self._h.list_tables(ns))

    def table_exists(self, identifier: Identifier) -> bool:
        return self._h.table_exists(self._name(identifier))

    def load_table(self, identifier: Identifier) -> Table:
        """Opens the table (NotFoundError if absent) for reading and writing."""
        name = self._name(identifier)
        kw = self._table_kw()
        return Table._from_catalog(name, _core.open_table(name, **kw), kw)

    def create_table(self, identifier: Identifier, schema, *, partition_by=None,
                     sort_order=None, properties: Optional[Dict[str, str]] = None,
                     format_version: int = 2, location: Optional[str] = None) -> Table:
        """Creates an empty table (CommitConflictError if it exists); the
        arguments are those of Table.create, plus location (default: the
        catalog's choice, e.g. <warehouse>/<ns>.db/<name> for SQL)."""
        name = self._name(identifier)
        if format_version not in (2, 3):
            raise ValueError(f"format_version must be 2 or 3, got {format_version!r}")
        if isinstance(schema, pa.Schema):
            schema = _strip_field_ids(schema)
        spec = Table._spec_text(partition_by) if partition_by is not None else None
        sort = sort_order if sort_order is None or isinstance(sort_order, str) else \
            Table._sort_text(_columns_arg(sort_order), None, None)
        opts = dict(format_version=format_version, partition_spec=spec, sort_order=sort,
                    properties=Table._props_arg(properties) if properties else None)
        kw = self._table_kw()
        h = _core.create_table(name, schema, **opts, **kw,
                               location=None if location is None else os.fspath(location))
        t = Table._from_catalog(name, h, kw)
        t._create_opts = opts
        return t

    def drop_table(self, identifier: Identifier, purge: bool = False) -> None:
        """Removes the table from the catalog; purge=True also deletes its files."""
        self._h.drop_table(self._name(identifier), bool(purge))

    def purge_table(self, identifier: Identifier) -> None:
        self.drop_table(identifier, purge=True)

    def rename_table(self, from_identifier: Identifier, to_identifier: Identifier) -> None:
        """SQL and REST catalogs (UnsupportedError for path catalogs)."""
        self._h.rename_table(self._name(from_identifier), self._name(to_identifier))

    def register_table(self, identifier: Identifier, metadata_location,
                       overwrite: bool = False) -> Table:
        """Registers an existing metadata file (one another engine or catalog
        wrote) as table identifier and opens it, as pyiceberg's
        Catalog.register_table does: the catalog points at that very file.
        CommitConflictError if the name exists (unless overwrite=True);
        UnsupportedError for path catalogs (open the file with
        hdb.Table(metadata_location) instead)."""
        name = self._name(identifier)
        self._h.register_table(name, os.fspath(metadata_location), bool(overwrite))
        return self.load_table(identifier)

    def list_views(self, namespace: Identifier) -> List[str]:
        """Identifiers ("ns.name") of the views in namespace: a REST catalog's
        views (none when the server has no views endpoint), a SQL catalog's
        rows of type VIEW; path catalogs have none.  Views are listed, not
        opened."""
        return json.loads(self._h.list_views(_ident(namespace)))


__all__: Tuple[str, ...] = ("Catalog",)

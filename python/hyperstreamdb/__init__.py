"""HyperStreamDB for Python: Apache Iceberg tables of Parquet files with
sidecar indexes (scalar bitmaps, HNSW vectors), filtered and vector search,
and pgvector-compatible distance functions.

    import hyperstreamdb as hdb
    import pandas as pd

    table = hdb.Table("/tmp/my-table")
    table.write_pandas(pd.DataFrame({"id": [1, 2, 3],
                                     "embedding": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]}))
    table.commit()                                  # one Iceberg snapshot
    table.add_index("embedding", "hnsw_tq8")
    table.to_pandas(filter="id > 1")
    table.to_pandas(vector_filter={"column": "embedding", "query": [0.15, 0.25], "k": 10})

The package is a C extension (hyperstreamdb._core) over the HyperStreamDB C
library: calls release the GIL, results reach pyarrow through the Arrow
PyCapsule interface without copying, and errors are the exceptions below
(each carries .status, the C status name):

    HyperStreamError          base class
    InvalidArgumentError      HS_INVALID      (a ValueError)
    NotFoundError             HS_NOT_FOUND    (a FileNotFoundError)
    CommitConflictError       HS_CONFLICT
    CorruptDataError          HS_CORRUPT
    UnsupportedError          HS_UNSUPPORTED  (a NotImplementedError)
    StorageError              HS_IO           (an OSError)
    InternalError             HS_INTERNAL     (a RuntimeError)
    MemoryError               HS_NOMEM
    KeyboardInterrupt         Ctrl-C during a long call (HS_CANCELLED)

Conditions that do not fail a call (a corrupt index sidecar skipped: the
query reads the data instead) are issued as warnings of category
HyperStreamWarning (a RuntimeWarning) with warnings.warn, from the main
thread, right after the library reported them.

See docs/python.md for the full guide.
"""
from ._core import (  # noqa: F401
    BusyError,
    CommitConflictError,
    CorruptDataError,
    HyperStreamError,
    HyperStreamWarning,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    StorageError,
    UnsupportedError,
)
from ._catalog import Catalog  # noqa: F401
from ._progress import get_progress, set_progress  # noqa: F401
from ._sql import Result, Session  # noqa: F401
from ._table import AppendStream, HistoryEntry, Query, Snapshot, Table  # noqa: F401
from ._vector import (  # noqa: F401
    ComputeContext,
    Device,
    GPUContext,
    SparseVector,
    cosine_distance,
    cosine_distance_batch,
    cosine_distance_sparse,
    hamming_distance,
    hamming_distance_batch,
    hamming_distance_packed,
    hamming_distance_sparse,
    inner_product,
    inner_product_batch,
    inner_product_sparse,
    jaccard_distance,
    jaccard_distance_batch,
    jaccard_distance_packed,
    jaccard_distance_sparse,
    l1_distance,
    l1_distance_batch,
    l1_distance_sparse,
    l2_distance,
    l2_distance_batch,
    l2_distance_sparse,
    simd_level,
)

__version__ = "0.1.0"


def set_config(key, value):
    """Sets a process-wide setting of the C library (None restores the value
    the process started with).  Keys: manifest_cache_mb, index_cache_mb,
    vindex_cache_mb, dict_cache_mb, page_cache_mb, cluster_cache_mb, buffer_pool_mb
    (MiB; 0 = no caching), parquet_max_page_mb, decode_limit_mb, decode_limit_per_byte, warm_files,
    eq_delete_mb, mmap, filter_cache, search_filter_cache (bools),
    scan_threads, search_threads (0 = automatic); text: s3_lock_dir (a
    directory path, "" = none: the commit locks of object stores without
    conditional writes, docs/storage.md); hyperstreamdb._core.
    config_keys() lists them (docs/capi.md).  The HS_* environment
    variables of the same names are read once, at first use; later changes
    to os.environ have no effect, this function does."""
    from . import _core
    _core.config_set(key, value)


def get_config(key):
    """The current value of a setting of set_config: an int, or a str for a
    text setting (s3_lock_dir; "" when unset)."""
    from . import _core
    return _core.config_get(key)


__all__ = [
    "Table", "Query", "Snapshot", "HistoryEntry", "Session", "Result", "AppendStream", "BusyError",
    "Catalog",
    "HyperStreamError", "InvalidArgumentError", "NotFoundError", "CommitConflictError",
    "CorruptDataError", "UnsupportedError", "StorageError", "InternalError", "HyperStreamWarning",
    "set_progress", "get_progress", "set_config", "get_config",
    "GPUContext", "ComputeContext", "Device", "SparseVector", "simd_level",
    "l2_distance", "cosine_distance", "inner_product", "l1_distance", "hamming_distance",
    "jaccard_distance",
    "l2_distance_batch", "cosine_distance_batch", "inner_product_batch", "l1_distance_batch",
    "hamming_distance_batch", "jaccard_distance_batch",
    "l2_distance_sparse", "cosine_distance_sparse", "inner_product_sparse",
    "l1_distance_sparse", "hamming_distance_sparse", "jaccard_distance_sparse",
    "hamming_distance_packed", "jaccard_distance_packed",
]

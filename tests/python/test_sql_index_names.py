"""SQL index names outlive the session that created them (issue 13: CREATE /
DROP INDEX).  An index created in one session is dropped by name from a new
one, as in PostgreSQL; a duplicate name is 42P07 (IF NOT EXISTS: a no-op), an
unknown one 42704 (IF EXISTS: a no-op).  The name is stored with the table:
pyiceberg (an independent reader of the metadata) sees the property, and the
index declarations are read back through Table.indexes().
"""
import pyarrow as pa
import pytest
from conftest import require_module

import hyperstreamdb as hdb

StaticTable = require_module("pyiceberg.table").StaticTable


def _table(path):
    t = hdb.Table(str(path))
    t.write_arrow(pa.table({
        "id": pa.array(range(50), pa.int64()),
        "cat": pa.array([f"c{i % 3}" for i in range(50)]),
        "emb": pa.FixedSizeListArray.from_arrays(
            pa.array([float(i % 7) for i in range(200)], pa.float32()), 4)}))
    t.commit()
    return t


def _kinds(t):
    t.refresh()
    return sorted((ix["column"], ix["kind"]) for ix in t.indexes())


def _props(t):
    return StaticTable.from_metadata(t.metadata_location).properties


def test_index_names_persist_across_sessions(tmp_path):
    t = _table(tmp_path / "items")
    with hdb.Session() as s:
        s.register("items", t)
        assert s.sql("CREATE INDEX items_emb ON items USING hnsw (emb vector_l2_ops)").tag \
            == "CREATE INDEX"
        assert s.sql("CREATE INDEX ON items (cat)").tag == "CREATE INDEX"   # items_cat_idx
        with pytest.raises(hdb.HyperStreamError) as e:
            s.sql("CREATE INDEX items_emb ON items USING hnsw (emb vector_cosine_ops)")
        assert e.value.sqlstate == "42P07"
        assert s.sql("CREATE INDEX IF NOT EXISTS items_emb ON items (id)").tag == "CREATE INDEX"
    assert _kinds(t) == [("cat", "range"), ("emb", "hnsw")]
    props = _props(t)
    assert "hyperstream.sql.index.items_emb" in props
    assert "hyperstream.sql.index.items_cat_idx" in props

    # a new session (and a new handle) drops them by name
    t2 = hdb.Table(str(tmp_path / "items"))
    with hdb.Session() as s:
        s.register("items", t2)
        assert s.sql("DROP INDEX items_emb").tag == "DROP INDEX"
        assert _kinds(t2) == [("cat", "range")]
        with pytest.raises(hdb.HyperStreamError) as e:
            s.sql("DROP INDEX items_emb")
        assert e.value.sqlstate == "42704"
        assert s.sql("DROP INDEX IF EXISTS items_emb").tag == "DROP INDEX"
        # dropped outside SQL: DROP INDEX still takes the name away
        t2.drop_index("cat")
        assert s.sql("DROP INDEX items_cat_idx").tag == "DROP INDEX"
        # the name is free again
        assert s.sql("CREATE INDEX items_emb ON items USING hnsw (emb vector_l2_ops)").tag \
            == "CREATE INDEX"
    props = _props(t2)
    assert "hyperstream.sql.index.items_cat_idx" not in props
    assert "hyperstream.sql.index.items_emb" in props
    assert _kinds(t2) == [("emb", "hnsw")]

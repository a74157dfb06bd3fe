"""The hyperstreamdb Python package: tables (write/commit, reads, filters,
projection, time travel, snapshots/history, rollback, evolution, properties,
deletes/overwrites, Arrow inputs, the fluent query API).

Oracles: the source data filtered by pandas / pyarrow.compute (never our own
output), and pyiceberg reading the tables the package writes
(StaticTable.from_metadata on the current metadata file).

Needs the package installed in the venv (make test-python installs it).
"""
import datetime as dt
import glob
import json
import os
import pydoc
import threading
import time
import warnings

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import local_only, require_module  # noqa: E402

import hyperstreamdb as hdb

pyiceberg_table = require_module("pyiceberg.table")
StaticTable = pyiceberg_table.StaticTable

N = 2000


def make_df(n=N, start=0, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n, dtype=np.int64)
    cats = np.array(["science", "art", "sports", "news"])[rng.integers(0, 4, n)]
    score = rng.random(n)
    score[rng.random(n) < 0.05] = np.nan  # pandas NaN -> null through from_pandas
    return pd.DataFrame({
        "id": ids,
        "category": cats,
        "score": score,
        "flag": rng.random(n) < 0.5,
        "ts": pd.to_datetime(1_700_000_000_000_000 + ids * 1_000_000, unit="us"),
    })


def sort_by_id(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


def source_table(df) -> pa.Table:
    return pa.Table.from_pandas(df, preserve_index=False)


def assert_same_rows(got: pa.Table, want: pa.Table):
    got, want = sort_by_id(got), sort_by_id(want)
    assert got.column_names == want.column_names
    assert got.num_rows == want.num_rows
    for name in want.column_names:
        g = got.column(name)
        w = want.column(name).cast(g.type) if want.column(name).type != g.type else want.column(name)
        assert g.to_pylist() == w.to_pylist(), name


def pyiceberg_arrow(t: hdb.Table, snapshot_id=None) -> pa.Table:
    st = StaticTable.from_metadata(t.metadata_location)
    scan = st.scan(snapshot_id=snapshot_id) if snapshot_id else st.scan()
    return scan.to_arrow()


@pytest.fixture
def table(table_dir):
    t = hdb.Table(table_dir / "t")
    df = make_df()
    t.write_pandas(df)
    t.commit()
    yield t, df
    t.close()


def test_write_is_buffered_until_commit(table_dir):
    t = hdb.Table(table_dir / "t")
    assert not t.exists
    df1, df2 = make_df(100), make_df(50, start=100, seed=1)
    t.write_pandas(df1)
    assert t.pending_rows == 100
    with pytest.raises(hdb.NotFoundError, match="commit"):
        t.to_pandas()        # nothing published yet: the table does not exist
    s1 = t.commit()
    assert t.exists and t.pending_rows == 0 and s1 == t.current_snapshot_id
    t.write_pandas(df2)
    assert t.to_arrow().num_rows == 100  # buffered rows are not visible
    t.write_pandas(make_df(25, start=150, seed=2))
    s2 = t.commit()
    snaps = t.snapshots()
    assert [s.snapshot_id for s in snaps] == [s1, s2]  # both writes: ONE snapshot
    assert snaps[1].operation == "append" and snaps[1].summary["added-records"] == "75"
    assert t.to_arrow().num_rows == 175
    assert t.commit() == s2  # nothing buffered: no new snapshot


def test_read_matches_source_and_pyiceberg(table):
    t, df = table
    want = source_table(df)
    got = t.to_arrow()
    assert_same_rows(got, want)
    assert_same_rows(pyiceberg_arrow(t).select(got.column_names), want)
    pdf = t.to_pandas().sort_values("id").reset_index(drop=True)
    assert list(pdf["id"]) == list(df["id"])
    assert pdf["category"].tolist() == df["category"].tolist()


def test_file_uri_and_relative_path(tmp_path, monkeypatch):
    local_only("file:// URIs and relative paths name local files")
    t = hdb.Table("file://" + str(tmp_path / "u"))
    t.write_arrow(pa.table({"id": [1, 2, 3]}))
    t.commit()
    assert hdb.Table(tmp_path / "u").to_arrow()["id"].to_pylist() == [1, 2, 3]
    monkeypatch.chdir(tmp_path)
    assert sorted(hdb.Table("u").to_arrow()["id"].to_pylist()) == [1, 2, 3]


FILTERS = [
    ("id > 1500", lambda d: d["id"] > 1500),
    ("category = 'science' AND score < 0.5",
     lambda d: (d["category"] == "science") & (d["score"] < 0.5)),
    ("category IN ('art', 'news') OR id <= 10",
     lambda d: d["category"].isin(["art", "news"]) | (d["id"] <= 10)),
    ("score IS NULL", lambda d: d["score"].isna()),
    ("NOT (id < 1990)", lambda d: ~(d["id"] < 1990)),
    ("category != 'sports' AND flag = true",
     lambda d: (d["category"] != "sports") & d["flag"]),
    ("ts >= '2023-11-14T22:43:20' AND id < 100",
     lambda d: (d["ts"] >= pd.Timestamp("2023-11-14T22:43:20")) & (d["id"] < 100)),
]


@pytest.mark.parametrize("text,oracle", FILTERS, ids=[f[0] for f in FILTERS])
def test_filters_vs_pandas(table, text, oracle):
    t, df = table
    want = df[oracle(df).fillna(False).astype(bool)]
    got = t.to_pandas(filter=text)
    assert sorted(got["id"]) == sorted(want["id"])
    assert len(got) == len(want)


def test_filter_vs_pyarrow_compute(table):
    t, df = table
    src = source_table(df)
    expr = (pc.field("score") > 0.25) & (pc.field("category") == "art")
    want = src.filter(expr)
    assert_same_rows(t.to_arrow(filter="score > 0.25 AND category = 'art'"), want)


def test_columns_projection(table):
    t, df = table
    got = t.to_arrow(columns=["score", "id"])
    assert got.column_names == ["score", "id"]
    assert_same_rows(got, source_table(df).select(["score", "id"]))
    got = t.to_arrow(filter="id < 5", columns=["category"])
    assert got.column_names == ["category"]
    assert sorted(got["category"].to_pylist()) == sorted(df[df["id"] < 5]["category"])


def test_time_travel_snapshot_as_of_and_tags(table_dir):
    t = hdb.Table(table_dir / "t")
    dfs = [make_df(100, start=100 * i, seed=i) for i in range(3)]
    snaps, times = [], []
    for d in dfs:
        t.write_pandas(d)
        snaps.append(t.commit())
        times.append(dt.datetime.now(dt.timezone.utc))
        time.sleep(0.02)
    for i, s in enumerate(snaps):
        want = source_table(pd.concat(dfs[: i + 1]))
        assert_same_rows(t.to_arrow(snapshot_id=s), want)
        assert_same_rows(t.to_arrow(as_of=times[i]), want)
        # naive datetimes are local time, as datetime.timestamp() says
        assert t.to_arrow(as_of=times[i].astimezone().replace(tzinfo=None)).num_rows == want.num_rows
    t.create_tag("first", snaps[0])
    assert t.refs()["first"]["snapshot-id"] == snaps[0]
    assert t.to_arrow(ref="first").num_rows == 100
    assert t.query().ref("first").to_arrow().num_rows == 100
    t.remove_tag("first")
    assert "first" not in t.refs()
    with pytest.raises(ValueError, match="at most one"):
        t.to_arrow(snapshot_id=snaps[0], as_of=times[0])


def test_snapshots_and_history_vs_pyiceberg(table_dir):
    t = hdb.Table(table_dir / "t")
    for i in range(3):
        t.write_pandas(make_df(10, start=10 * i, seed=i))
        t.commit()
    t.delete("id < 5")
    st = StaticTable.from_metadata(t.metadata_location)
    ours = t.snapshots()
    theirs = st.snapshots()
    assert [s.snapshot_id for s in ours] == [s.snapshot_id for s in theirs]
    for a, b in zip(ours, theirs):
        assert a.parent_snapshot_id == b.parent_snapshot_id
        assert a.timestamp_ms == b.timestamp_ms
        assert a.sequence_number == b.sequence_number
        assert a.operation == b.summary.operation.value
        assert a.timestamp == dt.datetime.fromtimestamp(b.timestamp_ms / 1000, dt.timezone.utc)
    hist = t.history()
    log = st.history()
    assert [(h.snapshot_id, h.made_current_at_ms) for h in hist] == \
        [(h.snapshot_id, h.timestamp_ms) for h in log]
    assert all(h.is_current_ancestor for h in hist)
    assert t.current_snapshot_id == st.current_snapshot().snapshot_id
    assert t.snapshot().snapshot_id == t.current_snapshot_id


def test_rollback_to_snapshot(table_dir):
    t = hdb.Table(table_dir / "t")
    d1, d2 = make_df(100), make_df(100, start=100, seed=1)
    t.write_pandas(d1)
    s1 = t.commit()
    t.write_pandas(d2)
    t.commit()
    t.rollback_to_snapshot(s1)
    assert t.current_snapshot_id == s1
    assert_same_rows(t.to_arrow(), source_table(d1))
    st = StaticTable.from_metadata(t.metadata_location)
    assert st.current_snapshot().snapshot_id == s1
    assert pyiceberg_arrow(t).num_rows == 100
    reopened = hdb.Table(t.path)
    assert reopened.current_snapshot_id == s1


def test_pyiceberg_reads_python_written_types(table_dir):
    src = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "i32": pa.array([1, None, -3], pa.int32()),
        "f": pa.array([0.5, None, -1.25], pa.float32()),
        "d": pa.array([1.5, 2.5, None], pa.float64()),
        "s": pa.array(["a", None, "ccc"]),
        "b": pa.array([True, False, None]),
        "dt": pa.array([dt.date(2024, 1, 1), None, dt.date(1999, 12, 31)]),
        "ts": pa.array([1, 2, None], pa.timestamp("us")),
        "tstz": pa.array([1, None, 3], pa.timestamp("us", tz="UTC")),
        "dec": pa.array([None, 1, 2], pa.decimal128(10, 2)),
        "bin": pa.array([b"x", b"", None]),
        "lst": pa.array([[1, 2], None, []], pa.list_(pa.int64())),
        "st": pa.array([{"a": 1, "b": "x"}, None, {"a": None, "b": "z"}],
                       pa.struct([("a", pa.int64()), ("b", pa.string())])),
    })
    t = hdb.Table(table_dir / "types")
    t.write_arrow(src)
    t.commit()
    ours = sort_by_id(t.to_arrow())
    theirs = sort_by_id(pyiceberg_arrow(t))
    for name in src.column_names:
        want = src.column(name).to_pylist()
        assert ours.column(name).to_pylist() == want, name
        assert theirs.column(name).to_pylist() == want, name


def test_write_arrow_inputs(table_dir):
    base = pa.table({"id": pa.array([0, 1], pa.int64()), "x": pa.array([0.5, 1.5])})

    class OnlyStream:          # e.g. a polars DataFrame / DuckDB relation
        def __init__(self, t):
            self.t = t

        def __arrow_c_stream__(self, requested_schema=None):
            return self.t.__arrow_c_stream__(requested_schema)

    class OnlyArray:           # an object exporting one record batch
        def __init__(self, b):
            self.b = b

        def __arrow_c_array__(self, requested_schema=None):
            return self.b.__arrow_c_array__(requested_schema)

    t = hdb.Table(table_dir / "t")
    inputs = [
        base,
        base.to_batches()[0],
        pa.RecordBatchReader.from_batches(base.schema, base.to_batches()),
        base.to_batches(),
        {"id": [0, 1], "x": [0.5, 1.5]},
        OnlyStream(base),
        OnlyArray(base.to_batches()[0]),
        duckdb.sql("SELECT range::BIGINT AS id, (range + 0.5)::DOUBLE AS x FROM range(2)"),
        base.to_pandas(),
    ]
    for i, data in enumerate(inputs):
        t.write_arrow(data)
        t.commit()
        got = t.to_arrow()
        assert got.num_rows == 2 * (i + 1), type(data)
    assert sorted(got["id"].to_pylist()) == sorted([0, 1] * len(inputs))
    assert sorted(got["x"].to_pylist()) == sorted([0.5, 1.5] * len(inputs))


def test_write_pandas_uses_table_types_and_vectors(table_dir):
    t = hdb.Table(table_dir / "t")
    df = pd.DataFrame({"id": [1, 2, 3], "embedding": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]})
    t.write_pandas(df)
    t.commit()
    # lists of floats of one length became a vector column: float32, dimension recorded
    assert t.schema.field("embedding").type.value_type == pa.float32()
    vid = t.schema.field("embedding").metadata[b"PARQUET:field_id"].decode()
    assert t.properties[f"hyperstream.vector-dimension.{vid}"] == "2"
    got = t.to_arrow().sort_by("id")
    np.testing.assert_allclose(np.array(got["embedding"].to_pylist(), dtype=np.float32),
                               np.array(df["embedding"].tolist(), dtype=np.float32))
    # a later frame with int32 ids and numpy vectors converts to the table's types
    df2 = pd.DataFrame({"id": np.array([4], np.int32),
                        "embedding": [np.array([0.7, 0.8], np.float64)]})
    t.write_pandas(df2)
    t.commit()
    assert t.to_arrow().num_rows == 4
    with pytest.raises(ValueError, match="row 0"):   # wrong dimension, checked by the engine
        t.write_pandas(pd.DataFrame({"id": [5], "embedding": [[1.0, 2.0, 3.0]]}))
        t.commit()
    t.discard()
    assert t.to_arrow().num_rows == 4


def test_query_builder(table):
    t, df = table
    q = t.query().filter("id >= 100").filter("category = 'news'").select(["id", "score"])
    got = q.to_pandas()
    want = df[(df["id"] >= 100) & (df["category"] == "news")]
    assert list(got.columns) == ["id", "score"]
    assert sorted(got["id"]) == sorted(want["id"])
    assert q.execute().shape == got.shape
    assert pa.table(q).num_rows == len(want)                 # __arrow_c_stream__
    assert sum(b.num_rows for b in q.to_batches()) == len(want)
    assert t.query().filter("id < 1000").limit(7).to_arrow().num_rows == 7
    assert t.query().to_arrow().num_rows == N
    assert "filter=" in repr(q)


def test_table_is_an_arrow_stream_source(table):
    t, df = table
    assert pa.table(t).num_rows == N
    reader = t.to_reader(filter="id < 300", columns=["id"], batch_size=100)
    assert isinstance(reader, pa.RecordBatchReader)
    assert duckdb.sql("SELECT count(*), sum(id) FROM reader").fetchall()[0] == \
        (300, sum(range(300)))


def test_schema_evolution_vs_pyiceberg(table):
    t, df = table
    t.add_column("note", "string", doc="free text")
    t.add_column("n", pa.int32())
    t.rename_column("score", "value")
    t.drop_column("flag")
    t.move_column("note", first=True)
    t.update_column("n", "long")
    names = [f.name for f in StaticTable.from_metadata(t.metadata_location).schema().fields]
    assert names == ["note", "id", "category", "value", "ts", "n"]
    assert t.schema.names == names
    assert str(StaticTable.from_metadata(t.metadata_location).schema()
               .find_field("n").field_type) == "long"
    got = t.to_arrow().sort_by("id")
    assert got.column("note").null_count == N and got.column("n").null_count == N
    assert got.column("value").to_pylist() == pa.array(df["score"], from_pandas=True).to_pylist()
    t.write_arrow(pa.table({"id": [99999], "note": ["hi"], "n": [7]}))
    t.commit()
    row = t.to_pandas(filter="id = 99999")
    assert row["note"].tolist() == ["hi"] and row["n"].tolist() == [7]
    with pytest.raises(ValueError):
        t.move_column("note")
    with pytest.raises(hdb.HyperStreamError):
        t.drop_column("no_such_column")


def test_update_spec_and_sort_order_vs_pyiceberg(table_dir):
    t = hdb.Table(table_dir / "t")
    t.write_pandas(make_df(200))
    t.commit()
    t.update_spec(["bucket(4, id)", "identity(category)"])
    t.replace_sort_order(["score", "id"], ascending=[False, True])
    st = StaticTable.from_metadata(t.metadata_location)
    spec = st.spec()
    assert [str(f.transform) for f in spec.fields] == ["bucket[4]", "identity"]
    so = st.sort_order()
    assert [(st.schema().find_column_name(f.source_id), f.direction.name) for f in so.fields] \
        == [("score", "DESC"), ("id", "ASC")]
    new = make_df(400, start=1000, seed=3)
    t.write_pandas(new)
    t.commit()
    files = [f for f in t.files() if f["spec_id"] == spec.spec_id]
    assert files and all(len(f["partition"]) == 2 for f in files)
    for f in files:   # the new files are sorted by score DESC (nulls last), id
        path = f["file_path"].replace("file://", "")   # s3:// through pyarrow's own S3 client
        col = pq.read_table(path, columns=["score"])["score"].to_pylist()
        vals = [v for v in col if v is not None]
        assert vals == sorted(vals, reverse=True)
    assert_same_rows(t.to_arrow(), source_table(pd.concat([make_df(200), new])))
    assert pyiceberg_arrow(t).num_rows == 600
    t.replace_sort_order([])
    assert StaticTable.from_metadata(t.metadata_location).sort_order().is_unsorted


def test_properties_and_upgrade(table_dir):
    t = hdb.Table(table_dir / "t", properties={"owner": "me"})
    t.write_arrow(pa.table({"id": [1, 2]}))
    t.commit()
    assert t.properties["owner"] == "me"
    t.set_properties({"a": "1"}, b=2, c=True)
    st = StaticTable.from_metadata(t.metadata_location)
    assert st.properties["a"] == "1" and st.properties["b"] == "2" and \
        st.properties["c"] == "true"
    t.remove_properties("a", "b")
    assert "a" not in t.properties and "b" not in t.properties
    assert t.format_version == 2
    t.upgrade_format_version(3)
    assert t.format_version == 3
    assert StaticTable.from_metadata(t.metadata_location).metadata.format_version == 3
    t.write_arrow(pa.table({"id": [3, 4]}))
    t.commit()
    lin = t.to_arrow(row_lineage=True).sort_by("id")
    new_ids = [r for r, i in zip(lin["_row_id"].to_pylist(), lin["id"].to_pylist()) if i >= 3]
    assert None not in new_ids and len(set(new_ids)) == 2


def test_delete_and_overwrite(table):
    t, df = table
    n = t.delete("id < 100 OR category = 'art'")
    keep = df[~((df["id"] < 100) | (df["category"] == "art"))]
    assert n == len(df) - len(keep)
    assert sorted(t.to_pandas()["id"]) == sorted(keep["id"])
    assert t.snapshots()[-1].operation == "delete"
    repl = make_df(10, start=50000, seed=9)
    t.overwrite(repl, filter="category = 'news'")
    want = pd.concat([keep[keep["category"] != "news"], repl])
    assert sorted(t.to_pandas()["id"]) == sorted(want["id"])
    assert sorted(pyiceberg_arrow(t)["id"].to_pylist()) == sorted(want["id"])
    t.overwrite(None, filter="id >= 50000")
    assert t.count() == len(want) - 10
    assert t.count("category = 'science'") == int(
        (want[want["id"] < 50000]["category"] == "science").sum())


def test_explicit_create_open_and_autocommit(table_dir):
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("v", pa.float64())])
    t = hdb.Table.create(table_dir / "c", schema, partition_by="day(day)",
                         sort_order=["id"], properties={"k": "v"}, autocommit=True)
    assert t.current_snapshot_id is None and t.to_arrow().num_rows == 0
    assert t.to_arrow().schema.names == ["id", "day", "v"]
    t.write_arrow(pa.table({"id": [2, 1], "day": [dt.date(2024, 1, 2), dt.date(2024, 1, 1)],
                            "v": [0.5, 1.5]}, schema=schema))
    assert t.pending_rows == 0 and t.to_arrow().num_rows == 2   # autocommit
    o = hdb.Table.open(table_dir / "c")
    assert o.to_arrow().num_rows == 2 and o.properties["k"] == "v"
    st = StaticTable.from_metadata(o.metadata_location)
    assert str(st.spec().fields[0].transform) == "day"
    with pytest.raises(hdb.CommitConflictError):
        hdb.Table.create(table_dir / "c", schema)
    with pytest.raises(FileNotFoundError):
        hdb.Table.open(table_dir / "absent")


def test_threads_share_a_table(table):
    t, df = table
    errors, counts = [], []

    def reader():
        try:
            for _ in range(5):
                counts.append(t.to_arrow(filter="id >= 0").num_rows)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def writer():
        try:
            for i in range(3):
                t.write_arrow(pa.table({"id": [100000 + i]}))
                t.commit()
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(4)] + \
        [threading.Thread(target=writer)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert all(N <= c <= N + 3 for c in counts)
    assert t.to_arrow().num_rows == N + 3


def test_uncommitted_rows_warn_and_discard(table_dir):
    t = hdb.Table(table_dir / "t")
    t.write_arrow(pa.table({"id": [1]}))
    assert t.discard() == 1 and t.pending_rows == 0
    t.write_arrow(pa.table({"id": [1]}))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        del t
        import gc
        gc.collect()
    assert any(issubclass(x.category, ResourceWarning) and "commit" in str(x.message) for x in w)


def test_help_and_repr(table):
    t, _ = table
    text = pydoc.render_doc(hdb.Table)
    for word in ("write_pandas", "commit", "to_pandas", "vector_filter", "add_index",
                 "rollback_to_snapshot", "replace_sort_order", "update_spec"):
        assert word in text
    assert "snapshot" in repr(t) and t.path in repr(t)
    assert hdb.Table.to_arrow.__doc__ and hdb.Query.__doc__ and hdb.l2_distance.__doc__


def test_type_stubs_cover_the_api():
    pkg = os.path.dirname(hdb.__file__)
    stub = os.path.join(pkg, "__init__.pyi")
    assert os.path.exists(stub) and os.path.exists(os.path.join(pkg, "py.typed"))
    text = open(stub).read()
    for name in hdb.__all__:
        assert name in text, name
    for name, member in vars(hdb.Table).items():
        if not name.startswith("_") and callable(member):
            assert f"def {name}(" in text, name
    for name in vars(hdb.Query):
        if not name.startswith("_"):
            assert f"def {name}(" in text or f"{name} =" in text, name


def test_overwrite_partitions_refresh_and_small_methods(table_dir):
    df = make_df(300)
    t = hdb.Table(table_dir / "p", partition_by="category")
    t.write(df)                                   # write() dispatches to write_pandas
    s1 = t.commit()
    other = hdb.Table(table_dir / "p")             # a second handle on the same table
    new_art = make_df(5, start=9000, seed=5).assign(category="art")
    t.overwrite_partitions(new_art)
    want = pd.concat([df[df["category"] != "art"], new_art])
    assert sorted(t.to_pandas()["id"]) == sorted(want["id"])
    assert sorted(pyiceberg_arrow(t)["id"].to_pylist()) == sorted(want["id"])
    assert other.current_snapshot_id == s1        # stale until refresh()
    assert other.refresh().current_snapshot_id == t.current_snapshot_id
    assert sum(b.num_rows for b in t.to_batches(batch_size=50)) == len(want)
    assert t.snapshot(s1).snapshot_id == s1 and t.snapshot().operation == "overwrite"
    assert t.metadata["format-version"] == 2 and t.location.endswith("p")
    q = t.query().where("id < 10").snapshot(s1)
    assert sorted(q.to_pandas()["id"]) == list(range(10))
    when = dt.datetime.now(dt.timezone.utc)
    assert t.query().as_of(when).to_arrow().num_rows == len(want)
    assert isinstance(q.explain(), dict)
    t.add_index("category", "inverted")
    assert [i["column"] for i in t.indexes()] == ["category"]
    t.drop_index("category")
    assert t.indexes() == [] and t.remove_orphan_indexes(older_than=dt.timedelta(0)) >= 0


def test_make_optional_on_a_required_column(table_dir):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64())])
    t = hdb.Table.create(table_dir / "r", schema)
    st = StaticTable.from_metadata(t.metadata_location)
    assert st.schema().find_field("id").required
    t.make_optional("id")
    assert StaticTable.from_metadata(t.metadata_location).schema().find_field("id").optional


def test_query_results_do_not_import_pandas(tmp_path):
    """A fresh process's query results (scan, vector search, SQL) reach
    pyarrow without importing pandas
    (pa.table() asks pyarrow's pandas shim whether its argument is a
    DataFrame, which imports pandas: 0.5 to 1.4 s of the first query, as
    bench/s3's start-up line measured). Oracle: pyarrow.compute over the rows
    written; the module list of the child process."""
    import json
    import subprocess
    import sys
    import pyarrow as pa
    import pyarrow.compute as pc
    rows = 200
    emb = pa.FixedSizeListArray.from_arrays(
        pa.array([float((i * 7 + j) % 13) for i in range(rows) for j in range(4)], pa.float32()), 4)
    data = pa.table({"id": pa.array(range(rows), pa.int64()),
                     "cat": pa.array([f"c{i % 5}" for i in range(rows)]), "emb": emb})
    t = hdb.Table(str(tmp_path / "t"))
    t.write_arrow(data)
    t.commit()
    child = r'''
import json, sys
import hyperstreamdb as hdb
t = hdb.Table(sys.argv[1])
a = t.to_arrow(filter="id < 17 AND cat = 'c1'", columns=["id"])["id"].to_pylist()
v = t.to_arrow(filter="cat = 'c2'", columns=["id"],
               vector_filter={"column": "emb", "query": [0.0, 0.0, 0.0, 0.0], "k": 3})
s = hdb.Session()
q = s.execute("SELECT x * 2 AS y FROM generate_series(1, 5) g(x)").to_arrow()["y"].to_pylist()
it = [b.num_rows for b in s.execute("SELECT x FROM generate_series(1, 7) g(x)")]
print(json.dumps({"scan": a, "n": v.num_rows, "ids": v["id"].to_pylist(), "sql": q,
                  "iter": sum(it), "pandas": "pandas" in sys.modules}))
'''
    r = subprocess.run([sys.executable, "-c", child, str(tmp_path / "t")], text=True,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    want = data.filter(pc.and_(pc.less(data["id"], 17), pc.equal(data["cat"], "c1")))
    assert got["scan"] == want["id"].to_pylist()
    # brute force: the 3 smallest L2 distances to the origin among cat = 'c2'
    vecs = {i: [float((i * 7 + j) % 13) for j in range(4)] for i in range(rows) if i % 5 == 2}
    dist = {i: sum(x * x for x in v) for i, v in vecs.items()}
    assert got["n"] == 3 and all(i in vecs for i in got["ids"])
    assert sorted(dist[i] for i in got["ids"]) == sorted(dist.values())[:3]
    assert got["sql"] == [2, 4, 6, 8, 10] and got["iter"] == 7
    assert got["pandas"] is False

"""Apache Spark (pyspark in local mode with Apache Iceberg's Spark runtime) reads
and writes tables through our Iceberg REST catalog server (`hyperstream serve
--rest`, bearer token), on local disk and on the S3 server the tests start
(tests/s3/s3server.py: SeaweedFS when installed, else moto; HS_S3_SERVER picks).

scripts/spark-harness.sh installs pyspark into .venv and fetches
iceberg-spark-runtime and iceberg-aws-bundle (S3FileIO) with Maven (versions
pinned there); under CI=true a missing Spark fails instead of skipping.

One scripted session per (storage, format version), all in one SparkSession
(plus a vector test: Spark writes ARRAY<FLOAT>, we index and search):

* Spark: create (bucket-partitioned; timestamps and decimals), two appends,
  a row-level DELETE (merge-on-read: position delete files on v2, deletion
  vectors in Puffin files on v3, checked in Spark's delete_files table),
  MERGE INTO (update + insert), schema evolution (add a column, rename one);
* we read what Spark wrote through our REST client (hdb.Catalog -> load_table
  -> to_arrow) and our SQL session, and time travel to Spark's first
  snapshot; Spark's own answers are the oracle (and pyiceberg's RestCatalog
  a second one on the full read);
* Spark tags and branches (and writes to the branch), compacts
  (rewrite_data_files); we read the refs and the rewritten files, and a table
  we create is written, renamed and purged by Spark;
* we add indexes (add_index) and commit (append, delete) to the table; Spark,
  possibly holding cached metadata, appends without a refresh (a stale commit
  gets the server's 409 and Spark retries; our rows must survive), then reads
  our rows after REFRESH, runs
  MERGE and DELETE, and keeps our index registry property; we refresh the
  indexes (refresh_indexes) and our indexed queries return what Spark returns,
  with the indexes in use (explain()).

The CI form runs local v2 (everything) and S3 v3 (without refs, compaction and
our table) on ~2.5k rows; HS_LONG_TESTS=1 runs everything for local and S3 at
v2 and v3 on 25k rows.
"""
import datetime as dt
import decimal
import os
import pathlib
import subprocess
import sys
import time

import pyarrow as pa
import pytest
from conftest import _build_dir, require, require_module, storage_server  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests/s3"))
from s3server import S3Server  # noqa: E402
from helpers.restserver import RestServer as _RestServer  # noqa: E402

CLI = _build_dir() / "hyperstream"
TOKEN = "spark-t0ken"
LONG = os.environ.get("HS_LONG_TESTS") == "1"
N = 20000 if LONG else 2000          # rows of the first append
JARS_FILE = REPO / "build-java/spark/jars"

hdb = require_module("hyperstreamdb")
require_module("pyiceberg")
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402


def _harness():
    """scripts/spark-harness.sh (idempotent): pyspark and the Iceberg jars."""
    r = subprocess.run([str(REPO / "scripts/spark-harness.sh")], timeout=1800,
                       capture_output=True, text=True)
    require(r.returncode == 0, f"scripts/spark-harness.sh failed: {r.stderr[-2000:]}")
    require(JARS_FILE.exists(), f"Spark not prepared (scripts/spark-harness.sh: {r.stderr})")
    jars = JARS_FILE.read_text().split()
    require(all(os.path.exists(j) for j in jars), f"jars missing: {jars}")
    require_module("pyspark")
    return jars


class RestServer(_RestServer):
    """`hyperstream serve --rest` on a free port, with the Spark tests' token."""

    def __init__(self, tmp: pathlib.Path, warehouse: str, env=None, extra=()):
        require(CLI.exists(), f"{CLI} not built")
        super().__init__(CLI, tmp, warehouse, TOKEN, env=env, extra=extra)


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    jars = _harness()
    from pyspark.sql import SparkSession
    tmp = tmp_path_factory.mktemp("spark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    t0 = time.time()
    s = (SparkSession.builder.master("local[2]").appName("hyperstream-spark-interop")
         .config("spark.jars", ",".join(jars))
         .config("spark.sql.extensions",
                 "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.default.parallelism", "2")
         .config("spark.driver.memory", "1g")
         .config("spark.local.dir", str(tmp / "local"))
         .config("spark.sql.warehouse.dir", str(tmp / "spark-warehouse"))
         # C1 only: on two cores the C2 compiler's threads cost more than they
         # win in a session this short
         .config("spark.driver.extraJavaOptions",
                 f"-Dderby.system.home={tmp} -XX:TieredStopAtLevel=1")
         .config("spark.sql.session.timeZone", "UTC")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    print(f"\nSpark {s.version} started in {time.time() - t0:.1f}s")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def s3():
    # the session's one S3 server (conftest.storage_server): our library reads
    # the endpoint once per process, so every module must talk to the same one
    require_module("moto")
    yield storage_server()


_catalogs = {}


def _catalog(spark, name, server, s3=None, credential=None):
    """Registers Spark catalog `name` on our server (before its first use);
    credential "id:secret": OAuth2 client credentials instead of the token."""
    if name in _catalogs:
        return
    p = f"spark.sql.catalog.{name}"
    spark.conf.set(p, "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"{p}.type", "rest")
    spark.conf.set(f"{p}.uri", server.url)
    if credential:
        spark.conf.set(f"{p}.credential", credential)
        spark.conf.set(f"{p}.oauth2-server-uri", server.url + "/v1/oauth/tokens")
    else:
        spark.conf.set(f"{p}.token", TOKEN)
    if s3 is not None:
        spark.conf.set(f"{p}.io-impl", "org.apache.iceberg.aws.s3.S3FileIO")
        spark.conf.set(f"{p}.s3.endpoint", s3.endpoint)
        spark.conf.set(f"{p}.s3.path-style-access", "true")
        spark.conf.set(f"{p}.s3.access-key-id", s3.env["AWS_ACCESS_KEY_ID"])
        spark.conf.set(f"{p}.s3.secret-access-key", s3.env["AWS_SECRET_ACCESS_KEY"])
        spark.conf.set(f"{p}.client.region", "us-east-1")
    _catalogs[name] = server


# ---- normalising both sides to comparable Python rows ---------------------------------------

def spark_rows(spark, query):
    """Rows of a Spark query as sorted tuples (timestamps as epoch microseconds,
    decimals as Decimal)."""
    out = []
    for r in spark.sql(query).collect():
        row = []
        for v in r:
            if isinstance(v, dt.datetime):
                # pyspark hands out naive datetimes in this process's local time
                # (datetime.fromtimestamp); .timestamp() inverts that
                v = int(v.replace(microsecond=0).timestamp()) * 1_000_000 + v.microsecond
            row.append(v)
        out.append(tuple(row))
    return sorted(out, key=repr)


def arrow_rows(t: pa.Table, columns):
    cols = []
    for c in columns:
        a = t.column(c)
        if pa.types.is_timestamp(a.type):
            a = a.cast(pa.timestamp("us", tz=a.type.tz)).cast(pa.int64())
        cols.append(a.to_pylist())
    return sorted(zip(*cols), key=repr)


def _ts(i):
    return 1_700_000_000_000_000 + i * 1_000_000


def _ours_rows(ids, cols, tag=None):
    """Rows we append, in the table's current schema."""
    data = {"id": pa.array(ids, pa.int64()),
            "name": pa.array([f"h{i}" for i in ids]),
            "points": pa.array([i * 0.25 for i in ids], pa.float64()),
            "ts": pa.array([_ts(i) for i in ids], pa.int64()).cast(
                pa.timestamp("us", tz="UTC")),
            "amount": pa.array([decimal.Decimal(i % 1000) / 100 for i in ids],
                               pa.decimal128(10, 2)),
            "tag": pa.array([tag] * len(ids), pa.string())}
    return pa.table({c: data[c] for c in cols})


def _check_index_use(ht, flt, every_file):
    """Our scan consulted the indexes (explain()); every_file: each planned file
    that statistics did not prune was answered by an index."""
    plan = ht.explain(filter=flt)
    unpruned = [f for f in plan["files"] if f["pruned_by"] != "statistics"]
    assert plan["totals"]["index_lookups"] > 0 or not unpruned, (flt, plan)
    if every_file:
        for f in unpruned:
            assert f["indexes_used"], (flt, f)


# ---- the scripted session ---------------------------------------------------------------------

def spark_session(spark, cat, server, fmt, s3=None, full=True):
    """full: also refs, compaction and a table we create (off for the CI form's S3 case)."""
    tbl = f"{cat}.db.events"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {cat}.db")
    spark.sql(f"""CREATE TABLE {tbl} (id BIGINT, name STRING, score DOUBLE, ts TIMESTAMP,
                  amount DECIMAL(10,2)) USING iceberg PARTITIONED BY (bucket(4, id))
                  TBLPROPERTIES ('format-version'='{fmt}',
                  'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read',
                  'write.merge.mode'='merge-on-read')""")
    src = ("SELECT id, concat('n', id) AS name, id * 0.5 AS score, "
           "timestamp_micros(1700000000000000 + id * 1000000) AS ts, "
           "CAST((id % 1000) / 100 AS DECIMAL(10,2)) AS amount FROM range({a}, {b})")
    spark.sql(f"INSERT INTO {tbl} " + src.format(a=0, b=N))
    snap1 = spark.sql(f"SELECT snapshot_id FROM {tbl}.snapshots ORDER BY committed_at"
                      ).collect()[0][0]
    n1 = N
    spark.sql(f"INSERT INTO {tbl} " + src.format(a=N, b=N + N // 4))
    # a row-level delete: position deletes on v2, a deletion vector on v3
    spark.sql(f"DELETE FROM {tbl} WHERE id % 10 = 3")
    dfs = spark.sql(f"SELECT content, file_format FROM {tbl}.delete_files").collect()
    assert dfs and all(r[0] == 1 for r in dfs), dfs      # 1 = position deletes
    want_fmt = "PUFFIN" if fmt == 3 else "PARQUET"
    assert {r[1] for r in dfs} == {want_fmt}, dfs
    # MERGE INTO: update the overlap, insert the rest
    lo, hi = N + N // 4 - 100, N + N // 4 + 100
    spark.sql(f"""MERGE INTO {tbl} t USING ({src.format(a=lo, b=hi)}) s ON t.id = s.id
                  WHEN MATCHED THEN UPDATE SET t.name = concat('m', s.id), t.score = -1.0
                  WHEN NOT MATCHED THEN INSERT *""")
    # schema evolution: a new column, a renamed one
    spark.sql(f"ALTER TABLE {tbl} ADD COLUMN tag STRING")
    spark.sql(f"ALTER TABLE {tbl} RENAME COLUMN score TO points")
    spark.sql(f"INSERT INTO {tbl} SELECT id, concat('t', id), id * 0.5, "
              f"timestamp_micros(1700000000000000 + id * 1000000), "
              f"CAST((id % 1000) / 100 AS DECIMAL(10,2)), 'spark' FROM range({hi}, {hi + 50})")

    cols = ["id", "name", "points", "ts", "amount", "tag"]
    sel = f"SELECT {', '.join(cols)} FROM {tbl}"
    want = spark_rows(spark, sel)
    ids = sorted(r[0] for r in want)
    expect = ({i for i in range(N + N // 4) if i % 10 != 3} | set(range(lo, hi + 50)))
    assert ids == sorted(expect)

    # ---- we read what Spark wrote
    ours = hdb.Catalog(server.url, token=TOKEN)
    ht = ours.load_table("db.events")
    assert [f.name for f in ht.schema] == cols
    got = ht.to_arrow()
    assert arrow_rows(got, cols) == want
    # pyiceberg agrees (a second independent reader)
    if s3 is None:
        pc = RestCatalog("rest", uri=server.url, token=TOKEN)
        assert arrow_rows(pc.load_table("db.events").scan().to_arrow(), cols) == want
    # time travel to Spark's first snapshot
    old = ht.to_arrow(snapshot_id=snap1, columns=["id"])
    assert sorted(old["id"].to_pylist()) == list(range(n1))
    assert spark_rows(spark, f"SELECT id FROM {tbl} VERSION AS OF {snap1}") == \
        sorted([(i,) for i in range(n1)], key=repr)
    # our SQL engine through the same catalog
    sess = hdb.Session(catalog=ours)
    q = ("SELECT count(*), sum(id), count(tag) FROM db.events "
         "WHERE name LIKE 'm%' OR id >= {x}")
    r = sess.sql(q.format(x=hi)).to_arrow()
    assert [tuple(r.column(i).to_pylist()[0] for i in range(3))] == \
        spark_rows(spark, q.format(x=hi).replace("db.events", tbl))

    # ---- we index and commit
    ht.add_index("id", "inverted")
    ht.add_index("name", "inverted")
    ht.add_index("tag", "inverted")      # a column Spark added by schema evolution
    reg = ht.properties["hyperstream.index-registry"]
    probes = ["id = 1234", f"id = {lo + 10}", "name = 'm%d'" % (lo + 20),
              f"id BETWEEN {N // 2} AND {N // 2 + 40}", "id = 3"]

    def check_probes(ht, every_file=True, indexed=True):
        for i, flt in enumerate(probes):
            got = arrow_rows(ht.to_arrow(filter=flt), cols)
            assert got == spark_rows(spark, f"{sel} WHERE {flt}"), flt
            # the newest probes match only Spark's newest files: until the index
            # refresh, statistics may prune every indexed file before a lookup
            if indexed and (every_file or i < 5):
                _check_index_use(ht, flt, every_file)

    check_probes(ht)
    ht.write_arrow(_ours_rows(list(range(10 * N, 10 * N + 100)), cols, tag="ours"))
    ht.commit()
    ht.delete(f"id < 50 OR id = {10 * N + 7}")

    # Spark holds cached (stale) metadata: its append loses the server's
    # compare-and-swap (409), and Spark's commit retry rebases on ours
    spark.sql(f"INSERT INTO {tbl} SELECT id, 'late', 0.0, timestamp_micros(0), 0, 'spark' "
              f"FROM range({20 * N}, {20 * N + 10})")
    spark.sql(f"REFRESH TABLE {tbl}")
    want = spark_rows(spark, sel)
    ht.refresh()
    assert arrow_rows(ht.to_arrow(), cols) == want
    got_ids = {r[0] for r in want}
    assert set(range(10 * N, 10 * N + 100)) - {10 * N + 7} <= got_ids
    assert 10 * N + 7 not in got_ids and not any(i < 50 for i in got_ids)
    assert set(range(20 * N, 20 * N + 10)) <= got_ids
    # Spark keeps our registry property through its commits
    props = dict(spark.sql(f"SHOW TBLPROPERTIES {tbl}").collect())
    assert props.get("hyperstream.index-registry")
    # Spark works on after our commits: MERGE and DELETE
    spark.sql(f"""MERGE INTO {tbl} t USING (SELECT id FROM range({10 * N}, {10 * N + 20})) s
                  ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.tag = 'merged'""")
    spark.sql(f"DELETE FROM {tbl} WHERE id BETWEEN {N // 2} AND {N // 2 + 5}")
    spark.sql(f"UPDATE {tbl} SET name = 'upd' WHERE id = 1234")
    want = spark_rows(spark, sel)
    ht.refresh()
    assert ht.properties["hyperstream.index-registry"]
    assert arrow_rows(ht.to_arrow(), cols) == want
    probes += [f"id = {10 * N + 5}", "name = 'upd'", "tag = 'merged'"]
    check_probes(ht, every_file=False)   # Spark's new files are read without index entries
    added = ht.refresh_indexes()       # index catch-up for Spark's files
    assert added > 0
    check_probes(ht)
    assert ht.properties["hyperstream.index-registry"] != reg
    spark.sql(f"REFRESH TABLE {tbl}")
    assert spark.sql(f"SELECT count(*) FROM {tbl}").collect()[0][0] == len(want)
    if not full:
        return ht

    # refs: a tag and a branch made by Spark, read by us
    spark.sql(f"ALTER TABLE {tbl} CREATE TAG spark_tag")
    spark.sql(f"ALTER TABLE {tbl} CREATE BRANCH spark_branch")
    spark.sql(f"INSERT INTO {tbl}.branch_spark_branch SELECT id, 'br', 0.0, "
              f"timestamp_micros(0), 0, 'branch' FROM range({30 * N}, {30 * N + 5})")
    spark.sql(f"DELETE FROM {tbl} WHERE id = 1234")
    ht.refresh()
    assert arrow_rows(ht.to_arrow(ref="spark_tag"), cols) == want
    assert arrow_rows(ht.to_arrow(ref="spark_branch"), cols) == \
        spark_rows(spark, f"SELECT {', '.join(cols)} FROM {tbl}.branch_spark_branch")
    want = spark_rows(spark, sel)
    assert arrow_rows(ht.to_arrow(), cols) == want and 1234 not in {r[0] for r in want}

    # Spark's compaction rewrites every file our sidecars cover (and applies the
    # deletes): our scans stay right on the rewritten files, and the index
    # refresh covers them again
    n_files = spark.sql(f"SELECT count(*) FROM {tbl}.files").collect()[0][0]
    spark.sql(f"CALL {cat}.system.rewrite_data_files(table => 'db.events', "
              f"options => map('rewrite-all', 'true'))")
    spark.sql(f"REFRESH TABLE {tbl}")
    assert spark.sql(f"SELECT count(*) FROM {tbl}.files").collect()[0][0] < n_files
    assert spark_rows(spark, sel) == want
    ht.refresh()
    assert arrow_rows(ht.to_arrow(), cols) == want
    check_probes(ht, indexed=False)
    assert ht.refresh_indexes() > 0
    check_probes(ht)

    # a table we create, read and written by Spark
    t2 = ours.create_table("db.ours", pa.schema([("id", pa.int64()), ("s", pa.string())]),
                           partition_by="bucket(2, id)", format_version=fmt)
    t2.write_arrow(pa.table({"id": pa.array(range(100), pa.int64()),
                             "s": [f"o{i}" for i in range(100)]}))
    t2.commit()
    t2.add_index("id", "inverted")
    spark.sql(f"INSERT INTO {cat}.db.ours SELECT id, concat('s', id) FROM range(100, 120)")
    spark.sql(f"DELETE FROM {cat}.db.ours WHERE id % 10 = 0")
    t2.refresh()
    want2 = spark_rows(spark, f"SELECT id, s FROM {cat}.db.ours")
    assert len(want2) == 108
    assert arrow_rows(t2.to_arrow(), ["id", "s"]) == want2
    assert arrow_rows(t2.to_arrow(filter="id = 115"), ["id", "s"]) == [(115, "s115")]

    # rename and drop with purge through Spark
    spark.sql(f"ALTER TABLE {cat}.db.ours RENAME TO db.ours2")   # the target is in the same catalog
    assert ours.list_tables("db") == ["db.events", "db.ours2"]
    loc = ours.load_table("db.ours2").location
    spark.sql(f"DROP TABLE {cat}.db.ours2 PURGE")
    assert ours.list_tables("db") == ["db.events"]
    if s3 is None:
        # Spark purges on the client (drop without purge on the server, then its
        # deleteReachableFiles): the data and metadata files go; our index tree,
        # which no Iceberg metadata references, stays (docs/catalogs.md)
        root = pathlib.Path(loc.replace("file://", ""))
        left = [p.relative_to(root).parts for p in root.rglob("*") if p.is_file()]
        assert left and all(parts[0] == "index" for parts in left), left
    return ht


# CI: position deletes on local disk, deletion vectors on S3; HS_LONG_TESTS=1: all four
CASES = ([("local", 2), ("local", 3), ("s3", 2), ("s3", 3)] if LONG else
         [("local", 2), ("s3", 3)])


@pytest.mark.parametrize("where,fmt", CASES, ids=[f"{w}-v{f}" for w, f in CASES])
def test_spark_session(spark, request, tmp_path, where, fmt):
    s3 = request.getfixturevalue("s3") if where == "s3" else None
    if s3 is None:
        server = RestServer(tmp_path / "srv", str(tmp_path / "wh"))
    else:
        server = RestServer(tmp_path / "srv", s3.uri(f"wh-v{fmt}"), env=s3.env)
    cat = f"hs_{where}_v{fmt}"
    try:
        _catalog(spark, cat, server, s3)
        t0 = time.time()
        spark_session(spark, cat, server, fmt, s3, full=LONG or s3 is None)
        print(f"\n{where} v{fmt}: {time.time() - t0:.1f}s")
    finally:
        server.stop()


def test_rest_server_s3_warehouse_pyiceberg(tmp_path, s3):
    """The server keeps an S3 warehouse (its metadata files on S3 through the SQL
    catalog), without Spark: pyiceberg's RestCatalog (its own PyArrow S3 FileIO)
    creates, appends and deletes; our client reads and appends; pyiceberg agrees."""
    server = RestServer(tmp_path / "srv", s3.uri("wh-py"), env=s3.env)
    try:
        pc = RestCatalog("rest", uri=server.url, token=TOKEN, **{
            "s3.endpoint": s3.endpoint, "s3.access-key-id": s3.env["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": s3.env["AWS_SECRET_ACCESS_KEY"], "s3.region": "us-east-1"})
        pc.create_namespace("db")
        schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
        t = pc.create_table("db.t", schema=schema)
        assert t.metadata_location.startswith(s3.uri("wh-py/db/t/metadata/"))
        t.append(pa.table({"id": pa.array(range(100), pa.int64()),
                           "name": [f"n{i}" for i in range(100)]}))
        t.delete("id < 10")
        ht = hdb.Catalog(server.url, token=TOKEN).load_table("db.t")
        assert sorted(ht.to_arrow()["id"].to_pylist()) == list(range(10, 100))
        ht.write_arrow(pa.table({"id": pa.array([500], pa.int64()), "name": ["x"]}))
        ht.commit()
        got = pc.load_table("db.t").scan().to_arrow()
        assert sorted(got["id"].to_pylist()) == list(range(10, 100)) + [500]
        pc.purge_table("db.t")
        assert pc.list_tables("db") == []
    finally:
        server.stop()


def test_spark_vectors_our_search(spark, tmp_path):
    """Spark writes an ARRAY<FLOAT> column (no dimension property: other engines
    have none) and deletes rows; we add an HNSW index and search it, filtered and
    not; brute-force numpy over Spark's own rows is the oracle.  Spark
    authenticates with OAuth2 client credentials here."""
    np = require_module("numpy")
    (tmp_path / "secret").write_text("sp4rk\n")
    server = RestServer(tmp_path / "srv", str(tmp_path / "wh"), extra=(
        "--client-id", "spark", "--client-secret-file", str(tmp_path / "secret")))
    cat = "hs_vec"
    try:
        _catalog(spark, cat, server, credential="spark:sp4rk")
        tbl = f"{cat}.db.vecs"
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {cat}.db")
        spark.sql(f"CREATE TABLE {tbl} (id BIGINT, cat STRING, emb ARRAY<FLOAT>) USING iceberg "
                  "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
        rng = np.random.default_rng(7)
        n, d = (20000 if LONG else 2000), 16
        vecs = rng.standard_normal((n, d)).astype(np.float32)
        rows = [(i, f"c{i % 5}", vecs[i].tolist()) for i in range(n)]
        (spark.createDataFrame(rows, "id BIGINT, cat STRING, emb ARRAY<FLOAT>")
         .repartition(2).writeTo(tbl).append())
        spark.sql(f"DELETE FROM {tbl} WHERE id % 7 = 0")
        live = {r[0]: np.array(r[2], np.float32) for r in
                spark.sql(f"SELECT id, cat, emb FROM {tbl}").collect()}
        ht = hdb.Catalog(server.url, token=TOKEN).load_table("db.vecs")
        ht.add_index("emb", "hnsw", metric="l2")
        ids = np.array(sorted(live))
        mat = np.stack([live[i] for i in ids])
        hits = total = 0
        for qi in range(10):
            q = rng.standard_normal(d).astype(np.float32)
            for flt in (None, "cat = 'c3'"):
                sel = ids if flt is None else np.array([i for i in ids if i % 5 == 3])
                m = mat if flt is None else np.stack([live[i] for i in sel])
                dist = np.sqrt(((m - q) ** 2).sum(axis=1))
                want = set(sel[np.argsort(dist, kind="stable")[:10]].tolist())
                got = ht.search("emb", q, k=10, filter=flt)
                assert len(got) == 10 and not any(i % 7 == 0 for i in got["id"])
                if flt:
                    assert set(got["cat"]) == {"c3"}
                # the distances we report are the true ones for the rows returned
                for i, dd in zip(got["id"], got["distance"]):
                    assert abs(dd - float(np.sqrt(((live[i] - q) ** 2).sum()))) < 1e-4
                hits += len(want & set(got["id"].tolist()))
                total += 10
        assert hits / total >= 0.95, hits / total
        assert [ix["column"] for ix in ht.indexes()] == ["emb"]
    finally:
        server.stop()

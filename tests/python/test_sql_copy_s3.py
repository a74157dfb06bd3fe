"""SQL COPY to and from s3:// objects (issue 15: URIs everywhere a path is
accepted, SQL included), against the S3 server the tests start
(tests/s3/s3server.py: SeaweedFS when installed, else moto; HS_S3_SERVER picks).

Oracles: pyarrow's own S3 client writes the objects COPY FROM reads and
reads the objects COPY TO writes; DuckDB evaluates the exported query over
the same rows; the table's rows after COPY FROM equal the source rows.
"""
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from conftest import require_module, storage_server  # noqa: E402

require_module("moto")
duckdb = require_module("duckdb")
import hyperstreamdb as hdb  # noqa: E402


@pytest.fixture(scope="module")
def s3():
    # the session's one S3 server: the library reads the endpoint once per process
    yield storage_server()


def _fs(s3):
    return pafs.S3FileSystem(access_key=s3.env["AWS_ACCESS_KEY_ID"],
                             secret_key=s3.env["AWS_SECRET_ACCESS_KEY"],
                             endpoint_override=s3.endpoint.replace("http://", ""),
                             scheme="http", region="us-east-1")


SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("v", pa.float64())])
ROWS = [{"id": i, "s": None if i % 5 == 0 else f"name {i}, the {i % 3}",
         "v": None if i % 7 == 0 else i * 0.25} for i in range(1, 201)]


def _rows(tbl):
    return sorted(tbl.to_pylist(), key=lambda r: r["id"])


def test_copy_from_and_to_s3(s3, tmp_path):
    fs = _fs(s3)
    key = f"{s3.bucket}/copy"
    # source objects written by pyarrow: a CSV (PostgreSQL quoting: the
    # commas inside values quoted; NULL an empty unquoted cell) and a Parquet file
    lines = ["id,s,v"]
    for r in ROWS[:100]:
        s = "" if r["s"] is None else '"' + r["s"].replace('"', '""') + '"'
        v = "" if r["v"] is None else repr(r["v"])
        lines.append(f"{r['id']},{s},{v}")
    with fs.open_output_stream(f"{key}/in.csv") as f:
        f.write(("\n".join(lines) + "\n").encode())
    pq.write_table(pa.Table.from_pylist(ROWS[100:], schema=SCHEMA), f"{key}/in.parquet",
                   filesystem=fs)

    t = hdb.Table.create(s3.uri("copy/t"), SCHEMA)
    with hdb.Session() as session:
        session.register("t", t)
        r = session.sql(f"COPY t FROM 's3://{key}/in.csv' WITH (FORMAT csv, HEADER)")
        assert r.tag == "COPY 100"
        r = session.sql(f"COPY t FROM 's3a://{key}/in.parquet'")
        assert r.tag == "COPY 100"
        t.refresh()
        assert _rows(t.to_arrow()) == ROWS

        # COPY TO: Parquet and CSV objects, read back by pyarrow's client
        query = "SELECT id, s, v * 2 AS w FROM t WHERE id % 3 = 0"
        r = session.sql(f"COPY ({query} ORDER BY id) TO 's3://{key}/out.parquet'")
        assert r.tag == "COPY 66"
        got = pq.read_table(f"{key}/out.parquet", filesystem=fs).to_pylist()
        duck = duckdb.connect()
        src = pa.Table.from_pylist(ROWS, schema=SCHEMA)  # noqa: F841 (read by DuckDB)
        want = duck.execute(f"SELECT id, s, v * 2 AS w FROM src WHERE id % 3 = 0 "
                            f"ORDER BY id").fetchall()
        assert [(x["id"], x["s"], x["w"]) for x in got] == want
        r = session.sql(f"COPY ({query} ORDER BY id) TO 's3://{key}/out.csv' "
                        f"WITH (FORMAT csv, HEADER)")
        assert r.tag == "COPY 66"
        with fs.open_input_stream(f"{key}/out.csv") as f:
            text = f.read()
        back = pacsv.read_csv(pa.py_buffer(text),
                              convert_options=pacsv.ConvertOptions(
                                  column_types={"id": pa.int64(), "s": pa.string(),
                                                "w": pa.float64()},
                                  strings_can_be_null=True)).to_pylist()
        assert [(x["id"], x["s"], x["w"]) for x in back] == want

        # a missing object: a clear error naming it, the table unchanged
        before = t.current_snapshot_id
        with pytest.raises(hdb.HyperStreamError) as e:
            session.sql(f"COPY t FROM 's3://{key}/missing.csv' WITH (FORMAT csv)")
        assert "missing.csv" in str(e.value)
        t.refresh()
        assert t.current_snapshot_id == before

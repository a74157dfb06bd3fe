"""remove_orphan_files on S3 (ListObjectsV2 with Last-Modified, no HEADs):
objects under metadata/, data/ and index/ that nothing references are
deleted once old enough, referenced ones and dot names never.

Oracles: the objects listed by pyarrow's own S3 client (pyarrow.fs) before
the strays were added (a table written by appends and one index build has no
orphans), and the table's rows read back by pyiceberg (StaticTable) after
the removal, compared with the rows written (pandas)."""
import datetime
import os
import sys

import numpy as np
import pandas as pd
import pyarrow.fs as pafs
import pytest
from conftest import require_module, storage_server  # noqa: E402

import hyperstreamdb as hdb  # noqa: E402

pyiceberg_table = require_module("pyiceberg.table")


@pytest.fixture(scope="module")
def s3():
    yield storage_server()


def arrow_fs(s3):
    return pafs.S3FileSystem(access_key=s3.env["AWS_ACCESS_KEY_ID"],
                             secret_key=s3.env["AWS_SECRET_ACCESS_KEY"],
                             endpoint_override=s3.endpoint.replace("http://", ""),
                             scheme="http", region="us-east-1")


def listing(fs, prefix):
    sel = pafs.FileSelector(prefix, recursive=True, allow_not_found=True)
    return sorted(i.path for i in fs.get_file_info(sel) if i.type == pafs.FileType.File)


def df(n, start):
    rng = np.random.default_rng(start)
    return pd.DataFrame({"id": np.arange(start, start + n, dtype=np.int64),
                         "v": rng.random(n)})


def test_remove_orphan_files_on_s3(s3):
    fs = arrow_fs(s3)
    key = f"orphans/t-{os.getpid()}"
    uri = s3.uri(key)
    t = hdb.Table(uri)
    for start in (0, 1000):
        t.write_pandas(df(1000, start))
        t.commit()
    t.add_index("id", "range")
    prefix = f"{s3.bucket}/{key}"
    before = listing(fs, prefix)
    assert any("/data/" in p for p in before) and any("/index/" in p for p in before)

    # strays a crashed writer or a failed commit would leave, plus names
    # that are never removed (dot names; the write-ahead log is outside the
    # swept directories)
    data_obj = next(p for p in before if p.endswith(".parquet"))
    with fs.open_input_stream(data_obj) as f:
        parquet_bytes = f.read()
    strays = [f"{prefix}/data/00099-stray.parquet", f"{prefix}/data/part=1/nested.parquet",
              f"{prefix}/metadata/stray-m0.avro", f"{prefix}/metadata/v99.metadata.json",
              f"{prefix}/index/stray.1.range"]
    kept_anyway = [f"{prefix}/data/.tmp-writer", f"{prefix}/wal/00001.seg"]
    for p in strays + kept_anyway:
        with fs.open_output_stream(p) as f:
            f.write(parquet_bytes if p.endswith(".parquet") else b"stray")

    # too young for the default cutoff (3 days): nothing goes
    r = t.remove_orphan_files()
    assert r["deleted_files"] == []
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=5)
    # dry run: named, not deleted
    r = t.remove_orphan_files(older_than=future, dry_run=True)
    named = sorted(d["path"].replace("s3://", "") for d in r["deleted_files"])
    assert named == sorted(strays), named
    assert listing(fs, prefix) == sorted(before + strays + kept_anyway)
    r = t.remove_orphan_files(older_than=future)
    assert sorted(d["path"].replace("s3://", "") for d in r["deleted_files"]) == sorted(strays)
    assert r["delete_errors"] == []
    kinds = {d["path"].rsplit("/", 1)[1]: d["kind"] for d in r["deleted_files"]}
    assert kinds["00099-stray.parquet"] == "data" and kinds["stray.1.range"] == "index"
    assert listing(fs, prefix) == sorted(before + kept_anyway)

    # the table is whole: pyiceberg reads every row, and so do we (with the index)
    props = {"s3.endpoint": s3.endpoint, "s3.access-key-id": s3.env["AWS_ACCESS_KEY_ID"],
             "s3.secret-access-key": s3.env["AWS_SECRET_ACCESS_KEY"], "s3.region": "us-east-1"}
    st = pyiceberg_table.StaticTable.from_metadata(hdb.Table(uri).metadata_location,
                                                   properties=props)
    want = pd.concat([df(1000, 0), df(1000, 1000)]).sort_values("id").reset_index(drop=True)
    got = st.scan().to_arrow().to_pandas().sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(got[["id", "v"]], want)
    ours = hdb.Table(uri).to_pandas(filter="id >= 1500 AND id < 1510")
    assert sorted(ours["id"]) == list(range(1500, 1510))

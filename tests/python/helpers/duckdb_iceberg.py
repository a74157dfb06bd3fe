"""Runs SQL in DuckDB with its Iceberg extension, attached to an Iceberg REST
catalog, in the separate virtual environment of scripts/duckdb-harness.sh
(DuckDB's extensions load only into their own DuckDB version, which is not
the one of .venv).  Used by tests/python/test_duckdb_restcat.py:

    build-duckdb/venv/bin/python helpers/duckdb_iceberg.py EXT_DIR < job.json

job: {"endpoint", "token", "statements": [sql...], "queries": {name: sql},
      "s3": {"key", "secret", "endpoint": "host:port"} for an S3 warehouse};
prints {"queries": {name: [[value...]...]}} as JSON (lists stay lists; other
non-JSON values as their str())."""
import json
import os
import sys


def main():
    ext_dir = sys.argv[1]
    job = json.load(sys.stdin)
    import duckdb
    c = duckdb.connect(config={"autoinstall_known_extensions": False,
                               "autoload_known_extensions": False})
    for e in ("avro", "httpfs", "iceberg"):
        c.execute(f"LOAD '{os.path.join(ext_dir, e + '.duckdb_extension')}'")
    if job.get("s3"):
        s3 = job["s3"]
        c.execute(f"CREATE SECRET s3_store (TYPE s3, KEY_ID {_lit(s3['key'])}, "
                  f"SECRET {_lit(s3['secret'])}, REGION 'us-east-1', "
                  f"ENDPOINT {_lit(s3['endpoint'])}, URL_STYLE 'path', USE_SSL false)")
    c.execute("CREATE SECRET rest_token (TYPE iceberg, TOKEN ?)".replace("?", _lit(job["token"])))
    c.execute(f"ATTACH 'warehouse' AS cat (TYPE iceberg, ENDPOINT {_lit(job['endpoint'])}, "
              "SECRET rest_token)")
    for sql in job.get("statements", []):
        c.execute(sql)
    out = {name: [list(r) for r in c.sql(sql).fetchall()]
           for name, sql in job.get("queries", {}).items()}
    json.dump({"queries": out}, sys.stdout, default=str)


def _lit(s):
    return "'" + str(s).replace("'", "''") + "'"


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Cross-checks the golden corpus's expected results (DuckDB) against
PostgreSQL 15 itself, the semantics our engine follows.  Not run in CI:
needs a PostgreSQL server, e.g. the reference one

    ../shared/oracles/postgres-pgvector.sh start /tmp/pg 55439
    .venv/bin/pip install 'psycopg[binary]'
    .venv/bin/python tests/sql/check_postgres.py --port 55439 --host /tmp/pg [--write]

It loads the tables of sqldata.py into a fresh database (C collation, UTC),
applies the same deletes, runs every query and compares PostgreSQL's answer
with the stored expectation (sqlcompare), and for E(...) queries checks the
SQLSTATE.  Prints every disagreement.  With --write, PostgreSQL's answers
to the queries where it disagrees with DuckDB go to postgres_overrides.json
(keyed by the query text), which gen_expected.py applies: the expectation
then comes from PostgreSQL (source "postgresql 15"), DuckDB's answer kept as
duckdb_rows for the record.
"""
import argparse
import datetime as dt
import decimal
import json
import math
import pathlib
import sys
import uuid

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import sqlcompare  # noqa: E402
import sqldata  # noqa: E402

OVERRIDES = HERE / "postgres_overrides.json"

PG_TYPES = {
    "bool": "boolean", "int16": "smallint", "int32": "integer", "int64": "bigint",
    "float": "real", "double": "double precision", "string": "text", "binary": "bytea",
    "date32[day]": "date", "timestamp[us]": "timestamp", "timestamp[us, tz=UTC]": "timestamptz",
    "extension<arrow.uuid>": "uuid", "list<item: int32>": "integer[]",
}


def pg_type(t):
    import pyarrow as pa
    if pa.types.is_decimal(t):
        return f"numeric({t.precision},{t.scale})"
    if pa.types.is_struct(t):
        return "st_t"
    if pa.types.is_list(t) and pa.types.is_float32(t.value_type):
        return "vector"  # pgvector (our list<float32> columns read as vector)
    return PG_TYPES[str(t)]


def canon(v):
    """A Python value from psycopg -> sqlcompare's canonical form."""
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, decimal.Decimal):
        if v.is_nan():
            return "NaN"
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, memoryview, bytearray)):
        return {"bytes": bytes(v).hex()}
    if isinstance(v, uuid.UUID):
        return {"uuid": str(v)}
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            return {"tstz": v.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat()}
        return {"ts": v.isoformat()}
    if isinstance(v, dt.date):
        return {"date": v.isoformat()}
    if isinstance(v, dt.time):
        return {"time": v.isoformat()}
    if isinstance(v, dt.timedelta):
        return {"interval": [0, v.days, v.seconds * 10 ** 9 + v.microseconds * 1000]}
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {"struct": {f: canon(getattr(v, f)) for f in v._fields}}
    if isinstance(v, list):
        return [canon(x) for x in v]
    raise TypeError(f"no canonical form for {type(v).__name__} {v!r}")


def load(conn):
    from psycopg.types.composite import CompositeInfo, register_composite
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
    cur.execute("CREATE TYPE st_t AS (x integer, y text)")
    register_composite(CompositeInfo.fetch(conn, "st_t"), conn)
    for td in sqldata.table_defs():
        cols = ", ".join(f'"{f.name}" {pg_type(f.type)}' for f in td.data.schema)
        cur.execute(f'CREATE TABLE "{td.name}" ({cols})')
        marks = []
        for f in td.data.schema:
            import pyarrow as pa
            if pa.types.is_struct(f.type):
                marks.append("CASE WHEN %s THEN NULL ELSE ROW(%s, %s)::st_t END")
            else:
                marks.append("%s")
        sql = f'INSERT INTO "{td.name}" VALUES ({", ".join(marks)})'
        rows = []
        names = td.data.schema.names
        for r in td.data.to_pylist():
            vals = []
            for n, f in zip(names, td.data.schema):
                v = r[n]
                if pa.types.is_struct(f.type):
                    vals += [v is None, None if v is None else v["x"], None if v is None else v["y"]]
                elif pa.types.is_list(f.type) and pa.types.is_float32(f.type.value_type):
                    vals.append(None if v is None else "[" + ",".join(repr(x) for x in v) + "]")
                elif isinstance(f.type, pa.BaseExtensionType):  # uuid
                    vals.append(None if v is None else (v if isinstance(v, uuid.UUID) else uuid.UUID(bytes=v)))
                else:
                    vals.append(v)
            rows.append(vals)
        if rows:
            cur.executemany(sql, rows)
        for pred in td.deletes:
            cur.execute(f'DELETE FROM "{td.name}" WHERE {pred}')
    conn.commit()


def main():
    import psycopg
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="/tmp/pg")
    ap.add_argument("--port", type=int, default=55439)
    ap.add_argument("--user", default="postgres")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    admin = psycopg.connect(host=args.host, port=args.port, user=args.user, dbname="postgres",
                            autocommit=True)
    admin.execute("DROP DATABASE IF EXISTS hs_golden")
    admin.execute("CREATE DATABASE hs_golden TEMPLATE template0 ENCODING 'UTF8' "
                  "LC_COLLATE 'C' LC_CTYPE 'C'")
    conn = psycopg.connect(host=args.host, port=args.port, user=args.user, dbname="hs_golden",
                           options="-c TimeZone=UTC -c extra_float_digits=3")
    load(conn)
    conn.autocommit = True
    bad, overrides = 0, {}
    for f in sorted((HERE / "expected").glob("*.json")):
        recs = json.loads(f.read_text())
        for rec in recs:
            try:
                cur = conn.execute(rec["sql"])
                rows = [[canon(v) for v in r] for r in cur.fetchall()] if cur.description else []
                err = None
            except psycopg.Error as e:
                rows, err = None, (e.sqlstate, str(e).splitlines()[0])
            if "error" in rec:
                if err is None:
                    bad += 1
                    print(f"{rec['id']}: PostgreSQL accepted it (expected {rec['error']})")
                elif err[0] != rec["error"]:
                    bad += 1
                    print(f"{rec['id']}: PostgreSQL SQLSTATE {err[0]}, expected {rec['error']}: {err[1]}")
                continue
            if err:
                bad += 1
                print(f"{rec['id']}: PostgreSQL failed: {err[0]} {err[1]}\n    {rec['sql']}")
                continue
            d = sqlcompare.compare(rec, rows)
            if d:
                bad += 1
                print(f"{rec['id']}: PostgreSQL differs from DuckDB: {d[:300]}\n    {rec['sql']}")
                overrides[rec["sql"]] = {"rows": rows, "why": d[:200]}
    if args.write and overrides:
        old = json.loads(OVERRIDES.read_text()) if OVERRIDES.exists() else {}
        old.update(overrides)
        OVERRIDES.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(overrides)} PostgreSQL answers to {OVERRIDES.name}; "
              "run gen_expected.py to apply them")
    print(f"{bad} disagreements")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

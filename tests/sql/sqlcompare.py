"""Canonical values and result comparison for the SQL golden tests.

A result (pyarrow.Table from DuckDB or from our engine) becomes a list of rows
of canonical JSON values:

    NULL -> None          bool -> bool        integer -> int
    float -> float ("NaN"/"Infinity"/"-Infinity" as strings)
    decimal -> int when integral, else float  (compared with the tolerance)
    string -> str         binary -> {"bytes": hex}     uuid -> {"uuid": "8-4-4-4-12"}
    date -> {"date": iso} timestamp -> {"ts": iso}     timestamptz -> {"tstz": iso in UTC}
    time -> {"time": iso} interval -> {"interval": [months, days, nanoseconds]}
    list -> [..]          struct -> {"struct": {field: value}}

Numbers compare across int/float/decimal (PostgreSQL's numeric vs DuckDB's
double or hugeint give the same numbers): equal when both are integers and
equal, else when |a - b| <= REL_TOL * max(|a|, |b|) + ABS_TOL.  Everything
else compares exactly.  Column names are not compared (engines name
expressions differently: "?column?" vs the expression text); the column
count is.
"""
import datetime as dt
import decimal
import math
import uuid

import pyarrow as pa

REL_TOL = 1e-6   # float4 results (PostgreSQL's sum(real)) carry ~7 digits
ABS_TOL = 1e-9


def _canon_scalar(v, typ):
    if v is None:
        return None
    if pa.types.is_boolean(typ):
        return bool(v)
    if isinstance(typ, pa.BaseExtensionType) and typ.extension_name == "arrow.uuid":
        return {"uuid": str(uuid.UUID(bytes=bytes(v)) if not isinstance(v, uuid.UUID) else v)}
    if isinstance(v, uuid.UUID):
        return {"uuid": str(v)}
    if isinstance(typ, pa.BaseExtensionType):
        if typ.extension_name == "arrow.bool8":
            return bool(v)
        if typ.extension_name == "arrow.json":
            return str(v)
        if typ.extension_name == "arrow.opaque":
            # DuckDB's HUGEINT/UHUGEINT (sum of bigints) under arrow_lossless_conversion:
            # 16 little-endian bytes.
            if typ.type_name in ("hugeint", "uhugeint"):
                return int.from_bytes(bytes(v), "little", signed=typ.type_name == "hugeint")
            raise TypeError(f"no canonical form for opaque type {typ.vendor_name}.{typ.type_name}")
        return _canon_scalar(v, typ.storage_type)
    if pa.types.is_integer(typ):
        return int(v)
    if pa.types.is_floating(typ):
        f = float(v)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    if pa.types.is_decimal(typ):
        d = decimal.Decimal(v)
        if d == d.to_integral_value():
            return int(d)
        return float(d)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        return str(v)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ) \
            or pa.types.is_binary_view(typ):
        return {"bytes": bytes(v).hex()}
    if pa.types.is_date(typ):
        return {"date": v.isoformat()}
    if pa.types.is_timestamp(typ):
        if typ.tz is not None:
            return {"tstz": v.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat()}
        return {"ts": v.isoformat()}
    if pa.types.is_time(typ):
        return {"time": v.isoformat()}
    if pa.types.is_interval(typ):
        return {"interval": [v.months, v.days, v.nanoseconds]}
    if pa.types.is_duration(typ):
        return {"interval": [0, 0, int(v / dt.timedelta(microseconds=1)) * 1000]}
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ) \
            or pa.types.is_list_view(typ):
        return [_canon_scalar(x, typ.value_type) for x in v]
    if pa.types.is_struct(typ):
        return {"struct": {typ.field(i).name: _canon_scalar(v.get(typ.field(i).name), typ.field(i).type)
                           for i in range(typ.num_fields)}}
    if pa.types.is_dictionary(typ):
        return _canon_scalar(v, typ.value_type)
    raise TypeError(f"no canonical form for Arrow type {typ}")


def canonical_rows(table):
    """pyarrow.Table -> list of rows (lists) of canonical values."""
    cols = []
    for i, f in enumerate(table.schema):
        col = table.column(i)
        vals = col.to_pylist()
        cols.append([_canon_scalar(v, f.type) for v in vals])
    return [list(r) for r in zip(*cols)] if cols else []


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def values_equal(a, b):
    if _is_num(a) and _is_num(b):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return abs(a - b) <= REL_TOL * max(abs(a), abs(b)) + ABS_TOL
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return False
        return all(values_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def rows_equal(r1, r2):
    return len(r1) == len(r2) and all(values_equal(x, y) for x, y in zip(r1, r2))


def _sort_key(v):
    """A total order over canonical values, coarse on floats (so that values
    within the tolerance usually sort next to each other)."""
    if v is None:
        return (0,)
    if isinstance(v, bool):
        return (1, v)
    if _is_num(v):
        return (2, float(f"{float(v):.5g}"))
    if isinstance(v, str):
        return (3, v)
    if isinstance(v, list):
        return (4, tuple(_sort_key(x) for x in v))
    if isinstance(v, dict):
        return (5, tuple((k, _sort_key(x)) for k, x in sorted(v.items())))
    return (6, repr(v))


def _row_key(r):
    return tuple(_sort_key(v) for v in r)


def multiset_diff(expected, actual):
    """None when the row multisets agree (within tolerance), else a message."""
    if len(expected) != len(actual):
        return f"row count {len(actual)}, expected {len(expected)}"
    e = sorted(expected, key=_row_key)
    a = sorted(actual, key=_row_key)
    if all(rows_equal(x, y) for x, y in zip(e, a)):
        return None
    # Fallback: greedy matching (floats near a rounding edge of the sort key).
    if len(e) <= 5000:
        pool = list(a)
        for row in e:
            for j, cand in enumerate(pool):
                if rows_equal(row, cand):
                    pool.pop(j)
                    break
            else:
                return f"expected row {row} missing (e.g. got {pool[:1]})"
        return None
    for x, y in zip(e, a):
        if not rows_equal(x, y):
            return f"expected row {x}, got {y}"
    return "rows differ"


def ordered_diff(expected, actual, keys, limited):
    """Rows in ORDER BY order: the key columns must come in the expected
    sequence; within each run of equal keys (ties) the rows compare as a
    multiset; with LIMIT/OFFSET the first and last runs may hold other tied
    rows, so only their keys are compared."""
    if len(expected) != len(actual):
        return f"row count {len(actual)}, expected {len(expected)}"
    for i, (x, y) in enumerate(zip(expected, actual)):
        if not all(values_equal(x[k], y[k]) for k in keys):
            return f"row {i}: sort keys {[y[k] for k in keys]}, expected {[x[k] for k in keys]}"
    groups, start = [], 0
    for i in range(1, len(expected) + 1):
        if i == len(expected) or [expected[i][k] for k in keys] != [expected[start][k] for k in keys]:
            groups.append((start, i))
            start = i
    for gi, (s, e) in enumerate(groups):
        if limited and (gi == 0 or gi == len(groups) - 1):
            continue
        d = multiset_diff(expected[s:e], actual[s:e])
        if d:
            return f"rows {s}..{e - 1} (tied on the sort keys): {d}"
    return None


def compare(exp, actual_rows):
    """exp: an expected-result record (gen_expected.py); actual_rows:
    canonical rows.  Returns None on agreement, else what differs."""
    if exp["columns"] is not None and actual_rows and len(actual_rows[0]) != len(exp["columns"]):
        return f"{len(actual_rows[0])} columns, expected {len(exp['columns'])}"
    if exp["keys"] is not None:
        return ordered_diff(exp["rows"], actual_rows, exp["keys"], exp["limited"])
    return multiset_diff(exp["rows"], actual_rows)

"""Acceptance: every file of the parquet-testing corpus reads like pyarrow reads it.

Each non-encrypted Parquet file under ../shared/testdata/parquet-testing/data
(subdirectories included) is read through hs_parquet_read and compared with
pyarrow.parquet.read_table of the same file, one test per file.  Files that
pyarrow cannot read must give us an error or values, never a crash.

Tables are compared with conftest.assert_tables_equal: schema equality (field
metadata aside) and Table.equals value equality, except that floats compare
bitwise (NaN == NaN, -0.0 != 0.0), which Table.equals cannot express.

Documented differences: none.  Our reader maps every type of the corpus as
pyarrow does (dense arrays, 32-bit offsets; no file here carries dictionary or
large types in its ARROW:schema).  Should one ever be needed, it goes into
EXCEPTIONS below, applied to pyarrow's side only, with its reason.
"""
import os
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import PARQUET_TESTING, HsError, StreamError, assert_tables_equal


# (predicate on pyarrow's type, function giving our type, why) -- empty: see above.
EXCEPTIONS = []


def _normalise_type(t):
    for applies, ours, _why in EXCEPTIONS:
        if applies(t):
            return ours(t)
    if pa.types.is_list(t):
        f = t.value_field
        return pa.list_(f.with_type(_normalise_type(f.type)))
    if pa.types.is_large_list(t):
        f = t.value_field
        return pa.large_list(f.with_type(_normalise_type(f.type)))
    if pa.types.is_fixed_size_list(t):
        f = t.value_field
        return pa.list_(f.with_type(_normalise_type(f.type)), t.list_size)
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_normalise_type(t.key_type)),
                       t.item_field.with_type(_normalise_type(t.item_type)),
                       keys_sorted=t.keys_sorted)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_normalise_type(f.type)) for f in t])
    return t


def normalise(table):
    """pyarrow's table with EXCEPTIONS applied (a no-op while it is empty)."""
    schema = pa.schema([f.with_type(_normalise_type(f.type)) for f in table.schema],
                       metadata=table.schema.metadata)
    if schema.equals(table.schema, check_metadata=False):
        return table
    return table.cast(schema)


def _corpus_files():
    root = PARQUET_TESTING / "data"
    if not root.is_dir():
        return []
    files = []
    for d, _, names in os.walk(root):
        for n in sorted(names):
            p = pathlib.Path(d) / n
            try:
                with open(p, "rb") as f:
                    head = f.read(4)
            except OSError:
                continue
            if head == b"PAR1":  # "PARE" = encrypted footer: out of scope
                files.append(p)
    return sorted(files)


FILES = _corpus_files()


def _pyarrow_read(path):
    try:
        return pq.read_table(path), None
    except Exception as e:  # the oracle cannot read it
        return None, e


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(PARQUET_TESTING / "data"))
                                             for p in FILES])
def test_corpus_file(hs_isolated, path):
    # Read in a child process: a crash fails this file's test, not the run.
    want, _oracle_error = _pyarrow_read(path)
    if want is None:
        # pyarrow rejects the file: an error or values from us are both fine;
        # returning at all (no crash, no hang) is the test.
        try:
            hs_isolated.read(path)
        except (HsError, StreamError):
            pass
        return
    got = hs_isolated.read(path)
    assert_tables_equal(got, normalise(want), path.name)


@pytest.mark.parametrize("batch_size", [1, 7, 1000])
def test_corpus_batch_sizes(hs, parquet_testing, batch_size):
    """Batch boundaries must not change values (files with nesting and many pages)."""
    for name in ["alltypes_tiny_pages.parquet", "nested_lists.snappy.parquet",
                 "nullable.impala.parquet", "repeated_no_annotation.parquet",
                 "delta_byte_array.parquet", "datapage_v2.snappy.parquet"]:
        path = parquet_testing / "data" / name
        want = normalise(pq.read_table(path))
        r = hs.reader(path, batch_size=batch_size)
        batches = list(r)
        assert all(b.num_rows <= batch_size for b in batches), name
        got = pa.Table.from_batches(batches, schema=r.schema)
        assert_tables_equal(got, want, f"{name} batch_size={batch_size}")


def test_projection(hs, parquet_testing):
    path = parquet_testing / "data" / "alltypes_plain.parquet"
    cols = ["double_col", "id", "string_col"]
    got = hs.read(path, columns=cols)
    want = normalise(pq.read_table(path, columns=cols))
    assert got.column_names == cols
    assert_tables_equal(got, want, "projection")


def test_unknown_column_is_not_found(hs, parquet_testing):
    path = parquet_testing / "data" / "alltypes_plain.parquet"
    with pytest.raises(HsError) as e:
        hs.read(path, columns=["id", "no_such_column"])
    assert e.value.status == "HS_NOT_FOUND"
    assert "no_such_column" in str(e.value)


def test_missing_file_is_an_error(hs, tmp_path):
    with pytest.raises(HsError):
        hs.read(tmp_path / "absent.parquet")


def test_not_parquet_is_corrupt(hs, tmp_path):
    p = tmp_path / "x.parquet"
    p.write_bytes(b"this is not a parquet file at all")
    with pytest.raises(HsError) as e:
        hs.read(p)
    assert e.value.status == "HS_CORRUPT"

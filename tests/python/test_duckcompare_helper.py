"""helpers/duckcompare.py must tell results apart: the differential tests
of the executor (test_sql_agg_*.py, test_sql_packed_keys.py,
test_sql_parallel_agg.py) pass only when our rows are DuckDB's, so its
comparison has to fail on every kind of difference and pass on the
differences that are not ones (row order, float rounding, Decimal vs
float)."""
from decimal import Decimal

from helpers import duckcompare as dc


def test_equal_rows_agree_in_any_order():
    want = [(1, "a", 2.5), (None, "b", None), (3, None, float("nan"))]
    got = [(3, None, float("nan")), (1, "a", 2.5 + 1e-13), (None, "b", None)]
    assert dc.differences(got, want) == []
    assert dc.differences([(Decimal("1.25"),)], [(1.25,)]) == []


def test_different_values_fail():
    want = [(1, "a", 2.5), (2, "b", 7.0)]
    for got in ([(1, "a", 2.5), (2, "b", 7.001)],     # a float off by more than the tolerance
                [(1, "a", 2.5), (2, "c", 7.0)],       # a string
                [(1, "a", 2.5), (3, "b", 7.0)],       # an integer
                [(1, "a", 2.5), (2, "b", None)],      # NULL for a value
                [(1, "a", 2.5)],                      # a row missing
                [(1, "a", 2.5), (2, "b", 7.0), (2, "b", 7.0)],   # a row too many
                [(1, "a", 2.5), (2, "b", float("nan"))]):
        assert dc.differences(got, want), got
    assert dc.differences([(0,)], [(None,)])
    assert dc.differences([(True,)], [(1.0,)])


def test_order_counts_when_asked_for():
    want = [(1,), (2,)]
    assert dc.differences([(2,), (1,)], want) == []
    assert dc.differences([(2,), (1,)], want, ordered=True)

"""Helpers shared by the index acceptance tests (test_index_*.py) and bench/filter."""

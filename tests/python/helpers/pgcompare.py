"""One result of ours against the PostgreSQL reference server's, for the
differential tests of array expressions (test_sql_numarr_pg.py,
test_sql_textarr_pg.py).

`pg` is what test_sql_fn_pg.Reference.run_many gives for one query:
("OK", [[text, pg_typeof], ...]) or ("ERR", sqlstate, message); `got` is
test_sql_fn_pg._ours's: ("OK", arrow type, [values]) or ("ERR", sqlstate,
message), rows in the order of their first column.  compare() returns the
disagreements as lines (empty: they agree):
  * expressions in `ours_0a000` must be 0A000 on our side, whatever
    PostgreSQL gives (documented gaps, never a wrong value);
  * when either side fails both must, with the same SQLSTATE class;
  * `types` maps a pg_typeof name to the Arrow type ours must have (a list
    type matches any list of the same value type; a name not in it is not
    checked);
  * the row counts agree and `same(text, pg_type, value)` holds per row.
"""
import pyarrow as pa


def _type_ok(want, got):
    if want is None or got == want:
        return True
    return pa.types.is_list(want) and pa.types.is_list(got) and got.value_type == want.value_type


def compare(pg, got, what, same, types, ours_0a000=()):
    bad = []
    if what in ours_0a000:
        if got[0] != "ERR" or got[1] != "0A000":
            bad.append(f"{what}: ours {got}, want 0A000 (PostgreSQL {pg})")
        return bad
    if pg[0] == "ERR" or got[0] == "ERR":
        if pg[0] != got[0] or pg[1][:2] != got[1][:2]:
            bad.append(f"{what}: PostgreSQL {pg}, ours {got}")
        return bad
    typ = pg[1][0][1] if pg[1] else None
    if not _type_ok(types.get(typ), got[1]):
        bad.append(f"{what}: PostgreSQL type {typ}, ours {got[1]}")
        return bad
    if len(pg[1]) != len(got[2]):
        bad.append(f"{what}: {len(pg[1])} rows in PostgreSQL, {len(got[2])} ours")
    for i, ((txt, t), v) in enumerate(zip(pg[1], got[2])):
        if not same(txt, t, v):
            bad.append(f"{what} (row {i + 1}): PostgreSQL {txt!r} ({t}), ours {v!r}")
    return bad

/*
 * sql/dml.c - INSERT, UPDATE, DELETE, MERGE, COPY and BEGIN/COMMIT/ROLLBACK.
 *
 * Owned by helper sx-dml, who replaces this file.  Until then every such
 * statement fails with SQLSTATE 0A000 (feature_not_supported) and the
 * session keeps no transaction state.
 */
#include "sql/sql_int.h"

hs_status sq_exec_dml(sq_session *s, const char *kind, const json_t *stmt, const char *text,
                      hs_result **out, hs_error *err)
{
    (void)stmt;
    (void)text;
    *out = NULL;
    return sq_fail(s, err, HS_UNSUPPORTED, "0A000", NULL, -1, "%s is not supported yet", kind);
}

void sq_dml_session_free(sq_session *s)
{
    (void)s;
}

/*
 * expr/expr_fastparse.h - filter text of the common simple forms, parsed
 * without libpg_query (expr_fastparse.c says which forms and why).
 *
 * ex_parse_filter_fast is ex_parse_filter (expr.h) with the same contract
 * and the same result: the same bound tree, the same errors.  Text the fast
 * parser takes costs a few microseconds instead of libpg_query's tens.
 */
#ifndef HS_EXPR_EXPR_FASTPARSE_H
#define HS_EXPR_EXPR_FASTPARSE_H

#include "expr/expr.h"

/* ex_parse_filter (same arguments, ownership and errors), through the fast
 * parser when the text is one of its forms and libpg_query otherwise.
 * HS_FILTER_FASTPARSE=0 in the environment: always libpg_query. */
HS_MUST_USE hs_status ex_parse_filter_fast(const char *text, const hs_field *schema,
                                           ex_expr **out, hs_error *err);

/* The fast parser alone: HS_OK with *out (caller frees with ex_free) when the
 * text is one of its forms and binds; HS_UNSUPPORTED (err untouched) when it
 * is not, or does not bind (ex_parse_filter then says why); HS_NOMEM. */
HS_MUST_USE hs_status ex_fastparse_filter(const char *text, const hs_field *schema,
                                          ex_expr **out, hs_error *err);

/* PostgreSQL's category of keyword w (lower case): 'U' unreserved, 'C'
 * col_name, 'T' type_func_name, 'R' reserved; 0 when w is no keyword.  A
 * name of category T or R must be double-quoted to be a column name. */
char ex_keyword_category(const char *w);
/* The k-th keyword (sorted), NULL past the last: for tests. */
const char *ex_keyword_at(int k);

#endif

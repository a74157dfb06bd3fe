/*
 * tests/c/expr_same.h - whether two bound expressions are the same tree,
 * node by node (kind, type, location, operator, constant, column, IN set,
 * LIKE pattern presence): the differential checks of the fast filter parser
 * (test_expr_fastparse.c, tests/fuzz/fuzz_filter.c) compare what it binds
 * with what libpg_query's path binds.
 */
#ifndef HS_TEST_EXPR_SAME_H
#define HS_TEST_EXPR_SAME_H

#include "expr/expr_int.h"

#include <stdbool.h>
#include <string.h>

static inline bool same_ty(const ex_ty *a, const ex_ty *b)
{
    return a->t == b->t && a->bits == b->bits && a->unit == b->unit && a->tz == b->tz &&
           a->uuid == b->uuid && a->prec == b->prec && a->scale == b->scale && a->dim == b->dim &&
           a->elem == b->elem;
}

static inline bool same_str(const ex_str *a, const ex_str *b)
{
    return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
}

/* (a NULL constant's other fields mean nothing: folding leaves what it had) */
static inline bool same_val(const ex_value *a, const ex_value *b)
{
    if (a->null || b->null)
        return a->null == b->null;
    return a->i == b->i && memcmp(&a->f, &b->f, sizeof a->f) == 0 &&
           a->d == b->d && same_str(&a->s, &b->s);
}

static inline bool same_cstr(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static inline bool same_set(const ex_inset *a, const ex_inset *b)
{
    if (!a || !b)
        return a == b;
    if (a->n != b->n || a->has_null != b->has_null || (!a->i != !b->i) || (!a->f != !b->f) ||
        (!a->s != !b->s))
        return false;
    for (int64_t k = 0; k < a->n; k++)
        if ((a->i && a->i[k] != b->i[k]) || (a->f && memcmp(&a->f[k], &b->f[k], sizeof a->f[k])) ||
            (a->s && !same_str(&a->s[k], &b->s[k])))
            return false;
    return true;
}

static inline bool same_node(const ex_node *a, const ex_node *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != b->kind || !same_ty(&a->type, &b->type) || a->loc != b->loc || a->op != b->op ||
        a->aux != b->aux || a->cmode != b->cmode || a->neg != b->neg || a->ci != b->ci ||
        a->esc != b->esc || a->n_args != b->n_args || !same_val(&a->val, &b->val) ||
        a->field != b->field || a->field_id != b->field_id || !same_cstr(a->name, b->name) ||
        a->path_len != b->path_len || a->sub != b->sub || a->slot != b->slot ||
        (!a->pat != !b->pat) || !same_set(a->set, b->set))
        return false;
    for (int k = 0; k < a->path_len; k++)
        if (!same_cstr(a->path[k], b->path[k]))
            return false;
    for (int k = 0; k < a->n_args; k++)
        if (!same_node(a->args[k], b->args[k]))
            return false;
    return true;
}

/* The same tree, bound to the same schema from the same text. */
static inline bool same_expr(const ex_expr *a, const ex_expr *b)
{
    return same_node(a->root, b->root) && a->n_slots == b->n_slots &&
           same_cstr(a->text, b->text) && a->schema == b->schema;
}

#endif

/*
 * sql/plan_from.c - FROM items: the join tree of base tables (not yet
 * scanned, so WHERE can still reach them), derived tables, CTEs (WITH
 * RECURSIVE materialized here), VALUES, table functions and time travel;
 * prepare_joins marks nullable sides and collects the leaves.  Scans and
 * joins are built from this tree by plan_join.c.
 */
#include "sql/plan_int.h"

#include "columnar/jsonl.h"

/* ------------------------------------------------------------------ */
/* FROM                                                                */




static void fnode_free(fnode *f)
{
    if (!f)
        return;
    hs_field_clear(&f->ts);
    hs_buf_free(&f->filt);
    pl_rel_clear(&f->rl);
    hs_free(f->alias);
    hs_free(f->jalias);
    pl_qcols_free(f->ns, f->n_ns);
    hs_free(f);
}

void  pl_fromc_free(fromc *fc)
{
    for (int i = 0; i < fc->n_all; i++)
        fnode_free(fc->all[i]);
    hs_free(fc->all);
    hs_free(fc->items);
    hs_free(fc->leaves);
    memset(fc, 0, sizeof *fc);
}

static hs_status push_ptr(planner *p, fnode ***a, int *n, fnode *f)
{
    fnode **na = hs_realloc(*a, (size_t)(*n + 1) * sizeof *na);
    if (!na)
        return pl_nomem(p);
    *a = na;
    na[(*n)++] = f;
    return HS_OK;
}

static hs_status new_fnode(planner *p, fromc *fc, int kind, int loc, fnode **out)
{
    fnode *f = hs_calloc(1, sizeof *f);
    if (!f)
        return pl_nomem(p);
    f->kind = kind;
    f->loc = loc;
    hs_status st = push_ptr(p, &fc->all, &fc->n_all, f);
    if (st != HS_OK) {
        hs_free(f);
        return st;
    }
    *out = f;
    return HS_OK;
}


/* Rows of the table's current snapshot (summary), or 1000. */
static double table_rows(hs_table *t)
{
    int64_t cur = hs_table_current_snapshot_id(t);
    int n = hs_snapshot_count(t);
    for (int i = 0; i < n; i++) {
        hs_snapshot_info si = HS_SNAPSHOT_INFO_INIT;
        hs_error e = {0};
        if (hs_snapshot_get(t, i, &si, &e) == HS_OK && si.snapshot_id == cur)
            return si.total_records >= 0 ? (double)si.total_records : 1000.0;
    }
    return n == 0 ? 0.0 : 1000.0;
}

/* Renames r's columns with alias (qualifier) and optional column aliases. */
static hs_status apply_alias(planner *p, rel *r, const char *alias, const json_t *colnames, int loc)
{
    HS_TRY(pl_rel_name(r, alias, p->err));
    size_t nc = json_array_size(colnames);
    if ((int)nc > r->n)
        return pl_fail(p, HS_INVALID, "42P10", loc,
                    "table \"%s\" has %d columns available but %zu columns specified",
                    alias ? alias : "?", r->n, nc);
    for (size_t i = 0; i < nc; i++) {
        const char *nm = sq_str(json_array_get(colnames, i));
        char *d = hs_strdup(nm ? nm : "");
        if (!d)
            return pl_nomem(p);
        hs_free(r->cols[i].name);
        r->cols[i].name = d;
    }
    return HS_OK;
}

static hs_status leaf_ns_from_rel(planner *p, fnode *f)
{
    f->n_ns = f->rl.n;
    f->ns = hs_calloc((size_t)f->n_ns + 1, sizeof *f->ns);
    if (!f->ns)
        return pl_nomem(p);
    for (int i = 0; i < f->n_ns; i++) {
        f->ns[i].qual = pl_dup_or_null(f->rl.cols[i].qual);
        f->ns[i].name = hs_strdup(f->rl.cols[i].name);
        f->ns[i].hidden = f->rl.cols[i].hidden;
        f->ns[i].outer = f->rl.cols[i].outer;
        if (!f->ns[i].name)
            return pl_nomem(p);
    }
    return HS_OK;
}

static cte *find_cte(planner *p, const char *name)
{
    for (cte *c = p->ctes; c; c = c->next)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

static hs_status from_item(planner *p, fromc *fc, const json_t *item, fnode **out);


/* End of a (possibly qualified, possibly quoted) name starting at t, or NULL. */
static const char *name_end(const char *t)
{
    for (;;) {
        if (*t == '"') {
            t++;
            while (*t && !(*t == '"' && t[1] != '"'))
                t += *t == '"' ? 2 : 1;
            if (!*t)
                return NULL;
            t++;
        } else if (isalpha((unsigned char)*t) || *t == '_' || (unsigned char)*t >= 0x80) {
            while (isalnum((unsigned char)*t) || *t == '_' || *t == '$' || (unsigned char)*t >= 0x80)
                t++;
        } else {
            return NULL;
        }
        if (*t != '.')
            return t;
        t++;
    }
}

/* Applies a FOR SYSTEM_VERSION/SYSTEM_TIME clause written right after the
 * table name of RangeVar b (session.c cut it out of the text). */
static hs_status time_travel(planner *p, const json_t *b, fnode *f)
{
    int loc = sq_loc(b);
    if (loc < 0 || p->s->n_tt == 0)
        return HS_OK;
    const char *e = name_end(p->text + loc);
    if (!e)
        return HS_OK;
    int off0 = (int)(e - p->text);
    while (*e == ' ' || *e == '\t' || *e == '\n' || *e == '\r')
        e++;
    int off1 = (int)(e - p->text);
    for (int i = 0; i < p->s->n_tt; i++) {
        sq_tt *tt = &p->s->tt[i];
        if (tt->off < off0 || tt->off > off1)
            continue;
        tt->used = true;
        if (tt->version) {
            f->so.use_snapshot_id = 1;
            f->so.snapshot_id = tt->snapshot_id;
            return HS_OK;
        }
        int y, mo, d, hh = 0, mi = 0;
        double sec = 0;
        char tz[16] = "", secs[32] = "";
        /* seconds as text, converted locale-independently (hs_strtod) */
        int n = sscanf(tt->ts, "%d-%d-%d%*[ T]%d:%d:%31[0-9.]%15s", &y, &mo, &d, &hh, &mi, secs, tz);
        if (n >= 6)
            sec = hs_strtod(secs, NULL);
        if (n < 3 || mo < 1 || mo > 12 || d < 1 || d > 31 || (tz[0] && strcmp(tz, "Z") &&
                                                               strcmp(tz, "+00") && strcmp(tz, "+00:00")))
            return pl_fail(p, HS_INVALID, "22007", tt->off,
                        "invalid timestamp \"%s\" in FOR SYSTEM_TIME AS OF (YYYY-MM-DD[ HH:MM:SS] UTC)",
                        tt->ts);
        int64_t ms = (hs_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + hh * 3600 + mi * 60) * 1000 +
                     (int64_t)(sec * 1000 + 0.5);
        f->so.use_as_of = 1;
        f->so.as_of_ms = ms;
        return HS_OK;
    }
    return HS_OK;
}

/* ---- WITH RECURSIVE ----
 * A recursive CTE (anchor UNION [ALL] recursive term) is run the first time
 * it is referenced, while planning: the anchor's rows are the first working
 * table; then, until an iteration adds no rows, the recursive term is
 * planned again (its self-reference reads the working table as Values)
 * and run, and its rows (UNION: only rows not seen before, as EXCEPT
 * against all rows so far) become the next working table.  Every
 * reference then reads all rows as Values.  Column types are the anchor's;
 * the recursive term must produce the same (else 42804, as PostgreSQL).
 * At most PL_REC_MAX_ITER iterations (54001 past them). */

#define PL_REC_MAX_ITER 100000

void pl_cte_clear(cte *c)
{
    for (int i = 0; i < c->n_rows; i++)
        hs_batch_free(c->rows[i]);
    for (int i = 0; i < c->n_work; i++)
        hs_batch_free(c->work[i]);
    hs_free(c->rows);
    hs_free(c->work);
    c->rows = c->work = NULL;
    c->n_rows = c->n_work = 0;
    if (c->rec_schema.name)
        hs_field_clear(&c->rec_schema);
    c->rec_state = 0;
}

/* Appends b (taken) to the array *a of *n. */
static hs_status push_batch(planner *p, hs_batch ***a, int *n, hs_batch *b)
{
    hs_batch **na = hs_realloc(*a, (size_t)(*n + 1) * sizeof *na);
    if (!na) {
        hs_batch_free(b);
        return pl_nomem(p);
    }
    na[(*n)++] = b;
    *a = na;
    return HS_OK;
}

/* A deep copy of b with schema. */
static hs_status copy_batch(planner *p, const hs_field *schema, const hs_batch *b, hs_batch **out)
{
    HS_TRY(hs_batch_create(schema, 0, out, p->err));
    for (int c = 0; c < b->n_cols && c < (*out)->n_cols; c++) {
        hs_column *col;
        hs_status st = hs_col_slice(b->cols[c], 0, b->n_rows, &col, p->err);
        if (st != HS_OK) {
            hs_batch_free(*out);
            *out = NULL;
            return st;
        }
        hs_col_free((*out)->cols[c]);
        (*out)->cols[c] = col;
    }
    (*out)->n_rows = b->n_rows;
    return HS_OK;
}

/* Values over copies of the n batches. */
static hs_status values_of(planner *p, const hs_field *schema, hs_batch *const *bs, int n,
                           xo_op **out)
{
    hs_batch **cp = hs_calloc((size_t)n + 1, sizeof *cp);
    if (!cp)
        return pl_nomem(p);
    hs_status st = HS_OK;
    for (int i = 0; i < n && st == HS_OK; i++)
        st = copy_batch(p, schema, bs[i], &cp[i]);
    if (st == HS_OK) {
        st = xo_values(p->ctx, schema, n, cp, out, p->err);   /* takes cp[i] */
        hs_free(cp);
        return st;
    }
    for (int i = 0; i < n; i++)
        hs_batch_free(cp[i]);
    hs_free(cp);
    return st;
}

/* Runs op to its end (freed), appending its batches (schema set to c's)
 * to *a. */
static hs_status drain(planner *p, cte *c, xo_op *op, hs_batch ***a, int *n)
{
    hs_status st = HS_OK;
    for (;;) {
        hs_batch *b;
        st = xo_next(op, &b, p->err);
        if (st != HS_OK || !b)
            break;
        hs_batch *cp;
        st = copy_batch(p, &c->rec_schema, b, &cp);   /* (with the CTE's names) */
        hs_batch_free(b);
        if (st == HS_OK)
            st = push_batch(p, a, n, cp);
        if (st != HS_OK)
            break;
    }
    xo_free(op);
    return st;
}

static hs_status cte_materialize(planner *p, cte *c, int loc)
{
    const json_t *q = c->query;
    json_t *lb, *rb;
    if (!pl_is_kind(pl_jget(q, "larg"), "SelectStmt", &lb) && !(lb = pl_jget(q, "larg")))
        return pl_fail(p, HS_INVALID, "42P19", loc, "recursive query \"%s\" has no anchor", c->name);
    if (!pl_is_kind(pl_jget(q, "rarg"), "SelectStmt", &rb) && !(rb = pl_jget(q, "rarg")))
        return pl_fail(p, HS_INVALID, "42P19", loc, "recursive query \"%s\" has no recursive term",
                       c->name);
    bool all = json_is_true(pl_jget(q, "all"));
    cte *saved = p->ctes;
    /* the anchor sees the CTEs before this one */
    rel r = {0};
    p->ctes = c->next;
    c->in_use = 1;
    hs_status st = pl_plan_query(p, lb, &r);
    c->in_use = 0;
    p->ctes = saved;
    HS_TRY(st);
    /* a failed earlier materialization (an error in the recursive term of
     * a subquery planned again another way) left its schema here */
    hs_field_clear(&c->rec_schema);
    memset(&c->rec_schema, 0, sizeof c->rec_schema);
    if (hs_field_copy(&r.op->schema, &c->rec_schema) != HS_OK) {
        pl_rel_clear(&r);
        return pl_nomem(p);
    }
    for (int i = 0; i < c->rec_schema.n_children && i < r.n; i++) {
        char *nm = hs_strdup(r.cols[i].name ? r.cols[i].name : "");
        if (!nm) {
            pl_rel_clear(&r);
            return pl_nomem(p);
        }
        hs_free(c->rec_schema.children[i].name);
        c->rec_schema.children[i].name = nm;
    }
    xo_op *op = r.op;
    r.op = NULL;
    pl_rel_clear(&r);
    if (!all) {
        st = xo_distinct(op, &op, p->err);
        if (st != HS_OK)
            return st;
    }
    st = drain(p, c, op, &c->work, &c->n_work);
    for (int i = 0; i < c->n_work && st == HS_OK; i++) {
        hs_batch *cp;
        st = copy_batch(p, &c->rec_schema, c->work[i], &cp);
        if (st == HS_OK)
            st = push_batch(p, &c->rows, &c->n_rows, cp);
    }
    int64_t iter = 0;
    while (st == HS_OK && c->n_work > 0) {
        if (++iter > PL_REC_MAX_ITER) {
            st = pl_fail(p, HS_INVALID, "54001", loc,
                         "recursive query \"%s\" did not end within %d iterations", c->name,
                         PL_REC_MAX_ITER);
            break;
        }
        /* the recursive term sees this CTE (reading the working table) */
        c->rec_state = 1;
        p->ctes = c;
        st = pl_plan_query(p, rb, &r);
        p->ctes = saved;
        c->rec_state = 0;
        if (st != HS_OK)
            break;
        const hs_field *rs = &r.op->schema;
        if (rs->n_children != c->rec_schema.n_children) {
            pl_rel_clear(&r);
            st = pl_fail(p, HS_INVALID, "42601", loc,
                         "each UNION query must have the same number of columns");
            break;
        }
        for (int i = 0; i < rs->n_children && st == HS_OK; i++) {
            hs_field a = c->rec_schema.children[i], b = rs->children[i];
            a.nullable = b.nullable = true;
            if (!hs_field_equals(&a, &b, false, false))
                st = pl_fail(p, HS_INVALID, "42804",
                             loc, "recursive query \"%s\" column %d has type %s in non-recursive "
                             "term but type %s overall", c->name, i + 1,
                             hs_type_name(a.type), hs_type_name(b.type));
        }
        if (st != HS_OK) {
            pl_rel_clear(&r);
            break;
        }
        op = r.op;
        r.op = NULL;
        pl_rel_clear(&r);
        if (!all) {   /* only rows not seen before */
            xo_op *seen;
            st = values_of(p, &c->rec_schema, c->rows, c->n_rows, &seen);
            if (st == HS_OK)
                st = xo_setop(XO_SET_EXCEPT, false, op, seen, &op, p->err);
            else
                xo_free(op);
            if (st != HS_OK)
                break;
        }
        hs_batch **next = NULL;
        int n_next = 0;
        st = drain(p, c, op, &next, &n_next);
        for (int i = 0; i < c->n_work; i++)
            hs_batch_free(c->work[i]);
        hs_free(c->work);
        c->work = next;
        c->n_work = n_next;
        for (int i = 0; i < c->n_work && st == HS_OK; i++) {
            hs_batch *cp;
            st = copy_batch(p, &c->rec_schema, c->work[i], &cp);
            if (st == HS_OK)
                st = push_batch(p, &c->rows, &c->n_rows, cp);
        }
    }
    for (int i = 0; i < c->n_work; i++)
        hs_batch_free(c->work[i]);
    hs_free(c->work);
    c->work = NULL;
    c->n_work = 0;
    if (st == HS_OK)
        c->rec_state = 2;
    return st;
}

/* A reference to a recursive CTE: its rows (the working table inside its
 * own recursive term). */
static hs_status from_recursive(planner *p, cte *c, fnode *f, int loc)
{
    if (c->rec_state == 0) {
        const struct apply_row *saved_row = p->outer_row;
        if (c->enclosing)
            p->outer_row = NULL;   /* as for a plain CTE (from_rangevar) */
        hs_status st = cte_materialize(p, c, loc);
        p->outer_row = saved_row;
        HS_TRY(st);
    }
    if (c->rec_state == 1)
        HS_TRY(values_of(p, &c->rec_schema, c->work, c->n_work, &f->rl.op));
    else
        HS_TRY(values_of(p, &c->rec_schema, c->rows, c->n_rows, &f->rl.op));
    return pl_rel_name(&f->rl, NULL, p->err);
}

static hs_status from_rangevar(planner *p, fromc *fc, json_t *b, fnode **out)
{
    const char *rel_name_s = pl_jstrv(b, "relname");
    json_t *alias = pl_jget(b, "alias");
    const char *an = alias ? pl_jstrv(alias, "aliasname") : NULL;
    json_t *colnames = alias ? pl_jget(alias, "colnames") : NULL;
    int loc = sq_loc(b);
    cte *c = !pl_jget(b, "schemaname") && rel_name_s ? find_cte(p, rel_name_s) : NULL;
    fnode *f;
    if (c && c->recursive) {
        HS_TRY(new_fnode(p, fc, F_REL, loc, &f));
        HS_TRY(from_recursive(p, c, f, loc));
        HS_TRY(apply_alias(p, &f->rl, an ? an : c->name, c->colnames, loc));
        if (colnames)
            HS_TRY(apply_alias(p, &f->rl, an, colnames, loc));
        HS_TRY(leaf_ns_from_rel(p, f));
        *out = f;
        return HS_OK;
    }
    if (c) {
        if (c->in_use)
            return pl_fail(p, HS_UNSUPPORTED, "0A000", loc, "recursive CTEs are not supported");
        HS_TRY(new_fnode(p, fc, F_REL, loc, &f));
        c->in_use = 1;
        /* the CTE sees only the CTEs defined before it, and no outer row
         * of an Apply when it is defined outside the Apply's subquery */
        cte *saved = p->ctes;
        const struct apply_row *saved_row = p->outer_row;
        p->ctes = c->next;
        if (c->enclosing)
            p->outer_row = NULL;
        hs_status st = pl_plan_query(p, c->query, &f->rl);
        p->ctes = saved;
        p->outer_row = saved_row;
        c->in_use = 0;
        HS_TRY(st);
        HS_TRY(apply_alias(p, &f->rl, an ? an : c->name, c->colnames, loc));
        if (colnames)
            HS_TRY(apply_alias(p, &f->rl, an, colnames, loc));
        HS_TRY(leaf_ns_from_rel(p, f));
        *out = f;
        return HS_OK;
    }
    HS_TRY(new_fnode(p, fc, F_TABLE, loc, &f));
    HS_TRY(sq_table_lookup(p->s, b, p->text, &f->t, p->err));
    struct ArrowSchema as;
    HS_TRY(hs_table_schema(f->t, &as, p->err));
    hs_status st = hs_arrow_import_schema(&as, &f->ts, p->err);
    if (as.release)
        as.release(&as);
    HS_TRY(st);
    f->so = (hs_scan_options)HS_SCAN_OPTIONS_INIT;
    HS_TRY(time_travel(p, b, f));
    if (!f->so.use_snapshot_id && !f->so.use_as_of) {
        /* inside BEGIN ... COMMIT, a table the transaction wrote reads as
         * the transaction sees it (its uncommitted changes included) */
        hs_batch *view;
        HS_TRY(sq_txn_view(p->s, f->t, &view, p->err));
        if (view) {
            f->kind = F_REL;
            HS_TRY(xo_values(p->ctx, &view->schema, 1, &view, &f->rl.op, p->err));
            HS_TRY(pl_rel_name(&f->rl, NULL, p->err));
            HS_TRY(apply_alias(p, &f->rl, an ? an : rel_name_s, colnames, loc));
            HS_TRY(leaf_ns_from_rel(p, f));
            *out = f;
            return HS_OK;
        }
    }
    f->est = table_rows(f->t);
    f->alias = hs_strdup(an ? an : rel_name_s ? rel_name_s : "");
    if (!f->alias)
        return pl_nomem(p);
    f->n_ns = f->ts.n_children;
    f->ns = hs_calloc((size_t)f->n_ns + 1, sizeof *f->ns);
    if (!f->ns)
        return pl_nomem(p);
    size_t nc = json_array_size(colnames);
    if ((int)nc > f->n_ns)
        return pl_fail(p, HS_INVALID, "42P10", loc,
                    "table \"%s\" has %d columns available but %zu columns specified", f->alias,
                    f->n_ns, nc);
    for (int i = 0; i < f->n_ns; i++) {
        const char *nm = (size_t)i < nc ? sq_str(json_array_get(colnames, i)) : f->ts.children[i].name;
        f->ns[i].qual = hs_strdup(f->alias);
        f->ns[i].name = hs_strdup(nm ? nm : "");
        if (!f->ns[i].qual || !f->ns[i].name)
            return pl_nomem(p);
    }
    *out = f;
    return HS_OK;
}

static hs_status from_item(planner *p, fromc *fc, const json_t *item, fnode **out)
{
    const char *k;
    json_t *b;
    if (!sq_node(item, &k, &b))
        return pl_fail(p, HS_INTERNAL, "XX000", -1, "malformed FROM item");
    if (fc->n_leaves >= 200)
        return pl_fail(p, HS_UNSUPPORTED, "54000", pl_first_loc(b, 0), "more than 200 tables in one FROM");
    if (!strcmp(k, "RangeVar")) {
        HS_TRY(from_rangevar(p, fc, b, out));
        return push_ptr(p, &fc->leaves, &fc->n_leaves, *out);
    }
    if (!strcmp(k, "RangeSubselect")) {
        /* a LATERAL subquery that references nothing before it (the
         * correlated ones were rewritten into joins: plan_lateral.c) */
        json_t *alias = pl_jget(b, "alias");
        json_t *sb;
        if (!pl_is_kind(pl_jget(b, "subquery"), "SelectStmt", &sb))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(b, 0), "unsupported subquery in FROM");
        fnode *f;
        HS_TRY(new_fnode(p, fc, F_REL, pl_first_loc(b, 0), &f));
        HS_TRY(pl_plan_query(p, sb, &f->rl));
        HS_TRY(apply_alias(p, &f->rl, alias ? pl_jstrv(alias, "aliasname") : NULL,
                           alias ? pl_jget(alias, "colnames") : NULL, f->loc));
        HS_TRY(leaf_ns_from_rel(p, f));
        *out = f;
        return push_ptr(p, &fc->leaves, &fc->n_leaves, f);
    }
    if (!strcmp(k, "JoinExpr")) {
        fnode *f;
        HS_TRY(new_fnode(p, fc, F_JOIN, pl_first_loc(b, 0), &f));
        f->jtype = pl_jstrv(b, "jointype");
        if (!f->jtype)
            f->jtype = "JOIN_INNER";
        if (strcmp(f->jtype, "JOIN_INNER") && strcmp(f->jtype, "JOIN_LEFT") &&
            strcmp(f->jtype, "JOIN_RIGHT") && strcmp(f->jtype, "JOIN_FULL"))
            return pl_fail(p, HS_UNSUPPORTED, "0A000", f->loc, "unsupported join type %s", f->jtype);
        f->quals = pl_jget(b, "quals");
        f->using = pl_jget(b, "usingClause");
        f->natural = json_is_true(pl_jget(b, "isNatural"));
        json_t *alias = pl_jget(b, "alias");
        if (alias && pl_jstrv(alias, "aliasname")) {
            f->jalias = hs_strdup(pl_jstrv(alias, "aliasname"));
            if (!f->jalias)
                return pl_nomem(p);
        }
        HS_TRY(from_item(p, fc, pl_jget(b, "larg"), &f->l));
        HS_TRY(from_item(p, fc, pl_jget(b, "rarg"), &f->r));
        *out = f;
        return HS_OK;
    }
    if (!strcmp(k, "RangeFunction")) {
        /* unnest / generate_series (plan_srf.c); lateral ones, reading
         * earlier items' columns, were taken out of the FROM list by
         * plan_block and run over the joined rows */
        bool lateral = pl_srf_is_lateral(item);
        if (lateral && !p->outer_row)
            return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(b, 0),
                           "a lateral function is supported as a top-level FROM item only");
        fnode *f;
        HS_TRY(new_fnode(p, fc, F_REL, pl_first_loc(b, 0), &f));
        if (lateral) {
            /* under an Apply: the function over the enclosing row, whose
             * columns (marked outer) it and the conditions beside it read */
            HS_TRY(pl_apply_outer_rel(p, &f->rl));
            json_t *one = json_pack("[{s:O,s:b}]", "rf", b, "outer", 0);
            hs_status st = one ? pl_srf_apply_lateral(p, &f->rl, one) : pl_nomem(p);
            json_decref(one);
            HS_TRY(st);
        } else {
            HS_TRY(pl_srf_from_item(p, b, &f->rl));
        }
        HS_TRY(leaf_ns_from_rel(p, f));
        *out = f;
        return push_ptr(p, &fc->leaves, &fc->n_leaves, f);
    }
    return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_first_loc(b, 0), "unsupported FROM item (%s)", k);
}

/* Marks the leaves under f nullable. */
static void mark_nullable(fnode *f)
{
    if (!f)
        return;
    f->nullable = true;
    mark_nullable(f->l);
    mark_nullable(f->r);
}

/* Leaves under f (in order) into arr. */
void pl_leaves_of(fnode *f, fnode **arr, int *n)
{
    if (f->kind == F_JOIN) {
        pl_leaves_of(f->l, arr, n);
        pl_leaves_of(f->r, arr, n);
    } else {
        arr[(*n)++] = f;
    }
}

/* Which leaf a name belongs to among leaves (USING-hidden columns skipped
 * unqualified); -1 none, -2 ambiguous.  *col gets the column. */
int  pl_leaf_find(fnode **leaves, int n_leaves, const char *const *names, int n, int *col)
{
    int hit = -1;
    bool hit_outer = false;
    for (int i = 0; i < n_leaves; i++) {
        layer l = {leaves[i]->ns, leaves[i]->n_ns, 0};
        int c = pl_layer_find(&l, names, n);
        if (c == -2)
            return -2;
        if (c >= 0) {
            /* the enclosing row's columns (plan_apply.c) yield to the query's own */
            bool outer = leaves[i]->ns[c].outer;
            if (hit >= 0 && outer)
                continue;
            if (hit >= 0 && !hit_outer)
                return -2;
            hit = i;
            hit_outer = outer;
            *col = c;
        }
    }
    return hit;
}

/* Sets up the joins' nullability and USING visibility. */
static hs_status prepare_joins(planner *p, fnode *f)
{
    if (f->kind != F_JOIN)
        return HS_OK;
    HS_TRY(prepare_joins(p, f->l));
    HS_TRY(prepare_joins(p, f->r));
    if (!strcmp(f->jtype, "JOIN_LEFT") || !strcmp(f->jtype, "JOIN_FULL"))
        mark_nullable(f->r);
    if (!strcmp(f->jtype, "JOIN_RIGHT") || !strcmp(f->jtype, "JOIN_FULL"))
        mark_nullable(f->l);
    /* NATURAL: the common column names become a USING list */
    fnode *lv[256], *rv[256];
    int nl = 0, nr = 0;
    pl_leaves_of(f->l, lv, &nl);
    pl_leaves_of(f->r, rv, &nr);
    if (f->natural) {
        json_t *u = json_array();
        if (!u)
            return pl_nomem(p);
        for (int i = 0; i < nl; i++)
            for (int c = 0; c < lv[i]->n_ns; c++) {
                if (lv[i]->ns[c].hidden)
                    continue;
                const char *nm = lv[i]->ns[c].name;
                int col;
                if (pl_leaf_find(rv, nr, &nm, 1, &col) >= 0)
                    json_array_append_new(u, json_pack("{s:{s:s}}", "String", "sval", nm));
            }
        /* kept alive by the planner's names object */
        char key[32];
        snprintf(key, sizeof key, "\x01natural%p", (void *)f);
        json_object_set_new(p->names, key, u);
        f->using = u;
    }
    size_t i;
    json_t *v;
    json_array_foreach(f->using, i, v) {
        const char *nm = sq_str(v);
        int lc, rc;
        int li = nm ? pl_leaf_find(lv, nl, &nm, 1, &lc) : -1;
        int ri = nm ? pl_leaf_find(rv, nr, &nm, 1, &rc) : -1;
        if (li < 0 || ri < 0)
            return pl_fail(p, HS_NOT_FOUND, "42703", f->loc,
                        "column \"%s\" specified in USING clause does not exist in %s table",
                        nm ? nm : "?", li < 0 ? "left" : "right");
        rv[ri]->ns[rc].hidden = true;
    }
    return HS_OK;
}

hs_status  pl_fromc_build(planner *p, const json_t *from, fromc *fc)
{
    size_t i;
    json_t *v;
    json_array_foreach(from, i, v) {
        fnode *f;
        HS_TRY(from_item(p, fc, v, &f));
        HS_TRY(push_ptr(p, &fc->items, &fc->n_items, f));
        HS_TRY(prepare_joins(p, f));
    }
    return HS_OK;
}


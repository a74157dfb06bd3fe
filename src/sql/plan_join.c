/*
 * sql/plan_join.c - WHERE conjuncts and joins: splitting WHERE into
 * conjuncts (OR factoring, derived per-table OR filters), pushing one-table
 * conjuncts into scan filter text, building scans, ON-condition pushdown,
 * hash/semi/anti/outer joins with the smaller side as the build side, the
 * index nested-loop join and the greedy join order over comma items
 * (pl_build_from).  The FROM tree it works on comes from plan_from.c.
 */
#include "sql/plan_int.h"

/* ------------------------------------------------------------------ */
/* WHERE conjuncts                                                     */



void  pl_conjs_free(conjs *c)
{
    for (int i = 0; i < c->n; i++) {
        hs_free(c->a[i].lset);
        json_decref(c->a[i].node);
    }
    hs_free(c->a);
    memset(c, 0, sizeof *c);
}

static void split_and(const json_t *j, json_t *arr);

/* Whether j calls a volatile function (two calls may differ, so equal
 * texts are not equal values) or holds a subquery. */
static pl_walk_res visit_volatile(const json_t *j, void *ctx)
{
    (void)ctx;
    json_t *b;
    if (json_object_size(j) == 1 && pl_is_kind(j, "SubLink", &b))
        return PL_STOP;
    if (json_object_size(j) == 1 && pl_is_kind(j, "FuncCall", &b)) {
        static const char *const vol[] = {"random", "gen_random_uuid", "uuid_generate_v4",
                                          "setseed", "nextval", "clock_timestamp",
                                          "timeofday", NULL};
        const char *fn = pl_func_name(b);
        for (int i = 0; fn && vol[i]; i++)
            if (!strcmp(fn, vol[i]))
                return PL_STOP;
    }
    return PL_DESCEND;
}

static bool volatile_node(const json_t *j, int depth)
{
    return pl_walk(j, visit_volatile, NULL, depth);
}

bool pl_volatile(const json_t *j) { return volatile_node(j, 0); }

static bool arr_has(const json_t *arr, const json_t *x)
{
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (pl_jeq(json_array_get(arr, i), x))
            return true;
    return false;
}

/* An OR whose branches share conjuncts: (A AND B) OR (A AND C) is
 * A AND (B OR C), and (A) OR (A AND C) is A (both hold in three-valued
 * logic: AND and OR form a distributive lattice over false < NULL < true).
 * Appends the common conjuncts and the OR of the rest to arr and returns
 * true; false (nothing appended) when the branches share nothing.  This
 * turns TPC-H Q19's p_partkey = l_partkey, repeated in each branch, into a
 * hash join key. */
static bool factor_or(json_t *args, json_t *arr)
{
    size_t n = json_array_size(args);
    if (n < 2 || n > 64)
        return false;
    json_t *br[64] = {0};
    json_t *common = json_array();
    bool ok = common != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        br[i] = json_array();
        ok = br[i] != NULL;
        if (ok)
            split_and(json_array_get(args, i), br[i]);
    }
    for (size_t k = 0; ok && k < json_array_size(br[0]); k++) {
        json_t *c = json_array_get(br[0], k);
        bool all = !volatile_node(c, 0) && !arr_has(common, c);
        for (size_t i = 1; all && i < n; i++)
            all = arr_has(br[i], c);
        if (all)
            ok = json_array_append(common, c) == 0;
    }
    bool done = false;
    if (ok && json_array_size(common) > 0) {
        json_t *ors = json_array();
        bool absorbed = false;
        for (size_t i = 0; ors && i < n && !absorbed; i++) {
            json_t *rest[256];
            int nr = 0;
            for (size_t k = 0; k < json_array_size(br[i]); k++) {
                json_t *c = json_array_get(br[i], k);
                if (!arr_has(common, c) && nr < 256)
                    rest[nr++] = c;
            }
            if (nr == 0) {
                absorbed = true;
                break;
            }
            if (nr == 256 || json_array_append_new(ors, pl_mk_and(rest, nr)) != 0) {
                json_decref(ors);
                ors = NULL;
            }
        }
        json_t *orn = NULL;
        if (ors && !absorbed)
            orn = json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop", "OR_EXPR", "args", ors,
                            "location", -1);
        if (ors && (absorbed || orn)) {
            for (size_t k = 0; k < json_array_size(common); k++)
                json_array_append(arr, json_array_get(common, k));
            if (orn)
                json_array_append(arr, orn);
            done = true;
        }
        json_decref(orn);
        json_decref(ors);
    }
    for (size_t i = 0; i < n; i++)
        json_decref(br[i]);
    json_decref(common);
    return done;
}

/* Splits an AND tree into conjuncts (new references appended to arr);
 * conjuncts common to every branch of an OR are factored out of it. */
static void split_and(const json_t *j, json_t *arr)
{
    json_t *b;
    if (!j)
        return;
    if (pl_is_kind(j, "BoolExpr", &b) && pl_jstrv(b, "boolop") && !strcmp(pl_jstrv(b, "boolop"), "AND_EXPR")) {
        size_t i;
        json_t *v;
        json_array_foreach(pl_jget(b, "args"), i, v)
            split_and(v, arr);
        return;
    }
    if (pl_is_kind(j, "BoolExpr", &b) && pl_jstrv(b, "boolop") && !strcmp(pl_jstrv(b, "boolop"), "OR_EXPR")
        && factor_or(pl_jget(b, "args"), arr))
        return;
    json_array_append(arr, (json_t *)j);
}

/* AND of the nodes (a new reference; NULL for none). */
json_t *pl_mk_and(json_t **nodes, int n)
{
    if (n == 0)
        return NULL;
    if (n == 1)
        return json_incref(nodes[0]);
    json_t *args = json_array();
    for (int i = 0; args && i < n; i++)
        json_array_append(args, nodes[i]);
    return json_pack("{s:{s:s,s:o,s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args", args,
                     "location", -1);
}

/* Walks ColumnRefs under j (not inside subqueries), recording leaves. */
static void conj_refs(const json_t *j, fnode **leaves, int n_leaves, conj *c, int depth)
{
    if (depth > 400 || !j)
        return;
    if (json_is_object(j)) {
        json_t *b;
        if (json_object_size(j) == 1 && pl_is_kind(j, "SubLink", &b)) {
            c->sub = true;
            conj_refs(pl_jget(b, "testexpr"), leaves, n_leaves, c, depth + 1);
            return;
        }
        if (json_object_size(j) == 1 && pl_is_kind(j, "ColumnRef", &b)) {
            const char *names[8];
            int n = pl_colref_names(b, names, 8);
            int col;
            if (n < 1 || !names[n - 1])
                return;
            int li = pl_leaf_find(leaves, n_leaves, names, n, &col);
            if (li >= 0) {
                if (!c->lset[li])
                    c->n_refs++;
                c->lset[li] = 1;
            } else if (li == -1) {
                c->outer = true;
            }
            return;
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            conj_refs(v, leaves, n_leaves, c, depth + 1);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            conj_refs(v, leaves, n_leaves, c, depth + 1);
    }
}

/* For an OR conjunct over several tables whose every branch has conjuncts
 * on one table T alone, the OR of those (per branch, ANDed) is implied
 * by it and reads T only: it is added as a conjunct of its own, so it is
 * pushed into T's scan (the OR itself stays).  TPC-H Q7's
 * (n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY') OR (n1.n_name =
 * 'GERMANY' AND n2.n_name = 'FRANCE') gives n1.n_name = 'FRANCE' OR
 * n1.n_name = 'GERMANY', and the same for n2. */
static hs_status derive_or_filters(planner *p, fromc *fc, conjs *out)
{
    int n0 = out->n;
    for (int ci = 0; ci < n0; ci++) {
        json_t *b;
        conj *c0 = &out->a[ci];
        if (c0->sub || c0->outer || c0->n_refs < 2 || !pl_is_kind(c0->node, "BoolExpr", &b)
            || !pl_jstrv(b, "boolop") || strcmp(pl_jstrv(b, "boolop"), "OR_EXPR"))
            continue;
        json_t *args = pl_jget(b, "args");
        size_t nb = json_array_size(args);
        if (nb < 2 || nb > 64)
            continue;
        for (int li = 0; li < fc->n_leaves; li++) {
            if (!out->a[ci].lset[li])
                continue;
            json_t *ors = json_array();
            if (!ors)
                return pl_nomem(p);
            bool all = true;
            for (size_t k = 0; all && k < nb; k++) {
                json_t *parts = json_array();
                if (!parts) {
                    json_decref(ors);
                    return pl_nomem(p);
                }
                split_and(json_array_get(args, k), parts);
                json_t *mine[64];
                int nm = 0;
                for (size_t q = 0; q < json_array_size(parts) && nm < 64; q++) {
                    json_t *x = json_array_get(parts, q);
                    conj t = {0};
                    t.lset = hs_calloc((size_t)fc->n_leaves + 1, 1);
                    if (!t.lset) {
                        json_decref(parts);
                        json_decref(ors);
                        return pl_nomem(p);
                    }
                    conj_refs(x, fc->leaves, fc->n_leaves, &t, 0);
                    if (!t.sub && !t.outer && t.n_refs == 1 && t.lset[li] && !volatile_node(x, 0))
                        mine[nm++] = x;
                    hs_free(t.lset);
                }
                all = nm > 0 && json_array_append_new(ors, pl_mk_and(mine, nm)) == 0;
                json_decref(parts);
            }
            json_t *node = NULL;
            if (all)
                node = json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop", "OR_EXPR", "args",
                                 ors, "location", -1);
            json_decref(ors);
            if (!node)
                continue;
            conj *na = hs_realloc(out->a, ((size_t)out->n + 1) * sizeof *na);
            if (!na) {
                json_decref(node);
                return pl_nomem(p);
            }
            out->a = na;
            conj *c = &out->a[out->n];
            memset(c, 0, sizeof *c);
            c->node = node;
            c->lset = hs_calloc((size_t)fc->n_leaves + 1, 1);
            if (!c->lset) {
                json_decref(node);
                return pl_nomem(p);
            }
            out->n++;
            conj_refs(c->node, fc->leaves, fc->n_leaves, c, 0);
        }
    }
    return HS_OK;
}

hs_status  pl_conjs_make(planner *p, const json_t *where, fromc *fc, conjs *out)
{
    json_t *arr = json_array();
    if (!arr)
        return pl_nomem(p);
    split_and(where, arr);
    size_t n = json_array_size(arr);
    out->a = hs_calloc(n + 1, sizeof *out->a);
    if (!out->a) {
        json_decref(arr);
        return pl_nomem(p);
    }
    for (size_t i = 0; i < n; i++) {
        conj *c = &out->a[out->n++];
        c->node = json_incref(json_array_get(arr, i));
        c->lset = hs_calloc((size_t)fc->n_leaves + 1, 1);
        if (!c->lset) {
            json_decref(arr);
            return pl_nomem(p);
        }
        conj_refs(c->node, fc->leaves, fc->n_leaves, c, 0);
    }
    json_decref(arr);
    return derive_or_filters(p, fc, out);
}

static int leaf_index(const fromc *fc, const fnode *f)
{
    for (int i = 0; i < fc->n_leaves; i++)
        if (fc->leaves[i] == f)
            return i;
    return -1;
}

/* Whether a conjunct keeps most rows (a negation: NOT ..., x <> c,
 * x NOT LIKE p, x IS NOT NULL), so that it barely lowers its table's row
 * estimate.  The others count as selective (a quarter kept).  Joins pick
 * their hash side by these estimates: Q13's o_comment NOT LIKE '...' made
 * orders (1.5M rows) look smaller than four customers (150K), so the join
 * hashed orders (256 MB) instead of customer. */
static bool conj_keeps_most(const json_t *node)
{
    json_t *b;
    if (pl_is_kind(node, "BoolExpr", &b)) {
        const char *t = json_string_value(json_object_get(b, "boolop"));
        return t && !strcmp(t, "NOT_EXPR");
    }
    if (pl_is_kind(node, "NullTest", &b)) {
        const char *t = json_string_value(json_object_get(b, "nulltesttype"));
        return t && !strcmp(t, "IS_NOT_NULL");
    }
    if (pl_is_kind(node, "A_Expr", &b)) {
        const char *op = sq_str(json_array_get(json_object_get(b, "name"), 0));
        return op && (!strcmp(op, "<>") || !strcmp(op, "!=") || !strcmp(op, "!~~") ||
                      !strcmp(op, "!~~*") || !strcmp(op, "!~") || !strcmp(op, "!~*"));
    }
    return false;
}

/* Adds conjunct node (reading the base table f only) to f's scan filter
 * text; *pushed false when its printed form is not text the scan's filter
 * parser reads back (it then stays a filter above the scan). */
static hs_status push_into_leaf(planner *p, fnode *f, const json_t *node, const char *clause,
                                bool *pushed)
{
    *pushed = false;
    scope sc;
    memset(&sc, 0, sizeof sc);
    sc.p = p;
    sc.layers[0] = (layer){f->ns, f->n_ns, 0};
    sc.n_layers = 1;
    sc.schema = &f->ts;
    sc.no_aggs = clause;
    ex_expr *e;
    HS_TRY(pl_bind_in(&sc, node, true, &e));
    char *txt = NULL;
    hs_status st = ex_format(e, &txt, p->err);
    ex_free(e);
    HS_TRY(st);
    ex_expr *chk = NULL;
    hs_error e2 = {0};
    if (ex_parse_filter(txt, &f->ts, &chk, &e2) != HS_OK) {
        hs_free(txt);
        return HS_OK;
    }
    ex_free(chk);
    if (f->filt.len)
        st = hs_buf_puts(&f->filt, " AND ");
    if (st == HS_OK)
        st = hs_buf_puts(&f->filt, txt);
    hs_free(txt);
    if (st != HS_OK)
        return pl_nomem(p);
    f->est = conj_keeps_most(node) ? f->est * 0.9 + 1 : f->est / 4 + 1;
    *pushed = true;
    return HS_OK;
}

/* Pushes the conjuncts that read one base table into its scan filter. */
hs_status  pl_push_filters(planner *p, fromc *fc, conjs *cs)
{
    for (int i = 0; i < cs->n; i++) {
        conj *c = &cs->a[i];
        if (c->sub || c->outer || c->n_refs != 1)
            continue;
        int li = 0;
        while (!c->lset[li])
            li++;
        fnode *f = fc->leaves[li];
        if (f->kind != F_TABLE || f->nullable)
            continue;
        bool pushed;
        HS_TRY(push_into_leaf(p, f, c->node, "WHERE", &pushed));
        c->used |= pushed;
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* scans and joins                                                     */

static hs_status build_leaf(planner *p, fnode *f, rel *out)
{
    memset(out, 0, sizeof *out);
    if (f->kind == F_REL) {
        for (int i = 0; i < f->rl.n && i < f->n_ns; i++)
            f->rl.cols[i].hidden = f->ns[i].hidden;
        *out = f->rl;
        memset(&f->rl, 0, sizeof f->rl);
        return HS_OK;
    }
    int n = f->ts.n_children;
    const char **cols = hs_calloc((size_t)n + 1, sizeof *cols);
    int *idx = hs_calloc((size_t)n + 1, sizeof *idx);
    if (!cols || !idx) {
        hs_free(cols);
        hs_free(idx);
        return pl_nomem(p);
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (pl_name_needed(p, f->ts.children[i].name) || pl_name_needed(p, f->ns[i].name)) {
            idx[k] = i;
            cols[k++] = f->ts.children[i].name;
        }
    if (k == 0 && n > 0) {
        idx[0] = 0;
        cols[k++] = f->ts.children[0].name;
    }
    hs_scan_options so = f->so;
    so.columns = cols;
    so.n_columns = k;
    so.filter = f->filt.len ? hs_buf_cstr(&f->filt) : NULL;
    hs_status st = xo_scan(p->ctx, f->t, &so, &out->op, p->err);
    hs_free(cols);
    if (st == HS_OK) {
        out->n = k;
        out->cols = hs_calloc((size_t)k + 1, sizeof *out->cols);
        if (!out->cols)
            st = pl_nomem(p);
        for (int i = 0; i < k && st == HS_OK; i++) {
            out->cols[i].qual = hs_strdup(f->alias);
            out->cols[i].name = hs_strdup(f->ns[idx[i]].name);
            out->cols[i].hidden = f->ns[idx[i]].hidden;
            if (!out->cols[i].qual || !out->cols[i].name)
                st = pl_nomem(p);
        }
    }
    hs_free(idx);
    if (st != HS_OK)
        pl_rel_clear(out);
    return st;
}

bool  pl_key_types_ok(const hs_field *a, const hs_field *b)
{
    if (pl_is_int_type(a->type) && pl_is_int_type(b->type))
        return true;
    return hs_field_same_type(a, b, true) && a->type != HS_TYPE_FLOAT16;
}

/* If c is `x = y` with x a column of l and y one of r (or swapped). */
static bool equi_cols(const json_t *c, const rel *l, const rel *r, int *lc, int *rc)
{
    json_t *b;
    if (!pl_is_kind(c, "A_Expr", &b) || strcmp(pl_jstrv(b, "kind") ? pl_jstrv(b, "kind") : "", "AEXPR_OP"))
        return false;
    json_t *nm = pl_jget(b, "name");
    if (json_array_size(nm) != 1 || !sq_str(json_array_get(nm, 0)) ||
        strcmp(sq_str(json_array_get(nm, 0)), "="))
        return false;
    json_t *x, *y;
    if (!pl_is_kind(pl_jget(b, "lexpr"), "ColumnRef", &x) || !pl_is_kind(pl_jget(b, "rexpr"), "ColumnRef", &y))
        return false;
    const char *nx[8], *ny[8];
    int n1 = pl_colref_names(x, nx, 8), n2 = pl_colref_names(y, ny, 8);
    if (n1 < 1 || n2 < 1 || !nx[n1 - 1] || !ny[n2 - 1])
        return false;
    layer L = {l->cols, l->n, 0}, R = {r->cols, r->n, 0};
    int a = pl_layer_find(&L, nx, n1), bb = pl_layer_find(&R, ny, n2);
    int a2 = pl_layer_find(&R, nx, n1), b2 = pl_layer_find(&L, ny, n2);
    if (a >= 0 && bb >= 0 && a2 < 0 && b2 < 0) {
        *lc = a;
        *rc = bb;
    } else if (a2 >= 0 && b2 >= 0 && a < 0 && bb < 0) {
        *lc = b2;
        *rc = a2;
    } else {
        return false;
    }
    return pl_key_types_ok(&l->op->schema.children[*lc], &r->op->schema.children[*rc]);
}

static xo_join_kind join_kind(const char *t)
{
    if (!strcmp(t, "JOIN_LEFT"))
        return XO_JOIN_LEFT;
    if (!strcmp(t, "JOIN_RIGHT"))
        return XO_JOIN_RIGHT;
    if (!strcmp(t, "JOIN_FULL"))
        return XO_JOIN_FULL;
    return XO_JOIN_INNER;
}

/* Output names of joining l and r (l's then r's; only l's for semi/anti). */
static hs_status join_names(planner *p, const rel *l, const rel *r, xo_join_kind kind, rel *out)
{
    int n = l->n + (kind == XO_JOIN_SEMI || kind == XO_JOIN_ANTI || kind == XO_JOIN_ANTI_NULL_AWARE ? 0 : r->n);
    out->cols = hs_calloc((size_t)n + 1, sizeof *out->cols);
    if (!out->cols)
        return pl_nomem(p);
    out->n = n;
    for (int i = 0; i < n; i++) {
        const qcol *c = i < l->n ? &l->cols[i] : &r->cols[i - l->n];
        out->cols[i].qual = pl_dup_or_null(c->qual);
        out->cols[i].name = hs_strdup(c->name ? c->name : "");
        out->cols[i].hidden = c->hidden;
        if ((c->qual && !out->cols[i].qual) || !out->cols[i].name)
            return pl_nomem(p);
    }
    return HS_OK;
}

/* Joins l and r (both taken) on conditions cond[0..n): equalities of
 * columns become hash keys (extra pairs lk/rk may be given), the rest a
 * residual.  *out gets the joined relation. */
hs_status  pl_join_rels(planner *p, rel *l, rel *r, xo_join_kind kind, json_t **cond, int n,
                           const int *xlk, const int *xrk, int nx, bool right_first, rel *out)
{
    memset(out, 0, sizeof *out);
    int *lk = hs_calloc((size_t)(n + nx) + 1, sizeof *lk);
    int *rk = hs_calloc((size_t)(n + nx) + 1, sizeof *rk);
    json_t **res = hs_calloc((size_t)n + 1, sizeof *res);
    hs_status st = lk && rk && res ? HS_OK : pl_nomem(p);
    int nk = 0, nr = 0;
    for (int i = 0; i < nx && st == HS_OK; i++) {
        lk[nk] = xlk[i];
        rk[nk++] = xrk[i];
    }
    for (int i = 0; i < n && st == HS_OK; i++) {
        int a, b;
        if (equi_cols(cond[i], l, r, &a, &b)) {
            lk[nk] = a;
            rk[nk++] = b;
        } else {
            res[nr++] = cond[i];
        }
    }
    ex_expr *resid = NULL;
    if (st == HS_OK && nr > 0) {
        json_t *all = pl_mk_and(res, nr);
        scope sc;
        st = all ? pl_scope_pair(&sc, p, l, r, right_first) : pl_nomem(p);
        if (st == HS_OK) {
            sc.no_aggs = "JOIN conditions";
            st = pl_bind_in(&sc, all, true, &resid);
        }
        json_decref(all);
    }
    if (st == HS_OK)
        st = join_names(p, l, r, kind, out);
    if (st == HS_OK) {
        xo_op *lo = l->op, *ro = r->op;
        l->op = r->op = NULL;
        if (nk > 0)
            st = xo_hashjoin(lo, ro, kind, nk, lk, rk, resid, &out->op, p->err);
        else
            st = xo_nljoin(lo, ro, kind, resid, &out->op, p->err);
        resid = NULL;
    }
    ex_free(resid);
    hs_free(lk);
    hs_free(rk);
    hs_free(res);
    pl_rel_clear(l);
    pl_rel_clear(r);
    if (st != HS_OK)
        pl_rel_clear(out);
    return st;
}

/* Positional references "\x01<n>" in a JSON template (merge_using). */
static int pos_name_column(void *ctx, const char *const *names, int n)
{
    (void)ctx;
    const char *nm = names[n - 1];
    return nm && nm[0] == '\x01' ? atoi(nm + 1) : -1;
}

/* RIGHT/FULL JOIN ... USING (c): the visible c is COALESCE(left.c,
 * right.c) at the left column's place (PostgreSQL's merged column; * keeps
 * the left table's column order); the originals stay reachable qualified. */
static hs_status merge_using(planner *p, rel *r, int nl, const json_t *using)
{
    int n = r->n, nu = (int)json_array_size(using);
    ex_expr **ex = hs_calloc((size_t)(n + nu) + 1, sizeof *ex);
    const char **names = hs_calloc((size_t)(n + nu) + 1, sizeof *names);
    qcol *cols = hs_calloc((size_t)(n + nu) + 1, sizeof *cols);
    hs_status st = ex && names && cols ? HS_OK : pl_nomem(p);
    int k = 0, extra = n;
    for (int i = 0; i < n && st == HS_OK; i++) {
        const qcol *c = &r->cols[i];
        int ui = -1, rc = -1;
        for (int u = 0; i < nl && u < nu && ui < 0; u++)
            if (pl_name_eq(sq_str(json_array_get(using, (size_t)u)), c->name) && !c->hidden)
                ui = u;
        for (int j = nl; ui >= 0 && j < n && rc < 0; j++)
            if (pl_name_eq(r->cols[j].name, c->name) && r->cols[j].hidden)
                rc = j;
        if (ui >= 0 && rc >= 0) {
            char a[24], b[24];
            snprintf(a, sizeof a, "\x01%d", i);
            snprintf(b, sizeof b, "\x01%d", rc);
            json_t *co = json_pack("{s:{s:[{s:{s:[{s:{s:s}}],s:i}},{s:{s:[{s:{s:s}}],s:i}}],s:i}}",
                                   "CoalesceExpr", "args", "ColumnRef", "fields", "String", "sval",
                                   a, "location", -1, "ColumnRef", "fields", "String", "sval", b,
                                   "location", -1, "location", -1);
            ex_scope es = {.schema = &r->op->schema, .column = pos_name_column};
            st = co ? ex_bind_json(co, p->text, &es, false, &ex[k], p->err) : pl_nomem(p);
            json_decref(co);
            cols[k] = (qcol){NULL, hs_strdup(c->name), false};
            names[k++] = c->name;
            /* the original, qualified only */
            if (st == HS_OK)
                st = pl_col_expr(p, &r->op->schema, i, &ex[extra]);
            cols[extra] = (qcol){pl_dup_or_null(c->qual), hs_strdup(c->name), true};
            names[extra++] = c->name;
            continue;
        }
        st = pl_col_expr(p, &r->op->schema, i, &ex[k]);
        cols[k] = (qcol){pl_dup_or_null(c->qual), hs_strdup(c->name), c->hidden};
        names[k++] = c->name;
    }
    /* move the originals after the right columns' slots: k == n here */
    xo_op *op = NULL;
    if (st == HS_OK) {
        st = xo_project(r->op, extra, ex, names, &op, p->err);
        r->op = NULL;
        for (int i = 0; i < extra; i++)
            ex[i] = NULL;
    }
    for (int i = 0; ex && i < n + nu; i++)
        ex_free(ex[i]);
    hs_free(ex);
    hs_free(names);
    if (st != HS_OK) {
        pl_qcols_free(cols, n + nu);
        return st;
    }
    pl_qcols_free(r->cols, r->n);
    r->op = op;
    r->cols = cols;
    r->n = extra;
    return HS_OK;
}

static double item_est(fnode *f);

/* join_rels with the smaller side (by estimate) as the hash table: when the
 * left is much smaller, the sides swap (LEFT <-> RIGHT) and a projection
 * restores the column order. */
static hs_status join_sides(planner *p, rel *l, rel *r, xo_join_kind kind, json_t **cond, int n,
                            const int *lk, const int *rk, int nk, double lest, double rest,
                            rel *out)
{
    if (!(lest * 4 < rest) || kind == XO_JOIN_SEMI || kind == XO_JOIN_ANTI ||
        kind == XO_JOIN_ANTI_NULL_AWARE || (nk == 0 && n == 0))
        return pl_join_rels(p, l, r, kind, cond, n, lk, rk, nk, false, out);
    xo_join_kind sk = kind == XO_JOIN_LEFT ? XO_JOIN_RIGHT : kind == XO_JOIN_RIGHT ? XO_JOIN_LEFT : kind;
    int nl = l->n, nr = r->n;
    rel sw;
    HS_TRY(pl_join_rels(p, r, l, sk, cond, n, rk, lk, nk, false, &sw));
    int tot = nl + nr;
    int *src = hs_calloc((size_t)tot + 1, sizeof *src);
    ex_expr **ex = hs_calloc((size_t)tot + 1, sizeof *ex);
    const char **names = hs_calloc((size_t)tot + 1, sizeof *names);
    qcol *cols = hs_calloc((size_t)tot + 1, sizeof *cols);
    hs_status st = src && ex && names && cols ? HS_OK : pl_nomem(p);
    for (int i = 0; i < tot && st == HS_OK; i++) {
        int from = i < nl ? nr + i : i - nl;
        src[i] = from;
        names[i] = sw.op->schema.children[from].name;
        cols[i] = sw.cols[from];
        sw.cols[from] = (qcol){0};
    }
    xo_op *op = NULL;
    if (st == HS_OK) {
        st = pl_project_mixed(p, sw.op, tot, src, ex, names, &op);
        sw.op = NULL;
    }
    hs_free(src);
    hs_free(ex);
    hs_free(names);
    pl_rel_clear(&sw);
    if (st != HS_OK) {
        pl_qcols_free(cols, tot);
        return st;
    }
    out->op = op;
    out->cols = cols;
    out->n = tot;
    return HS_OK;
}

/* Which side of a join an ON conjunct reads: 1 only l's columns, 2 only
 * r's, 0 both, none, an unknown or ambiguous name, or a subquery. */
static void on_side_walk(const json_t *j, const rel *l, const rel *r, int *mask, int depth)
{
    if (!j || depth > 400 || *mask & 4)
        return;
    if (json_is_object(j)) {
        json_t *b;
        if (json_object_size(j) == 1 && pl_is_kind(j, "SubLink", NULL)) {
            *mask |= 4;
            return;
        }
        if (json_object_size(j) == 1 && pl_is_kind(j, "ColumnRef", &b)) {
            const char *names[8];
            int n = pl_colref_names(b, names, 8);
            if (n < 1 || !names[n - 1]) {
                *mask |= 4;
                return;
            }
            layer L = {l->cols, l->n, 0}, R = {r->cols, r->n, 0};
            int a = pl_layer_find(&L, names, n), c = pl_layer_find(&R, names, n);
            if (a == -2 || c == -2 || (a >= 0) == (c >= 0))
                *mask |= 4;
            else
                *mask |= a >= 0 ? 1 : 2;
            return;
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            on_side_walk(v, l, r, mask, depth + 1);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            on_side_walk(v, l, r, mask, depth + 1);
    }
}

static int on_side(const json_t *c, const rel *l, const rel *r)
{
    int mask = 0;
    on_side_walk(c, l, r, &mask, 0);
    return mask == 1 ? 1 : mask == 2 ? 2 : 0;
}


/* The conjuncts side[0..*n) of an ON clause that read the side only and
 * filter it before the join: when the side is a base table (fnode f, its
 * scan x built already), those whose text the scan's filter reads move
 * into the scan (rebuilt with them: pruning, sidecar indexes, the scan's
 * threads); side[] keeps the others. */
static hs_status push_on_into_scan(planner *p, fnode *f, rel *x, json_t **side, int *n)
{
    if (*n == 0 || !f || f->kind != F_TABLE)
        return HS_OK;
    int k = 0;
    bool any = false;
    for (int i = 0; i < *n; i++) {
        bool pushed = false;
        if (!volatile_node(side[i], 0))
            HS_TRY(push_into_leaf(p, f, side[i], "JOIN conditions", &pushed));
        any |= pushed;
        if (!pushed)
            side[k++] = side[i];
    }
    *n = k;
    if (!any)
        return HS_OK;
    pl_rel_clear(x);
    return build_leaf(p, f, x);
}

/* ON conjuncts that read one side only and may filter that side before
 * the join: the inner side of a LEFT/RIGHT join (it only decides which of
 * its rows match; TPC-H Q13's o_comment NOT LIKE ... under customer LEFT
 * JOIN orders), either side of an INNER join; into the side's scan when it
 * is a base table.  The rest is left in c. */
static hs_status push_on_conds(planner *p, xo_join_kind jk, fnode *fl, fnode *fr, rel *l, rel *r,
                               json_t **c, int *n)
{
    if (jk == XO_JOIN_FULL)
        return HS_OK;
    json_t **ls = hs_calloc((size_t)*n + 1, sizeof *ls), **rs = hs_calloc((size_t)*n + 1, sizeof *rs);
    if (!ls || !rs) {
        hs_free(ls);
        hs_free(rs);
        return pl_nomem(p);
    }
    int nl = 0, nr = 0, k = 0;
    for (int i = 0; i < *n; i++) {
        int side = on_side(c[i], l, r);
        if (side == 1 && (jk == XO_JOIN_INNER || jk == XO_JOIN_RIGHT))
            ls[nl++] = c[i];
        else if (side == 2 && (jk == XO_JOIN_INNER || jk == XO_JOIN_LEFT))
            rs[nr++] = c[i];
        else
            c[k++] = c[i];
    }
    *n = k;
    hs_status st = push_on_into_scan(p, fl, l, ls, &nl);
    if (st == HS_OK)
        st = push_on_into_scan(p, fr, r, rs, &nr);
    if (st == HS_OK)
        st = pl_filter_rel(p, l, ls, nl, NULL, NULL, 0, "JOIN conditions");
    if (st == HS_OK)
        st = pl_filter_rel(p, r, rs, nr, NULL, NULL, 0, "JOIN conditions");
    hs_free(ls);
    hs_free(rs);
    return st;
}

static hs_status build_fnode(planner *p, fnode *f, rel *out)
{
    if (f->kind != F_JOIN)
        return build_leaf(p, f, out);
    rel l = {0}, r = {0};
    hs_status st = build_fnode(p, f->l, &l);
    if (st == HS_OK)
        st = build_fnode(p, f->r, &r);
    json_t *arr = json_array();
    if (st == HS_OK && !arr)
        st = pl_nomem(p);
    if (st == HS_OK)
        split_and(f->quals, arr);
    int nu = (int)json_array_size(f->using);
    int *lk = hs_calloc((size_t)nu + 1, sizeof *lk), *rk = hs_calloc((size_t)nu + 1, sizeof *rk);
    if (st == HS_OK && (!lk || !rk))
        st = pl_nomem(p);
    for (int i = 0; i < nu && st == HS_OK; i++) {
        const char *nm = sq_str(json_array_get(f->using, (size_t)i));
        layer L = {l.cols, l.n, 0};
        lk[i] = nm ? pl_layer_find(&L, &nm, 1) : -1;
        rk[i] = -1;
        for (int c = 0; nm && c < r.n; c++)
            if (pl_name_eq(r.cols[c].name, nm) && (rk[i] < 0 || r.cols[c].hidden))
                rk[i] = c;
        if (lk[i] < 0 || rk[i] < 0)
            st = pl_fail(p, HS_NOT_FOUND, "42703", f->loc,
                      "column \"%s\" specified in USING clause does not exist", nm ? nm : "?");
        else if (!pl_key_types_ok(&l.op->schema.children[lk[i]], &r.op->schema.children[rk[i]]))
            st = pl_fail(p, HS_INVALID, "42804", f->loc, "JOIN/USING types for column \"%s\" differ", nm);
    }
    int nl = l.n;
    if (st == HS_OK) {
        size_t n = json_array_size(arr);
        json_t **c = hs_calloc(n + 1, sizeof *c);
        if (!c)
            st = pl_nomem(p);
        for (size_t i = 0; c && i < n; i++)
            c[i] = json_array_get(arr, i);
        int nc = (int)n;
        if (st == HS_OK)
            st = push_on_conds(p, join_kind(f->jtype), f->l, f->r, &l, &r, c, &nc);
        if (st == HS_OK)
            st = join_sides(p, &l, &r, join_kind(f->jtype), c, nc, lk, rk, nu,
                            item_est(f->l), item_est(f->r), out);
        hs_free(c);
    }
    hs_free(lk);
    hs_free(rk);
    json_decref(arr);
    pl_rel_clear(&l);
    pl_rel_clear(&r);
    xo_join_kind jk = join_kind(f->jtype);
    if (st == HS_OK && nu > 0 && (jk == XO_JOIN_RIGHT || jk == XO_JOIN_FULL))
        st = merge_using(p, out, nl, f->using);
    if (st == HS_OK && f->jalias)
        for (int i = 0; i < out->n; i++) {
            hs_free(out->cols[i].qual);
            out->cols[i].qual = hs_strdup(f->jalias);
        }
    return st;
}

static double item_est(fnode *f)
{
    if (f->kind == F_TABLE)
        return f->est;
    if (f->kind == F_REL)
        return 1000;
    double a = item_est(f->l), b = item_est(f->r);
    return a > b ? a : b;
}

/* Whether a FROM item has a table with filters pushed into its scan. */
static bool item_filtered(const fnode *f)
{
    if (f->kind == F_TABLE)
        return f->filt.len > 0;
    if (f->kind == F_JOIN)
        return item_filtered(f->l) || item_filtered(f->r);
    return false;
}

/* Whether conjunct c reads only leaves in the item set inset (leaf -> item). */
static bool covered(const conj *c, const fromc *fc, const int *leaf_item, const unsigned char *inset)
{
    for (int i = 0; i < fc->n_leaves; i++)
        if (c->lset[i] && !inset[leaf_item[i]])
            return false;
    return true;
}

/* Index nested-loop join: when the joined item is a table with a scalar
 * index on the key column of an equality with the (much smaller, at most
 * INDEX_JOIN_MAX rows estimated) current side, the current side's keys go
 * into the table's scan as an IN list (xo_index_join), so pruning and the
 * sidecar index select the rows.  Other conditions filter the result.
 * *done = false leaves the join to join_rels (nothing taken then). */
static hs_status index_join_try(planner *p, rel *cur, double cur_est, fnode *f, rel *r, double r_est,
                                json_t **cond, int n, rel *out, bool *done)
{
    *done = false;
    if (f->kind != F_TABLE || cur_est > INDEX_JOIN_MAX || r_est < 10 * cur_est || n == 0)
        return HS_OK;
    int key = -1, lc = -1, rc = -1;
    for (int i = 0; i < n && key < 0; i++)
        if (equi_cols(cond[i], cur, r, &lc, &rc)) {
            hs_type lt = cur->op->schema.children[lc].type, rt = r->op->schema.children[rc].type;
            if ((pl_is_int_type(lt) && pl_is_int_type(rt)) || (lt == HS_TYPE_STRING && rt == HS_TYPE_STRING))
                key = i;
        }
    if (key < 0)
        return HS_OK;
    /* the table column of rc */
    const char *tcol = NULL;
    for (int k = 0; k < f->n_ns && !tcol; k++)
        if (pl_name_eq(f->ns[k].name, r->cols[rc].name))
            tcol = f->ts.children[k].name;
    char *js = NULL;
    hs_error e2 = {0};
    if (!tcol || hs_table_list_indexes(f->t, &js, &e2) != HS_OK)
        return HS_OK;
    json_t *arr = hs_json_loads(js, 0, NULL);
    hs_string_free(js);
    bool indexed = false;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *c = pl_jstrv(v, "column"), *kind = pl_jstrv(v, "kind");
        if (c && kind && !strcmp(c, tcol) && strncmp(kind, "hnsw", 4) && strncmp(kind, "ivf", 3))
            indexed = true;
    }
    json_decref(arr);
    if (!indexed)
        return HS_OK;
    /* the same columns the scan of r reads */
    const char **cols = hs_calloc((size_t)r->n + 1, sizeof *cols);
    if (!cols)
        return pl_nomem(p);
    for (int c = 0; c < r->n; c++)
        for (int k = 0; k < f->n_ns; k++)
            if (pl_name_eq(f->ns[k].name, r->cols[c].name))
                cols[c] = f->ts.children[k].name;
    hs_scan_options so = f->so;
    so.columns = cols;
    so.n_columns = r->n;
    so.filter = f->filt.len ? hs_buf_cstr(&f->filt) : NULL;
    memset(out, 0, sizeof *out);
    hs_status st = join_names(p, cur, r, XO_JOIN_INNER, out);
    if (st == HS_OK) {
        xo_op *l = cur->op;
        cur->op = NULL;
        st = xo_index_join(l, lc, f->t, &so, tcol, XO_JOIN_INNER, &out->op, p->err);
    }
    hs_free(cols);
    pl_rel_clear(cur);
    pl_rel_clear(r);
    *done = true;
    if (st == HS_OK && n > 1) {
        json_t **rest = hs_calloc((size_t)n, sizeof *rest);
        int nr = 0;
        for (int k = 0; rest && k < n; k++)
            if (k != key)
                rest[nr++] = cond[k];
        st = rest ? pl_filter_rel(p, out, rest, nr, NULL, NULL, 0, "WHERE") : pl_nomem(p);
        hs_free(rest);
    }
    if (st != HS_OK)
        pl_rel_clear(out);
    return st;
}

/* Joins the FROM items with the remaining (not pushed, subquery-free)
 * conjuncts; *out is the whole FROM. */
hs_status  pl_build_from(planner *p, fromc *fc, conjs *cs, rel *out)
{
    memset(out, 0, sizeof *out);
    int n = fc->n_items;
    if (n == 0) {
        /* no FROM: one row of no columns */
        hs_field sch;
        hs_field_init(&sch, "", HS_TYPE_STRUCT, false);
        hs_batch *b = NULL;
        hs_status st = hs_batch_create(&sch, 1, &b, p->err);
        if (st == HS_OK) {
            b->n_rows = 1;
            st = xo_values(p->ctx, &sch, 1, &b, &out->op, p->err);
        }
        hs_field_clear(&sch);
        return st;
    }
    int *leaf_item = hs_calloc((size_t)fc->n_leaves + 1, sizeof *leaf_item);
    unsigned char *inset = hs_calloc((size_t)n + 1, 1);
    rel *items = hs_calloc((size_t)n + 1, sizeof *items);
    double *est = hs_calloc((size_t)n + 1, sizeof *est);
    hs_status st = leaf_item && inset && items && est ? HS_OK : pl_nomem(p);
    for (int i = 0; i < n && st == HS_OK; i++) {
        fnode *lv[256];
        int nl = 0;
        pl_leaves_of(fc->items[i], lv, &nl);
        for (int k = 0; k < nl; k++)
            leaf_item[leaf_index(fc, lv[k])] = i;
        est[i] = item_est(fc->items[i]);
        st = build_fnode(p, fc->items[i], &items[i]);
    }
    /* uncorrelated [NOT] EXISTS / IN whose operand reads one item: that
     * item's semi/anti join, before the items join (TPC-H Q18's
     * o_orderkey IN (...) cuts orders to 57 rows before lineitem joins) */
    for (int i = 0; i < cs->n && st == HS_OK && n > 1; i++) {
        conj *c = &cs->a[i];
        if (c->used || !c->sub || c->outer || c->n_refs == 0)
            continue;
        int it = -1;
        bool one = true;
        for (int k = 0; k < fc->n_leaves; k++)
            if (c->lset[k]) {
                one &= it < 0 || it == leaf_item[k];
                it = leaf_item[k];
            }
        bool ok = false;
        if (one && it >= 0)
            st = pl_sub_pushable(p, c->node, &ok);
        if (st == HS_OK && ok) {
            st = pl_apply_sub_conj(p, &items[it], c->node);
            c->used = true;
            est[it] = est[it] / 4 + 1;
        }
    }
    int start = 0;
    for (int i = 1; i < n; i++)
        if (est[i] > est[start])
            start = i;
    double cur_est = est ? est[start] : 0;
    int *sizes = hs_calloc((size_t)n + 1, sizeof *sizes), *order = hs_calloc((size_t)n + 1, sizeof *order);
    if (st == HS_OK && (!sizes || !order))
        st = pl_nomem(p);
    for (int i = 0; st == HS_OK && i < n; i++)
        sizes[i] = items[i].n;
    if (st == HS_OK) {
        order[0] = start;
        *out = items[start];
        memset(&items[start], 0, sizeof items[start]);
        inset[start] = 1;
    }
    for (int step = 1; step < n && st == HS_OK; step++) {
        int best = -1;
        bool best_conn = false, best_filt = false;
        int best_nb = -1;
        for (int j = 0; j < n; j++) {
            if (inset[j])
                continue;
            bool conn = false;
            for (int i = 0; i < cs->n && !conn; i++) {
                conj *c = &cs->a[i];
                int a, b;
                if (c->used || c->sub || c->outer)
                    continue;
                inset[j] = 1;
                bool cov = covered(c, fc, leaf_item, inset);
                inset[j] = 0;
                conn = cov && equi_cols(c->node, out, &items[j], &a, &b);
            }
            /* connected first; then items with pushed filters (a join with
             * an unfiltered table on its key rarely cuts rows: TPC-H Q9's
             * part with p_name LIKE comes before supplier), smallest first */
            bool filt = item_filtered(fc->items[j]);
            int nbj = -1;
            /* or one join away from a filtered item not joined yet (a
             * dimension chain: TPC-H Q21's supplier before nation's
             * n_name = '...') */
            for (int i = 0; i < cs->n && !filt; i++) {
                conj *c = &cs->a[i];
                if (c->used || c->sub || c->outer || c->n_refs != 2)
                    continue;
                int it[2], m = 0;
                for (int k = 0; k < fc->n_leaves && m < 2; k++)
                    if (c->lset[k])
                        it[m++] = leaf_item[k];
                if (m == 2 && (it[0] == j || it[1] == j)) {
                    int o = it[0] == j ? it[1] : it[0];
                    filt = o != j && !inset[o] && item_filtered(fc->items[o]);
                    if (filt)
                        nbj = o;
                }
            }
            if (best < 0 || (conn && !best_conn) ||
                (conn == best_conn && filt && !best_filt) ||
                (conn == best_conn && filt == best_filt && est[j] < est[best])) {
                best = j;
                best_conn = conn;
                best_filt = filt;
                best_nb = nbj;
            }
        }
        inset[best] = 1;
        order[step] = best;
        json_t **cond = hs_calloc((size_t)cs->n + 1, sizeof *cond);
        int nc = 0;
        if (!cond) {
            st = pl_nomem(p);
            break;
        }
        /* chosen for a filtered neighbor (a dimension chain, TPC-H Q11's
         * supplier and nation): the two join each other first, and the
         * joined pair is the build side */
        bool paired = false;
        if (best_nb >= 0 && best_conn && !inset[best_nb] && step + 1 < n) {
            unsigned char *pin = hs_calloc((size_t)n + 1, 1);
            if (!pin) {
                hs_free(cond);
                st = pl_nomem(p);
                break;
            }
            pin[best] = pin[best_nb] = 1;
            int npc = 0;
            for (int i = 0; i < cs->n; i++) {
                conj *c = &cs->a[i];
                if (c->used || c->sub || c->outer || c->n_refs == 0 || !covered(c, fc, leaf_item, pin))
                    continue;
                cond[npc++] = c->node;
                c->used = true;
            }
            hs_free(pin);
            rel pr;
            st = pl_join_rels(p, &items[best], &items[best_nb], XO_JOIN_INNER, cond, npc, NULL, NULL,
                              0, false, &pr);
            if (st != HS_OK) {
                hs_free(cond);
                break;
            }
            items[best] = pr;
            inset[best_nb] = 1;
            order[++step] = best_nb;
            est[best] = est[best] / 4 + 1;
            paired = true;
        }
        for (int i = 0; i < cs->n; i++) {
            conj *c = &cs->a[i];
            if (c->used || c->sub || c->outer || c->n_refs == 0 || !covered(c, fc, leaf_item, inset))
                continue;
            cond[nc++] = c->node;
            c->used = true;
        }
        rel joined;
        bool done = false;
        if (!paired)
            st = index_join_try(p, out, cur_est, fc->items[best], &items[best], est[best], cond, nc,
                                &joined, &done);
        if (st == HS_OK && !done && step == 1 && !paired) {
            /* the small item probes the first (largest) table through its index */
            st = index_join_try(p, &items[best], est[best], fc->items[start], out, cur_est, cond, nc,
                                &joined, &done);
            if (st == HS_OK && done) {
                order[0] = best;
                order[1] = start;
            }
        }
        if (st == HS_OK && !done)
            st = pl_join_rels(p, out, &items[best], XO_JOIN_INNER, cond, nc, NULL, NULL, 0, false, &joined);
        cur_est = cur_est > est[best] ? cur_est : est[best];
        hs_free(cond);
        if (st == HS_OK)
            *out = joined;
    }
    /* the columns in FROM order (what * expands to), whatever the join order */
    bool moved = false;
    for (int k = 0; st == HS_OK && k < n; k++)
        moved |= order[k] != k;
    if (st == HS_OK && moved) {
        int tot = out->n, *src = hs_calloc((size_t)tot + 1, sizeof *src);
        ex_expr **ex = hs_calloc((size_t)tot + 1, sizeof *ex);
        const char **names = hs_calloc((size_t)tot + 1, sizeof *names);
        qcol *cols = hs_calloc((size_t)tot + 1, sizeof *cols);
        st = src && ex && names && cols ? HS_OK : pl_nomem(p);
        int o = 0;
        for (int i = 0; st == HS_OK && i < n; i++) {
            int base = 0;
            for (int k = 0; order[k] != i; k++)
                base += sizes[order[k]];
            for (int c = 0; c < sizes[i]; c++, o++) {
                src[o] = base + c;
                names[o] = out->op->schema.children[base + c].name;
                cols[o] = out->cols[base + c];
                out->cols[base + c] = (qcol){0};
            }
        }
        if (st == HS_OK && o == tot) {
            xo_op *op;
            st = pl_project_mixed(p, out->op, tot, src, ex, names, &op);
            out->op = st == HS_OK ? op : NULL;
            pl_qcols_free(out->cols, out->n);
            out->cols = cols;
            cols = NULL;
        } else if (st == HS_OK) {
            st = pl_fail(p, HS_INTERNAL, "XX000", -1, "join column bookkeeping: %d of %d columns", o, tot);
        }
        if (cols)
            pl_qcols_free(cols, tot);
        hs_free(src);
        hs_free(ex);
        hs_free(names);
    }
    hs_free(sizes);
    hs_free(order);
    for (int i = 0; i < n && items; i++)
        pl_rel_clear(&items[i]);
    hs_free(items);
    hs_free(est);
    hs_free(inset);
    hs_free(leaf_item);
    if (st != HS_OK)
        pl_rel_clear(out);
    return st;
}


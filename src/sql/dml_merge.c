/*
 * sql/dml_merge.c - MERGE INTO target USING source ON cond WHEN ...
 *
 * MERGE follows PostgreSQL 15: for each source row, the target rows joined
 * by ON are MATCHED; the first WHEN MATCHED clause whose AND condition
 * holds acts (UPDATE / DELETE / DO NOTHING); a source row without matches
 * takes the first WHEN NOT MATCHED clause that holds (INSERT / DO NOTHING).
 * A target row updated or deleted by two source rows is 21000 ("MERGE
 * command cannot affect row a second time").  UPDATE ... FROM with several
 * matching source rows uses one of them (PostgreSQL: unspecified which).
 *
 * The target and the source are read and joined by dml_rows.c
 * (dml_open_joined, dml_join_pairs_sub); the pairs a clause acts on are
 * deleted, updated (dml_write_updates) or inserted (dml_add_rows) in the
 * statement's transaction (dml.c).
 */
#include "sql/dml_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- MERGE ---- */

enum { ACT_NONE = -1 };

hs_status dml_exec_merge(dctx *c, txn *x, json_t *body, int64_t *count, hs_error *err)
{
    HS_TRY(dml_no_returning(c, body, err));
    target g;
    dscope sc = {0};
    hs_batch *S = NULL, *pb = NULL;
    hs_buf lo = {0}, ro = {0};
    json_t *clauses = json_object_get(body, "mergeWhenClauses");
    size_t n_cl = json_array_size(clauses);
    json_t *items = json_array();
    hs_status st = items ? HS_OK : hs_err_nomem(err, 64);
    memset(&g, 0, sizeof g);
    if (st == HS_OK && json_array_append(items, json_object_get(body, "sourceRelation")) != 0)
        st = hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = dml_open_joined(c, x, json_object_get(body, "relation"), items, "MERGE ... USING",
                         json_object_get(body, "joinCondition"), &g, &sc, &S, err);
    json_decref(items);
    if (st == HS_OK)
        st = dml_join_pairs_sub(c, &sc, g.rows, S, json_object_get(body, "joinCondition"), &lo, &ro, err);
    int64_t n_pairs = (int64_t)HS_VEC_LEN(&lo, int64_t);
    /* unmatched source rows: pairs with a null target */
    uint8_t *src_matched = st == HS_OK ? hs_calloc((size_t)S->n_rows + 1, 1) : NULL;
    if (st == HS_OK && !src_matched)
        st = hs_err_nomem(err, (size_t)S->n_rows);
    for (int64_t k = 0; st == HS_OK && k < n_pairs; k++)
        src_matched[HS_VEC_AT(&ro, int64_t, k)] = 1;
    hs_buf ul = {0}, ur = {0};
    for (int64_t j = 0; st == HS_OK && S && j < S->n_rows; j++)
        if (!src_matched[j] &&
            (HS_VEC_PUSH(&ul, int64_t, -1) != HS_OK || HS_VEC_PUSH(&ur, int64_t, j) != HS_OK))
            st = hs_err_nomem(err, 8);
    int64_t n_un = (int64_t)HS_VEC_LEN(&ul, int64_t);
    hs_batch *ub = NULL;
    if (st == HS_OK)
        st = dml_pair_batch(&sc, g.rows, S, (const int64_t *)lo.data, (const int64_t *)ro.data,
                        n_pairs, &pb, err);
    if (st == HS_OK)
        st = dml_pair_batch(&sc, g.rows, S, (const int64_t *)ul.data, (const int64_t *)ur.data, n_un,
                        &ub, err);
    /* 1. which clause acts on each pair / unmatched source row */
    int *act_m = st == HS_OK ? hs_malloc((size_t)n_pairs * sizeof(int) + 4) : NULL;
    int *act_u = st == HS_OK ? hs_malloc((size_t)n_un * sizeof(int) + 4) : NULL;
    uint8_t *und = st == HS_OK ? hs_malloc((size_t)(n_pairs > n_un ? n_pairs : n_un) + 1) : NULL;
    uint8_t *sel = st == HS_OK ? hs_malloc((size_t)(n_pairs > n_un ? n_pairs : n_un) + 1) : NULL;
    if (st == HS_OK && (!act_m || !act_u || !und || !sel))
        st = hs_err_nomem(err, (size_t)n_pairs * 4);
    for (int pass = 0; st == HS_OK && pass < 2; pass++) {
        bool matched = pass == 0;
        int64_t n = matched ? n_pairs : n_un;
        int *act = matched ? act_m : act_u;
        hs_batch *b = matched ? pb : ub;
        for (int64_t i = 0; i < n; i++) {
            act[i] = ACT_NONE;
            und[i] = 1;
        }
        for (size_t k = 0; st == HS_OK && k < n_cl && n > 0; k++) {
            const char *kind;
            json_t *cb;
            (void)sq_node(json_array_get(clauses, k), &kind, &cb);
            if (json_is_true(json_object_get(cb, "matched")) != matched)
                continue;
            json_t *cond = json_object_get(cb, "condition");
            int64_t m = 0;
            if (cond && dml_has_sublink(cond, 0)) {
                /* subqueries reading the pair: per row (planner) */
                hs_column *v = NULL;
                st = dml_eval_with_sublinks(c, &sc, b, cond, &v, err);
                if (st == HS_OK && v->type != HS_TYPE_BOOL)
                    st = FAIL(c, HS_INVALID, "42804", -1, "argument of WHEN must be type boolean");
                for (int64_t i = 0; st == HS_OK && i < n; i++)
                    sel[i] = und[i] && hs_col_is_valid(v, i) && hs_bit_get(v->values.data, i);
                hs_col_free(v);
            } else if (cond) {
                ex_scope scope = dml_scope_of(&sc);
                ex_expr *e = NULL;
                st = ex_bind_json(cond, c->text, &scope, true, &e, err);
                if (st == HS_OK)
                    st = ex_eval_filter(e, b, und, sel, &m, err);
                ex_free(e);
            } else {
                memcpy(sel, und, (size_t)n);
            }
            for (int64_t i = 0; st == HS_OK && i < n; i++)
                if (sel[i]) {
                    act[i] = (int)k;
                    und[i] = 0;
                }
        }
    }
    /* 2. a target row acted on twice */
    uint8_t *hit = st == HS_OK ? hs_calloc((size_t)g.rows->n_rows + 1, 1) : NULL;
    if (st == HS_OK && !hit)
        st = hs_err_nomem(err, (size_t)g.rows->n_rows);
    for (int64_t i = 0; st == HS_OK && i < n_pairs; i++) {
        if (act_m[i] == ACT_NONE)
            continue;
        const char *kind;
        json_t *cb;
        (void)sq_node(json_array_get(clauses, (size_t)act_m[i]), &kind, &cb);
        const char *ct = dml_jstr(cb, "commandType");
        if (ct && !strcmp(ct, "CMD_NOTHING"))
            continue;
        int64_t t = HS_VEC_AT(&lo, int64_t, i);
        if (hit[t]++)
            st = FAIL(c, HS_INVALID, "21000", -1, "MERGE command cannot affect row a second "
                      "time (ensure that not more than one source row matches any one target "
                      "row)");
    }
    /* 3. the actions, clause by clause */
    int64_t total = 0;
    for (size_t k = 0; st == HS_OK && k < n_cl; k++) {
        const char *kind;
        json_t *cb;
        (void)sq_node(json_array_get(clauses, k), &kind, &cb);
        const char *ct = dml_jstr(cb, "commandType");
        bool matched = json_is_true(json_object_get(cb, "matched"));
        int64_t n = matched ? n_pairs : n_un;
        int *act = matched ? act_m : act_u;
        hs_buf idx = {0};
        for (int64_t i = 0; st == HS_OK && i < n; i++)
            if (act[i] == (int)k && HS_VEC_PUSH(&idx, int64_t, i) != HS_OK)
                st = hs_err_nomem(err, 8);
        int64_t m = (int64_t)HS_VEC_LEN(&idx, int64_t);
        const int64_t *ix = (const int64_t *)idx.data;
        if (st != HS_OK || m == 0 || !ct || !strcmp(ct, "CMD_NOTHING")) {
            hs_buf_free(&idx);
            continue;
        }
        hs_batch *sub = NULL;
        hs_column **cols = hs_calloc((size_t)sc.n + 1, sizeof *cols);
        if (!cols)
            st = hs_err_nomem(err, 64);
        hs_batch *from = matched ? pb : ub;
        if (st == HS_OK)
            st = dml_take_cols(from, 0, from->n_cols, ix, m, cols, err);
        if (st == HS_OK)
            st = dml_mk_batch(&sc.schema, cols, from->n_cols, m, &sub, err);
        hs_free(cols);
        int64_t *trow = hs_malloc((size_t)m * 8 + 8);
        if (st == HS_OK && !trow)
            st = hs_err_nomem(err, (size_t)m * 8);
        for (int64_t i = 0; st == HS_OK && matched && i < m; i++)
            trow[i] = HS_VEC_AT(&lo, int64_t, ix[i]);
        if (st == HS_OK && !strcmp(ct, "CMD_UPDATE")) {
            st = dml_write_updates(c, x, &g, &sc, sub, trow, m, json_object_get(cb, "targetList"),
                               err);
        } else if (st == HS_OK && !strcmp(ct, "CMD_DELETE")) {
            for (int64_t i = 0; st == HS_OK && i < m; i++)
                st = dml_target_delete(x, &g, trow[i], err);
        } else if (st == HS_OK && !strcmp(ct, "CMD_INSERT")) {
            json_t *tl = json_object_get(cb, "targetList");
            json_t *vals = json_object_get(cb, "values");
            int nt = g.nt;
            int nv = (int)json_array_size(vals);
            int n_tl = tl ? (int)json_array_size(tl) : nt;
            int *map = hs_calloc((size_t)(n_tl > nt ? n_tl : nt) + 1, sizeof *map);
            hs_column **nc = hs_calloc((size_t)nt + 1, sizeof *nc);
            if (!map || !nc)
                st = hs_err_nomem(err, 64);
            if (st == HS_OK && tl)
                st = dml_assign_targets(c, x, tl, false, map, err);
            else
                for (int i = 0; map && i < nt; i++)
                    map[i] = i;
            if (st == HS_OK && vals && nv != n_tl)
                st = FAIL(c, HS_INVALID, "42601", -1, "INSERT has more %s than %s",
                          nv > n_tl ? "expressions" : "target columns",
                          nv > n_tl ? "target columns" : "expressions");
            for (int j = 0; st == HS_OK && vals && j < nv; j++) {
                json_t *v = json_array_get(vals, (size_t)j);
                const hs_field *to = &x->tschema.children[map[j]];
                const char *vk;
                json_t *vb;
                if (sq_node(v, &vk, &vb) && !strcmp(vk, "SetToDefault"))
                    continue;
                st = dml_assign_column(c, v, &sc, sub, to, m, &nc[map[j]], err);
            }
            for (int i = 0; st == HS_OK && i < nt; i++)
                if (!nc[i])
                    st = dml_null_column(c, &x->tschema.children[i], m, &nc[i], err);
            if (st == HS_OK) {
                st = dml_add_rows(x, nc, NULL, m, err);
                memset(nc, 0, (size_t)nt * sizeof *nc);
            }
            for (int i = 0; nc && i < nt; i++)
                hs_col_free(nc[i]);
            hs_free(nc);
            hs_free(map);
        }
        total += m;
        hs_free(trow);
        hs_batch_free(sub);
        hs_buf_free(&idx);
    }
    *count = total;
    hs_free(hit);
    hs_free(act_m);
    hs_free(act_u);
    hs_free(und);
    hs_free(sel);
    hs_free(src_matched);
    hs_buf_free(&ul);
    hs_buf_free(&ur);
    hs_buf_free(&lo);
    hs_buf_free(&ro);
    hs_batch_free(ub);
    hs_batch_free(pb);
    hs_batch_free(S);
    dml_dscope_clear(&sc);
    dml_target_clear(&g);
    return st;
}

/*
 * sql/plan_int.h - what the files of the SELECT planner share:
 *
 *   plan.c         relations, scopes and binding, type unification,
 *                  projections, filters, the entry points
 *   plan_from.c    FROM items: base tables, derived tables, CTEs (WITH
 *                  RECURSIVE materialized), VALUES, time travel
 *   plan_join.c    WHERE conjuncts and their pushdown into scans; scans,
 *                  joins (ON pushdown, index nested loop) and join order
 *   plan_subq.c    subqueries: [NOT] EXISTS / IN as semi/anti joins,
 *                  scalar subqueries, decorrelation, SubLinks in expressions
 *   plan_select.c  SELECT blocks: result names, GROUP BY and aggregates,
 *                  ORDER BY / LIMIT, set operations and VALUES, vector
 *                  search
 *   plan_grouping.c GROUPING SETS / ROLLUP / CUBE and GROUPING() as a
 *                  rewrite into a UNION ALL of grouped blocks
 *   plan_window.c  window functions: named windows, frames, the Window
 *                  operators
 *   plan_rewrite.c rewrites of the parse tree before binding: constant
 *                  date +- interval, variance / stddev as sums and counts
 *   plan_stmt.c    EXPLAIN [ANALYZE], CREATE INDEX / DROP INDEX
 *   plan_srf.c     set-returning functions (unnest, generate_series) in
 *                  the select list and in FROM, lateral ones included
 *   plan_lateral.c correlated LATERAL subqueries in FROM as joins (the
 *                  others marked to run per row)
 *   plan_apply.c   subqueries over FROM functions of the outer row
 *                  (unnest(t.arr), generate_series(1, t.n)), correlated
 *                  ones no join answers exactly, ARRAY(subquery), lazy ones
 *                  of CASE / COALESCE: an Apply operator that plans and runs
 *                  them once per outer row; LATERAL subqueries that are not
 *                  joins (LateralApply: all their rows per outer row)
 *   plan.c         also sq_eval_correlated: expressions with subqueries
 *                  over given rows, for UPDATE / DELETE / MERGE (dml.c)
 *
 * plan.c's header comment describes how a SELECT is planned.
 */
#ifndef HS_SQL_PLAN_INT_H
#define HS_SQL_PLAN_INT_H

#include "base/numfmt.h"
#include "sql/sql_int.h"
#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "exec/exec.h"
#include "expr/expr.h"
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_DEPTH 64      /* nesting of subqueries / CTE references */

typedef struct qcol {
    char *qual;      /* table alias or NULL */
    char *name;
    bool hidden;     /* not visible unqualified nor to '*' (right USING column) */
    bool outer;      /* a column of the enclosing query's current row (plan_apply.c):
                        found by name only when no column of the query's own is,
                        never by '*' */
} qcol;

typedef struct rel {
    xo_op *op;       /* owned */
    int n;
    qcol *cols;      /* owned */
} rel;

typedef struct cte {
    const char *name;
    const json_t *query;      /* SelectStmt body */
    const json_t *colnames;   /* aliascolnames or NULL */
    struct cte *next;
    int in_use;               /* recursion guard */
    bool enclosing;           /* a CTE of the statement around an Apply's subquery
                                 (plan_apply.c): planned without the outer row */
    /* WITH RECURSIVE of the form anchor UNION [ALL] recursive term: run
     * once when first referenced (plan_from.c, cte_materialize), then read from
     * rows; while the recursive term runs, its self-reference reads work */
    bool recursive;
    int rec_state;            /* 0 not run, 1 running, 2 done */
    hs_field rec_schema;      /* the anchor's column types (STRUCT) */
    hs_batch **work, **rows;
    int n_work, n_rows;
} cte;
/* Frees what a materialised recursive CTE holds. */
void pl_cte_clear(cte *c);

typedef struct planner {
    sq_session *s;
    xo_ctx *ctx;
    const char *text;
    hs_error *err;
    cte *ctes;
    bool all_columns;         /* the statement has a '*' or NATURAL join */
    json_t *names;            /* object: lower-case column names the statement mentions */
    int depth;
    /* plan_apply.c: while set, every SELECT block planned joins this one
     * row of the enclosing query's columns (marked outer) before its FROM
     * functions run, so they and the rest of the block read them */
    const struct apply_row *outer_row;
    /* plan_select.c: while the subqueries of a grouped block's HAVING,
     * select list and ORDER BY are planned, the block's columns before
     * aggregation: a name found only there is an ungrouped outer column
     * (42803, as PostgreSQL) */
    const struct layer *ungrouped;
    const int *ungrouped_key;    /* its column -> group key, -1 none */
} planner;

typedef struct layer {
    const qcol *cols;
    int n;
    int offset;      /* position of the layer's first column in the scope's schema */
} layer;

#define MAX_LAYERS 4

typedef struct scope {
    planner *p;
    layer layers[MAX_LAYERS];
    int n_layers;
    const hs_field *schema;
    /* node hook: these nodes bind as these columns */
    const json_t **map_nodes;
    int *map_cols;
    int n_map;
    /* after aggregation: ColumnRefs must be group keys */
    const layer *pre;        /* the relation before aggregation */
    const int *key_of_col;   /* pre column -> output column, -1 = not a key */
    const char *no_aggs;     /* clause name where aggregates are not allowed (NULL = allowed via map) */
    bool nested_ok;          /* pl_bind_in: a bare nested column may be bound (ex_scope) */
} scope;

/* {"ColumnRef": ...} for a column index of a scope (positional binding). */
typedef struct pos_ctx {
    int col;
} pos_ctx;

/* Expressions cannot produce nested values (lists, structs, maps), so a
 * projection that passes such a column through is this operator: output
 * column i is the child's column src[i] (moved out of the child's batch,
 * copied when taken twice) or ex[i] evaluated over the batch. */
typedef struct pass_op {
    xo_op op;
    int n;
    int *src;
    ex_expr **ex;
} pass_op;

enum { F_TABLE, F_REL, F_JOIN };

typedef struct fnode {
    int kind;
    int loc;
    bool nullable;            /* on the nullable side of an outer join */
    /* F_TABLE */
    hs_table *t;
    hs_field ts;              /* the table's schema (owned) */
    hs_scan_options so;       /* snapshot (time travel) */
    hs_buf filt;              /* pushed conjuncts, " AND "-joined */
    double est;               /* estimated rows */
    /* F_REL */
    rel rl;
    /* F_TABLE and F_REL: names for resolution */
    char *alias;
    qcol *ns;
    int n_ns;
    /* F_JOIN */
    const char *jtype;        /* JOIN_INNER, JOIN_LEFT, JOIN_RIGHT, JOIN_FULL */
    struct fnode *l, *r;
    const json_t *quals, *using;
    bool natural;
    char *jalias;
} fnode;

typedef struct fromc {
    fnode **items;
    int n_items;
    fnode **leaves;
    int n_leaves;
    fnode **all;
    int n_all;
} fromc;

typedef struct conj {
    json_t *node;
    unsigned char *lset;      /* leaves it reads (n_leaves) */
    int n_refs;               /* leaves it reads */
    bool sub;                 /* contains a subquery */
    bool outer;               /* reads a column that is not in this FROM */
    bool used;
} conj;

typedef struct conjs {
    conj *a;
    int n;
} conjs;

#define INDEX_JOIN_MAX 10000

/* Node-to-column map used while binding (subquery results, aggregates,
 * window functions). */
typedef struct nmap {
    const json_t **nodes;
    int *cols;
    int n, cap;
} nmap;

/* The first batch is pulled while the statement executes, so that errors
 * of evaluation that show in it (division by zero, bad casts) fail the
 * statement itself with their SQLSTATE, as PostgreSQL reports them; this
 * operator hands that batch out first, then pulls from its child. */
typedef struct prefetch_op {
    xo_op op;
    hs_batch *first;
    bool given;
    sq_session *s;   /* borrowed: a result stream never outlives its session */
} prefetch_op;

typedef struct corr {
    json_t *inner;    /* conjuncts reading only the subquery's FROM */
    json_t *corr;     /* conjuncts reading outer columns */
    fnode **leaves;   /* the subquery's FROM leaves (borrowed from fc) */
    int n_leaves;
    fromc fc;
} corr;

/* A scalar subquery's rows pass through this operator, which fails with
 * SQLSTATE 21000 when there is more than one (PostgreSQL's check). */
typedef struct one_row_op {
    xo_op op;
    int64_t seen;
} one_row_op;

typedef struct agg_info {
    json_t *aggs;        /* aggregate call nodes */
    json_t *groups;      /* group expressions */
} agg_info;

typedef struct sortk {
    int col;          /* output column (or hidden extra) */
    bool desc, nulls_first;
} sortk;

/* ---- functions shared between the files (defined in the file named above) ---- */

void pl_qcols_free(qcol *c, int n);
void pl_rel_clear(rel *r);
char *pl_dup_or_null(const char *s);
HS_MUST_USE hs_status pl_rel_name(rel *r, const char *qual, hs_error *err);
HS_MUST_USE hs_status pl_fail(planner *p, hs_status code, const char *state, int loc, const char *fmt, ...) HS_PRINTF(5, 6);
HS_MUST_USE hs_status pl_nomem(planner *p);
json_t *pl_jget(const json_t *o, const char *k);
/* plan_lateral.c: correlated LATERAL subqueries of sel's FROM become joins
 * (the parse tree is edited in place). */
HS_MUST_USE hs_status pl_lateral_rewrite(planner *p, const json_t *sel);
const char *pl_jstrv(const json_t *o, const char *k);
bool pl_is_kind(const json_t *j, const char *kind, json_t **body);
int pl_first_loc(const json_t *j, int depth);
int pl_node_loc(const json_t *j);
bool pl_jeq(const json_t *a, const json_t *b);
/* Whether j calls a volatile function (random(), nextval, ...) or holds a
 * subquery: two equal texts of it are not one value. */
bool pl_volatile(const json_t *j);
const char *pl_func_name(const json_t *fc);
bool pl_agg_name(const char *nm, xo_agg_fn *fn);
bool pl_is_agg_call(const json_t *j);
/* What a pl_walk visitor says of an object node: go into its members,
 * skip them, or end the walk. */
typedef enum pl_walk_res { PL_DESCEND, PL_SKIP, PL_STOP } pl_walk_res;
typedef pl_walk_res (*pl_visit_fn)(const json_t *node, void *ctx);
/* Visits every JSON object at or under j (libpg_query's parse tree) depth
 * first, members in order, through arrays; a branch nested deeper than 400
 * levels below `depth` is not visited.  True when a visitor said PL_STOP.
 * The planner's "is there a ... under this node" and "collect the ...
 * under this node" questions are visitors of this one walk. */
bool pl_walk(const json_t *j, pl_visit_fn visit, void *ctx, int depth);
void pl_collect_calls(const json_t *j, json_t *arr, bool (*want)(const json_t *), int depth);
void pl_collect_aggs(const json_t *j, json_t *arr, int depth);
void pl_collect_sublinks(const json_t *j, json_t *arr, int depth);
void pl_collect_sublinks_noagg(const json_t *j, json_t *arr, int depth);   /* not inside aggregate calls */
bool pl_name_needed(const planner *p, const char *name);
bool pl_name_eq(const char *a, const char *b);
int pl_layer_find(const layer *l, const char *const *names, int n);
int pl_scope_column(void *ctx, const char *const *names, int n);
int pl_colref_names(const json_t *cr, const char **names, int max);
HS_MUST_USE hs_status pl_bind_in(scope *sc, const json_t *node, bool filter, ex_expr **out);
void pl_scope_rel(scope *sc, planner *p, const rel *r);
/* A scope over outer||inner (inner names first when inner_first). */
HS_MUST_USE hs_status pl_scope_pair(scope *sc, planner *p, const rel *outer, const rel *inner, bool inner_first);
/* An expression reading column idx of schema. */
HS_MUST_USE hs_status pl_col_expr(planner *p, const hs_field *schema, int idx, ex_expr **out);
static inline bool pl_is_int_type(hs_type t) { return t >= HS_TYPE_INT8 && t <= HS_TYPE_UINT64; }
HS_MUST_USE hs_status pl_project_mixed(planner *p, xo_op *child, int n, const int *src, ex_expr **ex, const char *const *names, xo_op **out);
void pl_unify_type(const hs_field *a, const hs_field *b, hs_field *out);
json_t *pl_cast_json(json_t *node, const hs_field *f);
HS_MUST_USE hs_status pl_cast_rel(planner *p, rel *r, const hs_field *types);
void pl_fromc_free(fromc *fc);
/* Appends the base-table leaves under f to arr. */
void pl_leaves_of(fnode *f, fnode **arr, int *n);
int pl_leaf_find(fnode **leaves, int n_leaves, const char *const *names, int n, int *col);
HS_MUST_USE hs_status pl_fromc_build(planner *p, const json_t *from, fromc *fc);
void pl_conjs_free(conjs *c);
json_t *pl_mk_and(json_t **nodes, int n);
HS_MUST_USE hs_status pl_conjs_make(planner *p, const json_t *where, fromc *fc, conjs *out);
HS_MUST_USE hs_status pl_push_filters(planner *p, fromc *fc, conjs *cs);
bool pl_key_types_ok(const hs_field *a, const hs_field *b);
HS_MUST_USE hs_status pl_join_rels(planner *p, rel *l, rel *r, xo_join_kind kind, json_t **cond, int n, const int *xlk, const int *xrk, int nx, bool right_first, rel *out);
HS_MUST_USE hs_status pl_build_from(planner *p, fromc *fc, conjs *cs, rel *out);
HS_MUST_USE hs_status pl_filter_rel(planner *p, rel *r, json_t **nodes, int n, const json_t **map_nodes, int *map_cols, int n_map, const char *clause);
HS_MUST_USE hs_status pl_rel_add_expr(planner *p, rel *r, const json_t *node, int *col);
HS_MUST_USE hs_status pl_rel_add_expr_in(planner *p, rel *r, const json_t *node, const nmap *m, const layer *pre, const int *key_of_col, int *col);
HS_MUST_USE hs_status pl_nmap_add(planner *p, nmap *m, const json_t *node, int col);
void pl_nmap_free(nmap *m);
json_t *pl_mk_null(void);
json_t *pl_when(json_t *cond, json_t *res);
/* Aggregates of the block written inside the subqueries under nodes (reading
 * only cur's columns) move to aggs; out gets [name, call] pairs for
 * pl_outer_aggs_expose, which names their columns after aggregation. */
HS_MUST_USE hs_status pl_outer_aggs(planner *p, json_t *const *nodes, int n, const rel *cur, json_t *aggs,
                                    json_t *out);
HS_MUST_USE hs_status pl_outer_aggs_expose(planner *p, rel *cur, const nmap *m, const json_t *out);
/* Where sub (one level) has an aggregate reading only columns outside its
 * FROM (an enclosing query's aggregate), else -2. */
int pl_sub_outer_agg(planner *p, const json_t *sub);
/* 42803 "aggregate functions are not allowed in WHERE" when a subquery of
 * the WHERE clause `where` holds an aggregate of the block (pl_sub_outer_agg). */
HS_MUST_USE hs_status pl_where_outer_aggs(planner *p, const json_t *where);
/* after_agg: cur is aggregated, so subqueries inside aggregate calls (joined
 * before aggregation) are left alone. */
HS_MUST_USE hs_status pl_attach_scalars(planner *p, rel *cur, json_t *const *nodes, int n, nmap *m,
                                        bool after_agg);
HS_MUST_USE hs_status pl_apply_sub_conj(planner *p, rel *cur, json_t *node);
HS_MUST_USE hs_status pl_sub_pushable(planner *p, const json_t *node, bool *ok);
HS_MUST_USE hs_status pl_aggregate(planner *p, rel *cur, json_t *groups, json_t *aggs, const nmap *pre_map,
                                   nmap *m, int **key_of_col);
HS_MUST_USE hs_status pl_plan_select(planner *p, const json_t *sel, rel *out);
/* plan_apply.c: whether SELECT body sub has a FROM function that reads
 * columns (of the outer query or of a sibling item), which only the Apply
 * operator plans; pl_apply_attach adds the value of scalar subquery
 * SubLink body sl as a new (hidden) column of cur, *col its position;
 * pl_apply_outer_rel gives plan_block the outer row as a relation. */
bool pl_apply_needed(const json_t *sub);
/* plan_rewrite.c: variance / stddev calls (rewritten as float8 sums) whose
 * argument binds over cur as an integer or numeric become their numeric
 * form, as PostgreSQL types them (sel's select list, HAVING, ORDER BY are
 * edited in place). */
HS_MUST_USE hs_status pl_stats_numeric(planner *p, const rel *cur, const json_t *sel);
HS_MUST_USE hs_status pl_apply_attach(planner *p, rel *cur, const json_t *sl, int *col);
/* plan_subq.c: the conjuncts with subqueries of inner joins' ON (not under
 * an outer join's nullable side) moved to sel's WHERE, in place. */
HS_MUST_USE hs_status pl_on_subqueries_to_where(planner *p, json_t *sel);
/* plan_subq.c: in the subqueries under j, outer column references to the
 * group keys absent (ColumnRefs) from a grouping set's branch become NULL. */
HS_MUST_USE hs_status pl_sub_null_absent(planner *p, json_t *j, const json_t *absent);
/* pl_apply_attach, the subquery run only for rows whose BOOL column guard
 * of cur is true (the others get NULL): CASE / COALESCE's laziness */
HS_MUST_USE hs_status pl_apply_attach_guarded(planner *p, rel *cur, const json_t *sl, int guard, int *col);
HS_MUST_USE hs_status pl_apply_outer_rel(planner *p, rel *out);
/* plan_apply.c: joins cur with the LATERAL subquery of RangeSubselect body
 * rs, planned and run per row of cur (LEFT: NULLs for a row without any);
 * its columns are appended, named by rs's alias. */
HS_MUST_USE hs_status pl_apply_lateral(planner *p, rel *cur, const json_t *rs, bool left);
/* plan_apply.c: fn(p, ctx) with p->outer_row an outer row of cur's columns
 * and no rows, as pl_apply_attach first plans (a subquery's FROM for its names). */
HS_MUST_USE hs_status pl_apply_with_row(planner *p, const rel *cur, hs_status (*fn)(planner *, void *),
                                        void *ctx);
HS_MUST_USE hs_status pl_plan_query(planner *p, const json_t *sel, rel *out);
const char *pl_cast_type(const json_t *j, const char **val);
json_t *pl_mk_op(const char *op, json_t *l, json_t *r);
json_t *pl_mk_int(int v);
void pl_rewrite_stats(json_t *j, int depth);
/* plan_srf.c */
bool pl_has_srf(const json_t *j);
bool pl_srf_is_lateral(const json_t *item);
/* FROM function item (body of a RangeFunction that reads no columns). */
HS_MUST_USE hs_status pl_srf_from_item(planner *p, const json_t *rf, rel *out);
/* from's items without the lateral functions (*rest) and those (*lateral:
 * [{"rf": RangeFunction body, "outer": bool}]), applied after the join of
 * the rest by pl_srf_apply_lateral. */
HS_MUST_USE hs_status pl_srf_split_from(planner *p, const json_t *from, json_t **rest, json_t **lateral);
HS_MUST_USE hs_status pl_srf_apply_lateral(planner *p, rel *cur, const json_t *lateral);
/* The select list's SRF calls become a ProjectSet over cur; m maps each
 * call to its column. */
HS_MUST_USE hs_status pl_srf_select(planner *p, rel *cur, const json_t *tl, nmap *m, const layer *pre,
                                    const int *key_of_col);
void pl_fold_intervals(json_t *j, int depth);

/* plan_select.c, shared with plan_grouping.c / plan_window.c */
/* The output name of a select-list ResTarget body (PostgreSQL's FigureColname). */
const char *pl_target_name(const json_t *rt);
/* An integer constant (LIMIT, OFFSET, positions, frame offsets): *null for
 * NULL; LIMIT / OFFSET also an expression without columns, run once. */
HS_MUST_USE hs_status pl_int_const(planner *p, const json_t *j, const char *what, int64_t *out,
                                   bool *null);
/* A SortBy body's direction and NULLS FIRST (PostgreSQL's defaults); USING is not accepted. */
HS_MUST_USE hs_status pl_sort_dir(const json_t *sb, bool *desc, bool *nf);
/* 42883 for an aggregate PostgreSQL does not define over at's type
 * (pgvector types, intervals). */
HS_MUST_USE hs_status pl_pv_agg_check(planner *p, const char *fname, const hs_field *at, int loc);

/* plan_grouping.c: *out the query sel stands for with its grouping sets
 * and GROUPING() calls expanded (a new SelectStmt body), NULL when it has
 * none. */
HS_MUST_USE hs_status pl_expand_grouping_sets(planner *p, const json_t *sel, json_t **out);

/* plan_window.c */
/* The window function calls under j (not inside subqueries), appended to arr. */
void pl_collect_windows(const json_t *j, json_t *arr, int depth);
/* WINDOW clause names resolved and FILTER rewritten in sel's calls, in place. */
HS_MUST_USE hs_status pl_resolve_windows(planner *p, const json_t *sel);
/* avg(x) OVER w of integers / numerics / intervals under j rewritten in
 * place as PostgreSQL's numeric avg (sum / count). */
HS_MUST_USE hs_status pl_numeric_window_avgs(planner *p, rel *cur, json_t *j, const nmap *m,
                                             const layer *pre, const int *key_of_col, int depth);
/* The window calls under nodes computed over cur (one Window operator per
 * distinct window), each mapped in m to its (hidden) column. */
HS_MUST_USE hs_status pl_apply_windows(planner *p, rel *cur, json_t *const *nodes, int n_nodes,
                                       nmap *m, const layer *pre, const int *key_of_col);
/* The window calls in the operands of x IN / op ANY / ALL (subquery) under
 * nodes, computed as pl_apply_windows does, before the subqueries. */
HS_MUST_USE hs_status pl_apply_operand_windows(planner *p, rel *cur, json_t *const *nodes, int n_nodes,
                                               nmap *m, const layer *pre, const int *key_of_col);

#endif

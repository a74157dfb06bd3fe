/*
 * parquet/schema_read.c - the Parquet schema as an hs_field tree plus the
 * level bookkeeping the reader needs to assemble nested columns.
 *
 * Input: pq_file_meta.schema, a depth-first list of SchemaElements where a
 * group announces num_children and element 0 is the root.  Pass 1 rebuilds
 * that tree (pq_pnode) with each node's definition and repetition level:
 *
 *   def(node) = number of OPTIONAL or REPEATED nodes from the root to node
 *   rep(node) = number of REPEATED nodes from the root to node
 *
 * Pass 2 maps nodes to Arrow-style fields the way Arrow's parquet reader does
 * (so pyarrow is an oracle), and fills the pq_anode level fields described in
 * reader_int.h:
 *
 *   Parquet                                   -> field
 *   ----------------------------------------     ----------------------------
 *   optional/required group (no annotation)      STRUCT
 *   <g> (LIST) { repeated <r> { one child e } }  LIST<e>           (3-level)
 *   <g> (LIST) { repeated group "array" or
 *                 "<g>_tuple" or >1 child }      LIST<STRUCT r>    (legacy)
 *   <g> (LIST) { repeated primitive r }          LIST<r required>  (2-level)
 *   repeated x without LIST/MAP annotation       LIST<x required>, list not null
 *   <g> (MAP|MAP_KEY_VALUE) { repeated kv
 *        { required key; value } }               MAP<STRUCT kv {key, value}>
 *   ... kv with only a key                       LIST<key>   (as pyarrow)
 *
 * Leaves map physical + logical (or legacy converted) types as Arrow does;
 * see map_leaf().  A file-level key "hyperstream.fixed_size_list" holding a
 * JSON object {"dotted.column.path": width} turns those LIST columns (whose
 * element is a leaf) into FIXED_LIST (what our writer emits for embeddings).
 *
 * Bounds: nesting depth <= PQ_MAX_NESTING, every num_children checked against
 * the remaining elements, every name non-NULL.  Errors name the file.
 */
#include "parquet/reader_int.h"

#include "base/mem.h"
#include "base/numfmt.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

typedef struct pq_pnode pq_pnode;
struct pq_pnode {
    const pq_schema_element *e;
    int index;              /* in meta->schema */
    int16_t def, rep;
    int n_children;
    pq_pnode *children;
    int leaf;               /* leaf index, -1 for groups */
};

typedef struct sctx {
    const pq_file_meta *m;
    const char *fname;
    hs_arena *a;
    hs_error *err;
    int pos;                /* next schema element */
    int n_leaves;
    json_t *fixed_hints;    /* object or NULL */
    pq_leaf *leaves;        /* filled in pass 2 */
} sctx;

static const char *ename(const pq_schema_element *e) { return e->name ? e->name : ""; }

/* ---------- pass 1: rebuild the tree ---------- */

static hs_status build_pnode(sctx *c, pq_pnode *n, int depth, int16_t def, int16_t rep)
{
    if (depth > PQ_MAX_NESTING)
        return HS_CORRUPT_AT(c->err, "%s: schema nesting deeper than %d", c->fname, PQ_MAX_NESTING);
    if (c->pos >= c->m->n_schema)
        return HS_CORRUPT_AT(c->err, "%s: schema ends early (element %d of %d)", c->fname, c->pos,
                             c->m->n_schema);
    const pq_schema_element *e = &c->m->schema[c->pos];
    n->e = e;
    n->index = c->pos++;
    n->leaf = -1;
    if (depth > 0) {
        if (!e->has_repetition)
            return HS_CORRUPT_AT(c->err, "%s: schema element '%s' has no repetition", c->fname,
                                 ename(e));
        if (e->repetition == PQ_OPTIONAL) def++;
        else if (e->repetition == PQ_REPEATED) { def++; rep++; }
        else if (e->repetition != PQ_REQUIRED)
            return HS_CORRUPT_AT(c->err, "%s: schema element '%s' has bad repetition %d", c->fname,
                                 ename(e), (int)e->repetition);
    }
    n->def = def;
    n->rep = rep;
    if (e->num_children < 0 || e->num_children > c->m->n_schema - c->pos)
        return HS_CORRUPT_AT(c->err, "%s: schema element '%s' claims %d children, %d elements left",
                             c->fname, ename(e), (int)e->num_children, c->m->n_schema - c->pos);
    if (e->num_children == 0) {
        if (depth == 0)
            return HS_CORRUPT_AT(c->err, "%s: schema has no columns", c->fname);
        if (!e->has_type)
            return hs_err_set(c->err, HS_UNSUPPORTED, "%s: group '%s' has no fields", c->fname,
                              ename(e));
        if (e->type < PQ_BOOLEAN || e->type > PQ_FIXED_LEN_BYTE_ARRAY)
            return HS_CORRUPT_AT(c->err, "%s: column '%s' has unknown physical type %d", c->fname,
                                 ename(e), (int)e->type);
        if (e->type == PQ_FIXED_LEN_BYTE_ARRAY && (e->type_length <= 0 || e->type_length > (1 << 24)))
            return HS_CORRUPT_AT(c->err, "%s: column '%s' has bad FIXED_LEN_BYTE_ARRAY length %d",
                                 c->fname, ename(e), (int)e->type_length);
        n->leaf = c->n_leaves++;
        return HS_OK;
    }
    n->n_children = e->num_children;
    n->children = hs_arena_calloc(c->a, (size_t)n->n_children, sizeof *n->children);
    if (!n->children)
        return hs_err_nomem(c->err, (size_t)n->n_children * sizeof *n->children);
    for (int i = 0; i < n->n_children; i++)
        HS_TRY(build_pnode(c, &n->children[i], depth + 1, def, rep));
    return HS_OK;
}

/* ---------- pass 2: map to fields ---------- */

typedef struct lvl { int16_t def_reach, rep_ctx; } lvl;

static void node_base(pq_anode *an, const pq_pnode *pn, lvl L, bool nullable)
{
    an->name = ename(pn->e);
    an->nullable = nullable;
    an->field_id = pn->e->has_field_id ? pn->e->field_id : -1;
    an->def_reach = L.def_reach;
    an->rep_ctx = L.rep_ctx;
    an->def_valid = nullable ? pn->def : L.def_reach;
    an->schema_index = pn->index;
    an->first_leaf = -1;
}

static bool lt_is_list(const pq_schema_element *e)
{
    return e->logical.kind == PQ_LT_LIST || (e->logical.kind == PQ_LT_NONE && e->converted_type == PQ_CT_LIST);
}
static bool lt_is_map(const pq_schema_element *e)
{
    return e->logical.kind == PQ_LT_MAP ||
           (e->logical.kind == PQ_LT_NONE &&
            (e->converted_type == PQ_CT_MAP || e->converted_type == PQ_CT_MAP_KEY_VALUE));
}

static hs_status map_leaf(sctx *c, const pq_pnode *pn, pq_anode *an)
{
    const pq_schema_element *e = pn->e;
    const pq_logical_type *lt = &e->logical;
    pq_converted_type ct = lt->kind != PQ_LT_NONE ? PQ_CT_NONE : e->converted_type;
    pq_leaf *lf = &c->leaves[pn->leaf];
    an->kind = PQ_AN_LEAF;
    an->first_leaf = pn->leaf;
    lf->elem = e;
    lf->max_def = pn->def;
    lf->max_rep = pn->rep;
    lf->conv = PQ_CV_COPY;
    lf->phys_width = 0;
    bool dec = lt->kind == PQ_LT_DECIMAL || ct == PQ_CT_DECIMAL;
    int32_t prec = lt->kind == PQ_LT_DECIMAL ? lt->precision : e->precision;
    int32_t scale = lt->kind == PQ_LT_DECIMAL ? lt->scale : e->scale;
    if (dec && (prec <= 0 || prec > 38 || scale < 0 || scale > prec))
        dec = false;  /* out of decimal128's reach or malformed: physical type */
    if (lt->kind == PQ_LT_UNKNOWN) {  /* the "null" logical type */
        an->type = HS_TYPE_NA;
        lf->conv = PQ_CV_NULL;
        an->nullable = true;
        goto widths;
    }
    switch (e->type) {
    case PQ_BOOLEAN:
        an->type = HS_TYPE_BOOL;
        lf->conv = PQ_CV_BOOL;
        break;
    case PQ_INT32:
        an->type = HS_TYPE_INT32;
        if (dec) {
            an->type = HS_TYPE_DECIMAL128; an->precision = prec; an->scale = scale;
            lf->conv = PQ_CV_I32_TO_DEC;
        } else if (lt->kind == PQ_LT_INTEGER) {
            int bw = lt->bit_width;
            bool s = lt->is_signed;
            if (bw == 8) { an->type = s ? HS_TYPE_INT8 : HS_TYPE_UINT8; lf->conv = PQ_CV_I32_TO_I8; }
            else if (bw == 16) { an->type = s ? HS_TYPE_INT16 : HS_TYPE_UINT16; lf->conv = PQ_CV_I32_TO_I16; }
            else if (bw == 32) an->type = s ? HS_TYPE_INT32 : HS_TYPE_UINT32;
        } else if (lt->kind == PQ_LT_DATE || ct == PQ_CT_DATE) {
            an->type = HS_TYPE_DATE32;
        } else if ((lt->kind == PQ_LT_TIME && lt->unit == PQ_TU_MILLIS) || ct == PQ_CT_TIME_MILLIS) {
            an->type = HS_TYPE_TIME32; an->unit = HS_UNIT_MILLI;
        } else {
            switch (ct) {
            case PQ_CT_INT_8: an->type = HS_TYPE_INT8; lf->conv = PQ_CV_I32_TO_I8; break;
            case PQ_CT_UINT_8: an->type = HS_TYPE_UINT8; lf->conv = PQ_CV_I32_TO_I8; break;
            case PQ_CT_INT_16: an->type = HS_TYPE_INT16; lf->conv = PQ_CV_I32_TO_I16; break;
            case PQ_CT_UINT_16: an->type = HS_TYPE_UINT16; lf->conv = PQ_CV_I32_TO_I16; break;
            case PQ_CT_UINT_32: an->type = HS_TYPE_UINT32; break;
            default: break;
            }
        }
        break;
    case PQ_INT64:
        an->type = HS_TYPE_INT64;
        if (dec) {
            an->type = HS_TYPE_DECIMAL128; an->precision = prec; an->scale = scale;
            lf->conv = PQ_CV_I64_TO_DEC;
        } else if (lt->kind == PQ_LT_INTEGER) {
            if (lt->bit_width == 64 && !lt->is_signed) an->type = HS_TYPE_UINT64;
        } else if (lt->kind == PQ_LT_TIMESTAMP) {
            an->type = HS_TYPE_TIMESTAMP;
            an->unit = lt->unit == PQ_TU_MILLIS ? HS_UNIT_MILLI
                     : lt->unit == PQ_TU_NANOS ? HS_UNIT_NANO : HS_UNIT_MICRO;
            an->tz = lt->is_adjusted_to_utc ? "UTC" : NULL;
        } else if (lt->kind == PQ_LT_TIME && lt->unit != PQ_TU_MILLIS) {
            an->type = HS_TYPE_TIME64;
            an->unit = lt->unit == PQ_TU_NANOS ? HS_UNIT_NANO : HS_UNIT_MICRO;
        } else if (ct == PQ_CT_TIMESTAMP_MILLIS || ct == PQ_CT_TIMESTAMP_MICROS) {
            an->type = HS_TYPE_TIMESTAMP;
            an->unit = ct == PQ_CT_TIMESTAMP_MILLIS ? HS_UNIT_MILLI : HS_UNIT_MICRO;
            an->tz = "UTC";
        } else if (ct == PQ_CT_TIME_MICROS) {
            an->type = HS_TYPE_TIME64; an->unit = HS_UNIT_MICRO;
        } else if (ct == PQ_CT_UINT_64) {
            an->type = HS_TYPE_UINT64;
        }
        break;
    case PQ_INT96:
        an->type = HS_TYPE_TIMESTAMP; an->unit = HS_UNIT_NANO;
        lf->conv = PQ_CV_INT96_TO_NS;
        break;
    case PQ_FLOAT: an->type = HS_TYPE_FLOAT32; break;
    case PQ_DOUBLE: an->type = HS_TYPE_FLOAT64; break;
    case PQ_BYTE_ARRAY:
        an->type = HS_TYPE_BINARY;
        lf->conv = PQ_CV_BYTES;
        if (dec) {
            an->type = HS_TYPE_DECIMAL128; an->precision = prec; an->scale = scale;
            lf->conv = PQ_CV_BE_TO_DEC;
        } else if (lt->kind == PQ_LT_STRING || lt->kind == PQ_LT_JSON || lt->kind == PQ_LT_ENUM ||
                   ct == PQ_CT_UTF8 || ct == PQ_CT_JSON || ct == PQ_CT_ENUM) {
            an->type = HS_TYPE_STRING;
        }
        break;
    case PQ_FIXED_LEN_BYTE_ARRAY:
        an->type = HS_TYPE_FIXED_BINARY;
        an->width = e->type_length;
        if (dec && e->type_length <= 64) {
            an->type = HS_TYPE_DECIMAL128; an->precision = prec; an->scale = scale; an->width = 0;
            lf->conv = PQ_CV_BE_TO_DEC;
        } else if (lt->kind == PQ_LT_FLOAT16 && e->type_length == 2) {
            an->type = HS_TYPE_FLOAT16; an->width = 0;
        } else if (lt->kind == PQ_LT_UUID && e->type_length == 16) {
            an->ext = HS_EXT_UUID;
        }
        break;
    }
widths:
    lf->phys_width = e->type == PQ_BOOLEAN ? 1 : e->type == PQ_INT32 || e->type == PQ_FLOAT ? 4
                   : e->type == PQ_INT64 || e->type == PQ_DOUBLE ? 8 : e->type == PQ_INT96 ? 12
                   : e->type == PQ_FIXED_LEN_BYTE_ARRAY ? e->type_length : 0;
    switch (an->type) {
    case HS_TYPE_INT8: case HS_TYPE_UINT8: lf->out_width = 1; break;
    case HS_TYPE_INT16: case HS_TYPE_UINT16: case HS_TYPE_FLOAT16: lf->out_width = 2; break;
    case HS_TYPE_INT32: case HS_TYPE_UINT32: case HS_TYPE_FLOAT32: case HS_TYPE_DATE32:
    case HS_TYPE_TIME32: lf->out_width = 4; break;
    case HS_TYPE_INT64: case HS_TYPE_UINT64: case HS_TYPE_FLOAT64: case HS_TYPE_TIME64:
    case HS_TYPE_TIMESTAMP: lf->out_width = 8; break;
    case HS_TYPE_DECIMAL128: lf->out_width = 16; break;
    case HS_TYPE_FIXED_BINARY: lf->out_width = an->width; break;
    default: lf->out_width = 0; break;
    }
    return HS_OK;
}

static hs_status map_node(sctx *c, const pq_pnode *pn, lvl L, pq_anode *an, bool force_required,
                          const char *path, int depth);

static hs_status alloc_children(sctx *c, pq_anode *an, int n)
{
    an->n_children = n;
    an->children = hs_arena_calloc(c->a, (size_t)(n ? n : 1), sizeof *an->children);
    if (!an->children)
        return hs_err_nomem(c->err, (size_t)n * sizeof *an->children);
    for (int i = 0; i < n; i++)
        an->children[i].child_index = i;
    return HS_OK;
}

static const char *join_path(sctx *c, const char *prefix, const char *name)
{
    size_t lp = strlen(prefix), ln = strlen(name);
    char *s = hs_arena_alloc(c->a, lp + ln + 2);
    if (!s)
        return NULL;
    memcpy(s, prefix, lp);
    if (lp)
        s[lp++] = '.';
    memcpy(s + lp, name, ln + 1);
    return s;
}

/* A group's fields as the children of a STRUCT node. */
static hs_status map_struct(sctx *c, const pq_pnode *pn, lvl L, pq_anode *an, const char *path,
                            int depth)
{
    an->kind = PQ_AN_STRUCT;
    an->type = HS_TYPE_STRUCT;
    HS_TRY(alloc_children(c, an, pn->n_children));
    lvl cl = { L.def_reach, L.rep_ctx };
    for (int i = 0; i < pn->n_children; i++)
        HS_TRY(map_node(c, &pn->children[i], cl, &an->children[i], false, path, depth + 1));
    return HS_OK;
}

/* LIST node whose repeated node is r; the element is filled by the caller. */
static hs_status list_shell(sctx *c, pq_anode *an, const pq_pnode *r)
{
    an->kind = PQ_AN_LIST;
    an->type = HS_TYPE_LIST;
    an->list_rep = r->rep;
    an->def_nonempty = r->def;
    return alloc_children(c, an, 1);
}

static void maybe_fixed(sctx *c, pq_anode *an, const char *path)
{
    if (!c->fixed_hints || an->children[0].kind != PQ_AN_LEAF)
        return;
    json_t *v = json_object_get(c->fixed_hints, path);
    if (v && json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < (1 << 20)) {
        an->type = HS_TYPE_FIXED_LIST;
        an->width = (int32_t)json_integer_value(v);
    }
}

static hs_status map_list(sctx *c, const pq_pnode *g, lvl L, pq_anode *an, const char *path,
                          int depth)
{
    if (g->n_children != 1)
        return HS_CORRUPT_AT(c->err, "%s: LIST-annotated group '%s' has %d children, expected 1",
                             c->fname, ename(g->e), g->n_children);
    const pq_pnode *r = &g->children[0];
    if (r->e->repetition != PQ_REPEATED)
        return HS_CORRUPT_AT(c->err, "%s: LIST-annotated group '%s': child '%s' is not repeated",
                             c->fname, ename(g->e), ename(r->e));
    HS_TRY(list_shell(c, an, r));
    lvl el = { r->def, r->rep };
    pq_anode *elem = &an->children[0];
    if (r->n_children > 0) {
        size_t gl = strlen(ename(g->e));
        const char *rn = ename(r->e);
        bool legacy = r->n_children > 1 || strcmp(rn, "array") == 0 ||
                      (strncmp(rn, ename(g->e), gl) == 0 && strcmp(rn + gl, "_tuple") == 0);
        if (legacy) {  /* the repeated group itself is the (required) element */
            HS_TRY(map_node(c, r, el, elem, true, path, depth + 1));
        } else {
            HS_TRY(map_node(c, &r->children[0], el, elem, false, path, depth + 2));
        }
    } else {
        HS_TRY(map_node(c, r, el, elem, true, path, depth + 1));
    }
    elem->child_index = 0;
    maybe_fixed(c, an, path);
    return HS_OK;
}

static hs_status map_map(sctx *c, const pq_pnode *g, lvl L, pq_anode *an, const char *path,
                         int depth)
{
    if (g->n_children != 1)
        return HS_CORRUPT_AT(c->err, "%s: MAP-annotated group '%s' has %d children, expected 1",
                             c->fname, ename(g->e), g->n_children);
    const pq_pnode *kv = &g->children[0];
    if (kv->e->repetition != PQ_REPEATED || kv->n_children < 1 || kv->n_children > 2)
        return HS_CORRUPT_AT(c->err, "%s: MAP '%s': key_value must be a repeated group of 1 or 2 fields",
                             c->fname, ename(g->e));
    HS_TRY(list_shell(c, an, kv));
    lvl el = { kv->def, kv->rep };
    pq_anode *entries = &an->children[0];
    if (kv->n_children == 1) {  /* no value column: a list of keys, as pyarrow reads it */
        HS_TRY(map_node(c, &kv->children[0], el, entries, false, path, depth + 2));
        entries->child_index = 0;
        return HS_OK;
    }
    if (kv->children[0].e->repetition != PQ_REQUIRED)
        return hs_err_set(c->err, HS_UNSUPPORTED, "%s: MAP '%s': map keys must be annotated as required",
                          c->fname, ename(g->e));
    an->type = HS_TYPE_MAP;
    node_base(entries, kv, el, false);
    HS_TRY(map_struct(c, kv, el, entries, path, depth + 1));
    entries->child_index = 0;
    return HS_OK;
}

static hs_status map_node(sctx *c, const pq_pnode *pn, lvl L, pq_anode *an, bool force_required,
                          const char *prefix, int depth)
{
    int ci = an->child_index;
    if (depth > 2 * PQ_MAX_NESTING + 4)
        return HS_CORRUPT_AT(c->err, "%s: schema nesting too deep", c->fname);
    const char *path = join_path(c, prefix, ename(pn->e));
    if (!path)
        return hs_err_nomem(c->err, 64);
    const pq_schema_element *e = pn->e;
    if (e->repetition == PQ_REPEATED && !force_required) {
        /* bare repeated field: a non-null list of required elements */
        node_base(an, pn, L, false);
        HS_TRY(list_shell(c, an, pn));
        lvl el = { pn->def, pn->rep };
        HS_TRY(map_node(c, pn, el, &an->children[0], true, path, depth + 1));
        an->children[0].child_index = 0;
        an->child_index = ci;
        return HS_OK;
    }
    bool nullable = e->repetition == PQ_OPTIONAL && !force_required;
    node_base(an, pn, L, nullable);
    if (force_required)
        an->def_valid = pn->def;  /* == def_reach for the repeated node itself */
    hs_status st;
    if (pn->n_children == 0)
        st = map_leaf(c, pn, an);
    else if (lt_is_list(e))
        st = map_list(c, pn, L, an, path, depth);
    else if (lt_is_map(e))
        st = map_map(c, pn, L, an, path, depth);
    else
        st = map_struct(c, pn, L, an, path, depth);
    an->child_index = ci;
    return st;
}

/* ---------- leaf paths and the hs_field tree ---------- */

static hs_status index_leaves(sctx *c, pq_anode *an, int top, const pq_anode **stack, int depth)
{
    if (depth >= 2 * PQ_MAX_NESTING + 8)
        return HS_CORRUPT_AT(c->err, "%s: schema nesting too deep", c->fname);
    stack[depth] = an;
    if (an->kind == PQ_AN_LEAF) {
        int li = an->first_leaf;
        if (li < 0 || li >= c->n_leaves)
            return hs_err_set(c->err, HS_INTERNAL, "%s: leaf '%s' not indexed", c->fname, an->name);
        pq_leaf *lf = &c->leaves[li];
        lf->top = top;
        lf->depth = depth + 1;
        lf->path = hs_arena_alloc(c->a, sizeof(*lf->path) * (size_t)(depth + 1));
        if (!lf->path)
            return hs_err_nomem(c->err, 64);
        memcpy(lf->path, stack, sizeof(*lf->path) * (size_t)(depth + 1));
        an->first_leaf = li;
        an->n_leaves = 1;
        return HS_OK;
    }
    an->first_leaf = -1;
    an->n_leaves = 0;
    for (int i = 0; i < an->n_children; i++) {
        HS_TRY(index_leaves(c, &an->children[i], top, stack, depth + 1));
        if (an->first_leaf < 0)
            an->first_leaf = an->children[i].first_leaf;
        an->n_leaves += an->children[i].n_leaves;
    }
    if (an->n_leaves == 0)
        return hs_err_set(c->err, HS_UNSUPPORTED, "%s: group '%s' has no leaf columns", c->fname,
                          an->name);
    return HS_OK;
}

static hs_status to_field(const pq_anode *an, hs_field *f)
{
    hs_field_init(f, an->name, an->type, an->nullable);
    f->field_id = an->field_id;
    f->precision = an->precision;
    f->scale = an->scale;
    f->width = an->width;
    f->unit = an->unit;
    f->ext = an->ext;
    if (an->tz && !(f->tz = hs_strdup(an->tz)))
        return HS_NOMEM;
    for (int i = 0; i < an->n_children; i++) {
        hs_field ch;
        memset(&ch, 0, sizeof ch);
        hs_status st = to_field(&an->children[i], &ch);
        if (st == HS_OK)
            st = hs_field_add_child(f, &ch);
        if (st != HS_OK) {
            hs_field_clear(&ch);
            return st;
        }
    }
    return HS_OK;
}

static void leaf_dotted(sctx *c, int idx, const pq_pnode *pn, const char *prefix)
{
    const char *p = join_path(c, prefix, ename(pn->e));
    if (pn->leaf >= 0) {
        c->leaves[pn->leaf].dotted = p ? p : "?";
        return;
    }
    for (int i = 0; i < pn->n_children; i++)
        leaf_dotted(c, idx, &pn->children[i], p ? p : "?");
}

hs_status pq_schema_build(const pq_file_meta *m, const char *name, pq_schema_info *out,
                          hs_error *err)
{
    memset(out, 0, sizeof *out);
    sctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.fname = name ? name : "";
    c.a = &out->arena;
    c.err = err;
    hs_status st = HS_OK;
    const pq_anode **stack = NULL;
    if (m->n_schema < 2 || !m->schema) {
        st = HS_CORRUPT_AT(err, "%s: schema has no columns", c.fname);
        goto fail;
    }
    pq_pnode root;
    memset(&root, 0, sizeof root);
    st = build_pnode(&c, &root, 0, 0, 0);
    if (st != HS_OK)
        goto fail;
    if (c.pos != m->n_schema) {
        st = HS_CORRUPT_AT(err, "%s: schema has %d trailing elements", c.fname, m->n_schema - c.pos);
        goto fail;
    }
    for (int i = 0; i < m->n_kv; i++)
        if (m->kv[i].key && m->kv[i].value && strcmp(m->kv[i].key, "hyperstream.fixed_size_list") == 0) {
            c.fixed_hints = hs_json_loads(m->kv[i].value, 0, NULL);
            if (c.fixed_hints && !json_is_object(c.fixed_hints)) {
                json_decref(c.fixed_hints);
                c.fixed_hints = NULL;
            }
        }
    out->n_leaves = c.n_leaves;
    c.leaves = out->leaves = hs_arena_calloc(c.a, (size_t)c.n_leaves, sizeof *out->leaves);
    out->n_tops = root.n_children;
    out->tops = hs_arena_calloc(c.a, (size_t)root.n_children, sizeof *out->tops);
    stack = hs_malloc(sizeof(*stack) * (2 * PQ_MAX_NESTING + 8));
    if (!out->leaves || !out->tops || !stack) {
        st = hs_err_nomem(err, sizeof *out->leaves * (size_t)c.n_leaves);
        goto fail;
    }
    for (int i = 0; i < root.n_children; i++)
        leaf_dotted(&c, i, &root.children[i], "");
    lvl top = { 0, 0 };
    for (int i = 0; i < root.n_children; i++) {
        out->tops[i].child_index = i;
        st = map_node(&c, &root.children[i], top, &out->tops[i], false, "", 0);
        if (st != HS_OK)
            goto fail;
        st = index_leaves(&c, &out->tops[i], i, stack, 0);
        if (st != HS_OK)
            goto fail;
    }
    hs_field_init(&out->root, ename(&m->schema[0]), HS_TYPE_STRUCT, false);
    for (int i = 0; i < out->n_tops; i++) {
        hs_field ch;
        memset(&ch, 0, sizeof ch);
        st = to_field(&out->tops[i], &ch);
        if (st == HS_OK)
            st = hs_field_add_child(&out->root, &ch);
        if (st != HS_OK) {
            hs_field_clear(&ch);
            st = hs_err_nomem(err, 64);
            goto fail;
        }
    }
    hs_free(stack);
    if (c.fixed_hints)
        json_decref(c.fixed_hints);
    return HS_OK;
fail:
    hs_free(stack);
    if (c.fixed_hints)
        json_decref(c.fixed_hints);
    pq_schema_free(out);
    return st;
}

void pq_schema_free(pq_schema_info *s)
{
    if (!s)
        return;
    hs_field_clear(&s->root);
    hs_arena_destroy(&s->arena);
    memset(s, 0, sizeof *s);
}

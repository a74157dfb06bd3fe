/*
 * parquet/writer_int.h - internals shared by the Parquet writer's files:
 * schema_write.c (hs_field tree -> SchemaElements + leaf descriptors) and
 * writer.c (shredding, pages, row groups, footer).
 *
 * A leaf descriptor says how to reach one leaf column from its top-level
 * column (the node chain) and how to turn its Arrow values into Parquet
 * physical values (the value kind).
 *
 *   node kind      Arrow column          levels contributed
 *   PQ_NODE_PLAIN  struct or primitive   +1 def if nullable
 *   PQ_NODE_LIST   LIST (offsets)        +1 def if nullable; +1 def +1 rep for the
 *                                        repeated group (non-empty list)
 *   PQ_NODE_FIXED  FIXED_LIST (width)    as LIST, ranges i*width .. (i+1)*width
 *   PQ_NODE_MAP    MAP (offsets)         as LIST; its child is the entries struct,
 *                                        always treated as required
 *
 * The chain nodes[0] is the top-level column, nodes[n_nodes-1] the leaf; for
 * a non-leaf node, child is the index of the child column to descend into.
 */
#ifndef HS_PARQUET_WRITER_INT_H
#define HS_PARQUET_WRITER_INT_H

#include "base/arena.h"
#include "columnar/column.h"
#include "parquet/meta.h"
#include "parquet/stats.h"

#define PQ_MAX_DEPTH 64

typedef enum pq_node_kind { PQ_NODE_PLAIN = 0, PQ_NODE_LIST, PQ_NODE_FIXED, PQ_NODE_MAP } pq_node_kind;

typedef struct pq_wnode {
    pq_node_kind kind;
    bool nullable;
    int child;          /* child column to descend into (non-leaf nodes) */
    int32_t width;      /* PQ_NODE_FIXED */
    int16_t rep_level;  /* list-like nodes: rep level of the 2nd.. element */
} pq_wnode;

/* How Arrow values become physical values. */
typedef enum pq_vkind {
    PQ_VK_NULL = 0,   /* null type: no values ever */
    PQ_VK_BOOL,       /* bits -> BOOLEAN */
    PQ_VK_COPY,       /* same bytes: int32/int64/float/double/date/time/timestamp, FLBA */
    PQ_VK_I8, PQ_VK_I16, PQ_VK_U8, PQ_VK_U16,  /* widen to INT32 */
    PQ_VK_MUL1000_32, /* time32[s] -> TIME(MILLIS) */
    PQ_VK_MUL1000_64, /* timestamp[s] -> TIMESTAMP(MILLIS) */
    PQ_VK_BYTES,      /* STRING/BINARY -> BYTE_ARRAY */
    PQ_VK_DEC32, PQ_VK_DEC64, PQ_VK_DECFLBA    /* decimal128 -> INT32/INT64/FLBA(w) BE */
} pq_vkind;

typedef struct pq_wleaf {
    int top;                      /* top-level column index */
    int n_nodes;
    pq_wnode nodes[PQ_MAX_DEPTH];
    int16_t max_def, max_rep;
    pq_ptype ptype;
    int32_t type_length;          /* FLBA width */
    pq_vkind vk;
    pq_order order;
    int src_width;                /* Arrow value width in bytes (0 for bytes/bool) */
    int n_path;
    const char **path;            /* in the writer's arena */
    const char *dotted;           /* "a.list.element" */
    int schema_index;             /* element index in the schema array */
    /* resolved per-column options */
    bool dictionary;
    pq_encoding encoding;         /* value encoding when not dictionary (or after fallback) */
} pq_wleaf;

typedef struct pq_wschema {
    pq_schema_element *elems;     /* depth-first, [0] = root; in the arena */
    int n_elems;
    pq_wleaf *leaves;             /* hs_malloc'd array, n_leaves */
    int n_leaves;
    char *fixed_list_json;        /* arena; NULL when no FIXED_LIST column */
} pq_wschema;

/* Builds the Parquet schema of `schema` (a STRUCT).  Strings and elements are
 * allocated in arena; out->leaves is freed with pq_wschema_free. */
HS_MUST_USE hs_status pq_wschema_build(const hs_field *schema, hs_arena *arena,
                                       pq_wschema *out, hs_error *err);
void pq_wschema_free(pq_wschema *s);

/* Key of the file key-value entry that lists FIXED_LIST columns:
 * {"<dotted path of the list group>": width, ...}. */
#define PQ_FIXED_LIST_KEY "hyperstream.fixed_size_list"

#endif

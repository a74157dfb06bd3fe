/*
 * parquet/reader_int.h - internals shared by reader.c and schema_read.c.
 *
 * schema_read.c turns the flat, depth-first Parquet schema into two parallel
 * trees: the hs_field tree the user sees, and a tree of "assembly nodes"
 * (pq_anode) that say how definition/repetition levels of a leaf become
 * validity bits, list offsets and child slots.  For one level entry (d, r) of
 * a leaf, every node j on the leaf's path obeys:
 *
 *   node j gets a new slot       iff  r <= rep_ctx[j]  and  d >= def_reach[j]
 *   that slot is valid (non-null) iff d >= def_valid[j]   (nullable nodes only)
 *   a LIST slot holds >= 1 elem  iff  d >= def_nonempty[j]
 *   the leaf slot holds a value  iff  d == max_def
 *
 * where rep_ctx is the number of repeated ancestors above the node, def_reach
 * the definition level at which the node's slot exists (0 at the top, the
 * parent's def_reach inside a struct, the list's def_nonempty for a list
 * element) and def_valid the node's own definition level.  Non-nullable nodes
 * under a null parent still get a slot (Arrow's rule) but no validity bit.
 *
 *   kind      hs type                 children
 *   LEAF      any primitive / NA       -
 *   STRUCT    STRUCT                   one per field
 *   LIST      LIST, MAP, FIXED_LIST    1 (MAP: the STRUCT "entries")
 *
 * Ownership: everything in a pq_schema_info lives in its arena, except `root`
 * (an hs_field tree freed by pq_schema_free).
 */
#ifndef HS_PARQUET_READER_INT_H
#define HS_PARQUET_READER_INT_H

#include "base/arena.h"
#include "columnar/column.h"
#include "parquet/meta.h"

#define PQ_MAX_NESTING 64   /* schema depth bound (levels fit in uint16 easily) */

typedef enum { PQ_AN_LEAF = 0, PQ_AN_STRUCT, PQ_AN_LIST } pq_anode_kind;

/* How a leaf's physical values become output values. */
typedef enum {
    PQ_CV_COPY = 0,     /* same bytes: ints, floats, FLBA -> fixed binary / float16 */
    PQ_CV_I32_TO_I8,    /* narrowing (int8 / uint8) */
    PQ_CV_I32_TO_I16,   /* narrowing (int16 / uint16) */
    PQ_CV_INT96_TO_NS,  /* Impala/Spark timestamps -> int64 nanoseconds */
    PQ_CV_I32_TO_DEC,   /* sign-extend into decimal128 */
    PQ_CV_I64_TO_DEC,
    PQ_CV_BE_TO_DEC,    /* big-endian two's complement FLBA / BYTE_ARRAY -> decimal128 */
    PQ_CV_BOOL,         /* BOOLEAN -> bits */
    PQ_CV_BYTES,        /* BYTE_ARRAY -> STRING / BINARY */
    PQ_CV_NULL          /* NA: every slot null, stored values ignored */
} pq_conv;

typedef struct pq_anode pq_anode;
struct pq_anode {
    pq_anode_kind kind;
    /* output field attributes (copied into the hs_field tree) */
    const char *name;                  /* arena */
    hs_type type;
    bool nullable;
    int32_t field_id;
    int32_t precision, scale, width;
    hs_time_unit unit;
    const char *tz;                    /* static string or NULL */
    hs_ext ext;
    /* levels */
    int16_t def_reach, def_valid, rep_ctx;
    int16_t list_rep, def_nonempty;    /* LIST */
    /* tree */
    int child_index;                   /* index in the parent's children */
    int first_leaf, n_leaves;
    int n_children;
    pq_anode *children;                /* arena array */
    int schema_index;                  /* element in pq_file_meta.schema that named it */
};

typedef struct pq_leaf {
    const pq_schema_element *elem;
    int16_t max_def, max_rep;
    int top;                           /* top-level column holding it */
    int depth;                         /* nodes on path */
    const pq_anode **path;             /* path[0] = top node ... path[depth-1] = leaf */
    const char *dotted;                /* Parquet path "a.list.element", for messages */
    pq_conv conv;
    int out_width;                     /* bytes per output value (0 for bytes/bool/NA) */
    int phys_width;                    /* bytes per physical value (0 BYTE_ARRAY) */
} pq_leaf;

typedef struct pq_schema_info {
    hs_field root;                     /* STRUCT; owned */
    int n_tops;
    pq_anode *tops;                    /* arena */
    int n_leaves;
    pq_leaf *leaves;                   /* arena */
    hs_arena arena;
} pq_schema_info;

/* Builds the schema mapping of m.  `name` names the file in messages.
 * On failure out is left empty (pq_schema_free is still safe). */
HS_MUST_USE hs_status pq_schema_build(const pq_file_meta *m, const char *name,
                                      pq_schema_info *out, hs_error *err);
void pq_schema_free(pq_schema_info *s);

/* Test knob (tests only; set it before scanning, never while scans run):
 * true makes reader.c assemble every page through its general per-entry
 * paths, with none of the dense-page shortcuts (levels that are all max_def,
 * whole rows of one list width), so tests can compare the two. */
extern bool pq_read_no_fast_paths;

#endif

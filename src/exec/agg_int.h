/*
 * exec/agg_int.h - HashAggregate's state, shared by agg.c (the operator:
 * groups, per-row loops, parallel workers, spilling) and agg_global.c
 * (global aggregates: straight loops over the column, count(*) from the
 * data files' record counts).  Internal to src/exec.
 */
#ifndef HS_EXEC_AGG_INT_H
#define HS_EXEC_AGG_INT_H

#include "exec/exec_int.h"
#include "base/hashmap.h"
#include "expr/pgvector.h"

#define AGG_PARTS 16
#define AGG_MAX_LEVEL 4

/* ACC_IV: sum of intervals, the running hs_interval in isum's 16 bytes
 * (PostgreSQL's interval_pl: each part on its own, 22008 on overflow). */
typedef enum acc_class { ACC_NONE = 0, ACC_INT, ACC_FLOAT, ACC_DEC, ACC_IV } acc_class;

#define XO_AGG_MAX_ORDER 16   /* ORDER BY keys of one string_agg/array_agg */

#define AGG_SMALL 16   /* at most this many groups: rows ordered by group per batch */

typedef struct agg_state {
    xo_agg a;              /* a.sep, a.name owned copies */
    int same;              /* >= 0: aggregate `same` of this operator keeps the
                            * state this one reads (share_states); this one's
                            * arrays stay zero and its rows are not read */
    acc_class cls;
    int scale;             /* decimal argument's scale (avg) */
    hs_field store_schema; /* min/max/string_agg/array_agg: value [, sep] [, order cols] */
    xo_sort_key *okeys;    /* ORDER BY keys over store columns (n = a.n_order) */
    int first_ocol;        /* store position of the first order column */
    int64_t *cnt;
    __int128 *isum;
    double *fsum;
    uint8_t *flag;
    pv_type pvt;           /* sum/avg of vector/halfvec (0: not): pv per group */
    pv_agg *pv;
    int64_t *best;         /* min/max: store row; string/array_agg: head */
    int64_t *tail;
    xo_rows store;
    hs_buf nxt;            /* int64 per stored value */
    hs_map seen;           /* DISTINCT: (group, value key) pairs seen */
    int64_t seen_bytes;
    hs_imap iseen;         /* DISTINCT: the pairs of an integer value within
                            * int32 and a group below 2^32, packed */
    /* DISTINCT on a parallel worker (see the top): each value the first
     * time the worker sees it in a group, and that (worker) group */
    bool dkeep;
    hs_field dschema;      /* one child: the argument's field */
    xo_rows dvals;
    hs_buf dgid;           /* int64 per dvals row */
} agg_state;

typedef struct agg_op {
    xo_op op;
    int n_groups, n_aggs;
    agg_state *aggs;
    hs_field key_schema;
    hs_map map;
    int64_t map_key_bytes;
    bool int_key;          /* one integer-like group column: imap on its value */
    bool str_keys;         /* all group columns strings: short keys packed (pack_batch) */
    bool int_pair;         /* two integer group columns: pairs within int32 packed */
    hs_imap imap;
    int64_t null_gid;      /* int_key: the NULL group, -1 until seen */
    xo_rows keys;
    int64_t n_total, cap;  /* groups, allocated slots */
    int64_t accounted;     /* bytes of maps and arrays reserved in ctx */
    hs_buf kb;             /* key scratch */
    int64_t *gid;
    int64_t gid_cap;
    uint64_t *pk;          /* str_keys: each row's packed key (pack_batch) */
    uint8_t *pk_used;      /* ... its bytes used, PK_NONE: does not fit */
    int64_t pk_cap;
    bool ord_ok;           /* ord/gstart hold this batch's rows by group (order_small) */
    int32_t *ord;
    int64_t ord_cap;
    int64_t gstart[AGG_SMALL + 1];
    int64_t *scratch;      /* min/max per-batch best, size cap */
    hs_batch *result;
    int64_t emitted;
    bool done;
    /* parallel partial aggregation (see top) */
    struct agg_op **workers;
    int n_workers;
    bool par_tried;
    bool count_tried;      /* agg_count_known ran */
    int counted;           /* count_known, the child not read: 1 from the data files'
                            * record counts, 2 from the indexes (xo_count_rows) */
    /* spilling (see top) */
    bool probe_only;       /* assign_groups: look up only, -1 for a missing group */
    bool spilling;
    int level;             /* 0, or the depth of a partition's aggregate */
    xo_spill sp;
    hs_buf part[AGG_PARTS];/* block offsets (int64) of each partition */
    int next_part;
    xo_op *sub;            /* the aggregate of the partition being emitted */
    int64_t spilled_rows, sub_spilled;
} agg_op;

/* agg_global.c */
/* A global aggregate's batch b into state a (group 0) straight over the
 * column; false with nothing changed when not covered (*st untouched). */
bool agg_update_global(agg_state *a, const hs_batch *b, hs_status *st, hs_error *err);
/* Whether every aggregate of global aggregate s is one agg_update_global
 * covers (by the argument types of its child's schema). */
bool agg_global_cheap(const agg_op *s);
/* count(*) alone without groups over a child of known row count, or one
 * that counts its rows without producing them: sets the counts (and
 * s->counted) and *done. */
HS_MUST_USE hs_status agg_count_known(agg_op *s, bool *done, hs_error *err);

#endif

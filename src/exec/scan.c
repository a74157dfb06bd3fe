/*
 * exec/scan.c - the source operators over tables: Scan (hs_scan_plan +
 * hs_scan_stream: pruning, sidecar indexes, deletes and the exact filter
 * all happen in the table layer) and VectorSearch (hs_table_search).
 *
 * Both import the table layer's ArrowArrayStream as a batch source (the
 * table scan's own batches, hs_arrow_own_source: no Arrow round trip) and
 * relabel every batch with the operator's schema (field ids renumbered to
 * positions, exec/op.h).  Scan plans in its constructor, so that unknown
 * columns and filter errors surface when the plan is built; it keeps the
 * hs_scan handle (owned by the stream) to report the planning and index
 * counters in EXPLAIN, copying them when the stream ends.  VectorSearch
 * runs the search in its constructor (its result is k rows) and streams
 * the answer.
 *
 * Runtime join filters (xo_push_keyfilter) go to the table scan
 * (table/rtfilter.h), which applies them to the files it starts reading
 * from then on; EXPLAIN ANALYZE shows the rows each one removed.
 */
#include "exec/exec_int.h"
#include "columnar/arrow_c.h"
#include "table/rtfilter.h"

#include <inttypes.h>
#include <stdio.h>

typedef struct scan_op {
    xo_op op;
    hs_batch_source src;   /* ctx NULL = closed */
    hs_scan *scan;         /* borrowed from the stream, NULL for vector search */
    bool done;
    hs_scan_stats stats;   /* copied at the end of the stream */
    hs_index_stats istats;
} scan_op;

static void scan_snapshot_stats(scan_op *s)
{
    if (s->scan) {
        hs_scan_get_stats(s->scan, &s->stats);
        hs_scan_get_index_stats(s->scan, &s->istats);
    }
}

static hs_status scan_next(xo_op *op, hs_batch **out, hs_error *err)
{
    scan_op *s = (scan_op *)op;
    while (!s->done) {
        HS_TRY(xo_check_cancel(op->ctx, err));
        hs_batch *b = NULL;
        hs_status st = s->src.next(s->src.ctx, &b, err);
        if (st != HS_OK) {
            scan_snapshot_stats(s);
            s->done = true;
            return st;
        }
        if (!b) {
            scan_snapshot_stats(s);
            s->done = true;
            return HS_OK;
        }
        if (b->n_rows == 0) {
            hs_batch_free(b);
            continue;
        }
        if (b->n_cols != op->schema.n_children) {
            hs_batch_free(b);
            return hs_err_set(err, HS_INTERNAL, "%s: batch of %d columns, schema has %d",
                              op->name, b->n_cols, op->schema.n_children);
        }
        st = xo_batch_set_schema(b, &op->schema, err);
        if (st != HS_OK) {
            hs_batch_free(b);
            return st;
        }
        *out = b;
        return HS_OK;
    }
    return HS_OK;
}

static void scan_destroy(xo_op *op)
{
    scan_op *s = (scan_op *)op;
    if (s->src.ctx && s->src.close)
        s->src.close(s->src.ctx);
    hs_field_clear(&s->src.schema);
    s->src.ctx = NULL;
    s->scan = NULL;
}

static hs_status scan_extra(const xo_op *op, hs_buf *out, hs_error *err)
{
    const scan_op *s = (const scan_op *)op;
    hs_scan_stats st = s->stats;
    hs_index_stats is = s->istats;
    if (!s->done && s->scan) {
        hs_scan_get_stats(s->scan, &st);
        hs_scan_get_index_stats(s->scan, &is);
    }
    hs_status r = hs_buf_printf(out,
                                "Files: %" PRId64 " total, %" PRId64 " pruned by partition/bounds"
                                ", %" PRId64 " pruned by index; manifests %" PRId64 " total, %" PRId64
                                " pruned; delete files %" PRId64 "\n",
                                st.data_files_total, st.data_files_pruned, is.files_pruned_by_index,
                                st.manifests_total, st.manifests_pruned, st.delete_files);
    if (r == HS_OK)
        r = hs_buf_printf(out,
                          "Index: %" PRId64 " files used an index (%" PRId64 " lookups, %" PRId64
                          " sidecars skipped), %" PRId64 " candidate rows\n",
                          is.files_indexed, is.index_lookups, is.index_files_skipped,
                          is.rows_selected_by_index);
    if (r == HS_OK)
        r = hs_buf_printf(out,
                          "Row groups: %" PRId64 " read, %" PRId64 " skipped; pages: %" PRId64
                          " decoded, %" PRId64 " skipped; rows decoded %" PRId64 ", deleted %" PRId64
                          "\n",
                          is.row_groups_read, is.row_groups_skipped, is.pages_decoded,
                          is.pages_skipped, is.rows_decoded, st.rows_deleted);
    const tbl_rtfilter *rf = NULL;
    int n_rf = s->scan ? tbl_scan_rtfilters(s->scan, &rf) : 0;
    for (int i = 0; r == HS_OK && i < n_rf; i++) {
        int64_t in = atomic_load(&rf[i].rows_in), kept = atomic_load(&rf[i].rows_out);
        r = hs_buf_printf(out,
                          "Runtime filter on %s: %s of %" PRId64 " keys (%" PRId64
                          " bytes); rows %" PRId64 " checked, %" PRId64 " removed%s\n",
                          op->schema.children[rf[i].col].name, hs_keyfilter_kind_name(rf[i].kf),
                          rf[i].kf->n_keys, hs_keyfilter_bytes(rf[i].kf), in, in - kept,
                          atomic_load(&rf[i].off) ? " (turned off: kept most rows)" : "");
    }
    return r == HS_OK ? HS_OK : hs_err_nomem(err, 0);
}

static bool scan_push_keyfilter(xo_op *op, int col, hs_keyfilter *kf)
{
    scan_op *s = (scan_op *)op;
    if (!s->scan || s->done) {
        hs_keyfilter_free(kf);
        return false;
    }
    return tbl_scan_add_rtfilter(s->scan, col, kf);
}

/* Unknown once a runtime filter came: the scan is no longer the whole
 * table (a join above that builds on it then sends filters of its own:
 * TPC-H Q5's supplier, cut to one region's by the nation join above). */
static int64_t scan_exact_rows(const xo_op *op)
{
    const scan_op *s = (const scan_op *)op;
    const tbl_rtfilter *rf = NULL;
    if (!s->scan || s->done || tbl_scan_rtfilters(s->scan, &rf) > 0)
        return -1;
    return tbl_scan_exact_rows(s->scan);
}

/* The filtered scan's rows from its indexes (tbl_scan_index_count): the
 * scan is then done, its counters kept for EXPLAIN ANALYZE. */
static hs_status scan_count_rows(xo_op *op, int64_t *n, hs_error *err)
{
    scan_op *s = (scan_op *)op;
    *n = -1;
    if (!s->scan || s->done)
        return HS_OK;
    HS_TRY(tbl_scan_index_count(s->scan, n, err));
    if (*n >= 0) {
        scan_snapshot_stats(s);
        s->done = true;
    }
    return HS_OK;
}

static int64_t scan_max_rows(const xo_op *op)
{
    const scan_op *s = (const scan_op *)op;
    return s->scan && !s->done ? tbl_scan_max_rows(s->scan) : -1;
}

/* Takes the stream (moved) into op's source and sets the schema. */
static hs_status scan_adopt(xo_op *op, struct ArrowArrayStream *stream, hs_error *err)
{
    scan_op *s = (scan_op *)op;
    if (!hs_arrow_own_source(stream, &s->src))   /* a table scan's stream: its own batches */
        HS_TRY(hs_arrow_import_stream(stream, &s->src, err));
    hs_field_clear(&op->schema);
    if (hs_field_copy(&s->src.schema, &op->schema) != HS_OK) {
        hs_field_init(&op->schema, "", HS_TYPE_STRUCT, false);
        return hs_err_nomem(err, 0);
    }
    xo_schema_renumber(&op->schema);
    return HS_OK;
}

static hs_status scan_detail(xo_op *op, const hs_scan_options *opt, const char *more,
                             hs_error *err)
{
    hs_buf d = {0};
    hs_status s = HS_OK;
    if (opt && opt->filter && opt->filter[0])
        s = hs_buf_printf(&d, "filter: %s", opt->filter);
    if (s == HS_OK && opt && opt->use_snapshot_id)
        s = hs_buf_printf(&d, "%ssnapshot: %" PRId64, d.len ? "; " : "", opt->snapshot_id);
    if (s == HS_OK && opt && opt->use_as_of)
        s = hs_buf_printf(&d, "%sas of: %" PRId64 " ms", d.len ? "; " : "", opt->as_of_ms);
    if (s == HS_OK && opt && opt->ref)
        s = hs_buf_printf(&d, "%sref: %s", d.len ? "; " : "", opt->ref);
    if (s == HS_OK && more)
        s = hs_buf_printf(&d, "%s%s", d.len ? "; " : "", more);
    if (s != HS_OK) {
        hs_buf_free(&d);
        return hs_err_nomem(err, 0);
    }
    op->detail = d.len ? (char *)hs_buf_detach(&d, NULL) : NULL;
    hs_buf_free(&d);
    return HS_OK;
}

hs_status xo_scan(xo_ctx *ctx, hs_table *t, const hs_scan_options *opt, xo_op **out,
                  hs_error *err)
{
    *out = NULL;
    hs_scan_options o = HS_SCAN_OPTIONS_INIT;
    if (opt) {
        if (opt->struct_size != 0 && opt->struct_size != sizeof o)
            return hs_err_set(err, HS_INVALID, "Scan: hs_scan_options.struct_size is %zu, expected %zu",
                              opt->struct_size, sizeof o);
        o = *opt;
        o.struct_size = sizeof o;
    }
    if (o.batch_size <= 0)
        o.batch_size = XO_BATCH_ROWS;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(scan_op), ctx, "Scan", 0, NULL, &op, err));
    scan_op *s = (scan_op *)op;
    s->stats.struct_size = sizeof s->stats;
    s->istats.struct_size = sizeof s->istats;
    op->next = scan_next;
    op->destroy = scan_destroy;
    op->explain_extra = scan_extra;
    op->push_keyfilter = scan_push_keyfilter;
    op->exact_rows = scan_exact_rows;
    op->max_rows = scan_max_rows;
    op->count_rows = scan_count_rows;
    hs_scan *sc = NULL;
    hs_status st = hs_scan_plan(t, &o, &sc, err);
    struct ArrowArrayStream stream = {0};
    if (st == HS_OK)
        st = hs_scan_stream(sc, &stream, err);   /* takes sc, also on failure */
    if (st == HS_OK) {
        s->scan = sc;
        hs_scan_get_stats(sc, &s->stats);
        hs_scan_get_index_stats(sc, &s->istats);
        st = scan_adopt(op, &stream, err);
        if (st != HS_OK)
            s->scan = NULL;   /* the stream (and the scan) are gone */
    }
    if (st == HS_OK)
        st = scan_detail(op, &o, NULL, err);
    if (st != HS_OK) {
        xo_free(op);
        return st;
    }
    *out = op;
    return HS_OK;
}

hs_status xo_vsearch(xo_ctx *ctx, hs_table *t, const hs_scan_options *opt,
                     const hs_search_options *so, xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(scan_op), ctx, "VectorSearch", 0, NULL, &op, err));
    op->next = scan_next;
    op->destroy = scan_destroy;
    struct ArrowArrayStream stream = {0};
    int64_t t0 = xo_now_ns();
    hs_status st = hs_table_search(t, opt, so, &stream, err);
    op->ns += xo_now_ns() - t0;
    if (st == HS_OK)
        st = scan_adopt(op, &stream, err);
    if (st == HS_OK) {
        char more[256];
        snprintf(more, sizeof more, "column: %s; k: %d; metric: %s%s", so->column ? so->column : "?",
                 so->k, so->metric ? so->metric : "index's",
                 so->ef_search > 0 ? "; ef_search set" : "");
        st = scan_detail(op, opt, more, err);
    }
    if (st != HS_OK) {
        xo_free(op);
        return st;
    }
    *out = op;
    return HS_OK;
}

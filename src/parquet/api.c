/*
 * parquet/api.c - the public Parquet C API (include/hyperstream/parquet.h):
 * Parquet files in and out through the Arrow C Stream Interface.
 *
 * Read path
 *
 *   hs_io_open(path) -> hs_file ---borrowed by---> pq_reader ---> pq_scan
 *                                                                      |
 *   ArrowArrayStream <- hs_arrow_export_stream <- hs_batch_source{next = pq_scan_next}
 *
 *   The batch source's context (pq_read_ctx) owns the file, the reader and the
 *   scan; the exported stream owns the source and closes it (scan, reader,
 *   file, in that order) when the consumer releases the stream.  Errors met
 *   by pq_scan_next travel through the stream's get_last_error.  The source's
 *   schema is the reader's schema projected onto the requested columns, in
 *   the order requested (the scan emits them in that order too).
 *
 * Write path
 *
 *   ArrowArrayStream -> hs_arrow_import_stream -> hs_batch_source
 *        -> pq_writer_write per batch -> pq_writer_finish -> hs_wfile_close
 *
 *   The file is written through hs_local_create, which renames a temporary
 *   file onto `path` only at close, so a failed write leaves nothing under
 *   the name.  The input stream is always released, also when the options
 *   are invalid.
 *
 * Options mapping (hs_parquet_write_options -> pq_writer_options)
 *
 *   codec            hs_codec_parse; NULL = zstd
 *   codec_level      codec_level (<= 0: codec default)
 *   row_group_rows   row_group_rows (0 = writer default)
 *   page_bytes       page_bytes, page_rows likewise
 *   dictionary       -1 -> no_dictionary
 *   data_page_v2     data_page_v2
 *   column_encodings "a=DELTA_BINARY_PACKED,b.c=BYTE_STREAM_SPLIT" -> one
 *                    pq_column_option per entry; non-dictionary encodings
 *                    also switch that column's dictionary off, as pyarrow's
 *                    column_encoding requires.
 */
#include "hyperstream/parquet.h"

#include "base/compress.h"
#include "base/mem.h"
#include "base/opts.h"
#include "columnar/arrow_c.h"
#include "io/io.h"
#include "parquet/reader.h"
#include "parquet/writer.h"

#include <roaring/roaring.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------------ */
/* read                                                                     */
/* ------------------------------------------------------------------------ */

/* Context of the batch source behind an exported read stream.  Owns all. */
typedef struct pq_read_ctx {
    hs_file *file;
    pq_reader *reader;
    pq_scan *scan;
    roaring_bitmap_t *rows;        /* selection, or NULL; must outlive scan */
    int *columns;                  /* projected top-level column indexes */
    hs_parquet_scan_stats *stats;  /* caller's, borrowed; may be NULL; written through
                                    * HS_OUT only (its struct_size may be older) */
} pq_read_ctx;

static void read_ctx_copy_stats(pq_read_ctx *c)
{
    if (!c->stats || !c->scan)
        return;
    const pq_scan_stats *s = pq_scan_get_stats(c->scan);
    if (!s)
        return;
    hs_parquet_scan_stats x = {0};
    x.row_groups_read = s->row_groups_read;
    x.row_groups_skipped = s->row_groups_skipped;
    x.pages_decoded = s->pages_decoded;
    x.pages_skipped = s->pages_skipped;
    x.bytes_read = s->bytes_read;
    x.rows_emitted = s->rows_emitted;
    HS_OUT(hs_parquet_scan_stats, c->stats, x, sizeof x, NULL);
}

static void read_ctx_free(pq_read_ctx *c)
{
    if (!c)
        return;
    read_ctx_copy_stats(c);
    pq_scan_close(c->scan);
    pq_reader_close(c->reader);
    hs_file_close(c->file);
    if (c->rows)
        roaring_bitmap_free(c->rows);
    hs_free(c->columns);
    hs_free(c);
}

static hs_status read_src_next(void *ctx, hs_batch **out, hs_error *err)
{
    pq_read_ctx *c = ctx;
    hs_status s = pq_scan_next(c->scan, out, err);
    read_ctx_copy_stats(c);
    return s;
}

static void read_src_close(void *ctx)
{
    read_ctx_free(ctx);
}

/* Maps names to top-level column indexes of the reader's schema. */
static hs_status resolve_columns(const char *path, const hs_field *schema,
                                 const char *const *names, int n, int *out, hs_error *err)
{
    int i, j;
    for (i = 0; i < n; i++) {
        if (!names[i])
            return hs_err_set(err, HS_INVALID, "%s: column name %d is NULL", path, i);
        for (j = 0; j < schema->n_children; j++)
            if (strcmp(schema->children[j].name, names[i]) == 0)
                break;
        if (j == schema->n_children)
            return hs_err_set(err, HS_NOT_FOUND, "%s: no column named '%s'", path, names[i]);
        out[i] = j;
    }
    return HS_OK;
}

/* Builds dst = STRUCT with deep copies of schema's children at idx[0..n). */
static hs_status project_schema(const hs_field *schema, const int *idx, int n, hs_field *dst,
                                hs_error *err)
{
    int i;
    hs_field_init(dst, schema->name ? schema->name : "", HS_TYPE_STRUCT, schema->nullable);
    dst->field_id = schema->field_id;
    for (i = 0; i < n; i++) {
        hs_field child;
        if (hs_field_copy(&schema->children[idx[i]], &child) != HS_OK) {
            hs_field_clear(dst);
            return hs_err_nomem(err, sizeof child);
        }
        if (hs_field_add_child(dst, &child) != HS_OK) {
            hs_field_clear(&child);
            hs_field_clear(dst);
            return hs_err_nomem(err, sizeof child);
        }
    }
    return HS_OK;
}

static hs_status open_read(const char *path, const char *const *columns, int n_columns,
                           const uint32_t *rows, int64_t n_rows, int64_t batch_size,
                           hs_parquet_scan_stats *stats, struct ArrowArrayStream *out,
                           hs_error *err)
{
    hs_status s;
    pq_read_ctx *c;
    const hs_field *schema;
    pq_scan_options so;
    hs_batch_source src;
    int i, n;

    if (!path || !out)
        return hs_err_set(err, HS_INVALID, "hs_parquet_read: path and out are required");
    memset(out, 0, sizeof *out);
    if (n_columns < 0 || (n_columns > 0 && !columns))
        return hs_err_set(err, HS_INVALID, "%s: bad column list (%d names)", path, n_columns);
    if (n_rows < 0 || (n_rows > 0 && !rows))
        return hs_err_set(err, HS_INVALID, "%s: bad row selection (%lld rows)", path,
                          (long long)n_rows);
    if (batch_size < 0)
        return hs_err_set(err, HS_INVALID, "%s: negative batch size", path);
    hs_parquet_scan_stats zero = {0};
    HS_TRY(HS_OUT(hs_parquet_scan_stats, stats, zero, sizeof zero, err));

    c = hs_calloc(1, sizeof *c);
    if (!c)
        return hs_err_nomem(err, sizeof *c);
    c->stats = stats;
    s = hs_io_open(path, &c->file, err);
    if (s != HS_OK)
        goto fail;
    s = pq_reader_open(c->file, &c->reader, err);
    if (s != HS_OK)
        goto fail;
    schema = pq_reader_schema(c->reader);
    n = columns ? n_columns : schema->n_children;
    c->columns = hs_calloc(n > 0 ? (size_t)n : 1, sizeof(int));
    if (!c->columns) {
        s = hs_err_nomem(err, (size_t)n * sizeof(int));
        goto fail;
    }
    if (columns) {
        s = resolve_columns(path, schema, columns, n, c->columns, err);
        if (s != HS_OK)
            goto fail;
    } else {
        for (i = 0; i < n; i++)
            c->columns[i] = i;
    }
    if (rows) {
        c->rows = roaring_bitmap_create();
        if (!c->rows) {
            s = hs_err_nomem(err, sizeof(roaring_bitmap_t));
            goto fail;
        }
        roaring_bitmap_add_many(c->rows, (size_t)n_rows, rows);
    }

    memset(&so, 0, sizeof so);
    so.columns = c->columns;
    so.n_columns = n;
    so.rows = c->rows;
    so.batch_size = batch_size;
    s = pq_scan_open(c->reader, &so, &c->scan, err);
    if (s != HS_OK)
        goto fail;

    memset(&src, 0, sizeof src);
    s = project_schema(schema, c->columns, n, &src.schema, err);
    if (s != HS_OK)
        goto fail;
    src.next = read_src_next;
    src.close = read_src_close;
    src.ctx = c;
    /* The stream takes ownership of src (and so of c), also on failure. */
    s = hs_arrow_export_stream(&src, out, err);
    if (s != HS_OK)
        hs_err_prefix(err, "%s", path);
    return s;

fail:
    read_ctx_free(c);
    return s;
}

hs_status hs_parquet_read(const char *path, const char *const *columns, int n_columns,
                          int64_t batch_size, struct ArrowArrayStream *out, hs_error *err)
{
    return open_read(path, columns, n_columns, NULL, 0, batch_size, NULL, out, err);
}

hs_status hs_parquet_read_selection(const char *path, const char *const *columns,
                                    int n_columns, const uint32_t *rows, int64_t n_rows,
                                    int64_t batch_size, hs_parquet_scan_stats *stats,
                                    struct ArrowArrayStream *out, hs_error *err)
{
    static const uint32_t no_rows[1];
    /* rows == NULL means "all rows"; an empty but present selection means none. */
    if (rows == NULL && n_rows == 0)
        return open_read(path, columns, n_columns, NULL, 0, batch_size, stats, out, err);
    if (rows == NULL)
        return hs_err_set(err, HS_INVALID, "%s: %lld rows selected but rows is NULL",
                          path ? path : "(null)", (long long)n_rows);
    return open_read(path, columns, n_columns, n_rows ? rows : no_rows, n_rows, batch_size,
                     stats, out, err);
}

/* ------------------------------------------------------------------------ */
/* write                                                                    */
/* ------------------------------------------------------------------------ */

static const struct {
    const char *name;
    pq_encoding enc;
} pq_encoding_names[] = {
    {"PLAIN", PQ_ENC_PLAIN},
    {"RLE", PQ_ENC_RLE},
    {"DELTA_BINARY_PACKED", PQ_ENC_DELTA_BINARY_PACKED},
    {"DELTA_LENGTH_BYTE_ARRAY", PQ_ENC_DELTA_LENGTH_BYTE_ARRAY},
    {"DELTA_BYTE_ARRAY", PQ_ENC_DELTA_BYTE_ARRAY},
    {"BYTE_STREAM_SPLIT", PQ_ENC_BYTE_STREAM_SPLIT},
    {"RLE_DICTIONARY", PQ_ENC_RLE_DICTIONARY},
    {"PLAIN_DICTIONARY", PQ_ENC_PLAIN_DICTIONARY},
};

/* Parsed column_encodings: one option per entry; `text` holds the paths. */
typedef struct col_enc_list {
    char *text;                 /* owned copy of the option string, NUL-split */
    pq_column_option *opts;     /* owned */
    int n;
} col_enc_list;

static void col_enc_list_free(col_enc_list *l)
{
    hs_free(l->text);
    hs_free(l->opts);
    memset(l, 0, sizeof *l);
}

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        *--e = '\0';
    return s;
}

static hs_status parse_column_encodings(const char *spec, col_enc_list *out, hs_error *err)
{
    size_t n_max = 1, k;
    const char *p;
    char *save = NULL, *item;

    memset(out, 0, sizeof *out);
    if (!spec || !*spec)
        return HS_OK;
    for (p = spec; *p; p++)
        n_max += *p == ',';
    out->text = hs_strdup(spec);
    out->opts = hs_calloc(n_max, sizeof *out->opts);
    if (!out->text || !out->opts) {
        col_enc_list_free(out);
        return hs_err_nomem(err, n_max * sizeof *out->opts);
    }
    for (item = strtok_r(out->text, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        char *name, *enc;
        pq_column_option *o;
        if (!eq) {
            hs_status s = hs_err_set(err, HS_INVALID,
                                     "column_encodings: '%s' is not column=ENCODING", item);
            col_enc_list_free(out);
            return s;
        }
        *eq = '\0';
        name = trim(item);
        enc = trim(eq + 1);
        if (!*name) {
            col_enc_list_free(out);
            return hs_err_set(err, HS_INVALID, "column_encodings: empty column name");
        }
        for (k = 0; k < sizeof pq_encoding_names / sizeof pq_encoding_names[0]; k++)
            if (strcasecmp(enc, pq_encoding_names[k].name) == 0)
                break;
        if (k == sizeof pq_encoding_names / sizeof pq_encoding_names[0]) {
            hs_status s = hs_err_set(err, HS_INVALID,
                                     "column_encodings: unknown encoding '%s' for column '%s'",
                                     enc, name);
            col_enc_list_free(out);
            return s;
        }
        o = &out->opts[out->n++];
        o->path = name;
        if (pq_encoding_names[k].enc == PQ_ENC_RLE_DICTIONARY ||
            pq_encoding_names[k].enc == PQ_ENC_PLAIN_DICTIONARY) {
            o->set_dictionary = true;
            o->dictionary = true;
        } else {
            o->set_encoding = true;
            o->encoding = pq_encoding_names[k].enc;
            o->set_dictionary = true;
            o->dictionary = false;
        }
    }
    return HS_OK;
}

static hs_status map_write_options(const hs_parquet_write_options *opt, pq_writer_options *w,
                                   col_enc_list *encs, hs_error *err)
{
    memset(w, 0, sizeof *w);
    memset(encs, 0, sizeof *encs);
    HS_OPTS_IN(opt, hs_parquet_write_options, err);
    w->codec = HS_CODEC_ZSTD;
    if (!opt)
        return HS_OK;
    if (opt->codec)
        HS_TRY(hs_codec_parse(opt->codec, &w->codec, err));
    if (opt->row_group_rows < 0 || opt->page_bytes < 0 || opt->page_rows < 0)
        return hs_err_set(err, HS_INVALID, "write options: negative row group or page size");
    w->codec_level = opt->codec_level;
    w->row_group_rows = opt->row_group_rows;
    w->page_bytes = opt->page_bytes;
    w->page_rows = opt->page_rows;
    w->no_dictionary = opt->dictionary < 0;
    w->data_page_v2 = opt->data_page_v2 != 0;
    HS_TRY(parse_column_encodings(opt->column_encodings, encs, err));
    w->column_options = encs->opts;
    w->n_column_options = encs->n;
    return HS_OK;
}

/* Pulls every batch from src into w. */
static hs_status write_all(hs_batch_source *src, pq_writer *w, hs_error *err)
{
    for (;;) {
        hs_batch *b = NULL;
        hs_status s = src->next(src->ctx, &b, err);
        if (s != HS_OK) {
            hs_batch_free(b);
            return s;
        }
        if (!b)
            return HS_OK;
        s = pq_writer_write(w, b, err);
        hs_batch_free(b);
        if (s != HS_OK)
            return s;
    }
}

hs_status hs_parquet_write(const char *path, struct ArrowArrayStream *in,
                           const hs_parquet_write_options *opt, hs_error *err)
{
    hs_status s;
    pq_writer_options wo;
    col_enc_list encs;
    hs_batch_source src;
    bool have_src = false;
    hs_wfile *wf = NULL;
    pq_writer *w = NULL;

    memset(&src, 0, sizeof src);
    if (!path || !in || !in->release) {
        s = hs_err_set(err, HS_INVALID, "hs_parquet_write: path and a live stream are required");
        goto done_release_in;
    }
    s = map_write_options(opt, &wo, &encs, err);
    if (s != HS_OK) {
        hs_err_prefix(err, "%s", path);
        goto done_release_in;
    }
    s = hs_arrow_import_stream(in, &src, err);
    if (s != HS_OK)
        goto done;
    have_src = true;
    s = hs_io_create(path, HS_WFILE_NO_SYNC, &wf, err);
    if (s != HS_OK)
        goto done;
    s = pq_writer_open(wf, &src.schema, &wo, &w, err);
    if (s != HS_OK)
        goto done;
    s = write_all(&src, w, err);
    if (s != HS_OK)
        goto done;
    s = pq_writer_finish(w, err);
    if (s != HS_OK)
        goto done;
    pq_writer_free(w);
    w = NULL;
    s = hs_wfile_close(wf, err);
    wf = NULL;

done:
    pq_writer_free(w);
    if (wf)
        hs_wfile_abort(wf);
    if (have_src) {
        src.close(src.ctx);
        hs_field_clear(&src.schema);   /* the imported schema is the caller's to free */
    }
    col_enc_list_free(&encs);
    if (s != HS_OK)
        hs_err_prefix(err, "writing %s", path);
    /* A failed import may leave the producer's stream unreleased. */
    if (in && in->release)
        in->release(in);
    return s;

done_release_in:
    if (in && in->release)
        in->release(in);
    return s;
}

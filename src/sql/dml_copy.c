/*
 * sql/dml_copy.c - COPY between a table (or a query) and a file.
 *
 * COPY: FROM 'x.parquet' (columns by name) or 'x.csv' (FORMAT csv; columns
 * by position - the table's or the column list's -, HEADER skips the first
 * record; DELIMITER one character; NULL is an unquoted empty cell), TO
 * 'x.parquet' or 'x.csv' of a table or a query.  File names are URIs
 * (io/io.h: local paths, file://, s3:// and s3a:// objects).
 *
 * Rows read by COPY FROM are inserted as INSERT inserts them
 * (dml_insert_batch, dml.c); COPY TO writes what a query returns.
 */
#include "sql/dml_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- COPY ---- */

typedef struct copy_opts {
    int format;              /* 0 = by extension, 1 = csv, 2 = parquet */
    bool header;
    char delimiter;
} copy_opts;

static bool defelem_bool(json_t *arg, bool dflt)
{
    const char *k;
    json_t *b;
    if (!arg || !sq_node(arg, &k, &b))
        return dflt ? dflt : true;   /* a bare option name means true */
    if (!strcmp(k, "Boolean"))
        return json_is_true(json_object_get(b, "boolval"));
    if (!strcmp(k, "Integer"))
        return json_integer_value(json_object_get(b, "ival")) != 0;
    const char *s = sq_str(arg);
    return s && (!strcasecmp(s, "true") || !strcasecmp(s, "on") || !strcmp(s, "1"));
}

static hs_status copy_options(dctx *c, json_t *opts, const char *file, copy_opts *o, hs_error *err)
{
    memset(o, 0, sizeof *o);
    o->delimiter = ',';
    for (size_t i = 0; i < json_array_size(opts); i++) {
        const char *k;
        json_t *d;
        if (!sq_node(json_array_get(opts, i), &k, &d) || strcmp(k, "DefElem") != 0)
            continue;
        const char *name = dml_jstr(d, "defname");
        json_t *arg = json_object_get(d, "arg");
        const char *sv = arg ? sq_str(arg) : NULL;
        int loc = sq_loc(d);
        if (!name)
            continue;
        if (!strcmp(name, "format")) {
            if (sv && !strcasecmp(sv, "csv"))
                o->format = 1;
            else if (sv && !strcasecmp(sv, "parquet"))
                o->format = 2;
            else
                return FAIL(c, HS_UNSUPPORTED, "0A000", loc, "COPY format \"%s\" is not "
                            "supported (csv, parquet)", sv ? sv : "");
        } else if (!strcmp(name, "header")) {
            o->header = defelem_bool(arg, false);
        } else if (!strcmp(name, "delimiter")) {
            if (!sv || strlen(sv) != 1)
                return FAIL(c, HS_INVALID, "22023", loc, "COPY delimiter must be a single "
                            "one-byte character");
            o->delimiter = sv[0];
        } else {
            return FAIL(c, HS_UNSUPPORTED, "0A000", loc, "COPY option \"%s\" is not supported",
                        name);
        }
    }
    if (o->format == 0) {
        size_t n = strlen(file);
        if (n >= 4 && !strcasecmp(file + n - 4, ".csv"))
            o->format = 1;
        else if (n >= 8 && !strcasecmp(file + n - 8, ".parquet"))
            o->format = 2;
        else
            return FAIL(c, HS_UNSUPPORTED, "0A000", -1, "COPY of \"%s\": say FORMAT csv or "
                        "FORMAT parquet (the text format is not supported)", file);
    }
    if (o->format == 2 && (o->delimiter != ',' || o->header))
        return FAIL(c, HS_INVALID, "42601", -1, "COPY delimiter and header are only for CSV");
    return HS_OK;
}

/* The CSV text with our own header line (the names of table columns
 * cols[0..n_cols)), the
 * file's first record dropped when it is a header; delimiter turned into
 * commas outside quotes (so columnar/ingest reads it). */
static hs_status csv_with_header(const txn *x, const int *cols, int n_cols, const hs_buf *in,
                                 const copy_opts *o, hs_buf *out, hs_error *err)
{
    for (int i = 0; i < n_cols; i++) {
        const char *nm = x->tschema.children[cols[i]].name;
        if (hs_buf_append(out, i ? "," : "", i ? 1 : 0) != HS_OK ||
            hs_buf_append(out, "\"", 1) != HS_OK)
            return hs_err_nomem(err, 64);
        for (const char *p = nm; *p; p++)
            if ((*p == '"' && hs_buf_append(out, "\"", 1) != HS_OK) ||
                hs_buf_append(out, p, 1) != HS_OK)
                return hs_err_nomem(err, 64);
        if (hs_buf_append(out, "\"", 1) != HS_OK)
            return hs_err_nomem(err, 64);
    }
    if (hs_buf_append(out, "\n", 1) != HS_OK)
        return hs_err_nomem(err, 64);
    size_t i = 0;
    bool q = false;
    if (o->header) {
        for (; i < in->len; i++) {
            if (in->data[i] == '"')
                q = !q;
            else if (in->data[i] == '\n' && !q) {
                i++;
                break;
            }
        }
    }
    q = false;
    for (; i < in->len; i++) {
        uint8_t ch = in->data[i];
        if (ch == '"')
            q = !q;
        if (!q && o->delimiter != ',' && ch == (uint8_t)o->delimiter)
            ch = ',';
        else if (!q && o->delimiter != ',' && ch == ',') {
            /* a literal comma in an unquoted cell: quote would be needed;
             * refuse rather than split the cell */
            return hs_err_set(err, HS_UNSUPPORTED, "COPY: an unquoted ',' in a file whose "
                              "delimiter is '%c'", o->delimiter);
        }
        if (hs_buf_append(out, &ch, 1) != HS_OK)
            return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

static hs_status copy_from(dctx *c, txn *x, json_t *body, const char *file, int64_t *count,
                           hs_error *err)
{
    json_t *rv = json_object_get(body, "relation");
    hs_table *t = NULL;
    HS_TRY(sq_table_lookup(c->s, rv, c->text, &t, err));
    const char *name = dml_jstr(rv, "relname");
    copy_opts o;
    HS_TRY(copy_options(c, json_object_get(body, "options"), file, &o, err));
    if (json_object_get(body, "whereClause"))
        return FAIL(c, HS_UNSUPPORTED, "0A000", -1, "COPY FROM ... WHERE is not supported");
    HS_TRY(dml_txn_use(c, x, t, name ? name : "", sq_loc(rv), err));
    int nt = x->tschema.n_children;
    hs_batch *src = NULL;
    hs_status st = HS_OK;
    int *map = hs_calloc((size_t)nt + 1, sizeof *map);
    if (!map)
        return hs_err_nomem(err, 64);
    int n_map = 0;
    /* a column list: the file's columns, in order (CSV) / the only ones
     * read (Parquet); other columns get NULL */
    json_t *att = json_object_get(body, "attlist");
    int n_att = (int)json_array_size(att);
    int *att_col = hs_calloc((size_t)n_att + 1, sizeof *att_col);
    if (!att_col) {
        hs_free(map);
        return hs_err_nomem(err, 64);
    }
    for (int i = 0; st == HS_OK && i < n_att; i++) {
        const char *an = sq_str(json_array_get(att, (size_t)i));
        att_col[i] = an ? dml_table_col(x, an) : -1;
        if (att_col[i] < 0)
            st = FAIL(c, HS_NOT_FOUND, "42703", -1, "column \"%s\" of relation \"%s\" does not "
                      "exist", an ? an : "", x->tname);
        for (int j = 0; st == HS_OK && j < i; j++)
            if (att_col[j] == att_col[i])
                st = FAIL(c, HS_INVALID, "42701", -1, "column \"%s\" specified more than once",
                          an);
    }
    if (o.format == 2) {
        struct ArrowArrayStream s;
        hs_field sf = {0};
        st = hs_parquet_read(file, NULL, 0, 0, &s, err);
        if (st == HS_OK)
            st = dml_read_stream(&s, &src, &sf, err);
        for (int j = 0; st == HS_OK && j < src->n_cols; j++) {
            int col = dml_table_col(x, src->schema.children[j].name);
            bool listed = n_att == 0;
            for (int i = 0; i < n_att; i++)
                listed |= att_col[i] == col;
            if (col >= 0 && !listed)
                col = -2;   /* not in the column list: not read */
            if (col == -2)
                map[n_map++] = -1;
            else if (col < 0)
                st = FAIL(c, HS_NOT_FOUND, "42703", -1, "column \"%s\" of %s does not exist in "
                          "relation \"%s\"", src->schema.children[j].name, file, x->tname);
            else
                map[n_map++] = col;
        }
        hs_field_clear(&sf);
    } else {
        hs_buf raw = {0}, text = {0};
        int ncsv = n_att ? n_att : nt;
        for (int i = 0; i < ncsv; i++)
            map[n_map++] = n_att ? att_col[i] : i;
        if (st == HS_OK)
            st = hs_io_read_all(file, &raw, err);
        if (st == HS_OK)
            st = csv_with_header(x, map, n_map, &raw, &o, &text, err);
        hs_buf_free(&raw);
        hs_field schema;
        hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
        for (int i = 0; st == HS_OK && i < n_map; i++) {
            hs_field f;
            hs_field_init(&f, x->tschema.children[map[i]].name, HS_TYPE_STRING, true);
            if (hs_field_add_child(&schema, &f) != HS_OK)
                st = hs_err_nomem(err, 64);
        }
        hs_file *mf = NULL;
        hs_ingest *ig = NULL;
        if (st == HS_OK)
            st = hs_mem_open(file, text.data, text.len, false, &mf, err);
        hs_ingest_options io = {.format = HS_INGEST_CSV, .schema = &schema, .name = file};
        if (st == HS_OK)
            st = hs_ingest_open(mf, &io, &ig, err);
        if (st == HS_OK)
            st = hs_batch_create(&schema, 0, &src, err);
        while (st == HS_OK) {
            hs_batch *b = NULL;
            st = hs_ingest_next(ig, &b, err);
            if (st != HS_OK || !b)
                break;
            st = dml_batch_append(&src, b, err);
            hs_batch_free(b);
        }
        hs_ingest_close(ig);
        hs_file_close(mf);
        hs_buf_free(&text);
        hs_field_clear(&schema);
        if (st != HS_OK)
            st = FAIL(c, st, st == HS_NOMEM ? "53200" : "22P04", -1, "%s", err->msg);
    }
    if (st == HS_OK)
        st = dml_insert_batch(c, x, src, map, n_map, err);
    *count = src && st == HS_OK ? src->n_rows : 0;
    hs_batch_free(src);
    hs_free(map);
    hs_free(att_col);
    return st;
}

/* Appends one CSV cell (PostgreSQL's quoting: a value holding the
 * delimiter, a quote, CR or LF, or the empty string, is quoted; NULL is an
 * empty unquoted cell). */
static hs_status csv_cell(hs_buf *out, const char *p, size_t n, bool null, char delim)
{
    if (null)
        return HS_OK;
    bool q = n == 0;
    for (size_t i = 0; i < n && !q; i++)
        q = p[i] == delim || p[i] == '"' || p[i] == '\n' || p[i] == '\r';
    if (!q)
        return n ? hs_buf_append(out, p, n) : HS_OK;
    HS_TRY(hs_buf_append(out, "\"", 1));
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '"')
            HS_TRY(hs_buf_append(out, "\"", 1));
        HS_TRY(hs_buf_append(out, &p[i], 1));
    }
    return hs_buf_append(out, "\"", 1);
}

/* COPY ... TO 'x.csv': every column as its text form (booleans t/f, as
 * PostgreSQL's COPY writes them), HEADER the column names first. */
static hs_status write_csv(dctx *c, const hs_batch *b, const char *file, const copy_opts *o,
                           hs_error *err)
{
    int nc = b->n_cols;
    hs_column **txt = hs_calloc((size_t)nc + 1, sizeof *txt);
    if (!txt)
        return hs_err_nomem(err, 64);
    hs_status st = HS_OK;
    for (int i = 0; st == HS_OK && i < nc; i++) {
        const hs_field *f = &b->schema.children[i];
        if (f->type == HS_TYPE_BOOL)
            continue;
        hs_field tf;
        hs_field_init(&tf, f->name, HS_TYPE_STRING, true);
        st = dml_cast_column(c, b->cols[i], f, &tf, b->n_rows, &txt[i], err);
        hs_field_clear(&tf);
    }
    hs_buf out = {0};
    for (int i = 0; st == HS_OK && o->header && i < nc; i++) {
        const char *nm = b->schema.children[i].name;
        if ((i && hs_buf_append(&out, &o->delimiter, 1) != HS_OK) ||
            csv_cell(&out, nm, strlen(nm), false, o->delimiter) != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK && o->header && hs_buf_append(&out, "\n", 1) != HS_OK)
        st = hs_err_nomem(err, 1);
    for (int64_t r = 0; st == HS_OK && r < b->n_rows; r++) {
        for (int i = 0; st == HS_OK && i < nc; i++) {
            const hs_column *col = txt[i] ? txt[i] : b->cols[i];
            bool null = !hs_col_is_valid(col, r);
            const char *p = "";
            size_t n = 0;
            if (!null && txt[i]) {
                const int32_t *off = HS_COL_OFFSETS(col);
                p = (const char *)col->values.data + off[r];
                n = (size_t)(off[r + 1] - off[r]);
            } else if (!null) {   /* boolean */
                bool v = hs_bit_get(col->values.data, r);
                p = v ? "t" : "f";
                n = 1;
            }
            if ((i && hs_buf_append(&out, &o->delimiter, 1) != HS_OK) ||
                csv_cell(&out, p, n, null, o->delimiter) != HS_OK)
                st = hs_err_nomem(err, n);
        }
        if (st == HS_OK && hs_buf_append(&out, "\n", 1) != HS_OK)
            st = hs_err_nomem(err, 1);
    }
    hs_wfile *wf = NULL;
    if (st == HS_OK)
        st = hs_io_create(file, 0, &wf, err);
    if (st == HS_OK && out.len)
        st = hs_wfile_write(wf, out.data, out.len, err);
    if (st == HS_OK) {
        st = hs_wfile_close(wf, err);
        wf = NULL;
    }
    if (wf)
        hs_wfile_abort(wf);
    hs_buf_free(&out);
    for (int i = 0; i < nc; i++)
        hs_col_free(txt[i]);
    hs_free(txt);
    return st;
}

static hs_status copy_to(dctx *c, json_t *body, const char *file, int64_t *count, hs_error *err)
{
    copy_opts o;
    HS_TRY(copy_options(c, json_object_get(body, "options"), file, &o, err));
    json_t *sel = NULL, *owned = NULL;
    const char *k;
    if (!sq_node(json_object_get(body, "query"), &k, &sel)) {
        json_t *rv = json_object_get(body, "relation");
        owned = json_pack("{s:[{s:{s:{s:{s:[{s:{}}], s:i}}, s:i}}], s:[{s:O}], s:s, s:s}",
                          "targetList", "ResTarget", "val", "ColumnRef", "fields", "A_Star",
                          "location", -1, "location", -1, "fromClause", "RangeVar", rv,
                          "limitOption", "LIMIT_OPTION_DEFAULT", "op", "SETOP_NONE");
        if (!owned)
            return hs_err_nomem(err, 64);
        sel = owned;
    } else if (strcmp(k, "SelectStmt") != 0) {
        return FAIL(c, HS_UNSUPPORTED, "0A000", -1, "COPY (%s) TO is not supported", k);
    }
    if (json_array_size(json_object_get(body, "attlist"))) {
        json_decref(owned);
        return FAIL(c, HS_UNSUPPORTED, "0A000", -1, "COPY ... TO with a column list is not "
                    "supported (select the columns in a query)");
    }
    hs_batch *all = NULL;
    hs_status st = dml_run_select(c, sel, -1, &all, err);
    json_decref(owned);
    if (st == HS_OK && o.format == 1) {
        *count = all->n_rows;
        st = write_csv(c, all, file, &o, err);
    } else if (st == HS_OK) {
        for (int i = 0; i < all->schema.n_children; i++)
            all->schema.children[i].field_id = -1;   /* plain Parquet: no positional ids */
        *count = all->n_rows;
        struct ArrowArrayStream s;
        st = hs_arrow_export_one_batch(all, &s, err);
        all = NULL;
        if (st == HS_OK)
            st = hs_parquet_write(file, &s, NULL, err);
    }
    hs_batch_free(all);
    return st;
}

hs_status dml_exec_copy(dctx *c, txn *x, json_t *body, int64_t *count, hs_error *err)
{
    const char *file = dml_jstr(body, "filename");
    if (json_is_true(json_object_get(body, "is_program")))
        return FAIL(c, HS_UNSUPPORTED, "0A000", -1, "COPY ... PROGRAM is not supported");
    if (!file)
        return FAIL(c, HS_UNSUPPORTED, "0A000", -1, "COPY %s STDIN/STDOUT is not supported "
                    "here (give a file name)", json_is_true(json_object_get(body, "is_from"))
                    ? "FROM" : "TO");
    HS_TRY(sq_file_access(c->s, "COPY to or from files", c->text, -1, err));
    if (json_is_true(json_object_get(body, "is_from")))
        return copy_from(c, x, body, file, count, err);
    return copy_to(c, body, file, count, err);
}

/* libFuzzer target: CSV and JSON Lines input (columnar/ingest.c), which SQL
 * COPY FROM and `hyperstream table append` feed with users' files, and the
 * JSON Lines writer (columnar/jsonl.c) on whatever the reader produced.
 *
 * Input: one mode byte, then, when the mode asks for a given schema, a type
 * text up to the first NUL ("struct<a: int64, b: list<string>>", through
 * hs_type_parse) or a JSON schema (hs_schema_parse_json, when it starts
 * with '{' or '['), then the data.
 *
 *   mode bit 0   0 = JSON Lines, 1 = CSV
 *   mode bit 1   0 = infer the schema, 1 = given (as above)
 *   mode bits 2+ batch rows 1..63 and inference sample 1..64 rows (small,
 *                so batch and sample boundaries fall inside small inputs)
 *
 * Checked beyond "no crash, no leak": every batch the reader returns is
 * written back as JSON Lines (every value must be writable), and that text,
 * read again with the same schema, must give the same text again (the
 * round trip columnar/ingest.h promises).
 */
#include "columnar/ingest.h"
#include "columnar/jsonl.h"
#include "base/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads all of data with schema (NULL = infer) into JSON Lines text (out);
 * the status of the read. */
static hs_status read_all(const uint8_t *data, size_t size, hs_ingest_format fmt,
                          const hs_field *schema, int64_t batch_rows, int64_t infer_rows,
                          hs_field *schema_out, hs_buf *out)
{
    hs_error err = {0};
    hs_file *f = NULL;
    if (hs_mem_open("fuzz", data, size, false, &f, &err) != HS_OK)
        return err.code;
    hs_ingest_options o;
    memset(&o, 0, sizeof o);
    o.format = fmt;
    o.schema = schema;
    o.batch_rows = batch_rows;
    o.infer_rows = infer_rows;
    hs_ingest *ig = NULL;
    hs_status st = hs_ingest_open(f, &o, &ig, &err);
    if (st == HS_OK && schema_out && hs_field_copy(hs_ingest_schema(ig), schema_out) != HS_OK)
        st = HS_NOMEM;
    for (int i = 0; st == HS_OK && i < 100000; i++) {
        hs_batch *b = NULL;
        st = hs_ingest_next(ig, &b, &err);
        if (st != HS_OK || !b)
            break;
        if (b->n_rows > batch_rows) {
            fprintf(stderr, "batch of %lld rows, asked for %lld\n", (long long)b->n_rows,
                    (long long)batch_rows);
            abort();
        }
        hs_status w = hs_batch_write_jsonl(b, 0, b->n_rows, out);
        if (w != HS_OK && w != HS_NOMEM) {
            fprintf(stderr, "rows the reader made cannot be written: status %d\n", (int)w);
            abort();
        }
        hs_batch_free(b);
    }
    hs_ingest_close(ig);
    hs_file_close(f);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    hs_ingest_format fmt = (mode & 1) ? HS_INGEST_CSV : HS_INGEST_JSONL;
    int64_t batch_rows = 1 + ((mode >> 2) & 63);
    int64_t infer_rows = 1 + ((mode >> 2) & 63);
    hs_field given;
    bool have_given = false;
    hs_error err = {0};
    if (mode & 2) {
        const uint8_t *nul = memchr(data, 0, size);
        if (!nul)
            return 0;
        size_t n = (size_t)(nul - data);
        char *text = malloc(n + 1);
        if (!text)
            return 0;
        memcpy(text, data, n);
        text[n] = 0;
        hs_status st = n && (text[0] == '{' || text[0] == '[')
                           ? hs_schema_parse_json(text, n, &given, &err)
                           : hs_type_parse(text, "schema", &given, &err);
        free(text);
        if (st != HS_OK)
            return 0;
        have_given = true;
        if (given.type != HS_TYPE_STRUCT) {
            hs_field_clear(&given);
            return 0;
        }
        data = nul + 1;
        size -= n + 1;
    }
    hs_field schema;
    memset(&schema, 0, sizeof schema);
    hs_buf first = {0};
    hs_status st = read_all(data, size, fmt, have_given ? &given : NULL, batch_rows, infer_rows,
                            &schema, &first);
    if (st == HS_OK && first.len > 0) {
        /* the round trip: our own JSON Lines, read with the schema, written again */
        hs_buf second = {0};
        hs_status st2 = read_all(first.data, first.len, HS_INGEST_JSONL, &schema, 64, 64, NULL,
                                 &second);
        if (st2 != HS_OK && st2 != HS_NOMEM) {
            fprintf(stderr, "our own JSON Lines do not read back (status %d):\n%.*s\n", (int)st2,
                    (int)(first.len < 2000 ? first.len : 2000), (const char *)first.data);
            abort();
        }
        if (st2 == HS_OK && (second.len != first.len || memcmp(second.data, first.data, first.len))) {
            fprintf(stderr, "round trip differs:\n%.*s\n---\n%.*s\n",
                    (int)(first.len < 2000 ? first.len : 2000), (const char *)first.data,
                    (int)(second.len < 2000 ? second.len : 2000), (const char *)second.data);
            abort();
        }
        hs_buf_free(&second);
    }
    hs_buf_free(&first);
    hs_field_clear(&schema);   /* zeroed or copied: both clear */
    if (have_given)
        hs_field_clear(&given);
    return 0;
}

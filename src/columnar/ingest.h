/*
 * columnar/ingest.h - JSON Lines and CSV text into column batches.
 *
 * The inverse of columnar/jsonl.h: a JSON value is read back by the type of
 * its column ("2024-01-02" into a date32, "AQI=" into binary, "NaN" into a
 * double...), so `hyperstream parquet cat` output converts back to the same
 * values given the schema.  CSV cells are text: scalars are parsed from the
 * text, nested columns (list/struct/map) from the cell's JSON text.
 *
 * Schema: given (hs_type_parse / hs_schema_parse_json), or inferred from the
 * first `infer_rows` records (see docs/jsonl.md for the rules).  Input is
 * read sequentially through io/ (an hs_file) in 1 MiB chunks and emitted in
 * batches of `batch_rows`, so memory is bounded by one batch plus the
 * inference sample.
 *
 * Errors name the input, the line and the column:
 *   input.jsonl:17: column "age": expected int64, got string "x"
 */
#ifndef HS_COLUMNAR_INGEST_H
#define HS_COLUMNAR_INGEST_H

#include "columnar/column.h"
#include "io/io.h"

typedef enum hs_ingest_format { HS_INGEST_JSONL = 0, HS_INGEST_CSV } hs_ingest_format;

typedef struct hs_ingest_options {
    hs_ingest_format format;
    const hs_field *schema;   /* STRUCT; NULL = infer (borrowed during open only) */
    int64_t infer_rows;       /* records sampled for inference; 0 = 10000 */
    int64_t batch_rows;       /* rows per batch; 0 = 65536 */
    const char *name;         /* input name for messages; NULL = the file's name */
} hs_ingest_options;

typedef struct hs_ingest hs_ingest;

/* Opens a reader over `in` (borrowed until hs_ingest_close).  With no schema,
 * reads the inference sample now (so schema errors surface here). */
HS_MUST_USE hs_status hs_ingest_open(hs_file *in, const hs_ingest_options *opt, hs_ingest **out,
                                     hs_error *err);
/* The schema of the batches (borrowed until close). */
const hs_field *hs_ingest_schema(const hs_ingest *ig);
/* Next batch (caller frees with hs_batch_free), or *out = NULL at the end. */
HS_MUST_USE hs_status hs_ingest_next(hs_ingest *ig, hs_batch **out, hs_error *err);
int64_t hs_ingest_rows_read(const hs_ingest *ig);
void hs_ingest_close(hs_ingest *ig);  /* accepts NULL */

/* Parses one type in the grammar hs_field_format prints ("int64",
 * "list<string>", "struct<a: int32 not null, b: string>", "timestamp[us, tz=UTC]",
 * "decimal128(10, 2)", "fixed_size_list<float>[128]", "map<string, int64>") plus
 * aliases (float32, float64, float16, utf8, boolean, decimal(p,s),
 * timestamp[us, UTC], fixed_size_binary[N], uuid, json).  out is initialised
 * with the given name and nullable = true; caller frees with hs_field_clear. */
HS_MUST_USE hs_status hs_type_parse(const char *text, const char *name, hs_field *out,
                                    hs_error *err);
/* Parses {"fields": [{"name": .., "type": .., "nullable": true, "field_id": 1}, ..]}
 * (or the bare array) into a STRUCT schema; caller frees with hs_field_clear. */
HS_MUST_USE hs_status hs_schema_parse_json(const char *text, size_t len, hs_field *out,
                                           hs_error *err);

#endif

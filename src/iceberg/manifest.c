/*
 * iceberg/manifest.c - manifests and manifest lists as Avro container files.
 *
 * Files (Iceberg spec "Manifests" / "Manifest Lists"; base/avro.h writes the
 * container with our schema text verbatim, so field-ids survive):
 *
 *   manifest       header keys: schema (table schema JSON), schema-id,
 *                  partition-spec (fields array JSON), partition-spec-id,
 *                  format-version, content ("data" | "deletes", v2+)
 *                  records: manifest_entry
 *   manifest list  header keys: snapshot-id, parent-snapshot-id ("null" when
 *                  none, as Java), sequence-number (v2+), format-version,
 *                  first-row-id (v3)
 *                  records: manifest_file
 *
 * manifest_entry (field ids; v = versions that write the field):
 *
 *   0 status int                      1 snapshot_id long (v1 required, else optional)
 *   3 sequence_number long? (v2+)     4 file_sequence_number long? (v2+)
 *   2 data_file r2:
 *     134 content int (v2+)           100 file_path string     101 file_format string
 *     102 partition r102 {one optional field per partition field, id = its field id}
 *     103 record_count long           104 file_size_in_bytes long
 *     105 block_size_in_bytes long (v1 only; we write 64 MiB like Java)
 *     108 column_sizes k117_v118      109 value_counts k119_v120
 *     110 null_value_counts k121_v122 137 nan_value_counts k138_v139
 *     125 lower_bounds k126_v127      128 upper_bounds k129_v130 (values bytes)
 *     131 key_metadata bytes?         132 split_offsets array<long> (element 133)
 *     135 equality_ids array<int> (element 136, v2+)    140 sort_order_id int?
 *     142 first_row_id long? (v3)     143 referenced_data_file string? (v2+)
 *     144 content_offset long? (v3)   145 content_size_in_bytes long? (v3)
 *   maps with int keys are Avro arrays of {key, value} records with
 *   "logicalType": "map" (the spec's representation), optional (null = absent).
 *
 * manifest_file:
 *   500 manifest_path  501 manifest_length  502 partition_spec_id  517 content (v2+)
 *   515 sequence_number (v2+)  516 min_sequence_number (v2+)  503 added_snapshot_id
 *   504/505/506 added/existing/deleted files count (v1 names *_data_files_count, optional)
 *   512/513/514 added/existing/deleted rows count
 *   507 partitions array<r508 {509 contains_null, 518 contains_nan?, 510 lower_bound?,
 *       511 upper_bound?}> (element 508)      519 key_metadata?    520 first_row_id? (v3)
 *
 * Partition values in Avro: boolean, int (int, date, bucket/year/month/hour
 * results), long (long, time, timestamps), float, double, string, bytes
 * (binary), fixed[16] (uuid), fixed[L], and decimal(P,S) as fixed of the
 * minimal size for P (Java's decimalRequiredBytes), big-endian.
 *
 * Reading decodes each record generically (hs_avro_value tree) and picks
 * fields by id from the writer schema, so order, record names and unknown
 * fields do not matter.  Everything read lives in the result's arena.
 */
#include "iceberg/manifest.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V1_BLOCK_SIZE (64LL * 1024 * 1024)

/* ================================================================ helpers */

static int decimal_required_bytes(int precision)
{
    /* smallest n with 2^(8n-1) > 10^precision - 1 */
    for (int n = 1; n < 32; n++)
        if ((8.0 * n - 1) * 0.30102999566398119521 >= (double)precision)
            return n;
    return 32;
}

/* Avro name from an arbitrary partition field name (Java's makeCompatibleName). */
static hs_status put_avro_name(hs_buf *b, const char *name)
{
    if (name[0] == 0)
        return hs_buf_puts(b, "_");
    for (size_t i = 0; name[i]; i++) {
        unsigned char c = (unsigned char)name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
                  (i > 0 && c >= '0' && c <= '9');
        hs_status s;
        if (ok)
            s = hs_buf_append_byte(b, c);
        else if (c >= '0' && c <= '9')
            s = hs_buf_printf(b, "_%c", c);
        else
            s = hs_buf_printf(b, "_x%X", c);
        if (s != HS_OK)
            return s;
    }
    return HS_OK;
}

/* Avro schema JSON of a primitive Iceberg type; uniq makes named types unique. */
static hs_status avro_type_json(const hs_field *f, int32_t uniq, hs_buf *b)
{
    switch (ice_type_of(f)) {
    case ICE_T_BOOLEAN: return hs_buf_puts(b, "\"boolean\"");
    case ICE_T_INT: return hs_buf_puts(b, "\"int\"");
    case ICE_T_LONG: return hs_buf_puts(b, "\"long\"");
    case ICE_T_FLOAT: return hs_buf_puts(b, "\"float\"");
    case ICE_T_DOUBLE: return hs_buf_puts(b, "\"double\"");
    case ICE_T_DATE: return hs_buf_puts(b, "{\"type\":\"int\",\"logicalType\":\"date\"}");
    case ICE_T_TIME: return hs_buf_puts(b, "{\"type\":\"long\",\"logicalType\":\"time-micros\"}");
    case ICE_T_TIMESTAMP:
        return hs_buf_puts(b, "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\",\"adjust-to-utc\":false}");
    case ICE_T_TIMESTAMPTZ:
        return hs_buf_puts(b, "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\",\"adjust-to-utc\":true}");
    case ICE_T_TIMESTAMP_NS:
        return hs_buf_puts(b, "{\"type\":\"long\",\"logicalType\":\"timestamp-nanos\",\"adjust-to-utc\":false}");
    case ICE_T_TIMESTAMPTZ_NS:
        return hs_buf_puts(b, "{\"type\":\"long\",\"logicalType\":\"timestamp-nanos\",\"adjust-to-utc\":true}");
    case ICE_T_STRING: return hs_buf_puts(b, "\"string\"");
    case ICE_T_BINARY: return hs_buf_puts(b, "\"bytes\"");
    case ICE_T_UUID:
        return hs_buf_printf(b, "{\"type\":\"fixed\",\"name\":\"uuid_fixed_%d\",\"size\":16,\"logicalType\":\"uuid\"}",
                             (int)uniq);
    case ICE_T_FIXED:
        return hs_buf_printf(b, "{\"type\":\"fixed\",\"name\":\"fixed_%d_%d\",\"size\":%d}", (int)f->width,
                             (int)uniq, (int)f->width);
    case ICE_T_DECIMAL:
        return hs_buf_printf(b, "{\"type\":\"fixed\",\"name\":\"decimal_%d_%d_%d\",\"size\":%d,"
                                "\"logicalType\":\"decimal\",\"precision\":%d,\"scale\":%d}",
                             (int)f->precision, (int)f->scale, (int)uniq,
                             decimal_required_bytes(f->precision), (int)f->precision, (int)f->scale);
    default:
        return HS_INVALID;
    }
}

/* The r102 partition record.  ptype: STRUCT from ice_spec_partition_type. */
static hs_status partition_record_json(const hs_field *ptype, hs_buf *b, hs_error *err)
{
    hs_status s = hs_buf_puts(b, "{\"type\":\"record\",\"name\":\"r102\",\"fields\":[");
    for (int i = 0; i < ptype->n_children && s == HS_OK; i++) {
        const hs_field *c = &ptype->children[i];
        s = hs_buf_puts(b, i ? ",{\"name\":\"" : "{\"name\":\"");
        if (s == HS_OK)
            s = put_avro_name(b, c->name);
        if (s == HS_OK)
            s = hs_buf_puts(b, "\",\"type\":[\"null\",");
        if (s == HS_OK) {
            s = avro_type_json(c, c->field_id, b);
            if (s == HS_INVALID)
                return hs_err_set(err, HS_INVALID, "manifest: partition field %s has a type "
                                  "that cannot be a partition value", c->name);
        }
        if (s == HS_OK)
            s = hs_buf_printf(b, "],\"default\":null,\"field-id\":%d}", (int)c->field_id);
    }
    if (s == HS_OK)
        s = hs_buf_puts(b, "]}");
    return s == HS_OK ? HS_OK : hs_err_nomem(err, 0);
}

/* ---- data_file field table ---- */

enum df_field {
    DF_CONTENT, DF_FILE_PATH, DF_FILE_FORMAT, DF_PARTITION, DF_RECORD_COUNT, DF_FILE_SIZE,
    DF_BLOCK_SIZE, DF_COLUMN_SIZES, DF_VALUE_COUNTS, DF_NULL_COUNTS, DF_NAN_COUNTS,
    DF_LOWER, DF_UPPER, DF_KEY_METADATA, DF_SPLIT_OFFSETS, DF_EQUALITY_IDS, DF_SORT_ORDER,
    DF_FIRST_ROW_ID, DF_REFERENCED, DF_CONTENT_OFFSET, DF_CONTENT_SIZE, DF__END = -1
};

static const int df_v1[] = {DF_FILE_PATH, DF_FILE_FORMAT, DF_PARTITION, DF_RECORD_COUNT,
                            DF_FILE_SIZE, DF_BLOCK_SIZE, DF_COLUMN_SIZES, DF_VALUE_COUNTS,
                            DF_NULL_COUNTS, DF_NAN_COUNTS, DF_LOWER, DF_UPPER, DF_KEY_METADATA,
                            DF_SPLIT_OFFSETS, DF_SORT_ORDER, DF__END};
static const int df_v2[] = {DF_CONTENT, DF_FILE_PATH, DF_FILE_FORMAT, DF_PARTITION,
                            DF_RECORD_COUNT, DF_FILE_SIZE, DF_COLUMN_SIZES, DF_VALUE_COUNTS,
                            DF_NULL_COUNTS, DF_NAN_COUNTS, DF_LOWER, DF_UPPER, DF_KEY_METADATA,
                            DF_SPLIT_OFFSETS, DF_EQUALITY_IDS, DF_SORT_ORDER, DF_REFERENCED,
                            DF__END};
static const int df_v3[] = {DF_CONTENT, DF_FILE_PATH, DF_FILE_FORMAT, DF_PARTITION,
                            DF_RECORD_COUNT, DF_FILE_SIZE, DF_COLUMN_SIZES, DF_VALUE_COUNTS,
                            DF_NULL_COUNTS, DF_NAN_COUNTS, DF_LOWER, DF_UPPER, DF_KEY_METADATA,
                            DF_SPLIT_OFFSETS, DF_EQUALITY_IDS, DF_SORT_ORDER, DF_FIRST_ROW_ID,
                            DF_REFERENCED, DF_CONTENT_OFFSET, DF_CONTENT_SIZE, DF__END};

static const int *df_fields(int version)
{
    return version == 1 ? df_v1 : version == 2 ? df_v2 : df_v3;
}

static hs_status map_json(hs_buf *b, const char *name, int id, int kid, int vid,
                          const char *vtype, const char *doc)
{
    return hs_buf_printf(b,
                         "{\"name\":\"%s\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":"
                         "\"record\",\"name\":\"k%d_v%d\",\"fields\":[{\"name\":\"key\",\"type\":"
                         "\"int\",\"field-id\":%d},{\"name\":\"value\",\"type\":\"%s\",\"field-id\":"
                         "%d}]},\"logicalType\":\"map\"}],\"doc\":\"%s\",\"default\":null,"
                         "\"field-id\":%d}",
                         name, kid, vid, kid, vtype, vid, doc, id);
}

static hs_status df_field_json(int f, const char *partition_json, hs_buf *b)
{
    switch (f) {
    case DF_CONTENT:
        return hs_buf_puts(b, "{\"name\":\"content\",\"type\":\"int\",\"doc\":\"Contents of the file: "
                              "0=data, 1=position deletes, 2=equality deletes\",\"field-id\":134}");
    case DF_FILE_PATH:
        return hs_buf_puts(b, "{\"name\":\"file_path\",\"type\":\"string\",\"doc\":\"Location URI "
                              "with FS scheme\",\"field-id\":100}");
    case DF_FILE_FORMAT:
        return hs_buf_puts(b, "{\"name\":\"file_format\",\"type\":\"string\",\"doc\":\"File format "
                              "name: avro, orc, or parquet\",\"field-id\":101}");
    case DF_PARTITION:
        return hs_buf_printf(b, "{\"name\":\"partition\",\"type\":%s,\"doc\":\"Partition data tuple, "
                                "schema based on the partition spec\",\"field-id\":102}",
                             partition_json);
    case DF_RECORD_COUNT:
        return hs_buf_puts(b, "{\"name\":\"record_count\",\"type\":\"long\",\"doc\":\"Number of "
                              "records in the file\",\"field-id\":103}");
    case DF_FILE_SIZE:
        return hs_buf_puts(b, "{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"doc\":\"Total "
                              "file size in bytes\",\"field-id\":104}");
    case DF_BLOCK_SIZE:
        return hs_buf_puts(b, "{\"name\":\"block_size_in_bytes\",\"type\":\"long\",\"field-id\":105}");
    case DF_COLUMN_SIZES:
        return map_json(b, "column_sizes", 108, 117, 118, "long", "Map of column id to total size on disk");
    case DF_VALUE_COUNTS:
        return map_json(b, "value_counts", 109, 119, 120, "long", "Map of column id to total count, including null and NaN");
    case DF_NULL_COUNTS:
        return map_json(b, "null_value_counts", 110, 121, 122, "long", "Map of column id to null value count");
    case DF_NAN_COUNTS:
        return map_json(b, "nan_value_counts", 137, 138, 139, "long", "Map of column id to number of NaN values in the column");
    case DF_LOWER:
        return map_json(b, "lower_bounds", 125, 126, 127, "bytes", "Map of column id to lower bound");
    case DF_UPPER:
        return map_json(b, "upper_bounds", 128, 129, 130, "bytes", "Map of column id to upper bound");
    case DF_KEY_METADATA:
        return hs_buf_puts(b, "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"doc\":"
                              "\"Encryption key metadata blob\",\"default\":null,\"field-id\":131}");
    case DF_SPLIT_OFFSETS:
        return hs_buf_puts(b, "{\"name\":\"split_offsets\",\"type\":[\"null\",{\"type\":\"array\","
                              "\"items\":\"long\",\"element-id\":133}],\"doc\":\"Splittable offsets\","
                              "\"default\":null,\"field-id\":132}");
    case DF_EQUALITY_IDS:
        return hs_buf_puts(b, "{\"name\":\"equality_ids\",\"type\":[\"null\",{\"type\":\"array\","
                              "\"items\":\"int\",\"element-id\":136}],\"doc\":\"Equality comparison "
                              "field IDs\",\"default\":null,\"field-id\":135}");
    case DF_SORT_ORDER:
        return hs_buf_puts(b, "{\"name\":\"sort_order_id\",\"type\":[\"null\",\"int\"],\"doc\":\"Sort "
                              "order ID\",\"default\":null,\"field-id\":140}");
    case DF_FIRST_ROW_ID:
        return hs_buf_puts(b, "{\"name\":\"first_row_id\",\"type\":[\"null\",\"long\"],\"doc\":"
                              "\"The first row ID assigned to the first row in the data file\","
                              "\"default\":null,\"field-id\":142}");
    case DF_REFERENCED:
        return hs_buf_puts(b, "{\"name\":\"referenced_data_file\",\"type\":[\"null\",\"string\"],"
                              "\"doc\":\"Fully qualified location (URI with FS scheme) of a data file "
                              "that all deletes reference\",\"default\":null,\"field-id\":143}");
    case DF_CONTENT_OFFSET:
        return hs_buf_puts(b, "{\"name\":\"content_offset\",\"type\":[\"null\",\"long\"],\"doc\":"
                              "\"The offset in the file where the content starts\",\"default\":null,"
                              "\"field-id\":144}");
    case DF_CONTENT_SIZE:
        return hs_buf_puts(b, "{\"name\":\"content_size_in_bytes\",\"type\":[\"null\",\"long\"],"
                              "\"doc\":\"The length of referenced content stored in the file\","
                              "\"default\":null,\"field-id\":145}");
    }
    return HS_INVALID;
}

static hs_status manifest_entry_schema_json(int version, const char *partition_json, hs_buf *b)
{
    hs_status s = hs_buf_puts(b, "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
                                 "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},");
    if (s != HS_OK)
        return s;
    if (version == 1)
        s = hs_buf_puts(b, "{\"name\":\"snapshot_id\",\"type\":\"long\",\"field-id\":1},");
    else
        s = hs_buf_puts(b, "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,"
                           "\"field-id\":1},{\"name\":\"sequence_number\",\"type\":[\"null\",\"long\"],"
                           "\"default\":null,\"field-id\":3},{\"name\":\"file_sequence_number\","
                           "\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":4},");
    if (s == HS_OK)
        s = hs_buf_puts(b, "{\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\","
                           "\"fields\":[");
    const int *fl = df_fields(version);
    for (int i = 0; fl[i] != DF__END && s == HS_OK; i++) {
        if (i)
            s = hs_buf_append_byte(b, ',');
        if (s == HS_OK)
            s = df_field_json(fl[i], partition_json, b);
    }
    if (s == HS_OK)
        s = hs_buf_puts(b, "]},\"field-id\":2}]}");
    return s;
}

/* ---- manifest_file field table ---- */

enum mf_field {
    MF_PATH, MF_LENGTH, MF_SPEC_ID, MF_CONTENT, MF_SEQ, MF_MIN_SEQ, MF_SNAPSHOT,
    MF_ADDED_FILES, MF_EXISTING_FILES, MF_DELETED_FILES, MF_ADDED_ROWS, MF_EXISTING_ROWS,
    MF_DELETED_ROWS, MF_PARTITIONS, MF_KEY_METADATA, MF_FIRST_ROW_ID, MF__END = -1
};

static const int mf_v1[] = {MF_PATH, MF_LENGTH, MF_SPEC_ID, MF_SNAPSHOT, MF_ADDED_FILES,
                            MF_EXISTING_FILES, MF_DELETED_FILES, MF_PARTITIONS, MF_ADDED_ROWS,
                            MF_EXISTING_ROWS, MF_DELETED_ROWS, MF_KEY_METADATA, MF__END};
static const int mf_v2[] = {MF_PATH, MF_LENGTH, MF_SPEC_ID, MF_CONTENT, MF_SEQ, MF_MIN_SEQ,
                            MF_SNAPSHOT, MF_ADDED_FILES, MF_EXISTING_FILES, MF_DELETED_FILES,
                            MF_ADDED_ROWS, MF_EXISTING_ROWS, MF_DELETED_ROWS, MF_PARTITIONS,
                            MF_KEY_METADATA, MF__END};
static const int mf_v3[] = {MF_PATH, MF_LENGTH, MF_SPEC_ID, MF_CONTENT, MF_SEQ, MF_MIN_SEQ,
                            MF_SNAPSHOT, MF_ADDED_FILES, MF_EXISTING_FILES, MF_DELETED_FILES,
                            MF_ADDED_ROWS, MF_EXISTING_ROWS, MF_DELETED_ROWS, MF_PARTITIONS,
                            MF_KEY_METADATA, MF_FIRST_ROW_ID, MF__END};

static const int *mf_fields(int version)
{
    return version == 1 ? mf_v1 : version == 2 ? mf_v2 : mf_v3;
}

static hs_status mf_field_json(int f, int v, hs_buf *b)
{
    bool v1 = v == 1;
    const char *opt_int = "[\"null\",\"int\"],\"default\":null";
    const char *opt_long = "[\"null\",\"long\"],\"default\":null";
    switch (f) {
    case MF_PATH:
        return hs_buf_puts(b, "{\"name\":\"manifest_path\",\"type\":\"string\",\"doc\":\"Location "
                              "URI with FS scheme\",\"field-id\":500}");
    case MF_LENGTH:
        return hs_buf_puts(b, "{\"name\":\"manifest_length\",\"type\":\"long\",\"doc\":\"Total file "
                              "size in bytes\",\"field-id\":501}");
    case MF_SPEC_ID:
        return hs_buf_puts(b, "{\"name\":\"partition_spec_id\",\"type\":\"int\",\"doc\":\"Spec ID "
                              "used to write\",\"field-id\":502}");
    case MF_CONTENT:
        return hs_buf_puts(b, "{\"name\":\"content\",\"type\":\"int\",\"doc\":\"Contents of the "
                              "manifest: 0=data, 1=deletes\",\"field-id\":517}");
    case MF_SEQ:
        return hs_buf_puts(b, "{\"name\":\"sequence_number\",\"type\":\"long\",\"doc\":\"Sequence "
                              "number when the manifest was added\",\"field-id\":515}");
    case MF_MIN_SEQ:
        return hs_buf_puts(b, "{\"name\":\"min_sequence_number\",\"type\":\"long\",\"doc\":"
                              "\"Lowest sequence number in the manifest\",\"field-id\":516}");
    case MF_SNAPSHOT:
        return hs_buf_printf(b, "{\"name\":\"added_snapshot_id\",\"type\":%s,\"doc\":\"Snapshot ID "
                                "that added the manifest\",\"field-id\":503}",
                             v1 ? opt_long : "\"long\"");
    case MF_ADDED_FILES:
        return hs_buf_printf(b, "{\"name\":\"%s\",\"type\":%s,\"doc\":\"Added entry count\","
                                "\"field-id\":504}",
                             v1 ? "added_data_files_count" : "added_files_count", v1 ? opt_int : "\"int\"");
    case MF_EXISTING_FILES:
        return hs_buf_printf(b, "{\"name\":\"%s\",\"type\":%s,\"doc\":\"Existing entry count\","
                                "\"field-id\":505}",
                             v1 ? "existing_data_files_count" : "existing_files_count",
                             v1 ? opt_int : "\"int\"");
    case MF_DELETED_FILES:
        return hs_buf_printf(b, "{\"name\":\"%s\",\"type\":%s,\"doc\":\"Deleted entry count\","
                                "\"field-id\":506}",
                             v1 ? "deleted_data_files_count" : "deleted_files_count",
                             v1 ? opt_int : "\"int\"");
    case MF_ADDED_ROWS:
        return hs_buf_printf(b, "{\"name\":\"added_rows_count\",\"type\":%s,\"doc\":\"Added rows "
                                "count\",\"field-id\":512}", v1 ? opt_long : "\"long\"");
    case MF_EXISTING_ROWS:
        return hs_buf_printf(b, "{\"name\":\"existing_rows_count\",\"type\":%s,\"doc\":\"Existing "
                                "rows count\",\"field-id\":513}", v1 ? opt_long : "\"long\"");
    case MF_DELETED_ROWS:
        return hs_buf_printf(b, "{\"name\":\"deleted_rows_count\",\"type\":%s,\"doc\":\"Deleted "
                                "rows count\",\"field-id\":514}", v1 ? opt_long : "\"long\"");
    case MF_PARTITIONS:
        return hs_buf_puts(b, "{\"name\":\"partitions\",\"type\":[\"null\",{\"type\":\"array\","
                              "\"items\":{\"type\":\"record\",\"name\":\"r508\",\"fields\":["
                              "{\"name\":\"contains_null\",\"type\":\"boolean\",\"doc\":\"True if any "
                              "file has a null partition value\",\"field-id\":509},"
                              "{\"name\":\"contains_nan\",\"type\":[\"null\",\"boolean\"],\"doc\":"
                              "\"True if any file has a nan partition value\",\"default\":null,"
                              "\"field-id\":518},"
                              "{\"name\":\"lower_bound\",\"type\":[\"null\",\"bytes\"],\"doc\":"
                              "\"Partition lower bound for all files\",\"default\":null,\"field-id\":510},"
                              "{\"name\":\"upper_bound\",\"type\":[\"null\",\"bytes\"],\"doc\":"
                              "\"Partition upper bound for all files\",\"default\":null,\"field-id\":511}"
                              "]},\"element-id\":508}],\"doc\":\"Summary for each partition\","
                              "\"default\":null,\"field-id\":507}");
    case MF_KEY_METADATA:
        return hs_buf_puts(b, "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"doc\":"
                              "\"Encryption key metadata blob\",\"default\":null,\"field-id\":519}");
    case MF_FIRST_ROW_ID:
        return hs_buf_printf(b, "{\"name\":\"first_row_id\",\"type\":%s,\"doc\":\"Starting row ID "
                                "to assign to new rows in ADDED data files\",\"field-id\":520}",
                             opt_long);
    }
    return HS_INVALID;
}

static hs_status manifest_file_schema_json(int version, hs_buf *b)
{
    hs_status s = hs_buf_puts(b, "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":[");
    const int *fl = mf_fields(version);
    for (int i = 0; fl[i] != MF__END && s == HS_OK; i++) {
        if (i)
            s = hs_buf_append_byte(b, ',');
        if (s == HS_OK)
            s = mf_field_json(fl[i], version, b);
    }
    if (s == HS_OK)
        s = hs_buf_puts(b, "]}");
    return s;
}

/* ======================================================= value building */

static hs_avro_value av_opt_long(bool has, int64_t v) { return has ? hs_avro_long(v) : hs_avro_null(); }

static hs_status av_id_long_map(hs_arena *a, const ice_id_long *m, int n, hs_avro_value *out)
{
    if (n <= 0) {
        *out = hs_avro_null();
        return HS_OK;
    }
    hs_avro_value *items = hs_avro_new_array(a, HS_AVRO_ARRAY, n, out);
    if (!items)
        return HS_NOMEM;
    for (int i = 0; i < n; i++) {
        hs_avro_value *kv = hs_avro_new_array(a, HS_AVRO_RECORD, 2, &items[i]);
        if (!kv)
            return HS_NOMEM;
        kv[0] = hs_avro_long(m[i].id);
        kv[1] = hs_avro_long(m[i].value);
    }
    return HS_OK;
}

static hs_status av_id_bytes_map(hs_arena *a, const ice_id_bytes *m, int n, hs_avro_value *out)
{
    if (n <= 0) {
        *out = hs_avro_null();
        return HS_OK;
    }
    hs_avro_value *items = hs_avro_new_array(a, HS_AVRO_ARRAY, n, out);
    if (!items)
        return HS_NOMEM;
    for (int i = 0; i < n; i++) {
        hs_avro_value *kv = hs_avro_new_array(a, HS_AVRO_RECORD, 2, &items[i]);
        if (!kv)
            return HS_NOMEM;
        kv[0] = hs_avro_long(m[i].id);
        kv[1] = hs_avro_bytes(m[i].p ? m[i].p : (const uint8_t *)"", m[i].len);
    }
    return HS_OK;
}

/* A partition value of field f as an Avro value. */
static hs_status av_partition_value(hs_arena *a, const hs_field *f, const ice_value *v,
                                    hs_avro_value *out, hs_error *err)
{
    if (v == NULL || v->is_null) {
        *out = hs_avro_null();
        return HS_OK;
    }
    ice_type_id t = ice_type_of(f);
    const uint8_t *empty = (const uint8_t *)"";
    switch (t) {
    case ICE_T_BOOLEAN: *out = hs_avro_bool(v->v.b); return HS_OK;
    case ICE_T_INT: case ICE_T_DATE: case ICE_T_LONG: case ICE_T_TIME:
    case ICE_T_TIMESTAMP: case ICE_T_TIMESTAMPTZ: case ICE_T_TIMESTAMP_NS: case ICE_T_TIMESTAMPTZ_NS:
        *out = hs_avro_long(v->v.i);
        return HS_OK;
    case ICE_T_FLOAT:
        *out = v->type == ICE_T_DOUBLE ? hs_avro_float((float)v->v.d) : hs_avro_float(v->v.f);
        return HS_OK;
    case ICE_T_DOUBLE:
        *out = v->type == ICE_T_FLOAT ? hs_avro_double(v->v.f) : hs_avro_double(v->v.d);
        return HS_OK;
    case ICE_T_STRING:
        *out = hs_avro_bytes(v->bytes ? v->bytes : empty, v->len);
        out->kind = HS_AVRO_STRING;
        return HS_OK;
    case ICE_T_BINARY:
        *out = hs_avro_bytes(v->bytes ? v->bytes : empty, v->len);
        return HS_OK;
    case ICE_T_UUID:
    case ICE_T_FIXED: {
        uint32_t want = t == ICE_T_UUID ? 16 : (uint32_t)f->width;
        if (v->len != want)
            return hs_err_set(err, HS_INVALID, "manifest: partition %s value has %u bytes, needs %u",
                              f->name, v->len, want);
        *out = hs_avro_bytes(v->bytes ? v->bytes : empty, v->len);
        out->kind = HS_AVRO_FIXED;
        return HS_OK;
    }
    case ICE_T_DECIMAL: {
        int size = decimal_required_bytes(f->precision);
        if (v->len > (uint32_t)size)
            return hs_err_set(err, HS_INVALID, "manifest: decimal partition %s value has %u bytes, "
                              "precision %d allows %d", f->name, v->len, f->precision, size);
        uint8_t *p = hs_arena_alloc(a, (size_t)size);
        if (!p)
            return hs_err_nomem(err, (size_t)size);
        uint8_t fill = (v->len > 0 && (v->bytes[0] & 0x80)) ? 0xFF : 0;
        memset(p, fill, (size_t)size - v->len);
        if (v->len)
            memcpy(p + size - v->len, v->bytes, v->len);
        *out = hs_avro_bytes(p, (size_t)size);
        out->kind = HS_AVRO_FIXED;
        return HS_OK;
    }
    default:
        return hs_err_set(err, HS_INVALID, "manifest: partition field %s has an unsupported type",
                          f->name);
    }
}

/* ======================================================= manifest writer */

typedef struct part_summary {
    bool contains_null, contains_nan, has_bounds;
    ice_value lower, upper;    /* owned copies */
} part_summary;

struct ice_manifest_writer {
    int version;
    int content;
    int64_t snapshot_id;
    char *path;
    int32_t spec_id;
    hs_field ptype;            /* partition tuple type (owned) */
    hs_avro_writer *aw;
    const hs_avro_schema *entry_schema;
    hs_arena scratch;          /* per-entry values; reset after each add */
    part_summary *sums;        /* ptype.n_children */
    int32_t added_files, existing_files, deleted_files;
    int64_t added_rows, existing_rows, deleted_rows;
    bool has_min_seq;
    int64_t min_seq;
};

void ice_manifest_writer_free(ice_manifest_writer *w)
{
    if (!w)
        return;
    if (w->sums) {
        for (int i = 0; i < w->ptype.n_children; i++) {
            ice_value_clear(&w->sums[i].lower);
            ice_value_clear(&w->sums[i].upper);
        }
        hs_free(w->sums);
    }
    hs_field_clear(&w->ptype);
    hs_avro_writer_free(w->aw);
    hs_arena_destroy(&w->scratch);
    hs_free(w->path);
    hs_free(w);
}

hs_status ice_manifest_writer_open(const char *path, int format_version, int content,
                                   const ice_schema *schema, const ice_partition_spec *spec,
                                   int64_t snapshot_id, hs_avro_codec codec,
                                   ice_manifest_writer **out, hs_error *err)
{
    *out = NULL;
    if (format_version < 1 || format_version > ICE_MAX_FORMAT_VERSION)
        return hs_err_set(err, HS_INVALID, "manifest: format version %d is not 1..%d",
                          format_version, ICE_MAX_FORMAT_VERSION);
    if (content != ICE_MANIFEST_DATA && content != ICE_MANIFEST_DELETES)
        return hs_err_set(err, HS_INVALID, "manifest: content %d is not data or deletes", content);
    if (format_version == 1 && content != ICE_MANIFEST_DATA)
        return hs_err_set(err, HS_INVALID, "manifest: format version 1 has no delete manifests");
    if (!path || !schema || !spec)
        return hs_err_set(err, HS_INVALID, "manifest: path, schema and spec are required");
    ice_manifest_writer *w = hs_calloc(1, sizeof *w);
    if (!w)
        return hs_err_nomem(err, sizeof *w);
    w->version = format_version;
    w->content = content;
    w->snapshot_id = snapshot_id;
    w->spec_id = spec->spec_id;
    w->path = hs_strdup(path);
    hs_buf pjson = {0}, sjson = {0}, schema_text = {0}, spec_text = {0};
    hs_status s = w->path ? HS_OK : hs_err_nomem(err, 0);
    if (s == HS_OK)
        s = ice_spec_partition_type(spec, schema, &w->ptype, err);
    if (s == HS_OK && w->ptype.n_children > 0) {
        w->sums = hs_calloc((size_t)w->ptype.n_children, sizeof *w->sums);
        if (!w->sums)
            s = hs_err_nomem(err, 0);
    }
    if (s == HS_OK)
        s = partition_record_json(&w->ptype, &pjson, err);
    if (s == HS_OK && manifest_entry_schema_json(format_version, hs_buf_cstr(&pjson), &sjson) != HS_OK)
        s = hs_err_nomem(err, 0);
    if (s == HS_OK)
        s = ice_schema_to_json(schema, &schema_text, err);
    if (s == HS_OK)
        s = ice_spec_fields_to_json(spec, &spec_text, err);
    if (s == HS_OK) {
        char schema_id[16], spec_id[16], fv[8];
        snprintf(schema_id, sizeof schema_id, "%d", (int)schema->schema_id);
        snprintf(spec_id, sizeof spec_id, "%d", (int)spec->spec_id);
        snprintf(fv, sizeof fv, "%d", format_version);
        const char *keys[] = {"schema", "schema-id", "partition-spec", "partition-spec-id",
                              "format-version", "content"};
        const char *vals[] = {hs_buf_cstr(&schema_text), schema_id, hs_buf_cstr(&spec_text), spec_id,
                              fv, content == ICE_MANIFEST_DATA ? "data" : "deletes"};
        s = hs_avro_writer_open(hs_buf_cstr(&sjson), codec, keys, vals, format_version == 1 ? 5 : 6,
                                &w->aw, err);
    }
    hs_buf_free(&pjson);
    hs_buf_free(&sjson);
    hs_buf_free(&schema_text);
    hs_buf_free(&spec_text);
    if (s != HS_OK) {
        ice_manifest_writer_free(w);
        return s;
    }
    w->entry_schema = hs_avro_writer_schema(w->aw);
    *out = w;
    return HS_OK;
}

static bool value_is_nan(const ice_value *v)
{
    return (v->type == ICE_T_FLOAT && isnan(v->v.f)) || (v->type == ICE_T_DOUBLE && isnan(v->v.d));
}

static hs_status update_summaries(ice_manifest_writer *w, const ice_data_file *df, hs_error *err)
{
    for (int i = 0; i < w->ptype.n_children; i++) {
        part_summary *ps = &w->sums[i];
        const ice_value *v = i < df->n_partition ? &df->partition[i] : NULL;
        if (v == NULL || v->is_null) {
            ps->contains_null = true;
            continue;
        }
        if (value_is_nan(v)) {
            ps->contains_nan = true;
            continue;
        }
        if (!ps->has_bounds) {
            if (ice_value_copy(v, &ps->lower) != HS_OK || ice_value_copy(v, &ps->upper) != HS_OK)
                return hs_err_nomem(err, 0);
            ps->has_bounds = true;
            continue;
        }
        if (ice_value_compare(v, &ps->lower) < 0) {
            ice_value_clear(&ps->lower);
            if (ice_value_copy(v, &ps->lower) != HS_OK)
                return hs_err_nomem(err, 0);
        }
        if (ice_value_compare(v, &ps->upper) > 0) {
            ice_value_clear(&ps->upper);
            if (ice_value_copy(v, &ps->upper) != HS_OK)
                return hs_err_nomem(err, 0);
        }
    }
    return HS_OK;
}

static hs_status build_data_file(ice_manifest_writer *w, const ice_data_file *df, hs_avro_value *out,
                                 hs_error *err)
{
    hs_arena *a = &w->scratch;
    const int *fl = df_fields(w->version);
    int n = 0;
    while (fl[n] != DF__END)
        n++;
    hs_avro_value *it = hs_avro_new_array(a, HS_AVRO_RECORD, n, out);
    if (!it)
        return hs_err_nomem(err, 0);
    for (int i = 0; i < n; i++) {
        hs_status s = HS_OK;
        switch (fl[i]) {
        case DF_CONTENT: it[i] = hs_avro_long(df->content); break;
        case DF_FILE_PATH: it[i] = hs_avro_str(df->file_path); break;
        case DF_FILE_FORMAT: it[i] = hs_avro_str(df->file_format ? df->file_format : "PARQUET"); break;
        case DF_PARTITION: {
            int np = w->ptype.n_children;
            hs_avro_value *pv = hs_avro_new_array(a, HS_AVRO_RECORD, np, &it[i]);
            if (!pv)
                return hs_err_nomem(err, 0);
            for (int j = 0; j < np; j++)
                HS_TRY(av_partition_value(a, &w->ptype.children[j],
                                          j < df->n_partition ? &df->partition[j] : NULL, &pv[j], err));
            break;
        }
        case DF_RECORD_COUNT: it[i] = hs_avro_long(df->record_count); break;
        case DF_FILE_SIZE: it[i] = hs_avro_long(df->file_size_in_bytes); break;
        case DF_BLOCK_SIZE: it[i] = hs_avro_long(V1_BLOCK_SIZE); break;
        case DF_COLUMN_SIZES: s = av_id_long_map(a, df->column_sizes, df->n_column_sizes, &it[i]); break;
        case DF_VALUE_COUNTS: s = av_id_long_map(a, df->value_counts, df->n_value_counts, &it[i]); break;
        case DF_NULL_COUNTS:
            s = av_id_long_map(a, df->null_value_counts, df->n_null_value_counts, &it[i]);
            break;
        case DF_NAN_COUNTS:
            s = av_id_long_map(a, df->nan_value_counts, df->n_nan_value_counts, &it[i]);
            break;
        case DF_LOWER: s = av_id_bytes_map(a, df->lower_bounds, df->n_lower_bounds, &it[i]); break;
        case DF_UPPER: s = av_id_bytes_map(a, df->upper_bounds, df->n_upper_bounds, &it[i]); break;
        case DF_KEY_METADATA:
            it[i] = df->key_metadata ? hs_avro_bytes(df->key_metadata, df->key_metadata_len) : hs_avro_null();
            break;
        case DF_SPLIT_OFFSETS:
            if (df->n_split_offsets > 0) {
                hs_avro_value *x = hs_avro_new_array(a, HS_AVRO_ARRAY, df->n_split_offsets, &it[i]);
                if (!x)
                    return hs_err_nomem(err, 0);
                for (int j = 0; j < df->n_split_offsets; j++)
                    x[j] = hs_avro_long(df->split_offsets[j]);
            } else {
                it[i] = hs_avro_null();
            }
            break;
        case DF_EQUALITY_IDS:
            if (df->n_equality_ids > 0) {
                hs_avro_value *x = hs_avro_new_array(a, HS_AVRO_ARRAY, df->n_equality_ids, &it[i]);
                if (!x)
                    return hs_err_nomem(err, 0);
                for (int j = 0; j < df->n_equality_ids; j++)
                    x[j] = hs_avro_long(df->equality_ids[j]);
            } else {
                it[i] = hs_avro_null();
            }
            break;
        case DF_SORT_ORDER: it[i] = av_opt_long(df->has_sort_order_id, df->sort_order_id); break;
        case DF_FIRST_ROW_ID: it[i] = av_opt_long(df->has_first_row_id, df->first_row_id); break;
        case DF_REFERENCED:
            it[i] = df->referenced_data_file ? hs_avro_str(df->referenced_data_file) : hs_avro_null();
            break;
        case DF_CONTENT_OFFSET: it[i] = av_opt_long(df->has_content_offset, df->content_offset); break;
        case DF_CONTENT_SIZE: it[i] = av_opt_long(df->has_content_size, df->content_size_in_bytes); break;
        }
        if (s != HS_OK)
            return hs_err_nomem(err, 0);
    }
    return HS_OK;
}

hs_status ice_manifest_writer_add(ice_manifest_writer *w, const ice_manifest_entry *e, hs_error *err)
{
    const ice_data_file *df = &e->file;
    if (e->status < 0 || e->status > 2)
        return hs_err_set(err, HS_INVALID, "manifest %s: entry status %d", w->path, e->status);
    if (!df->file_path)
        return hs_err_set(err, HS_INVALID, "manifest %s: entry without file_path", w->path);
    if (df->n_partition != w->ptype.n_children)
        return hs_err_set(err, HS_INVALID, "manifest %s: %s has %d partition values, spec has %d",
                          w->path, df->file_path, df->n_partition, w->ptype.n_children);
    bool is_data = df->content == ICE_CONTENT_DATA;
    if (is_data != (w->content == ICE_MANIFEST_DATA))
        return hs_err_set(err, HS_INVALID, "manifest %s: file %s of content %d in a %s manifest",
                          w->path, df->file_path, df->content,
                          w->content == ICE_MANIFEST_DATA ? "data" : "delete");
    hs_arena_reset(&w->scratch);
    hs_avro_value rec;
    int n = w->version == 1 ? 3 : 5;
    hs_avro_value *it = hs_avro_new_array(&w->scratch, HS_AVRO_RECORD, n, &rec);
    if (!it)
        return hs_err_nomem(err, 0);
    it[0] = hs_avro_long(e->status);
    if (w->version == 1) {
        it[1] = hs_avro_long(e->has_snapshot_id ? e->snapshot_id : w->snapshot_id);
        HS_TRY(build_data_file(w, df, &it[2], err));
    } else {
        it[1] = av_opt_long(e->has_snapshot_id, e->snapshot_id);
        it[2] = av_opt_long(e->has_sequence_number, e->sequence_number);
        it[3] = av_opt_long(e->has_file_sequence_number, e->file_sequence_number);
        HS_TRY(build_data_file(w, df, &it[4], err));
    }
    hs_status s = hs_avro_writer_append(w->aw, &rec, err);
    if (s != HS_OK) {
        hs_err_prefix(err, "manifest %s: %s", w->path, df->file_path);
        return s;
    }
    HS_TRY(update_summaries(w, df, err));
    switch (e->status) {
    case ICE_STATUS_ADDED: w->added_files++; w->added_rows += df->record_count; break;
    case ICE_STATUS_EXISTING: w->existing_files++; w->existing_rows += df->record_count; break;
    default: w->deleted_files++; w->deleted_rows += df->record_count; break;
    }
    if (e->status != ICE_STATUS_DELETED && e->has_sequence_number &&
        (!w->has_min_seq || e->sequence_number < w->min_seq)) {
        w->has_min_seq = true;
        w->min_seq = e->sequence_number;
    }
    return HS_OK;
}

static hs_status value_bytes_in_arena(const ice_value *v, hs_arena *a, const uint8_t **p,
                                      uint32_t *len)
{
    hs_buf b = {0};
    if (ice_value_to_bytes(v, &b) != HS_OK) {
        hs_buf_free(&b);
        return HS_NOMEM;
    }
    uint8_t *q = hs_arena_alloc(a, b.len ? b.len : 1);
    if (!q) {
        hs_buf_free(&b);
        return HS_NOMEM;
    }
    if (b.len)
        memcpy(q, b.data, b.len);
    *p = q;
    *len = (uint32_t)b.len;
    hs_buf_free(&b);
    return HS_OK;
}

hs_status ice_manifest_writer_finish(ice_manifest_writer *w, hs_wfile *out, hs_arena *arena,
                                     ice_manifest_file *mf, hs_error *err)
{
    hs_buf bytes = {0};
    hs_status s = hs_avro_writer_finish(w->aw, &bytes, err);
    w->aw = NULL;
    if (s == HS_OK)
        s = hs_wfile_write(out, bytes.data, bytes.len, err);
    if (s == HS_OK) {
        memset(mf, 0, sizeof *mf);
        mf->manifest_path = hs_arena_strndup(arena, w->path, strlen(w->path));
        mf->manifest_length = (int64_t)bytes.len;
        mf->partition_spec_id = w->spec_id;
        mf->content = w->content;
        mf->sequence_number = ICE_SEQ_UNASSIGNED;
        mf->min_sequence_number = w->has_min_seq ? w->min_seq : ICE_SEQ_UNASSIGNED;
        mf->has_added_snapshot_id = true;
        mf->added_snapshot_id = w->snapshot_id;
        mf->added_files_count = w->added_files;
        mf->existing_files_count = w->existing_files;
        mf->deleted_files_count = w->deleted_files;
        mf->added_rows_count = w->added_rows;
        mf->existing_rows_count = w->existing_rows;
        mf->deleted_rows_count = w->deleted_rows;
        int np = w->ptype.n_children;
        mf->n_partitions = np;
        mf->partitions = hs_arena_calloc(arena, np ? (size_t)np : 1, sizeof *mf->partitions);
        if (!mf->manifest_path || !mf->partitions)
            s = hs_err_nomem(err, 0);
        for (int i = 0; i < np && s == HS_OK; i++) {
            ice_field_summary *fs = &mf->partitions[i];
            part_summary *ps = &w->sums[i];
            fs->contains_null = ps->contains_null;
            ice_type_id t = ice_type_of(&w->ptype.children[i]);
            if (t == ICE_T_FLOAT || t == ICE_T_DOUBLE) {
                fs->has_contains_nan = true;
                fs->contains_nan = ps->contains_nan;
            }
            if (ps->has_bounds &&
                (value_bytes_in_arena(&ps->lower, arena, &fs->lower, &fs->lower_len) != HS_OK ||
                 value_bytes_in_arena(&ps->upper, arena, &fs->upper, &fs->upper_len) != HS_OK))
                s = hs_err_nomem(err, 0);
        }
    }
    hs_buf_free(&bytes);
    ice_manifest_writer_free(w);
    return s;
}

/* ========================================================= reading helpers */

typedef struct rd {
    const char *name;
    hs_error *err;
    hs_arena *a;
} rd;

/* The value of the field with `id` in record value v of record schema s (after
 * resolving a union), or NULL when the field is absent or null.  *fs gets the
 * field's resolved (non-union) schema. */
static const hs_avro_value *fld(const hs_avro_schema *s, const hs_avro_value *v, int32_t id,
                                const hs_avro_schema **fs)
{
    int i = hs_avro_field_index_by_id(s, id);
    if (i < 0 || i >= v->u.arr.n)
        return NULL;
    const hs_avro_value *x = &v->u.arr.items[i];
    const hs_avro_schema *t = s->fields[i].type;
    if (t->kind == HS_AVRO_UNION) {
        if (x->branch < 0 || x->branch >= t->n)
            return NULL;
        t = t->branches[x->branch];
    }
    if (x->kind == HS_AVRO_NULL)
        return NULL;
    if (fs)
        *fs = t;
    return x;
}

static bool is_int_kind(const hs_avro_value *v) { return v && (v->kind == HS_AVRO_INT || v->kind == HS_AVRO_LONG); }

static hs_status get_long(rd *r, const hs_avro_schema *s, const hs_avro_value *v, int32_t id,
                          const char *what, bool required, bool *has, int64_t *out)
{
    const hs_avro_value *x = fld(s, v, id, NULL);
    if (x == NULL) {
        if (required)
            return HS_CORRUPT_AT(r->err, "%s: %s (field id %d) is missing", r->name, what, (int)id);
        if (has)
            *has = false;
        return HS_OK;
    }
    if (!is_int_kind(x))
        return HS_CORRUPT_AT(r->err, "%s: %s (field id %d) is not an int or long", r->name, what,
                             (int)id);
    *out = x->u.l;
    if (has)
        *has = true;
    return HS_OK;
}

static hs_status get_str(rd *r, const hs_avro_schema *s, const hs_avro_value *v, int32_t id,
                         const char *what, bool required, const char **out)
{
    const hs_avro_value *x = fld(s, v, id, NULL);
    *out = NULL;
    if (x == NULL) {
        if (required)
            return HS_CORRUPT_AT(r->err, "%s: %s (field id %d) is missing", r->name, what, (int)id);
        return HS_OK;
    }
    if (x->kind != HS_AVRO_STRING && x->kind != HS_AVRO_BYTES)
        return HS_CORRUPT_AT(r->err, "%s: %s (field id %d) is not a string", r->name, what, (int)id);
    *out = (const char *)x->u.bytes.p;  /* the decoder NUL-terminates */
    return HS_OK;
}

static hs_status get_bytes(rd *r, const hs_avro_schema *s, const hs_avro_value *v, int32_t id,
                           const char *what, const uint8_t **p, uint32_t *len)
{
    const hs_avro_value *x = fld(s, v, id, NULL);
    *p = NULL;
    *len = 0;
    if (x == NULL)
        return HS_OK;
    if (x->kind != HS_AVRO_BYTES && x->kind != HS_AVRO_FIXED && x->kind != HS_AVRO_STRING)
        return HS_CORRUPT_AT(r->err, "%s: %s (field id %d) is not bytes", r->name, what, (int)id);
    *p = x->u.bytes.p ? x->u.bytes.p : (const uint8_t *)"";
    *len = x->u.bytes.len;
    return HS_OK;
}

/* An Iceberg int-keyed map (array of {key, value} records, or an Avro map with
 * string keys holding numbers). */
static hs_status get_map(rd *r, const hs_avro_schema *s, const hs_avro_value *v, int32_t id,
                         const char *what, bool bytes_values, int *n_out, void **out)
{
    const hs_avro_schema *ms = NULL;
    const hs_avro_value *x = fld(s, v, id, &ms);
    *n_out = 0;
    *out = NULL;
    if (x == NULL)
        return HS_OK;
    if (x->kind != HS_AVRO_ARRAY || ms->kind != HS_AVRO_ARRAY || !ms->items ||
        ms->items->kind != HS_AVRO_RECORD || ms->items->n < 2)
        return HS_CORRUPT_AT(r->err, "%s: %s (field id %d) is not an array of key/value records",
                             r->name, what, (int)id);
    int64_t n = x->u.arr.n;
    if (n > INT32_MAX)
        return HS_CORRUPT_AT(r->err, "%s: %s has %lld entries", r->name, what, (long long)n);
    size_t esz = bytes_values ? sizeof(ice_id_bytes) : sizeof(ice_id_long);
    void *arr = hs_arena_calloc(r->a, n ? (size_t)n : 1, esz);
    if (!arr)
        return hs_err_nomem(r->err, 0);
    int ki = hs_avro_field_index(ms->items, "key"), vi = hs_avro_field_index(ms->items, "value");
    if (ki < 0 || vi < 0) {
        ki = 0;
        vi = 1;
    }
    for (int64_t i = 0; i < n; i++) {
        const hs_avro_value *e = &x->u.arr.items[i];
        if (e->kind != HS_AVRO_RECORD || e->u.arr.n <= (ki > vi ? ki : vi))
            return HS_CORRUPT_AT(r->err, "%s: %s entry %lld is not a record", r->name, what,
                                 (long long)i);
        const hs_avro_value *k = &e->u.arr.items[ki], *val = &e->u.arr.items[vi];
        if (!is_int_kind(k))
            return HS_CORRUPT_AT(r->err, "%s: %s key is not an int", r->name, what);
        if (bytes_values) {
            ice_id_bytes *b = (ice_id_bytes *)arr + i;
            if (val->kind != HS_AVRO_BYTES && val->kind != HS_AVRO_FIXED)
                return HS_CORRUPT_AT(r->err, "%s: %s value is not bytes", r->name, what);
            b->id = (int32_t)k->u.l;
            b->p = val->u.bytes.p ? val->u.bytes.p : (const uint8_t *)"";
            b->len = val->u.bytes.len;
        } else {
            ice_id_long *l = (ice_id_long *)arr + i;
            if (!is_int_kind(val))
                return HS_CORRUPT_AT(r->err, "%s: %s value is not a long", r->name, what);
            l->id = (int32_t)k->u.l;
            l->value = val->u.l;
        }
    }
    *n_out = (int)n;
    *out = arr;
    return HS_OK;
}

static hs_status get_long_list(rd *r, const hs_avro_schema *s, const hs_avro_value *v, int32_t id,
                               const char *what, int *n_out, int64_t **out64, int32_t **out32)
{
    const hs_avro_value *x = fld(s, v, id, NULL);
    *n_out = 0;
    if (out64)
        *out64 = NULL;
    if (out32)
        *out32 = NULL;
    if (x == NULL)
        return HS_OK;
    if (x->kind != HS_AVRO_ARRAY || x->u.arr.n > INT32_MAX)
        return HS_CORRUPT_AT(r->err, "%s: %s (field id %d) is not a list", r->name, what, (int)id);
    int64_t n = x->u.arr.n;
    void *arr = hs_arena_calloc(r->a, n ? (size_t)n : 1, out64 ? 8 : 4);
    if (!arr)
        return hs_err_nomem(r->err, 0);
    for (int64_t i = 0; i < n; i++) {
        if (!is_int_kind(&x->u.arr.items[i]))
            return HS_CORRUPT_AT(r->err, "%s: %s element is not a number", r->name, what);
        if (out64)
            ((int64_t *)arr)[i] = x->u.arr.items[i].u.l;
        else
            ((int32_t *)arr)[i] = (int32_t)x->u.arr.items[i].u.l;
    }
    *n_out = (int)n;
    if (out64)
        *out64 = arr;
    else
        *out32 = arr;
    return HS_OK;
}

/* Iceberg type of a partition value from its Avro schema (when no spec types). */
static ice_type_id type_from_avro(const hs_avro_schema *s, int32_t *precision, int32_t *scale,
                                  int32_t *width)
{
    const char *lt = s->logical_type;
    *precision = *scale = *width = 0;
    switch (s->kind) {
    case HS_AVRO_BOOLEAN: return ICE_T_BOOLEAN;
    case HS_AVRO_INT: return lt && strcmp(lt, "date") == 0 ? ICE_T_DATE : ICE_T_INT;
    case HS_AVRO_LONG:
        if (lt && strcmp(lt, "time-micros") == 0)
            return ICE_T_TIME;
        if (lt && strcmp(lt, "timestamp-micros") == 0)
            return ICE_T_TIMESTAMP;
        if (lt && strcmp(lt, "timestamp-nanos") == 0)
            return ICE_T_TIMESTAMP_NS;
        return ICE_T_LONG;
    case HS_AVRO_FLOAT: return ICE_T_FLOAT;
    case HS_AVRO_DOUBLE: return ICE_T_DOUBLE;
    case HS_AVRO_STRING: return ICE_T_STRING;
    case HS_AVRO_BYTES:
    case HS_AVRO_FIXED:
        if (lt && strcmp(lt, "decimal") == 0) {
            *precision = s->precision;
            *scale = s->scale;
            return ICE_T_DECIMAL;
        }
        if (s->kind == HS_AVRO_BYTES)
            return ICE_T_BINARY;
        if (lt && strcmp(lt, "uuid") == 0)
            return ICE_T_UUID;
        *width = s->size;
        return ICE_T_FIXED;
    default:
        return ICE_T_INVALID;
    }
}

/* Converts an Avro partition value into *out (typed by f when non-NULL, else by
 * the Avro schema).  out is zeroed first; bytes are hs_malloc'd. */
static hs_status partition_value_from_avro(rd *r, const hs_field *f, const hs_avro_schema *as,
                                           const hs_avro_value *x, ice_value *out)
{
    memset(out, 0, sizeof *out);
    int32_t precision, scale, width;
    ice_type_id t = type_from_avro(as, &precision, &scale, &width);
    if (f) {
        ice_type_id ft = ice_type_of(f);
        if (ft != ICE_T_INVALID) {
            t = ft;
            precision = f->precision;
            scale = f->scale;
            width = f->width;
        }
    }
    out->type = t;
    out->precision = precision;
    out->scale = scale;
    out->width = width;
    if (x == NULL || x->kind == HS_AVRO_NULL) {
        out->is_null = true;
        return HS_OK;
    }
    switch (t) {
    case ICE_T_BOOLEAN:
        if (x->kind != HS_AVRO_BOOLEAN)
            goto mismatch;
        out->v.b = x->u.b;
        return HS_OK;
    case ICE_T_INT: case ICE_T_DATE: case ICE_T_LONG: case ICE_T_TIME: case ICE_T_TIMESTAMP:
    case ICE_T_TIMESTAMPTZ: case ICE_T_TIMESTAMP_NS: case ICE_T_TIMESTAMPTZ_NS:
        if (!is_int_kind(x))
            goto mismatch;
        out->v.i = x->u.l;
        return HS_OK;
    case ICE_T_FLOAT:
        if (x->kind == HS_AVRO_FLOAT)
            out->v.f = x->u.f;
        else if (x->kind == HS_AVRO_DOUBLE)
            out->v.f = (float)x->u.d;
        else
            goto mismatch;
        return HS_OK;
    case ICE_T_DOUBLE:
        if (x->kind == HS_AVRO_FLOAT)
            out->v.d = x->u.f;
        else if (x->kind == HS_AVRO_DOUBLE)
            out->v.d = x->u.d;
        else
            goto mismatch;
        return HS_OK;
    case ICE_T_STRING: case ICE_T_BINARY: case ICE_T_FIXED: case ICE_T_UUID: case ICE_T_DECIMAL: {
        if (x->kind != HS_AVRO_STRING && x->kind != HS_AVRO_BYTES && x->kind != HS_AVRO_FIXED)
            goto mismatch;
        const uint8_t *p = x->u.bytes.p;
        uint32_t n = x->u.bytes.len;
        if (t == ICE_T_DECIMAL) {
            /* minimal big-endian two's complement: drop redundant sign bytes */
            while (n > 1 && ((p[0] == 0 && !(p[1] & 0x80)) || (p[0] == 0xFF && (p[1] & 0x80)))) {
                p++;
                n--;
            }
            if (n > 16)
                return HS_CORRUPT_AT(r->err, "%s: decimal partition value of %u bytes", r->name, n);
        }
        if (t == ICE_T_UUID && n != 16)
            return HS_CORRUPT_AT(r->err, "%s: uuid partition value of %u bytes", r->name, n);
        if (n) {
            out->bytes = hs_malloc(n);
            if (!out->bytes)
                return hs_err_nomem(r->err, n);
            memcpy(out->bytes, p, n);
        }
        out->len = n;
        return HS_OK;
    }
    default:
        return HS_CORRUPT_AT(r->err, "%s: partition value of an unsupported type", r->name);
    }
mismatch:
    return HS_CORRUPT_AT(r->err, "%s: partition value of Avro kind %d does not match its type",
                         r->name, (int)x->kind);
}

/* ============================================================ manifest read */

static hs_status read_data_file(rd *r, const ice_manifest *m, const hs_avro_schema *s,
                                const hs_avro_value *v, ice_data_file *df)
{
    int64_t x = 0;
    bool has;
    memset(df, 0, sizeof *df);
    HS_TRY(get_long(r, s, v, 134, "data_file.content", false, &has, &x));
    df->content = has ? (int)x : ICE_CONTENT_DATA;
    if (df->content < 0 || df->content > 2)
        return HS_CORRUPT_AT(r->err, "%s: data_file.content %d is not 0, 1 or 2", r->name, df->content);
    HS_TRY(get_str(r, s, v, 100, "data_file.file_path", true, &df->file_path));
    HS_TRY(get_str(r, s, v, 101, "data_file.file_format", true, &df->file_format));
    HS_TRY(get_long(r, s, v, 103, "data_file.record_count", true, NULL, &df->record_count));
    HS_TRY(get_long(r, s, v, 104, "data_file.file_size_in_bytes", true, NULL, &df->file_size_in_bytes));
    /* partition */
    const hs_avro_schema *ps = NULL;
    const hs_avro_value *pv = fld(s, v, 102, &ps);
    int np = m->partition_type.n_children;
    if (pv && (pv->kind != HS_AVRO_RECORD || ps->kind != HS_AVRO_RECORD))
        return HS_CORRUPT_AT(r->err, "%s: data_file.partition is not a record", r->name);
    if (pv == NULL && np > 0)
        return HS_CORRUPT_AT(r->err, "%s: data_file.partition is missing", r->name);
    if (pv && np == 0)
        np = ps->n;  /* no spec types: take the Avro fields in order */
    df->n_partition = np;
    df->partition = hs_arena_calloc(r->a, np ? (size_t)np : 1, sizeof *df->partition);
    if (!df->partition)
        return hs_err_nomem(r->err, 0);
    bool avro_has_ids = false;
    for (int i = 0; pv && i < ps->n; i++)
        avro_has_ids |= ps->fields[i].field_id >= 0;
    for (int i = 0; i < np; i++) {
        const hs_field *f = i < m->partition_type.n_children ? &m->partition_type.children[i] : NULL;
        int ai;
        if (f == NULL)
            ai = i;                                     /* typed from Avro, in order */
        else if (avro_has_ids)
            ai = hs_avro_field_index_by_id(ps, f->field_id); /* absent: null */
        else
            ai = ps->n == np ? i : -1;                  /* writer without field ids */
        const hs_avro_value *x = NULL;
        const hs_avro_schema *as = NULL;
        if (ai >= 0 && ai < pv->u.arr.n) {
            x = &pv->u.arr.items[ai];
            as = ps->fields[ai].type;
            if (as->kind == HS_AVRO_UNION)
                as = (x->branch >= 0 && x->branch < as->n) ? as->branches[x->branch] : as->branches[0];
        }
        if (as == NULL) {
            static const hs_avro_schema null_schema = {.kind = HS_AVRO_NULL};
            as = &null_schema;
        }
        HS_TRY(partition_value_from_avro(r, f, as, x, &df->partition[i]));
    }
    HS_TRY(get_map(r, s, v, 108, "column_sizes", false, &df->n_column_sizes, (void **)&df->column_sizes));
    HS_TRY(get_map(r, s, v, 109, "value_counts", false, &df->n_value_counts, (void **)&df->value_counts));
    HS_TRY(get_map(r, s, v, 110, "null_value_counts", false, &df->n_null_value_counts,
                   (void **)&df->null_value_counts));
    HS_TRY(get_map(r, s, v, 137, "nan_value_counts", false, &df->n_nan_value_counts,
                   (void **)&df->nan_value_counts));
    HS_TRY(get_map(r, s, v, 125, "lower_bounds", true, &df->n_lower_bounds, (void **)&df->lower_bounds));
    HS_TRY(get_map(r, s, v, 128, "upper_bounds", true, &df->n_upper_bounds, (void **)&df->upper_bounds));
    HS_TRY(get_bytes(r, s, v, 131, "key_metadata", &df->key_metadata, &df->key_metadata_len));
    HS_TRY(get_long_list(r, s, v, 132, "split_offsets", &df->n_split_offsets, &df->split_offsets, NULL));
    HS_TRY(get_long_list(r, s, v, 135, "equality_ids", &df->n_equality_ids, NULL, &df->equality_ids));
    HS_TRY(get_long(r, s, v, 140, "sort_order_id", false, &df->has_sort_order_id, &x));
    df->sort_order_id = df->has_sort_order_id ? (int32_t)x : 0;
    HS_TRY(get_long(r, s, v, 142, "first_row_id", false, &df->has_first_row_id, &df->first_row_id));
    HS_TRY(get_str(r, s, v, 143, "referenced_data_file", false, &df->referenced_data_file));
    HS_TRY(get_long(r, s, v, 144, "content_offset", false, &df->has_content_offset, &df->content_offset));
    HS_TRY(get_long(r, s, v, 145, "content_size_in_bytes", false, &df->has_content_size,
                    &df->content_size_in_bytes));
    if (df->record_count < 0 || df->file_size_in_bytes < 0)
        return HS_CORRUPT_AT(r->err, "%s: %s has negative record_count or file size", r->name,
                             df->file_path);
    return HS_OK;
}

static hs_status read_entry(rd *r, const ice_manifest *m, const hs_avro_schema *s,
                            const hs_avro_value *v, ice_manifest_entry *e)
{
    int64_t x;
    memset(e, 0, sizeof *e);
    if (v->kind != HS_AVRO_RECORD)
        return HS_CORRUPT_AT(r->err, "%s: manifest entry is not a record", r->name);
    HS_TRY(get_long(r, s, v, 0, "manifest_entry.status", true, NULL, &x));
    if (x < 0 || x > 2)
        return HS_CORRUPT_AT(r->err, "%s: manifest entry status %lld is not 0, 1 or 2", r->name,
                             (long long)x);
    e->status = (int)x;
    HS_TRY(get_long(r, s, v, 1, "snapshot_id", false, &e->has_snapshot_id, &e->snapshot_id));
    HS_TRY(get_long(r, s, v, 3, "sequence_number", false, &e->has_sequence_number, &e->sequence_number));
    HS_TRY(get_long(r, s, v, 4, "file_sequence_number", false, &e->has_file_sequence_number,
                    &e->file_sequence_number));
    const hs_avro_schema *ds = NULL;
    const hs_avro_value *dv = fld(s, v, 2, &ds);
    if (dv == NULL || dv->kind != HS_AVRO_RECORD || ds->kind != HS_AVRO_RECORD)
        return HS_CORRUPT_AT(r->err, "%s: manifest entry has no data_file record (field id 2)", r->name);
    return read_data_file(r, m, ds, dv, &e->file);
}

static void apply_inheritance(ice_manifest *m, const ice_manifest_file *mf)
{
    bool v1 = m->format_version == 1;
    int64_t seq = v1 ? 0 : mf->sequence_number;
    int64_t next_row_id = mf->first_row_id;
    for (int64_t i = 0; i < m->n_entries; i++) {
        ice_manifest_entry *e = &m->entries[i];
        if (!e->has_snapshot_id && mf->has_added_snapshot_id) {
            e->has_snapshot_id = true;
            e->snapshot_id = mf->added_snapshot_id;
        }
        bool inherit_seq = seq >= 0 && (seq == 0 || e->status == ICE_STATUS_ADDED);
        if (!e->has_sequence_number && inherit_seq) {
            e->has_sequence_number = true;
            e->sequence_number = seq;
        }
        if (!e->has_file_sequence_number && inherit_seq) {
            e->has_file_sequence_number = true;
            e->file_sequence_number = seq;
        }
        if (mf->has_first_row_id && e->file.content == ICE_CONTENT_DATA &&
            e->status != ICE_STATUS_DELETED && !e->file.has_first_row_id) {
            e->file.has_first_row_id = true;
            e->file.first_row_id = next_row_id;
            next_row_id += e->file.record_count;
        }
    }
}

static int parse_int_meta(const char *s, int dflt)
{
    if (!s || !*s)
        return dflt;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno || v < INT32_MIN || v > INT32_MAX)
        return dflt;
    return (int)v;
}

static bool parse_i64_meta(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno)
        return false;
    *out = v;
    return true;
}

/* Partition tuple type from the caller's or the header's spec and schema; a
 * failure leaves it empty (values are then typed from Avro). */
static void resolve_partition_type(ice_manifest *m, const ice_partition_spec *spec,
                                   const ice_schema *schema)
{
    ice_partition_spec hspec = {0};
    ice_schema hschema = {0};
    bool own_spec = false, own_schema = false;
    hs_error ignore = {0};
    if (!spec && m->spec_json) {
        if (ice_spec_parse_json(m->spec_json, strlen(m->spec_json), m->spec_id, &hspec, &ignore) == HS_OK) {
            spec = &hspec;
            own_spec = true;
        }
    }
    if (!schema && m->schema_json) {
        hs_err_clear(&ignore);
        if (ice_schema_parse_json(m->schema_json, strlen(m->schema_json), &hschema, &ignore) == HS_OK) {
            schema = &hschema;
            own_schema = true;
        }
    }
    if (spec && schema) {
        hs_err_clear(&ignore);
        if (ice_spec_partition_type(spec, schema, &m->partition_type, &ignore) != HS_OK)
            hs_field_clear(&m->partition_type);
    }
    if (own_spec)
        ice_spec_clear(&hspec);
    if (own_schema)
        ice_schema_clear(&hschema);
}

void ice_manifest_free(ice_manifest *m)
{
    if (!m)
        return;
    for (int64_t i = 0; i < m->n_entries; i++)
        for (int j = 0; j < m->entries[i].file.n_partition; j++)
            ice_value_clear(&m->entries[i].file.partition[j]);
    hs_field_clear(&m->partition_type);
    hs_arena_destroy(&m->arena);
    hs_free(m);
}

hs_status ice_manifest_read_mem(const char *name, const uint8_t *buf, size_t len,
                                const ice_manifest_file *mf, const ice_partition_spec *spec,
                                const ice_schema *schema, ice_manifest **out, hs_error *err)
{
    *out = NULL;
    if (!name)
        name = "manifest";
    ice_manifest *m = hs_calloc(1, sizeof *m);
    if (!m)
        return hs_err_nomem(err, sizeof *m);
    m->name = hs_arena_strndup(&m->arena, name, strlen(name));
    rd r = {m->name ? m->name : name, err, &m->arena};
    hs_avro_reader *ar = NULL;
    hs_buf entries = {0};
    hs_status s = m->name ? hs_avro_reader_open(name, buf, len, &ar, err) : hs_err_nomem(err, 0);
    if (s == HS_OK) {
        const hs_avro_schema *es = hs_avro_reader_schema(ar);
        const char *fv = hs_avro_reader_meta(ar, "format-version", NULL);
        const char *content = hs_avro_reader_meta(ar, "content", NULL);
        const char *sj = hs_avro_reader_meta(ar, "schema", NULL);
        const char *pj = hs_avro_reader_meta(ar, "partition-spec", NULL);
        m->format_version = parse_int_meta(fv, 1);
        m->content = content && strcmp(content, "deletes") == 0 ? ICE_MANIFEST_DELETES : ICE_MANIFEST_DATA;
        m->spec_id = parse_int_meta(hs_avro_reader_meta(ar, "partition-spec-id", NULL), -1);
        m->schema_id = parse_int_meta(hs_avro_reader_meta(ar, "schema-id", NULL), -1);
        m->schema_json = sj ? hs_arena_strndup(&m->arena, sj, strlen(sj)) : NULL;
        m->spec_json = pj ? hs_arena_strndup(&m->arena, pj, strlen(pj)) : NULL;
        if (m->format_version < 1 || m->format_version > ICE_MAX_FORMAT_VERSION)
            s = hs_err_set(err, HS_UNSUPPORTED, "%s: manifest format version %d is not supported (1..%d)",
                           name, m->format_version, ICE_MAX_FORMAT_VERSION);
        else if (es->kind != HS_AVRO_RECORD)
            s = HS_CORRUPT_AT(err, "%s: manifest schema is not a record", name);
        if (s == HS_OK)
            resolve_partition_type(m, spec, schema);
        while (s == HS_OK) {
            hs_avro_value v;
            bool done = false;
            s = hs_avro_reader_next(ar, &m->arena, &v, &done, err);
            if (s != HS_OK || done)
                break;
            ice_manifest_entry e;
            s = read_entry(&r, m, es, &v, &e);
            if (s == HS_OK && hs_buf_append(&entries, &e, sizeof e) != HS_OK)
                s = hs_err_nomem(err, 0);
            if (s != HS_OK && e.file.partition) {
                for (int j = 0; j < e.file.n_partition; j++)
                    ice_value_clear(&e.file.partition[j]);
            }
        }
    }
    hs_avro_reader_close(ar);
    m->n_entries = (int64_t)(entries.len / sizeof(ice_manifest_entry));
    if (m->n_entries > 0) {
        m->entries = hs_arena_alloc(&m->arena, entries.len);
        if (m->entries)
            memcpy(m->entries, entries.data, entries.len);
        else {
            for (size_t i = 0; i < entries.len / sizeof(ice_manifest_entry); i++) {
                ice_manifest_entry *e = (ice_manifest_entry *)entries.data + i;
                for (int j = 0; j < e->file.n_partition; j++)
                    ice_value_clear(&e->file.partition[j]);
            }
            m->n_entries = 0;
            if (s == HS_OK)
                s = hs_err_nomem(err, entries.len);
        }
    }
    hs_buf_free(&entries);
    if (s == HS_OK && mf)
        apply_inheritance(m, mf);
    if (s != HS_OK) {
        if (err && err->code == HS_CORRUPT && !strstr(err->msg, name))
            hs_err_prefix(err, "%s", name);
        ice_manifest_free(m);
        return s;
    }
    *out = m;
    return HS_OK;
}

hs_status ice_manifest_read(hs_file *f, const ice_manifest_file *mf, const ice_partition_spec *spec,
                            const ice_schema *schema, ice_manifest **out, hs_error *err)
{
    *out = NULL;
    hs_buf b = {0};
    hs_status s = hs_file_read_buf(f, 0, (size_t)f->size, &b, err);
    if (s == HS_OK)
        s = ice_manifest_read_mem(f->name, b.data, b.len, mf, spec, schema, out, err);
    hs_buf_free(&b);
    return s;
}

/* ======================================================== manifest lists */

static hs_status read_manifest_file(rd *r, int version, const hs_avro_schema *s,
                                    const hs_avro_value *v, ice_manifest_file *mf)
{
    int64_t x;
    bool has;
    memset(mf, 0, sizeof *mf);
    if (v->kind != HS_AVRO_RECORD)
        return HS_CORRUPT_AT(r->err, "%s: manifest list entry is not a record", r->name);
    HS_TRY(get_str(r, s, v, 500, "manifest_path", true, &mf->manifest_path));
    HS_TRY(get_long(r, s, v, 501, "manifest_length", true, NULL, &mf->manifest_length));
    HS_TRY(get_long(r, s, v, 502, "partition_spec_id", true, NULL, &x));
    mf->partition_spec_id = (int32_t)x;
    HS_TRY(get_long(r, s, v, 517, "content", false, &has, &x));
    mf->content = has ? (int)x : ICE_MANIFEST_DATA;
    if (mf->content != ICE_MANIFEST_DATA && mf->content != ICE_MANIFEST_DELETES)
        return HS_CORRUPT_AT(r->err, "%s: manifest %s content %d is not 0 or 1", r->name,
                             mf->manifest_path, mf->content);
    bool v2 = version >= 2;
    HS_TRY(get_long(r, s, v, 515, "sequence_number", v2, &has, &mf->sequence_number));
    if (!has)
        mf->sequence_number = 0;
    HS_TRY(get_long(r, s, v, 516, "min_sequence_number", v2, &has, &mf->min_sequence_number));
    if (!has)
        mf->min_sequence_number = 0;
    HS_TRY(get_long(r, s, v, 503, "added_snapshot_id", v2, &mf->has_added_snapshot_id,
                    &mf->added_snapshot_id));
    static const int32_t cnt_ids[3] = {504, 505, 506};
    int32_t *cnts[3] = {&mf->added_files_count, &mf->existing_files_count, &mf->deleted_files_count};
    for (int i = 0; i < 3; i++) {
        HS_TRY(get_long(r, s, v, cnt_ids[i], "files count", v2, &has, &x));
        *cnts[i] = has ? (int32_t)x : -1;
    }
    static const int32_t row_ids[3] = {512, 513, 514};
    int64_t *rows[3] = {&mf->added_rows_count, &mf->existing_rows_count, &mf->deleted_rows_count};
    for (int i = 0; i < 3; i++) {
        HS_TRY(get_long(r, s, v, row_ids[i], "rows count", v2, &has, rows[i]));
        if (!has)
            *rows[i] = -1;
    }
    const hs_avro_schema *ps = NULL;
    const hs_avro_value *pv = fld(s, v, 507, &ps);
    mf->n_partitions = -1;
    if (pv) {
        /* The spec's element is a required field_summary record; DuckDB
         * writes it optional (items: ["null", record]).  Either is read; a
         * null element, or one without contains_null, leaves the list
         * unknown (n_partitions -1: no pruning by summaries), never wrong. */
        const hs_avro_schema *items = ps->kind == HS_AVRO_ARRAY ? ps->items : NULL;
        bool items_union = items && items->kind == HS_AVRO_UNION;
        if (pv->kind != HS_AVRO_ARRAY || !items ||
            (items->kind != HS_AVRO_RECORD && !items_union) || pv->u.arr.n > INT32_MAX)
            return HS_CORRUPT_AT(r->err, "%s: manifest %s partitions is not a list of summaries",
                                 r->name, mf->manifest_path);
        int n = (int)pv->u.arr.n;
        mf->partitions = hs_arena_calloc(r->a, n ? (size_t)n : 1, sizeof *mf->partitions);
        if (!mf->partitions)
            return hs_err_nomem(r->err, 0);
        mf->n_partitions = n;
        for (int i = 0; i < n; i++) {
            const hs_avro_value *e = &pv->u.arr.items[i];
            const hs_avro_schema *es = items;
            if (items_union) {
                if (e->kind == HS_AVRO_NULL) {
                    mf->n_partitions = -1;
                    break;
                }
                if (e->branch < 0 || e->branch >= items->n)
                    return HS_CORRUPT_AT(r->err, "%s: partition summary has a bad union branch",
                                         r->name);
                es = items->branches[e->branch];
            }
            ice_field_summary *fs = &mf->partitions[i];
            if (e->kind != HS_AVRO_RECORD || es->kind != HS_AVRO_RECORD)
                return HS_CORRUPT_AT(r->err, "%s: partition summary is not a record", r->name);
            const hs_avro_value *cn = fld(es, e, 509, NULL);
            if (!cn && items_union) {
                mf->n_partitions = -1;
                break;
            }
            if (!cn || cn->kind != HS_AVRO_BOOLEAN)
                return HS_CORRUPT_AT(r->err, "%s: partition summary lacks contains_null", r->name);
            fs->contains_null = cn->u.b;
            const hs_avro_value *nan = fld(es, e, 518, NULL);
            if (nan && nan->kind == HS_AVRO_BOOLEAN) {
                fs->has_contains_nan = true;
                fs->contains_nan = nan->u.b;
            }
            HS_TRY(get_bytes(r, es, e, 510, "lower_bound", &fs->lower, &fs->lower_len));
            HS_TRY(get_bytes(r, es, e, 511, "upper_bound", &fs->upper, &fs->upper_len));
        }
    }
    HS_TRY(get_bytes(r, s, v, 519, "key_metadata", &mf->key_metadata, &mf->key_metadata_len));
    HS_TRY(get_long(r, s, v, 520, "first_row_id", false, &mf->has_first_row_id, &mf->first_row_id));
    if (mf->manifest_length < 0)
        return HS_CORRUPT_AT(r->err, "%s: manifest %s has negative length", r->name, mf->manifest_path);
    return HS_OK;
}

void ice_manifest_list_free(ice_manifest_list *l)
{
    if (!l)
        return;
    hs_arena_destroy(&l->arena);
    hs_free(l);
}

hs_status ice_manifest_list_read_mem(const char *name, const uint8_t *buf, size_t len,
                                     ice_manifest_list **out, hs_error *err)
{
    *out = NULL;
    if (!name)
        name = "manifest list";
    ice_manifest_list *l = hs_calloc(1, sizeof *l);
    if (!l)
        return hs_err_nomem(err, sizeof *l);
    l->name = hs_arena_strndup(&l->arena, name, strlen(name));
    rd r = {l->name ? l->name : name, err, &l->arena};
    hs_avro_reader *ar = NULL;
    hs_buf files = {0};
    hs_status s = l->name ? hs_avro_reader_open(name, buf, len, &ar, err) : hs_err_nomem(err, 0);
    if (s == HS_OK) {
        const hs_avro_schema *es = hs_avro_reader_schema(ar);
        l->format_version = parse_int_meta(hs_avro_reader_meta(ar, "format-version", NULL), 1);
        l->has_snapshot_id = parse_i64_meta(hs_avro_reader_meta(ar, "snapshot-id", NULL), &l->snapshot_id);
        l->has_parent_id = parse_i64_meta(hs_avro_reader_meta(ar, "parent-snapshot-id", NULL), &l->parent_id);
        l->has_sequence_number = parse_i64_meta(hs_avro_reader_meta(ar, "sequence-number", NULL),
                                                &l->sequence_number);
        l->has_first_row_id = parse_i64_meta(hs_avro_reader_meta(ar, "first-row-id", NULL), &l->first_row_id);
        if (l->format_version < 1 || l->format_version > ICE_MAX_FORMAT_VERSION)
            s = hs_err_set(err, HS_UNSUPPORTED, "%s: manifest list format version %d is not "
                           "supported (1..%d)", name, l->format_version, ICE_MAX_FORMAT_VERSION);
        else if (es->kind != HS_AVRO_RECORD)
            s = HS_CORRUPT_AT(err, "%s: manifest list schema is not a record", name);
        /* v1 lists of Java and pyiceberg have no format-version key: treat by fields */
        int version = l->format_version;
        if (s == HS_OK && version == 1 && hs_avro_field_index_by_id(es, 515) >= 0)
            version = 2;
        while (s == HS_OK) {
            hs_avro_value v;
            bool done = false;
            s = hs_avro_reader_next(ar, &l->arena, &v, &done, err);
            if (s != HS_OK || done)
                break;
            ice_manifest_file mf;
            s = read_manifest_file(&r, version, es, &v, &mf);
            if (s == HS_OK && hs_buf_append(&files, &mf, sizeof mf) != HS_OK)
                s = hs_err_nomem(err, 0);
            if (s == HS_OK && files.len / sizeof mf > INT32_MAX)
                s = HS_CORRUPT_AT(err, "%s: too many manifests", name);
        }
    }
    hs_avro_reader_close(ar);
    if (s == HS_OK) {
        l->n_files = (int)(files.len / sizeof(ice_manifest_file));
        l->files = hs_arena_alloc(&l->arena, files.len ? files.len : 1);
        if (!l->files)
            s = hs_err_nomem(err, files.len);
        else if (files.len)
            memcpy(l->files, files.data, files.len);
    }
    hs_buf_free(&files);
    if (s != HS_OK) {
        if (err && err->code == HS_CORRUPT && !strstr(err->msg, name))
            hs_err_prefix(err, "%s", name);
        ice_manifest_list_free(l);
        return s;
    }
    *out = l;
    return HS_OK;
}

hs_status ice_manifest_list_read(hs_file *f, ice_manifest_list **out, hs_error *err)
{
    *out = NULL;
    hs_buf b = {0};
    hs_status s = hs_file_read_buf(f, 0, (size_t)f->size, &b, err);
    if (s == HS_OK)
        s = ice_manifest_list_read_mem(f->name, b.data, b.len, out, err);
    hs_buf_free(&b);
    return s;
}

static hs_status build_manifest_file(hs_arena *a, int version, const ice_manifest_file *mf,
                                     hs_avro_value *out)
{
    const int *fl = mf_fields(version);
    int n = 0;
    while (fl[n] != MF__END)
        n++;
    hs_avro_value *it = hs_avro_new_array(a, HS_AVRO_RECORD, n, out);
    if (!it)
        return HS_NOMEM;
    for (int i = 0; i < n; i++) {
        switch (fl[i]) {
        case MF_PATH: it[i] = hs_avro_str(mf->manifest_path); break;
        case MF_LENGTH: it[i] = hs_avro_long(mf->manifest_length); break;
        case MF_SPEC_ID: it[i] = hs_avro_long(mf->partition_spec_id); break;
        case MF_CONTENT: it[i] = hs_avro_long(mf->content); break;
        case MF_SEQ: it[i] = hs_avro_long(mf->sequence_number); break;
        case MF_MIN_SEQ: it[i] = hs_avro_long(mf->min_sequence_number); break;
        case MF_SNAPSHOT:
            it[i] = mf->has_added_snapshot_id ? hs_avro_long(mf->added_snapshot_id) : hs_avro_null();
            if (version > 1 && !mf->has_added_snapshot_id)
                return HS_INVALID;
            break;
        case MF_ADDED_FILES: case MF_EXISTING_FILES: case MF_DELETED_FILES: {
            int32_t c = fl[i] == MF_ADDED_FILES ? mf->added_files_count
                      : fl[i] == MF_EXISTING_FILES ? mf->existing_files_count : mf->deleted_files_count;
            if (c < 0 && version > 1)
                return HS_INVALID;
            it[i] = c < 0 ? hs_avro_null() : hs_avro_long(c);
            break;
        }
        case MF_ADDED_ROWS: case MF_EXISTING_ROWS: case MF_DELETED_ROWS: {
            int64_t c = fl[i] == MF_ADDED_ROWS ? mf->added_rows_count
                      : fl[i] == MF_EXISTING_ROWS ? mf->existing_rows_count : mf->deleted_rows_count;
            if (c < 0 && version > 1)
                return HS_INVALID;
            it[i] = c < 0 ? hs_avro_null() : hs_avro_long(c);
            break;
        }
        case MF_PARTITIONS:
            if (mf->n_partitions < 0 || !mf->partitions) {
                it[i] = hs_avro_null();
            } else {
                hs_avro_value *ps = hs_avro_new_array(a, HS_AVRO_ARRAY, mf->n_partitions, &it[i]);
                if (!ps)
                    return HS_NOMEM;
                for (int j = 0; j < mf->n_partitions; j++) {
                    const ice_field_summary *fs = &mf->partitions[j];
                    hs_avro_value *r = hs_avro_new_array(a, HS_AVRO_RECORD, 4, &ps[j]);
                    if (!r)
                        return HS_NOMEM;
                    r[0] = hs_avro_bool(fs->contains_null);
                    r[1] = fs->has_contains_nan ? hs_avro_bool(fs->contains_nan) : hs_avro_null();
                    r[2] = fs->lower ? hs_avro_bytes(fs->lower, fs->lower_len) : hs_avro_null();
                    r[3] = fs->upper ? hs_avro_bytes(fs->upper, fs->upper_len) : hs_avro_null();
                }
            }
            break;
        case MF_KEY_METADATA:
            it[i] = mf->key_metadata ? hs_avro_bytes(mf->key_metadata, mf->key_metadata_len) : hs_avro_null();
            break;
        case MF_FIRST_ROW_ID:
            it[i] = mf->has_first_row_id ? hs_avro_long(mf->first_row_id) : hs_avro_null();
            break;
        }
    }
    return HS_OK;
}

hs_status ice_manifest_list_write(hs_wfile *out, const ice_manifest_list_info *info,
                                  ice_manifest_file *files, int n, int64_t *assigned_rows,
                                  hs_error *err)
{
    int version = info->format_version;
    if (version < 1 || version > ICE_MAX_FORMAT_VERSION)
        return hs_err_set(err, HS_INVALID, "manifest list: format version %d is not 1..%d", version,
                          ICE_MAX_FORMAT_VERSION);
    int64_t next_row_id = info->first_row_id;
    for (int i = 0; i < n; i++) {
        ice_manifest_file *mf = &files[i];
        if (!mf->manifest_path)
            return hs_err_set(err, HS_INVALID, "manifest list: manifest %d has no path", i);
        if (version >= 2) {
            if (mf->sequence_number == ICE_SEQ_UNASSIGNED)
                mf->sequence_number = info->sequence_number;
            if (mf->min_sequence_number == ICE_SEQ_UNASSIGNED)
                mf->min_sequence_number = info->sequence_number;
        }
        if (version >= 3 && mf->content == ICE_MANIFEST_DATA && !mf->has_first_row_id) {
            mf->has_first_row_id = true;
            mf->first_row_id = next_row_id;
            next_row_id += (mf->added_rows_count > 0 ? mf->added_rows_count : 0) +
                           (mf->existing_rows_count > 0 ? mf->existing_rows_count : 0);
        }
    }
    if (assigned_rows)
        *assigned_rows = version >= 3 ? next_row_id - info->first_row_id : 0;
    hs_buf schema = {0}, bytes = {0};
    hs_arena scratch = {0};
    hs_avro_writer *w = NULL;
    hs_status s = manifest_file_schema_json(version, &schema) == HS_OK ? HS_OK : hs_err_nomem(err, 0);
    if (s == HS_OK) {
        char snap[24], parent[24], seq[24], fv[8], fr[24];
        snprintf(snap, sizeof snap, "%lld", (long long)info->snapshot_id);
        if (info->has_parent_id)
            snprintf(parent, sizeof parent, "%lld", (long long)info->parent_id);
        else
            snprintf(parent, sizeof parent, "null");
        snprintf(seq, sizeof seq, "%lld", (long long)info->sequence_number);
        snprintf(fv, sizeof fv, "%d", version);
        snprintf(fr, sizeof fr, "%lld", (long long)info->first_row_id);
        const char *keys[6], *vals[6];
        int nm = 0;
        keys[nm] = "snapshot-id"; vals[nm++] = snap;
        keys[nm] = "parent-snapshot-id"; vals[nm++] = parent;
        if (version >= 2) {
            keys[nm] = "sequence-number";
            vals[nm++] = seq;
        }
        keys[nm] = "format-version"; vals[nm++] = fv;
        if (version >= 3) {
            keys[nm] = "first-row-id";
            vals[nm++] = fr;
        }
        s = hs_avro_writer_open(hs_buf_cstr(&schema), info->codec, keys, vals, nm, &w, err);
    }
    for (int i = 0; i < n && s == HS_OK; i++) {
        hs_avro_value v;
        hs_arena_reset(&scratch);
        hs_status b = build_manifest_file(&scratch, version, &files[i], &v);
        if (b == HS_INVALID)
            s = hs_err_set(err, HS_INVALID, "manifest list: manifest %s lacks counts or snapshot id "
                           "required by format version %d", files[i].manifest_path, version);
        else if (b != HS_OK)
            s = hs_err_nomem(err, 0);
        else
            s = hs_avro_writer_append(w, &v, err);
    }
    if (s == HS_OK) {
        s = hs_avro_writer_finish(w, &bytes, err);
        w = NULL;
    }
    if (s == HS_OK)
        s = hs_wfile_write(out, bytes.data, bytes.len, err);
    hs_avro_writer_free(w);
    hs_arena_destroy(&scratch);
    hs_buf_free(&schema);
    hs_buf_free(&bytes);
    return s;
}

/* ================================================================ debug JSON */

static json_t *hex_json(const uint8_t *p, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    char *s = hs_malloc(2 * n + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = hx[p[i] >> 4];
        s[2 * i + 1] = hx[p[i] & 15];
    }
    s[2 * n] = 0;
    json_t *j = json_string(s);
    hs_free(s);
    return j;
}

static json_t *opt_i64(bool has, int64_t v) { return has ? json_integer(v) : json_null(); }

static json_t *value_json(const ice_value *v)
{
    if (v->is_null)
        return json_null();
    switch (v->type) {
    case ICE_T_BOOLEAN: return json_boolean(v->v.b);
    case ICE_T_FLOAT: return json_real(v->v.f);
    case ICE_T_DOUBLE: return json_real(v->v.d);
    case ICE_T_STRING: return json_stringn(v->bytes ? (const char *)v->bytes : "", v->len);
    case ICE_T_BINARY: case ICE_T_FIXED: case ICE_T_UUID: case ICE_T_DECIMAL:
        return hex_json(v->bytes, v->len);
    default: return json_integer(v->v.i);
    }
}

static json_t *id_long_json(const ice_id_long *m, int n)
{
    json_t *o = json_object();
    for (int i = 0; o && i < n; i++) {
        char k[16];
        snprintf(k, sizeof k, "%d", (int)m[i].id);
        json_object_set_new(o, k, json_integer(m[i].value));
    }
    return o;
}

static json_t *id_bytes_json(const ice_id_bytes *m, int n)
{
    json_t *o = json_object();
    for (int i = 0; o && i < n; i++) {
        char k[16];
        snprintf(k, sizeof k, "%d", (int)m[i].id);
        json_object_set_new(o, k, hex_json(m[i].p, m[i].len));
    }
    return o;
}

static json_t *manifest_file_json(const ice_manifest_file *mf)
{
    json_t *parts = json_null();
    if (mf->n_partitions >= 0) {
        parts = json_array();
        for (int i = 0; i < mf->n_partitions; i++) {
            const ice_field_summary *fs = &mf->partitions[i];
            json_array_append_new(parts, json_pack("{s:b, s:o, s:o, s:o}", "contains_null",
                                                   fs->contains_null, "contains_nan",
                                                   fs->has_contains_nan ? json_boolean(fs->contains_nan) : json_null(),
                                                   "lower_bound", fs->lower ? hex_json(fs->lower, fs->lower_len) : json_null(),
                                                   "upper_bound", fs->upper ? hex_json(fs->upper, fs->upper_len) : json_null()));
        }
    }
    return json_pack("{s:s, s:I, s:i, s:i, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o}",
                     "manifest_path", mf->manifest_path, "manifest_length", (json_int_t)mf->manifest_length,
                     "partition_spec_id", (int)mf->partition_spec_id, "content", mf->content,
                     "sequence_number", (json_int_t)mf->sequence_number,
                     "min_sequence_number", (json_int_t)mf->min_sequence_number,
                     "added_snapshot_id", opt_i64(mf->has_added_snapshot_id, mf->added_snapshot_id),
                     "added_files_count", (json_int_t)mf->added_files_count,
                     "existing_files_count", (json_int_t)mf->existing_files_count,
                     "deleted_files_count", (json_int_t)mf->deleted_files_count,
                     "added_rows_count", (json_int_t)mf->added_rows_count,
                     "existing_rows_count", (json_int_t)mf->existing_rows_count,
                     "deleted_rows_count", (json_int_t)mf->deleted_rows_count,
                     "partitions", parts,
                     "first_row_id", opt_i64(mf->has_first_row_id, mf->first_row_id));
}

static json_t *entry_json(const ice_manifest_entry *e)
{
    const ice_data_file *df = &e->file;
    json_t *part = json_array();
    for (int i = 0; i < df->n_partition; i++)
        json_array_append_new(part, value_json(&df->partition[i]));
    json_t *split = json_array(), *eq = json_array();
    for (int i = 0; i < df->n_split_offsets; i++)
        json_array_append_new(split, json_integer(df->split_offsets[i]));
    for (int i = 0; i < df->n_equality_ids; i++)
        json_array_append_new(eq, json_integer(df->equality_ids[i]));
    json_t *d = json_pack("{s:i, s:s, s:s, s:o, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                          "content", df->content, "file_path", df->file_path, "file_format", df->file_format,
                          "partition", part, "record_count", (json_int_t)df->record_count,
                          "file_size_in_bytes", (json_int_t)df->file_size_in_bytes,
                          "column_sizes", id_long_json(df->column_sizes, df->n_column_sizes),
                          "value_counts", id_long_json(df->value_counts, df->n_value_counts),
                          "null_value_counts", id_long_json(df->null_value_counts, df->n_null_value_counts),
                          "nan_value_counts", id_long_json(df->nan_value_counts, df->n_nan_value_counts),
                          "lower_bounds", id_bytes_json(df->lower_bounds, df->n_lower_bounds),
                          "upper_bounds", id_bytes_json(df->upper_bounds, df->n_upper_bounds),
                          "split_offsets", split, "equality_ids", eq,
                          "sort_order_id", opt_i64(df->has_sort_order_id, df->sort_order_id),
                          "first_row_id", opt_i64(df->has_first_row_id, df->first_row_id),
                          "referenced_data_file", df->referenced_data_file ? json_string(df->referenced_data_file) : json_null(),
                          "content_offset", opt_i64(df->has_content_offset, df->content_offset),
                          "content_size_in_bytes", opt_i64(df->has_content_size, df->content_size_in_bytes));
    return json_pack("{s:i, s:o, s:o, s:o, s:o}", "status", e->status,
                     "snapshot_id", opt_i64(e->has_snapshot_id, e->snapshot_id),
                     "sequence_number", opt_i64(e->has_sequence_number, e->sequence_number),
                     "file_sequence_number", opt_i64(e->has_file_sequence_number, e->file_sequence_number),
                     "data_file", d);
}

static char *dump_json(json_t *j, hs_error *err)
{
    char *s = j ? hs_json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        hs_err_nomem(err, 0);
        return NULL;
    }
    char *r = hs_strdup(s);
    free(s);
    if (!r)
        hs_err_nomem(err, 0);
    return r;
}

static hs_status open_list(const char *path, ice_manifest_list **out, hs_error *err)
{
    hs_file *f;
    HS_TRY(hs_io_open(path, &f, err));
    hs_status s = ice_manifest_list_read(f, out, err);
    hs_file_close(f);
    return s;
}

char *ice_manifest_list_debug_json(const char *path, hs_error *err)
{
    ice_manifest_list *l;
    if (open_list(path, &l, err) != HS_OK)
        return NULL;
    json_t *files = json_array();
    for (int i = 0; i < l->n_files; i++)
        json_array_append_new(files, manifest_file_json(&l->files[i]));
    json_t *root = json_pack("{s:i, s:o, s:o, s:o, s:o, s:o}", "format_version", l->format_version,
                             "snapshot_id", opt_i64(l->has_snapshot_id, l->snapshot_id),
                             "parent_snapshot_id", opt_i64(l->has_parent_id, l->parent_id),
                             "sequence_number", opt_i64(l->has_sequence_number, l->sequence_number),
                             "first_row_id", opt_i64(l->has_first_row_id, l->first_row_id),
                             "manifests", files);
    ice_manifest_list_free(l);
    return dump_json(root, err);
}

char *ice_manifest_debug_json(const char *manifest_path, const char *list_path, int mf_index,
                              hs_error *err)
{
    ice_manifest_list *l = NULL;
    const ice_manifest_file *mf = NULL;
    if (list_path && mf_index >= 0) {
        if (open_list(list_path, &l, err) != HS_OK)
            return NULL;
        if (mf_index >= l->n_files) {
            hs_err_set(err, HS_INVALID, "%s has %d manifests, not %d", list_path, l->n_files, mf_index + 1);
            ice_manifest_list_free(l);
            return NULL;
        }
        mf = &l->files[mf_index];
    }
    hs_file *f;
    ice_manifest *m = NULL;
    hs_status s = hs_io_open(manifest_path, &f, err);
    if (s == HS_OK) {
        s = ice_manifest_read(f, mf, NULL, NULL, &m, err);
        hs_file_close(f);
    }
    ice_manifest_list_free(l);
    if (s != HS_OK)
        return NULL;
    json_t *entries = json_array();
    for (int64_t i = 0; i < m->n_entries; i++)
        json_array_append_new(entries, entry_json(&m->entries[i]));
    json_t *root = json_pack("{s:i, s:i, s:i, s:i, s:o}", "format_version", m->format_version,
                             "content", m->content, "partition_spec_id", (int)m->spec_id,
                             "schema_id", (int)m->schema_id, "entries", entries);
    ice_manifest_free(m);
    return dump_json(root, err);
}

void ice_manifest_debug_free(char *s) { hs_free(s); }

/* ---- ice_manifest_debug_write: JSON description -> manifest + list ---- */

static int64_t jint(json_t *o, const char *k, int64_t dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static hs_status dbg_id_longs(json_t *o, hs_arena *a, int *n, ice_id_long **out)
{
    *n = 0;
    *out = NULL;
    if (!json_is_object(o))
        return HS_OK;
    *out = hs_arena_calloc(a, json_object_size(o) + 1, sizeof **out);
    if (!*out)
        return HS_NOMEM;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        (*out)[*n].id = atoi(k);
        (*out)[(*n)++].value = json_integer_value(v);
    }
    return HS_OK;
}

static hs_status dbg_id_bytes(json_t *o, hs_arena *a, int *n, ice_id_bytes **out)
{
    *n = 0;
    *out = NULL;
    if (!json_is_object(o))
        return HS_OK;
    *out = hs_arena_calloc(a, json_object_size(o) + 1, sizeof **out);
    if (!*out)
        return HS_NOMEM;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        const char *h = json_string_value(v);
        size_t hl = h ? strlen(h) / 2 : 0;
        uint8_t *p = hs_arena_alloc(a, hl + 1);
        if (!p)
            return HS_NOMEM;
        for (size_t i = 0; i < hl; i++)
            p[i] = (uint8_t)(hexval(h[2 * i]) * 16 + hexval(h[2 * i + 1]));
        (*out)[*n].id = atoi(k);
        (*out)[*n].p = p;
        (*out)[(*n)++].len = (uint32_t)hl;
    }
    return HS_OK;
}

static hs_status dbg_write_file(const char *path, const hs_buf *b, hs_error *err)
{
    hs_wfile *w;
    HS_TRY(hs_io_create(path, 0, &w, err));
    hs_status s = hs_wfile_write(w, b->data, b->len, err);
    if (s != HS_OK) {
        hs_wfile_abort(w);
        return s;
    }
    return hs_wfile_close(w, err);
}

static hs_status dbg_entries(json_t *root, const ice_schema *schema, const ice_partition_spec *spec,
                             ice_manifest_writer *w, hs_arena *a, hs_error *err)
{
    hs_field ptype = {0};
    HS_TRY(ice_spec_partition_type(spec, schema, &ptype, err));
    json_t *entries = json_object_get(root, "entries");
    hs_status s = HS_OK;
    for (size_t i = 0; i < json_array_size(entries) && s == HS_OK; i++) {
        json_t *e = json_array_get(entries, i);
        ice_manifest_entry me;
        memset(&me, 0, sizeof me);
        me.status = (int)jint(e, "status", 1);
        json_t *sid = json_object_get(e, "snapshot_id");
        if ((me.has_snapshot_id = json_is_integer(sid)))
            me.snapshot_id = json_integer_value(sid);
        json_t *seq = json_object_get(e, "sequence_number");
        if ((me.has_sequence_number = json_is_integer(seq)))
            me.sequence_number = json_integer_value(seq);
        json_t *fseq = json_object_get(e, "file_sequence_number");
        if ((me.has_file_sequence_number = json_is_integer(fseq)))
            me.file_sequence_number = json_integer_value(fseq);
        ice_data_file *df = &me.file;
        df->content = (int)jint(e, "content", 0);
        df->file_path = json_string_value(json_object_get(e, "file_path"));
        df->file_format = json_string_value(json_object_get(e, "file_format"));
        df->record_count = jint(e, "record_count", 0);
        df->file_size_in_bytes = jint(e, "file_size_in_bytes", 0);
        json_t *part = json_object_get(e, "partition");
        df->n_partition = ptype.n_children;
        df->partition = hs_arena_calloc(a, (size_t)ptype.n_children + 1, sizeof(ice_value));
        if (!df->partition) {
            s = hs_err_nomem(err, 0);
            break;
        }
        for (int j = 0; j < ptype.n_children && s == HS_OK; j++) {
            char *txt = hs_json_dumps(json_array_get(part, (size_t)j) ? json_array_get(part, (size_t)j)
                                                                   : json_null(),
                                   JSON_ENCODE_ANY);
            s = txt ? ice_value_from_json(&ptype.children[j], txt, strlen(txt), &df->partition[j], err)
                    : hs_err_nomem(err, 0);
            free(txt);
        }
        if (s == HS_OK &&
            (dbg_id_longs(json_object_get(e, "column_sizes"), a, &df->n_column_sizes, &df->column_sizes) ||
             dbg_id_longs(json_object_get(e, "value_counts"), a, &df->n_value_counts, &df->value_counts) ||
             dbg_id_longs(json_object_get(e, "null_value_counts"), a, &df->n_null_value_counts,
                          &df->null_value_counts) ||
             dbg_id_longs(json_object_get(e, "nan_value_counts"), a, &df->n_nan_value_counts,
                          &df->nan_value_counts) ||
             dbg_id_bytes(json_object_get(e, "lower_bounds"), a, &df->n_lower_bounds, &df->lower_bounds) ||
             dbg_id_bytes(json_object_get(e, "upper_bounds"), a, &df->n_upper_bounds, &df->upper_bounds)))
            s = hs_err_nomem(err, 0);
        json_t *so = json_object_get(e, "split_offsets");
        if (s == HS_OK && json_array_size(so) > 0) {
            df->n_split_offsets = (int)json_array_size(so);
            df->split_offsets = hs_arena_calloc(a, json_array_size(so), sizeof(int64_t));
            if (!df->split_offsets)
                s = hs_err_nomem(err, 0);
            for (int j = 0; s == HS_OK && j < df->n_split_offsets; j++)
                df->split_offsets[j] = json_integer_value(json_array_get(so, (size_t)j));
        }
        json_t *soi = json_object_get(e, "sort_order_id");
        if ((df->has_sort_order_id = json_is_integer(soi)))
            df->sort_order_id = (int32_t)json_integer_value(soi);
        df->referenced_data_file = json_string_value(json_object_get(e, "referenced_data_file"));
        json_t *co = json_object_get(e, "content_offset"), *cs = json_object_get(e, "content_size_in_bytes");
        if ((df->has_content_offset = json_is_integer(co)))
            df->content_offset = json_integer_value(co);
        if ((df->has_content_size = json_is_integer(cs)))
            df->content_size_in_bytes = json_integer_value(cs);
        if (s == HS_OK)
            s = ice_manifest_writer_add(w, &me, err);
        for (int j = 0; j < df->n_partition; j++)
            ice_value_clear(&df->partition[j]);
    }
    hs_field_clear(&ptype);
    return s;
}

int ice_manifest_debug_write(const char *json, const char *manifest_path, const char *list_path,
                             hs_error *err)
{
    json_error_t je;
    json_t *root = hs_json_loads(json, 0, &je);
    if (!root)
        return hs_err_set(err, HS_INVALID, "debug_write: %s", je.text);
    ice_schema schema = {0};
    ice_partition_spec spec = {0};
    hs_arena a = {0};
    hs_buf mbytes = {0}, lbytes = {0};
    ice_manifest_writer *w = NULL;
    int version = (int)jint(root, "format_version", 2);
    const char *codec_s = json_string_value(json_object_get(root, "codec"));
    hs_avro_codec codec = codec_s && strcmp(codec_s, "null") == 0 ? HS_AVRO_CODEC_NULL : HS_AVRO_CODEC_DEFLATE;
    int64_t snap = jint(root, "snapshot_id", 1);
    char *st = hs_json_dumps(json_object_get(root, "schema"), 0);
    char *sp = hs_json_dumps(json_object_get(root, "spec"), 0);
    hs_status s = st && sp ? HS_OK : hs_err_set(err, HS_INVALID, "debug_write: schema and spec needed");
    if (s == HS_OK)
        s = ice_schema_parse_json(st, strlen(st), &schema, err);
    if (s == HS_OK)
        s = ice_spec_parse_json(sp, strlen(sp), 0, &spec, err);
    int content = ICE_MANIFEST_DATA;
    json_t *e0 = json_array_get(json_object_get(root, "entries"), 0);
    if (e0 && jint(e0, "content", 0) != 0)
        content = ICE_MANIFEST_DELETES;
    if (s == HS_OK)
        s = ice_manifest_writer_open(manifest_path, version, content, &schema, &spec, snap, codec, &w, err);
    if (s == HS_OK)
        s = dbg_entries(root, &schema, &spec, w, &a, err);
    ice_manifest_file mf;
    if (s == HS_OK) {
        hs_wfile *wf;
        s = hs_mem_create(&mbytes, &wf, err);
        if (s == HS_OK) {
            s = ice_manifest_writer_finish(w, wf, &a, &mf, err);
            w = NULL;
            hs_status c = hs_wfile_close(wf, err);
            if (s == HS_OK)
                s = c;
        }
    }
    if (s == HS_OK)
        s = dbg_write_file(manifest_path, &mbytes, err);
    if (s == HS_OK && list_path) {
        json_t *parent = json_object_get(root, "parent_id");
        ice_manifest_list_info info = {version, snap, json_is_integer(parent),
                                       json_is_integer(parent) ? json_integer_value(parent) : 0,
                                       jint(root, "sequence_number", 1), jint(root, "first_row_id", 0),
                                       codec};
        hs_wfile *wf;
        s = hs_mem_create(&lbytes, &wf, err);
        if (s == HS_OK) {
            s = ice_manifest_list_write(wf, &info, &mf, 1, NULL, err);
            hs_status c = hs_wfile_close(wf, err);
            if (s == HS_OK)
                s = c;
        }
        if (s == HS_OK)
            s = dbg_write_file(list_path, &lbytes, err);
    }
    ice_manifest_writer_free(w);
    free(st);
    free(sp);
    json_decref(root);
    ice_schema_clear(&schema);
    ice_spec_clear(&spec);
    hs_arena_destroy(&a);
    hs_buf_free(&mbytes);
    hs_buf_free(&lbytes);
    return (int)s;
}

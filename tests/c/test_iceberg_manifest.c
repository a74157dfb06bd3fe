/* Iceberg manifests and manifest lists: round trips for format versions 1-3
 * and both codecs, header keys and field ids in the written schema,
 * inheritance (snapshot id, sequence numbers, v3 first_row_id), partition
 * summaries, corrupt and truncated input, and I/O faults.  The independent
 * oracles (fastavro, pyiceberg) are in tests/python/test_manifest_oracle.py. */
#include "base/mem.h"
#include "harness.h"
#include "iceberg/manifest.h"
#include "iceberg/metrics.h"

#include <math.h>

/* schema: 1 id long (required), 2 name string, 3 ts timestamp, 4 price decimal(9,2), 5 f double */
static void make_schema(ice_schema *s)
{
    hs_field root, c;
    hs_field_init(&root, "table", HS_TYPE_STRUCT, false);
    static const struct { const char *n; ice_type_id t; int p, sc; bool nullable; } cols[] = {
        {"id", ICE_T_LONG, 0, 0, false}, {"name", ICE_T_STRING, 0, 0, true},
        {"ts", ICE_T_TIMESTAMP, 0, 0, true}, {"price", ICE_T_DECIMAL, 9, 2, true},
        {"f", ICE_T_DOUBLE, 0, 0, true}};
    for (int i = 0; i < 5; i++) {
        hs_field_init(&c, cols[i].n, HS_TYPE_INT64, cols[i].nullable);
        if (ice_field_set_type(&c, cols[i].t, cols[i].p, cols[i].sc, 0) != HS_OK)
            abort();
        c.field_id = i + 1;
        if (hs_field_add_child(&root, &c) != HS_OK)
            abort();
    }
    hs_error err = {0};
    if (ice_schema_from_field(&root, 0, s, &err) != HS_OK)
        abort();
    hs_field_clear(&root);
}

/* spec 0: identity(name) 1000, day(ts) 1001, bucket[4](id) 1002, identity(price) 1003,
 * identity(f) 1004 */
static void make_spec(const ice_schema *schema, ice_partition_spec *spec)
{
    hs_error err = {0};
    memset(spec, 0, sizeof *spec);
    const char *tr[] = {"identity", "day", "bucket[4]", "identity", "identity"};
    int32_t src[] = {2, 3, 1, 4, 5};
    for (int i = 0; i < 5; i++) {
        ice_transform t;
        if (ice_transform_parse(tr[i], &t, &err) != HS_OK ||
            ice_spec_add_field(spec, schema, src[i], &t, NULL, 1000 + i, &err) != HS_OK) {
            fprintf(stderr, "spec: %s\n", err.msg);
            abort();
        }
    }
}

typedef struct fixture {
    ice_value part[5];
    ice_id_long sizes[2];
    ice_id_bytes lower[2], upper[2];
    int64_t splits[1];
    int32_t eq[1];
    char path[64];
    ice_manifest_entry e;
} fixture;

static void make_entry(fixture *fx, int k, int status, bool null_name)
{
    memset(fx, 0, sizeof *fx);
    snprintf(fx->path, sizeof fx->path, "s3://bucket/t/data/file-%d.parquet", k);
    char name[16];
    snprintf(name, sizeof name, "n%d", k);
    if (null_name) {
        fx->part[0].type = ICE_T_STRING;
        fx->part[0].is_null = true;
    } else if (ice_value_set_bytes(&fx->part[0], ICE_T_STRING, name, strlen(name)) != HS_OK) {
        abort();
    }
    ice_value_set_int(&fx->part[1], ICE_T_DATE, 19000 + k);
    ice_value_set_int(&fx->part[2], ICE_T_INT, k % 4);
    if (ice_value_set_decimal(&fx->part[3], (__int128)(k % 2 ? -12345 : 999) * (k + 1), 9, 2) != HS_OK)
        abort();
    fx->part[4].type = ICE_T_DOUBLE;
    fx->part[4].v.d = k == 2 ? NAN : 1.5 * k;
    fx->sizes[0] = (ice_id_long){1, 100 + k};
    fx->sizes[1] = (ice_id_long){2, 200 + k};
    static const uint8_t lo[8] = {1, 0, 0, 0, 0, 0, 0, 0}, hi[8] = {9, 0, 0, 0, 0, 0, 0, 0};
    fx->lower[0] = (ice_id_bytes){1, 8, lo};
    fx->upper[0] = (ice_id_bytes){1, 8, hi};
    fx->lower[1] = (ice_id_bytes){2, 2, (const uint8_t *)"aa"};
    fx->upper[1] = (ice_id_bytes){2, 0, (const uint8_t *)""};
    fx->splits[0] = 4;
    ice_manifest_entry *e = &fx->e;
    e->status = status;
    if (status != ICE_STATUS_ADDED) {
        e->has_snapshot_id = true;
        e->snapshot_id = 77;
        e->has_sequence_number = e->has_file_sequence_number = true;
        e->sequence_number = 3;
        e->file_sequence_number = 4;
    }
    ice_data_file *df = &e->file;
    df->content = ICE_CONTENT_DATA;
    df->file_path = fx->path;
    df->file_format = "PARQUET";
    df->n_partition = 5;
    df->partition = fx->part;
    df->record_count = 10 * (k + 1);
    df->file_size_in_bytes = 1000 + k;
    df->n_column_sizes = 2; df->column_sizes = fx->sizes;
    df->n_value_counts = 2; df->value_counts = fx->sizes;
    df->n_null_value_counts = 1; df->null_value_counts = fx->sizes;
    df->n_lower_bounds = 2; df->lower_bounds = fx->lower;
    df->n_upper_bounds = 2; df->upper_bounds = fx->upper;
    df->n_split_offsets = 1; df->split_offsets = fx->splits;
    df->has_sort_order_id = true;
    df->sort_order_id = 0;
}

static void free_fixture(fixture *fx)
{
    for (int i = 0; i < 5; i++)
        ice_value_clear(&fx->part[i]);
}

static void check_same_file(const ice_data_file *a, const ice_data_file *b, int version)
{
    CHECK(strcmp(a->file_path, b->file_path) == 0);
    CHECK(strcmp(a->file_format, b->file_format) == 0);
    CHECK(a->record_count == b->record_count && a->file_size_in_bytes == b->file_size_in_bytes);
    REQUIRE(a->n_partition == b->n_partition);
    for (int i = 0; i < a->n_partition; i++) {
        const ice_value *x = &a->partition[i], *y = &b->partition[i];
        CHECK(x->is_null == y->is_null);
        if (x->type == ICE_T_DOUBLE && !x->is_null && isnan(x->v.d))
            CHECK(isnan(y->v.d));
        else if (!ice_value_equals(x, y)) {
            fprintf(stderr, "partition %d differs (types %d %d)\n", i, x->type, y->type);
            CHECK(0);
        }
    }
    REQUIRE(a->n_column_sizes == b->n_column_sizes);
    for (int i = 0; i < a->n_column_sizes; i++)
        CHECK(a->column_sizes[i].id == b->column_sizes[i].id &&
              a->column_sizes[i].value == b->column_sizes[i].value);
    CHECK(a->n_null_value_counts == b->n_null_value_counts);
    REQUIRE(a->n_lower_bounds == b->n_lower_bounds && a->n_upper_bounds == b->n_upper_bounds);
    for (int i = 0; i < a->n_lower_bounds; i++)
        CHECK(a->lower_bounds[i].len == b->lower_bounds[i].len &&
              memcmp(a->lower_bounds[i].p, b->lower_bounds[i].p, a->lower_bounds[i].len) == 0);
    for (int i = 0; i < a->n_upper_bounds; i++)
        CHECK(a->upper_bounds[i].len == b->upper_bounds[i].len);
    CHECK(a->n_split_offsets == b->n_split_offsets);
    CHECK(a->has_sort_order_id == b->has_sort_order_id);
    if (version >= 2)
        CHECK(a->content == b->content);
}

static void roundtrip(int version, hs_avro_codec codec)
{
    hs_error err = {0};
    ice_schema schema = {0};
    ice_partition_spec spec;
    make_schema(&schema);
    make_spec(&schema, &spec);

    ice_manifest_writer *w;
    CHECK_OK(ice_manifest_writer_open("s3://bucket/t/metadata/m0.avro", version, ICE_MANIFEST_DATA,
                                      &schema, &spec, 1234, codec, &w, &err), &err);
    fixture fx[4];
    for (int k = 0; k < 4; k++) {
        make_entry(&fx[k], k, k == 3 ? ICE_STATUS_EXISTING : ICE_STATUS_ADDED, k == 1);
        CHECK_OK(ice_manifest_writer_add(w, &fx[k].e, &err), &err);
    }
    hs_buf bytes = {0};
    hs_wfile *wf;
    hs_arena arena = {0};
    ice_manifest_file mf;
    CHECK_OK(hs_mem_create(&bytes, &wf, &err), &err);
    CHECK_OK(ice_manifest_writer_finish(w, wf, &arena, &mf, &err), &err);
    CHECK_OK(hs_wfile_close(wf, &err), &err);
    CHECK(mf.manifest_length == (int64_t)bytes.len);
    CHECK(mf.added_files_count == 3 && mf.existing_files_count == 1 && mf.deleted_files_count == 0);
    CHECK(mf.added_rows_count == 10 + 20 + 30 && mf.existing_rows_count == 40);
    CHECK(mf.sequence_number == ICE_SEQ_UNASSIGNED);
    CHECK(mf.min_sequence_number == 3);
    REQUIRE(mf.n_partitions == 5);
    CHECK(mf.partitions[0].contains_null && mf.partitions[0].lower_len == 2 &&
          memcmp(mf.partitions[0].lower, "n0", 2) == 0 && memcmp(mf.partitions[0].upper, "n3", 2) == 0);
    CHECK(!mf.partitions[1].contains_null && mf.partitions[1].lower_len == 4);
    CHECK(mf.partitions[4].has_contains_nan && mf.partitions[4].contains_nan);
    CHECK(!mf.partitions[0].has_contains_nan);

    /* header keys and schema attributes, read with the generic Avro reader */
    hs_avro_reader *ar;
    CHECK_OK(hs_avro_reader_open("m0", bytes.data, bytes.len, &ar, &err), &err);
    const char *fv = hs_avro_reader_meta(ar, "format-version", NULL);
    CHECK(fv && atoi(fv) == version);
    CHECK(hs_avro_reader_meta(ar, "schema", NULL) != NULL);
    CHECK(hs_avro_reader_meta(ar, "partition-spec", NULL) != NULL);
    const char *psid = hs_avro_reader_meta(ar, "partition-spec-id", NULL);
    CHECK(psid && strcmp(psid, "0") == 0);
    const char *content = hs_avro_reader_meta(ar, "content", NULL);
    if (version >= 2)
        CHECK(content && strcmp(content, "data") == 0);
    const hs_avro_schema *es = hs_avro_reader_schema(ar);
    int di = hs_avro_field_index_by_id(es, 2);
    REQUIRE(di >= 0);
    const hs_avro_schema *ds = es->fields[di].type;
    CHECK(strcmp(ds->name, "r2") == 0);
    CHECK((hs_avro_field_index_by_id(ds, 105) >= 0) == (version == 1));
    CHECK((hs_avro_field_index_by_id(ds, 142) >= 0) == (version == 3));
    int pi = hs_avro_field_index_by_id(ds, 102);
    REQUIRE(pi >= 0);
    CHECK(strcmp(ds->fields[pi].type->name, "r102") == 0);
    CHECK(hs_avro_field_index_by_id(ds->fields[pi].type, 1002) == 2);
    hs_avro_reader_close(ar);

    /* read back with inheritance from a manifest-list entry */
    mf.sequence_number = 9;
    mf.min_sequence_number = 3;
    mf.has_first_row_id = version >= 3;
    mf.first_row_id = 1000;
    hs_file *f;
    CHECK_OK(hs_mem_open("mem://m0.avro", bytes.data, bytes.len, false, &f, &err), &err);
    ice_manifest *m;
    CHECK_OK(ice_manifest_read(f, &mf, NULL, NULL, &m, &err), &err);
    REQUIRE(m->n_entries == 4);
    CHECK(m->format_version == version);
    CHECK(m->spec_id == 0 && m->partition_type.n_children == 5);
    int64_t next_row = 1000;
    for (int k = 0; k < 4; k++) {
        const ice_manifest_entry *e = &m->entries[k];
        CHECK(e->status == fx[k].e.status);
        check_same_file(&fx[k].e.file, &e->file, version);
        CHECK(e->has_snapshot_id);
        if (k < 3) {
            CHECK(e->snapshot_id == (version == 1 ? 1234 : 1234));
            CHECK(e->has_sequence_number && e->sequence_number == (version == 1 ? 0 : 9));
        } else {
            CHECK(e->snapshot_id == 77);
            if (version >= 2)
                CHECK(e->sequence_number == 3 && e->file_sequence_number == 4);
        }
        if (version >= 3) {
            CHECK(e->file.has_first_row_id && e->file.first_row_id == next_row);
            next_row += e->file.record_count;
        } else {
            CHECK(!e->file.has_first_row_id);
        }
    }
    CHECK(m->entries[0].file.partition[3].type == ICE_T_DECIMAL);
    CHECK(ice_value_decimal(&m->entries[1].file.partition[3]) == -12345 * 2);
    ice_manifest_free(m);

    /* without inheritance: nulls stay null */
    CHECK_OK(ice_manifest_read(f, NULL, &spec, &schema, &m, &err), &err);
    if (version >= 2)
        CHECK(!m->entries[0].has_snapshot_id && !m->entries[0].has_sequence_number);
    ice_manifest_free(m);
    hs_file_close(f);

    for (int k = 0; k < 4; k++)
        free_fixture(&fx[k]);
    hs_buf_free(&bytes);
    hs_arena_destroy(&arena);
    ice_spec_clear(&spec);
    ice_schema_clear(&schema);
}

static void test_manifest_roundtrip(void)
{
    for (int v = 1; v <= 3; v++) {
        roundtrip(v, HS_AVRO_CODEC_DEFLATE);
        roundtrip(v, HS_AVRO_CODEC_NULL);
    }
}

static void test_manifest_list(void)
{
    hs_error err = {0};
    for (int version = 1; version <= 3; version++) {
        ice_manifest_file files[3];
        ice_field_summary sums[1] = {{.contains_null = true, .lower = (const uint8_t *)"a",
                                      .lower_len = 1, .upper = (const uint8_t *)"z", .upper_len = 1}};
        memset(files, 0, sizeof files);
        for (int i = 0; i < 3; i++) {
            files[i].manifest_path = i == 0 ? "m-a.avro" : i == 1 ? "m-b.avro" : "m-del.avro";
            files[i].manifest_length = 100 + i;
            files[i].partition_spec_id = 0;
            files[i].content = (i == 2 && version >= 2) ? ICE_MANIFEST_DELETES : ICE_MANIFEST_DATA;
            files[i].sequence_number = i == 1 ? 5 : ICE_SEQ_UNASSIGNED;
            files[i].min_sequence_number = i == 1 ? 4 : ICE_SEQ_UNASSIGNED;
            files[i].has_added_snapshot_id = true;
            files[i].added_snapshot_id = 42 + i;
            files[i].added_files_count = 2;
            files[i].existing_files_count = 1;
            files[i].added_rows_count = 100;
            files[i].existing_rows_count = 50;
            files[i].n_partitions = 1;
            files[i].partitions = sums;
        }
        files[1].has_first_row_id = version >= 3;
        files[1].first_row_id = 7;
        ice_manifest_list_info info = {version, 9001, true, 9000, 6, 500, HS_AVRO_CODEC_DEFLATE};
        hs_buf bytes = {0};
        hs_wfile *wf;
        int64_t assigned = -1;
        CHECK_OK(hs_mem_create(&bytes, &wf, &err), &err);
        CHECK_OK(ice_manifest_list_write(wf, &info, files, 3, &assigned, &err), &err);
        CHECK_OK(hs_wfile_close(wf, &err), &err);
        if (version >= 3) {
            CHECK(assigned == 150);
            CHECK(files[0].has_first_row_id && files[0].first_row_id == 500);
            CHECK(files[1].first_row_id == 7);
            CHECK(!files[2].has_first_row_id);
        }
        ice_manifest_list *l;
        CHECK_OK(ice_manifest_list_read_mem("snap.avro", bytes.data, bytes.len, &l, &err), &err);
        REQUIRE(l->n_files == 3);
        CHECK(l->format_version == version);
        CHECK(l->has_snapshot_id && l->snapshot_id == 9001);
        CHECK(l->has_parent_id && l->parent_id == 9000);
        CHECK(l->has_sequence_number == (version >= 2));
        CHECK(l->has_first_row_id == (version >= 3));
        for (int i = 0; i < 3; i++) {
            const ice_manifest_file *a = &files[i], *b = &l->files[i];
            CHECK(strcmp(a->manifest_path, b->manifest_path) == 0);
            CHECK(a->manifest_length == b->manifest_length);
            CHECK(b->content == a->content);
            if (version >= 2) {
                CHECK(b->sequence_number == (i == 1 ? 5 : 6));
                CHECK(b->min_sequence_number == (i == 1 ? 4 : 6));
            } else {
                CHECK(b->sequence_number == 0 && b->min_sequence_number == 0);
            }
            CHECK(b->added_snapshot_id == 42 + i);
            CHECK(b->added_files_count == 2 && b->existing_files_count == 1 && b->deleted_files_count == 0);
            CHECK(b->added_rows_count == 100 && b->existing_rows_count == 50);
            REQUIRE(b->n_partitions == 1);
            CHECK(b->partitions[0].contains_null && !b->partitions[0].has_contains_nan);
            CHECK(b->partitions[0].lower_len == 1 && b->partitions[0].lower[0] == 'a');
            CHECK(b->has_first_row_id == a->has_first_row_id);
            if (a->has_first_row_id)
                CHECK(b->first_row_id == a->first_row_id);
        }
        ice_manifest_list_free(l);

        /* corrupt: every truncation and some flips give errors, never crashes */
        for (size_t n = 0; n < bytes.len; n += 7) {
            hs_error e2 = {0};
            hs_status s = ice_manifest_list_read_mem("snap.avro", bytes.data, n, &l, &e2);
            CHECK(s != HS_OK);
            if (s == HS_CORRUPT)
                CHECK(strstr(e2.msg, "snap.avro") != NULL);
        }
        for (size_t i = 0; i < bytes.len; i += 3) {
            uint8_t save = bytes.data[i];
            bytes.data[i] ^= 0x41;
            hs_error e2 = {0};
            if (ice_manifest_list_read_mem("snap.avro", bytes.data, bytes.len, &l, &e2) == HS_OK)
                ice_manifest_list_free(l);
            bytes.data[i] = save;
        }
        hs_buf_free(&bytes);
    }
}

static void test_manifest_corrupt_and_faults(void)
{
    hs_error err = {0};
    ice_schema schema = {0};
    ice_partition_spec spec;
    make_schema(&schema);
    make_spec(&schema, &spec);
    ice_manifest_writer *w;
    CHECK_OK(ice_manifest_writer_open("m.avro", 2, ICE_MANIFEST_DATA, &schema, &spec, 1,
                                      HS_AVRO_CODEC_NULL, &w, &err), &err);
    fixture fx[2];
    for (int k = 0; k < 2; k++) {
        make_entry(&fx[k], k, ICE_STATUS_ADDED, false);
        CHECK_OK(ice_manifest_writer_add(w, &fx[k].e, &err), &err);
    }
    /* wrong partition arity and wrong content are rejected */
    fx[0].e.file.n_partition = 2;
    CHECK(ice_manifest_writer_add(w, &fx[0].e, &err) == HS_INVALID);
    fx[0].e.file.n_partition = 5;
    fx[0].e.file.content = ICE_CONTENT_POSITION_DELETES;
    hs_err_clear(&err);
    CHECK(ice_manifest_writer_add(w, &fx[0].e, &err) == HS_INVALID);
    hs_err_clear(&err);
    hs_buf bytes = {0};
    hs_wfile *wf;
    hs_arena arena = {0};
    ice_manifest_file mf;
    CHECK_OK(hs_mem_create(&bytes, &wf, &err), &err);
    CHECK_OK(ice_manifest_writer_finish(w, wf, &arena, &mf, &err), &err);
    CHECK_OK(hs_wfile_close(wf, &err), &err);

    ice_manifest *m;
    for (size_t n = 0; n < bytes.len; n += 5) {
        hs_error e2 = {0};
        hs_status s = ice_manifest_read_mem("data/m.avro", bytes.data, n, NULL, NULL, NULL, &m, &e2);
        CHECK(s != HS_OK);
        if (s == HS_CORRUPT)
            CHECK(strstr(e2.msg, "data/m.avro") != NULL);
    }
    for (size_t i = 0; i < bytes.len; i += 2) {
        uint8_t save = bytes.data[i];
        bytes.data[i] ^= 0x2C;
        hs_error e2 = {0};
        if (ice_manifest_read_mem("data/m.avro", bytes.data, bytes.len, &mf, NULL, NULL, &m, &e2) == HS_OK)
            ice_manifest_free(m);
        bytes.data[i] = save;
    }
    /* I/O fault on the read */
    int64_t counter = 0;
    hs_file *inner, *f;
    CHECK_OK(hs_mem_open("m.avro", bytes.data, bytes.len, false, &inner, &err), &err);
    CHECK_OK(hs_fault_wrap(inner, &counter, 1, &f, &err), &err);
    CHECK(ice_manifest_read(f, NULL, NULL, NULL, &m, &err) == HS_IO);
    hs_file_close(f);


    for (int k = 0; k < 2; k++)
        free_fixture(&fx[k]);
    hs_buf_free(&bytes);
    hs_arena_destroy(&arena);
    ice_spec_clear(&spec);
    ice_schema_clear(&schema);
}

static void test_unpartitioned_deletes_v3(void)
{
    hs_error err = {0};
    ice_schema schema = {0};
    make_schema(&schema);
    ice_partition_spec spec = {0};
    ice_manifest_writer *w;
    CHECK_OK(ice_manifest_writer_open("d.avro", 3, ICE_MANIFEST_DELETES, &schema, &spec, 5,
                                      HS_AVRO_CODEC_DEFLATE, &w, &err), &err);
    ice_manifest_entry e = {0};
    e.status = ICE_STATUS_ADDED;
    e.file.content = ICE_CONTENT_POSITION_DELETES;
    e.file.file_path = "t/data/dv.puffin";
    e.file.file_format = "PUFFIN";
    e.file.record_count = 3;
    e.file.file_size_in_bytes = 99;
    e.file.referenced_data_file = "t/data/a.parquet";
    e.file.has_content_offset = e.file.has_content_size = true;
    e.file.content_offset = 4;
    e.file.content_size_in_bytes = 40;
    CHECK_OK(ice_manifest_writer_add(w, &e, &err), &err);
    hs_buf bytes = {0};
    hs_wfile *wf;
    hs_arena arena = {0};
    ice_manifest_file mf;
    CHECK_OK(hs_mem_create(&bytes, &wf, &err), &err);
    CHECK_OK(ice_manifest_writer_finish(w, wf, &arena, &mf, &err), &err);
    CHECK_OK(hs_wfile_close(wf, &err), &err);
    CHECK(mf.content == ICE_MANIFEST_DELETES && mf.n_partitions == 0);
    mf.sequence_number = 2;
    ice_manifest *m;
    CHECK_OK(ice_manifest_read_mem("d.avro", bytes.data, bytes.len, &mf, NULL, NULL, &m, &err), &err);
    REQUIRE(m->n_entries == 1);
    const ice_data_file *df = &m->entries[0].file;
    CHECK(m->content == ICE_MANIFEST_DELETES);
    CHECK(df->content == ICE_CONTENT_POSITION_DELETES && df->n_partition == 0);
    CHECK(strcmp(df->referenced_data_file, "t/data/a.parquet") == 0);
    CHECK(df->has_content_offset && df->content_offset == 4 && df->content_size_in_bytes == 40);
    CHECK(!df->has_first_row_id); /* delete files do not get row ids */
    CHECK(m->entries[0].sequence_number == 2);
    ice_manifest_free(m);

    /* out-of-memory at every allocation of a read: fails cleanly, no leak (an
     * unpartitioned manifest: the partitioned path runs the model's code) */
    int64_t live = hs_mem_live_count();
    for (int64_t k = 1; k < 400; k += 3) {
        hs_error e2 = {0};
        hs_mem_fail_after(k);
        hs_status s = ice_manifest_read_mem("d.avro", bytes.data, bytes.len, &mf, NULL, NULL, &m, &e2);
        hs_mem_fail_after(0);
        if (s == HS_OK)
            ice_manifest_free(m);
    }
    CHECK(hs_mem_live_count() == live);
    hs_buf_free(&bytes);
    hs_arena_destroy(&arena);
    ice_schema_clear(&schema);
}

/* Metrics from a hand-built footer: 2 row groups, leaves id (INT64), name
 * (BYTE_ARRAY), price (INT32 decimal(9,2)), f (DOUBLE), and a list element. */
static void test_metrics_from_footer(void)
{
    hs_error err = {0};
    ice_schema schema = {0};
    make_schema(&schema);
    pq_schema_element se[8];
    memset(se, 0, sizeof se);
    se[0] = (pq_schema_element){.name = "table", .num_children = 5};
    const char *names[] = {"id", "name", "price", "f"};
    pq_ptype types[] = {PQ_INT64, PQ_BYTE_ARRAY, PQ_INT32, PQ_DOUBLE};
    int ids[] = {1, 2, 4, 5};
    for (int i = 0; i < 4; i++)
        se[1 + i] = (pq_schema_element){.has_type = true, .type = types[i], .has_repetition = true,
                                        .repetition = PQ_OPTIONAL, .name = names[i],
                                        .has_field_id = true, .field_id = ids[i]};
    se[5] = (pq_schema_element){.has_repetition = true, .repetition = PQ_OPTIONAL, .name = "l",
                                .num_children = 1, .has_field_id = true, .field_id = 6};
    se[6] = (pq_schema_element){.has_repetition = true, .repetition = PQ_REPEATED, .name = "list",
                                .num_children = 1};
    se[7] = (pq_schema_element){.has_type = true, .type = PQ_INT64, .has_repetition = true,
                                .repetition = PQ_OPTIONAL, .name = "element",
                                .has_field_id = true, .field_id = 1};  /* id reuse: nested */
    uint8_t id_lo[2][8] = {{5}, {2}}, id_hi[2][8] = {{50}, {40}};
    const char *s_lo[2] = {"apple", "aardvark-and-a-very-long-name"};
    const char *s_hi[2] = {"zebra-with-an-even-longer-name", "mango"};
    uint8_t p_lo[2][4] = {{0x10, 0, 0, 0}, {0xFF, 0xFF, 0xFF, 0xFF}}, p_hi[2][4] = {{0x20, 1, 0, 0}, {0x30}};
    double d_lo[2] = {1.5, -2.0}, d_hi[2] = {3.0, NAN};
    pq_column_chunk cols[2][5];
    pq_row_group rgs[2];
    memset(cols, 0, sizeof cols);
    for (int g = 0; g < 2; g++) {
        for (int c = 0; c < 5; c++) {
            pq_column_meta *cm = &cols[g][c].meta_data;
            cols[g][c].has_meta_data = true;
            cm->type = c < 4 ? types[c] : PQ_INT64;
            cm->num_values = 100;
            cm->total_compressed_size = 1000 * (c + 1) + g;
            cm->data_page_offset = g == 0 ? 4 : 9000;
            cm->has_statistics = true;
            cm->statistics.has_null_count = !(c == 3 && g == 1);
            cm->statistics.null_count = c;
            pq_statistics *st = &cm->statistics;
            switch (c) {
            case 0: st->min_value = (pq_bytes){id_lo[g], 8}; st->max_value = (pq_bytes){id_hi[g], 8}; break;
            case 1:
                st->min_value = (pq_bytes){(const uint8_t *)s_lo[g], (uint32_t)strlen(s_lo[g])};
                st->max_value = (pq_bytes){(const uint8_t *)s_hi[g], (uint32_t)strlen(s_hi[g])};
                break;
            case 2: st->min_value = (pq_bytes){p_lo[g], 4}; st->max_value = (pq_bytes){p_hi[g], 4}; break;
            case 3:
                st->min_value = (pq_bytes){(const uint8_t *)&d_lo[g], 8};
                st->max_value = (pq_bytes){(const uint8_t *)&d_hi[g], 8};
                break;
            default: st->min_value = (pq_bytes){id_lo[g], 8}; st->max_value = (pq_bytes){id_hi[g], 8}; break;
            }
        }
        rgs[g] = (pq_row_group){.n_columns = 5, .columns = cols[g], .num_rows = 100,
                                .has_file_offset = true, .file_offset = g == 0 ? 4 : 9000};
    }
    pq_file_meta meta = {.version = 1, .n_schema = 8, .schema = se, .num_rows = 200,
                         .n_row_groups = 2, .row_groups = rgs};
    hs_arena arena = {0};
    ice_data_file df;
    ice_id_long nan = {5, 7};
    CHECK_OK(ice_data_file_from_parquet("data/x.parquet", 12345, &meta, &schema, NULL, 0, &nan, 1,
                                        &arena, &df, &err), &err);
    CHECK(df.record_count == 200 && df.file_size_in_bytes == 12345);
    CHECK(strcmp(df.file_format, "PARQUET") == 0);
    /* leaves 1, 2, 4, 5 and the list element (id 1 again, counted separately as Java keys by id) */
    REQUIRE(df.n_column_sizes == 5);
    CHECK(df.column_sizes[0].id == 1 && df.column_sizes[0].value == 1000 + 1001);
    CHECK(df.column_sizes[2].id == 4 && df.column_sizes[2].value == 3000 + 3001);
    CHECK(df.value_counts[1].value == 200);
    /* null counts: f (id 5) lacks one in row group 1 -> omitted */
    CHECK(df.n_null_value_counts == 4);
    CHECK(df.null_value_counts[1].id == 2 && df.null_value_counts[1].value == 2);
    CHECK(df.n_nan_value_counts == 1 && df.nan_value_counts[0].value == 7);
    /* bounds: id, name, price; f has a NaN max -> none; list element nested -> none */
    REQUIRE(df.n_lower_bounds == 3 && df.n_upper_bounds == 3);
    CHECK(df.lower_bounds[0].id == 1 && df.lower_bounds[0].len == 8 && df.lower_bounds[0].p[0] == 2);
    CHECK(df.upper_bounds[0].p[0] == 50);
    CHECK(df.lower_bounds[1].id == 2 && df.lower_bounds[1].len == 16 &&
          memcmp(df.lower_bounds[1].p, "aardvark-and-a-v", 16) == 0);
    CHECK(df.upper_bounds[1].len == 16 && memcmp(df.upper_bounds[1].p, "zebra-with-an-ew", 16) == 0);
    /* decimal: min -1 (0xFF), max 0x120 = 288 -> minimal big-endian 01 20 */
    CHECK(df.lower_bounds[2].id == 4 && df.lower_bounds[2].len == 1 && df.lower_bounds[2].p[0] == 0xFF);
    CHECK(df.upper_bounds[2].len == 2 && df.upper_bounds[2].p[0] == 0x01 &&
          df.upper_bounds[2].p[1] == 0x20);
    REQUIRE(df.n_split_offsets == 2);
    CHECK(df.split_offsets[0] == 4 && df.split_offsets[1] == 9000);
    hs_arena_destroy(&arena);
    ice_schema_clear(&schema);
}

/* A manifest list DuckDB 1.4's Iceberg extension wrote (tests/fuzz/seeds-fuzz_manifest/
 * duckdb-manifest-list.avro, from test_duckdb_restcat): every field nullable, and the
 * partition summaries a list of optional records (items ["null", record]); summaries are
 * empty lists for two manifests and null for four.  Read, with the summaries as written
 * (empty: n_partitions 0; null: -1). */
static void test_manifest_list_duckdb(void)
{
    const char *slash = strrchr(__FILE__, '/');
    char path[1024];
    snprintf(path, sizeof path, "%.*s/../fuzz/seeds-fuzz_manifest/duckdb-manifest-list.avro",
             slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "  %s missing (tests/c compiled from elsewhere?)\n", path);
        CHECK(f != NULL);
        return;
    }
    uint8_t buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    hs_error err = {0};
    ice_manifest_list *l = NULL;
    CHECK_OK(ice_manifest_list_read_mem("duckdb.avro", buf, n, &l, &err), &err);
    REQUIRE(l && l->n_files == 6);
    int empty = 0, unknown = 0;
    for (int i = 0; i < l->n_files; i++) {
        const ice_manifest_file *m = &l->files[i];
        CHECK(strstr(m->manifest_path, "-m0.avro") != NULL);
        CHECK(m->manifest_length > 0);
        empty += m->n_partitions == 0;
        unknown += m->n_partitions == -1;
    }
    CHECK(empty == 2 && unknown == 4);
    CHECK(l->files[0].content == 1 && l->files[1].content == 0);
    ice_manifest_list_free(l);
}

int main(void)
{
    HS_RUN(test_metrics_from_footer);
    HS_RUN(test_manifest_roundtrip);
    HS_RUN(test_manifest_list);
    HS_RUN(test_manifest_list_duckdb);
    HS_RUN(test_manifest_corrupt_and_faults);
    HS_RUN(test_unpartitioned_deletes_v3);
    return hs_test_summary();
}

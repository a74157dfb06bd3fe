/*
 * tests/c/test_table_wal.c - the write-ahead log (table/wal.c) and append
 * streams (hyperstream/stream.h).
 *
 *   test                 checks
 *   -------------------  -----------------------------------------------------
 *   codec_roundtrip      a batch of every column shape (ints, strings with
 *                        nulls, bool, list<float>, fixed_size_list, struct)
 *                        decodes equal to what was encoded; every truncation
 *                        and many byte flips are HS_CORRUPT or equal, never a
 *                        crash (ASan)
 *   torn_tail            a record cut at every length inside its frame, and a
 *                        flipped byte: recovery replays exactly the records
 *                        before it, cuts the file there, and numbering goes on
 *   earlier_segment_bad  damage in a segment that is not the last is
 *                        HS_CORRUPT, and nothing is touched
 *   stream_basic         writes are visible to scans of the handle at once
 *                        (refresh < 0), filters apply to the tail, a flush is
 *                        one snapshot with hyperstream.wal.seq, rows once
 *   refresh_interval     with refresh 300 ms rows appear only after the
 *                        interval or hs_stream_refresh
 *   recovery             abort (= crash) then reopen replays every record;
 *                        a crash between commit and log truncation (segments
 *                        restored after the flush) replays nothing: rows once
 *   fsync_fault          a failed fsync fails the write and every later write
 *                        (HS_IO); reopen recovers the acknowledged rows
 *   backpressure         flushes failing (data/ is a file) + a small budget:
 *                        HS_BUSY after the timeout, memory stays bounded; once
 *                        data/ is back, writes go on and every row is there
 *   second_stream_busy   a second stream on the table is HS_BUSY
 *   idle_expiry_cheap    with an expiry age, an idle stream reads no metadata
 *                        (cat_load_count) across a dozen expiry passes; after
 *                        another handle's commit the replaced snapshot is
 *                        still expired past the age (one snapshot left)
 *   flush_durability     a flush (policy batch, commits not fsynced by the
 *                        table property) fsyncs every file it created and
 *                        the directory of each (io/ sync trace hook), and
 *                        calls syncfs() only when the chain from its last
 *                        durable commit holds another commit (the first
 *                        flush, one after another handle's delete); with
 *                        policy none it syncs nothing
 *
 * The oracle is the generator: row i has id = i, and the test knows which
 * ids it wrote, so counts and sums of ids are closed formulas.
 */
#include "harness.h"

#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "catalog/catalog.h"
#include "columnar/column.h"
#include "hyperstream/index.h"
#include "hyperstream/stream.h"
#include "hyperstream/table.h"
#include "io/io.h"
#include "table/wal.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- rows ---- */

static hs_batch *make_rows(int64_t start, int64_t n)
{
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, "cat", HS_TYPE_STRING, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, n, &b, NULL);
    hs_field_clear(&schema);
    if (st != HS_OK)
        return NULL;
    char buf[16];
    for (int64_t i = start; i < start + n; i++) {
        int len = snprintf(buf, sizeof buf, "c%d", (int)(i % 5));
        if (hs_col_append_fixed(b->cols[0], &i) != HS_OK ||
            (i % 7 == 0 ? hs_col_append_null(b->cols[1])
                        : hs_col_append_bytes(b->cols[1], buf, (size_t)len)) != HS_OK)
            return NULL;
    }
    b->n_rows = n;
    return b;
}

static hs_status rows_stream(int64_t start, int64_t n, struct ArrowArrayStream *out, hs_error *err)
{
    hs_batch *b = make_rows(start, n);
    if (!b)
        return HS_NOMEM;
    return hs_arrow_export_one_batch(b, out, err);
}

static hs_status write_rows(hs_stream *s, int64_t start, int64_t n, int64_t *seq, hs_error *err)
{
    struct ArrowArrayStream in;
    HS_TRY(rows_stream(start, n, &in, err));
    return hs_stream_write(s, &in, seq, err);
}

typedef struct digest { int64_t n, sum, sq; } digest;

static void digest_add(digest *d, int64_t id)
{
    d->n++;
    d->sum += id;
    d->sq += id * id;
}

static digest expect_range(int64_t lo, int64_t hi, int mod, int rem)
{
    digest d = {0, 0, 0};
    for (int64_t i = lo; i < hi; i++)
        if (!mod || i % mod == rem)
            digest_add(&d, i);
    return d;
}

static bool digest_eq(digest a, digest b) { return a.n == b.n && a.sum == b.sum && a.sq == b.sq; }

static digest scan_digest(hs_table *t, const char *filter)
{
    digest d = {-1, 0, 0};
    hs_scan_options o = HS_SCAN_OPTIONS_INIT;
    const char *cols[] = {"id"};
    o.columns = cols;
    o.n_columns = 1;
    o.filter = filter;
    hs_error err = {0};
    struct ArrowArrayStream st;
    if (hs_table_scan(t, &o, &st, &err) != HS_OK) {
        fprintf(stderr, "scan: %s\n", err.msg);
        return d;
    }
    d.n = 0;
    struct ArrowArray a;
    while (st.get_next(&st, &a) == 0 && a.release) {
        const int64_t *v = a.children[0]->buffers[1];
        for (int64_t i = 0; i < a.length; i++)
            digest_add(&d, v[i + a.children[0]->offset]);
        a.release(&a);
    }
    st.release(&st);
    return d;
}

/* Committed rows only (a scan of the current snapshot by id: time travel
 * never reads an append stream's tail). */
static digest committed_digest(hs_table *t)
{
    digest d = {0, 0, 0};
    int64_t snap = hs_table_current_snapshot_id(t);
    if (snap < 0)
        return d;
    hs_scan_options o = HS_SCAN_OPTIONS_INIT;
    const char *cols[] = {"id"};
    o.columns = cols;
    o.n_columns = 1;
    o.use_snapshot_id = 1;
    o.snapshot_id = snap;
    hs_error err = {0};
    struct ArrowArrayStream st;
    if (hs_table_scan(t, &o, &st, &err) != HS_OK) {
        fprintf(stderr, "scan: %s\n", err.msg);
        d.n = -1;
        return d;
    }
    struct ArrowArray a;
    while (st.get_next(&st, &a) == 0 && a.release) {
        const int64_t *v = a.children[0]->buffers[1];
        for (int64_t i = 0; i < a.length; i++)
            digest_add(&d, v[i + a.children[0]->offset]);
        a.release(&a);
    }
    st.release(&st);
    return d;
}

static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/wal-%s-%d", hs_test_tmpdir(), name, (int)getpid());
    return buf[k];
}

static void rm_rf(const char *p)
{
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", p);
    if (system(cmd) != 0)
        fprintf(stderr, "rm failed: %s\n", p);
}

static hs_table *create_table(hs_catalog *cat, const char *name, hs_error *err)
{
    hs_batch *b = make_rows(0, 0);
    struct ArrowSchema as;
    if (!b || hs_arrow_export_schema(&b->schema, &as, err) != HS_OK)
        return NULL;
    hs_batch_free(b);
    hs_table_create_options o = {.arrow_schema = &as};
    hs_table *t = NULL;
    hs_status st = hs_table_create(cat, name, &o, &t, err);
    as.release(&as);
    return st == HS_OK ? t : NULL;
}

static int64_t current_summary(hs_table *t, const char *key)
{
    char *s = NULL;
    if (hs_table_snapshots(t, &s, NULL) != HS_OK)
        return -2;
    json_t *j = json_loads(s, 0, NULL);
    hs_string_free(s);
    int64_t cur = hs_table_current_snapshot_id(t), r = -1;
    size_t i;
    json_t *o;
    json_array_foreach(j, i, o) {
        if (json_integer_value(json_object_get(o, "snapshot-id")) != cur)
            continue;
        const char *v = json_string_value(json_object_get(json_object_get(o, "summary"), key));
        if (v)
            r = strtoll(v, NULL, 10);
    }
    json_decref(j);
    return r;
}

/* ---- codec ---- */

static hs_batch *make_wide(int64_t n)
{
    hs_field schema, f, e, s2;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "i", HS_TYPE_INT32, true);
    f.field_id = 1;
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, "s", HS_TYPE_STRING, true);
    f.field_id = 2;
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, "b", HS_TYPE_BOOL, false);
    f.field_id = 3;
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&e, "element", HS_TYPE_FLOAT32, true);
    hs_field_init_list(&f, "l", true, &e);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&e, "element", HS_TYPE_FLOAT32, false);
    hs_field_init(&f, "v", HS_TYPE_FIXED_LIST, true);
    f.width = 3;
    if (hs_field_add_child(&f, &e) != HS_OK || hs_field_add_child(&schema, &f) != HS_OK)
        return NULL;
    hs_field_init(&f, "st", HS_TYPE_STRUCT, true);
    hs_field_init(&s2, "x", HS_TYPE_INT64, true);
    if (hs_field_add_child(&f, &s2) != HS_OK) return NULL;
    hs_field_init(&s2, "y", HS_TYPE_BINARY, true);
    if (hs_field_add_child(&f, &s2) != HS_OK || hs_field_add_child(&schema, &f) != HS_OK)
        return NULL;
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, n, &b, NULL);
    hs_field_clear(&schema);
    if (st != HS_OK)
        return NULL;
    for (int64_t r = 0; r < n; r++) {
        int32_t iv = (int32_t)(r * 3 - 7);
        uint8_t bv = r % 3 == 0;
        char txt[32];
        int len = snprintf(txt, sizeof txt, "row-%lld", (long long)r);
        st = r % 4 == 1 ? hs_col_append_null(b->cols[0]) : hs_col_append_fixed(b->cols[0], &iv);
        if (st == HS_OK)
            st = r % 5 == 2 ? hs_col_append_null(b->cols[1])
                            : hs_col_append_bytes(b->cols[1], txt, (size_t)len);
        if (st == HS_OK)
            st = hs_col_append_fixed(b->cols[2], &bv);
        if (st == HS_OK && r % 6 == 3) {
            st = hs_col_append_null(b->cols[3]);
        } else if (st == HS_OK) {
            for (int k = 0; st == HS_OK && k < (int)(r % 4); k++) {
                float x = (float)r + 0.25f * (float)k;
                st = k == 1 ? hs_col_append_null(b->cols[3]->children[0])
                            : hs_col_append_fixed(b->cols[3]->children[0], &x);
            }
            if (st == HS_OK)
                st = hs_col_list_end(b->cols[3]);
        }
        if (st == HS_OK && r % 5 == 4) {
            st = hs_col_append_null(b->cols[4]);
        } else if (st == HS_OK) {
            float v3[3] = {(float)r, -(float)r, 0.5f};
            st = hs_col_append_fixed_n(b->cols[4]->children[0], v3, 3);
            if (st == HS_OK) {
                hs_column *c = b->cols[4];
                c->length++;
                if (c->validity.data)
                    hs_bit_set(c->validity.data, c->length - 1), c->validity.len = (size_t)(c->length + 7) / 8;
            }
        }
        if (st == HS_OK && r % 7 == 5) {
            st = hs_col_append_null(b->cols[5]);
        } else if (st == HS_OK) {
            int64_t x = r * r;
            st = hs_col_append_fixed(b->cols[5]->children[0], &x);
            if (st == HS_OK)
                st = hs_col_append_bytes(b->cols[5]->children[1], txt, (size_t)len);
            if (st == HS_OK)
                st = hs_col_struct_append_valid(b->cols[5]);
        }
        if (st != HS_OK) {
            hs_batch_free(b);
            return NULL;
        }
    }
    b->n_rows = n;
    return b;
}

static void test_codec_roundtrip(void)
{
    hs_error err = {0};
    hs_batch *b = make_wide(57);
    REQUIRE(b != NULL);
    for (int i = 0; i < b->n_cols; i++)
        CHECK_OK(hs_col_validate(b->cols[i], &b->schema.children[i], &err), &err);
    hs_buf p = {0};
    CHECK_OK(wal_batch_encode(b, 7, &p, &err), &err);
    int32_t sid = -1;
    CHECK_OK(wal_payload_schema_id(p.data, p.len, &sid, &err), &err);
    CHECK(sid == 7);
    hs_batch *d = NULL;
    CHECK_OK(wal_batch_decode(p.data, p.len, &b->schema, &d, &err), &err);
    REQUIRE(d && d->n_rows == b->n_rows);
    for (int i = 0; i < b->n_cols; i++)
        CHECK(hs_col_equals(b->cols[i], d->cols[i]));
    hs_batch_free(d);
    /* every prefix is refused, never misread */
    int refused = 0;
    for (size_t n = 0; n < p.len; n++) {
        hs_batch *x = NULL;
        hs_status st = wal_batch_decode(p.data, n, &b->schema, &x, &err);
        refused += st == HS_CORRUPT;
        hs_batch_free(x);
    }
    CHECK(refused == (int)p.len);
    /* byte flips: refused, or a batch that passes validation (no crash) */
    uint8_t *q = hs_malloc(p.len);
    REQUIRE(q);
    int bad = 0;
    for (size_t k = 0; k < p.len; k++) {
        memcpy(q, p.data, p.len);
        q[k] ^= (uint8_t)(0x5a + k);
        hs_batch *x = NULL;
        hs_status st = wal_batch_decode(q, p.len, &b->schema, &x, &err);
        if (st == HS_OK)
            for (int i = 0; i < x->n_cols; i++)
                bad += hs_col_validate(x->cols[i], &x->schema.children[i], &err) != HS_OK;
        else
            bad += st != HS_CORRUPT;
        hs_batch_free(x);
    }
    CHECK(bad == 0);
    hs_free(q);
    hs_buf_free(&p);
    hs_batch_free(b);
}

/* ---- raw log ---- */

typedef struct seen { uint64_t seqs[256]; int n; } seen;

static hs_status note_rec(void *ctx, uint64_t seq, const uint8_t *p, size_t n, hs_error *err)
{
    (void)err;
    seen *s = ctx;
    if (s->n < 256)
        s->seqs[s->n++] = seq;
    /* payload is "rec<seq>" */
    char want[32];
    int len = snprintf(want, sizeof want, "rec%llu", (unsigned long long)seq);
    if ((size_t)len != n || memcmp(p, want, n) != 0)
        return HS_CORRUPT;
    return HS_OK;
}

static hs_status append_recs(wal *w, int n, hs_error *err)
{
    for (int i = 0; i < n; i++) {
        char buf[32];
        int len = snprintf(buf, sizeof buf, "rec%llu", (unsigned long long)wal_last_seq(w) + 1);
        uint64_t seq;
        HS_TRY(wal_append(w, (const uint8_t *)buf, (size_t)len, &seq, err));
    }
    return wal_sync(w, err);
}

static int64_t file_size(const char *p)
{
    struct stat s;
    return stat(p, &s) == 0 ? (int64_t)s.st_size : -1;
}

static void test_torn_tail(void)
{
    hs_error err = {0};
    const char *dir = tmp_path("torn");
    char seg[600];
    snprintf(seg, sizeof seg, "%s/%020d.wal", dir, 1);
    wal_options o = {.table_uuid = "0e8a1c2e-0000-4000-8000-000000000001", .sync = true};
    /* the frame of record 10 starts after 9 records "rec1".."rec9" (4 bytes each) */
    int64_t start10 = WAL_SEG_HEADER + 9 * (WAL_REC_HEADER + 4);
    int64_t full = start10 + WAL_REC_HEADER + 5;   /* "rec10" */
    for (int64_t cut = start10; cut <= full; cut++) {
        rm_rf(dir);
        wal *w = NULL;
        CHECK_OK(wal_open(dir, &o, 0, NULL, NULL, &w, &err), &err);
        CHECK_OK(append_recs(w, 10, &err), &err);
        wal_close(w);
        REQUIRE(file_size(seg) == full);
        REQUIRE(truncate(seg, (off_t)cut) == 0);
        seen s = {0};
        w = NULL;
        CHECK_OK(wal_open(dir, &o, 0, note_rec, &s, &w, &err), &err);
        int want = cut == full ? 10 : 9;
        CHECK(s.n == want);
        CHECK(s.seqs[s.n - 1] == (uint64_t)want);
        CHECK(file_size(seg) == (cut == full ? full : start10));
        CHECK(wal_last_seq(w) == (uint64_t)want);
        /* numbering goes on after the cut */
        CHECK_OK(append_recs(w, 1, &err), &err);
        wal_close(w);
        seen s2 = {0};
        w = NULL;
        CHECK_OK(wal_open(dir, &o, 0, note_rec, &s2, &w, &err), &err);
        CHECK(s2.n == want + 1);
        wal_close(w);
    }
    /* a flipped payload byte in record 6 of 10: records 1..5 survive */
    rm_rf(dir);
    wal *w = NULL;
    CHECK_OK(wal_open(dir, &o, 0, NULL, NULL, &w, &err), &err);
    CHECK_OK(append_recs(w, 10, &err), &err);
    wal_close(w);
    FILE *f = fopen(seg, "r+b");
    REQUIRE(f);
    fseek(f, WAL_SEG_HEADER + 5 * (WAL_REC_HEADER + 4) + WAL_REC_HEADER + 2, SEEK_SET);
    fputc('X', f);
    fclose(f);
    seen s = {0};
    w = NULL;
    CHECK_OK(wal_open(dir, &o, 0, note_rec, &s, &w, &err), &err);
    CHECK(s.n == 5);
    wal_close(w);
    /* committed records are not replayed, and their segments go */
    rm_rf(dir);
    wal_options small = o;
    small.segment_bytes = 200;   /* a few records per segment */
    w = NULL;
    CHECK_OK(wal_open(dir, &small, 0, NULL, NULL, &w, &err), &err);
    CHECK_OK(append_recs(w, 20, &err), &err);
    int segs = wal_segments(w);
    CHECK(segs > 3);
    wal_close(w);
    seen s3 = {0};
    w = NULL;
    CHECK_OK(wal_open(dir, &small, 12, note_rec, &s3, &w, &err), &err);
    CHECK(s3.n == 8 && s3.seqs[0] == 13);
    CHECK(wal_segments(w) < segs);
    wal_close(w);
    /* another table's log is refused */
    wal_options other = o;
    other.table_uuid = "0e8a1c2e-0000-4000-8000-000000000002";
    w = NULL;
    CHECK(wal_open(dir, &other, 0, NULL, NULL, &w, &err) == HS_CONFLICT);
    CHECK(w == NULL);
    rm_rf(dir);
}

static void test_earlier_segment_bad(void)
{
    hs_error err = {0};
    const char *dir = tmp_path("earlier");
    rm_rf(dir);
    wal_options o = {.segment_bytes = 200};
    wal *w = NULL;
    CHECK_OK(wal_open(dir, &o, 0, NULL, NULL, &w, &err), &err);
    CHECK_OK(append_recs(w, 20, &err), &err);
    wal_close(w);
    char seg[600];
    snprintf(seg, sizeof seg, "%s/%020d.wal", dir, 1);
    int64_t size = file_size(seg);
    REQUIRE(size > WAL_SEG_HEADER);
    REQUIRE(truncate(seg, (off_t)size - 1) == 0);
    w = NULL;
    CHECK(wal_open(dir, &o, 0, NULL, NULL, &w, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "later segments") != NULL);
    CHECK(file_size(seg) == size - 1);   /* untouched */
    rm_rf(dir);
}

/* ---- streams ---- */

static hs_catalog *open_cat(const char *name)
{
    const char *root = tmp_path(name);
    rm_rf(root);
    hs_catalog *cat = NULL;
    if (hs_catalog_open_path(root, &cat, NULL) != HS_OK)
        return NULL;
    return cat;
}

static void test_stream_basic(void)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat("basic");
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    o.refresh_ms = -1;
    o.flush_interval_ms = 3600 * 1000;
    hs_stream *s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    int64_t seq = 0;
    for (int k = 0; k < 5; k++) {
        CHECK_OK(write_rows(s, k * 100, 100, &seq, &err), &err);
        CHECK(seq == k + 1);
    }
    CHECK(hs_table_current_snapshot_id(t) == -1);
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, 500, 0, 0)));
    CHECK(digest_eq(scan_digest(t, "id >= 100 AND id < 250"), expect_range(100, 250, 0, 0)));
    CHECK(digest_eq(scan_digest(t, "id >= 250 AND cat IS NOT NULL"), ({
        digest d = {0, 0, 0};
        for (int64_t i = 250; i < 500; i++)
            if (i % 7 != 0)
                digest_add(&d, i);
        d;
    })));
    CHECK_OK(hs_stream_flush(s, &err), &err);
    hs_stream_stats stt = HS_STREAM_STATS_INIT;
    hs_stream_get_stats(s, &stt);
    CHECK(stt.committed_seq == 5 && stt.tail_rows == 0 && stt.flushes == 1);
    /* the scan refreshed the handle: committed rows once, no tail */
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, 500, 0, 0)));
    CHECK(current_summary(t, "hyperstream.wal.seq") == 5);
    CHECK(current_summary(t, "added-records") == 500);
    CHECK_OK(write_rows(s, 500, 50, &seq, &err), &err);
    CHECK(seq == 6);
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, 550, 0, 0)));
    /* time travel reads committed rows only */
    hs_scan_options so = HS_SCAN_OPTIONS_INIT;
    so.use_snapshot_id = 1;
    so.snapshot_id = hs_table_current_snapshot_id(t);
    struct ArrowArrayStream as;
    CHECK_OK(hs_table_scan(t, &so, &as, &err), &err);
    int64_t rows = 0;
    struct ArrowArray a;
    while (as.get_next(&as, &a) == 0 && a.release) {
        rows += a.length;
        a.release(&a);
    }
    as.release(&as);
    CHECK(rows == 500);
    CHECK_OK(hs_stream_close(s, &err), &err);
    /* another handle sees everything committed */
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, "t", &t2, &err), &err);
    CHECK(digest_eq(scan_digest(t2, NULL), expect_range(0, 550, 0, 0)));
    CHECK(current_summary(t2, "hyperstream.wal.seq") == 6);
    hs_table_close(t2);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_refresh_interval(void)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat("refresh");
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    o.refresh_ms = 300;
    o.flush_interval_ms = 3600 * 1000;
    hs_stream *s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    CHECK_OK(write_rows(s, 0, 10, NULL, &err), &err);
    usleep(400 * 1000);
    CHECK(scan_digest(t, NULL).n == 10);
    CHECK_OK(write_rows(s, 10, 10, NULL, &err), &err);
    CHECK(scan_digest(t, NULL).n == 10);   /* not yet: within the interval */
    CHECK_OK(hs_stream_refresh(s, &err), &err);
    CHECK(scan_digest(t, NULL).n == 20);
    CHECK_OK(write_rows(s, 20, 10, NULL, &err), &err);
    usleep(700 * 1000);
    CHECK(scan_digest(t, NULL).n == 30);
    CHECK_OK(hs_stream_close(s, &err), &err);
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, 30, 0, 0)));
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void copy_dir(const char *from, const char *to)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -a '%s' '%s'", to, from, to);
    if (system(cmd) != 0)
        fprintf(stderr, "copy failed\n");
}

static void test_recovery(void)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat("recovery");
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    char wal_dir[700], saved[720];
    snprintf(wal_dir, sizeof wal_dir, "%s/wal", hs_table_location(t));
    snprintf(saved, sizeof saved, "%s.saved", wal_dir);
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    o.flush_interval_ms = 3600 * 1000;
    o.refresh_ms = -1;
    hs_stream *s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    for (int k = 0; k < 4; k++)
        CHECK_OK(write_rows(s, k * 25, 25, NULL, &err), &err);
    hs_stream_abort(s);   /* a crash: nothing committed */
    CHECK(scan_digest(t, NULL).n == 0);
    s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    hs_stream_stats st = HS_STREAM_STATS_INIT;
    hs_stream_get_stats(s, &st);
    CHECK(st.replayed_records == 4 && st.replayed_rows == 100);
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, 100, 0, 0)));
    int64_t seq = 0;
    CHECK_OK(write_rows(s, 100, 25, &seq, &err), &err);
    CHECK(seq == 5);
    /* a crash between the commit and the log's truncation */
    copy_dir(wal_dir, saved);
    CHECK_OK(hs_stream_flush(s, &err), &err);
    hs_stream_abort(s);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mv '%s' '%s'", wal_dir, saved, wal_dir);
    REQUIRE(system(cmd) == 0);
    s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    hs_stream_get_stats(s, &st);
    CHECK(st.replayed_records == 0);
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, 125, 0, 0)));
    CHECK_OK(write_rows(s, 125, 25, &seq, &err), &err);
    CHECK(seq == 6);
    CHECK_OK(hs_stream_close(s, &err), &err);
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, 150, 0, 0)));
    /* reopen after a clean close: nothing to replay, the log is empty */
    s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    hs_stream_get_stats(s, &st);
    CHECK(st.replayed_records == 0 && st.wal_segments == 0);
    CHECK_OK(hs_stream_close(s, &err), &err);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_fsync_fault(void)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat("fsync");
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    for (int policy = HS_WAL_FSYNC_BATCH; policy <= HS_WAL_FSYNC_INTERVAL; policy++) {
        hs_stream_options o = HS_STREAM_OPTIONS_INIT;
        o.flush_interval_ms = 3600 * 1000;
        o.fsync_policy = policy;
        o.refresh_ms = -1;
        hs_stream *s = NULL;
        int64_t before = scan_digest(t, NULL).n;
        CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
        int64_t base = policy == HS_WAL_FSYNC_BATCH ? 0 : 1000;
        CHECK_OK(write_rows(s, base, 10, NULL, &err), &err);
        hs_io_set_sync_fault(1);
        CHECK(write_rows(s, base + 10, 10, NULL, &err) == HS_IO);
        hs_io_set_sync_fault(0);
        CHECK(write_rows(s, base + 20, 10, NULL, &err) == HS_IO);   /* failed for good */
        /* what the handle sees: acknowledged rows only */
        digest d = scan_digest(t, "id >= 0");
        CHECK(d.n == before + 10);
        hs_stream_abort(s);
        s = NULL;
        CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
        /* acknowledged rows are there; the failed write's may be too (it was
         * written before its fsync failed), never a partial record */
        d = scan_digest(t, NULL);
        CHECK(d.n == before + 10 || d.n == before + 20);
        CHECK_OK(hs_stream_close(s, &err), &err);
        int64_t n0 = scan_digest(t, NULL).n;
        CHECK(n0 == d.n);
    }
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_backpressure(void)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat("busy");
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    char data[700], moved[720];
    snprintf(data, sizeof data, "%s/data", hs_table_location(t));
    snprintf(moved, sizeof moved, "%s.away", data);
    /* flushes fail: data/ is a file */
    rm_rf(data);
    FILE *f = fopen(data, "w");
    REQUIRE(f);
    fclose(f);
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    o.memory_bytes = 64 * 1024;
    o.busy_timeout_ms = 300;
    o.flush_interval_ms = 3600 * 1000;
    o.flush_rows = 1 << 30;
    o.refresh_ms = -1;
    hs_stream *s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    int64_t written = 0;
    hs_status st = HS_OK;
    while (written < 100000) {
        st = write_rows(s, written, 500, NULL, &err);
        if (st != HS_OK)
            break;
        written += 500;
    }
    CHECK(st == HS_BUSY);
    CHECK(strstr(err.msg, "busy") != NULL);
    hs_stream_stats stt = HS_STREAM_STATS_INIT;
    hs_stream_get_stats(s, &stt);
    CHECK(stt.tail_bytes <= 64 * 1024 + 32 * 1024);
    CHECK(stt.busy_rejections >= 1);
    CHECK(written > 0 && written < 100000);
    /* the acknowledged rows are readable meanwhile */
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, written, 0, 0)));
    /* room again once flushes work */
    REQUIRE(unlink(data) == 0);
    /* (a flush may take longer than the 300 ms busy timeout on a loaded
     * machine: a rejected write wrote nothing and is retried, for at most
     * 30 s in all) */
    int busy_retries = 0;
    for (int k = 0; k < 20; k++) {
        hs_err_clear(&err);
        while ((st = write_rows(s, written + k * 500, 500, NULL, &err)) == HS_BUSY &&
               busy_retries < 600) {
            busy_retries++;
            hs_err_clear(&err);
            usleep(50 * 1000);
        }
        CHECK_OK(st, &err);
    }
    written += 20 * 500;
    CHECK_OK(hs_stream_close(s, &err), &err);
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, written, 0, 0)));
    (void)moved;
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_second_stream_busy(void)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat("second");
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, "t", &t2, &err), &err);
    hs_stream *s = NULL, *s2 = NULL;
    CHECK_OK(hs_stream_open(t, NULL, &s, &err), &err);
    CHECK(hs_stream_open(t2, NULL, &s2, &err) == HS_BUSY);
    CHECK(s2 == NULL);
    CHECK_OK(write_rows(s, 0, 10, NULL, &err), &err);
    /* the table handle may go first */
    hs_table_close(t);
    CHECK_OK(hs_stream_close(s, &err), &err);
    CHECK_OK(hs_table_refresh(t2, &err), &err);
    CHECK(digest_eq(scan_digest(t2, NULL), expect_range(0, 10, 0, 0)));
    hs_table_close(t2);
    hs_catalog_close(cat);
}

/* ---- ENOSPC / EIO at every I/O step of a flush ---- */

/* Files under dir (recursive) except the log's, counted. */
static int count_table_files(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "find '%s' -type f -not -path '*/wal/*' 2>/dev/null | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = -1;
        pclose(p);
    }
    return n;
}

static bool cat_is_c3(int64_t i) { return i % 7 != 0 && i % 5 == 3; }

static digest expect_pred(int64_t hi, bool (*keep)(int64_t))
{
    digest d = {0, 0, 0};
    for (int64_t i = 0; i < hi; i++)
        if (keep(i))
            digest_add(&d, i);
    return d;
}

/* Flush with the fault at step k = 1, 2, ... until a flush passes without
 * reaching it.  Writes: every file create, write, close, rename, mkdir, list
 * and unlink of the commit path and the log truncation (catalog fault points;
 * ENOSPC writes half a buffer first).  Reads (`reads`): every read call of the
 * files the flush opens (io/ fault backend).  After each failure: HS_IO whose
 * message names the errno; a fresh handle reads the old snapshot, and the
 * table directory has the files it had (no temporaries, data files or
 * sidecars left); the stream's handle still reads every acknowledged row
 * once; on odd k the stream is dropped as in a crash and reopened, and the
 * log replays.  Then a clean flush commits them all exactly once and the
 * inverted index on `cat` serves the filter with every file indexed. */
static void flush_fault_loop(const char *tag, int errnum, bool reads)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat(tag);
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    hs_index_options io = {.kind = "inverted", .n_threads = 1};
    CHECK_OK(hs_table_add_index(t, "cat", &io, &err), &err);
    char loc[700];
    snprintf(loc, sizeof loc, "%s", hs_table_location(t));
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    o.refresh_ms = -1;
    o.flush_interval_ms = 3600 * 1000;
    o.flush_rows = 1 << 30;
    hs_stream *s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    int64_t next = 0, committed = 0;
    int k, failures = 0, reopened = 0, landed = 0, absorbed = 0;
    hs_status st = HS_IO;
    for (k = 1; k < 1000; k++) {
        CHECK_OK(write_rows(s, next, 20, NULL, &err), &err);
        CHECK_OK(write_rows(s, next + 20, 20, NULL, &err), &err);
        next += 40;
        int files0 = count_table_files(loc);
        CHECK_OK(hs_table_refresh(t, &err), &err);
        int64_t snap0 = hs_table_current_snapshot_id(t);
        if (reads)
            hs_io_set_read_fault(k, errnum);
        else
            cat_set_io_fault_errno(k, errnum);
        st = hs_stream_flush(s, &err);
        int64_t reached = reads ? hs_io_read_fault_count() : cat_io_fault_count();
        hs_io_set_read_fault(0, 0);
        cat_set_io_fault(0);
        if (getenv("HS_WAL_FAULT_TRACE"))
            fprintf(stderr, "  k=%d st=%d reached=%lld %s\n", k, (int)st, (long long)reached,
                    err.msg);
        CHECK(st == HS_OK || st == HS_IO);
        if (st != HS_OK && !reads && !strstr(err.msg, strerror(errnum))) {
            fprintf(stderr, "  k=%d: %s\n", k, err.msg);
            CHECK(0);
        }
        hs_err_clear(&err);
        hs_table *r = NULL;
        CHECK_OK(hs_table_open(cat, "t", &r, &err), &err);
        digest d = committed_digest(r);
        /* another handle in the process reads the acknowledged rows too */
        CHECK(digest_eq(scan_digest(r, NULL), expect_range(0, next, 0, 0)));
        if (st != HS_OK && hs_table_current_snapshot_id(r) == snap0) {
            failures++;
            CHECK(digest_eq(d, expect_range(0, committed, 0, 0)));
            CHECK(count_table_files(loc) == files0);
        } else {
            /* committed (an error after the commit: syncfs or the log's
             * truncation) or passed */
            landed += st != HS_OK;
            CHECK(digest_eq(d, expect_range(0, next, 0, 0)));
        }
        hs_table_close(r);
        CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, next, 0, 0)));
        if (st == HS_OK && reached < k)
            break;   /* the fault was never reached: every step ran */
        /* A failed read the flush tolerates by design: the merge of index
         * registry segments is skipped (they stay as they are, nothing is
         * lost; registry.c merge_or_keep).  Each such skip leaves one more
         * segment for the next merge to read, so the read count grows with
         * k: stop after a run of them. */
        absorbed = st == HS_OK ? absorbed + 1 : 0;
        if (absorbed >= 5)
            break;
        if (k % 2) {   /* a crash after the failure: the log replays */
            hs_stream_abort(s);
            s = NULL;
            CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
            REQUIRE(s);
            reopened++;
            CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, next, 0, 0)));
        }
        CHECK_OK(hs_stream_flush(s, &err), &err);
        committed = next;
        CHECK_OK(hs_table_open(cat, "t", &r, &err), &err);
        CHECK(digest_eq(committed_digest(r), expect_range(0, next, 0, 0)));
        hs_table_close(r);
    }
    CHECK(st == HS_OK && failures > 3);
    fprintf(stderr, "  flush, %s %s: %d fault points, %d failed cleanly, %d committed before "
            "the error, %d tolerated, %d reopened\n", reads ? "reads" : "writes",
            strerror(errnum), k, failures, landed, absorbed, reopened);
    /* a clean flush after all that (segments merge again) */
    CHECK_OK(write_rows(s, next, 40, NULL, &err), &err);
    next += 40;
    CHECK_OK(hs_stream_flush(s, &err), &err);
    /* the log is empty after the last flush; rows are exactly once; the
     * index serves the filter for every file */
    hs_stream_stats stt = HS_STREAM_STATS_INIT;
    hs_stream_get_stats(s, &stt);
    CHECK(stt.tail_rows == 0 && stt.wal_segments <= 1);
    CHECK_OK(hs_stream_close(s, &err), &err);
    hs_table *r = NULL;
    CHECK_OK(hs_table_open(cat, "t", &r, &err), &err);
    CHECK(digest_eq(scan_digest(r, NULL), expect_range(0, next, 0, 0)));
    hs_scan_options so = HS_SCAN_OPTIONS_INIT;
    so.filter = "cat = 'c3'";
    hs_scan *sc = NULL;
    CHECK_OK(hs_scan_plan(r, &so, &sc, &err), &err);
    struct ArrowArrayStream as;
    CHECK_OK(hs_scan_stream(sc, &as, &err), &err);
    struct ArrowArray a;
    while (as.get_next(&as, &a) == 0 && a.release)
        a.release(&a);
    hs_index_stats is = HS_INDEX_STATS_INIT;
    hs_scan_get_index_stats(sc, &is);
    as.release(&as);
    CHECK(is.files_planned > 0 && is.files_indexed == is.files_planned &&
          is.index_files_skipped == 0);
    CHECK(digest_eq(scan_digest(r, "cat = 'c3'"), expect_pred(next, cat_is_c3)));
    hs_table_close(r);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_flush_enospc(void) { flush_fault_loop("nospc", ENOSPC, false); }
static void test_flush_eio(void) { flush_fault_loop("eio", EIO, false); }
static void test_flush_eio_reads(void) { flush_fault_loop("eio-r", EIO, true); }

/* hs_table_open commits what a crashed stream left in the log (no stream
 * holds it); a live stream's log is left alone. */
static void test_recover_on_open(void)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat("recover_open");
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    o.flush_interval_ms = 3600 * 1000;
    o.refresh_ms = -1;
    hs_stream *s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    for (int k = 0; k < 3; k++)
        CHECK_OK(write_rows(s, k * 10, 10, NULL, &err), &err);
    /* a live stream holds the log: another handle's open commits nothing */
    hs_table *u = NULL;
    CHECK_OK(hs_table_open(cat, "t", &u, &err), &err);
    CHECK(hs_table_current_snapshot_id(u) < 0);
    hs_table_close(u);
    hs_stream_abort(s);   /* a crash */
    hs_table_close(t);
    t = NULL;
    CHECK_OK(hs_table_open(cat, "t", &t, &err), &err);
    CHECK(hs_table_current_snapshot_id(t) >= 0);
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, 30, 0, 0)));
    /* nothing left to replay */
    s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    hs_stream_stats st = HS_STREAM_STATS_INIT;
    hs_stream_get_stats(s, &st);
    CHECK(st.replayed_records == 0 && st.wal_segments == 0);
    CHECK_OK(hs_stream_close(s, &err), &err);
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, 30, 0, 0)));
    hs_table_close(t);
    hs_catalog_close(cat);
}

/* ---- flush durability (io/ sync trace) ---- */

typedef struct {
    pthread_mutex_t mu;
    char *what[4096], *path[4096];
    int n;
} sync_log;

static void sync_log_add(const char *what, const char *path, void *ctx)
{
    sync_log *l = ctx;
    pthread_mutex_lock(&l->mu);
    if (l->n < 4096) {
        l->what[l->n] = strdup(what);
        l->path[l->n] = path ? realpath(path, NULL) : NULL;
        const char *slash = path ? strrchr(path, '/') : NULL;
        if (path && !l->path[l->n] && slash) {
            /* a file not yet renamed to its name: its directory's real path */
            char dir[PATH_MAX], full[PATH_MAX + 256];
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
            char *rd = realpath(dir, NULL);
            snprintf(full, sizeof full, "%s%s", rd ? rd : dir, slash);
            free(rd);
            l->path[l->n] = strdup(full);
        }
        l->n++;
    }
    pthread_mutex_unlock(&l->mu);
}

static void sync_log_clear(sync_log *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->what[i]);
        free(l->path[i]);
    }
    l->n = 0;
}

static int sync_log_count(sync_log *l, const char *what, const char *path)
{
    int c = 0;
    for (int i = 0; i < l->n; i++)
        c += strcmp(l->what[i], what) == 0 &&
             (!path || (l->path[i] && strcmp(l->path[i], path) == 0));
    return c;
}

/* The table's files outside wal/, as real paths, one per line in a buffer
 * (static storage: two lists at a time). */
static char *list_files(const char *dir, int slot)
{
    static char buf[2][1 << 16];
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "find '%s' -type f -not -path '*/wal/*' -exec realpath {} + "
             "2>/dev/null | sort", dir);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(buf[slot], 1, sizeof buf[slot] - 1, p) : 0;
    if (p)
        pclose(p);
    buf[slot][n] = 0;
    return buf[slot];
}

/* Every file in `after` and not in `before` was fsynced ("file") and so was
 * its directory ("dir"), the last after the file; returns how many new files. */
static int check_new_files_synced(sync_log *l, const char *before, const char *after)
{
    int n_new = 0;
    char line[1024];
    for (const char *p = after; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len >= sizeof line)
            len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = 0;
        p += len + (e != NULL);
        char pat[1100];
        snprintf(pat, sizeof pat, "%s\n", line);
        if (!len || strstr(before, pat))
            continue;
        n_new++;
        int file_at = -1, dir_at = -1;
        char dir[1024];
        snprintf(dir, sizeof dir, "%s", line);
        *strrchr(dir, '/') = 0;
        for (int i = 0; i < l->n; i++) {
            if (!l->path[i])
                continue;
            if (strcmp(l->what[i], "file") == 0 && strcmp(l->path[i], line) == 0)
                file_at = i;
            if (strcmp(l->what[i], "dir") == 0 && strcmp(l->path[i], dir) == 0 && file_at >= 0 &&
                dir_at < file_at)
                dir_at = i;
        }
        if (file_at < 0 || dir_at < file_at) {
            fprintf(stderr, "  not synced: %s (file %d, directory %d)\n", line, file_at, dir_at);
            CHECK(0);
        }
    }
    return n_new;
}

static void test_flush_durability(void)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat("durable");
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    hs_index_options io = {.kind = "inverted", .n_threads = 1};
    CHECK_OK(hs_table_add_index(t, "cat", &io, &err), &err);
    char loc[700], *rl = realpath(hs_table_location(t), NULL);
    REQUIRE(rl);
    snprintf(loc, sizeof loc, "%s", rl);
    free(rl);
    static sync_log l = {.mu = PTHREAD_MUTEX_INITIALIZER};
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    o.fsync_policy = HS_WAL_FSYNC_BATCH;
    o.refresh_ms = -1;
    o.flush_interval_ms = 3600 * 1000;
    o.flush_rows = 1 << 30;
    hs_stream *s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    int64_t next = 0;
    /* flush k: rows, then the flush under the trace; returns the new files */
    for (int k = 0; k < 5; k++) {
        if (k == 3) {   /* another handle commits between flushes 2 and 3 */
            hs_table *t2 = NULL;
            CHECK_OK(hs_table_open(cat, "t", &t2, &err), &err);
            int64_t gone = 0;
            CHECK_OK(hs_table_delete(t2, "id = 1", &gone, &err), &err);
            CHECK(gone == 1);
            hs_table_close(t2);
        }
        CHECK_OK(write_rows(s, next, 30, NULL, &err), &err);
        next += 30;
        char *before = strdup(list_files(loc, 0));
        sync_log_clear(&l);
        hs_io_set_sync_trace(sync_log_add, &l);
        CHECK_OK(hs_stream_flush(s, &err), &err);
        hs_io_set_sync_trace(NULL, NULL);
        const char *after = list_files(loc, 1);
        int n_new = check_new_files_synced(&l, before, after);
        free(before);
        int fs = sync_log_count(&l, "fs", NULL);
        if (getenv("HS_WAL_SYNC_TRACE"))
            for (int i = 0; i < l.n; i++)
                fprintf(stderr, "  flush %d: %s %s\n", k, l.what[i], l.path[i] ? l.path[i] : "");
        /* data file, sidecar, manifest, manifest list, metadata, registry */
        CHECK(n_new >= 5);
        /* syncfs: the first flush (nothing known durable yet) and the one
         * after the other handle's commit, whose files nobody synced; never
         * a lone stream's flush */
        bool want_fs = k == 0 || k == 3;
        if (fs != (want_fs ? 1 : 0)) {
            fprintf(stderr, "  flush %d: %d syncfs calls, want %d\n", k, fs, want_fs ? 1 : 0);
            CHECK(0);
        }
        if (want_fs)
            CHECK(sync_log_count(&l, "fs", loc) == 1);
    }
    CHECK_OK(hs_stream_close(s, &err), &err);
    /* policy none: the flush syncs nothing at all */
    o.fsync_policy = HS_WAL_FSYNC_NONE;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    CHECK_OK(write_rows(s, next, 30, NULL, &err), &err);
    next += 30;
    sync_log_clear(&l);
    hs_io_set_sync_trace(sync_log_add, &l);
    CHECK_OK(hs_stream_flush(s, &err), &err);
    hs_io_set_sync_trace(NULL, NULL);
    CHECK(sync_log_count(&l, "fs", NULL) == 0 && sync_log_count(&l, "file", NULL) == 0);
    sync_log_clear(&l);
    CHECK_OK(hs_stream_close(s, &err), &err);
    hs_table *r = NULL;
    CHECK_OK(hs_table_open(cat, "t", &r, &err), &err);
    CHECK(digest_eq(scan_digest(r, NULL), ({
        digest d = expect_range(0, next, 0, 0);
        digest one = {0, 0, 0};
        digest_add(&one, 1);
        d.n -= one.n, d.sum -= one.sum, d.sq -= one.sq;
        d;
    })));
    hs_table_close(r);
    hs_table_close(t);
    hs_catalog_close(cat);
}

/* ---- automatic maintenance: expiry before the compaction ---- */

typedef struct {
    char replaced[3][1024];   /* the data files the first compaction replaced */
    int data_syncs;           /* data files fsynced since armed */
    int present_at_2nd;       /* how many of them existed at the 2nd (-1: not reached) */
} expire_probe;

static void expire_probe_fn(const char *what, const char *path, void *ctx)
{
    expire_probe *p = ctx;
    size_t n = path ? strlen(path) : 0;
    if (strcmp(what, "file") || !strstr(path, "/data/") || n < 8 ||
        strcmp(path + n - 8, ".parquet") || strstr(path, "-deletes"))
        return;
    if (++p->data_syncs != 2)
        return;
    /* the 1st is the flush's file, the 2nd the compaction's first output */
    struct stat stt;
    p->present_at_2nd = 0;
    for (int i = 0; i < 3; i++)
        p->present_at_2nd += stat(p->replaced[i], &stt) == 0;
}

static bool wait_stats(hs_stream *s, int64_t flushes, int64_t compactions)
{
    for (int i = 0; i < 3000; i++) {
        hs_stream_stats st = HS_STREAM_STATS_INIT;
        hs_stream_get_stats(s, &st);
        if (st.flushes >= flushes && st.compactions >= compactions)
            return true;
        usleep(10000);
    }
    return false;
}

static void test_auto_expire_first(void)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat("autoexp");
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    /* no bound on the bytes a compaction rewrites: the first compaction
     * takes the whole table */
    const char *keys[] = {"hyperstream.wal.compact-min-files", "hyperstream.wal.expire-age-ms",
                          "hyperstream.commit.fsync",
                          "hyperstream.wal.compact-max-rewrite-fraction"};
    const char *vals[] = {"3", "200", "true", "0"};
    CHECK_OK(hs_table_set_properties(t, keys, vals, 4, &err), &err);
    char loc[700], *rl = realpath(hs_table_location(t), NULL);
    REQUIRE(rl);
    snprintf(loc, sizeof loc, "%s", rl);
    free(rl);
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    o.fsync_policy = HS_WAL_FSYNC_BATCH;
    o.refresh_ms = -1;
    o.flush_interval_ms = 3600 * 1000;
    o.flush_rows = 500;
    hs_stream *s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    /* three background flushes of 500 rows: the third compacts them (3
     * small files, none larger than the other two together) into C1 */
    int64_t next = 0;
    for (int k = 0; k < 3; k++) {
        CHECK_OK(write_rows(s, next, 500, NULL, &err), &err);
        next += 500;
        REQUIRE(wait_stats(s, k + 1, 0));
    }
    REQUIRE(wait_stats(s, 3, 1));
    /* the data files on disk: C1 (the largest) and the three it replaced,
     * kept by the expiry right after the compaction (within the age) */
    expire_probe pr = {.present_at_2nd = -1};
    char cmd[1200], line[1100];
    snprintf(cmd, sizeof cmd, "find '%s/data' -name '*.parquet' -printf '%%s %%p\\n' | sort -n",
             loc);
    FILE *f = popen(cmd, "r");
    int n = 0;
    long long c1_size = 0;
    while (f && fgets(line, sizeof line, f)) {
        long long sz = 0;
        char path[1024];
        if (sscanf(line, "%lld %1023s", &sz, path) != 2)
            continue;
        if (n < 3)
            snprintf(pr.replaced[n], sizeof pr.replaced[n], "%s", path);
        c1_size = sz;
        n++;
    }
    if (f)
        pclose(f);
    CHECK(n == 4);
    /* C1 is full-size from now on (at least 3/4 of the target), so the next
     * compaction takes only the new small files */
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, "t", &t2, &err), &err);
    char target[32];
    snprintf(target, sizeof target, "%lld", c1_size * 6 / 5);
    const char *tk[] = {"write.target-file-size-bytes"};
    const char *tv[] = {target};
    CHECK_OK(hs_table_set_properties(t2, tk, tv, 1, &err), &err);
    usleep(400 * 1000);   /* past the age and the expiry cadence */
    /* two appends by another handle, then the stream's fourth flush: 3 small
     * files, so its maintenance compacts them */
    for (int k = 0; k < 2; k++) {
        struct ArrowArrayStream in;
        CHECK_OK(rows_stream(next, 500, &in, &err), &err);
        CHECK_OK(hs_table_append(t2, &in, &err), &err);
        next += 500;
    }
    hs_table_close(t2);
    CHECK_OK(hs_table_refresh(t, &err), &err);   /* no handle pins the old snapshots */
    hs_io_set_sync_trace(expire_probe_fn, &pr);
    CHECK_OK(write_rows(s, next, 500, NULL, &err), &err);
    next += 500;
    bool done = wait_stats(s, 4, 2);
    hs_io_set_sync_trace(NULL, NULL);
    CHECK(done);
    /* the files C1 replaced were deleted before the second compaction wrote
     * (they used to wait for the expiry after it: one compaction longer) */
    if (pr.present_at_2nd != 0)
        fprintf(stderr, "  %d of the replaced files present when the compaction wrote "
                "(%d data files synced)\n", pr.present_at_2nd, pr.data_syncs);
    CHECK(pr.present_at_2nd == 0);
    CHECK_OK(hs_stream_close(s, &err), &err);
    hs_table *r = NULL;
    CHECK_OK(hs_table_open(cat, "t", &r, &err), &err);
    CHECK(digest_eq(scan_digest(r, NULL), expect_range(0, next, 0, 0)));
    hs_table_close(r);
    hs_table_close(t);
    hs_catalog_close(cat);
}

/* An idle stream with an expiry age probes the catalog's metadata pointer
 * at the expiry cadence and reads no metadata (cat_load_count) while
 * nothing can expire; when another handle commits, the snapshot it
 * replaced is still expired once past the age. */
static void test_idle_expiry_cheap(void)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat("idleexp");
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    const char *keys[] = {"hyperstream.wal.expire-age-ms"};
    const char *vals[] = {"200"};   /* a pass every 50 ms */
    CHECK_OK(hs_table_set_properties(t, keys, vals, 1, &err), &err);
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    o.fsync_policy = HS_WAL_FSYNC_BATCH;
    o.refresh_ms = -1;
    o.flush_interval_ms = 3600 * 1000;
    o.flush_rows = 500;
    hs_stream *s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    int64_t next = 0;
    for (int k = 0; k < 2; k++) {
        CHECK_OK(write_rows(s, next, 500, NULL, &err), &err);
        next += 500;
        REQUIRE(wait_stats(s, k + 1, 0));
    }
    CHECK_OK(hs_table_refresh(t, &err), &err);   /* t pins nothing older */
    /* the first flush's snapshot goes once its child is past the age */
    hs_stream_stats st = HS_STREAM_STATS_INIT;
    for (int i = 0; i < 300; i++) {
        hs_stream_get_stats(s, &st);
        if (st.expirations >= 1)
            break;
        usleep(10000);
    }
    CHECK(st.expirations >= 1);
    usleep(100 * 1000);
    /* idle: about 12 passes of the cadence, no metadata read */
    int64_t loads0 = cat_load_count();
    usleep(600 * 1000);
    int64_t loads1 = cat_load_count();
    if (loads1 != loads0)
        fprintf(stderr, "  %lld metadata reads while idle\n", (long long)(loads1 - loads0));
    CHECK(loads1 == loads0);
    /* another handle commits: the stream's snapshot is replaced, and the
     * stream expires it past the age without a flush of its own */
    hs_stream_get_stats(s, &st);
    int64_t exp0 = st.expirations;
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, "t", &t2, &err), &err);
    struct ArrowArrayStream in;
    CHECK_OK(rows_stream(next, 100, &in, &err), &err);
    CHECK_OK(hs_table_append(t2, &in, &err), &err);
    next += 100;
    hs_table_close(t2);
    CHECK_OK(hs_table_refresh(t, &err), &err);
    for (int i = 0; i < 300; i++) {
        hs_stream_get_stats(s, &st);
        if (st.expirations > exp0)
            break;
        usleep(10000);
    }
    CHECK(st.expirations > exp0);
    hs_table *r = NULL;
    CHECK_OK(hs_table_open(cat, "t", &r, &err), &err);
    CHECK(hs_snapshot_count(r) == 1);
    CHECK(digest_eq(scan_digest(r, NULL), expect_range(0, next, 0, 0)));
    hs_table_close(r);
    CHECK_OK(hs_stream_close(s, &err), &err);
    hs_table_close(t);
    hs_catalog_close(cat);
}

/* A child forked while the parent has an append stream open (Python
 * multiprocessing): the parent's stream and its acknowledged rows stay the
 * parent's.  A handle the child opens reads the committed rows, and its
 * delete commits at once instead of waiting (for the busy timeout, then
 * HS_BUSY) for the parent's stream thread, which the child does not have,
 * to flush them.  The parent's stream then commits its rows on top. */
static void test_fork_with_stream(void)
{
    hs_error err = {0};
    hs_catalog *cat = open_cat("fork-stream");
    REQUIRE(cat);
    hs_table *t = create_table(cat, "t", &err);
    REQUIRE(t);
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    o.refresh_ms = -1;
    o.flush_interval_ms = 3600 * 1000;
    o.busy_timeout_ms = 60 * 1000;
    hs_stream *s = NULL;
    CHECK_OK(hs_stream_open(t, &o, &s, &err), &err);
    int64_t seq = 0;
    CHECK_OK(write_rows(s, 0, 100, &seq, &err), &err);
    CHECK_OK(hs_stream_flush(s, &err), &err);
    CHECK_OK(write_rows(s, 100, 50, &seq, &err), &err);   /* acknowledged, not committed */
    CHECK(digest_eq(scan_digest(t, NULL), expect_range(0, 150, 0, 0)));
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);   /* a delete waiting for the parent's stream: killed */
        hs_error e2 = {0};
        hs_table *ct = NULL;
        if (hs_table_open(cat, "t", &ct, &e2) != HS_OK)
            _exit(3);
        if (!digest_eq(scan_digest(ct, NULL), expect_range(0, 100, 0, 0)))
            _exit(1);
        int64_t n_del = -1;
        if (hs_table_delete(ct, "id < 10", &n_del, &e2) != HS_OK || n_del != 10)
            _exit(2);
        _exit(digest_eq(scan_digest(ct, NULL), expect_range(10, 100, 0, 0)) ? 0 : 1);
    }
    int ws = -1;
    REQUIRE(pid > 0 && waitpid(pid, &ws, 0) == pid);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
        fprintf(stderr, "  child: wait status %d (1: it read the parent's tail; 2: its delete "
                "failed; signal 14: it waited for the parent's stream)\n", ws);
    CHECK_OK(hs_stream_close(s, &err), &err);   /* commits 100..149 after the child's delete */
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, "t", &t2, &err), &err);
    CHECK(digest_eq(scan_digest(t2, NULL), expect_range(10, 150, 0, 0)));
    hs_table_close(t2);
    hs_table_close(t);
    hs_catalog_close(cat);
}

int main(void)
{
    HS_RUN(test_codec_roundtrip);
    HS_RUN(test_torn_tail);
    HS_RUN(test_earlier_segment_bad);
    HS_RUN(test_stream_basic);
    HS_RUN(test_refresh_interval);
    HS_RUN(test_recovery);
    HS_RUN(test_recover_on_open);
    HS_RUN(test_fsync_fault);
    HS_RUN(test_backpressure);
    HS_RUN(test_second_stream_busy);
    HS_RUN(test_flush_enospc);
    HS_RUN(test_flush_eio);
    HS_RUN(test_flush_eio_reads);
    HS_RUN(test_flush_durability);
    HS_RUN(test_auto_expire_first);
    HS_RUN(test_idle_expiry_cheap);
    HS_RUN(test_fork_with_stream);
    return hs_test_summary();
}

/*
 * table/wal.c - the write-ahead log of append streams: segment files of
 * checksummed, length-prefixed, numbered records under <table>/wal/.
 *
 * Files.  <table>/wal/LOCK (an exclusive flock while a stream is open) and
 * segments <table>/wal/<first seq, 20 decimal digits>.wal, so that names
 * sort in seq order.  No Iceberg metadata references them:
 * hs_table_remove_orphan_files never lists wal/ (table/maint.c), and the
 * stream deletes a segment only once every record in it is in a durable
 * commit.
 *
 * Segment header (64 bytes, integers little-endian):
 *
 *   offset  size  field
 *   ------  ----  ------------------------------------------------------
 *        0     8  magic "HSWALSEG"
 *        8     4  format version (1)
 *       12     4  reserved (0)
 *       16     8  first_seq: seq of the first record in this segment
 *       24    36  table-uuid of the table (ASCII, NUL-padded; "" = none)
 *       60     4  low 32 bits of XXH64(bytes 0..60, seed 0)
 *
 * Record (24-byte header + payload), repeated to the end of the file:
 *
 *   offset  size  field
 *   ------  ----  ------------------------------------------------------
 *        0     4  magic "HSWR"
 *        4     4  payload length n (at most 1 GiB)
 *        8     8  seq: first_seq for the first record, then +1 each
 *       16     8  XXH64(payload, seed = XXH64(bytes 0..16 of this header, seed 0))
 *       24     n  payload (below)
 *
 * Recovery (wal_open).  A record is valid when its header is whole, its
 * magic and length are sane, the payload is whole, the checksum matches and
 * its seq is the next one.  In the last segment the first invalid record
 * ends the log: everything from it on is a torn write (a crash in the
 * middle of write(2), or an unsynced tail that the kernel wrote partly) and
 * is cut off with ftruncate before new records are appended, so a torn
 * record is never misread and never followed by good ones.  In an earlier
 * segment the same is corruption (its successor was started only after it
 * was complete), reported as HS_CORRUPT without touching anything.
 *
 * Payload: the rows of one batch, in the Arrow layout of our columns:
 *
 *   u32 version (1) | i32 schema_id | u64 n_rows | u32 n_cols | columns
 *
 *   column (field f, length known from its parent: n_rows at the top, the
 *   last offset below a LIST/MAP, n * width below a FIXED_LIST):
 *     u8 has_validity | u64 null_count | [validity: ceil(len/8) bytes]
 *     NA                 -
 *     BOOL               ceil(len/8) bytes of value bits
 *     fixed width w      len * w bytes
 *     STRING / BINARY    (len+1) i32 offsets | u64 nbytes | nbytes bytes
 *     FIXED_BINARY       len * width bytes
 *     LIST / MAP         (len+1) i32 offsets | child column
 *     FIXED_LIST         child column
 *     STRUCT             each child column
 *
 * The decoder reads it against the schema the id names (from the table's
 * metadata: schemas are never removed from it), checks every length before
 * copying, and then hs_col_validate checks offsets, null counts and child
 * lengths: the bytes are untrusted (tests/fuzz/fuzz_wal.c).
 *
 * Durability is the stream's business (stream.c, policy property
 * hyperstream.wal.fsync): wal_append writes, wal_sync fdatasyncs.  A new
 * segment's directory entry is synced when the policy syncs at all.
 */
#define _GNU_SOURCE 1
#include "table/wal.h"

#include "base/mem.h"
#include "catalog/catalog.h"   /* cat_io_fault_point */
#include "io/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xxhash.h>

#define SEG_MAGIC "HSWALSEG"
#define REC_MAGIC "HSWR"
#define WAL_VERSION 1
#define PAYLOAD_VERSION 1
#define MAX_DEPTH 32

/* ------------------------------------------------------------------ */
/* little-endian helpers                                               */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* ------------------------------------------------------------------ */
/* payload codec                                                       */

static hs_status w32(hs_buf *o, uint32_t v)
{
    uint8_t b[4];
    put32(b, v);
    return hs_buf_append(o, b, 4);
}
static hs_status w64(hs_buf *o, uint64_t v)
{
    uint8_t b[8];
    put64(b, v);
    return hs_buf_append(o, b, 8);
}
static hs_status wbytes(hs_buf *o, const void *p, size_t n)
{
    if (n == 0)
        return HS_OK;
    if (!p)
        return HS_INTERNAL;
    return hs_buf_append(o, p, n);
}

static bool is_fixed(hs_type t)
{
    switch (t) {
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_INT64:
    case HS_TYPE_UINT8: case HS_TYPE_UINT16: case HS_TYPE_UINT32: case HS_TYPE_UINT64:
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64: case HS_TYPE_DECIMAL128:
    case HS_TYPE_DATE32: case HS_TYPE_TIME32: case HS_TYPE_TIME64: case HS_TYPE_TIMESTAMP:
        return true;
    default:
        return false;
    }
}

static hs_status enc_col(const hs_column *c, const hs_field *f, int depth, hs_buf *o)
{
    if (depth > MAX_DEPTH || c->type != f->type || c->n_children != f->n_children)
        return HS_INVALID;
    int64_t n = c->length;
    size_t bits = (size_t)(n + 7) / 8;
    bool has_validity = c->validity.data && c->null_count > 0;
    uint8_t hv = has_validity;
    HS_TRY(hs_buf_append(o, &hv, 1));
    HS_TRY(w64(o, (uint64_t)c->null_count));
    if (has_validity)
        HS_TRY(wbytes(o, c->validity.data, bits));
    if (c->type == HS_TYPE_NA)
        return HS_OK;
    if (c->type == HS_TYPE_BOOL)
        return wbytes(o, c->values.data, bits);
    if (is_fixed(c->type))
        return wbytes(o, c->values.data, (size_t)n * (size_t)hs_type_width(f));
    if (c->type == HS_TYPE_FIXED_BINARY)
        return wbytes(o, c->values.data, (size_t)n * (size_t)f->width);
    if (c->type == HS_TYPE_STRING || c->type == HS_TYPE_BINARY || c->type == HS_TYPE_LIST ||
        c->type == HS_TYPE_MAP) {
        const int32_t *off = HS_COL_OFFSETS(c);
        if (!off || off[0] != 0)
            return HS_INVALID;
        HS_TRY(wbytes(o, off, (size_t)(n + 1) * 4));
        if (c->type == HS_TYPE_STRING || c->type == HS_TYPE_BINARY) {
            HS_TRY(w64(o, (uint64_t)off[n]));
            return wbytes(o, c->values.data, (size_t)off[n]);
        }
        if (c->children[0]->length != off[n])
            return HS_INVALID;
        return enc_col(c->children[0], &f->children[0], depth + 1, o);
    }
    if (c->type == HS_TYPE_FIXED_LIST) {
        if (c->children[0]->length != n * (int64_t)f->width)
            return HS_INVALID;
        return enc_col(c->children[0], &f->children[0], depth + 1, o);
    }
    if (c->type == HS_TYPE_STRUCT) {
        for (int i = 0; i < c->n_children; i++) {
            if (c->children[i]->length != n)
                return HS_INVALID;
            HS_TRY(enc_col(c->children[i], &f->children[i], depth + 1, o));
        }
        return HS_OK;
    }
    return HS_INVALID;
}

hs_status wal_batch_encode(const hs_batch *b, int32_t schema_id, hs_buf *out, hs_error *err)
{
    size_t start = out->len;
    hs_status st = w32(out, PAYLOAD_VERSION);
    if (st == HS_OK)
        st = w32(out, (uint32_t)schema_id);
    if (st == HS_OK)
        st = w64(out, (uint64_t)b->n_rows);
    if (st == HS_OK)
        st = w32(out, (uint32_t)b->n_cols);
    for (int i = 0; st == HS_OK && i < b->n_cols; i++) {
        if (b->cols[i]->length != b->n_rows || i >= b->schema.n_children)
            st = HS_INVALID;
        else
            st = enc_col(b->cols[i], &b->schema.children[i], 0, out);
    }
    if (st == HS_OK && out->len - start > WAL_MAX_PAYLOAD)
        st = HS_UNSUPPORTED;
    if (st != HS_OK)
        out->len = start;
    if (st == HS_NOMEM)
        return hs_err_nomem(err, out->len);
    if (st == HS_UNSUPPORTED)
        return hs_err_set(err, HS_INVALID, "write: one batch encodes to more than 1 GiB; "
                          "write smaller batches");
    if (st != HS_OK)
        return hs_err_set(err, HS_INTERNAL, "write: batch columns do not match their schema "
                          "(encoding the log record)");
    return HS_OK;
}

typedef struct rd {
    const uint8_t *p;
    size_t n, off;
    hs_error *err;
} rd;

#define RD_NEED(r, k, what)                                                                  \
    do {                                                                                     \
        if ((k) > (r)->n - (r)->off)                                                         \
            return HS_CORRUPT_AT((r)->err, "wal record: %s needs %llu bytes at offset %zu, "  \
                                 "%zu left", (what), (unsigned long long)(k), (r)->off,      \
                                 (r)->n - (r)->off);                                         \
    } while (0)

static hs_status rd_u8(rd *r, uint8_t *v, const char *what)
{
    RD_NEED(r, 1, what);
    *v = r->p[r->off++];
    return HS_OK;
}
static hs_status rd_u32(rd *r, uint32_t *v, const char *what)
{
    RD_NEED(r, 4, what);
    *v = get32(r->p + r->off);
    r->off += 4;
    return HS_OK;
}
static hs_status rd_u64(rd *r, uint64_t *v, const char *what)
{
    RD_NEED(r, 8, what);
    *v = get64(r->p + r->off);
    r->off += 8;
    return HS_OK;
}

/* Replaces buffer b by a copy of the next k bytes. */
static hs_status rd_buf(rd *r, hs_colbuf *b, uint64_t k, const char *what)
{
    RD_NEED(r, k, what);
    if (b->cap)
        hs_free_aligned(b->data);
    memset(b, 0, sizeof *b);
    uint8_t *d = hs_malloc_aligned(k ? (size_t)k : 8);
    if (!d)
        return hs_err_nomem(r->err, (size_t)k);
    if (k)
        memcpy(d, r->p + r->off, (size_t)k);
    b->data = d;
    b->len = (size_t)k;
    b->cap = k ? (size_t)k : 8;
    r->off += (size_t)k;
    return HS_OK;
}

static hs_status dec_col(rd *r, const hs_field *f, int64_t n, int depth, hs_column **out)
{
    *out = NULL;
    const char *nm = f->name ? f->name : "";
    if (depth > MAX_DEPTH)
        return HS_CORRUPT_AT(r->err, "wal record: column '%s' nested too deep", nm);
    /* every row costs at least one bit of input: bounds n before allocating */
    if (n < 0 || (uint64_t)n / 8 > r->n)
        return HS_CORRUPT_AT(r->err, "wal record: column '%s' claims %lld rows", nm, (long long)n);
    hs_column *c = NULL;
    HS_TRY(hs_col_create(f, 0, &c, r->err));
    hs_status st = HS_OK;
    uint8_t hv = 0;
    uint64_t nulls = 0;
    size_t bits = (size_t)(n + 7) / 8;
    st = rd_u8(r, &hv, "validity flag");
    if (st == HS_OK)
        st = rd_u64(r, &nulls, "null count");
    if (st == HS_OK && (hv > 1 || nulls > (uint64_t)n))
        st = HS_CORRUPT_AT(r->err, "wal record: column '%s': validity flag %u, %llu nulls of "
                           "%lld rows", nm, hv, (unsigned long long)nulls, (long long)n);
    if (st == HS_OK && hv)
        st = rd_buf(r, &c->validity, bits, "validity");
    c->length = n;
    c->null_count = (int64_t)nulls;
    if (st != HS_OK || f->type == HS_TYPE_NA) {
    } else if (f->type == HS_TYPE_BOOL) {
        st = rd_buf(r, &c->values, bits, "bool values");
    } else if (is_fixed(f->type)) {
        st = rd_buf(r, &c->values, (uint64_t)n * (uint64_t)hs_type_width(f), "values");
    } else if (f->type == HS_TYPE_FIXED_BINARY) {
        uint64_t k;
        if (__builtin_mul_overflow((uint64_t)n, (uint64_t)(uint32_t)f->width, &k))
            st = HS_CORRUPT_AT(r->err, "wal record: column '%s' too large", nm);
        else
            st = rd_buf(r, &c->values, k, "fixed binary values");
    } else if (f->type == HS_TYPE_STRING || f->type == HS_TYPE_BINARY ||
               f->type == HS_TYPE_LIST || f->type == HS_TYPE_MAP) {
        st = rd_buf(r, &c->offsets, ((uint64_t)n + 1) * 4, "offsets");
        int32_t last = st == HS_OK ? HS_COL_OFFSETS(c)[n] : 0;
        if (st == HS_OK && (HS_COL_OFFSETS(c)[0] != 0 || last < 0))
            st = HS_CORRUPT_AT(r->err, "wal record: column '%s': offsets run %d..%d", nm,
                               HS_COL_OFFSETS(c)[0], last);
        if (st == HS_OK && (f->type == HS_TYPE_STRING || f->type == HS_TYPE_BINARY)) {
            uint64_t nb = 0;
            st = rd_u64(r, &nb, "value bytes");
            if (st == HS_OK && nb != (uint64_t)last)
                st = HS_CORRUPT_AT(r->err, "wal record: column '%s': %llu value bytes, offsets "
                                   "end at %d", nm, (unsigned long long)nb, last);
            if (st == HS_OK)
                st = rd_buf(r, &c->values, nb, "string values");
        } else if (st == HS_OK) {
            hs_col_free(c->children[0]);
            c->children[0] = NULL;
            st = dec_col(r, &f->children[0], last, depth + 1, &c->children[0]);
        }
    } else if (f->type == HS_TYPE_FIXED_LIST) {
        int64_t k = 0;
        if (f->width < 0 || __builtin_mul_overflow(n, (int64_t)f->width, &k))
            st = HS_CORRUPT_AT(r->err, "wal record: column '%s' too large", nm);
        if (st == HS_OK) {
            hs_col_free(c->children[0]);
            c->children[0] = NULL;
            st = dec_col(r, &f->children[0], k, depth + 1, &c->children[0]);
        }
    } else if (f->type == HS_TYPE_STRUCT) {
        for (int i = 0; st == HS_OK && i < f->n_children; i++) {
            hs_col_free(c->children[i]);
            c->children[i] = NULL;
            st = dec_col(r, &f->children[i], n, depth + 1, &c->children[i]);
        }
    } else {
        st = HS_CORRUPT_AT(r->err, "wal record: column '%s' has an unknown type", nm);
    }
    if (st != HS_OK) {
        hs_col_free(c);
        return st;
    }
    *out = c;
    return HS_OK;
}

hs_status wal_payload_schema_id(const uint8_t *p, size_t n, int32_t *out, hs_error *err)
{
    if (n < 8 || get32(p) != PAYLOAD_VERSION)
        return HS_CORRUPT_AT(err, "wal record: payload of %zu bytes has no version-%d header", n,
                             PAYLOAD_VERSION);
    *out = (int32_t)get32(p + 4);
    return HS_OK;
}

hs_status wal_batch_decode(const uint8_t *p, size_t n, const hs_field *schema, hs_batch **out,
                           hs_error *err)
{
    *out = NULL;
    rd r = {p, n, 8, err};
    int32_t sid;
    HS_TRY(wal_payload_schema_id(p, n, &sid, err));
    uint64_t rows = 0;
    uint32_t cols = 0;
    HS_TRY(rd_u64(&r, &rows, "row count"));
    HS_TRY(rd_u32(&r, &cols, "column count"));
    if (schema->type != HS_TYPE_STRUCT || cols != (uint32_t)schema->n_children)
        return HS_CORRUPT_AT(err, "wal record: %u columns, schema %d has %d", cols, (int)sid,
                             schema->n_children);
    if (rows > (uint64_t)INT32_MAX * 64)
        return HS_CORRUPT_AT(err, "wal record: %llu rows", (unsigned long long)rows);
    hs_batch *b = NULL;
    HS_TRY(hs_batch_create(schema, 0, &b, err));
    hs_status st = HS_OK;
    for (int i = 0; st == HS_OK && i < b->n_cols; i++) {
        hs_col_free(b->cols[i]);
        b->cols[i] = NULL;
        st = dec_col(&r, &schema->children[i], (int64_t)rows, 0, &b->cols[i]);
        if (st == HS_OK)
            st = hs_col_validate(b->cols[i], &schema->children[i], err);
    }
    if (st == HS_OK && r.off != n)
        st = HS_CORRUPT_AT(err, "wal record: %zu bytes after the last column", n - r.off);
    if (st != HS_OK) {
        hs_batch_free(b);
        return st;
    }
    b->n_rows = (int64_t)rows;
    *out = b;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* segments                                                            */

static uint32_t header_check(const uint8_t *h) { return (uint32_t)XXH64(h, 60, 0); }

static void header_make(uint8_t *h, uint64_t first_seq, const char *uuid)
{
    memset(h, 0, WAL_SEG_HEADER);
    memcpy(h, SEG_MAGIC, 8);
    put32(h + 8, WAL_VERSION);
    put64(h + 16, first_seq);
    if (uuid)
        memcpy(h + 24, uuid, strnlen(uuid, 36));
    put32(h + 60, header_check(h));
}

static uint64_t rec_check(const uint8_t *hdr, const uint8_t *payload, size_t n)
{
    return XXH64(payload, n, XXH64(hdr, 16, 0));
}

hs_status wal_segment_parse(const uint8_t *buf, size_t len, wal_seg_header *h, wal_record_fn fn,
                            void *ctx, size_t *valid_end, uint64_t *last_seq, bool *torn,
                            hs_error *err)
{
    memset(h, 0, sizeof *h);
    *valid_end = 0;
    *last_seq = 0;
    *torn = false;
    if (len < WAL_SEG_HEADER || memcmp(buf, SEG_MAGIC, 8) != 0 ||
        get32(buf + 60) != header_check(buf))
        return HS_CORRUPT_AT(err, "wal segment: bad header (%zu bytes)", len);
    if (get32(buf + 8) != WAL_VERSION)
        return hs_err_set(err, HS_UNSUPPORTED, "wal segment: format version %u (this build "
                          "reads %d)", get32(buf + 8), WAL_VERSION);
    h->first_seq = get64(buf + 16);
    memcpy(h->table_uuid, buf + 24, 36);
    h->table_uuid[36] = 0;
    if (h->first_seq == 0)
        return HS_CORRUPT_AT(err, "wal segment: first seq 0");
    uint64_t next = h->first_seq;
    size_t off = WAL_SEG_HEADER;
    while (len - off >= WAL_REC_HEADER) {
        const uint8_t *r = buf + off;
        uint32_t n = get32(r + 4);
        if (memcmp(r, REC_MAGIC, 4) != 0 || n > WAL_MAX_PAYLOAD ||
            n > len - off - WAL_REC_HEADER || get64(r + 8) != next ||
            get64(r + 16) != rec_check(r, r + WAL_REC_HEADER, n))
            break;
        if (fn)
            HS_TRY(fn(ctx, next, r + WAL_REC_HEADER, n, err));
        off += WAL_REC_HEADER + (size_t)n;
        next++;
    }
    *valid_end = off;
    *last_seq = next - 1;
    *torn = off != len;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* the log                                                             */

typedef struct wal_seg {
    uint64_t first_seq, last_seq;   /* last_seq = first_seq - 1 when empty */
    char *path;                     /* owned */
} wal_seg;

struct wal {
    char *dir;                      /* owned */
    int lock_fd;
    int fd;                         /* current segment, -1 = none open */
    int64_t fd_size;                /* its size */
    wal_options o;
    char uuid[37];
    uint64_t next_seq;
    hs_buf segs;                    /* wal_seg, in seq order; the last is `fd`'s when open */
    bool failed;
    int64_t bytes;                  /* all live segments */
};

static void seg_free_all(wal *w)
{
    for (size_t i = 0; i < HS_VEC_LEN(&w->segs, wal_seg); i++)
        hs_free(HS_VEC_AT(&w->segs, wal_seg, i).path);
    hs_buf_free(&w->segs);
}

void wal_close(wal *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    if (w->lock_fd >= 0)
        close(w->lock_fd);   /* drops the flock */
    seg_free_all(w);
    hs_free(w->dir);
    hs_free(w);
}

static hs_status sync_dir(wal *w, hs_error *err)
{
    if (!w->o.sync)
        return HS_OK;
    int fd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return hs_err_set(err, HS_IO, "%s: cannot open: %s", w->dir, strerror(errno));
    int rc = hs_io_fsync_fd(fd, false);
    int e = errno;
    close(fd);
    if (rc != 0)
        return hs_err_set(err, HS_IO, "%s: fsync of the directory failed: %s", w->dir,
                          strerror(e));
    return HS_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Seqs of the segment files in dir, sorted (caller frees *out). */
static hs_status list_segments(const char *dir, uint64_t **out, size_t *n_out, hs_error *err)
{
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d)
        return hs_err_set(err, HS_IO, "%s: cannot list: %s", dir, strerror(errno));
    hs_buf v = {0};
    hs_status st = HS_OK;
    struct dirent *de;
    while (st == HS_OK && (de = readdir(d)) != NULL) {
        const char *nm = de->d_name;
        size_t l = strlen(nm);
        if (l != 24 || strcmp(nm + 20, ".wal") != 0 || strspn(nm, "0123456789") != 20)
            continue;
        uint64_t s = strtoull(nm, NULL, 10);
        if (HS_VEC_PUSH(&v, uint64_t, s) != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    closedir(d);
    if (st != HS_OK) {
        hs_buf_free(&v);
        return st;
    }
    *n_out = HS_VEC_LEN(&v, uint64_t);
    if (*n_out)
        qsort(v.data, *n_out, sizeof(uint64_t), cmp_u64);
    size_t cap;
    *out = (uint64_t *)hs_buf_detach(&v, &cap);
    return HS_OK;
}

static char *seg_path(const char *dir, uint64_t first)
{
    size_t n = strlen(dir) + 32;
    char *p = hs_malloc(n);
    if (p)
        snprintf(p, n, "%s/%020" PRIu64 ".wal", dir, first);
    return p;
}

/* Reads one segment whole and replays it. */
static hs_status read_segment(const char *path, hs_buf *img, hs_error *err)
{
    hs_buf_reset(img);
    return hs_local_read_all(path, img, err);
}

typedef struct replay_ctx {
    uint64_t committed;
    wal_record_fn fn;
    void *ctx;
} replay_ctx;

static hs_status replay_one(void *vctx, uint64_t seq, const uint8_t *p, size_t n, hs_error *err)
{
    replay_ctx *c = vctx;
    if (seq <= c->committed || !c->fn)
        return HS_OK;
    return c->fn(c->ctx, seq, p, n, err);
}

static hs_status recover(wal *w, uint64_t committed, wal_record_fn fn, void *ctx, hs_error *err)
{
    uint64_t *seqs = NULL;
    size_t n = 0;
    HS_TRY(list_segments(w->dir, &seqs, &n, err));
    hs_buf img = {0};
    hs_status st = HS_OK;
    replay_ctx rc = {committed, fn, ctx};
    uint64_t expect = 0;   /* first seq the next segment must start at (0 = any) */
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        char *path = seg_path(w->dir, seqs[i]);
        if (!path) {
            st = hs_err_nomem(err, 64);
            break;
        }
        wal_seg_header h;
        size_t end = 0;
        uint64_t last = 0;
        bool torn = false;
        bool is_last = i + 1 == n;
        st = read_segment(path, &img, err);
        if (st == HS_OK && img.len < WAL_SEG_HEADER && is_last) {
            /* a crash while creating the newest segment: nothing in it */
            if (unlink(path) != 0)
                st = hs_err_set(err, HS_IO, "%s: cannot remove: %s", path, strerror(errno));
            hs_free(path);
            continue;
        }
        if (st == HS_OK)
            st = wal_segment_parse(img.data, img.len, &h, replay_one, &rc, &end, &last, &torn,
                                   err);
        if (st == HS_OK && h.first_seq != seqs[i])
            st = HS_CORRUPT_AT(err, "%s: header says first seq %" PRIu64, path, h.first_seq);
        if (st == HS_OK && w->uuid[0] && h.table_uuid[0] && strcmp(w->uuid, h.table_uuid) != 0)
            st = hs_err_set(err, HS_CONFLICT, "%s: written for table %s, this table is %s (a "
                            "table dropped and created again at this location?); move %s away "
                            "to discard it", path, h.table_uuid, w->uuid, w->dir);
        if (st == HS_OK && expect && h.first_seq != expect && h.first_seq > committed + 1 &&
            expect <= h.first_seq)
            st = HS_CORRUPT_AT(err, "%s: starts at seq %" PRIu64 ", the previous segment ended "
                               "at %" PRIu64 " (records missing)", path, h.first_seq, expect - 1);
        if (st == HS_OK && torn && !is_last)
            st = HS_CORRUPT_AT(err, "%s: invalid record at offset %zu, and later segments "
                               "exist (not a torn tail): the log is damaged", path, end);
        if (st == HS_OK && torn) {
            /* cut the torn tail before anything is appended after it */
            int fd = open(path, O_WRONLY | O_CLOEXEC);
            if (fd < 0 || ftruncate(fd, (off_t)end) != 0 ||
                (w->o.sync && hs_io_fsync_fd(fd, false) != 0))
                st = hs_err_set(err, HS_IO, "%s: cannot truncate the torn tail at %zu: %s", path,
                                end, strerror(errno));
            if (fd >= 0)
                close(fd);
            img.len = end;
        }
        if (st == HS_OK) {
            wal_seg s = {h.first_seq, last, path};
            if (hs_buf_append(&w->segs, &s, sizeof s) != HS_OK)
                st = hs_err_nomem(err, 64);
            else
                path = NULL;
            w->bytes += (int64_t)img.len;
            expect = last + 1;
            if (last + 1 > w->next_seq)
                w->next_seq = last + 1;
        }
        hs_free(path);
    }
    hs_free(seqs);
    hs_buf_free(&img);
    if (st == HS_OK && committed + 1 > w->next_seq)
        w->next_seq = committed + 1;
    if (st == HS_OK)
        st = wal_truncate(w, committed, err);
    return st;
}

hs_status wal_open(const char *dir, const wal_options *o, uint64_t committed_seq,
                   wal_record_fn fn, void *ctx, wal **out, hs_error *err)
{
    *out = NULL;
    wal *w = hs_calloc(1, sizeof *w);
    if (!w)
        return hs_err_nomem(err, sizeof *w);
    w->lock_fd = -1;
    w->fd = -1;
    w->o = *o;
    w->o.table_uuid = NULL;
    if (w->o.segment_bytes <= 0)
        w->o.segment_bytes = (int64_t)64 << 20;
    if (o->table_uuid)
        snprintf(w->uuid, sizeof w->uuid, "%s", o->table_uuid);
    w->next_seq = 1;
    w->dir = hs_strdup(dir);
    hs_status st = w->dir ? HS_OK : hs_err_nomem(err, 64);
    if (st == HS_OK && mkdir(dir, 0777) != 0 && errno != EEXIST)
        st = hs_err_set(err, HS_IO, "%s: cannot create: %s", dir, strerror(errno));
    char lock[4096];
    if (st == HS_OK && (size_t)snprintf(lock, sizeof lock, "%s/LOCK", dir) >= sizeof lock)
        st = hs_err_set(err, HS_INVALID, "%s: path too long", dir);
    if (st == HS_OK) {
        w->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (w->lock_fd < 0)
            st = hs_err_set(err, HS_IO, "%s: cannot open: %s", lock, strerror(errno));
        else if (flock(w->lock_fd, LOCK_EX | LOCK_NB) != 0)
            st = errno == EWOULDBLOCK
                     ? hs_err_set(err, HS_BUSY, "%s: another append stream has this table's "
                                  "write-ahead log open (one stream per table)", lock)
                     : hs_err_set(err, HS_IO, "%s: cannot lock: %s", lock, strerror(errno));
    }
    if (st == HS_OK)
        st = recover(w, committed_seq, fn, ctx, err);
    if (st != HS_OK) {
        wal_close(w);
        return st;
    }
    *out = w;
    return HS_OK;
}

/* Opens a new segment starting at next_seq. */
static hs_status seg_start(wal *w, hs_error *err)
{
    char *path = seg_path(w->dir, w->next_seq);
    if (!path)
        return hs_err_nomem(err, 64);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        hs_status st = hs_err_set(err, HS_IO, "%s: cannot create: %s", path, strerror(errno));
        hs_free(path);
        return st;
    }
    uint8_t h[WAL_SEG_HEADER];
    header_make(h, w->next_seq, w->uuid);
    hs_status st = HS_OK;
    if (write(fd, h, sizeof h) != (ssize_t)sizeof h)
        st = hs_err_set(err, HS_IO, "%s: cannot write the header: %s", path,
                        errno ? strerror(errno) : "short write");
    if (st == HS_OK && w->o.sync && hs_io_fsync_fd(fd, false) != 0)
        st = hs_err_set(err, HS_IO, "%s: fsync failed: %s", path, strerror(errno));
    if (st == HS_OK)
        st = sync_dir(w, err);
    wal_seg s = {w->next_seq, w->next_seq - 1, path};
    if (st == HS_OK && hs_buf_append(&w->segs, &s, sizeof s) != HS_OK)
        st = hs_err_nomem(err, 64);
    if (st != HS_OK) {
        close(fd);
        (void)unlink(path);
        hs_free(path);
        return st;
    }
    w->fd = fd;
    w->fd_size = WAL_SEG_HEADER;
    w->bytes += WAL_SEG_HEADER;
    return HS_OK;
}

static hs_status seg_finish(wal *w, hs_error *err)
{
    if (w->fd < 0)
        return HS_OK;
    /* the next segment may only exist once this one is complete on disk */
    int rc = w->o.sync ? hs_io_fsync_fd(w->fd, true) : 0;
    int e = errno;
    close(w->fd);
    w->fd = -1;
    if (rc != 0) {
        w->failed = true;
        return hs_err_set(err, HS_IO, "%s: fsync failed: %s", w->dir, strerror(e));
    }
    return HS_OK;
}

hs_status wal_append(wal *w, const uint8_t *payload, size_t n, uint64_t *seq, hs_error *err)
{
    *seq = 0;
    if (w->failed)
        return hs_err_set(err, HS_IO, "%s: the write-ahead log failed earlier (an fsync or "
                          "write error); reopen the stream", w->dir);
    if (n > WAL_MAX_PAYLOAD)
        return hs_err_set(err, HS_INVALID, "write: a log record of %zu bytes (at most 1 GiB)", n);
    if (w->fd >= 0 && w->fd_size > WAL_SEG_HEADER && w->fd_size + (int64_t)n > w->o.segment_bytes)
        HS_TRY(seg_finish(w, err));
    if (w->fd < 0)
        HS_TRY(seg_start(w, err));
    uint8_t h[WAL_REC_HEADER];
    memcpy(h, REC_MAGIC, 4);
    put32(h + 4, (uint32_t)n);
    put64(h + 8, w->next_seq);
    put64(h + 16, rec_check(h, payload, n));
    struct iovec iov[2] = {{h, sizeof h}, {(void *)payload, n}};
    size_t want = sizeof h + n, done = 0;
    int iov_i = 0;
    while (done < want) {
        ssize_t k = writev(w->fd, iov + iov_i, 2 - iov_i);
        if (k <= 0) {
            int e = k < 0 ? errno : ENOSPC;
            if (e == EINTR)
                continue;
            /* cut back to the last whole record; if even that fails, stop */
            if (ftruncate(w->fd, (off_t)w->fd_size) != 0 ||
                lseek(w->fd, (off_t)w->fd_size, SEEK_SET) < 0)
                w->failed = true;
            return hs_err_set(err, HS_IO, "%s: write failed: %s", w->dir, strerror(e));
        }
        done += (size_t)k;
        while (iov_i < 2 && (size_t)k >= iov[iov_i].iov_len) {
            k -= (ssize_t)iov[iov_i].iov_len;
            iov_i++;
        }
        if (iov_i < 2) {
            iov[iov_i].iov_base = (uint8_t *)iov[iov_i].iov_base + k;
            iov[iov_i].iov_len -= (size_t)k;
        }
    }
    w->fd_size += (int64_t)want;
    w->bytes += (int64_t)want;
    wal_seg *cur = &HS_VEC_AT(&w->segs, wal_seg, HS_VEC_LEN(&w->segs, wal_seg) - 1);
    cur->last_seq = w->next_seq;
    *seq = w->next_seq++;
    return HS_OK;
}

hs_status wal_sync(wal *w, hs_error *err)
{
    if (w->failed)
        return hs_err_set(err, HS_IO, "%s: the write-ahead log failed earlier (an fsync or "
                          "write error); reopen the stream", w->dir);
    if (w->fd < 0)
        return HS_OK;
    if (hs_io_fsync_fd(w->fd, true) != 0) {
        w->failed = true;
        return hs_err_set(err, HS_IO, "%s: fsync of the write-ahead log failed: %s", w->dir,
                          strerror(errno));
    }
    return HS_OK;
}

hs_status wal_truncate(wal *w, uint64_t committed_seq, hs_error *err)
{
    size_t n = HS_VEC_LEN(&w->segs, wal_seg);
    wal_seg *a = (wal_seg *)w->segs.data;
    /* the open segment ends here when all of it is committed */
    if (w->fd >= 0 && n && a[n - 1].last_seq <= committed_seq)
        HS_TRY(seg_finish(w, err));
    size_t keep = 0;
    hs_status st = HS_OK;
    for (size_t i = 0; i < n; i++) {
        bool is_open = w->fd >= 0 && i + 1 == n;
        if (!is_open && a[i].last_seq <= committed_seq && st == HS_OK) {
            struct stat sb;
            int64_t sz = stat(a[i].path, &sb) == 0 ? (int64_t)sb.st_size : 0;
            st = cat_io_fault_point(a[i].path, err);   /* crash tests fail this step */
            if (st == HS_OK && unlink(a[i].path) != 0 && errno != ENOENT)
                st = hs_err_set(err, HS_IO, "%s: cannot remove: %s", a[i].path, strerror(errno));
            if (st != HS_OK) {
                a[keep++] = a[i];
                continue;
            }
            w->bytes -= sz;
            hs_free(a[i].path);
            continue;
        }
        a[keep++] = a[i];
    }
    w->segs.len = keep * sizeof(wal_seg);
    if (w->bytes < 0)
        w->bytes = 0;
    return st;
}

uint64_t wal_last_seq(const wal *w) { return w->next_seq - 1; }
int64_t wal_bytes(const wal *w) { return w->bytes; }
int wal_segments(const wal *w) { return (int)HS_VEC_LEN(&w->segs, wal_seg); }

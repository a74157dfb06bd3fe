/*
 * exec/spill.c - spill files: where Sort and HashAggregate put rows that
 * do not fit under the statement's memory limit (exec_int.h, xo_spill).
 *
 * A spill file is created on the first write in ctx->spill_dir (the
 * session's temp_directory; NULL: $TMPDIR, else /tmp) with mkstemp and
 * unlinked at once, so it disappears when its descriptor closes: on
 * completion, on error, on cancellation and when the process dies.
 * Writes append blocks; reads take a block by offset (pread), so several
 * readers may walk one file at their own pace.
 *
 * Block: a 24-byte header (magic "HSSP", u32 columns, u64 rows, u64
 * payload bytes) and the payload: per column, depth first,
 *   i64 length, i64 null_count, then validity, offsets and values, each as
 *   u64 bytes + the bytes (validity 0 bytes = all valid), then its children.
 * The reader takes the column types from the schema it is given (the
 * writer's), and checks every length against the block.
 *
 * Partitioned spilling (hash join, set operations, Distinct, Window): rows
 * go to one of XO_SPILL_PARTS partitions of one file, chosen by a hash of
 * their key seeded by the recursion level (xo_spill_seed), so that a
 * partition that still does not fit splits again one level deeper; a
 * partition is read back by a SpillRead source operator (xo_spill_reader)
 * under an operator of its own.
 */
#include "exec/exec_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPILL_MAGIC 0x50535348u   /* "HSSP" */
#define SPILL_HDR 24

static _Atomic int64_t spill_fault_at;   /* test hook: 0 = off */

void xo_spill_fail_after(int64_t k)
{
    atomic_store(&spill_fault_at, k > 0 ? k : 0);
}

/* True when this I/O call is the injected failure. */
static bool injected_fault(void)
{
    int64_t k = atomic_load(&spill_fault_at);
    while (k > 0) {
        if (atomic_compare_exchange_weak(&spill_fault_at, &k, k - 1))
            return k == 1;
    }
    return false;
}

static hs_status spill_open(const xo_ctx *ctx, xo_spill *sp, hs_error *err)
{
    const char *dir = ctx && ctx->spill_dir && *ctx->spill_dir ? ctx->spill_dir : getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    hs_buf path = {0};
    if (hs_buf_printf(&path, "%s/hyperstream-spill-XXXXXX", dir) != HS_OK ||
        hs_buf_append_byte(&path, 0) != HS_OK) {
        hs_buf_free(&path);
        return hs_err_nomem(err, 0);
    }
    int fd = injected_fault() ? (errno = EIO, -1) : mkstemp((char *)path.data);
    if (fd < 0) {
        int e = errno;
        hs_buf_free(&path);
        return hs_err_set(err, HS_IO, "could not create a spill file in %s: %s", dir, strerror(e));
    }
    (void)unlink((char *)path.data);
    hs_buf_free(&path);
    sp->fd = fd;
    sp->open = true;
    sp->size = 0;
    return HS_OK;
}

void xo_spill_close(xo_spill *sp)
{
    if (sp->open)
        close(sp->fd);
    sp->open = false;
    sp->size = 0;
}

/* ---- writing ---- */

static hs_status put_buf(hs_buf *o, const hs_colbuf *b, size_t len)
{
    uint64_t n = b->data ? len : 0;
    HS_TRY(hs_buf_append(o, &n, 8));
    return n ? hs_buf_append(o, b->data, (size_t)n) : HS_OK;
}

/* Bytes of the buffers that the column's rows use. */
static void used_lens(const hs_column *c, size_t *vl, size_t *ol, size_t *xl)
{
    *vl = c->validity.data ? (size_t)(c->length + 7) / 8 : 0;
    *ol = c->offsets.data ? (size_t)(c->length + 1) * 4 : 0;
    *xl = c->values.len;
    if (c->type == HS_TYPE_BOOL)
        *xl = (size_t)(c->length + 7) / 8;
}

static hs_status put_col(hs_buf *o, const hs_column *c)
{
    int64_t h[2] = {c->length, c->null_count};
    HS_TRY(hs_buf_append(o, h, sizeof h));
    size_t vl, ol, xl;
    used_lens(c, &vl, &ol, &xl);
    HS_TRY(put_buf(o, &c->validity, vl));
    HS_TRY(put_buf(o, &c->offsets, ol));
    HS_TRY(put_buf(o, &c->values, xl));
    for (int i = 0; i < c->n_children; i++)
        HS_TRY(put_col(o, c->children[i]));
    return HS_OK;
}

static hs_status pwrite_all(int fd, const uint8_t *p, size_t n, int64_t off, hs_error *err)
{
    while (n > 0) {
        ssize_t w = injected_fault() ? (errno = ENOSPC, -1) : pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return hs_err_set(err, HS_IO, "could not write a spill file: %s",
                              strerror(w < 0 ? errno : EIO));
        p += w;
        n -= (size_t)w;
        off += w;
    }
    return HS_OK;
}

hs_status xo_spill_write(const xo_ctx *ctx, xo_spill *sp, const hs_batch *b, int64_t *off,
                         hs_error *err)
{
    if (!sp->open)
        HS_TRY(spill_open(ctx, sp, err));
    hs_buf o = {0};
    hs_status st = hs_buf_append(&o, (uint8_t[SPILL_HDR]){0}, SPILL_HDR);
    for (int i = 0; i < b->n_cols && st == HS_OK; i++)
        st = put_col(&o, b->cols[i]);
    if (st != HS_OK) {
        hs_buf_free(&o);
        return hs_err_nomem(err, 0);
    }
    uint32_t h32[2] = {SPILL_MAGIC, (uint32_t)b->n_cols};
    uint64_t h64[2] = {(uint64_t)b->n_rows, (uint64_t)(o.len - SPILL_HDR)};
    memcpy(o.data, h32, 8);
    memcpy(o.data + 8, h64, 16);
    st = pwrite_all(sp->fd, o.data, o.len, sp->size, err);
    if (st == HS_OK) {
        *off = sp->size;
        sp->size += (int64_t)o.len;
        sp->written += (int64_t)o.len;
    }
    hs_buf_free(&o);
    return st;
}

/* ---- reading ---- */

typedef struct rd {
    const uint8_t *p, *end;
} rd;

static bool get(rd *r, void *out, size_t n)
{
    if ((size_t)(r->end - r->p) < n)
        return false;
    memcpy(out, r->p, n);
    r->p += n;
    return true;
}

/* Replaces b's contents by the next stored buffer: 0, or 1 when the
 * block is damaged, 2 out of memory. */
static int get_buf(rd *r, hs_colbuf *b)
{
    uint64_t n;
    if (!get(r, &n, 8) || n > (uint64_t)(r->end - r->p))
        return 1;
    if (b->cap)
        hs_free_aligned(b->data);
    memset(b, 0, sizeof *b);
    if (n == 0)
        return 0;
    b->data = hs_malloc_aligned((size_t)n);
    if (!b->data)
        return 2;
    memcpy(b->data, r->p, (size_t)n);
    b->len = b->cap = (size_t)n;
    r->p += n;
    return 0;
}

static hs_status get_col(rd *r, hs_column *c, int64_t want_len, hs_error *err)
{
    int64_t h[2];
    if (!get(r, h, sizeof h) || h[0] != want_len || h[1] < 0 || h[1] > h[0])
        return HS_CORRUPT_AT(err, "spill file: bad column header");
    c->length = h[0];
    c->null_count = h[1];
    hs_colbuf *bufs[3] = {&c->validity, &c->offsets, &c->values};
    for (int i = 0; i < 3; i++) {
        int e = get_buf(r, bufs[i]);
        if (e == 2)
            return hs_err_nomem(err, 0);
        if (e)
            return HS_CORRUPT_AT(err, "spill file: bad buffer");
    }
    size_t vl, ol, xl;
    used_lens(c, &vl, &ol, &xl);
    if ((c->validity.data && c->validity.len != vl) ||
        (c->offsets.data && c->offsets.len != (size_t)(c->length + 1) * 4))
        return HS_CORRUPT_AT(err, "spill file: buffer lengths disagree with the row count");
    for (int i = 0; i < c->n_children; i++) {
        int64_t n = c->length;
        if (c->type == HS_TYPE_LIST || c->type == HS_TYPE_MAP)
            n = c->offsets.data ? HS_COL_OFFSETS(c)[c->length] : 0;
        else if (c->type == HS_TYPE_FIXED_LIST)
            n = c->length * c->width;
        HS_TRY(get_col(r, c->children[i], n, err));
    }
    return HS_OK;
}

static hs_status pread_all(int fd, uint8_t *p, size_t n, int64_t off, hs_error *err)
{
    while (n > 0) {
        ssize_t g = injected_fault() ? (errno = EIO, -1) : pread(fd, p, n, (off_t)off);
        if (g < 0 && errno == EINTR)
            continue;
        if (g < 0)
            return hs_err_set(err, HS_IO, "could not read a spill file: %s", strerror(errno));
        if (g == 0)
            return HS_CORRUPT_AT(err, "spill file: truncated");
        p += g;
        n -= (size_t)g;
        off += g;
    }
    return HS_OK;
}

hs_status xo_spill_read(const xo_spill *sp, const hs_field *schema, int64_t off, hs_batch **out,
                        int64_t *next, hs_error *err)
{
    *out = NULL;
    uint8_t h[SPILL_HDR];
    if (!sp->open || off < 0 || off + SPILL_HDR > sp->size)
        return HS_CORRUPT_AT(err, "spill file: no block at offset %lld", (long long)off);
    HS_TRY(pread_all(sp->fd, h, SPILL_HDR, off, err));
    uint32_t h32[2];
    uint64_t h64[2];
    memcpy(h32, h, 8);
    memcpy(h64, h + 8, 16);
    if (h32[0] != SPILL_MAGIC || (int)h32[1] != schema->n_children || h64[0] > INT32_MAX ||
        h64[1] > (uint64_t)(sp->size - off - SPILL_HDR))
        return HS_CORRUPT_AT(err, "spill file: bad block header at offset %lld", (long long)off);
    uint8_t *pay = hs_malloc(h64[1] ? (size_t)h64[1] : 1);
    if (!pay)
        return hs_err_nomem(err, (size_t)h64[1]);
    hs_status st = pread_all(sp->fd, pay, (size_t)h64[1], off + SPILL_HDR, err);
    hs_batch *b = NULL;
    if (st == HS_OK)
        st = hs_batch_create(schema, 0, &b, err);
    rd r = {pay, pay + h64[1]};
    for (int i = 0; st == HS_OK && i < b->n_cols; i++)
        st = get_col(&r, b->cols[i], (int64_t)h64[0], err);
    hs_free(pay);
    if (st != HS_OK) {
        hs_batch_free(b);
        return st;
    }
    b->n_rows = (int64_t)h64[0];
    *out = b;
    if (next)
        *next = off + SPILL_HDR + (int64_t)h64[1];
    return HS_OK;
}

/* ---- partitioned spilling ---- */

uint64_t xo_spill_seed(int level)
{
    return 0x9E3779B97F4A7C15ull * (uint64_t)(level + 1);
}

hs_status xo_spill_parts_write(const xo_ctx *ctx, xo_spill_parts *p, const hs_batch *b,
                               const uint8_t *part, hs_error *err)
{
    int64_t n = b->n_rows, cnt[XO_SPILL_PARTS] = {0}, at[XO_SPILL_PARTS];
    for (int64_t i = 0; i < n; i++)
        if (part[i] < XO_SPILL_PARTS)
            cnt[part[i]]++;
    int64_t *idx = hs_malloc((size_t)(n ? n : 1) * sizeof *idx);
    if (!idx)
        return hs_err_nomem(err, (size_t)n * sizeof *idx);
    int64_t acc = 0;
    for (int q = 0; q < XO_SPILL_PARTS; q++) {
        at[q] = acc;
        acc += cnt[q];
    }
    for (int64_t i = 0; i < n; i++)   /* each partition's rows in input order */
        if (part[i] < XO_SPILL_PARTS)
            idx[at[part[i]]++] = i;
    hs_status st = HS_OK;
    for (int q = 0; q < XO_SPILL_PARTS && st == HS_OK; q++) {
        if (cnt[q] == 0)
            continue;
        const int64_t *ix = idx + at[q] - cnt[q];
        hs_batch *t = NULL;
        st = cnt[q] == n ? HS_OK : xo_batch_take(&b->schema, b, ix, cnt[q], &t, err);
        int64_t off = 0;
        if (st == HS_OK)
            st = xo_spill_write(ctx, &p->sp, t ? t : b, &off, err);
        hs_batch_free(t);
        if (st == HS_OK && HS_VEC_PUSH(&p->offs[q], int64_t, off) != HS_OK)
            st = hs_err_nomem(err, 0);
        if (st == HS_OK) {
            p->rows[q] += cnt[q];
            p->total += cnt[q];
        }
    }
    hs_free(idx);
    return st;
}

void xo_spill_parts_free(xo_spill_parts *p)
{
    xo_spill_close(&p->sp);
    for (int q = 0; q < XO_SPILL_PARTS; q++)
        hs_buf_free(&p->offs[q]);
    memset(p->rows, 0, sizeof p->rows);
}

/* The reader of a list of blocks: a source operator.  Small blocks (a
 * partition's share of one input batch) are joined into batches of at
 * least XO_BATCH_ROWS / 2 rows where the blocks allow, never more than
 * XO_BATCH_ROWS. */
typedef struct spill_reader {
    xo_op op;
    const xo_spill *sp;    /* borrowed */
    int64_t *offs;
    int64_t n, next;
    hs_batch *held;        /* a block read that did not fit the last batch */
} spill_reader;

static hs_status reader_next(xo_op *op, hs_batch **out, hs_error *err)
{
    spill_reader *r = (spill_reader *)op;
    *out = NULL;
    HS_TRY(xo_check_cancel(op->ctx, err));
    hs_batch *b = r->held;
    r->held = NULL;
    while (r->next < r->n && (!b || b->n_rows < XO_BATCH_ROWS / 2)) {
        hs_batch *t;
        hs_status st = xo_spill_read(r->sp, &op->schema, r->offs[r->next], &t, NULL, err);
        if (st != HS_OK) {
            hs_batch_free(b);
            return st;
        }
        r->next++;
        if (!b) {
            b = t;
        } else if (b->n_rows + t->n_rows > XO_BATCH_ROWS) {
            r->held = t;
            break;
        } else {
            for (int c = 0; c < b->n_cols && st == HS_OK; c++)
                st = hs_col_append_column(b->cols[c], t->cols[c], err);
            b->n_rows += t->n_rows;
            hs_batch_free(t);
            if (st != HS_OK) {
                hs_batch_free(b);
                return st;
            }
        }
    }
    *out = b;
    return HS_OK;
}

static void reader_destroy(xo_op *op)
{
    hs_free(((spill_reader *)op)->offs);
    hs_batch_free(((spill_reader *)op)->held);
}

hs_status xo_spill_reader(xo_ctx *ctx, const xo_spill *sp, const hs_field *schema, hs_buf *offs,
                          xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(spill_reader), ctx, "SpillRead", 0, NULL, &op, err));
    spill_reader *r = (spill_reader *)op;
    op->next = reader_next;
    op->destroy = reader_destroy;
    r->sp = sp;
    r->n = (int64_t)HS_VEC_LEN(offs, int64_t);
    r->offs = (int64_t *)hs_buf_detach(offs, NULL);
    hs_field_clear(&op->schema);
    if (hs_field_copy(schema, &op->schema) != HS_OK) {
        hs_field_init(&op->schema, "", HS_TYPE_STRUCT, false);
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    *out = op;
    return HS_OK;
}

/*
 * table/stream.c - append streams (hyperstream/stream.h): writes go to the
 * write-ahead log (wal.c) and an in-memory tail; flushes turn the tail into
 * one Iceberg append snapshot; scans of the table handle read the tail
 * beside the committed snapshot (near-real-time reads).
 *
 * State of one stream, by sequence number (seq) of the log records:
 *
 *   committed_seq <= visible_seq <= acked_seq = synced_seq <= written_seq
 *   |  in a commit |  scans see   | durable, returned | in the log, not yet
 *                    (refresh)      to the writer       durable (interval)
 *
 * The tail (tbl_tail) holds the records with seq > committed_seq as
 * immutable batches (the table schema at open), each with a reference
 * count, so a scan takes references under the lock and reads them without
 * it while a flush goes on.  The tail is shared by the stream and the table
 * handle it was opened on (hs_table.tail), each holding a reference.
 *
 *   lock        guards                                      order
 *   ----------  ------------------------------------------  -----------
 *   flush_mu    the stream's own table handle (wt), flushes  first
 *   wal_mu      the log (appends, syncs, truncation)         then
 *   tail->mu    tail records, seqs, counters, conditions     last
 *
 * Write (any thread): conform + encode outside every lock; reserve room in
 * the memory budget (wait on cv_space, HS_BUSY after the busy timeout); under
 * wal_mu append the record and put it in the tail (so tail order = seq
 * order), and with policy "batch" fdatasync right there; with "interval"
 * wait on cv_durable until the background thread's group fdatasync covers
 * the record.  Acknowledged = synced_seq >= seq.
 *
 * Flush (the flusher thread on a trigger, hs_stream_flush, close; a
 * separate syncer thread keeps group commits and visibility going while a
 * flush builds indexes): take the
 * acknowledged records (references), write them through the append path of
 * write.c (tbl_rewrite "append": partitioned, sorted, indexes built) with
 * summary hyperstream.wal.seq and property hyperstream.wal.committed-seq =
 * the last seq, in ONE metadata commit; when the commit is not itself
 * fsynced (hyperstream.commit.fsync false) and the log is, syncfs() makes
 * it durable; only then committed_seq advances, the records leave the tail,
 * and the log deletes the segments it no longer needs.  A commit whose
 * outcome is unknown (an error after the catalog swap) is settled by
 * reading the table back: committed seq >= ours means it is in.  The
 * commit's rebase check refuses when the base already holds any of our
 * seqs (HS_CONFLICT), so rows can never be committed twice.
 *
 * Where the log lives (wal_dir_for): the hs_stream_options wal_dir, else the
 * table property hyperstream.wal.dir, else <table>/wal for a local table;
 * a table on an object store (s3://) cannot hold a log (no append, no
 * fsync), so its default is a local directory under the user's cache keyed
 * by the table location: $XDG_CACHE_HOME or $HOME/.cache, then
 * hyperstream/wal/<location as a file name, at most 80 bytes>-<XXH64 of
 * the location, 16 hex>.  A log anywhere but <table>/wal carries a random
 * id (file "wal-id", written once) and its committed seq lives under keys
 * suffixed ".<id>" (walid below): two machines each streaming into one S3
 * table through their own logs then never read the other's seqs as their
 * own (an unsuffixed key would make one skip the other's rows as already
 * committed).  Object-store commits are durable when the store acknowledges
 * them, so a flush there syncs no local file system.
 *
 * Near-real-time reads (tbl_tail_capture, called by hs_scan_plan): the scan
 * reads the handle's metadata M; rows with committed_seq(M) < seq <=
 * visible_seq come from the tail.  If the stream committed past M, the
 * handle is refreshed first (those rows left the tail).
 */
#define _GNU_SOURCE 1
#include "table/table_int.h"
#include "base/fork.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "base/opts.h"
#include "columnar/arrow_c.h"
#include "hyperstream/stream.h"
#include "table/wal.h"
#include "base/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define SEQ_SUMMARY_KEY "hyperstream.wal.seq"
#define SEQ_PROPERTY "hyperstream.wal.committed-seq"

/* ------------------------------------------------------------------ */
/* time                                                                */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void deadline_ts(struct timespec *ts, int64_t ms_from_now)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms_from_now / 1000;
    ts->tv_nsec += (ms_from_now % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

static void cond_init_mono(pthread_cond_t *c)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}

/* ------------------------------------------------------------------ */
/* the tail                                                            */

typedef struct tail_rec {
    uint64_t seq;
    _Atomic int refs;
    hs_batch *b;                   /* owned; the table schema at write */
    int32_t schema_id;
    int64_t bytes;                 /* budget charge */
    int64_t born_ms;               /* when it was acknowledged */
} tail_rec;

static void rec_unref(tail_rec *r)
{
    if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
        hs_batch_free(r->b);
        hs_free(r);
    }
}

typedef struct tbl_tail {
    _Atomic int refs;
    pthread_mutex_t mu;
    pthread_cond_t cv_space, cv_durable, cv_bg;
    hs_buf recs;                   /* tail_rec *, seq order */
    uint64_t written_seq, synced_seq, visible_seq, committed_seq;
    int64_t bytes, rows;
    bool failed;                   /* the log failed: no more writes */
    hs_error fail_err;
    bool stop;                     /* background thread: exit */
    bool closed;                   /* the stream is gone (t may still hold it) */
    bool flush_wanted;
    int64_t last_sync_ms, last_refresh_ms, flush_retry_ms;
    int64_t busy_timeout_ms;       /* the stream's (deletes wait that long) */
    hs_error flush_err;            /* last background flush failure */
    hs_stream_stats stats;
    char walid[24];                /* the log's id ("" = <table>/wal); set before publishing */
} tbl_tail;

static void tail_unref(tbl_tail *tl)
{
    if (!tl || atomic_fetch_sub(&tl->refs, 1) != 1)
        return;
    for (size_t i = 0; i < HS_VEC_LEN(&tl->recs, tail_rec *); i++)
        rec_unref(HS_VEC_AT(&tl->recs, tail_rec *, i));
    hs_buf_free(&tl->recs);
    pthread_mutex_destroy(&tl->mu);
    pthread_cond_destroy(&tl->cv_space);
    pthread_cond_destroy(&tl->cv_durable);
    pthread_cond_destroy(&tl->cv_bg);
    hs_free(tl);
}

static tbl_tail *tail_new(void)
{
    tbl_tail *tl = hs_calloc(1, sizeof *tl);
    if (!tl)
        return NULL;
    atomic_init(&tl->refs, 1);
    pthread_mutex_init(&tl->mu, NULL);
    cond_init_mono(&tl->cv_space);
    cond_init_mono(&tl->cv_durable);
    cond_init_mono(&tl->cv_bg);
    return tl;
}

/* Drops the records with seq <= upto (mu held). */
static void tail_drop_upto(tbl_tail *tl, uint64_t upto)
{
    size_t n = HS_VEC_LEN(&tl->recs, tail_rec *), k = 0;
    tail_rec **a = (tail_rec **)tl->recs.data;
    for (size_t i = 0; i < n; i++) {
        if (a[i]->seq <= upto) {
            tl->bytes -= a[i]->bytes;
            tl->rows -= a[i]->b->n_rows;
            rec_unref(a[i]);
        } else {
            a[k++] = a[i];
        }
    }
    tl->recs.len = k * sizeof(tail_rec *);
    pthread_cond_broadcast(&tl->cv_space);
}

void tbl_tail_detach(hs_table *t)
{
    tail_unref(t->tail);
    t->tail = NULL;
}

/* The tails of the streams open in this process, by table directory, so
 * that every handle of the table in the process reads the acknowledged
 * rows (not only the handle the stream was opened on) and its deletes can
 * flush them first.  Each entry holds a reference. */
typedef struct tail_reg {
    char *location;                /* local path of the table directory */
    tbl_tail *tl;
    struct tail_reg *next;
} tail_reg;
static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_reg_mu, HS_FORK_RANK_LEAF)
static tail_reg *g_reg;
static uint64_t g_reg_gen;   /* hs_fork_generation() the entries belong to */

/* A forked child has none of its parent's stream threads: their tails
 * (locked, maybe, by a thread that is gone; flushed by nobody) are not the
 * child's.  Its handles then read committed rows, as in any other process,
 * and its deletes do not wait for a flush that never comes.  The entries
 * are forgotten, not freed (their memory is the parent's copy).
 * g_reg_mu held. */
static void reg_after_fork_locked(void)
{
    uint64_t gen = hs_fork_generation();
    if (gen != g_reg_gen) {
        g_reg = NULL;
        g_reg_gen = gen;
    }
}

static void reg_add(const char *location, tbl_tail *tl)
{
    tail_reg *r = hs_calloc(1, sizeof *r);
    char *loc = hs_strdup(location);
    if (!r || !loc) {   /* other handles then see rows once flushed */
        hs_free(r);
        hs_free(loc);
        return;
    }
    atomic_fetch_add(&tl->refs, 1);
    r->location = loc;
    r->tl = tl;
    pthread_mutex_lock(&g_reg_mu);
    reg_after_fork_locked();
    r->next = g_reg;
    g_reg = r;
    pthread_mutex_unlock(&g_reg_mu);
}

static void reg_remove(tbl_tail *tl)
{
    pthread_mutex_lock(&g_reg_mu);
    reg_after_fork_locked();
    tail_reg *found = NULL;
    for (tail_reg **pp = &g_reg; *pp; pp = &(*pp)->next)
        if ((*pp)->tl == tl) {
            found = *pp;
            *pp = found->next;
            break;
        }
    pthread_mutex_unlock(&g_reg_mu);
    if (found) {
        tail_unref(found->tl);
        hs_free(found->location);
        hs_free(found);
    }
}

static bool tail_closed(tbl_tail *tl)
{
    pthread_mutex_lock(&tl->mu);
    bool c = tl->closed;
    pthread_mutex_unlock(&tl->mu);
    return c;
}

bool tbl_tail_attach(hs_table *t)
{
    if (t->no_tail)
        return false;
    if (t->tail && !tail_closed(t->tail))
        return true;
    /* none, or its stream is gone (the closed tail is kept until another
     * stream's replaces it: its committed seq still makes scans refresh) */
    const char *loc = tbl_local(t->meta.location);
    tbl_tail *found = NULL;
    pthread_mutex_lock(&g_reg_mu);
    reg_after_fork_locked();
    for (tail_reg *r = g_reg; r; r = r->next)
        if (strcmp(r->location, loc) == 0) {
            atomic_fetch_add(&r->tl->refs, 1);
            found = r->tl;
            break;
        }
    pthread_mutex_unlock(&g_reg_mu);
    if (found) {
        tbl_tail_detach(t);
        t->tail = found;
    }
    return t->tail != NULL;
}

int64_t tbl_tail_pending_rows(hs_table *t)
{
    if (!tbl_tail_attach(t))
        return 0;
    tbl_tail *tl = t->tail;
    int64_t n = 0;
    pthread_mutex_lock(&tl->mu);
    for (size_t i = 0; i < HS_VEC_LEN(&tl->recs, tail_rec *); i++) {
        tail_rec *r = HS_VEC_AT(&tl->recs, tail_rec *, i);
        if (r->seq > tl->committed_seq && r->seq <= tl->synced_seq)
            n += r->b->n_rows;
    }
    pthread_mutex_unlock(&tl->mu);
    return n;
}

hs_status tbl_tail_flush_pending(hs_table *t, const char *what, hs_error *err)
{
    if (!tbl_tail_attach(t))
        return HS_OK;
    tbl_tail *tl = t->tail;
    hs_status st = HS_OK;
    pthread_mutex_lock(&tl->mu);
    /* every acknowledged row, also those not yet visible to scans: a delete
     * must not let an acknowledged row survive it */
    uint64_t target = tl->synced_seq;
    int64_t timeout = tl->busy_timeout_ms;
    struct timespec ts;
    deadline_ts(&ts, timeout);
    while (tl->committed_seq < target && !tl->closed) {
        tl->flush_wanted = true;
        pthread_cond_broadcast(&tl->cv_bg);
        if (pthread_cond_timedwait(&tl->cv_space, &tl->mu, &ts) == ETIMEDOUT &&
            tl->committed_seq < target) {
            st = hs_err_set(err, HS_BUSY, "%s: %s waits for the append stream to commit its "
                            "acknowledged rows (seq %llu), and it did not within %lld ms%s%s",
                            t->ident, what, (unsigned long long)target, (long long)timeout,
                            tl->flush_err.msg[0] ? "; last flush error: " : "",
                            tl->flush_err.msg);
            break;
        }
    }
    if (st == HS_OK && tl->committed_seq < target)
        st = hs_err_set(err, HS_BUSY, "%s: %s: the append stream closed with acknowledged rows "
                        "not committed (they are in its log; reopen the stream to commit them)",
                        t->ident, what);
    pthread_mutex_unlock(&tl->mu);
    return st;
}

/* key, or key.<walid> when the log has an id. */
static void seq_key(char *out, size_t cap, const char *key, const char *walid)
{
    if (walid && *walid)
        snprintf(out, cap, "%s.%s", key, walid);
    else
        snprintf(out, cap, "%s", key);
}

uint64_t tbl_wal_committed_seq(const ice_table_metadata *m, const char *walid)
{
    char pkey[96], skey[96];
    seq_key(pkey, sizeof pkey, SEQ_PROPERTY, walid);
    seq_key(skey, sizeof skey, SEQ_SUMMARY_KEY, walid);
    uint64_t best = 0;
    const char *p = ice_kv_get(&m->properties, pkey);
    if (p)
        best = strtoull(p, NULL, 10);
    const ice_snapshot *s = ice_metadata_current_snapshot(m);
    for (int guard = 0; s && guard <= m->n_snapshots; guard++) {
        const char *v = ice_kv_get(&s->summary, skey);
        if (v) {
            uint64_t x = strtoull(v, NULL, 10);
            if (x > best)
                best = x;
            break;
        }
        s = s->has_parent ? ice_metadata_snapshot(m, s->parent_id) : NULL;
    }
    return best;
}

/* ---- views for scans ---- */

struct tbl_tail_view {
    tail_rec **recs;
    int n, next;
    int64_t rows;
};

void tbl_tail_view_free(tbl_tail_view *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->n; i++)
        rec_unref(v->recs[i]);
    hs_free(v->recs);
    hs_free(v);
}

int64_t tbl_tail_view_rows(const tbl_tail_view *v) { return v ? v->rows : 0; }

hs_status tbl_tail_capture(hs_table *t, tbl_tail_view **out, hs_error *err)
{
    *out = NULL;
    tbl_tail *tl = t->tail;
    if (!tl)
        return HS_OK;
    for (int attempt = 0;; attempt++) {
        uint64_t mseq = tbl_wal_committed_seq(&t->meta, tl->walid);
        pthread_mutex_lock(&tl->mu);
        if (tl->committed_seq > mseq) {
            pthread_mutex_unlock(&tl->mu);
            if (attempt >= 8)
                return hs_err_set(err, HS_CONFLICT, "%s: the table's metadata does not show the "
                                  "append stream's commit of seq %llu", t->ident,
                                  (unsigned long long)tl->committed_seq);
            HS_TRY(hs_table_refresh(t, err));
            continue;
        }
        size_t n = HS_VEC_LEN(&tl->recs, tail_rec *);
        tbl_tail_view *v = hs_calloc(1, sizeof *v);
        tail_rec **a = v && n ? hs_calloc(n, sizeof *a) : NULL;
        if (!v || (n && !a)) {
            pthread_mutex_unlock(&tl->mu);
            hs_free(v);
            return hs_err_nomem(err, n * sizeof *a);
        }
        for (size_t i = 0; i < n; i++) {
            tail_rec *r = HS_VEC_AT(&tl->recs, tail_rec *, i);
            if (r->seq <= mseq || r->seq > tl->visible_seq)
                continue;
            atomic_fetch_add(&r->refs, 1);
            a[v->n++] = r;
            v->rows += r->b->n_rows;
        }
        pthread_mutex_unlock(&tl->mu);
        v->recs = a;
        if (v->n == 0) {
            tbl_tail_view_free(v);
            return HS_OK;
        }
        *out = v;
        return HS_OK;
    }
}

static hs_status null_col(const hs_field *f, int64_t n, hs_column **out, hs_error *err)
{
    HS_TRY(hs_col_create(f, n, out, err));
    if (hs_col_append_nulls(*out, n) != HS_OK) {
        hs_col_free(*out);
        *out = NULL;
        return hs_err_nomem(err, (size_t)n);
    }
    return HS_OK;
}

static void cols_free(hs_column **c, int n)
{
    for (int i = 0; c && i < n; i++)
        hs_col_free(c[i]);
    hs_free(c);
}

/* One record's rows in read_schema. */
static hs_status rec_in_schema(const tail_rec *r, const hs_field *rs, hs_batch **out,
                               hs_error *err)
{
    *out = NULL;
    const hs_batch *b = r->b;
    int n = rs->n_children;
    hs_column **cols = hs_calloc((size_t)n + 1, sizeof *cols);
    if (!cols)
        return hs_err_nomem(err, 64);
    hs_status st = HS_OK;
    for (int i = 0; st == HS_OK && i < n; i++) {
        const hs_field *want = &rs->children[i];
        int k = -1;
        for (int j = 0; j < b->schema.n_children && k < 0; j++)
            if (b->schema.children[j].field_id == want->field_id)
                k = j;
        if (k < 0) {
            st = null_col(want, b->n_rows, &cols[i], err);
            continue;
        }
        hs_column *copy = NULL;
        st = hs_col_slice(b->cols[k], 0, b->n_rows, &copy, err);
        if (st == HS_OK)
            st = tbl_conform_column(&b->schema.children[k], copy, want, false, &cols[i], err);
    }
    if (st == HS_OK) {
        st = tbl_batch_from_cols(rs, cols, n, b->n_rows, out, err);
        hs_free(cols);
        return st;
    }
    cols_free(cols, n);
    return st;
}

hs_status tbl_tail_view_next(tbl_tail_view *v, const hs_field *read_schema, const tbl_pred *pred,
                             const hs_field *out_schema, hs_batch **out, hs_error *err)
{
    *out = NULL;
    while (v && v->next < v->n) {
        const tail_rec *r = v->recs[v->next++];
        hs_batch *rb = NULL;
        HS_TRY(rec_in_schema(r, read_schema, &rb, err));
        int64_t n = rb->n_rows, n_match = n;
        uint8_t *sel = NULL;
        hs_status st = HS_OK;
        if (pred && !tbl_pred_is_true(pred)) {
            sel = hs_malloc((size_t)n + 1);
            st = sel ? tbl_pred_eval(pred, rb, NULL, sel, &n_match, err)
                     : hs_err_nomem(err, (size_t)n);
        }
        int n_out = out_schema->n_children;
        hs_column **cols = NULL;
        int64_t *idx = NULL;
        if (st == HS_OK && n_match > 0) {
            cols = hs_calloc((size_t)n_out + 1, sizeof *cols);
            idx = hs_malloc(((size_t)n_match + 1) * sizeof *idx);
            if (!cols || !idx)
                st = hs_err_nomem(err, (size_t)n_match * 8);
            int64_t m = 0;
            for (int64_t i = 0; st == HS_OK && i < n; i++)
                if (!sel || sel[i])
                    idx[m++] = i;
            for (int i = 0; st == HS_OK && i < n_out; i++)
                st = hs_col_take(rb->cols[i], idx, n_match, &cols[i], err);
            if (st == HS_OK) {
                st = tbl_batch_from_cols(out_schema, cols, n_out, n_match, out, err);
                hs_free(cols);
                cols = NULL;
            }
        }
        cols_free(cols, n_out);
        hs_free(idx);
        hs_free(sel);
        hs_batch_free(rb);
        if (st != HS_OK || *out)
            return st;
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* the stream                                                          */

struct hs_stream {
    tbl_tail *tail;                /* a reference */
    hs_table *wt;                  /* own handle: flushes (flush_mu) */
    ice_table_metadata meta;       /* copy at open: schema, vector dimensions */
    const ice_schema *schema;      /* borrowed from meta */
    char *ident;
    char *location;                /* local path of the table directory, or its
                                      object-store URI (object_store) */
    bool object_store;
    char *wal_dir;                 /* local directory of the log (wal_dir_for) */
    wal *w;
    pthread_mutex_t wal_mu, flush_mu;
    pthread_t bg, fl;              /* syncer, flusher (bg_loop) */
    bool bg_started;
    int policy;
    int64_t fsync_interval_ms, flush_rows, flush_bytes, flush_interval_ms;
    int64_t memory_bytes, busy_timeout_ms, refresh_ms;
    bool commit_fsync;             /* the table's commits are fsynced */
    char *durable_meta;            /* flush_mu: a metadata file all of whose files are
                                      durable (after our last flush), or NULL */
    int64_t compact_min_files;     /* automatic maintenance (0 = off) */
    int64_t expire_age_ms;
    int64_t last_expire_ms;        /* monotonic (atomic: the flusher reads it unlocked) */
    double compact_fraction;       /* max_rewrite_fraction of its compactions (0 = no bound) */
    int64_t compact_after_ms;      /* wall clock: the last compaction's replaced snapshot is
                                    * past the expiry age (0 = none waiting) */
    int64_t compact_replaced;      /* that snapshot's id */
    int64_t compact_give_up_ms;    /* wall clock: compact even if it is still kept (pinned) */
    char *expire_seen;             /* flush_mu: the metadata location the last expiry pass
                                    * ended on (NULL: none, or it failed) */
    int64_t expire_due_ms;         /* wall clock: no snapshot of that metadata reaches
                                    * the age before this */
};

static int64_t prop_i64(const ice_table_metadata *m, const char *key, int64_t set,
                        int64_t dflt)
{
    if (set)
        return set;
    const char *v = ice_kv_get(&m->properties, key);
    if (!v || !*v)
        return dflt;
    char *end;
    long long x = strtoll(v, &end, 10);
    return *end ? dflt : (int64_t)x;
}

static hs_status read_policy(hs_stream *s, const hs_stream_options *o, hs_error *err)
{
    if (o && o->fsync_policy) {
        if (o->fsync_policy < HS_WAL_FSYNC_BATCH || o->fsync_policy > HS_WAL_FSYNC_NONE)
            return hs_err_set(err, HS_INVALID, "stream: fsync_policy %d", o->fsync_policy);
        s->policy = o->fsync_policy;
        return HS_OK;
    }
    const char *v = ice_kv_get(&s->meta.properties, "hyperstream.wal.fsync");
    if (!v || strcmp(v, "batch") == 0)
        s->policy = HS_WAL_FSYNC_BATCH;
    else if (strcmp(v, "interval") == 0)
        s->policy = HS_WAL_FSYNC_INTERVAL;
    else if (strcmp(v, "none") == 0)
        s->policy = HS_WAL_FSYNC_NONE;
    else
        return hs_err_set(err, HS_INVALID, "%s: table property hyperstream.wal.fsync is \"%s\" "
                          "(batch, interval or none)", s->ident, v);
    return HS_OK;
}

/* ---- recovery ---- */

static hs_status replay_rec(void *ctx, uint64_t seq, const uint8_t *p, size_t n, hs_error *err)
{
    hs_stream *s = ctx;
    int32_t sid;
    HS_TRY(wal_payload_schema_id(p, n, &sid, err));
    const ice_schema *sc = ice_metadata_schema(&s->meta, sid);
    if (!sc)
        return HS_CORRUPT_AT(err, "%s: wal record %llu names schema %d, which the table does "
                             "not have", s->ident, (unsigned long long)seq, (int)sid);
    hs_batch *b = NULL;
    HS_TRY(wal_batch_decode(p, n, &sc->root, &b, err));
    tail_rec *r = hs_calloc(1, sizeof *r);
    if (!r) {
        hs_batch_free(b);
        return hs_err_nomem(err, sizeof *r);
    }
    atomic_init(&r->refs, 1);
    r->seq = seq;
    r->b = b;
    r->schema_id = sid;
    r->bytes = (int64_t)n;
    r->born_ms = now_ms();
    tbl_tail *tl = s->tail;
    if (HS_VEC_PUSH(&tl->recs, tail_rec *, r) != HS_OK) {
        rec_unref(r);
        return hs_err_nomem(err, 64);
    }
    tl->bytes += r->bytes;
    tl->rows += b->n_rows;
    tl->stats.replayed_records++;
    tl->stats.replayed_rows += b->n_rows;
    return HS_OK;
}

/* ---- flush ---- */

typedef struct flush_src {
    tail_rec **recs;
    int n, next;
} flush_src;

/* Concatenates records (one schema) into batches of about 64k rows. */
static hs_status flush_next(void *ctx, hs_batch **out, hs_error *err)
{
    flush_src *f = ctx;
    *out = NULL;
    if (f->next >= f->n)
        return HS_OK;
    hs_batch *b = NULL;
    HS_TRY(hs_batch_create(&f->recs[f->next]->b->schema, 0, &b, err));
    hs_status st = HS_OK;
    while (st == HS_OK && f->next < f->n && (b->n_rows == 0 || b->n_rows < 65536)) {
        const hs_batch *r = f->recs[f->next]->b;
        for (int i = 0; st == HS_OK && i < b->n_cols; i++)
            st = hs_col_append_column(b->cols[i], r->cols[i], err);
        b->n_rows += r->n_rows;
        f->next++;
    }
    if (st != HS_OK) {
        hs_batch_free(b);
        return st;
    }
    *out = b;
    return HS_OK;
}

static void flush_close(void *ctx) { (void)ctx; }

typedef struct flush_check {
    uint64_t first_seq;
    const char *ident;
    const char *walid;
} flush_check;

/* Rebase check: no seq of this flush may already be in the base. */
static hs_status check_not_committed(void *ctx, const ice_table_metadata *base, hs_error *err)
{
    const flush_check *c = ctx;
    uint64_t have = tbl_wal_committed_seq(base, c->walid);
    if (have >= c->first_seq)
        return hs_err_set(err, HS_CONFLICT, "%s: a commit of wal seq %llu is already in the "
                          "table (another stream wrote it?); this flush would duplicate rows",
                          c->ident, (unsigned long long)have);
    return HS_OK;
}

/* Did the commit that made t's current metadata start from metadata file
 * `prev` (so no other commit came between)?  False when unsure. */
static bool follows(const hs_table *t, const char *prev)
{
    const ice_table_metadata *m = &t->meta;
    return prev && m->n_metadata_log > 0 &&
           strcmp(m->metadata_log[m->n_metadata_log - 1].file, prev) == 0;
}

/* Makes the table's latest commit durable (its files were not fsynced). */
static hs_status sync_table_fs(hs_stream *s, hs_error *err)
{
    if (hs_io_syncfs(s->location) != 0)
        return hs_err_set(err, HS_IO, "%s: syncfs failed: %s", s->location, strerror(errno));
    return HS_OK;
}

/* Commits one group of records (one schema). */
static hs_status commit_group(hs_stream *s, tail_rec **recs, int n, hs_error *err)
{
    uint64_t first = recs[0]->seq, last = recs[n - 1]->seq;
    flush_check chk = {first, s->ident, s->tail->walid};
    char skey[96], pkey[96];
    seq_key(skey, sizeof skey, SEQ_SUMMARY_KEY, s->tail->walid);
    seq_key(pkey, sizeof pkey, SEQ_PROPERTY, s->tail->walid);
    tbl_rewrite *rw = NULL;
    HS_TRY(tbl_rewrite_begin(s->wt, "append", -1, check_not_committed, &chk, &rw, err));
    flush_src fs = {recs, n, 0};
    hs_batch_source src = {.next = flush_next, .close = flush_close, .ctx = &fs};
    hs_status st = HS_OK;
    if (hs_field_copy(&recs[0]->b->schema, &src.schema) != HS_OK)
        st = hs_err_nomem(err, 64);
    struct ArrowArrayStream as = {0};
    if (st == HS_OK)
        st = hs_arrow_export_stream(&src, &as, err);
    else
        hs_field_clear(&src.schema);
    if (st == HS_OK)
        st = tbl_rewrite_stream(rw, &as, 0, err);
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)last);
    if (st == HS_OK)
        st = tbl_rewrite_summary(rw, skey, buf, err);
    if (st == HS_OK)
        st = tbl_rewrite_property(rw, pkey, buf, err);
    if (st == HS_OK)
        st = tbl_rewrite_commit(rw, err);
    tbl_rewrite_free(rw);
    if (st != HS_OK) {
        /* did it land anyway (an error after the swap)? */
        hs_error e2;
        hs_err_clear(&e2);
        if (hs_table_refresh(s->wt, &e2) == HS_OK &&
            tbl_wal_committed_seq(&s->wt->meta, s->tail->walid) >= last)
            st = HS_OK;
    }
    return st;
}

/* flush_mu held. */
static hs_status do_flush(hs_stream *s, hs_error *err)
{
    tbl_tail *tl = s->tail;
    pthread_mutex_lock(&tl->mu);
    size_t n = HS_VEC_LEN(&tl->recs, tail_rec *);
    tail_rec **a = n ? hs_calloc(n, sizeof *a) : NULL;
    int k = 0;
    if (a)
        for (size_t i = 0; i < n; i++) {
            tail_rec *r = HS_VEC_AT(&tl->recs, tail_rec *, i);
            if (r->seq > tl->synced_seq)
                break;
            atomic_fetch_add(&r->refs, 1);
            a[k++] = r;
        }
    pthread_mutex_unlock(&tl->mu);
    if (n && !a)
        return hs_err_nomem(err, n * sizeof *a);
    hs_status st = HS_OK;
    if (k > 0)
        st = hs_table_refresh(s->wt, err);
    uint64_t have = k > 0 ? tbl_wal_committed_seq(&s->wt->meta, tl->walid) : 0;
    int from = 0;
    while (st == HS_OK && from < k && a[from]->seq <= have)
        from++;   /* already committed (settled after an unknown outcome) */
    /* Durability of the commit before the log is cut (policy batch or
     * interval, commits not fsynced by the table property): the files this
     * flush writes are fsynced one by one (cat_io_sync_under), and when the
     * chain of metadata files from the last durable one (our previous
     * flush) to ours holds another commit (another handle, process or
     * engine, our own maintenance), whose files nobody synced, syncfs()
     * covers them.  So everything the new metadata references is durable,
     * and a lone stream never syncs the whole file system. */
    bool targeted = k > 0 && s->policy != HS_WAL_FSYNC_NONE && !s->commit_fsync &&
                    !s->object_store;   /* a store's PUT is durable once acknowledged */
    bool chain = targeted && s->durable_meta && s->wt->metadata_location &&
                 strcmp(s->durable_meta, s->wt->metadata_location) == 0;
    if (st == HS_OK && targeted)
        st = cat_io_sync_under_begin(s->location, err);
    else
        targeted = false;
    while (st == HS_OK && from < k) {
        int to = from + 1;
        while (to < k && a[to]->schema_id == a[from]->schema_id)
            to++;
        char *prev = chain && s->wt->metadata_location ? hs_strdup(s->wt->metadata_location) : NULL;
        st = commit_group(s, a + from, to - from, err);
        chain = chain && st == HS_OK && follows(s->wt, prev);
        hs_free(prev);
        if (st == HS_OK) {
            pthread_mutex_lock(&tl->mu);
            tl->stats.flushes++;
            pthread_mutex_unlock(&tl->mu);
        }
        from = to;
    }
    if (targeted)
        cat_io_sync_under_end(s->location);
    uint64_t done = 0;
    if (st == HS_OK && k > 0) {
        done = a[k - 1]->seq;
        if (s->policy != HS_WAL_FSYNC_NONE && !s->commit_fsync && !s->object_store) {
            if (!chain)
                st = sync_table_fs(s, err);
            hs_free(s->durable_meta);
            s->durable_meta = st == HS_OK && s->wt->metadata_location
                                  ? hs_strdup(s->wt->metadata_location) : NULL;
        }
    }
    if (st == HS_OK && done) {
        pthread_mutex_lock(&tl->mu);
        if (done > tl->committed_seq)
            tl->committed_seq = done;
        tail_drop_upto(tl, done);
        pthread_mutex_unlock(&tl->mu);
        pthread_mutex_lock(&s->wal_mu);
        st = wal_truncate(s->w, done, err);
        pthread_mutex_unlock(&s->wal_mu);
    }
    for (int i = 0; i < k; i++)
        rec_unref(a[i]);
    hs_free(a);
    return st;
}

/* ---- automatic maintenance ---- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The expiry step of auto_maintain, when due (every quarter of the age, at
 * least 50 ms): what a compaction replaced goes about age + age / 4 after
 * it stopped being current.  Readers of this process keep their snapshots
 * whatever the age (pins.c). */
/* When the first snapshot of m other than the current one and those refs
 * name reaches the expiry age (wall clock; INT64_MAX: none will): an
 * ancestor's age counts from its child's commit, as auto_expire keeps it. */
static int64_t expire_due(const ice_table_metadata *m, int64_t age)
{
    int64_t due = INT64_MAX;
    for (int i = 0; i < m->n_snapshots; i++) {
        const ice_snapshot *sn = &m->snapshots[i];
        bool held = sn->snapshot_id == m->current_snapshot_id;
        for (int r = 0; r < m->n_refs && !held; r++)
            held = m->refs[r].snapshot_id == sn->snapshot_id;
        if (held)
            continue;
        int64_t from = sn->timestamp_ms;
        for (int k = 0; k < m->n_snapshots; k++)
            if (m->snapshots[k].has_parent && m->snapshots[k].parent_id == sn->snapshot_id &&
                m->snapshots[k].timestamp_ms > from)
                from = m->snapshots[k].timestamp_ms;
        if (from + age < due)
            due = from + age;
    }
    return due;
}

/* Records where an expiry pass left the table (ok = it succeeded). */
static void expire_note(hs_stream *s, bool ok, int64_t every)
{
    hs_free(s->expire_seen);
    s->expire_seen = NULL;
    if (!ok || !s->wt->metadata_location)
        return;
    s->expire_seen = hs_strdup(s->wt->metadata_location);
    int64_t due = expire_due(&s->wt->meta, s->expire_age_ms);
    int64_t now = wall_ms();
    /* due already: kept by a reader's pin or a ref's retention, so the
     * next passes come at the cadence, as without this check */
    s->expire_due_ms = due > now ? due : now + every;
}

/* Nothing can expire yet: the catalog still points at the metadata the
 * last pass ended on (one probe of the pointer, no metadata read) and no
 * snapshot of it has reached the age. */
static bool expire_idle(hs_stream *s)
{
    if (!s->expire_seen || !s->wt->catalog || wall_ms() >= s->expire_due_ms)
        return false;
    char *loc = NULL;
    hs_error e;
    hs_err_clear(&e);
    bool same = cat_current_location(s->wt->catalog->cat, s->wt->ident, &loc, &e) == HS_OK &&
                loc && strcmp(loc, s->expire_seen) == 0;
    hs_free(loc);
    return same;
}

static void auto_expire(hs_stream *s, bool force, int64_t *n_expire, int64_t *n_fail)
{
    int64_t now = now_ms();
    int64_t every = s->expire_age_ms / 4 > 50 ? s->expire_age_ms / 4 : 50;
    if (s->expire_age_ms <= 0 ||
        (!force && now - __atomic_load_n(&s->last_expire_ms, __ATOMIC_RELAXED) < every))
        return;
    __atomic_store_n(&s->last_expire_ms, now, __ATOMIC_RELAXED);
    if (!force && expire_idle(s))
        return;
    /* A snapshot's age counts from when it stopped being current (its
     * child's commit), not from its own commit: keep every ancestor that
     * was current within the age, so a reader that planned it just before
     * a compaction replaced it still finds its files. */
    int64_t cutoff = wall_ms() - s->expire_age_ms;
    const ice_table_metadata *m = &s->wt->meta;
    int keep = 1;
    for (const ice_snapshot *a = ice_metadata_current_snapshot(m);
         a && a->timestamp_ms >= cutoff && a->has_parent && keep < 1000000;
         a = ice_metadata_snapshot(m, a->parent_id))
        keep++;
    hs_expire_options eo = HS_EXPIRE_OPTIONS_INIT;
    eo.use_older_than = 1;
    eo.older_than_ms = cutoff;
    eo.retain_last = keep;
    char *res = NULL;
    hs_error e;
    hs_err_clear(&e);
    bool ok = hs_table_expire_snapshots(s->wt, &eo, &res, &e) == HS_OK;
    if (!ok)
        (*n_fail)++;
    else if (res && !strstr(res, "\"expired_snapshot_ids\":[]"))
        (*n_expire)++;
    hs_string_free(res);
    expire_note(s, ok, every);
}

/* After a background flush (flusher thread, flush_mu held), so that a table
 * fed by a stream stays small without a maintenance job:
 *
 *   property                              effect (0 = off, the default)
 *   hyperstream.wal.compact-min-files     compact (hs_table_compact, at the
 *                                         table's target file size) when a
 *                                         partition has this many small files
 *                                         (size-tiered), or a data file 4x as
 *                                         many delete files
 *   hyperstream.wal.expire-age-ms         before and after the compaction, at
 *                                         most every max(50 ms, age / 4),
 *                                         expire snapshots that stopped being
 *                                         current longer ago than this (the
 *                                         current one is always kept)
 *   hyperstream.wal.compact-max-rewrite-  each compaction rewrites at most this
 *     fraction                            fraction of the live data bytes
 *                                         (hs_compact_options.max_rewrite_
 *                                         fraction) [0.1; 0 = no bound]
 *
 * Storage bound: a compaction holds its bytes twice, first as new files no
 * snapshot names yet, then (after its commit) as the replaced files that
 * wait the expiry age.  So with expiry on, the next compaction starts only
 * once the previous one's replaced snapshot is past the age and expired
 * (a forced expiry just before it): at any moment at most one compaction's
 * bytes, at most the fraction of the table, are there twice.  What stays
 * beyond that is the grace of readers: a snapshot a scan of this process is
 * on (pins.c) keeps its files whatever the age (docs/streaming.md, "Soak").
 *
 * The age is the grace period of readers in other handles and processes:
 * a scan planned on a replaced snapshot finds its files for at least that
 * long (docs/tables.md, "Readers and expiry").  The flush's rows are
 * committed whatever happens here; a failure (a conflict with another
 * writer's delete, a full disk) is counted and tried again after the next
 * flush.  Writes go on meanwhile into the tail (the memory budget bounds
 * it). */
static void auto_maintain(hs_stream *s)
{
    if (s->compact_min_files <= 0 && s->expire_age_ms <= 0)
        return;
    tbl_tail *tl = s->tail;
    hs_error e;
    hs_err_clear(&e);
    int64_t n_compact = 0, n_expire = 0, n_fail = 0;
    /* Expiry before the compaction as well as after it: what the previous
     * compaction replaced was still within the age when the expiry after
     * it ran, and a compaction of a large table takes seconds (the soak
     * measured the files it replaced waiting one whole compaction more:
     * 0.7x the live data). */
    bool compact = s->compact_min_files > 0;
    if (compact && s->compact_after_ms) {
        /* the previous compaction's replaced files first (header comment) */
        if (wall_ms() < s->compact_after_ms) {
            compact = false;
        } else {
            auto_expire(s, true, &n_expire, &n_fail);
            /* still there: a reader of this process is on it (pins.c);
             * wait for it, up to max(5 s, 10 ages), then compact anyway
             * (the file count must not grow without bound either) */
            if (ice_metadata_snapshot(&s->wt->meta, s->compact_replaced) &&
                wall_ms() < s->compact_give_up_ms)
                compact = false;
            else
                s->compact_after_ms = 0;
        }
    }
    auto_expire(s, false, &n_expire, &n_fail);
    if (compact) {
        hs_compact_options co = HS_COMPACT_OPTIONS_INIT;
        co.min_input_files = (int)s->compact_min_files;
        co.size_tiered = 1;
        co.max_rewrite_fraction = s->compact_fraction;
        /* a data file that collected 4x as many delete files as a
         * partition needs small files is rewritten too (its deletes
         * applied), so that a stream of small deletes does not pile up
         * delete files on the big files forever (Iceberg's default
         * delete-file-threshold never rewrites for them); 4x: each such
         * rewrite copies a big file, and those copies are what storage
         * holds beyond the live data until expiry (measured in the soak:
         * 1x doubled the dead data bytes).  The table property
         * hyperstream.compact.delete-file-threshold overrides it */
        if (!ice_kv_get(&s->wt->meta.properties, "hyperstream.compact.delete-file-threshold"))
            co.delete_file_threshold = (int)(4 * s->compact_min_files);
        int64_t before = hs_table_current_snapshot_id(s->wt);
        if (hs_table_compact(s->wt, &co, NULL, &e) != HS_OK)
            n_fail++;
        else if (hs_table_current_snapshot_id(s->wt) != before) {
            n_compact++;
            if (s->expire_age_ms > 0) {   /* its snapshot's timestamp is at most now */
                int64_t now = wall_ms();
                s->compact_after_ms = now + s->expire_age_ms + 1;
                s->compact_give_up_ms =
                    now + (10 * s->expire_age_ms > 5000 ? 10 * s->expire_age_ms : 5000);
                /* the snapshot it replaced (one commit: no partial
                 * progress here), which names the files it rewrote */
                const ice_snapshot *c = ice_metadata_current_snapshot(&s->wt->meta);
                s->compact_replaced = c && c->has_parent ? c->parent_id : -1;
            }
        }
        hs_err_clear(&e);
    }
    auto_expire(s, false, &n_expire, &n_fail);
    pthread_mutex_lock(&tl->mu);
    tl->stats.compactions += n_compact;
    tl->stats.expirations += n_expire;
    tl->stats.maintenance_failures += n_fail;
    pthread_mutex_unlock(&tl->mu);
}

/* ---- background thread ---- */

static bool flush_due(hs_stream *s, int64_t now)
{
    tbl_tail *tl = s->tail;
    if (HS_VEC_LEN(&tl->recs, tail_rec *) == 0 || now < tl->flush_retry_ms)
        return false;
    tail_rec *oldest = HS_VEC_AT(&tl->recs, tail_rec *, 0);
    if (oldest->seq > tl->synced_seq)
        return false;
    return tl->flush_wanted || tl->rows >= s->flush_rows || tl->bytes >= s->flush_bytes ||
           now - oldest->born_ms >= s->flush_interval_ms;
}

/* Two background threads run this loop: the syncer (group commit and
 * visibility; never blocked by a flush, which may take seconds of index
 * building) and the flusher (flush triggers). */
static void bg_loop(hs_stream *s, bool flusher)
{
    tbl_tail *tl = s->tail;
    pthread_mutex_lock(&tl->mu);
    while (!tl->stop) {
        int64_t now = now_ms();
        /* group commit */
        if (!flusher && s->policy == HS_WAL_FSYNC_INTERVAL && !tl->failed && tl->written_seq > tl->synced_seq &&
            now - tl->last_sync_ms >= s->fsync_interval_ms) {
            pthread_mutex_unlock(&tl->mu);
            hs_error e;
            hs_err_clear(&e);
            pthread_mutex_lock(&s->wal_mu);
            pthread_mutex_lock(&tl->mu);
            uint64_t w = tl->written_seq;
            pthread_mutex_unlock(&tl->mu);
            hs_status st = wal_sync(s->w, &e);
            pthread_mutex_unlock(&s->wal_mu);
            pthread_mutex_lock(&tl->mu);
            tl->last_sync_ms = now_ms();
            if (st == HS_OK) {
                if (w > tl->synced_seq)
                    tl->synced_seq = w;
                if (s->refresh_ms < 0)
                    tl->visible_seq = tl->synced_seq;
            } else if (!tl->failed) {
                tl->failed = true;
                tl->fail_err = e;
            }
            pthread_cond_broadcast(&tl->cv_durable);
            continue;
        }
        /* visibility */
        if (!flusher && s->refresh_ms > 0 && tl->visible_seq < tl->synced_seq &&
            now - tl->last_refresh_ms >= s->refresh_ms) {
            tl->visible_seq = tl->synced_seq;
            tl->last_refresh_ms = now;
        }
        /* flush */
        if (flusher && flush_due(s, now)) {
            tl->flush_wanted = false;
            pthread_mutex_unlock(&tl->mu);
            hs_error e;
            hs_err_clear(&e);
            pthread_mutex_lock(&s->flush_mu);
            hs_status st = do_flush(s, &e);
            if (st == HS_OK)
                auto_maintain(s);
            pthread_mutex_unlock(&s->flush_mu);
            pthread_mutex_lock(&tl->mu);
            if (st != HS_OK) {
                tl->flush_err = e;
                tl->flush_retry_ms = now_ms() + 100;
            } else {
                hs_err_clear(&tl->flush_err);
            }
            continue;
        }
        /* expiry between flushes too, at its cadence: what a compaction
         * or another handle's commit replaced goes about the age after it
         * stopped being current, not after the next flush's maintenance */
        if (flusher && s->expire_age_ms > 0 && !tl->failed &&
            now - __atomic_load_n(&s->last_expire_ms, __ATOMIC_RELAXED) >=
                (s->expire_age_ms / 4 > 50 ? s->expire_age_ms / 4 : 50)) {
            pthread_mutex_unlock(&tl->mu);
            int64_t n_expire = 0, n_fail = 0;
            pthread_mutex_lock(&s->flush_mu);
            auto_expire(s, false, &n_expire, &n_fail);
            pthread_mutex_unlock(&s->flush_mu);
            pthread_mutex_lock(&tl->mu);
            tl->stats.expirations += n_expire;
            tl->stats.maintenance_failures += n_fail;
            continue;
        }
        /* sleep until the next thing may be due */
        int64_t wait = 100;
        if (!flusher && s->policy == HS_WAL_FSYNC_INTERVAL && tl->written_seq > tl->synced_seq) {
            int64_t d = tl->last_sync_ms + s->fsync_interval_ms - now;
            wait = d < wait ? d : wait;
        }
        if (!flusher && s->refresh_ms > 0 && tl->visible_seq < tl->synced_seq) {
            int64_t d = tl->last_refresh_ms + s->refresh_ms - now;
            wait = d < wait ? d : wait;
        }
        if (wait < 1)
            wait = 1;
        struct timespec ts;
        deadline_ts(&ts, wait);
        pthread_cond_timedwait(&tl->cv_bg, &tl->mu, &ts);
    }
    pthread_mutex_unlock(&tl->mu);
}

static void *sync_main(void *arg)
{
    bg_loop(arg, false);
    return NULL;
}

static void *flush_main(void *arg)
{
    bg_loop(arg, true);
    return NULL;
}

/* ---- public ---- */

static void stream_free(hs_stream *s)
{
    if (!s)
        return;
    tbl_tail *tl = s->tail;
    if (s->bg_started) {
        pthread_mutex_lock(&tl->mu);
        tl->stop = true;
        pthread_cond_broadcast(&tl->cv_bg);
        pthread_mutex_unlock(&tl->mu);
        pthread_join(s->bg, NULL);
        pthread_join(s->fl, NULL);
    }
    wal_close(s->w);
    if (tl)
        reg_remove(tl);
    if (tl) {
        /* rows not committed leave the readers' view (they stay in the log) */
        pthread_mutex_lock(&tl->mu);
        tl->failed = true;
        hs_err_set(&tl->fail_err, HS_INVALID, "%s: the append stream is closed", s->ident);
        tail_drop_upto(tl, UINT64_MAX);
        tl->closed = true;   /* committed_seq stays: scans of t refresh past it */
        pthread_cond_broadcast(&tl->cv_durable);
        pthread_mutex_unlock(&tl->mu);
        tail_unref(tl);
    }
    hs_table_close(s->wt);
    ice_metadata_free(&s->meta);
    pthread_mutex_destroy(&s->wal_mu);
    pthread_mutex_destroy(&s->flush_mu);
    hs_free(s->ident);
    hs_free(s->location);
    hs_free(s->wal_dir);
    hs_free(s->durable_meta);
    hs_free(s->expire_seen);
    hs_free(s);
}

/* ---- where the log lives ---- */

/* The log directory of the table at `location` (metadata m): opt_dir, the
 * property hyperstream.wal.dir, <location>/wal (local), or the per-user
 * cache directory keyed by the location (object stores).  *own = it is
 * <location>/wal.  Caller frees *out with hs_free. */
static hs_status wal_dir_for(const ice_table_metadata *m, const char *location,
                             const char *opt_dir, char **out, bool *own, hs_error *err)
{
    *out = NULL;
    *own = false;
    const char *dir = opt_dir && *opt_dir ? opt_dir
                                          : ice_kv_get(&m->properties, "hyperstream.wal.dir");
    if (dir && *dir) {
        dir = tbl_local(dir);
        if (dir[0] != '/')
            return hs_err_set(err, HS_INVALID, "the write-ahead log directory must be an "
                              "absolute local path, not %s", dir);
        *out = hs_strdup(dir);
    } else if (!hs_io_is_object_uri(location)) {
        *own = true;
        char d[4096];
        if ((size_t)snprintf(d, sizeof d, "%s/wal", location) >= sizeof d)
            return hs_err_set(err, HS_INVALID, "%s: path too long", location);
        *out = hs_strdup(d);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        char base[2048];
        if (xdg && xdg[0] == '/')
            snprintf(base, sizeof base, "%s/hyperstream/wal", xdg);
        else if (home && home[0] == '/')
            snprintf(base, sizeof base, "%s/.cache/hyperstream/wal", home);
        else
            return hs_err_set(err, HS_INVALID, "%s: a table on an object store keeps its "
                              "write-ahead log on local disk, and neither XDG_CACHE_HOME nor "
                              "HOME names a directory for it: set the stream option wal_dir or "
                              "the table property hyperstream.wal.dir", location);
        char name[81];
        size_t k = 0;
        for (const char *p = location; *p && k < sizeof name - 1; p++) {
            unsigned char c = (unsigned char)*p;
            name[k++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '.' ? (char)c : '_';
        }
        name[k] = 0;
        char d[4096];
        snprintf(d, sizeof d, "%s/%s-%016llx", base, name,
                 (unsigned long long)hs_xxh64(location, strlen(location), 0));
        *out = hs_strdup(d);
    }
    return *out ? HS_OK : hs_err_nomem(err, 256);
}

/* The id of a log outside <table>/wal: <dir>/wal-id (16 hex digits, made
 * once with an exclusive create; a racing opener reads the winner's). */
static hs_status wal_id_of(const char *dir, char out[24], hs_error *err)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/wal-id", dir) >= sizeof path)
        return hs_err_set(err, HS_INVALID, "%s: path too long", dir);
    hs_status st = cat_io_mkdirs(dir, err);
    hs_buf b = {0};
    for (int attempt = 0; st == HS_OK && attempt < 2; attempt++) {
        st = cat_io_read_all(path, &b, err);
        if (st == HS_NOT_FOUND) {
            hs_err_clear(err);
            char uuid[37], id[17];
            cat_uuid4(uuid);
            size_t k = 0;
            for (const char *p = uuid; *p && k < 16; p++)
                if (*p != '-')
                    id[k++] = *p;
            id[k] = 0;
            st = cat_io_write_all(path, true, id, k, err);
            if (st == HS_CONFLICT) {   /* another opener made it: read that */
                hs_err_clear(err);
                st = HS_OK;
            }
            continue;
        }
        break;
    }
    if (st == HS_OK) {
        size_t n = b.len;
        bool ok = n >= 1 && n <= 16;
        for (size_t i = 0; ok && i < n; i++)
            ok = (b.data[i] >= '0' && b.data[i] <= '9') || (b.data[i] >= 'a' && b.data[i] <= 'f');
        if (!ok)
            st = HS_CORRUPT_AT(err, "%s: not a write-ahead log id (1 to 16 hex digits)", path);
        else {
            memcpy(out, b.data, n);
            out[n] = 0;
        }
    }
    hs_buf_free(&b);
    return st;
}

/* Set while this thread opens table handles that must not recover a log
 * on open (tbl_wal_recover_on_open): the stream's own, and the recovery's. */
static _Thread_local bool recovering_on_open;

hs_status hs_stream_open(hs_table *t, const hs_stream_options *opt, hs_stream **out,
                         hs_error *err)
{
    *out = NULL;
    /* wal_dir was appended after 0.1: a struct_size of 0 means the layout
     * before it (base/opts.h) */
    hs_stream_options opt_in_;
    if (opt) {
        HS_TRY(hs_opts_copy(&opt_in_, sizeof opt_in_, offsetof(hs_stream_options, wal_dir), opt,
                            "hs_stream_options", err));
        opt = &opt_in_;
    }
    HS_TRY(tbl_check_writable(t, err));
    if (t->tail) {
        pthread_mutex_lock(&t->tail->mu);
        bool closed = t->tail->closed;
        pthread_mutex_unlock(&t->tail->mu);
        if (!closed)
            return hs_err_set(err, HS_BUSY, "%s: an append stream is already open on this "
                              "table handle", t->ident);
        /* the tail of a closed stream: make the handle current, then let go */
        HS_TRY(hs_table_refresh(t, err));
        tbl_tail_detach(t);
    }
    hs_stream *s = hs_calloc(1, sizeof *s);
    if (!s)
        return hs_err_nomem(err, sizeof *s);
    pthread_mutex_init(&s->wal_mu, NULL);
    pthread_mutex_init(&s->flush_mu, NULL);
    s->tail = tail_new();
    s->ident = hs_strdup(t->ident);
    hs_status st = s->tail && s->ident ? HS_OK : hs_err_nomem(err, 64);
    if (st == HS_OK) {   /* the stream recovers its log itself (wal_open below) */
        bool was = recovering_on_open;
        recovering_on_open = true;
        st = hs_table_open(t->catalog, t->ident, &s->wt, err);
        recovering_on_open = was;
    }
    if (st == HS_OK)
        s->wt->no_tail = true;   /* flushes and maintenance read committed rows only */
    if (st == HS_OK)
        st = ice_metadata_copy(&s->wt->meta, &s->meta, err);
    bool own_wal = false;
    if (st == HS_OK) {
        s->schema = ice_metadata_current_schema(&s->meta);
        const char *loc = tbl_local(s->meta.location);
        s->object_store = hs_io_is_object_uri(loc);
        if (!s->schema)
            st = hs_err_set(err, HS_CORRUPT, "%s: no current schema", s->ident);
        else if (loc[0] != '/' && !s->object_store)
            st = hs_err_set(err, HS_UNSUPPORTED, "%s: append streams need a local table "
                            "directory or an s3:// location, the location is %s", s->ident,
                            s->meta.location);
        else if (!(s->location = hs_strdup(loc)))
            st = hs_err_nomem(err, 64);
        if (st == HS_OK)
            st = wal_dir_for(&s->meta, s->location, opt ? opt->wal_dir : NULL, &s->wal_dir,
                             &own_wal, err);
        if (st == HS_OK && !own_wal)
            st = wal_id_of(s->wal_dir, s->tail->walid, err);
    }
    if (st == HS_OK)
        st = read_policy(s, opt, err);
    if (st == HS_OK) {
        const ice_table_metadata *m = &s->meta;
        const hs_stream_options *o = opt;
        s->fsync_interval_ms = prop_i64(m, "hyperstream.wal.fsync-interval-ms",
                                        o ? o->fsync_interval_ms : 0, 5);
        s->flush_rows = prop_i64(m, "hyperstream.wal.flush-rows", o ? o->flush_rows : 0, 100000);
        s->flush_bytes = prop_i64(m, "hyperstream.wal.flush-bytes", o ? o->flush_bytes : 0,
                                  (int64_t)64 << 20);
        s->flush_interval_ms = prop_i64(m, "hyperstream.wal.flush-interval-ms",
                                        o ? o->flush_interval_ms : 0, 5000);
        s->memory_bytes = prop_i64(m, "hyperstream.wal.memory-bytes", o ? o->memory_bytes : 0,
                                   (int64_t)256 << 20);
        s->busy_timeout_ms = prop_i64(m, "hyperstream.wal.busy-timeout-ms",
                                      o ? o->busy_timeout_ms : 0, 10000);
        s->refresh_ms = prop_i64(m, "hyperstream.wal.refresh-ms", o ? o->refresh_ms : 0, 1000);
        if (s->refresh_ms == 0)
            s->refresh_ms = -1;   /* property "0": at once */
        if (s->fsync_interval_ms < 1)
            s->fsync_interval_ms = 1;
        if (s->flush_rows < 1)
            s->flush_rows = 1;
        if (s->flush_bytes < 1)
            s->flush_bytes = 1;
        if (s->flush_interval_ms < 1)
            s->flush_interval_ms = 1;
        if (s->memory_bytes < 1)
            s->memory_bytes = 1;
        if (s->busy_timeout_ms < 0)
            s->busy_timeout_ms = 0;
        s->compact_min_files = prop_i64(m, "hyperstream.wal.compact-min-files", 0, 0);
        s->expire_age_ms = prop_i64(m, "hyperstream.wal.expire-age-ms", 0, 0);
        s->compact_fraction = 0.1;
        const char *fr = ice_kv_get(&m->properties, "hyperstream.wal.compact-max-rewrite-fraction");
        if (fr && *fr) {
            char *end = NULL;
            double x = hs_strtod(fr, &end);
            if (end == fr || *end || !(x >= 0 && x <= 1))
                st = hs_err_set(err, HS_INVALID, "stream: table property "
                                "hyperstream.wal.compact-max-rewrite-fraction \"%s\" is not a "
                                "number in [0, 1]", fr);
            else
                s->compact_fraction = x;
        }
        const char *cf = ice_kv_get(&m->properties, "hyperstream.commit.fsync");
        s->commit_fsync = cf && strcmp(cf, "true") == 0;
        uint64_t committed = tbl_wal_committed_seq(m, s->tail->walid);
        if (st != HS_OK) {
            /* the property's error above */
        } else {
            wal_options wo = {.table_uuid = m->table_uuid,
                              .segment_bytes = prop_i64(m, "hyperstream.wal.segment-bytes",
                                                        o ? o->segment_bytes : 0, 64 << 20),
                              .sync = s->policy != HS_WAL_FSYNC_NONE};
            st = wal_open(s->wal_dir, &wo, committed, replay_rec, s, &s->w, err);
        }
        if (st == HS_OK) {
            tbl_tail *tl = s->tail;
            uint64_t last = wal_last_seq(s->w);
            tl->written_seq = tl->synced_seq = tl->visible_seq = last;
            tl->committed_seq = committed;
            tl->last_sync_ms = tl->last_refresh_ms = now_ms();
        }
    }
    if (st == HS_OK) {
        if (pthread_create(&s->bg, NULL, sync_main, s) != 0)
            st = hs_err_set(err, HS_IO, "stream: cannot start the background thread");
        else if (pthread_create(&s->fl, NULL, flush_main, s) != 0) {
            pthread_mutex_lock(&s->tail->mu);
            s->tail->stop = true;
            pthread_cond_broadcast(&s->tail->cv_bg);
            pthread_mutex_unlock(&s->tail->mu);
            pthread_join(s->bg, NULL);
            st = hs_err_set(err, HS_IO, "stream: cannot start the background thread");
        } else
            s->bg_started = true;
    }
    if (st != HS_OK) {
        stream_free(s);
        return st;
    }
    atomic_fetch_add(&s->tail->refs, 1);
    t->tail = s->tail;
    s->tail->busy_timeout_ms = s->busy_timeout_ms;
    reg_add(s->location, s->tail);
    *out = s;
    return HS_OK;
}

static int64_t batch_bytes(const hs_column *c)
{
    int64_t b = (int64_t)(c->validity.len + c->offsets.len + c->values.len) + 64;
    for (int i = 0; i < c->n_children; i++)
        b += batch_bytes(c->children[i]);
    return b;
}

/* All batches of `in`, conformed to the stream's schema, as one batch. */
static hs_status collect_input(hs_stream *s, struct ArrowArrayStream *in, hs_batch **out,
                               hs_error *err)
{
    *out = NULL;
    hs_batch_source src = {0};
    HS_TRY(hs_arrow_import_stream(in, &src, err));
    hs_batch *all = NULL;
    hs_status st = hs_batch_create(&s->schema->root, 0, &all, err);
    while (st == HS_OK) {
        hs_batch *b = NULL, *cb = NULL;
        st = src.next(src.ctx, &b, err);
        if (st != HS_OK || !b)
            break;
        st = tbl_conform_batch(b, &s->schema->root, true, &cb, err);
        if (st == HS_OK)
            st = tbl_vector_check_batch(&s->meta, cb, all->n_rows, err);
        for (int i = 0; st == HS_OK && i < all->n_cols; i++)
            st = hs_col_append_column(all->cols[i], cb->cols[i], err);
        if (st == HS_OK)
            all->n_rows += cb->n_rows;
        hs_batch_free(cb);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    for (int i = 0; st == HS_OK && i < all->n_cols; i++)
        st = hs_col_validate(all->cols[i], &all->schema.children[i], err);
    if (st != HS_OK) {
        hs_err_prefix(err, "stream write");
        hs_batch_free(all);
        return st;
    }
    *out = all;
    return HS_OK;
}

/* Waits for room in the memory budget and reserves `bytes` (mu held). */
static hs_status reserve(hs_stream *s, int64_t bytes, hs_error *err)
{
    tbl_tail *tl = s->tail;
    struct timespec ts;
    deadline_ts(&ts, s->busy_timeout_ms);
    while (!tl->failed && tl->bytes > 0 && tl->bytes + bytes > s->memory_bytes) {
        tl->flush_wanted = true;
        pthread_cond_broadcast(&tl->cv_bg);
        if (pthread_cond_timedwait(&tl->cv_space, &tl->mu, &ts) == ETIMEDOUT &&
            tl->bytes > 0 && tl->bytes + bytes > s->memory_bytes) {
            tl->stats.busy_rejections++;
            return hs_err_set(err, HS_BUSY, "%s: append stream busy: the unflushed tail holds "
                              "%lld bytes, the budget (hyperstream.wal.memory-bytes) is %lld, "
                              "and no flush made room within %lld ms%s%s", s->ident,
                              (long long)tl->bytes, (long long)s->memory_bytes,
                              (long long)s->busy_timeout_ms,
                              tl->flush_err.msg[0] ? "; last flush error: " : "",
                              tl->flush_err.msg);
        }
    }
    if (tl->failed) {
        if (err)
            *err = tl->fail_err;
        return tl->fail_err.code ? tl->fail_err.code : HS_IO;
    }
    tl->bytes += bytes;
    return HS_OK;
}

hs_status hs_stream_write(hs_stream *s, struct ArrowArrayStream *in, int64_t *seq_out,
                          hs_error *err)
{
    if (seq_out)
        *seq_out = 0;
    hs_batch *b = NULL;
    HS_TRY(collect_input(s, in, &b, err));
    if (b->n_rows == 0) {
        hs_batch_free(b);
        return HS_OK;
    }
    hs_buf payload = {0};
    hs_status st = wal_batch_encode(b, s->schema->schema_id, &payload, err);
    tail_rec *r = st == HS_OK ? hs_calloc(1, sizeof *r) : NULL;
    if (st == HS_OK && !r)
        st = hs_err_nomem(err, sizeof *r);
    if (st != HS_OK) {
        hs_buf_free(&payload);
        hs_batch_free(b);
        return st;
    }
    int64_t bytes = 0;
    for (int i = 0; i < b->n_cols; i++)
        bytes += batch_bytes(b->cols[i]);
    atomic_init(&r->refs, 1);
    r->b = b;
    r->schema_id = s->schema->schema_id;
    r->bytes = bytes;
    tbl_tail *tl = s->tail;
    pthread_mutex_lock(&tl->mu);
    st = reserve(s, bytes, err);
    pthread_mutex_unlock(&tl->mu);
    if (st != HS_OK) {
        hs_buf_free(&payload);
        rec_unref(r);
        return st;
    }
    /* append, in seq order into the tail */
    uint64_t seq = 0;
    pthread_mutex_lock(&s->wal_mu);
    st = wal_append(s->w, payload.data, payload.len, &seq, err);
    pthread_mutex_lock(&tl->mu);
    if (st == HS_OK) {
        r->seq = seq;
        r->born_ms = now_ms();
        if (HS_VEC_PUSH(&tl->recs, tail_rec *, r) != HS_OK) {
            /* the record is in the log but cannot be tracked: stop here */
            tl->failed = true;
            st = hs_err_nomem(err, 64);
            tl->fail_err = err ? *err : tl->fail_err;
            tl->bytes -= bytes;
            rec_unref(r);
        } else {
            tl->rows += b->n_rows;
            tl->written_seq = seq;
            tl->stats.rows_written += b->n_rows;
        }
    } else {
        tl->bytes -= bytes;
        rec_unref(r);
    }
    if (st == HS_OK && s->policy == HS_WAL_FSYNC_NONE)
        tl->synced_seq = seq;
    pthread_mutex_unlock(&tl->mu);
    if (st == HS_OK && s->policy == HS_WAL_FSYNC_BATCH) {
        hs_status ss = wal_sync(s->w, err);
        pthread_mutex_lock(&tl->mu);
        if (ss == HS_OK) {
            if (seq > tl->synced_seq)
                tl->synced_seq = seq;
        } else if (!tl->failed) {
            tl->failed = true;
            tl->fail_err = err ? *err : tl->fail_err;
            tl->fail_err.code = ss;
        }
        st = ss;
        pthread_mutex_unlock(&tl->mu);
    }
    pthread_mutex_unlock(&s->wal_mu);
    hs_buf_free(&payload);
    pthread_mutex_lock(&tl->mu);
    if (st == HS_OK && s->policy == HS_WAL_FSYNC_INTERVAL) {
        pthread_cond_broadcast(&tl->cv_bg);
        while (tl->synced_seq < seq && !tl->failed)
            pthread_cond_wait(&tl->cv_durable, &tl->mu);
        if (tl->synced_seq < seq) {
            if (err)
                *err = tl->fail_err;
            st = tl->fail_err.code ? tl->fail_err.code : HS_IO;
        }
    }
    if (st != HS_OK && seq && tl->synced_seq < seq) {
        /* written but not acknowledged: not visible, not flushed */
        size_t n = HS_VEC_LEN(&tl->recs, tail_rec *), k = 0;
        tail_rec **a = (tail_rec **)tl->recs.data;
        for (size_t i = 0; i < n; i++) {
            if (a[i]->seq > tl->synced_seq) {
                tl->bytes -= a[i]->bytes;
                tl->rows -= a[i]->b->n_rows;
                rec_unref(a[i]);
            } else {
                a[k++] = a[i];
            }
        }
        tl->recs.len = k * sizeof(tail_rec *);
    }
    if (st == HS_OK) {
        if (s->refresh_ms < 0 && tl->visible_seq < tl->synced_seq)
            tl->visible_seq = tl->synced_seq;
        if (tl->rows >= s->flush_rows || tl->bytes >= s->flush_bytes)
            pthread_cond_broadcast(&tl->cv_bg);
    }
    pthread_mutex_unlock(&tl->mu);
    if (st == HS_OK && seq_out)
        *seq_out = (int64_t)seq;
    return st;
}

hs_status hs_stream_flush(hs_stream *s, hs_error *err)
{
    pthread_mutex_lock(&s->flush_mu);
    hs_status st = do_flush(s, err);
    pthread_mutex_unlock(&s->flush_mu);
    return st;
}

hs_status hs_stream_refresh(hs_stream *s, hs_error *err)
{
    (void)err;
    tbl_tail *tl = s->tail;
    pthread_mutex_lock(&tl->mu);
    tl->visible_seq = tl->synced_seq;
    tl->last_refresh_ms = now_ms();
    pthread_mutex_unlock(&tl->mu);
    return HS_OK;
}

void hs_stream_get_stats(hs_stream *s, hs_stream_stats *out)
{
    tbl_tail *tl = s->tail;
    pthread_mutex_lock(&s->wal_mu);
    int64_t wb = wal_bytes(s->w), ws = wal_segments(s->w);
    pthread_mutex_unlock(&s->wal_mu);
    pthread_mutex_lock(&tl->mu);
    hs_stream_stats x = tl->stats;
    x.acked_seq = (int64_t)tl->synced_seq;
    x.committed_seq = (int64_t)tl->committed_seq;
    x.visible_seq = (int64_t)tl->visible_seq;
    x.tail_rows = tl->rows;
    x.tail_bytes = tl->bytes;
    pthread_mutex_unlock(&tl->mu);
    x.wal_bytes = wb;
    x.wal_segments = ws;
    HS_OUT(hs_stream_stats, out, x, sizeof x, NULL);
}

hs_status hs_stream_close(hs_stream *s, hs_error *err)
{
    if (!s)
        return HS_OK;
    hs_status st = HS_OK;
    if (s->bg_started) {
        tbl_tail *tl = s->tail;
        pthread_mutex_lock(&tl->mu);
        tl->stop = true;
        pthread_cond_broadcast(&tl->cv_bg);
        pthread_mutex_unlock(&tl->mu);
        pthread_join(s->bg, NULL);
        pthread_join(s->fl, NULL);
        s->bg_started = false;
        /* interval policy: make what was written durable (and acked) first */
        pthread_mutex_lock(&s->wal_mu);
        pthread_mutex_lock(&tl->mu);
        uint64_t w = tl->written_seq;
        bool failed = tl->failed;
        pthread_mutex_unlock(&tl->mu);
        if (!failed && s->policy == HS_WAL_FSYNC_INTERVAL && wal_sync(s->w, NULL) == HS_OK) {
            pthread_mutex_lock(&tl->mu);
            if (w > tl->synced_seq)
                tl->synced_seq = w;
            pthread_cond_broadcast(&tl->cv_durable);
            pthread_mutex_unlock(&tl->mu);
        }
        pthread_mutex_unlock(&s->wal_mu);
        st = hs_stream_flush(s, err);
    }
    stream_free(s);
    return st;
}

void hs_stream_abort(hs_stream *s) { stream_free(s); }

/* ---- recovery when a table is opened (hs_table_open) ---- */

static bool wal_has_segments(const char *dir)
{
    char **names = NULL;
    size_t n = 0;
    hs_error e;
    hs_err_clear(&e);
    if (cat_io_list_dir(dir, &names, &n, &e) != HS_OK)
        return false;
    bool any = false;
    for (size_t i = 0; i < n && !any; i++) {
        size_t len = strlen(names[i]);
        any = len > 4 && strcmp(names[i] + len - 4, ".wal") == 0;
    }
    cat_strv_free(names, n);
    return any;
}

void tbl_wal_recover_on_open(hs_table *t)
{
    if (recovering_on_open || !t->catalog)
        return;
    const char *loc = tbl_local(t->meta.location);
    if (!loc || (loc[0] != '/' && !hs_io_is_object_uri(loc)))
        return;
    const char *v = ice_kv_get(&t->meta.properties, "hyperstream.wal.recover-on-open");
    if (v && strcasecmp(v, "false") == 0)
        return;
    hs_error e;
    hs_err_clear(&e);
    char *dir = NULL;
    bool own = false;
    bool any = tbl_check_writable(t, &e) == HS_OK &&
               wal_dir_for(&t->meta, loc, NULL, &dir, &own, &e) == HS_OK &&
               wal_has_segments(dir);
    hs_free(dir);
    if (!any)
        return;
    recovering_on_open = true;   /* the handles opened below do not recurse */
    hs_table *r = NULL;
    hs_stream *s = NULL;
    if (hs_table_open(t->catalog, t->ident, &r, &e) == HS_OK &&
        hs_stream_open(r, NULL, &s, &e) == HS_OK)
        (void)hs_stream_close(s, &e);   /* on failure the rows stay in the log */
    hs_table_close(r);
    recovering_on_open = false;
    hs_err_clear(&e);
    (void)hs_table_refresh(t, &e);
}

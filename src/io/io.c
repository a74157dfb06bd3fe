/*
 * io/io.c - the object-store interface and its three backends.
 *
 *   backend   handle            read_at                      writer
 *   -------   ---------------   --------------------------   -----------------------------
 *   local     local_file{fd}    pread loop (EINTR, short     "<path>.tmp-<16 hex>" created
 *                               reads), EOF -> HS_CORRUPT    O_EXCL; 256 KiB write buffer;
 *                                                            close = flush, fsync, rename
 *                                                            (or link+unlink: exclusive),
 *                                                            fsync(dir); both fsyncs are
 *                                                            skipped with HS_WFILE_NO_SYNC
 *   memory    mem_file{data}    memcpy                       appends to a caller's hs_buf
 *   fault     fault_file{inner} k-th call (shared counter)   -
 *                               fails with HS_IO
 *
 * The generic entry points (hs_file_read_at, hs_wfile_write, ...) check
 * bounds and keep statistics once, so backends see only in-range requests:
 * a read past f->size is HS_CORRUPT ("x.parquet: read of 8 bytes at offset
 * 4096 is past the end of the file (4000 bytes)"), because readers compute
 * offsets from bytes inside the file.
 *
 * Exclusive create: the data is written under the temporary name, then
 * link(tmp, path) publishes it only if path does not exist (EEXIST ->
 * HS_CONFLICT, the loser's temporary file is removed), then unlink(tmp).
 * This is how commits of v<N>.metadata.json detect a lost race on local disk.
 *
 * Sync (without HS_WFILE_NO_SYNC): a failed fsync of the file or of its
 * directory fails the close with HS_IO; after a failed directory fsync an
 * exclusive create unlinks the file it just published, so the error means
 * "not published".  hs_io_set_sync_fault injects such failures in tests.
 *
 * Mappings (hs_file_map, local files only) are registered with the SIGBUS
 * guard of io/mapguard.c, so a file truncated under a reader never kills
 * the process; a mapping that cannot be registered is not made.
 *
 * Ownership: every handle owns its name; hs_file_close / hs_wfile_close /
 * hs_wfile_abort free the handle (close frees it on failure too).  hs_mem_open
 * with own=true and hs_fault_wrap take ownership of their input even when
 * they fail.
 */
#define _GNU_SOURCE 1   /* syncfs */
#include "io/io.h"
#include "io/s3.h"
#include "base/config.h"
#include "base/mem.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- generic ------------------------------------------------------------ */

hs_status hs_file_read_at(hs_file *f, uint64_t off, size_t len, void *dst, hs_error *err)
{
    if (len == 0)
        return HS_OK;
    if (off > f->size || len > f->size - off)
        return HS_CORRUPT_AT(err, "%s: read of %zu bytes at offset %" PRIu64
                             " is past the end of the file (%" PRIu64 " bytes)",
                             f->name, len, off, f->size);
    HS_TRY(f->vt->read_at(f, off, len, dst, err));
    /* a file's readers may run on several threads (a scan's columns) */
    __atomic_fetch_add(&f->n_reads, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&f->n_bytes_read, (uint64_t)len, __ATOMIC_RELAXED);
    return HS_OK;
}

hs_status hs_file_read_buf(hs_file *f, uint64_t off, size_t len, hs_buf *buf, hs_error *err)
{
    hs_buf_reset(buf);
    if (hs_buf_reserve(buf, len) != HS_OK)
        return hs_err_nomem(err, len);
    HS_TRY(hs_file_read_at(f, off, len, buf->data, err));
    buf->len = len;
    return HS_OK;
}

static int mmap_allowed(void)
{
    return hs_cfg_get(HS_CFG_MMAP) != 0;
}

hs_status hs_file_map(hs_file *f, const uint8_t **addr, hs_error *err)
{
    *addr = NULL;
    if (!f->vt->map || !mmap_allowed())
        return hs_err_set(err, HS_UNSUPPORTED, "%s: no mapping", f->name ? f->name : "file");
    return f->vt->map(f, addr, err);
}

void hs_file_unmap(const uint8_t *addr, uint64_t size)
{
    if (addr && size) {
        hs_map_unregister(addr);
        munmap((void *)(uintptr_t)addr, (size_t)size);
    }
}

bool hs_file_id_equal(const hs_file_id *a, uint64_t a_size, const hs_file_id *b,
                      uint64_t b_size)
{
    if (a->kind == HS_FILE_ID_NONE || a->kind != b->kind || a_size != b_size)
        return false;
    switch (a->kind) {
    case HS_FILE_ID_LOCAL:
        return a->dev == b->dev && a->ino == b->ino && a->mtime_ns == b->mtime_ns &&
               a->ctime_ns == b->ctime_ns;
    case HS_FILE_ID_MEMORY:
        return a->seq == b->seq;
    default:
        return a->version[0] && strcmp(a->version, b->version) == 0;
    }
}

hs_status hs_file_check(hs_file *f, hs_error *err)
{
    if (!f->vt->restat)
        return HS_OK;
    hs_file_id now;
    uint64_t size = 0;
    HS_TRY(f->vt->restat(f, &now, &size, err));
    if (!hs_file_id_equal(&f->id, f->size, &now, size))
        return hs_err_set(err, HS_IO, "%s: file changed since it was opened (size %" PRIu64
                          " -> %" PRIu64 ")", f->name, f->size, size);
    return HS_OK;
}

void hs_file_will_need(hs_file *f, const hs_io_range *r, size_t n)
{
    if (f && n > 0 && f->vt->will_need)
        f->vt->will_need(f, r, n);
}

void hs_file_close(hs_file *f)
{
    if (f)
        f->vt->close(f);
}

hs_status hs_wfile_write(hs_wfile *f, const void *p, size_t n, hs_error *err)
{
    if (n == 0)
        return HS_OK;
    HS_TRY(f->vt->write(f, p, n, err));
    f->offset += n;
    return HS_OK;
}

hs_status hs_wfile_close(hs_wfile *f, hs_error *err)
{
    if (!f)
        return HS_OK;
    return f->vt->close(f, err);
}

void hs_wfile_abort(hs_wfile *f)
{
    if (f)
        f->vt->abort(f);
}

/* ---- local files: reading ---------------------------------------------- */

typedef struct local_file {
    hs_file base;
    int fd;
} local_file;

static hs_status local_read_at(hs_file *f, uint64_t off, size_t len, void *dst, hs_error *err)
{
    local_file *lf = (local_file *)f;
    uint8_t *p = dst;
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(lf->fd, p + done, len - done, (off_t)(off + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return hs_err_set(err, HS_IO, "%s: read of %zu bytes at offset %" PRIu64 " failed: %s",
                              f->name, len, off, strerror(errno));
        }
        if (n == 0)
            return HS_CORRUPT_AT(err, "%s: file shrank: read of %zu bytes at offset %" PRIu64
                                 " hit the end after %zu bytes", f->name, len, off, done);
        done += (size_t)n;
    }
    return HS_OK;
}

static void local_close(hs_file *f)
{
    local_file *lf = (local_file *)f;
    close(lf->fd);
    hs_free(f->name);
    hs_free(lf);
}

static hs_status local_map(hs_file *f, const uint8_t **addr, hs_error *err)
{
    local_file *lf = (local_file *)f;
    if (f->size == 0 || f->size > (uint64_t)SIZE_MAX)
        return hs_err_set(err, HS_UNSUPPORTED, "%s: nothing to map", f->name);
    void *p = mmap(NULL, (size_t)f->size, PROT_READ, MAP_SHARED, lf->fd, 0);
    if (p == MAP_FAILED)
        return hs_err_set(err, HS_UNSUPPORTED, "%s: mmap failed: %s", f->name, strerror(errno));
    if (!hs_map_register(p, f->size)) {   /* unguarded, a truncation could kill the host */
        munmap(p, (size_t)f->size);
        return hs_err_set(err, HS_UNSUPPORTED, "%s: no SIGBUS guard for a mapping", f->name);
    }
    *addr = p;
    return HS_OK;
}

static void id_from_stat(const struct stat *st, hs_file_id *id)
{
    memset(id, 0, sizeof *id);
    id->kind = HS_FILE_ID_LOCAL;
    id->dev = (uint64_t)st->st_dev;
    id->ino = (uint64_t)st->st_ino;
    id->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    id->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

static hs_status local_restat(hs_file *f, hs_file_id *id, uint64_t *size, hs_error *err)
{
    struct stat st;
    if (fstat(((local_file *)f)->fd, &st) != 0)
        return hs_err_set(err, HS_IO, "%s: cannot stat: %s", f->name, strerror(errno));
    id_from_stat(&st, id);
    *size = (uint64_t)st.st_size;
    /* Unlinked while open (expire_snapshots deleted a file a reader still
     * reads): the unlink changed only the link count, and with it ctime;
     * the bytes behind the descriptor are the same (mtime and size still
     * say so), so this is no change. */
    if (st.st_nlink == 0 && id->dev == f->id.dev && id->ino == f->id.ino)
        id->ctime_ns = f->id.ctime_ns;
    return HS_OK;
}

static const hs_file_vtbl local_vtbl = { local_read_at, local_close, local_map, local_restat };

static hs_status errno_status(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR: return HS_NOT_FOUND;
    case ENOMEM: return HS_NOMEM;
    case EEXIST: return HS_CONFLICT;
    default: return HS_IO;
    }
}

hs_status hs_local_open(const char *path, hs_file **out, hs_error *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return hs_err_set(err, errno_status(e), "%s: cannot open: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return hs_err_set(err, HS_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return hs_err_set(err, HS_INVALID, "%s: is a directory, not a file", path);
    }
    local_file *lf = hs_calloc(1, sizeof *lf);
    char *name = hs_strdup(path);
    if (!lf || !name) {
        hs_free(lf);
        hs_free(name);
        close(fd);
        return hs_err_nomem(err, sizeof *lf);
    }
    lf->base.vt = &local_vtbl;
    lf->base.size = (uint64_t)st.st_size;
    id_from_stat(&st, &lf->base.id);
    lf->base.name = name;
    lf->fd = fd;
    *out = &lf->base;
    return HS_OK;
}

hs_status hs_local_read_all(const char *path, hs_buf *out, hs_error *err)
{
    hs_file *f;
    HS_TRY(hs_local_open(path, &f, err));
    hs_status st = HS_OK;
    if (f->size > SIZE_MAX / 2)
        st = hs_err_set(err, HS_NOMEM, "%s: file of %" PRIu64 " bytes is too large", path, f->size);
    else
        st = hs_file_read_buf(f, 0, (size_t)f->size, out, err);
    hs_file_close(f);
    return st;
}

/* ---- local files: writing ----------------------------------------------- */

#define LOCAL_WBUF_SIZE ((size_t)256 << 10)

typedef struct local_wfile {
    hs_wfile base;
    int fd;
    bool exclusive;
    bool no_sync;       /* skip the fsyncs (atomic rename still) */
    char *tmp_path;     /* owned */
    uint8_t *wbuf;      /* owned, LOCAL_WBUF_SIZE bytes */
    size_t wbuf_len;
} local_wfile;

static hs_status write_all(local_wfile *w, const uint8_t *p, size_t n, hs_error *err)
{
    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            return hs_err_set(err, HS_IO, "%s: write of %zu bytes at offset %" PRIu64 " failed: %s",
                              w->base.name, n, w->base.offset, strerror(e));
        }
        p += k;
        n -= (size_t)k;
    }
    return HS_OK;
}

static hs_status local_flush(local_wfile *w, hs_error *err)
{
    if (w->wbuf_len == 0)
        return HS_OK;
    hs_status st = write_all(w, w->wbuf, w->wbuf_len, err);
    w->wbuf_len = 0;
    return st;
}

static hs_status local_write(hs_wfile *f, const void *p, size_t n, hs_error *err)
{
    local_wfile *w = (local_wfile *)f;
    if (n <= LOCAL_WBUF_SIZE - w->wbuf_len) {
        memcpy(w->wbuf + w->wbuf_len, p, n);
        w->wbuf_len += n;
        return HS_OK;
    }
    HS_TRY(local_flush(w, err));
    if (n >= LOCAL_WBUF_SIZE)
        return write_all(w, p, n, err);
    memcpy(w->wbuf, p, n);
    w->wbuf_len = n;
    return HS_OK;
}

static void local_wfree(local_wfile *w)
{
    hs_free(w->tmp_path);
    hs_free(w->wbuf);
    hs_free(w->base.name);
    hs_free(w);
}

static void local_abort(hs_wfile *f)
{
    local_wfile *w = (local_wfile *)f;
    if (w->fd >= 0)
        close(w->fd);
    unlink(w->tmp_path);
    local_wfree(w);
}

/* fsync fault injection (hs_io_set_sync_fault): the k-th fsync from arming
 * fails with EIO instead of running. */
static _Atomic int64_t g_sync_fault_at, g_sync_count;

void hs_io_set_sync_fault(int64_t fail_at)
{
    g_sync_fault_at = fail_at > 0 ? fail_at : 0;
    g_sync_count = 0;
}

/* hs_io_set_sync_trace: set and cleared by tests while no sync runs. */
static _Atomic(hs_io_sync_trace_fn) g_sync_trace;
static void *_Atomic g_sync_trace_ctx;

void hs_io_set_sync_trace(hs_io_sync_trace_fn fn, void *ctx)
{
    g_sync_trace_ctx = ctx;
    g_sync_trace = fn;
}

static void sync_traced(const char *what, const char *path)
{
    hs_io_sync_trace_fn fn = g_sync_trace;
    if (fn)
        fn(what, path, g_sync_trace_ctx);
}

static int sync_fd(int fd, const char *what, const char *path)
{
    sync_traced(what, path);
    int64_t k = ++g_sync_count;
    if (g_sync_fault_at > 0 && k == g_sync_fault_at) {
        errno = EIO;
        return -1;
    }
    return fsync(fd);
}

int hs_io_fsync_dir_fd(int fd, const char *dir)
{
    return sync_fd(fd, "dir", dir);
}

int hs_io_syncfs(const char *dir)
{
    sync_traced("fs", dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = syncfs(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int hs_io_fsync_fd(int fd, bool data_only)
{
    sync_traced("fd", NULL);
    int64_t k = ++g_sync_count;
    if (g_sync_fault_at > 0 && k == g_sync_fault_at) {
        errno = EIO;
        return -1;
    }
    return data_only ? fdatasync(fd) : fsync(fd);
}

/* fsync the directory holding path, so the rename or link itself is
 * durable.  0, or the errno of what failed (a directory name too long to
 * open is ENAMETOOLONG, never a skipped sync). */
static int fsync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir)
        return ENAMETOOLONG;
    memcpy(dir, !slash ? "." : path, n);
    dir[n] = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int e = sync_fd(fd, "dir", dir) != 0 ? errno : 0;
    close(fd);
    return e;
}

static hs_status local_wclose(hs_wfile *f, hs_error *err)
{
    local_wfile *w = (local_wfile *)f;
    const char *path = f->name;
    hs_status st = local_flush(w, err);
    if (st == HS_OK && !w->no_sync && sync_fd(w->fd, "file", path) != 0)
        st = hs_err_set(err, HS_IO, "%s: fsync failed: %s", w->tmp_path, strerror(errno));
    if (close(w->fd) != 0 && st == HS_OK)
        st = hs_err_set(err, HS_IO, "%s: close failed: %s", w->tmp_path, strerror(errno));
    w->fd = -1;
    if (st == HS_OK) {
        if (w->exclusive) {
            if (link(w->tmp_path, path) != 0) {
                int e = errno;
                if (e == EEXIST)
                    st = hs_err_set(err, HS_CONFLICT, "%s: already exists (another writer "
                                    "created it first)", path);
                else
                    st = hs_err_set(err, errno_status(e), "%s: cannot link from %s: %s", path,
                                    w->tmp_path, strerror(e));
            }
        } else if (rename(w->tmp_path, path) != 0) {
            int e = errno;
            st = hs_err_set(err, errno_status(e) == HS_CONFLICT ? HS_IO : errno_status(e),
                            "%s: cannot rename from %s: %s", path, w->tmp_path, strerror(e));
        }
    }
    /* After a successful rename the temporary name is gone; otherwise it is
     * removed (exclusive success: the link keeps the data alive). */
    if (st != HS_OK || w->exclusive)
        unlink(w->tmp_path);
    if (st == HS_OK && !w->no_sync) {
        /* The new name is not durable: fail.  An exclusive create takes its
         * file away again, so the caller's error means "not published" (the
         * catalog commits v<N+1> this way, under its commit lock); a rename
         * cannot be undone, but its callers publish nothing by it. */
        int e = fsync_parent_dir(path);
        if (e != 0) {
            st = hs_err_set(err, HS_IO, "%s: fsync of the directory failed: %s%s", path,
                            strerror(e), w->exclusive ? " (the file was removed again)" : "");
            if (w->exclusive)
                unlink(path);
        }
    }
    local_wfree(w);
    return st;
}

static const hs_wfile_vtbl local_wvtbl = { local_write, local_wclose, local_abort };

static uint64_t random_u64(void)
{
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    static _Atomic uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 48);
    return r ^ (counter++ * 0x9E3779B97F4A7C15ull);
}

hs_status hs_local_create(const char *path, bool exclusive, hs_wfile **out, hs_error *err)
{
    return hs_local_create_ex(path, exclusive ? HS_WFILE_EXCLUSIVE : 0, out, err);
}

hs_status hs_local_create_ex(const char *path, int flags, hs_wfile **out, hs_error *err)
{
    bool exclusive = (flags & HS_WFILE_EXCLUSIVE) != 0;
    *out = NULL;
    local_wfile *w = hs_calloc(1, sizeof *w);
    size_t tmp_len = strlen(path) + 32;
    if (w) {
        w->fd = -1;
        w->base.name = hs_strdup(path);
        w->tmp_path = hs_malloc(tmp_len);
        w->wbuf = hs_malloc(LOCAL_WBUF_SIZE);
    }
    if (!w || !w->base.name || !w->tmp_path || !w->wbuf) {
        if (w)
            local_wfree(w);
        return hs_err_nomem(err, LOCAL_WBUF_SIZE);
    }
    w->base.vt = &local_wvtbl;
    w->exclusive = exclusive;
    w->no_sync = (flags & HS_WFILE_NO_SYNC) != 0;
    for (int attempt = 0; attempt < 16; attempt++) {
        snprintf(w->tmp_path, tmp_len, "%s.tmp-%016" PRIx64, path, random_u64());
        w->fd = open(w->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (w->fd >= 0 || errno != EEXIST)
            break;
    }
    if (w->fd < 0) {
        int e = errno;
        hs_status st = hs_err_set(err, errno_status(e) == HS_CONFLICT ? HS_IO : errno_status(e),
                                  "%s: cannot create %s: %s", path, w->tmp_path, strerror(e));
        local_wfree(w);
        return st;
    }
    *out = &w->base;
    return HS_OK;
}

/* ---- memory files ------------------------------------------------------- */

typedef struct mem_file {
    hs_file base;
    const uint8_t *data;
    bool own;
} mem_file;

static hs_status mem_read_at(hs_file *f, uint64_t off, size_t len, void *dst, hs_error *err)
{
    memcpy(dst, ((mem_file *)f)->data + off, len);
    return HS_OK;
}

static void mem_close(hs_file *f)
{
    mem_file *m = (mem_file *)f;
    if (m->own)
        hs_free((void *)m->data);
    hs_free(f->name);
    hs_free(m);
}

static const hs_file_vtbl mem_vtbl = { mem_read_at, mem_close, NULL, NULL };

hs_status hs_mem_open(const char *name, const void *data, size_t len, bool own, hs_file **out,
                      hs_error *err)
{
    *out = NULL;
    mem_file *m = hs_calloc(1, sizeof *m);
    char *nm = hs_strdup(name ? name : "<memory>");
    if (!m || !nm) {
        hs_free(m);
        hs_free(nm);
        if (own)
            hs_free((void *)data);
        return hs_err_nomem(err, sizeof *m);
    }
    m->base.vt = &mem_vtbl;
    static uint64_t g_mem_seq;
    m->base.size = len;
    m->base.id.kind = HS_FILE_ID_MEMORY;
    m->base.id.seq = __atomic_add_fetch(&g_mem_seq, 1, __ATOMIC_RELAXED);
    m->base.name = nm;
    m->data = data;
    m->own = own;
    *out = &m->base;
    return HS_OK;
}

typedef struct mem_wfile {
    hs_wfile base;
    hs_buf *target;     /* borrowed */
    size_t start_len;   /* target->len at create: abort truncates back to it */
} mem_wfile;

static hs_status mem_write(hs_wfile *f, const void *p, size_t n, hs_error *err)
{
    mem_wfile *w = (mem_wfile *)f;
    if (hs_buf_append(w->target, p, n) != HS_OK)
        return hs_err_nomem(err, n);
    return HS_OK;
}

static hs_status mem_wclose(hs_wfile *f, hs_error *err)
{
    hs_free(f->name);
    hs_free(f);
    return HS_OK;
}

static void mem_wabort(hs_wfile *f)
{
    mem_wfile *w = (mem_wfile *)f;
    w->target->len = w->start_len;
    hs_free(f->name);
    hs_free(f);
}

static const hs_wfile_vtbl mem_wvtbl = { mem_write, mem_wclose, mem_wabort };

hs_status hs_mem_create(hs_buf *target, hs_wfile **out, hs_error *err)
{
    *out = NULL;
    mem_wfile *w = hs_calloc(1, sizeof *w);
    char *nm = hs_strdup("<memory>");
    if (!w || !nm) {
        hs_free(w);
        hs_free(nm);
        return hs_err_nomem(err, sizeof *w);
    }
    w->base.vt = &mem_wvtbl;
    w->base.name = nm;
    w->target = target;
    w->start_len = target->len;
    *out = &w->base;
    return HS_OK;
}

/* ---- fault injection ---------------------------------------------------- */

typedef struct fault_file {
    hs_file base;
    hs_file *inner;     /* owned */
    int64_t *counter;   /* borrowed, or &own_counter */
    int64_t own_counter;
    int64_t fail_at;
    int errnum;         /* 0, or the errno the failure models (message text) */
} fault_file;

/* Process-wide read faults (hs_io_set_read_fault): files opened by
 * hs_io_open while armed are wrapped and share this counter. */
static int64_t g_read_fault_count;
static _Atomic int64_t g_read_fault_at;
static _Atomic int g_read_fault_errno;

void hs_io_set_read_fault(int64_t fail_at, int errnum)
{
    __atomic_store_n(&g_read_fault_count, 0, __ATOMIC_RELAXED);
    g_read_fault_errno = errnum;
    g_read_fault_at = fail_at > 0 ? fail_at : 0;
}

int64_t hs_io_read_fault_count(void) { return __atomic_load_n(&g_read_fault_count, __ATOMIC_RELAXED); }

static hs_status fault_read_at(hs_file *f, uint64_t off, size_t len, void *dst, hs_error *err)
{
    fault_file *ff = (fault_file *)f;
    int64_t n = __atomic_add_fetch(ff->counter, 1, __ATOMIC_RELAXED);
    /* wrapped by hs_io_open: the global arming decides (disarming stops it) */
    int64_t at = ff->counter == &g_read_fault_count ? g_read_fault_at : ff->fail_at;
    if (at > 0 && n == at)
        return hs_err_set(err, HS_IO, "%s: injected I/O fault on read call %" PRId64
                          " (%zu bytes at offset %" PRIu64 ")%s%s", f->name, n, len, off,
                          ff->errnum ? ": " : "", ff->errnum ? strerror(ff->errnum) : "");
    return hs_file_read_at(ff->inner, off, len, dst, err);
}

static void fault_close(hs_file *f)
{
    fault_file *ff = (fault_file *)f;
    hs_file_close(ff->inner);
    hs_free(f->name);
    hs_free(ff);
}

static hs_status fault_restat(hs_file *f, hs_file_id *id, uint64_t *size, hs_error *err)
{
    hs_file *in = ((fault_file *)f)->inner;
    if (!in->vt->restat) {
        *id = in->id;
        *size = in->size;
        return HS_OK;
    }
    return in->vt->restat(in, id, size, err);
}

static void fault_will_need(hs_file *f, const hs_io_range *r, size_t n)
{
    hs_file_will_need(((fault_file *)f)->inner, r, n);   /* reads still count at read_at */
}

static const hs_file_vtbl fault_vtbl = { fault_read_at, fault_close, NULL, fault_restat,
                                         fault_will_need };

hs_status hs_fault_wrap(hs_file *inner, int64_t *counter, int64_t fail_at, hs_file **out,
                        hs_error *err)
{
    *out = NULL;
    fault_file *ff = hs_calloc(1, sizeof *ff);
    char *nm = hs_strdup(inner->name ? inner->name : "<fault>");
    if (!ff || !nm) {
        hs_free(ff);
        hs_free(nm);
        hs_file_close(inner);
        return hs_err_nomem(err, sizeof *ff);
    }
    ff->base.vt = &fault_vtbl;
    ff->base.size = inner->size;
    ff->base.id = inner->id;
    ff->base.name = nm;
    ff->inner = inner;
    ff->counter = counter ? counter : &ff->own_counter;
    ff->fail_at = fail_at;
    *out = &ff->base;
    return HS_OK;
}

/* ---- URI dispatch ----------------------------------------------------------- */

const char *hs_io_local_path(const char *uri)
{
    if (strncmp(uri, "file://", 7) == 0)
        return uri + 7;   /* file:///x -> /x */
    if (strncmp(uri, "file:/", 6) == 0)
        return uri + 5;   /* file:/x -> /x */
    return uri;
}

bool hs_io_is_object_uri(const char *uri)
{
    return hs_s3_is_uri(uri);
}

hs_status hs_io_vend_properties(const char *location, char ***keys, char ***values,
                                size_t *n, hs_error *err)
{
    *keys = *values = NULL;
    *n = 0;
    if (!location || !hs_s3_is_uri(location))
        return HS_OK;
    return hs_s3_vend_properties(location, keys, values, n, err);
}

hs_status hs_io_set_scope(const char *location, const char *const *keys,
                          const char *const *values, size_t n, hs_error *err)
{
    return hs_io_set_scope_ex(location, keys, values, n, NULL, err);
}

hs_status hs_io_set_scope_ex(const char *location, const char *const *keys,
                             const char *const *values, size_t n, hs_io_refresher *refresher,
                             hs_error *err)
{
    if (!location || !hs_s3_is_uri(location))
        return HS_OK;
    bool any = false;
    for (size_t i = 0; i < n && !any; i++)
        any = keys[i] && (strncmp(keys[i], "s3.", 3) == 0 ||
                          strcmp(keys[i], "client.region") == 0);
    return any ? hs_s3_set_scope_ex(location, keys, values, n, refresher, err) : HS_OK;
}

hs_status hs_io_object_identity(const char *uri, uint64_t *size, char version[72],
                                 hs_error *err)
{
    if (!hs_s3_is_uri(uri))
        return hs_err_set(err, HS_UNSUPPORTED, "%s: not an object store URI", uri);
    hs_file *f;
    HS_TRY(hs_s3_open(uri, &f, err));   /* no request while io/s3.c trusts its HEAD cache */
    *size = f->size;
    memcpy(version, f->id.version, sizeof f->id.version);
    hs_file_close(f);
    return HS_OK;
}

hs_status hs_io_read_whole(const char *uri, void *dst, uint64_t size, hs_error *err)
{
    if (!hs_s3_is_uri(uri))
        return hs_err_set(err, HS_UNSUPPORTED, "%s: not an object store URI", uri);
    return hs_s3_read_whole(uri, dst, size, err);
}

hs_status hs_io_read_head(const char *uri, void *dst, uint64_t len, uint64_t size,
                          hs_error *err)
{
    if (!hs_s3_is_uri(uri))
        return hs_err_set(err, HS_UNSUPPORTED, "%s: not an object store URI", uri);
    return hs_s3_read_head(uri, dst, len, size, err);
}

hs_status hs_io_read_range(const char *uri, void *dst, uint64_t off, uint64_t len,
                           uint64_t size, hs_error *err)
{
    if (hs_s3_is_uri(uri))
        return hs_s3_read_range(uri, dst, off, len, size, err);
    if (len == 0 || off > size || len > size - off)
        return hs_err_set(err, HS_INVALID, "%s: read of %" PRIu64 " bytes at %" PRIu64 " of %"
                          PRIu64 " bytes", uri, len, off, size);
    const char *path = hs_io_local_path(uri);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return hs_err_set(err, errno == ENOENT ? HS_NOT_FOUND : HS_IO, "%s: cannot open: %s",
                          uri, strerror(errno));
    struct stat sb;
    hs_status st = HS_OK;
    if (fstat(fd, &sb) != 0)
        st = hs_err_set(err, HS_IO, "%s: stat: %s", uri, strerror(errno));
    else if ((uint64_t)sb.st_size != size)
        st = hs_err_set(err, HS_CONFLICT, "%s: the file has %" PRIu64 " bytes, not %" PRIu64,
                        uri, (uint64_t)sb.st_size, size);
    for (uint64_t done = 0; st == HS_OK && done < len;) {
        ssize_t n = pread(fd, (uint8_t *)dst + done, (size_t)(len - done), (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            st = hs_err_set(err, HS_IO, "%s: read at %" PRIu64 ": %s", uri, off + done,
                            n < 0 ? strerror(errno) : "unexpected end of file");
        else
            done += (uint64_t)n;
    }
    close(fd);
    return st;
}

bool hs_io_identity_cached(const char *uri)
{
    return hs_s3_is_uri(uri) && hs_s3_identity_cached(uri);
}

/* HS_OK for local paths; HS_UNSUPPORTED for schemes we have no backend for. */
static hs_status check_scheme(const char *uri, hs_error *err)
{
    const char *sep = strstr(uri, "://");
    if (!sep)
        return HS_OK;
    for (const char *p = uri; p < sep; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '+' || *p == '-' || *p == '.'))
            return HS_OK;   /* not a scheme: a local name that contains "://" */
    return hs_err_set(err, HS_UNSUPPORTED, "%s: unsupported URI scheme \"%.*s\" (supported: "
                      "local paths, file://, s3://, s3a://; gs:// and Azure through their "
                      "S3-compatible endpoints, see docs/storage.md)", uri, (int)(sep - uri), uri);
}

hs_status hs_io_open(const char *uri, hs_file **out, hs_error *err)
{
    *out = NULL;
    if (hs_s3_is_uri(uri))
        return hs_s3_open(uri, out, err);
    const char *p = hs_io_local_path(uri);
    HS_TRY(check_scheme(p, err));
    HS_TRY(hs_local_open(p, out, err));
    int64_t at = g_read_fault_at;
    if (at > 0) {
        hs_file *in = *out;
        *out = NULL;
        HS_TRY(hs_fault_wrap(in, &g_read_fault_count, at, out, err));
        ((fault_file *)*out)->errnum = g_read_fault_errno;
    }
    return HS_OK;
}

hs_status hs_io_create(const char *uri, int flags, hs_wfile **out, hs_error *err)
{
    *out = NULL;
    if (hs_s3_is_uri(uri))
        return hs_s3_create(uri, flags, out, err);
    const char *p = hs_io_local_path(uri);
    HS_TRY(check_scheme(p, err));
    return hs_local_create_ex(p, flags, out, err);
}

hs_status hs_io_read_all(const char *uri, hs_buf *out, hs_error *err)
{
    if (hs_s3_is_uri(uri))
        return hs_s3_read_all(uri, out, err);
    hs_file *f;
    HS_TRY(hs_io_open(uri, &f, err));
    hs_status st = HS_OK;
    if (f->size > SIZE_MAX / 2)
        st = hs_err_set(err, HS_NOMEM, "%s: file of %" PRIu64 " bytes is too large", uri, f->size);
    else
        st = hs_file_read_buf(f, 0, (size_t)f->size, out, err);
    hs_file_close(f);
    return st;
}

hs_status hs_io_stat(const char *uri, bool *exists, uint64_t *size, hs_error *err)
{
    *exists = false;
    if (hs_s3_is_uri(uri))
        return hs_s3_stat(uri, exists, size, err);
    const char *p = hs_io_local_path(uri);
    HS_TRY(check_scheme(p, err));
    struct stat st;
    if (stat(p, &st) == 0) {
        *exists = true;
        if (size)
            *size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
        return HS_OK;
    }
    if (errno == ENOENT || errno == ENOTDIR)
        return HS_OK;
    return hs_err_set(err, HS_IO, "%s: cannot stat: %s", p, strerror(errno));
}

hs_status hs_io_stat_mtime(const char *uri, bool *exists, uint64_t *size, int64_t *mtime_ms,
                           hs_error *err)
{
    *exists = false;
    *mtime_ms = -1;
    if (hs_s3_is_uri(uri))
        return hs_s3_stat_mtime(uri, exists, size, mtime_ms, err);
    const char *p = hs_io_local_path(uri);
    HS_TRY(check_scheme(p, err));
    struct stat st;
    if (stat(p, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return HS_OK;   /* a directory: not a file */
        *exists = true;
        if (size)
            *size = (uint64_t)st.st_size;
        *mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
        return HS_OK;
    }
    if (errno == ENOENT || errno == ENOTDIR)
        return HS_OK;
    return hs_err_set(err, HS_IO, "%s: cannot stat: %s", p, strerror(errno));
}

hs_status hs_io_delete(const char *uri, hs_error *err)
{
    if (hs_s3_is_uri(uri))
        return hs_s3_delete(uri, err);
    const char *p = hs_io_local_path(uri);
    HS_TRY(check_scheme(p, err));
    if (unlink(p) != 0 && errno != ENOENT)
        return hs_err_set(err, HS_IO, "%s: cannot remove: %s", p, strerror(errno));
    return HS_OK;
}

hs_status hs_io_list(const char *uri, bool recursive, char ***names, size_t *n, hs_error *err)
{
    *names = NULL;
    *n = 0;
    if (hs_s3_is_uri(uri))
        return hs_s3_list(uri, recursive, names, n, err);
    return hs_err_set(err, HS_UNSUPPORTED, "%s: hs_io_list lists object stores only", uri);
}

hs_status hs_io_list_entries(const char *uri, hs_io_entry **out, size_t *n, hs_error *err)
{
    *out = NULL;
    *n = 0;
    if (hs_s3_is_uri(uri))
        return hs_s3_list_entries(uri, out, n, err);
    return hs_err_set(err, HS_UNSUPPORTED, "%s: hs_io_list_entries lists object stores only",
                      uri);
}

void hs_io_entries_free(hs_io_entry *e, size_t n)
{
    for (size_t i = 0; e && i < n; i++)
        hs_free(e[i].name);
    hs_free(e);
}

void hs_io_prefetch(const char *const *uris, size_t n)
{
    size_t k = 0;
    while (k < n && !hs_s3_is_uri(uris[k]))
        k++;
    if (k < n)
        hs_s3_prefetch(uris + k, n - k);
}

void hs_io_prefetch_async(const char *const *uris, size_t n)
{
    size_t k = 0;
    while (k < n && !hs_s3_is_uri(uris[k]))
        k++;
    if (k < n)
        hs_s3_prefetch_async(uris + k, n - k);
}

bool hs_io_background(void (*fn)(void *arg), void *arg)
{
    return hs_s3_background(fn, arg);
}

bool hs_io_background_stop(void) { return hs_s3_background_stop(); }

void hs_io_background_wait(void)
{
    hs_s3_background_wait();
}

/* An hs_io_read_head on a background thread.  Two references: the
 * starter's (dropped by hs_io_read_head_finish) and the thread's (dropped
 * once it has signalled), so neither frees what the other still uses. */
struct hs_io_pending {
    char *uri;
    uint64_t len, size;
    uint8_t *buf;             /* hs_malloc_aligned(len) */
    hs_status st;
    hs_error err;
    bool done;
    atomic_int refs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static void pending_unref(hs_io_pending *p)
{
    if (atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    hs_free_aligned(p->buf);
    hs_free(p->uri);
    hs_free(p);
}

static void pending_main(void *arg)
{
    hs_io_pending *p = arg;
    hs_error err = {0};
    hs_status st = hs_s3_read_head(p->uri, p->buf, p->len, p->size, &err);
    pthread_mutex_lock(&p->mu);
    p->st = st;
    p->err = err;
    p->done = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pending_unref(p);
}

hs_io_pending *hs_io_read_head_start(const char *uri, uint64_t len, uint64_t size)
{
    if (!hs_s3_is_uri(uri) || len == 0 || len > size || len > (uint64_t)SIZE_MAX / 2)
        return NULL;
    hs_io_pending *p = hs_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->uri = hs_strdup(uri);
    p->buf = hs_malloc_aligned((size_t)len);
    p->len = len;
    p->size = size;
    atomic_init(&p->refs, 2);
    if (!p->uri || !p->buf || pthread_mutex_init(&p->mu, NULL) != 0) {
        hs_free_aligned(p->buf);
        hs_free(p->uri);
        hs_free(p);
        return NULL;
    }
    pthread_cond_init(&p->cv, NULL);
    if (!hs_s3_background(pending_main, p)) {
        atomic_store(&p->refs, 1);
        pending_unref(p);
        return NULL;
    }
    return p;
}

hs_status hs_io_read_head_finish(hs_io_pending *p, uint8_t **out, hs_error *err)
{
    if (out)
        *out = NULL;
    if (!p)
        return hs_err_set(err, HS_INVALID, "hs_io_read_head_finish: no read pending");
    pthread_mutex_lock(&p->mu);
    while (!p->done)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    hs_status st = p->st;
    if (st != HS_OK) {
        if (err)
            *err = p->err;
    } else if (out) {
        *out = p->buf;
        p->buf = NULL;
    }
    pending_unref(p);
    return st;
}

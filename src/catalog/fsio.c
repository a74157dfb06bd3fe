/*
 * catalog/fsio.c - the small local-file helpers the catalogs need, each
 * passing a fault point so crash-consistency tests can break any step.
 *
 *   helper              fault points                 failure leaves
 *   ------------------  ---------------------------  ---------------------------------
 *   cat_io_create(_ex)  1 at open, 1 per write,      nothing under the final name (the
 *                       1 at close                   temporary file is removed)
 *   cat_io_write_all(_ex) as cat_io_create           same
 *   cat_io_read_all     1                            -
 *   cat_io_exists       1                            -
 *   cat_io_unlink       1                            the file (not removed)
 *   cat_io_mkdirs       1                            maybe some of the directories
 *   cat_io_list_dir     1                            -
 *   cat_io_remove_tree  1                            the whole tree
 *   cat_io_lock         1                            - (no lock is held)
 *
 * The fault counter is process-global: cat_set_io_fault(k) arms it so that
 * the k-th fault point from then on fails with HS_IO.  The failure models a
 * crash or an I/O error at that step: the step does not happen, and the
 * caller sees an error.  Tests then reload with the fault disarmed and check
 * the table is at exactly the old or the new state.
 *
 * Writers use io.h's hs_local_create (temporary name + rename, or link for
 * exclusive create), so a failure at any point never leaves a half-written
 * file under its final name.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* nftw */
#endif
#include "catalog/catalog_int.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/mem.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/file.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- fault injection ----------------------------------------------------- */

/* Atomic so that threads passing fault points are not a data race; the
 * arming itself is meant for single-threaded tests. */
static _Atomic int64_t g_fault_at;     /* 0 = disarmed */
static _Atomic int64_t g_fault_count;  /* fault points passed since arming */
static _Atomic int g_fault_errno;      /* 0: plain "injected fault"; else ENOSPC, EIO, ... */
static void (*_Atomic g_hook)(const char *what, void *ctx);
static void *_Atomic g_hook_ctx;

void cat_set_io_hook(void (*fn)(const char *what, void *ctx), void *ctx)
{
    g_hook_ctx = ctx;
    g_hook = fn;
}

void cat_set_io_fault(int64_t fail_at)
{
    g_fault_at = fail_at > 0 ? fail_at : 0;
    g_fault_count = 0;
    g_fault_errno = 0;
}

void cat_set_io_fault_errno(int64_t fail_at, int errnum)
{
    cat_set_io_fault(fail_at);
    g_fault_errno = fail_at > 0 ? errnum : 0;
}

int64_t cat_io_fault_count(void) { return g_fault_count; }

hs_status cat_io_fault_point(const char *what, hs_error *err)
{
    int64_t k = ++g_fault_count;
    int64_t at = g_fault_at;
    void (*hook)(const char *, void *) = g_hook;
    if (hook)
        hook(what, g_hook_ctx);
    if (at > 0 && k == at) {
        int e = g_fault_errno;
        if (e)
            return hs_err_set(err, HS_IO, "%s: injected fault (I/O step %lld): %s", what,
                              (long long)k, strerror(e));
        return hs_err_set(err, HS_IO, "%s: injected fault (I/O step %lld)", what, (long long)k);
    }
    return HS_OK;
}

const char *cat_local_path(const char *uri)
{
    return hs_io_local_path(uri);
}

/* ---- fault-counted writer ------------------------------------------------- */

typedef struct fault_wfile {
    hs_wfile base;
    hs_wfile *inner;   /* owned */
} fault_wfile;

static void fw_free(fault_wfile *w)
{
    hs_free(w->base.name);
    hs_free(w);
}

static hs_status fw_write(hs_wfile *f, const void *p, size_t n, hs_error *err)
{
    fault_wfile *w = (fault_wfile *)f;
    hs_status st = cat_io_fault_point(f->name, err);
    if (st != HS_OK && g_fault_errno == ENOSPC && n > 1) {
        /* a full disk takes part of a write before it refuses the rest: the
         * temporary file is left with a prefix that the caller must discard */
        hs_error e2 = {0};
        if (hs_wfile_write(w->inner, p, n / 2, &e2) != HS_OK)
            hs_err_clear(&e2);   /* the injected error is the one reported */
    }
    HS_TRY(st);
    return hs_wfile_write(w->inner, p, n, err);
}

static hs_status fw_close(hs_wfile *f, hs_error *err)
{
    fault_wfile *w = (fault_wfile *)f;
    hs_status st = cat_io_fault_point(f->name, err);
    if (st != HS_OK)
        hs_wfile_abort(w->inner);
    else
        st = hs_wfile_close(w->inner, err);
    fw_free(w);
    return st;
}

static void fw_abort(hs_wfile *f)
{
    fault_wfile *w = (fault_wfile *)f;
    hs_wfile_abort(w->inner);
    fw_free(w);
}

static const hs_wfile_vtbl fault_wvtbl = { fw_write, fw_close, fw_abort };

/* ---- forced sync under a directory ---------------------------------------- */

/* Directories (with a trailing '/') whose new files are created synced
 * whatever their flags say; a list with a count per entry (two flushes of
 * one table may overlap).  g_sync_n lets the common case skip the lock. */
#define SYNC_DIRS_MAX 64
static pthread_mutex_t g_sync_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_sync_mu, HS_FORK_RANK_LEAF)
static _Atomic int g_sync_n;
static struct { char *dir; int refs; } g_sync_dirs[SYNC_DIRS_MAX];

static char *dir_with_slash(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    char *d = hs_malloc(n + 2);
    if (d) {
        memcpy(d, dir, n);
        d[n] = '/';
        d[n + 1] = 0;
    }
    return d;
}

hs_status cat_io_sync_under_begin(const char *dir, hs_error *err)
{
    char *d = dir_with_slash(dir);
    if (!d)
        return hs_err_nomem(err, strlen(dir) + 2);
    pthread_mutex_lock(&g_sync_mu);
    int free_i = -1;
    for (int i = 0; i < SYNC_DIRS_MAX; i++) {
        if (g_sync_dirs[i].dir && strcmp(g_sync_dirs[i].dir, d) == 0) {
            g_sync_dirs[i].refs++;
            pthread_mutex_unlock(&g_sync_mu);
            hs_free(d);
            return HS_OK;
        }
        if (!g_sync_dirs[i].dir && free_i < 0)
            free_i = i;
    }
    if (free_i < 0) {
        pthread_mutex_unlock(&g_sync_mu);
        hs_free(d);
        return hs_err_set(err, HS_BUSY, "%s: more than %d directories are being synced at once",
                          dir, SYNC_DIRS_MAX);
    }
    g_sync_dirs[free_i].dir = d;
    g_sync_dirs[free_i].refs = 1;
    g_sync_n++;
    pthread_mutex_unlock(&g_sync_mu);
    return HS_OK;
}

void cat_io_sync_under_end(const char *dir)
{
    char *d = dir_with_slash(dir);
    if (!d)
        return;   /* the entry stays: files there keep being synced (safe) */
    pthread_mutex_lock(&g_sync_mu);
    for (int i = 0; i < SYNC_DIRS_MAX; i++)
        if (g_sync_dirs[i].dir && strcmp(g_sync_dirs[i].dir, d) == 0) {
            if (--g_sync_dirs[i].refs == 0) {
                hs_free(g_sync_dirs[i].dir);
                g_sync_dirs[i].dir = NULL;
                g_sync_n--;
            }
            break;
        }
    pthread_mutex_unlock(&g_sync_mu);
    hs_free(d);
}

static bool sync_forced(const char *path)
{
    if (atomic_load(&g_sync_n) == 0)
        return false;
    const char *p = cat_local_path(path);
    bool hit = false;
    pthread_mutex_lock(&g_sync_mu);
    for (int i = 0; !hit && i < SYNC_DIRS_MAX; i++)
        hit = g_sync_dirs[i].dir && strncmp(p, g_sync_dirs[i].dir, strlen(g_sync_dirs[i].dir)) == 0;
    pthread_mutex_unlock(&g_sync_mu);
    return hit;
}

hs_status cat_io_create_ex(const char *path, int flags, hs_wfile **out, hs_error *err)
{
    *out = NULL;
    HS_TRY(cat_io_fault_point(path, err));
    if ((flags & HS_WFILE_NO_SYNC) && sync_forced(path))
        flags &= ~HS_WFILE_NO_SYNC;
    fault_wfile *w = hs_calloc(1, sizeof *w);
    char *name = hs_strdup(path);
    if (!w || !name) {
        hs_free(w);
        hs_free(name);
        return hs_err_nomem(err, sizeof *w);
    }
    hs_status st = hs_io_create(path, flags, &w->inner, err);
    if (st != HS_OK) {
        hs_free(w);
        hs_free(name);
        return st;
    }
    w->base.vt = &fault_wvtbl;
    w->base.name = name;
    *out = &w->base;
    return HS_OK;
}

hs_status cat_io_create(const char *path, bool exclusive, hs_wfile **out, hs_error *err)
{
    return cat_io_create_ex(path, exclusive ? HS_WFILE_EXCLUSIVE : 0, out, err);
}

hs_status cat_io_write_all_ex(const char *path, int flags, const void *p, size_t n,
                              hs_error *err)
{
    hs_wfile *w;
    HS_TRY(cat_io_create_ex(path, flags, &w, err));
    hs_status st = hs_wfile_write(w, p, n, err);
    if (st != HS_OK) {
        hs_wfile_abort(w);
        return st;
    }
    return hs_wfile_close(w, err);
}

hs_status cat_io_write_all(const char *path, bool exclusive, const void *p, size_t n,
                           hs_error *err)
{
    return cat_io_write_all_ex(path, exclusive ? HS_WFILE_EXCLUSIVE : 0, p, n, err);
}

/* ---- reading and directories ---------------------------------------------- */

hs_status cat_io_read_all(const char *path, hs_buf *out, hs_error *err)
{
    HS_TRY(cat_io_fault_point(path, err));
    HS_TRY(hs_io_read_all(path, out, err));
    /* Keep a NUL after the bytes so text parsers can use the buffer directly. */
    if (hs_buf_reserve(out, 1) != HS_OK)
        return hs_err_nomem(err, out->len + 1);
    out->data[out->len] = 0;
    return HS_OK;
}

hs_status cat_io_exists(const char *path, bool *exists, hs_error *err)
{
    *exists = false;
    HS_TRY(cat_io_fault_point(path, err));
    return hs_io_stat(path, exists, NULL, err);
}

hs_status cat_io_unlink(const char *path, hs_error *err)
{
    HS_TRY(cat_io_fault_point(path, err));
    return hs_io_delete(path, err);
}

hs_status cat_io_mkdirs(const char *path, hs_error *err)
{
    HS_TRY(cat_io_fault_point(path, err));
    if (hs_io_is_object_uri(path))
        return HS_OK;   /* object stores have no directories */
    size_t n = strlen(path);
    char *p = hs_malloc(n + 1);
    if (!p)
        return hs_err_nomem(err, n + 1);
    memcpy(p, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0)
            continue;
        char saved = p[i];
        p[i] = 0;
        int made = mkdir(p, 0755);
        if (made != 0 && errno != EEXIST) {
            int e = errno;
            hs_status st = hs_err_set(err, HS_IO, "%s: cannot create directory: %s", p,
                                      strerror(e));
            hs_free(p);
            return st;
        }
        if (made == 0 && i > 1 && sync_forced(p)) {
            /* a new directory under a synced one: its entry must be durable */
            char *slash = strrchr(p, '/');
            *slash = 0;
            int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            int e = fd < 0 || hs_io_fsync_dir_fd(fd, p) != 0 ? errno : 0;
            if (fd >= 0)
                close(fd);
            *slash = '/';
            if (e) {
                hs_status st = hs_err_set(err, HS_IO, "%s: fsync of the parent directory "
                                          "failed: %s", p, strerror(e));
                hs_free(p);
                return st;
            }
        }
        p[i] = saved;
    }
    hs_free(p);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return hs_err_set(err, HS_IO, "%s: is not a directory", path);
    return HS_OK;
}

void cat_strv_free(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        hs_free(v[i]);
    hs_free(v);
}

hs_status cat_io_list_dir(const char *path, char ***names, size_t *n, hs_error *err)
{
    *names = NULL;
    *n = 0;
    HS_TRY(cat_io_fault_point(path, err));
    if (hs_io_is_object_uri(path)) {
        /* a prefix with no keys under it is the object store's missing directory */
        HS_TRY(hs_io_list(path, false, names, n, err));
        if (*n == 0) {
            hs_free(*names);
            *names = NULL;
            return hs_err_set(err, HS_NOT_FOUND, "%s: nothing under this prefix", path);
        }
        return HS_OK;
    }
    DIR *d = opendir(path);
    if (!d) {
        int e = errno;
        return hs_err_set(err, (e == ENOENT || e == ENOTDIR) ? HS_NOT_FOUND : HS_IO,
                          "%s: cannot list directory: %s", path, strerror(e));
    }
    char **v = NULL;
    size_t len = 0, cap = 0;
    hs_status st = HS_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **nv = hs_realloc(v, ncap * sizeof *nv);
            if (!nv) {
                st = hs_err_nomem(err, ncap * sizeof *nv);
                break;
            }
            v = nv;
            cap = ncap;
        }
        if (!(v[len] = hs_strdup(de->d_name))) {
            st = hs_err_nomem(err, strlen(de->d_name));
            break;
        }
        len++;
    }
    closedir(d);
    if (st != HS_OK) {
        cat_strv_free(v, len);
        return st;
    }
    *names = v;
    *n = len;
    return HS_OK;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p) == 0 || errno == ENOENT ? 0 : -1;
}

/* Every key under the prefix, one DELETE each (DeleteObjects needs a
 * Content-MD5 that curl's signing does not compute). */
static hs_status remove_objects(const char *path, hs_error *err)
{
    char **names;
    size_t n;
    HS_TRY(hs_io_list(path, true, &names, &n, err));
    hs_status st = HS_OK;
    for (size_t i = 0; i < n && st == HS_OK; i++) {
        char *u = cat_sprintf("%s/%s", path, names[i]);
        st = u ? hs_io_delete(u, err) : hs_err_nomem(err, strlen(path));
        hs_free(u);
    }
    cat_strv_free(names, n);
    return st;
}

hs_status cat_io_remove_tree(const char *path, hs_error *err)
{
    HS_TRY(cat_io_fault_point(path, err));
    if (hs_io_is_object_uri(path))
        return remove_objects(path, err);
    if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        return hs_err_set(err, HS_IO, "%s: cannot remove tree: %s", path, strerror(errno));
    return HS_OK;
}

/* ---- commit lock ------------------------------------------------------------ */

/* flock() of <dir>/.hs-commit.lock.  The file may be unlinked by the holder
 * (a drop removes the metadata directory with it) while another process waits
 * on the old inode: after acquiring, the waiter checks that the name still
 * leads to the inode it locked, and starts over otherwise, so two holders can
 * never lock different files of one name. */
hs_status cat_io_lock(const char *dir, int *fd_out, hs_error *err)
{
    *fd_out = -1;
    HS_TRY(cat_io_fault_point("commit lock", err));
    char *p;
    if (hs_io_is_object_uri(dir)) {
        /* Lock-free on stores with conditional writes: the conditional PUT
         * of v<N+1> is the commit point.  Setting s3_lock_dir
         * (HS_S3_LOCK_DIR): a local lock file per table for stores without
         * them (docs/storage.md). */
        char ld[HS_CONFIG_STR_MAX];
        if (!hs_cfg_get_str(HS_CFGS_S3_LOCK_DIR, ld, sizeof ld))
            return HS_OK;
        uint64_t h = 1469598103934665603ULL;
        for (const char *c = dir; *c; c++)
            h = (h ^ (uint8_t)*c) * 1099511628211ULL;
        p = cat_sprintf("%s/s3-%016llx.lock", ld, (unsigned long long)h);
    } else {
        p = cat_sprintf("%s/" CAT_LOCK_NAME, dir);
    }
    if (!p)
        return hs_err_nomem(err, strlen(dir));
    hs_status st = HS_OK;
    for (;;) {
        /* created on first use; ENOENT = the directory itself is gone */
        int fd = open(p, O_RDWR | O_CLOEXEC | O_CREAT, 0644);
        if (fd < 0) {
            int e = errno;
            st = hs_err_set(err, e == ENOENT || e == ENOTDIR ? HS_NOT_FOUND : HS_IO,
                            "%s: cannot open the commit lock: %s", p, strerror(e));
            break;
        }
        int r;
        while ((r = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
        }
        if (r != 0) {
            int e = errno;
            close(fd);
            st = hs_err_set(err, HS_IO, "%s: cannot lock: %s", p, strerror(e));
            break;
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(p, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            *fd_out = fd;
            break;
        }
        close(fd);   /* removed or replaced while we waited: lock the current one */
    }
    hs_free(p);
    return st;
}

void cat_io_unlock(int fd)
{
    if (fd >= 0)
        close(fd);   /* releases the flock */
}

/* ---- uuid ------------------------------------------------------------------ */

void cat_uuid4(char out[37])
{
    uint8_t b[16];
    if (getrandom(b, sizeof b, GRND_NONBLOCK) != (ssize_t)sizeof b) {
        static _Atomic uint64_t counter;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                     ((uint64_t)getpid() << 48) ^ (++counter * 0x9E3779B97F4A7C15ull);
        for (int i = 0; i < 16; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b[i] = (uint8_t)x;
        }
    }
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

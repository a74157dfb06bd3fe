/*
 * tests/c/test_io.c - io backends: local files (atomic create, exclusive
 * create, reads), memory files and writers, fault injection, OOM loops.
 *
 * The local tests check the file system directly (stat, readdir, read(2))
 * rather than only reading back through our own reader.
 */
#include "base/mem.h"
#include "io/io.h"
#include "harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static void path_in_tmp(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", hs_test_tmpdir(), name);
}

/* Number of directory entries whose name starts with prefix. */
static int count_entries(const char *prefix)
{
    DIR *d = opendir(hs_test_tmpdir());
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    if (d)
        closedir(d);
    return n;
}

static size_t raw_read(const char *path, uint8_t *dst, size_t cap)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return (size_t)-1;
    size_t total = 0;
    ssize_t k;
    while (total < cap && (k = read(fd, dst + total, cap - total)) > 0)
        total += (size_t)k;
    close(fd);
    return total;
}

static void test_local_write_read(void)
{
    int64_t live0 = hs_mem_live_count();
    char path[4096];
    path_in_tmp(path, sizeof path, "wr.bin");
    hs_error err = { 0 };
    hs_wfile *w;
    CHECK_OK(hs_local_create(path, false, &w, &err), &err);
    /* Mixed write sizes: small ones buffer, large ones go straight through. */
    size_t total = 1 << 20;
    uint8_t *data = malloc(total);
    for (size_t i = 0; i < total; i++)
        data[i] = (uint8_t)(i * 131 + (i >> 9));
    size_t off = 0, step = 1;
    while (off < total) {
        size_t n = step < total - off ? step : total - off;
        CHECK_OK(hs_wfile_write(w, data + off, n, &err), &err);
        off += n;
        step = step * 3 + 1;
        if (step > 400000)
            step = 5;
    }
    CHECK(w->offset == total);
    struct stat st;
    CHECK(stat(path, &st) != 0);          /* invisible under its name until close */
    CHECK(count_entries("wr.bin.tmp-") == 1);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size == total);
    CHECK(count_entries("wr.bin.tmp-") == 0);
    uint8_t *back = malloc(total);
    CHECK(raw_read(path, back, total) == total);
    CHECK(memcmp(back, data, total) == 0);

    /* Read it back through hs_local_open. */
    hs_file *f;
    CHECK_OK(hs_local_open(path, &f, &err), &err);
    CHECK(f->size == total);
    uint8_t piece[1000];
    CHECK_OK(hs_file_read_at(f, 12345, sizeof piece, piece, &err), &err);
    CHECK(memcmp(piece, data + 12345, sizeof piece) == 0);
    CHECK_OK(hs_file_read_at(f, total, 0, piece, &err), &err);
    CHECK_OK(hs_file_read_at(f, total - 10, 10, piece, &err), &err);
    CHECK(f->n_reads == 2 && f->n_bytes_read == 1010);
    hs_buf b = { 0 };
    CHECK_OK(hs_file_read_buf(f, 100, 50000, &b, &err), &err);
    CHECK(b.len == 50000 && memcmp(b.data, data + 100, 50000) == 0);
    /* Past the end: HS_CORRUPT naming the file and offset. */
    CHECK(hs_file_read_at(f, total - 10, 11, piece, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "wr.bin") && strstr(err.msg, "1048566"));
    hs_err_clear(&err);
    CHECK(hs_file_read_at(f, UINT64_MAX - 2, 10, piece, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    hs_file_close(f);
    hs_file_close(NULL);

    CHECK_OK(hs_local_read_all(path, &b, &err), &err);
    CHECK(b.len == total && memcmp(b.data, data, total) == 0);

    /* Non-exclusive create replaces an existing file atomically. */
    CHECK_OK(hs_local_create(path, false, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, "new", 3, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    CHECK_OK(hs_local_read_all(path, &b, &err), &err);
    CHECK(b.len == 3 && memcmp(b.data, "new", 3) == 0);

    /* Empty file. */
    path_in_tmp(path, sizeof path, "empty.bin");
    CHECK_OK(hs_local_create(path, true, &w, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    CHECK_OK(hs_local_read_all(path, &b, &err), &err);
    CHECK(b.len == 0);
    hs_buf_free(&b);
    free(data);
    free(back);
    CHECK(hs_mem_live_count() == live0);
}

static void test_local_exclusive_and_abort(void)
{
    int64_t live0 = hs_mem_live_count();
    char path[4096];
    path_in_tmp(path, sizeof path, "v1.metadata.json");
    hs_error err = { 0 };
    hs_wfile *a, *b;
    /* Two writers race for the same name: the first close wins, the second conflicts. */
    CHECK_OK(hs_local_create(path, true, &a, &err), &err);
    CHECK_OK(hs_local_create(path, true, &b, &err), &err);
    CHECK_OK(hs_wfile_write(a, "winner", 6, &err), &err);
    CHECK_OK(hs_wfile_write(b, "loser", 5, &err), &err);
    CHECK_OK(hs_wfile_close(a, &err), &err);
    CHECK(hs_wfile_close(b, &err) == HS_CONFLICT);
    CHECK(strstr(err.msg, "v1.metadata.json") != NULL);
    hs_err_clear(&err);
    uint8_t buf[16];
    CHECK(raw_read(path, buf, sizeof buf) == 6 && memcmp(buf, "winner", 6) == 0);
    CHECK(count_entries("v1.metadata.json.tmp-") == 0);   /* loser cleaned up */

    /* Abort discards everything. */
    path_in_tmp(path, sizeof path, "aborted.bin");
    CHECK_OK(hs_local_create(path, false, &a, &err), &err);
    CHECK_OK(hs_wfile_write(a, "junk", 4, &err), &err);
    hs_wfile_abort(a);
    hs_wfile_abort(NULL);
    struct stat st;
    CHECK(stat(path, &st) != 0);
    CHECK(count_entries("aborted.bin") == 0);

    /* Missing things. */
    hs_file *f;
    path_in_tmp(path, sizeof path, "does-not-exist");
    CHECK(hs_local_open(path, &f, &err) == HS_NOT_FOUND);
    CHECK(f == NULL && strstr(err.msg, "does-not-exist"));
    hs_err_clear(&err);
    path_in_tmp(path, sizeof path, "no-dir/x.bin");
    CHECK(hs_local_create(path, false, &a, &err) == HS_NOT_FOUND);
    CHECK(a == NULL);
    hs_err_clear(&err);
    CHECK(hs_local_open(hs_test_tmpdir(), &f, &err) == HS_INVALID);  /* a directory */
    CHECK(hs_mem_live_count() == live0);
}

static void test_mem_files(void)
{
    int64_t live0 = hs_mem_live_count();
    hs_error err = { 0 };
    static const char text[] = "hello memory file";
    hs_file *f;
    CHECK_OK(hs_mem_open("m.bin", text, sizeof text - 1, false, &f, &err), &err);
    CHECK(f->size == sizeof text - 1 && strcmp(f->name, "m.bin") == 0);
    char out[8] = { 0 };
    CHECK_OK(hs_file_read_at(f, 6, 6, out, &err), &err);
    CHECK(memcmp(out, "memory", 6) == 0);
    CHECK(hs_file_read_at(f, 15, 3, out, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "m.bin") != NULL);
    hs_err_clear(&err);
    hs_file_close(f);

    /* Owned bytes are freed at close. */
    hs_buf b = { 0 };
    CHECK_OK(hs_buf_puts(&b, "owned bytes"), &err);
    size_t len;
    uint8_t *d = hs_buf_detach(&b, &len);
    CHECK_OK(hs_mem_open(NULL, d, len, true, &f, &err), &err);
    CHECK_OK(hs_file_read_at(f, 0, 5, out, &err), &err);
    CHECK(memcmp(out, "owned", 5) == 0);
    hs_file_close(f);

    /* Writer into a buffer; abort truncates back to where it started. */
    hs_buf target = { 0 };
    CHECK_OK(hs_buf_puts(&target, "pre:"), &err);
    hs_wfile *w;
    CHECK_OK(hs_mem_create(&target, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, "abc", 3, &err), &err);
    CHECK_OK(hs_wfile_write(w, "def", 3, &err), &err);
    CHECK(w->offset == 6);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    CHECK(target.len == 10 && memcmp(target.data, "pre:abcdef", 10) == 0);
    CHECK_OK(hs_mem_create(&target, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, "xyz", 3, &err), &err);
    hs_wfile_abort(w);
    CHECK(target.len == 10);
    hs_buf_free(&target);
    CHECK(hs_mem_live_count() == live0);
}

static void test_fault(void)
{
    int64_t live0 = hs_mem_live_count();
    hs_error err = { 0 };
    static const char text[] = "0123456789";
    int64_t counter = 0;
    hs_file *inner, *f1, *f2;
    CHECK_OK(hs_mem_open("a", text, 10, false, &inner, &err), &err);
    CHECK_OK(hs_fault_wrap(inner, &counter, 3, &f1, &err), &err);
    CHECK_OK(hs_mem_open("b", text, 10, false, &inner, &err), &err);
    CHECK_OK(hs_fault_wrap(inner, &counter, 3, &f2, &err), &err);
    CHECK(f1->size == 10 && strcmp(f1->name, "a") == 0);
    char out[4];
    CHECK_OK(hs_file_read_at(f1, 0, 2, out, &err), &err);  /* call 1 */
    CHECK_OK(hs_file_read_at(f2, 2, 2, out, &err), &err);  /* call 2 */
    CHECK(memcmp(out, "23", 2) == 0);
    CHECK(hs_file_read_at(f1, 4, 2, out, &err) == HS_IO);       /* call 3: the shared count */
    CHECK(strstr(err.msg, "injected") && strstr(err.msg, "a"));
    hs_err_clear(&err);
    CHECK_OK(hs_file_read_at(f1, 4, 2, out, &err), &err);  /* call 4: fine again */
    CHECK(counter == 4);
    hs_file_close(f1);
    hs_file_close(f2);

    /* Fault loop over a reading routine: every failing step is reported, and
     * the loop ends with a success; nothing leaks. */
    char path[4096];
    path_in_tmp(path, sizeof path, "fault.bin");
    hs_wfile *w;
    CHECK_OK(hs_local_create(path, false, &w, &err), &err);
    CHECK_OK(hs_wfile_write(w, "abcdefghijklmnopqrstuvwxyz", 26, &err), &err);
    CHECK_OK(hs_wfile_close(w, &err), &err);
    int failures = 0;
    for (int64_t k = 1; k < 10; k++) {
        hs_file *lf, *ff;
        int64_t calls = 0;
        CHECK_OK(hs_local_open(path, &lf, &err), &err);
        CHECK_OK(hs_fault_wrap(lf, &calls, k, &ff, &err), &err);
        hs_status st = HS_OK;
        hs_error e = { 0 };
        char chunk[5];
        for (uint64_t off = 0; off < 25 && st == HS_OK; off += 5)
            st = hs_file_read_at(ff, off, 5, chunk, &e);
        hs_file_close(ff);
        if (st != HS_OK) {
            CHECK(st == HS_IO && strstr(e.msg, "fault.bin"));
            failures++;
        } else {
            CHECK(k > 5);
        }
    }
    CHECK(failures == 5);
    CHECK(hs_mem_live_count() == live0);
}

/* Out of memory at each allocation of open/create/write/close: an error,
 * never a crash or leak, and eventually success. */
static void test_oom_loop(void)
{
    int64_t live0 = hs_mem_live_count();
    char path[4096];
    path_in_tmp(path, sizeof path, "oom.bin");
    bool done = false;
    for (int64_t k = 1; k < 50 && !done; k++) {
        hs_error err = { 0 };
        hs_wfile *w = NULL;
        hs_file *f = NULL;
        hs_buf b = { 0 };
        hs_mem_fail_after(k);
        hs_status st = hs_local_create(path, false, &w, &err);
        if (st == HS_OK)
            st = hs_wfile_write(w, "payload", 7, &err);
        if (st == HS_OK) {
            st = hs_wfile_close(w, &err);
            w = NULL;
        }
        if (st == HS_OK)
            st = hs_local_open(path, &f, &err);
        if (st == HS_OK)
            st = hs_file_read_buf(f, 0, 7, &b, &err);
        hs_mem_fail_after(0);
        hs_wfile_abort(w);
        hs_file_close(f);
        CHECK(st == HS_OK || st == HS_NOMEM);
        if (st == HS_OK) {
            CHECK(b.len == 7 && memcmp(b.data, "payload", 7) == 0);
            done = true;
        } else {
            CHECK(err.code == HS_NOMEM);
        }
        hs_buf_free(&b);
        CHECK(hs_mem_live_count() == live0);
        CHECK(count_entries("oom.bin.tmp-") == 0);
    }
    CHECK(done);
}

int main(void)
{
    HS_RUN(test_local_write_read);
    HS_RUN(test_local_exclusive_and_abort);
    HS_RUN(test_mem_files);
    HS_RUN(test_fault);
    HS_RUN(test_oom_loop);
    return hs_test_summary();
}

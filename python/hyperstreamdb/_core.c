/*
 * python/hyperstreamdb/_core.c - the CPython extension under the
 * hyperstreamdb package: a thin layer over the public C API
 * (include/hyperstream/table.h, index.h, vector.h; SQL sessions, sql.h, are
 * in _core_sql.c, shared declarations in _core.h).  The Python modules
 * beside it (__init__.py) hold the user-facing classes; this file moves
 * data and errors across the boundary and manages the GIL.
 *
 *   Python object        C state                         lifetime
 *   -------------------  ------------------------------  -------------------------
 *   _core.TableHandle    hs_catalog (path catalog,       until close() or GC; the
 *                        warehouse NULL) + hs_table +    lock serializes the calls
 *                        a lock                          of several Python threads
 *   _core.Result         an ArrowSchema + the            until exported once with
 *                        ArrowArrays of a finished       __arrow_c_stream__ (moved
 *                        scan or search                  into the consumer)
 *   _core.Stream         an unread ArrowArrayStream      until exported once
 *                        (lazy scan)
 *
 * Data crossing.  Results leave through the Arrow PyCapsule protocol
 * (__arrow_c_stream__ returning an "arrow_array_stream" capsule): the
 * arrays the library exported are moved, never copied, so pyarrow's buffers
 * are the library's buffers (Result.buffer_addresses() lets tests check
 * this).  Inputs come from any object with __arrow_c_stream__ or
 * __arrow_c_array__ (pyarrow, polars, ...); the stream is moved out of the
 * producer's capsule.  Dense vectors come in through the buffer protocol
 * (float32 / float16 / int8 C-contiguous buffers are read in place).
 *
 * The GIL.  Every library call runs with the GIL released and the table's
 * lock held (the lock is only ever waited for without the GIL, so a thread
 * holding it may take the GIL back without deadlock).  Long operations come
 * back to Python between units of work:
 *   scans / searches  read batch by batch with the GIL released, and call
 *                     PyErr_CheckSignals between batches: Ctrl-C raises
 *                     KeyboardInterrupt, drops what was read; nothing was
 *                     written, so the table is as it was;
 *   appends           the input stream is wrapped by a counting stream whose
 *                     get_next reports progress and checks signals; an
 *                     interrupt fails get_next, the library then fails the
 *                     append before its commit (nothing is published);
 *   add_index         hs_progress_fn reports progress and returns 1 (cancel)
 *                     after a signal or an exception in the callback.
 * Exceptions raised by callbacks (or KeyboardInterrupt) are saved where
 * they happen and re-raised by the calling method after the library call.
 *
 * Errors.  hs_status maps to Python exceptions (created here, re-exported
 * by the package) with the library's message:
 *   HS_INVALID -> InvalidArgumentError(ValueError)
 *   HS_NOT_FOUND -> NotFoundError(FileNotFoundError)
 *   HS_CONFLICT -> CommitConflictError     HS_CORRUPT -> CorruptDataError
 *   HS_UNSUPPORTED -> UnsupportedError(NotImplementedError)
 *   HS_IO -> StorageError(OSError)         HS_NOMEM -> MemoryError
 *   HS_INTERNAL -> InternalError(RuntimeError)
 *   HS_BUSY -> BusyError (append stream memory budget full, stream held)
 *   HS_CANCELLED -> the pending KeyboardInterrupt / callback exception, or
 *                   KeyboardInterrupt
 * Every one derives from HyperStreamError and carries .status ("HS_...").
 *
 * Optional symbols.  The functions of index.h and vector.h are declared weak:
 * the package builds and imports while those modules are still being
 * written, and a call whose C function is absent raises NotImplementedError
 * naming it (available() tells which are linked).  A weak reference does not
 * pull a member out of a static archive, so the build (python/CMakeLists.txt)
 * forces in, with -u, every one of them that libhyperstream.a defines.
 *
 * Ownership: memory of our own is PyMem_Raw* (usable without the GIL); every
 * Arrow struct follows the C Data Interface's move/release rules.
 */
#include "_core.h"

#include "hyperstream/config.h"
#include "hyperstream/index.h"
#include "hyperstream/sql.h"
#include "hyperstream/table.h"
#include "hyperstream/vector.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* index.h / vector.h: optional until those modules land (see top). */
#pragma weak hs_table_add_index
#pragma weak hs_table_drop_index
#pragma weak hs_table_list_indexes
#pragma weak hs_table_remove_orphan_indexes
#pragma weak hs_table_refresh_indexes
#pragma weak hs_table_explain
#pragma weak hs_table_search
#pragma weak hs_table_search_batch
#pragma weak hs_metric_from_name
#pragma weak hs_distance_f32
#pragma weak hs_distance_f16
#pragma weak hs_distance_i8
#pragma weak hs_distance_batch_f32
#pragma weak hs_sparse_check
#pragma weak hs_distance_sparse
#pragma weak hs_distance_packed
#pragma weak hs_simd_level
#pragma weak hs_simd_set_level


#define REQUIRE_FN(fn)                                                                   \
    do {                                                                                 \
        if (!(fn))                                                                       \
            return PyErr_Format(PyExc_NotImplementedError,                               \
                                "%s() is not in this build of libhyperstream yet", #fn); \
    } while (0)

/* ================================================================== */
/* exceptions                                                          */

static PyObject *E_base, *E_invalid, *E_notfound, *E_conflict, *E_corrupt, *E_unsupported,
    *E_storage, *E_internal, *E_busy;

/* Raises the exception of st with the library's message (keeps an exception
 * already pending, e.g. KeyboardInterrupt from a signal check).  Returns NULL. */
PyObject *raise_status(hs_status st, const hs_error *e)
{
    if (PyErr_Occurred())
        return NULL;
    const char *msg = (e && e->msg[0]) ? e->msg : hs_status_name(st);
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    if (!text)
        return NULL;
    PyObject *type;
    switch (st) {
    case HS_INVALID: type = E_invalid; break;
    case HS_NOT_FOUND: type = E_notfound; break;
    case HS_CONFLICT: type = E_conflict; break;
    case HS_CORRUPT: type = E_corrupt; break;
    case HS_UNSUPPORTED: type = E_unsupported; break;
    case HS_IO: type = E_storage; break;
    case HS_INTERNAL: type = E_internal; break;
    case HS_BUSY: type = E_busy; break;
    case HS_NOMEM:
        PyErr_SetObject(PyExc_MemoryError, text);
        Py_DECREF(text);
        return NULL;
    case HS_CANCELLED:
        PyErr_SetObject(PyExc_KeyboardInterrupt, text);
        Py_DECREF(text);
        return NULL;
    default: type = E_base; break;
    }
    PyObject *exc = PyObject_CallOneArg(type, text);
    Py_DECREF(text);
    if (!exc)
        return NULL;
    PyObject *name = PyUnicode_FromString(hs_status_name(st));
    if (!name || PyObject_SetAttrString(exc, "status", name) < 0) {
        Py_XDECREF(name);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(name);
    if (st == HS_CORRUPT && e && e->src_file) {
        PyObject *f = PyUnicode_FromString(e->src_file);
        PyObject *l = PyLong_FromLong(e->src_line);
        if (f && l) {
            (void)PyObject_SetAttrString(exc, "src_file", f);
            (void)PyObject_SetAttrString(exc, "src_line", l);
        }
        Py_XDECREF(f);
        Py_XDECREF(l);
        PyErr_Clear();
    }
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

/* An Arrow stream callback failed with errno rc; the library's streams map
 * HS_NOMEM/INVALID/UNSUPPORTED to ENOMEM/EINVAL/ENOSYS and the rest to EIO. */
PyObject *raise_stream_error(struct ArrowArrayStream *s, int rc, const char *what)
{
    if (PyErr_Occurred())
        return NULL;
    const char *m = s && s->release && s->get_last_error ? s->get_last_error(s) : NULL;
    hs_error e = {0};
    hs_status st;
    switch (rc) {
    case ENOMEM: st = HS_NOMEM; break;
    case EINVAL: st = HS_INVALID; break;
    case ENOSYS: st = HS_UNSUPPORTED; break;
    case ENOENT: st = HS_NOT_FOUND; break;
#ifdef EBADMSG
    case EBADMSG: st = HS_CORRUPT; break;
#endif
#ifdef ECANCELED
    case ECANCELED: st = HS_CANCELLED; break;
#endif
    default: st = HS_IO; break;
    }
    snprintf(e.msg, sizeof e.msg, "%s: %s", what, m && m[0] ? m : strerror(rc));
    e.code = st;
    return raise_status(st, &e);
}

/* An exception raised where the GIL was taken back inside a library call,
 * kept until the call returns to the calling thread. */
typedef struct saved_exc {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc;
#else
    PyObject *type, *value, *tb;
#endif
    int set;
} saved_exc;

static void saved_exc_take(saved_exc *s)   /* GIL held, exception pending */
{
    if (s->set) {
        PyErr_Clear();  /* keep the first one */
        return;
    }
#if PY_VERSION_HEX >= 0x030C0000
    s->exc = PyErr_GetRaisedException();
#else
    PyErr_Fetch(&s->type, &s->value, &s->tb);
#endif
    s->set = 1;
}

static int saved_exc_restore(saved_exc *s)   /* GIL held; 1 if one was restored */
{
    if (!s->set)
        return 0;
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(s->exc);
    s->exc = NULL;
#else
    PyErr_Restore(s->type, s->value, s->tb);
    s->type = s->value = s->tb = NULL;
#endif
    s->set = 0;
    return 1;
}

/* ================================================================== */
/* progress                                                            */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Calls cb(what, done, total) at most every 0.1 s (and always at the end),
 * and checks for signals at the same pace.  Used by hs_progress_fn and by the
 * counting stream of appends.  Any thread; takes the GIL. */
typedef struct progress_ctx {
    PyObject *cb;        /* callable or NULL; borrowed from the calling frame */
    saved_exc exc;
    double last;
    int cancelled;
} progress_ctx;

static int progress_step(progress_ctx *pc, const char *what, int64_t done, int64_t total)
{
    if (pc->cancelled)
        return 1;
    double t = now_seconds();
    bool final = total > 0 && done >= total;
    if (!final && t - pc->last < 0.1)
        return 0;
    pc->last = t;
    PyGILState_STATE g = PyGILState_Ensure();
    if (pc->cb && pc->cb != Py_None) {
        PyObject *r = PyObject_CallFunction(pc->cb, "sLL", what ? what : "", (long long)done,
                                            (long long)total);
        if (!r) {
            saved_exc_take(&pc->exc);
            pc->cancelled = 1;
        }
        Py_XDECREF(r);
    }
    if (!pc->cancelled && PyErr_CheckSignals() < 0) {
        saved_exc_take(&pc->exc);
        pc->cancelled = 1;
    }
    PyGILState_Release(g);
    return pc->cancelled;
}

static int progress_fn(void *ctx, const char *what, int64_t done, int64_t total)
{
    return progress_step(ctx, what, done, total);
}

/* ================================================================== */
/* Arrow helpers                                                       */

static int64_t metadata_len(const char *m)
{
    if (!m)
        return 0;
    int32_t n, l;
    memcpy(&n, m, 4);
    int64_t off = 4;
    for (int32_t i = 0; i < n; i++) {
        memcpy(&l, m + off, 4);   /* key */
        off += 4 + l;
        memcpy(&l, m + off, 4);   /* value */
        off += 4 + l;
    }
    return off;
}

/* A deep copy of an ArrowSchema (get_schema of our streams hands out copies). */
typedef struct schema_priv {
    char *format, *name, *metadata;
    struct ArrowSchema **children;
    struct ArrowSchema *child_mem;
    struct ArrowSchema *dictionary;
} schema_priv;

static void schema_copy_release(struct ArrowSchema *s)
{
    if (!s || !s->release)
        return;
    schema_priv *p = s->private_data;
    for (int64_t i = 0; i < s->n_children; i++)
        if (p->child_mem[i].release)
            p->child_mem[i].release(&p->child_mem[i]);
    if (p->dictionary && p->dictionary->release)
        p->dictionary->release(p->dictionary);
    PyMem_RawFree(p->dictionary);
    PyMem_RawFree(p->child_mem);
    PyMem_RawFree(p->children);
    PyMem_RawFree(p->format);
    PyMem_RawFree(p->name);
    PyMem_RawFree(p->metadata);
    PyMem_RawFree(p);
    s->release = NULL;
}

static char *raw_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = PyMem_RawMalloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* 0 or ENOMEM; dst is released-state on failure. */
static int schema_copy(const struct ArrowSchema *src, struct ArrowSchema *dst)
{
    memset(dst, 0, sizeof *dst);
    schema_priv *p = PyMem_RawCalloc(1, sizeof *p);
    if (!p)
        return ENOMEM;
    dst->private_data = p;
    dst->release = schema_copy_release;
    dst->flags = src->flags;
    p->format = raw_strdup(src->format ? src->format : "");
    p->name = src->name ? raw_strdup(src->name) : NULL;
    int64_t ml = metadata_len(src->metadata);
    if (ml) {
        p->metadata = PyMem_RawMalloc((size_t)ml);
        if (p->metadata)
            memcpy(p->metadata, src->metadata, (size_t)ml);
    }
    dst->format = p->format;
    dst->name = p->name;
    dst->metadata = p->metadata;
    if (!p->format || (src->name && !p->name) || (ml && !p->metadata))
        goto fail;
    if (src->n_children > 0) {
        p->child_mem = PyMem_RawCalloc((size_t)src->n_children, sizeof *p->child_mem);
        p->children = PyMem_RawCalloc((size_t)src->n_children, sizeof *p->children);
        if (!p->child_mem || !p->children)
            goto fail;
        dst->children = p->children;
        for (int64_t i = 0; i < src->n_children; i++) {
            p->children[i] = &p->child_mem[i];
            dst->n_children = i + 1;
            if (schema_copy(src->children[i], &p->child_mem[i]) != 0)
                goto fail;
        }
    }
    if (src->dictionary) {
        p->dictionary = PyMem_RawCalloc(1, sizeof *p->dictionary);
        if (!p->dictionary || schema_copy(src->dictionary, p->dictionary) != 0)
            goto fail;
        dst->dictionary = p->dictionary;
    }
    return 0;
fail:
    schema_copy_release(dst);
    return ENOMEM;
}

/* A stream over arrays held in memory: moves them out one by one. */
typedef struct list_stream {
    struct ArrowSchema schema;       /* owned */
    struct ArrowArray *arrays;       /* owned, n */
    int64_t n, pos;
} list_stream;

static int ls_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out)
{
    list_stream *p = s->private_data;
    return schema_copy(&p->schema, out);
}

static int ls_get_next(struct ArrowArrayStream *s, struct ArrowArray *out)
{
    list_stream *p = s->private_data;
    if (p->pos >= p->n) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    *out = p->arrays[p->pos];
    p->arrays[p->pos].release = NULL;
    p->pos++;
    return 0;
}

static const char *ls_get_last_error(struct ArrowArrayStream *s)
{
    (void)s;
    return NULL;
}

static void ls_release(struct ArrowArrayStream *s)
{
    if (!s || !s->release)
        return;
    list_stream *p = s->private_data;
    for (int64_t i = p->pos; i < p->n; i++)
        if (p->arrays[i].release)
            p->arrays[i].release(&p->arrays[i]);
    PyMem_RawFree(p->arrays);
    if (p->schema.release)
        p->schema.release(&p->schema);
    PyMem_RawFree(p);
    s->release = NULL;
}

/* Takes ownership of schema and of the n arrays (the array of structs itself
 * is taken too: it must come from PyMem_RawMalloc). */
static int list_stream_make(struct ArrowSchema *schema, struct ArrowArray *arrays, int64_t n,
                            struct ArrowArrayStream *out)
{
    list_stream *p = PyMem_RawCalloc(1, sizeof *p);
    if (!p) {
        if (schema->release)
            schema->release(schema);
        for (int64_t i = 0; i < n; i++)
            if (arrays[i].release)
                arrays[i].release(&arrays[i]);
        PyMem_RawFree(arrays);
        return ENOMEM;
    }
    p->schema = *schema;
    schema->release = NULL;
    p->arrays = arrays;
    p->n = n;
    out->get_schema = ls_get_schema;
    out->get_next = ls_get_next;
    out->get_last_error = ls_get_last_error;
    out->release = ls_release;
    out->private_data = p;
    return 0;
}

static void stream_capsule_free(PyObject *cap)
{
    if (!PyCapsule_IsValid(cap, "arrow_array_stream"))
        return;
    struct ArrowArrayStream *s = PyCapsule_GetPointer(cap, "arrow_array_stream");
    if (s->release)
        s->release(s);
    PyMem_RawFree(s);
}

void schema_capsule_free(PyObject *cap)
{
    if (!PyCapsule_IsValid(cap, "arrow_schema"))
        return;
    struct ArrowSchema *s = PyCapsule_GetPointer(cap, "arrow_schema");
    if (s->release)
        s->release(s);
    PyMem_RawFree(s);
}

/* Moves *s into a new "arrow_array_stream" capsule. */
PyObject *stream_capsule(struct ArrowArrayStream *s)
{
    struct ArrowArrayStream *heap = PyMem_RawMalloc(sizeof *heap);
    if (!heap) {
        if (s->release)
            s->release(s);
        return PyErr_NoMemory();
    }
    *heap = *s;
    s->release = NULL;
    PyObject *cap = PyCapsule_New(heap, "arrow_array_stream", stream_capsule_free);
    if (!cap) {
        heap->release(heap);
        PyMem_RawFree(heap);
    }
    return cap;
}

/* Reads an ArrowArrayStream out of a Python object exporting Arrow
 * PyCapsules: __arrow_c_stream__ (moved out of the capsule), or
 * __arrow_c_array__ of a struct array (one record batch).  0 or -1 with a
 * Python exception. */
static int stream_from_object(PyObject *obj, struct ArrowArrayStream *out)
{
    memset(out, 0, sizeof *out);
    if (PyObject_HasAttrString(obj, "__arrow_c_stream__")) {
        PyObject *cap = PyObject_CallMethod(obj, "__arrow_c_stream__", NULL);
        if (!cap)
            return -1;
        if (!PyCapsule_IsValid(cap, "arrow_array_stream")) {
            Py_DECREF(cap);
            PyErr_SetString(PyExc_TypeError,
                            "__arrow_c_stream__() did not return an \"arrow_array_stream\" capsule");
            return -1;
        }
        struct ArrowArrayStream *s = PyCapsule_GetPointer(cap, "arrow_array_stream");
        if (!s->release) {
            Py_DECREF(cap);
            PyErr_SetString(PyExc_ValueError, "the Arrow stream was already consumed");
            return -1;
        }
        *out = *s;
        s->release = NULL;   /* moved */
        Py_DECREF(cap);
        return 0;
    }
    if (PyObject_HasAttrString(obj, "__arrow_c_array__")) {
        PyObject *pair = PyObject_CallMethod(obj, "__arrow_c_array__", NULL);
        if (!pair)
            return -1;
        PyObject *sc = NULL, *ac = NULL;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyCapsule_IsValid((sc = PyTuple_GET_ITEM(pair, 0)), "arrow_schema") ||
            !PyCapsule_IsValid((ac = PyTuple_GET_ITEM(pair, 1)), "arrow_array")) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_TypeError, "__arrow_c_array__() did not return (\"arrow_schema\", "
                                             "\"arrow_array\") capsules");
            return -1;
        }
        struct ArrowSchema *schema = PyCapsule_GetPointer(sc, "arrow_schema");
        struct ArrowArray *array = PyCapsule_GetPointer(ac, "arrow_array");
        if (!schema->release || !array->release || !schema->format ||
            strcmp(schema->format, "+s") != 0) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_TypeError, "expected a record batch (a struct array) from "
                                             "__arrow_c_array__(), not a single column");
            return -1;
        }
        struct ArrowArray *arrays = PyMem_RawMalloc(sizeof *arrays);
        if (!arrays) {
            Py_DECREF(pair);
            PyErr_NoMemory();
            return -1;
        }
        struct ArrowSchema moved = *schema;
        schema->release = NULL;
        arrays[0] = *array;
        array->release = NULL;
        Py_DECREF(pair);
        if (list_stream_make(&moved, arrays, 1, out) != 0) {
            PyErr_NoMemory();
            return -1;
        }
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "expected Arrow data (an object with __arrow_c_stream__ or "
                                  "__arrow_c_array__, e.g. a pyarrow Table), got %.100s",
                 Py_TYPE(obj)->tp_name);
    return -1;
}

int stream_from_object_pub(PyObject *obj, struct ArrowArrayStream *out)
{
    return stream_from_object(obj, out);
}

/* Counting wrapper around an input stream: reports progress, checks signals. */
typedef struct count_stream {
    struct ArrowArrayStream inner;
    progress_ctx *pc;     /* borrowed from the calling frame */
    const char *what;
    int64_t done, total;
} count_stream;

static int cs_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out)
{
    count_stream *p = s->private_data;
    return p->inner.get_schema(&p->inner, out);
}

static int cs_get_next(struct ArrowArrayStream *s, struct ArrowArray *out)
{
    count_stream *p = s->private_data;
    if (p->pc->cancelled) {
        memset(out, 0, sizeof *out);
        return ECANCELED;
    }
    int rc = p->inner.get_next(&p->inner, out);
    if (rc != 0) {
        /* A producer running Python code (pyarrow over a generator) turns a
         * Ctrl-C inside that code into a stream error whose message carries
         * the traceback; report it as the KeyboardInterrupt it was. */
        const char *m = p->inner.get_last_error ? p->inner.get_last_error(&p->inner) : NULL;
        if (m && strstr(m, "KeyboardInterrupt")) {
            PyGILState_STATE g = PyGILState_Ensure();
            PyErr_SetNone(PyExc_KeyboardInterrupt);
            saved_exc_take(&p->pc->exc);
            p->pc->cancelled = 1;
            PyGILState_Release(g);
            return ECANCELED;
        }
        return rc;
    }
    if (!out->release)
        return rc;
    p->done += out->length;
    if (progress_step(p->pc, p->what, p->done, p->total)) {
        out->release(out);
        memset(out, 0, sizeof *out);
        return ECANCELED;
    }
    return 0;
}

static const char *cs_get_last_error(struct ArrowArrayStream *s)
{
    count_stream *p = s->private_data;
    if (p->pc->cancelled)
        return "interrupted";
    return p->inner.get_last_error ? p->inner.get_last_error(&p->inner) : NULL;
}

static void cs_release(struct ArrowArrayStream *s)
{
    if (!s || !s->release)
        return;
    count_stream *p = s->private_data;
    if (p->inner.release)
        p->inner.release(&p->inner);
    PyMem_RawFree(p);
    s->release = NULL;
}

/* Moves *inner into a counting stream *out.  0 or -1 (MemoryError; inner released). */
static int count_stream_make(struct ArrowArrayStream *inner, progress_ctx *pc, const char *what,
                             int64_t total, struct ArrowArrayStream *out)
{
    count_stream *p = PyMem_RawCalloc(1, sizeof *p);
    if (!p) {
        inner->release(inner);
        PyErr_NoMemory();
        return -1;
    }
    p->inner = *inner;
    inner->release = NULL;
    p->pc = pc;
    p->what = what;
    p->total = total;
    out->get_schema = cs_get_schema;
    out->get_next = cs_get_next;
    out->get_last_error = cs_get_last_error;
    out->release = cs_release;
    out->private_data = p;
    return 0;
}

/* ================================================================== */
/* argument helpers                                                    */

/* None -> NULL; str -> PyMem_Raw copy (UTF-8); else TypeError. */
int arg_str(PyObject *o, const char *what, char **out)
{
    *out = NULL;
    if (!o || o == Py_None)
        return 0;
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(o, &n);
    if (!s)
        return -1;
    if ((Py_ssize_t)strlen(s) != n) {
        PyErr_Format(PyExc_ValueError, "%s must not contain NUL characters", what);
        return -1;
    }
    *out = raw_strdup(s);
    if (!*out) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

typedef struct strvec {
    char **v;
    int n;
} strvec;

static void strvec_free(strvec *sv)
{
    for (int i = 0; i < sv->n; i++)
        PyMem_RawFree(sv->v[i]);
    PyMem_RawFree(sv->v);
    sv->v = NULL;
    sv->n = 0;
}

/* None -> empty (v NULL); a list/tuple of str -> copies. */
static int arg_strvec(PyObject *o, const char *what, strvec *out)
{
    out->v = NULL;
    out->n = 0;
    if (!o || o == Py_None)
        return 0;
    if (PyUnicode_Check(o) || !PySequence_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a list of str, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *fast = PySequence_Fast(o, what);
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > 1000000) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: too many names", what);
        return -1;
    }
    out->v = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *out->v);
    if (!out->v) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyUnicode_Check(it)) {
            PyErr_Format(PyExc_TypeError, "%s[%zd] must be a str, not %.100s", what, i,
                         Py_TYPE(it)->tp_name);
            Py_DECREF(fast);
            strvec_free(out);
            return -1;
        }
        out->n = (int)i + 1;
        if (arg_str(it, what, &out->v[i]) < 0) {
            Py_DECREF(fast);
            strvec_free(out);
            return -1;
        }
    }
    out->n = (int)n;
    Py_DECREF(fast);
    return 0;
}

/* None -> *has = 0; int -> value. */
static int arg_opt_i64(PyObject *o, const char *what, int *has, int64_t *out)
{
    *has = 0;
    *out = 0;
    if (!o || o == Py_None)
        return 0;
    if (!PyLong_Check(o) || PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *has = 1;
    *out = v;
    return 0;
}

/* Scan options shared by scan, scan_stream, search, explain, files. */
typedef struct scan_args {
    hs_scan_options o;
    strvec cols;
    char *filter, *ref;
} scan_args;

static void scan_args_free(scan_args *a)
{
    strvec_free(&a->cols);
    PyMem_RawFree(a->filter);
    PyMem_RawFree(a->ref);
    memset(a, 0, sizeof *a);
}

static int scan_args_fill(scan_args *a, PyObject *columns, PyObject *filter,
                          PyObject *snapshot_id, PyObject *as_of_ms, PyObject *ref,
                          int row_lineage, long long batch_size)
{
    memset(a, 0, sizeof *a);
    if (arg_strvec(columns, "columns", &a->cols) < 0 || arg_str(filter, "filter", &a->filter) < 0 ||
        arg_str(ref, "ref", &a->ref) < 0 ||
        arg_opt_i64(snapshot_id, "snapshot_id", &a->o.use_snapshot_id, &a->o.snapshot_id) < 0 ||
        arg_opt_i64(as_of_ms, "as_of", &a->o.use_as_of, &a->o.as_of_ms) < 0)
        goto fail;
    if (a->o.use_snapshot_id + a->o.use_as_of + (a->ref != NULL) > 1) {
        PyErr_SetString(PyExc_ValueError, "give at most one of snapshot_id, as_of and ref");
        goto fail;
    }
    if (batch_size < 0) {
        PyErr_SetString(PyExc_ValueError, "batch_size must be >= 0");
        goto fail;
    }
    if (columns && columns != Py_None)
        a->o.columns = (const char *const *)a->cols.v, a->o.n_columns = a->cols.n;
    a->o.filter = a->filter;
    a->o.ref = a->ref;
    a->o.include_row_lineage = row_lineage;
    a->o.batch_size = batch_size;
    return 0;
fail:
    scan_args_free(a);
    return -1;
}

#define SCAN_KW "columns", "filter", "snapshot_id", "as_of_ms", "ref", "row_lineage", "batch_size"
#define SCAN_FMT "OOOOOpL"
#define SCAN_DECL                                                                           \
    PyObject *columns = Py_None, *filter = Py_None, *snapshot_id = Py_None,                 \
             *as_of_ms = Py_None, *ref = Py_None;                                           \
    int row_lineage = 0;                                                                    \
    long long batch_size = 0
#define SCAN_ARGS &columns, &filter, &snapshot_id, &as_of_ms, &ref, &row_lineage, &batch_size
#define SCAN_FILL(a) scan_args_fill((a), columns, filter, snapshot_id, as_of_ms, ref, row_lineage, \
                                    batch_size)

/* ================================================================== */
/* Result: a finished query's arrays, exported once                    */



static void Result_dealloc(ResultObject *r)
{
    for (Py_ssize_t i = 0; i < r->n; i++)
        if (r->arrays[i].release)
            r->arrays[i].release(&r->arrays[i]);
    PyMem_RawFree(r->arrays);
    if (r->schema.release)
        r->schema.release(&r->schema);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

/* Reads the stream (moved) to its end with the GIL released, checking for
 * signals between batches.  New reference or NULL (stream released). */
static PyObject *result_from_stream(struct ArrowArrayStream *s)
{
    ResultObject *r = PyObject_New(ResultObject, &Result_Type);
    if (!r) {
        s->release(s);
        return NULL;
    }
    memset(&r->schema, 0, sizeof r->schema);
    r->arrays = NULL;
    r->n = r->cap = 0;
    r->num_rows = 0;
    r->consumed = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = s->get_schema(s, &r->schema);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        raise_stream_error(s, rc, "reading the result schema");
        goto fail;
    }
    for (;;) {
        if (r->n == r->cap) {
            Py_ssize_t cap = r->cap ? r->cap * 2 : 16;
            struct ArrowArray *a = PyMem_RawRealloc(r->arrays, (size_t)cap * sizeof *a);
            if (!a) {
                PyErr_NoMemory();
                goto fail;
            }
            r->arrays = a;
            r->cap = cap;
        }
        struct ArrowArray *next = &r->arrays[r->n];
        memset(next, 0, sizeof *next);
        Py_BEGIN_ALLOW_THREADS
        rc = s->get_next(s, next);
        Py_END_ALLOW_THREADS
        if (rc != 0) {
            if (next->release)
                next->release(next);
            raise_stream_error(s, rc, "reading the result");
            goto fail;
        }
        if (!next->release)
            break;
        r->num_rows += next->length;
        r->n++;
        if (PyErr_CheckSignals() < 0)   /* Ctrl-C: KeyboardInterrupt */
            goto fail;
    }
    s->release(s);
    return (PyObject *)r;
fail:
    if (s->release)
        s->release(s);
    Py_DECREF(r);
    return NULL;
}

static PyObject *Result_arrow_c_stream(ResultObject *r, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"requested_schema", NULL};
    PyObject *requested = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &requested))
        return NULL;
    (void)requested;  /* the spec lets a producer keep its own schema */
    if (r->consumed) {
        PyErr_SetString(PyExc_RuntimeError, "this result was already exported (a Result is "
                                            "read once; keep the pyarrow object)");
        return NULL;
    }
    struct ArrowArrayStream s;
    struct ArrowSchema schema = r->schema;
    r->schema.release = NULL;
    struct ArrowArray *arrays = r->arrays;
    int64_t n = r->n;
    r->arrays = NULL;
    r->n = r->cap = 0;
    r->consumed = 1;
    if (!arrays) {
        arrays = PyMem_RawMalloc(sizeof *arrays);
        if (!arrays) {
            if (schema.release)
                schema.release(&schema);
            return PyErr_NoMemory();
        }
    }
    if (list_stream_make(&schema, arrays, n, &s) != 0)
        return PyErr_NoMemory();
    return stream_capsule(&s);
}

static PyObject *Result_arrow_c_schema(ResultObject *r, UNUSED PyObject *noargs)
{
    if (!r->schema.release) {
        PyErr_SetString(PyExc_RuntimeError, "this result was already exported");
        return NULL;
    }
    struct ArrowSchema *s = PyMem_RawMalloc(sizeof *s);
    if (!s)
        return PyErr_NoMemory();
    if (schema_copy(&r->schema, s) != 0) {
        PyMem_RawFree(s);
        return PyErr_NoMemory();
    }
    PyObject *cap = PyCapsule_New(s, "arrow_schema", schema_capsule_free);
    if (!cap) {
        s->release(s);
        PyMem_RawFree(s);
    }
    return cap;
}

static int add_addresses(PyObject *list, const struct ArrowArray *a)
{
    for (int64_t i = 0; i < a->n_buffers; i++) {
        if (!a->buffers[i])
            continue;
        PyObject *v = PyLong_FromVoidPtr((void *)a->buffers[i]);
        if (!v || PyList_Append(list, v) < 0) {
            Py_XDECREF(v);
            return -1;
        }
        Py_DECREF(v);
    }
    for (int64_t i = 0; i < a->n_children; i++)
        if (add_addresses(list, a->children[i]) < 0)
            return -1;
    if (a->dictionary && add_addresses(list, a->dictionary) < 0)
        return -1;
    return 0;
}

static PyObject *Result_buffer_addresses(ResultObject *r, UNUSED PyObject *noargs)
{
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
    for (Py_ssize_t i = 0; i < r->n; i++)
        if (add_addresses(list, &r->arrays[i]) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    return list;
}

static PyObject *Result_get_num_rows(ResultObject *r, UNUSED void *c)
{
    return PyLong_FromLongLong(r->num_rows);
}

static PyObject *Result_get_num_batches(ResultObject *r, UNUSED void *c)
{
    return PyLong_FromSsize_t(r->n);
}

static PyMethodDef Result_methods[] = {
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))Result_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_stream__(requested_schema=None) -> PyCapsule\n\n"
     "Moves the result's record batches into an ArrowArrayStream capsule (once)."},
    {"__arrow_c_schema__", (PyCFunction)Result_arrow_c_schema, METH_NOARGS,
     "The result's schema as an \"arrow_schema\" capsule."},
    {"buffer_addresses", (PyCFunction)Result_buffer_addresses, METH_NOARGS,
     "Addresses of every data buffer the library exported (before export)."},
    {NULL}};

static PyGetSetDef Result_getset[] = {
    {"num_rows", (getter)Result_get_num_rows, NULL, "rows in the result", NULL},
    {"num_batches", (getter)Result_get_num_batches, NULL, "record batches", NULL},
    {NULL}};

PyTypeObject Result_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hyperstreamdb._core.Result",
    .tp_basicsize = sizeof(ResultObject),
    .tp_dealloc = (destructor)Result_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A finished query result held as Arrow arrays; read it once through "
              "__arrow_c_stream__ (e.g. pyarrow.table(result)).",
    .tp_methods = Result_methods,
    .tp_getset = Result_getset,
};

/* ================================================================== */
/* Stream: an unread scan stream, exported once (lazy reading)         */

typedef struct StreamObject {
    PyObject_HEAD
    struct ArrowArrayStream s;
} StreamObject;

static PyTypeObject Stream_Type;

static void Stream_dealloc(StreamObject *o)
{
    if (o->s.release)
        o->s.release(&o->s);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyObject *Stream_arrow_c_stream(StreamObject *o, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"requested_schema", NULL};
    PyObject *requested = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &requested))
        return NULL;
    if (!o->s.release) {
        PyErr_SetString(PyExc_RuntimeError, "this stream was already exported");
        return NULL;
    }
    return stream_capsule(&o->s);
}

static PyMethodDef Stream_methods[] = {
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))Stream_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_stream__(requested_schema=None) -> PyCapsule (once)."},
    {NULL}};

static PyTypeObject Stream_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hyperstreamdb._core.Stream",
    .tp_basicsize = sizeof(StreamObject),
    .tp_dealloc = (destructor)Stream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An unread scan: batches are read as the consumer pulls them.",
    .tp_methods = Stream_methods,
};

/* ================================================================== */
/* TableHandle                                                         */



/* Runs stmt with the GIL released and the table's lock held. */
#define LOCKED(self, stmt)                                      \
    do {                                                        \
        Py_BEGIN_ALLOW_THREADS                                  \
        PyThread_acquire_lock((self)->lock, WAIT_LOCK);         \
        stmt;                                                   \
        PyThread_release_lock((self)->lock);                    \
        Py_END_ALLOW_THREADS                                    \
    } while (0)

int check_open(TableObject *self)
{
    if (!self->t || self->close_pending) {
        PyErr_SetString(PyExc_ValueError, "the table handle is closed");
        return -1;
    }
    return 0;
}

static void table_close_now(TableObject *self)
{
    hs_table_close(self->t);
    hs_catalog_close(self->cat);
    self->t = NULL;
    self->cat = NULL;
}

static void Table_dealloc(TableObject *self)
{
    table_close_now(self);
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static TableObject *table_new(void)
{
    TableObject *self = PyObject_New(TableObject, &Table_Type);
    if (!self)
        return NULL;
    self->cat = NULL;
    self->t = NULL;
    self->pins = self->close_pending = 0;
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        Py_DECREF(self);
        PyErr_NoMemory();
        return NULL;
    }
    return self;
}

/* Opens the catalog a table handle owns: a path catalog without root, or the
 * catalog named by uri (hs_catalog_open_uri; _core_catalog.c). */
static hs_status open_own_catalog(const char *uri, const char *opts, hs_catalog **out,
                                  hs_error *err)
{
    return uri ? hs_catalog_open_uri(uri, opts, out, err) : hs_catalog_open_path(NULL, out, err);
}

/* _core.open_table(path, catalog=None, catalog_options=None, metadata=False):
 * metadata=True opens the metadata file `path` read-only. */
static PyObject *mod_open_table(UNUSED PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", "catalog", "catalog_options", "metadata", NULL};
    PyObject *path_o;
    const char *cat_uri = NULL, *cat_opts = NULL;
    int metadata = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|zzp", kwlist, &path_o, &cat_uri, &cat_opts,
                                     &metadata))
        return NULL;
    char *path;
    if (arg_str(path_o, "path", &path) < 0)
        return NULL;
    if (!path) {
        PyErr_SetString(PyExc_TypeError, "path must be a str");
        return NULL;
    }
    TableObject *self = table_new();
    if (!self) {
        PyMem_RawFree(path);
        return NULL;
    }
    hs_error err = {0};
    hs_status st;
    Py_BEGIN_ALLOW_THREADS
    if (metadata) {
        st = hs_table_open_metadata(path, &self->t, &err);
    } else {
        st = open_own_catalog(cat_uri, cat_opts, &self->cat, &err);
        if (st == HS_OK)
            st = hs_table_open(self->cat, path, &self->t, &err);
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(path);
    if (st != HS_OK) {
        Py_DECREF(self);
        return raise_status(st, &err);
    }
    return (PyObject *)self;
}

/* _core.create_table(path, schema, partition_spec=None, sort_order=None,
 *                    properties=None, format_version=0, catalog=None,
 *                    catalog_options=None, location=None) */
static PyObject *mod_create_table(UNUSED PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", "schema", "partition_spec", "sort_order", "properties",
                             "format_version", "catalog", "catalog_options", "location", NULL};
    PyObject *path_o, *schema_o, *spec_o = Py_None, *sort_o = Py_None, *props = Py_None;
    int fv = 0;
    const char *cat_uri = NULL, *cat_opts = NULL, *location = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOOizzz", kwlist, &path_o, &schema_o,
                                     &spec_o, &sort_o, &props, &fv, &cat_uri, &cat_opts,
                                     &location))
        return NULL;
    char *path = NULL, *spec = NULL, *sort = NULL;
    strvec keys = {0}, vals = {0};
    PyObject *cap = NULL, *ret = NULL;
    TableObject *self = NULL;
    if (arg_str(path_o, "path", &path) < 0 || arg_str(spec_o, "partition_spec", &spec) < 0 ||
        arg_str(sort_o, "sort_order", &sort) < 0)
        goto done;
    if (!path) {
        PyErr_SetString(PyExc_TypeError, "path must be a str");
        goto done;
    }
    if (props != Py_None) {
        if (!PyDict_Check(props)) {
            PyErr_SetString(PyExc_TypeError, "properties must be a dict of str to str");
            goto done;
        }
        PyObject *k = PyDict_Keys(props), *v = PyDict_Values(props);
        int ok = k && v && arg_strvec(k, "property names", &keys) == 0 &&
                 arg_strvec(v, "property values", &vals) == 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (!ok)
            goto done;
    }
    if (!PyObject_HasAttrString(schema_o, "__arrow_c_schema__")) {
        PyErr_Format(PyExc_TypeError, "schema must export __arrow_c_schema__ (e.g. a "
                                      "pyarrow.Schema), not %.100s", Py_TYPE(schema_o)->tp_name);
        goto done;
    }
    cap = PyObject_CallMethod(schema_o, "__arrow_c_schema__", NULL);
    if (!cap)
        goto done;
    if (!PyCapsule_IsValid(cap, "arrow_schema")) {
        PyErr_SetString(PyExc_TypeError, "__arrow_c_schema__() did not return an "
                                         "\"arrow_schema\" capsule");
        goto done;
    }
    const struct ArrowSchema *schema = PyCapsule_GetPointer(cap, "arrow_schema");
    self = table_new();
    if (!self)
        goto done;
    hs_table_create_options opt = {0};
    opt.arrow_schema = schema;
    opt.partition_spec = spec;
    opt.sort_order = sort;
    opt.property_keys = (const char *const *)keys.v;
    opt.property_values = (const char *const *)vals.v;
    opt.n_properties = keys.n;
    opt.format_version = fv;
    opt.location = location;
    hs_error err = {0};
    hs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = open_own_catalog(cat_uri, cat_opts, &self->cat, &err);
    if (st == HS_OK)
        st = hs_table_create(self->cat, path, &opt, &self->t, &err);
    Py_END_ALLOW_THREADS
    if (st != HS_OK) {
        raise_status(st, &err);
        goto done;
    }
    ret = (PyObject *)self;
    self = NULL;
done:
    Py_XDECREF(self);
    Py_XDECREF(cap);
    PyMem_RawFree(path);
    PyMem_RawFree(spec);
    PyMem_RawFree(sort);
    strvec_free(&keys);
    strvec_free(&vals);
    return ret;
}

/* A table registered in SQL sessions is closed when the last of them lets
 * go of it (they borrow the hs_table). */
static PyObject *Table_close(TableObject *self, UNUSED PyObject *noargs)
{
    if (self->pins > 0)
        self->close_pending = 1;
    else if (self->t)
        LOCKED(self, table_close_now(self));
    Py_RETURN_NONE;
}

void table_unpin(TableObject *self)   /* GIL held */
{
    if (--self->pins == 0 && self->close_pending && self->t)
        LOCKED(self, table_close_now(self));
}

static PyObject *Table_closed(TableObject *self, UNUSED void *c)
{
    return PyBool_FromLong(self->t == NULL || self->close_pending);
}

static PyObject *str_or_none(const char *s)
{
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

static PyObject *Table_info(TableObject *self, UNUSED PyObject *noargs)
{
    if (check_open(self) < 0)
        return NULL;
    const char *loc = NULL, *mloc = NULL;
    int fv = 0;
    int64_t snap = -1;
    PyObject *l = NULL, *ml = NULL;
    /* copy the borrowed strings under the lock */
    char *lc = NULL, *mlc = NULL;
    LOCKED(self, {
        loc = hs_table_location(self->t);
        mloc = hs_table_metadata_location(self->t);
        lc = raw_strdup(loc);
        mlc = raw_strdup(mloc);
        fv = hs_table_format_version(self->t);
        snap = hs_table_current_snapshot_id(self->t);
    });
    l = str_or_none(lc);
    ml = str_or_none(mlc);
    PyMem_RawFree(lc);
    PyMem_RawFree(mlc);
    if (!l || !ml) {
        Py_XDECREF(l);
        Py_XDECREF(ml);
        return NULL;
    }
    return Py_BuildValue("{sNsNsisL}", "location", l, "metadata_location", ml, "format_version",
                         fv, "current_snapshot_id", (long long)snap);
}

typedef hs_status (*json_getter)(const hs_table *, char **, hs_error *);

static PyObject *table_json(TableObject *self, json_getter fn)
{
    if (check_open(self) < 0)
        return NULL;
    char *out = NULL;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = fn(self->t, &out, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    PyObject *r = str_or_none(out ? out : "");
    hs_string_free(out);
    return r;
}

static PyObject *Table_metadata_json(TableObject *self, UNUSED PyObject *n)
{
    return table_json(self, hs_table_metadata_json);
}
static PyObject *Table_snapshots_json(TableObject *self, UNUSED PyObject *n)
{
    return table_json(self, hs_table_snapshots);
}
static PyObject *Table_history_json(TableObject *self, UNUSED PyObject *n)
{
    return table_json(self, hs_table_history);
}
static PyObject *Table_refs_json(TableObject *self, UNUSED PyObject *n)
{
    return table_json(self, hs_table_refs);
}
static PyObject *Table_properties_json(TableObject *self, UNUSED PyObject *n)
{
    return table_json(self, hs_table_properties);
}
static PyObject *Table_indexes_json(TableObject *self, UNUSED PyObject *n)
{
    REQUIRE_FN(hs_table_list_indexes);
    return table_json(self, hs_table_list_indexes);
}

static PyObject *Table_schema(TableObject *self, UNUSED PyObject *noargs)
{
    if (check_open(self) < 0)
        return NULL;
    ResultObject *r = PyObject_New(ResultObject, &Result_Type);
    if (!r)
        return NULL;
    memset(&r->schema, 0, sizeof r->schema);
    r->arrays = NULL;
    r->n = r->cap = 0;
    r->num_rows = 0;
    r->consumed = 0;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_schema(self->t, &r->schema, &err));
    if (st != HS_OK) {
        Py_DECREF(r);
        return raise_status(st, &err);
    }
    return (PyObject *)r;
}

static PyObject *Table_refresh(TableObject *self, UNUSED PyObject *noargs)
{
    if (check_open(self) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_refresh(self->t, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

/* append / overwrite share the input path: data -> (counting) stream. */
typedef enum write_kind { W_APPEND, W_OVERWRITE, W_OVERWRITE_PARTITIONS } write_kind;

/* done: None or a list; on success the new snapshot id is appended to it
 * before control returns to Python, so a caller can tell a published commit
 * from a failed one even when a KeyboardInterrupt is raised on the way out. */
static PyObject *table_write(TableObject *self, write_kind kind, PyObject *data,
                             PyObject *filter_o, PyObject *progress, long long total,
                             PyObject *done)
{
    if (check_open(self) < 0)
        return NULL;
    if (done != Py_None && !PyList_Check(done)) {
        PyErr_SetString(PyExc_TypeError, "done must be a list or None");
        return NULL;
    }
    if (progress != Py_None && !PyCallable_Check(progress)) {
        PyErr_SetString(PyExc_TypeError, "progress must be callable or None");
        return NULL;
    }
    char *filter = NULL;
    if (arg_str(filter_o, "filter", &filter) < 0)
        return NULL;
    progress_ctx pc = {0};
    pc.cb = progress;
    pc.last = now_seconds();
    struct ArrowArrayStream in = {0}, wrapped = {0};
    struct ArrowArrayStream *arg = NULL;
    if (data != Py_None) {
        if (stream_from_object(data, &in) < 0 ||
            count_stream_make(&in, &pc, "write", total, &wrapped) < 0) {
            PyMem_RawFree(filter);
            return NULL;
        }
        arg = &wrapped;
    } else if (kind != W_OVERWRITE) {
        PyMem_RawFree(filter);
        PyErr_SetString(PyExc_TypeError, "data must be Arrow data, not None");
        return NULL;
    }
    hs_error err = {0};
    hs_status st;
    int64_t snap = -1;
    LOCKED(self, {
        if (kind == W_APPEND)
            st = hs_table_append(self->t, arg, &err);
        else if (kind == W_OVERWRITE)
            st = hs_table_overwrite(self->t, arg, filter, &err);
        else
            st = hs_table_overwrite_partitions(self->t, arg, &err);
        snap = hs_table_current_snapshot_id(self->t);
    });
    PyMem_RawFree(filter);
    if (arg && arg->release)   /* the library releases it; this is belt and braces */
        arg->release(arg);
    PyObject *id = PyLong_FromLongLong(snap);
    if (st == HS_OK && done != Py_None && (!id || PyList_Append(done, id) < 0)) {
        Py_XDECREF(id);
        return NULL;
    }
    if (saved_exc_restore(&pc.exc)) {
        Py_XDECREF(id);
        return NULL;
    }
    if (st != HS_OK) {
        Py_XDECREF(id);
        return raise_status(st, &err);
    }
    return id;
}

static PyObject *Table_append(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"data", "progress", "total", "done", NULL};
    PyObject *data, *progress = Py_None, *done = Py_None;
    long long total = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OLO", kwlist, &data, &progress, &total, &done))
        return NULL;
    return table_write(self, W_APPEND, data, Py_None, progress, total, done);
}

static PyObject *Table_overwrite(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"data", "filter", "progress", "total", "done", NULL};
    PyObject *data = Py_None, *filter = Py_None, *progress = Py_None, *done = Py_None;
    long long total = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOLO", kwlist, &data, &filter, &progress,
                                     &total, &done))
        return NULL;
    return table_write(self, W_OVERWRITE, data, filter, progress, total, done);
}

static PyObject *Table_overwrite_partitions(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"data", "progress", "total", "done", NULL};
    PyObject *data, *progress = Py_None, *done = Py_None;
    long long total = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OLO", kwlist, &data, &progress, &total, &done))
        return NULL;
    return table_write(self, W_OVERWRITE_PARTITIONS, data, Py_None, progress, total, done);
}

static PyObject *Table_delete(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"filter", NULL};
    PyObject *filter_o;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O", kwlist, &filter_o))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    char *filter;
    if (arg_str(filter_o, "filter", &filter) < 0)
        return NULL;
    if (!filter) {
        PyErr_SetString(PyExc_TypeError, "filter must be a str");
        return NULL;
    }
    int64_t n = 0;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_delete(self->t, filter, &n, &err));
    PyMem_RawFree(filter);
    if (st != HS_OK)
        return raise_status(st, &err);
    return PyLong_FromLongLong(n);
}

static PyObject *Table_scan(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {SCAN_KW, NULL};
    SCAN_DECL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|" SCAN_FMT, kwlist, SCAN_ARGS))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    scan_args a;
    if (SCAN_FILL(&a) < 0)
        return NULL;
    struct ArrowArrayStream s = {0};
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_scan(self->t, &a.o, &s, &err));
    scan_args_free(&a);
    if (st != HS_OK)
        return raise_status(st, &err);
    return result_from_stream(&s);
}

static PyObject *Table_scan_stream(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {SCAN_KW, NULL};
    SCAN_DECL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|" SCAN_FMT, kwlist, SCAN_ARGS))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    scan_args a;
    if (SCAN_FILL(&a) < 0)
        return NULL;
    StreamObject *o = PyObject_New(StreamObject, &Stream_Type);
    if (!o) {
        scan_args_free(&a);
        return NULL;
    }
    memset(&o->s, 0, sizeof o->s);
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_scan(self->t, &a.o, &o->s, &err));
    scan_args_free(&a);
    if (st != HS_OK) {
        Py_DECREF(o);
        return raise_status(st, &err);
    }
    return (PyObject *)o;
}

static PyObject *Table_files_json(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {SCAN_KW, NULL};
    SCAN_DECL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|" SCAN_FMT, kwlist, SCAN_ARGS))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    scan_args a;
    if (SCAN_FILL(&a) < 0)
        return NULL;
    hs_scan *s = NULL;
    char *out = NULL;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, {
        st = hs_scan_plan(self->t, &a.o, &s, &err);
        if (st == HS_OK)
            st = hs_scan_files_json(s, &out, &err);
        hs_scan_free(s);
    });
    scan_args_free(&a);
    if (st != HS_OK)
        return raise_status(st, &err);
    PyObject *r = str_or_none(out);
    hs_string_free(out);
    return r;
}

static PyObject *Table_explain(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {SCAN_KW, NULL};
    SCAN_DECL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|" SCAN_FMT, kwlist, SCAN_ARGS))
        return NULL;
    REQUIRE_FN(hs_table_explain);
    if (check_open(self) < 0)
        return NULL;
    scan_args a;
    if (SCAN_FILL(&a) < 0)
        return NULL;
    char *out = NULL;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_explain(self->t, &a.o, &out, &err));
    scan_args_free(&a);
    if (st != HS_OK)
        return raise_status(st, &err);
    PyObject *r = str_or_none(out);
    hs_string_free(out);
    return r;
}

/* Reads a 1-D float32 C-contiguous buffer; 0 or -1. */
static int get_f32_vector(PyObject *o, const char *what, Py_buffer *view)
{
    if (PyObject_GetBuffer(o, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    if (strcmp(f, "f") != 0 || view->itemsize != 4 || (view->ndim != 1 && view->ndim != 2)) {
        PyErr_Format(PyExc_TypeError, "%s must be a 1-D (one query) or 2-D (a batch of "
                     "queries) float32 buffer", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *Table_search(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"column", "query", "k", "metric", "ef_search", "nprobe",
                             "distance_column", "rerank", SCAN_KW, NULL};
    PyObject *column_o, *query_o, *metric_o = Py_None, *dcol_o = Py_None;
    int k, ef = 0, nprobe = 0, rerank = 0;
    SCAN_DECL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOi|OiiOi" SCAN_FMT, kwlist, &column_o, &query_o,
                                     &k, &metric_o, &ef, &nprobe, &dcol_o, &rerank, SCAN_ARGS))
        return NULL;
    REQUIRE_FN(hs_table_search);
    if (check_open(self) < 0)
        return NULL;
    if (k <= 0) {
        PyErr_Format(PyExc_ValueError, "k must be > 0, got %d", k);
        return NULL;
    }
    if (ef < 0 || nprobe < 0 || rerank < 0) {
        PyErr_SetString(PyExc_ValueError, "ef_search, nprobe and rerank must be >= 0");
        return NULL;
    }
    char *column = NULL, *metric = NULL, *dcol = NULL;
    Py_buffer q = {0};
    scan_args a;
    if (SCAN_FILL(&a) < 0)
        return NULL;
    PyObject *ret = NULL;
    if (arg_str(column_o, "column", &column) < 0 || arg_str(metric_o, "metric", &metric) < 0 ||
        arg_str(dcol_o, "distance_column", &dcol) < 0)
        goto done;
    if (!column) {
        PyErr_SetString(PyExc_TypeError, "column must be a str");
        goto done;
    }
    if (get_f32_vector(query_o, "query", &q) < 0)
        goto done;
    /* a 2-D query is a batch: one row per query, answered by
     * hs_table_search_batch with a query_index column */
    bool batch = q.ndim == 2;
    Py_ssize_t n_q = batch ? q.shape[0] : 1, dim = batch ? q.shape[1] : q.shape[0];
    if (dim > INT32_MAX || n_q > INT32_MAX || dim == 0 || n_q == 0) {
        PyErr_Format(PyExc_ValueError, "query: %zd queries of %zd dimensions", n_q, dim);
        goto done;
    }
    if (batch && !hs_table_search_batch) {
        PyErr_SetString(PyExc_NotImplementedError, "hs_table_search_batch() is not in this "
                        "build of libhyperstream yet");
        goto done;
    }
    /* the package passes float32 queries through unchecked: this is the check
     * (same messages as _table.py's) */
    for (Py_ssize_t i = 0; i < n_q * dim; i++)
        if (!isfinite(((const float *)q.buf)[i])) {
            if (batch)
                PyErr_Format(PyExc_ValueError, "query has a non-finite value (NaN or infinity) "
                             "in row %zd at index %zd", i / dim, i % dim);
            else
                PyErr_Format(PyExc_ValueError, "query has a non-finite value (NaN or infinity) "
                             "at index %zd", i);
            goto done;
        }
    hs_search_options so = HS_SEARCH_OPTIONS_INIT;
    so.column = column;
    so.query = q.buf;
    so.dim = (int)dim;
    so.k = k;
    so.metric = metric;
    so.ef_search = ef;
    so.nprobe = nprobe;
    so.distance_column = dcol;
    so.rerank = rerank;
    struct ArrowArrayStream s = {0};
    hs_error err = {0};
    hs_status st;
    /* The lock stays held while the result is read: the search stream may
     * read through the table handle (unlike scans, which own a copy of the
     * metadata).  Taking the GIL while holding it is the allowed order. */
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    st = batch ? hs_table_search_batch(self->t, &a.o, &so, (int)n_q, &s, &err)
               : hs_table_search(self->t, &a.o, &so, &s, &err);
    Py_END_ALLOW_THREADS
    if (st != HS_OK) {
        PyThread_release_lock(self->lock);
        raise_status(st, &err);
        goto done;
    }
    ret = result_from_stream(&s);
    PyThread_release_lock(self->lock);
done:
    if (q.obj)
        PyBuffer_Release(&q);
    PyMem_RawFree(column);
    PyMem_RawFree(metric);
    PyMem_RawFree(dcol);
    scan_args_free(&a);
    return ret;
}

/* Table.rollback / Table.cherrypick: one snapshot id in, nothing out. */
static PyObject *snapshot_op(TableObject *self, PyObject *args, PyObject *kw,
                             hs_status (*op)(hs_table *, int64_t, hs_error *))
{
    static char *kwlist[] = {"snapshot_id", NULL};
    long long id;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L", kwlist, &id))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = op(self->t, id, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Table_rollback(TableObject *self, PyObject *args, PyObject *kw)
{
    return snapshot_op(self, args, kw, hs_table_rollback_to_snapshot);
}

static PyObject *Table_create_tag(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"name", "snapshot_id", NULL};
    PyObject *name_o;
    long long id = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|L", kwlist, &name_o, &id))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    char *name;
    if (arg_str(name_o, "name", &name) < 0)
        return NULL;
    if (!name) {
        PyErr_SetString(PyExc_TypeError, "name must be a str");
        return NULL;
    }
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_create_tag(self->t, name, id, &err));
    PyMem_RawFree(name);
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

/* Methods taking one string (or None where allowed) and returning nothing. */
typedef hs_status (*str_op)(hs_table *, const char *, hs_error *);

static PyObject *table_str_op(TableObject *self, PyObject *args, const char *what, str_op fn,
                              int allow_none)
{
    PyObject *o;
    if (!PyArg_ParseTuple(args, "O", &o))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    char *s;
    if (arg_str(o, what, &s) < 0)
        return NULL;
    if (!s && !allow_none) {
        PyErr_Format(PyExc_TypeError, "%s must be a str", what);
        return NULL;
    }
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = fn(self->t, s, &err));
    PyMem_RawFree(s);
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Table_remove_tag(TableObject *self, PyObject *args)
{
    return table_str_op(self, args, "name", hs_table_remove_tag, 0);
}
static PyObject *Table_update_schema(TableObject *self, PyObject *args)
{
    return table_str_op(self, args, "changes", hs_table_update_schema, 0);
}
static PyObject *Table_update_spec(TableObject *self, PyObject *args)
{
    return table_str_op(self, args, "spec", hs_table_update_spec, 0);
}
static PyObject *Table_replace_sort_order(TableObject *self, PyObject *args)
{
    return table_str_op(self, args, "sort_order", hs_table_replace_sort_order, 1);
}

static PyObject *Table_set_properties(TableObject *self, PyObject *args)
{
    PyObject *d;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &d))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    strvec keys = {0}, vals = {0};
    PyObject *k = PyDict_Keys(d), *v = PyDict_Values(d);
    int ok = k && v && arg_strvec(k, "property names", &keys) == 0 &&
             arg_strvec(v, "property values", &vals) == 0;
    Py_XDECREF(k);
    Py_XDECREF(v);
    if (!ok) {
        strvec_free(&keys);
        strvec_free(&vals);
        return NULL;
    }
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_set_properties(self->t, (const char *const *)keys.v,
                                              (const char *const *)vals.v, keys.n, &err));
    strvec_free(&keys);
    strvec_free(&vals);
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Table_remove_properties(TableObject *self, PyObject *args)
{
    PyObject *o;
    if (!PyArg_ParseTuple(args, "O", &o))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    strvec keys = {0};
    if (arg_strvec(o, "keys", &keys) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_remove_properties(self->t, (const char *const *)keys.v, keys.n,
                                                 &err));
    strvec_free(&keys);
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Table_upgrade(TableObject *self, PyObject *args)
{
    int v;
    if (!PyArg_ParseTuple(args, "i", &v))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_upgrade_format_version(self->t, v, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Table_add_index(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"column", "kind", "params_json", "progress", "n_threads", NULL};
    PyObject *column_o, *kind_o = Py_None, *params_o = Py_None, *progress = Py_None;
    int n_threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOOi", kwlist, &column_o, &kind_o, &params_o,
                                     &progress, &n_threads))
        return NULL;
    REQUIRE_FN(hs_table_add_index);
    if (check_open(self) < 0)
        return NULL;
    if (progress != Py_None && !PyCallable_Check(progress)) {
        PyErr_SetString(PyExc_TypeError, "progress must be callable or None");
        return NULL;
    }
    if (n_threads < 0) {
        PyErr_SetString(PyExc_ValueError, "n_threads must be >= 0");
        return NULL;
    }
    char *column = NULL, *kind = NULL, *params = NULL;
    if (arg_str(column_o, "column", &column) < 0 || arg_str(kind_o, "kind", &kind) < 0 ||
        arg_str(params_o, "params", &params) < 0) {
        PyMem_RawFree(column);
        PyMem_RawFree(kind);
        return NULL;
    }
    if (!column) {
        PyMem_RawFree(kind);
        PyMem_RawFree(params);
        PyErr_SetString(PyExc_TypeError, "column must be a str");
        return NULL;
    }
    progress_ctx pc = {0};
    pc.cb = progress;
    hs_index_options opt = {0};
    opt.kind = kind;
    opt.params_json = params;
    opt.progress = progress_fn;
    opt.progress_ctx = &pc;
    opt.n_threads = n_threads;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_add_index(self->t, column, &opt, &err));
    PyMem_RawFree(column);
    PyMem_RawFree(kind);
    PyMem_RawFree(params);
    if (saved_exc_restore(&pc.exc))
        return NULL;
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Table_drop_index(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"column", "kind", NULL};
    PyObject *column_o, *kind_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &column_o, &kind_o))
        return NULL;
    REQUIRE_FN(hs_table_drop_index);
    if (check_open(self) < 0)
        return NULL;
    char *column = NULL, *kind = NULL;
    if (arg_str(column_o, "column", &column) < 0 || arg_str(kind_o, "kind", &kind) < 0) {
        PyMem_RawFree(column);
        return NULL;
    }
    if (!column) {
        PyMem_RawFree(kind);
        PyErr_SetString(PyExc_TypeError, "column must be a str");
        return NULL;
    }
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_drop_index(self->t, column, kind, &err));
    PyMem_RawFree(column);
    PyMem_RawFree(kind);
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Table_remove_orphan_indexes(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"older_than_ms", NULL};
    long long older = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|L", kwlist, &older))
        return NULL;
    REQUIRE_FN(hs_table_remove_orphan_indexes);
    if (check_open(self) < 0)
        return NULL;
    int64_t n = 0;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_remove_orphan_indexes(self->t, older, &n, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    return PyLong_FromLongLong(n);
}

static PyObject *Table_refresh_indexes(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"progress", "n_threads", NULL};
    PyObject *progress = Py_None;
    int n_threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Oi", kwlist, &progress, &n_threads))
        return NULL;
    REQUIRE_FN(hs_table_refresh_indexes);
    if (check_open(self) < 0)
        return NULL;
    if (progress != Py_None && !PyCallable_Check(progress)) {
        PyErr_SetString(PyExc_TypeError, "progress must be callable or None");
        return NULL;
    }
    if (n_threads < 0) {
        PyErr_SetString(PyExc_ValueError, "n_threads must be >= 0");
        return NULL;
    }
    progress_ctx pc = {0};
    pc.cb = progress;
    hs_index_options opt = {0};
    opt.progress = progress_fn;
    opt.progress_ctx = &pc;
    opt.n_threads = n_threads;
    int64_t n = 0;
    hs_error err = {0};
    hs_status st;
    LOCKED(self, st = hs_table_refresh_indexes(self->t, &opt, &n, &err));
    if (saved_exc_restore(&pc.exc))
        return NULL;
    if (st != HS_OK)
        return raise_status(st, &err);
    return PyLong_FromLongLong(n);
}


/* Table maintenance (table.h "Maintenance"): op is "expire_snapshots",
 * "remove_orphan_files", "rewrite_manifests", "rewrite_position_delete_files"
 * or "compact"; the options
 * that op does not read are ignored.  Returns the call's JSON result text. */
static PyObject *Table_maintain(TableObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"op", "older_than_ms", "retain_last", "snapshot_ids", "dry_run",
                             "keep_files", "target_size_bytes", "min_input_files", "filter",
                             "progress", "zorder_by", "delete_file_threshold",
                             "delete_ratio_threshold", "size_tiered", "rewrite_all",
                             "partial_progress", "max_commits", "max_rewrite_fraction", NULL};
    const char *op;
    PyObject *older_o = Py_None, *ids_o = Py_None, *filter_o = Py_None, *progress = Py_None;
    PyObject *zorder_o = Py_None;
    int retain_last = 0, dry_run = 0, keep_files = 0, min_input_files = 0, del_files = 0;
    int size_tiered = 0, rewrite_all = 0, partial_progress = 0, max_commits = 0;
    double del_ratio = 0, max_fraction = 0;
    long long target = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OiOppLiOOOidpppid", kwlist, &op, &older_o,
                                     &retain_last, &ids_o, &dry_run, &keep_files, &target,
                                     &min_input_files, &filter_o, &progress, &zorder_o,
                                     &del_files, &del_ratio, &size_tiered, &rewrite_all,
                                     &partial_progress, &max_commits, &max_fraction))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    if (progress != Py_None && !PyCallable_Check(progress)) {
        PyErr_SetString(PyExc_TypeError, "progress must be callable or None");
        return NULL;
    }
    long long older = 0;
    if (older_o != Py_None && (older = PyLong_AsLongLong(older_o)) == -1 && PyErr_Occurred())
        return NULL;
    int64_t *ids = NULL;
    Py_ssize_t n_ids = 0;
    if (ids_o != Py_None) {
        PyObject *seq = PySequence_Fast(ids_o, "snapshot_ids must be a sequence of ints");
        if (!seq)
            return NULL;
        n_ids = PySequence_Fast_GET_SIZE(seq);
        ids = PyMem_RawCalloc((size_t)n_ids + 1, sizeof *ids);
        for (Py_ssize_t i = 0; ids && i < n_ids; i++) {
            ids[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
            if (ids[i] == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                PyMem_RawFree(ids);
                return NULL;
            }
        }
        Py_DECREF(seq);
        if (!ids)
            return PyErr_NoMemory();
    }
    char *filter = NULL, *zorder = NULL;
    if (arg_str(filter_o, "filter", &filter) < 0 || arg_str(zorder_o, "zorder_by", &zorder) < 0) {
        PyMem_RawFree(ids);
        PyMem_RawFree(filter);
        return NULL;
    }
    progress_ctx pc = {0};
    pc.cb = progress;
    hs_error err = {0};
    hs_status st = HS_INVALID;
    char *out = NULL;
    if (strcmp(op, "expire_snapshots") == 0) {
        hs_expire_options o = HS_EXPIRE_OPTIONS_INIT;
        o.use_older_than = older_o != Py_None;
        o.older_than_ms = older;
        o.retain_last = retain_last;
        o.snapshot_ids = ids;
        o.n_snapshot_ids = (int)n_ids;
        o.dry_run = dry_run;
        o.keep_files = keep_files;
        LOCKED(self, st = hs_table_expire_snapshots(self->t, &o, &out, &err));
    } else if (strcmp(op, "remove_orphan_files") == 0) {
        hs_orphan_options o = HS_ORPHAN_OPTIONS_INIT;
        o.use_older_than = older_o != Py_None;
        o.older_than_ms = older;
        o.dry_run = dry_run;
        LOCKED(self, st = hs_table_remove_orphan_files(self->t, &o, &out, &err));
    } else if (strcmp(op, "rewrite_manifests") == 0) {
        hs_rewrite_manifests_options o = HS_REWRITE_MANIFESTS_OPTIONS_INIT;
        o.target_size_bytes = target;
        o.dry_run = dry_run;
        LOCKED(self, st = hs_table_rewrite_manifests(self->t, &o, &out, &err));
    } else if (strcmp(op, "rewrite_position_delete_files") == 0) {
        hs_rewrite_deletes_options o = HS_REWRITE_DELETES_OPTIONS_INIT;
        o.target_file_size_bytes = target;
        o.min_input_files = min_input_files;
        o.rewrite_all = rewrite_all;
        o.dry_run = dry_run;
        LOCKED(self, st = hs_table_rewrite_position_delete_files(self->t, &o, &out, &err));
    } else if (strcmp(op, "compact") == 0) {
        hs_compact_options o = HS_COMPACT_OPTIONS_INIT;
        o.target_file_size_bytes = target;
        o.min_input_files = min_input_files;
        o.filter = filter;
        o.progress = progress_fn;
        o.progress_ctx = &pc;
        o.dry_run = dry_run;
        o.zorder_by = zorder;
        o.delete_file_threshold = del_files;
        o.delete_ratio_threshold = del_ratio;
        o.size_tiered = size_tiered;
        o.partial_progress = partial_progress;
        o.max_commits = max_commits;
        o.max_rewrite_fraction = max_fraction;
        LOCKED(self, st = hs_table_compact(self->t, &o, &out, &err));
    } else {
        PyMem_RawFree(ids);
        PyMem_RawFree(filter);
        PyMem_RawFree(zorder);
        return PyErr_Format(PyExc_ValueError, "unknown maintenance operation %s", op);
    }
    PyMem_RawFree(ids);
    PyMem_RawFree(filter);
    PyMem_RawFree(zorder);
    if (saved_exc_restore(&pc.exc)) {
        hs_string_free(out);
        return NULL;
    }
    if (st != HS_OK)
        return raise_status(st, &err);
    PyObject *r = PyUnicode_FromString(out ? out : "{}");
    hs_string_free(out);
    return r;
}

static PyObject *Table_cherrypick(TableObject *self, PyObject *args, PyObject *kw)
{
    return snapshot_op(self, args, kw, hs_table_cherrypick_snapshot);
}


static PyMethodDef Table_methods[] = {
    {"close", (PyCFunction)Table_close, METH_NOARGS, "Closes the handle (idempotent)."},
    {"info", (PyCFunction)Table_info, METH_NOARGS,
     "{location, metadata_location, format_version, current_snapshot_id (-1 = none)}"},
    {"metadata_json", (PyCFunction)Table_metadata_json, METH_NOARGS, "metadata.json text"},
    {"snapshots_json", (PyCFunction)Table_snapshots_json, METH_NOARGS, "snapshots (JSON)"},
    {"history_json", (PyCFunction)Table_history_json, METH_NOARGS, "snapshot log (JSON)"},
    {"refs_json", (PyCFunction)Table_refs_json, METH_NOARGS, "refs (JSON)"},
    {"properties_json", (PyCFunction)Table_properties_json, METH_NOARGS, "properties (JSON)"},
    {"indexes_json", (PyCFunction)Table_indexes_json, METH_NOARGS, "declared indexes (JSON)"},
    {"schema", (PyCFunction)Table_schema, METH_NOARGS,
     "The current schema as an empty Result (use pyarrow.schema(result))."},
    {"refresh", (PyCFunction)Table_refresh, METH_NOARGS, "Reloads the current metadata."},
    {"append", KWFN(Table_append), "append(data, progress=None, total=-1, done=None) -> snapshot id"},
    {"overwrite", KWFN(Table_overwrite),
     "overwrite(data=None, filter=None, progress=None, total=-1) -> snapshot id"},
    {"overwrite_partitions", KWFN(Table_overwrite_partitions),
     "overwrite_partitions(data, progress=None, total=-1) -> snapshot id"},
    {"delete", KWFN(Table_delete), "delete(filter) -> rows deleted"},
    {"scan", KWFN(Table_scan), "scan(columns, filter, snapshot_id, as_of_ms, ref, row_lineage, "
                               "batch_size) -> Result (read to the end)"},
    {"scan_stream", KWFN(Table_scan_stream), "scan_stream(...) -> Stream (read lazily)"},
    {"files_json", KWFN(Table_files_json), "files_json(...) -> the planned files (JSON)"},
    {"explain", KWFN(Table_explain), "explain(...) -> JSON report"},
    {"search", KWFN(Table_search),
     "search(column, query, k, metric=None, ef_search=0, nprobe=0, distance_column=None, rerank=0, "
     "<scan options>) -> Result"},
    {"rollback", KWFN(Table_rollback), "rollback(snapshot_id)"},
    {"maintain", KWFN(Table_maintain),
     "maintain(op, older_than_ms=None, retain_last=0, snapshot_ids=None, dry_run=False, "
     "keep_files=False, target_size_bytes=0, min_input_files=0, filter=None, progress=None, "
     "zorder_by=None) "
     "-> JSON text"},
    {"cherrypick", KWFN(Table_cherrypick), "cherrypick(snapshot_id)"},
    {"create_tag", KWFN(Table_create_tag), "create_tag(name, snapshot_id=-1)"},
    {"remove_tag", (PyCFunction)Table_remove_tag, METH_VARARGS, "remove_tag(name)"},
    {"update_schema", (PyCFunction)Table_update_schema, METH_VARARGS, "update_schema(json)"},
    {"update_spec", (PyCFunction)Table_update_spec, METH_VARARGS, "update_spec(text)"},
    {"replace_sort_order", (PyCFunction)Table_replace_sort_order, METH_VARARGS,
     "replace_sort_order(text or None)"},
    {"set_properties", (PyCFunction)Table_set_properties, METH_VARARGS, "set_properties(dict)"},
    {"remove_properties", (PyCFunction)Table_remove_properties, METH_VARARGS,
     "remove_properties(list)"},
    {"upgrade", (PyCFunction)Table_upgrade, METH_VARARGS, "upgrade(format_version)"},
    {"add_index", KWFN(Table_add_index),
     "add_index(column, kind=None, params_json=None, progress=None, n_threads=0)"},
    {"drop_index", KWFN(Table_drop_index), "drop_index(column, kind=None)"},
    {"remove_orphan_indexes", KWFN(Table_remove_orphan_indexes),
     "remove_orphan_indexes(older_than_ms=0) -> files removed"},
    {"refresh_indexes", KWFN(Table_refresh_indexes),
     "refresh_indexes(progress=None, n_threads=0) -> registry entries added"},
    {NULL}};

static PyGetSetDef Table_getset[] = {
    {"closed", (getter)Table_closed, NULL, "whether close() was called", NULL},
    {NULL}};

PyTypeObject Table_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hyperstreamdb._core.TableHandle",
    .tp_basicsize = sizeof(TableObject),
    .tp_dealloc = (destructor)Table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open Iceberg table (hs_table) of a path catalog; made by open_table or "
              "create_table.  Calls are serialized by a lock and run without the GIL.",
    .tp_methods = Table_methods,
    .tp_getset = Table_getset,
};

/* ================================================================== */
/* distances                                                           */

static int metric_arg(PyObject *o, hs_metric *m)
{
    char *name;
    if (arg_str(o, "metric", &name) < 0)
        return -1;
    if (!name) {
        PyErr_SetString(PyExc_TypeError, "metric must be a str");
        return -1;
    }
    hs_error err = {0};
    hs_status st = hs_metric_from_name(name, m, &err);
    PyMem_RawFree(name);
    if (st != HS_OK) {
        raise_status(st, &err);
        return -1;
    }
    return 0;
}

/* Element format of a buffer: 'f' float32, 'e' float16, 'b' int8, 'B' uint8,
 * or 0 for anything else (byte order marks for native little-endian skipped). */
static char buf_kind(const Py_buffer *v)
{
    const char *f = v->format ? v->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    if (f[0] && !f[1]) {
        if (f[0] == 'f' && v->itemsize == 4)
            return 'f';
        if (f[0] == 'e' && v->itemsize == 2)
            return 'e';
        if ((f[0] == 'b' || f[0] == 'B' || f[0] == 'c') && v->itemsize == 1)
            return f[0] == 'b' ? 'b' : 'B';
    }
    return 0;
}

static int get_vector(PyObject *o, const char *what, Py_buffer *v)
{
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous numeric array, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if (v->ndim > 1) {
        PyErr_Format(PyExc_ValueError, "%s must be 1-D, got %d dimensions", what, v->ndim);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

/* The first non-finite element of a float32 vector, or -1. */
static Py_ssize_t first_nonfinite_f32(const float *a, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (!isfinite(a[i]))
            return i;
    return -1;
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f)
        bits = sign | 0x7f800000u | (man << 13);
    else if (exp == 0) {
        if (man == 0)
            bits = sign;
        else {
            float f = ldexpf((float)man, -24);
            return sign ? -f : f;
        }
    } else
        bits = sign | ((exp + 112) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static Py_ssize_t first_nonfinite(const Py_buffer *v, char kind)
{
    Py_ssize_t n = v->len / (v->itemsize ? v->itemsize : 1);
    if (kind == 'f')
        return first_nonfinite_f32(v->buf, n);
    if (kind == 'e')
        for (Py_ssize_t i = 0; i < n; i++)
            if (!isfinite(half_to_float(((const uint16_t *)v->buf)[i])))
                return i;
    return -1;
}

/* _core.distance(metric, a, b) -> float; a and b 1-D buffers of one kind. */
static PyObject *mod_distance(UNUSED PyObject *m, PyObject *args)
{
    PyObject *mo, *ao, *bo;
    if (!PyArg_ParseTuple(args, "OOO", &mo, &ao, &bo))
        return NULL;
    REQUIRE_FN(hs_metric_from_name);
    REQUIRE_FN(hs_distance_f32);
    hs_metric metric;
    if (metric_arg(mo, &metric) < 0)
        return NULL;
    Py_buffer a, b;
    if (get_vector(ao, "a", &a) < 0)
        return NULL;
    if (get_vector(bo, "b", &b) < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    PyObject *ret = NULL;
    char ka = buf_kind(&a), kb = buf_kind(&b);
    Py_ssize_t na = a.itemsize ? a.len / a.itemsize : 0, nb = b.itemsize ? b.len / b.itemsize : 0;
    if (!ka || ka != kb || ka == 'B') {
        PyErr_SetString(PyExc_TypeError, "a and b must both be float32, float16 or int8 arrays");
        goto done;
    }
    if (na != nb) {
        PyErr_Format(PyExc_ValueError, "vectors have different dimensions: %zd and %zd", na, nb);
        goto done;
    }
    if ((ka == 'e' && !hs_distance_f16) || (ka == 'b' && !hs_distance_i8)) {
        PyErr_SetString(PyExc_NotImplementedError, "float16 / int8 distances are not in this "
                                                   "build of libhyperstream yet");
        goto done;
    }
    double d;
    if (ka == 'f')
        d = hs_distance_f32(metric, a.buf, b.buf, (size_t)na);
    else if (ka == 'e')
        d = hs_distance_f16(metric, a.buf, b.buf, (size_t)na);
    else
        d = hs_distance_i8(metric, a.buf, b.buf, (size_t)na);
    if (!isfinite(d)) {
        Py_ssize_t ia = first_nonfinite(&a, ka), ib = first_nonfinite(&b, kb);
        if (ia >= 0 || ib >= 0) {
            PyErr_Format(PyExc_ValueError, "%s has a non-finite value (NaN or infinity) at "
                                           "index %zd", ia >= 0 ? "a" : "b", ia >= 0 ? ia : ib);
            goto done;
        }
    }
    ret = PyFloat_FromDouble(d);
done:
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return ret;
}

/* _core.distance_batch(metric, q, x, out, n_threads): q (nq, d), x (nx, d),
 * out (nq, nx), all float32 C-contiguous; out written in place. */
static PyObject *mod_distance_batch(UNUSED PyObject *m, PyObject *args)
{
    PyObject *mo, *qo, *xo, *oo;
    int n_threads = 0;
    if (!PyArg_ParseTuple(args, "OOOO|i", &mo, &qo, &xo, &oo, &n_threads))
        return NULL;
    REQUIRE_FN(hs_metric_from_name);
    REQUIRE_FN(hs_distance_batch_f32);
    hs_metric metric;
    if (metric_arg(mo, &metric) < 0)
        return NULL;
    Py_buffer q = {0}, x = {0}, o = {0};
    PyObject *ret = NULL;
    if (PyObject_GetBuffer(qo, &q, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0 ||
        PyObject_GetBuffer(xo, &x, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0 ||
        PyObject_GetBuffer(oo, &o, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        goto done;
    if (buf_kind(&q) != 'f' || buf_kind(&x) != 'f' || buf_kind(&o) != 'f' || q.ndim != 2 ||
        x.ndim != 2 || o.ndim != 2) {
        PyErr_SetString(PyExc_TypeError, "distance_batch takes 2-D float32 arrays");
        goto done;
    }
    Py_ssize_t nq = q.shape[0], d = q.shape[1], nx = x.shape[0];
    if (x.shape[1] != d) {
        PyErr_Format(PyExc_ValueError, "query dimension %zd != database dimension %zd", d,
                     x.shape[1]);
        goto done;
    }
    if (o.shape[0] != nq || o.shape[1] != nx) {
        PyErr_SetString(PyExc_ValueError, "out has the wrong shape");
        goto done;
    }
    hs_error err = {0};
    hs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = hs_distance_batch_f32(metric, q.buf, (size_t)nq, x.buf, (size_t)nx, (size_t)d, o.buf,
                               n_threads, &err);
    Py_END_ALLOW_THREADS
    if (st != HS_OK) {
        raise_status(st, &err);
        goto done;
    }
    /* a non-finite distance: NaN / infinity in the inputs is an error (an all-zero
     * vector's cosine distance is NaN by definition and is kept) */
    const float *out = o.buf;
    for (Py_ssize_t i = 0; i < nq; i++)
        for (Py_ssize_t j = 0; j < nx; j++) {
            if (isfinite(out[i * nx + j]))
                continue;
            Py_ssize_t bad = first_nonfinite_f32((const float *)q.buf + i * d, d);
            if (bad >= 0) {
                PyErr_Format(PyExc_ValueError, "query %zd has a non-finite value (NaN or "
                                               "infinity) at index %zd", i, bad);
                goto done;
            }
            bad = first_nonfinite_f32((const float *)x.buf + j * d, d);
            if (bad >= 0) {
                PyErr_Format(PyExc_ValueError, "database vector %zd has a non-finite value "
                                               "(NaN or infinity) at index %zd", j, bad);
                goto done;
            }
        }
    ret = Py_NewRef(Py_None);
done:
    if (q.obj)
        PyBuffer_Release(&q);
    if (x.obj)
        PyBuffer_Release(&x);
    if (o.obj)
        PyBuffer_Release(&o);
    return ret;
}

/* Sparse vectors: indices uint32, values float32 (both 1-D, same length). */
static int get_sparse(PyObject *io, PyObject *vo, const char *what, Py_buffer *i, Py_buffer *v)
{
    if (PyObject_GetBuffer(io, i, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (PyObject_GetBuffer(vo, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(i);
        return -1;
    }
    const char *f = i->format ? i->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    if ((strcmp(f, "I") != 0 && strcmp(f, "L") != 0) || i->itemsize != 4 || i->ndim != 1 ||
        buf_kind(v) != 'f' || v->ndim != 1) {
        PyErr_Format(PyExc_TypeError, "%s: indices must be uint32 and values float32 (1-D)",
                     what);
        goto fail;
    }
    if (i->shape[0] != v->shape[0]) {
        PyErr_Format(PyExc_ValueError, "%s: %zd indices but %zd values", what, i->shape[0],
                     v->shape[0]);
        goto fail;
    }
    return 0;
fail:
    PyBuffer_Release(i);
    PyBuffer_Release(v);
    return -1;
}

/* _core.sparse_check(indices, values, dim) */
static PyObject *mod_sparse_check(UNUSED PyObject *m, PyObject *args)
{
    PyObject *io, *vo;
    unsigned long long dim;
    if (!PyArg_ParseTuple(args, "OOK", &io, &vo, &dim))
        return NULL;
    REQUIRE_FN(hs_sparse_check);
    if (dim > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "dim must be < 2**32");
        return NULL;
    }
    Py_buffer i, v;
    if (get_sparse(io, vo, "sparse vector", &i, &v) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st = hs_sparse_check(i.buf, v.buf, (size_t)i.shape[0], (uint32_t)dim, &err);
    Py_ssize_t bad = first_nonfinite_f32(v.buf, v.shape[0]);
    PyBuffer_Release(&i);
    PyBuffer_Release(&v);
    if (st != HS_OK)
        return raise_status(st, &err);
    if (bad >= 0)
        return PyErr_Format(PyExc_ValueError, "sparse vector: value %zd is not finite", bad);
    Py_RETURN_NONE;
}

/* _core.distance_sparse(metric, ai, av, bi, bv) */
static PyObject *mod_distance_sparse(UNUSED PyObject *m, PyObject *args)
{
    PyObject *mo, *aio, *avo, *bio, *bvo;
    if (!PyArg_ParseTuple(args, "OOOOO", &mo, &aio, &avo, &bio, &bvo))
        return NULL;
    REQUIRE_FN(hs_metric_from_name);
    REQUIRE_FN(hs_distance_sparse);
    hs_metric metric;
    if (metric_arg(mo, &metric) < 0)
        return NULL;
    Py_buffer ai, av, bi, bv;
    if (get_sparse(aio, avo, "a", &ai, &av) < 0)
        return NULL;
    if (get_sparse(bio, bvo, "b", &bi, &bv) < 0) {
        PyBuffer_Release(&ai);
        PyBuffer_Release(&av);
        return NULL;
    }
    double d = hs_distance_sparse(metric, ai.buf, av.buf, (size_t)ai.shape[0], bi.buf, bv.buf,
                                  (size_t)bi.shape[0]);
    PyBuffer_Release(&ai);
    PyBuffer_Release(&av);
    PyBuffer_Release(&bi);
    PyBuffer_Release(&bv);
    return PyFloat_FromDouble(d);
}

/* _core.distance_packed(metric, a, b): uint8 buffers of packed bits. */
static PyObject *mod_distance_packed(UNUSED PyObject *m, PyObject *args)
{
    PyObject *mo, *ao, *bo;
    if (!PyArg_ParseTuple(args, "OOO", &mo, &ao, &bo))
        return NULL;
    REQUIRE_FN(hs_metric_from_name);
    REQUIRE_FN(hs_distance_packed);
    hs_metric metric;
    if (metric_arg(mo, &metric) < 0)
        return NULL;
    if (metric != HS_METRIC_HAMMING && metric != HS_METRIC_JACCARD) {
        PyErr_SetString(PyExc_ValueError, "packed binary vectors support only the hamming and "
                                          "jaccard metrics");
        return NULL;
    }
    Py_buffer a, b;
    if (get_vector(ao, "a", &a) < 0)
        return NULL;
    if (get_vector(bo, "b", &b) < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    PyObject *ret = NULL;
    char ka = buf_kind(&a), kb = buf_kind(&b);
    if ((ka != 'B' && ka != 'b') || (kb != 'B' && kb != 'b')) {
        PyErr_SetString(PyExc_TypeError, "packed vectors must be uint8 arrays (numpy.packbits)");
        goto done;
    }
    if (a.len != b.len) {
        PyErr_Format(PyExc_ValueError, "packed vectors have different lengths: %zd and %zd bytes",
                     a.len, b.len);
        goto done;
    }
    ret = PyFloat_FromDouble(hs_distance_packed(metric, a.buf, b.buf, (size_t)a.len));
done:
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return ret;
}

static PyObject *mod_simd_level(UNUSED PyObject *m, UNUSED PyObject *noargs)
{
    REQUIRE_FN(hs_simd_level);
    return PyUnicode_FromString(hs_simd_level());
}

static PyObject *mod_set_simd_level(UNUSED PyObject *m, PyObject *args)
{
    PyObject *o;
    if (!PyArg_ParseTuple(args, "O", &o))
        return NULL;
    REQUIRE_FN(hs_simd_set_level);
    char *level;
    if (arg_str(o, "level", &level) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st = hs_simd_set_level(level, &err);
    PyMem_RawFree(level);
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

/* Warnings of the library (hyperstream/config.h) become Python warnings of
 * category HyperStreamWarning.  The handler may run on any library thread,
 * with or without the GIL, under the library's warning mutex: it never
 * takes the GIL (that could deadlock against a thread holding the GIL and
 * waiting for the mutex), it queues the message with Py_AddPendingCall,
 * and the main thread issues warnings.warn at its next bytecode boundary.
 * When the queue is full the message goes to stderr as before. */
static PyObject *W_warning;

static int warn_pending(void *arg)
{
    char *msg = arg;
    int rc = PyErr_WarnEx(W_warning ? W_warning : PyExc_RuntimeWarning, msg, 1);
    PyMem_RawFree(msg);
    return rc;
}

static void route_warning(UNUSED void *user, const char *msg)
{
    size_t n = strlen(msg) + 1;
    char *copy = PyMem_RawMalloc(n);
    if (copy) {
        memcpy(copy, msg, n);
        if (Py_AddPendingCall(warn_pending, copy) == 0)
            return;
        PyMem_RawFree(copy);
    }
    fprintf(stderr, "hyperstream: warning: %s\n", msg);
}

/* _core.config_set(key, value or None); value: int, bool, str, or a path
 * (os.PathLike, for text settings such as s3_lock_dir). */
static PyObject *mod_config_set(UNUSED PyObject *m, PyObject *args)
{
    const char *key;
    PyObject *v;
    if (!PyArg_ParseTuple(args, "sO", &key, &v))
        return NULL;
    hs_error err = {0};
    hs_status st;
    if (v == Py_None) {
        st = hs_config_set(key, NULL, &err);
    } else if (PyLong_Check(v)) {   /* bool included */
        long long n = PyLong_AsLongLong(v);
        if (n == -1 && PyErr_Occurred())
            return NULL;
        st = hs_config_set_int(key, n, &err);
    } else if (PyUnicode_Check(v) || PyObject_HasAttrString(v, "__fspath__")) {
        PyObject *p = PyOS_FSPath(v);   /* str stays str; a path gives str or bytes */
        if (!p)
            return NULL;
        const char *text = PyBytes_Check(p) ? PyBytes_AsString(p) : PyUnicode_AsUTF8(p);
        if (!text) {
            Py_DECREF(p);
            return NULL;
        }
        st = hs_config_set(key, text, &err);
        Py_DECREF(p);
    } else {
        return PyErr_Format(PyExc_TypeError, "setting %s: expected int, bool, str, a path or "
                            "None", key);
    }
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

/* _core.config_get(key) -> int, or str for a text setting;
 * _core.config_keys() -> list of str. */
static PyObject *mod_config_get(UNUSED PyObject *m, PyObject *args)
{
    const char *key;
    if (!PyArg_ParseTuple(args, "s", &key))
        return NULL;
    hs_error err = {0};
    if (hs_config_is_str(key) == 1) {
        char buf[HS_CONFIG_STR_MAX];
        hs_status st = hs_config_get_str(key, buf, sizeof buf, &err);
        if (st != HS_OK)
            return raise_status(st, &err);
        return PyUnicode_DecodeFSDefault(buf);
    }
    int64_t v;
    hs_status st = hs_config_get_int(key, &v, &err);
    if (st != HS_OK)
        return raise_status(st, &err);
    return PyLong_FromLongLong(v);
}

static PyObject *mod_config_keys(UNUSED PyObject *m, UNUSED PyObject *noargs)
{
    PyObject *l = PyList_New(0);
    for (int i = 0; l && hs_config_key(i); i++) {
        PyObject *s = PyUnicode_FromString(hs_config_key(i));
        if (!s || PyList_Append(l, s) < 0) {
            Py_XDECREF(s);
            Py_CLEAR(l);
            break;
        }
        Py_DECREF(s);
    }
    return l;
}

static PyObject *mod_version(UNUSED PyObject *m, UNUSED PyObject *noargs)
{
    return PyUnicode_FromString(hs_version());
}

/* _core.available(name) -> whether an optional C function is linked. */
static PyObject *mod_available(UNUSED PyObject *m, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    int present;
    if (strcmp(name, "index") == 0)
        present = hs_table_add_index && hs_table_drop_index && hs_table_list_indexes;
    else if (strcmp(name, "search") == 0)
        present = hs_table_search != NULL;
    else if (strcmp(name, "explain") == 0)
        present = hs_table_explain != NULL;
    else if (strcmp(name, "distance") == 0)
        present = hs_metric_from_name && hs_distance_f32 && hs_distance_batch_f32 &&
                  hs_distance_sparse && hs_distance_packed && hs_sparse_check;
    else
        return PyErr_Format(PyExc_ValueError, "unknown feature %s", name);
    return PyBool_FromLong(present);
}

static PyMethodDef module_methods[] = {
    {"open_table", KWFN(mod_open_table),
     "open_table(path, catalog=None, catalog_options=None, metadata=False) -> TableHandle"},
    {"create_table", KWFN(mod_create_table),
     "create_table(path, schema, partition_spec=None, sort_order=None, properties=None, "
     "format_version=0, catalog=None, catalog_options=None, location=None) -> TableHandle"},
    {"distance", mod_distance, METH_VARARGS, "distance(metric, a, b) -> float"},
    {"distance_batch", mod_distance_batch, METH_VARARGS,
     "distance_batch(metric, queries, database, out, n_threads=0)"},
    {"sparse_check", mod_sparse_check, METH_VARARGS, "sparse_check(indices, values, dim)"},
    {"distance_sparse", mod_distance_sparse, METH_VARARGS,
     "distance_sparse(metric, a_indices, a_values, b_indices, b_values) -> float"},
    {"distance_packed", mod_distance_packed, METH_VARARGS, "distance_packed(metric, a, b)"},
    {"simd_level", mod_simd_level, METH_NOARGS, "the SIMD level the distance kernels use"},
    {"set_simd_level", mod_set_simd_level, METH_VARARGS, "set_simd_level(level or None)"},
    {"config_set", mod_config_set, METH_VARARGS,
     "config_set(key, value): a process-wide setting (hyperstream/config.h); None restores it"},
    {"config_get", mod_config_get, METH_VARARGS, "config_get(key) -> int (str for text settings)"},
    {"config_keys", mod_config_keys, METH_NOARGS, "config_keys() -> the settings' keys"},
    {"version", mod_version, METH_NOARGS, "version() -> the C library's version"},
    {"available", mod_available, METH_VARARGS,
     "available(feature) -> whether the C functions of 'index', 'search', 'explain' or "
     "'distance' are in this build"},
    {NULL}};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "hyperstreamdb._core",
    "C extension of hyperstreamdb over the HyperStreamDB C API (see the package).", -1,
    module_methods, NULL, NULL, NULL, NULL};

static PyObject *new_exc(PyObject *mod, const char *name, PyObject *bases, const char *doc)
{
    char full[128];
    snprintf(full, sizeof full, "hyperstreamdb.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    if (!e)
        return NULL;
    if (PyModule_AddObjectRef(mod, name, e) < 0) {
        Py_DECREF(e);
        return NULL;
    }
    return e;
}

static PyObject *new_sub(PyObject *mod, const char *name, PyObject *std, const char *doc)
{
    PyObject *bases = std ? PyTuple_Pack(2, E_base, std) : PyTuple_Pack(1, E_base);
    if (!bases)
        return NULL;
    PyObject *e = new_exc(mod, name, bases, doc);
    Py_DECREF(bases);
    return e;
}

PyMODINIT_FUNC PyInit__core(void)
{
    if (PyType_Ready(&Result_Type) < 0 || PyType_Ready(&Stream_Type) < 0 ||
        PyType_Ready(&Table_Type) < 0 || PyType_Ready(&Session_Type) < 0 ||
        PyType_Ready(&SqlResult_Type) < 0 || PyType_Ready(&AppendStream_Type) < 0 ||
        PyType_Ready(&Catalog_Type) < 0)
        return NULL;
    PyObject *mod = PyModule_Create(&core_module);
    if (!mod)
        return NULL;
    if (PyModule_AddObjectRef(mod, "Result", (PyObject *)&Result_Type) < 0 ||
        PyModule_AddObjectRef(mod, "Stream", (PyObject *)&Stream_Type) < 0 ||
        PyModule_AddObjectRef(mod, "TableHandle", (PyObject *)&Table_Type) < 0 ||
        PyModule_AddObjectRef(mod, "Session", (PyObject *)&Session_Type) < 0 ||
        PyModule_AddObjectRef(mod, "SqlResult", (PyObject *)&SqlResult_Type) < 0 ||
        PyModule_AddObjectRef(mod, "AppendStream", (PyObject *)&AppendStream_Type) < 0 ||
        PyModule_AddObjectRef(mod, "CatalogHandle", (PyObject *)&Catalog_Type) < 0 ||
        PyModule_AddFunctions(mod, catalog_module_methods) < 0)
        goto fail;
    {   /* the thread Ctrl-C reaches (see "SQL sessions") */
        PyObject *th = PyImport_ImportModule("threading");
        PyObject *mt = th ? PyObject_CallMethod(th, "main_thread", NULL) : NULL;
        PyObject *id = mt ? PyObject_GetAttrString(mt, "ident") : NULL;
        if (id && PyLong_Check(id)) {
            g_main_thread = (pthread_t)PyLong_AsUnsignedLong(id);
            g_main_thread_known = !PyErr_Occurred();
        }
        Py_XDECREF(id);
        Py_XDECREF(mt);
        Py_XDECREF(th);
        PyErr_Clear();
    }
    E_base = new_exc(mod, "HyperStreamError", PyExc_Exception,
                     "Base class of the errors HyperStreamDB raises; .status names the C "
                     "status (e.g. \"HS_CORRUPT\").");
    if (!E_base)
        goto fail;
    if (!(E_invalid = new_sub(mod, "InvalidArgumentError", PyExc_ValueError,
                              "HS_INVALID: an argument was invalid (also a ValueError).")) ||
        !(E_notfound = new_sub(mod, "NotFoundError", PyExc_FileNotFoundError,
                               "HS_NOT_FOUND: a table, file, column, snapshot or key does not "
                               "exist (also a FileNotFoundError).")) ||
        !(E_conflict = new_sub(mod, "CommitConflictError", NULL,
                               "HS_CONFLICT: a concurrent commit won and this change cannot be "
                               "rebased onto it; reload and retry.")) ||
        !(E_corrupt = new_sub(mod, "CorruptDataError", NULL,
                              "HS_CORRUPT: bytes on disk violate their format; .src_file and "
                              ".src_line name the check that fired.")) ||
        !(E_unsupported = new_sub(mod, "UnsupportedError", PyExc_NotImplementedError,
                                  "HS_UNSUPPORTED: valid, but not implemented by this build "
                                  "(also a NotImplementedError).")) ||
        !(E_storage = new_sub(mod, "StorageError", PyExc_OSError,
                              "HS_IO: an operating-system or object-store call failed (also an "
                              "OSError).")) ||
        !(E_internal = new_sub(mod, "InternalError", PyExc_RuntimeError,
                               "HS_INTERNAL: a broken invariant inside the library (a bug).")) ||
        !(E_busy = new_sub(mod, "BusyError", NULL,
                           "HS_BUSY: an append stream's memory budget stayed full past the busy "
                           "timeout, or another stream holds the table's write-ahead log.")))
        goto fail;
    W_warning = PyErr_NewExceptionWithDoc(
        "hyperstreamdb.HyperStreamWarning",
        "A condition the library reports without failing the call (a corrupt index sidecar "
        "skipped, an unreadable index registry); a RuntimeWarning.",
        PyExc_RuntimeWarning, NULL);
    if (!W_warning || PyModule_AddObjectRef(mod, "HyperStreamWarning", W_warning) < 0)
        goto fail;
    hs_set_warning_handler(route_warning, NULL);
    return mod;
fail:
    Py_DECREF(mod);
    return NULL;
}

/*
 * python/hyperstreamdb/_core_sql.c - the SQL half of the extension:
 * _core.Session over hs_session and _core.SqlResult over hs_result
 * (include/hyperstream/sql.h).  Shared pieces are declared in _core.h.
 */
#include "_core.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================== */
/* SQL sessions (hyperstream/sql.h)                                    */
/*
 *   _core.Session     hs_session (+ the hs_catalog it was opened with) and a
 *                     lock: one statement or batch read at a time; cancel()
 *                     takes no lock (hs_session_cancel is for any thread).
 *   _core.SqlResult   hs_result: tag, rows affected, and its stream read
 *                     batch by batch (read_batch / read_all) or exported
 *                     once, wrapped, through __arrow_c_stream__.
 *
 * Lifetime.  A result's stream may outlive the result but not the session,
 * so every SqlResult and every exported stream holds a reference to its
 * Session object and counts in Session.live; close() closes the hs_session
 * at once when nothing is live, else when the last of them goes.
 *
 * Ctrl-C.  While the main thread runs a statement or reads a batch (GIL
 * released), SIGINT's handler is ours: it calls hs_session_cancel
 * (async-signal-safe) and then the handler it replaced (Python's, which
 * trips the flag PyErr_CheckSignals turns into KeyboardInterrupt).  The
 * statement stops with HS_CANCELLED; the pending KeyboardInterrupt (or
 * whatever the Python-level handler raises) is what the caller sees.  Other
 * threads cancel with Session.cancel(). */

/* The distinct registered tables, sorted by address.  The session borrows
 * their hs_table, which is not for concurrent use, so everything that runs
 * a statement or reads rows holds the session's lock and then theirs (in
 * this order: no thread takes them the other way round). */
typedef struct table_set {
    TableObject **a;
    Py_ssize_t n;
} table_set;

typedef struct SessionObject {
    PyObject_HEAD
    hs_session *s;
    hs_catalog *cat;
    PyThread_type_lock lock;
    PyObject *tables;  /* dict: name -> TableObject (pinned, kept alive) */
    table_set locked;  /* the values of `tables`; changed only under `lock` */
    Py_ssize_t live;   /* SqlResults holding an hs_result + exported streams (GIL) */
    int closing;       /* close() was called */
} SessionObject;


static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

static int table_set_of(PyObject *dict, table_set *out)   /* GIL held; 0 or -1 */
{
    out->n = 0;
    out->a = PyMem_RawMalloc(((size_t)PyDict_Size(dict) + 1) * sizeof *out->a);
    if (!out->a) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(dict, &pos, &k, &v))
        out->a[out->n++] = (TableObject *)v;
    qsort(out->a, (size_t)out->n, sizeof *out->a, cmp_ptr);
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < out->n; i++)
        if (m == 0 || out->a[m - 1] != out->a[i])
            out->a[m++] = out->a[i];
    out->n = m;
    return 0;
}

/* Takes the session's lock and its tables' locks; no GIL needed. */
static void session_enter(SessionObject *self)
{
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    for (Py_ssize_t i = 0; i < self->locked.n; i++)
        PyThread_acquire_lock(self->locked.a[i]->lock, WAIT_LOCK);
}

static void session_leave(SessionObject *self)
{
    for (Py_ssize_t i = self->locked.n; i-- > 0;)
        PyThread_release_lock(self->locked.a[i]->lock);
    PyThread_release_lock(self->lock);
}

static void session_close_now(SessionObject *self)   /* GIL held */
{
    if (self->s) {
        hs_session *s = self->s;
        self->s = NULL;
        Py_BEGIN_ALLOW_THREADS
        session_enter(self);
        hs_session_close(s);
        session_leave(self);
        Py_END_ALLOW_THREADS
    }
    hs_catalog_close(self->cat);
    self->cat = NULL;
    PyMem_RawFree(self->locked.a);
    self->locked.a = NULL;
    self->locked.n = 0;
    if (self->tables) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(self->tables, &pos, &k, &v))
            table_unpin((TableObject *)v);
        PyDict_Clear(self->tables);
    }
}

static void session_unref_live(SessionObject *self)   /* GIL held */
{
    if (--self->live == 0 && self->closing)
        session_close_now(self);
}

/* ---- Ctrl-C -> hs_session_cancel ------------------------------------ */

pthread_t g_main_thread;
int g_main_thread_known;
static hs_session *volatile g_sigint_session;  /* set while the main thread runs SQL */
static struct sigaction g_sigint_prev;

static void sigint_cancel(int sig, siginfo_t *info, void *uc)
{
    hs_session *s = g_sigint_session;
    if (s)
        hs_session_cancel(s);
    if (g_sigint_prev.sa_flags & SA_SIGINFO) {
        if (g_sigint_prev.sa_sigaction)
            g_sigint_prev.sa_sigaction(sig, info, uc);
    } else if (g_sigint_prev.sa_handler == SIG_DFL) {
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
    } else if (g_sigint_prev.sa_handler != SIG_IGN) {
        g_sigint_prev.sa_handler(sig);
    }
}

/* Installs sigint_cancel for s when called on the main thread and SIGINT is
 * not ignored; returns whether it did.  Any thread, with or without the GIL. */
static int sigint_guard_on(hs_session *s)
{
    if (!g_main_thread_known || !pthread_equal(pthread_self(), g_main_thread))
        return 0;
    struct sigaction cur;
    if (sigaction(SIGINT, NULL, &cur) != 0)
        return 0;
    if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN)
        return 0;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == sigint_cancel)
        return 0;  /* already ours (nested): leave it */
    g_sigint_prev = cur;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sigint_cancel;
    sa.sa_flags = SA_SIGINFO | (cur.sa_flags & SA_RESTART);
    sigemptyset(&sa.sa_mask);
    g_sigint_session = s;
    if (sigaction(SIGINT, &sa, NULL) != 0) {
        g_sigint_session = NULL;
        return 0;
    }
    return 1;
}

static void sigint_guard_off(int on)
{
    if (!on)
        return;
    (void)sigaction(SIGINT, &g_sigint_prev, NULL);
    g_sigint_session = NULL;
}

/* ---- errors ---------------------------------------------------------- */

/* Sets .sqlstate and .position (the 1-based character of the statement the
 * error refers to; None when none) on the pending exception, from s. */
static void attach_sql_state(const hs_session *s)
{
    if (!s)
        return;
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException();
#else
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
#endif
    if (exc) {
        const char *state = hs_session_sqlstate(s);
        int pos = hs_session_error_position(s);
        PyObject *so = PyUnicode_FromString(state && state[0] && strcmp(state, "00000") != 0
                                                ? state : "XX000");
        PyObject *po = pos > 0 ? PyLong_FromLong(pos) : Py_NewRef(Py_None);
        if (so && po) {
            (void)PyObject_SetAttrString(exc, "sqlstate", so);
            (void)PyObject_SetAttrString(exc, "position", po);
        }
        Py_XDECREF(so);
        Py_XDECREF(po);
        PyErr_Clear();
    }
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyErr_Restore(type, exc, tb);
#endif
}

/* raise_status with the SQL state of s attached; a Ctrl-C that cancelled
 * the statement raises what Python's SIGINT handler raises.  NULL. */
static PyObject *raise_sql(hs_status st, const hs_error *e, const hs_session *s)
{
    if (st == HS_CANCELLED && PyErr_CheckSignals() < 0)
        return NULL;
    raise_status(st, e);
    attach_sql_state(s);
    return NULL;
}

/* A failed get_next of a result stream (errno rc): the stream's message as
 * is (an SQL error met while running, e.g. "division by zero"). */
static void raise_sql_stream_error(struct ArrowArrayStream *st, int rc, const hs_session *s)
{
    if (PyErr_CheckSignals() < 0)
        return;
    const char *m = st && st->release && st->get_last_error ? st->get_last_error(st) : NULL;
    hs_error e = {0};
    hs_status code;
    switch (rc) {
    case ENOMEM: code = HS_NOMEM; break;
    case EINVAL: code = HS_INVALID; break;
    case ENOSYS: code = HS_UNSUPPORTED; break;
    case ENOENT: code = HS_NOT_FOUND; break;
#ifdef EBADMSG
    case EBADMSG: code = HS_CORRUPT; break;
#endif
#ifdef ECANCELED
    case ECANCELED: code = HS_CANCELLED; break;
#endif
    default: code = HS_IO; break;
    }
    snprintf(e.msg, sizeof e.msg, "%s", m && m[0] ? m : strerror(rc));
    e.code = code;
    raise_status(code, &e);
    if (s && strcmp(hs_session_sqlstate(s), "00000") != 0) {
        attach_sql_state(s);
        return;
    }
    /* The session did not record one: the class of the status (PostgreSQL's
     * class codes: 22000 data exception, ...). */
    const char *state;
    switch (code) {
    case HS_INVALID: state = "22000"; break;
    case HS_NOMEM: state = "53200"; break;
    case HS_CANCELLED: state = "57014"; break;
    case HS_UNSUPPORTED: state = "0A000"; break;
    case HS_NOT_FOUND: state = "42704"; break;
    case HS_IO: state = "58030"; break;
    case HS_CORRUPT: state = "XX001"; break;
    default: state = "XX000"; break;
    }
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException();
#else
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
#endif
    if (exc) {
        PyObject *so = PyUnicode_FromString(state);
        if (so) {
            (void)PyObject_SetAttrString(exc, "sqlstate", so);
            (void)PyObject_SetAttrString(exc, "position", Py_None);
        }
        Py_XDECREF(so);
        PyErr_Clear();
    }
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyErr_Restore(type, exc, tb);
#endif
}

static int session_check_open(SessionObject *self)
{
    if (!self->s || self->closing) {
        PyErr_SetString(PyExc_ValueError, "the session is closed");
        return -1;
    }
    return 0;
}

/* ---- the exported stream: the library's, read under the session lock -- */

typedef struct sql_stream {
    struct ArrowArrayStream inner;
    SessionObject *sess;    /* strong reference; counts in sess->live */
} sql_stream;

static int ss_get_schema(struct ArrowArrayStream *st, struct ArrowSchema *out)
{
    sql_stream *p = st->private_data;
    session_enter(p->sess);
    int rc = p->inner.get_schema(&p->inner, out);
    session_leave(p->sess);
    return rc;
}

static int ss_get_next(struct ArrowArrayStream *st, struct ArrowArray *out)
{
    sql_stream *p = st->private_data;
    session_enter(p->sess);
    int g = sigint_guard_on(p->sess->s);
    int rc = p->inner.get_next(&p->inner, out);
    sigint_guard_off(g);
    session_leave(p->sess);
    return rc;
}

static const char *ss_get_last_error(struct ArrowArrayStream *st)
{
    sql_stream *p = st->private_data;
    return p->inner.get_last_error ? p->inner.get_last_error(&p->inner) : NULL;
}

/* Any thread (DuckDB releases from its own): takes the GIL to let go of
 * the session. */
static void ss_release(struct ArrowArrayStream *st)
{
    if (!st || !st->release)
        return;
    sql_stream *p = st->private_data;
    if (p->inner.release) {
        session_enter(p->sess);
        p->inner.release(&p->inner);
        session_leave(p->sess);
    }
    PyGILState_STATE g = PyGILState_Ensure();
    session_unref_live(p->sess);
    Py_DECREF(p->sess);
    PyGILState_Release(g);
    PyMem_RawFree(p);
    st->release = NULL;
}

/* ---- SqlResult --------------------------------------------------------- */

typedef struct SqlResultObject {
    PyObject_HEAD
    SessionObject *sess;                /* strong reference */
    hs_result *r;                       /* NULL once freed */
    struct ArrowArrayStream stream;     /* the rows, once taken from r */
    int taken;                          /* the stream was taken from r */
    int exported;                       /* ... and handed to a consumer */
    int64_t rows_read;
} SqlResultObject;


static void sqlresult_free_now(SqlResultObject *o)   /* GIL held */
{
    if (!o->r)
        return;
    hs_result *r = o->r;
    o->r = NULL;
    Py_BEGIN_ALLOW_THREADS
    session_enter(o->sess);
    if (o->stream.release)
        o->stream.release(&o->stream);
    hs_result_free(r);
    session_leave(o->sess);
    Py_END_ALLOW_THREADS
    session_unref_live(o->sess);
}

static void SqlResult_dealloc(SqlResultObject *o)
{
    sqlresult_free_now(o);
    Py_XDECREF(o->sess);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

/* Takes the stream out of the result (once); 0 or -1 with an exception. */
static int sqlresult_take(SqlResultObject *o)
{
    if (o->taken)
        return 0;
    if (!o->r) {
        PyErr_SetString(PyExc_ValueError, "the result is closed");
        return -1;
    }
    if (!hs_result_has_rows(o->r)) {
        PyErr_Format(PyExc_ValueError, "the statement (%s) returns no rows",
                     hs_result_tag(o->r));
        return -1;
    }
    hs_error err = {0};
    hs_status st;
    Py_BEGIN_ALLOW_THREADS
    session_enter(o->sess);
    st = hs_result_stream(o->r, &o->stream, &err);
    session_leave(o->sess);
    Py_END_ALLOW_THREADS
    if (st != HS_OK)
        return raise_sql(st, &err, o->sess->s), -1;
    o->taken = 1;
    return 0;
}

static int sqlresult_readable(SqlResultObject *o)
{
    if (sqlresult_take(o) < 0)
        return -1;
    if (o->exported || !o->stream.release) {
        PyErr_SetString(PyExc_RuntimeError, "the result's rows were already handed to an Arrow "
                                             "consumer (__arrow_c_stream__)");
        return -1;
    }
    return 0;
}

/* Reads one batch into *out (released = end) under the session lock, the
 * GIL released and Ctrl-C cancelling.  0 or -1 with an exception. */
static int sqlresult_next(SqlResultObject *o, struct ArrowArray *out)
{
    memset(out, 0, sizeof *out);
    int rc;
    hs_session *s = o->sess->s;
    Py_BEGIN_ALLOW_THREADS
    session_enter(o->sess);
    int g = sigint_guard_on(s);
    rc = o->stream.get_next(&o->stream, out);
    sigint_guard_off(g);
    session_leave(o->sess);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        if (out->release)
            out->release(out);
        if (PyErr_CheckSignals() < 0)
            return -1;
        raise_sql_stream_error(&o->stream, rc, s);
        return -1;
    }
    if (out->release)
        o->rows_read += out->length;
    return 0;
}

/* A _core.Result (pyarrow.table() takes it without copying) of the schema
 * and `arrays` (moved; PyMem_Raw array). */
static PyObject *result_of(struct ArrowSchema *schema, struct ArrowArray *arrays, Py_ssize_t n,
                           Py_ssize_t cap, int64_t rows)
{
    ResultObject *r = PyObject_New(ResultObject, &Result_Type);
    if (!r) {
        for (Py_ssize_t i = 0; i < n; i++)
            arrays[i].release(&arrays[i]);
        PyMem_RawFree(arrays);
        schema->release(schema);
        return NULL;
    }
    r->schema = *schema;
    schema->release = NULL;
    r->arrays = arrays;
    r->n = n;
    r->cap = cap;
    r->num_rows = rows;
    r->consumed = 0;
    return (PyObject *)r;
}

static int sqlresult_schema(SqlResultObject *o, struct ArrowSchema *out)
{
    int rc;
    Py_BEGIN_ALLOW_THREADS
    session_enter(o->sess);
    rc = o->stream.get_schema(&o->stream, out);
    session_leave(o->sess);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        raise_stream_error(&o->stream, rc, "reading the result schema");
        return -1;
    }
    return 0;
}

/* read_batch() -> a _core.Result of one record batch, or None at the end. */
static PyObject *SqlResult_read_batch(SqlResultObject *o, UNUSED PyObject *noargs)
{
    if (sqlresult_readable(o) < 0)
        return NULL;
    struct ArrowArray *a = PyMem_RawMalloc(sizeof *a);
    if (!a)
        return PyErr_NoMemory();
    if (sqlresult_next(o, a) < 0) {
        PyMem_RawFree(a);
        return NULL;
    }
    if (!a->release) {
        PyMem_RawFree(a);
        Py_RETURN_NONE;
    }
    struct ArrowSchema schema;
    if (sqlresult_schema(o, &schema) < 0) {
        a->release(a);
        PyMem_RawFree(a);
        return NULL;
    }
    return result_of(&schema, a, 1, 1, a->length);
}

/* read_all() -> a _core.Result of the remaining batches. */
static PyObject *SqlResult_read_all(SqlResultObject *o, UNUSED PyObject *noargs)
{
    if (sqlresult_readable(o) < 0)
        return NULL;
    struct ArrowSchema schema;
    if (sqlresult_schema(o, &schema) < 0)
        return NULL;
    struct ArrowArray *arrays = NULL;
    Py_ssize_t n = 0, cap = 0;
    int64_t rows = 0;
    for (;;) {
        if (n == cap) {
            Py_ssize_t c2 = cap ? cap * 2 : 16;
            struct ArrowArray *a2 = PyMem_RawRealloc(arrays, (size_t)c2 * sizeof *a2);
            if (!a2) {
                PyErr_NoMemory();
                goto fail;
            }
            arrays = a2;
            cap = c2;
        }
        if (sqlresult_next(o, &arrays[n]) < 0)
            goto fail;
        if (!arrays[n].release)
            break;
        rows += arrays[n].length;
        n++;
    }
    if (!arrays && !(arrays = PyMem_RawMalloc(sizeof *arrays))) {
        PyErr_NoMemory();
        goto fail;
    }
    return result_of(&schema, arrays, n, cap, rows);
fail:
    for (Py_ssize_t i = 0; i < n; i++)
        arrays[i].release(&arrays[i]);
    PyMem_RawFree(arrays);
    schema.release(&schema);
    return NULL;
}

static PyObject *SqlResult_arrow_c_stream(SqlResultObject *o, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"requested_schema", NULL};
    PyObject *requested = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &requested))
        return NULL;
    (void)requested;  /* the spec lets a producer keep its own schema */
    if (sqlresult_readable(o) < 0)
        return NULL;
    sql_stream *p = PyMem_RawCalloc(1, sizeof *p);
    if (!p)
        return PyErr_NoMemory();
    p->inner = o->stream;
    o->stream.release = NULL;
    o->exported = 1;
    p->sess = o->sess;
    Py_INCREF(p->sess);
    p->sess->live++;
    struct ArrowArrayStream s = {.get_schema = ss_get_schema, .get_next = ss_get_next,
                                 .get_last_error = ss_get_last_error, .release = ss_release,
                                 .private_data = p};
    return stream_capsule(&s);
}

static PyObject *SqlResult_arrow_c_schema(SqlResultObject *o, UNUSED PyObject *noargs)
{
    if (sqlresult_readable(o) < 0)
        return NULL;
    struct ArrowSchema *s = PyMem_RawMalloc(sizeof *s);
    if (!s)
        return PyErr_NoMemory();
    if (sqlresult_schema(o, s) < 0) {
        PyMem_RawFree(s);
        return NULL;
    }
    PyObject *cap = PyCapsule_New(s, "arrow_schema", schema_capsule_free);
    if (!cap) {
        s->release(s);
        PyMem_RawFree(s);
    }
    return cap;
}

static PyObject *SqlResult_close(SqlResultObject *o, UNUSED PyObject *noargs)
{
    sqlresult_free_now(o);
    Py_RETURN_NONE;
}

static PyObject *SqlResult_get_tag(SqlResultObject *o, UNUSED void *c)
{
    if (!o->r)
        Py_RETURN_NONE;
    return PyUnicode_FromString(hs_result_tag(o->r));
}

static PyObject *SqlResult_get_has_rows(SqlResultObject *o, UNUSED void *c)
{
    return PyBool_FromLong(o->r && hs_result_has_rows(o->r));
}

static PyObject *SqlResult_get_rows_affected(SqlResultObject *o, UNUSED void *c)
{
    return PyLong_FromLongLong(o->r ? hs_result_rows_affected(o->r) : -1);
}

static PyObject *SqlResult_get_rows_read(SqlResultObject *o, UNUSED void *c)
{
    return PyLong_FromLongLong(o->rows_read);
}

static PyMethodDef SqlResult_methods[] = {
    {"read_batch", (PyCFunction)SqlResult_read_batch, METH_NOARGS,
     "read_batch() -> Result of the next record batch, or None at the end"},
    {"read_all", (PyCFunction)SqlResult_read_all, METH_NOARGS,
     "read_all() -> Result of the remaining record batches"},
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))SqlResult_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_stream__(requested_schema=None) -> PyCapsule: the rows not read yet, "
     "streamed (once)"},
    {"__arrow_c_schema__", (PyCFunction)SqlResult_arrow_c_schema, METH_NOARGS,
     "The rows' schema as an \"arrow_schema\" capsule."},
    {"close", (PyCFunction)SqlResult_close, METH_NOARGS, "Frees the result (idempotent)."},
    {NULL}};

static PyGetSetDef SqlResult_getset[] = {
    {"tag", (getter)SqlResult_get_tag, NULL, "the command tag (\"SELECT 3\", \"INSERT 0 1\")",
     NULL},
    {"has_rows", (getter)SqlResult_get_has_rows, NULL, "whether the statement returns rows",
     NULL},
    {"rows_affected", (getter)SqlResult_get_rows_affected, NULL,
     "DML: rows changed; queries: rows once drained, else -1", NULL},
    {"rows_read", (getter)SqlResult_get_rows_read, NULL, "rows read through this object", NULL},
    {NULL}};

PyTypeObject SqlResult_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hyperstreamdb._core.SqlResult",
    .tp_basicsize = sizeof(SqlResultObject),
    .tp_dealloc = (destructor)SqlResult_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The result of one SQL statement (hs_result).",
    .tp_methods = SqlResult_methods,
    .tp_getset = SqlResult_getset,
};

/* ---- Session ------------------------------------------------------------ */

static void Session_dealloc(SessionObject *self)
{
    session_close_now(self);
    Py_XDECREF(self->tables);
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* _core.Session(threads=0, memory_limit=0, catalog=None, catalog_kind="path",
 *               warehouse=None): catalog_kind "uri" opens catalog with
 *               hs_catalog_open_uri (warehouse = its options JSON);
 *               catalog_kind "sql" opens the SQLite catalog
 * `catalog` (new tables under warehouse), "path" the path tables under
 * the directory `catalog`. */
static PyObject *Session_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"threads", "memory_limit", "catalog", "catalog_kind", "warehouse",
                             NULL};
    int threads = 0;
    long long mem = 0;
    PyObject *cat_o = Py_None, *wh_o = Py_None;
    const char *kind = "path";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|iLOsO", kwlist, &threads, &mem, &cat_o, &kind,
                                     &wh_o))
        return NULL;
    if (threads < 0 || mem < 0)
        return PyErr_Format(PyExc_ValueError, "threads and memory_limit must be >= 0");
    if (strcmp(kind, "path") != 0 && strcmp(kind, "sql") != 0 && strcmp(kind, "uri") != 0)
        return PyErr_Format(PyExc_ValueError, "catalog_kind must be 'path', 'sql' or 'uri', "
                            "not '%s'", kind);
    char *cat_path = NULL, *warehouse = NULL;
    if (arg_str(cat_o, "catalog", &cat_path) < 0 || arg_str(wh_o, "warehouse", &warehouse) < 0) {
        PyMem_RawFree(cat_path);
        return NULL;
    }
    SessionObject *self = (SessionObject *)type->tp_alloc(type, 0);
    if (!self) {
        PyMem_RawFree(cat_path);
        PyMem_RawFree(warehouse);
        return NULL;
    }
    self->lock = PyThread_allocate_lock();
    self->tables = PyDict_New();
    if (!self->lock || !self->tables) {
        PyMem_RawFree(cat_path);
        PyMem_RawFree(warehouse);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    hs_error err = {0};
    hs_status st = HS_OK;
    int is_sql = strcmp(kind, "sql") == 0, is_uri = strcmp(kind, "uri") == 0;
    Py_BEGIN_ALLOW_THREADS
    /* "uri": hs_catalog_open_uri (sqlite:, http(s):// REST); warehouse is then
     * the options JSON (hyperstreamdb.Catalog's) */
    if (cat_path)
        st = is_uri ? hs_catalog_open_uri(cat_path, warehouse, &self->cat, &err)
           : is_sql ? hs_catalog_open_sql(cat_path, NULL, warehouse, &self->cat, &err)
                    : hs_catalog_open_path(cat_path, &self->cat, &err);
    if (st == HS_OK) {
        hs_session_options o = HS_SESSION_OPTIONS_INIT;
        o.threads = threads;
        o.memory_limit = (int64_t)mem;
        o.catalog = self->cat;
        st = hs_session_open(&o, &self->s, &err);
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(cat_path);
    PyMem_RawFree(warehouse);
    if (st != HS_OK) {
        Py_DECREF(self);
        return raise_status(st, &err);
    }
    return (PyObject *)self;
}

static PyObject *Session_close(SessionObject *self, UNUSED PyObject *noargs)
{
    self->closing = 1;
    if (self->live == 0)
        session_close_now(self);
    Py_RETURN_NONE;
}

static PyObject *Session_closed(SessionObject *self, UNUSED void *c)
{
    return PyBool_FromLong(!self->s || self->closing);
}

static PyObject *Session_cancel(SessionObject *self, UNUSED PyObject *noargs)
{
    hs_session *s = self->s;
    if (s)
        hs_session_cancel(s);
    Py_RETURN_NONE;
}

/* Registers (table non-NULL) or unregisters name: the C call and the swap
 * of the locked set under the session's lock, then the pins. */
static PyObject *session_set_table(SessionObject *self, PyObject *name_o, TableObject *t)
{
    const char *name = PyUnicode_AsUTF8(name_o);
    if (!name)
        return NULL;
    PyObject *tables = PyDict_Copy(self->tables);
    if (!tables)
        return NULL;
    if ((t ? PyDict_SetItem(tables, name_o, (PyObject *)t)
           : (PyDict_GetItemWithError(tables, name_o) ? PyDict_DelItem(tables, name_o) : 0)) < 0 ||
        PyErr_Occurred()) {
        Py_DECREF(tables);
        return NULL;
    }
    table_set set;
    if (table_set_of(tables, &set) < 0) {
        Py_DECREF(tables);
        return NULL;
    }
    hs_error err = {0};
    hs_status st;
    Py_BEGIN_ALLOW_THREADS
    session_enter(self);
    st = t ? hs_session_register(self->s, name, t->t, &err)
           : hs_session_unregister(self->s, name, &err);
    session_leave(self);
    if (st == HS_OK) {
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        table_set old = self->locked;
        self->locked = set;
        set = old;
        PyThread_release_lock(self->lock);
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(set.a);
    if (st != HS_OK) {
        Py_DECREF(tables);
        return raise_sql(st, &err, self->s);
    }
    PyObject *old = PyDict_GetItemWithError(self->tables, name_o);
    Py_XINCREF(old);
    Py_SETREF(self->tables, tables);
    if (t)
        t->pins++;
    if (old) {
        table_unpin((TableObject *)old);
        Py_DECREF(old);
    }
    Py_RETURN_NONE;
}

/* register(name, TableHandle): the session borrows the handle's hs_table;
 * the handle stays open (close() is deferred) while registered. */
static PyObject *Session_register(SessionObject *self, PyObject *args)
{
    PyObject *name, *th;
    if (!PyArg_ParseTuple(args, "UO!", &name, &Table_Type, &th))
        return NULL;
    if (session_check_open(self) < 0 || check_open((TableObject *)th) < 0)
        return NULL;
    return session_set_table(self, name, (TableObject *)th);
}

static PyObject *Session_unregister(SessionObject *self, PyObject *args)
{
    PyObject *name;
    if (!PyArg_ParseTuple(args, "U", &name))
        return NULL;
    if (session_check_open(self) < 0)
        return NULL;
    return session_set_table(self, name, NULL);
}

/* Parameters: a list of (type name or None, text or None). */
typedef struct sql_params {
    int n;
    char **types, **values;
} sql_params;

static void sql_params_free(sql_params *p)
{
    for (int i = 0; i < p->n; i++) {
        PyMem_RawFree(p->types[i]);
        PyMem_RawFree(p->values[i]);
    }
    PyMem_RawFree(p->types);
    PyMem_RawFree(p->values);
    memset(p, 0, sizeof *p);
}

static int sql_params_fill(PyObject *list, sql_params *p)
{
    memset(p, 0, sizeof *p);
    PyObject *seq = PySequence_Fast(list, "params must be a list of (type, text) pairs");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > 65535) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "at most 65535 parameters");
        return -1;
    }
    p->types = PyMem_RawCalloc((size_t)n + 1, sizeof *p->types);
    p->values = PyMem_RawCalloc((size_t)n + 1, sizeof *p->values);
    if (!p->types || !p->values) {
        Py_DECREF(seq);
        sql_params_free(p);
        PyErr_NoMemory();
        return -1;
    }
    p->n = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *ty, *val;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "params must be a list of (type, text) pairs");
            goto fail;
        }
        ty = PyTuple_GET_ITEM(pair, 0);
        val = PyTuple_GET_ITEM(pair, 1);
        if (arg_str(ty, "a parameter's type", &p->types[i]) < 0 ||
            arg_str(val, "a parameter's text", &p->values[i]) < 0)
            goto fail;
    }
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    sql_params_free(p);
    return -1;
}

/* execute(sql, params=None) -> SqlResult; params as sql_params_fill reads. */
static PyObject *Session_execute(SessionObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"sql", "params", NULL};
    PyObject *sql_o, *params_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &sql_o, &params_o))
        return NULL;
    if (session_check_open(self) < 0)
        return NULL;
    char *sql;
    if (arg_str(sql_o, "the query", &sql) < 0)
        return NULL;
    if (!sql) {
        PyErr_SetString(PyExc_TypeError, "the query must be a str");
        return NULL;
    }
    sql_params prm = {0};
    int prepared = params_o != Py_None;
    if (prepared && sql_params_fill(params_o, &prm) < 0) {
        PyMem_RawFree(sql);
        return NULL;
    }
    SqlResultObject *o = PyObject_New(SqlResultObject, &SqlResult_Type);
    if (!o) {
        PyMem_RawFree(sql);
        sql_params_free(&prm);
        return NULL;
    }
    o->sess = self;
    Py_INCREF(self);
    o->r = NULL;
    memset(&o->stream, 0, sizeof o->stream);
    o->taken = o->exported = 0;
    o->rows_read = 0;
    hs_error err = {0};
    hs_status st;
    hs_session *s = self->s;
    int g;
    Py_BEGIN_ALLOW_THREADS
    session_enter(self);
    g = sigint_guard_on(s);
    Py_END_ALLOW_THREADS
    if (PyErr_CheckSignals() < 0) {   /* a Ctrl-C that came before: not run */
        sigint_guard_off(g);
        session_leave(self);
        PyMem_RawFree(sql);
        sql_params_free(&prm);
        Py_DECREF(o);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (prepared) {
        hs_prepared *p = NULL;
        st = hs_session_prepare(s, sql, prm.n, (const char *const *)prm.types, &p, &err);
        if (st == HS_OK)
            st = hs_prepared_execute(p, prm.n, (const char *const *)prm.values, &o->r, &err);
        hs_prepared_free(p);
    } else {
        st = hs_session_execute(s, sql, &o->r, &err);
    }
    sigint_guard_off(g);
    session_leave(self);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(sql);
    sql_params_free(&prm);
    if (st != HS_OK) {
        o->r = NULL;
        Py_DECREF(o);
        return raise_sql(st, &err, s);
    }
    self->live++;
    return (PyObject *)o;
}

static PyMethodDef Session_methods[] = {
    {"execute", KWFN(Session_execute), "execute(sql, params=None) -> SqlResult"},
    {"register", (PyCFunction)Session_register, METH_VARARGS, "register(name, TableHandle)"},
    {"unregister", (PyCFunction)Session_unregister, METH_VARARGS, "unregister(name)"},
    {"cancel", (PyCFunction)Session_cancel, METH_NOARGS,
     "Cancels the running statement (any thread)."},
    {"close", (PyCFunction)Session_close, METH_NOARGS,
     "Closes the session (when its last result or stream is gone)."},
    {NULL}};

static PyGetSetDef Session_getset[] = {
    {"closed", (getter)Session_closed, NULL, "whether close() was called", NULL},
    {NULL}};

PyTypeObject Session_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hyperstreamdb._core.Session",
    .tp_basicsize = sizeof(SessionObject),
    .tp_dealloc = (destructor)Session_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An SQL session (hs_session).",
    .tp_methods = Session_methods,
    .tp_getset = Session_getset,
    .tp_new = Session_new,
};


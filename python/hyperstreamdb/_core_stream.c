/*
 * python/hyperstreamdb/_core_stream.c - _core.AppendStream: the append
 * stream of a table handle (hyperstream/stream.h), behind Table.stream().
 *
 *   AppendStream(handle, fsync=None, fsync_interval_ms=0, flush_rows=0,
 *                flush_bytes=0, flush_interval_ms=0, memory_bytes=0,
 *                busy_timeout_ms=0, refresh_ms=0, segment_bytes=0)
 *     .write(arrow_data) -> seq    .flush()   .refresh()   .stats() -> dict
 *     .close()  (flushes)          .abort()  (leaves the rows in the log)
 *
 * 0 / None = the table property (or its default); refresh_ms < 0 makes
 * every acknowledged row visible at once.  The stream pins the handle (as a
 * SQL session does), so closing the table waits for the stream's close.
 * write() releases the GIL and may run on several threads at once (group
 * commit); close/abort wait for writes in flight (a read-write lock).
 */
#include "_core.h"

#include "hyperstream/stream.h"

#include <string.h>

typedef struct AppendStreamObject {
    PyObject_HEAD
    TableObject *table;     /* strong reference, pinned */
    hs_stream *s;
    pthread_rwlock_t rw;    /* writes: read lock; close/abort/flush: write lock */
} AppendStreamObject;

static int check_live(AppendStreamObject *o)
{
    if (!o->s) {
        PyErr_SetString(PyExc_ValueError, "the append stream is closed");
        return -1;
    }
    return 0;
}

static int AppendStream_init(AppendStreamObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"handle", "fsync", "fsync_interval_ms", "flush_rows",
                             "flush_bytes", "flush_interval_ms", "memory_bytes",
                             "busy_timeout_ms", "refresh_ms", "segment_bytes", "wal_dir", NULL};
    PyObject *h = NULL, *fsync = Py_None;
    const char *wal_dir = NULL;
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    long long fi = 0, fr = 0, fb = 0, fim = 0, mb = 0, bt = 0, rm = 0, sb = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|OLLLLLLLLz", kwlist, &Table_Type, &h, &fsync,
                                     &fi, &fr, &fb, &fim, &mb, &bt, &rm, &sb, &wal_dir))
        return -1;
    if (self->s) {
        PyErr_SetString(PyExc_ValueError, "the append stream is already open");
        return -1;
    }
    if (fsync != Py_None) {
        const char *p = PyUnicode_Check(fsync) ? PyUnicode_AsUTF8(fsync) : NULL;
        if (p && strcmp(p, "batch") == 0)
            o.fsync_policy = HS_WAL_FSYNC_BATCH;
        else if (p && strcmp(p, "interval") == 0)
            o.fsync_policy = HS_WAL_FSYNC_INTERVAL;
        else if (p && strcmp(p, "none") == 0)
            o.fsync_policy = HS_WAL_FSYNC_NONE;
        else {
            PyErr_SetString(PyExc_ValueError, "fsync must be 'batch', 'interval', 'none' or None");
            return -1;
        }
    }
    o.fsync_interval_ms = fi;
    o.flush_rows = fr;
    o.flush_bytes = fb;
    o.flush_interval_ms = fim;
    o.memory_bytes = mb;
    o.busy_timeout_ms = bt;
    o.refresh_ms = rm;
    o.segment_bytes = sb;
    o.wal_dir = wal_dir;
    TableObject *t = (TableObject *)h;
    if (check_open(t) < 0)
        return -1;
    hs_error err = {0};
    hs_status st;
    hs_stream *s = NULL;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(t->lock, WAIT_LOCK);
    st = hs_stream_open(t->t, &o, &s, &err);
    PyThread_release_lock(t->lock);
    Py_END_ALLOW_THREADS
    if (st != HS_OK) {
        raise_status(st, &err);
        return -1;
    }
    pthread_rwlock_init(&self->rw, NULL);
    Py_INCREF(t);
    t->pins++;
    self->table = t;
    self->s = s;
    return 0;
}

/* Ends the stream (flush = close, else abort); GIL held on entry. */
static hs_status finish(AppendStreamObject *self, int flush, hs_error *err)
{
    hs_status st = HS_OK;
    hs_stream *s = self->s;
    if (!s)
        return HS_OK;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_wrlock(&self->rw);
    self->s = NULL;
    pthread_rwlock_unlock(&self->rw);
    if (flush)
        st = hs_stream_close(s, err);
    else
        hs_stream_abort(s);
    Py_END_ALLOW_THREADS
    TableObject *t = self->table;
    self->table = NULL;
    if (t) {
        table_unpin(t);
        Py_DECREF(t);
    }
    return st;
}

static void AppendStream_dealloc(AppendStreamObject *self)
{
    if (self->s) {
        hs_error err = {0};
        if (finish(self, 1, &err) != HS_OK)
            PyErr_WarnFormat(PyExc_ResourceWarning, 1, "append stream closed with an error "
                             "(the rows stay in the write-ahead log): %s", err.msg);
    }
    if (self->table) {
        table_unpin(self->table);
        Py_DECREF(self->table);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *AppendStream_write(AppendStreamObject *self, PyObject *data)
{
    if (check_live(self) < 0)
        return NULL;
    struct ArrowArrayStream in;
    if (stream_from_object_pub(data, &in) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st = HS_OK;
    int64_t seq = 0;
    int closed = 0;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_rdlock(&self->rw);
    if (self->s)
        st = hs_stream_write(self->s, &in, &seq, &err);
    else
        closed = 1;
    pthread_rwlock_unlock(&self->rw);
    Py_END_ALLOW_THREADS
    if (closed) {
        if (in.release)
            in.release(&in);
        PyErr_SetString(PyExc_ValueError, "the append stream is closed");
        return NULL;
    }
    if (st != HS_OK)
        return raise_status(st, &err);
    return PyLong_FromLongLong(seq);
}

typedef hs_status (*stream_op)(hs_stream *, hs_error *);

static PyObject *run_op(AppendStreamObject *self, stream_op fn)
{
    if (check_live(self) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st = HS_OK;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_rdlock(&self->rw);
    if (self->s)
        st = fn(self->s, &err);
    pthread_rwlock_unlock(&self->rw);
    Py_END_ALLOW_THREADS
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *AppendStream_flush(AppendStreamObject *self, UNUSED PyObject *a)
{
    return run_op(self, hs_stream_flush);
}

static PyObject *AppendStream_refresh(AppendStreamObject *self, UNUSED PyObject *a)
{
    return run_op(self, hs_stream_refresh);
}

static PyObject *AppendStream_stats(AppendStreamObject *self, UNUSED PyObject *a)
{
    if (check_live(self) < 0)
        return NULL;
    hs_stream_stats x = HS_STREAM_STATS_INIT;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_rdlock(&self->rw);
    if (self->s)
        hs_stream_get_stats(self->s, &x);
    pthread_rwlock_unlock(&self->rw);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("{sLsLsLsLsLsLsLsLsLsLsLsLsLsLsL}",
                         "acked_seq", (long long)x.acked_seq,
                         "committed_seq", (long long)x.committed_seq,
                         "visible_seq", (long long)x.visible_seq,
                         "tail_rows", (long long)x.tail_rows,
                         "tail_bytes", (long long)x.tail_bytes,
                         "wal_bytes", (long long)x.wal_bytes,
                         "wal_segments", (long long)x.wal_segments,
                         "flushes", (long long)x.flushes,
                         "rows_written", (long long)x.rows_written,
                         "replayed_records", (long long)x.replayed_records,
                         "replayed_rows", (long long)x.replayed_rows,
                         "busy_rejections", (long long)x.busy_rejections,
                         "compactions", (long long)x.compactions,
                         "expirations", (long long)x.expirations,
                         "maintenance_failures", (long long)x.maintenance_failures);
}

static PyObject *AppendStream_close(AppendStreamObject *self, UNUSED PyObject *a)
{
    hs_error err = {0};
    hs_status st = finish(self, 1, &err);
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *AppendStream_abort(AppendStreamObject *self, UNUSED PyObject *a)
{
    hs_error err = {0};
    (void)finish(self, 0, &err);
    Py_RETURN_NONE;
}

static PyObject *AppendStream_closed(AppendStreamObject *self, UNUSED void *c)
{
    return PyBool_FromLong(self->s == NULL);
}

static PyMethodDef AppendStream_methods[] = {
    {"write", (PyCFunction)AppendStream_write, METH_O,
     "write(arrow_data) -> seq: one log record, returned once durable"},
    {"flush", (PyCFunction)AppendStream_flush, METH_NOARGS,
     "flush(): commit every acknowledged row now (one snapshot)"},
    {"refresh", (PyCFunction)AppendStream_refresh, METH_NOARGS,
     "refresh(): make every acknowledged row visible to scans of the handle now"},
    {"stats", (PyCFunction)AppendStream_stats, METH_NOARGS, "stats() -> dict of counters"},
    {"close", (PyCFunction)AppendStream_close, METH_NOARGS, "close(): flush, then end"},
    {"abort", (PyCFunction)AppendStream_abort, METH_NOARGS,
     "abort(): end without flushing (the rows stay in the write-ahead log)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef AppendStream_getset[] = {
    {"closed", (getter)AppendStream_closed, NULL, "whether the stream is closed", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject AppendStream_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hyperstreamdb._core.AppendStream",
    .tp_basicsize = sizeof(AppendStreamObject),
    .tp_dealloc = (destructor)AppendStream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The append stream of a table handle (write-ahead log + near-real-time reads).",
    .tp_methods = AppendStream_methods,
    .tp_getset = AppendStream_getset,
    .tp_init = (initproc)AppendStream_init,
    .tp_new = PyType_GenericNew,
};

/*
 * python/hyperstreamdb/_core.h - what the two files of the extension share:
 * _core.c (tables, scans, searches, vectors, the module) and _core_sql.c
 * (SQL sessions and their results).  _core.c's header comment describes the
 * object model, the GIL rules, errors and ownership for both.
 */
#ifndef HS_PY_CORE_H
#define HS_PY_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include "hyperstream/sql.h"
#include "hyperstream/table.h"

#include <pthread.h>

#define UNUSED __attribute__((unused))
#define KWFN(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS

/* _core.Result: a finished query's arrays, exported once. */
typedef struct ResultObject {
    PyObject_HEAD
    struct ArrowSchema schema;
    struct ArrowArray *arrays;
    Py_ssize_t n, cap;
    int64_t num_rows;
    int consumed;
} ResultObject;

/* _core.TableHandle. */
typedef struct TableObject {
    PyObject_HEAD
    hs_catalog *cat;
    hs_table *t;
    PyThread_type_lock lock;
    int pins;            /* SQL sessions it is registered in (they borrow t) */
    int close_pending;   /* close() was called while pinned */
} TableObject;

extern PyTypeObject Result_Type, Table_Type;     /* _core.c */
extern PyTypeObject Session_Type, SqlResult_Type; /* _core_sql.c */
extern PyTypeObject AppendStream_Type;            /* _core_stream.c */
extern PyTypeObject Catalog_Type;                 /* _core_catalog.c */
extern PyMethodDef catalog_module_methods[];      /* _core_catalog.c */
/* The thread Ctrl-C reaches (set by the module's init; _core_sql.c). */
extern pthread_t g_main_thread;
extern int g_main_thread_known;

/* _core.c: errors, Arrow capsules, arguments, table handles. */
PyObject *raise_status(hs_status st, const hs_error *e);
PyObject *raise_stream_error(struct ArrowArrayStream *s, int rc, const char *what);
void schema_capsule_free(PyObject *cap);
PyObject *stream_capsule(struct ArrowArrayStream *s);
int arg_str(PyObject *o, const char *what, char **out);
int check_open(TableObject *self);
/* Arrow data (PyCapsule protocol) -> a stream (moved); 0 or -1 with an exception. */
int stream_from_object_pub(PyObject *obj, struct ArrowArrayStream *out);
void table_unpin(TableObject *self);

#endif

/*
 * python/hyperstreamdb/_core_catalog.c - catalogs for the Python package:
 * _core.CatalogHandle (an hs_catalog opened from a URI, for namespace and
 * table-list operations) and the module functions that open a table's
 * newest metadata file without a catalog.  The user-facing class is
 * hyperstreamdb.Catalog (_catalog.py); tables opened through a catalog are
 * ordinary _core.TableHandle objects, each with its own hs_catalog (opened
 * by _core.open_table(name, catalog=uri, catalog_options=json)), so a table
 * outlives the Catalog object that made it.
 *
 *   Python object         C state                    lifetime
 *   --------------------  -------------------------  ------------------------
 *   _core.CatalogHandle   hs_catalog + a lock        until close() or GC
 *
 * Every call runs without the GIL, under the handle's lock (an hs_catalog
 * is not thread-safe).  Results cross as JSON text that _catalog.py parses.
 */
#include "_core.h"

typedef struct CatalogObject {
    PyObject_HEAD
    hs_catalog *cat;
    PyThread_type_lock lock;
} CatalogObject;

static void Catalog_dealloc(CatalogObject *self)
{
    hs_catalog_close(self->cat);
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define CAT_LOCKED(self, stmt)                                  \
    do {                                                        \
        Py_BEGIN_ALLOW_THREADS                                  \
        PyThread_acquire_lock((self)->lock, WAIT_LOCK);         \
        stmt;                                                   \
        PyThread_release_lock((self)->lock);                    \
        Py_END_ALLOW_THREADS                                    \
    } while (0)

static int cat_check(CatalogObject *self)
{
    if (!self->cat) {
        PyErr_SetString(PyExc_ValueError, "the catalog is closed");
        return -1;
    }
    return 0;
}

/* Returns a str from a library-owned string (freed here), or None for NULL. */
static PyObject *take_str(char *s)
{
    if (!s)
        Py_RETURN_NONE;
    PyObject *o = PyUnicode_FromString(s);
    hs_string_free(s);
    return o;
}

/* _core.open_catalog(uri, options=None) */
static PyObject *mod_open_catalog(UNUSED PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"uri", "options", NULL};
    const char *uri, *opts = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|z", kwlist, &uri, &opts))
        return NULL;
    CatalogObject *self = PyObject_New(CatalogObject, &Catalog_Type);
    if (!self)
        return NULL;
    self->cat = NULL;
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    hs_error err = {0};
    hs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = hs_catalog_open_uri(uri, opts, &self->cat, &err);
    Py_END_ALLOW_THREADS
    if (st != HS_OK) {
        Py_DECREF(self);
        return raise_status(st, &err);
    }
    return (PyObject *)self;
}

static PyObject *Catalog_close(CatalogObject *self, UNUSED PyObject *a)
{
    hs_catalog *c = NULL;
    CAT_LOCKED(self, c = self->cat; self->cat = NULL);
    hs_catalog_close(c);
    Py_RETURN_NONE;
}

/* Methods whose result is a JSON string. */
static PyObject *Catalog_list_namespaces(CatalogObject *self, PyObject *args)
{
    const char *parent = NULL;
    if (!PyArg_ParseTuple(args, "|z", &parent) || cat_check(self) < 0)
        return NULL;
    char *out = NULL;
    hs_error err = {0};
    hs_status st;
    CAT_LOCKED(self, st = hs_catalog_list_namespaces(self->cat, parent, &out, &err));
    return st == HS_OK ? take_str(out) : raise_status(st, &err);
}

static PyObject *Catalog_list_tables(CatalogObject *self, PyObject *args)
{
    const char *ns = NULL;
    if (!PyArg_ParseTuple(args, "|z", &ns) || cat_check(self) < 0)
        return NULL;
    char *out = NULL;
    hs_error err = {0};
    hs_status st;
    CAT_LOCKED(self, st = hs_catalog_list_tables(self->cat, ns, &out, &err));
    return st == HS_OK ? take_str(out) : raise_status(st, &err);
}

static PyObject *Catalog_namespace_properties(CatalogObject *self, PyObject *args)
{
    const char *ns;
    if (!PyArg_ParseTuple(args, "s", &ns) || cat_check(self) < 0)
        return NULL;
    char *out = NULL;
    hs_error err = {0};
    hs_status st;
    CAT_LOCKED(self, st = hs_catalog_namespace_properties(self->cat, ns, &out, &err));
    return st == HS_OK ? take_str(out) : raise_status(st, &err);
}

static PyObject *Catalog_create_namespace(CatalogObject *self, PyObject *args)
{
    const char *ns, *props = NULL;
    if (!PyArg_ParseTuple(args, "s|z", &ns, &props) || cat_check(self) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st;
    CAT_LOCKED(self, st = hs_catalog_create_namespace_props(self->cat, ns, props, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Catalog_update_namespace_properties(CatalogObject *self, PyObject *args)
{
    const char *ns, *set = NULL, *rm = NULL;
    if (!PyArg_ParseTuple(args, "s|zz", &ns, &set, &rm) || cat_check(self) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st;
    CAT_LOCKED(self, st = hs_catalog_update_namespace_properties(self->cat, ns, set, rm, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Catalog_drop_namespace(CatalogObject *self, PyObject *args)
{
    const char *ns;
    if (!PyArg_ParseTuple(args, "s", &ns) || cat_check(self) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st;
    CAT_LOCKED(self, st = hs_catalog_drop_namespace(self->cat, ns, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Catalog_table_exists(CatalogObject *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name) || cat_check(self) < 0)
        return NULL;
    int exists = 0;
    hs_error err = {0};
    hs_status st;
    CAT_LOCKED(self, st = hs_catalog_table_exists(self->cat, name, &exists, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    return PyBool_FromLong(exists);
}

static PyObject *Catalog_drop_table(CatalogObject *self, PyObject *args)
{
    const char *name;
    int purge = 0;
    if (!PyArg_ParseTuple(args, "s|p", &name, &purge) || cat_check(self) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st;
    CAT_LOCKED(self, st = hs_catalog_drop_table(self->cat, name, purge, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Catalog_rename_table(CatalogObject *self, PyObject *args)
{
    const char *from, *to;
    if (!PyArg_ParseTuple(args, "ss", &from, &to) || cat_check(self) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st;
    CAT_LOCKED(self, st = hs_catalog_rename_table(self->cat, from, to, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Catalog_register_table(CatalogObject *self, PyObject *args)
{
    const char *name, *mloc;
    int overwrite = 0;
    if (!PyArg_ParseTuple(args, "ss|p", &name, &mloc, &overwrite) || cat_check(self) < 0)
        return NULL;
    hs_error err = {0};
    hs_status st;
    CAT_LOCKED(self, st = hs_catalog_register_table(self->cat, name, mloc, overwrite, &err));
    if (st != HS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Catalog_list_views(CatalogObject *self, PyObject *args)
{
    const char *ns = NULL;
    if (!PyArg_ParseTuple(args, "|z", &ns) || cat_check(self) < 0)
        return NULL;
    char *out = NULL;
    hs_error err = {0};
    hs_status st;
    CAT_LOCKED(self, st = hs_catalog_list_views(self->cat, ns, &out, &err));
    return st == HS_OK ? take_str(out) : raise_status(st, &err);
}

static PyMethodDef Catalog_methods[] = {
    {"close", (PyCFunction)Catalog_close, METH_NOARGS, "close()"},
    {"list_namespaces", (PyCFunction)Catalog_list_namespaces, METH_VARARGS,
     "list_namespaces(parent=None) -> JSON array text"},
    {"list_tables", (PyCFunction)Catalog_list_tables, METH_VARARGS,
     "list_tables(namespace=None) -> JSON array text"},
    {"namespace_properties", (PyCFunction)Catalog_namespace_properties, METH_VARARGS,
     "namespace_properties(ns) -> JSON object text"},
    {"create_namespace", (PyCFunction)Catalog_create_namespace, METH_VARARGS,
     "create_namespace(ns, properties_json=None)"},
    {"update_namespace_properties", (PyCFunction)Catalog_update_namespace_properties,
     METH_VARARGS, "update_namespace_properties(ns, set_json=None, remove_json=None)"},
    {"drop_namespace", (PyCFunction)Catalog_drop_namespace, METH_VARARGS, "drop_namespace(ns)"},
    {"table_exists", (PyCFunction)Catalog_table_exists, METH_VARARGS, "table_exists(name)"},
    {"drop_table", (PyCFunction)Catalog_drop_table, METH_VARARGS,
     "drop_table(name, purge=False)"},
    {"rename_table", (PyCFunction)Catalog_rename_table, METH_VARARGS,
     "rename_table(from, to)"},
    {"register_table", (PyCFunction)Catalog_register_table, METH_VARARGS,
     "register_table(name, metadata_location, overwrite=False)"},
    {"list_views", (PyCFunction)Catalog_list_views, METH_VARARGS,
     "list_views(namespace=None) -> JSON array text"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject Catalog_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hyperstreamdb._core.CatalogHandle",
    .tp_basicsize = sizeof(CatalogObject),
    .tp_dealloc = (destructor)Catalog_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open catalog (hs_catalog) made by open_catalog(uri, options); calls are "
              "serialized by a lock and run without the GIL.",
    .tp_methods = Catalog_methods,
};

/* _core.find_metadata(location) -> str */
static PyObject *mod_find_metadata(UNUSED PyObject *m, PyObject *args)
{
    const char *loc;
    if (!PyArg_ParseTuple(args, "s", &loc))
        return NULL;
    char *out = NULL;
    hs_error err = {0};
    hs_status st;
    Py_BEGIN_ALLOW_THREADS
    st = hs_table_find_metadata(loc, &out, &err);
    Py_END_ALLOW_THREADS
    return st == HS_OK ? take_str(out) : raise_status(st, &err);
}

PyMethodDef catalog_module_methods[] = {
    {"open_catalog", KWFN(mod_open_catalog), "open_catalog(uri, options=None) -> CatalogHandle"},
    {"find_metadata", (PyCFunction)mod_find_metadata, METH_VARARGS,
     "find_metadata(location) -> path of the newest metadata file"},
    {NULL, NULL, 0, NULL},
};

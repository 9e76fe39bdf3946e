/*
 * filter_module.c — zverify._zvcore.Filter: the C filter (zv_filter.c) as a Python object.
 *
 * Filter(rules, listed) where rules is a sequence of (include: bool, pattern: bytes) and
 * listed a sequence of --files-from paths (bytes) or None.  A Walker given filter=F prunes
 * with it; F.excludes(path, is_dir) gives Python the same decision for a manifest's entries.
 * A bad pattern raises ValueError(index, reason), so the caller can name it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "zvcore.h"

typedef struct {
    PyObject_HEAD
    zv_filter *filter;
} FilterObject;

static PyTypeObject FilterType;

static int add_rules(zv_filter *f, PyObject *rules)
{
    PyObject *seq = PySequence_Fast(rules, "rules must be a sequence of (include, pattern)");
    if (!seq)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        int include;
        const char *pattern;
        Py_ssize_t len;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "py#", &include, &pattern, &len))
            break;
        int rc = zv_filter_add_rule(f, include, pattern, (size_t)len);
        if (rc == ZV_ENOMEM) {
            PyErr_NoMemory();
            break;
        }
        if (rc != ZV_OK) {
            PyErr_SetObject(PyExc_ValueError,
                            Py_BuildValue("(ns)", i, "empty, '/' alone, a trailing '\\', an "
                                                     "unterminated '[', an unknown [:class:] "
                                                     "or a '/' inside [...]"));
            break;
        }
    }
    Py_DECREF(seq);
    return PyErr_Occurred() ? -1 : 0;
}

static int add_listed(zv_filter *f, PyObject *listed)
{
    PyObject *seq = PySequence_Fast(listed, "listed must be a sequence of bytes");
    if (!seq)
        return -1;
    zv_filter_keep_listed_only(f);
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        char *path;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(PySequence_Fast_GET_ITEM(seq, i), &path, &len) < 0)
            break;
        int rc = zv_filter_add_listed(f, path, (size_t)len);
        if (rc == ZV_ENOMEM) {
            PyErr_NoMemory();
            break;
        }
        if (rc != ZV_OK) {
            PyErr_SetObject(PyExc_ValueError, Py_BuildValue("(ns)", i, "an empty path"));
            break;
        }
    }
    Py_DECREF(seq);
    return PyErr_Occurred() ? -1 : 0;
}

static int Filter_init(FilterObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"rules", "listed", NULL};
    PyObject *rules, *listed = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &rules, &listed))
        return -1;
    if (self->filter)
        zv_filter_free(self->filter); /* __init__ called twice */
    if (zv_filter_new(&self->filter) != ZV_OK) {
        PyErr_NoMemory();
        return -1;
    }
    if (add_rules(self->filter, rules) < 0 ||
        (listed != Py_None && add_listed(self->filter, listed) < 0)) {
        zv_filter_free(self->filter);
        self->filter = NULL;
        return -1;
    }
    if (zv_filter_seal(self->filter) != ZV_OK) {
        zv_filter_free(self->filter);
        self->filter = NULL;
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static PyObject *Filter_excludes(FilterObject *self, PyObject *args)
{
    const char *path;
    Py_ssize_t len;
    int is_dir;
    if (!PyArg_ParseTuple(args, "y#p", &path, &len, &is_dir))
        return NULL;
    if (!self->filter) {
        PyErr_SetString(PyExc_ValueError, "Filter not initialised");
        return NULL;
    }
    int out = zv_filter_excludes(self->filter, path, (size_t)len, is_dir);
    if (out < 0)
        return PyErr_NoMemory();
    return PyBool_FromLong(out);
}

static PyObject *Filter_note_seen(FilterObject *self, PyObject *args)
{
    const char *path;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "y#", &path, &len))
        return NULL;
    if (!self->filter) {
        PyErr_SetString(PyExc_ValueError, "Filter not initialised");
        return NULL;
    }
    zv_filter_note_seen(self->filter, path, (size_t)len);
    Py_RETURN_NONE;
}

/* The listed paths whose seen flag is want (1: seen, 0: not seen), sorted. */
static PyObject *listed_where(FilterObject *self, int want)
{
    if (!self->filter) {
        PyErr_SetString(PyExc_ValueError, "Filter not initialised");
        return NULL;
    }
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out && i < zv_filter_nlisted(self->filter); i++) {
        int seen;
        const char *path = zv_filter_listed(self->filter, i, &seen);
        if (seen != want)
            continue;
        PyObject *item = PyBytes_FromString(path);
        if (!item || PyList_Append(out, item) < 0)
            Py_CLEAR(out);
        Py_XDECREF(item);
    }
    return out;
}

static PyObject *Filter_seen(FilterObject *self, PyObject *unused)
{
    (void)unused;
    return listed_where(self, 1);
}

static PyObject *Filter_unseen(FilterObject *self, PyObject *unused)
{
    (void)unused;
    return listed_where(self, 0);
}

static void Filter_dealloc(FilterObject *self)
{
    zv_filter_free(self->filter);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Filter_methods[] = {
    {"excludes", (PyCFunction)Filter_excludes, METH_VARARGS,
     "excludes(path: bytes, is_dir: bool) -> bool: whether a walk leaves path out."},
    {"note_seen", (PyCFunction)Filter_note_seen, METH_VARARGS,
     "note_seen(path: bytes): a listed path was met (by another rank's walk)."},
    {"seen", (PyCFunction)Filter_seen, METH_NOARGS,
     "seen() -> list[bytes]: the listed paths a lookup met, sorted."},
    {"unseen", (PyCFunction)Filter_unseen, METH_NOARGS,
     "unseen() -> list[bytes]: the listed paths no lookup met, sorted."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FilterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "zverify._zvcore.Filter",
    .tp_doc = "Which paths a walk leaves out: rsync-style rules and a --files-from list.",
    .tp_basicsize = sizeof(FilterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Filter_init,
    .tp_dealloc = (destructor)Filter_dealloc,
    .tp_methods = Filter_methods,
};

/* The C filter of obj (a Filter or None -> NULL); -1 with TypeError for anything else. */
int zv_py_filter_get(PyObject *obj, const zv_filter **out)
{
    *out = NULL;
    if (obj == Py_None)
        return 0;
    if (!PyObject_TypeCheck(obj, &FilterType) || !((FilterObject *)obj)->filter) {
        PyErr_SetString(PyExc_TypeError, "filter must be a zverify._zvcore.Filter or None");
        return -1;
    }
    *out = ((FilterObject *)obj)->filter;
    return 0;
}

int zv_py_filter_init(PyObject *module)
{
    if (PyType_Ready(&FilterType) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "Filter", (PyObject *)&FilterType);
}

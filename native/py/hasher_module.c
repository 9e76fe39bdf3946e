/*
 * hasher_module.c — zverify._zvcore.Hasher: one of the core's content hashers (zv_hash.c)
 * for bytes Python holds, e.g. a manifest's running digest or a BagIt tag file.
 *
 * Hasher(algo) with algo ALGO_BLAKE3 or ALGO_XXH3_128; update(data) feeds bytes (the GIL is
 * released for large buffers, as hashlib does); digest() and hexdigest() give the digest of
 * everything fed so far and may be called again after more updates (neither library's
 * finalize consumes its state).  It exists so that the walk's C hashers are the only BLAKE3
 * zverify has: no second BLAKE3 binding from PyPI.  SHA-2 over bytes is hashlib's job.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "zv_hash.h"

/* Buffers at least this big are hashed without the GIL (hashlib's threshold is 2 KiB). */
#define RELEASE_GIL_AT 4096

typedef struct {
    PyObject_HEAD
    zv_hasher *hasher;
    int algo;
    PyThread_type_lock lock; /* update() without the GIL must not race another update() */
} HasherObject;

static int Hasher_init(HasherObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"algo", NULL};
    int algo;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "i", kwlist, &algo))
        return -1;
    if (algo != ZV_HASH_XXH3_128 && algo != ZV_HASH_BLAKE3) {
        PyErr_Format(PyExc_ValueError, "Hasher takes ALGO_BLAKE3 or ALGO_XXH3_128, not %d", algo);
        return -1;
    }
    if (self->hasher) /* __init__ called twice */
        zv_hasher_free(self->hasher);
    self->hasher = zv_hasher_new(algo);
    if (!self->lock)
        self->lock = PyThread_allocate_lock();
    if (!self->hasher || !self->lock) {
        PyErr_NoMemory();
        return -1;
    }
    if (!zv_hasher_reset(self->hasher)) {
        PyErr_SetString(PyExc_RuntimeError, "the hash library could not start a digest");
        return -1;
    }
    self->algo = algo;
    return 0;
}

static int ready(HasherObject *self)
{
    if (self->hasher)
        return 1;
    PyErr_SetString(PyExc_ValueError, "Hasher not initialised");
    return 0;
}

static PyObject *Hasher_update(HasherObject *self, PyObject *arg)
{
    Py_buffer view;
    if (!ready(self) || PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (view.len >= RELEASE_GIL_AT) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        zv_hasher_update(self->hasher, view.buf, (size_t)view.len);
        PyThread_release_lock(self->lock);
        Py_END_ALLOW_THREADS
    } else {
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        zv_hasher_update(self->hasher, view.buf, (size_t)view.len);
        PyThread_release_lock(self->lock);
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

/* The digest so far; the hasher can go on (BLAKE3 and XXH3 finish without consuming). */
static Py_ssize_t finish(HasherObject *self, unsigned char out[ZV_DIGEST_MAX])
{
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    size_t len = zv_hasher_digest(self->hasher, out);
    PyThread_release_lock(self->lock);
    if (len == 0)
        PyErr_SetString(PyExc_RuntimeError, "the hash library could not finish the digest");
    return (Py_ssize_t)len;
}

static PyObject *Hasher_digest(HasherObject *self, PyObject *Py_UNUSED(ignored))
{
    unsigned char out[ZV_DIGEST_MAX];
    Py_ssize_t len = ready(self) ? finish(self, out) : 0;
    return len ? PyBytes_FromStringAndSize((const char *)out, len) : NULL;
}

static PyObject *Hasher_hexdigest(HasherObject *self, PyObject *Py_UNUSED(ignored))
{
    unsigned char out[ZV_DIGEST_MAX];
    Py_ssize_t len = ready(self) ? finish(self, out) : 0;
    if (!len)
        return NULL;
    static const char hex[] = "0123456789abcdef";
    char text[2 * ZV_DIGEST_MAX];
    for (Py_ssize_t i = 0; i < len; i++) {
        text[2 * i] = hex[out[i] >> 4];
        text[2 * i + 1] = hex[out[i] & 15];
    }
    return PyUnicode_FromStringAndSize(text, 2 * len);
}

static void Hasher_dealloc(HasherObject *self)
{
    if (self->hasher)
        zv_hasher_free(self->hasher);
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Hasher_methods[] = {
    {"update", (PyCFunction)Hasher_update, METH_O, "update(data): feed bytes."},
    {"digest", (PyCFunction)Hasher_digest, METH_NOARGS, "digest() -> bytes so far."},
    {"hexdigest", (PyCFunction)Hasher_hexdigest, METH_NOARGS, "hexdigest() -> str so far."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject HasherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "zverify._zvcore.Hasher",
    .tp_doc = "Hasher(algo): the core's BLAKE3 or XXH3-128 over bytes.",
    .tp_basicsize = sizeof(HasherObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Hasher_init,
    .tp_dealloc = (destructor)Hasher_dealloc,
    .tp_methods = Hasher_methods,
};

int zv_py_hasher_init(PyObject *module)
{
    if (PyType_Ready(&HasherType) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "Hasher", (PyObject *)&HasherType);
}

/*
 * zvcore_module.c — the Python face of the C core: zverify._zvcore.
 *
 * Walker(root: bytes, *, algo, threads, block_size, one_file_system,
 *        xattrs, batch) is an iterator of lists of Record.  The GIL is
 * released while waiting for the next batch; it is retaken only to turn a
 * finished C batch into Python objects, and every 100 ms to let Ctrl-C in.
 *
 * The send-stream scanner registers itself through zv_py_stream_init()
 * (stream_module.c), so this file stays about walking and joining walks.
 *
 * Long because: it holds the three types of a walk as Python sees it, Record, Walker and
 * Join (the C join of two Walkers), which share the record conversion; each is kept short.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "zvjoin.h"

#include <errno.h>
#include <stdio.h>

int zv_py_stream_init(PyObject *module);
int zv_py_filter_init(PyObject *module);
int zv_py_hasher_init(PyObject *module);
int zv_py_filter_get(PyObject *obj, const zv_filter **out);

static PyTypeObject RecordType;
static PyObject *WalkError; /* OSError subclass: the walk ended before the whole tree */

static PyStructSequence_Field record_fields[] = {
    {"path", "relative path (bytes), b'' for the root"},
    {"kind", "KIND_* constant"},
    {"mode", "st_mode"},
    {"uid", NULL},
    {"gid", NULL},
    {"nlink", NULL},
    {"dev", NULL},
    {"ino", NULL},
    {"rdev", NULL},
    {"size", "st_size (apparent bytes)"},
    {"alloc", "st_blocks * 512 (allocated bytes)"},
    {"mtime_ns", NULL},
    {"ctime_ns", NULL},
    {"data_bytes", "bytes inside data extents (files)"},
    {"hole_bytes", "bytes inside holes (files)"},
    {"link", "symlink target (bytes) or None"},
    {"xattrs", "tuple of (name, value) bytes pairs, sorted, or None if unread"},
    {"digest", "XXH3-128 canonical (16 bytes), BLAKE3 or SHA-256 (32), SHA-512 (64) digest, or None"},
    {"error", "(operation, errno, offset) or None"},
    {"changed", "None, 'replaced' or 'modified'"},
    {"extents", "data extents ((start, end), ...) of a file with holes, else None"},
    {NULL, NULL},
};

static PyStructSequence_Desc record_desc = {
    "zverify._zvcore.Record",
    "One entry of a walk, as the C core saw it.",
    record_fields,
    21,
};

typedef struct {
    PyObject_HEAD
    zv_walk *walk;
    size_t batch;
    zv_record *buf;
    PyObject *filter; /* the Filter the walk borrows: kept alive until the walk is closed */
    PyObject *range;  /* (range_lo, range_hi) bytes the walk borrows, or NULL: no range */
    zv_counters final; /* the counters as the walk closed, so they outlive it */
} WalkerObject;

static PyObject *xattrs_tuple(const zv_record *r)
{
    if (!r->has_xattrs)
        Py_RETURN_NONE;
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
    const unsigned char *p = (const unsigned char *)r->xattrs, *end = p + r->xattrs_len;
    while (p < end) {
        size_t nlen = strlen((const char *)p);
        const unsigned char *v = p + nlen + 1;
        size_t vlen = ((size_t)v[0] << 24) | ((size_t)v[1] << 16) | ((size_t)v[2] << 8) | v[3];
        PyObject *pair = Py_BuildValue("(y#y#)", p, (Py_ssize_t)nlen, v + 4, (Py_ssize_t)vlen);
        if (!pair || PyList_Append(list, pair) < 0) {
            Py_XDECREF(pair);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(pair);
        p = v + 4 + vlen;
    }
    PyObject *t = PyList_AsTuple(list);
    Py_DECREF(list);
    return t;
}

static PyObject *extents_tuple(const zv_record *r)
{
    if (!r->extents)
        Py_RETURN_NONE;
    PyObject *t = PyTuple_New((Py_ssize_t)r->n_extents);
    if (!t)
        return NULL;
    for (size_t i = 0; i < r->n_extents; i++) {
        PyObject *pair = Py_BuildValue("(KK)", (unsigned long long)r->extents[2 * i],
                                       (unsigned long long)r->extents[2 * i + 1]);
        if (!pair) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, pair);
    }
    return t;
}

static PyObject *error_tuple(const zv_record *r)
{
    if (r->err_op == ZV_OP_NONE)
        Py_RETURN_NONE;
    return Py_BuildValue("(siL)", zv_op_name(r->err_op), r->err_errno, (long long)r->err_offset);
}

static PyObject *changed_value(const zv_record *r)
{
    if (r->changed == ZV_CHANGE_REPLACED)
        return PyUnicode_FromString("replaced");
    if (r->changed == ZV_CHANGE_MODIFIED)
        return PyUnicode_FromString("modified");
    if (r->changed == ZV_CHANGE_SIZE_MISMATCH)
        return PyUnicode_FromString("size-mismatch");
    Py_RETURN_NONE;
}

static PyObject *optional_bytes(const char *p, size_t len, int present)
{
    if (!present)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(p, (Py_ssize_t)len);
}

/* A time as exact integer nanoseconds: a Python int does not wrap, whatever the year. */
static PyObject *nanoseconds(zv_time t)
{
    const int64_t limit = INT64_MAX / 1000000000 - 1;
    if (t.sec > -limit && t.sec < limit)
        return PyLong_FromLongLong(t.sec * 1000000000 + t.nsec);
    PyObject *sec = PyLong_FromLongLong(t.sec), *giga = PyLong_FromLong(1000000000);
    PyObject *scaled = sec && giga ? PyNumber_Multiply(sec, giga) : NULL;
    PyObject *nsec = PyLong_FromLongLong(t.nsec);
    PyObject *sum = scaled && nsec ? PyNumber_Add(scaled, nsec) : NULL;
    Py_XDECREF(sec);
    Py_XDECREF(giga);
    Py_XDECREF(scaled);
    Py_XDECREF(nsec);
    return sum;
}

static PyObject *record_to_python(const zv_record *r)
{
    PyObject *rec = PyStructSequence_New(&RecordType);
    if (!rec)
        return NULL;
    PyObject *items[21] = {
        PyBytes_FromStringAndSize(r->path, (Py_ssize_t)r->path_len),
        PyLong_FromLong(r->kind),
        PyLong_FromUnsignedLong(r->mode),
        PyLong_FromUnsignedLong(r->uid),
        PyLong_FromUnsignedLong(r->gid),
        PyLong_FromUnsignedLongLong(r->nlink),
        PyLong_FromUnsignedLongLong(r->dev),
        PyLong_FromUnsignedLongLong(r->ino),
        PyLong_FromUnsignedLongLong(r->rdev),
        PyLong_FromUnsignedLongLong(r->size),
        PyLong_FromUnsignedLongLong(r->alloc),
        nanoseconds(r->mtime),
        nanoseconds(r->ctime),
        PyLong_FromUnsignedLongLong(r->data_bytes),
        PyLong_FromUnsignedLongLong(r->hole_bytes),
        optional_bytes(r->link, r->link_len, r->link != NULL),
        xattrs_tuple(r),
        optional_bytes((const char *)r->digest, r->digest_len, r->has_digest),
        error_tuple(r),
        changed_value(r),
        extents_tuple(r),
    };
    for (int i = 0; i < 21; i++) {
        if (!items[i]) {
            for (int j = 0; j < 21; j++)
                Py_XDECREF(items[j]);
            Py_DECREF(rec);
            return NULL;
        }
        PyStructSequence_SetItem(rec, i, items[i]);
    }
    return rec;
}

static PyObject *batch_to_list(zv_record *recs, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; i < n; i++) {
        PyObject *rec = list ? record_to_python(&recs[i]) : NULL;
        zv_record_free(&recs[i]);
        if (list && !rec)
            Py_CLEAR(list);
        if (list)
            PyList_SET_ITEM(list, (Py_ssize_t)i, rec);
    }
    return list;
}

static PyObject *raise_status(int rc, int err_no, PyObject *root)
{
    if (rc == ZV_ENOMEM)
        return PyErr_NoMemory();
    if (rc == ZV_EROOT || rc == ZV_ENOTDIR)
        return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, root), NULL;
    (void)err_no;
    PyErr_Format(PyExc_RuntimeError, "zvcore: walk failed (status %d)", rc);
    return NULL;
}

/* range_lo/range_hi: bytes or None (unbounded). */
static int set_range(zv_options *opt, PyObject *lo, PyObject *hi)
{
    if ((lo != Py_None && !PyBytes_Check(lo)) || (hi != Py_None && !PyBytes_Check(hi))) {
        PyErr_SetString(PyExc_TypeError, "range_lo and range_hi must be bytes or None");
        return -1;
    }
    if (lo != Py_None)
        opt->range_lo = PyBytes_AS_STRING(lo), opt->range_lo_len = (size_t)PyBytes_GET_SIZE(lo);
    if (hi != Py_None)
        opt->range_hi = PyBytes_AS_STRING(hi), opt->range_hi_len = (size_t)PyBytes_GET_SIZE(hi);
    return 0;
}

static int Walker_init(WalkerObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"root", "algo", "threads", "block_size", "one_file_system",
                             "xattrs", "batch", "filter", "max_open_files", "max_dir_fds",
                             "range_lo", "range_hi", NULL};
    PyObject *root, *filter = Py_None, *lo = Py_None, *hi = Py_None;
    zv_options opt = {.algo = ZV_HASH_XXH3_128, .threads = 2, .block_size = 128 << 10,
                      .one_file_system = 0, .read_xattrs = 1};
    Py_ssize_t batch = 1024, block = (Py_ssize_t)opt.block_size, max_files = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$iinppnOniOO", kwlist,
                                     PyUnicode_FSConverter, &root, &opt.algo, &opt.threads,
                                     &block, &opt.one_file_system, &opt.read_xattrs, &batch,
                                     &filter, &max_files, &opt.max_dir_fds, &lo, &hi))
        return -1;
    if (set_range(&opt, lo, hi) < 0) {
        Py_DECREF(root);
        return -1;
    }
    if (self->walk || zv_py_filter_get(filter, &opt.filter) < 0) {
        if (self->walk)
            PyErr_SetString(PyExc_RuntimeError, "Walker already started");
        Py_DECREF(root);
        return -1;
    }
    if (batch < 1 || block < 4096 || opt.threads < 1 || opt.threads > 256 || max_files < 0 ||
        opt.max_dir_fds < 0) {
        Py_DECREF(root);
        PyErr_SetString(PyExc_ValueError, "batch >= 1, block_size >= 4096, 1 <= threads <= 256, "
                                          "max_open_files >= 0, max_dir_fds >= 0");
        return -1;
    }
    opt.block_size = (size_t)block;
    opt.max_open_files = (size_t)max_files;
    int err_no = 0, rc;
    zv_walk *w = NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = zv_walk_open(PyBytes_AS_STRING(root), &opt, &w, &err_no);
    Py_END_ALLOW_THREADS
    if (rc != ZV_OK) {
        errno = err_no;
        raise_status(rc, err_no, root);
        Py_DECREF(root);
        return -1;
    }
    Py_DECREF(root);
    self->buf = PyMem_Calloc((size_t)batch, sizeof(zv_record));
    if (!self->buf) {
        zv_walk_close(w);
        PyErr_NoMemory();
        return -1;
    }
    self->walk = w;
    self->batch = (size_t)batch;
    Py_INCREF(filter);
    self->filter = filter;
    if (opt.range_lo || opt.range_hi)
        self->range = Py_BuildValue("(OO)", lo, hi); /* keeps both alive; NULL: raised */
    return self->range || !(opt.range_lo || opt.range_hi) ? 0 : -1;
}

static void close_walk(WalkerObject *self)
{
    zv_walk *w = self->walk;
    self->walk = NULL;
    if (w) {
        zv_walk_counters(w, &self->final);
        Py_BEGIN_ALLOW_THREADS
        zv_walk_close(w);
        Py_END_ALLOW_THREADS
    }
}

/* Any end but ZV_EDONE means the records seen are not the whole tree: raise, so no caller
 * can mistake a truncated walk for a complete one. */
static PyObject *walk_failed(WalkerObject *self, int rc)
{
    int err = rc == ZV_EWALK ? zv_walk_error(self->walk) : 0;
    close_walk(self);
    if (!err)
        err = EIO;
    const char *what = rc == ZV_EWALK ? "the walk could not go on" : "the walk was stopped";
    PyObject *args = Py_BuildValue("(is)", err, what);
    if (args) {
        PyErr_SetObject(WalkError, args);
        Py_DECREF(args);
    }
    return NULL;
}

static PyObject *Walker_next(WalkerObject *self)
{
    if (!self->walk)
        return NULL; /* exhausted or closed: StopIteration */
    if (self->range) { /* its context records are for a Join, never results */
        PyErr_SetString(PyExc_TypeError, "a Walker over a key range is read through a Join");
        return NULL;
    }
    for (;;) {
        size_t n = 0;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = zv_walk_next(self->walk, self->buf, self->batch, &n, 100);
        Py_END_ALLOW_THREADS
        if (rc == ZV_OK)
            return batch_to_list(self->buf, n);
        if (rc == ZV_EDONE) {
            close_walk(self);
            return NULL; /* StopIteration: every entry was emitted */
        }
        if (rc != ZV_EAGAIN)
            return walk_failed(self, rc);
        if (PyErr_CheckSignals() < 0) {
            close_walk(self);
            return NULL;
        }
    }
}

static PyObject *Walker_counters(WalkerObject *self, PyObject *Py_UNUSED(ignored))
{
    zv_counters c = self->final;
    if (self->walk)
        zv_walk_counters(self->walk, &c);
    return Py_BuildValue("(KKK)", (unsigned long long)c.entries, (unsigned long long)c.bytes,
                         (unsigned long long)c.excluded);
}

static PyObject *Walker_close(WalkerObject *self, PyObject *Py_UNUSED(ignored))
{
    close_walk(self);
    Py_RETURN_NONE;
}

static void Walker_dealloc(WalkerObject *self)
{
    close_walk(self);
    PyMem_Free(self->buf);
    Py_XDECREF(self->filter); /* only now: the walk's threads borrowed it until closed */
    Py_XDECREF(self->range);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Walker_methods[] = {
    {"counters", (PyCFunction)Walker_counters, METH_NOARGS,
     "(entries emitted, file bytes read, entries excluded) so far, or at the close."},
    {"close", (PyCFunction)Walker_close, METH_NOARGS, "Stop the threads and free everything."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WalkerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "zverify._zvcore.Walker",
    .tp_doc = "Iterator of record batches of one tree, in canonical order.",
    .tp_basicsize = sizeof(WalkerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Walker_init,
    .tp_dealloc = (destructor)Walker_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Walker_next,
    .tp_methods = Walker_methods,
};

/* ---- Join(src_walker, dst_walker): the pairs the Python engine must judge ---- */

typedef struct {
    PyObject_HEAD
    PyObject *walkers[2]; /* the WalkerObjects, kept alive while joined */
    zv_join *join;
    size_t batch;
    zv_pair *buf;
    int finished;
} JoinObject;

static int Join_init(JoinObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"src", "dst", "batch", "sizes_only", NULL};
    PyObject *src, *dst;
    Py_ssize_t batch = 1024;
    int sizes_only = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!|$np", kwlist, &WalkerType, &src,
                                     &WalkerType, &dst, &batch, &sizes_only))
        return -1;
    zv_walk *ws = ((WalkerObject *)src)->walk, *wd = ((WalkerObject *)dst)->walk;
    if (batch < 1 || !ws || !wd || src == dst || self->join) {
        PyErr_SetString(PyExc_ValueError, "two distinct open walkers, batch >= 1, once");
        return -1;
    }
    self->buf = PyMem_Calloc((size_t)batch, sizeof(zv_pair));
    if (!self->buf || zv_join_open(ws, wd, &self->join) != ZV_OK) {
        PyMem_Free(self->buf);
        self->buf = NULL;
        PyErr_NoMemory();
        return -1;
    }
    if (sizes_only)
        zv_join_sizes_only(self->join);
    self->walkers[0] = Py_NewRef(src);
    self->walkers[1] = Py_NewRef(dst);
    self->batch = (size_t)batch;
    return 0;
}

static PyObject *pair_to_python(zv_pair *p)
{
    PyObject *s = p->has_src ? record_to_python(&p->src) : Py_NewRef(Py_None);
    PyObject *d = p->has_dst ? record_to_python(&p->dst) : Py_NewRef(Py_None);
    if (p->has_src)
        zv_record_free(&p->src);
    if (p->has_dst)
        zv_record_free(&p->dst);
    if (!s || !d) {
        Py_XDECREF(s);
        Py_XDECREF(d);
        return NULL;
    }
    PyObject *t = PyTuple_Pack(2, s, d);
    Py_DECREF(s);
    Py_DECREF(d);
    return t;
}

static PyObject *pairs_to_list(zv_pair *pairs, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; i < n; i++) {
        if (!list) { /* still free every record */
            if (pairs[i].has_src)
                zv_record_free(&pairs[i].src);
            if (pairs[i].has_dst)
                zv_record_free(&pairs[i].dst);
            continue;
        }
        PyObject *t = pair_to_python(&pairs[i]);
        if (!t)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    return list;
}

/* A failure of the join: WalkError (with .side = "SRC"/"DST") or RuntimeError (order). */
static PyObject *join_failed(JoinObject *self, int rc)
{
    int side = zv_join_failed_side(self->join);
    self->finished = 1;
    if (rc == ZV_ENOMEM)
        return PyErr_NoMemory();
    const char *name = side == 1 ? "DST" : "SRC";
    if (rc == ZV_EORDER) {
        PyErr_Format(PyExc_RuntimeError, "%s walk out of canonical order", name);
        return NULL;
    }
    WalkerObject *w = (WalkerObject *)self->walkers[side == 1];
    int err = rc == ZV_EWALK && w->walk ? zv_walk_error(w->walk) : 0;
    const char *what = rc == ZV_EWALK ? "the walk could not go on" : "the walk was stopped";
    PyObject *exc = PyObject_CallFunction(WalkError, "is", err ? err : EIO, what);
    PyObject *side_name = PyUnicode_FromString(name);
    if (exc && side_name && PyObject_SetAttrString(exc, "side", side_name) == 0)
        PyErr_SetObject(WalkError, exc);
    Py_XDECREF(side_name);
    Py_XDECREF(exc);
    return NULL;
}

static PyObject *Join_next(JoinObject *self)
{
    if (!self->join || self->finished)
        return NULL;
    if (!((WalkerObject *)self->walkers[0])->walk || !((WalkerObject *)self->walkers[1])->walk) {
        self->finished = 1; /* a walker was closed under the join: its zv_walk is gone */
        PyErr_SetString(PyExc_ValueError, "a joined walker was closed");
        return NULL;
    }
    /* Every call returns within about 100 ms: a batch, maybe empty (a run of identical
     * pairs, or walks with nothing ready), is the caller's chance to show progress. */
    size_t n = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = zv_join_next(self->join, self->buf, self->batch, &n, 100);
    Py_END_ALLOW_THREADS
    if (rc == ZV_OK)
        return pairs_to_list(self->buf, n);
    if (rc == ZV_EDONE) {
        self->finished = 1;
        return NULL; /* StopIteration: both walks complete */
    }
    if (rc != ZV_EAGAIN)
        return join_failed(self, rc);
    if (PyErr_CheckSignals() < 0)
        return NULL;
    return PyList_New(0);
}

static PyObject *tally_tuple(const zv_tally *t)
{
    PyObject *kinds = PyTuple_New(ZV_KIND_UNKNOWN + 1);
    if (!kinds)
        return NULL;
    for (int k = 0; k <= ZV_KIND_UNKNOWN; k++)
        PyTuple_SET_ITEM(kinds, k, PyLong_FromUnsignedLongLong(t->by_kind[k]));
    return Py_BuildValue("(NLLLL)", kinds, (long long)t->du_bytes,
                         (long long)t->du_apparent_bytes, (long long)t->naive_bytes,
                         (long long)t->naive_apparent_bytes);
}

static PyObject *Join_totals(JoinObject *self, PyObject *Py_UNUSED(ignored))
{
    zv_join_totals t;
    memset(&t, 0, sizeof t);
    if (self->join)
        zv_join_get_totals(self->join, &t);
    static const char *names[ZV_N_COMPONENTS] = {"directories", "sparse", "allocation"};
    PyObject *components = PyDict_New();
    for (int c = 0; components && c < ZV_N_COMPONENTS; c++) {
        PyObject *v = Py_BuildValue("(LL)", (long long)t.apparent[c], (long long)t.allocated[c]);
        if (!v || PyDict_SetItemString(components, names[c], v) < 0)
            Py_CLEAR(components);
        Py_XDECREF(v);
    }
    if (!components)
        return NULL;
    return Py_BuildValue("(NNNK)", tally_tuple(&t.src), tally_tuple(&t.dst), components,
                         (unsigned long long)t.identical_pairs);
}

static void Join_dealloc(JoinObject *self)
{
    zv_join_close(self->join); /* before the walkers it borrows */
    PyMem_Free(self->buf);     /* its pairs were all handed over or freed by pairs_to_list */
    Py_XDECREF(self->walkers[0]);
    Py_XDECREF(self->walkers[1]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Join_methods[] = {
    {"totals", (PyCFunction)Join_totals, METH_NOARGS,
     "((src tally), (dst tally), {component: (apparent, allocated)}, identical pairs) of "
     "what was settled in C; a tally is ((count by kind), du, du apparent, naive, naive "
     "apparent)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject JoinType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "zverify._zvcore.Join",
    .tp_doc = "Iterator of lists of (src, dst) records (one may be None) that differ or need "
              "the engine's judgement; identical pairs are settled in C (see totals()).",
    .tp_basicsize = sizeof(JoinObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Join_init,
    .tp_dealloc = (destructor)Join_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Join_next,
    .tp_methods = Join_methods,
};

static PyObject *hash_backends(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(ignored))
{
    unsigned v = zv_xxh_version();
    char xxh[64];
    snprintf(xxh, sizeof xxh, "xxHash %u.%u.%u (built in)", v / 10000, v / 100 % 100, v % 100);
    char b3[64];
    snprintf(b3, sizeof b3, "BLAKE3 C %s", zv_blake3_version());
    return Py_BuildValue("{s:(s,s),s:(s,s)}", "xxh3-128", xxh,
                         zv_xxh_kernel(), "blake3", b3,
                         zv_blake3_kernel());
}

static PyObject *xxh_setting_known(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(zv_xxh_setting_known());
}

static PyMethodDef module_methods[] = {
    {"hash_backends", hash_backends, METH_NOARGS,
     "{algorithm: (implementation, kernel)} of the C hashers on this machine."},
    {"xxh_setting_known", xxh_setting_known, METH_NOARGS,
     "Whether ZVERIFY_XXH is unset, empty, auto or baseline (zv_xxh_setting_known)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef zvcore_module = {
    PyModuleDef_HEAD_INIT, "zverify._zvcore", "The zverify C core.", -1, module_methods, NULL,
    NULL, NULL, NULL,
};

static int add_constants(PyObject *m)
{
    static const struct { const char *name; long value; } consts[] = {
        {"KIND_FILE", ZV_KIND_FILE},       {"KIND_DIR", ZV_KIND_DIR},
        {"KIND_SYMLINK", ZV_KIND_SYMLINK}, {"KIND_FIFO", ZV_KIND_FIFO},
        {"KIND_SOCKET", ZV_KIND_SOCKET},   {"KIND_CHAR", ZV_KIND_CHAR},
        {"KIND_BLOCK", ZV_KIND_BLOCK},     {"KIND_UNKNOWN", ZV_KIND_UNKNOWN},
        {"ALGO_NONE", ZV_HASH_NONE},       {"ALGO_XXH3_128", ZV_HASH_XXH3_128},
        {"ALGO_BLAKE3", ZV_HASH_BLAKE3},   {"ALGO_SHA256", ZV_HASH_SHA256},
        {"ALGO_SHA512", ZV_HASH_SHA512},   {"ALGO_MD5", ZV_HASH_MD5},
        {"ALGO_SHA1", ZV_HASH_SHA1},
    };
    for (size_t i = 0; i < sizeof consts / sizeof *consts; i++)
        if (PyModule_AddIntConstant(m, consts[i].name, consts[i].value) < 0)
            return -1;
    /* The operation names that error tuples carry, so Python never spells them itself. */
    static const struct { const char *name; int op; } ops[] = {
        {"OP_LSTAT", ZV_OP_LSTAT}, {"OP_OPENDIR", ZV_OP_OPENDIR}, {"OP_READDIR", ZV_OP_READDIR},
        {"OP_OPEN", ZV_OP_OPEN},   {"OP_READ", ZV_OP_READ},       {"OP_READLINK", ZV_OP_READLINK},
        {"OP_XATTR", ZV_OP_XATTR}, {"OP_SEEK", ZV_OP_SEEK},
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (PyModule_AddStringConstant(m, ops[i].name, zv_op_name(ops[i].op)) < 0)
            return -1;
    return 0;
}

PyMODINIT_FUNC PyInit__zvcore(void)
{
    if (RecordType.tp_name == NULL && PyStructSequence_InitType2(&RecordType, &record_desc) < 0)
        return NULL;
    if (PyType_Ready(&WalkerType) < 0 || PyType_Ready(&JoinType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&zvcore_module);
    if (!m)
        return NULL;
    WalkError = PyErr_NewExceptionWithDoc(
        "zverify._zvcore.WalkError",
        "The walk ended before the whole tree was listed (errno, message).", PyExc_OSError,
        NULL);
    if (!WalkError || PyModule_AddObjectRef(m, "WalkError", WalkError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&RecordType);
    Py_INCREF(&WalkerType);
    if (PyModule_AddObject(m, "Record", (PyObject *)&RecordType) < 0 ||
        PyModule_AddObject(m, "Walker", (PyObject *)&WalkerType) < 0 ||
        PyModule_AddObjectRef(m, "Join", (PyObject *)&JoinType) < 0 || add_constants(m) < 0 ||
        zv_py_stream_init(m) < 0 || zv_py_filter_init(m) < 0 ||
        zv_py_hasher_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

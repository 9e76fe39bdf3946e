/*
 * stream_module.c — the send-stream scanner's Python face, registered in
 * zverify._zvcore by zv_py_stream_init() (called from zvcore_module.c).
 *
 * StreamScanner(fd, *, buffer_size=0, nvlist_max=0, progress_every=0,
 * relay_fd=-1, prefix=b"") is an iterator of StreamEvent values (see zvstream.h for what
 * each field means, and for the relay).
 * Scanning happens with the GIL released; it is retaken once per event,
 * and events are rare (BEGIN, END, problems, progress), so the hot loop
 * never touches Python.  fletcher4(data, state, big_endian) exposes the
 * same checksum for resume tokens and test builders.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "zv_fletcher.h"
#include "zvstream.h"

int zv_py_stream_init(PyObject *module);

static PyTypeObject EventType;

static PyStructSequence_Field event_fields[] = {
    {"kind", "EV_* constant"},
    {"code", "SP_* problem code (PROBLEM events), else 0"},
    {"fatal", "PROBLEM: framing stopped here"},
    {"errno", "SP_IO: the read() errno"},
    {"offset", "byte offset of the record concerned (or of EOF)"},
    {"record", "index of that record, 0 = first"},
    {"rtype", "its drr_type, -1 if unknown or not read"},
    {"span", "(start, end) of the bytes a failed checksum covers, or None"},
    {"detail", "(u64, u64): problem details, see zvstream.h"},
    {"stored", "checksum found in the stream (4 ints) or None"},
    {"computed", "checksum recomputed (4 ints) or None"},
    {"end_ok", "END: drr_checksum matched"},
    {"big_endian", "byte order of the stream"},
    {"header", "BEGIN/END: the 312 raw header bytes, else None"},
    {"payload", "BEGIN: the payload bytes if kept, else None"},
    {"payload_len", "BEGIN: drr_payloadlen"},
    {"counts", "records by type since the previous BEGIN/END (tuple of 11)"},
    {"records", "records since the previous BEGIN/END"},
    {"payload_bytes", NULL},
    {"logical_bytes", NULL},
    {"stream_bytes", NULL},
    {"toguid_mismatches", NULL},
    {"bytes", "bytes consumed so far"},
    {"object", "SP_RECORD: the object the refused record names"},
    {NULL, NULL},
};

#define EVENT_NFIELDS 24

static PyStructSequence_Desc event_desc = {
    "zverify._zvcore.StreamEvent",
    "One event of a send-stream scan.",
    event_fields,
    EVENT_NFIELDS,
};

typedef struct {
    PyObject_HEAD
    zv_stream *scan;
    int busy;
    uint64_t relayed; /* kept here: the scanner is freed when it finishes */
} ScannerObject;

static PyObject *u64_tuple(const uint64_t *v, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
        if (!x) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

static PyObject *maybe_bytes(const unsigned char *p, uint64_t len)
{
    if (!p)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)len);
}

static PyObject *span_value(const zv_sevent *e)
{
    if (e->kind != ZV_SEV_PROBLEM || (e->code != ZV_SP_CKSUM_RECORD && e->code != ZV_SP_CKSUM_END))
        Py_RETURN_NONE;
    return Py_BuildValue("(KK)", (unsigned long long)e->span_start, (unsigned long long)e->span_end);
}

static PyObject *cksum_value(const zv_sevent *e, const uint64_t *v)
{
    int has = e->kind == ZV_SEV_END ||
              (e->kind == ZV_SEV_PROBLEM && (e->code == ZV_SP_CKSUM_RECORD || e->code == ZV_SP_CKSUM_END));
    if (!has)
        Py_RETURN_NONE;
    return u64_tuple(v, 4);
}

static PyObject *event_to_python(const zv_sevent *e)
{
    PyObject *ev = PyStructSequence_New(&EventType);
    if (!ev)
        return NULL;
    PyObject *items[EVENT_NFIELDS] = {
        PyLong_FromLong(e->kind),
        PyLong_FromLong(e->code),
        PyBool_FromLong(e->fatal),
        PyLong_FromLong(e->err_no),
        PyLong_FromUnsignedLongLong(e->offset),
        PyLong_FromUnsignedLongLong(e->record),
        PyLong_FromLong(e->rtype),
        span_value(e),
        u64_tuple(e->detail, 2),
        cksum_value(e, e->stored),
        cksum_value(e, e->computed),
        PyBool_FromLong(e->end_ok),
        PyBool_FromLong(e->big_endian),
        maybe_bytes(e->header, ZV_DRR_SIZE),
        maybe_bytes(e->payload, e->payload_len),
        PyLong_FromUnsignedLongLong(e->payload_len),
        u64_tuple(e->seg.count, ZV_DRR_NTYPES),
        PyLong_FromUnsignedLongLong(e->seg.records),
        PyLong_FromUnsignedLongLong(e->seg.payload_bytes),
        PyLong_FromUnsignedLongLong(e->seg.logical_bytes),
        PyLong_FromUnsignedLongLong(e->seg.stream_bytes),
        PyLong_FromUnsignedLongLong(e->seg.toguid_mismatches),
        PyLong_FromUnsignedLongLong(e->bytes),
        PyLong_FromUnsignedLongLong(e->object),
    };
    for (int i = 0; i < EVENT_NFIELDS; i++) {
        if (!items[i]) {
            for (int j = 0; j < EVENT_NFIELDS; j++)
                Py_XDECREF(items[j]);
            Py_DECREF(ev);
            return NULL;
        }
        PyStructSequence_SetItem(ev, i, items[i]);
    }
    return ev;
}

static int Scanner_init(ScannerObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"fd",       "buffer_size", "nvlist_max", "progress_every",
                             "relay_fd", "prefix",      NULL};
    int fd, relay_fd = -1;
    Py_ssize_t bufsize = 0, nvmax = 0;
    unsigned long long every = 0;
    Py_buffer prefix = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "i|$nnKiy*", kwlist, &fd, &bufsize, &nvmax,
                                     &every, &relay_fd, &prefix))
        return -1;
    if (bufsize < 0 || nvmax < 0) {
        PyBuffer_Release(&prefix);
        PyErr_SetString(PyExc_ValueError, "buffer_size and nvlist_max must be >= 0");
        return -1;
    }
    zv_sopts o = {(size_t)bufsize, (size_t)nvmax, every,      relay_fd >= 0,
                  relay_fd,        prefix.buf,    (size_t)prefix.len};
    zv_stream *s = NULL;
    int rc = zv_stream_open(fd, &o, &s); /* copies the prefix */
    PyBuffer_Release(&prefix);
    if (rc == ZV_ENOMEM) {
        PyErr_NoMemory();
        return -1;
    }
    if (rc != ZV_OK) {
        PyErr_SetString(PyExc_ValueError,
                        "fd must be >= 0, buffer_size 0 or >= 4096, prefix no larger than it");
        return -1;
    }
    zv_stream_close(self->scan);
    self->scan = s;
    return 0;
}

static PyObject *Scanner_next(ScannerObject *self)
{
    if (!self->scan)
        return NULL; /* closed or finished: StopIteration */
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "StreamScanner used from two threads at once");
        return NULL;
    }
    zv_sevent ev;
    int rc;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = zv_stream_next(self->scan, &ev);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    self->relayed = zv_stream_relayed(self->scan);
    if (rc != ZV_OK) {
        zv_stream_close(self->scan);
        self->scan = NULL;
        return NULL;
    }
    if (PyErr_CheckSignals() < 0)
        return NULL;
    return event_to_python(&ev);
}

static PyObject *Scanner_bytes(ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(self->scan ? zv_stream_bytes(self->scan) : 0);
}

static PyObject *Scanner_relayed(ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(self->relayed);
}

static PyObject *Scanner_stop_relay(ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "StreamScanner is busy in another thread");
        return NULL;
    }
    if (self->scan)
        zv_stream_stop_relay(self->scan);
    Py_RETURN_NONE;
}

static PyObject *Scanner_skip_rest(ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "StreamScanner is busy in another thread");
        return NULL;
    }
    if (self->scan)
        zv_stream_skip_rest(self->scan);
    Py_RETURN_NONE;
}

static PyObject *Scanner_close(ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "StreamScanner is busy in another thread");
        return NULL;
    }
    zv_stream_close(self->scan);
    self->scan = NULL;
    Py_RETURN_NONE;
}

static void Scanner_dealloc(ScannerObject *self)
{
    zv_stream_close(self->scan);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Scanner_methods[] = {
    {"bytes_read", (PyCFunction)Scanner_bytes, METH_NOARGS, "Bytes consumed so far."},
    {"close", (PyCFunction)Scanner_close, METH_NOARGS, "Free the buffers (the fd stays open)."},
    {"relayed", (PyCFunction)Scanner_relayed, METH_NOARGS, "Bytes written to relay_fd so far."},
    {"stop_relay", (PyCFunction)Scanner_stop_relay, METH_NOARGS,
     "Write nothing more to relay_fd (the caller judged an event bad)."},
    {"skip_rest", (PyCFunction)Scanner_skip_rest, METH_NOARGS,
     "Stop framing: only read the rest (bytes counted, read errors reported), then EOF."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "zverify._zvcore.StreamScanner",
    .tp_doc = "Iterator of StreamEvent over a send stream read from a file descriptor.",
    .tp_basicsize = sizeof(ScannerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Scanner_next,
    .tp_methods = Scanner_methods,
};

static PyObject *py_fletcher4(PyObject *Py_UNUSED(mod), PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"data", "state", "big_endian", NULL};
    Py_buffer buf;
    uint64_t st[4] = {0, 0, 0, 0};
    unsigned long long in[4] = {0, 0, 0, 0};
    int big = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|$(KKKK)p", kwlist, &buf, &in[0], &in[1], &in[2],
                                     &in[3], &big))
        return NULL;
    for (int i = 0; i < 4; i++)
        st[i] = in[i];
    /* Release the GIL only when the work outweighs the switch. */
    if (buf.len >= (1 << 16)) {
        Py_BEGIN_ALLOW_THREADS
        zv_fletcher4(st, buf.buf, (size_t)buf.len, big);
        Py_END_ALLOW_THREADS
    } else {
        zv_fletcher4(st, buf.buf, (size_t)buf.len, big);
    }
    PyBuffer_Release(&buf);
    return u64_tuple(st, 4);
}

static PyObject *py_stream_walk(PyObject *Py_UNUSED(mod), PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"data", "start", "base", "state", "big_endian", "toguid",
                             "trailers", NULL};
    Py_buffer buf;
    zv_swalk w;
    unsigned long long base = 0, toguid = 0, in[4] = {0, 0, 0, 0};
    int start = 0, big = 0, trailers = 0, rc;
    memset(&w, 0, sizeof w);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*i|$K(KKKK)pKp", kwlist, &buf, &start, &base,
                                     &in[0], &in[1], &in[2], &in[3], &big, &toguid, &trailers))
        return NULL;
    w.start = start;
    w.base = base;
    w.big_endian = big;
    w.toguid = toguid;
    w.trailers = trailers;
    for (int i = 0; i < 4; i++)
        w.st[i] = in[i];
    Py_BEGIN_ALLOW_THREADS
    rc = zv_stream_walk(buf.buf, (size_t)buf.len, &w);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    if (rc != ZV_OK) {
        PyErr_SetString(PyExc_ValueError, "stream_walk: no BEGIN at the window's start, or bad start");
        return NULL;
    }
    return Py_BuildValue("{s:i,s:O,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:O,s:N}", "stop", w.stop,
                         "big_endian", w.big_endian ? Py_True : Py_False, "anchor",
                         (unsigned long long)w.anchor, "proven_from",
                         (unsigned long long)w.proven_from, "proven_to",
                         (unsigned long long)w.proven_to, "records", (unsigned long long)w.records,
                         "unchecked", (unsigned long long)w.unchecked, "next",
                         (unsigned long long)w.next, "bad_at", (unsigned long long)w.bad_at,
                         "bad_from", (unsigned long long)w.bad_from, "toguid",
                         (unsigned long long)w.toguid, "trailers",
                         w.trailers ? Py_True : Py_False, "state", u64_tuple(w.st, 4));
}

static PyMethodDef stream_functions[] = {
    {"fletcher4", (PyCFunction)(void (*)(void))py_fletcher4, METH_VARARGS | METH_KEYWORDS,
     "fletcher4(data, *, state=(0,0,0,0), big_endian=False) -> (a, b, c, d)\n"
     "OpenZFS incremental fletcher-4; 1-3 trailing bytes are ignored."},
    {"stream_walk", (PyCFunction)(void (*)(void))py_stream_walk, METH_VARARGS | METH_KEYWORDS,
     "stream_walk(data, start, *, base=0, state=(0,0,0,0), big_endian=False, toguid=0,"
     " trailers=False)"
     " -> dict\n"
     "Prove the records of a window read by range (zvstream.h, zv_stream_walk)."},
    {NULL, NULL, 0, NULL},
};

static int add_stream_constants(PyObject *m)
{
    static const struct { const char *name; long value; } consts[] = {
        {"EV_BEGIN", ZV_SEV_BEGIN},
        {"EV_END", ZV_SEV_END},
        {"EV_PROBLEM", ZV_SEV_PROBLEM},
        {"EV_PROGRESS", ZV_SEV_PROGRESS},
        {"EV_EOF", ZV_SEV_EOF},
        {"SP_EMPTY", ZV_SP_EMPTY},
        {"SP_NOT_STREAM", ZV_SP_NOT_STREAM},
        {"SP_TRUNC_HEADER", ZV_SP_TRUNC_HEADER},
        {"SP_TRUNC_PAYLOAD", ZV_SP_TRUNC_PAYLOAD},
        {"SP_BAD_TYPE", ZV_SP_BAD_TYPE},
        {"SP_BAD_LENGTH", ZV_SP_BAD_LENGTH},
        {"SP_CKSUM_RECORD", ZV_SP_CKSUM_RECORD},
        {"SP_CKSUM_END", ZV_SP_CKSUM_END},
        {"SP_BEGIN_MAGIC", ZV_SP_BEGIN_MAGIC},
        {"SP_TOGUID", ZV_SP_TOGUID},
        {"SP_IO", ZV_SP_IO},
        {"SP_NOMEM", ZV_SP_NOMEM},
        {"SP_RELAY", ZV_SP_RELAY},
        {"SP_ZEROS", ZV_SP_ZEROS},
        {"SP_RECORD", ZV_SP_RECORD},
        {"DRR_SIZE", ZV_DRR_SIZE},
        {"WALK_SEARCH", ZV_WALK_SEARCH},
        {"WALK_BEGIN", ZV_WALK_BEGIN},
        {"WALK_AT", ZV_WALK_AT},
        {"WALK_WINDOW", ZV_WALK_WINDOW},
        {"WALK_NO_ANCHOR", ZV_WALK_NO_ANCHOR},
        {"WALK_MISMATCH", ZV_WALK_MISMATCH},
        {"WALK_LOST", ZV_WALK_LOST},
    };
    for (size_t i = 0; i < sizeof consts / sizeof *consts; i++)
        if (PyModule_AddIntConstant(m, consts[i].name, consts[i].value) < 0)
            return -1;
    return 0;
}

int zv_py_stream_init(PyObject *module)
{
    if (EventType.tp_name == NULL && PyStructSequence_InitType2(&EventType, &event_desc) < 0)
        return -1;
    if (PyType_Ready(&ScannerType) < 0)
        return -1;
    Py_INCREF(&EventType);
    if (PyModule_AddObject(module, "StreamEvent", (PyObject *)&EventType) < 0) {
        Py_DECREF(&EventType);
        return -1;
    }
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(module, "StreamScanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        return -1;
    }
    if (PyModule_AddFunctions(module, stream_functions) < 0)
        return -1;
    return add_stream_constants(module);
}

/*
 * stream_module.c — registers the send-stream scanner in zverify._zvcore.
 * (Placeholder until the stream validator lands: registers nothing.)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

int zv_py_stream_init(PyObject *module);

int zv_py_stream_init(PyObject *module)
{
    (void)module;
    return 0;
}

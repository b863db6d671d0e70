/*
 * bench_python: the Python part of one sample, measured in a real CPython
 * (scripts/bench_python.sh).  Embeds libpython3.11; Python recurses `depth`
 * frames and calls pebench.measure(iters), which times, on that stack:
 *   - pe_py_interleave (what the signal handler adds to every sample: find the
 *     thread state, read each Python frame, merge), per call;
 *   - pe_py_name_pcs on those frames (what the collector adds per sample),
 *     first time (names read and stored) and then (cache hits, one code-object
 *     read per frame).
 * Prints one line: "py N native N interleave_ns N name_first_ns N name_ns N".
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <execinfo.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sampler/ring.h"
#include "stack/pyframes.h"
#include "symbols/pynames.h"

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static PyObject *
measure(PyObject *self, PyObject *args)
{
    uintptr_t native[PE_RING_FRAMES], pcs[PE_RING_FRAMES];
    long iters;
    int n, out = 0, py = 0;
    int64_t t0, t_int, t_first, t_name;

    if (!PyArg_ParseTuple(args, "l", &iters))
        return NULL;
    pe_py_init();
    if (!pe_py_active()) {
        PyErr_SetString(PyExc_RuntimeError, "pyframes not active");
        return NULL;
    }
    n = backtrace((void **)native, PE_MAX_FRAMES);
    t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        memcpy(pcs, native, (size_t)n * sizeof(pcs[0]));
        out = pe_py_interleave(pcs, n, PE_RING_FRAMES);
    }
    t_int = now_ns() - t0;
    for (int i = 0; i < out; i++)
        py += PE_PY_IS_TAG(pcs[i]);
    memcpy(native, pcs, sizeof(pcs));
    t0 = now_ns();
    pe_py_name_pcs(pcs, out);
    t_first = now_ns() - t0;
    t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        memcpy(pcs, native, (size_t)out * sizeof(pcs[0]));
        pe_py_name_pcs(pcs, out);
    }
    t_name = now_ns() - t0;
    return PyUnicode_FromFormat("py %d native %d interleave_ns %d name_first_ns %d name_ns %d", py,
                                n, (int)(t_int / iters), (int)t_first, (int)(t_name / iters));
}

static PyMethodDef methods[] = {{"measure", measure, METH_VARARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {
    PyModuleDef_HEAD_INIT, "pebench", NULL, -1, methods, NULL, NULL, NULL, NULL};

static PyObject *
init_pebench(void)
{
    return PyModule_Create(&mod);
}

int
main(int argc, char **argv)
{
    char code[512];
    int depth = argc > 1 ? atoi(argv[1]) : 40;
    long iters = argc > 2 ? atol(argv[2]) : 20000;

    PyImport_AppendInittab("pebench", init_pebench);
    Py_Initialize();
    snprintf(code, sizeof(code),
             "import pebench\n"
             "def down(d):\n"
             "    return down(d - 1) if d else pebench.measure(%ld)\n"
             "print(down(%d))\n",
             iters, depth);
    if (PyRun_SimpleString(code) != 0)
        return 1;
    return Py_FinalizeEx() < 0 ? 1 : 0;
}

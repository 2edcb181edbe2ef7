/*
 * korch._fast: InferenceSession.run as one C call (docs/python.md, "The run
 * path").
 *
 * Why a C extension: a MobileNetV2 run evicts the interpreter's code and data
 * from the caches, and each Python step of the ctypes path then misses to
 * memory; that path measured 44.6 us per call outside the C run against 1.9
 * us with the run stubbed (bench/python/RESULTS.md, run 3). Here the steps
 * between two runs are a few dictionary lookups, reference-count reads and
 * the C API calls, all in one function.
 *
 * The extension does not link libkorch: the package loads the library with
 * ctypes (korch/_lib.py: $KORCH_LIBRARY, the bundled copy, pkg-config) and
 * hands this module the addresses of the few C API functions it calls, so
 * the session handle and the functions always come from the same library.
 *
 * Semantics are the ctypes path's (korch/session.py), which stays as the
 * fallback when this module is not built:
 *   - inputs: a feed object that exports a C-contiguous buffer of the
 *     input's element kind, item size and shape is bound as it is (zero
 *     copy) and kept, buffer held, until another object comes; the same
 *     object on the next run is not bound again. Anything else goes to the
 *     package's conform(i, value), which raises the error naming the input
 *     or returns a contiguous copy, bound for that run only.
 *   - outputs: two arrays per output in a pool; a run writes into one that
 *     nobody else holds (reference count 1: the pool's), else into a new
 *     numpy.empty. An array the caller holds, or a view of it, is never
 *     written again.
 *   - one run at a time per session (turns), the GIL released for the run.
 *
 * This file: construction, the garbage collector's hooks, the attributes
 * bench/python and the tests read, the type and the module. The run path
 * itself is _fast_run.c; _fast.h declares the runner both use.
 */
#include "_fast.h"

/* ---- construction --------------------------------------------------------- */

static void *address_of(PyObject *seq, Py_ssize_t k) {
    unsigned long long a = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(seq, k));
    if (a == 0 && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "korch._fast: a null C function");
    return (void *)(uintptr_t)a;
}

static int parse_shape(PyObject *shape, int *rank, Py_ssize_t *dims) {
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > KORCH_MAX_RANK) {
        PyErr_SetString(PyExc_TypeError, "korch._fast: a shape is a tuple of at most 8 ints");
        return -1;
    }
    *rank = (int)PyTuple_GET_SIZE(shape);
    for (int d = 0; d < *rank; d++) {
        dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
        if (dims[d] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* Runner(handle, (set_input, set_output, run, last_error, status_name),
 *        [(name, kind, itemsize, shape, nbytes)] per input,
 *        [(shape, dtype, nbytes)] per output, {output name: index},
 *        (numpy.empty, conform, feed_check, output_error, raise_status, InvalidArgumentError))
 * korch/session.py builds these from the C API's tensor infos. */
static int runner_init(Runner *self, PyObject *args, PyObject *kwds) {
    PyObject *handle, *fns, *inputs, *outputs, *out_index, *helpers;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "korch._fast.Runner takes no keyword arguments");
        return -1;
    }
    if (self->sync_ready) {
        PyErr_SetString(PyExc_TypeError, "korch._fast.Runner is initialised once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OO!O!O!O!O!", &handle, &PyTuple_Type, &fns, &PyList_Type, &inputs, &PyList_Type,
                          &outputs, &PyDict_Type, &out_index, &PyTuple_Type, &helpers))
        return -1;
    if (PyTuple_GET_SIZE(fns) != 6 || PyTuple_GET_SIZE(helpers) != 6) {
        PyErr_SetString(PyExc_TypeError, "korch._fast.Runner: 6 functions and 6 helpers");
        return -1;
    }
    korch_session *session = PyLong_AsVoidPtr(handle);
    if (session == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "korch._fast.Runner: a null session");
        return -1;
    }
    void *f[6];
    for (int k = 0; k < 6; k++)
        if ((f[k] = address_of(fns, k)) == NULL) return -1;
    /* addresses of the library's functions, from ctypes: integers to function pointers */
    self->set_input = (set_input_fn)(uintptr_t)f[0];
    self->set_output = (set_output_fn)(uintptr_t)f[1];
    self->run = (run_fn)(uintptr_t)f[2];
    self->last_error = (last_error_fn)(uintptr_t)f[3];
    self->status_name = (status_name_fn)(uintptr_t)f[4];
    self->destroy = (destroy_fn)(uintptr_t)f[5];
    PyObject **h[6] = {&self->np_empty, &self->conform, &self->feed_check, &self->output_error, &self->raise_status,
                       &self->arg_error};
    for (int k = 0; k < 6; k++) {
        *h[k] = PyTuple_GET_ITEM(helpers, k);
        Py_INCREF(*h[k]);
    }
    Py_INCREF(out_index);
    self->out_index = out_index;

    self->n_in = (int)PyList_GET_SIZE(inputs);
    self->n_out = (int)PyList_GET_SIZE(outputs);
    self->in = PyMem_Calloc((size_t)self->n_in + 1, sizeof *self->in);
    self->out = PyMem_Calloc((size_t)self->n_out + 1, sizeof *self->out);
    if (self->in == NULL || self->out == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < self->n_in; i++) {
        input_slot *s = &self->in[i];
        PyObject *name, *shape;
        int kind;
        Py_ssize_t nbytes;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(inputs, i), "UCnO!n", &name, &kind, &s->itemsize, &PyTuple_Type,
                              &shape, &nbytes) ||
            parse_shape(shape, &s->rank, s->dims) < 0)
            return -1;
        Py_INCREF(name);
        s->name = name;
        s->kind = (char)kind;
        s->nbytes = (size_t)nbytes;
    }
    for (int i = 0; i < self->n_out; i++) {
        output_slot *s = &self->out[i];
        PyObject *shape, *dtype;
        Py_ssize_t nbytes;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(outputs, i), "O!On", &PyTuple_Type, &shape, &dtype, &nbytes)) return -1;
        s->empty_args = PyTuple_Pack(2, shape, dtype);
        if (s->empty_args == NULL) return -1;
        s->nbytes = (size_t)nbytes;
    }
    if (pthread_mutex_init(&self->mutex, NULL) != 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (pthread_cond_init(&self->cond, NULL) != 0) {
        pthread_mutex_destroy(&self->mutex);
        PyErr_NoMemory();
        return -1;
    }
    self->sync_ready = 1;
    /* the runner owns the session from here on (not before: a failed
     * constructor leaves it to the package's finalizer). The package's
     * session object may go before the runner does: `sess.run` is the
     * runner's bound method, and a caller may keep only that. */
    self->session = session;
    return 0;
}

/* ---- the garbage collector: a bound feed object may refer to the session -- */

static int runner_traverse(Runner *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    for (int i = 0; self->in != NULL && i < self->n_in; i++) {
        Py_VISIT(self->in[i].name);
        Py_VISIT(self->in[i].src);
        if (self->in[i].held) Py_VISIT(self->in[i].view.obj);
    }
    for (int i = 0; self->out != NULL && i < self->n_out; i++) {
        Py_VISIT(self->out[i].empty_args);
        Py_VISIT(self->out[i].now);
        Py_VISIT(self->out[i].before);
    }
    Py_VISIT(self->results);
    Py_VISIT(self->out_index);
    Py_VISIT(self->np_empty);
    Py_VISIT(self->conform);
    Py_VISIT(self->feed_check);
    Py_VISIT(self->output_error);
    Py_VISIT(self->raise_status);
    Py_VISIT(self->arg_error);
    return 0;
}

static int runner_clear(Runner *self) {
    for (int i = 0; self->in != NULL && i < self->n_in; i++) {
        fast_input_unbind(&self->in[i]);
        Py_CLEAR(self->in[i].name);
    }
    for (int i = 0; self->out != NULL && i < self->n_out; i++) {
        Py_CLEAR(self->out[i].empty_args);
        Py_CLEAR(self->out[i].now);
        Py_CLEAR(self->out[i].before);
    }
    Py_CLEAR(self->results);
    Py_CLEAR(self->out_index);
    Py_CLEAR(self->np_empty);
    Py_CLEAR(self->conform);
    Py_CLEAR(self->feed_check);
    Py_CLEAR(self->output_error);
    Py_CLEAR(self->raise_status);
    Py_CLEAR(self->arg_error);
    return 0;
}

static void runner_dealloc(Runner *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    runner_clear(self);
    if (self->session != NULL) self->destroy(self->session);
    PyMem_Free(self->in);
    PyMem_Free(self->out);
    if (self->sync_ready) {
        pthread_cond_destroy(&self->cond);
        pthread_mutex_destroy(&self->mutex);
    }
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

/* ---- attributes for the tests and bench/python ------------------------------ */

static PyObject *get_split_ns(Runner *self, void *Py_UNUSED(c)) {
    long long *t = self->split_ns;
    return Py_BuildValue("(LLLLL)", t[0], t[1], t[2], t[3], t[4]);
}
static PyObject *get_running(Runner *self, void *Py_UNUSED(c)) { return PyBool_FromLong(self->running); }
static PyObject *get_last_run_ns(Runner *self, void *Py_UNUSED(c)) { return PyLong_FromLongLong(self->last_run_ns); }
static PyObject *get_bench_mode(Runner *self, void *Py_UNUSED(c)) { return PyLong_FromLong(self->bench_mode); }

static int set_bench_mode(Runner *self, PyObject *value, void *Py_UNUSED(c)) {
    long mode = value ? PyLong_AsLong(value) : -1;
    if (mode == -1 && PyErr_Occurred()) return -1;
    if (mode < 0 || mode > 2) {
        PyErr_SetString(PyExc_ValueError, "bench_mode is 0 (run), 1 (run, timed) or 2 (no run)");
        return -1;
    }
    self->bench_mode = (int)mode;
    return 0;
}

static PyGetSetDef runner_getset[] = {
    {"split_ns", (getter)get_split_ns, NULL,
     "bench_mode 1: CLOCK_MONOTONIC ns at the turn taken, the run's start and end, the GIL taken back and the "
     "return", NULL},
    {"running", (getter)get_running, NULL, "True while a run has the GIL released", NULL},
    {"last_run_ns", (getter)get_last_run_ns, NULL, "the last run's C call in ns, in bench_mode 1", NULL},
    {"bench_mode", (getter)get_bench_mode, (setter)set_bench_mode,
     "0: run; 1: run and time the C call (last_run_ns); 2: skip the C call (bench/python only)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef runner_methods[] = {
    {"run", (PyCFunction)(void (*)(void))fast_runner_run, METH_FASTCALL,
     "run(output_names, input_feed, run_options=None) -> list of arrays"},
    {"close", (PyCFunction)fast_runner_close, METH_NOARGS, "no run after this; drops the bindings"},
    {"bound_inputs", (PyCFunction)fast_runner_bound_inputs, METH_NOARGS,
     "per input, the feed object bound zero-copy, or None"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot runner_slots[] = {
    {Py_tp_doc, "InferenceSession.run's C path over one korch_session (korch/session.py builds it)"},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, (void *)runner_init},
    {Py_tp_dealloc, (void *)runner_dealloc},
    {Py_tp_traverse, (void *)runner_traverse},
    {Py_tp_clear, (void *)runner_clear},
    {Py_tp_methods, runner_methods},
    {Py_tp_getset, runner_getset},
    {0, NULL},
};

static PyType_Spec runner_spec = {
    .name = "korch._fast.Runner",
    .basicsize = sizeof(Runner),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = runner_slots,
};

static int fast_exec(PyObject *m) {
    PyObject *type = PyType_FromSpec(&runner_spec);
    if (type == NULL) return -1;
    if (PyModule_AddObject(m, "Runner", type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return PyModule_AddIntConstant(m, "PROTOCOL", KORCH_FAST_PROTOCOL);
}

static PyModuleDef_Slot fast_slots[] = {
    {Py_mod_exec, (void *)fast_exec},
    {0, NULL},
};

static struct PyModuleDef fast_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "korch._fast",
    .m_doc = "InferenceSession.run as one C call (docs/python.md)",
    .m_size = 0,
    .m_slots = fast_slots,
};

PyMODINIT_FUNC PyInit__fast(void) { return PyModuleDef_Init(&fast_module); }

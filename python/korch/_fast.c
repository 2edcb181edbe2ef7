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
 *   - one run at a time per session (a lock), the GIL released for the run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <korch.h>

#ifdef Py_GIL_DISABLED
#error "korch._fast reads reference counts to reuse outputs: a free-threaded Python is not supported"
#endif

/* Bumped when the constructor's arguments change: korch/_lib.py refuses a
 * module built from another version of this file. */
#define KORCH_FAST_PROTOCOL 1

typedef korch_status (*set_input_fn)(korch_session *, int, const void *, size_t);
typedef korch_status (*set_output_fn)(korch_session *, int, void *, size_t);
typedef korch_status (*run_fn)(korch_session *);
typedef const char *(*last_error_fn)(void);
typedef const char *(*status_name_fn)(korch_status);
typedef void (*destroy_fn)(korch_session *);

typedef struct {
    PyObject *name;   /* the feed's key (str) */
    char kind;        /* numpy's dtype.kind: 'f', 'i', 'u' or 'b' */
    Py_ssize_t itemsize;
    int rank;
    Py_ssize_t dims[KORCH_MAX_RANK];
    size_t nbytes;
    PyObject *src;    /* the feed object bound zero-copy (the identity test), or NULL */
    Py_buffer view;   /* the bound memory, exported while bound (valid when held) */
    int held;
} input_slot;

typedef struct {
    PyObject *empty_args; /* (shape, dtype): numpy.empty's arguments */
    size_t nbytes;
    PyObject *now, *before; /* bound now; bound before it (either may be NULL) */
    void *now_addr, *before_addr;
} output_slot;

typedef struct {
    PyObject_HEAD
    korch_session *session; /* owned: destroyed by close() or with the runner; NULL once closed */
    set_input_fn set_input;
    set_output_fn set_output;
    run_fn run;
    last_error_fn last_error;
    status_name_fn status_name;
    destroy_fn destroy;
    /* one run at a time (turns): busy and waiters change only with the GIL
     * held; a thread that finds the session busy waits on cond, GIL released */
    int busy, waiters, sync_ready;
    unsigned long turn;     /* bumped (under mutex) each time a run ends and a thread waits */
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int n_in, n_out;
    input_slot *in;
    output_slot *out;
    PyObject *results;      /* the list of all outputs the last run returned; filled again when only the
                               runner holds it (then its items count in the outputs' reference counts) */
    PyObject *out_index;    /* {output name: index} */
    PyObject *np_empty;     /* numpy.empty */
    PyObject *conform;      /* conform(i, value) -> contiguous ndarray, or raises */
    PyObject *feed_check;   /* feed_check(feed) -> dict with the inputs' keys, or raises */
    PyObject *output_error; /* output_error(names): raises */
    PyObject *raise_status; /* raise_status(status, name, message): raises */
    PyObject *arg_error;    /* korch.InvalidArgumentError */
    int bench_mode;         /* 0 run; 1 run and time the C call; 2 no run (bench/python) */
    long long last_run_ns;
    long long split_ns[5];  /* bench_mode 1, CLOCK_MONOTONIC: turn taken, run start, run end, GIL taken back,
                               return */
    int running;            /* set while the GIL is released for the run */
} Runner;

/* ---- element kinds -------------------------------------------------------- */

/* numpy's kind letter of a struct-module format ("f", "<f", "=l", ...), or 0
 * for anything korch does not bind as it is (big-endian, complex, records). */
static char format_kind(const char *format) {
    if (format == NULL) return 'u'; /* unsigned bytes */
    if (*format == '@' || *format == '=') format++;
#if PY_LITTLE_ENDIAN
    else if (*format == '<') format++;
#else
    else if (*format == '>' || *format == '!') format++;
#endif
    if (format[0] == '\0' || format[1] != '\0') return 0;
    switch (format[0]) {
    case 'e': case 'f': case 'd': return 'f';
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': return 'i';
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': return 'u';
    case '?': return 'b';
    default: return 0;
    }
}

/* Is this buffer the input's tensor exactly (kind, item size, shape)? */
static int view_matches(const input_slot *slot, const Py_buffer *view) {
    if (view->ndim != slot->rank || view->itemsize != slot->itemsize || (size_t)view->len != slot->nbytes)
        return 0;
    for (int d = 0; d < slot->rank; d++)
        if (view->shape[d] != slot->dims[d]) return 0;
    return format_kind(view->format) == slot->kind;
}

/* ---- errors --------------------------------------------------------------- */

/* Raises the KorchError subclass of a failed C call with the library's
 * message (read on this thread, right after the call). */
static void raise_korch(Runner *self, korch_status status) {
    const char *msg = self->last_error();
    PyObject *r = PyObject_CallFunction(self->raise_status, "iyy", (int)status, self->status_name(status),
                                        msg ? msg : "");
    Py_XDECREF(r); /* raise_status raises: r is NULL with the exception set */
    if (!PyErr_Occurred()) PyErr_Format(PyExc_RuntimeError, "korch: C call failed with status %d", (int)status);
}

/* ---- turns: one run at a time per session --------------------------------- */

/* The C session is not reentrant. With the GIL held, a flag says whether a
 * run is in progress, and taking or giving the turn costs no call at all:
 * a lock's code would be one more thing the model's run has evicted
 * (bench/python/RESULTS.md: releasing a PyThread lock there took 1.6-2 us).
 * Only a thread that finds the session busy waits, on a condition variable,
 * with the GIL released. */
static void session_enter(Runner *self) {
    if (!self->busy) {
        self->busy = 1;
        return;
    }
    self->waiters++;
    while (self->busy) {
        unsigned long seen = self->turn; /* written with the GIL held and under mutex: stable here */
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&self->mutex);
        while (self->turn == seen) pthread_cond_wait(&self->cond, &self->mutex);
        pthread_mutex_unlock(&self->mutex);
        Py_END_ALLOW_THREADS
    }
    self->waiters--;
    self->busy = 1;
}

static void session_leave(Runner *self) {
    self->busy = 0;
    if (self->waiters == 0) return;
    pthread_mutex_lock(&self->mutex);
    self->turn++;
    pthread_cond_broadcast(&self->cond);
    pthread_mutex_unlock(&self->mutex);
}

/* ---- binding -------------------------------------------------------------- */

static void input_unbind(input_slot *slot) {
    if (slot->held) PyBuffer_Release(&slot->view);
    slot->held = 0;
    Py_CLEAR(slot->src);
}

/* Binds feed value v to input i: v's own memory when it is the tensor
 * exactly, else the copy conform() makes (or the error conform raises). */
static int input_bind(Runner *self, int i, PyObject *v) {
    input_slot *slot = &self->in[i];
    Py_buffer view;
    PyObject *copy = NULL;
    if (PyObject_GetBuffer(v, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
        if (!view_matches(slot, &view)) {
            PyBuffer_Release(&view);
            goto convert;
        }
    } else {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return -1; /* KeyboardInterrupt and the like */
        PyErr_Clear(); /* no contiguous buffer (a list, a strided view): conform() decides */
    convert:
        copy = PyObject_CallFunction(self->conform, "iO", i, v);
        if (copy == NULL) return -1;
        if (PyObject_GetBuffer(copy, &view, PyBUF_C_CONTIGUOUS) < 0) {
            Py_DECREF(copy);
            return -1;
        }
        Py_DECREF(copy); /* view.obj holds it */
        if ((size_t)view.len != slot->nbytes) {
            PyBuffer_Release(&view);
            PyErr_Format(PyExc_SystemError, "korch: input %d converted to %zd bytes, expected %zu", i, view.len,
                         slot->nbytes);
            return -1;
        }
    }
    korch_status st = self->set_input(self->session, i, view.buf, slot->nbytes);
    if (st != KORCH_OK) {
        PyBuffer_Release(&view);
        raise_korch(self, st);
        return -1;
    }
    input_unbind(slot);
    slot->view = view;
    slot->held = 1;
    if (copy == NULL) {
        Py_INCREF(v);
        slot->src = v;
    }
    return 0;
}

/* A fresh numpy.empty for output i: its address in *addr. */
static PyObject *output_new(Runner *self, int i, void **addr) {
    PyObject *arr = PyObject_Call(self->np_empty, self->out[i].empty_args, NULL);
    if (arr == NULL) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(arr, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    *addr = view.buf; /* the array owns its memory: the address lives as long as it */
    PyBuffer_Release(&view);
    return arr;
}

/* Is array a held by the runner alone: the pool, and the results list when
 * the runner alone holds that (listed)? */
static int runner_only(Runner *self, PyObject *a, int i, int listed) {
    return Py_REFCNT(a) == 1 + (listed && PyList_GET_ITEM(self->results, i) == a);
}

/* Binds to output i an array of the pool nobody else holds, or a new one. */
static int output_bind(Runner *self, int i, int listed) {
    output_slot *slot = &self->out[i];
    if (slot->now != NULL && runner_only(self, slot->now, i, listed)) return 0; /* bound, and nobody else has it */
    if (slot->before != NULL && runner_only(self, slot->before, i, listed)) {
        PyObject *o = slot->now;
        void *a = slot->now_addr;
        slot->now = slot->before, slot->now_addr = slot->before_addr;
        slot->before = o, slot->before_addr = a;
    } else {
        void *addr = NULL;
        PyObject *arr = output_new(self, i, &addr);
        if (arr == NULL) return -1;
        Py_XSETREF(slot->before, slot->now); /* the older one is the caller's now */
        slot->before_addr = slot->now_addr;
        slot->now = arr, slot->now_addr = addr;
    }
    korch_status st = self->set_output(self->session, i, slot->now_addr, slot->nbytes);
    if (st != KORCH_OK) {
        Py_CLEAR(slot->now); /* not bound: the next run binds a fresh one */
        raise_korch(self, st);
        return -1;
    }
    return 0;
}

/* ---- run ------------------------------------------------------------------ */

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The outputs named (a sequence of names), from the list of all. */
static PyObject *select_outputs(Runner *self, PyObject *all, PyObject *names) {
    PyObject *seq = PySequence_Fast(names, "output_names");
    if (seq == NULL) { /* not a sequence: the package's message */
        PyErr_Clear();
        PyObject *r = PyObject_CallOneArg(self->output_error, names);
        Py_XDECREF(r);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *res = PyList_New(n);
    for (Py_ssize_t k = 0; res != NULL && k < n; k++) {
        PyObject *idx = PyDict_GetItemWithError(self->out_index, PySequence_Fast_GET_ITEM(seq, k));
        if (idx == NULL) { /* unknown (or unhashable): the package's message lists the outputs */
            PyErr_Clear();
            PyObject *r = PyObject_CallOneArg(self->output_error, names);
            Py_XDECREF(r);
            Py_CLEAR(res);
            break;
        }
        PyObject *arr = PyList_GET_ITEM(all, PyLong_AsSsize_t(idx));
        Py_INCREF(arr);
        PyList_SET_ITEM(res, k, arr);
    }
    Py_DECREF(seq);
    return res;
}

/* run(output_names, input_feed, run_options=None) -> list of arrays */
static PyObject *runner_run(Runner *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2 || nargs > 3) {
        PyErr_Format(PyExc_TypeError, "run() takes output_names, input_feed and run_options=None (%zd given)",
                     nargs);
        return NULL;
    }
    PyObject *names = args[0], *feed = args[1], *own_feed = NULL;
    if (!PyDict_Check(feed) || PyDict_GET_SIZE(feed) != self->n_in) {
        own_feed = PyObject_CallOneArg(self->feed_check, feed); /* a dict of the right keys, or raises */
        if (own_feed == NULL) return NULL;
        if (!PyDict_Check(own_feed)) {
            Py_DECREF(own_feed);
            PyErr_SetString(PyExc_SystemError, "korch: feed_check did not return a dict");
            return NULL;
        }
        feed = own_feed;
    }
    session_enter(self);
    PyObject *result = NULL;
    korch_status st = KORCH_OK;
    int mode = self->bench_mode;
    if (mode == 1) self->split_ns[0] = now_ns();
    if (self->session == NULL) {
        PyErr_SetString(self->arg_error, "run: the session is closed");
        goto leave;
    }
    for (int i = 0; i < self->n_in; i++) {
        PyObject *v = PyDict_GetItemWithError(feed, self->in[i].name); /* borrowed */
        if (v == NULL) {
            if (!PyErr_Occurred()) { /* a key equal to the name but not found: let the package name it */
                PyObject *r = PyObject_CallOneArg(self->feed_check, feed);
                Py_XDECREF(r);
            }
            if (!PyErr_Occurred()) PyErr_Format(self->arg_error, "run: input %R not given", self->in[i].name);
            goto leave;
        }
        if (v == self->in[i].src) continue; /* bound already: its contents may have changed, its memory not */
        if (input_bind(self, i, v) < 0) goto leave;
    }
    int listed = 0; /* the last results list is ours alone: its items are the pool's references too */
    if (self->results != NULL) {
        if (Py_REFCNT(self->results) == 1 && PyList_GET_SIZE(self->results) == self->n_out)
            listed = 1;
        else /* the caller's list now, with the arrays in it (or one the caller resized before dropping it) */
            Py_CLEAR(self->results);
    }
    for (int i = 0; i < self->n_out; i++)
        if (output_bind(self, i, listed) < 0) goto leave;

    korch_session *session = self->session;
    run_fn run = self->run;
    long long t0 = 0, t1 = 0;
    self->running = 1;
    Py_BEGIN_ALLOW_THREADS
    if (mode == 1) t0 = now_ns();
    if (mode != 2) st = run(session);
    if (mode == 1) t1 = now_ns();
    /* the run evicted what comes next: fetch the runner's lines while the
     * GIL is taken back (prefetches only; nothing is read without the GIL) */
    __builtin_prefetch(self->out);
    __builtin_prefetch(self->results);
    Py_END_ALLOW_THREADS
    self->running = 0;
    if (mode == 1) {
        self->last_run_ns = t1 - t0;
        self->split_ns[1] = t0, self->split_ns[2] = t1, self->split_ns[3] = now_ns();
    }
    for (int i = 0; i < self->n_in; i++) /* converted copies are bound for one run */
        if (self->in[i].held && self->in[i].src == NULL) input_unbind(&self->in[i]);
    if (st != KORCH_OK) {
        raise_korch(self, st);
        goto leave;
    }
    /* the list the caller dropped is filled again, not a new one allocated:
     * after a model's run the allocator's lines are cold too */
    if (self->results == NULL && (self->results = PyList_New(self->n_out)) == NULL) goto leave;
    for (int i = 0; i < self->n_out; i++) {
        PyObject **item = &PyList_GET_ITEM(self->results, i);
        if (*item != self->out[i].now) {
            Py_INCREF(self->out[i].now);
            Py_XSETREF(*item, self->out[i].now);
        }
    }
    result = self->results;
    Py_INCREF(result);
leave:
    session_leave(self);
    Py_XDECREF(own_feed);
    if (result != NULL && names != Py_None) Py_SETREF(result, select_outputs(self, result, names));
    if (mode == 1) self->split_ns[4] = now_ns();
    return result;
}

/* close(): waits for a run in progress, destroys the C session and drops
 * the bindings; runs after it raise "closed". */
static PyObject *runner_close(Runner *self, PyObject *Py_UNUSED(ignored)) {
    session_enter(self);
    if (self->session != NULL) self->destroy(self->session);
    self->session = NULL;
    for (int i = 0; i < self->n_in; i++) input_unbind(&self->in[i]);
    Py_CLEAR(self->results);
    for (int i = 0; i < self->n_out; i++) {
        Py_CLEAR(self->out[i].now);
        Py_CLEAR(self->out[i].before);
    }
    session_leave(self);
    Py_RETURN_NONE;
}

/* bound_inputs(): per input, the feed object bound zero-copy, or None (tests). */
static PyObject *runner_bound_inputs(Runner *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *res = PyList_New(self->n_in);
    for (int i = 0; res != NULL && i < self->n_in; i++) {
        PyObject *o = self->in[i].src ? self->in[i].src : Py_None;
        Py_INCREF(o);
        PyList_SET_ITEM(res, i, o);
    }
    return res;
}

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
        input_unbind(&self->in[i]);
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
    {"run", (PyCFunction)(void (*)(void))runner_run, METH_FASTCALL,
     "run(output_names, input_feed, run_options=None) -> list of arrays"},
    {"close", (PyCFunction)runner_close, METH_NOARGS, "no run after this; drops the bindings"},
    {"bound_inputs", (PyCFunction)runner_bound_inputs, METH_NOARGS,
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

/*
 * korch._fast, the run path: InferenceSession.run as one C call (the
 * module's overview is in _fast.c; docs/python.md, "The run path").
 */
#include "_fast.h"

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
 * with the GIL released, and the turn is handed to it: the leaving thread
 * keeps busy set and serves the next ticket. Clearing busy instead and
 * letting the waiters race for it starved them: a thread calling run() in a
 * loop holds the GIL from its leave to its next enter, and a woken waiter
 * only got the GIL back once that next run had released it, busy again
 * (close() from another thread never returned; CI stop 34). */
static void session_enter(Runner *self) {
    if (!self->busy) {
        self->busy = 1;
        return;
    }
    unsigned long ticket = ++self->tickets;
    self->waiters++;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&self->mutex);
    while (self->served != ticket) pthread_cond_wait(&self->cond, &self->mutex);
    pthread_mutex_unlock(&self->mutex);
    Py_END_ALLOW_THREADS
    /* handed over: busy stayed set, the leaving thread counted this waiter out */
}

static void session_leave(Runner *self) {
    if (self->waiters == 0) {
        self->busy = 0;
        return;
    }
    self->waiters--;
    pthread_mutex_lock(&self->mutex);
    self->served++;
    pthread_cond_broadcast(&self->cond);
    pthread_mutex_unlock(&self->mutex);
}

/* ---- binding -------------------------------------------------------------- */

void fast_input_unbind(input_slot *slot) {
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
    fast_input_unbind(slot);
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
PyObject *fast_runner_run(Runner *self, PyObject *const *args, Py_ssize_t nargs) {
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
        if (self->in[i].held && self->in[i].src == NULL) fast_input_unbind(&self->in[i]);
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
PyObject *fast_runner_close(Runner *self, PyObject *Py_UNUSED(ignored)) {
    session_enter(self);
    if (self->session != NULL) self->destroy(self->session);
    self->session = NULL;
    for (int i = 0; i < self->n_in; i++) fast_input_unbind(&self->in[i]);
    Py_CLEAR(self->results);
    for (int i = 0; i < self->n_out; i++) {
        Py_CLEAR(self->out[i].now);
        Py_CLEAR(self->out[i].before);
    }
    session_leave(self);
    Py_RETURN_NONE;
}

/* bound_inputs(): per input, the feed object bound zero-copy, or None (tests). */
PyObject *fast_runner_bound_inputs(Runner *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *res = PyList_New(self->n_in);
    for (int i = 0; res != NULL && i < self->n_in; i++) {
        PyObject *o = self->in[i].src ? self->in[i].src : Py_None;
        Py_INCREF(o);
        PyList_SET_ITEM(res, i, o);
    }
    return res;
}

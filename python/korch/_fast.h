/*
 * korch._fast's shared declarations: the runner (one per InferenceSession,
 * over one korch_session) and the two halves that use it, _fast_run.c (the
 * run path) and _fast.c (construction, the type, the module).
 */
#ifndef KORCH_PY_FAST_H
#define KORCH_PY_FAST_H

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
    /* one run at a time (turns, first come first served): busy, waiters and
     * tickets change only with the GIL held; a thread that finds the session
     * busy takes a ticket and waits on cond, GIL released, until served
     * (bumped under mutex by the leaving thread) reaches it */
    int busy, waiters, sync_ready;
    unsigned long tickets, served;
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

/* _fast_run.c: the methods of the run path */
PyObject *fast_runner_run(Runner *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fast_runner_close(Runner *self, PyObject *ignored);
PyObject *fast_runner_bound_inputs(Runner *self, PyObject *ignored);
void fast_input_unbind(input_slot *slot);

#endif

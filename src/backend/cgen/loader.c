/* Loaded kernel libraries and the korch_kernel objects that wrap their entry
 * points.
 *
 * A library is reference-counted: every kernel built from it holds a
 * reference, and dlclose runs when the last one goes. Kernels must therefore
 * be destroyed only when none of them is running: an OpenMP region has
 * finished (all its workers are back in libgomp) once the kernel call that
 * opened it has returned, so closing after the last call is safe. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/cgen.h"

struct cg_library {
    void *handle;
    int refs;
    char *path; /* the object file, for the links registry.c leaves on disk */
};

korch_status cg_library_open(const char *path, cg_library **out);

korch_status cg_library_open(const char *path, cg_library **out) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *msg = dlerror();
        return korch_error(KORCH_ERR_RUNTIME, "cannot load compiled kernels %s: %s", path, msg ? msg : "?");
    }
    cg_library *lib = calloc(1, sizeof *lib);
    if (!lib) {
        dlclose(h);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
    }
    lib->handle = h;
    lib->refs = 1;
    lib->path = strdup(path); /* NULL only costs the on-disk link */
    *out = lib;
    return KORCH_OK;
}

void *cg_library_symbol(cg_library *lib, const char *name) { return lib ? dlsym(lib->handle, name) : NULL; }

const char *cg_library_path(const cg_library *lib) { return lib ? lib->path : NULL; }

void cg_library_retain(cg_library *lib) {
    if (lib) __atomic_add_fetch(&lib->refs, 1, __ATOMIC_ACQ_REL);
}

void cg_library_release(cg_library *lib) {
    if (!lib) return;
    if (__atomic_sub_fetch(&lib->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        dlclose(lib->handle);
        free(lib->path);
        free(lib);
    }
}

typedef struct wrapped {
    cg_library *lib;
    cg_entry fn;
    int threads;
    int n_inputs, n_outputs;
    int input_spec[]; /* canonical slot -> spec input position */
} wrapped;

static korch_status wrapped_run(korch_kernel *k, void *const *inputs, void *const *outputs) {
    wrapped *w = k->state;
    void *small[64] = {0};
    void **in = w->n_inputs <= 64 ? small : malloc((size_t)w->n_inputs * sizeof *in);
    if (!in) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen kernel: out of memory");
    for (int i = 0; i < w->n_inputs; i++) in[i] = inputs[w->input_spec[i]];
    int rc = w->fn(in, outputs, w->threads);
    if (in != small) free(in);
    if (rc != 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "kernel %s: out of scratch memory", k->impl);
    return KORCH_OK;
}

static void wrapped_destroy(korch_kernel *k) {
    wrapped *w = k->state;
    if (w) cg_library_release(w->lib);
    free(w);
    k->state = NULL;
}

korch_status cg_kernel_wrap(const cg_kernel *k, cg_library *lib, cg_entry fn, int threads, const char *impl,
                            korch_kernel **out) {
    korch_kernel *kk = calloc(1, sizeof *kk);
    wrapped *w = calloc(1, sizeof *w + (size_t)(k->n_inputs + 1) * sizeof(int));
    if (!kk || !w) {
        free(kk);
        free(w);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
    }
    w->lib = lib;
    cg_library_retain(lib);
    w->fn = fn;
    w->threads = threads > 0 ? threads : 1;
    w->n_inputs = k->n_inputs;
    w->n_outputs = k->n_outputs;
    memcpy(w->input_spec, k->input_spec, (size_t)k->n_inputs * sizeof(int));
    kk->backend = KORCH_BACKEND_CGEN;
    snprintf(kk->impl, sizeof kk->impl, "%s", impl);
    kk->state = w;
    kk->run = wrapped_run;
    kk->destroy = wrapped_destroy;
    *out = kk;
    return KORCH_OK;
}

/* One conformance test: model.onnx plus test_data_set_K/{input,output}_N.pb,
 * loaded through the korch frontend, run by the reference executor and
 * compared with the stored outputs. */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance.h"
#include "frontend/frontend.h"
#include "frontend/onnx_load.h"
#include "io/npy.h"
#include "ops/reference.h"
#include "tensor_compare.h"

enum { MAX_TENSORS = 64, MAX_DATA_SETS = 64 };

static void set_result(conformance_result *r, conformance_outcome outcome, const char *fmt, ...) {
    char raw[sizeof r->detail];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    r->outcome = outcome;
    r->reason[0] = '\0';
    korch_printable(raw, r->detail, sizeof r->detail); /* one line, whatever korch said */
}

/* Copies up to `n` bytes of `src`, replacing the contents of "..." with '*',
 * so that messages differing only in tensor or node names share a key. */
static void elide_quoted(const char *src, size_t n, char *dst, size_t size) {
    size_t j = 0;
    bool quoted = false;
    for (size_t i = 0; i < n && src[i] && j + 1 < size; i++) {
        if (src[i] == '"') {
            quoted = !quoted;
            dst[j++] = '"';
            if (quoted && j + 1 < size) dst[j++] = '*';
        } else if (!quoted) {
            dst[j++] = src[i];
        }
    }
    dst[j] = '\0';
}

static size_t word_length(const char *p) {
    size_t n = 0;
    while (p[n] && p[n] != ' ' && p[n] != ',' && p[n] != '(' && p[n] != ')' && p[n] != ';') n++;
    return n;
}

void conformance_refusal_key(const char *msg, char *key, size_t size) {
    const char *p = strstr(msg, "unsupported operator ");
    if (p) {
        p += strlen("unsupported operator ");
        size_t len = word_length(p);
        const char *after = p + len;
        if (strncmp(after, " at opset ", 10) == 0)
            snprintf(key, size, "unsupported operator %.*s at opset %.*s", (int)len, p, (int)word_length(after + 10),
                     after + 10);
        else if (strncmp(after, " from custom domain ", 20) == 0)
            snprintf(key, size, "unsupported operator %.*s (custom domain)", (int)len, p);
        else
            snprintf(key, size, "unsupported operator %.*s", (int)len, p);
        return;
    }
    /* op errors read: node "NAME" (Op, opset K): rest */
    char op[64] = "";
    const char *rest = msg;
    const char *node = strstr(msg, "node \"");
    const char *paren = node ? strstr(node, "\" (") : NULL;
    if (paren) {
        const char *o = paren + 3;
        snprintf(op, sizeof op, "%.*s", (int)word_length(o), o);
        const char *colon = strstr(o, "): ");
        if (colon) rest = colon + 3;
    }
    const char *d = strstr(rest, "dtype ");
    size_t skip = 6;
    if (!d) {
        d = strstr(rest, "data type ");
        skip = 10;
    }
    if (d) {
        d += skip;
        snprintf(key, size, "unsupported dtype %.*s%s%s%s", (int)word_length(d), d, *op ? " (" : "", op, *op ? ")" : "");
        return;
    }
    char elided[256];
    elide_quoted(rest, strlen(rest), elided, sizeof elided);
    snprintf(key, size, "refused by design: %s%s%s", op, *op ? ": " : "", elided);
}

/* Records a korch error: KORCH_ERR_UNSUPPORTED skips the test, anything else fails it. */
static void set_korch_error(conformance_result *r, korch_status st, const char *stage, const char *model) {
    const char *msg = korch_last_error();
    size_t plen = strlen(model);
    if (strncmp(msg, model, plen) == 0 && strncmp(msg + plen, ": ", 2) == 0) msg += plen + 2;
    if (st == KORCH_ERR_UNSUPPORTED) {
        set_result(r, CONFORMANCE_SKIP, "%s", msg);
        conformance_refusal_key(msg, r->reason, sizeof r->reason);
    } else {
        set_result(r, CONFORMANCE_FAIL, "%s failed (%s): %s", stage, korch_status_name(st), msg);
    }
}

typedef struct tensor_files {
    int count;
    korch_tensor tensors[MAX_TENSORS];
    char *names[MAX_TENSORS];
    korch_status status[MAX_TENSORS]; /* of reading each file */
    char errors[MAX_TENSORS][256];
} tensor_files;

static void read_tensor_files(const char *set_dir, const char *prefix, tensor_files *f) {
    memset(f, 0, sizeof *f);
    char path[4096];
    for (int k = 0; k < MAX_TENSORS; k++) {
        snprintf(path, sizeof path, "%s/%s_%d.pb", set_dir, prefix, k);
        if (access(path, F_OK) != 0) break;
        f->status[k] = korch_tensor_file_read(path, &f->tensors[k], &f->names[k]);
        if (f->status[k] != KORCH_OK) snprintf(f->errors[k], sizeof f->errors[k], "%s", korch_last_error());
        f->count++;
    }
}

static void free_tensor_files(tensor_files *f) {
    for (int k = 0; k < f->count; k++) {
        korch_tensor_free(&f->tensors[k]);
        free(f->names[k]);
    }
}

/* The graph input that input file k binds, as a value index: by TensorProto
 * name when it names a graph input, else by position. -1: none. */
static int input_value(const korch_graph *g, const tensor_files *in, int k) {
    if (in->names[k] && *in->names[k]) {
        int v = korch_graph_find_value(g, in->names[k]);
        for (int i = 0; v >= 0 && i < g->n_inputs; i++)
            if (g->inputs[i] == v) return v;
    }
    return k < g->n_inputs ? g->inputs[k] : -1;
}

static int input_slot(const korch_graph *g, int value) {
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == value) return i;
    return -1;
}

static void compare_outputs(const korch_graph *g, korch_tensor *got, const tensor_files *want, conformance_result *r) {
    char why[1024], name[160];
    if (want->count != g->n_outputs) {
        set_result(r, CONFORMANCE_FAIL, "the model has %d outputs, the test data %d", g->n_outputs, want->count);
        return;
    }
    for (int k = 0; k < want->count; k++) {
        korch_printable(g->values[g->outputs[k]].name, name, sizeof name);
        if (want->status[k] != KORCH_OK) {
            set_result(r, CONFORMANCE_FAIL, "cannot read output_%d.pb: %s", k, want->errors[k]);
            return;
        }
        korch_tensor w = want->tensors[k];
        if (w.dtype == KORCH_DTYPE_UINT16 && got[k].dtype == KORCH_DTYPE_BFLOAT16)
            w.dtype = KORCH_DTYPE_BFLOAT16; /* bfloat16 bits stored as uint16, as for inputs */
        if (!korch_tensor_compare(&got[k], &w, why, sizeof why)) {
            set_result(r, CONFORMANCE_FAIL, "output %d \"%s\": %s", k, name, why);
            return;
        }
    }
    set_result(r, CONFORMANCE_PASS, "%d outputs match", want->count);
}

/* --fission: the same outputs through the primitive interpreter and through
 * the exported ONNX model. */
static void check_fission(const korch_graph *g, const korch_tensor *bound, const tensor_files *want,
                          conformance_result *r) {
    korch_tensor interp[MAX_TENSORS], exported[MAX_TENSORS];
    if (conformance_fission_run(g, bound, interp, exported) != KORCH_OK) {
        set_result(r, CONFORMANCE_FAIL, "fission: %s", korch_last_error());
        return;
    }
    compare_outputs(g, interp, want, r);
    if (r->outcome != CONFORMANCE_PASS) {
        char d[sizeof r->detail];
        snprintf(d, sizeof d, "%s", r->detail);
        snprintf(r->detail, sizeof r->detail, "fission (interpreted): %.1300s", d);
    } else {
        compare_outputs(g, exported, want, r);
        if (r->outcome != CONFORMANCE_PASS) {
            char d[sizeof r->detail];
            snprintf(d, sizeof d, "%s", r->detail);
            snprintf(r->detail, sizeof r->detail, "fission (exported ONNX): %.1300s", d);
        }
    }
    for (int k = 0; k < g->n_outputs; k++) {
        korch_tensor_free(&interp[k]);
        korch_tensor_free(&exported[k]);
    }
}

/* korch needs shape-like operands (Reshape's shape, Slice's starts, Resize's
 * scales, ...) to be constants, but many node tests feed them as graph
 * inputs. When korch refuses a test only for that reason, the runner freezes
 * the input korch named: it becomes a constant holding the test's data, which
 * is the model korch is designed for, and the op still runs. When the named
 * tensor is computed from inputs (a window size cast to float, say), the
 * runner freezes every integer input instead. A control-flow node (Loop's
 * trip count, a Slice at the iteration number inside a body) may need values
 * computed from float inputs too: only then, every input is frozen, and the
 * Loop is evaluated at load (the operator under test still runs). */
typedef struct freeze_list {
    int count;
    char names[MAX_TENSORS][160];
    bool all_integers;
    bool all_inputs;
} freeze_list;

static bool is_integer(korch_dtype d) { return d == KORCH_DTYPE_INT64 || d == KORCH_DTYPE_INT32; }

static bool in_freeze_list(const freeze_list *f, const char *name) {
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->names[i], name) == 0) return true;
    return false;
}

static korch_status freeze_inputs(korch_graph *g, const tensor_files *in, const int *value_of, const freeze_list *f,
                                  bool *frozen) {
    for (int k = 0; k < in->count; k++) {
        if (value_of[k] < 0 || in->status[k] != KORCH_OK) continue;
        if (!in_freeze_list(f, g->values[value_of[k]].name) && !(f->all_integers && is_integer(in->tensors[k].dtype)) &&
            !f->all_inputs)
            continue;
        korch_value *v = &g->values[value_of[k]];
        KORCH_TRY(korch_tensor_clone(&in->tensors[k], &v->constant));
        v->is_constant = true;
        v->is_graph_input = false;
        v->dtype = v->constant.dtype;
        v->shape = v->constant.shape;
        v->has_shape = true;
        frozen[k] = true;
    }
    int n = 0;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->values[g->inputs[i]].is_graph_input) g->inputs[n++] = g->inputs[i];
    g->n_inputs = n;
    return KORCH_OK;
}

/* Loads `model` with input shapes from the input files and the inputs of `f`
 * made constant: the korch_frontend_load pipeline, step by step. */
static korch_status load_model(const char *model, const tensor_files *in, const freeze_list *f, bool *frozen,
                               int *value_of, korch_graph **out) {
    korch_graph *g = NULL;
    *out = NULL;
    KORCH_TRY(korch_onnx_load_file(model, &g));
    korch_input_shape shapes[MAX_TENSORS];
    int n_shapes = 0;
    for (int k = 0; k < in->count; k++) value_of[k] = input_value(g, in, k);
    korch_status st = freeze_inputs(g, in, value_of, f, frozen);
    for (int k = 0; k < in->count; k++) {
        if (value_of[k] < 0 || in->status[k] != KORCH_OK || frozen[k]) continue;
        shapes[n_shapes].name = g->values[value_of[k]].name;
        shapes[n_shapes].shape = in->tensors[k].shape;
        n_shapes++;
    }
    if (st == KORCH_OK) st = korch_graph_validate(g);
    if (st == KORCH_OK) st = korch_graph_infer(g, shapes, n_shapes);
    if (st != KORCH_OK) {
        korch_graph_free(g);
        return st;
    }
    *out = g;
    return KORCH_OK;
}

static void run_data_set(const char *model, const char *set_dir, const freeze_list *f, conformance_result *r) {
    tensor_files *in = calloc(1, sizeof *in), *out = calloc(1, sizeof *out);
    korch_graph *g = NULL;
    korch_tensor bound[MAX_TENSORS], results[MAX_TENSORS];
    bool frozen[MAX_TENSORS] = {false}, filled[MAX_TENSORS] = {false};
    int value_of[MAX_TENSORS];
    memset(bound, 0, sizeof bound);
    memset(results, 0, sizeof results);
    if (!in || !out) {
        set_result(r, CONFORMANCE_FAIL, "out of memory");
        goto done;
    }
    read_tensor_files(set_dir, "input", in);
    read_tensor_files(set_dir, "output", out);
    korch_status st = load_model(model, in, f, frozen, value_of, &g);
    if (st != KORCH_OK) {
        set_korch_error(r, st, "load", model);
        goto done;
    }
    int n_frozen = 0;
    for (int k = 0; k < in->count; k++) n_frozen += frozen[k];
    if (in->count - n_frozen != g->n_inputs) {
        set_result(r, CONFORMANCE_FAIL, "the model has %d inputs, the test data %d", g->n_inputs, in->count - n_frozen);
        goto done;
    }
    for (int k = 0; k < in->count; k++) {
        if (in->status[k] != KORCH_OK) {
            set_result(r, CONFORMANCE_FAIL, "cannot read input_%d.pb: %s", k, in->errors[k]);
            goto done;
        }
        if (frozen[k]) continue;
        int slot = value_of[k] < 0 ? -1 : input_slot(g, value_of[k]);
        if (slot < 0 || filled[slot]) {
            set_result(r, CONFORMANCE_FAIL, "input_%d.pb does not map to a free graph input", k);
            goto done;
        }
        filled[slot] = true;
        bound[slot] = (korch_tensor){.dtype = in->tensors[k].dtype, .shape = in->tensors[k].shape,
                                     .data = in->tensors[k].data};
        /* NumPy has no bfloat16: ONNX stores bfloat16 test tensors as their
         * bits in uint16 (docs/conformance.md) */
        if (bound[slot].dtype == KORCH_DTYPE_UINT16 && g->values[g->inputs[slot]].dtype == KORCH_DTYPE_BFLOAT16)
            bound[slot].dtype = KORCH_DTYPE_BFLOAT16;
    }
    if (g->n_outputs > MAX_TENSORS) {
        set_result(r, CONFORMANCE_FAIL, "too many outputs (%d)", g->n_outputs);
        goto done;
    }
    st = korch_reference_run(g, bound, results);
    if (st != KORCH_OK) {
        /* refusing at run time is too late to count as a skip */
        set_result(r, CONFORMANCE_FAIL, "run failed (%s): %s", korch_status_name(st), korch_last_error());
        goto done;
    }
    compare_outputs(g, results, out, r);
    if (r->outcome == CONFORMANCE_PASS && conformance_fission_mode) check_fission(g, bound, out, r);
    if (r->outcome == CONFORMANCE_PASS && n_frozen)
        snprintf(r->detail, sizeof r->detail, "%d outputs match, with %d inputs frozen as constants", out->count,
                 n_frozen);
done:
    if (g)
        for (int k = 0; k < g->n_outputs && k < MAX_TENSORS; k++) korch_tensor_free(&results[k]);
    korch_graph_free(g);
    if (in) free_tensor_files(in);
    if (out) free_tensor_files(out);
    free(in);
    free(out);
}

/* Runs a data set; while korch refuses it only because a graph input must be
 * constant, freezes that input and runs it again. */
static void run_data_set_or_freeze(const char *model, const char *set_dir, conformance_result *r) {
    static const char marker[] = "\" is not a constant; korch needs static shapes";
    freeze_list *f = calloc(1, sizeof *f);
    if (!f) {
        set_result(r, CONFORMANCE_FAIL, "out of memory");
        return;
    }
    run_data_set(model, set_dir, f, r);
    while (r->outcome == CONFORMANCE_SKIP && f->count < MAX_TENSORS) {
        const char *end = strstr(r->detail, marker), *begin = end;
        if (!end) break;
        while (begin > r->detail && begin[-1] != '"') begin--;
        if (begin == r->detail) break;
        snprintf(f->names[f->count], sizeof f->names[0], "%.*s", (int)(end - begin), begin);
        if (!in_freeze_list(f, f->names[f->count])) {
            f->count++;
        } else if (!f->all_integers) {
            f->all_integers = true; /* freezing it did not help: it is computed, not an input */
        } else if (!f->all_inputs && (strstr(r->detail, "(Loop, ") || strstr(r->detail, "(Scan, ") ||
                                      strstr(r->detail, "(If, "))) {
            f->all_inputs = true; /* control flow: see freeze_list */
        } else {
            break; /* korch's refusal stands */
        }
        run_data_set(model, set_dir, f, r);
    }
    free(f);
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void conformance_run_test(const char *dir, conformance_result *r) {
    char model[4096], set_dir[4096];
    char *sets[MAX_DATA_SETS];
    int n_sets = 0;
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    DIR *d = opendir(dir);
    if (!d) {
        set_result(r, CONFORMANCE_FAIL, "cannot open the test folder");
        return;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL && n_sets < MAX_DATA_SETS;)
        if (strncmp(e->d_name, "test_data_set_", 14) == 0 && (sets[n_sets] = strdup(e->d_name)) != NULL) n_sets++;
    closedir(d);
    qsort(sets, (size_t)n_sets, sizeof sets[0], compare_names);
    set_result(r, CONFORMANCE_FAIL, "no test_data_set_* folder");
    for (int i = 0; i < n_sets; i++) {
        snprintf(set_dir, sizeof set_dir, "%s/%s", dir, sets[i]);
        run_data_set_or_freeze(model, set_dir, r);
        if (r->outcome != CONFORMANCE_PASS) {
            char detail[sizeof r->detail];
            snprintf(detail, sizeof detail, "%s", r->detail);
            if (n_sets > 1) snprintf(r->detail, sizeof r->detail, "%.40s: %.1300s", sets[i], detail);
            break;
        }
    }
    if (r->outcome == CONFORMANCE_PASS && n_sets > 1)
        snprintf(r->detail, sizeof r->detail, "%d data sets match", n_sets);
    for (int i = 0; i < n_sets; i++) free(sets[i]);
}

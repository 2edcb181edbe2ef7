/* The model side of a plan: load the ONNX model, infer shapes, lower it to
 * the primitive graph, and make sure it is the graph the plan was made for. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "fission/fission.h"
#include "frontend/onnx_load.h"
#include "relayout/relayout.h"
#include "runtime/plan.h"

/* Informative: which korch lowered the model. Whether a plan still fits is
 * decided by the structural hash of the rebuilt pgraph. */
const char korch_plan_fission_version[] = "korch-" KORCH_VERSION;

/* Fission, then the layout pass (docs/layout.md), then a dequantization of
 * its own for every convolution (fission/cleanup_dequant.c). */
korch_status korch_plan_lower(const korch_graph *g, korch_layout_strategy layout, korch_pgraph **out) {
    KORCH_TRY(korch_fission(g, out, NULL));
    korch_status st = korch_layout_pass(*out, layout, NULL);
    int split = 0;
    if (st == KORCH_OK) st = korch_pgraph_split_dequant(*out, &split);
    if (st != KORCH_OK) {
        korch_pgraph_free(*out);
        *out = NULL;
    }
    return st;
}

korch_status korch_plan_lower_checked(const korch_plan *plan, const korch_graph *g, const char *what,
                                      korch_pgraph **out) {
    /* a plan that does not say its layout was made with the default or,
     * under the old KORCH_LAYOUT=nchw, without the pass: the hash decides */
    korch_layout_strategy tries[2] = {plan->layout, KORCH_LAYOUT_DEFAULT};
    int n_tries = 1;
    if (!plan->layout_recorded) {
        tries[0] = KORCH_LAYOUT_DEFAULT;
        tries[1] = KORCH_LAYOUT_KEEP;
        n_tries = 2;
    }
    *out = NULL;
    for (int t = 0; t < n_tries; t++) {
        korch_pgraph *pg = NULL;
        KORCH_TRY(korch_plan_lower(g, tries[t], &pg));
        korch_status st = korch_pgraph_set_precision_except(pg, plan->precision, plan->fp32_linear,
                                                            plan->n_fp32_linear);
        if (st != KORCH_OK) {
            korch_pgraph_free(pg);
            return korch_error_prefix(st, "%s", what);
        }
        if (korch_pgraph_hash(pg) == plan->pgraph_hash) {
            *out = pg;
            return KORCH_OK;
        }
        korch_pgraph_free(pg);
    }
    return korch_error(KORCH_ERR_INVALID_MODEL,
                       "%s: the primitive graph of its model differs from the one the plan was made for (plan made "
                       "by %s, this is %s); re-run korch optimize",
                       what, plan->fission_version, korch_plan_fission_version);
}

korch_status korch_plan_model_set_precision(korch_plan_model *m, korch_precision p) {
    KORCH_TRY(korch_precision_check_cpu(p));
    KORCH_TRY(korch_pgraph_set_precision(m->pg, p));
    m->precision = p;
    return KORCH_OK;
}

/* The folder of a model file (malloc'd; NULL when out of memory, error
 * set): where its external data files are. */
static char *folder_of(const char *path) {
    char *dir = strdup(path);
    if (!dir) {
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) slash[1] = '\0';
    else *slash = '\0';
    return dir;
}

/* Parses model bytes read from `path` (external data next to it) and
 * validates the graph; errors carry the file's name, as
 * korch_onnx_load_file gives it (info, check, run). */
static korch_status parse_validate(const char *path, const void *bytes, size_t size, korch_graph **out) {
    char *dir = folder_of(path);
    korch_status st = dir ? korch_onnx_load_buffer(bytes, size, dir, out) : KORCH_ERR_OUT_OF_MEMORY;
    char printable[256];
    if (dir && st != KORCH_OK) st = korch_error_prefix(st, "%s", korch_printable(path, printable, sizeof printable));
    free(dir);
    if (st == KORCH_OK) st = korch_graph_validate(*out);
    return st;
}

/* Parses and infers out->bytes (already read from `path`). */
static korch_status parse_infer(const char *path, const korch_input_shape *shapes, int n_shapes,
                                const korch_input_value *values, int n_values, korch_plan_model *out) {
    korch_sha256_hex(out->bytes, out->size, out->sha256);
    korch_status st = parse_validate(path, out->bytes, out->size, &out->graph);
    if (st == KORCH_OK) st = korch_graph_infer_specialized(out->graph, shapes, n_shapes, values, n_values);
    return st;
}

static korch_status load_sections(const korch_plan *plan, const char *plan_path, korch_graph **out);
static char *read_named_model(const korch_plan *plan, const char *plan_path, korch_plan_model *out);
static bool plan_inputs(const korch_plan *plan, korch_input_shape **shapes, korch_input_value **values, int *n_values);

/* The model of a plan, to optimise or benchmark again (on another machine,
 * say): the plan's own when embedded (out->source keeps the plan, whose
 * weights the graph borrows), else the file it names. The plan's input
 * shapes and guards (--specialize) unless others are given. */
static korch_status load_from_plan(const char *path, const korch_input_shape *shapes, int n_shapes,
                                   const korch_input_value *values, int n_values, korch_layout_strategy layout,
                                   korch_plan_model *out) {
    korch_plan *plan = NULL;
    KORCH_TRY(korch_plan_load(path, &plan));
    /* a bucketed plan: the bucket of the shapes given (bench, optimize again) */
    KORCH_TRY(korch_plan_bucket_choose(&plan, path, shapes, n_shapes));
    korch_input_shape *own = NULL;
    korch_input_value *own_values = NULL;
    int n_own_values = 0;
    korch_status st = plan_inputs(plan, &own, &own_values, &n_own_values) ? KORCH_OK : KORCH_ERR_OUT_OF_MEMORY;
    if (st == KORCH_OK && !n_shapes) {
        shapes = own;
        n_shapes = plan->n_input_shapes;
    }
    if (st == KORCH_OK && !n_values) {
        values = own_values;
        n_values = n_own_values;
    }
    char *model_path = NULL;
    if (st == KORCH_OK && plan->embedded) {
        out->source = plan;
        memcpy(out->sha256, plan->model_sha256, sizeof out->sha256);
        st = load_sections(plan, path, &out->graph);
        if (st == KORCH_OK) st = korch_graph_infer_specialized(out->graph, shapes, n_shapes, values, n_values);
    } else if (st == KORCH_OK) {
        model_path = read_named_model(plan, path, out);
        st = model_path ? parse_infer(model_path, shapes, n_shapes, values, n_values, out) : KORCH_ERR_INVALID_MODEL;
    }
    out->layout = layout;
    if (st == KORCH_OK) st = korch_plan_lower(out->graph, layout, &out->pg);
    free(model_path);
    free(own);
    free(own_values);
    if (!out->source) korch_plan_free(plan);
    if (st != KORCH_OK) korch_plan_model_close(out);
    return st;
}

korch_status korch_plan_model_load_specialized(const char *path, const korch_input_shape *shapes, int n_shapes,
                                               const korch_input_value *values, int n_values,
                                               korch_layout_strategy layout, korch_plan_model *out) {
    memset(out, 0, sizeof *out);
    if (korch_plan_file_is_plan(path)) return load_from_plan(path, shapes, n_shapes, values, n_values, layout, out);
    KORCH_TRY(korch_read_file(path, KORCH_MAX_MODEL_BYTES, &out->bytes, &out->size));
    out->layout = layout;
    korch_status st = parse_infer(path, shapes, n_shapes, values, n_values, out);
    if (st == KORCH_OK) st = korch_plan_lower(out->graph, layout, &out->pg);
    if (st != KORCH_OK) korch_plan_model_close(out);
    return st;
}

korch_status korch_plan_model_load_layout(const char *path, const korch_input_shape *shapes, int n_shapes,
                                          korch_layout_strategy layout, korch_plan_model *out) {
    return korch_plan_model_load_specialized(path, shapes, n_shapes, NULL, 0, layout, out);
}

korch_status korch_plan_model_load(const char *path, const korch_input_shape *shapes, int n_shapes,
                                   korch_plan_model *out) {
    return korch_plan_model_load_layout(path, shapes, n_shapes, KORCH_LAYOUT_DEFAULT, out);
}

void korch_plan_model_close(korch_plan_model *m) {
    korch_pgraph_free(m->pg);
    korch_graph_free(m->graph);
    korch_plan_free(m->source); /* after the graph, which may borrow its weights */
    free(m->bytes);
    memset(m, 0, sizeof *m);
}

/* The plan's input shapes and guards as inference overrides (names and
 * values borrowed from the plan); false when out of memory (error set). */
static bool plan_inputs(const korch_plan *plan, korch_input_shape **shapes, korch_input_value **values, int *n_values) {
    *shapes = calloc((size_t)plan->n_input_shapes + 1, sizeof **shapes);
    *values = calloc((size_t)plan->n_input_shapes + 1, sizeof **values);
    if (!*shapes || !*values) {
        free(*shapes);
        free(*values);
        *shapes = NULL;
        *values = NULL;
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        return false;
    }
    *n_values = korch_plan_guard_values(plan, *shapes, *values);
    return true;
}

/* The embedded model: parsed from the mapped sections, weights borrowed. */
static korch_status load_sections(const korch_plan *plan, const char *plan_path, korch_graph **out) {
    const korch_plan_sections *s = &plan->sections;
    korch_status st = s->graph ? korch_onnx_load_plan_sections(s->graph, s->graph_size, s->weights, s->weights_size, out)
                               : korch_error(KORCH_ERR_INTERNAL, "the plan's sections are not loaded");
    if (st == KORCH_OK) st = korch_graph_validate(*out);
    if (st != KORCH_OK) {
        korch_graph_free(*out);
        *out = NULL;
        char printable[256];
        return korch_error_prefix(st, "plan \"%s\": its embedded model",
                                  korch_printable(plan_path, printable, sizeof printable));
    }
    return KORCH_OK;
}

/* The model file an external-reference plan names, read into out->bytes and
 * checked against the plan's hash; out->sha256 set. Returns the path
 * (malloc'd) or NULL (error set). */
static char *read_named_model(const korch_plan *plan, const char *plan_path, korch_plan_model *out) {
    char *path = korch_plan_model_path(plan, plan_path);
    if (!path) return NULL;
    korch_status st = korch_read_file(path, KORCH_MAX_MODEL_BYTES, &out->bytes, &out->size);
    if (st == KORCH_OK) {
        /* hash before parsing: a different model must not even be interpreted */
        korch_sha256_hex(out->bytes, out->size, out->sha256);
        if (strcmp(out->sha256, plan->model_sha256) != 0)
            st = korch_error(KORCH_ERR_INVALID_MODEL,
                             "plan \"%s\": model \"%s\" has changed since the plan was made (sha256 %.12s..., plan "
                             "expects %.12s...); re-run korch optimize",
                             plan_path, path, out->sha256, plan->model_sha256);
    } else {
        korch_error_prefix(st, "plan \"%s\" names model \"%s\"", plan_path, plan->model_path);
    }
    if (st != KORCH_OK) {
        free(out->bytes);
        out->bytes = NULL;
        free(path);
        return NULL;
    }
    return path;
}

korch_status korch_plan_load_graph(const korch_plan *plan, const char *plan_path, korch_graph **out) {
    *out = NULL;
    if (plan->embedded) return load_sections(plan, plan_path, out);
    korch_plan_model m;
    memset(&m, 0, sizeof m);
    char *path = read_named_model(plan, plan_path, &m);
    if (!path) return KORCH_ERR_INVALID_MODEL;
    korch_status st = parse_validate(path, m.bytes, m.size, out);
    if (st != KORCH_OK) {
        korch_graph_free(*out);
        *out = NULL;
    }
    free(path);
    free(m.bytes);
    return st;
}

korch_status korch_plan_load_inferred(const korch_plan *plan, const char *plan_path, korch_graph **out) {
    KORCH_TRY(korch_plan_load_graph(plan, plan_path, out));
    korch_status st = korch_plan_infer_graph(plan, *out); /* its shapes, its guards */
    if (st != KORCH_OK) {
        korch_graph_free(*out);
        *out = NULL;
    }
    return st;
}

korch_status korch_plan_model_open(const korch_plan *plan, const char *plan_path, korch_plan_model *out) {
    memset(out, 0, sizeof *out);
    korch_input_shape *shapes = NULL;
    korch_input_value *values = NULL;
    int n_values = 0;
    if (!plan_inputs(plan, &shapes, &values, &n_values)) return KORCH_ERR_OUT_OF_MEMORY;
    korch_status st = KORCH_OK;
    char *path = NULL;
    if (plan->embedded) {
        /* the original file's identity; the sections' checksums were checked at load */
        memcpy(out->sha256, plan->model_sha256, sizeof out->sha256);
        st = load_sections(plan, plan_path, &out->graph);
        if (st == KORCH_OK)
            st = korch_graph_infer_specialized(out->graph, shapes, plan->n_input_shapes, values, n_values);
    } else {
        path = read_named_model(plan, plan_path, out);
        st = path ? parse_infer(path, shapes, plan->n_input_shapes, values, n_values, out) : KORCH_ERR_INVALID_MODEL;
    }
    if (st == KORCH_OK) {
        char what[4200];
        if (path) snprintf(what, sizeof what, "plan \"%.2048s\" (model \"%.2048s\")", plan_path, path);
        else snprintf(what, sizeof what, "plan \"%.4096s\"", plan_path);
        st = korch_plan_lower_checked(plan, out->graph, what, &out->pg);
        if (out->pg) out->layout = plan->layout_recorded ? plan->layout : KORCH_LAYOUT_DEFAULT;
        if (out->pg) out->precision = plan->precision;
    }
    if (st != KORCH_OK) korch_plan_model_close(out);
    free(shapes);
    free(values);
    free(path);
    return st;
}

korch_status korch_plan_set_model(korch_plan *plan, const char *model_path, const korch_plan_model *m) {
    char resolved[PATH_MAX];
    const char *path = realpath(model_path, resolved) ? resolved : model_path;
    if (m->source) path = m->source->model_path; /* the model the source plan was made from */
    free(plan->model_path);
    plan->model_path = strdup(path);
    if (!plan->model_path) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(plan->model_sha256, m->sha256, sizeof plan->model_sha256);
    snprintf(plan->fission_version, sizeof plan->fission_version, "%s", korch_plan_fission_version);
    plan->pgraph_hash = korch_pgraph_hash(m->pg);
    plan->pgraph_nodes = m->pg->n_nodes;
    plan->layout = m->layout;
    plan->layout_recorded = true;
    plan->precision = m->precision;
    free(plan->fp32_linear);
    plan->fp32_linear = NULL;
    plan->n_fp32_linear = 0;
    KORCH_TRY(korch_pgraph_fp32_linear(m->pg, m->precision, &plan->fp32_linear, &plan->n_fp32_linear));
    korch_plan_set_machine(plan);
    korch_plan_shapes_free(plan);
    plan->input_shapes = calloc((size_t)m->graph->n_inputs + 1, sizeof *plan->input_shapes);
    if (!plan->input_shapes) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < m->graph->n_inputs; i++) {
        const korch_value *v = &m->graph->values[m->graph->inputs[i]];
        plan->input_shapes[i].name = strdup(v->name);
        if (!plan->input_shapes[i].name) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        plan->input_shapes[i].shape = v->shape;
        plan->n_input_shapes++;
        /* the guard: the value the graph was specialized to */
        if (m->graph->specialized && m->graph->specialized[i].data) {
            korch_tensor *t = calloc(1, sizeof *t);
            if (!t || korch_tensor_clone(&m->graph->specialized[i], t) != KORCH_OK) {
                free(t);
                return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
            }
            plan->input_shapes[i].specialized = t;
        }
    }
    return KORCH_OK;
}

korch_status korch_plan_write(const korch_plan *plan, const char *plan_path, const korch_plan_model *m,
                              const char *model_path, bool embed) {
    if (!embed) return korch_plan_save(plan, plan_path);
    if (m->source) /* a plan's model again: its sections are already the embedded form */
        return korch_plan_save_sections(plan, plan_path, m->source->sections.graph, m->source->sections.graph_size,
                                        m->source->sections.weights, m->source->sections.weights_size);
    /* the model's folder, for its own external data files */
    char *dir = folder_of(model_path);
    if (!dir) return KORCH_ERR_OUT_OF_MEMORY;
    korch_status st = korch_plan_save_embedded(plan, plan_path, m->bytes, m->size, dir);
    free(dir);
    return st;
}

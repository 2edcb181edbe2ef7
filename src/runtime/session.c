/* The public C API (include/korch.h): models and sessions. A model keeps the
 * file's bytes (a self-contained plan: its mapping); each session parses and
 * prepares its own graph, so sessions share nothing mutable and can run on
 * different threads (the mapped weights of a plan are shared, read only). */
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "frontend/onnx_load.h"
#include "ops/reference.h"
#include "runtime/executor.h"
#include "runtime/plan.h"

#ifdef _OPENMP
#include <omp.h>
#endif

struct korch_model {
    int refs; /* the caller's reference + one per session (atomic) */
    uint8_t *bytes; /* the ONNX model (for a plan: the model it names; NULL when the plan carries it) */
    size_t size;
    char *dir;
    korch_plan *plan; /* NULL: run with the reference executor */
    char *path;       /* for messages */
    /* the shapes of each bucket ("x=1x32;m=1x32"): a plan with shape
     * buckets, one each; a plan of one shape, its shapes; a model, none */
    int n_buckets;
    char **bucket_shapes;
};

struct korch_session {
    korch_model *model; /* referenced: the executor reads the model's plan */
    korch_graph *graph;
    korch_pgraph *pg;     /* plans only */
    korch_executor *exec; /* plans only */
    int threads;
    korch_tensor *inputs;  /* views of caller memory */
    korch_tensor *outputs; /* views of caller memory */
};

/* The shapes of every bucket, for korch_model_bucket_shapes. */
static korch_status list_buckets(korch_model *m) {
    const korch_plan *p = m->plan;
    int n = p->n_buckets ? p->n_buckets : 1;
    m->bucket_shapes = calloc((size_t)n, sizeof *m->bucket_shapes);
    if (!m->bucket_shapes) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; b < n; b++) {
        char text[4096];
        korch_plan_shapes_format(p->n_buckets ? p->buckets[b] : p, text, sizeof text);
        if (!(m->bucket_shapes[b] = strdup(text))) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        m->n_buckets = b + 1;
    }
    return KORCH_OK;
}

int korch_model_bucket_count(const korch_model *model) { return model ? model->n_buckets : 0; }

korch_status korch_model_bucket_shapes(const korch_model *model, int index, const char **shapes) {
    if (!model || !shapes || index < 0 || index >= model->n_buckets)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "bucket index %d out of range (the model has %d)", index,
                           model ? model->n_buckets : 0);
    *shapes = model->bucket_shapes[index];
    return KORCH_OK;
}

korch_status korch_model_load(const char *path, korch_model **out) {
    if (!path || !out) return korch_error(KORCH_ERR_INVALID_ARGUMENT, "korch_model_load: NULL argument");
    *out = NULL;
    korch_model *m = calloc(1, sizeof *m);
    if (!m) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    m->refs = 1;
    korch_status st = KORCH_OK;
    char *model_path = NULL;
    if (!(m->path = strdup(path))) {
        free(m);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (korch_plan_file_is_plan(path)) {
        /* a plan: keep it, and load the model it names (which must be unchanged) */
        st = korch_plan_load(path, &m->plan);
        if (st == KORCH_OK) st = list_buckets(m);
        if (st == KORCH_OK && m->plan->embedded) {
            /* the model is in the plan, mapped: sessions parse it from there */
            korch_plan_note_foreign(m->plan, path);
            korch_graph *g = NULL;
            st = korch_plan_load_graph(m->plan, path, &g); /* validated now: a bad model fails at load */
            korch_graph_free(g);
            if (st != KORCH_OK) {
                korch_model_free(m);
                return st;
            }
            *out = m;
            return KORCH_OK;
        }
        if (st == KORCH_OK) korch_plan_note_foreign(m->plan, path);
        if (st == KORCH_OK && !(model_path = korch_plan_model_path(m->plan, path))) st = KORCH_ERR_OUT_OF_MEMORY;
        if (st == KORCH_OK) path = model_path;
    }
    if (st == KORCH_OK) st = korch_read_file(path, KORCH_MAX_MODEL_BYTES, &m->bytes, &m->size);
    if (st == KORCH_OK && m->plan) {
        char sha[65];
        korch_sha256_hex(m->bytes, m->size, sha);
        if (strcmp(sha, m->plan->model_sha256) != 0)
            st = korch_error(KORCH_ERR_INVALID_MODEL, "model \"%s\" has changed since the plan was made; re-run korch optimize",
                             path);
    }
    if (st == KORCH_OK) {
        m->dir = strdup(path);
        if (!m->dir) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (st == KORCH_OK) {
        char *slash = strrchr(m->dir, '/');
        if (!slash) strcpy(m->dir, ".");
        else if (slash == m->dir) slash[1] = '\0';
        else *slash = '\0';
        /* validate now so that a bad model fails at load, not at session creation */
        korch_graph *g = NULL;
        st = korch_onnx_load_buffer(m->bytes, m->size, m->dir, &g);
        if (st == KORCH_OK) st = korch_graph_validate(g);
        korch_graph_free(g);
    }
    free(model_path);
    if (st != KORCH_OK) {
        korch_model_free(m);
        return st;
    }
    *out = m;
    return KORCH_OK;
}

void korch_model_free(korch_model *model) {
    if (!model || __atomic_sub_fetch(&model->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    korch_plan_free(model->plan);
    for (int b = 0; b < model->n_buckets; b++) free(model->bucket_shapes[b]);
    free(model->bucket_shapes);
    free(model->path);
    free(model->bytes);
    free(model->dir);
    free(model);
}

korch_session_options korch_session_options_default(void) {
    korch_session_options o = {0};
    return o;
}

korch_status korch_session_create(const korch_model *model, const korch_session_options *options,
                                  korch_session **out) {
    if (!model || !out) return korch_error(KORCH_ERR_INVALID_ARGUMENT, "korch_session_create: NULL argument");
    *out = NULL;
    korch_session_options defaults = korch_session_options_default();
    if (!options) options = &defaults;
    korch_input_shape shapes[64];
    int n_shapes = 0;
    char *spec = NULL;
    const korch_plan *plan = model->plan; /* the plan this session runs: a bucket of a plan with buckets */
    if (plan && plan->n_buckets) {
        /* input_shapes chooses the bucket (exact match; none given: an
         * error listing them) */
        int index = 0;
        korch_status st = KORCH_OK;
        if (options->input_shapes && !(spec = strdup(options->input_shapes)))
            return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        if (spec) st = korch_input_shapes_parse(spec, shapes, 64, &n_shapes);
        if (st == KORCH_OK) st = korch_plan_bucket_find(plan, model->path, shapes, n_shapes, &index);
        free(spec);
        spec = NULL;
        if (st != KORCH_OK) return st;
        plan = plan->buckets[index];
    } else if (plan) {
        /* a plan fixes every input shape */
        if (plan->n_input_shapes > 64) return korch_error(KORCH_ERR_UNSUPPORTED, "plan with more than 64 inputs");
    } else if (options->input_shapes) {
        spec = strdup(options->input_shapes);
        if (!spec) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        korch_status st = korch_input_shapes_parse(spec, shapes, 64, &n_shapes);
        if (st != KORCH_OK) {
            free(spec);
            return st;
        }
    }
    korch_session *s = calloc(1, sizeof *s);
    korch_status st = s ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    if (s) {
        s->model = (korch_model *)model; /* only its reference count changes */
        __atomic_add_fetch(&s->model->refs, 1, __ATOMIC_ACQ_REL);
    }
    if (st == KORCH_OK && plan && plan->embedded) {
        const korch_plan_sections *sec = &plan->sections;
        /* the graph borrows the mapped weights; the session holds the model, which holds the mapping */
        st = korch_onnx_load_plan_sections(sec->graph, sec->graph_size, sec->weights, sec->weights_size, &s->graph);
    } else if (st == KORCH_OK) {
        st = korch_onnx_load_buffer(model->bytes, model->size, model->dir, &s->graph);
    }
    if (st == KORCH_OK) st = korch_graph_validate(s->graph);
    /* a plan: its shapes, and its guarded inputs specialized as when it was made */
    if (st == KORCH_OK) st = plan ? korch_plan_infer_graph(plan, s->graph)
                                  : korch_graph_infer(s->graph, shapes, n_shapes);
    free(spec);
    if (st == KORCH_OK && plan) {
        st = korch_plan_lower_checked(plan, s->graph, "the plan", &s->pg);
        korch_profile_options popts = {.threads = options->threads > 0 ? options->threads : plan->threads};
        /* the session's graph and primitive graph are its own; the plan (a
         * bucket) lives as long as the model the session holds */
        if (st == KORCH_OK) st = korch_executor_create_owned(plan, s->pg, s->graph, &popts, &s->exec);
    }
    if (st == KORCH_OK) {
        s->threads = options->threads;
        s->inputs = calloc((size_t)s->graph->n_inputs + 1, sizeof *s->inputs);
        s->outputs = calloc((size_t)s->graph->n_outputs + 1, sizeof *s->outputs);
        if (!s->inputs || !s->outputs) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (st != KORCH_OK) {
        korch_session_destroy(s);
        return st;
    }
    *out = s;
    return KORCH_OK;
}

void korch_session_destroy(korch_session *s) {
    if (!s) return;
    korch_executor_destroy(s->exec);
    korch_pgraph_free(s->pg);
    korch_graph_free(s->graph);
    free(s->inputs);
    free(s->outputs);
    korch_model_free(s->model);
    free(s);
}

int korch_session_input_count(const korch_session *s) { return s ? s->graph->n_inputs : 0; }
int korch_session_output_count(const korch_session *s) { return s ? s->graph->n_outputs : 0; }

static korch_status fill_info(const korch_value *v, korch_tensor_info *info) {
    info->name = v->name;
    info->dtype = v->dtype;
    info->rank = v->shape.rank;
    for (int i = 0; i < KORCH_MAX_RANK; i++) info->dims[i] = i < v->shape.rank ? v->shape.dims[i] : 0;
    return KORCH_OK;
}

korch_status korch_session_input_info(const korch_session *s, int index, korch_tensor_info *info) {
    if (!s || !info || index < 0 || index >= s->graph->n_inputs)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "input index %d out of range", index);
    return fill_info(&s->graph->values[s->graph->inputs[index]], info);
}

korch_status korch_session_output_info(const korch_session *s, int index, korch_tensor_info *info) {
    if (!s || !info || index < 0 || index >= s->graph->n_outputs)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "output index %d out of range", index);
    return fill_info(&s->graph->values[s->graph->outputs[index]], info);
}

static korch_status bind(const korch_value *v, korch_tensor *slot, const void *data, size_t bytes, const char *what) {
    korch_tensor t = {.dtype = v->dtype, .shape = v->shape};
    size_t need = korch_tensor_bytes(&t);
    char vbuf[160];
    if (bytes != need)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "%s \"%s\" needs %zu bytes, got %zu", what,
                           korch_printable(v->name, vbuf, sizeof vbuf), need, bytes);
    t.data = (void *)data;
    *slot = t;
    return KORCH_OK;
}

korch_status korch_session_set_input(korch_session *s, int index, const void *data, size_t bytes) {
    if (!s || index < 0 || index >= s->graph->n_inputs)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "input index %d out of range", index);
    return bind(&s->graph->values[s->graph->inputs[index]], &s->inputs[index], data, bytes, "input");
}

korch_status korch_session_set_output(korch_session *s, int index, void *data, size_t bytes) {
    if (!s || index < 0 || index >= s->graph->n_outputs)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "output index %d out of range", index);
    return bind(&s->graph->values[s->graph->outputs[index]], &s->outputs[index], data, bytes, "output");
}

korch_status korch_session_run(korch_session *s) {
    if (!s) return korch_error(KORCH_ERR_INVALID_ARGUMENT, "korch_session_run: NULL session");
    char vbuf[160], vbuf2[160];
    for (int i = 0; i < s->graph->n_inputs; i++)
        if (!s->inputs[i].data && korch_tensor_numel(&s->inputs[i]) != 0)
            return korch_error(KORCH_ERR_INVALID_ARGUMENT, "input \"%s\" is not bound",
                               korch_printable(s->graph->values[s->graph->inputs[i]].name, vbuf, sizeof vbuf));
    for (int i = 0; i < s->graph->n_outputs; i++)
        if (!s->outputs[i].data)
            return korch_error(KORCH_ERR_INVALID_ARGUMENT, "output \"%s\" is not bound",
                               korch_printable(s->graph->values[s->graph->outputs[i]].name, vbuf, sizeof vbuf));
    /* kernels write outputs while inputs are still being read */
    for (int i = 0; i < s->graph->n_outputs; i++) {
        const korch_tensor *o = &s->outputs[i];
        for (int j = 0; j < s->graph->n_inputs + s->graph->n_outputs; j++) {
            const korch_tensor *t = j < s->graph->n_inputs ? &s->inputs[j] : &s->outputs[j - s->graph->n_inputs];
            if (t == o || !t->data) continue;
            const char *a = o->data, *b = t->data;
            size_t na = korch_tensor_bytes(o), nb = korch_tensor_bytes(t);
            if (na && nb && a < b + nb && b < a + na)
                return korch_error(KORCH_ERR_INVALID_ARGUMENT, "output \"%s\" overlaps %s \"%s\": buffers must be disjoint",
                                   korch_printable(s->graph->values[s->graph->outputs[i]].name, vbuf, sizeof vbuf),
                                   j < s->graph->n_inputs ? "input" : "output",
                                   korch_printable(j < s->graph->n_inputs
                                                       ? s->graph->values[s->graph->inputs[j]].name
                                                       : s->graph->values[s->graph->outputs[j - s->graph->n_inputs]].name,
                                                   vbuf2, sizeof vbuf2));
        }
    }
    korch_status st;
#ifdef _OPENMP
    /* the thread count is this thread's OpenMP setting: restore the caller's */
    int caller_threads = omp_get_max_threads();
    if (s->threads > 0) omp_set_num_threads(s->threads);
#endif
    /* Zero-copy both ways: kernels read the caller's inputs and write graph
     * outputs straight into the caller's buffers. The one copy left is an
     * output that no kernel makes (it is a graph input or a constant). */
    if (s->exec) st = korch_executor_run(s->exec, s->inputs, s->outputs);
    else st = korch_reference_run_into(s->graph, s->inputs, s->outputs);
#ifdef _OPENMP
    omp_set_num_threads(caller_threads);
#endif
    return st;
}

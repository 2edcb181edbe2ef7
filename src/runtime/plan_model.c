/* The model side of a plan: load the ONNX model, infer shapes, lower it to
 * the primitive graph, and make sure it is the graph the plan was made for. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_load.h"
#include "runtime/plan.h"

/* Bump when lowering changes node numbering. "opaque-1": every operator is
 * one opaque primitive (operator fission not merged yet). */
const char korch_plan_fission_version[] = "opaque-1";

korch_status korch_plan_lower(const korch_graph *g, korch_pgraph **out) {
    *out = NULL;
    korch_pgraph *pg = NULL;
    KORCH_TRY(korch_pgraph_create(g, &pg));
    korch_status st = KORCH_OK;
    int *map = malloc(((size_t)g->n_values + 1) * sizeof *map);
    int *order = malloc(((size_t)g->n_nodes + 1) * sizeof *order);
    int count = 0;
    if (!map || !order) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "lowering: out of memory");
    if (st == KORCH_OK) st = korch_graph_toposort(g, order, &count);
    for (int v = 0; st == KORCH_OK && v < g->n_values; v++) map[v] = -1;
    pg->inputs = malloc(((size_t)g->n_inputs + 1) * sizeof *pg->inputs);
    pg->outputs = malloc(((size_t)g->n_outputs + 1) * sizeof *pg->outputs);
    if (st == KORCH_OK && (!pg->inputs || !pg->outputs)) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "lowering: out of memory");
    for (int i = 0; i < g->n_inputs && st == KORCH_OK; i++) {
        const korch_value *gv = &g->values[g->inputs[i]];
        int v = korch_pgraph_add_value(pg, gv->dtype, &gv->shape);
        if (v < 0) st = KORCH_ERR_OUT_OF_MEMORY;
        else {
            pg->values[v].graph_input = i;
            pg->values[v].source_value = g->inputs[i];
            pg->inputs[pg->n_inputs++] = v;
            map[g->inputs[i]] = v;
        }
    }
    for (int t = 0; t < count && st == KORCH_OK; t++) {
        const korch_node *n = &g->nodes[order[t]];
        int ins[KORCH_MAX_RANK], n_in = 0;
        for (int k = 0; k < n->n_inputs && st == KORCH_OK; k++) {
            int gv = n->inputs[k];
            if (gv < 0) continue;
            if (n_in == KORCH_MAX_RANK) {
                st = korch_error(KORCH_ERR_UNSUPPORTED, "node \"%s\" (%s): more than %d inputs", n->name, n->op_type,
                                 KORCH_MAX_RANK);
                break;
            }
            if (map[gv] < 0 && g->values[gv].is_constant) {
                /* a borrowed view of the op graph's constant */
                const korch_value *cv = &g->values[gv];
                int v = korch_pgraph_add_value(pg, cv->constant.dtype, &cv->constant.shape);
                if (v < 0) {
                    st = KORCH_ERR_OUT_OF_MEMORY;
                    break;
                }
                pg->values[v].is_constant = true;
                pg->values[v].constant = cv->constant;
                pg->values[v].constant.owns_data = false;
                pg->values[v].source_value = gv;
                map[gv] = v;
            }
            if (map[gv] < 0) {
                st = korch_error(KORCH_ERR_INTERNAL, "lowering: node \"%s\" reads a value with no producer", n->name);
                break;
            }
            ins[n_in++] = map[gv];
        }
        if (st != KORCH_OK) break;
        int ni = korch_pgraph_opaque(pg, order[t], n_in, ins);
        if (ni < 0) {
            st = korch_error_prefix(KORCH_ERR_UNSUPPORTED, "node \"%s\" (%s)", n->name, n->op_type);
            break;
        }
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) map[n->outputs[k]] = pg->nodes[ni].outputs[k];
    }
    for (int i = 0; i < g->n_outputs && st == KORCH_OK; i++) {
        int gv = g->outputs[i], v = map[gv];
        if (v < 0 && g->values[gv].is_constant) {
            const korch_value *cv = &g->values[gv];
            v = korch_pgraph_add_value(pg, cv->constant.dtype, &cv->constant.shape);
            if (v < 0) {
                st = KORCH_ERR_OUT_OF_MEMORY;
                break;
            }
            pg->values[v].is_constant = true;
            pg->values[v].constant = cv->constant;
            pg->values[v].constant.owns_data = false;
        }
        if (v < 0) {
            st = korch_error(KORCH_ERR_INTERNAL, "lowering: graph output %d has no producer", i);
            break;
        }
        pg->values[v].graph_output = i;
        pg->outputs[pg->n_outputs++] = v;
    }
    free(map);
    free(order);
    if (st != KORCH_OK) {
        korch_pgraph_free(pg);
        return st;
    }
    *out = pg;
    return KORCH_OK;
}

/* Parses, infers and lowers out->bytes (already read from `path`). */
static korch_status from_bytes(const char *path, const korch_input_shape *shapes, int n_shapes, korch_plan_model *out) {
    korch_sha256_hex(out->bytes, out->size, out->sha256);
    char *dir = strdup(path);
    korch_status st = dir ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == KORCH_OK) {
        char *slash = strrchr(dir, '/');
        if (!slash) strcpy(dir, ".");
        else if (slash == dir) slash[1] = '\0';
        else *slash = '\0';
        st = korch_onnx_load_buffer(out->bytes, out->size, dir, &out->graph);
    }
    free(dir);
    if (st == KORCH_OK) st = korch_graph_validate(out->graph);
    if (st == KORCH_OK) st = korch_graph_infer(out->graph, shapes, n_shapes);
    if (st == KORCH_OK) st = korch_plan_lower(out->graph, &out->pg);
    return st;
}

korch_status korch_plan_model_load(const char *path, const korch_input_shape *shapes, int n_shapes,
                                   korch_plan_model *out) {
    memset(out, 0, sizeof *out);
    KORCH_TRY(korch_read_file(path, KORCH_MAX_MODEL_BYTES, &out->bytes, &out->size));
    korch_status st = from_bytes(path, shapes, n_shapes, out);
    if (st != KORCH_OK) korch_plan_model_close(out);
    return st;
}

void korch_plan_model_close(korch_plan_model *m) {
    korch_pgraph_free(m->pg);
    korch_graph_free(m->graph);
    free(m->bytes);
    memset(m, 0, sizeof *m);
}

korch_status korch_plan_model_open(const korch_plan *plan, const char *plan_path, korch_plan_model *out) {
    memset(out, 0, sizeof *out);
    if (strcmp(plan->fission_version, korch_plan_fission_version) != 0)
        return korch_error(KORCH_ERR_UNSUPPORTED,
                           "plan \"%s\" was made with fission \"%s\", this korch lowers with \"%s\" (re-run korch optimize)",
                           plan_path, plan->fission_version, korch_plan_fission_version);
    char *path = korch_plan_model_path(plan, plan_path);
    if (!path) return KORCH_ERR_OUT_OF_MEMORY;
    korch_input_shape *shapes = calloc((size_t)plan->n_input_shapes + 1, sizeof *shapes);
    if (!shapes) {
        free(path);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < plan->n_input_shapes; i++)
        shapes[i] = (korch_input_shape){.name = plan->input_shapes[i].name, .shape = plan->input_shapes[i].shape};
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
    if (st == KORCH_OK) st = from_bytes(path, shapes, plan->n_input_shapes, out);
    if (st == KORCH_OK && korch_pgraph_hash(out->pg) != plan->pgraph_hash)
        st = korch_error(KORCH_ERR_INVALID_MODEL,
                         "plan \"%s\": the primitive graph of \"%s\" differs from the one the plan was made for "
                         "(different fission?); re-run korch optimize",
                         plan_path, path);
    if (st != KORCH_OK) korch_plan_model_close(out);
    free(shapes);
    free(path);
    return st;
}

korch_status korch_plan_set_model(korch_plan *plan, const char *model_path, const korch_plan_model *m) {
    char resolved[PATH_MAX];
    const char *path = realpath(model_path, resolved) ? resolved : model_path;
    free(plan->model_path);
    plan->model_path = strdup(path);
    if (!plan->model_path) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(plan->model_sha256, m->sha256, sizeof plan->model_sha256);
    snprintf(plan->fission_version, sizeof plan->fission_version, "%s", korch_plan_fission_version);
    plan->pgraph_hash = korch_pgraph_hash(m->pg);
    plan->pgraph_nodes = m->pg->n_nodes;
    for (int i = 0; i < plan->n_input_shapes; i++) free(plan->input_shapes[i].name);
    free(plan->input_shapes);
    plan->n_input_shapes = 0;
    plan->input_shapes = calloc((size_t)m->graph->n_inputs + 1, sizeof *plan->input_shapes);
    if (!plan->input_shapes) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < m->graph->n_inputs; i++) {
        const korch_value *v = &m->graph->values[m->graph->inputs[i]];
        plan->input_shapes[i].name = strdup(v->name);
        if (!plan->input_shapes[i].name) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        plan->input_shapes[i].shape = v->shape;
        plan->n_input_shapes++;
    }
    return KORCH_OK;
}

/* Plans in memory: construction, validation, descriptions. */
#include "runtime/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

korch_plan *korch_plan_new(void) {
    korch_plan *plan = calloc(1, sizeof *plan);
    if (!plan) {
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
        return NULL;
    }
    plan->version = KORCH_PLAN_VERSION;
    return plan;
}

void korch_plan_free(korch_plan *plan) {
    if (!plan) return;
    for (int i = 0; i < plan->n_kernels; i++) {
        free(plan->kernels[i].nodes);
        free(plan->kernels[i].primitives);
        free(plan->kernels[i].onnx_nodes);
    }
    free(plan->kernels);
    korch_plan_shapes_free(plan);
    for (int i = 0; i < plan->n_output_checks; i++) free(plan->output_checks[i].name);
    free(plan->output_checks);
    for (int i = 0; i < plan->n_excluded_kernels; i++) {
        free(plan->excluded_kernels[i].impl);
        free(plan->excluded_kernels[i].detail);
    }
    free(plan->excluded_kernels);
    free(plan->model_path);
    free(plan->fp32_linear);
    for (int b = 0; b < plan->n_buckets; b++) korch_plan_free(plan->buckets[b]);
    free(plan->buckets);
    if (plan->sections.map) munmap(plan->sections.map, plan->sections.map_size);
    free(plan);
}

korch_plan_kernel *korch_plan_add_kernel(korch_plan *plan, const korch_pgraph *pg, const korch_pgraph_uses *uses,
                                         int n_nodes, const int *nodes) {
    korch_plan_kernel *grown = realloc(plan->kernels, ((size_t)plan->n_kernels + 1) * sizeof *grown);
    int cap = n_nodes * 16;
    int *buf = malloc(((size_t)n_nodes + 2 * (size_t)cap + 1) * sizeof *buf);
    bool *in_set = calloc((size_t)pg->n_nodes + 1, sizeof *in_set);
    if (!grown || !buf || !in_set) {
        if (grown) plan->kernels = grown;
        free(buf);
        free(in_set);
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
        return NULL;
    }
    plan->kernels = grown;
    korch_plan_kernel *k = &plan->kernels[plan->n_kernels++];
    memset(k, 0, sizeof *k);
    k->verify_ratio = -1; /* not checked */
    k->nodes = buf;
    k->n_nodes = n_nodes;
    memcpy(k->nodes, nodes, (size_t)n_nodes * sizeof *nodes);
    k->inputs = buf + n_nodes;
    k->outputs = buf + n_nodes + cap;
    korch_node_set_io(pg, uses, n_nodes, nodes, in_set, k->inputs, &k->n_inputs, k->outputs, &k->n_outputs);
    free(in_set);
    return k;
}

korch_kernel_spec korch_plan_kernel_spec(const korch_pgraph *pg, const korch_plan_kernel *k) {
    korch_kernel_spec s = {.pg = pg,
                           .n_nodes = k->n_nodes,
                           .nodes = k->nodes,
                           .n_inputs = k->n_inputs,
                           .inputs = k->inputs,
                           .n_outputs = k->n_outputs,
                           .outputs = k->outputs};
    return s;
}

static bool same_list(const int *a, int na, const int *b, int nb) {
    if (na != nb) return false;
    for (int i = 0; i < na; i++) {
        bool found = false;
        for (int j = 0; j < nb && !found; j++) found = a[i] == b[j];
        if (!found) return false;
    }
    return true;
}

korch_status korch_plan_validate(const korch_plan *plan, const korch_pgraph *pg) {
    if (plan->pgraph_nodes != pg->n_nodes)
        return korch_error(
            KORCH_ERR_INVALID_MODEL,
            "plan: it refers to a primitive graph of %d nodes, the model now gives %d (re-run korch optimize)",
            plan->pgraph_nodes, pg->n_nodes);
    korch_pgraph_uses uses;
    KORCH_TRY(korch_pgraph_uses_build(pg, &uses));
    korch_status st = KORCH_OK;
    bool *available = calloc((size_t)pg->n_values + 1, sizeof *available);
    bool *in_set = calloc((size_t)pg->n_nodes + 1, sizeof *in_set);
    int *covered = calloc((size_t)pg->n_nodes + 1, sizeof *covered);
    int cap = 16 * 64;
    int *io = malloc(2 * (size_t)cap * sizeof *io);
    if (!available || !in_set || !covered || !io) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
        goto done;
    }
    for (int v = 0; v < pg->n_values; v++) available[v] = pg->values[v].is_constant || pg->values[v].graph_input >= 0;
    for (int ki = 0; ki < plan->n_kernels && st == KORCH_OK; ki++) {
        const korch_plan_kernel *k = &plan->kernels[ki];
        if (k->n_nodes < 1 || k->n_nodes > 64) {
            st = korch_error(KORCH_ERR_PARSE, "plan: kernel %d has %d nodes (1 to 64 allowed)", ki, k->n_nodes);
            break;
        }
        for (int i = 0; i < k->n_nodes && st == KORCH_OK; i++) {
            int n = k->nodes[i];
            if (n < 0 || n >= pg->n_nodes || pg->nodes[n].dead || !uses.live[n])
                st = korch_error(KORCH_ERR_INVALID_MODEL,
                                 "plan: kernel %d names node %d, which is not a live primitive", ki, n);
            else if (in_set[n]) st = korch_error(KORCH_ERR_INVALID_MODEL, "plan: kernel %d lists node %d twice", ki, n);
            else if (pg->nodes[n].kind == KORCH_PRIM_OPAQUE && k->n_nodes > 1)
                st = korch_error(KORCH_ERR_INVALID_MODEL, "plan: kernel %d fuses opaque node %d with other nodes", ki,
                                 n);
            else in_set[n] = true;
        }
        for (int i = 0; i < k->n_nodes; i++)
            if (k->nodes[i] >= 0 && k->nodes[i] < pg->n_nodes) in_set[k->nodes[i]] = false;
        if (st != KORCH_OK) break;
        int n_in = 0, n_out = 0;
        korch_node_set_io(pg, &uses, k->n_nodes, k->nodes, in_set, io, &n_in, io + cap, &n_out);
        if (!same_list(io, n_in, k->inputs, k->n_inputs) || !same_list(io + cap, n_out, k->outputs, k->n_outputs)) {
            st = korch_error(KORCH_ERR_INVALID_MODEL,
                             "plan: kernel %d's inputs and outputs do not match the primitive graph (plan made for a "
                             "different graph?)",
                             ki);
            break;
        }
        for (int j = 0; j < k->n_inputs; j++)
            if (!available[k->inputs[j]]) {
                st = korch_error(KORCH_ERR_INVALID_MODEL,
                                 "plan: kernel %d reads value %d before any earlier kernel produces it", ki,
                                 k->inputs[j]);
                break;
            }
        for (int j = 0; j < k->n_outputs; j++) available[k->outputs[j]] = true;
        for (int i = 0; i < k->n_nodes; i++) covered[k->nodes[i]]++;
    }
    for (int i = 0; i < pg->n_outputs && st == KORCH_OK; i++)
        if (!available[pg->outputs[i]])
            st = korch_error(KORCH_ERR_INVALID_MODEL, "plan: no kernel produces graph output %d (value %d)", i,
                             pg->outputs[i]);
done:
    free(available);
    free(in_set);
    free(covered);
    free(io);
    korch_pgraph_uses_free(&uses);
    return st;
}

static const char *layout_name(korch_layout_tag t) {
    static const char *const names[] = {"generic", "transpose", "reshape", "slice",  "concat",     "pad",
                                        "expand",  "gather",    "resize",  "window", "depth_space"};
    _Static_assert(sizeof names / sizeof names[0] == KORCH_LAYOUT_TAG_COUNT, "layout tag names out of step");
    return (unsigned)t < KORCH_LAYOUT_TAG_COUNT ? names[t] : "?";
}

static void primitive_name(const korch_pgraph *pg, const korch_pnode *n, char *buf, size_t size) {
    static const char *const reduce_names[] = {"sum", "max", "min", "mean"};
    switch (n->kind) {
    case KORCH_PRIM_ELEMENTWISE: snprintf(buf, size, "ew.%s", korch_ew_name(n->u.ew.op)); break;
    case KORCH_PRIM_REDUCE: snprintf(buf, size, "reduce.%s", reduce_names[n->u.reduce.op & 3]); break;
    case KORCH_PRIM_LAYOUT: snprintf(buf, size, "layout.%s", layout_name(n->u.layout.tag)); break;
    case KORCH_PRIM_LINEAR:
        snprintf(buf, size, "linear.%s%s%s",
                 n->u.linear.op == KORCH_LINEAR_MATMUL ? "matmul"
                 : n->u.linear.op == KORCH_LINEAR_CONV ? "conv"
                                                       : "convT",
                 n->u.linear.channels_last ? ".nhwc" : "", n->u.linear.bf16 ? ".bf16" : "");
        break;
    case KORCH_PRIM_OPAQUE:
        snprintf(buf, size, "opaque.%s",
                 pg->source && n->u.opaque.source_node < pg->source->n_nodes
                     ? pg->source->nodes[n->u.opaque.source_node].op_type
                     : "?");
        break;
    default: snprintf(buf, size, "?"); break;
    }
}

/* appends text to a growing string */
static bool append(char **s, size_t *len, size_t *cap, const char *text) {
    size_t add = strlen(text);
    if (*len + add + 1 > *cap) {
        size_t ncap = (*cap ? *cap * 2 : 64) + add;
        char *g = realloc(*s, ncap);
        if (!g) return false;
        *s = g;
        *cap = ncap;
    }
    memcpy(*s + *len, text, add + 1);
    *len += add;
    return true;
}

korch_status korch_plan_describe_kernels(korch_plan *plan, const korch_pgraph *pg) {
    for (int ki = 0; ki < plan->n_kernels; ki++) {
        korch_plan_kernel *k = &plan->kernels[ki];
        char *prims = NULL, *onnx = NULL;
        size_t pl = 0, pc = 0, ol = 0, oc = 0;
        bool ok = append(&prims, &pl, &pc, "") && append(&onnx, &ol, &oc, "");
        for (int i = 0; i < k->n_nodes && ok; i++) {
            const korch_pnode *n = &pg->nodes[k->nodes[i]];
            char name[96];
            primitive_name(pg, n, name, sizeof name);
            ok = (i == 0 || append(&prims, &pl, &pc, " ")) && append(&prims, &pl, &pc, name);
            int src = n->source_node;
            if (!ok || src < 0 || !pg->source || src >= pg->source->n_nodes) continue;
            bool seen = false;
            for (int j = 0; j < i && !seen; j++) seen = pg->nodes[k->nodes[j]].source_node == src;
            if (!seen)
                ok = (ol == 0 || append(&onnx, &ol, &oc, "\n")) && append(&onnx, &ol, &oc, pg->source->nodes[src].name);
        }
        if (!ok) {
            free(prims);
            free(onnx);
            return korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
        }
        free(k->primitives);
        free(k->onnx_nodes);
        k->primitives = prims;
        k->onnx_nodes = onnx;
    }
    return KORCH_OK;
}

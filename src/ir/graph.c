#include "ir/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

korch_status korch_graph_create(korch_graph **out) {
    korch_graph *g = calloc(1, sizeof *g);
    if (!g) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cannot allocate graph");
    korch_strmap_init(&g->value_index);
    *out = g;
    return KORCH_OK;
}

void korch_attr_free(korch_attr *a) {
    free(a->name);
    free(a->s);
    free(a->floats);
    free(a->ints);
    for (int k = 0; a->strings && k < a->count; k++) free(a->strings[k]);
    free(a->strings);
    if (a->tensor) {
        korch_tensor_free(a->tensor);
        free(a->tensor);
    }
    korch_graph_free(a->graph);
    memset(a, 0, sizeof *a);
}

void korch_graph_free(korch_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_values; i++) {
        korch_value *v = &g->values[i];
        free(v->name);
        korch_tensor_free(&v->constant);
        for (int d = 0; d < KORCH_MAX_RANK; d++) free(v->dim_params[d]);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        korch_node *n = &g->nodes[i];
        free(n->name);
        free(n->op_type);
        free(n->domain);
        free(n->inputs);
        free(n->outputs);
        for (int a = 0; a < n->n_attrs; a++) korch_attr_free(&n->attrs[a]);
        free(n->attrs);
    }
    for (int i = 0; i < g->n_opsets; i++) free(g->opsets[i].domain);
    free(g->opsets);
    free(g->values);
    free(g->nodes);
    for (int i = 0; g->specialized && i < g->n_inputs; i++) korch_tensor_free(&g->specialized[i]);
    free(g->specialized);
    free(g->inputs);
    free(g->outputs);
    free(g->captures);
    free(g->capture_slots);
    free(g->unusable);
    free(g->name);
    free(g->model_dir);
    korch_strmap_free(&g->value_index);
    free(g);
}

int korch_graph_find_value(const korch_graph *g, const char *name) { return korch_strmap_get(&g->value_index, name); }

int korch_graph_fresh_value(korch_graph *g, const char *base, const char *tag) {
    size_t len = strlen(base) + strlen(tag) + 32;
    char *name = malloc(len);
    if (!name) return -1;
    snprintf(name, len, "%s::%s", base, tag);
    for (int k = 1; korch_graph_find_value(g, name) >= 0; k++) snprintf(name, len, "%s::%s.%d", base, tag, k);
    int v = korch_graph_intern_value(g, name);
    free(name);
    return v;
}

int korch_graph_intern_value(korch_graph *g, const char *name) {
    int found = korch_strmap_get(&g->value_index, name);
    if (found >= 0) return found;
    if (g->n_values == g->cap_values) {
        int cap = g->cap_values ? g->cap_values * 2 : 64;
        korch_value *values = realloc(g->values, (size_t)cap * sizeof *values);
        if (!values) return -1;
        g->values = values;
        g->cap_values = cap;
        /* keys in the map point at value names, which do not move: only the
         * array of structs moved, not the strings. */
    }
    korch_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = strdup(name);
    v->producer = -1;
    if (!v->name) return -1;
    if (!korch_strmap_put(&g->value_index, v->name, g->n_values)) {
        free(v->name);
        return -1;
    }
    return g->n_values++;
}

int korch_graph_add_node(korch_graph *g) {
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        korch_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) return -1;
        g->nodes = nodes;
        g->cap_nodes = cap;
    }
    memset(&g->nodes[g->n_nodes], 0, sizeof g->nodes[0]);
    return g->n_nodes++;
}

int64_t korch_graph_opset(const korch_graph *g, const char *domain) {
    bool want_default = !domain || !*domain || strcmp(domain, "ai.onnx") == 0;
    for (int i = 0; i < g->n_opsets; i++) {
        const char *d = g->opsets[i].domain;
        bool is_default = !d || !*d || strcmp(d, "ai.onnx") == 0;
        if (want_default ? is_default : (d && strcmp(d, domain) == 0)) return g->opsets[i].version;
    }
    return -1;
}

korch_status korch_graph_toposort(const korch_graph *g, int *order, int *count) {
    /* Kahn's algorithm over value producers. */
    int *pending = calloc((size_t)g->n_nodes + 1, sizeof *pending);
    int *queue = calloc((size_t)g->n_nodes + 1, sizeof *queue);
    int *consumer_count = calloc((size_t)g->n_values + 1, sizeof *consumer_count);
    if (!pending || !queue || !consumer_count) {
        free(pending);
        free(queue);
        free(consumer_count);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "toposort: out of memory");
    }
    /* consumers as CSR */
    for (int i = 0; i < g->n_nodes; i++) {
        const korch_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v < 0) continue;
            int p = g->values[v].producer;
            if (p >= 0 && !g->nodes[p].dead) {
                pending[i]++;
                consumer_count[v]++;
            }
        }
    }
    int *offsets = calloc((size_t)g->n_values + 1, sizeof *offsets);
    int total = 0;
    for (int v = 0; v < g->n_values; v++) total += consumer_count[v];
    int *consumers = calloc((size_t)total + 1, sizeof *consumers);
    if (!offsets || !consumers) {
        free(pending);
        free(queue);
        free(consumer_count);
        free(offsets);
        free(consumers);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "toposort: out of memory");
    }
    for (int v = 0; v < g->n_values; v++) offsets[v + 1] = offsets[v] + consumer_count[v];
    memset(consumer_count, 0, (size_t)g->n_values * sizeof *consumer_count);
    for (int i = 0; i < g->n_nodes; i++) {
        const korch_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v < 0) continue;
            int p = g->values[v].producer;
            if (p >= 0 && !g->nodes[p].dead) consumers[offsets[v] + consumer_count[v]++] = i;
        }
    }
    int head = 0, tail = 0, live = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        live++;
        if (pending[i] == 0) queue[tail++] = i;
    }
    int written = 0;
    while (head < tail) {
        int i = queue[head++];
        order[written++] = i;
        const korch_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            for (int c = offsets[v]; c < offsets[v + 1]; c++)
                if (--pending[consumers[c]] == 0) queue[tail++] = consumers[c];
        }
    }
    korch_status st = KORCH_OK;
    if (written != live) {
        int culprit = -1;
        for (int i = 0; i < g->n_nodes && culprit < 0; i++)
            if (!g->nodes[i].dead && pending[i] > 0) culprit = i;
        char buf[160];
        st = korch_error(KORCH_ERR_INVALID_MODEL, "graph has a cycle through node \"%s\" (%s)",
                         korch_printable(g->nodes[culprit].name, buf, sizeof buf), g->nodes[culprit].op_type);
    }
    *count = written;
    free(pending);
    free(queue);
    free(consumer_count);
    free(offsets);
    free(consumers);
    return st;
}

const korch_attr *korch_node_attr(const korch_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

korch_graph *korch_node_subgraph(const korch_node *n, const char *name) {
    const korch_attr *a = korch_node_attr(n, name);
    return a && a->type == KORCH_ATTR_GRAPH ? a->graph : NULL;
}

int64_t korch_node_attr_int(const korch_node *n, const char *name, int64_t dflt) {
    const korch_attr *a = korch_node_attr(n, name);
    return a && a->type == KORCH_ATTR_INT ? a->i : dflt;
}

float korch_node_attr_float(const korch_node *n, const char *name, float dflt) {
    const korch_attr *a = korch_node_attr(n, name);
    if (!a) return dflt;
    if (a->type == KORCH_ATTR_FLOAT) return a->f;
    if (a->type == KORCH_ATTR_INT) return (float)a->i;
    return dflt;
}

const char *korch_node_attr_string(const korch_node *n, const char *name, const char *dflt) {
    const korch_attr *a = korch_node_attr(n, name);
    return a && a->type == KORCH_ATTR_STRING && a->s ? a->s : dflt;
}

int korch_node_attr_ints(const korch_node *n, const char *name, const int64_t **ints) {
    const korch_attr *a = korch_node_attr(n, name);
    if (!a || a->type != KORCH_ATTR_INTS) return -1;
    *ints = a->ints;
    return a->count;
}

int korch_node_attr_floats(const korch_node *n, const char *name, const float **floats) {
    const korch_attr *a = korch_node_attr(n, name);
    if (!a || a->type != KORCH_ATTR_FLOATS) return -1;
    *floats = a->floats;
    return a->count;
}

int korch_node_attr_strings(const korch_node *n, const char *name, char *const **strings) {
    const korch_attr *a = korch_node_attr(n, name);
    if (!a || a->type != KORCH_ATTR_STRINGS || !a->strings) return -1;
    *strings = a->strings;
    return a->count;
}

int korch_node_input_count(const korch_node *n) {
    int c = n->n_inputs;
    while (c > 0 && n->inputs[c - 1] < 0) c--;
    return c;
}

bool korch_node_has_input(const korch_node *n, int i) { return i >= 0 && i < n->n_inputs && n->inputs[i] >= 0; }

const char *korch_printable(const char *s, char *buf, size_t size) {
    if (!s) s = "";
    if (size == 0) return "";
    size_t j = 0, limit = size - 1;
    bool truncated = false;
    for (size_t i = 0; s[i]; i++) {
        if (j >= limit) {
            truncated = true;
            break;
        }
        unsigned char c = (unsigned char)s[i];
        buf[j++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    buf[j] = '\0';
    if (truncated && size > 4) memcpy(buf + size - 4, "...", 4);
    return buf;
}

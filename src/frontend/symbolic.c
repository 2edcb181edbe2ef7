/* Graph inputs whose shapes the file leaves open (a dim_param such as
 * "batch", or an unknown dimension), before shape inference: what `korch
 * info` and `korch check` report for a model exported with dynamic axes,
 * where inference needs every input's shape fixed (--input-shape, or the
 * shapes of `korch run`'s input files). */
#include <stdio.h>
#include <string.h>

#include "frontend/frontend.h"

static bool overridden(const korch_value *v, const korch_input_shape *ov, int n_ov) {
    for (int k = 0; k < n_ov; k++)
        if (strcmp(ov[k].name, v->name) == 0) return true;
    return false;
}

bool korch_value_shape_open(const korch_value *v) {
    if (!v->has_declared_shape) return true;
    for (int d = 0; d < v->declared_shape.rank; d++)
        if (v->declared_shape.dims[d] < 0) return true;
    return false;
}

int korch_graph_open_inputs(const korch_graph *g, const korch_input_shape *ov, int n_ov) {
    int n = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        if (v->is_constant) continue; /* an input with an initializer: its shape is the initializer's */
        n += korch_value_shape_open(v) && !overridden(v, ov, n_ov);
    }
    return n;
}

korch_status korch_graph_check_input_types(const korch_graph *g) {
    char vbuf[160];
    for (int i = 0; i < g->n_inputs; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        if (v->is_constant) continue;
        korch_printable(v->name, vbuf, sizeof vbuf);
        /* the messages of shape inference's input binding (infer.c) */
        if (v->declared_dtype == KORCH_DTYPE_UNDEFINED)
            return korch_error(KORCH_ERR_INVALID_MODEL, "graph input \"%s\" has no element type", vbuf);
        if (korch_dtype_size(v->declared_dtype) == 0 || v->declared_dtype == KORCH_DTYPE_STRING)
            return korch_error(KORCH_ERR_UNSUPPORTED, "graph input \"%s\" has unsupported dtype %s", vbuf,
                               korch_dtype_name(v->declared_dtype));
    }
    return KORCH_OK;
}

const char *korch_value_declared_format(const korch_value *v, char *buf, size_t cap) {
    if (cap == 0) return buf;
    buf[0] = '\0';
    if (!v->has_declared_shape) {
        snprintf(buf, cap, "(no shape)");
        return buf;
    }
    if (v->declared_shape.rank == 0) {
        snprintf(buf, cap, "scalar");
        return buf;
    }
    size_t used = 0;
    for (int d = 0; d < v->declared_shape.rank && used < cap; d++) {
        char dim[80], name[64];
        if (v->declared_shape.dims[d] >= 0)
            snprintf(dim, sizeof dim, "%lld", (long long)v->declared_shape.dims[d]);
        else if (v->dim_params[d] && v->dim_params[d][0])
            snprintf(dim, sizeof dim, "%s", korch_printable(v->dim_params[d], name, sizeof name));
        else
            snprintf(dim, sizeof dim, "?");
        int w = snprintf(buf + used, cap - used, "%s%s", d ? "x" : "", dim);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

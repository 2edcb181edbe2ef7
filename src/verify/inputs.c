/* Seeded data for verification, and the perturbation that measures how
 * sensitive a reference value is to rounding of its inputs. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/half.h"
#include "verify/verify.h"

static uint64_t next(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

static double unit(uint64_t *s) { return (double)next(s) / 9007199254740992.0; /* [0, 1) */ }

void korch_verify_fill(korch_tensor *t, uint64_t seed) { korch_verify_fill_bounded(t, seed, 100); }

void korch_verify_fill_bounded(korch_tensor *t, uint64_t seed, int64_t upper) {
    int64_t n = korch_tensor_numel(t);
    double range = (double)(upper > 0 ? upper : 1);
    uint64_t s = 0x9E3779B97F4A7C15ull ^ seed;
    for (int64_t i = 0; i < n; i++) {
        double u = unit(&s);
        switch (t->dtype) {
        case KORCH_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)(u * 2.0 - 1.0); break;
        case KORCH_DTYPE_FLOAT64: ((double *)t->data)[i] = u * 2.0 - 1.0; break;
        case KORCH_DTYPE_INT64: ((int64_t *)t->data)[i] = (int64_t)(u * range); break;
        case KORCH_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)(u * range); break;
        case KORCH_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)(u * (range < 128 ? range : 128)); break;
        case KORCH_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)(u * (range < 256 ? range : 256)); break;
        case KORCH_DTYPE_BOOL: ((uint8_t *)t->data)[i] = u < 0.5; break;
        case KORCH_DTYPE_FLOAT16:
        case KORCH_DTYPE_BFLOAT16: korch_half_store(t->dtype, t->data, i, u * 2.0 - 1.0); break;
        default: break; /* other dtypes keep their (zeroed) bytes */
        }
    }
}

void korch_verify_perturb(korch_tensor *t, uint64_t seed) {
    int64_t n = korch_tensor_numel(t);
    uint64_t s = 0xD1B54A32D192ED03ull ^ seed;
    const double eps = ldexp(1.0, -20);
    for (int64_t i = 0; i < n; i++) {
        double f = next(&s) & 1 ? 1.0 + eps : 1.0 - eps;
        if (t->dtype == KORCH_DTYPE_FLOAT32) ((float *)t->data)[i] = (float)(((float *)t->data)[i] * f);
        else if (t->dtype == KORCH_DTYPE_FLOAT64) ((double *)t->data)[i] *= f;
        else return;
    }
}

/* Ops an index passes through unchanged in value (only in form). */
static bool passes_values(const char *op) {
    static const char *const ops[] = {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Expand",
                                      "Transpose"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i]) == 0) return true;
    return false;
}

/* The size of the dimensions node n addresses with value v as its indices
 * (input 1): data.shape[axis] for Gather, GatherElements, Scatter and
 * ScatterElements; the smallest of the dimensions an index tuple addresses
 * for GatherND and ScatterND. INT64_MAX when n does not index with v. */
static int64_t addressed_bound(const korch_graph *g, const korch_node *n, int v) {
    if (n->n_inputs < 2 || n->inputs[1] != v || n->inputs[0] < 0) return INT64_MAX;
    const korch_value *data = &g->values[n->inputs[0]], *idx = &g->values[v];
    if (!data->has_shape) return INT64_MAX;
    int rank = data->shape.rank;
    int first, count;
    if (!strcmp(n->op_type, "Gather") || !strcmp(n->op_type, "GatherElements") ||
        !strcmp(n->op_type, "ScatterElements") || !strcmp(n->op_type, "Scatter")) {
        int64_t axis = korch_node_attr_int(n, "axis", 0);
        first = (int)(axis < 0 ? axis + rank : axis);
        count = 1;
    } else if (!strcmp(n->op_type, "GatherND") || !strcmp(n->op_type, "ScatterND")) {
        if (!idx->has_shape || idx->shape.rank < 1) return INT64_MAX;
        first = !strcmp(n->op_type, "GatherND") ? (int)korch_node_attr_int(n, "batch_dims", 0) : 0;
        count = (int)idx->shape.dims[idx->shape.rank - 1];
    } else {
        return INT64_MAX;
    }
    int64_t bound = INT64_MAX;
    for (int k = first; k >= 0 && k < first + count && k < rank; k++)
        if (data->shape.dims[k] < bound) bound = data->shape.dims[k];
    return bound;
}

/* The smallest addressed size among the nodes that read value v as indices,
 * directly or through passes_values ops (depth-limited). */
static int64_t index_bound(const korch_graph *g, int v, int depth) {
    int64_t bound = INT64_MAX;
    for (int i = 0; i < g->n_nodes && depth < 8; i++) {
        const korch_node *n = &g->nodes[i];
        if (n->dead || n->n_inputs < 1) continue;
        int64_t b = addressed_bound(g, n, v);
        if (b == INT64_MAX && passes_values(n->op_type) && n->inputs[0] == v && n->n_outputs >= 1 &&
            n->outputs[0] >= 0)
            b = index_bound(g, n->outputs[0], depth + 1);
        if (b < bound) bound = b;
    }
    return bound;
}

korch_status korch_verify_seeded_inputs(const korch_graph *g, uint64_t seed, korch_tensor *out) {
    for (int i = 0; i < g->n_inputs; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        /* a specialized input gets its value: the plan is right for it only */
        if (g->specialized && g->specialized[i].data) {
            KORCH_TRY(korch_tensor_clone(&g->specialized[i], &out[i]));
            continue;
        }
        KORCH_TRY(korch_tensor_alloc(&out[i], v->dtype, &v->shape));
        int64_t bound = index_bound(g, g->inputs[i], 0);
        korch_verify_fill_bounded(&out[i], seed + (uint64_t)i, bound < 100 ? bound : 100);
    }
    return KORCH_OK;
}

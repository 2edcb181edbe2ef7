/* Scan (opset 8, with a batch axis and sequence_lens; opsets 9-18, with
 * scan axes and directions). The sequence length comes from the scan
 * inputs' shapes, so it is static. Each step extracts one slice of every
 * scan input, runs the body in the reference executor and writes one slice
 * of every scan output. Opset 8 runs the steps once per batch entry;
 * sequence_lens shorter than the sequence are refused (static shapes). */
#include <stdlib.h>
#include <string.h>

#include "ops/control_flow.h"

typedef struct scan_shape {
    bool batched;       /* opset 8: axis 0 of every input and output is the batch */
    int first;          /* index of the first state input (1 for opset 8) */
    int n_state, n_scan_in, n_scan_out;
    int64_t batch, length;
    int in_axis[64], out_axis[64];
    bool in_reverse[64], out_reverse[64];
} scan_shape;

/* The shape one batch entry sees (opset 8 drops the batch axis). */
static korch_shape entry_shape(const scan_shape *ss, const korch_shape *s) {
    if (!ss->batched) return *s;
    korch_shape e = {.rank = s->rank - 1};
    for (int d = 1; d < s->rank; d++) e.dims[d - 1] = s->dims[d];
    return e;
}

static korch_shape drop_axis(const korch_shape *s, int axis) {
    korch_shape r = {.rank = s->rank - 1};
    for (int d = 0, w = 0; d < s->rank; d++)
        if (d != axis) r.dims[w++] = s->dims[d];
    return r;
}

static korch_status read_axes(korch_op_ctx *ctx, const char *name, int n, int *axes, bool *reverse,
                              const char *dir_name) {
    const int64_t *v;
    int count = korch_node_attr_ints(ctx->node, name, &v);
    if (count >= 0 && count != n)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute %s has %d entries, expected %d", name, count, n);
    for (int k = 0; k < n; k++) axes[k] = count >= 0 ? (int)(v[k] < -64 || v[k] > 64 ? 99 : v[k]) : 0;
    count = korch_node_attr_ints(ctx->node, dir_name, &v);
    if (count >= 0 && count != n)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute %s has %d entries, expected %d", dir_name, count,
                              n);
    for (int k = 0; k < n; k++) {
        if (count >= 0 && v[k] != 0 && v[k] != 1)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute %s must hold 0 or 1", dir_name);
        reverse[k] = count >= 0 && v[k] == 1;
    }
    return KORCH_OK;
}

static korch_status scan_shape_of(korch_op_ctx *ctx, const korch_graph *body, scan_shape *ss) {
    memset(ss, 0, sizeof *ss);
    int n_in = korch_control_onnx_inputs(ctx);
    ss->batched = ctx->node->opset < 9;
    ss->first = ss->batched ? 1 : 0;
    int64_t m = korch_node_attr_int(ctx->node, "num_scan_inputs", -1);
    int rest = n_in - ss->first;
    if (m < 1 || m > rest)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "num_scan_inputs is %lld with %d inputs", (long long)m, rest);
    ss->n_scan_in = (int)m;
    ss->n_state = rest - ss->n_scan_in;
    ss->n_scan_out = ctx->n_outputs - ss->n_state;
    if (ss->n_scan_out < 0 || ss->n_scan_in > 64 || ss->n_scan_out > 64)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%d state inputs but %d outputs", ss->n_state, ctx->n_outputs);
    if (body->n_inputs != ss->n_state + ss->n_scan_in || body->n_outputs != ss->n_state + ss->n_scan_out)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "the body has %d inputs and %d outputs, expected %d and %d",
                              body->n_inputs, body->n_outputs, ss->n_state + ss->n_scan_in, ss->n_state + ss->n_scan_out);
    if (ss->batched) {
        KORCH_TRY(read_axes(ctx, "(none)", ss->n_scan_in, ss->in_axis, ss->in_reverse, "directions"));
        for (int k = 0; k < ss->n_scan_out; k++) ss->out_axis[k] = 0, ss->out_reverse[k] = false;
    } else {
        KORCH_TRY(read_axes(ctx, "scan_input_axes", ss->n_scan_in, ss->in_axis, ss->in_reverse, "scan_input_directions"));
        KORCH_TRY(read_axes(ctx, "scan_output_axes", ss->n_scan_out, ss->out_axis, ss->out_reverse,
                            "scan_output_directions"));
    }
    ss->batch = 1;
    ss->length = -1;
    for (int k = 0; k < ss->n_state + ss->n_scan_in; k++) {
        const korch_tensor *x = ctx->inputs[ss->first + k];
        if (!x) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "input %d is empty", ss->first + k);
        if (ss->batched) {
            if (x->shape.rank < 1) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "input %d has no batch axis", ss->first + k);
            if (k == 0) ss->batch = x->shape.dims[0];
            else if (x->shape.dims[0] != ss->batch)
                return korch_op_error(ctx, KORCH_ERR_SHAPE, "input %d has batch %lld, expected %lld", ss->first + k,
                                      (long long)x->shape.dims[0], (long long)ss->batch);
        }
        if (k < ss->n_state) continue;
        int j = k - ss->n_state;
        korch_shape e = entry_shape(ss, &x->shape);
        int axis = korch_axis_normalize(ss->in_axis[j], e.rank);
        if (axis < 0) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "scan input %d: axis out of range", j);
        ss->in_axis[j] = axis;
        if (ss->length < 0) ss->length = e.dims[axis];
        else if (e.dims[axis] != ss->length)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "scan input %d has %lld steps, the first has %lld", j,
                                  (long long)e.dims[axis], (long long)ss->length);
    }
    return KORCH_OK;
}

static korch_status infer_scan(korch_op_ctx *ctx) {
    korch_graph *body;
    scan_shape ss;
    KORCH_TRY(korch_control_subgraph(ctx, "body", &body));
    KORCH_TRY(scan_shape_of(ctx, body, &ss));
    if (ss.batched && korch_op_has_input(ctx, 0)) {
        const korch_tensor *sl = ctx->inputs[0];
        if (sl->dtype != KORCH_DTYPE_INT64 || sl->shape.rank != 1 || sl->shape.dims[0] != ss.batch)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "sequence_lens must be int64 [batch]");
    }
    korch_tensor formal[128];
    for (int k = 0; k < ss.n_state + ss.n_scan_in; k++) {
        const korch_tensor *x = ctx->inputs[ss.first + k];
        korch_shape e = entry_shape(&ss, &x->shape);
        formal[k] = (korch_tensor){.dtype = x->dtype,
                                   .shape = k < ss.n_state ? e : drop_axis(&e, ss.in_axis[k - ss.n_state])};
    }
    KORCH_TRY(korch_control_infer(ctx, body, "body", formal, body->n_inputs));
    for (int k = 0; k < ss.n_state; k++) {
        korch_tensor out = korch_control_output_type(body, k);
        char a[96], b[96];
        if (out.dtype != formal[k].dtype || !korch_shape_equal(&out.shape, &formal[k].shape))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "state %d enters the body as %s %s and leaves it as %s %s",
                                  k, korch_dtype_name(formal[k].dtype), korch_shape_format(&formal[k].shape, a, sizeof a),
                                  korch_dtype_name(out.dtype), korch_shape_format(&out.shape, b, sizeof b));
        korch_op_set_output(ctx, k, out.dtype, &ctx->inputs[ss.first + k]->shape);
    }
    for (int k = 0; k < ss.n_scan_out; k++) {
        korch_tensor out = korch_control_output_type(body, ss.n_state + k);
        int rank = out.shape.rank + 1 + (ss.batched ? 1 : 0);
        if (rank > KORCH_MAX_RANK)
            return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "scan output %d would have rank %d", k, rank);
        int axis = korch_axis_normalize(ss.out_axis[k], out.shape.rank + 1);
        if (axis < 0) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "scan output %d: axis out of range", k);
        korch_shape s = {.rank = 0};
        if (ss.batched) s.dims[s.rank++] = ss.batch;
        for (int d = 0, r = 0; d <= out.shape.rank; d++) s.dims[s.rank++] = d == axis ? ss.length : out.shape.dims[r++];
        korch_op_set_output(ctx, ss.n_state + k, out.dtype, &s);
    }
    return KORCH_OK;
}

/* Copies slice `index` along `axis` of `shape` between `whole` and `part`
 * (to_part: whole -> part, else part -> whole). */
static void copy_slice(char *whole, char *part, const korch_shape *shape, int axis, int64_t index, size_t esize,
                       bool to_part) {
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= shape->dims[d];
    for (int d = axis + 1; d < shape->rank; d++) inner *= shape->dims[d];
    size_t row = (size_t)inner * esize;
    for (int64_t o = 0; o < outer; o++) {
        char *w = whole + ((size_t)(o * shape->dims[axis] + index)) * row;
        char *p = part + (size_t)o * row;
        memcpy(to_part ? p : w, to_part ? w : p, row);
    }
}

static korch_status run_scan(korch_op_ctx *ctx) {
    korch_graph *body;
    scan_shape ss;
    KORCH_TRY(korch_control_subgraph(ctx, "body", &body));
    KORCH_TRY(scan_shape_of(ctx, body, &ss));
    if (ss.batched && korch_op_has_input(ctx, 0))
        for (int64_t b = 0; b < ss.batch; b++)
            if (korch_tensor_get_i64(ctx->inputs[0], b) != ss.length)
                return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                                      "sequence_lens[%lld] is %lld, shorter than the %lld steps; korch plans static "
                                      "shapes",
                                      (long long)b, (long long)korch_tensor_get_i64(ctx->inputs[0], b),
                                      (long long)ss.length);
    int n_in = body->n_inputs, n_out = body->n_outputs;
    korch_tensor *in = calloc((size_t)n_in + 1, sizeof *in), *out = calloc((size_t)n_out + 1, sizeof *out);
    korch_status st = in && out ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < n_in && st == KORCH_OK; k++) {
        const korch_value *v = &body->values[body->inputs[k]];
        st = korch_tensor_alloc(&in[k], v->dtype, &v->shape);
    }
    for (int k = 0; k < n_out && st == KORCH_OK; k++) {
        korch_tensor type = korch_control_output_type(body, k);
        st = korch_tensor_alloc(&out[k], type.dtype, &type.shape);
    }
    for (int64_t b = 0; b < ss.batch && st == KORCH_OK; b++) {
        for (int k = 0; k < ss.n_state; k++) { /* the initial state of this batch entry */
            const korch_tensor *x = ctx->inputs[ss.first + k];
            size_t bytes = korch_tensor_bytes(&in[k]);
            memcpy(in[k].data, (const char *)x->data + (size_t)b * bytes, bytes);
        }
        for (int64_t t = 0; t < ss.length && st == KORCH_OK; t++) {
            for (int j = 0; j < ss.n_scan_in; j++) {
                const korch_tensor *x = ctx->inputs[ss.first + ss.n_state + j];
                korch_shape e = entry_shape(&ss, &x->shape);
                size_t entry_bytes = (size_t)korch_shape_numel(&e) * korch_dtype_size(x->dtype);
                copy_slice((char *)x->data + (size_t)b * entry_bytes, in[ss.n_state + j].data, &e, ss.in_axis[j],
                           ss.in_reverse[j] ? ss.length - 1 - t : t, korch_dtype_size(x->dtype), true);
            }
            st = korch_control_run(ctx, body, in, out);
            if (st != KORCH_OK) break;
            for (int k = 0; k < ss.n_state; k++) { /* the new state is the next input */
                korch_tensor tmp = in[k];
                in[k] = out[k];
                out[k] = tmp;
            }
            for (int k = 0; k < ss.n_scan_out; k++) {
                korch_tensor *y = ctx->outputs[ss.n_state + k];
                if (!y) continue;
                korch_shape e = entry_shape(&ss, &y->shape);
                size_t entry_bytes = (size_t)korch_shape_numel(&e) * korch_dtype_size(y->dtype);
                int axis = korch_axis_normalize(ss.out_axis[k], e.rank);
                copy_slice((char *)y->data + (size_t)b * entry_bytes, out[ss.n_state + k].data, &e, axis,
                           ss.out_reverse[k] ? ss.length - 1 - t : t, korch_dtype_size(y->dtype), false);
            }
        }
        for (int k = 0; k < ss.n_state && st == KORCH_OK; k++) {
            korch_tensor *y = ctx->outputs[k];
            if (!y) continue;
            size_t bytes = korch_tensor_bytes(&in[k]);
            memcpy((char *)y->data + (size_t)b * bytes, in[k].data, bytes);
        }
    }
    if (in)
        for (int k = 0; k < n_in; k++) korch_tensor_free(&in[k]);
    if (out)
        for (int k = 0; k < n_out; k++) korch_tensor_free(&out[k]);
    free(in);
    free(out);
    return st;
}

const korch_op_def korch_op_def_Scan = {
    .kind = KORCH_OP_Scan, .op_type = "Scan", .opset_min = 8, .opset_max = 18,
    .min_inputs = 0, .max_inputs = 64, .min_outputs = 1, .max_outputs = 64,
    .infer = infer_scan, .run = run_scan,
};

/* Loop (opsets 1-18, tensor values only). korch plans static shapes, so:
 * every loop-carried value keeps its dtype and shape from one iteration to
 * the next, and a Loop with scan outputs needs a constant trip count M (the
 * scan outputs are planned [M, ...]; a loop that a run-time condition stops
 * earlier is an error at run time, named). A Loop whose inputs are all
 * constant is run once at load (folded) like any other node. The body runs
 * in the reference executor.
 *
 * A body whose shapes inside depend on values (a Slice at a loop-carried
 * position: paddle2onnx's decoders write `t[:, i:i+1]`) cannot be inferred
 * once. Such a Loop without scan outputs is planned with its carried values'
 * shapes, and its body is inferred again at every iteration with that
 * iteration's values, folding to its outputs (as a Loop evaluated at load
 * does); an iteration whose carried value leaves with another shape is an
 * error, named. It costs a fresh copy of the body per iteration; nodes
 * whose inputs did not change since the last iteration are not run again
 * (control_reuse.c), and values the body hands on as they are stay where
 * they are. */
#include <stdlib.h>
#include <string.h>

#include "ops/control_flow.h"

typedef struct loop_shape {
    int n_carried, n_scan;
    bool has_m;
    int64_t m; /* trip count when constant, else -1 */
} loop_shape;

static korch_status loop_shape_of(korch_op_ctx *ctx, const korch_graph *body, loop_shape *ls) {
    int n_in = korch_control_onnx_inputs(ctx);
    if (n_in < 2) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "needs the inputs M and cond (either may be empty)");
    ls->n_carried = n_in - 2;
    ls->n_scan = ctx->n_outputs - ls->n_carried;
    if (ls->n_scan < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "has %d loop-carried inputs but only %d outputs",
                              ls->n_carried, ctx->n_outputs);
    if (body->n_inputs != 2 + ls->n_carried || body->n_outputs != 1 + ls->n_carried + ls->n_scan)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                              "the body has %d inputs and %d outputs; %d loop-carried values and %d scan outputs "
                              "need %d and %d",
                              body->n_inputs, body->n_outputs, ls->n_carried, ls->n_scan, 2 + ls->n_carried,
                              1 + ls->n_carried + ls->n_scan);
    ls->has_m = korch_op_has_input(ctx, 0);
    ls->m = -1;
    if (ls->has_m) {
        const korch_tensor *m = ctx->inputs[0];
        if (m->dtype != KORCH_DTYPE_INT64 || korch_shape_numel(&m->shape) != 1)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "M must be one int64");
        if (m->data) ls->m = korch_tensor_get_i64(m, 0) < 0 ? 0 : korch_tensor_get_i64(m, 0);
    }
    if (korch_op_has_input(ctx, 1)) {
        const korch_tensor *c = ctx->inputs[1];
        if (c->dtype != KORCH_DTYPE_BOOL || korch_shape_numel(&c->shape) != 1)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "cond must be one bool");
    }
    return KORCH_OK;
}

/* A hostile or broken model must not make korch spin forever (a Loop with
 * no M whose condition never turns false): at run time a Loop stops with an
 * error after this many iterations. */
#define LOOP_RUN_MAX_ITERATIONS ((int64_t)1 << 24)

/* Bounds on a Loop evaluated at load (all inputs constant). */
#define LOOP_EVAL_MAX_ITERATIONS 100000
#define LOOP_EVAL_MAX_BYTES ((size_t)64 << 20)

static bool all_inputs_constant(const korch_op_ctx *ctx) {
    for (int k = 0; k < ctx->n_inputs; k++)
        if (ctx->inputs[k] && !ctx->inputs[k]->data) return false;
    return true;
}

/* Whether the body hands loop-carried value k on as it received it (its
 * output is its input): the value then stays where it is, not copied, and
 * is unchanged for iteration reuse without a comparison. */
static bool passes_through(const korch_graph *body, int k) {
    return 2 + k < body->n_inputs && 1 + k < body->n_outputs && body->outputs[1 + k] == body->inputs[2 + k];
}

/* Runs one iteration from a fresh copy of the body, inferred with this
 * iteration's values as constants, which folds to its outputs: at load (a
 * Loop of constants), or when it runs (a body inferred at every iteration).
 * Nodes whose inputs did not change since the last iteration are not run
 * again (control_reuse.c). */
static korch_status evaluate_iteration(korch_op_ctx *ctx, korch_body_reuse *reuse, const korch_graph *body,
                                       const korch_tensor *in, const bool *input_same, korch_tensor *out) {
    korch_graph *b = NULL;
    KORCH_TRY(korch_body_reuse_fold(ctx, reuse, body, in, input_same, &b));
    korch_status st = KORCH_OK;
    for (int k = 0; k < b->n_outputs && st == KORCH_OK; k++) {
        if (k >= 1 && passes_through(body, k - 1)) continue; /* the caller keeps its input */
        const korch_value *v = &b->values[b->outputs[k]];
        if (!v->is_constant)
            st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                                "its body, inferred with one iteration's values, left output %d unfolded (a value "
                                "past korch's folding limit, or an operator that does not fold)",
                                k);
        else st = korch_tensor_clone(&v->constant, &out[k]);
    }
    return st;
}

/* Which of an iteration's body inputs hold the previous iteration's bytes:
 * never the iteration number; the condition, which is true whenever an
 * iteration runs, from the second on; a carried value compared with
 * `last`, its previous value (no data on the first iteration). */
static void inputs_unchanged(const korch_graph *body, int64_t iter, int n_carried, const korch_tensor *in,
                             const korch_tensor *last, bool *same) {
    same[0] = false;
    same[1] = iter > 0;
    for (int k = 0; k < n_carried; k++)
        same[2 + k] = iter > 0 && (passes_through(body, k) || korch_tensor_same_bytes(&in[2 + k], &last[k]));
}

/* The shape the body gets its iteration number (i = 0) or condition (1)
 * in: a scalar, as ONNX says, or [1] where the body declares it so
 * (paddle2onnx does, and uses them as 1-D Slice bounds; ONNX Runtime
 * accepts it). One element either way. */
korch_shape korch_loop_counter_shape(const korch_graph *body, int i) {
    const korch_value *v = &body->values[body->inputs[i]];
    korch_shape s = {.rank = 0};
    if (v->has_declared_shape && v->declared_shape.rank == 1 && v->declared_shape.dims[0] <= 1 &&
        v->declared_shape.dims[0] != 0)
        s = (korch_shape){.rank = 1, .dims = {1}};
    return s;
}

/* Every input constant: the loop runs now, once, and its outputs become
 * constants. Unlike at run time, values may change shape between
 * iterations, and the body may use the iteration number where korch needs
 * constants (a Slice at i, say). */
static korch_status evaluate_loop(korch_op_ctx *ctx, const korch_graph *body, const loop_shape *ls) {
    int n_in = body->n_inputs, n_out = body->n_outputs;
    int64_t trip = ls->has_m ? ls->m : INT64_MAX;
    int64_t iter = 0;
    uint8_t cond = korch_op_has_input(ctx, 1) ? ((const uint8_t *)ctx->inputs[1]->data)[0] != 0 : 1;
    korch_tensor *in = calloc((size_t)n_in + 1, sizeof *in), *out = calloc((size_t)n_out + 1, sizeof *out);
    korch_tensor *scans = NULL; /* iteration-major: scans[iter * n_scan + k] */
    korch_tensor *last = calloc((size_t)ls->n_carried + 1, sizeof *last); /* the previous iteration's inputs */
    bool *same = calloc((size_t)n_in + 1, sizeof *same);
    korch_body_reuse reuse = {0};
    size_t scan_bytes = 0;
    korch_status st = in && out && last && same ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < ls->n_carried && st == KORCH_OK; k++) st = korch_tensor_clone(ctx->inputs[2 + k], &in[2 + k]);
    for (; st == KORCH_OK && iter < trip && cond; iter++) {
        if (iter >= LOOP_EVAL_MAX_ITERATIONS) {
            st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "evaluated at load, it runs more than %d iterations",
                                LOOP_EVAL_MAX_ITERATIONS);
            break;
        }
        in[0] = (korch_tensor){.dtype = KORCH_DTYPE_INT64, .shape = korch_loop_counter_shape(body, 0), .data = &iter};
        in[1] = (korch_tensor){.dtype = KORCH_DTYPE_BOOL, .shape = korch_loop_counter_shape(body, 1), .data = &cond};
        inputs_unchanged(body, iter, ls->n_carried, in, last, same);
        st = evaluate_iteration(ctx, &reuse, body, in, same, out);
        if (st != KORCH_OK) break;
        cond = ((const uint8_t *)out[0].data)[0] != 0;
        korch_tensor_free(&out[0]);
        for (int k = 0; k < ls->n_carried; k++) {
            if (passes_through(body, k)) continue;
            korch_tensor_free(&last[k]);
            last[k] = in[2 + k];
            in[2 + k] = out[1 + k];
            out[1 + k] = (korch_tensor){0};
        }
        if (ls->n_scan) {
            korch_tensor *grown = realloc(scans, (size_t)(iter + 1) * (size_t)ls->n_scan * sizeof *grown);
            if (!grown) {
                st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            scans = grown;
            for (int k = 0; k < ls->n_scan; k++) {
                scans[iter * ls->n_scan + k] = out[1 + ls->n_carried + k];
                out[1 + ls->n_carried + k] = (korch_tensor){0};
                scan_bytes += korch_tensor_bytes(&scans[iter * ls->n_scan + k]);
            }
            if (scan_bytes > LOOP_EVAL_MAX_BYTES)
                st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "evaluated at load, its scan outputs exceed %zu bytes",
                                    LOOP_EVAL_MAX_BYTES);
        }
    }
    for (int k = 0; k < ls->n_carried && st == KORCH_OK; k++) {
        if (!ctx->outputs[k]) continue;
        korch_op_set_output(ctx, k, in[2 + k].dtype, &in[2 + k].shape);
        st = korch_tensor_alloc(ctx->outputs[k], in[2 + k].dtype, &in[2 + k].shape);
        if (st == KORCH_OK) memcpy(ctx->outputs[k]->data, in[2 + k].data, korch_tensor_bytes(&in[2 + k]));
    }
    for (int k = 0; k < ls->n_scan && st == KORCH_OK; k++) {
        korch_tensor *y = ctx->outputs[ls->n_carried + k];
        if (!y) continue;
        korch_tensor type = iter ? scans[k] : korch_control_output_type(body, 1 + ls->n_carried + k);
        for (int64_t i = 1; i < iter && st == KORCH_OK; i++)
            if (!korch_shape_equal(&scans[i * ls->n_scan + k].shape, &type.shape))
                st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "scan output %d changes shape between iterations", k);
        if (st != KORCH_OK || type.shape.rank + 1 > KORCH_MAX_RANK) {
            if (st == KORCH_OK) st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "scan output %d is too deep", k);
            break;
        }
        korch_shape s = {.rank = type.shape.rank + 1};
        s.dims[0] = iter;
        for (int d = 0; d < type.shape.rank; d++) s.dims[d + 1] = type.shape.dims[d];
        korch_op_set_output(ctx, ls->n_carried + k, type.dtype, &s);
        st = korch_tensor_alloc(y, type.dtype, &s);
        for (int64_t i = 0; i < iter && st == KORCH_OK; i++) {
            size_t bytes = korch_tensor_bytes(&scans[i * ls->n_scan + k]);
            memcpy((char *)y->data + (size_t)i * bytes, scans[i * ls->n_scan + k].data, bytes);
        }
    }
    if (scans)
        for (int64_t i = 0; i < iter * ls->n_scan; i++) korch_tensor_free(&scans[i]);
    free(scans);
    korch_body_reuse_free(&reuse);
    if (last)
        for (int k = 0; k < ls->n_carried; k++) korch_tensor_free(&last[k]);
    free(last);
    free(same);
    if (in)
        for (int k = 2; k < n_in; k++) korch_tensor_free(&in[k]);
    if (out)
        for (int k = 0; k < n_out; k++) korch_tensor_free(&out[k]);
    free(in);
    free(out);
    return st;
}

/* Whether the loop certainly runs its whole trip count: its condition
 * input is absent or a constant true, and the body hands the condition on
 * unchanged (as it is, or through Identity) or folds it to a constant true.
 * Scan outputs are planned for the whole trip count, so a Loop that may
 * stop earlier has scan outputs of a run-time length. */
static bool condition_stays(const korch_op_ctx *ctx, const korch_graph *body) {
    if (korch_op_has_input(ctx, 1)) {
        const korch_tensor *c = ctx->inputs[1];
        if (!c->data || !((const uint8_t *)c->data)[0]) return false;
    }
    int v = body->outputs[0];
    for (int hops = 0; hops < 64; hops++) {
        const korch_value *val = &body->values[v];
        if (v == body->inputs[1]) return true;
        if (val->is_constant)
            return val->constant.dtype == KORCH_DTYPE_BOOL && korch_shape_numel(&val->constant.shape) == 1 &&
                   ((const uint8_t *)val->constant.data)[0];
        if (val->producer < 0) return false;
        const korch_node *p = &body->nodes[val->producer];
        if (strcmp(p->op_type, "Identity") != 0 || p->n_inputs < 1 || p->inputs[0] < 0) return false;
        v = p->inputs[0];
    }
    return false;
}

/* Whether the body, inferred once with the carried values' types, needs
 * values where it has only types (korch_op_require_constant's refusal):
 * tried on a copy, so that the body itself stays as it was for the
 * iteration-by-iteration inference. The error is cleared. */
static bool body_shapes_need_values(korch_op_ctx *ctx, const korch_graph *body, const korch_tensor *formal) {
    korch_graph *trial = NULL;
    if (korch_graph_clone(body, &trial) != KORCH_OK) {
        korch_error_clear();
        return false;
    }
    korch_status st = korch_control_infer(ctx, trial, "body", formal, trial->n_inputs);
    bool values = st == KORCH_ERR_UNSUPPORTED && strstr(korch_last_error(), KORCH_OP_NEEDS_CONSTANT);
    korch_graph_free(trial);
    if (st != KORCH_OK) korch_error_clear();
    return values;
}

static korch_status infer_loop(korch_op_ctx *ctx) {
    korch_graph *body;
    loop_shape ls;
    KORCH_TRY(korch_control_subgraph(ctx, "body", &body));
    KORCH_TRY(loop_shape_of(ctx, body, &ls));
    if (all_inputs_constant(ctx)) return evaluate_loop(ctx, body, &ls);
    korch_tensor *formal = calloc((size_t)body->n_inputs + 1, sizeof *formal);
    if (!formal) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    formal[0] = (korch_tensor){.dtype = KORCH_DTYPE_INT64, .shape = korch_loop_counter_shape(body, 0)};
    formal[1] = (korch_tensor){.dtype = KORCH_DTYPE_BOOL, .shape = korch_loop_counter_shape(body, 1)};
    korch_status st = KORCH_OK;
    for (int k = 0; k < ls.n_carried && st == KORCH_OK; k++) {
        const korch_tensor *v = ctx->inputs[2 + k];
        if (!v) st = korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "loop-carried input %d is empty", k);
        else formal[2 + k] = (korch_tensor){.dtype = v->dtype, .shape = v->shape};
    }
    if (st == KORCH_OK && ls.n_scan == 0 && body_shapes_need_values(ctx, body, formal)) {
        /* inferred at every iteration when it runs (above): planned with the
         * carried values' types; the body is left uninferred */
        for (int k = 0; k < ls.n_carried; k++) korch_op_set_output(ctx, k, formal[2 + k].dtype, &formal[2 + k].shape);
        body->infer_each_iteration = true;
        free(formal);
        return KORCH_OK;
    }
    body->infer_each_iteration = false;
    if (st == KORCH_OK) st = korch_control_infer(ctx, body, "body", formal, body->n_inputs);
    if (st == KORCH_OK) {
        korch_tensor c = korch_control_output_type(body, 0);
        if (c.dtype != KORCH_DTYPE_BOOL || korch_shape_numel(&c.shape) != 1)
            st = korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "the body's first output (cond) must be one bool");
    }
    for (int k = 0; k < ls.n_carried && st == KORCH_OK; k++) {
        korch_tensor out = korch_control_output_type(body, 1 + k);
        char a[96], b[96];
        if (out.dtype != formal[2 + k].dtype || !korch_shape_equal(&out.shape, &formal[2 + k].shape))
            st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                                "loop-carried value %d enters the body as %s %s and leaves it as %s %s; korch plans "
                                "static shapes",
                                k, korch_dtype_name(formal[2 + k].dtype), korch_shape_format(&formal[2 + k].shape, a, sizeof a),
                                korch_dtype_name(out.dtype), korch_shape_format(&out.shape, b, sizeof b));
        else korch_op_set_output(ctx, k, out.dtype, &out.shape);
    }
    if (st == KORCH_OK && ls.n_scan && korch_op_has_input(ctx, 1) && !ctx->inputs[1]->data)
        st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                            "has scan outputs, so their length needs a loop that runs its whole trip count, and its "
                            "condition input \"%s\" " KORCH_OP_NEEDS_CONSTANT,
                            korch_op_input_name(ctx, 1));
    if (st == KORCH_OK && ls.n_scan && !condition_stays(ctx, body))
        st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                            "has scan outputs and a condition that can stop it before its trip count at run time, so "
                            "their length is known only at run time; korch plans static shapes");
    for (int k = 0; k < ls.n_scan && st == KORCH_OK; k++) {
        korch_tensor out = korch_control_output_type(body, 1 + ls.n_carried + k);
        if (ls.m < 0) {
            if (ls.has_m) /* the wording korch uses for every operand that decides a shape */
                st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                                    "has scan outputs, so their length needs the trip count M, and M input \"%s\" "
                                    KORCH_OP_NEEDS_CONSTANT,
                                    korch_op_input_name(ctx, 0));
            else
                st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                                    "has scan outputs but no trip count M, so their length is known only at run "
                                    "time; korch plans static shapes");
            break;
        }
        if (out.shape.rank + 1 > KORCH_MAX_RANK) {
            st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "scan output %d would have rank %d", k, out.shape.rank + 1);
            break;
        }
        korch_shape s = {.rank = out.shape.rank + 1};
        s.dims[0] = ls.m;
        for (int d = 0; d < out.shape.rank; d++) s.dims[d + 1] = out.shape.dims[d];
        korch_op_set_output(ctx, ls.n_carried + k, out.dtype, &s);
    }
    free(formal);
    return st;
}

/* One iteration of a body inferred at every iteration: a fresh copy folds
 * to its outputs, which are checked against the planned carried types. */
static korch_status run_iteration_inferred(korch_op_ctx *ctx, korch_body_reuse *reuse, bool *same,
                                           const korch_graph *body, const loop_shape *ls, int64_t iter,
                                           const korch_tensor *in, korch_tensor *out) {
    korch_op_ctx again = *ctx;
    again.infer_subgraph = ctx->graph ? ctx->graph->infer_subgraph : NULL;
    if (!again.infer_subgraph)
        return korch_op_error(ctx, KORCH_ERR_INTERNAL, "its body is inferred at every iteration, and its graph was "
                                                       "not inferred by the frontend");
    /* after the swap in run_loop, out[1 + k] holds the last iteration's carried inputs */
    inputs_unchanged(body, iter, ls->n_carried, in, out + 1, same);
    for (int k = 0; k < body->n_outputs; k++) korch_tensor_free(&out[k]);
    KORCH_TRY(evaluate_iteration(&again, reuse, body, in, same, out));
    if (out[0].dtype != KORCH_DTYPE_BOOL || korch_tensor_numel(&out[0]) != 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "the body's first output (cond) must be one bool");
    for (int k = 0; k < ls->n_carried; k++) {
        if (passes_through(body, k)) continue;
        const korch_tensor *want = &in[2 + k];
        char a[96], b[96];
        if (out[1 + k].dtype != want->dtype || !korch_shape_equal(&out[1 + k].shape, &want->shape))
            return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                                  "loop-carried value %d leaves iteration %lld as %s %s, planned %s %s; korch plans "
                                  "static shapes",
                                  k, (long long)iter, korch_dtype_name(out[1 + k].dtype),
                                  korch_shape_format(&out[1 + k].shape, a, sizeof a), korch_dtype_name(want->dtype),
                                  korch_shape_format(&want->shape, b, sizeof b));
    }
    return KORCH_OK;
}

static korch_status run_loop(korch_op_ctx *ctx) {
    korch_graph *body;
    loop_shape ls;
    KORCH_TRY(korch_control_subgraph(ctx, "body", &body));
    KORCH_TRY(loop_shape_of(ctx, body, &ls));
    /* a body left uninferred at load: inferred at every iteration */
    bool each_iteration = body->infer_each_iteration;
    int64_t trip = ls.has_m ? ls.m : INT64_MAX;
    bool cond = korch_op_has_input(ctx, 1) ? ((const uint8_t *)ctx->inputs[1]->data)[0] != 0 : true;
    int n_in = body->n_inputs, n_out = body->n_outputs;
    korch_tensor *in = calloc((size_t)n_in + 1, sizeof *in), *out = calloc((size_t)n_out + 1, sizeof *out);
    bool *same = calloc((size_t)n_in + 1, sizeof *same);
    korch_body_reuse reuse = {0};
    int64_t iter = 0;
    uint8_t cond_byte = cond;
    korch_status st = in && out && same ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    if (st != KORCH_OK) goto done;
    in[0] = (korch_tensor){.dtype = KORCH_DTYPE_INT64, .shape = korch_loop_counter_shape(body, 0), .data = &iter};
    in[1] = (korch_tensor){.dtype = KORCH_DTYPE_BOOL, .shape = korch_loop_counter_shape(body, 1), .data = &cond_byte};
    for (int k = 0; k < ls.n_carried && st == KORCH_OK; k++) st = korch_tensor_clone(ctx->inputs[2 + k], &in[2 + k]);
    for (int k = 0; k < n_out && st == KORCH_OK && !each_iteration; k++) {
        korch_tensor type = korch_control_output_type(body, k);
        st = korch_tensor_alloc(&out[k], type.dtype, &type.shape);
    }
    for (; st == KORCH_OK && iter < trip && cond_byte; iter++) {
        if (iter >= LOOP_RUN_MAX_ITERATIONS) {
            st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "ran %lld iterations without stopping; korch stops a Loop there",
                                (long long)LOOP_RUN_MAX_ITERATIONS);
            break;
        }
        st = each_iteration ? run_iteration_inferred(ctx, &reuse, same, body, &ls, iter, in, out)
                            : korch_control_run(ctx, body, in, out);
        if (st != KORCH_OK) break;
        cond_byte = ((const uint8_t *)out[0].data)[0] != 0;
        for (int k = 0; k < ls.n_carried; k++) { /* the outputs are the next inputs: swap buffers */
            if (each_iteration && passes_through(body, k)) continue; /* not copied out: stays */
            korch_tensor t = in[2 + k];
            in[2 + k] = out[1 + k];
            out[1 + k] = t;
        }
        for (int k = 0; k < ls.n_scan; k++) {
            korch_tensor *dst = ctx->outputs[ls.n_carried + k];
            const korch_tensor *src = &out[1 + ls.n_carried + k];
            if (!dst) continue;
            size_t bytes = korch_tensor_bytes(src);
            if (iter >= dst->shape.dims[0]) {
                st = korch_op_error(ctx, KORCH_ERR_INTERNAL, "scan output %d overflows", k);
                break;
            }
            memcpy((char *)dst->data + (size_t)iter * bytes, src->data, bytes);
        }
    }
    if (st == KORCH_OK && ls.n_scan > 0 && iter != ls.m)
        st = korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                            "stopped after %lld iterations, but korch planned its scan outputs for the trip count "
                            "%lld (static shapes)",
                            (long long)iter, (long long)ls.m);
    for (int k = 0; k < ls.n_carried && st == KORCH_OK; k++)
        if (ctx->outputs[k]) memcpy(ctx->outputs[k]->data, in[2 + k].data, korch_tensor_bytes(&in[2 + k]));
done:
    if (in)
        for (int k = 2; k < n_in; k++) korch_tensor_free(&in[k]);
    if (out)
        for (int k = 0; k < n_out; k++) korch_tensor_free(&out[k]);
    korch_body_reuse_free(&reuse);
    free(same);
    free(in);
    free(out);
    return st;
}

const korch_op_def korch_op_def_Loop = {
    .kind = KORCH_OP_Loop, .op_type = "Loop", .opset_min = 1, .opset_max = 18,
    .min_inputs = 0, .max_inputs = 64, .min_outputs = 0, .max_outputs = 64,
    .infer = infer_loop, .run = run_loop,
};

/* If (opsets 1-18, tensor outputs only). An If whose condition is constant
 * at load never gets here: inference replaces it by its branch
 * (frontend/inline_if.c). What remains has a run-time condition; korch plans
 * static shapes, so both branches must give every output the same dtype and
 * shape. The chosen branch runs in the reference executor. */
#include <stdlib.h>
#include <string.h>

#include "korch.h"

#include "ops/control_flow.h"

static korch_status check_condition(korch_op_ctx *ctx) {
    const korch_tensor *c = ctx->inputs[0];
    if (c->dtype != KORCH_DTYPE_BOOL)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "condition is %s, expected bool", korch_dtype_name(c->dtype));
    if (korch_shape_numel(&c->shape) != 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "condition has %lld elements, expected 1",
                              (long long)korch_shape_numel(&c->shape));
    return KORCH_OK;
}

/* A branch that does not infer at these shapes may still be one the
 * condition never takes for them (silero-vad's 8 kHz branch, given 16 kHz
 * frames): like ONNX Runtime, korch accepts the If as long as the other
 * branch infers, and refuses to run the failed branch. */
static korch_status infer_if(korch_op_ctx *ctx) {
    KORCH_TRY(check_condition(ctx));
    korch_graph *br[2];
    static const char *const names[2] = {"then_branch", "else_branch"};
    korch_status st[2];
    for (int b = 0; b < 2; b++) {
        KORCH_TRY(korch_control_subgraph(ctx, names[b], &br[b]));
        if (br[b]->n_outputs != ctx->n_outputs)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s has %d outputs, the node %d", names[b],
                                  br[b]->n_outputs, ctx->n_outputs);
        free(br[b]->unusable);
        br[b]->unusable = NULL;
        st[b] = korch_control_infer(ctx, br[b], names[b], NULL, 0);
        if (st[b] == KORCH_ERR_OUT_OF_MEMORY || st[b] == KORCH_ERR_INTERNAL) return st[b];
        if (st[b] != KORCH_OK && !(br[b]->unusable = strdup(korch_last_error())))
            return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (st[0] != KORCH_OK && st[1] != KORCH_OK)
        return korch_op_error(ctx, st[1], "neither branch can run at these shapes; then_branch: %s; else_branch: %s",
                              br[0]->unusable, br[1]->unusable);
    if (st[0] != KORCH_OK || st[1] != KORCH_OK) {
        korch_error_clear();
        int ok = st[0] == KORCH_OK ? 0 : 1;
        for (int k = 0; k < ctx->n_outputs; k++) {
            korch_tensor t = korch_control_output_type(br[ok], k);
            korch_op_set_output(ctx, k, t.dtype, &t.shape);
        }
        return KORCH_OK;
    }
    for (int k = 0; k < ctx->n_outputs; k++) {
        korch_tensor t = korch_control_output_type(br[0], k), e = korch_control_output_type(br[1], k);
        char a[96], b[96];
        if (t.dtype != e.dtype)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "output %d is %s in then_branch but %s in else_branch",
                                  k, korch_dtype_name(t.dtype), korch_dtype_name(e.dtype));
        if (!korch_shape_equal(&t.shape, &e.shape))
            return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                                  "output %d has shape %s in then_branch but %s in else_branch; korch plans static "
                                  "shapes, so the condition must be known at load (a constant, or computed from "
                                  "shapes), and it depends on a run-time value",
                                  k, korch_shape_format(&t.shape, a, sizeof a), korch_shape_format(&e.shape, b, sizeof b));
        korch_op_set_output(ctx, k, t.dtype, &t.shape);
    }
    return KORCH_OK;
}

static korch_status run_if(korch_op_ctx *ctx) {
    bool cond = ((const uint8_t *)ctx->inputs[0]->data)[0] != 0;
    korch_graph *b;
    KORCH_TRY(korch_control_subgraph(ctx, cond ? "then_branch" : "else_branch", &b));
    if (b->unusable)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "the condition takes the %s, which cannot run at these shapes: %s",
                              cond ? "then_branch" : "else_branch", b->unusable);
    korch_tensor *outs = calloc((size_t)ctx->n_outputs + 1, sizeof *outs);
    if (!outs) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    korch_status st = KORCH_OK;
    for (int k = 0; k < ctx->n_outputs && st == KORCH_OK; k++) {
        if (ctx->outputs[k]) outs[k] = (korch_tensor){.dtype = ctx->outputs[k]->dtype, .shape = ctx->outputs[k]->shape,
                                                      .data = ctx->outputs[k]->data};
        else { /* an omitted output: the branch still computes it */
            korch_tensor type = korch_control_output_type(b, k);
            st = korch_tensor_alloc(&outs[k], type.dtype, &type.shape);
        }
    }
    if (st == KORCH_OK) st = korch_control_run(ctx, b, NULL, outs);
    for (int k = 0; k < ctx->n_outputs; k++) korch_tensor_free(&outs[k]);
    free(outs);
    return st;
}

const korch_op_def korch_op_def_If = {
    .kind = KORCH_OP_If, .op_type = "If", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 64,
    .infer = infer_if, .run = run_if,
};

/* Signal operators. DFT and STFT stay whole, each an opaque primitive run by
 * the reference executor (docs/fission.md, "Opaque primitives"): a transform
 * mixes every point of its axis (or frame) with every other; it could become
 * a MatMul by a constant matrix of rotations, but no model korch targets
 * needs that yet. The windows and MelWeightMatrix are constant tables that
 * shape inference computes, as EyeLike (rules_layout.c). */
#include "fission/rules.h"

KORCH_FISSION_RULE(DFT) {
    return fission_decline(ctx, "DFT mixes every point of its axis (run by the reference executor)");
}

KORCH_FISSION_RULE(STFT) {
    return fission_decline(ctx, "STFT mixes every point of a frame (run by the reference executor)");
}

/* A live node here is one inference could not fold, which stays whole. */
static korch_status folded(korch_fission_ctx *ctx) {
    return fission_decline(ctx, "shape/constant operator on a run-time value (normally folded at load time)");
}

KORCH_FISSION_RULE(HannWindow) { return folded(ctx); }
KORCH_FISSION_RULE(HammingWindow) { return folded(ctx); }
KORCH_FISSION_RULE(BlackmanWindow) { return folded(ctx); }
KORCH_FISSION_RULE(MelWeightMatrix) { return folded(ctx); }

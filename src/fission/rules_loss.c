/* Loss functions: both gather the input at the class each target element
 * names, positions the data gives (as GatherElements, rules_index.c), and
 * are training-time maths that inference graphs do not need fused. Each is
 * one opaque primitive, run by the reference executor (docs/fission.md,
 * "Opaque primitives"). */
#include "fission/rules.h"

KORCH_FISSION_RULE(NegativeLogLikelihoodLoss) {
    return fission_decline(ctx, "NegativeLogLikelihoodLoss reads at the labels' positions "
                                "(run by the reference executor)");
}

KORCH_FISSION_RULE(SoftmaxCrossEntropyLoss) {
    return fission_decline(ctx, "SoftmaxCrossEntropyLoss reads at the labels' positions "
                                "(run by the reference executor)");
}

/* Operators with no decomposition into korch's primitives (yet): each is one
 * opaque primitive, run by the reference executor (docs/fission.md, "Opaque
 * primitives"); the operators around it still fuse. */
#include "fission/rules.h"

/* A window across channels: could become a squared, padded channel sum and
 * elementwise ops later. */
KORCH_FISSION_RULE(LRN) {
    return fission_decline(ctx, "LRN sums over a cross-channel window (run by the reference executor)");
}

KORCH_FISSION_RULE(BitShift) {
    return fission_decline(ctx, "BitShift has no integer shift primitive (run by the reference executor)");
}

KORCH_FISSION_RULE(Det) {
    return fission_decline(ctx, "Det is a factorisation (run by the reference executor)");
}

KORCH_FISSION_RULE(ReverseSequence) {
    return fission_decline(ctx,
                           "ReverseSequence reads at positions that depend on run-time lengths (run by the reference "
                           "executor)");
}

KORCH_FISSION_RULE(MaxUnpool) {
    return fission_decline(ctx, "MaxUnpool writes at data-dependent positions (run by the reference executor)");
}

/* Operators that read or write where their data says: the positions are
 * run-time values, so no index map (ir/indexmap.h) describes them. Each is
 * one opaque primitive, run by the reference executor (docs/fission.md,
 * "Opaque primitives"); the operators around it still fuse. Gather, whose
 * constant-index form is an index map, is in rules_layout.c. */
#include "fission/rules.h"

KORCH_FISSION_RULE(ScatterElements) {
    return fission_decline(ctx, "ScatterElements writes at data-dependent positions (run by the reference executor)");
}

KORCH_FISSION_RULE(Scatter) {
    return fission_decline(ctx, "Scatter writes at data-dependent positions (run by the reference executor)");
}

KORCH_FISSION_RULE(ScatterND) {
    return fission_decline(ctx, "ScatterND writes at data-dependent positions (run by the reference executor)");
}

KORCH_FISSION_RULE(GatherElements) {
    return fission_decline(ctx, "GatherElements reads at data-dependent positions (run by the reference executor)");
}

KORCH_FISSION_RULE(GatherND) {
    return fission_decline(ctx, "GatherND reads at data-dependent positions (run by the reference executor)");
}

/* A sort: which element lands where depends on every value of the row. */
KORCH_FISSION_RULE(TopK) {
    return fission_decline(ctx, "TopK sorts its rows (run by the reference executor)");
}

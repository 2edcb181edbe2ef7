/* Control flow (If, Loop, Scan) stays whole: an opaque primitive, a kernel
 * of its own, whose subgraphs run in the reference executor inside the plan
 * (docs/control-flow.md). An If with a condition known at load never gets
 * here; inference inlined its branch. */
#include "fission/rules.h"

KORCH_FISSION_RULE(If) {
    return fission_decline(ctx, "If with a run-time condition (its branches run in the reference executor, not "
                                "optimized)");
}

KORCH_FISSION_RULE(Loop) {
    return fission_decline(ctx, "Loop (its body runs in the reference executor, not optimized)");
}

KORCH_FISSION_RULE(Scan) {
    return fission_decline(ctx, "Scan (its body runs in the reference executor, not optimized)");
}

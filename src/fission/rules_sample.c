/* Operators that sample an image at positions their data gives: GridSample
 * at the grid's points, RoiAlign inside the boxes of rois. The taps and
 * their weights are run-time values, so no index map (ir/indexmap.h)
 * describes them; each is one opaque primitive, run by the reference
 * executor (docs/fission.md, "Opaque primitives"). */
#include "fission/rules.h"

KORCH_FISSION_RULE(GridSample) {
    return fission_decline(ctx, "GridSample samples at positions the data gives (run by the reference executor)");
}

KORCH_FISSION_RULE(RoiAlign) {
    return fission_decline(ctx, "RoiAlign samples at positions the data gives (run by the reference executor)");
}

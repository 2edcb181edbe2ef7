/* The layout pass: how activations are laid out across a plan
 * (docs/layout.md).
 *
 * Fission produces channels-first (NCHW) convolutions, the ONNX layout, and
 * oneDNN runs those about 10x slower than channels-last or blocked ones.
 * The pass makes every convolution channels-last (korch_prim_linear.
 * channels_last) with explicit transposes around it,
 *
 *     y = conv(x)   ->   y = T_first(conv_nhwc(T_last(x)))
 *
 * then sinks the transposes it created downstream through elementwise,
 * reduce and layout primitives (rewriting constants, cancelling transposes
 * that meet their inverse, collapsing layout chains that only reshape), so
 * that between two convolutions the data stays
 * channels-last and transposes remain only where the graph really changes
 * layout (graph inputs and outputs, matmuls reading a feature map, ...).
 * Those transposes are ordinary layout primitives: the orchestrator pays for
 * them and the code generator fuses them into neighbouring kernels as index
 * maps. The pass ends with the fission clean-ups (constant folding of
 * transposed weights and biases, layout merging, dead code).
 *
 * The pgraph computes the same function before and after (tested by
 * interpreting both on the tiny zoo models, tests/relayout/). */
#ifndef KORCH_RELAYOUT_RELAYOUT_H
#define KORCH_RELAYOUT_RELAYOUT_H

#include <stdbool.h>

#include "ir/pgraph.h"

typedef enum korch_layout_strategy {
    KORCH_LAYOUT_KEEP,          /* leave the graph channels-first */
    KORCH_LAYOUT_CHANNELS_LAST, /* every convolution channels-last, transposes sunk */
} korch_layout_strategy;

typedef struct korch_layout_stats {
    int convs_rewritten;
    int sunk_elementwise, sunk_reduce, sunk_layout;
    int cancelled;
    int collapsed; /* chains of layouts ending in a pass transpose that only reshape */
    int transposes_before, transposes_after; /* live transposes of rank >= 3 on activations */
} korch_layout_stats;

/* The default: channels-last. The CLI's KORCH_LAYOUT=nchw chooses KEEP
 * (docs/cli.md); a plan records the strategy it was made with. */
#define KORCH_LAYOUT_DEFAULT KORCH_LAYOUT_CHANNELS_LAST

/* "nchw"/"keep"/"none" or "nhwc"/"channels_last"/"channels-last"; false
 * for anything else. */
bool korch_layout_strategy_parse(const char *text, korch_layout_strategy *out);
/* For people ("nchw (unchanged)") and for plan files ("nchw",
 * "channels-last", which korch_layout_strategy_parse reads back). */
const char *korch_layout_strategy_name(korch_layout_strategy s);
const char *korch_layout_strategy_token(korch_layout_strategy s);

/* Rewrites pg in place (then compacts it: indices held outside are
 * invalidated). stats may be NULL. */
korch_status korch_layout_pass(korch_pgraph *pg, korch_layout_strategy strategy, korch_layout_stats *stats);

#endif

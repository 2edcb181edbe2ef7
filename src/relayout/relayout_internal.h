/* Internals of the layout pass, shared by relayout.c (driver, rewrite,
 * cancellation) and relayout_sink.c (moving a transpose past a consumer). */
#ifndef KORCH_LAYOUT_LAYOUT_INTERNAL_H
#define KORCH_LAYOUT_LAYOUT_INTERNAL_H

#include "relayout/relayout.h"

typedef struct lp_state {
    korch_pgraph *pg;
    korch_layout_stats *stats;
    /* transposes the pass created (the only ones it sinks), by node index */
    bool *mine;
    int cap_mine;
} lp_state;

/* y = transpose(x, perm), marked as the pass's own; -1 on error. */
int lp_transpose(lp_state *s, int x, const int64_t *perm, int source_node);
/* Every use of `from` (live node inputs, graph outputs) reads `to` instead. */
void lp_replace_uses(korch_pgraph *pg, int from, int to);
/* The perm of a live transpose node of rank >= 2, exactly (false otherwise). */
bool lp_transpose_perm(const korch_pgraph *pg, int node, int64_t *perm);

/* Moves the transpose `tnode` (t = transpose(a, perm)) past its consumer
 * `consumer` when that costs no new data movement. Returns 1 when it did,
 * 0 when not applicable, -1 on error. */
int lp_sink(lp_state *s, int tnode, int consumer);

#endif

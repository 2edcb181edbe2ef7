/* Internal to the clean-up passes: value replacement and traversal. */
#ifndef KORCH_FISSION_CLEANUP_INTERNAL_H
#define KORCH_FISSION_CLEANUP_INTERNAL_H

#include "fission/fission.h"

/* A pass replaces values by equivalent ones through a table (value -> value
 * or -1). Inputs of each node are rewritten just before the node is visited
 * (passes walk in topological order), graph outputs at the end. */
typedef struct korch_value_repl {
    int *to;
    int n;
} korch_value_repl;

korch_status korch_value_repl_init(korch_value_repl *r, const korch_pgraph *pg);
void korch_value_repl_free(korch_value_repl *r);
int korch_value_repl_resolve(const korch_value_repl *r, int v);
/* Rewrites the inputs of node `ni`. */
void korch_value_repl_node(const korch_value_repl *r, korch_pgraph *pg, int ni);
/* Rewrites every live node's inputs and the graph outputs. */
void korch_value_repl_apply(const korch_value_repl *r, korch_pgraph *pg);

/* Topological order of live nodes (caller frees). */
korch_status korch_cleanup_order(const korch_pgraph *pg, int **order, int *count);

/* Per-value flag: the value is a graph output. (caller frees) */
bool *korch_cleanup_output_flags(const korch_pgraph *pg);

/* Use counts of every value by live nodes and graph outputs (caller frees). */
int *korch_cleanup_use_counts(const korch_pgraph *pg);

#endif

/* Node sets of a primitive graph: consumers and liveness, a set's inputs and
 * outputs, the kernel spec every backend implements, and the signatures
 * (kernel and whole graph) that key profiles and check plans. Graph
 * utilities shared by candidates, strategies, backends and plans. */
#ifndef KORCH_IR_NODESET_H
#define KORCH_IR_NODESET_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/pgraph.h"

/* Who reads what, and which nodes matter at all. */
typedef struct korch_pgraph_uses {
    int n_values, n_nodes;
    int *consumer_start; /* consumers of value v: consumers[consumer_start[v] .. consumer_start[v + 1]) */
    int *consumers; /* live node indices, each listed once per value */
    bool *live; /* node is live and reaches a graph output */
} korch_pgraph_uses;

korch_status korch_pgraph_uses_build(const korch_pgraph *pg, korch_pgraph_uses *uses);
void korch_pgraph_uses_free(korch_pgraph_uses *uses);

/* A node set's inputs (values read from outside it, constants included, in
 * first-use order) and outputs (values it makes that are read outside it or
 * are graph outputs), the rule for candidates and plan kernels alike.
 * inputs and outputs need room for 8 * n_nodes entries each; in_set is
 * scratch of pg->n_nodes bools, all false, and is left all false. */
void korch_node_set_io(const korch_pgraph *pg, const korch_pgraph_uses *uses, int n_nodes, const int *nodes,
                       bool *in_set, int *inputs, int *n_inputs, int *outputs, int *n_outputs);

/* What to implement: a convex, connected set of primitives of `pg`. */
typedef struct korch_kernel_spec {
    const korch_pgraph *pg;
    int n_nodes;
    const int *nodes;   /* pnode indices in topological order */
    int n_inputs;
    const int *inputs;  /* pvalues read from outside the kernel (constants included) */
    int n_outputs;
    const int *outputs; /* pvalues written for use outside the kernel */
} korch_kernel_spec;

/* ---- extract.c ------------------------------------------------------------ */

/* Called for each node before it is copied: sets *y to the value of `sub`
 * that stands for the node's output (built from `ins`, the node's inputs
 * in sub) to replace the copy, or leaves it at -1 to copy the node as is;
 * an error stops the extraction with that status. */
typedef korch_status (*korch_extract_rewrite)(void *user, korch_pgraph *sub, const korch_pgraph *pg,
                                              const korch_pnode *node, const int *ins, int *y);
/* The spec's nodes as a primitive graph of their own: value i of *out is
 * spec input i (non-constant ones become graph inputs in order; constants
 * stay constants, borrowed from spec->pg, which must outlive *out); spec
 * outputs are its graph outputs in order. rewrite may be NULL. */
korch_status korch_pgraph_extract(const korch_kernel_spec *spec, korch_extract_rewrite rewrite, void *user,
                                  korch_pgraph **out);

/* Canonical signature of a kernel: its structure, parameters, shapes and
 * dtypes with every graph-specific index replaced by a position inside the
 * kernel (ir/signature.c). Equal signatures compile to the same code. */
uint64_t korch_kernel_signature(const korch_kernel_spec *spec);
/* Structural hash of a whole pgraph (kinds, parameters, wiring, shapes,
 * dtypes, graph inputs and outputs): plans check it on load. */
uint64_t korch_pgraph_hash(const korch_pgraph *pg);

#endif

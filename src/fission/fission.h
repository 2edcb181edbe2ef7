/* Operator fission: an inferred, constant-folded op graph (frontend output)
 * becomes a primitive graph (pgraph.h), then clean-up passes simplify it.
 *
 *     korch_pgraph *pg = NULL;
 *     korch_fission_stats stats;
 *     KORCH_TRY(korch_fission(graph, &pg, &stats));   // fission + clean-ups
 *     ... korch_pgraph_interpret(pg, inputs, outputs) ...
 *     korch_pgraph_free(pg);                            // before the graph
 *
 * Every operator of the op list has a fission rule (fission_table.c, generated
 * from KORCH_OP_LIST). A rule may decline with a reason; the operator then
 * becomes an opaque primitive (docs/fission.md lists every such case).
 *
 * The pgraph's inputs and outputs correspond 1:1, in order, to the op graph's
 * inputs and outputs; every value equal to an op-graph value records it in
 * source_value, and every node its op-graph node in source_node. */
#ifndef KORCH_FISSION_FISSION_H
#define KORCH_FISSION_FISSION_H

#include "ir/pgraph.h"
#include "ops/op.h"

#define KORCH_FISSION_MAX_PASSES 24

typedef struct korch_fission_pass_stat {
    const char *name; /* static */
    int before, after; /* live primitive counts */
} korch_fission_pass_stat;

typedef struct korch_fission_stats {
    int op_nodes;                  /* live op-graph nodes */
    int op_count[KORCH_OP_COUNT];  /* live op-graph nodes per operator */
    int opaque_per_op[KORCH_OP_COUNT];
    /* primitives attributed to each operator (by source_node): right after
     * fission and after the clean-ups. Primitives that clean-ups create from
     * several sources (e.g. a merged transpose) count under their first. */
    int fissioned_per_op[KORCH_OP_COUNT];
    int prims_per_op[KORCH_OP_COUNT];
    int fissioned_per_kind[KORCH_PRIM_KIND_COUNT];
    int prims_per_kind[KORCH_PRIM_KIND_COUNT];
    int fissioned;                 /* primitives right after fission */
    int prims;                     /* primitives after the clean-ups */
    int n_passes;
    korch_fission_pass_stat passes[KORCH_FISSION_MAX_PASSES];
} korch_fission_stats;

typedef struct korch_cleanup_options {
    bool constant_propagation;
    bool layout_simplification;
    bool common_subexpressions;
    bool dead_code;
    /* Constant propagation folds a node only if its output is at most this
     * many bytes or no larger than its inputs together (so broadcasts of
     * constants do not blow up the model). */
    int64_t fold_max_bytes;
} korch_cleanup_options;

korch_cleanup_options korch_cleanup_options_default(void);

/* Fission followed by the default clean-ups. `stats` may be NULL. The op
 * graph must outlive the pgraph. */
korch_status korch_fission(const korch_graph *g, korch_pgraph **out, korch_fission_stats *stats);

/* Fission alone (every rule applied, no clean-up). */
korch_status korch_fission_raw(const korch_graph *g, korch_pgraph **out, korch_fission_stats *stats);

/* Clean-up passes, repeated until nothing changes; appends to stats->passes
 * (stats may be NULL). Compacts the graph at the end. */
korch_status korch_pgraph_cleanup(korch_pgraph *pg, const korch_cleanup_options *options,
                                  korch_fission_stats *stats);

/* Individual passes; each returns the number of nodes it removed or
 * rewrote in *changed. */
korch_status korch_cleanup_constants(korch_pgraph *pg, int64_t fold_max_bytes, int *changed);
korch_status korch_cleanup_layouts(korch_pgraph *pg, int *changed);
korch_status korch_cleanup_cse(korch_pgraph *pg, int *changed);
korch_status korch_cleanup_dead_code(korch_pgraph *pg, int *changed);

/* A convolution whose source is a dequantization (CAST of an 8-bit tensor
 * -> [SUB] -> MUL) read by others too gets a copy of its own, so that an
 * int8 kernel can hold it (cleanup_dequant.c). After the last clean-up:
 * common-subexpression elimination would merge the copies again. */
korch_status korch_pgraph_split_dequant(korch_pgraph *pg, int *changed);

/* Every pgraph output is produced by a node of its own (a COPY is inserted
 * for outputs that are graph inputs, constants, or another output). */
korch_status korch_pgraph_finalize_outputs(korch_pgraph *pg);

/* Fills the per-kind and per-operator counts of the current graph into
 * stats (prims_* fields). */
void korch_fission_count(const korch_pgraph *pg, korch_fission_stats *stats, bool after_cleanup);

/* Prints the stats as `korch fission --stats` does. */
void korch_fission_stats_print(const korch_pgraph *pg, const korch_fission_stats *stats, void *file /* FILE* */);

#endif

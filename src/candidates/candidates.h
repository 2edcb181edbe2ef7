/* Candidate kernels: the sets of primitives that could each become one kernel.
 *
 * A candidate is a convex, connected set of live pgraph nodes with at most one
 * linear primitive; opaque nodes are always singletons. Its inputs are the
 * values it reads from outside, its outputs the values it produces that are
 * read outside it or are graph outputs (so a candidate may have several).
 *
 * To keep counts bounded the graph is first cut into partitions: contiguous
 * segments of one topological order, chosen at narrow cuts by a dynamic
 * program (see partition.c). A segment of a topological order is convex, so
 * convexity inside a partition is convexity in the whole graph, and every
 * partition can be orchestrated on its own (docs/orchestration.md).
 * Inside a partition, nodes are numbered 0..n-1 in topological order and a set
 * of nodes is a 64-bit mask.
 *
 *     korch_candidates_build   partition + enumerate (structure only)
 *     orchestrate/phase1_profile.c    latencies, with pruning by a lower bound
 *     orchestrate/blp.c        the choice
 */
#ifndef KORCH_CANDIDATES_CANDIDATES_H
#define KORCH_CANDIDATES_CANDIDATES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"
#include "ir/nodeset.h"
#include "ir/pgraph.h"

#define KORCH_PARTITION_MAX_NODES 64

typedef uint64_t korch_nodemask; /* bit i: the partition's i-th node */

typedef struct korch_partition {
    int n_nodes;
    int nodes[KORCH_PARTITION_MAX_NODES]; /* pnode indices, topological */
    korch_nodemask pred[KORCH_PARTITION_MAX_NODES]; /* direct predecessors inside */
    korch_nodemask succ[KORCH_PARTITION_MAX_NODES];
    korch_nodemask anc[KORCH_PARTITION_MAX_NODES]; /* strict ancestors inside */
    korch_nodemask desc[KORCH_PARTITION_MAX_NODES];
    int cut_width; /* values crossing the cut after this partition */
} korch_partition;

typedef enum korch_reject_reason {
    KORCH_REJECT_NOT_CONVEX, /* a path leaves the set and comes back */
    KORCH_REJECT_TOO_BIG, /* more nodes than the size cap */
    KORCH_REJECT_TWO_LINEAR, /* more than one linear primitive */
    KORCH_REJECT_OPAQUE, /* opaque nodes are kernels of their own */
    KORCH_REJECT_UNSUPPORTED, /* the backend cannot implement it */
    KORCH_REJECT_SET_CAP, /* the partition's enumeration budget ran out */
    KORCH_REJECT_BOUND, /* cannot beat its own split (lower bound) */
    KORCH_REJECT_PROFILE, /* the backend failed to build or time it */
    KORCH_REJECT_WRONG, /* its outputs differ from the interpreter's (src/verify) */
    KORCH_REJECT_COUNT
} korch_reject_reason;

const char *korch_reject_reason_name(korch_reject_reason r);

typedef enum korch_candidate_origin {
    KORCH_ORIGIN_SINGLETON,
    KORCH_ORIGIN_ENUMERATED,
    KORCH_ORIGIN_FORCED, /* a group another strategy asked for (greedy) */
} korch_candidate_origin;

typedef struct korch_candidate {
    int partition;
    korch_nodemask mask;
    korch_candidate_origin origin;
    bool forced; /* also a requested group: never pruned */
    int n_nodes;
    int *nodes; /* pnode indices, topological (one allocation with inputs, outputs) */
    int n_inputs;
    int *inputs; /* external values read, constants included, first-use order */
    int n_outputs;
    int *outputs; /* values read outside or graph outputs */
    korch_backend_kind backend;
    uint64_t signature; /* structure + shapes; equal signatures time the same */
    double lower_bound_ms;
    /* filled by profiling */
    bool profiled;
    bool rejected; /* pruned or failed: not a variable of the program */
    korch_reject_reason reject_reason;
    double latency_ms;
    bool untuned; /* only a default schedule was timed: tuning may lower latency_ms */
    bool provisional; /* latency_ms was measured while the machine was disturbed (an upper bound) */
    bool tune_tried; /* tuning was asked for (whatever came of it) */
    char schedule[256];
    char impl[160];
    char key[48]; /* the backend's profile database key (korch_profile_result.key) */
    /* verification (src/verify): the verdict of (key, schedule) */
    int verdict; /* korch_verdict */
    double verify_ratio; /* worst error / tolerance */
} korch_candidate;

typedef struct korch_partition_stats {
    int nodes;
    int size_cap; /* the size cap this partition ended up with */
    long sets; /* convex connected sets visited */
    int candidates; /* candidates created */
    int kept; /* candidates that are program variables */
    long rejected[KORCH_REJECT_COUNT];
} korch_partition_stats;

/* Answers "can this backend implement this kernel?" (korch_backend_supports
 * in production, a fake in tests). */
typedef bool (*korch_supports_fn)(void *user, korch_backend_kind kind, const korch_kernel_spec *spec, char *reason,
                                  size_t size);

typedef struct korch_candidate_options {
    int max_kernel_nodes; /* size cap of enumerated candidates (forced groups may be larger) */
    int max_partition_nodes; /* <= KORCH_PARTITION_MAX_NODES */
    long max_sets_per_partition; /* enumeration budget; the size cap shrinks to fit */
    bool enumerate; /* false: singletons and forced groups only */
    /* Optional groups to keep whole: group_of[node] is a group id or -1. The
     * partitioner never cuts a group and each group becomes a forced
     * candidate. Groups must be convex and single-output (greedy's are). */
    const int *group_of;
    korch_supports_fn supports;
    void *supports_user;
    /* -1: the backend follows from the content (korch_candidate_backend_for);
     * otherwise every candidate uses this backend (tests, debugging) */
    int force_backend;
} korch_candidate_options;

korch_candidate_options korch_candidate_options_default(void);

/* Why a backend refused candidates: distinct reasons (the text after the
 * node it names) with counts, so the statistics say what was not fused. */
#define KORCH_REFUSAL_KINDS 24
typedef struct korch_refusal {
    char text[120];
    long count;
} korch_refusal;

typedef struct korch_candidate_set {
    const korch_pgraph *pg;
    korch_pgraph_uses uses;
    int n_partitions;
    korch_partition *partitions;
    korch_partition_stats *stats;
    int *partition_of; /* per pnode: partition index or -1 (dead) */
    int *local_of; /* per pnode: index inside its partition */
    int n_candidates, cap_candidates;
    korch_candidate *candidates;
    struct korch_candidate_index *index; /* (partition, mask) -> candidate */
    int force_backend; /* from the options */
    bool *in_set; /* scratch per pnode, all false between calls */
    int n_refusals;
    korch_refusal refusals[KORCH_REFUSAL_KINDS + 1]; /* the last slot collects "other reasons" */
    long ref_fallbacks; /* single primitives no real backend implements: they run on REF */
} korch_candidate_set;

/* Counts a backend's refusal reason (see korch_refusal). */
void korch_candidates_note_refusal(korch_candidate_set *set, const char *reason);

korch_status korch_candidates_build(const korch_pgraph *pg, const korch_candidate_options *options,
                                    korch_candidate_set **out);
void korch_candidates_free(korch_candidate_set *set);

/* The kernel spec of a candidate (points into the candidate). */
korch_kernel_spec korch_candidate_spec(const korch_candidate_set *set, const korch_candidate *c);

/* Which backend implements a set of nodes: REF for opaque, DNNL with a linear
 * primitive, CGEN otherwise; force_backend >= 0 overrides. */
korch_backend_kind korch_candidate_backend_for(const korch_pgraph *pg, int n, const int *nodes, int force_backend);
/* The backend that may also implement candidate c, timed beside its own
 * one (phase 1 keeps the faster): the code generator for oneDNN candidates
 * whose linear primitives are all grouped convolutions, channels-first or
 * channels-last with the layout primitive that feeds them inside c (it
 * computes the depthwise ones as windows, docs/codegen.md); -1: none. */
int korch_candidate_second_backend(const korch_pgraph *pg, const korch_candidate *c);

/* Values the partition must produce: read by later partitions or graph
 * outputs. Returns the count written to out (capacity cap). */
int korch_partition_required(const korch_candidate_set *set, int p, int *out, int cap);

/* Adds one candidate for the given nodes of partition p (a mask). Used by
 * the builder and by tests; returns its index, or -1 with the error set. */
int korch_candidate_add(korch_candidate_set *set, int p, korch_nodemask mask, korch_candidate_origin origin);
/* The spec of a node set without creating a candidate; buf holds
 * korch_candidate_scratch_ints(popcount(mask)) ints and backs the spec. */
korch_kernel_spec korch_candidate_describe(korch_candidate_set *set, int p, korch_nodemask mask, int *buf);
size_t korch_candidate_scratch_ints(int n_nodes);
/* Index of the candidate with this mask in partition p, or -1. */
int korch_candidate_find(const korch_candidate_set *set, int p, korch_nodemask mask);

/* ---- partitioning (partition.c) ---------------------------------------- */

/* Topological order of live nodes in which every group is contiguous, cut
 * into partitions at narrow cuts. Fills set->partitions, partition_of,
 * local_of and the reachability masks. */
korch_status korch_partition_graph(korch_candidate_set *set, const korch_candidate_options *options);

/* ---- enumeration (enumerate.c) ----------------------------------------- */

korch_status korch_enumerate_partition(korch_candidate_set *set, int p, const korch_candidate_options *options);

/* quantizer.c: the nodes fission made of a QuantizeLinear reading value v
 * alone (DIV, EQUAL, WHERE, ROUND, [ADD], CLIP, CAST), written to nodes
 * (room for 8); their count, or 0 when v is not read by exactly such a
 * chain. */
int korch_quantizer_tail(const korch_pgraph *pg, const korch_pgraph_uses *u, int v, int *nodes);

/* true when the mask is convex inside partition p */
bool korch_mask_is_convex(const korch_partition *part, korch_nodemask mask);
bool korch_mask_is_connected(const korch_partition *part, korch_nodemask mask);
/* The connected component (edges in either direction, inside mask) of the
 * lowest node of mask; 0 for an empty mask. */
korch_nodemask korch_mask_component(const korch_partition *part, korch_nodemask mask);

/* ---- bounds and signatures (bound.c, signature.c) ---------------------- */

/* Machine constants for the roofline bound; optimistic on purpose so that the
 * bound stays below every real latency. */
typedef struct korch_machine_model {
    double peak_gflops; /* FP32 FMA peak, all threads */
    double cache_gbps; /* bandwidth when the working set fits in cache */
    double dram_gbps; /* bandwidth beyond */
    double cache_bytes; /* working set that still counts as cached */
} korch_machine_model;

korch_machine_model korch_machine_model_default(int threads);

/* max(flops / peak, memory time) in ms, where the memory time moves the
 * candidate's inputs and outputs once each: up to cache_bytes at cache
 * bandwidth, the rest at DRAM bandwidth. */
double korch_candidate_lower_bound_ms(const korch_candidate_set *set, const korch_candidate *c,
                                      const korch_machine_model *machine);
double korch_kernel_lower_bound_ms(const korch_kernel_spec *spec, const korch_machine_model *machine);
double korch_candidate_flops(const korch_candidate_set *set, const korch_candidate *c);

uint64_t korch_candidate_signature(const korch_candidate_set *set, const korch_candidate *c);
/* Prints per-partition counts and rejection reasons. */
void korch_candidates_report(const korch_candidate_set *set, FILE *out);

#endif

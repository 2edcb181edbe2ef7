/* Where bf16 pays (docs/precision.md, "Where bf16 pays").
 *
 * --precision bf16 trades accuracy for speed, and the trade is not the same
 * for every linear primitive: a large convolution runs about twice as fast
 * on bfloat16 dot products, while a small or memory-bound one (a depthwise
 * convolution, a 1x1 convolution over a few channels, a recurrent layer's
 * small products) runs no faster and still rounds its operands. So the
 * precision is chosen per primitive, by measurement: each linear primitive's
 * kernel alone is timed in bf16 and in float32 (every backend that
 * implements it: the generated float32 depthwise convolution competes too),
 * and the primitive stays bf16 only where that is at least
 * KORCH_BF16_MIN_GAIN faster. The timings are ordinary profiles (the
 * database keeps them), so optimising again from the same database makes
 * the same choice.
 *
 * The bf16 timing is of the kernel as the bf16 graph has it: an operand
 * that only bf16 primitives read arrives in bfloat16 (its precision cast
 * belongs to the producer), so no conversion pass is charged to it; the
 * float32 timing reads the float32 value. A primitive the choice keeps in
 * float32 is unmarked, and the precision casts are placed again for the
 * marks that remain (korch_pgraph_set_precision_except); the plan records
 * the kept primitives (the fission line's fp32-linear=). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "ir/nodeset.h"
#include "orchestrate/orchestrate.h"

/* bf16 must take at most this fraction of the float32 time: it costs
 * accuracy, so a tie (within the profiles' noise of a few per cent) goes to
 * float32 */
#define KORCH_BF16_MIN_GAIN 0.9
#define CHUNK 32

typedef struct one_kernel {
    int node;
    int inputs[8], outputs[8], n_inputs, n_outputs;
    double ms[2]; /* best over backends: [0] bf16, [1] float32; INFINITY: none */
} one_kernel;

static korch_kernel_spec spec_of(const korch_pgraph *pg, const one_kernel *k) {
    return (korch_kernel_spec){.pg = pg, .n_nodes = 1, .nodes = &k->node, .n_inputs = k->n_inputs,
                               .inputs = k->inputs, .n_outputs = k->n_outputs, .outputs = k->outputs};
}

/* Times every kernel of ks (its io set for pg as it is now) on every backend
 * that implements it, keeping the fastest in ms[slot]. */
static korch_status time_all(const korch_pgraph *pg, one_kernel *ks, int n, int slot,
                             const korch_kernel_oracle *oracle) {
    korch_pgraph_uses uses;
    KORCH_TRY(korch_pgraph_uses_build(pg, &uses));
    bool *in_set = calloc((size_t)pg->n_nodes + 1, sizeof *in_set);
    korch_kernel_spec *specs = malloc(CHUNK * sizeof *specs);
    korch_profile_result *results = malloc(CHUNK * sizeof *results);
    int *which = malloc(CHUNK * sizeof *which);
    korch_status st = KORCH_OK;
    if (!in_set || !specs || !results || !which) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "precision choice: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        korch_node_set_io(pg, &uses, 1, &ks[i].node, in_set, ks[i].inputs, &ks[i].n_inputs, ks[i].outputs,
                          &ks[i].n_outputs);
        ks[i].ms[slot] = INFINITY;
    }
    for (int kind = 0; kind < KORCH_BACKEND_COUNT && st == KORCH_OK; kind++) {
        if (kind == KORCH_BACKEND_REF) continue; /* the interpreter: never the faster */
        for (int first = 0; first < n && st == KORCH_OK;) {
            int count = 0;
            char reason[256];
            for (; first < n && count < CHUNK; first++) {
                korch_kernel_spec s = spec_of(pg, &ks[first]);
                if (oracle->supports && !oracle->supports(oracle->user, (korch_backend_kind)kind, &s, reason,
                                                          sizeof reason))
                    continue;
                specs[count] = s;
                which[count++] = first;
            }
            if (count == 0) continue;
            st = oracle->profile(oracle->user, (korch_backend_kind)kind, specs, count, 0, true, results);
            for (int j = 0; j < count && st == KORCH_OK; j++)
                if (results[j].status == KORCH_OK && results[j].latency_ms < ks[which[j]].ms[slot])
                    ks[which[j]].ms[slot] = results[j].latency_ms;
        }
    }
done:
    free(in_set);
    free(specs);
    free(results);
    free(which);
    korch_pgraph_uses_free(&uses);
    return st;
}

/* The float32 twin of each primitive of ks, in place: unmarked, and reading
 * the float32 value where its operand was stored in bfloat16. undo holds
 * what to restore (3 ints per kernel). */
static void to_fp32(korch_pgraph *pg, const one_kernel *ks, int n, int *undo) {
    for (int i = 0; i < n; i++) {
        korch_pnode *node = &pg->nodes[ks[i].node];
        for (int k = 0; k < 2; k++) {
            int v = node->inputs[k];
            undo[3 * i + k] = v;
            int prod = v >= 0 ? pg->values[v].producer : -1;
            if (prod >= 0 && korch_pnode_is_precision_cast(pg, prod)) node->inputs[k] = pg->nodes[prod].inputs[0];
        }
        undo[3 * i + 2] = node->u.linear.bf16;
        node->u.linear.bf16 = false;
    }
}

static void restore(korch_pgraph *pg, const one_kernel *ks, int n, const int *undo) {
    for (int i = 0; i < n; i++) {
        korch_pnode *node = &pg->nodes[ks[i].node];
        node->inputs[0] = undo[3 * i];
        node->inputs[1] = undo[3 * i + 1];
        node->u.linear.bf16 = undo[3 * i + 2] != 0;
    }
}

/* (its operands may be precision casts' bfloat16 outputs: not "float linear") */
static bool marked(const korch_pgraph *pg, int i) {
    const korch_pnode *n = &pg->nodes[i];
    return !n->dead && n->kind == KORCH_PRIM_LINEAR && n->u.linear.bf16;
}

korch_status korch_choose_linear_precision(korch_pgraph *pg, const korch_kernel_oracle *oracle, FILE *log) {
    int n = 0;
    for (int i = 0; i < pg->n_nodes; i++) n += marked(pg, i);
    if (n == 0) return KORCH_OK;
    double t0 = korch_now_s();
    one_kernel *ks = calloc((size_t)n, sizeof *ks);
    int *undo = malloc((size_t)n * 3 * sizeof *undo);
    int *keep = malloc((size_t)n * sizeof *keep);
    korch_status st = KORCH_OK;
    if (!ks || !undo || !keep) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "precision choice: out of memory");
        goto done;
    }
    n = 0;
    for (int i = 0; i < pg->n_nodes; i++)
        if (marked(pg, i)) ks[n++].node = i;
    if (log) {
        fprintf(log, "precision: timing %d linear primitive%s alone in bf16 and in float32 (bf16 kept where it "
                     "takes at most %.0f%% of the float32 time)\n",
                n, n == 1 ? "" : "s", 100 * KORCH_BF16_MIN_GAIN);
        fflush(log);
    }
    st = time_all(pg, ks, n, 0, oracle);
    if (st == KORCH_OK) {
        to_fp32(pg, ks, n, undo);
        st = time_all(pg, ks, n, 1, oracle);
        restore(pg, ks, n, undo);
    }
    if (st != KORCH_OK) goto done;
    int n_keep = 0;
    double bf16_ms = 0, fp32_ms = 0, chosen_ms = 0;
    for (int i = 0; i < n; i++) {
        double b = ks[i].ms[0], f = ks[i].ms[1];
        /* unmeasurable in float32: nothing to weigh bf16 against */
        bool fp32 = isfinite(f) && !(b <= KORCH_BF16_MIN_GAIN * f);
        if (fp32) keep[n_keep++] = ks[i].node;
        if (isfinite(b) && isfinite(f)) {
            bf16_ms += b;
            fp32_ms += f;
            chosen_ms += fp32 ? f : b;
        }
    }
    st = korch_pgraph_set_precision_except(pg, KORCH_PRECISION_BF16, keep, n_keep);
    if (st != KORCH_OK || !log) goto done;
    fprintf(log,
            "precision: %d of %d linear primitives in bf16, %d kept in float32 (alone: all bf16 %.3f ms, all "
            "float32 %.3f ms, as chosen %.3f ms; %.1f s)\n",
            n - n_keep, n, n_keep, bf16_ms, fp32_ms, chosen_ms, korch_now_s() - t0);
    for (int i = 0, shown = 0; i < n; i++) {
        if (pg->nodes[ks[i].node].u.linear.bf16) continue;
        if (shown++ == 12) {
            fprintf(log, "  ... and %d more\n", n_keep - 12);
            break;
        }
        char dims[96];
        const korch_pvalue *out = &pg->values[pg->nodes[ks[i].node].outputs[0]];
        fprintf(log, "  float32: primitive %d (%s, output %s): bf16 %.4f ms, float32 %.4f ms\n", ks[i].node,
                korch_prim_kind_name(pg->nodes[ks[i].node].kind), korch_shape_format(&out->shape, dims, sizeof dims),
                ks[i].ms[0], ks[i].ms[1]);
    }
done:
    free(ks);
    free(undo);
    free(keep);
    return st;
}

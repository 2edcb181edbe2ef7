/* Property test: random small memory-bound subgraphs (random shapes and
 * broadcasts, reductions over random axes, transposes, slices, pads,
 * reshapes, concats, several outputs), each compiled as ONE fused kernel
 * under several schedules (random ones included) and compared with the
 * interpreter. Kernels are built in batches, many per translation unit.
 *
 * KORCH_PROPERTY_CASES overrides the number of graphs (default 520);
 * KORCH_PROPERTY_SEED the seed. */
#include <string.h>

#include "backend/cgen/cgen.h"
#include "cgen_check.h"

#define BATCH 65

typedef struct gen {
    korch_pgraph *pg;
    int vals[64];
    int n;
} gen;

static korch_shape rand_shape(void) {
    korch_shape s = {.rank = cc_int(1, 4)};
    for (int d = 0; d < s.rank; d++) s.dims[d] = cc_int(1, 7);
    return s;
}

static int add_input_like(gen *g, const korch_shape *like) {
    korch_shape s = *like;
    for (int d = 0; d < s.rank; d++)
        if (cc_int(0, 3) == 0) s.dims[d] = 1; /* broadcast */
    if (s.rank > 1 && cc_int(0, 4) == 0) {   /* fewer leading dims */
        memmove(s.dims, s.dims + 1, (size_t)(s.rank - 1) * sizeof s.dims[0]);
        s.rank--;
    }
    return cc_input(g->pg, KORCH_DTYPE_FLOAT32, s.rank, s.dims);
}

static int layout_op(gen *g, int x) {
    const korch_shape *in = &g->pg->values[x].shape;
    int r = in->rank;
    korch_index_map m = cc_map(r);
    korch_shape o = *in;
    int kind = cc_int(0, 4);
    korch_layout_tag tag = KORCH_LAYOUT_GENERIC;
    double pad = 0;
    if (kind == 0 && r >= 2) { /* transpose: random permutation */
        int perm[KORCH_MAX_RANK];
        for (int i = 0; i < r; i++) perm[i] = i;
        for (int i = r - 1; i > 0; i--) {
            int j = cc_int(0, i), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int i = 0; i < r; i++) {
            o.dims[i] = in->dims[perm[i]];
            m.terms[perm[i]].coef[i] = 1;
        }
        tag = KORCH_LAYOUT_TRANSPOSE;
    } else if (kind == 1) { /* slice one axis with a step (maybe negative) */
        int a = cc_int(0, r - 1);
        for (int i = 0; i < r; i++) m.terms[i].coef[i] = 1;
        int64_t n = in->dims[a], step = cc_int(1, 2) * (cc_int(0, 1) ? 1 : -1);
        int64_t len = (n + (step > 0 ? step : -step) - 1) / (step > 0 ? step : -step);
        o.dims[a] = len;
        m.terms[a].coef[a] = step;
        m.terms[a].offset = step > 0 ? 0 : n - 1;
        tag = KORCH_LAYOUT_SLICE;
    } else if (kind == 2) { /* constant pad on one axis */
        int a = cc_int(0, r - 1);
        for (int i = 0; i < r; i++) m.terms[i].coef[i] = 1;
        int64_t before = cc_int(0, 2), after = cc_int(0, 2);
        o.dims[a] = in->dims[a] + before + after;
        m.terms[a].offset = -before;
        m.may_be_out_of_bounds = true;
        pad = cc_uniform(-1, 1);
        tag = KORCH_LAYOUT_PAD;
    } else if (kind == 3 && r >= 2) { /* reshape: merge the last two dims (div/mod) */
        o.rank = r - 1;
        o.dims[r - 2] = in->dims[r - 2] * in->dims[r - 1];
        for (int i = 0; i < r - 2; i++) m.terms[i].coef[i] = 1;
        m.terms[r - 2].coef[r - 2] = 1, m.terms[r - 2].div = in->dims[r - 1];
        m.terms[r - 1].coef[r - 2] = 1, m.terms[r - 1].mod = in->dims[r - 1];
        tag = KORCH_LAYOUT_RESHAPE;
    } else { /* concat with itself or a fresh input along one axis */
        int a = cc_int(0, r - 1);
        int other = cc_int(0, 1) ? x : cc_input(g->pg, KORCH_DTYPE_FLOAT32, r, in->dims);
        korch_index_map ms[2] = {cc_map(r), cc_map(r)};
        for (int p = 0; p < 2; p++) {
            for (int i = 0; i < r; i++) ms[p].terms[i].coef[i] = 1;
            ms[p].terms[a].offset = p ? -in->dims[a] : 0;
            ms[p].may_be_out_of_bounds = true;
        }
        o.dims[a] = 2 * in->dims[a];
        int ins[2] = {x, other};
        return korch_pgraph_layout(g->pg, KORCH_LAYOUT_CONCAT, 2, ins, &o, ms, 0);
    }
    if (tag == KORCH_LAYOUT_GENERIC) { /* fallback: identity */
        for (int i = 0; i < r; i++) m.terms[i].coef[i] = 1;
    }
    return korch_pgraph_layout(g->pg, tag, 1, &x, &o, &m, pad);
}

static int random_op(gen *g) {
    int x = g->vals[cc_int(g->n > 3 ? g->n - 3 : 0, g->n - 1)];
    const korch_shape *s = &g->pg->values[x].shape;
    int kind = s->rank == 0 ? 0 : cc_int(0, 9); /* scalars: elementwise only */
    if (kind <= 2) {
        static const korch_ew_op un[] = {KORCH_EW_NEG, KORCH_EW_ABS, KORCH_EW_TANH, KORCH_EW_SIGMOID,
                                         KORCH_EW_RELU, KORCH_EW_AFFINE, KORCH_EW_EXP, KORCH_EW_ERF};
        return korch_pgraph_elementwise(g->pg, un[cc_int(0, 7)], 1, &x, 0.5f, 0.25f, KORCH_DTYPE_UNDEFINED);
    }
    if (kind <= 4) {
        static const korch_ew_op bin[] = {KORCH_EW_ADD, KORCH_EW_SUB, KORCH_EW_MUL, KORCH_EW_MAX, KORCH_EW_MIN};
        int y = cc_int(0, 1) ? add_input_like(g, s) : g->vals[cc_int(0, g->n - 1)];
        korch_shape b;
        if (!korch_shape_broadcast(s, &g->pg->values[y].shape, &b)) y = add_input_like(g, s);
        int ins[2] = {x, y};
        if (cc_int(0, 1)) ins[0] = y, ins[1] = x;
        return korch_pgraph_elementwise(g->pg, bin[cc_int(0, 4)], 2, ins, 0, 0, KORCH_DTYPE_UNDEFINED);
    }
    if (kind <= 6) {
        uint32_t axes = (uint32_t)cc_int(1, (1 << s->rank) - 1);
        return korch_pgraph_reduce(g->pg, (korch_reduce_op)cc_int(0, 3), x, axes, cc_int(0, 1));
    }
    return layout_op(g, x);
}

static korch_pgraph *random_graph(void) {
    gen g = {0};
    CHECK_OK(korch_pgraph_create(NULL, &g.pg));
    korch_shape s = rand_shape();
    g.vals[g.n++] = cc_input(g.pg, KORCH_DTYPE_FLOAT32, s.rank, s.dims);
    int ops = cc_int(2, 7);
    for (int i = 0; i < ops; i++) {
        int v = random_op(&g);
        if (v < 0) {
            fprintf(stderr, "generator: %s\n", korch_last_error());
            break;
        }
        g.vals[g.n++] = v;
    }
    /* the last value, plus up to two earlier computed values, are outputs */
    cc_output(g.pg, g.vals[g.n - 1]);
    for (int extra = cc_int(0, 2); extra > 0 && g.n > 2; extra--) {
        int v = g.vals[cc_int(1, g.n - 2)];
        bool dup = false;
        for (int i = 0; i < g.pg->n_outputs; i++) dup |= g.pg->outputs[i] == v;
        if (!dup && g.pg->values[v].producer >= 0) cc_output(g.pg, v);
    }
    return g.pg;
}

static void random_schedule(char *buf, size_t size) {
    cg_schedule s;
    for (int knob = 0; knob < CG_KNOBS; knob++) {
        const int *values;
        int n = cg_schedule_domain(knob, &values);
        *cg_schedule_knob(&s, knob) = values[cc_int(0, n - 1)];
    }
    cg_schedule_format(&s, buf, size);
}

/* Builds all graphs of a batch under one schedule (one compiler run) and
 * checks each; returns failures. */
static int check_batch(korch_pgraph **pgs, int n, const char *sched_in, int *checked) {
    korch_kernel_spec specs[BATCH];
    const char *scheds[BATCH];
    char rnd[BATCH][64];
    for (int i = 0; i < n; i++) {
        cc_spec_all(pgs[i], &specs[i]);
        if (sched_in) scheds[i] = sched_in;
        else {
            random_schedule(rnd[i], sizeof rnd[i]);
            scheds[i] = rnd[i];
        }
    }
    korch_kernel *ks[BATCH] = {0};
    korch_profile_options opt = {.threads = 2};
    korch_status st = korch_backend_build(KORCH_BACKEND_CGEN, specs, scheds, n, &opt, ks);
    CHECK_MSG(st == KORCH_OK, "batch build: %s", korch_last_error());
    int failures = 0;
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        korch_pgraph *pg = pgs[i];
        korch_tensor in[16] = {0}, want[8] = {0};
        for (int j = 0; j < pg->n_inputs; j++) {
            const korch_pvalue *v = &pg->values[pg->inputs[j]];
            korch_tensor_alloc(&in[j], v->dtype, &v->shape);
            cc_fill(&in[j], -1, 1);
        }
        CHECK_OK(korch_pgraph_interpret(pg, in, want));
        void *inptr[16], *outptr[8];
        for (int j = 0; j < specs[i].n_inputs; j++) inptr[j] = in[pg->values[specs[i].inputs[j]].graph_input].data;
        for (int o = 0; o < pg->n_outputs; o++) {
            outptr[o] = malloc(korch_tensor_bytes(&want[o]) + 1);
            memset(outptr[o], 0xA5, korch_tensor_bytes(&want[o]));
        }
        CHECK_OK(ks[i]->run(ks[i], inptr, outptr));
        int bad = 0;
        for (int o = 0; o < pg->n_outputs; o++) {
            bad += cc_compare(&want[o], outptr[o], scheds[i]);
            free(outptr[o]);
        }
        (*checked)++;
        if (bad) {
            failures++;
            CHECK_MSG(bad == 0, "random graph under %s differs", scheds[i]);
            korch_pgraph_dump(pg, stderr);
            char *src = NULL;
            if (getenv("KORCH_TEST_DUMP") && korch_cgen_source(&specs[i], scheds[i], NULL, &src) == KORCH_OK) fputs(src, stderr);
            free(src);
        }
        for (int j = 0; j < pg->n_inputs; j++) korch_tensor_free(&in[j]);
        for (int o = 0; o < pg->n_outputs; o++) korch_tensor_free(&want[o]);
        korch_kernel_destroy(ks[i]);
    }
    for (int i = 0; i < n; i++) cc_spec_free(&specs[i]);
    return failures;
}

int main(void) {
    const char *env = getenv("KORCH_PROPERTY_CASES"), *seed = getenv("KORCH_PROPERTY_SEED");
    int cases = env && atoi(env) > 0 ? atoi(env) : 520;
    if (seed && *seed) cc_rng = strtoull(seed, NULL, 0) | 1;
    printf("seed 0x%llx, %d graphs\n", (unsigned long long)cc_rng, cases);
    int checked = 0, failures = 0, outputs = 0, reductions = 0, layouts = 0;
    for (int done = 0; done < cases; done += BATCH) {
        int n = cases - done < BATCH ? cases - done : BATCH;
        korch_pgraph *pgs[BATCH];
        for (int i = 0; i < n; i++) {
            pgs[i] = random_graph();
            outputs += pgs[i]->n_outputs;
            for (int k = 0; k < pgs[i]->n_nodes; k++) {
                reductions += pgs[i]->nodes[k].kind == KORCH_PRIM_REDUCE;
                layouts += pgs[i]->nodes[k].kind == KORCH_PRIM_LAYOUT;
            }
        }
        /* default, a serial unvectorised one, and random schedules */
        failures += check_batch(pgs, n, "", &checked);
        failures += check_batch(pgs, n, "p0.g0.v0.u2.t0.o0.r0", &checked);
        failures += check_batch(pgs, n, NULL, &checked);
        failures += check_batch(pgs, n, NULL, &checked);
        for (int i = 0; i < n; i++) korch_pgraph_free(pgs[i]);
    }
    printf("%d kernel runs checked (%d graphs x 4 schedules), %d failed; %d outputs, %d reductions, %d layouts\n",
           checked, cases, failures, outputs, reductions, layouts);
    CHECK(checked == 4 * cases);
    TEST_MAIN_END();
}

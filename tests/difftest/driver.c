/* One seed: generate, load, reference, strategies, forced candidates. */
#include "driver.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compare.h"
#include "core/half.h"
#include "frontend/frontend.h"
#include "frontend/onnx_load.h"
#include "io/npy.h"
#include "ops/reference.h"
#include "rng.h"
#include "runner.h"
#include "runtime/executor.h"

typedef struct dt_case {
    const dt_options *o;
    uint64_t seed;
    char model[4096];
    korch_plan_model m;
    korch_tensor *inputs, *want;
    double *terms, *scales;
    dt_stats *stats;
    bool kept; /* model and inputs already copied to keep_dir */
    int failures;
    dt_qstep *qsteps; /* per output: one quantization step of a dequantized output */
    const char *prefix; /* plan labels: "" or the layout ("nchw/") */
} dt_case;

static void fill_inputs(dt_case *c) {
    dt_rng r = {.s = c->seed * 0x2545f4914f6cdd1dull + 0x5851f42d4c957f2dull};
    const korch_graph *g = c->m.graph;
    for (int i = 0; i < g->n_inputs; i++) {
        korch_tensor *t = &c->inputs[i];
        float *d = t->data;
        int64_t n = korch_tensor_numel(t);
        /* uniform in [-1, 1]: the generator's magnitudes assume it; a half
         * input (feature half) gets the same draws, rounded to its format */
        if (korch_dtype_is_half(t->dtype))
            for (int64_t k = 0; k < n; k++) korch_half_store(t->dtype, t->data, k, dt_unif(&r, -1, 1));
        else
            for (int64_t k = 0; k < n; k++) d[k] = (float)dt_unif(&r, -1, 1);
    }
}

static korch_status copy_file(const char *from, const char *to) {
    uint8_t *data = NULL;
    size_t size = 0;
    KORCH_TRY(korch_read_file(from, (size_t)1 << 30, &data, &size));
    FILE *f = fopen(to, "wb");
    korch_status st = f && fwrite(data, 1, size, f) == size ? KORCH_OK : korch_error(KORCH_ERR_IO, "cannot write %s", to);
    if (f) fclose(f);
    free(data);
    return st;
}

/* Keeps the model, its inputs and the failing plan in keep_dir, and says how
 * to reproduce with the CLI. */
static void keep(dt_case *c, const korch_plan *plan, const char *label) {
    const char *dir = c->o->keep_dir;
    char model[4200], path[4300], plan_path[4300];
    snprintf(model, sizeof model, "%s/seed-%llu.onnx", dir, (unsigned long long)c->seed);
    if (!c->kept) {
        c->kept = true;
        if (copy_file(c->model, model) != KORCH_OK) fprintf(stderr, "  (cannot keep the model: %s)\n", korch_last_error());
        for (int i = 0; i < c->m.graph->n_inputs; i++) {
            snprintf(path, sizeof path, "%s/seed-%llu-input%d.npy", dir, (unsigned long long)c->seed, i);
            /* bfloat16: a float32 .npy file, as korch run reads it (docs/precision.md) */
            korch_tensor wide = {0};
            bool bf = c->inputs[i].dtype == KORCH_DTYPE_BFLOAT16;
            korch_status ws = bf ? korch_half_convert(&c->inputs[i], KORCH_DTYPE_FLOAT32, &wide) : KORCH_OK;
            if (ws == KORCH_OK) ws = korch_npy_write(path, bf ? &wide : &c->inputs[i]);
            if (ws != KORCH_OK) fprintf(stderr, "  (%s)\n", korch_last_error());
            if (bf) korch_tensor_free(&wide);
        }
        printf("  model kept: %s\n", model);
    }
    if (!plan) return;
    char safe[64];
    snprintf(safe, sizeof safe, "%s", label);
    for (char *p = safe; *p; p++)
        if (*p == ' ' || *p == '/' || *p == '#') *p = '_';
    snprintf(plan_path, sizeof plan_path, "%s/seed-%llu-%s.plan", dir, (unsigned long long)c->seed, safe);
    korch_plan copy = *plan;
    copy.model_path = NULL;
    copy.input_shapes = NULL;
    copy.n_input_shapes = 0;
    korch_status st = korch_plan_set_model(&copy, model, &c->m);
    if (st == KORCH_OK) st = korch_plan_save(&copy, plan_path);
    free(copy.model_path);
    for (int i = 0; i < copy.n_input_shapes; i++) free(copy.input_shapes[i].name);
    free(copy.input_shapes);
    if (st != KORCH_OK) {
        fprintf(stderr, "  (cannot keep the plan: %s)\n", korch_last_error());
        return;
    }
    printf("  reproduce: korch run %s", plan_path);
    for (int i = 0; i < c->m.graph->n_inputs; i++)
        printf(" --input %s=%s/seed-%llu-input%d.npy", c->m.graph->values[c->m.graph->inputs[i]].name, dir,
               (unsigned long long)c->seed, i);
    printf(" --output-dir OUT   (reference: the same with %s)\n", model);
}

/* Compares every output with the reference; prints the differences unless
 * quiet. Returns how many outputs differ. */
static int compare_outputs(dt_case *c, korch_tensor *got, const char *label, bool quiet) {
    const korch_graph *g = c->m.graph;
    int bad = 0;
    for (int i = 0; i < g->n_outputs; i++) {
        dt_mismatch mm;
        if (dt_compare_q(&got[i], &c->want[i], c->terms[i], c->scales[i], c->qsteps ? &c->qsteps[i] : NULL, &mm)) {
            if (mm.worst_ratio > c->stats->worst_ratio) c->stats->worst_ratio = mm.worst_ratio, c->stats->worst_seed = c->seed;
            continue;
        }
        bad++;
        if (quiet) continue;
        const char *name = g->values[g->outputs[i]].name;
        if (mm.what[0])
            printf("FAIL seed %llu %s: output %s: %s\n", (unsigned long long)c->seed, label, name, mm.what);
        else
            printf("FAIL seed %llu %s: output %s: %ld of %lld elements differ; worst [%lld] got %.9g want %.9g "
                   "error %.3g bound %.3g\n",
                   (unsigned long long)c->seed, label, name, mm.count, (long long)korch_tensor_numel(&c->want[i]),
                   (long long)mm.index, mm.got, mm.want, mm.err, mm.bound);
    }
    return bad;
}

static korch_tensor *alloc_outputs(const korch_graph *g) {
    korch_tensor *got = calloc((size_t)g->n_outputs + 1, sizeof *got);
    for (int i = 0; got && i < g->n_outputs; i++)
        if (korch_tensor_alloc(&got[i], g->values[g->outputs[i]].dtype, &g->values[g->outputs[i]].shape) != KORCH_OK) {
            for (int k = 0; k < i; k++) korch_tensor_free(&got[k]);
            free(got);
            return NULL;
        }
    return got;
}

static void free_outputs(const korch_graph *g, korch_tensor *got) {
    for (int i = 0; got && i < g->n_outputs; i++) korch_tensor_free(&got[i]);
    free(got);
}

static void print_fused(const korch_plan *plan) {
    for (int k = 0; k < plan->n_kernels; k++)
        if (plan->kernels[k].n_nodes > 1)
            printf("  kernel %d [%s %s]: %s\n", k, korch_backend_name(plan->kernels[k].backend), plan->kernels[k].impl,
                   plan->kernels[k].primitives ? plan->kernels[k].primitives : "");
}

/* Runs a plan with korch's executor and compares every output; returns the
 * outputs that differ (-1: the plan could not be built or run, a failure). */
static int run_plan(dt_case *c, const korch_plan *plan, const char *label) {
    const korch_graph *g = c->m.graph;
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/kernels", c->o->work_dir);
    korch_profile_options po = {.threads = c->o->threads, .cache_dir = cache};
    korch_executor *ex = NULL;
    korch_tensor *got = alloc_outputs(g);
    double t0 = dt_now();
    korch_status st = got ? korch_executor_create(plan, c->m.pg, &po, &ex) : KORCH_ERR_OUT_OF_MEMORY;
    if (st == KORCH_OK) st = korch_executor_run(ex, c->inputs, got);
    c->stats->t_executor += dt_now() - t0;
    c->stats->plans++;
    int bad = 0;
    if (st != KORCH_OK) {
        printf("FAIL seed %llu %s: %s\n", (unsigned long long)c->seed, label, korch_last_error());
        bad = -1;
    } else {
        bad = compare_outputs(c, got, label, false);
    }
    if (bad) {
        print_fused(plan);
        keep(c, plan, label);
    }
    korch_executor_destroy(ex);
    free_outputs(g, got);
    return bad;
}

static bool same_kernels(const korch_plan *a, const korch_plan *b) {
    if (a->n_kernels != b->n_kernels) return false;
    for (int k = 0; k < a->n_kernels; k++) {
        const korch_plan_kernel *x = &a->kernels[k], *y = &b->kernels[k];
        if (x->n_nodes != y->n_nodes || x->backend != y->backend || strcmp(x->schedule, y->schedule) != 0 ||
            memcmp(x->nodes, y->nodes, (size_t)x->n_nodes * sizeof *x->nodes) != 0)
            return false;
    }
    return true;
}

static long fused_kernels(const korch_plan *p) {
    long n = 0;
    for (int k = 0; k < p->n_kernels; k++) n += p->kernels[k].n_nodes > 1;
    return n;
}

double dt_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void fail(dt_case *c) {
    c->failures++;
}

/* One line per fused kernel of a forced plan: "CULPRIT" for a failing one
 * (for grouping failures by kind), "forced" for the one about to run (-v -v). */
static void print_kernels(const dt_case *c, const korch_plan *one, const char *tag) {
    for (int k = 0; k < one->n_kernels; k++)
        if (one->kernels[k].n_nodes > 1)
            printf("%s seed %llu %s: %s\n", tag, (unsigned long long)c->seed, korch_backend_name(one->kernels[k].backend),
                   one->kernels[k].primitives ? one->kernels[k].primitives : "");
}
static void print_culprit(const dt_case *c, const korch_plan *one) { print_kernels(c, one, "CULPRIT"); }

/* One forced candidate's plan, run by korch's executor and compared. */
static void run_forced_with_executor(dt_case *c, const korch_plan *one, const char *label) {
    c->stats->candidates++;
    if (c->o->verbose > 1) printf("  running %s\n", label), print_kernels(c, one, "  forced"), fflush(stdout);
    if (run_plan(c, one, label) != 0) print_culprit(c, one), fail(c);
}

/* The twin, on its second backend, of every sampled candidate phase 1 may
 * give to one (korch_candidate_second_backend: the generator's depthwise
 * convolutions), with its default schedule, each in a plan of its own run
 * by korch's executor: what a measured optimise may choose, checked even
 * where the estimate keeps oneDNN. */
static void run_second_backend(dt_case *c, korch_candidate_set *set, int ci) {
    korch_candidate *cand = &set->candidates[ci];
    int second = korch_candidate_second_backend(set->pg, cand);
    if (second < 0) return;
    korch_kernel_spec spec = korch_candidate_spec(set, cand);
    char reason[256];
    if (!korch_backend_supports((korch_backend_kind)second, &spec, reason, sizeof reason)) return;
    korch_backend_kind kind = cand->backend;
    char schedule[sizeof cand->schedule];
    memcpy(schedule, cand->schedule, sizeof schedule);
    cand->backend = (korch_backend_kind)second;
    cand->schedule[0] = '\0';
    korch_plan *one = NULL;
    korch_status st = dt_forced_plan(set, &ci, 1, &one);
    cand->backend = kind;
    memcpy(cand->schedule, schedule, sizeof schedule);
    char label[64];
    snprintf(label, sizeof label, "%sforced-%s#%d", c->prefix, korch_backend_name((korch_backend_kind)second), ci);
    if (st != KORCH_OK) {
        printf("FAIL seed %llu %s: %s\n", (unsigned long long)c->seed, label, korch_last_error());
        fail(c);
        return;
    }
    c->stats->second_backend++;
    run_forced_with_executor(c, one, label);
    korch_plan_free(one);
}

static void run_second_backends(dt_case *c, korch_candidate_set *set, const int *list, int take) {
    for (int i = 0; i < take; i++) run_second_backend(c, set, list[i]);
    /* and the single convolutions, which the forced sample leaves out */
    for (int ci = 0; ci < set->n_candidates; ci++)
        if (set->candidates[ci].n_nodes == 1 && set->candidates[ci].profiled && !set->candidates[ci].rejected)
            run_second_backend(c, set, ci);
}

/* The forced candidates: a seeded sample, every one in a plan of its own
 * (single-primitive kernels elsewhere), run by the runner with kernels built
 * once for all of them; a difference is confirmed with korch's executor,
 * which also keeps the plan for the CLI. */
static korch_status run_forced(dt_case *c, korch_candidate_set *set) {
    int *list = malloc(((size_t)set->n_candidates + 1) * sizeof *list);
    if (!list) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "difftest: out of memory");
    int n = dt_forced_list(set, list);
    dt_rng r = {.s = c->seed ^ 0xf0a5c3d2e1b49687ull};
    int take = c->o->max_forced > 0 && n > c->o->max_forced ? c->o->max_forced : n;
    for (int i = 0; i < take; i++) { /* partial Fisher-Yates */
        int j = dt_int(&r, i, n - 1), t = list[i];
        list[i] = list[j], list[j] = t;
    }
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/kernels", c->o->work_dir);
    korch_profile_options po = {.threads = c->o->threads, .cache_dir = cache};
    dt_runner runner;
    memset(&runner, 0, sizeof runner);
    const korch_graph *g = c->m.graph;
    korch_tensor *got = alloc_outputs(g);
    double t0 = dt_now();
    if (c->o->no_runner) {
        for (int i = 0; i < take; i++) {
            korch_plan *one = NULL;
            char label[64];
            snprintf(label, sizeof label, "%sforced#%d", c->prefix, list[i]);
            if (dt_forced_plan(set, &list[i], 1, &one) != KORCH_OK) continue;
            run_forced_with_executor(c, one, label);
            korch_plan_free(one);
        }
        free_outputs(g, got);
        free(list);
        return KORCH_OK;
    }
    korch_status st = got ? dt_runner_build(&runner, set, list, take, &po) : KORCH_ERR_OUT_OF_MEMORY;
    c->stats->t_runner_build += dt_now() - t0;
    t0 = dt_now();
    if (st != KORCH_OK) {
        /* one kernel failing to build fails the batch: find it through the executor */
        printf("FAIL seed %llu forced: building the kernels: %s\n", (unsigned long long)c->seed, korch_last_error());
        fail(c);
        for (int i = 0; i < take; i++) {
            korch_plan *one = NULL;
            if (dt_forced_plan(set, &list[i], 1, &one) != KORCH_OK) continue;
            char label[64];
            snprintf(label, sizeof label, "%sforced#%d", c->prefix, list[i]);
            if (run_plan(c, one, label) != 0) print_culprit(c, one);
            korch_plan_free(one);
        }
    }
    for (int i = 0; i < take && st == KORCH_OK; i++) {
        korch_plan *one = NULL;
        char label[64];
        snprintf(label, sizeof label, "%sforced#%d", c->prefix, list[i]);
        if (dt_forced_plan(set, &list[i], 1, &one) != KORCH_OK) {
            printf("FAIL seed %llu %s: %s\n", (unsigned long long)c->seed, label, korch_last_error());
            fail(c);
            continue;
        }
        c->stats->candidates++;
        c->stats->plans++;
        if (c->o->verbose > 1) printf("  running %s\n", label), print_kernels(c, one, "  forced"), fflush(stdout);
        korch_status rs = dt_runner_run(&runner, one, c->inputs, got);
        if (rs != KORCH_OK || compare_outputs(c, got, label, true) != 0) {
            if (rs != KORCH_OK) printf("  (%s: runner: %s)\n", label, korch_last_error());
            c->stats->plans--; /* counted again by run_plan */
            if (run_plan(c, one, label) == 0)
                printf("FAIL seed %llu %s: differs when run with the prebuilt kernels, not with the executor\n",
                       (unsigned long long)c->seed, label);
            print_culprit(c, one);
            fail(c);
        }
        korch_plan_free(one);
    }
    c->stats->t_runner_run += dt_now() - t0;
    dt_runner_free(&runner); /* also after a failed build */
    run_second_backends(c, set, list, take);
    free_outputs(g, got);
    free(list);
    return KORCH_OK;
}

/* Every requested strategy's plan and the forced candidates, for the
 * primitive graph c->m.pg (one layout). */
static korch_status check_plans(dt_case *c) {
    const dt_options *o = c->o;
    dt_stats *stats = c->stats;
    uint64_t seed = c->seed;
    korch_status st = KORCH_OK;
    dt_optimizer opt;
    dt_optimizer_init(&opt, o);
    korch_plan *prev = NULL;
    bool prev_bad = false;
    for (int s = 0; s < KORCH_STRATEGY_COUNT && st == KORCH_OK; s++) {
        if (!o->strategy[s]) continue;
        korch_plan *plan = NULL;
        char label[64];
        snprintf(label, sizeof label, "%s%s", c->prefix, korch_strategy_name(s));
        double t0 = dt_now();
        korch_status os = dt_optimize(&opt, o, &c->m, (korch_strategy)s, &plan);
        stats->t_optimize += dt_now() - t0;
        if (os != KORCH_OK && o->verify && os != KORCH_ERR_OUT_OF_MEMORY) {
            /* the product refused to write a plan it could not make right:
             * not a wrong plan, but worth reading */
            printf("REFUSED seed %llu %s: %s\n", (unsigned long long)seed, label, korch_last_error());
            stats->refused++;
            if (o->refused_fails) fail(c);
            keep(c, NULL, NULL);
            continue;
        }
        if (os != KORCH_OK) {
            printf("FAIL seed %llu %s: optimize fails: %s\n", (unsigned long long)seed, label, korch_last_error());
            fail(c);
            keep(c, NULL, NULL);
            break;
        }
        stats->candidates += fused_kernels(plan);
        /* a plan equal to the previous strategy's (small graphs: greedy and
         * optimal often agree) runs the same kernels the same way: its
         * result is that plan's, and one compiler run is saved */
        if (prev && same_kernels(prev, plan)) {
            stats->plans++, stats->same_plans++;
            if (prev_bad) fail(c);
            korch_plan_free(plan);
            continue;
        }
        prev_bad = run_plan(c, plan, label) != 0;
        if (prev_bad) fail(c);
        korch_plan_free(prev);
        prev = plan;
    }
    korch_plan_free(prev);
    if (st == KORCH_OK && o->forced) {
        korch_plan *plan = NULL;
        if (!opt.orch && dt_optimize(&opt, o, &c->m, KORCH_STRATEGY_NONE, &plan) != KORCH_OK) {
            printf("FAIL seed %llu %s: optimize fails: %s\n", (unsigned long long)seed, c->prefix, korch_last_error());
            fail(c);
        }
        korch_plan_free(plan);
        korch_candidate_set *set = dt_optimizer_candidates(&opt);
        if (set) st = run_forced(c, set);
    }
    stats->excluded += dt_optimizer_excluded(&opt);
    /* a kernel verification excluded is a wrong kernel korch generated (or
     * a check too strict): named per seed, for the campaign to localise */
    const korch_verify_log *vl = opt.orch ? korch_orchestrator_verify_log(opt.orch) : NULL;
    for (int k = 0; vl && k < vl->n_excluded; k++) {
        printf("EXCLUDED seed %llu %s: candidate %d [%s %s] error/bound %.3g: %s\n", (unsigned long long)seed,
               c->prefix[0] ? c->prefix : "-", vl->excluded[k].candidate, korch_backend_name(vl->excluded[k].backend),
               vl->excluded[k].impl, vl->excluded[k].worst_ratio, vl->excluded[k].detail);
        /* kernel_check.c's words for a kernel that did not build or run */
        if (o->excluded_fails && strncmp(vl->excluded[k].detail, "the kernel failed to ", 21) != 0) fail(c);
    }
    dt_optimizer_free(&opt);
    return st;
}

/* The precision of a lowered model: --precision, and with bf16-mixed a
 * seeded half of the linear primitives kept in float32 (which casts remain
 * follows from the marks; korch_pgraph_set_precision_except). */
static korch_status set_precision(const dt_options *o, uint64_t seed, korch_plan_model *m, dt_stats *stats) {
    KORCH_TRY(korch_plan_model_set_precision(m, o->precision));
    if (!o->bf16_mixed) return KORCH_OK;
    int *keep = malloc(((size_t)m->pg->n_nodes + 1) * sizeof *keep), n = 0;
    if (!keep) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "difftest: out of memory");
    dt_rng r = {.s = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull};
    for (int i = 0; i < m->pg->n_nodes; i++) {
        const korch_pnode *n_ = &m->pg->nodes[i];
        if (n_->dead || n_->kind != KORCH_PRIM_LINEAR || !n_->u.linear.bf16) continue;
        stats->mixed_linear++;
        if (dt_next(&r) & 1) keep[n++] = i;
    }
    stats->mixed_kept += n;
    korch_status st = korch_pgraph_set_precision_except(m->pg, KORCH_PRECISION_BF16, keep, n);
    free(keep);
    return st;
}

/* A model with an if-converted If (frontend/if_convert.c) is run again by
 * the reference executor with its Ifs kept whole, each running the branch
 * its condition takes: the conversion must not change a bit (the branches'
 * nodes run the same reference kernels either way, and Where copies).
 * Everything else compares plans with the converted graph's reference, so
 * this is what checks the conversion itself. */
static bool if_conversion_keeps_results(dt_case *c) {
    const korch_graph *g = c->m.graph;
    bool converted = false;
    for (int i = 0; i < g->n_nodes; i++) converted |= g->nodes[i].if_converted;
    if (!converted) return true;
    c->stats->if_converted_graphs++;
    korch_graph *whole = NULL;
    korch_tensor *got = calloc((size_t)g->n_outputs + 1, sizeof *got);
    korch_status st = got ? korch_frontend_load_keeping_ifs(c->model, &whole)
                          : korch_error(KORCH_ERR_OUT_OF_MEMORY, "difftest: out of memory");
    if (st == KORCH_OK && whole->n_outputs != g->n_outputs)
        st = korch_error(KORCH_ERR_INTERNAL, "%d outputs with the Ifs kept whole, %d converted", whole->n_outputs,
                         g->n_outputs);
    if (st == KORCH_OK) st = korch_reference_run(whole, c->inputs, got);
    int differs = -1;
    for (int k = 0; k < g->n_outputs && st == KORCH_OK && differs < 0; k++)
        if (got[k].dtype != c->want[k].dtype || !korch_shape_equal(&got[k].shape, &c->want[k].shape) ||
            memcmp(got[k].data, c->want[k].data, korch_tensor_bytes(&got[k])) != 0)
            differs = k;
    if (st != KORCH_OK)
        printf("FAIL seed %llu: the reference with its Ifs kept whole fails: %s\n", (unsigned long long)c->seed,
               korch_last_error());
    else if (differs >= 0)
        printf("FAIL seed %llu: if-conversion changes output %d of the reference executor (Ifs kept whole: the "
               "branch the condition takes)\n",
               (unsigned long long)c->seed, differs);
    for (int k = 0; got && k < g->n_outputs; k++) korch_tensor_free(&got[k]);
    free(got);
    korch_graph_free(whole);
    return st == KORCH_OK && differs < 0;
}

korch_status dt_check_seed(const dt_options *o, uint64_t seed, dt_stats *stats) {
    dt_case c = {.o = o, .seed = seed, .stats = stats, .prefix = ""};
    snprintf(c.model, sizeof c.model, "%s/model.onnx", o->work_dir);
    dt_gen_info info;
    stats->graphs++;
    korch_status st = KORCH_OK;
    memset(&info, 0, sizeof info);
    double t0 = dt_now();
    if (o->model) snprintf(c.model, sizeof c.model, "%s", o->model);
    else st = dt_generate_features(seed, o->features & DT_FEAT_GENERATOR, c.model, &info);
    if (st != KORCH_OK) return st; /* the generator failing is the harness failing */
    dt_coverage_merge(&stats->coverage, &info.coverage);
    stats->t_gen += dt_now() - t0;
    t0 = dt_now();
    int n_layouts = o->n_layouts > 0 ? o->n_layouts : 1;
    korch_layout_strategy first = o->n_layouts > 0 ? o->layouts[0] : KORCH_LAYOUT_DEFAULT;
    if (korch_plan_model_load_layout(c.model, NULL, 0, first, &c.m) != KORCH_OK) {
        printf("FAIL seed %llu: korch refuses the generated model: %s\n", (unsigned long long)seed, korch_last_error());
        stats->gen_errors++;
        stats->failures++;
        c.inputs = NULL;
        char keep_path[4200];
        snprintf(keep_path, sizeof keep_path, "%s/seed-%llu.onnx", o->keep_dir, (unsigned long long)seed);
        if (copy_file(c.model, keep_path) == KORCH_OK) printf("  model kept: %s\n", keep_path);
        return KORCH_OK;
    }
    if (set_precision(o, seed, &c.m, stats) != KORCH_OK) {
        korch_plan_model_close(&c.m);
        return korch_error_prefix(KORCH_ERR_UNSUPPORTED, "difftest --precision %s",
                                  korch_precision_token(o->precision));
    }
    const korch_graph *g = c.m.graph;
    stats->prims += c.m.pg->n_nodes;
    c.inputs = calloc((size_t)g->n_inputs + 1, sizeof *c.inputs);
    c.want = calloc((size_t)g->n_outputs + 1, sizeof *c.want);
    c.terms = calloc((size_t)g->n_outputs + 1, sizeof *c.terms);
    c.scales = calloc((size_t)g->n_outputs + 1, sizeof *c.scales);
    c.qsteps = calloc((size_t)g->n_outputs + 1, sizeof *c.qsteps);
    double *magnitude = calloc((size_t)g->n_values + 1, sizeof *magnitude);
    st = c.inputs && c.want && c.terms && c.scales && c.qsteps && magnitude
             ? KORCH_OK
             : korch_error(KORCH_ERR_OUT_OF_MEMORY, "difftest: out of memory");
    for (int i = 0; i < g->n_inputs && st == KORCH_OK; i++)
        st = korch_tensor_alloc(&c.inputs[i], g->values[g->inputs[i]].dtype, &g->values[g->inputs[i]].shape);
    if (st == KORCH_OK) {
        fill_inputs(&c);
        dt_reduction_terms(g, c.terms);
        if (o->precision == KORCH_PRECISION_BF16) dt_bf16_terms(g, c.terms);
        for (int i = 0; i < g->n_outputs; i++) dt_qstep_of(g, g->outputs[i], &c.qsteps[i]);
        for (int i = 0; i < g->n_inputs; i++) dt_observe_magnitude(magnitude, g, g->inputs[i], &c.inputs[i]);
        korch_status rs = korch_reference_run_observed(g, c.inputs, c.want, dt_observe_magnitude, magnitude);
        if (rs == KORCH_OK) dt_output_scales(g, magnitude, c.scales);
        stats->t_reference += dt_now() - t0;
        if (rs != KORCH_OK) {
            printf("FAIL seed %llu: the reference executor fails: %s\n", (unsigned long long)seed, korch_last_error());
            fail(&c);
            keep(&c, NULL, NULL);
            goto done;
        }
        if (!if_conversion_keeps_results(&c)) {
            fail(&c);
            keep(&c, NULL, NULL);
            goto done;
        }
    }
    /* every requested layout (--layout auto: channels-last, then nchw); the
     * reference is the op graph's, the same for both */
    uint64_t first_hash = korch_pgraph_hash(c.m.pg);
    for (int li = 0; li < n_layouts && st == KORCH_OK; li++) {
        korch_layout_strategy layout = o->n_layouts > 0 ? o->layouts[li] : KORCH_LAYOUT_DEFAULT;
        korch_plan_model other, saved = c.m;
        bool swapped = false;
        if (li > 0) {
            if (korch_plan_model_load_layout(c.model, NULL, 0, layout, &other) != KORCH_OK) {
                printf("FAIL seed %llu: lowering with layout %s fails: %s\n", (unsigned long long)seed,
                       korch_layout_strategy_token(layout), korch_last_error());
                fail(&c);
                continue;
            }
            if (set_precision(o, seed, &other, stats) != KORCH_OK) {
                korch_plan_model_close(&other);
                st = korch_error_prefix(KORCH_ERR_UNSUPPORTED, "difftest --precision");
                break;
            }
            if (korch_pgraph_hash(other.pg) == first_hash) { /* nothing to relayout: the same plans */
                stats->same_layout++;
                korch_plan_model_close(&other);
                continue;
            }
            c.m = other, swapped = true;
            stats->layout_graphs++;
        }
        char prefix[48];
        snprintf(prefix, sizeof prefix, "%s/", korch_layout_strategy_token(layout));
        c.prefix = layout == KORCH_LAYOUT_DEFAULT ? "" : prefix;
        st = check_plans(&c);
        c.prefix = "";
        if (swapped) {
            korch_plan_model_close(&c.m);
            c.m = saved;
        }
    }
    if (o->verbose && c.failures == 0)
        printf("ok seed %llu: %d nodes, %d primitives, %d outputs\n", (unsigned long long)seed, info.n_nodes,
               c.m.pg->n_nodes, g->n_outputs);
done:
    stats->failures += c.failures;
    for (int i = 0; c.inputs && i < g->n_inputs; i++) korch_tensor_free(&c.inputs[i]);
    for (int i = 0; c.want && i < g->n_outputs; i++) korch_tensor_free(&c.want[i]);
    for (int i = 0; c.qsteps && i < g->n_outputs; i++) dt_qstep_free(&c.qsteps[i]);
    free(c.inputs);
    free(c.want);
    free(c.terms);
    free(c.scales);
    free(c.qsteps);
    free(magnitude);
    korch_plan_model_close(&c.m);
    return st;
}

/* korch-difftest: random ONNX graphs, optimised by every strategy and with
 * forced candidate kernels, compared with the reference executor.
 * docs/difftest.md describes the generator, the tolerance and reproduction. */
#define _GNU_SOURCE
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "compare.h"
#include "driver.h"

/* SIGTERM / SIGINT: finish the current seed, then print the summary (a
 * campaign stopped early still reports what it did). */
static volatile sig_atomic_t stop_requested;
static void on_stop(int sig) {
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: korch-difftest [--seeds A-B | --seed N | --seeds-file FILE] [options]\n\n"
            "  --seeds A-B          seeds A to B inclusive (default 1-20)\n"
            "  --seed N             one seed (reproduce a failure)\n"
            "  --seeds-file FILE    seeds, one per line ('#' starts a comment)\n"
            "  --known FILE         seeds that fail for a reported reason ('SEED reason' lines):\n"
            "                       their failure is KNOWN, their passing is XPASS (a failure)\n"
            "  --model FILE         check this ONNX model (float inputs from the seed) instead\n"
            "  --strategies LIST    of none,greedy,optimal (default all three)\n"
            "  --no-forced          no forced-candidate plans\n"
            "  --max-forced N       forced candidates per graph, a seeded sample (default 24; 0: all)\n"
            "  --no-runner          run forced plans with korch's executor, one compiler run each (slow)\n"
            "  --measure            real backends, timed and tuned (private database)\n"
            "  --features LIST      of half,qdq,layout,resize,int8,head,dynq,qop,index,if (or all):\n"
            "                       float16/bfloat16 inputs, outputs and initializers; QuantizeLinear/\n"
            "                       DequantizeLinear pairs and dequantized weights; plans in both layouts\n"
            "                       (--layout auto); nearest Resize by 2, 3 or to other sizes; convolutions\n"
            "                       of dequantized values with int8 weights, quantized at outputs (implies\n"
            "                       qdq); a decode head; quantize_dynamic's and quantize_static's matmuls\n"
            "                       and convolutions; OneHot of an ArgMax and ScatterElements. Other\n"
            "                       models than without it (the default's seeds stay valid); docs/difftest.md\n"
            "  --layout L           nchw, channels-last (default) or auto (both: every plan in each)\n"
            "  --precision P        fp32 (default) or bf16: plans compute their linear primitives in bf16\n"
            "                       (needs AVX512_BF16); outputs held to a bound widened per linear operator;\n"
            "                       bf16-mixed: bf16 with a seeded half of them kept in float32\n"
            "  --verify             the product path: plans from korch's verified driver (kernels and plans\n"
            "                       checked, wrong kernels excluded); a refused plan is REFUSED, not FAIL\n"
            "  --refused-fails      with --verify: a refused plan counts as a failure\n"
            "  --require-second-backend  fail when no forced candidate ran on a second backend\n"
            "                       (the generator's depthwise convolutions; regression seeds)\n"
            "  --excluded-fails     with --verify: a candidate kernel excluded for wrong values (not for\n"
            "                       failing to build or run) counts as a failure\n"
            "  --budget SECONDS     tuning budget per graph with --measure (default 2)\n"
            "  --threads N          OpenMP threads (default 2)\n"
            "  --work-dir DIR       private database and kernel cache (default: a new temp dir, removed)\n"
            "  --keep DIR           failing models, inputs and plans (default ./difftest-failures)\n"
            "  --generate-only DIR  write the models (DIR/seed-N.onnx) and stop\n"
            "  --state FILE         write each seed to FILE before checking it (crash recovery)\n"
            "  --coverage           print how often each generated pattern occurred\n"
            "  --selftest           check the comparison and the generator's determinism, then exit\n"
            "  -v                   a line per seed (-v -v: each forced plan before it runs)\n");
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct seed_list {
    uint64_t *v;
    char **why; /* known failures: the reason */
    int n, cap;
} seed_list;

static int push(seed_list *l, uint64_t s, const char *why) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        l->why = realloc(l->why, (size_t)l->cap * sizeof *l->why);
        if (!l->v || !l->why) return -1;
    }
    l->v[l->n] = s;
    l->why[l->n++] = why ? strdup(why) : NULL;
    return 0;
}

static int read_seeds(const char *path, seed_list *l, bool need_reason) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "korch-difftest: cannot read %s\n", path);
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || !*p) continue;
        char *end;
        unsigned long long s = strtoull(p, &end, 10);
        while (*end == ' ' || *end == '\t') end++;
        end[strcspn(end, "\n")] = 0;
        if (end == p || (need_reason && !*end)) {
            fprintf(stderr, "korch-difftest: %s: bad line (want 'SEED%s')\n", path, need_reason ? " reason" : "");
            fclose(f);
            return -1;
        }
        push(l, s, need_reason ? end : NULL);
    }
    fclose(f);
    return 0;
}

static const char *known_reason(const seed_list *k, uint64_t s) {
    for (int i = 0; i < k->n; i++)
        if (k->v[i] == s) return k->why[i];
    return NULL;
}

int dt_selftest(void);

int main(int argc, char **argv) {
    dt_options o = {.max_forced = 24, .forced = true, .threads = 2, .budget_s = 2, .keep_dir = "difftest-failures"};
    bool require_second = false;
    for (int s = 0; s < KORCH_STRATEGY_COUNT; s++) o.strategy[s] = true;
    seed_list seeds = {0}, known = {0};
    unsigned long long lo = 1, hi = 20;
    bool range = true, coverage = false;
    const char *work = NULL, *gen_only = NULL, *state = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV                                                                                      \
    do {                                                                                           \
        if (!v) {                                                                                  \
            fprintf(stderr, "korch-difftest: %s needs a value\n", a);                              \
            return 2;                                                                              \
        }                                                                                          \
        i++;                                                                                       \
    } while (0)
        if (!strcmp(a, "--seeds")) {
            NEEDV;
            if (sscanf(v, "%llu-%llu", &lo, &hi) != 2 || hi < lo) {
                fprintf(stderr, "korch-difftest: --seeds expects A-B\n");
                return 2;
            }
        } else if (!strcmp(a, "--seed")) {
            NEEDV;
            lo = hi = strtoull(v, NULL, 10);
        } else if (!strcmp(a, "--seeds-file")) {
            NEEDV;
            if (read_seeds(v, &seeds, false)) return 2;
            range = false;
        } else if (!strcmp(a, "--known")) {
            NEEDV;
            if (read_seeds(v, &known, true)) return 2;
        } else if (!strcmp(a, "--strategies")) {
            NEEDV;
            for (int s = 0; s < KORCH_STRATEGY_COUNT; s++) o.strategy[s] = false;
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                korch_strategy s;
                if (!korch_strategy_parse(t, &s)) {
                    fprintf(stderr, "korch-difftest: unknown strategy %s\n", t);
                    return 2;
                }
                o.strategy[s] = true;
            }
        } else if (!strcmp(a, "--model")) {
            NEEDV;
            o.model = v;
        } else if (!strcmp(a, "--generate-only")) {
            NEEDV;
            gen_only = v;
        } else if (!strcmp(a, "--state")) {
            NEEDV;
            state = v;
        } else if (!strcmp(a, "--no-runner")) {
            o.no_runner = true;
        } else if (!strcmp(a, "--no-forced")) {
            o.forced = false;
        } else if (!strcmp(a, "--max-forced")) {
            NEEDV;
            o.max_forced = atoi(v);
        } else if (!strcmp(a, "--measure")) {
            o.measure = true;
        } else if (!strcmp(a, "--features")) {
            NEEDV;
            if (!dt_features_parse(v, &o.features)) {
                fprintf(stderr, "korch-difftest: --features expects a list of half, qdq, layout (or all), not \"%s\"\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--layout")) {
            NEEDV;
            if (!strcmp(v, "auto")) {
                o.n_layouts = 2, o.layouts[0] = KORCH_LAYOUT_CHANNELS_LAST, o.layouts[1] = KORCH_LAYOUT_KEEP;
            } else if (korch_layout_strategy_parse(v, &o.layouts[0])) {
                o.n_layouts = 1;
            } else {
                fprintf(stderr, "korch-difftest: --layout expects nchw, channels-last or auto, not \"%s\"\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--precision")) {
            NEEDV;
            o.bf16_mixed = !strcmp(v, "bf16-mixed");
            if (!o.bf16_mixed && !korch_precision_parse(v, &o.precision)) {
                fprintf(stderr, "korch-difftest: --precision expects fp32, bf16 or bf16-mixed, not \"%s\"\n", v);
                return 2;
            }
            if (o.bf16_mixed) o.precision = KORCH_PRECISION_BF16;
        } else if (!strcmp(a, "--verify")) {
            o.verify = true;
        } else if (!strcmp(a, "--refused-fails")) {
            o.refused_fails = true;
        } else if (!strcmp(a, "--require-second-backend")) {
            require_second = true;
        } else if (!strcmp(a, "--excluded-fails")) {
            o.excluded_fails = true;
        } else if (!strcmp(a, "--budget")) {
            NEEDV;
            o.budget_s = atof(v);
        } else if (!strcmp(a, "--threads")) {
            NEEDV;
            o.threads = atoi(v);
        } else if (!strcmp(a, "--work-dir")) {
            NEEDV;
            work = v;
        } else if (!strcmp(a, "--keep")) {
            NEEDV;
            o.keep_dir = v;
        } else if (!strcmp(a, "--coverage")) {
            coverage = true;
        } else if (!strcmp(a, "--selftest")) {
            return dt_selftest();
        } else if (!strcmp(a, "-v")) {
            o.verbose++;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "korch-difftest: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (o.threads < 1) o.threads = 1;
    /* bf16 is refused on CPUs without AVX512_BF16: nothing to test there
     * (77: CTest's skipped) */
    if (korch_precision_check_cpu(o.precision) != KORCH_OK) {
        printf("skipped: %s\n", korch_last_error());
        return 77;
    }
    /* feature layout: both layouts, unless --layout fixed one */
    if ((o.features & DT_FEAT_LAYOUT) && o.n_layouts == 0)
        o.n_layouts = 2, o.layouts[0] = KORCH_LAYOUT_CHANNELS_LAST, o.layouts[1] = KORCH_LAYOUT_KEEP;
#ifdef _OPENMP
    omp_set_num_threads(o.threads);
#endif
    if (range)
        for (unsigned long long s = lo; s <= hi; s++) push(&seeds, s, NULL);
    if (gen_only) { /* models only: DIR/seed-N.onnx */
        mkdir(gen_only, 0755);
        int bad = 0;
        for (int i = 0; i < seeds.n; i++) {
            char path[4200];
            snprintf(path, sizeof path, "%s/seed-%llu.onnx", gen_only, (unsigned long long)seeds.v[i]);
            if (dt_generate_features(seeds.v[i], o.features & DT_FEAT_GENERATOR, path, NULL) != KORCH_OK) {
                fprintf(stderr, "korch-difftest: seed %llu: %s\n", (unsigned long long)seeds.v[i], korch_last_error());
                bad = 1;
            }
        }
        return bad;
    }
    char tmp[] = "/tmp/korch-difftest-XXXXXX";
    bool own_work = !work;
    if (own_work && !(work = mkdtemp(tmp))) {
        perror("korch-difftest: mkdtemp");
        return 2;
    }
    mkdir(work, 0755);
    mkdir(o.keep_dir, 0755);
    o.work_dir = work;
    /* nothing of korch's may touch the user's cache */
    setenv("XDG_CACHE_HOME", work, 1);

    dt_stats st;
    memset(&st, 0, sizeof st);
    long known_failed = 0, xpass = 0;
    double t0 = now_s();
    int rc = 0;
    signal(SIGTERM, on_stop);
    signal(SIGINT, on_stop);
    for (int i = 0; i < seeds.n; i++) {
        if (stop_requested) {
            printf("stopped before seed %llu (%d of %d seeds done)\n", (unsigned long long)seeds.v[i], i, seeds.n);
            break;
        }
        if (i > 0 && i % 50 == 0)
            fprintf(stderr, "progress: %d of %d seeds, next %llu, %ld failures, %.0f s\n", i, seeds.n,
                    (unsigned long long)seeds.v[i], st.failures, now_s() - t0);
        if (state) { /* the seed under test, for a campaign to name a crash and resume after it */
            FILE *f = fopen(state, "w");
            if (f) fprintf(f, "%llu\n", (unsigned long long)seeds.v[i]), fclose(f);
        }
        long before = st.failures;
        if (dt_check_seed(&o, seeds.v[i], &st) != KORCH_OK) {
            fprintf(stderr, "korch-difftest: seed %llu: harness error: %s\n", (unsigned long long)seeds.v[i],
                    korch_last_error());
            rc = 2;
            break;
        }
        const char *why = known_reason(&known, seeds.v[i]);
        /* "[avx512] reason": the fault needs AVX-512 code (a compiler bug in
         * AVX-512 code generation); on other CPUs the seed must simply pass.
         * "[no-avx512] reason": the converse */
        if (why && !strncmp(why, "[avx512] ", 9)) {
            __builtin_cpu_init();
            why = __builtin_cpu_supports("avx512f") ? why + 9 : NULL;
        } else if (why && !strncmp(why, "[no-avx512] ", 12)) { /* the converse: a fault of CPUs without it */
            __builtin_cpu_init();
            why = __builtin_cpu_supports("avx512f") ? NULL : why + 12;
        }
        if (why && st.failures > before) {
            printf("KNOWN seed %llu: %s\n", (unsigned long long)seeds.v[i], why);
            known_failed++;
            st.failures = before;
        } else if (why) {
            printf("XPASS seed %llu passes but is listed as known (%s): remove it from the list\n",
                   (unsigned long long)seeds.v[i], why);
            xpass++;
        }
        fflush(stdout);
    }
    double secs = now_s() - t0;
    if (coverage) {
        printf("generated patterns:\n");
        dt_coverage_print(&st.coverage, stdout);
    }
    char gen_name[96], feat[64];
    if (o.features)
        snprintf(gen_name, sizeof gen_name, "generator v%d, features %s v%d", DT_GEN_VERSION,
                 dt_features_name(o.features, feat, sizeof feat), DT_FEAT_VERSION);
    else
        snprintf(gen_name, sizeof gen_name, "generator v%d", DT_GEN_VERSION);
    printf("difftest (%s): %ld graphs (%ld primitives), %ld plans compared, %ld failures (%ld refused models), "
           "%ld known, %ld xpass, %ld fused kernels exercised, %.1f s, %.2f graphs/s, worst passing error/bound "
           "%.3f (seed %llu)\n",
           gen_name, st.graphs, st.prims, st.plans, st.failures, st.gen_errors, known_failed, xpass, st.candidates, secs,
           secs > 0 ? (double)st.graphs / secs : 0.0, st.worst_ratio, (unsigned long long)st.worst_seed);
    if (o.n_layouts > 1)
        printf("layout auto: %ld graphs checked in both layouts, %ld lowered to the same primitive graph in both\n",
               st.layout_graphs, st.same_layout);
    if (st.if_converted_graphs)
        printf("if-conversion: %ld graphs with a converted If checked, bit for bit, against the reference with their "
               "Ifs kept whole\n",
               st.if_converted_graphs);
    if (o.bf16_mixed)
        printf("bf16-mixed: %ld of %ld linear primitives kept in float32\n", st.mixed_kept, st.mixed_linear);
    if (o.verify)
        printf("verified path: %ld candidate kernels excluded as wrong, %ld plans refused\n", st.excluded, st.refused);
    if (st.second_backend)
        printf("second backends: %ld candidates also run as the generator's depthwise convolutions\n",
               st.second_backend);
    if (o.verbose)
        printf("plans equal to the previous strategy's (not run again): %ld\n", st.same_plans);
    if (o.verbose)
        printf("time: generate+load %.1f s, reference %.1f s, optimize %.1f s, executor plans %.1f s, "
               "forced kernels built %.1f s, forced plans run %.1f s\n",
               st.t_gen, st.t_reference, st.t_optimize, st.t_executor, st.t_runner_build, st.t_runner_run);
    if (own_work) nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; i < seeds.n; i++) free(seeds.why[i]);
    for (int i = 0; i < known.n; i++) free(known.why[i]);
    free(seeds.v), free(seeds.why), free(known.v), free(known.why);
    if (rc) return rc;
    if (require_second && st.second_backend == 0) {
        printf("FAIL: --require-second-backend: no forced candidate ran on a second backend\n");
        return 1;
    }
    return st.failures || xpass ? 1 : 0;
}

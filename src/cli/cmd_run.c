#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_files.h"
#include "cli/cli_inputs.h"
#include "core/half.h"
#include "frontend/onnx_load.h"
#include "io/npy.h"
#include "ops/reference.h"
#include "runtime/plan.h"
#include "verify/verify.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static void help(void) {
    printf("usage: korch run MODEL|PLAN --input NAME=FILE... [--output-dir DIR] [--threads N]\n"
           "                 [--bench N [--profile] [--profile-csv FILE]] [--input-shape NAME=DIMS]... [-q]\n\n"
           "Runs MODEL (an .onnx file, with the reference executor) or PLAN (made by\n"
           "'korch optimize'; its model must be unchanged) on the given inputs and\n"
           "writes one .npy file per graph output into DIR, named after the output\n"
           "tensor with every character outside [A-Za-z0-9._-] replaced by '_'.\n\n"
           "  --input NAME=FILE       input tensor from a .npy file or an ONNX TensorProto\n"
           "                          (.pb); FILE alone binds the next unbound input\n"
           "  --output-dir DIR        where to write outputs (created if missing); without it\n"
           "                          (and without --bench) each output's shape and range is printed\n"
           "  --threads N             OpenMP threads (default: all cores)\n"
           "  --bench N               after one warm-up run, time N runs; the last line\n"
           "                          printed is 'median_ms=X min_ms=Y max_ms=Z runs=N';\n"
           "                          for a plan it is preceded by 'peak_arena_bytes=B'.\n"
           "                          Inputs not given are filled with seeded random data.\n"
           "  --profile               (a plan, with --bench) time every kernel inside the\n"
           "                          plan and print the medians against the latencies it\n"
           "                          was profiled at in isolation: per backend, the time\n"
           "                          between kernels, the 20 largest differences\n"
           "  --profile-csv FILE      (a plan, with --bench) every kernel's in-plan median\n"
           "                          and minimum and its profiled latency, as CSV\n"
           "  --verify                (a plan) first check it against the reference executor\n"
           "                          on the given inputs, or on seeded random inputs when\n"
           "                          not all are given; exit 1 if it differs\n"
           "  --input-shape NAME=DIMS fix a symbolic input dimension\n"
           "  -q, --quiet             no notes (seeded inputs, outputs not written, passive\n"
           "                          waiting); errors, outputs and --bench lines stay\n");
}

typedef struct run_input {
    const char *name; /* NULL: next unbound */
    const char *path;
} run_input;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One run: the plan's executor, or the reference executor for a model. */
static korch_status run_once(korch_cli_plan *plan, const korch_graph *g, const korch_tensor *inputs,
                             korch_tensor *outputs) {
    return plan ? korch_cli_plan_run(plan, g, inputs, outputs) : korch_reference_run(g, inputs, outputs);
}

/* The command line of one `korch run`. */
typedef struct run_args {
    const char *model, *out_dir, *profile_csv;
    long threads, bench;
    bool profile, verify, quiet;
    korch_cli_shapes shapes;
    run_input inputs[256];
    int n_inputs;
} run_args;

/* What one `korch run` holds: the input files, the graph, the bound inputs
 * and the outputs (freed by run_state_free). */
typedef struct run_state {
    korch_cli_plan *plan; /* NULL: a model, run by the reference executor */
    korch_tensor files[256];
    char *file_names[256];
    korch_graph *g;
    korch_tensor *bound, *outputs, *seeded;
    bool all_given; /* every graph input came from a file */
} run_state;

/* Step 1: the flags. Returns 0, a usage exit code, or -1 after --help. */
static int parse_args(int argc, char **argv, run_args *a) {
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *arg = argv[i], *v = NULL;
        if (korch_cli_is_help(arg)) {
            help();
            return -1;
        } else if (strcmp(arg, "--input") == 0 || strcmp(arg, "-i") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
            else if (a->n_inputs >= 256) rc = korch_cli_usage_error("run", "too many inputs");
            else {
                const char *eq = strchr(v, '=');
                /* NAME=FILE; a bare FILE (no '=') binds the next unbound input */
                a->inputs[a->n_inputs].name = eq ? v : NULL;
                a->inputs[a->n_inputs].path = eq ? eq + 1 : v;
                a->n_inputs++;
            }
        } else if (strcmp(arg, "--output-dir") == 0 || strcmp(arg, "-o") == 0) {
            if (!(a->out_dir = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
        } else if (strcmp(arg, "--threads") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
            else if (korch_cli_parse_threads("run", v, &a->threads) != 0)
                rc = 2;
        } else if (strcmp(arg, "--bench") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
            else if (!korch_cli_parse_int(v, 1, 1000000, &a->bench))
                rc = korch_cli_usage_error("run", "--bench expects a positive number of runs");
        } else if (strcmp(arg, "--profile") == 0) {
            a->profile = true;
        } else if (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0) {
            a->quiet = true;
        } else if (strcmp(arg, "--verify") == 0) {
            a->verify = true;
        } else if (strcmp(arg, "--profile-csv") == 0) {
            if (!(a->profile_csv = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
        } else if (strcmp(arg, "--input-shape") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
            else rc = korch_cli_shapes_add(&a->shapes, v, "run");
        } else if (arg[0] == '-') {
            rc = korch_cli_usage_error("run", "unknown option %s", arg);
        } else if (!a->model) {
            a->model = arg;
        } else {
            rc = korch_cli_usage_error("run", "more than one model given");
        }
    }
    return rc;
}

/* Step 2: what the file is and where outputs go, before any work; a plan
 * file is opened (its model and input shapes replace the argument's). */
static int check_args(run_args *a, run_state *st) {
    int rc = 0;
    if (!a->model) rc = korch_cli_usage_error("run", "no model given");
    if (rc == 0 && (a->profile || a->profile_csv) && !a->bench)
        rc = korch_cli_usage_error("run", "--profile and --profile-csv time the runs of --bench N; give --bench");
    if (rc == 0) rc = korch_cli_expect_model_or_plan(a->model, "run");
    if (rc == 0 && a->out_dir) rc = korch_cli_make_output_dir("--output-dir", a->out_dir);
    if (rc == 0 && a->profile_csv) rc = korch_cli_check_output_file("--profile-csv", a->profile_csv);
    /* a plan file: run its model with the plan's kernels and input shapes */
    if (rc == 0 && korch_plan_file_is_plan(a->model)) {
        rc = korch_cli_plan_open(a->model, &st->plan, &a->model, &a->shapes);
        if (rc == 0 && a->threads == 0) a->threads = korch_cli_plan_threads(st->plan);
    }
    if (rc == 0 && a->verify && !st->plan)
        rc = korch_cli_usage_error("run", "--verify checks a plan against the reference executor; %s is a model",
                                   a->model);
    if (rc == 0 && (a->profile || a->profile_csv) && !st->plan)
        rc = korch_cli_usage_error("run", "--profile and --profile-csv time a plan's kernels; %s is a model, not a plan",
                                   a->model);
    return rc;
}

/* Step 3: the input files, read first (their shapes fix symbolic
 * dimensions), and bound to graph inputs by name or in order: binding[i] is
 * the file of graph input i, or -1. Files that fix a symbolic dimension add
 * their shape to a->shapes. st->g is the model loaded unprepared. */
static int bind_inputs(run_args *a, run_state *st, int **binding_out) {
    char vbuf[200]; /* tensor names in messages: one printable line */
    int rc = 0;
    for (int k = 0; k < a->n_inputs; k++)
        if (korch_tensor_file_read(a->inputs[k].path, &st->files[k], &st->file_names[k]) != KORCH_OK)
            return korch_cli_fail();
    /* Load once unprepared to resolve names and symbolic dims. */
    if (st->plan ? korch_cli_plan_graph(st->plan, NULL, &st->g) != KORCH_OK
                 : korch_onnx_load_file(a->model, &st->g) != KORCH_OK || korch_graph_validate(st->g) != KORCH_OK)
        return korch_cli_fail();
    korch_graph *g = st->g;
    int *binding = calloc((size_t)g->n_inputs + 1, sizeof *binding);
    if (!binding) return korch_cli_fail();
    *binding_out = binding;
    for (int i = 0; i < g->n_inputs; i++) binding[i] = -1;
    for (int k = 0; k < a->n_inputs; k++) {
        int slot = -1;
        if (a->inputs[k].name) {
            size_t len = (size_t)(strchr(a->inputs[k].name, '=') - a->inputs[k].name);
            for (int i = 0; i < g->n_inputs; i++) {
                const char *vn = g->values[g->inputs[i]].name;
                if (strlen(vn) == len && strncmp(vn, a->inputs[k].name, len) == 0) slot = i;
            }
            if (slot < 0) {
                char buf[256], names[400];
                snprintf(buf, sizeof buf, "%.*s", (int)len, a->inputs[k].name);
                rc = korch_cli_usage_error("run", "--input %s=...: the model has no input named \"%s\"; its inputs are %s",
                                           korch_printable(buf, vbuf, sizeof vbuf), vbuf,
                                           korch_cli_input_names(g, names, sizeof names));
            }
        } else {
            for (int i = 0; i < g->n_inputs && slot < 0; i++)
                if (binding[i] < 0) slot = i;
            if (slot < 0) {
                char names[400];
                rc = korch_cli_usage_error("run", "more --input files than model inputs (it has %d: %s)", g->n_inputs,
                                           korch_cli_input_names(g, names, sizeof names));
            }
        }
        if (rc) break;
        if (binding[slot] >= 0) {
            rc = korch_cli_usage_error("run", "input \"%s\" is given twice",
                                       korch_printable(g->values[g->inputs[slot]].name, vbuf, sizeof vbuf));
            break;
        }
        binding[slot] = k;
    }
    for (int i = 0; i < g->n_inputs && rc == 0; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        if (binding[i] < 0) {
            if (!a->bench && !a->verify)
                rc = korch_cli_usage_error("run", "no --input given for graph input \"%s\" (--bench N alone runs on "
                                                  "seeded random data)",
                                           korch_printable(v->name, vbuf, sizeof vbuf));
            continue;
        }
        const korch_tensor *file = &st->files[binding[i]];
        bool user_fixed = false;
        for (int s = 0; s < a->shapes.count; s++) user_fixed |= strcmp(a->shapes.items[s].name, v->name) == 0;
        /* a file that cannot fit is named with its shape (not as the
         * --input-shape it would otherwise turn into) */
        if (!user_fixed && korch_cli_input_fits(v, &file->shape, a->inputs[binding[i]].path)) {
            rc = 1;
            break;
        }
        if (!user_fixed) {
            char spec[512], dims[160];
            snprintf(spec, sizeof spec, "%s=%s", v->name, korch_shape_format(&file->shape, dims, sizeof dims));
            if (file->shape.rank == 0) snprintf(spec, sizeof spec, "%s=scalar", v->name);
            rc = korch_cli_shapes_add(&a->shapes, spec, "run");
        }
    }
    return rc;
}

/* Step 4: the model loaded with the shapes, each graph input bound to its
 * file or, when none was given, to seeded random data; outputs allocated. */
static int load_bound(const run_args *a, run_state *st, const int *binding) {
    char vbuf[200];
    korch_graph_free(st->g);
    st->g = NULL;
    /* a plan's model is inferred as the plan was made: its shapes (which
     * `shapes` repeats) and its guarded inputs specialized */
    korch_cli_plan *plan = st->plan;
    /* a plan's model is inferred as the plan was made: its shapes (which
     * `shapes` repeats) and its guarded inputs specialized */
    korch_status lst = plan ? korch_cli_plan_graph(plan, &a->shapes, &st->g)
                            : korch_frontend_load(a->model, a->shapes.items, a->shapes.count, &st->g);
    if (lst != KORCH_OK) return korch_cli_fail();
    const korch_graph *g = st->g;
    st->bound = calloc((size_t)g->n_inputs + 1, sizeof *st->bound);
    st->outputs = calloc((size_t)g->n_outputs + 1, sizeof *st->outputs);
    if (!st->bound || !st->outputs) return korch_cli_fail();
    int rc = 0;
    for (int i = 0; i < g->n_inputs && rc == 0; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        if (binding[i] >= 0) {
            korch_tensor *t = &st->files[binding[i]];
            if (v->dtype == KORCH_DTYPE_BFLOAT16 && t->dtype == KORCH_DTYPE_FLOAT32) {
                /* NumPy has no bfloat16: a float32 file is rounded to it (docs/precision.md) */
                korch_tensor narrow;
                if (korch_half_convert(t, KORCH_DTYPE_BFLOAT16, &narrow) != KORCH_OK) {
                    rc = korch_cli_fail();
                    break;
                }
                korch_tensor_free(t);
                *t = narrow;
            }
            if (t->dtype != v->dtype) {
                fprintf(stderr, "korch: error: input \"%s\" is %s, the file gives %s\n",
                        korch_printable(v->name, vbuf, sizeof vbuf), korch_dtype_name(v->dtype),
                        korch_dtype_name(t->dtype));
                rc = 1;
            }
            st->bound[i] = (korch_tensor){.dtype = t->dtype, .shape = t->shape, .data = t->data};
        } else {
            if (!st->seeded && (st->seeded = calloc((size_t)g->n_inputs + 1, sizeof *st->seeded)) != NULL &&
                korch_verify_seeded_inputs(g, 0, st->seeded) != KORCH_OK) {
                rc = korch_cli_fail();
                break;
            }
            if (!st->seeded) rc = korch_cli_fail();
            else {
                st->bound[i] = st->seeded[i]; /* owned by bound[] now */
                st->seeded[i] = (korch_tensor){0};
                if ((a->bench || a->out_dir) && !a->quiet) /* --verify alone makes its own seeded inputs */
                    fprintf(stderr, "korch: note: input \"%s\" not given; using seeded random data\n",
                            korch_printable(v->name, vbuf, sizeof vbuf));
            }
        }
    }
    st->all_given = true;
    for (int i = 0; i < g->n_inputs; i++) st->all_given &= binding[i] >= 0;
    return rc;
}

/* Step 5: one run, its outputs printed or written to --output-dir. */
static int run_and_write(const run_args *a, run_state *st) {
    const korch_graph *g = st->g;
    if (run_once(st->plan, g, st->bound, st->outputs) != KORCH_OK) return korch_cli_fail();
    if (!a->out_dir && !a->bench) korch_cli_print_outputs(g, st->outputs, a->quiet); /* never a silent run */
    if (!a->out_dir) return 0;
    int rc = korch_cli_make_output_dir("--output-dir", a->out_dir);
    for (int i = 0; i < g->n_outputs && rc == 0; i++) {
        char fname[300], path[4096];
        korch_sanitize_filename(g->values[g->outputs[i]].name, fname, sizeof fname);
        snprintf(path, sizeof path, "%s/%s.npy", a->out_dir, fname);
        /* NumPy has no bfloat16: such an output is written widened to float32 (exact) */
        korch_tensor wide = {0};
        bool widen = st->outputs[i].dtype == KORCH_DTYPE_BFLOAT16;
        if (widen && korch_half_convert(&st->outputs[i], KORCH_DTYPE_FLOAT32, &wide) != KORCH_OK) {
            rc = korch_cli_fail();
            break;
        }
        if (korch_npy_write(path, widen ? &wide : &st->outputs[i]) != KORCH_OK) rc = korch_cli_fail();
        korch_tensor_free(&wide);
    }
    return rc;
}

/* Step 6 (--bench N): N timed runs, with --profile / --profile-csv the
 * plan's kernels timed inside it; the last line is the contract's. */
static int bench_runs(const run_args *a, run_state *st) {
    const korch_graph *g = st->g;
    korch_cli_plan *plan = st->plan;
    long bench = a->bench;
    bool per_kernel = a->profile || a->profile_csv;
    int rc = 0;
    double *times = calloc((size_t)bench, sizeof *times);
    korch_cli_profile *prof = NULL;
    if (times && per_kernel) {
        prof = korch_cli_profile_create(korch_cli_plan_get(plan)->n_kernels, bench);
        if (prof) korch_cli_plan_time_kernels(plan, korch_cli_profile_slots(prof));
    }
    if (!times || (per_kernel && !prof)) {
        fprintf(stderr, "korch: error: out of memory for --bench %ld\n", bench);
        free(times);
        korch_cli_profile_free(prof);
        return 1;
    }
    if (!a->quiet) korch_cli_omp_note();
    for (long r = 0; r < bench && rc == 0; r++) {
        /* A plan writes into the same output buffers every run, as a C
         * API caller's bound buffers (allocating them afresh would time
         * page faults: 64 MiB of output costs ~15 ms of them); the
         * reference executor allocates its outputs itself. */
        if (!plan)
            for (int i = 0; i < g->n_outputs; i++) korch_tensor_free(&st->outputs[i]);
        double t0 = korch_now_ms();
        if (run_once(plan, g, st->bound, st->outputs) != KORCH_OK) rc = korch_cli_fail();
        times[r] = korch_now_ms() - t0;
        if (prof) korch_cli_profile_record(prof);
    }
    if (rc == 0) {
        qsort(times, (size_t)bench, sizeof *times, cmp_double);
        double median = bench % 2 ? times[bench / 2] : 0.5 * (times[bench / 2 - 1] + times[bench / 2]);
        /* the memory plan's arena (intermediate values), before the contract's last line */
        if (prof && a->profile) korch_cli_profile_report(prof, korch_cli_plan_get(plan), median, 20, stdout);
        if (prof && a->profile_csv &&
            korch_cli_profile_write_csv(prof, korch_cli_plan_get(plan), a->profile_csv) != KORCH_OK)
            rc = korch_cli_fail();
        if (plan) printf("peak_arena_bytes=%zu\n", korch_cli_plan_arena_bytes(plan));
        printf("median_ms=%.4f min_ms=%.4f max_ms=%.4f runs=%ld\n", median, times[0], times[bench - 1], bench);
    }
    if (prof) korch_cli_plan_time_kernels(plan, NULL);
    korch_cli_profile_free(prof);
    free(times);
    return rc;
}

static void run_state_free(run_state *st, int n_files) {
    const korch_graph *g = st->g;
    if (g && st->outputs)
        for (int i = 0; i < g->n_outputs; i++) korch_tensor_free(&st->outputs[i]);
    if (g && st->bound)
        for (int i = 0; i < g->n_inputs; i++) korch_tensor_free(&st->bound[i]);
    free(st->bound);
    free(st->outputs);
    for (int i = 0; g && st->seeded && i < g->n_inputs; i++) korch_tensor_free(&st->seeded[i]);
    free(st->seeded);
    for (int k = 0; k < n_files; k++) {
        korch_tensor_free(&st->files[k]);
        free(st->file_names[k]);
    }
    korch_graph_free(st->g); /* before the plan: an embedded plan's graph borrows its weights */
    korch_cli_plan_close(st->plan);
}

int korch_cmd_run(int argc, char **argv) {
    run_args a = {0};
    run_state st = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc == 0) rc = check_args(&a, &st);
    if (rc) {
        korch_cli_plan_close(st.plan);
        korch_cli_shapes_free(&a.shapes);
        return rc < 0 ? 0 : rc; /* -1: --help */
    }
#ifdef _OPENMP
    if (a.threads > 0) omp_set_num_threads((int)a.threads);
#endif
    int *binding = NULL;
    rc = bind_inputs(&a, &st, &binding);
    if (rc == 0) rc = load_bound(&a, &st, binding);
    free(binding);
    if (rc == 0 && a.verify)
        rc = korch_cli_plan_verify(st.plan, st.g, st.all_given ? st.bound : NULL, (int)a.threads);
    bool more = !a.verify || a.bench || a.out_dir; /* --verify alone: nothing else was asked for */
    if (rc == 0 && more && st.plan) rc = korch_cli_plan_prepare(st.plan, st.g, (int)a.threads);
    if (rc == 0 && more) rc = run_and_write(&a, &st);
    if (rc == 0 && more && a.bench) rc = bench_runs(&a, &st);
    run_state_free(&st, a.n_inputs);
    korch_cli_shapes_free(&a.shapes);
    return rc;
}

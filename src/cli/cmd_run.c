#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "frontend/onnx_load.h"
#include "io/npy.h"
#include "runtime/plan.h"
#include "runtime/reference.h"
#include "verify/verify.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static void help(void) {
    printf("usage: korch run MODEL|PLAN --input NAME=FILE... [--output-dir DIR] [--threads N]\n"
           "                 [--bench N [--profile] [--profile-csv FILE]] [--input-shape NAME=DIMS]...\n\n"
           "Runs MODEL (an .onnx file, with the reference executor) or PLAN (made by\n"
           "'korch optimize'; its model must be unchanged) on the given inputs and\n"
           "writes one .npy file per graph output into DIR, named after the output\n"
           "tensor with every character outside [A-Za-z0-9._-] replaced by '_'.\n\n"
           "  --input NAME=FILE       input tensor from a .npy file or an ONNX TensorProto\n"
           "                          (.pb); FILE alone binds the next unbound input\n"
           "  --output-dir DIR        where to write outputs (created if missing)\n"
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
           "  --input-shape NAME=DIMS fix a symbolic input dimension\n");
}

typedef struct run_input {
    const char *name; /* NULL: next unbound */
    const char *path;
} run_input;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* mkdir -p: creates every missing level of `dir`. */
static int make_dir(const char *dir) {
    char path[4096], buf[256];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path) {
        fprintf(stderr, "korch: error: bad output directory \"%s\"\n", korch_printable(dir, buf, sizeof buf));
        return 1;
    }
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char saved = path[i];
        path[i] = '\0';
        struct stat sb;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "korch: error: cannot create output directory \"%s\": %s\n",
                    korch_printable(path, buf, sizeof buf), strerror(errno));
            return 1;
        }
        if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "korch: error: output path \"%s\" exists and is not a directory\n",
                    korch_printable(path, buf, sizeof buf));
            return 1;
        }
        path[i] = saved;
    }
    return 0;
}

/* One run: the plan's executor, or the reference executor for a model. */
static korch_status run_once(korch_cli_plan *plan, const korch_graph *g, const korch_tensor *inputs,
                             korch_tensor *outputs) {
    return plan ? korch_cli_plan_run(plan, g, inputs, outputs) : korch_reference_run(g, inputs, outputs);
}

/* What the command line asks for. */
typedef struct run_args {
    const char *model, *out_dir, *profile_csv;
    long threads, bench;
    bool profile, verify;
    korch_cli_shapes shapes;
    run_input inputs[256];
    int n_inputs;
} run_args;

/* Parses argv into *a. Returns 0, a usage exit code, or -1 after --help. */
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
            else if (!korch_cli_parse_int(v, 1, 1024, &a->threads))
                rc = korch_cli_usage_error("run", "--threads expects a number from 1 to 1024");
        } else if (strcmp(arg, "--bench") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
            else if (!korch_cli_parse_int(v, 1, 1000000, &a->bench))
                rc = korch_cli_usage_error("run", "--bench expects a positive number of runs");
        } else if (strcmp(arg, "--profile") == 0) {
            a->profile = true;
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
    if (rc == 0 && !a->model) rc = korch_cli_usage_error("run", "no model given");
    if (rc == 0 && (a->profile || a->profile_csv) && !a->bench)
        rc = korch_cli_usage_error("run", "--profile and --profile-csv time the runs of --bench N; give --bench");
    return rc;
}

/* --output-dir: one .npy per graph output. Returns 0 or an exit code. */
static int write_outputs(const char *out_dir, const korch_graph *g, const korch_tensor *outputs) {
    int rc = make_dir(out_dir);
    for (int i = 0; i < g->n_outputs && rc == 0; i++) {
        char fname[300], path[4096];
        korch_sanitize_filename(g->values[g->outputs[i]].name, fname, sizeof fname);
        snprintf(path, sizeof path, "%s/%s.npy", out_dir, fname);
        if (korch_npy_write(path, &outputs[i]) != KORCH_OK) rc = korch_cli_fail();
    }
    return rc;
}

/* --bench N (with --profile / --profile-csv): N timed runs after the
 * warm-up the caller did; prints the contract's last line. Returns 0 or an
 * exit code. */
static int bench_runs(const run_args *a, korch_cli_plan *plan, const korch_graph *g, const korch_tensor *bound,
                      korch_tensor *outputs) {
    long bench = a->bench;
    bool profiled = a->profile || a->profile_csv;
    int rc = 0;
    double *times = calloc((size_t)bench, sizeof *times);
    korch_cli_profile *prof = NULL;
    if (times && profiled) {
        prof = korch_cli_profile_create(korch_cli_plan_get(plan)->n_kernels, bench);
        if (prof) korch_cli_plan_time_kernels(plan, korch_cli_profile_slots(prof));
    }
    if (!times || (profiled && !prof)) {
        fprintf(stderr, "korch: error: out of memory for --bench %ld\n", bench);
        free(times);
        korch_cli_profile_free(prof);
        return 1;
    }
    for (long r = 0; r < bench && rc == 0; r++) {
        /* A plan writes into the same output buffers every run, as a C
         * API caller's bound buffers (allocating them afresh would time
         * page faults: 64 MiB of output costs ~15 ms of them); the
         * reference executor allocates its outputs itself. */
        if (!plan)
            for (int i = 0; i < g->n_outputs; i++) korch_tensor_free(&outputs[i]);
        double t0 = korch_now_ms();
        if (run_once(plan, g, bound, outputs) != KORCH_OK) rc = korch_cli_fail();
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

int korch_cmd_run(int argc, char **argv) {
    run_args args = {0};
    int rc = parse_args(argc, argv, &args);
    if (rc < 0) {
        korch_cli_shapes_free(&args.shapes);
        return 0;
    }
    const char *model = args.model, *out_dir = args.out_dir, *profile_csv = args.profile_csv;
    long threads = args.threads, bench = args.bench;
    bool profile = args.profile, verify = args.verify;
    run_input *inputs = args.inputs;
    int n_inputs = args.n_inputs;
    korch_cli_shapes shapes = args.shapes;
    char vbuf[200]; /* tensor names in messages: one printable line */
    /* a plan file: run its model with the plan's kernels and input shapes */
    korch_cli_plan *plan = NULL;
    if (rc == 0 && korch_plan_file_is_plan(model)) {
        rc = korch_cli_plan_open(model, &plan, &model, &shapes);
        if (rc == 0 && threads == 0) threads = korch_cli_plan_threads(plan);
    }
    if (rc == 0 && verify && !plan)
        rc = korch_cli_usage_error("run", "--verify checks a plan against the reference executor; %s is a model", model);
    if (rc == 0 && (profile || profile_csv) && !plan)
        rc = korch_cli_usage_error("run", "--profile and --profile-csv time a plan's kernels; %s is a model, not a plan",
                                   model);
    if (rc) {
        korch_cli_shapes_free(&shapes);
        return rc;
    }
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads((int)threads);
#endif

    /* Read input files first: their shapes fix symbolic dimensions. */
    korch_tensor files[256];
    char *file_names[256];
    memset(files, 0, sizeof files);
    memset(file_names, 0, sizeof file_names);
    korch_graph *g = NULL;
    korch_tensor *bound = NULL, *outputs = NULL, *seeded = NULL;
    for (int k = 0; k < n_inputs; k++) {
        if (korch_tensor_file_read(inputs[k].path, &files[k], &file_names[k]) != KORCH_OK) {
            rc = korch_cli_fail();
            goto done;
        }
    }
    /* Load once unprepared to resolve names and symbolic dims. */
    if (korch_onnx_load_file(model, &g) != KORCH_OK || korch_graph_validate(g) != KORCH_OK) {
        rc = korch_cli_fail();
        goto done;
    }
    int *binding = calloc((size_t)g->n_inputs + 1, sizeof *binding);
    if (!binding) {
        rc = korch_cli_fail();
        goto done;
    }
    for (int i = 0; i < g->n_inputs; i++) binding[i] = -1;
    for (int k = 0; k < n_inputs; k++) {
        int slot = -1;
        if (inputs[k].name) {
            size_t len = (size_t)(strchr(inputs[k].name, '=') - inputs[k].name);
            for (int i = 0; i < g->n_inputs; i++) {
                const char *vn = g->values[g->inputs[i]].name;
                if (strlen(vn) == len && strncmp(vn, inputs[k].name, len) == 0) slot = i;
            }
            if (slot < 0) {
                char buf[256];
                snprintf(buf, sizeof buf, "%.*s", (int)len, inputs[k].name);
                fprintf(stderr, "korch: error: --input %s: the model has no input of that name\n",
                        korch_printable(buf, vbuf, sizeof vbuf));
                rc = 2;
            }
        } else {
            for (int i = 0; i < g->n_inputs && slot < 0; i++)
                if (binding[i] < 0) slot = i;
            if (slot < 0) {
                fprintf(stderr, "korch: error: more --input files than model inputs\n");
                rc = 2;
            }
        }
        if (rc) break;
        if (binding[slot] >= 0) {
            fprintf(stderr, "korch: error: input \"%s\" is given twice\n",
                    korch_printable(g->values[g->inputs[slot]].name, vbuf, sizeof vbuf));
            rc = 2;
            break;
        }
        binding[slot] = k;
    }
    korch_cli_shapes auto_shapes = {0};
    for (int i = 0; i < g->n_inputs && rc == 0; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        if (binding[i] < 0) {
            if (!bench && !verify) {
                fprintf(stderr, "korch: error: no --input given for graph input \"%s\"\n",
                        korch_printable(v->name, vbuf, sizeof vbuf));
                rc = 2;
            }
            continue;
        }
        bool user_fixed = false;
        for (int s = 0; s < shapes.count; s++) user_fixed |= strcmp(shapes.items[s].name, v->name) == 0;
        if (!user_fixed) {
            char spec[512], dims[160];
            snprintf(spec, sizeof spec, "%s=%s", v->name, korch_shape_format(&files[binding[i]].shape, dims, sizeof dims));
            if (files[binding[i]].shape.rank == 0) snprintf(spec, sizeof spec, "%s=scalar", v->name);
            rc = korch_cli_shapes_add(&shapes, spec, "run");
        }
    }
    korch_cli_shapes_free(&auto_shapes);
    if (rc) {
        free(binding);
        goto done;
    }
    korch_graph_free(g);
    g = NULL;
    if (korch_frontend_load(model, shapes.items, shapes.count, &g) != KORCH_OK) {
        free(binding);
        rc = korch_cli_fail();
        goto done;
    }
    bound = calloc((size_t)g->n_inputs + 1, sizeof *bound);
    outputs = calloc((size_t)g->n_outputs + 1, sizeof *outputs);
    if (!bound || !outputs) {
        free(binding);
        rc = korch_cli_fail();
        goto done;
    }
    for (int i = 0; i < g->n_inputs && rc == 0; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        if (binding[i] >= 0) {
            korch_tensor *t = &files[binding[i]];
            if (t->dtype != v->dtype) {
                fprintf(stderr, "korch: error: input \"%s\" is %s, the file gives %s\n",
                        korch_printable(v->name, vbuf, sizeof vbuf),
                        korch_dtype_name(v->dtype), korch_dtype_name(t->dtype));
                rc = 1;
            }
            bound[i] = (korch_tensor){.dtype = t->dtype, .shape = t->shape, .data = t->data};
        } else {
            if (!seeded && (seeded = calloc((size_t)g->n_inputs + 1, sizeof *seeded)) != NULL &&
                korch_verify_seeded_inputs(g, 0, seeded) != KORCH_OK) {
                rc = korch_cli_fail();
                break;
            }
            if (!seeded) rc = korch_cli_fail();
            else {
                bound[i] = seeded[i]; /* owned by bound[] now */
                seeded[i] = (korch_tensor){0};
                if (bench || out_dir) /* --verify alone makes its own seeded inputs */
                    fprintf(stderr, "korch: note: input \"%s\" not given; using seeded random data\n",
                            korch_printable(v->name, vbuf, sizeof vbuf));
            }
        }
    }
    bool all_given = true;
    for (int i = 0; i < g->n_inputs; i++) all_given &= binding[i] >= 0;
    free(binding);
    if (rc) goto done;
    if (verify && (rc = korch_cli_plan_verify(plan, g, all_given ? bound : NULL, (int)threads)) != 0) goto done;
    if (verify && !bench && !out_dir) goto done; /* nothing else was asked for */
    if (plan && (rc = korch_cli_plan_prepare(plan, g, (int)threads)) != 0) goto done;

    if (run_once(plan, g, bound, outputs) != KORCH_OK) {
        rc = korch_cli_fail();
        goto done;
    }
    if (out_dir && (rc = write_outputs(out_dir, g, outputs)) != 0) goto done;
    if (bench) rc = bench_runs(&args, plan, g, bound, outputs);
done:
    if (g && outputs)
        for (int i = 0; i < g->n_outputs; i++) korch_tensor_free(&outputs[i]);
    if (g && bound)
        for (int i = 0; i < g->n_inputs; i++) korch_tensor_free(&bound[i]);
    free(bound);
    free(outputs);
    for (int i = 0; g && seeded && i < g->n_inputs; i++) korch_tensor_free(&seeded[i]);
    free(seeded);
    for (int k = 0; k < n_inputs; k++) {
        korch_tensor_free(&files[k]);
        free(file_names[k]);
    }
    korch_cli_shapes_free(&shapes);
    korch_cli_plan_close(plan);
    korch_graph_free(g);
    return rc;
}

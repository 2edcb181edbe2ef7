#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_files.h"
#include "cli/cli_inputs.h"
#include "core/half.h"
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

/* One run: the plan's executor, or the reference executor for a model. */
static korch_status run_once(korch_cli_plan *plan, const korch_graph *g, const korch_tensor *inputs,
                             korch_tensor *outputs) {
    return plan ? korch_cli_plan_run(plan, g, inputs, outputs) : korch_reference_run(g, inputs, outputs);
}

int korch_cmd_run(int argc, char **argv) {
    const char *model = NULL, *out_dir = NULL, *profile_csv = NULL;
    long threads = 0, bench = 0;
    bool profile = false, verify = false;
    korch_cli_shapes shapes = {0};
    run_input inputs[256];
    int n_inputs = 0, rc = 0;
    char vbuf[200]; /* tensor names in messages: one printable line */
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i], *v = NULL;
        if (korch_cli_is_help(a)) {
            help();
            korch_cli_shapes_free(&shapes);
            return 0;
        } else if (strcmp(a, "--input") == 0 || strcmp(a, "-i") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
            else if (n_inputs >= 256) rc = korch_cli_usage_error("run", "too many inputs");
            else {
                const char *eq = strchr(v, '=');
                /* NAME=FILE; a bare FILE (no '=') binds the next unbound input */
                inputs[n_inputs].name = eq ? v : NULL;
                inputs[n_inputs].path = eq ? eq + 1 : v;
                n_inputs++;
            }
        } else if (strcmp(a, "--output-dir") == 0 || strcmp(a, "-o") == 0) {
            if (!(out_dir = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
        } else if (strcmp(a, "--threads") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
            else if (!korch_cli_parse_int(v, 1, 1024, &threads))
                rc = korch_cli_usage_error("run", "--threads expects a number from 1 to 1024");
        } else if (strcmp(a, "--bench") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
            else if (!korch_cli_parse_int(v, 1, 1000000, &bench))
                rc = korch_cli_usage_error("run", "--bench expects a positive number of runs");
        } else if (strcmp(a, "--profile") == 0) {
            profile = true;
        } else if (strcmp(a, "--verify") == 0) {
            verify = true;
        } else if (strcmp(a, "--profile-csv") == 0) {
            if (!(profile_csv = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
        } else if (strcmp(a, "--input-shape") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "run"))) rc = 2;
            else rc = korch_cli_shapes_add(&shapes, v, "run");
        } else if (a[0] == '-') {
            rc = korch_cli_usage_error("run", "unknown option %s", a);
        } else if (!model) {
            model = a;
        } else {
            rc = korch_cli_usage_error("run", "more than one model given");
        }
    }
    if (rc == 0 && !model) rc = korch_cli_usage_error("run", "no model given");
    if (rc == 0 && (profile || profile_csv) && !bench)
        rc = korch_cli_usage_error("run", "--profile and --profile-csv time the runs of --bench N; give --bench");
    /* what the file is, and the outputs, before any work */
    if (rc == 0) rc = korch_cli_expect_model_or_plan(model, "run");
    if (rc == 0 && out_dir) rc = korch_cli_make_output_dir("--output-dir", out_dir);
    if (rc == 0 && profile_csv) rc = korch_cli_check_output_file("--profile-csv", profile_csv);
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
    if (plan ? korch_cli_plan_graph(plan, NULL, &g) != KORCH_OK
             : korch_onnx_load_file(model, &g) != KORCH_OK || korch_graph_validate(g) != KORCH_OK) {
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
                char buf[256], names[400];
                snprintf(buf, sizeof buf, "%.*s", (int)len, inputs[k].name);
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
    korch_cli_shapes auto_shapes = {0};
    for (int i = 0; i < g->n_inputs && rc == 0; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        if (binding[i] < 0) {
            if (!bench && !verify)
                rc = korch_cli_usage_error("run", "no --input given for graph input \"%s\" (--bench N alone runs on "
                                                  "seeded random data)",
                                           korch_printable(v->name, vbuf, sizeof vbuf));
            continue;
        }
        bool user_fixed = false;
        for (int s = 0; s < shapes.count; s++) user_fixed |= strcmp(shapes.items[s].name, v->name) == 0;
        /* a file that cannot fit is named with its shape (not as the
         * --input-shape it would otherwise turn into) */
        if (!user_fixed && korch_cli_input_fits(v, &files[binding[i]].shape, inputs[binding[i]].path)) {
            rc = 1;
            break;
        }
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
    /* a plan's model is inferred as the plan was made: its shapes (which
     * `shapes` repeats) and its guarded inputs specialized */
    if ((plan ? korch_cli_plan_graph(plan, &shapes, &g) : korch_frontend_load(model, shapes.items, shapes.count, &g)) !=
        KORCH_OK) {
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
    if (!out_dir && !bench) korch_cli_print_outputs(g, outputs); /* never a silent run */
    if (out_dir) {
        if ((rc = korch_cli_make_output_dir("--output-dir", out_dir))) goto done;
        for (int i = 0; i < g->n_outputs; i++) {
            char fname[300], path[4096];
            korch_sanitize_filename(g->values[g->outputs[i]].name, fname, sizeof fname);
            snprintf(path, sizeof path, "%s/%s.npy", out_dir, fname);
            /* NumPy has no bfloat16: such an output is written widened to float32 (exact) */
            korch_tensor wide = {0};
            bool widen = outputs[i].dtype == KORCH_DTYPE_BFLOAT16;
            if (widen && korch_half_convert(&outputs[i], KORCH_DTYPE_FLOAT32, &wide) != KORCH_OK) {
                rc = korch_cli_fail();
                goto done;
            }
            korch_status wst = korch_npy_write(path, widen ? &wide : &outputs[i]);
            korch_tensor_free(&wide);
            if (wst != KORCH_OK) {
                rc = korch_cli_fail();
                goto done;
            }
        }
    }
    if (bench) {
        double *times = calloc((size_t)bench, sizeof *times);
        korch_cli_profile *prof = NULL;
        if (times && (profile || profile_csv)) {
            prof = korch_cli_profile_create(korch_cli_plan_get(plan)->n_kernels, bench);
            if (prof) korch_cli_plan_time_kernels(plan, korch_cli_profile_slots(prof));
        }
        if (!times || ((profile || profile_csv) && !prof)) {
            fprintf(stderr, "korch: error: out of memory for --bench %ld\n", bench);
            free(times);
            korch_cli_profile_free(prof);
            rc = 1;
            goto done;
        }
        korch_cli_omp_note();
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
            if (prof && profile) korch_cli_profile_report(prof, korch_cli_plan_get(plan), median, 20, stdout);
            if (prof && profile_csv && korch_cli_profile_write_csv(prof, korch_cli_plan_get(plan), profile_csv) != KORCH_OK)
                rc = korch_cli_fail();
            if (plan) printf("peak_arena_bytes=%zu\n", korch_cli_plan_arena_bytes(plan));
            printf("median_ms=%.4f min_ms=%.4f max_ms=%.4f runs=%ld\n", median, times[0], times[bench - 1], bench);
        }
        if (prof) korch_cli_plan_time_kernels(plan, NULL);
        korch_cli_profile_free(prof);
        free(times);
    }
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
    korch_graph_free(g); /* before the plan: an embedded plan's graph borrows its weights */
    korch_cli_plan_close(plan);
    return rc;
}

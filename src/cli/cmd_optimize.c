/* korch optimize: model -> candidates -> profiles -> choice -> plan file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/buckets.h"
#include "api/pipeline.h"
#include "cli/cli.h"
#include "cli/cli_files.h"
#include "cli/cli_orchestrate.h"
#include "ir/nodeset.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static void help(void) {
    printf("usage: korch optimize MODEL|PLAN -o PLAN [--db PATH] [--threads N] [--strategy S]\n"
           "                      [--budget SECONDS] [--input-shape NAME=DIMS]... [--layout L]\n"
           "                      [--no-embed]\n\n"
           "Finds the fastest set of kernels for MODEL on this machine and writes it as a\n"
           "plan file (docs/plan-format.md) for 'korch run PLAN' and 'korch explain PLAN'.\n"
           "The plan carries the model's graph and weights: copied alone to another\n"
           "machine, it runs there. Given a plan instead of MODEL, optimises the plan's\n"
           "model again (for this machine, when the plan was made on another).\n\n"
           "  -o, --output PLAN        the plan file to write\n"
           "  --no-embed               name MODEL by path instead of carrying it (for huge\n"
           "                           models; the plan then needs MODEL, unchanged)\n"
           "  --strategy S             optimal (default): the binary linear program;\n"
           "                           greedy: TVM-style rule-based fusion;\n"
           "                           none: one kernel per primitive\n"
           "  --db PATH                profile database (default $XDG_CACHE_HOME/korch/profile.db)\n"
           "  --threads N              threads kernels are tuned and run with (default: all cores)\n"
           "  --budget SECONDS         bound on the total kernel tuning time\n"
           "  --input-shape NAME=DIMS  fix a symbolic input dimension; braces list several\n"
           "                           (ids=1x{32,64,128}, or ids=1x{16..512}: the powers\n"
           "                           of two from 16 to 512): one plan file holding a\n"
           "                           plan per shape (a bucket), picked by the inputs'\n"
           "                           shapes when it runs\n"
           "  --layout L               nchw: convolutions in the model's layout; channels-last:\n"
           "                           every convolution channels-last (the layout pass);\n"
           "                           auto: optimise both, keep nchw if predicted 5%% faster\n"
           "                           (default: KORCH_LAYOUT, else channels-last; docs/layout.md)\n");
    korch_cli_orchestrate_help();
}

/* One layout's plan (args->layout): model -> candidates -> profiles -> plan.
 * *n_prims: the primitives of its graph, for the summary; *keep (may be NULL)
 * receives the session's model, which the plan file carries. Returns an exit
 * code; *out is NULL after a dry run. */
static int optimize_once(const korch_cli_orchestrate_args *args, korch_strategy strategy, korch_plan **out,
                         int *n_prims, korch_plan_model *keep) {
    korch_cli_session session;
    *out = NULL;
    int rc = korch_cli_orchestrate_begin(args, strategy, &session);
    if (rc == 0 && !args->dry_run) {
        if (korch_cli_orchestrate_solve(args, &session, strategy, out) != KORCH_OK ||
            korch_cli_orchestrate_finish_plan(args, &session, *out) != KORCH_OK)
            rc = korch_cli_fail();
        *n_prims = session.model.pg->n_nodes;
    }
    if (rc != 0) {
        korch_plan_free(*out);
        *out = NULL;
    }
    /* the model handed over, not closed with the session */
    korch_cli_orchestrate_end_keep(&session, rc == 0 && keep && !keep->graph ? keep : NULL);
    return rc;
}

/* optimize_once, and under --precision bf16, when the per-primitive choice
 * kept some linear primitives in float32, the every-primitive-bf16 plan too
 * (the same profile database): the faster predicted is kept
 * (korch_pipeline_keep_chosen_precision). */
static int optimize_layout(const korch_cli_orchestrate_args *args, korch_strategy strategy, korch_plan **out,
                           int *n_prims, korch_plan_model *keep) {
    int rc = optimize_once(args, strategy, out, n_prims, keep);
    if (rc != 0 || args->dry_run ||
        !korch_pipeline_compare_precision(args->precision, args->bf16_everywhere, args->estimate, *out))
        return rc;
    FILE *log = args->quiet ? NULL : stdout;
    if (log) fprintf(log, "precision: optimising again with every linear primitive in bf16, to compare\n");
    korch_cli_orchestrate_args all = *args; /* (a shallow copy: nothing in it is freed here) */
    all.bf16_everywhere = true;
    korch_plan *other = NULL;
    int n_other = 0;
    rc = optimize_once(&all, strategy, &other, &n_other, NULL); /* the same model: *keep stands */
    if (rc != 0) {
        korch_plan_free(*out);
        *out = NULL;
        return rc;
    }
    if (korch_pipeline_keep_chosen_precision(*out, other, log)) {
        korch_plan_free(other);
        return 0;
    }
    korch_plan_free(*out);
    *out = other;
    *n_prims = n_other;
    return 0;
}

/* Whether lowering the plan's model with `other` gives the plan's own
 * primitive graph (a model without convolutions: the layout pass changes
 * nothing), so that optimising it again would find the same plan. */
static bool same_graph(const korch_cli_orchestrate_args *args, const korch_plan *plan, korch_layout_strategy other) {
    korch_plan_model m;
    if (korch_plan_model_load_layout(args->model, args->shapes.items, args->shapes.count, other, &m) != KORCH_OK) {
        korch_error_clear();
        return false;
    }
    bool same = korch_pgraph_hash(m.pg) == plan->pgraph_hash;
    korch_plan_model_close(&m);
    return same;
}

/* nchw is kept only when predicted this much faster: profiles taken on a
 * busy machine differ by a few percent from run to run, and ViT-B/16's two
 * plans (one convolution apart) were predicted 0.5% apart the wrong way
 * round (docs/layout.md); the single-operator models that want nchw win by
 * 11-55%. */
#define AUTO_MARGIN 0.05

/* --layout auto: the model optimised channels-last (the pass's default),
 * then channels-first, sharing the profile database; the nchw plan is kept
 * if it is predicted at least AUTO_MARGIN faster, else the channels-last one.
 * docs/layout.md says why this is per model and what it costs. */
static int optimize_auto(korch_cli_orchestrate_args *args, korch_strategy strategy, korch_plan **out,
                         int *n_prims, korch_plan_model *keep) {
    FILE *log = args->quiet ? NULL : stdout;
    korch_plan *last = NULL, *first = NULL;
    int n_last = 0, n_first = 0;
    args->layout_given = true;
    args->layout = KORCH_LAYOUT_CHANNELS_LAST;
    if (log) fprintf(log, "layout: auto: optimising channels-last (1 of 2)\n");
    int rc = optimize_layout(args, strategy, &last, &n_last, keep); /* the model is the same in both layouts */
    if (rc == 0 && last && same_graph(args, last, KORCH_LAYOUT_KEEP)) {
        if (log)
            fprintf(log, "layout: nchw and channels-last lower to the same primitive graph (nothing to relayout): "
                         "kept channels-last\n");
        *out = last;
        *n_prims = n_last;
        return 0;
    }
    args->layout = KORCH_LAYOUT_KEEP;
    if (rc == 0 && log) fprintf(log, "layout: auto: optimising nchw (2 of 2)\n");
    if (rc == 0) rc = optimize_layout(args, strategy, &first, &n_first, NULL);
    if (rc != 0 || args->dry_run) {
        korch_plan_free(last);
        korch_plan_free(first);
        return rc;
    }
    bool keep_first = first->predicted_ms < last->predicted_ms * (1.0 - AUTO_MARGIN);
    bool within_margin = !keep_first && first->predicted_ms < last->predicted_ms;
    if (log)
        fprintf(log, "layout: nchw plan %.4f ms predicted, channels-last %.4f ms: kept %s", first->predicted_ms,
                last->predicted_ms, keep_first ? "nchw" : "channels-last");
    if (log && within_margin) fprintf(log, " (nchw must be predicted %.0f%% faster to be kept)", AUTO_MARGIN * 100);
    if (log) fprintf(log, "\n");
    *out = keep_first ? first : last;
    *n_prims = keep_first ? n_first : n_last;
    korch_plan_free(keep_first ? last : first);
    return 0;
}

static int optimize_one(korch_cli_orchestrate_args *args, korch_strategy strategy, bool layout_auto,
                        korch_plan **out, int *n_prims, korch_plan_model *keep) {
    return layout_auto ? optimize_auto(args, strategy, out, n_prims, keep)
                       : optimize_layout(args, strategy, out, n_prims, keep);
}

/* One bucket of --input-shape with braces, for the library's loop over
 * them (api/buckets.h: the same loop as the C API's input_shapes): the
 * bucket's shapes (the ones given without braces first) stand in for
 * args->shapes while optimize_one runs. The CLI prints its own errors, so
 * the exit code is kept here and the loop gets a status. */
typedef struct bucket_job {
    korch_cli_orchestrate_args *args;
    korch_strategy strategy;
    bool layout_auto;
    korch_layout_strategy layout; /* --layout auto sets them per run */
    bool layout_given;
    int rc;
} bucket_job;

static korch_status optimize_bucket(void *user, const korch_input_shape *shapes, int n_shapes, korch_plan **plan,
                                    int *n_prims, korch_plan_model *keep) {
    bucket_job *job = user;
    korch_cli_orchestrate_args *args = job->args;
    if (n_shapes > KORCH_CLI_MAX_SHAPES) {
        job->rc = korch_cli_usage_error("optimize", "too many --input-shape options");
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "too many --input-shape options");
    }
    korch_cli_shapes given = args->shapes; /* its names stay where they are: the bucket's shapes point to them */
    memset(&args->shapes, 0, sizeof args->shapes);
    memcpy(args->shapes.items, shapes, (size_t)n_shapes * sizeof *shapes);
    args->shapes.count = n_shapes; /* no storage: nothing to free */
    args->layout = job->layout;
    args->layout_given = job->layout_given;
    job->rc = optimize_one(args, job->strategy, job->layout_auto, plan, n_prims, keep);
    args->shapes = given;
    return job->rc == 0 ? KORCH_OK : korch_error(KORCH_ERR_RUNTIME, "korch optimize: exit %d", job->rc);
}

/* --input-shape with braces: one plan file holding a plan per shape
 * (docs/plan-format.md, "Shape buckets"); each bucket is optimised from
 * the model specialized to its shapes, by optimize_one. */
static int optimize_buckets(korch_cli_orchestrate_args *args, const korch_buckets *buckets, korch_strategy strategy,
                            bool layout_auto, korch_plan **out, int *n_prims, korch_plan_model *keep) {
    bucket_job job = {.args = args, .strategy = strategy, .layout_auto = layout_auto, .layout = args->layout,
                      .layout_given = args->layout_given};
    korch_input_shape fixed[KORCH_CLI_MAX_SHAPES]; /* args->shapes changes per bucket */
    memcpy(fixed, args->shapes.items, (size_t)args->shapes.count * sizeof *fixed);
    korch_buckets_optimize_options o = {.fixed = fixed, .n_fixed = args->shapes.count, .optimize = optimize_bucket,
                                        .user = &job, .log = args->quiet ? NULL : stdout};
    korch_status st = korch_buckets_optimize(buckets, &o, out, n_prims, keep);
    if (job.rc != 0) return job.rc; /* a bucket failed, and said why */
    /* refused before any bucket ran: the specification (more than 256 shapes) */
    if (st == KORCH_ERR_INVALID_ARGUMENT) return korch_cli_usage_error("optimize", "%s", korch_last_error());
    return st == KORCH_OK ? 0 : korch_cli_fail();
}

/* --input-shape NAME=DIMS with braces, checked as it comes */
static int add_bucket_spec(korch_buckets **buckets, const char *spec) {
    if (!*buckets && korch_buckets_create("--input-shape", buckets) != KORCH_OK) return korch_cli_fail();
    if (korch_buckets_add(*buckets, spec) != KORCH_OK) return korch_cli_usage_error("optimize", "%s", korch_last_error());
    return 0;
}

int korch_cmd_optimize(int argc, char **argv) {
    korch_cli_orchestrate_args args;
    korch_cli_orchestrate_args_init(&args);
    const char *output = NULL;
    bool embed = true;
    korch_strategy strategy = KORCH_STRATEGY_OPTIMAL;
    bool layout_auto = false;
    korch_buckets *buckets = NULL; /* --input-shape with braces */
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i], *v = NULL;
        int used = 0;
        if (korch_cli_is_help(a)) {
            help();
            korch_cli_orchestrate_args_free(&args);
            return 0;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (!(output = korch_cli_value(argc, argv, &i, "optimize"))) rc = 2;
        } else if (strcmp(a, "--no-embed") == 0) {
            embed = false;
        } else if (strcmp(a, "--strategy") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "optimize"))) rc = 2;
            else if (!korch_strategy_parse(v, &strategy))
                rc = korch_cli_usage_error("optimize", "--strategy expects none, greedy or optimal");
        } else if (strcmp(a, "--layout") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "optimize"))) rc = 2;
            else if (!(layout_auto = strcmp(v, "auto") == 0) &&
                     !(args.layout_given = korch_layout_strategy_parse(v, &args.layout)))
                rc = korch_cli_usage_error("optimize", "--layout expects nchw, channels-last or auto, not \"%s\"", v);
        } else if (strcmp(a, "--input-shape") == 0 && i + 1 < argc && korch_buckets_spec_is_list(argv[i + 1])) {
            rc = add_bucket_spec(&buckets, argv[++i]);
        } else if ((rc = korch_cli_orchestrate_option(&args, argc, argv, &i, "optimize", &used)) != 0 || used) {
            continue;
        } else if (a[0] == '-') {
            rc = korch_cli_usage_error("optimize", "unknown option %s", a);
        } else if (!args.model) {
            args.model = a;
        } else {
            rc = korch_cli_usage_error("optimize", "more than one model given");
        }
    }
    if (rc == 0 && !args.model) rc = korch_cli_usage_error("optimize", "no model given");
    if (rc == 0 && !output && !args.dry_run) rc = korch_cli_usage_error("optimize", "no output plan given (-o PLAN)");
    /* before any work: the model is a model, and the plan can be written */
    if (rc == 0) rc = korch_cli_expect_model_or_plan(args.model, "optimize");
    if (rc == 0 && output && !args.dry_run) rc = korch_cli_check_output_file("-o", output);
    if (rc == 0 && buckets && korch_buckets_check_fixed(buckets, args.shapes.items, args.shapes.count) != KORCH_OK)
        rc = korch_cli_usage_error("optimize", "%s", korch_last_error());
    if (rc) {
        korch_buckets_free(buckets);
        korch_cli_orchestrate_args_free(&args);
        return rc;
    }
    double t0 = korch_now_ms();
    korch_plan *plan = NULL;
    int n_prims = 0;
    korch_plan_model kept; /* the model (its bytes, or the plan it came from) the plan file carries */
    memset(&kept, 0, sizeof kept);
    rc = buckets ? optimize_buckets(&args, buckets, strategy, layout_auto, &plan, &n_prims, &kept)
                 : optimize_one(&args, strategy, layout_auto, &plan, &n_prims, &kept);
    if (rc == 0 && !args.dry_run && korch_plan_write(plan, output, &kept, args.model, embed) != KORCH_OK)
        rc = korch_cli_fail();
    korch_plan_model_close(&kept);
    if (rc == 0 && !args.dry_run && !args.quiet)
        korch_pipeline_log_plan(stdout, plan, n_prims, output, (korch_now_ms() - t0) / 1e3);
    korch_plan_free(plan);
    korch_buckets_free(buckets);
    korch_cli_orchestrate_args_free(&args);
    return rc;
}

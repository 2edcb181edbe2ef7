#include "cli/cli_orchestrate.h"

#include "cli/cli_inputs.h"
#include "core/half.h"

#include "frontend/subgraph.h"
#include "io/npy.h"
#include "profile/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef _OPENMP
#include <omp.h>
#endif

void korch_cli_orchestrate_args_init(korch_cli_orchestrate_args *a) {
    memset(a, 0, sizeof *a);
    a->command = "optimize";
    a->time_limit_s = 120;
    a->max_kernel_nodes = korch_candidate_options_default().max_kernel_nodes;
    a->max_partition_nodes = korch_candidate_options_default().max_partition_nodes;
    a->verify_seed = KORCH_VERIFY_DEFAULT_SEED;
}

void korch_cli_orchestrate_args_free(korch_cli_orchestrate_args *a) { korch_cli_shapes_free(&a->shapes); }

static bool parse_seconds(const char *text, double *out) {
    char *end = NULL;
    double v = strtod(text, &end);
    if (!*text || *end || !(v >= 0) || v > 1e7) return false;
    *out = v;
    return true;
}

int korch_cli_orchestrate_option(korch_cli_orchestrate_args *a, int argc, char **argv, int *i, const char *command,
                                 int *used) {
    const char *opt = argv[*i], *v = NULL;
    *used = 1;
    a->command = command; /* for the usage errors of later stages */
    if (strcmp(opt, "--db") == 0) {
        if (!(a->db = korch_cli_value(argc, argv, i, command))) return 2;
    } else if (strcmp(opt, "--cache-dir") == 0) {
        if (!(a->cache_dir = korch_cli_value(argc, argv, i, command))) return 2;
    } else if (strcmp(opt, "--threads") == 0) {
        if (!(v = korch_cli_value(argc, argv, i, command))) return 2;
        if (korch_cli_parse_threads(command, v, &a->threads) != 0) return 2;
    } else if (strcmp(opt, "--budget") == 0) {
        if (!(v = korch_cli_value(argc, argv, i, command))) return 2;
        if (!parse_seconds(v, &a->budget_s)) return korch_cli_usage_error(command, "--budget expects seconds");
    } else if (strcmp(opt, "--time-limit") == 0) {
        if (!(v = korch_cli_value(argc, argv, i, command))) return 2;
        if (!parse_seconds(v, &a->time_limit_s)) return korch_cli_usage_error(command, "--time-limit expects seconds");
    } else if (strcmp(opt, "--max-kernel-nodes") == 0) {
        if (!(v = korch_cli_value(argc, argv, i, command))) return 2;
        if (!korch_cli_parse_int(v, 1, 64, &a->max_kernel_nodes))
            return korch_cli_usage_error(command, "--max-kernel-nodes expects 1 to 64");
    } else if (strcmp(opt, "--max-partition-nodes") == 0) {
        if (!(v = korch_cli_value(argc, argv, i, command))) return 2;
        if (!korch_cli_parse_int(v, 1, KORCH_PARTITION_MAX_NODES, &a->max_partition_nodes))
            return korch_cli_usage_error(command, "--max-partition-nodes expects 1 to %d", KORCH_PARTITION_MAX_NODES);
    } else if (strcmp(opt, "--input-shape") == 0) {
        if (!(v = korch_cli_value(argc, argv, i, command))) return 2;
        return korch_cli_shapes_add(&a->shapes, v, command);
    } else if (strcmp(opt, "--specialize") == 0) {
        if (!(v = korch_cli_value(argc, argv, i, command))) return 2;
        const char *eq = strchr(v, '=');
        if (!eq || eq == v || !eq[1])
            return korch_cli_usage_error(command,
                                         "--specialize expects NAME=VALUE (a number such as 16000, true/false) or "
                                         "NAME=FILE (.npy or .pb); got \"%s\"",
                                         v);
        if (a->n_specialize >= 64) return korch_cli_usage_error(command, "too many --specialize options");
        a->specialize[a->n_specialize++] = v;
    } else if (strcmp(opt, "--no-verify") == 0) {
        a->no_verify = true;
    } else if (strcmp(opt, "--verify-seed") == 0) {
        if (!(v = korch_cli_value(argc, argv, i, command))) return 2;
        if (!korch_cli_parse_int(v, 0, 2147483647L, &a->verify_seed))
            return korch_cli_usage_error(command, "--verify-seed expects a number from 0 to 2147483647");
    } else if (strcmp(opt, "--input") == 0 || strcmp(opt, "-i") == 0) {
        if (!(v = korch_cli_value(argc, argv, i, command))) return 2;
        if (a->n_verify_inputs >= 64) return korch_cli_usage_error(command, "too many --input files");
        a->verify_inputs[a->n_verify_inputs++] = v;
    } else if (strcmp(opt, "--no-prune") == 0) {
        a->no_prune = true;
    } else if (strcmp(opt, "--reprofile") == 0) {
        a->reprofile = true;
    } else if (strcmp(opt, "--closed-loop") == 0) {
        if (!(v = korch_cli_value(argc, argv, i, command))) return 2;
        if (!korch_cli_parse_int(v, 0, 20, &a->closed_loop))
            return korch_cli_usage_error(command, "--closed-loop expects a number of plans to measure, 0 to 20");
    } else if (strcmp(opt, "--precision") == 0) {
        if (!(v = korch_cli_value(argc, argv, i, command))) return 2;
        if (!korch_precision_parse_choice(v, &a->precision, &a->bf16_everywhere))
            return korch_cli_usage_error(command, "--precision expects fp32, bf16 or bf16-all, not \"%s\"", v);
    } else if (strcmp(opt, "--estimate") == 0) {
        a->estimate = true;
    } else if (strcmp(opt, "--dry-run") == 0) {
        a->dry_run = true;
    } else if (strcmp(opt, "--quiet") == 0 || strcmp(opt, "-q") == 0) {
        a->quiet = true;
    } else {
        *used = 0;
    }
    return 0;
}

void korch_cli_orchestrate_help(void) {
    printf("\nmore options:\n"
           "  --precision P            fp32 (default): the model's float32 arithmetic; bf16: convolutions\n"
           "                           and matmuls on bfloat16 operands with float32 sums where that is\n"
           "                           measurably faster (each timed alone in both; the others stay\n"
           "                           float32); bf16-all: every one in bf16 (needs AVX512_BF16; the\n"
           "                           plan records it; docs/precision.md)\n"
           "  --time-limit SECONDS     wall clock for the binary programs (default 120)\n"
           "  --max-kernel-nodes N     size cap of enumerated candidate kernels (default %d)\n"
           "  --max-partition-nodes N  primitives per partition, at most %d (default %d)\n"
           "  --no-prune               profile candidates that cannot beat their own split\n"
           "  --input NAME=FILE        check the plan on this input too (.npy or .pb; repeat per input;\n"
           "                           every graph input needs one)\n"
           "  --specialize NAME=VALUE  treat graph input NAME as this constant (a number, true/false,\n"
           "                           or a .npy/.pb file of at most %d bytes) so Ifs on it resolve;\n"
           "                           the plan is then only right for that value and refuses others\n"
           "                           at run time (repeat per input; docs/control-flow.md)\n"
           "  --verify-seed N          seed of the random inputs kernels and plans are checked on\n"
           "                           (default 20241125)\n"
           "  --no-verify              do not check kernels and plans against the reference\n"
           "                           (the plan is marked unverified; for studying korch itself)\n"
           "  --dry-run                build the candidates, print their counts, stop\n"
           "  --estimate               latencies from a roofline model instead of measurements\n"
           "                           (quick; predictions are rough, kernels use default schedules)\n"
           "  --closed-loop N          run the chosen plan in place, correct the costs of kernels\n"
           "                           that are off their profiles and solve again; at most N plans\n"
           "                           measured (1: measure and record only; default 0: off)\n"
           "  --reprofile              measure this model's kernels again, ignoring and replacing\n"
           "                           their stored profiles (see also 'korch db')\n"
           "  --cache-dir DIR          compiled kernel cache (default $XDG_CACHE_HOME/korch/kernels)\n"
           "  -q, --quiet              no statistics\n",
           korch_candidate_options_default().max_kernel_nodes, KORCH_PARTITION_MAX_NODES,
           korch_candidate_options_default().max_partition_nodes, KORCH_SPECIALIZE_MAX_BYTES);
}

static bool is_tensor_file(const char *value) {
    size_t n = strlen(value);
    return (n > 4 && strcasecmp(value + n - 4, ".npy") == 0) || (n > 3 && strcasecmp(value + n - 3, ".pb") == 0);
}

/* The model (korch_pipeline_load), with every --specialize input fixed to
 * its value. */
static int load_model(const korch_cli_orchestrate_args *a, korch_pipeline_config *c, korch_cli_session *s) {
    korch_input_value values[64];
    korch_tensor files[64];
    char names[64][256];
    memset(files, 0, sizeof files);
    int rc = 0;
    for (int k = 0; k < a->n_specialize && rc == 0; k++) {
        const char *spec = a->specialize[k], *eq = strchr(spec, '=');
        snprintf(names[k], sizeof names[k], "%.*s", (int)(eq - spec), spec);
        values[k] = (korch_input_value){.name = names[k]};
        if (!is_tensor_file(eq + 1)) {
            values[k].literal = eq + 1;
            continue;
        }
        korch_status st = korch_tensor_file_read(eq + 1, &files[k], NULL);
        if (st != KORCH_OK) {
            korch_error_prefix(st, "--specialize %s", spec);
            rc = korch_cli_fail();
        }
        values[k].value = &files[k];
    }
    c->values = values;
    c->n_values = a->n_specialize;
    if (rc == 0 && korch_pipeline_load(c, s) != KORCH_OK) rc = korch_cli_fail();
    c->values = NULL; /* read while loading only */
    c->n_values = 0;
    for (int k = 0; k < a->n_specialize; k++) korch_tensor_free(&files[k]);
    return rc;
}

/* --input NAME=FILE (or FILE, for the next unbound input): every graph
 * input needs one, with the model's dtype and shape. */
static int load_verify_inputs(const korch_cli_orchestrate_args *a, korch_cli_session *s) {
    const korch_graph *g = s->model.graph;
    if (a->n_verify_inputs == 0) return 0;
    char vbuf[200];
    s->verify_inputs = calloc((size_t)g->n_inputs + 1, sizeof *s->verify_inputs);
    if (!s->verify_inputs) return korch_cli_fail();
    bool *bound = calloc((size_t)g->n_inputs + 1, sizeof *bound);
    int rc = bound ? 0 : 1;
    for (int k = 0; k < a->n_verify_inputs && rc == 0; k++) {
        const char *spec = a->verify_inputs[k], *eq = strchr(spec, '=');
        const char *path = eq ? eq + 1 : spec;
        int slot = -1;
        for (int i = 0; i < g->n_inputs && slot < 0; i++) {
            const char *vn = g->values[g->inputs[i]].name;
            if (eq ? (strlen(vn) == (size_t)(eq - spec) && strncmp(vn, spec, (size_t)(eq - spec)) == 0) : !bound[i])
                slot = i;
        }
        if (slot < 0) {
            char names[400];
            korch_cli_input_names(g, names, sizeof names);
            rc = eq ? korch_cli_usage_error(a->command, "--input %s: the model has no input of that name; its inputs are %s",
                                            korch_printable(spec, vbuf, sizeof vbuf), names)
                    : korch_cli_usage_error(a->command, "--input %s: more --input files than model inputs (it has %d: %s)",
                                            korch_printable(spec, vbuf, sizeof vbuf), g->n_inputs, names);
            break;
        }
        if (bound[slot]) {
            char nbuf[200];
            rc = korch_cli_usage_error(a->command, "--input %s: input \"%s\" is given twice",
                                       korch_printable(spec, vbuf, sizeof vbuf),
                                       korch_printable(g->values[g->inputs[slot]].name, nbuf, sizeof nbuf));
            break;
        }
        char *name = NULL;
        if (korch_tensor_file_read(path, &s->verify_inputs[slot], &name) != KORCH_OK) {
            rc = korch_cli_fail();
            break;
        }
        free(name);
        bound[slot] = true;
        const korch_value *v = &g->values[g->inputs[slot]];
        korch_tensor *t = &s->verify_inputs[slot];
        if (v->dtype == KORCH_DTYPE_BFLOAT16 && t->dtype == KORCH_DTYPE_FLOAT32) {
            korch_tensor narrow; /* NumPy has no bfloat16 (docs/precision.md) */
            if (korch_half_convert(t, KORCH_DTYPE_BFLOAT16, &narrow) != KORCH_OK) {
                rc = korch_cli_fail();
                break;
            }
            korch_tensor_free(t);
            *t = narrow;
        }
        if (t->dtype != v->dtype || !korch_shape_equal(&t->shape, &v->shape)) {
            char want[96], got[96];
            fprintf(stderr, "korch: error: --input %s: the file holds %s %s; input \"%s\" is %s %s\n",
                    korch_printable(spec, vbuf, sizeof vbuf), korch_dtype_name(t->dtype),
                    korch_shape_format(&t->shape, got, sizeof got), v->name, korch_dtype_name(v->dtype),
                    korch_shape_format(&v->shape, want, sizeof want));
            rc = 2;
        }
    }
    for (int i = 0; i < g->n_inputs && rc == 0; i++)
        if (!bound[i])
            rc = korch_cli_usage_error(a->command, "--input given for some inputs but not for \"%s\"",
                                       korch_printable(g->values[g->inputs[i]].name, vbuf, sizeof vbuf));
    free(bound);
    return rc;
}

int korch_cli_orchestrate_begin(const korch_cli_orchestrate_args *a, korch_strategy most, korch_cli_session *s) {
    memset(s, 0, sizeof *s);
    int threads = (int)a->threads;
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads(threads);
    else threads = omp_get_max_threads();
#endif
    FILE *log = a->quiet ? NULL : stdout;
    korch_pipeline_config c = {
        .model_path = a->model, .shapes = a->shapes.items, .n_shapes = a->shapes.count,
        .layout = a->layout_given ? a->layout : korch_cli_env_get()->layout, .precision = a->precision,
        .bf16_everywhere = a->bf16_everywhere,
        .threads = threads,
        .profile = {.budget_s = a->budget_s, .db_path = a->db, .cache_dir = a->cache_dir, .quiet = a->quiet},
        .time_limit_s = a->time_limit_s, .max_kernel_nodes = (int)a->max_kernel_nodes,
        .max_partition_nodes = (int)a->max_partition_nodes, .no_prune = a->no_prune, .estimate = a->estimate,
        .verify = !a->no_verify && !a->dry_run, .verify_seed = (uint64_t)a->verify_seed,
        .progress = !a->quiet, /* -q: neither the bar nor the plain lines */
        .log = log};
    korch_cli_env_profile(&c.profile);
    /* --reprofile: every stored profile older than this run is measured again */
    if (a->reprofile) c.profile.fresh_after = korch_wall_s();
    if (load_model(a, &c, s)) return 1;
    if (c.verify) {
        int rc = load_verify_inputs(a, s); /* 2: a usage error */
        if (rc != 0) return rc;
    }
    if (korch_pipeline_prepare(&c, most, s) != KORCH_OK) return korch_cli_fail();
    if (a->dry_run) {
        korch_candidates_report(korch_orchestrator_candidates(s->orch), stdout);
        return 0;
    }
    if (korch_orchestrator_profile(s->orch) != KORCH_OK) return korch_cli_fail();
    return 0;
}

korch_status korch_cli_orchestrate_solve(const korch_cli_orchestrate_args *a, korch_cli_session *s,
                                         korch_strategy strategy, korch_plan **out) {
    return korch_pipeline_solve(s, strategy, (int)a->closed_loop, out);
}

korch_status korch_cli_orchestrate_finish_plan(const korch_cli_orchestrate_args *a, const korch_cli_session *s,
                                               korch_plan *plan) {
    return korch_pipeline_finish_plan(s, a->model, plan);
}

void korch_cli_orchestrate_end_keep(korch_cli_session *s, korch_plan_model *keep) { korch_pipeline_free_keep(s, keep); }

void korch_cli_orchestrate_end(korch_cli_session *s) { korch_pipeline_free(s); }

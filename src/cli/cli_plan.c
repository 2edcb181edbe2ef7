/* Plans on the command line: `korch run PLAN` reuses everything `korch run
 * MODEL` does (input binding, random inputs, output files, --bench) and only
 * swaps the reference executor for the plan's executor, and the model file
 * for the plan's model (its own, when embedded). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/onnx_load.h"
#include "runtime/executor.h"
#include "runtime/plan.h"
#include "verify/verify.h"

struct korch_cli_plan {
    char *plan_path;
    char *model_path;
    korch_plan *plan;
    korch_pgraph *pg;
    korch_executor *ex;
};

/* An external-reference plan: its model must be byte-for-byte the one the
 * plan was made for. */
static int check_named_model(korch_cli_plan *p, const char *plan_path) {
    p->model_path = korch_plan_model_path(p->plan, plan_path);
    uint8_t *bytes = NULL;
    size_t size = 0;
    char sha[65];
    if (!p->model_path || korch_read_file(p->model_path, KORCH_MAX_MODEL_BYTES, &bytes, &size) != KORCH_OK) {
        if (p->model_path) korch_error_prefix(KORCH_ERR_IO, "plan \"%s\" names model \"%s\"", plan_path, p->model_path);
        return korch_cli_fail();
    }
    korch_sha256_hex(bytes, size, sha);
    free(bytes);
    if (strcmp(sha, p->plan->model_sha256) != 0) {
        korch_error(KORCH_ERR_INVALID_MODEL,
                    "model \"%s\" has changed since plan \"%s\" was made (sha256 differs); re-run korch optimize",
                    p->model_path, plan_path);
        return korch_cli_fail();
    }
    return 0;
}

int korch_cli_plan_open(const char *plan_path, korch_cli_plan **out, const char **model_path,
                        korch_cli_shapes *shapes) {
    *out = NULL;
    korch_cli_plan *p = calloc(1, sizeof *p);
    if (!p) return korch_cli_fail();
    p->plan_path = strdup(plan_path);
    if (!p->plan_path || korch_plan_load(plan_path, &p->plan) != KORCH_OK) {
        korch_cli_plan_close(p);
        return korch_cli_fail();
    }
    korch_plan_note_foreign(p->plan, plan_path);
    if (p->plan->embedded) {
        /* the model is the plan's own: nothing else to find */
        p->model_path = strdup(plan_path);
        if (!p->model_path) {
            korch_cli_plan_close(p);
            return korch_cli_fail();
        }
    } else if (check_named_model(p, plan_path) != 0) {
        korch_cli_plan_close(p);
        return 1;
    }
    /* a bucketed plan: --input-shape chooses the bucket now; without it
     * the input files' shapes choose it (korch_cli_plan_graph) */
    if (p->plan->n_buckets && shapes->count == 0) {
        *model_path = p->model_path;
        *out = p;
        return 0;
    }
    if (p->plan->n_buckets && korch_plan_bucket_choose(&p->plan, plan_path, shapes->items, shapes->count) != KORCH_OK) {
        korch_cli_plan_close(p);
        return korch_cli_fail();
    }
    /* the plan fixes every input shape; --input-shape may only repeat them */
    for (int i = 0; i < p->plan->n_input_shapes; i++) {
        const korch_plan_shape *ps = &p->plan->input_shapes[i];
        bool given = false;
        for (int s = 0; s < shapes->count; s++) {
            if (strcmp(shapes->items[s].name, ps->name) != 0) continue;
            given = true;
            if (!korch_shape_equal(&shapes->items[s].shape, &ps->shape)) {
                char a[96];
                korch_cli_plan_close(p);
                return korch_cli_usage_error("run", "--input-shape %s: the plan was made for %s", ps->name,
                                             korch_shape_format(&ps->shape, a, sizeof a));
            }
        }
        if (given) continue;
        if (shapes->count >= KORCH_CLI_MAX_SHAPES) {
            korch_cli_plan_close(p);
            return korch_cli_usage_error("run", "the plan has too many inputs");
        }
        char *name = strdup(ps->name);
        if (!name) {
            korch_cli_plan_close(p);
            return korch_cli_fail();
        }
        shapes->storage[shapes->count] = name;
        shapes->items[shapes->count].name = name;
        shapes->items[shapes->count].shape = ps->shape;
        shapes->count++;
    }
    *model_path = p->model_path;
    *out = p;
    return 0;
}

korch_status korch_cli_plan_graph(korch_cli_plan *p, const korch_cli_shapes *shapes, korch_graph **out) {
    *out = NULL;
    /* a bucketed plan not chosen yet: the bucket of the input files' shapes */
    if (shapes && p->plan->n_buckets)
        KORCH_TRY(korch_plan_bucket_choose(&p->plan, p->plan_path, shapes->items, shapes->count));
    KORCH_TRY(korch_plan_load_graph(p->plan, p->plan_path, out));
    if (!shapes) return KORCH_OK;
    /* as the plan was made: its shapes (which `shapes` repeats) and its
     * guarded inputs specialized (docs/control-flow.md) */
    korch_status st = korch_plan_infer_graph(p->plan, *out);
    if (st != KORCH_OK) {
        korch_graph_free(*out);
        *out = NULL;
    }
    return st;
}

int korch_cli_plan_threads(const korch_cli_plan *p) { return p->plan->threads; }

size_t korch_cli_plan_arena_bytes(const korch_cli_plan *p) { return p->ex ? korch_executor_arena_bytes(p->ex) : 0; }

/* The primitive graph of g, checked against the plan's. */
static int lower(korch_cli_plan *p, korch_graph *g) {
    if (p->pg) return 0;
    char what[4200];
    snprintf(what, sizeof what, "plan \"%.4096s\"", p->plan_path);
    if (korch_plan_lower_checked(p->plan, g, what, &p->pg) != KORCH_OK) return korch_cli_fail();
    return 0;
}

void korch_cli_print_output_check(const korch_plan_output_check *c, bool bf16) {
    char buf[160];
    printf("  output %s: worst error/tolerance %.3g, max |plan - reference| %.3g",
           korch_printable(c->name, buf, sizeof buf), c->worst_ratio, c->max_abs);
    if (bf16)
        printf("; off the float32 reference by %.3g%% (max), %.3g%% (mean)", c->fp32_max_rel * 100,
               c->fp32_mean_rel * 100);
    printf("\n");
}

int korch_cli_plan_verify(korch_cli_plan *p, korch_graph *g, const korch_tensor *inputs, int threads) {
    int rc = lower(p, g);
    if (rc) return rc;
    korch_profile_options build = {.threads = threads};
    korch_cli_env_profile(&build);
    uint64_t seed = p->plan->verified ? p->plan->verify_seed : KORCH_VERIFY_DEFAULT_SEED;
    korch_verify_options vo = {.seed = seed, .inputs = inputs, .build = &build};
    korch_plan_check c;
    if (korch_verify_plan(p->plan, g, p->pg, &vo, &c) != KORCH_OK) return korch_cli_fail();
    char seed_text[64];
    snprintf(seed_text, sizeof seed_text, "seeded inputs (seed %llu)", (unsigned long long)seed);
    if (c.ok) {
        bool bf16 = korch_pgraph_precision(p->pg) == KORCH_PRECISION_BF16;
        printf("verification: the plan matches the reference executor on %s%s\n", inputs ? "the given inputs" : seed_text,
               bf16 ? " (bf16: the plan against the bf16 primitive graph, whose float32 graph matches the reference)"
                    : "");
        for (int i = 0; i < c.n_outputs; i++) korch_cli_print_output_check(&c.outputs[i], bf16);
    } else {
        fprintf(stderr, "korch: error: verification: the plan differs from the reference executor on %s: %s\n",
                inputs ? "the given inputs" : seed_text, c.detail);
        if (c.bad_kernel >= 0)
            fprintf(stderr, "korch: error: kernel %d (%s) is at fault: %s\n", c.bad_kernel,
                    p->plan->kernels[c.bad_kernel].impl, c.bad_result.detail);
        rc = 1;
    }
    korch_plan_check_free(&c);
    return rc;
}

int korch_cli_plan_prepare(korch_cli_plan *p, korch_graph *g, int threads) {
    int rc = lower(p, g);
    if (rc) return rc;
    korch_profile_options options = {.threads = threads};
    korch_cli_env_profile(&options);
    /* p->pg and g are the command's own */
    if (korch_executor_create_owned(p->plan, p->pg, g, &options, &p->ex) != KORCH_OK) return korch_cli_fail();
    return 0;
}

korch_status korch_cli_plan_run(korch_cli_plan *p, const korch_graph *g, const korch_tensor *inputs,
                                korch_tensor *outputs) {
    for (int i = 0; i < g->n_outputs; i++) {
        if (outputs[i].data) continue;
        const korch_value *v = &g->values[g->outputs[i]];
        KORCH_TRY(korch_tensor_alloc(&outputs[i], v->dtype, &v->shape));
    }
    return korch_executor_run(p->ex, inputs, outputs);
}

const korch_plan *korch_cli_plan_get(const korch_cli_plan *p) { return p->plan; }

void korch_cli_plan_time_kernels(korch_cli_plan *p, double *kernel_ms) {
    if (p->ex) korch_executor_time_kernels(p->ex, kernel_ms);
}

void korch_cli_plan_close(korch_cli_plan *p) {
    if (!p) return;
    korch_executor_destroy(p->ex);
    korch_pgraph_free(p->pg);
    korch_plan_free(p->plan);
    free(p->model_path);
    free(p->plan_path);
    free(p);
}

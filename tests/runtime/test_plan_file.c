/* Plan files: a save/load round trip keeps every field, hostile names survive
 * escaping, and damaged files are refused with a message (never a crash). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "orchestrate/fake_oracle.h"
#include "orchestrate/pgraph_gen.h"
#include "runtime/plan.h"
#include "test.h"

static char dir[] = "/tmp/korch_plan_test_XXXXXX";

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static korch_plan *sample_plan(korch_pgraph **pg_out) {
    korch_pgraph *pg = gen_random_pgraph(11, 9, true);
    fake_oracle f = {.seed = 4};
    korch_kernel_oracle oracle = fake_oracle_make(&f);
    korch_orchestrate_options o = test_orchestrate_options(1);
    o.candidates.force_backend = KORCH_BACKEND_REF;
    korch_orchestrator *orch = NULL;
    korch_plan *plan = NULL;
    CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
    CHECK_OK(korch_orchestrator_profile(orch));
    CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan));
    korch_orchestrator_free(orch);
    if (plan) {
        plan->model_path = strdup("/models/with space/=odd%name\n.onnx");
        memset(plan->model_sha256, 'a', 64);
        plan->model_sha256[64] = '\0';
        plan->n_input_shapes = 2;
        plan->input_shapes = calloc(2, sizeof *plan->input_shapes);
        plan->input_shapes[0].name = strdup("input ids=1,2");
        plan->input_shapes[0].shape = (korch_shape){.rank = 2, .dims = {1, 128}};
        plan->input_shapes[1].name = strdup("-");
        plan->input_shapes[1].shape = (korch_shape){0};
        snprintf(plan->fission_version, sizeof plan->fission_version, "test-1");
        plan->threads = 2;
        snprintf(plan->kernels[0].impl, sizeof plan->kernels[0].impl, "impl with spaces, commas = and %%");
        /* the verification record (format 2) */
        plan->verified = true;
        plan->verify_seed = 18446744073709551615ull;
        plan->verify_given = 1;
        plan->excluded = 3;
        plan->n_output_checks = 1;
        plan->output_checks = calloc(1, sizeof *plan->output_checks);
        plan->output_checks[0] = (korch_plan_output_check){.name = strdup("out put,=1"), .worst_ratio = 0.125,
                                                           .max_abs = 3.5e-7};
        plan->n_excluded_kernels = 1;
        plan->excluded_kernels = calloc(1, sizeof *plan->excluded_kernels);
        plan->excluded_kernels[0] = (korch_plan_excluded){.impl = strdup("dnnl brgconv_1x1:avx512_core fmt=plain"),
                                                          .detail = strdup("output 0: 5 of 9 differ; worst [0,1]"),
                                                          .worst_ratio = 1e300};
        plan->kernels[0].verify_ratio = 0.25;
        /* bf16 with two linear primitives kept in float32 (the fission line) */
        plan->precision = KORCH_PRECISION_BF16;
        plan->n_fp32_linear = 2;
        plan->fp32_linear = malloc(2 * sizeof *plan->fp32_linear);
        plan->fp32_linear[0] = 1;
        plan->fp32_linear[1] = plan->pgraph_nodes - 1;
    }
    *pg_out = pg;
    return plan;
}

static void test_round_trip(void) {
    korch_pgraph *pg = NULL;
    korch_plan *plan = sample_plan(&pg);
    char path[256];
    snprintf(path, sizeof path, "%s/a.plan", dir);
    CHECK_OK(korch_plan_save(plan, path));
    CHECK(korch_plan_file_is_plan(path));
    korch_plan *back = NULL;
    CHECK_OK(korch_plan_load(path, &back));
    if (back) {
        CHECK(strcmp(back->model_path, plan->model_path) == 0);
        CHECK(strcmp(back->model_sha256, plan->model_sha256) == 0);
        CHECK(back->n_input_shapes == 2 && strcmp(back->input_shapes[0].name, "input ids=1,2") == 0 &&
              strcmp(back->input_shapes[1].name, "-") == 0 && back->input_shapes[1].shape.rank == 0 &&
              korch_shape_equal(&back->input_shapes[0].shape, &plan->input_shapes[0].shape));
        CHECK(strcmp(back->fission_version, "test-1") == 0 && back->pgraph_hash == plan->pgraph_hash &&
              back->pgraph_nodes == plan->pgraph_nodes);
        CHECK(strcmp(back->strategy, "optimal") == 0 && back->threads == 2);
        CHECK_NEAR(back->predicted_ms, plan->predicted_ms, 1e-9 * plan->predicted_ms);
        CHECK(back->n_kernels == plan->n_kernels);
        for (int i = 0; i < plan->n_kernels && i < back->n_kernels; i++) {
            const korch_plan_kernel *a = &plan->kernels[i], *b = &back->kernels[i];
            CHECK(a->n_nodes == b->n_nodes && memcmp(a->nodes, b->nodes, sizeof(int) * (size_t)a->n_nodes) == 0);
            CHECK(a->n_inputs == b->n_inputs && a->n_outputs == b->n_outputs);
            CHECK(a->backend == b->backend && strcmp(a->schedule, b->schedule) == 0 && strcmp(a->impl, b->impl) == 0);
            CHECK(strcmp(a->primitives, b->primitives) == 0);
        }
        CHECK_OK(korch_plan_validate(back, pg));
        CHECK(back->version == KORCH_PLAN_VERSION && back->verified);
        CHECK(back->verify_seed == plan->verify_seed && back->verify_given == 1 && back->excluded == 3);
        CHECK(back->n_output_checks == 1 && strcmp(back->output_checks[0].name, "out put,=1") == 0);
        CHECK_NEAR(back->output_checks[0].worst_ratio, 0.125, 1e-9);
        CHECK_NEAR(back->output_checks[0].max_abs, 3.5e-7, 1e-12);
        CHECK(back->n_excluded_kernels == 1 && strcmp(back->excluded_kernels[0].impl, plan->excluded_kernels[0].impl) == 0 &&
              strcmp(back->excluded_kernels[0].detail, plan->excluded_kernels[0].detail) == 0);
        CHECK(back->excluded_kernels[0].worst_ratio >= 1e12); /* an infinite ratio is stored capped */
        CHECK_NEAR(back->kernels[0].verify_ratio, 0.25, 1e-9);
        CHECK(back->precision == KORCH_PRECISION_BF16 && back->n_fp32_linear == 2 && back->fp32_linear[0] == 1 &&
              back->fp32_linear[1] == plan->pgraph_nodes - 1);
        for (int i = 1; i < back->n_kernels; i++) /* REF kernels are the interpreter: ratio 0 */
            CHECK(back->kernels[i].backend == KORCH_BACKEND_REF ? back->kernels[i].verify_ratio == 0
                                                                  : back->kernels[i].verify_ratio < 0);
    }
    /* a plan that moved beside a model of the same name finds it */
    char model[256];
    snprintf(model, sizeof model, "%s/=odd%%name\n.onnx", dir);
    write_text(model, "x");
    char *resolved = back ? korch_plan_model_path(back, path) : NULL;
    CHECK(resolved && strcmp(resolved, model) == 0);
    free(resolved);
    unlink(model);
    korch_plan_free(back);
    korch_plan_free(plan);
    korch_pgraph_free(pg);
    unlink(path);
}

static void test_damaged(void) {
    korch_pgraph *pg = NULL;
    korch_plan *plan = sample_plan(&pg);
    char path[256], bad[256];
    snprintf(path, sizeof path, "%s/b.plan", dir);
    snprintf(bad, sizeof bad, "%s/bad.plan", dir);
    CHECK_OK(korch_plan_save(plan, path));
    FILE *f = fopen(path, "r");
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    korch_plan *out = NULL;
    /* every truncation is refused (the end line guards the tail) */
    for (size_t cut = 0; cut < n - 1; cut += 7) {
        char save = text[cut];
        text[cut] = '\0';
        write_text(bad, text);
        text[cut] = save;
        korch_status st = korch_plan_load(bad, &out);
        CHECK_MSG(st != KORCH_OK && out == NULL, "truncation at %zu accepted", cut);
        korch_plan_free(out);
        out = NULL;
    }
    /* every single-byte corruption either fails cleanly or still validates */
    int refused = 0, accepted = 0;
    for (size_t pos = 0; pos < n; pos += 3) {
        char save = text[pos];
        text[pos] = (char)(save ^ 0x15);
        write_text(bad, text);
        text[pos] = save;
        korch_status st = korch_plan_load(bad, &out);
        if (st == KORCH_OK) {
            accepted++;
            (void)korch_plan_validate(out, pg); /* must not crash either way */
        } else {
            refused++;
            CHECK(strlen(korch_last_error()) > 0);
        }
        korch_plan_free(out);
        out = NULL;
    }
    printf("corrupted plans: %d refused, %d parsed\n", refused, accepted);
    const char *cases[] = {
        "not a plan\n",
        "korch-plan 99\nend kernels=0\n",
        "korch-plan 1\nmodel path=x sha256=zz\nend kernels=0\n",
        "korch-plan 1\nkernel backend=cgen latency-ms=1 nodes=1,,2 inputs=- outputs=-\nend kernels=1\n",
        "korch-plan 1\nkernel backend=warp latency-ms=1 nodes=1 inputs=- outputs=-\nend kernels=1\n",
        "korch-plan 1\nkernel backend=ref latency-ms=-1 nodes=1 inputs=- outputs=-\nend kernels=1\n",
        "korch-plan 1\nkernel backend=ref latency-ms=1 nodes=99999999999 inputs=- outputs=-\nend kernels=1\n",
        "korch-plan 1\nkernel backend=ref latency-ms=1 nodes=1 inputs=- outputs=- impl=%G0\nend kernels=1\n",
        "korch-plan 1\nkernel backend=ref latency-ms=1 nodes=1 inputs=- outputs=- impl=%00\nend kernels=1\n",
        "korch-plan 1\nmodel path=m.onnx sha256=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nend "
        "kernels=3\n",
        "korch-plan 1\nbogus line=1\nend kernels=0\n",
        "korch-plan 1\ninput name=x shape=1x-3\nend kernels=0\n",
    };
    /* the kept float32 primitives: strictly ascending, below pgraph-nodes */
    const char *fission = "korch-plan 1\nmodel path=m.onnx sha256="
                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nfission version=v pgraph-hash=0123456789abcdef pgraph-nodes=5 "
                          "precision=bf16 fp32-linear=%s\nend kernels=0\n";
    const char *kept_ok = "1,3", *kept_bad[] = {"3,1", "1,1", "5", "1,,2", "a", "", "-1", "1,", "99999999999"};
    char line[512];
    snprintf(line, sizeof line, fission, kept_ok);
    write_text(bad, line);
    CHECK_OK(korch_plan_load(bad, &out));
    CHECK(out && out->n_fp32_linear == 2 && out->fp32_linear[1] == 3);
    korch_plan_free(out);
    out = NULL;
    for (size_t i = 0; i < sizeof kept_bad / sizeof kept_bad[0]; i++) {
        snprintf(line, sizeof line, fission, kept_bad[i]);
        write_text(bad, line);
        korch_status st = korch_plan_load(bad, &out);
        CHECK_MSG(st != KORCH_OK && strstr(korch_last_error(), "fp32-linear"), "fp32-linear=%s accepted",
                  kept_bad[i]);
        korch_error_clear();
        korch_plan_free(out);
        out = NULL;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_text(bad, cases[i]);
        korch_status st = korch_plan_load(bad, &out);
        CHECK_MSG(st != KORCH_OK, "case %zu accepted", i);
        korch_plan_free(out);
        out = NULL;
    }
    unlink(bad);
    unlink(path);
    korch_plan_free(plan);
    korch_pgraph_free(pg);
}

static void test_sha256(void) {
    char hex[65];
    korch_sha256_hex("", 0, hex);
    CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0);
    korch_sha256_hex("abc", 3, hex);
    CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
    const char *long_msg = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    korch_sha256_hex(long_msg, strlen(long_msg), hex);
    CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    test_sha256();
    test_round_trip();
    test_damaged();
    rmdir(dir);
    TEST_MAIN_END();
}

/* The ONNX backend-test conformance runner (see docs/conformance.md).
 * run_test.c runs one test folder through the korch frontend and the
 * reference executor; conformance.c walks the folders, isolates each test in
 * a child process and reports. */
#ifndef KORCH_TESTS_CONFORMANCE_H
#define KORCH_TESTS_CONFORMANCE_H

#include <stddef.h>

typedef enum conformance_outcome {
    CONFORMANCE_PASS,
    CONFORMANCE_FAIL,
    CONFORMANCE_SKIP, /* korch refused the model with KORCH_ERR_UNSUPPORTED at load/infer time */
} conformance_outcome;

/* Fixed-size so that a child process can send it through a pipe in one write. */
typedef struct conformance_result {
    conformance_outcome outcome;
    char reason[160];  /* SKIP: aggregation key, e.g. "unsupported operator Conv" */
    char detail[1400]; /* one line: korch's message or the mismatch */
} conformance_result;

/* --fission: a test passes only if, besides the reference executor, the
 * fissioned primitive graph (interpreted) and its ONNX export (reloaded and
 * run by the reference executor) match the stored outputs too (run_fission.c). */
extern int conformance_fission_mode;

/* Runs g through fission + clean-ups + the primitive interpreter into
 * `interpreted`, and through the ONNX export, reloaded, into `exported`
 * (g->n_outputs tensors each, owned by the caller on success). */
struct korch_graph;
struct korch_tensor;
int conformance_fission_run(const struct korch_graph *g, const struct korch_tensor *inputs,
                            struct korch_tensor *interpreted, struct korch_tensor *exported);

/* Runs every test_data_set_* of the test folder `dir` (holding model.onnx). */
void conformance_run_test(const char *dir, conformance_result *r);

/* Aggregation key for a KORCH_ERR_UNSUPPORTED message: "unsupported operator
 * X", "unsupported dtype D (Op)" or "refused by design: <message with names
 * elided>". */
void conformance_refusal_key(const char *message, char *key, size_t size);

#endif

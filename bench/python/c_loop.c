/* The C side of bench/python/overhead.py: runs a model or plan through the
 * C API (include/korch.h) RUNS times and prints each korch_session_run's
 * wall time in microseconds, one per line. Inputs hold a fixed pattern,
 * the same as the Python side's (overhead.py: fill()).
 *
 *     cc -O2 -I include bench/python/c_loop.c -L build -lkorch -Wl,-rpath,$PWD/build -o c_loop
 *     ./c_loop MODEL_OR_PLAN RUNS [THREADS]
 */
#include <korch.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static size_t tensor_bytes(const korch_tensor_info *t) {
    size_t n = 4; /* the bench's models are float32 */
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->dims[d];
    return n;
}

#define CHECK(call)                                                          \
    do {                                                                     \
        if ((call) != KORCH_OK) {                                            \
            fprintf(stderr, "c_loop: %s: %s\n", #call, korch_last_error()); \
            return 1;                                                        \
        }                                                                    \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: c_loop MODEL_OR_PLAN RUNS [THREADS]\n");
        return 2;
    }
    int runs = atoi(argv[2]);
    korch_model *m = NULL;
    korch_session *s = NULL;
    CHECK(korch_model_load(argv[1], &m));
    korch_session_options o = korch_session_options_default();
    o.threads = argc > 3 ? atoi(argv[3]) : 0;
    CHECK(korch_session_create(m, &o, &s));
    for (int i = 0; i < korch_session_input_count(s); i++) {
        korch_tensor_info t;
        CHECK(korch_session_input_info(s, i, &t));
        if (t.dtype != KORCH_DTYPE_FLOAT32) {
            fprintf(stderr, "c_loop: input %d is not float32\n", i);
            return 1;
        }
        size_t n = tensor_bytes(&t) / 4;
        float *x = malloc(n * 4);
        for (size_t k = 0; k < n; k++) x[k] = (float)((k * 7919) % 1000) / 1000.0f - 0.5f; /* overhead.py fill() */
        CHECK(korch_session_set_input(s, i, x, n * 4));
    }
    for (int i = 0; i < korch_session_output_count(s); i++) {
        korch_tensor_info t;
        CHECK(korch_session_output_info(s, i, &t));
        CHECK(korch_session_set_output(s, i, malloc(tensor_bytes(&t)), tensor_bytes(&t)));
    }
    for (int r = 0; r < runs; r++) {
        double t0 = now_us();
        CHECK(korch_session_run(s));
        printf("%.3f\n", now_us() - t0);
    }
    korch_session_destroy(s);
    korch_model_free(m);
    return 0;
}

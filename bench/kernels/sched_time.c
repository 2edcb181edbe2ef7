/* Times generated row kernels side by side in one process (driven by
 * bench/kernels/schedules.sh): each kernel a shared object made from
 * sched_source's output, loaded with dlopen as korch loads its kernels.
 *
 *   sched_time ROWS COLS ROUNDS SETS THREADS LIB:SYMBOL...
 *
 * Buffers are 2 MiB aligned and madvise(MADV_HUGEPAGE)d, as korch's own
 * (core/memory.c). SETS input/output pairs are used in turn, so with 2 or
 * more of 32 MiB each, a kernel's operands come from DRAM as in korch's
 * profiling of such kernels (profile/cache_state.c); with 1 they are
 * partly served by the last-level cache, as in `korch run --bench`.
 * Every round times each kernel 21 times in a row (the round's kernel order
 * rotates) and keeps the median; the table gives every round's median per
 * kernel, and the median of those. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef int (*kernel_fn)(void *const *in, void *const *out, int threads);

enum { MAX_KERNELS = 32, MAX_ROUNDS = 100, MAX_SETS = 8, RUNS = 21 };

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *huge_buffer(size_t bytes) {
    size_t align = (size_t)2 << 20, size = (bytes + align - 1) / align * align;
    float *p = aligned_alloc(align, size);
    if (!p) return NULL;
    madvise(p, size, MADV_HUGEPAGE);
    memset(p, 0, size);
    return p;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: sched_time ROWS COLS ROUNDS SETS THREADS LIB:SYMBOL...\n");
        return 2;
    }
    long long rows = atoll(argv[1]), cols = atoll(argv[2]);
    int rounds = atoi(argv[3]), sets = atoi(argv[4]), threads = atoi(argv[5]), n = argc - 6;
    if (rows < 1 || cols < 1 || rounds < 1 || rounds > MAX_ROUNDS || sets < 1 || sets > MAX_SETS || threads < 1 ||
        n > MAX_KERNELS) {
        fprintf(stderr, "sched_time: bad arguments (rounds 1..%d, sets 1..%d, at most %d kernels)\n", MAX_ROUNDS,
                MAX_SETS, MAX_KERNELS);
        return 2;
    }
    kernel_fn fn[MAX_KERNELS];
    for (int k = 0; k < n; k++) {
        char *spec = argv[6 + k], *colon = strrchr(spec, ':');
        if (!colon) {
            fprintf(stderr, "sched_time: '%s' is not LIB:SYMBOL\n", spec);
            return 2;
        }
        *colon = '\0';
        void *h = dlopen(spec, RTLD_NOW | RTLD_LOCAL);
        fn[k] = h ? (kernel_fn)(uintptr_t)dlsym(h, colon + 1) : NULL;
        if (!fn[k]) {
            fprintf(stderr, "sched_time: %s: %s\n", spec, dlerror());
            return 1;
        }
    }
    size_t bytes = (size_t)rows * (size_t)cols * sizeof(float);
    void *in[MAX_SETS][1], *out[MAX_SETS][1];
    for (int s = 0; s < sets; s++) {
        float *x = huge_buffer(bytes), *y = huge_buffer(bytes);
        if (!x || !y) {
            fprintf(stderr, "sched_time: out of memory\n");
            return 1;
        }
        /* values in [-5, 5): every exponential in range, rows differ */
        for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
            x[i] = (float)((i * 2654435761u + (size_t)s) % 1000u) / 100.0f - 5.0f;
        in[s][0] = x;
        out[s][0] = y;
    }
    static double med[MAX_KERNELS][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < n; j++) {
            int k = (j + r) % n;
            double t[RUNS];
            for (int i = 0; i < RUNS; i++) {
                double t0 = now_ms();
                if (fn[k](in[i % sets], out[i % sets], threads) != 0) {
                    fprintf(stderr, "sched_time: kernel %d failed\n", k);
                    return 1;
                }
                t[i] = now_ms() - t0;
            }
            qsort(t, RUNS, sizeof t[0], cmp_double);
            med[k][r] = t[RUNS / 2];
        }
    for (int k = 0; k < n; k++) {
        double m[MAX_ROUNDS];
        memcpy(m, med[k], (size_t)rounds * sizeof m[0]);
        qsort(m, (size_t)rounds, sizeof m[0], cmp_double);
        printf("%d %.3f", k, m[rounds / 2]);
        for (int r = 0; r < rounds; r++) printf(" %.3f", med[k][r]);
        printf("\n");
    }
    return 0;
}

/* The tuner on synthetic cost functions whose optimum is known. */
#include <stdint.h>
#include <string.h>

#include "profile/profile.h"
#include "test.h"

/* separable bowl with its minimum at `target` */
static double cost(const korch_tune_point *p, const int *target, int n) {
    double c = 1.0;
    for (int k = 0; k < n; k++) c += (p->k[k] - target[k]) * (p->k[k] - target[k]);
    return c;
}

static int run(const int *size, const int *target, int n, int budget, int explore, korch_tune_point start,
               korch_tune_point *best, double *best_ms) {
    korch_tuner t;
    korch_tuner_init(&t, n, size, &start, budget, explore, 42);
    int timed = 0, rounds = 0;
    korch_tune_point pts[64];
    int got;
    while ((got = korch_tuner_propose(&t, pts, 64)) > 0) {
        rounds++;
        for (int i = 0; i < got; i++) korch_tuner_report(&t, &pts[i], cost(&pts[i], target, n));
        timed += got;
    }
    CHECK(korch_tuner_best(&t, best, best_ms));
    CHECK(korch_tuner_start_ms(&t) == cost(&start, target, n));
    korch_tuner_free(&t);
    return timed;
}

/* Two basins: the optimum (1.0) is a neighbour of the start, everything else
 * slopes down to a wide basin elsewhere (2.0 at `far`). The start's first
 * measurement is disturbed (reported 1000), so a random point wins the
 * exploration; the start's neighbours must still be timed. */
static double two_basins(const korch_tune_point *p, const korch_tune_point *opt, const int *far, int n) {
    if (memcmp(p->k, opt->k, (size_t)n) == 0) return 1.0;
    double d = 0;
    for (int k = 0; k < n; k++) d += (p->k[k] - far[k]) * (p->k[k] - far[k]);
    return 2.0 + 0.01 * d;
}

static void test_disturbed_start(void) {
    int size[5] = {4, 5, 4, 5, 2}, far[5] = {3, 4, 3, 4, 0};
    korch_tune_point start = {{0}}, opt = {{0, 0, 0, 0, 1}}, best;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        korch_tuner t;
        korch_tuner_init(&t, 5, size, &start, 60, 3, seed);
        korch_tune_point pts[64];
        int got, timed = 0;
        while ((got = korch_tuner_propose(&t, pts, 64)) > 0) {
            for (int i = 0; i < got; i++) {
                bool is_start = memcmp(pts[i].k, start.k, 5) == 0;
                korch_tuner_report(&t, &pts[i], is_start ? 1000.0 : two_basins(&pts[i], &opt, far, 5));
            }
            timed += got;
        }
        double ms = 0;
        CHECK(korch_tuner_best(&t, &best, &ms));
        CHECK_MSG(ms == 1.0, "seed %llu: best %g after %d trials (the start's neighbour was not timed)",
                  (unsigned long long)seed, ms, timed);
        CHECK(timed <= 60);
        korch_tuner_free(&t);
    }
}

/* A categorical knob: its values are unordered, so the descent tries every
 * one. Knob 1 has values {A, B, C} with cost B > A > C: stepping one value
 * at a time from A stops at A (B is worse); as categorical it reaches C. */
static void test_categorical(void) {
    int size[2] = {3, 3};
    korch_tune_point start = {{1, 0}}, pts[64], best;
    for (int cat = 0; cat < 2; cat++) {
        korch_tuner t;
        korch_tuner_init(&t, 2, size, &start, 50, 0, 3);
        t.categorical = cat ? 1u << 1 : 0;
        int got;
        while ((got = korch_tuner_propose(&t, pts, 64)) > 0)
            for (int i = 0; i < got; i++) {
                static const double by_value[3] = {2.0, 3.0, 1.0};
                korch_tuner_report(&t, &pts[i], by_value[pts[i].k[1]] + 0.1 * (pts[i].k[0] != 1));
            }
        double ms = 0;
        CHECK(korch_tuner_best(&t, &best, &ms));
        if (cat) CHECK_MSG(best.k[1] == 2 && ms == 1.0, "categorical: best value %d (%g)", best.k[1], ms);
        else CHECK_MSG(best.k[1] == 0, "ordinal: value %d reached past a worse neighbour", best.k[1]);
        korch_tuner_free(&t);
    }
}

int main(void) {
    test_disturbed_start();
    test_categorical();
    int size[5] = {4, 5, 4, 5, 2}, target[5] = {3, 1, 2, 4, 1};
    korch_tune_point start = {{0}}, best;
    double ms;
    /* enough budget: descent reaches the optimum from anywhere in a bowl */
    int timed = run(size, target, 5, 200, 4, start, &best, &ms);
    CHECK_MSG(ms == 1.0, "best cost %g after %d trials", ms, timed);
    CHECK(timed <= 200);
    /* a tight budget is respected, and the result is no worse than the start */
    timed = run(size, target, 5, 6, 4, start, &best, &ms);
    CHECK_MSG(timed <= 6, "%d trials with a budget of 6", timed);
    CHECK(ms <= cost(&start, target, 5));
    /* no exploration: pure coordinate descent still converges on a bowl */
    timed = run(size, target, 5, 100, 0, start, &best, &ms);
    CHECK_MSG(ms == 1.0, "descent only: best %g", ms);
    /* a reported failure (huge latency) is never chosen */
    korch_tuner t;
    korch_tuner_init(&t, 5, size, &start, 10, 3, 7);
    korch_tune_point pts[64];
    int n = korch_tuner_propose(&t, pts, 64);
    CHECK(n == 4);
    for (int i = 0; i < n; i++) korch_tuner_report(&t, &pts[i], i == 0 ? 1e30 : 5.0 + i);
    CHECK(korch_tuner_best(&t, &best, &ms) && ms == 6.0);
    korch_tuner_free(&t);
    TEST_MAIN_END();
}

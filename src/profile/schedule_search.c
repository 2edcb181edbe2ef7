/* Schedule search: explore, then droplet search (see profile.h). */
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

void korch_tuner_init(korch_tuner *t, int n_knobs, const int *size, const korch_tune_point *start, int budget,
                      int explore, uint64_t seed) {
    memset(t, 0, sizeof *t);
    t->n_knobs = n_knobs < KORCH_TUNER_MAX_KNOBS ? n_knobs : KORCH_TUNER_MAX_KNOBS;
    for (int k = 0; k < t->n_knobs; k++) t->size[k] = size[k] > 0 ? size[k] : 1;
    t->start = *start;
    t->budget = budget > 0 ? budget : 1;
    t->explore = explore >= 0 ? explore : 0;
    t->best = -1;
    t->center = -1;
    t->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
}

void korch_tuner_free(korch_tuner *t) {
    free(t->seen);
    free(t->ms);
    t->seen = NULL;
    t->ms = NULL;
}

static int find(const korch_tuner *t, const korch_tune_point *p) {
    for (int i = 0; i < t->n_seen; i++)
        if (memcmp(&t->seen[i], p, sizeof *p) == 0) return i;
    return -1;
}

/* Records p as proposed (latency unknown: negative). */
static bool add(korch_tuner *t, const korch_tune_point *p) {
    if (find(t, p) >= 0 || t->n_seen >= t->budget) return false;
    if (t->n_seen == t->cap) {
        int cap = t->cap ? 2 * t->cap : 32;
        korch_tune_point *s = realloc(t->seen, (size_t)cap * sizeof *s);
        if (!s) return false;
        t->seen = s;
        double *m = realloc(t->ms, (size_t)cap * sizeof *m);
        if (!m) return false;
        t->ms = m;
        t->cap = cap;
    }
    t->seen[t->n_seen] = *p;
    t->ms[t->n_seen++] = -1;
    t->pending++;
    return true;
}

static uint64_t next(korch_tuner *t) {
    t->rng ^= t->rng << 13;
    t->rng ^= t->rng >> 7;
    t->rng ^= t->rng << 17;
    return t->rng;
}

int korch_tuner_propose(korch_tuner *t, korch_tune_point *out, int max) {
    if (t->pending > 0 || t->phase == 2) return 0;
    int n = 0;
    if (t->phase == 0) {
        if (add(t, &t->start) && n < max) out[n++] = t->start;
        for (int tries = 0; tries < 50 * (t->explore + 1) && n < t->explore + 1 && n < max; tries++) {
            korch_tune_point p = {{0}};
            for (int k = 0; k < t->n_knobs; k++) p.k[k] = (int8_t)(next(t) % (uint64_t)t->size[k]);
            if (add(t, &p)) out[n++] = p;
        }
        t->phase = 1;
        return n;
    }
    /* Descent from the best point while the last round moved it. The
     * start's own neighbours are timed in the first round too, whichever
     * point is best: the start is the schedule expected to be good (the
     * default, or the best quick one), and one disturbed measurement of it
     * lets a random point win and the descent stay in that point's basin:
     * on a busy host the softmax's default timed 3.4 ms instead of about 2,
     * and its neighbour with the prefetch off (1.9 ms) was never visited
     * (bench/kernels/RESULTS.md, 2026-11-27). */
    if (t->best < 0) {
        t->phase = 2;
        return 0;
    }
    int start = find(t, &t->start), centers[2], nc = 0;
    if (t->center != t->best) centers[nc++] = t->best;
    if (t->center < 0 && start >= 0 && start != t->best) centers[nc++] = start; /* the first round */
    t->center = t->best;
    for (int i = 0; i < nc; i++) {
        korch_tune_point c = t->seen[centers[i]];
        for (int k = 0; k < t->n_knobs && n < max; k++) {
            bool every = (t->categorical >> k) & 1u;
            for (int v = every ? 0 : c.k[k] - 1; v <= (every ? t->size[k] - 1 : c.k[k] + 1) && n < max; v++) {
                if (v == c.k[k] || v < 0 || v >= t->size[k]) continue;
                korch_tune_point p = c;
                p.k[k] = (int8_t)v;
                if (add(t, &p)) out[n++] = p;
            }
        }
    }
    if (n == 0) t->phase = 2;
    return n;
}

void korch_tuner_report(korch_tuner *t, const korch_tune_point *p, double ms) {
    int i = find(t, p);
    if (i < 0) return;
    if (t->ms[i] < 0 && t->pending > 0) t->pending--;
    t->ms[i] = ms;
    if (t->best < 0 || (ms >= 0 && ms < t->ms[t->best])) t->best = i;
}

bool korch_tuner_best(const korch_tuner *t, korch_tune_point *p, double *ms) {
    if (t->best < 0) return false;
    *p = t->seen[t->best];
    *ms = t->ms[t->best];
    return true;
}

double korch_tuner_start_ms(const korch_tuner *t) {
    int i = find(t, &t->start);
    return i >= 0 ? t->ms[i] : -1;
}

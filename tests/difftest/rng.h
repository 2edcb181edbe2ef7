/* The generator's and the driver's random numbers: splitmix64, so that a
 * seed means the same stream on every machine and every libc. */
#ifndef KORCH_DIFFTEST_RNG_H
#define KORCH_DIFFTEST_RNG_H

#include <stdbool.h>
#include <stdint.h>

typedef struct dt_rng {
    uint64_t s;
} dt_rng;

static inline uint64_t dt_next(dt_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi] (inclusive) */
static inline int dt_int(dt_rng *r, int lo, int hi) {
    return hi <= lo ? lo : lo + (int)(dt_next(r) % (uint64_t)(hi - lo + 1));
}

/* uniform in [lo, hi) */
static inline double dt_unif(dt_rng *r, double lo, double hi) {
    return lo + (hi - lo) * ((double)(dt_next(r) >> 11) * (1.0 / 9007199254740992.0));
}

static inline bool dt_chance(dt_rng *r, double p) { return dt_unif(r, 0, 1) < p; }

/* one of n items */
#define DT_PICK(r, arr) ((arr)[dt_int((r), 0, (int)(sizeof(arr) / sizeof((arr)[0])) - 1)])

#endif

/* Where a profiled kernel finds its operands: how many copies of its inputs
 * and outputs the profilers rotate over (docs/profiling.md, "Cache state").
 * Both backends' timers use this one rule, so a generated kernel and a
 * oneDNN kernel of the same size are measured in the same cache state. */
#include <stdio.h>
#include <stdlib.h>

#include "profile/profile.h"

/* The last-level cache a core can use, from sysfs: glibc's
 * sysconf(_SC_LEVEL3_CACHE_SIZE) reports the whole package's L3 (384 MiB on
 * an EPYC of 12 chiplets), not the 32 MiB slice one core shares. */
static int64_t read_llc_bytes(void) {
    int64_t best = 0;
    for (int i = 0; i < 8; i++) {
        char path[96], buf[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fgets(buf, sizeof buf, f)) {
            char *end;
            long long v = strtoll(buf, &end, 10);
            if (*end == 'K') v <<= 10;
            else if (*end == 'M') v <<= 20;
            if (v > best) best = v;
        }
        fclose(f);
    }
    return best > 0 ? best : (int64_t)32 << 20;
}

int64_t korch_llc_bytes(void) {
    static _Atomic int64_t cached;
    int64_t c = cached;
    if (c == 0) cached = c = read_llc_bytes();
    return c;
}

int korch_profile_buffer_sets_for(size_t footprint, size_t input_bytes, int64_t llc) {
    const size_t small = (size_t)4 << 20;
    if (footprint == 0) return 1;
    if (footprint < small) {
        /* one sweep of all copies exceeds the L2 caches: operands come from
         * L3, as from a producer that ran shortly before */
        size_t k = (small + footprint - 1) / footprint;
        return k > 64 ? 64 : (int)k;
    }
    if (llc <= 0 || footprint < (size_t)llc) return 1; /* stays in L3 between runs */
    /* As large as the L3 or larger: such operands do not all fit even in a
     * plan, and the graph inputs among them arrive from DRAM, but one copy
     * swept again and again is mostly served by the L3 (whose replacement is
     * not a strict LRU): a 32 MiB softmax input was read at 124 GB/s in
     * profile against 45 GB/s of copy bandwidth (bench/kernels/RESULTS.md).
     * Enough copies that two uses of one are 2 x L3 of *input* traffic
     * apart: outputs written with non-temporal stores (the stream knob)
     * bypass the L3, so counting them let a softmax's sum-and-divide keep
     * its whole 32 MiB input in the L3 between runs (profiled 0.67 ms, 100
     * GB/s; 1.37 ms in the plan). Copies are capped at 8 x L3 of memory in
     * all (kernels with small inputs and large outputs). Smaller footprints
     * keep one copy: between a producer and its consumer in a plan a tensor
     * of half the L3 mostly stays there (YOLOv4's 11 MB activations:
     * rotating them too predicted the plan 30% slow, bench/RESULTS.md). */
    size_t basis = input_bytes > 0 && input_bytes < footprint ? input_bytes : footprint;
    size_t k = ((size_t)llc * 2 + basis - 1) / basis;
    size_t cap = (size_t)llc * 8 / footprint;
    if (k > cap) k = cap;
    return k < 1 ? 1 : (int)k;
}

int korch_profile_buffer_sets(size_t footprint, size_t input_bytes) {
    return korch_profile_buffer_sets_for(footprint, input_bytes, korch_llc_bytes());
}

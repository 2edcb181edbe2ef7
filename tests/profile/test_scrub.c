/* The profiling cache scrub (korch_timer_options.scrub_mib, filled from
 * korch_profile_options.scrub_mib): part of the machine fingerprint
 * (scrubbed and plain latencies must never share database rows), and timing
 * still works with it on, at two sizes in turn (the buffer grows). The CLI's
 * strict reading of KORCH_PROFILE_SCRUB_MB is tested in tests/cli
 * (run_env.sh). */
#include <stdio.h>
#include <string.h>

#include "profile/profile.h"
#include "test.h"

static volatile float sink;
static korch_status work(void *ctx, int it) {
    (void)ctx;
    float s = 0;
    for (int i = 0; i < 1000; i++) s += (float)(i ^ it);
    sink = s;
    return KORCH_OK;
}

/* 0 if the fingerprint of `mib` says so and a timing with that scrub works */
static int one(int mib, char hash_out[33]) {
    char hash[33], text[1024], tag[32];
    if (korch_machine_fingerprint(2, "cc", mib, hash, text, sizeof text) != KORCH_OK) return 2;
    snprintf(tag, sizeof tag, ";scrub=%dMiB", mib);
    if ((mib > 0) != (strstr(text, ";scrub=") != NULL)) return 3;
    if (mib > 0 && !strstr(text, tag)) return 4;
    korch_timer_options o = korch_timer_defaults();
    o.target_ms = 2;
    o.scrub_mib = mib;
    korch_timing t;
    if (korch_profile_time(work, NULL, &o, &t) != KORCH_OK || !(t.median_ms > 0) || t.repeats < o.min_repeats)
        return 5;
    memcpy(hash_out, hash, 33);
    return 0;
}

int main(void) {
    char plain[33], scrub8[33], scrub16[33], again[33];
    CHECK_MSG(one(0, plain) == 0, "no scrub");
    CHECK_MSG(one(8, scrub8) == 0, "scrub 8 MiB");
    CHECK_MSG(one(16, scrub16) == 0, "scrub 16 MiB");
    CHECK_MSG(one(8, again) == 0, "scrub 8 MiB after 16");
    CHECK(strcmp(plain, scrub8) != 0 && strcmp(scrub8, scrub16) != 0 && strcmp(scrub8, again) == 0);
    TEST_MAIN_END();
}

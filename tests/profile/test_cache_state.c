/* The cache-state rule both profilers share (src/profile/cache_state.c,
 * docs/profiling.md "Cache state"): how many copies of a kernel's operands
 * are rotated over, at each side of its three ranges, on a 32 MiB and a
 * 96 MiB last-level cache; and its version in the machine fingerprint (so
 * latencies of another rule are never reused). */
#include <stdio.h>
#include <string.h>

#include "profile/profile.h"
#include "test.h"

#define MiB ((size_t)1 << 20)

int main(void) {
    const int64_t l3 = (int64_t)32 << 20;
    /* small: enough copies that a sweep exceeds the L2s */
    CHECK(korch_profile_buffer_sets_for(0, 0, l3) == 1);
    CHECK(korch_profile_buffer_sets_for(1, 0, l3) == 64);
    CHECK(korch_profile_buffer_sets_for(64 * 1024, 0, l3) == 64);
    CHECK(korch_profile_buffer_sets_for(100 * 1024, 0, l3) == 41);
    CHECK(korch_profile_buffer_sets_for(MiB, 0, l3) == 4);
    CHECK(korch_profile_buffer_sets_for(4 * MiB - 1, 0, l3) == 2);
    /* in L3: one copy (up to the L3's size: a producer's output of half the
     * L3 mostly stays there for its consumer) */
    CHECK(korch_profile_buffer_sets_for(4 * MiB, 0, l3) == 1);
    CHECK(korch_profile_buffer_sets_for(16 * MiB, 0, l3) == 1);
    CHECK(korch_profile_buffer_sets_for(32 * MiB - 1, 0, l3) == 1);
    /* the L3's size and more: two uses of one copy are 2 x L3 apart */
    CHECK(korch_profile_buffer_sets_for(32 * MiB, 0, l3) == 2);
    CHECK(korch_profile_buffer_sets_for(33554432 + 32768, 0, l3) == 2); /* a softmax's 8192x1024 floats + row maxima */
    CHECK(korch_profile_buffer_sets_for(63 * MiB, 0, l3) == 2);
    CHECK(korch_profile_buffer_sets_for(64 * MiB, 0, l3) == 1);
    CHECK(korch_profile_buffer_sets_for(67 * MiB, 0, l3) == 1);
    CHECK(korch_profile_buffer_sets_for(1024 * MiB, 0, l3) == 1);
    for (size_t f = 32 * MiB; f < 200 * MiB; f += 3 * MiB + 12345) {
        int k = korch_profile_buffer_sets_for(f, 0, l3);
        CHECK_MSG((size_t)k * f >= 2 * (size_t)l3, "footprint %zu: %d copies", f, k);
        CHECK_MSG(k == 1 || (size_t)(k - 1) * f < 2 * (size_t)l3, "footprint %zu: %d copies, one too many", f, k);
    }
    /* from the L3's size up the copies are counted on the inputs alone
     * (outputs may bypass the L3): a softmax's sum-and-divide, 32 MiB in
     * and 32 MiB out, needs two copies, not one */
    CHECK(korch_profile_buffer_sets_for(64 * MiB, 32 * MiB, l3) == 2);
    CHECK(korch_profile_buffer_sets_for(64 * MiB, 64 * MiB, l3) == 1); /* inputs = everything: as before */
    CHECK(korch_profile_buffer_sets_for(48 * MiB, 16 * MiB, l3) == 4);
    /* but never more than 8 x L3 of memory in all (a broadcast: 1 MiB in) */
    CHECK(korch_profile_buffer_sets_for(65 * MiB, 1 * MiB, l3) == 3);
    CHECK(korch_profile_buffer_sets_for(300 * MiB, 1 * MiB, l3) == 1);
    /* below the L3's size the inputs do not matter */
    CHECK(korch_profile_buffer_sets_for(16 * MiB, 1 * MiB, l3) == 1);
    CHECK(korch_profile_buffer_sets_for(MiB, MiB / 2, l3) == 4);
    for (size_t f = 32 * MiB; f < 200 * MiB; f += 3 * MiB + 12345)
        for (size_t in = MiB; in <= f; in += 5 * MiB + 777) {
            int k = korch_profile_buffer_sets_for(f, in, l3);
            bool capped = (size_t)(k + 1) * f > 8 * (size_t)l3;
            CHECK_MSG((size_t)k * in >= 2 * (size_t)l3 || capped, "footprint %zu, inputs %zu: %d copies", f, in, k);
            CHECK_MSG((size_t)k * f <= 8 * (size_t)l3 || k == 1, "footprint %zu, inputs %zu: %d copies: too much memory",
                      f, in, k);
            CHECK_MSG(k == 1 || (size_t)(k - 1) * in < 2 * (size_t)l3, "footprint %zu, inputs %zu: %d copies, one too many",
                      f, in, k);
        }
    /* a larger L3 moves the boundaries */
    const int64_t big = (int64_t)96 << 20;
    CHECK(korch_profile_buffer_sets_for(95 * MiB, 0, big) == 1);
    CHECK(korch_profile_buffer_sets_for(96 * MiB, 0, big) == 2);
    CHECK(korch_profile_buffer_sets_for(4 * MiB, 0, big) == 1);
    /* an unknown L3 (0) never asks for copies beyond the small range */
    CHECK(korch_profile_buffer_sets_for(100 * MiB, 0, 0) == 1);
    /* this machine's answer is one of the rule's, for its own L3 */
    int64_t mine = korch_llc_bytes();
    CHECK(mine >= (int64_t)MiB);
    CHECK(korch_profile_buffer_sets((size_t)mine, 0) == korch_profile_buffer_sets_for((size_t)mine, 0, mine));
    CHECK(korch_profile_buffer_sets((size_t)mine, 0) == 2);
    CHECK(korch_profile_buffer_sets((size_t)mine - 1, 0) == 1);

    /* the rule's version is in the fingerprint text, and so in its hash */
    char hash[33], text[1024], tag[32];
    CHECK(korch_machine_fingerprint(2, "cc", 0, hash, text, sizeof text) == KORCH_OK);
    snprintf(tag, sizeof tag, ";cache-state=%d", KORCH_CACHE_STATE_VERSION);
    CHECK_MSG(strstr(text, tag) != NULL, "fingerprint: %s", text);
    TEST_MAIN_END();
}

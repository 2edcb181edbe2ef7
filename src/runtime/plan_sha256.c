/* SHA-256 (FIPS 180-4): plans name the model they were made for by its hash,
 * so that running a plan against a changed model fails loudly.
 *
 * Every plan load and every optimise hashes the whole model (330 MB for
 * ViT-B/16): the portable rounds run at ~300 MB/s, 11% of a ViT-B/16
 * optimise (perf). x86-64 CPUs with the SHA extensions (Zen, Intel since
 * Ice Lake / Goldmont) do the rounds in hardware, several times faster;
 * the CPU is asked once, and both paths give the same digest (checked by
 * tests/runtime/test_sha256.c on the FIPS vectors and random data). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define KORCH_SHA_NI 1
#endif

#include "runtime/plan.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

static void blocks_portable(uint32_t h[8], const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) block(h, p + 64 * i);
}

#ifdef KORCH_SHA_NI
/* The SHA-NI rounds (Intel's reference order): the state as ABEF/CDGH,
 * four rounds per K group, the message schedule with msg1/msg2. */
__attribute__((target("sha,sse4.1,ssse3"))) static void blocks_shani(uint32_t h[8], const uint8_t *p, size_t n) {
    const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); /* CDAB */
    __m128i state1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B); /* EFGH */
    __m128i state0 = _mm_alignr_epi8(tmp, state1, 8); /* ABEF */
    state1 = _mm_blend_epi16(state1, tmp, 0xF0);      /* CDGH */
    for (size_t b = 0; b < n; b++, p += 64) {
        __m128i abef = state0, cdgh = state1, msg[4];
        for (int i = 0; i < 4; i++) msg[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), mask);
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++) {
            if (r >= 4) { /* W[4r..4r+3] from the groups r-4, r-3, r-2, r-1 */
                __m128i t = _mm_sha256msg1_epu32(msg[r & 3], msg[(r + 1) & 3]);
                t = _mm_add_epi32(t, _mm_alignr_epi8(msg[(r + 3) & 3], msg[(r + 2) & 3], 4));
                msg[r & 3] = _mm_sha256msg2_epu32(t, msg[(r + 3) & 3]);
            }
            __m128i wk = _mm_add_epi32(msg[r & 3], _mm_loadu_si128((const __m128i *)&K[4 * r]));
            state1 = _mm_sha256rnds2_epu32(state1, state0, wk);
            state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(wk, 0x0E));
        }
        state0 = _mm_add_epi32(state0, abef);
        state1 = _mm_add_epi32(state1, cdgh);
    }
    tmp = _mm_shuffle_epi32(state0, 0x1B);       /* FEBA */
    state1 = _mm_shuffle_epi32(state1, 0xB1);    /* DCHG */
    state0 = _mm_blend_epi16(tmp, state1, 0xF0); /* DCBA */
    state1 = _mm_alignr_epi8(state1, tmp, 8);    /* HGFE */
    _mm_storeu_si128((__m128i *)&h[0], state0);
    _mm_storeu_si128((__m128i *)&h[4], state1);
}

static bool have_sha_ni(void) {
    static int known = -1; /* every thread computes the same answer */
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (k < 0) {
        unsigned a, b, c, d;
        bool sha = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
        bool sse41 = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 19)) && (c & (1u << 9));
        k = sha && sse41;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k;
}
#endif

static void blocks(uint32_t h[8], const uint8_t *p, size_t n, bool portable) {
#ifdef KORCH_SHA_NI
    if (!portable && have_sha_ni()) {
        blocks_shani(h, p, n);
        return;
    }
#endif
    blocks_portable(h, p, n);
}

static void sha256_hex(const void *data, size_t size, char out[65], bool portable) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const uint8_t *p = data;
    size_t full = size / 64;
    blocks(h, p, full, portable);
    uint8_t tail[128] = {0};
    size_t rest = size - 64 * full;
    if (rest) memcpy(tail, p + 64 * full, rest);
    tail[rest] = 0x80;
    size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)size * 8;
    for (int i = 0; i < 8; i++) tail[tail_len - 1 - i] = (uint8_t)(bits >> (8 * i));
    blocks(h, tail, tail_len / 64, portable);
    for (int i = 0; i < 8; i++) snprintf(out + 8 * i, 9, "%08x", h[i]);
}

void korch_sha256_hex(const void *data, size_t size, char out[65]) { sha256_hex(data, size, out, false); }
void korch_sha256_hex_portable(const void *data, size_t size, char out[65]) { sha256_hex(data, size, out, true); }

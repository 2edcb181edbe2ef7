/* CRC-32C with the hardware instruction where the CPU has it (every x86-64
 * CPU since 2008), a table otherwise; both give the same value. */
#include "core/crc32c.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#define POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t table[256];
static bool have_sse42;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[i] = c;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_table(uint32_t c, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const unsigned char *p, size_t n) {
    uint64_t c64 = c;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
    }
    c = (uint32_t)c64;
    for (; n; n--, p++) c = __builtin_ia32_crc32qi(c, *p);
    return c;
}
#endif

uint32_t korch_crc32c(uint32_t crc, const void *data, size_t size) {
    pthread_once(&once, init);
    uint32_t c = ~crc;
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_sse42) return ~crc_hw(c, data, size);
#endif
    return ~crc_table(c, data, size);
}

/* SHA-256 (runtime/plan_sha256.c) on the FIPS 180-4 example messages, and
 * the hardware rounds (SHA-NI, where the CPU has them) against the portable
 * ones on random data of every length around the block and padding edges
 * and on a large buffer. On a CPU without SHA-NI both calls take the
 * portable path and the vectors still check it. */
#include <stdlib.h>
#include <string.h>

#include "runtime/plan.h"
#include "test.h"

static void vector(const char *msg, size_t repeat, const char *want) {
    size_t len = strlen(msg) * repeat;
    char *buf = malloc(len + 1), got[65], portable[65];
    for (size_t i = 0; i < repeat; i++) memcpy(buf + i * strlen(msg), msg, strlen(msg));
    korch_sha256_hex(buf, len, got);
    korch_sha256_hex_portable(buf, len, portable);
    CHECK_MSG(strcmp(got, want) == 0, "\"%.20s\" x%zu: %s, expected %s", msg, repeat, got, want);
    CHECK_MSG(strcmp(portable, want) == 0, "portable, \"%.20s\" x%zu: %s, expected %s", msg, repeat, portable, want);
    free(buf);
}

int main(void) {
    vector("", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    vector("abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    vector("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
           "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    vector("a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    uint64_t s = 88172645463325252ull;
    size_t big = (size_t)3 << 20;
    unsigned char *data = malloc(big);
    for (size_t i = 0; i < big; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        data[i] = (unsigned char)s;
    }
    int differ = 0;
    for (size_t len = 0; len <= 300; len++) {
        char a[65], b[65];
        korch_sha256_hex(data + len, len, a);
        korch_sha256_hex_portable(data + len, len, b);
        if (strcmp(a, b) != 0 && differ++ < 5) CHECK_MSG(false, "length %zu: %s vs portable %s", len, a, b);
    }
    CHECK(differ == 0);
    char a[65], b[65];
    korch_sha256_hex(data, big, a);
    korch_sha256_hex_portable(data, big, b);
    CHECK_MSG(strcmp(a, b) == 0, "3 MiB: %s vs portable %s", a, b);
    free(data);
    TEST_MAIN_END();
}

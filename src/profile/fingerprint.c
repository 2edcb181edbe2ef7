/* The machine fingerprint: the facts a latency depends on besides the kernel
 * and its schedule. Cheap enough to compute once per profiling call. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "profile/profile.h"

/* The ISA extensions that change generated code or library kernels. */
static const char *const isa_flags[] = {"sse4_2",      "avx",         "avx2",       "fma",         "f16c",
                                        "avx512f",     "avx512dq",    "avx512bw",   "avx512vl",    "avx512_vnni",
                                        "avx512_bf16", "avx512_fp16", "amx_tile",   "amx_bf16",    NULL};

static void cpu_info(char *model, size_t msize, char *isa, size_t isize) {
    snprintf(model, msize, "unknown");
    isa[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[8192];
    bool have_model = false, have_flags = false;
    while (fgets(line, sizeof line, f) && !(have_model && have_flags)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *value = colon + 1;
        while (*value == ' ') value++;
        value[strcspn(value, "\n")] = '\0';
        if (!have_model && strncmp(line, "model name", 10) == 0) {
            snprintf(model, msize, "%s", value);
            have_model = true;
        } else if (!have_flags && strncmp(line, "flags", 5) == 0) {
            have_flags = true;
            size_t used = 0;
            for (int i = 0; isa_flags[i]; i++) {
                char pat[40];
                snprintf(pat, sizeof pat, " %s ", isa_flags[i]);
                char padded[8200];
                snprintf(padded, sizeof padded, " %s ", value);
                if (strstr(padded, pat) && used < isize) {
                    int n = snprintf(isa + used, isize - used, "%s%s", used ? "," : "", isa_flags[i]);
                    used += n > 0 ? (size_t)n : 0;
                }
            }
        }
    }
    fclose(f);
}

/* 128-bit hex digest (two FNV-1a-style streams); not cryptographic, only a key. */
static void digest(const char *s, size_t n, char out[33]) {
    uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
    for (size_t i = 0; i < n; i++) {
        a = (a ^ (unsigned char)s[i]) * 0x100000001b3ull;
        b = (b ^ (unsigned char)s[i]) * 0xff51afd7ed558ccdull;
        b ^= b >> 31;
    }
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

/* /proc/cpuinfo read once per process (korch db computes hundreds of
 * fingerprints; the CPU does not change under a running process) */
static char cached_model[256], cached_isa[512];
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static void read_cpu_once(void) { cpu_info(cached_model, sizeof cached_model, cached_isa, sizeof cached_isa); }

void korch_machine_cpu(const char **model, const char **isa) {
    pthread_once(&cpu_once, read_cpu_once);
    *model = cached_model;
    *isa = cached_isa;
}

korch_status korch_machine_fingerprint(int threads, const char *compiler, int scrub_mib, char hash[33], char *text,
                                       size_t size) {
    pthread_once(&cpu_once, read_cpu_once);
    const char *model = cached_model, *isa = cached_isa;
    /* cache-state: the version of the buffer-rotation rule (cache_state.c);
     * latencies measured under another rule are another cache state, not
     * reused (version 2: footprints of the L3 size or more stream from DRAM) */
    int n = snprintf(text, size, "cpu=%s;isa=%s;threads=%d;compiler=%s;cache-state=%d", model, isa, threads,
                     compiler ? compiler : "none", KORCH_CACHE_STATE_VERSION);
    /* scrubbed timings measure another cache state: never mixed with plain ones */
    if (n > 0 && (size_t)n < size && scrub_mib > 0)
        n += snprintf(text + n, size - (size_t)n, ";scrub=%dMiB", scrub_mib);
    if (n < 0 || (size_t)n >= size) return korch_error(KORCH_ERR_INTERNAL, "machine fingerprint too long");
    digest(text, (size_t)n, hash);
    return KORCH_OK;
}

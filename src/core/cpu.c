/* CPU feature queries, cached. Every thread computes the same answer, so a
 * race only repeats the query; the atomics keep the sanitizers quiet. */
#include "core/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
/* __builtin_cpu_supports takes a string literal, hence a macro */
#define CPU_QUERY(name, feature)                                                                   \
    bool name(void) {                                                                              \
        static int known = -1;                                                                     \
        int k = __atomic_load_n(&known, __ATOMIC_RELAXED);                                         \
        if (k < 0) {                                                                               \
            __builtin_cpu_init();                                                                  \
            k = __builtin_cpu_supports(feature) ? 1 : 0;                                           \
            __atomic_store_n(&known, k, __ATOMIC_RELAXED);                                         \
        }                                                                                          \
        return k == 1;                                                                             \
    }
CPU_QUERY(korch_cpu_has_avx, "avx")
CPU_QUERY(korch_cpu_has_avx2, "avx2")
CPU_QUERY(korch_cpu_has_avx512_bf16, "avx512bf16")
#else
bool korch_cpu_has_avx(void) { return false; }
bool korch_cpu_has_avx2(void) { return false; }
bool korch_cpu_has_avx512_bf16(void) { return false; }
#endif

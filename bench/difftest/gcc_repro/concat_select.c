#include <stdint.h>
static inline int64_t cg_clamp(int64_t a, int64_t lo, int64_t hi) { return a < lo ? lo : (a > hi ? hi : a); }
void k(const float *restrict in0, const float *restrict in1, float *restrict out1) {
    const float t1 = in1[0];
    #pragma omp simd
    for (int64_t x3 = 0; x3 < 30; x3++) {
        const int c7 = ((x3) >= 0) & ((x3) < 15);
        const int64_t x4 = cg_clamp(x3, 0, 14);
        const float t8 = in0[x4];
        const float t9 = t8 - t1;
        const float t12 = (t9 * 0.103f + t9) * 0.0934f;
        const int c13 = ((x3 + -15) >= 0) & ((x3 + -15) < 15);
        const int64_t x5 = cg_clamp(x3 + -15, 0, 14);
        const float t14 = in0[x5];
        const float t15 = t14 - t1;
        out1[x3] = (c7) ? t12 : ((c13) ? t15 : 0.0f);
    }
}

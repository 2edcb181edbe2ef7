/* Assembles one kernel function: plans the passes, picks the fused depth P,
 * and wraps the loop nests with argument unpacking and scratch memory. Also
 * the prelude every generated translation unit starts with. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/emit.h"

/* cg_expf, the float exponential of generated kernels. With AVX-512 its
 * vector variants are korch's own: the vector loops of a softmax spent half
 * their time in glibc's _ZGVeN16v_expf (bench/kernels/RESULTS.md,
 * 2026-11-27). Cody-Waite reduction by ln 2 in two parts, a degree-6
 * polynomial (ONNX Runtime's MLAS coefficients) and vscalefps, which scales
 * into the subnormal range, to 0 and to infinity as IEEE says; the clamp to
 * [-104, 89] changes no result (exp is 0 or inf beyond) and keeps NaN (maxps
 * and minps return their second operand when one is NaN). Checked on every
 * float in [-104, 89]: at most 0.87 ulp from the double-precision
 * exponential (glibc's vector expf: 2.55 ulp), and the same 0 / inf / NaN
 * (tests/backend/test_cgen_accuracy.c). The four variants gcc may call
 * (vector lengths 16, 8 and 4) are defined here and hidden, so every kernel
 * object carries its own; the scalar cg_expf, for loops gcc leaves scalar,
 * is a tail call to libm's expf (written in assembly: a C definition would
 * make gcc derive the variants from it instead). Without AVX-512, or with
 * another compiler or C library, cg_expf is expf (libmvec as above). */
static void cg_emit_prelude_expf(cg_buf *out) {
    cg_buf_printf(out,
                  "#if defined(CG_SIMD) && defined(__AVX512F__) && defined(__AVX512VL__) && defined(__ELF__)\n"
                  "#include <immintrin.h>\n"
                  "CG_SIMD float cg_expf(float) __attribute__((visibility(\"hidden\")));\n"
                  "__asm__(\".pushsection .text\\n.globl cg_expf\\n.hidden cg_expf\\n.type cg_expf, @function\\n\"\n"
                  "        \"cg_expf:\\n\\tjmp expf@PLT\\n.size cg_expf, .-cg_expf\\n.popsection\\n\");\n"
                  "#define CG_EXP_BODY(P, V)                                                            \\\n"
                  "    V c = P##_min_ps(P##_set1_ps(89.0f), P##_max_ps(P##_set1_ps(-104.0f), x));      \\\n"
                  "    V m = P##_roundscale_ps(P##_mul_ps(c, P##_set1_ps(0x1.715476p+0f)),             \\\n"
                  "                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);          \\\n"
                  "    V r = P##_fmadd_ps(m, P##_set1_ps(-0x1.62e400p-1f), c);                          \\\n"
                  "    r = P##_fmadd_ps(m, P##_set1_ps(-0x1.7f7d1cp-20f), r);                           \\\n"
                  "    V p = P##_fmadd_ps(P##_set1_ps(0x1.694000p-10f), r, P##_set1_ps(0x1.125edcp-7f)); \\\n"
                  "    p = P##_fmadd_ps(p, r, P##_set1_ps(0x1.555b5ap-5f));                             \\\n"
                  "    p = P##_fmadd_ps(p, r, P##_set1_ps(0x1.555450p-3f));                             \\\n"
                  "    p = P##_fmadd_ps(p, r, P##_set1_ps(0x1.fffff6p-2f));                             \\\n"
                  "    p = P##_fmadd_ps(p, r, P##_set1_ps(1.0f));                                       \\\n"
                  "    p = P##_fmadd_ps(p, r, P##_set1_ps(1.0f));                                       \\\n"
                  "    return P##_scalef_ps(p, m);\n"
                  "__attribute__((visibility(\"hidden\"))) __m512 _ZGVeN16v_cg_expf(__m512 x) { CG_EXP_BODY(_mm512, __m512) }\n"
                  "__attribute__((visibility(\"hidden\"))) __m256 _ZGVdN8v_cg_expf(__m256 x) { CG_EXP_BODY(_mm256, __m256) }\n"
                  "__attribute__((visibility(\"hidden\"))) __m256 _ZGVcN8v_cg_expf(__m256 x) { CG_EXP_BODY(_mm256, __m256) }\n"
                  "__attribute__((visibility(\"hidden\"))) __m128 _ZGVbN4v_cg_expf(__m128 x) { CG_EXP_BODY(_mm, __m128) }\n"
                  "#define CG_EXPF_AVX512 1\n"
                  "#else\n#define cg_expf expf\n#endif\n\n");
}

/* cg_expf_row (emit_exprow.c): d[i] = cg_expf(d[i]) for a block of a row,
 * the vector variant called directly so gcc inlines it, and the tail under a
 * mask (the same values as the vector loops; no scalar libm calls).
 * cg_expf_row_sum also returns the block's sum: two vector accumulators
 * (elements i mod 32 < 16 and >= 16) and a tree, so no add chain of 16
 * scalar additions per row (gcc's reduction epilogue). cg_sum_row sums an
 * input row with four accumulators: gcc's loop keeps one, whose add
 * latency bounds a row sum once the input streams from huge pages (0.63
 * against 0.57 ms for a 4096x4096 row sum, bench/kernels/RESULTS.md
 * 2026-11-28). */
static void cg_emit_prelude_expf_row(cg_buf *out) {
    cg_buf_printf(out,
                  "#ifdef CG_EXPF_AVX512\n"
                  "static inline CG_UNUSED void cg_expf_row(float *d, int64_t n) {\n"
                  "    int64_t i = 0;\n"
                  "    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, _ZGVeN16v_cg_expf(_mm512_loadu_ps(d + i)));\n"
                  "    if (i < n) {\n"
                  "        __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);\n"
                  "        _mm512_mask_storeu_ps(d + i, m, _ZGVeN16v_cg_expf(_mm512_maskz_loadu_ps(m, d + i)));\n"
                  "    }\n}\n"
                  "static inline CG_UNUSED float cg_expf_row_sum(float *d, int64_t n) {\n"
                  "    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();\n"
                  "    int64_t i = 0;\n"
                  "    for (; i + 32 <= n; i += 32) {\n"
                  "        __m512 e0 = _ZGVeN16v_cg_expf(_mm512_loadu_ps(d + i));\n"
                  "        __m512 e1 = _ZGVeN16v_cg_expf(_mm512_loadu_ps(d + i + 16));\n"
                  "        _mm512_storeu_ps(d + i, e0);\n"
                  "        _mm512_storeu_ps(d + i + 16, e1);\n"
                  "        a0 = _mm512_add_ps(a0, e0);\n"
                  "        a1 = _mm512_add_ps(a1, e1);\n"
                  "    }\n"
                  "    for (; i < n; i += 16) {\n"
                  "        __mmask16 m = n - i >= 16 ? (__mmask16)0xffffu : (__mmask16)((1u << (n - i)) - 1u);\n"
                  "        __m512 e0 = _ZGVeN16v_cg_expf(_mm512_maskz_loadu_ps(m, d + i));\n"
                  "        _mm512_mask_storeu_ps(d + i, m, e0);\n"
                  "        a0 = _mm512_add_ps(a0, _mm512_maskz_mov_ps(m, e0));\n"
                  "    }\n"
                  "    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));\n}\n"
                  "#define CG_MINMAX_ROW(NAME, OP, INIT) \\\n"
                  "    static inline CG_UNUSED float NAME(const float *d, int64_t n) { \\\n"
                  "        const __m512 init = _mm512_set1_ps(INIT); \\\n"
                  "        __m512 a0 = init, a1 = init; \\\n"
                  "        __mmask16 nan = 0; \\\n"
                  "        int64_t i = 0; \\\n"
                  "        for (; i + 32 <= n; i += 32) { \\\n"
                  "            __m512 v0 = _mm512_loadu_ps(d + i), v1 = _mm512_loadu_ps(d + i + 16); \\\n"
                  "            a0 = _mm512_##OP##_ps(a0, v0); \\\n"
                  "            a1 = _mm512_##OP##_ps(a1, v1); \\\n"
                  "            nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q); \\\n"
                  "        } \\\n"
                  "        for (; i < n; i += 16) { \\\n"
                  "            __mmask16 m = n - i >= 16 ? (__mmask16)0xffffu : (__mmask16)((1u << (n - i)) - 1u); \\\n"
                  "            __m512 v0 = _mm512_mask_loadu_ps(init, m, d + i); \\\n"
                  "            a0 = _mm512_##OP##_ps(a0, v0); \\\n"
                  "            nan |= _mm512_cmp_ps_mask(v0, v0, _CMP_UNORD_Q); \\\n"
                  "        } \\\n"
                  "        return nan ? NAN : _mm512_reduce_##OP##_ps(_mm512_##OP##_ps(a0, a1)); \\\n"
                  "    }\n"
                  "CG_MINMAX_ROW(cg_max_row, max, -INFINITY)\n"
                  "CG_MINMAX_ROW(cg_min_row, min, INFINITY)\n"
                  "static inline CG_UNUSED float cg_sum_row(const float *d, int64_t n) {\n"
                  "    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;\n"
                  "    int64_t i = 0;\n"
                  "    for (; i + 64 <= n; i += 64) {\n"
                  "        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(d + i));\n"
                  "        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(d + i + 16));\n"
                  "        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(d + i + 32));\n"
                  "        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(d + i + 48));\n"
                  "    }\n"
                  "    for (; i < n; i += 16) {\n"
                  "        __mmask16 m = n - i >= 16 ? (__mmask16)0xffffu : (__mmask16)((1u << (n - i)) - 1u);\n"
                  "        a0 = _mm512_add_ps(a0, _mm512_maskz_loadu_ps(m, d + i));\n"
                  "    }\n"
                  "    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));\n}\n"
                  "#else\n"
                  "static inline CG_UNUSED void cg_expf_row(float *d, int64_t n) {\n"
                  "    for (int64_t i = 0; i < n; i++) d[i] = cg_expf(d[i]);\n}\n"
                  "static inline CG_UNUSED float cg_expf_row_sum(float *d, int64_t n) {\n"
                  "    float s = 0.0f;\n"
                  "    for (int64_t i = 0; i < n; i++) s += d[i] = cg_expf(d[i]);\n"
                  "    return s;\n}\n"
                  "static inline CG_UNUSED float cg_max_row(const float *d, int64_t n) {\n"
                  "    float a = -INFINITY;\n"
                  "    for (int64_t i = 0; i < n; i++) { if (d[i] != d[i]) return NAN; a = d[i] > a ? d[i] : a; }\n"
                  "    return a;\n}\n"
                  "static inline CG_UNUSED float cg_min_row(const float *d, int64_t n) {\n"
                  "    float a = INFINITY;\n"
                  "    for (int64_t i = 0; i < n; i++) { if (d[i] != d[i]) return NAN; a = d[i] < a ? d[i] : a; }\n"
                  "    return a;\n}\n"
                  "static inline CG_UNUSED float cg_sum_row(const float *d, int64_t n) {\n"
                  "    float s = 0.0f;\n"
                  "    for (int64_t i = 0; i < n; i++) s += d[i];\n"
                  "    return s;\n}\n"
                  "#endif\n");
}

/* libmvec: declaring the maths functions `simd` lets gcc call glibc's vector
 * variants (_ZGVeN16v_expf, ...) without -ffast-math, so inf and NaN keep their
 * IEEE meaning; the accuracy of these variants is tested in
 * tests/backend/test_cgen_accuracy.c and documented in docs/codegen.md. */
void cg_emit_prelude(cg_buf *out) {
    cg_buf_printf(out, "/* Generated by korch (cgen %s). Do not edit: regenerated on demand. */\n", CG_GENERATOR_VERSION);
    cg_buf_printf(out, "#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n\n");
    cg_buf_printf(out, "#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__)\n"
                       "#define CG_SIMD __attribute__((simd(\"notinbranch\")))\n"
                       "CG_SIMD float expf(float); CG_SIMD float logf(float); CG_SIMD float sinf(float);\n"
                       "CG_SIMD float cosf(float); CG_SIMD float powf(float, float);\n"
                       "CG_SIMD double exp(double); CG_SIMD double log(double); CG_SIMD double sin(double);\n"
                       "CG_SIMD double cos(double); CG_SIMD double pow(double, double);\n"
                       "#if __GLIBC_PREREQ(2, 35)\n"
                       "CG_SIMD float tanhf(float); CG_SIMD float erff(float); CG_SIMD float log1pf(float);\n"
                       "CG_SIMD double tanh(double); CG_SIMD double erf(double); CG_SIMD double log1p(double);\n"
                       "#endif\n#endif\n\n");
    cg_emit_prelude_expf(out);
    cg_buf_printf(out, "#if defined(__GNUC__)\n#define CG_UNUSED __attribute__((unused))\n#else\n#define CG_UNUSED\n#endif\n");
    /* Stack arrays (scratch values, reduction accumulators, row caches) are
     * declared 64-byte aligned: GCC 12.2 at -O3 -fopenmp with AVX-512 placed a
     * float[24] scratch at an address 8 mod 16 and stored to it with vmovdqa
     * (a crash found by korch-difftest, seed 1502; docs/difftest.md). With an
     * explicit alignment the frame is realigned and the assumption holds. */
    cg_buf_printf(out, "#if defined(__GNUC__)\n#define CG_ALIGN __attribute__((aligned(64)))\n#else\n#define CG_ALIGN\n#endif\n");
    cg_emit_prelude_expf_row(out);
    cg_buf_printf(out, "static inline CG_UNUSED int64_t cg_fdiv(int64_t a, int64_t d) { return a / d - (a %% d < 0); }\n"
                       "static inline CG_UNUSED int64_t cg_fmod(int64_t a, int64_t m) { int64_t r = a %% m; return r < 0 ? r + m : r; }\n"
                       "static inline CG_UNUSED int64_t cg_clamp(int64_t a, int64_t lo, int64_t hi) "
                       "{ return a < lo ? lo : (a > hi ? hi : a); }\n"
                       /* Python-style modulus (sign of the divisor), as ONNX Mod with fmod=0 */
                       "static inline CG_UNUSED double cg_pymod(double a, double b) "
                       "{ double r = fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n"
                       "static inline CG_UNUSED float cg_pymodf(float a, float b) "
                       "{ float r = fmodf(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n");
    /* float16 / bfloat16 <-> float, rounding to nearest even with the results
     * of core/half.c for float arguments (docs/precision.md) */
    cg_buf_printf(out,
                  "static inline CG_UNUSED float cg_h2f(uint16_t h) {\n"
                  "    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
                  "    if (e == 0) { float f = (float)m * 0x1p-24f; return s ? -f : f; }\n"
                  "    union { uint32_t u; float f; } c;\n"
                  "    c.u = e == 31 ? (s | 0x7f800000u | m << 13) : (s | (e + 112u) << 23 | m << 13);\n"
                  "    return c.f;\n}\n"
                  "static inline CG_UNUSED uint16_t cg_f2h(float f) {\n"
                  "    union { float f; uint32_t u; } c;\n"
                  "    c.f = f;\n"
                  "    uint32_t s = (c.u >> 16) & 0x8000u, a = c.u & 0x7fffffffu;\n"
                  "    if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u);\n"
                  "    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);\n"
                  "    if (a < 0x38800000u) return (uint16_t)(s | (uint32_t)nearbyintf(fabsf(f) * 0x1p24f));\n"
                  "    uint32_t h = ((a >> 23) - 112u) << 10 | ((a & 0x7fffffu) >> 13), r = a & 0x1fffu;\n"
                  "    h += r > 0x1000u || (r == 0x1000u && (h & 1u));\n"
                  "    return (uint16_t)(s | h);\n}\n"
                  "static inline CG_UNUSED float cg_b2f(uint16_t b) {\n"
                  "    union { uint32_t u; float f; } c;\n"
                  "    c.u = (uint32_t)b << 16;\n"
                  "    return c.f;\n}\n"
                  "static inline CG_UNUSED uint16_t cg_f2b(float f) {\n"
                  "    union { float f; uint32_t u; } c;\n"
                  "    c.f = f;\n"
                  "    if ((c.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((c.u >> 16) & 0x8000u) | 0x7fc0u);\n"
                  "    return (uint16_t)((c.u + 0x7fffu + ((c.u >> 16) & 1u)) >> 16);\n}\n\n");
}

typedef struct plan {
    int n;
    int node[4096 / 8]; /* reduce node, or -1 */
    int value[4096 / 8];
    int slot[4096 / 8];
    const korch_shape *space[4096 / 8];
} plan;

static void reset(cg_emit *e) {
    for (int i = 0; i <= CG_MAX_LEVELS; i++) cg_buf_free(&e->lv[i]);
    for (int i = 0; i < CG_MAX_LEVELS; i++) {
        free(e->head[i]);
        e->head[i] = NULL;
    }
    cg_memo_drop(e, -3);
    free(e->memo);
    free(e->syms);
    e->memo = NULL;
    e->syms = NULL;
    e->n_memo = e->cap_memo = e->n_syms = e->cap_syms = 0;
    e->depth = 0;
    e->n_tmp = 0;
    e->n_tables = 0;
    if (e->rc_has) memset(e->rc_has, 0, (size_t)e->k->n_values * sizeof *e->rc_has);
    e->rc_bytes = 0;
    e->home_value = e->home_slot = -1;
    e->home_taken = false;
    e->fusion_broken = false;
    /* the file is emptied for every attempt: its zero rows are declared again
     * (an attempt given up after declaring one left the next kernel without
     * it: difftest seed 37179, 'cg_zero_float' undeclared) */
    e->zero_rows = 0;
}

/* Fused mode runs a row's passes over data in L1/L2, and the row's first
 * pass waits on DRAM. Prefetching the next outer iteration's slab of each
 * input while this one computes overlaps the two: softmax [8192, 1024]
 * 3.1 -> 2.3 ms on the machine of that session (docs/codegen.md); on a Zen 4
 * the same prefetch loop made it 25% slower (1.9 -> 2.4 ms: its hardware
 * prefetchers do the job, and the loop's instructions compete with the
 * exponential's), so it is a schedule knob (fetch) the tuner settles per
 * kernel and machine. Only kernels with a reduction pass: a single
 * streaming pass is covered by the hardware prefetcher, and the prefetch
 * loop cost erf-GELU 15%. Inputs qualify when their leading P dims are the
 * fused dims, so the next slab follows the current one in memory. Slabs
 * past CG_BURST_MAX_BYTES overflow the miss queues in one burst; for them
 * the knob's 1 prefetches during the row's streaming output pass instead
 * (emit_stream.c). */
static void prefetch_next_slab(cg_emit *e, const cg_nest *common) {
    int P = e->P;
    int64_t outer_n = 1;
    for (int d = 0; d < P; d++) outer_n *= common->ext[d];
    for (int v = 0; v < e->k->n_values; v++) {
        const cg_value *val = &e->k->values[v];
        if (e->loc[v] != CG_LOC_INPUT || val->shape.rank <= P) continue;
        bool lead = true;
        for (int d = 0; d < P; d++) lead &= val->shape.dims[d] == common->ext[d];
        int64_t slab = 1, esize = korch_dtype_size(val->dtype);
        for (int d = P; d < val->shape.rank; d++) slab *= val->shape.dims[d];
        if (!lead || slab * esize < 1024 || slab * esize > CG_BURST_MAX_BYTES || esize <= 0) continue;
        korch_shape os = {.rank = P};
        cg_aff oc[KORCH_MAX_RANK];
        for (int d = 0; d < P; d++) os.dims[d] = common->ext[d], oc[d] = cg_aff_sym(e->outer[d]);
        cg_aff lin = cg_linear(e, &os, oc);
        char s[400];
        cg_aff_str(&lin, s, sizeof s);
        cg_stmt(e, e->depth - 1,
                "if (%s + 1 < %lld) for (int64_t pf = 0; pf < %lld; pf += %lld) "
                "__builtin_prefetch(&in%d[(%s + 1) * %lld + pf], 0, 3);",
                s, (long long)outer_n, (long long)slab, (long long)(64 / esize > 0 ? 64 / esize : 1),
                val->input_slot, s, (long long)slab);
    }
}

/* Whether a flat nest of output passes will be staged (tiled, last two
 * loops swapped: cg_nest_open's rule) with every output float32, as large
 * as the last-level cache and whole lines wide: its copy-out then streams
 * (emit_stage.c). */
static bool staged_streams(const cg_emit *e, const plan *pl, const cg_nest *common) {
    int P = common->n, T = e->s->tile;
    if (!e->s->stream || !e->s->order || T <= 0 || T % 16 != 0 || P < 2 || pl->n > CG_STAGE_MAX) return false;
    if (!cg_nest_tiles(e, common, true) || common->ext[P - 1] % 16 != 0) return false;
    for (int i = 0; i < pl->n; i++) {
        const cg_value *w = &e->k->values[pl->value[i]];
        if (pl->node[i] >= 0 || pl->space[i]->rank != P || w->dtype != KORCH_DTYPE_FLOAT32 ||
            korch_shape_numel(&w->shape) * 4 < cg_stream_min_bytes(e->k))
            return false;
    }
    return true;
}

static void attempt(cg_emit *e, const plan *pl, int P) {
    reset(e);
    e->P = P;
    e->stage = NULL;
    cg_nest common = {.n = P};
    cg_stage stage = {.nest = &common};
    /* streamed outputs in fused passes: one fence per thread after the loop */
    bool stream = false, region = false;
    for (int i = 0; i < pl->n && P > 0; i++) stream |= pl->node[i] < 0 && cg_stream_applies(e, pl->value[i], P);
    bool fence = stream;
    if (P > 0) {
        bool flat = true;
        for (int i = 0; i < pl->n; i++) flat &= pl->space[i]->rank == P;
        for (int d = 0; d < P; d++) common.ext[d] = pl->space[0]->dims[d];
        stage.stream = flat && !stream && staged_streams(e, pl, &common);
        fence = stream || stage.stream;
        if (stage.stream) cg_stream_helpers(e);
        region = fence && e->s->par > 0;
        if (region) cg_region_open(e);
        cg_loop_opts o = {.reorder = true, .par = e->s->par, .simd = flat, .in_region = region};
        cg_nest_open(e, &common, &o);
        for (int d = 0; d < P; d++) e->outer[d] = common.sym[d];
        bool reduces = false;
        for (int i = 0; i < pl->n; i++) reduces |= pl->node[i] >= 0;
        if (!flat && reduces && e->s->fetch == 1) prefetch_next_slab(e, &common);
        e->reduce_passes = 0;
        if (pl->n > 0 && pl->node[pl->n - 1] < 0) e->home_value = pl->value[pl->n - 1], e->home_slot = pl->slot[pl->n - 1];
        /* a flat nest of output passes, tiled and swapped: staged tiles */
        if (flat && !reduces && !stream && common.tiled && common.swapped && pl->n <= CG_STAGE_MAX) e->stage = &stage;
    }
    for (int i = 0; i < pl->n && e->st == KORCH_OK; i++) {
        if (pl->node[i] >= 0) cg_emit_reduce_pass(e, pl->node[i]);
        else cg_emit_output_pass(e, pl->value[i], pl->slot[i]);
    }
    if (e->stage) {
        cg_stage_copy_out(e, e->stage);
        e->stage = NULL;
    }
    cg_nest_close(e, &common);
    if (fence) cg_stmt(e, e->depth - 1, "cg_stream_fence();");
    if (region) cg_region_close(e);
}

static int max_fused_depth(const cg_emit *e, const plan *pl) {
    int P = KORCH_MAX_RANK;
    for (int i = 0; i < pl->n; i++) {
        if (pl->space[i]->rank < P) P = pl->space[i]->rank;
        if (pl->node[i] >= 0) {
            const cg_node *n = &e->k->nodes[pl->node[i]];
            uint32_t axes = n->pn->u.reduce.axes;
            for (int d = 0; d < P; d++)
                if ((axes >> d) & 1u) P = d;
            /* kept-inner: the last kept axis must stay a loop of the pass */
            if (cg_kept_inner(e->s, &e->k->values[n->in[0]], axes) && P >= 1 && ((axes >> P) & 1u)) P--;
        }
        for (int d = 0; d < P; d++)
            if (pl->space[i]->dims[d] != pl->space[0]->dims[d]) P = d;
    }
    return P;
}

static void emit_function(cg_emit *e, const char *name, cg_buf *fn) {
    const cg_kernel *k = e->k;
    cg_buf_printf(fn, "int %s(void *const *in_, void *const *out_, int nthreads) {\n", name);
    cg_buf_printf(fn, "    (void)in_; (void)out_; (void)nthreads;\n");
    for (int v = 0; v < k->n_values; v++) {
        const cg_value *val = &k->values[v];
        const char *ct = cg_ctype(val->dtype);
        if (e->loc[v] == CG_LOC_INPUT)
            cg_buf_printf(fn, "    const %s *restrict in%d = (const %s *)in_[%d];\n", ct, val->input_slot, ct,
                          val->input_slot);
    }
    for (int q = 0; q < k->n_outputs; q++) {
        const char *ct = cg_ctype(k->values[k->output_value[q]].dtype);
        cg_buf_printf(fn, "    %s *restrict out%d = (%s *)out_[%d];\n", ct, q, ct, q);
    }
    int n_heap = 0;
    for (int v = 0; v < k->n_values; v++) {
        if (e->loc[v] != CG_LOC_SCRATCH) continue;
        const char *ct = cg_ctype(k->values[v].dtype);
        long long numel = (long long)korch_shape_numel(&k->values[v].shape);
        if (numel * 8 <= 16384) {
            cg_buf_printf(fn, "    %s sc%d[%lld] CG_ALIGN;\n", ct, v, numel);
        } else {
            cg_buf_printf(fn, "    %s *restrict sc%d = (%s *)malloc(%lldu * sizeof(%s));\n", ct, v, ct, numel, ct);
            n_heap++;
        }
    }
    if (n_heap) {
        cg_buf_printf(fn, "    if (0");
        for (int v = 0; v < k->n_values; v++)
            if (e->loc[v] == CG_LOC_SCRATCH && korch_shape_numel(&k->values[v].shape) * 8 > 16384)
                cg_buf_printf(fn, " || !sc%d", v);
        cg_buf_printf(fn, ") {\n");
        for (int v = 0; v < k->n_values; v++)
            if (e->loc[v] == CG_LOC_SCRATCH && korch_shape_numel(&k->values[v].shape) * 8 > 16384)
                cg_buf_printf(fn, "        free(sc%d);\n", v);
        cg_buf_printf(fn, "        return 1;\n    }\n");
    }
    if (e->lv[0].len) cg_buf_append(fn, e->lv[0].data, e->lv[0].len);
    for (int v = 0; v < k->n_values; v++)
        if (e->loc[v] == CG_LOC_SCRATCH && korch_shape_numel(&k->values[v].shape) * 8 > 16384)
            cg_buf_printf(fn, "    free(sc%d);\n", v);
    cg_buf_printf(fn, "    return 0;\n}\n\n");
}

korch_status cg_emit_kernel(const cg_kernel *k, const cg_schedule *s, const char *name, cg_buf *out, char *reason,
                            size_t size) {
    char dummy[8];
    if (!reason || !size) {
        reason = dummy;
        size = sizeof dummy;
    }
    reason[0] = '\0';
    plan *pl = calloc(1, sizeof *pl);
    /* page-striding kernels are always tiled (schedule_space.c): t0 emits as the
     * default tile, and the tuner sees the two as the same code */
    cg_schedule tiled = *s;
    if (tiled.tile == 0 && cg_kernel_strides_pages(k)) tiled.tile = CG_PAGE_STRIDE_TILE;
    cg_emit e = {.k = k, .s = &tiled, .fname = name, .reason = reason, .size = size};
    e.loc = calloc((size_t)k->n_values, sizeof *e.loc);
    e.rc_has = calloc((size_t)k->n_values, sizeof *e.rc_has);
    cg_buf file = {0}, fn = {0};
    e.file = &file;
    if (!pl || !e.loc || !e.rc_has) {
        cg_fail(&e, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int v = 0; v < k->n_values; v++) {
        const cg_value *val = &k->values[v];
        if (val->producer < 0) e.loc[v] = val->inline_scalar ? CG_LOC_SCALAR : CG_LOC_INPUT;
        else if (k->nodes[val->producer].pn->kind == KORCH_PRIM_REDUCE)
            e.loc[v] = val->output_slot >= 0 ? CG_LOC_OUTPUT : CG_LOC_SCRATCH;
        else e.loc[v] = CG_LOC_COMPUTE;
    }
    int cap = (int)(sizeof pl->node / sizeof pl->node[0]);
    for (int i = 0; i < k->n_nodes && pl->n < cap; i++) {
        const cg_node *n = &k->nodes[i];
        if (n->pn->kind != KORCH_PRIM_REDUCE) continue;
        pl->node[pl->n] = i;
        pl->space[pl->n++] = &k->values[n->in[0]].shape;
    }
    for (int q = 0; q < k->n_outputs && pl->n < cap; q++) {
        int w = k->output_value[q];
        if (e.loc[w] == CG_LOC_OUTPUT && k->values[w].output_slot == q) continue;
        pl->node[pl->n] = -1;
        pl->value[pl->n] = w;
        pl->slot[pl->n] = q;
        pl->space[pl->n++] = &k->values[w].shape;
    }
    if (pl->n >= cap) {
        cg_fail(&e, KORCH_ERR_UNSUPPORTED, "more than %d passes", cap - 1);
        goto done;
    }
    int Pmax = max_fused_depth(&e, pl);
    /* a streamed output needs its last dimension as a loop of its own pass */
    for (int i = 0; i < pl->n; i++)
        if (pl->node[i] < 0 && k->values[pl->value[i]].shape.rank == Pmax && Pmax > 0 &&
            cg_stream_applies(&e, pl->value[i], Pmax - 1))
            Pmax--;
    /* so does an output whose innermost loop is split (emit_split.c) */
    for (int i = 0; i < pl->n; i++)
        if (pl->node[i] < 0 && k->values[pl->value[i]].shape.rank == Pmax && Pmax > 1 &&
            cg_split_applies(&e, pl->value[i]))
            Pmax--;
    for (int P = Pmax; P >= 0; P--) {
        cg_buf_free(&file);
        attempt(&e, pl, P);
        if (e.st != KORCH_OK || !e.fusion_broken) break;
    }
    if (e.st != KORCH_OK) goto done;
    emit_function(&e, name, &fn);
    if (file.oom || fn.oom || e.lv[0].oom) {
        cg_fail(&e, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    if (file.len) cg_buf_append(out, file.data, file.len);
    cg_buf_append(out, fn.data, fn.len);
done:
    reset(&e);
    cg_buf_free(&file);
    cg_buf_free(&fn);
    free(e.loc);
    free(e.rc_has);
    free(pl);
    if (e.st != KORCH_OK) return korch_error(e.st, "cgen: kernel %s: %s", name, reason);
    return KORCH_OK;
}

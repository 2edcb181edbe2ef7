/* Output passes with non-temporal ("streaming") stores.
 *
 * A plain store to a line that is not in cache first reads the line (read
 * for ownership), so writing an output that cannot stay in cache anyway
 * costs its bytes twice in DRAM traffic. For float32 outputs at least as
 * large as the last-level cache, the pass computes 16 lanes into a local
 * array (which gcc keeps in a zmm register) and writes them with
 * _mm512_stream_ps; measured on the 5-op chain over 16M floats: 2.49 -> 2.11
 * ms, softmax [8192, 1024]: 2.67 -> 2.11 ms (docs/codegen.md). Smaller
 * outputs keep plain stores: their consumer, the next kernel of the plan,
 * reads them from cache.
 *
 * The last dimension is split into chunks of 16 lanes. Streaming stores are
 * weakly ordered, so each thread runs one store fence after its share of
 * the pass: the parallel loop is a worksharing loop inside an explicit
 * parallel region that ends with the fence. A fence per row or per block
 * instead serialises the write-combining buffers (measured 25% slower on
 * the 5-op chain). */
#include <stdio.h>

#include "backend/cgen/emit.h"
#include "profile/profile.h"

#define LANES 16

int64_t cg_stream_min_bytes(const cg_kernel *k) {
    /* korch_profile_options.cg_stream_min_bytes lowers the threshold so tests
     * can cover this path on small tensors (it changes the generated source,
     * hence the compiled-object hash) */
    if (k->stream_min_bytes > 0) return k->stream_min_bytes;
    return korch_llc_bytes();
}

bool cg_stream_applies(const cg_emit *e, int value, int P) {
    const cg_value *w = &e->k->values[value];
    int rank = w->shape.rank, n = rank - P;
    if (!e->s->stream || w->dtype != KORCH_DTYPE_FLOAT32 || n < 1) return false;
    int64_t last = w->shape.dims[rank - 1];
    if (last % LANES != 0) return false;
    /* the order and tile knobs rearrange the last two loops (of the pass or
     * of the fused nest); the lanes must run along the contiguous last
     * dimension, so those schedules keep plain stores and the tuner picks */
    if (e->s->order || e->s->tile) return false;
    return korch_shape_numel(&w->shape) * 4 >= cg_stream_min_bytes(e->k);
}

/* The helpers call gcc's builtins rather than including <immintrin.h>: with
 * -march=native that header pulls in every instruction-set header and cost
 * 0.5-0.6 s of parsing per compiler run (measured with gcc 12.2 on an EPYC:
 * an empty file 0.06 s, with the header 0.61-0.70 s), more than compiling a
 * typical batch of kernels. Other compilers keep the intrinsics. */
void cg_stream_helpers(cg_emit *e) {
    /* once per translation unit: kernels share the file */
    cg_buf_printf(e->file,
                  "#ifndef CG_STREAM_HELPERS\n#define CG_STREAM_HELPERS\n"
                  /* an output only 16-byte aligned (malloc's, NumPy's) streams
                   * in four 128-bit parts: a full line still leaves the
                   * write-combining buffer whole, without being read first */
                  "#if defined(__GNUC__) && !defined(__clang__)\n"
                  "typedef float cg_v4 __attribute__((vector_size(16)));\n"
                  "#define CG_STREAM16_SSE(d, v) do { for (int cg_q = 0; cg_q < 16; cg_q += 4) "
                  "__builtin_ia32_movntps((d) + cg_q, (cg_v4){(v)[cg_q], (v)[cg_q + 1], (v)[cg_q + 2], (v)[cg_q + 3]}); "
                  "} while (0)\n"
                  "#elif defined(__SSE__)\n#include <xmmintrin.h>\n"
                  "#define CG_STREAM16_SSE(d, v) do { for (int cg_q = 0; cg_q < 16; cg_q += 4) "
                  "_mm_stream_ps((d) + cg_q, _mm_loadu_ps((v) + cg_q)); } while (0)\n"
                  "#endif\n"
                  "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)\n"
                  "typedef float cg_v16u __attribute__((vector_size(64), aligned(4)));\n"
                  "typedef float cg_v16 __attribute__((vector_size(64)));\n"
                  "static inline CG_UNUSED void cg_stream16(float *d, const float *v) {\n"
                  "    if (((uintptr_t)d & 63) == 0) __builtin_ia32_movntps512(d, (cg_v16)*(const cg_v16u *)v);\n"
                  "    else if (((uintptr_t)d & 15) == 0) CG_STREAM16_SSE(d, v);\n"
                  "    else *(cg_v16u *)d = *(const cg_v16u *)v;\n}\n"
                  "static inline CG_UNUSED void cg_stream_fence(void) { __builtin_ia32_sfence(); }\n"
                  "#elif defined(__GNUC__) && !defined(__clang__) && defined(__AVX__)\n"
                  "typedef float cg_v8u __attribute__((vector_size(32), aligned(4)));\n"
                  "typedef float cg_v8 __attribute__((vector_size(32)));\n"
                  "static inline CG_UNUSED void cg_stream16(float *d, const float *v) {\n"
                  "    if (((uintptr_t)d & 31) == 0) {\n"
                  "        __builtin_ia32_movntps256(d, (cg_v8)*(const cg_v8u *)v);\n"
                  "        __builtin_ia32_movntps256(d + 8, (cg_v8)*(const cg_v8u *)(v + 8));\n"
                  "    } else if (((uintptr_t)d & 15) == 0) {\n"
                  "        CG_STREAM16_SSE(d, v);\n"
                  "    } else {\n"
                  "        *(cg_v8u *)d = *(const cg_v8u *)v; *(cg_v8u *)(d + 8) = *(const cg_v8u *)(v + 8);\n"
                  "    }\n}\n"
                  "static inline CG_UNUSED void cg_stream_fence(void) { __builtin_ia32_sfence(); }\n"
                  "#elif defined(__AVX512F__)\n#include <immintrin.h>\n"
                  "static inline CG_UNUSED void cg_stream16(float *d, const float *v) {\n"
                  "    if (((uintptr_t)d & 63) == 0) _mm512_stream_ps(d, _mm512_loadu_ps(v));\n"
                  "    else if (((uintptr_t)d & 15) == 0) CG_STREAM16_SSE(d, v);\n"
                  "    else _mm512_storeu_ps(d, _mm512_loadu_ps(v));\n}\n"
                  "static inline CG_UNUSED void cg_stream_fence(void) { _mm_sfence(); }\n"
                  "#elif defined(__AVX__)\n#include <immintrin.h>\n"
                  "static inline CG_UNUSED void cg_stream16(float *d, const float *v) {\n"
                  "    if (((uintptr_t)d & 31) == 0) {\n"
                  "        _mm256_stream_ps(d, _mm256_loadu_ps(v)); _mm256_stream_ps(d + 8, _mm256_loadu_ps(v + 8));\n"
                  "    } else if (((uintptr_t)d & 15) == 0) {\n"
                  "        CG_STREAM16_SSE(d, v);\n"
                  "    } else {\n"
                  "        _mm256_storeu_ps(d, _mm256_loadu_ps(v)); _mm256_storeu_ps(d + 8, _mm256_loadu_ps(v + 8));\n"
                  "    }\n}\n"
                  "static inline CG_UNUSED void cg_stream_fence(void) { _mm_sfence(); }\n"
                  "#else\n"
                  "static inline CG_UNUSED void cg_stream16(float *d, const float *v) { for (int i = 0; i < 16; i++) d[i] = v[i]; }\n"
                  "static inline CG_UNUSED void cg_stream_fence(void) {}\n"
                  "#endif\n#endif\n");
}

void cg_emit_stream_pass(cg_emit *e, int value, int slot) {
    const cg_value *w = &e->k->values[value];
    int rank = w->shape.rank, P = e->P;
    int64_t last = w->shape.dims[rank - 1];
    cg_stream_helpers(e);
    cg_nest ns = {0};
    for (int d = P; d < rank - 1; d++) ns.ext[ns.n++] = w->shape.dims[d];
    ns.ext[ns.n++] = last / LANES;
    ns.ext[ns.n++] = LANES;
    /* unfused: the pass is its own parallel region, so each thread fences
     * once after its share; fused passes are fenced by attempt() */
    int par = P == 0 ? (e->s->par < ns.n - 1 ? e->s->par : ns.n - 1) : 0;
    if (par > 0) cg_region_open(e);
    cg_loop_opts o = {.par = par, .in_region = par > 0, .simd = true, .simd_always = true};
    cg_nest_open(e, &ns, &o);
    int chunk = ns.sym[ns.n - 2], lane = ns.sym[ns.n - 1];
    char stage[24];
    snprintf(stage, sizeof stage, "s%d", e->n_tmp++);
    cg_stmt(e, e->depth - 2, "float %s[%d];", stage, LANES);
    cg_aff c[KORCH_MAX_RANK], c0[KORCH_MAX_RANK];
    for (int d = 0; d < rank - 1; d++) c[d] = d < P ? cg_aff_sym(e->outer[d]) : cg_aff_sym(ns.sym[d - P]);
    cg_aff col = cg_aff_const(0), cs = cg_aff_sym(chunk);
    cg_aff_add(e, &col, &cs, LANES);
    for (int d = 0; d < rank - 1; d++) c0[d] = c[d];
    c0[rank - 1] = col;
    c[rank - 1] = col;
    cg_aff ls = cg_aff_sym(lane);
    cg_aff_add(e, &c[rank - 1], &ls, 1);
    int lvl;
    const char *v = cg_value_at(e, value, c, &lvl);
    cg_stmt(e, e->depth - 1, "%s[x%d] = %s;", stage, lane, v);
    cg_loop_close(e);
    ns.opened--;
    /* fetch knob 1 on rows too long for its burst (emit_function.c): the
     * fused row's output pass, which only streams out, prefetches the next
     * row a line per 16 elements (softmax [256, 32768] from DRAM: 0.90x,
     * bench/kernels/RESULTS.md, 2026-11-28) */
    if (P > 0 && e->s->fetch == 1 && e->reduce_passes > 0 && rank - P == 1 && last * 4 > CG_BURST_MAX_BYTES) {
        char b[32], pf[2048];
        snprintf(b, sizeof b, "%d * x%d", LANES, chunk);
        if (cg_next_slab_prefetch(e, last, b, 1, pf, sizeof pf)) cg_stmt(e, e->depth - 1, "%s", pf);
    }
    cg_aff lin = cg_linear(e, &w->shape, c0);
    char s[400];
    cg_aff_str(&lin, s, sizeof s);
    cg_stmt(e, e->depth - 1, "cg_stream16(&out%d[%s], %s);", slot, s, stage);
    cg_nest_close(e, &ns);
    if (P == 0) cg_stmt(e, e->depth - 1, "cg_stream_fence();");
    if (par > 0) cg_region_close(e);
}

/* What the running CPU can do, asked once per process: the references pick
 * their AVX/AVX2 code paths with these (ops/gemm_kernel.c, core/vmath.c). */
#ifndef KORCH_CORE_CPU_H
#define KORCH_CORE_CPU_H

#include <stdbool.h>

bool korch_cpu_has_avx(void);
bool korch_cpu_has_avx2(void);
/* bfloat16 dot products (vdpbf16ps): what `--precision bf16` needs. */
bool korch_cpu_has_avx512_bf16(void);

#endif

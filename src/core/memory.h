/* Buffers for tensors: 64-byte aligned, and large ones backed by huge pages.
 *
 * Why huge pages: a memory-bound kernel streaming tens of MiB through 4 KiB
 * pages misses the TLB every 4 KiB. Measured on Zen 4 (a row sum over a
 * 64 MiB input, bench/kernels/RESULTS.md 2026-11-28): 1.6 ms on 4 KiB pages,
 * 1.16 ms on 2 MiB pages. numpy asks for huge pages on its large arrays
 * (madvise, from 4 MiB), so a peer fed numpy arrays already has them;
 * Linux's default transparent-huge-page mode ("madvise") gives them only
 * to regions that ask. Where the kernel has no such mode the advice is a
 * no-op and the buffer is an ordinary aligned one. */
#ifndef KORCH_CORE_MEMORY_H
#define KORCH_CORE_MEMORY_H

#include <stddef.h>

/* the size from which buffers are 2 MiB aligned and advised (numpy's) */
#define KORCH_HUGE_MIN_BYTES ((size_t)4 << 20)

/* `bytes` (0 allowed: one cache line) aligned to 64 bytes, to 2 MiB with
 * huge-page advice from KORCH_HUGE_MIN_BYTES; NULL when out of memory.
 * Released with free(). Contents undefined. */
void *korch_buffer_alloc(size_t bytes);

#endif

#include "core/memory.h"

#include <stdint.h>
#include <stdlib.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define HUGE_PAGE ((size_t)2 << 20)

void *korch_buffer_alloc(size_t bytes) {
    size_t align = bytes >= KORCH_HUGE_MIN_BYTES ? HUGE_PAGE : 64;
    if (bytes > SIZE_MAX - align) return NULL;
    /* aligned_alloc wants a multiple of the alignment */
    size_t size = bytes ? (bytes + align - 1) & ~(align - 1) : 64;
    void *p = aligned_alloc(align, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    /* advice only: a kernel without transparent huge pages refuses it and
     * the buffer works as it is */
    if (p && align == HUGE_PAGE) (void)madvise(p, size, MADV_HUGEPAGE);
#endif
    return p;
}

/* Buffer placement for the executor. This version keeps every intermediate
 * in a slot of its own (no reuse): simple and obviously correct. The
 * lifetime-based planner of the memory-planning issue replaces this function
 * and nothing else. */
#include "runtime/executor.h"

korch_status korch_memory_place(const korch_buffer_request *requests, int n, size_t alignment, size_t *offsets,
                                size_t *arena_bytes) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "memory plan: alignment %zu is not a power of two", alignment);
    size_t top = 0;
    for (int i = 0; i < n; i++) {
        size_t rounded = (requests[i].bytes + alignment - 1) & ~(alignment - 1);
        if (rounded < requests[i].bytes || top + rounded < top)
            return korch_error(KORCH_ERR_OUT_OF_MEMORY, "memory plan: value %d does not fit in the address space",
                               requests[i].value);
        offsets[i] = top;
        top += rounded;
    }
    *arena_bytes = top;
    return KORCH_OK;
}

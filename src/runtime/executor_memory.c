/* Buffer placement: greedy by size, best fit.
 *
 * Requests are placed largest first. Each one goes into the smallest gap,
 * between the buffers already placed whose lifetimes overlap its own, that
 * is big enough (best fit); if no gap fits, on top of the highest of them.
 * Buffers with disjoint lifetimes are ignored, so they share bytes. This is
 * the "greedy by size" offset calculation of TensorFlow Lite's arena planner
 * (Pisarchyk and Lee, "Efficient Memory Management for Deep Neural Net
 * Inference", 2020), which they found within a few percent of the lower bound
 * (the most bytes live at one time) on common networks; the tests in
 * tests/runtime/test_arena.c check it against that bound and against
 * brute-force overlap checks. O(n^2 log n) for n requests; n is the number of
 * intermediate values of one model (a few thousand at most). */
#include <stdlib.h>

#include "runtime/executor.h"

typedef struct placed {
    size_t offset, end;
} placed;

/* qsort has no context argument (and a global would race between sessions
 * created on different threads): sort copies that carry their index */
typedef struct keyed {
    korch_buffer_request r;
    int index;
} keyed;

static int by_size_desc(const void *a, const void *b) {
    const korch_buffer_request *x = &((const keyed *)a)->r, *y = &((const keyed *)b)->r;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    /* ties: the longer-lived first, then by birth (deterministic) */
    int lx = x->last - x->first, ly = y->last - y->first;
    if (lx != ly) return lx < ly ? 1 : -1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return x->value < y->value ? -1 : x->value > y->value;
}

static int by_offset(const void *a, const void *b) {
    const placed *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static bool overlaps(const korch_buffer_request *a, const korch_buffer_request *b) {
    return a->first <= b->last && b->first <= a->last;
}

korch_status korch_memory_place(const korch_buffer_request *requests, int n, size_t alignment, size_t *offsets,
                                size_t *arena_bytes) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "memory plan: alignment %zu is not a power of two", alignment);
    *arena_bytes = 0;
    if (n <= 0) return KORCH_OK;
    for (int i = 0; i < n; i++) {
        size_t rounded = (requests[i].bytes + alignment - 1) & ~(alignment - 1);
        if (rounded < requests[i].bytes)
            return korch_error(KORCH_ERR_OUT_OF_MEMORY, "memory plan: value %d does not fit in the address space",
                               requests[i].value);
        if (requests[i].first > requests[i].last)
            return korch_error(KORCH_ERR_INTERNAL, "memory plan: value %d dies (kernel %d) before it is made (%d)",
                               requests[i].value, requests[i].last, requests[i].first);
    }
    keyed *order = malloc((size_t)n * sizeof *order);
    bool *done = calloc((size_t)n, sizeof *done);
    placed *live = malloc((size_t)n * sizeof *live);
    if (!order || !done || !live) {
        free(order);
        free(done);
        free(live);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "memory plan: out of memory");
    }
    for (int i = 0; i < n; i++) order[i] = (keyed){requests[i], i};
    qsort(order, (size_t)n, sizeof *order, by_size_desc);
    korch_status st = KORCH_OK;
    size_t top = 0;
    for (int oi = 0; oi < n && st == KORCH_OK; oi++) {
        int r = order[oi].index;
        size_t size = (requests[r].bytes + alignment - 1) & ~(alignment - 1);
        int n_live = 0;
        for (int j = 0; j < n; j++)
            if (done[j] && overlaps(&requests[r], &requests[j]))
                live[n_live++] = (placed){offsets[j], offsets[j] + ((requests[j].bytes + alignment - 1) & ~(alignment - 1))};
        qsort(live, (size_t)n_live, sizeof *live, by_offset);
        /* gaps between the overlapping buffers, lowest address first */
        size_t best = (size_t)-1, best_gap = (size_t)-1, cursor = 0;
        for (int j = 0; j < n_live; j++) {
            if (live[j].offset > cursor) {
                size_t gap = live[j].offset - cursor;
                if (gap >= size && gap < best_gap) {
                    best = cursor;
                    best_gap = gap;
                }
            }
            if (live[j].end > cursor) cursor = live[j].end;
        }
        if (best == (size_t)-1) {
            best = cursor;
            if (best + size < best) {
                st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "memory plan: the arena does not fit in the address space");
                break;
            }
        }
        offsets[r] = best;
        done[r] = true;
        if (best + size > top) top = best + size;
    }
    free(order);
    free(done);
    free(live);
    *arena_bytes = top;
    return st;
}

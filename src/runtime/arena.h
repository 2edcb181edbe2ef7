/* The memory plan of an execution plan: where every intermediate value lives.
 *
 * Every value a kernel writes that is not a graph output (graph outputs are
 * written straight into the caller's buffers) gets an offset in one arena.
 * A value lives from the first kernel that writes it to the last kernel that
 * reads or writes it (plans may recompute a value: then it is written twice).
 * Values whose lifetimes do not overlap share bytes (korch_memory_place).
 *
 * In place: a kernel may write its output over an input whose life ends in
 * that kernel, when the kernel reads every element of that input only at the
 * position it writes (korch_kernel_in_place_input). The two values then form
 * one buffer whose lifetime is the union of theirs.
 *
 * The executor and the exporter use the same plan, so an exported model
 * needs exactly the arena `korch run` reports. */
#ifndef KORCH_RUNTIME_ARENA_H
#define KORCH_RUNTIME_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/plan.h"

#define KORCH_ARENA_ALIGNMENT 64

/* Staggering: buffers of at least KORCH_ARENA_STAGGER_MIN bytes start at one
 * of 64 cache-line offsets within a 4 KiB page (each is padded by
 * KORCH_ARENA_STAGGER_PAD bytes to make room), chosen so that the operands of
 * one kernel differ modulo 4 KiB. Tensors whose sizes are multiples of 4 KiB
 * would otherwise all start at the same page offset, and a kernel reading
 * several of them with a large stride (a transpose feeding a concat) maps
 * them onto the same cache sets: measured 2.5x slower on SegFormer's
 * decoder kernel (docs/export.md, "Memory planning"). */
#define KORCH_ARENA_STAGGER_MIN ((size_t)16 << 10)
#define KORCH_ARENA_STAGGER_PAD ((size_t)63 * KORCH_ARENA_ALIGNMENT)

typedef struct korch_memory_plan {
    int n_values;      /* pg->n_values */
    int64_t *offset;   /* per pgraph value: byte offset in the arena, -1 when not in it */
    int *in_place_of;  /* per value: the input it overwrites in place (same offset), or -1 */
    size_t arena_bytes;
    size_t unshared_bytes; /* what one slot per value would need (aligned, staggering pads included) */
    size_t peak_live_bytes; /* most bytes live at one kernel: a lower bound on any placement */
    int n_buffers;     /* intermediate values in the arena */
    int n_in_place;    /* kernels that write an output over an input */
} korch_memory_plan;

/* Lifetimes, in-place pairs and placement for `plan` on `pg` (which the plan
 * must have been validated against). */
korch_status korch_memory_plan_build(const korch_plan *plan, const korch_pgraph *pg, korch_memory_plan *out);
void korch_memory_plan_free(korch_memory_plan *mp);

/* The position (in k->inputs) of an input kernel k may overwrite with output
 * 0, or -1. Decided from the kernel's primitives alone, conservatively: a
 * kernel of elementwise primitives only, with one output, all of whose nodes
 * have the output's shape, and an input of the output's dtype and shape (so
 * it is read at exactly the positions written, element by element, in one
 * pass). `usable(v)` says whether a value may be overwritten (its life ends
 * here, it is an arena value); NULL accepts any. */
int korch_kernel_in_place_input(const korch_pgraph *pg, const korch_plan_kernel *k,
                                int (*usable)(void *ctx, int value), void *ctx);

#endif

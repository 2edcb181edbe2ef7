/* Running a plan: the plan's kernels built by their backends, intermediate
 * values placed in one arena, kernels run in plan order.
 *
 * Memory placement goes through korch_memory_place (executor_memory.c): the
 * executor hands it every intermediate value with its size and lifetime
 * (the kernel that writes it first, the kernel that reads it last) and gets
 * offsets back. Today's placement gives every value its own slot; a planner
 * that reuses memory across lifetimes replaces that one function. */
#ifndef KORCH_RUNTIME_EXECUTOR_H
#define KORCH_RUNTIME_EXECUTOR_H

#include <stddef.h>

#include "runtime/plan.h"

typedef struct korch_buffer_request {
    int value;
    size_t bytes;
    int first; /* index of the first kernel that writes it */
    int last; /* index of the last kernel that reads or writes it (>= first) */
} korch_buffer_request;

/* Places buffers in one arena: offsets[i] for requests[i], aligned to
 * `alignment`. Two requests may share bytes only if their [first, last]
 * intervals do not overlap. */
korch_status korch_memory_place(const korch_buffer_request *requests, int n, size_t alignment, size_t *offsets,
                                size_t *arena_bytes);

typedef struct korch_executor korch_executor;

/* Validates the plan against pg and builds its kernels. pg must outlive the
 * executor. options may be NULL (defaults). */
korch_status korch_executor_create(const korch_plan *plan, const korch_pgraph *pg, const korch_profile_options *options,
                                   korch_executor **out);
void korch_executor_destroy(korch_executor *ex);

/* inputs[i] binds pg->inputs[i] (dtype and shape must match); outputs[i] is
 * preallocated storage for pg->outputs[i]. */
korch_status korch_executor_run(korch_executor *ex, const korch_tensor *inputs, korch_tensor *outputs);

size_t korch_executor_arena_bytes(const korch_executor *ex);

/* Like korch_executor_create, for a caller that owns pg and graph (the op
 * graph pg borrows initializers from) alone: a C API session's private
 * copies, the CLI's. While kernels are built it frees the data of every
 * constant that all its reading kernels copied (oneDNN's reordered weights)
 * and that nothing else reads (graph outputs, opaque nodes); those constants'
 * data pointers in pg and graph become NULL. Without it a plan holds two
 * copies of such weights. */
korch_status korch_executor_create_owned(const korch_plan *plan, korch_pgraph *pg, korch_graph *graph,
                                         const korch_profile_options *options, korch_executor **out);

/* Constant bytes freed by korch_executor_create_owned. */
size_t korch_executor_released_bytes(const korch_executor *ex);

/* With kernel_ms non-NULL (one double per plan kernel, owned by the caller),
 * every run stores each kernel's wall time in milliseconds there: the kernel
 * as it runs inside the plan, after its neighbours, against the isolated
 * profile the plan was chosen with. NULL turns it off. */
void korch_executor_time_kernels(korch_executor *ex, double *kernel_ms);

#endif

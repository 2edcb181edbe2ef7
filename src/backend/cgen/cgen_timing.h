/* Timing generated kernels on shared profiling buffers (cgen_timing.c). */
#ifndef KORCH_BACKEND_CGEN_CGEN_TIMING_H
#define KORCH_BACKEND_CGEN_CGEN_TIMING_H

#include "backend/cgen/cgen.h"
#include "profile/profile.h"

typedef struct cg_pool cg_pool;

korch_status cg_pool_create(cg_pool **out);
void cg_pool_free(cg_pool *p);
/* Buffer sets for k: sets[s * (inputs + outputs) + i], valid until the next
 * call (the pool may move). */
korch_status cg_pool_prepare(cg_pool *p, const cg_kernel *k, int *n_sets, void ***sets);
/* Times fn (a build of k) with the shared methodology on the pool's buffers. */
korch_status cg_time_kernel(cg_pool *pool, const cg_kernel *k, cg_entry fn, int threads, const korch_timer_options *o,
                            korch_timing *out);

/* Median time of an empty parallel region with `threads` threads, in us:
 * a few on an idle machine, milliseconds when other processes occupy the
 * cores (every region waits until all its threads are scheduled). */
double cg_fork_join_us(int threads);

#endif

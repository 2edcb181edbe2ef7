/* Export: a plan as standalone C (docs/export.md).
 *
 * `korch export PLAN -o DIR` writes a folder that builds on its own:
 *   model.h, model.c   the plan's kernels and their call sequence behind an
 *                      API shaped like korch.h (load, sessions, queries,
 *                      zero-copy run)
 *   model.weights      every constant the kernels read, 64-byte aligned,
 *                      after a header with a checksum and the model's id
 *   model_run.c        a runner with korch run's --input/--output-dir/--bench
 *   Makefile           libmodel.so and model_run; CFLAGS_EXTRA for -Werror
 * Generated C needs libc, libm and libgomp (and libdnnl for oneDNN kernels),
 * never korch. No string from the model enters the source except as an
 * escaped C string literal. */
#ifndef KORCH_EXPORT_EXPORT_H
#define KORCH_EXPORT_EXPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/plan.h"

typedef struct korch_export_stats {
    int kernels, cgen, ref, dnnl;   /* plan kernels by the backend that implements them in C */
    int functions;                  /* distinct generated kernel functions */
    uint64_t weights_bytes;
    uint64_t arena_bytes;
    uint64_t model_id;
    size_t source_bytes;            /* model.c */
} korch_export_stats;

typedef struct korch_export_options {
    /* REF kernels of single reduce or layout primitives use the reference
     * routines (the interpreter's double arithmetic) even where the code
     * generator could implement them (tests of those routines) */
    bool reference_routines;
} korch_export_options;

/* Exports a plan whose primitive graph is `pg` (the plan validated against
 * it) into `dir` (created if missing; existing files of the export are
 * replaced). options may be NULL (defaults). A primitive graph without a source
 * model (tests) gets generated tensor names. A kernel that cannot be written as standalone C is refused with
 * an error naming it. stats may be NULL. */
korch_status korch_export_write(const korch_plan *plan, const korch_pgraph *pg, const char *dir,
                                const korch_export_options *options, korch_export_stats *stats);

/* Loads the plan's model (korch_plan_model_open), validates and exports. */
korch_status korch_export_plan(const korch_plan *plan, const char *plan_path, const char *dir,
                               korch_export_stats *stats);

/* The fixed support sources (src/export/support/<name>), NULL if unknown. */
const char *korch_export_support(const char *name);

#endif

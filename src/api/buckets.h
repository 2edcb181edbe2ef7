/* Shape buckets: one plan file holding a plan per input shape
 * (docs/plan-format.md, "Shape buckets"). The bucket specification
 * (`ids=1x{32,64,128}`, `ids=1x{16..512}`, tied lists) and the loop that
 * optimises each bucket and gathers the plans into one, shared by
 * `korch optimize --input-shape` (src/cli/cmd_optimize.c) and the C API's
 * korch_optimize (api/optimize.c, its input_shapes option), so the two
 * cannot drift. How one bucket is optimised is the caller's (the CLI has
 * --layout auto, --closed-loop and verification inputs; the API has the
 * defaults), given as a callback. */
#ifndef KORCH_API_BUCKETS_H
#define KORCH_API_BUCKETS_H

#include <stdbool.h>
#include <stdio.h>

#include "frontend/frontend.h"
#include "runtime/plan.h"

/* inputs in one specification; values in one brace list */
#define KORCH_BUCKETS_MAX_INPUTS 64
#define KORCH_BUCKETS_MAX_VALUES 64

typedef struct korch_buckets korch_buckets;

/* An empty specification. `label` names where the shapes came from in every
 * error ("--input-shape", "input shape"); it is not copied. */
korch_status korch_buckets_create(const char *label, korch_buckets **out);
void korch_buckets_free(korch_buckets *b);
/* Whether a NAME=DIMS holds a brace (lists several shapes). */
bool korch_buckets_spec_is_list(const char *spec);
/* Adds one NAME=DIMS: a dimension is N, {a,b,...} or {LOW..HIGH} (the
 * powers of two from LOW, then HIGH). An error names the specification and
 * what is wrong with it; an input given twice is refused. */
korch_status korch_buckets_add(korch_buckets *b, const char *spec);
/* Adds every item of "NAME=DIMS;NAME=DIMS;..." (the syntax of input_shapes). */
korch_status korch_buckets_add_list(korch_buckets *b, const char *specs);
/* The number of buckets: the product of the lists' lengths, a list equal to
 * one of an earlier input tied to it; capped at KORCH_PLAN_MAX_BUCKETS + 1. */
int korch_buckets_count(const korch_buckets *b);
/* Refuses an input in `fixed` (shapes given without braces) that the
 * specification lists as well, naming it. */
korch_status korch_buckets_check_fixed(const korch_buckets *b, const korch_input_shape *fixed, int n_fixed);

/* One bucket's plan: the model specialized to `shapes` and optimised.
 * *n_prims: the primitives of its graph (for the summary). keep is non-NULL
 * for the first bucket only: it receives the model the plan file carries
 * (korch_plan_write). *plan may be left NULL with KORCH_OK (a dry run). */
typedef korch_status (*korch_bucket_optimize_fn)(void *user, const korch_input_shape *shapes, int n_shapes,
                                                 korch_plan **plan, int *n_prims, korch_plan_model *keep);

typedef struct korch_buckets_optimize_options {
    const korch_input_shape *fixed; /* shapes every bucket has (given without braces), first in each bucket */
    int n_fixed;
    korch_bucket_optimize_fn optimize;
    void *user;
    FILE *log; /* "bucket 2 of 3: x=1x8x8" before each, its plan's summary after; NULL: none */
} korch_buckets_optimize_options;

/* Optimises every bucket in turn (they share the profile database and the
 * kernel cache: a kernel signature met in an earlier bucket is not timed or
 * compiled again). *out: one bucket's plan as it is (format 3), or a plan
 * of several buckets (format 4) whose shared lines (model, machine,
 * threads, strategy) are the first bucket's; NULL when the callback made no
 * plan. *n_prims: summed over the buckets. An error of one bucket is
 * prefixed with the bucket and its shapes. */
korch_status korch_buckets_optimize(const korch_buckets *b, const korch_buckets_optimize_options *o,
                                    korch_plan **out, int *n_prims, korch_plan_model *keep);

#endif

/* `--input-shape NAME=1x{32,64}` for korch optimize: shape buckets
 * (cli_buckets.c). */
#ifndef KORCH_CLI_BUCKETS_H
#define KORCH_CLI_BUCKETS_H

#include "cli/cli.h"

#define KORCH_CLI_MAX_BUCKET_VALUES 64

typedef struct korch_cli_bucket_dim {
    int count;
    int64_t values[KORCH_CLI_MAX_BUCKET_VALUES];
} korch_cli_bucket_dim;

typedef struct korch_cli_bucket_input {
    char *name;
    int rank;
    korch_cli_bucket_dim dims[KORCH_MAX_RANK];
} korch_cli_bucket_input;

typedef struct korch_cli_buckets {
    korch_cli_bucket_input inputs[KORCH_CLI_MAX_SHAPES];
    int count;
} korch_cli_buckets;

/* Whether an --input-shape value lists several shapes (holds a brace). */
bool korch_cli_bucket_spec_is(const char *spec);
/* Parses NAME=DIMS with brace lists or ranges; 0 or a usage exit code. */
int korch_cli_bucket_spec_add(korch_cli_buckets *b, const char *spec, const char *command);
/* The number of buckets (the product of the values' counts), capped at
 * KORCH_PLAN_MAX_BUCKETS + 1. */
int korch_cli_buckets_total(const korch_cli_buckets *b);
/* Adds bucket `index`'s shapes (one per listed input) to `shapes`. */
int korch_cli_buckets_apply(const korch_cli_buckets *b, int index, korch_cli_shapes *shapes, const char *command);
void korch_cli_buckets_free(korch_cli_buckets *b);

#endif

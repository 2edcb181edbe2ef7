/* Shape buckets: one plan file holding a plan per input shape (format 4,
 * docs/plan-format.md "Shape buckets"). Each bucket is a whole plan,
 * optimized from the model specialized to its shapes, so shape-dependent
 * values (Shape, Reshape targets, Expand, Range) are folded per bucket; the
 * model's graph and weights are stored once and shared. A run picks the
 * bucket whose shapes equal the inputs' exactly: korch never pads an input
 * up to a larger bucket, because it cannot prove padding harmless in
 * general (a Softmax, a mean or a LayerNorm over the padded axis, attention
 * without a mask, a Shape read by the graph all see the padding). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/plan.h"

const char *korch_plan_shapes_format(const korch_plan *plan, char *buf, size_t size) {
    if (size == 0) return buf;
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < plan->n_input_shapes && used < size; i++) {
        char dims[160];
        const korch_shape *s = &plan->input_shapes[i].shape;
        int w = snprintf(buf + used, size - used, "%s%s=%s", i ? ";" : "", plan->input_shapes[i].name,
                         s->rank ? korch_shape_format(s, dims, sizeof dims) : "scalar");
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

korch_status korch_plan_buckets_share(korch_plan *plan) {
    for (int b = 0; b < plan->n_buckets; b++) {
        korch_plan *k = plan->buckets[b];
        free(k->model_path);
        k->model_path = strdup(plan->model_path);
        if (!k->model_path) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
        memcpy(k->model_sha256, plan->model_sha256, sizeof k->model_sha256);
        k->embedded = plan->embedded;
        k->sections = plan->sections;
        k->sections.map = NULL; /* the container's mapping */
        k->sections.map_size = 0;
        memcpy(k->machine_cpu, plan->machine_cpu, sizeof k->machine_cpu);
        memcpy(k->machine_isa, plan->machine_isa, sizeof k->machine_isa);
    }
    plan->threads = plan->buckets[0]->threads;
    memcpy(plan->strategy, plan->buckets[0]->strategy, sizeof plan->strategy);
    return KORCH_OK;
}

korch_status korch_plan_bucket_add(korch_plan *plan, korch_plan *bucket) {
    if (plan->n_buckets >= KORCH_PLAN_MAX_BUCKETS) {
        korch_plan_free(bucket);
        return korch_error(KORCH_ERR_UNSUPPORTED, "a plan holds at most %d shape buckets", KORCH_PLAN_MAX_BUCKETS);
    }
    korch_plan **grown = realloc(plan->buckets, ((size_t)plan->n_buckets + 1) * sizeof *grown);
    if (!grown) {
        korch_plan_free(bucket);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
    }
    plan->buckets = grown;
    plan->buckets[plan->n_buckets++] = bucket;
    return KORCH_OK;
}

static bool bucket_matches(const korch_plan *b, const korch_input_shape *shapes, int n_shapes) {
    for (int s = 0; s < n_shapes; s++)
        for (int i = 0; i < b->n_input_shapes; i++)
            if (strcmp(b->input_shapes[i].name, shapes[s].name) == 0 &&
                !korch_shape_equal(&b->input_shapes[i].shape, &shapes[s].shape))
                return false;
    return true;
}

/* "x=1x32x8, x=1x64x8 and x=1x128x8" */
static void list_buckets(const korch_plan *plan, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int b = 0; b < plan->n_buckets && used + 1 < size; b++) {
        char one[1024];
        korch_plan_shapes_format(plan->buckets[b], one, sizeof one);
        const char *sep = b == 0 ? "" : b == plan->n_buckets - 1 ? " and " : ", ";
        int w = snprintf(buf + used, size - used, "%s%s", sep, one);
        if (w < 0) break;
        used += (size_t)w;
    }
}

korch_status korch_plan_bucket_find(const korch_plan *plan, const char *plan_path, const korch_input_shape *shapes,
                                    int n_shapes, int *index) {
    *index = 0;
    if (plan->n_buckets == 0) return KORCH_OK;
    int found = -1, matches = 0;
    for (int b = 0; b < plan->n_buckets; b++)
        if (bucket_matches(plan->buckets[b], shapes, n_shapes)) {
            if (found < 0) found = b;
            matches++;
        }
    if (matches == 1) {
        *index = found;
        return KORCH_OK;
    }
    char asked[1024] = "", list[4096];
    size_t used = 0;
    for (int s = 0; s < n_shapes && used < sizeof asked; s++) {
        char dims[160];
        int w = snprintf(asked + used, sizeof asked - used, "%s%s=%s", s ? ";" : "", shapes[s].name,
                         shapes[s].shape.rank ? korch_shape_format(&shapes[s].shape, dims, sizeof dims) : "scalar");
        if (w < 0) break;
        used += (size_t)w;
    }
    list_buckets(plan, list, sizeof list);
    if (matches == 0)
        return korch_error(KORCH_ERR_SHAPE,
                           "plan \"%s\" has no shape bucket for %s; its buckets are %s (inputs must match a "
                           "bucket exactly: korch does not pad to a larger one; korch optimize --input-shape "
                           "with more values makes a plan for more shapes)",
                           plan_path, asked, list);
    return korch_error(KORCH_ERR_SHAPE,
                       "plan \"%s\" holds %d shape buckets (%s): give the input shapes to choose one "
                       "(--input-shape, or the input files)%s%s",
                       plan_path, plan->n_buckets, list, n_shapes ? "; these match more than one: " : "",
                       n_shapes ? asked : "");
}

korch_plan *korch_plan_bucket_take(korch_plan *plan, int index) {
    if (plan->n_buckets == 0) return plan;
    korch_plan *b = plan->buckets[index];
    plan->buckets[index] = plan->buckets[--plan->n_buckets];
    b->sections.map = plan->sections.map; /* the mapping moves with the bucket */
    b->sections.map_size = plan->sections.map_size;
    plan->sections.map = NULL;
    korch_plan_free(plan);
    return b;
}

korch_status korch_plan_bucket_choose(korch_plan **plan, const char *plan_path, const korch_input_shape *shapes,
                                      int n_shapes) {
    int index = 0;
    korch_status st = korch_plan_bucket_find(*plan, plan_path, shapes, n_shapes, &index);
    if (st != KORCH_OK) {
        korch_plan_free(*plan);
        *plan = NULL;
        return st;
    }
    *plan = korch_plan_bucket_take(*plan, index);
    return KORCH_OK;
}

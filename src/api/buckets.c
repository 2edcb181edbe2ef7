/* Shape buckets (buckets.h; docs/cli.md, `--input-shape` with braces, and
 * docs/plan-format.md, "Shape buckets"). A dimension is a number, a brace
 * list of numbers `{32,64,128}`, or a range `{16..512}`, which stands for
 * the powers of two from 16 to 512 (16, 32, ..., 512: each start doubled
 * while it stays below the end, then the end itself, so {20..100} is 20,
 * 40, 80, 100). Every combination of the listed values is one bucket,
 * except that a list equal to one of an earlier input (same values, same
 * order) is tied to it: both take the same value in every bucket, so
 * `ids=1x{32,64} mask=1x{32,64}` is two buckets (a sequence length shared
 * by inputs), while the dimensions of one input combine freely
 * (`x=1x3x{320,640}x{320,640}` is four). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/buckets.h"
#include "ir/graph.h"

typedef struct bucket_dim {
    int count;
    int64_t values[KORCH_BUCKETS_MAX_VALUES];
} bucket_dim;

typedef struct bucket_input {
    char *name;
    int rank;
    bucket_dim dims[KORCH_MAX_RANK];
} bucket_input;

struct korch_buckets {
    const char *label;
    int count;
    bucket_input inputs[KORCH_BUCKETS_MAX_INPUTS];
};

korch_status korch_buckets_create(const char *label, korch_buckets **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "shape buckets: out of memory");
    (*out)->label = label ? label : "input shape";
    return KORCH_OK;
}

void korch_buckets_free(korch_buckets *b) {
    if (!b) return;
    for (int i = 0; i < b->count; i++) free(b->inputs[i].name);
    free(b);
}

bool korch_buckets_spec_is_list(const char *spec) { return spec && strchr(spec, '{') != NULL; }

static korch_status bad(const korch_buckets *b, const char *spec, const char *why) {
    char buf[300];
    return korch_error(KORCH_ERR_INVALID_ARGUMENT,
                       "%s %s: %s (expected e.g. ids=1x{32,64,128} or ids=1x{16..512}, which is the powers of two "
                       "from 16 to 512)",
                       b->label, korch_printable(spec, buf, sizeof buf), why);
}

static bool parse_dim(const char **c, int64_t *out) {
    char *end = NULL;
    errno = 0;
    if (**c < '0' || **c > '9') return false;
    long long v = strtoll(*c, &end, 10);
    if (errno || v < 1 || v > (1LL << 40)) return false;
    *out = v;
    *c = end;
    return true;
}

/* One dimension at *c: N, {a,b,...} or {lo..hi}. */
static korch_status parse_values(const korch_buckets *b, const char **c, bucket_dim *d, const char *spec) {
    d->count = 0;
    if (**c != '{') {
        if (!parse_dim(c, &d->values[0])) return bad(b, spec, "a dimension is not a positive number");
        d->count = 1;
        return KORCH_OK;
    }
    (*c)++;
    int64_t lo = 0, hi = 0;
    if (!parse_dim(c, &lo)) return bad(b, spec, "a brace list holds positive numbers");
    if ((*c)[0] == '.' && (*c)[1] == '.') {
        *c += 2;
        if (!parse_dim(c, &hi) || **c != '}') return bad(b, spec, "a range is {LOW..HIGH}");
        if (hi <= lo) return bad(b, spec, "a range's end must be above its start");
        for (int64_t v = lo; v < hi && d->count < KORCH_BUCKETS_MAX_VALUES; v *= 2) d->values[d->count++] = v;
        if (d->count >= KORCH_BUCKETS_MAX_VALUES) return bad(b, spec, "the range has too many values");
        d->values[d->count++] = hi;
        (*c)++;
        return KORCH_OK;
    }
    d->values[d->count++] = lo;
    while (**c == ',') {
        (*c)++;
        int64_t v = 0;
        if (!parse_dim(c, &v)) return bad(b, spec, "a brace list holds positive numbers");
        if (d->count >= KORCH_BUCKETS_MAX_VALUES) return bad(b, spec, "a brace list has too many values");
        for (int k = 0; k < d->count; k++)
            if (d->values[k] == v) return bad(b, spec, "a value is listed twice");
        d->values[d->count++] = v;
    }
    if (**c != '}') return bad(b, spec, "a brace list is not closed");
    (*c)++;
    return KORCH_OK;
}

static korch_status given_twice(const korch_buckets *b, const char *name) {
    char buf[200];
    return korch_error(KORCH_ERR_INVALID_ARGUMENT, "%s %s is given twice", b->label,
                       korch_printable(name, buf, sizeof buf));
}

korch_status korch_buckets_add(korch_buckets *b, const char *spec) {
    if (b->count >= KORCH_BUCKETS_MAX_INPUTS) return bad(b, spec, "more inputs than korch takes (64)");
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec) return bad(b, spec, "no NAME=");
    bucket_input *in = &b->inputs[b->count];
    memset(in, 0, sizeof *in);
    const char *c = eq + 1;
    while (*c) {
        if (in->rank >= KORCH_MAX_RANK) return bad(b, spec, "too many dimensions");
        KORCH_TRY(parse_values(b, &c, &in->dims[in->rank++], spec));
        if (*c == 'x' || *c == 'X') c++;
        else if (*c) return bad(b, spec, "dimensions are separated by x");
    }
    if (in->rank == 0) return bad(b, spec, "no dimensions");
    in->name = strndup(spec, (size_t)(eq - spec));
    if (!in->name) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "shape buckets: out of memory");
    for (int k = 0; k < b->count; k++)
        if (strcmp(b->inputs[k].name, in->name) == 0) {
            korch_status st = given_twice(b, in->name);
            free(in->name);
            in->name = NULL;
            return st;
        }
    b->count++;
    return KORCH_OK;
}

korch_status korch_buckets_add_list(korch_buckets *b, const char *specs) {
    char *copy = strdup(specs);
    if (!copy) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "shape buckets: out of memory");
    korch_status st = KORCH_OK;
    char *save = NULL;
    for (char *item = strtok_r(copy, ";", &save); item && st == KORCH_OK; item = strtok_r(NULL, ";", &save))
        st = korch_buckets_add(b, item);
    free(copy);
    return st;
}

/* The earlier input's dimension whose list equals dims[d] of input i
 * (*ti = -1: none, the list is free). */
static void tied_to(const korch_buckets *b, int i, int d, int *ti, int *td) {
    *ti = *td = -1;
    const bucket_dim *x = &b->inputs[i].dims[d];
    if (x->count < 2) return;
    for (int j = 0; j < i; j++)
        for (int e = 0; e < b->inputs[j].rank; e++) {
            const bucket_dim *y = &b->inputs[j].dims[e];
            if (y->count == x->count && memcmp(y->values, x->values, (size_t)x->count * sizeof *x->values) == 0) {
                *ti = j;
                *td = e;
                return;
            }
        }
}

int korch_buckets_count(const korch_buckets *b) {
    long total = 1;
    for (int i = 0; i < b->count; i++)
        for (int d = 0; d < b->inputs[i].rank; d++) {
            int ti, td;
            tied_to(b, i, d, &ti, &td);
            if (ti >= 0) continue;
            total *= b->inputs[i].dims[d].count;
            if (total > KORCH_PLAN_MAX_BUCKETS) return KORCH_PLAN_MAX_BUCKETS + 1;
        }
    return (int)total;
}

korch_status korch_buckets_check_fixed(const korch_buckets *b, const korch_input_shape *fixed, int n_fixed) {
    for (int i = 0; i < b->count; i++)
        for (int s = 0; s < n_fixed; s++)
            if (strcmp(fixed[s].name, b->inputs[i].name) == 0) return given_twice(b, b->inputs[i].name);
    return KORCH_OK;
}

/* Bucket `index`'s shapes, one per input of b, in the order given; the
 * names point into b. */
static void bucket_shapes(const korch_buckets *b, int index, korch_input_shape *out) {
    int pick[KORCH_BUCKETS_MAX_INPUTS][KORCH_MAX_RANK]; /* the value each dimension takes in this bucket */
    for (int i = 0; i < b->count; i++)
        for (int d = 0; d < b->inputs[i].rank; d++) {
            int ti, td;
            tied_to(b, i, d, &ti, &td);
            if (ti >= 0) {
                pick[i][d] = pick[ti][td];
                continue;
            }
            pick[i][d] = index % b->inputs[i].dims[d].count;
            index /= b->inputs[i].dims[d].count;
        }
    for (int i = 0; i < b->count; i++) {
        const bucket_input *in = &b->inputs[i];
        out[i].name = in->name;
        memset(&out[i].shape, 0, sizeof out[i].shape);
        out[i].shape.rank = in->rank;
        for (int d = 0; d < in->rank; d++) out[i].shape.dims[d] = in->dims[d].values[pick[i][d]];
    }
}

/* "x=1x8x8 m=1x8x8" (the log's form) */
static const char *shapes_text(const korch_input_shape *shapes, int n, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int s = 0; s < n && used + 1 < size; s++) {
        char dims[160], name[160];
        int w = snprintf(buf + used, size - used, "%s%s=%s", s ? " " : "", korch_printable(shapes[s].name, name, sizeof name),
                         korch_shape_format(&shapes[s].shape, dims, sizeof dims));
        if (w < 0) break;
        used += (size_t)w < size - used ? (size_t)w : size - used - 1;
    }
    return buf;
}

/* The container's shared lines come from the first bucket (same model, same
 * machine). */
static korch_status share_first(korch_plan *container) {
    const korch_plan *first = container->buckets[0];
    container->model_path = strdup(first->model_path);
    if (!container->model_path) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "shape buckets: out of memory");
    memcpy(container->model_sha256, first->model_sha256, sizeof container->model_sha256);
    memcpy(container->machine_cpu, first->machine_cpu, sizeof container->machine_cpu);
    memcpy(container->machine_isa, first->machine_isa, sizeof container->machine_isa);
    container->threads = first->threads;
    memcpy(container->strategy, first->strategy, sizeof container->strategy);
    return KORCH_OK;
}

korch_status korch_buckets_optimize(const korch_buckets *b, const korch_buckets_optimize_options *o,
                                    korch_plan **out, int *n_prims, korch_plan_model *keep) {
    *out = NULL;
    *n_prims = 0;
    KORCH_TRY(korch_buckets_check_fixed(b, o->fixed, o->n_fixed));
    int total = korch_buckets_count(b);
    if (total > KORCH_PLAN_MAX_BUCKETS)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "%s lists more than %d shapes (one plan each)", b->label,
                           KORCH_PLAN_MAX_BUCKETS);
    int n_shapes = o->n_fixed + b->count;
    korch_input_shape *shapes = calloc((size_t)n_shapes + 1, sizeof *shapes);
    korch_plan *container = total > 1 ? korch_plan_new() : NULL;
    if (!shapes || (total > 1 && !container)) {
        free(shapes);
        korch_plan_free(container);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "shape buckets: out of memory");
    }
    if (o->n_fixed) memcpy(shapes, o->fixed, (size_t)o->n_fixed * sizeof *shapes);
    korch_status st = KORCH_OK;
    for (int i = 0; i < total && st == KORCH_OK; i++) {
        bucket_shapes(b, i, shapes + o->n_fixed);
        char text[1024]; /* the listed inputs' shapes: what tells the buckets apart */
        shapes_text(shapes + o->n_fixed, b->count, text, sizeof text);
        if (o->log && total > 1) fprintf(o->log, "bucket %d of %d: %s\n", i + 1, total, text);
        korch_plan *plan = NULL;
        int prims = 0;
        st = o->optimize(o->user, shapes, n_shapes, &plan, &prims, i == 0 ? keep : NULL);
        *n_prims += prims;
        if (st != KORCH_OK) {
            korch_plan_free(plan);
            if (total > 1) korch_error_prefix(st, "bucket %d of %d (%s)", i + 1, total, text);
            break;
        }
        if (!plan) continue; /* a dry run */
        if (total == 1) {
            *out = plan;
            break;
        }
        if (o->log)
            fprintf(o->log, "bucket %d: %d kernels for %d primitives, predicted %.4f ms\n", i + 1, plan->n_kernels,
                    prims, plan->predicted_ms);
        st = korch_plan_bucket_add(container, plan); /* takes the plan, even on failure */
    }
    free(shapes);
    if (st == KORCH_OK && container && container->n_buckets > 0) st = share_first(container);
    if (st != KORCH_OK || !container || container->n_buckets == 0) {
        korch_plan_free(container);
        if (st != KORCH_OK) {
            korch_plan_free(*out);
            *out = NULL;
        }
        return st;
    }
    *out = container;
    return KORCH_OK;
}

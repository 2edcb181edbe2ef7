/* Shape buckets on the command line: `korch optimize --input-shape
 * 'ids=1x{32,64,128}'` (docs/cli.md, docs/plan-format.md "Shape buckets").
 * A dimension is a number, a brace list of numbers `{32,64,128}`, or a
 * range `{16..512}`, which stands for the powers of two from 16 to 512
 * (16, 32, ..., 512: each start doubled while it stays below the end, then
 * the end itself, so {20..100} is 20, 40, 80, 100). Every combination of
 * the listed values is one bucket, except that a list equal to one of an
 * earlier input (same values, same order) is tied to it: both take the same
 * value in every bucket, so `ids=1x{32,64} mask=1x{32,64}` is two buckets
 * (a sequence length shared by inputs), while the dimensions of one input
 * combine freely (`x=1x3x{320,640}x{320,640}` is four). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_buckets.h"

bool korch_cli_bucket_spec_is(const char *spec) { return spec && strchr(spec, '{') != NULL; }

static int bad(const char *command, const char *spec, const char *why) {
    return korch_cli_usage_error(command,
                                 "--input-shape %s: %s (expected e.g. ids=1x{32,64,128} or ids=1x{16..512}, "
                                 "which is the powers of two from 16 to 512)",
                                 spec, why);
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
static int parse_values(const char **c, korch_cli_bucket_dim *d, const char *command, const char *spec) {
    d->count = 0;
    if (**c != '{') {
        if (!parse_dim(c, &d->values[0])) return bad(command, spec, "a dimension is not a positive number");
        d->count = 1;
        return 0;
    }
    (*c)++;
    int64_t lo = 0, hi = 0;
    if (!parse_dim(c, &lo)) return bad(command, spec, "a brace list holds positive numbers");
    if ((*c)[0] == '.' && (*c)[1] == '.') {
        *c += 2;
        if (!parse_dim(c, &hi) || **c != '}') return bad(command, spec, "a range is {LOW..HIGH}");
        if (hi <= lo) return bad(command, spec, "a range's end must be above its start");
        for (int64_t v = lo; v < hi && d->count < KORCH_CLI_MAX_BUCKET_VALUES; v *= 2) d->values[d->count++] = v;
        if (d->count < KORCH_CLI_MAX_BUCKET_VALUES) d->values[d->count++] = hi;
        else return bad(command, spec, "the range has too many values");
        (*c)++;
        return 0;
    }
    d->values[d->count++] = lo;
    while (**c == ',') {
        (*c)++;
        int64_t v = 0;
        if (!parse_dim(c, &v)) return bad(command, spec, "a brace list holds positive numbers");
        if (d->count >= KORCH_CLI_MAX_BUCKET_VALUES) return bad(command, spec, "a brace list has too many values");
        for (int k = 0; k < d->count; k++)
            if (d->values[k] == v) return bad(command, spec, "a value is listed twice");
        d->values[d->count++] = v;
    }
    if (**c != '}') return bad(command, spec, "a brace list is not closed");
    (*c)++;
    return 0;
}

int korch_cli_bucket_spec_add(korch_cli_buckets *b, const char *spec, const char *command) {
    if (b->count >= KORCH_CLI_MAX_SHAPES) return korch_cli_usage_error(command, "too many --input-shape options");
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec) return bad(command, spec, "no NAME=");
    korch_cli_bucket_input *in = &b->inputs[b->count];
    memset(in, 0, sizeof *in);
    const char *c = eq + 1;
    while (*c) {
        if (in->rank >= KORCH_MAX_RANK) return bad(command, spec, "too many dimensions");
        int rc = parse_values(&c, &in->dims[in->rank++], command, spec);
        if (rc) return rc;
        if (*c == 'x' || *c == 'X') c++;
        else if (*c) return bad(command, spec, "dimensions are separated by x");
    }
    in->name = strndup(spec, (size_t)(eq - spec));
    if (!in->name) return korch_cli_usage_error(command, "out of memory");
    for (int k = 0; k < b->count; k++)
        if (strcmp(b->inputs[k].name, in->name) == 0) {
            int rc = korch_cli_usage_error(command, "--input-shape %s is given twice", in->name);
            free(in->name);
            return rc;
        }
    b->count++;
    return 0;
}

/* The earlier input's dimension whose list equals dims[d] of input i
 * (*ti = -1: none, the list is free). */
static void tied_to(const korch_cli_buckets *b, int i, int d, int *ti, int *td) {
    *ti = *td = -1;
    const korch_cli_bucket_dim *x = &b->inputs[i].dims[d];
    if (x->count < 2) return;
    for (int j = 0; j < i; j++)
        for (int e = 0; e < b->inputs[j].rank; e++) {
            const korch_cli_bucket_dim *y = &b->inputs[j].dims[e];
            if (y->count == x->count && memcmp(y->values, x->values, (size_t)x->count * sizeof *x->values) == 0) {
                *ti = j;
                *td = e;
                return;
            }
        }
}

int korch_cli_buckets_total(const korch_cli_buckets *b) {
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

int korch_cli_buckets_apply(const korch_cli_buckets *b, int index, korch_cli_shapes *shapes, const char *command) {
    int pick[KORCH_CLI_MAX_SHAPES][KORCH_MAX_RANK]; /* the value each dimension takes in this bucket */
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
        const korch_cli_bucket_input *in = &b->inputs[i];
        korch_shape s = {.rank = in->rank};
        for (int d = 0; d < in->rank; d++) s.dims[d] = in->dims[d].values[pick[i][d]];
        char spec[512], dims[200];
        snprintf(spec, sizeof spec, "%s=%s", in->name, korch_shape_format(&s, dims, sizeof dims));
        int rc = korch_cli_shapes_add(shapes, spec, command);
        if (rc) return rc;
    }
    return 0;
}

void korch_cli_buckets_free(korch_cli_buckets *b) {
    for (int i = 0; i < b->count; i++) free(b->inputs[i].name);
    b->count = 0;
}

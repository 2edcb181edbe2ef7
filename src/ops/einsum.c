/* Einsum (opset 12-18): a sum of products over labelled dimensions, as in
 * numpy.einsum: "bhqd,bhkd->bhqk" is attention's batched product, "ij->ji" a
 * transpose, "ii->i" a diagonal. The reference kernel walks every
 * combination of every label once and accumulates in double (int64 for
 * integers); fission decomposes the common forms (rules_einsum.c). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/einsum.h"
#include "ops/layout.h"

static int letter_label(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? 26 + c - 'a' : -1; }

/* One term (an operand's or the output's): its labels, the ellipsis'
 * dimensions standing for `ell` of them. Returns the term's rank or -1. */
static int parse_term(const char *s, size_t len, int ell, int *labels, bool *has_ell, char *err, size_t err_size) {
    int r = 0;
    *has_ell = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.') {
            if (*has_ell || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.') {
                snprintf(err, err_size, "a malformed or repeated ellipsis");
                return -1;
            }
            *has_ell = true;
            i += 2;
            for (int k = 0; k < ell; k++) {
                if (r >= KORCH_MAX_RANK) goto too_many;
                labels[r++] = 52 + (KORCH_MAX_RANK - ell) + k;
            }
            continue;
        }
        int l = letter_label(s[i]);
        if (l < 0) {
            snprintf(err, err_size, "character '%c' is not a letter, '.' or ','", isprint((unsigned char)s[i]) ? s[i] : '?');
            return -1;
        }
        if (r >= KORCH_MAX_RANK) goto too_many;
        labels[r++] = l;
    }
    return r;
too_many:
    snprintf(err, err_size, "a term has more than %d dimensions", KORCH_MAX_RANK);
    return -1;
}

/* Letters in a term, not counting the ellipsis */
static int count_letters(const char *s, size_t len) {
    int c = 0;
    for (size_t i = 0; i < len; i++) c += letter_label(s[i]) >= 0;
    return c;
}

bool korch_einsum_parse(const char *eq, int n, const korch_shape *const *shapes, korch_einsum *e, char *err,
                        size_t err_size) {
    memset(e, 0, sizeof *e);
    if (n < 1 || n > KORCH_EINSUM_MAX_OPERANDS) {
        snprintf(err, err_size, "%d operands (korch takes 1 to %d)", n, KORCH_EINSUM_MAX_OPERANDS);
        return false;
    }
    e->n_operands = n;
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    int ell = 0; /* the ellipsis' rank: the largest it stands for */
    const char *p = eq;
    for (int i = 0; i < n; i++) {
        const char *end = memchr(p, ',', lhs_len - (size_t)(p - eq));
        size_t len = end ? (size_t)(end - p) : lhs_len - (size_t)(p - eq);
        if (i == n - 1 && end) {
            snprintf(err, err_size, "the equation has more terms than the %d inputs", n);
            return false;
        }
        if (i < n - 1 && !end) {
            snprintf(err, err_size, "the equation has fewer terms than the %d inputs", n);
            return false;
        }
        int letters = count_letters(p, len), k = shapes[i]->rank - letters;
        bool dots = memchr(p, '.', len) != NULL;
        if (k < 0 || (!dots && k != 0)) {
            snprintf(err, err_size, "term %d has %d letters for an input of rank %d", i, letters, shapes[i]->rank);
            return false;
        }
        if (k > ell) ell = k;
        bool has_ell;
        int r = parse_term(p, len, k, e->label[i], &has_ell, err, err_size);
        if (r < 0) return false;
        if (r != shapes[i]->rank) {
            snprintf(err, err_size, "term %d has %d dimensions for an input of rank %d", i, r, shapes[i]->rank);
            return false;
        }
        e->rank[i] = r;
        for (int d = 0; d < r; d++) {
            int l = e->label[i][d];
            int64_t s = shapes[i]->dims[d];
            if (e->used[l] && e->size[l] != s && e->size[l] != 1 && s != 1) {
                snprintf(err, err_size, "dimension %d of input %d is %lld where the label has size %lld", d, i,
                         (long long)s, (long long)e->size[l]);
                return false;
            }
            if (e->used[l] && s != e->size[l] && l < 52) {
                snprintf(err, err_size, "letter '%c' has sizes %lld and %lld (only the ellipsis broadcasts)",
                         l < 26 ? 'A' + l : 'a' + l - 26, (long long)e->size[l], (long long)s);
                return false;
            }
            if (!e->used[l] || s > e->size[l]) e->size[l] = s;
            e->used[l] = true;
        }
        p = end ? end + 1 : p + len;
    }
    if (arrow) {
        bool has_ell;
        const char *out = arrow + 2;
        int r = parse_term(out, strlen(out), ell, e->out_label, &has_ell, err, err_size);
        if (r < 0) return false;
        /* an output without the ellipsis sums its dimensions away (numpy) */
        e->out_rank = r;
        for (int d = 0; d < r; d++) {
            int l = e->out_label[d];
            if (!e->used[l]) {
                snprintf(err, err_size, "output label %d is in no input", d);
                return false;
            }
            for (int q = 0; q < d; q++)
                if (e->out_label[q] == l) {
                    snprintf(err, err_size, "the output repeats a label");
                    return false;
                }
        }
    } else {
        int count[KORCH_EINSUM_MAX_LABELS] = {0};
        for (int i = 0; i < n; i++)
            for (int d = 0; d < e->rank[i]; d++) count[e->label[i][d]]++;
        for (int k = 0; k < ell; k++) e->out_label[e->out_rank++] = 52 + (KORCH_MAX_RANK - ell) + k;
        for (int l = 0; l < 52; l++)
            if (count[l] == 1) {
                if (e->out_rank >= KORCH_MAX_RANK) {
                    snprintf(err, err_size, "the output would have more than %d dimensions", KORCH_MAX_RANK);
                    return false;
                }
                e->out_label[e->out_rank++] = l;
            }
    }
    return true;
}

static korch_status einsum_read(const korch_op_ctx *ctx, korch_einsum *e) {
    const char *eq = korch_node_attr_string(ctx->node, "equation", NULL);
    if (!eq) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing attribute \"equation\"");
    const korch_shape *shapes[KORCH_EINSUM_MAX_OPERANDS];
    for (int i = 0; i < ctx->n_inputs && i < KORCH_EINSUM_MAX_OPERANDS; i++) shapes[i] = &ctx->inputs[i]->shape;
    char err[200];
    if (!korch_einsum_parse(eq, ctx->n_inputs, shapes, e, err, sizeof err))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "equation \"%.80s\": %s", eq, err);
    return KORCH_OK;
}

static bool einsum_dtype_ok(korch_dtype t) {
    return t == KORCH_DTYPE_FLOAT32 || t == KORCH_DTYPE_FLOAT64 || t == KORCH_DTYPE_INT32 || t == KORCH_DTYPE_INT64;
}

/* How many products the reference walks: every combination of every label. */
static double einsum_products(const korch_einsum *e) {
    double p = 1.0;
    for (int l = 0; l < KORCH_EINSUM_MAX_LABELS; l++)
        if (e->used[l]) p *= (double)e->size[l];
    return p;
}

static korch_status infer_einsum(korch_op_ctx *ctx) {
    /* every operand is required: the op table can only say "at least one" */
    for (int i = 0; i < ctx->n_inputs; i++)
        if (!korch_op_has_input(ctx, i))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "input %d is empty (every operand is required)", i);
    korch_dtype t = ctx->inputs[0]->dtype;
    if (!einsum_dtype_ok(t)) return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "inputs of dtype %s", korch_dtype_name(t));
    for (int i = 1; i < ctx->n_inputs; i++)
        if (ctx->inputs[i]->dtype != t)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "input %d is %s, input 0 %s", i,
                                  korch_dtype_name(ctx->inputs[i]->dtype), korch_dtype_name(t));
    korch_einsum e;
    KORCH_TRY(einsum_read(ctx, &e));
    /* the reference walks every combination of every label: a few small
     * operands can name more of them than any tensor has elements */
    double products = einsum_products(&e);
    if (products > (double)KORCH_MAX_ELEMENTS)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "the equation names %.3g products (more than 2^40)",
                              products);
    korch_shape out = {.rank = e.out_rank};
    for (int d = 0; d < e.out_rank; d++) out.dims[d] = e.size[e.out_label[d]];
    korch_op_set_output(ctx, 0, t, &out);
    return KORCH_OK;
}

static korch_status run_einsum(korch_op_ctx *ctx) {
    korch_einsum e;
    KORCH_TRY(einsum_read(ctx, &e));
    korch_tensor *y = ctx->outputs[0];
    bool is_float = y->dtype == KORCH_DTYPE_FLOAT32 || y->dtype == KORCH_DTYPE_FLOAT64;
    int n = e.n_operands, labels[KORCH_EINSUM_MAX_LABELS], n_labels = 0;
    for (int l = 0; l < KORCH_EINSUM_MAX_LABELS; l++)
        if (e.used[l]) labels[n_labels++] = l;
    /* per label, the stride it moves each operand and the output by (a
     * repeated label moves by the sum: the diagonal; a broadcast one by 0) */
    int64_t stride[KORCH_EINSUM_MAX_OPERANDS + 1][KORCH_EINSUM_MAX_LABELS] = {{0}};
    for (int i = 0; i <= n; i++) {
        const korch_shape *s = i < n ? &ctx->inputs[i]->shape : &y->shape;
        const int *lab = i < n ? e.label[i] : e.out_label;
        int64_t st = 1;
        for (int d = s->rank - 1; d >= 0; d--) {
            if (s->dims[d] != 1 || e.size[lab[d]] == 1) stride[i][lab[d]] += st;
            st *= s->dims[d];
        }
    }
    int64_t out_n = korch_tensor_numel(y);
    double *accf = is_float ? calloc((size_t)(out_n > 0 ? out_n : 1), sizeof *accf) : NULL;
    int64_t *acci = is_float ? NULL : calloc((size_t)(out_n > 0 ? out_n : 1), sizeof *acci);
    if (!accf && !acci) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    bool empty = false;
    for (int k = 0; k < n_labels; k++) empty |= e.size[labels[k]] == 0;
    int64_t idx[KORCH_EINSUM_MAX_LABELS] = {0}, off[KORCH_EINSUM_MAX_OPERANDS + 1] = {0};
    while (!empty) {
        if (is_float) {
            double prod = 1.0;
            for (int i = 0; i < n; i++) prod *= korch_tensor_get_f64(ctx->inputs[i], off[i]);
            accf[off[n]] += prod;
        } else {
            /* wrapping, as integer tensors do: unsigned arithmetic (signed overflow is UB) */
            uint64_t prod = 1;
            for (int i = 0; i < n; i++) prod *= (uint64_t)korch_tensor_get_i64(ctx->inputs[i], off[i]);
            acci[off[n]] = (int64_t)((uint64_t)acci[off[n]] + prod);
        }
        int k = n_labels - 1; /* odometer over every label, last fastest */
        for (; k >= 0; k--) {
            int l = labels[k];
            for (int i = 0; i <= n; i++) off[i] += stride[i][l];
            if (++idx[k] < e.size[l]) break;
            for (int i = 0; i <= n; i++) off[i] -= stride[i][l] * e.size[l];
            idx[k] = 0;
        }
        if (k < 0) break;
    }
    for (int64_t j = 0; j < out_n; j++) switch (y->dtype) {
        case KORCH_DTYPE_FLOAT32: ((float *)y->data)[j] = (float)accf[j]; break;
        case KORCH_DTYPE_FLOAT64: ((double *)y->data)[j] = accf[j]; break;
        case KORCH_DTYPE_INT32: ((int32_t *)y->data)[j] = (int32_t)acci[j]; break;
        default: ((int64_t *)y->data)[j] = acci[j]; break;
        }
    free(accf);
    free(acci);
    return KORCH_OK;
}

static int64_t einsum_flops(const korch_op_ctx *ctx) {
    korch_einsum e;
    if (einsum_read(ctx, &e) != KORCH_OK) return 0;
    return (int64_t)(2.0 * einsum_products(&e)); /* at most 2^41: infer refused more */
}

const korch_op_def korch_op_def_Einsum = {
    .kind = KORCH_OP_Einsum, .op_type = "Einsum", .opset_min = 12, .opset_max = 18,
    .min_inputs = 1, .max_inputs = KORCH_EINSUM_MAX_OPERANDS, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_einsum, .run = run_einsum, .flops = einsum_flops,
};

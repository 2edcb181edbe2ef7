/* Values inside a generated kernel: the expression of a kernel value at
 * symbolic coordinates.
 *
 * Elementwise and layout values are never stored: a consumer asks for value v
 * at coordinates c, and gets a C temporary computed from v's operands at the
 * coordinates that broadcasting or the layout's index map gives. Requests are
 * memoised per (value, coordinates) and per loop level, so a value used twice
 * at the same point is computed once, and a value that does not depend on the
 * inner loops is computed outside them. Reductions live in buffers (scratch or
 * an output) written by their own pass; inputs are read from their buffers. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/cgen/emit.h"
#include "core/half.h"

void cg_literal(double v, korch_dtype dt, char *buf, size_t size) {
    if (dt == KORCH_DTYPE_FLOAT32 || dt == KORCH_DTYPE_FLOAT64) {
        double x = dt == KORCH_DTYPE_FLOAT32 ? (double)(float)v : v;
        if (isnan(x)) snprintf(buf, size, "NAN");
        else if (isinf(x)) snprintf(buf, size, x > 0 ? "INFINITY" : "(-INFINITY)");
        else snprintf(buf, size, "(%a%s)", x, dt == KORCH_DTYPE_FLOAT32 ? "f" : "");
        return;
    }
    if (dt == KORCH_DTYPE_BOOL) {
        snprintf(buf, size, "%d", v != 0.0);
        return;
    }
    if (korch_dtype_is_half(dt)) { /* the bits, as such values are stored */
        unsigned bits = dt == KORCH_DTYPE_FLOAT16 ? korch_f16_from_f64(v) : korch_bf16_from_f64(v);
        snprintf(buf, size, "((uint16_t)0x%04xu)", bits);
        return;
    }
    /* integer dtypes: saturate (the conversion would be undefined otherwise) */
    double lo = -9.2233720368547758e18, hi = 9.2233720368547748e18;
    long long i = isnan(v) ? 0 : v <= lo ? INT64_MIN + 1 : v >= hi ? INT64_MAX : (long long)v;
    snprintf(buf, size, "((%s)%lldLL)", cg_ctype(dt), i);
}

cg_aff cg_linear(cg_emit *e, const korch_shape *shape, const cg_aff *c) {
    cg_aff lin = cg_aff_const(0);
    int64_t stride = 1;
    for (int d = shape->rank - 1; d >= 0; d--) {
        if (shape->dims[d] != 1) cg_aff_add(e, &lin, &c[d], stride);
        stride *= shape->dims[d];
    }
    cg_aff_fold(e, &lin);
    return lin;
}

static bool is_floatish(korch_dtype dt) {
    return dt == KORCH_DTYPE_FLOAT32 || dt == KORCH_DTYPE_BOOL || dt == KORCH_DTYPE_UINT8 || dt == KORCH_DTYPE_INT8 ||
           korch_dtype_is_half(dt);
}

/* The generated function that widens a float16 / bfloat16 operand or rounds a result into one. */
static const char *half_widen(korch_dtype dt) { return dt == KORCH_DTYPE_BFLOAT16 ? "cg_b2f" : "cg_h2f"; }
static const char *half_round(korch_dtype dt) { return dt == KORCH_DTYPE_BFLOAT16 ? "cg_f2b" : "cg_f2h"; }

/* The C expression of one elementwise function. */
static void ew_expr(const korch_prim_elementwise *ew, char v[3][64], bool dbl, char *out, size_t n) {
    const char *f = dbl ? "" : "f";
    const char *ex = dbl ? "exp" : "cg_expf"; /* the prelude's float exponential (emit_function.c) */
    const char *A = v[0], *B = v[1], *C = v[2];
    korch_dtype lt = dbl ? KORCH_DTYPE_FLOAT64 : KORCH_DTYPE_FLOAT32;
    char al[64], be[64], one[64], zero[64];
    cg_literal(ew->alpha, lt, al, sizeof al);
    cg_literal(ew->beta, lt, be, sizeof be);
    cg_literal(1.0, lt, one, sizeof one);
    cg_literal(0.0, lt, zero, sizeof zero);
    switch (ew->op) {
    case KORCH_EW_COPY: case KORCH_EW_CAST: snprintf(out, n, "%s", A); break;
    case KORCH_EW_NEG: snprintf(out, n, "-%s", A); break;
    case KORCH_EW_ABS: snprintf(out, n, "fabs%s(%s)", f, A); break;
    case KORCH_EW_EXP: snprintf(out, n, "%s(%s)", ex, A); break;
    case KORCH_EW_LOG: snprintf(out, n, "log%s(%s)", f, A); break;
    case KORCH_EW_SQRT: snprintf(out, n, "sqrt%s(%s)", f, A); break;
    case KORCH_EW_RSQRT: snprintf(out, n, "%s / sqrt%s(%s)", one, f, A); break;
    case KORCH_EW_RECIP: snprintf(out, n, "%s / %s", one, A); break;
    case KORCH_EW_TANH: snprintf(out, n, "tanh%s(%s)", f, A); break;
    case KORCH_EW_ERF: snprintf(out, n, "erf%s(%s)", f, A); break;
    case KORCH_EW_SIGMOID: snprintf(out, n, "%s / (%s + %s(-%s))", one, one, ex, A); break;
    case KORCH_EW_RELU: snprintf(out, n, "(%s > %s || %s != %s) ? %s : %s", A, zero, A, A, A, zero); break;
    case KORCH_EW_FLOOR: snprintf(out, n, "floor%s(%s)", f, A); break;
    case KORCH_EW_CEIL: snprintf(out, n, "ceil%s(%s)", f, A); break;
    case KORCH_EW_SIN: snprintf(out, n, "sin%s(%s)", f, A); break;
    case KORCH_EW_COS: snprintf(out, n, "cos%s(%s)", f, A); break;
    case KORCH_EW_SOFTPLUS:
        snprintf(out, n, "(%s > %s ? %s : %s) + log1p%s(%s(-fabs%s(%s)))", A, zero, A, zero, f, ex, f, A);
        break;
    case KORCH_EW_NOT: snprintf(out, n, "%s == %s", A, zero); break;
    case KORCH_EW_LEAKY_RELU: snprintf(out, n, "%s >= %s ? %s : %s * %s", A, zero, A, al, A); break;
    case KORCH_EW_ELU: snprintf(out, n, "%s >= %s ? %s : %s * (%s(%s) - %s)", A, zero, A, al, ex, A, one); break;
    case KORCH_EW_CLIP: snprintf(out, n, "%s < %s ? %s : (%s > %s ? %s : %s)", A, al, al, A, be, be, A); break;
    case KORCH_EW_AFFINE: snprintf(out, n, "%s * %s + %s", al, A, be); break;
    case KORCH_EW_POWC:
        if (ew->alpha == 1.0f) snprintf(out, n, "%s", A);
        else if (ew->alpha == 2.0f) snprintf(out, n, "%s * %s", A, A);
        else if (ew->alpha == 3.0f) snprintf(out, n, "%s * %s * %s", A, A, A);
        else snprintf(out, n, "pow%s(%s, %s)", f, A, al);
        break;
    case KORCH_EW_ADD: snprintf(out, n, "%s + %s", A, B); break;
    case KORCH_EW_SUB: snprintf(out, n, "%s - %s", A, B); break;
    case KORCH_EW_MUL: snprintf(out, n, "%s * %s", A, B); break;
    case KORCH_EW_DIV: snprintf(out, n, "%s / %s", A, B); break;
    case KORCH_EW_POW: snprintf(out, n, "pow%s(%s, %s)", f, A, B); break;
    case KORCH_EW_MAX:
        snprintf(out, n, "(%s != %s || %s != %s) ? (%s + %s) : (%s > %s ? %s : %s)", A, A, B, B, A, B, A, B, A, B);
        break;
    case KORCH_EW_MIN:
        snprintf(out, n, "(%s != %s || %s != %s) ? (%s + %s) : (%s < %s ? %s : %s)", A, A, B, B, A, B, A, B, A, B);
        break;
    case KORCH_EW_PRELU: snprintf(out, n, "%s >= %s ? %s : %s * %s", A, zero, A, A, B); break;
    case KORCH_EW_EQUAL: snprintf(out, n, "%s == %s", A, B); break;
    case KORCH_EW_LESS: snprintf(out, n, "%s < %s", A, B); break;
    case KORCH_EW_LESS_EQUAL: snprintf(out, n, "%s <= %s", A, B); break;
    case KORCH_EW_GREATER: snprintf(out, n, "%s > %s", A, B); break;
    case KORCH_EW_GREATER_EQUAL: snprintf(out, n, "%s >= %s", A, B); break;
    case KORCH_EW_AND: snprintf(out, n, "(%s != %s) & (%s != %s)", A, zero, B, zero); break;
    case KORCH_EW_OR: snprintf(out, n, "(%s != %s) | (%s != %s)", A, zero, B, zero); break;
    case KORCH_EW_WHERE: snprintf(out, n, "%s != %s ? %s : %s", A, zero, B, C); break;
    case KORCH_EW_TAN: snprintf(out, n, "tan%s(%s)", f, A); break;
    case KORCH_EW_ASIN: snprintf(out, n, "asin%s(%s)", f, A); break;
    case KORCH_EW_ACOS: snprintf(out, n, "acos%s(%s)", f, A); break;
    case KORCH_EW_ATAN: snprintf(out, n, "atan%s(%s)", f, A); break;
    case KORCH_EW_SINH: snprintf(out, n, "sinh%s(%s)", f, A); break;
    case KORCH_EW_COSH: snprintf(out, n, "cosh%s(%s)", f, A); break;
    case KORCH_EW_ASINH: snprintf(out, n, "asinh%s(%s)", f, A); break;
    case KORCH_EW_ACOSH: snprintf(out, n, "acosh%s(%s)", f, A); break;
    case KORCH_EW_ATANH: snprintf(out, n, "atanh%s(%s)", f, A); break;
    case KORCH_EW_ROUND: snprintf(out, n, "nearbyint%s(%s)", f, A); break;
    case KORCH_EW_SIGN: snprintf(out, n, "%s > %s ? %s : (%s < %s ? -%s : %s)", A, zero, one, A, zero, one, A); break;
    case KORCH_EW_MOD:
        /* alpha 1: C fmod; alpha 0: Python %, which takes the sign of the divisor */
        if (ew->alpha != 0.0f) snprintf(out, n, "fmod%s(%s, %s)", f, A, B);
        else snprintf(out, n, "cg_pymod%s(%s, %s)", f, A, B);
        break;
    case KORCH_EW_COUNT: snprintf(out, n, "NAN"); break;
    /* no default: -Wswitch makes a new elementwise function a build error here */
    }
}

/* Stores a computed value as a named temporary of the value's dtype. */
static const char *named(cg_emit *e, const char *key, korch_dtype dt, const char *expr, int level) {
    char name[24];
    snprintf(name, sizeof name, "t%d", e->n_tmp++);
    const char *ct = cg_ctype(dt);
    if (dt == KORCH_DTYPE_BOOL) cg_stmt(e, level, "const uint8_t %s = (uint8_t)((%s) != 0);", name, expr);
    else cg_stmt(e, level, "const %s %s = (%s)(%s);", ct, name, ct, expr);
    return cg_memo_add(e, key, name, level);
}

static const char *elementwise_at(cg_emit *e, const cg_node *n, const char *key, const cg_aff *c, int *level) {
    const cg_value *y = &e->k->values[n->out];
    bool dbl = !is_floatish(y->dtype);
    for (int i = 0; i < n->n_in; i++) dbl |= !is_floatish(e->k->values[n->in[i]].dtype);
    char ops[3][64] = {"0", "0", "0"};
    int lvl = -1, op_level[3] = {-1, -1, -1};
    for (int i = 0; i < n->n_in; i++) {
        const cg_value *u = &e->k->values[n->in[i]];
        cg_aff cu[KORCH_MAX_RANK];
        int shift = y->shape.rank - u->shape.rank;
        for (int d = 0; d < u->shape.rank; d++)
            cu[d] = u->shape.dims[d] == 1 ? cg_aff_const(0) : c[d + shift];
        int l;
        const char *name = cg_value_at(e, n->in[i], cu, &l);
        if (l > lvl) lvl = l;
        op_level[i] = l;
        if (korch_dtype_is_half(u->dtype))
            snprintf(ops[i], sizeof ops[i], "(%s)%s(%s)", dbl ? "double" : "float", half_widen(u->dtype), name);
        else snprintf(ops[i], sizeof ops[i], "(%s)%s", dbl ? "double" : "float", name);
    }
    char expr[1024];
    bool all_f32 = y->dtype == KORCH_DTYPE_FLOAT32;
    for (int i = 0; i < n->n_in; i++) all_f32 &= e->k->values[n->in[i]].dtype == KORCH_DTYPE_FLOAT32;
    if (n->pn->u.ew.op == KORCH_EW_DIV && n->pn->u.ew.alpha == 0 && all_f32 && op_level[1] < lvl) {
        /* A divisor hoisted out of the loop the dividend varies in (softmax's
         * sum, a mean's count) becomes one reciprocal there and a multiply
         * per element: vdivps costs 5-10x a vmulps, and x * (1/s) is within
         * 1.5 ulp of x / s (docs/codegen.md). Not an exact division (alpha
         * 1, QuantizeLinear's): a last-bit difference flips a rounding tie. */
        char key2[96], rexpr[96];
        snprintf(key2, sizeof key2, "rcp %s", ops[1]);
        const cg_memo *m = cg_memo_find(e, key2);
        snprintf(rexpr, sizeof rexpr, "(0x1p+0f) / %s", ops[1]);
        const char *rn = m ? m->name : named(e, key2, KORCH_DTYPE_FLOAT32, rexpr, op_level[1]);
        snprintf(expr, sizeof expr, "%s * %s", ops[0], rn);
    } else {
        ew_expr(&n->pn->u.ew, ops, dbl, expr, sizeof expr);
    }
    if (korch_dtype_is_half(y->dtype)) { /* computed in float, stored rounded (docs/precision.md) */
        char inner[sizeof expr];
        memcpy(inner, expr, sizeof inner);
        int w = snprintf(expr, sizeof expr, "%s((float)(%.1000s))", half_round(y->dtype), inner);
        if (w < 0 || (size_t)w >= sizeof expr) {
            cg_fail(e, KORCH_ERR_UNSUPPORTED, "expression too long");
            return "0";
        }
    }
    *level = lvl;
    return named(e, key, y->dtype, expr, lvl);
}

static void buffer_ref(cg_emit *e, int v, const cg_aff *c, char *out, size_t size, int *level);

/* Coordinate a (of a dimension of extent `dim`) is the fused outer
 * coordinate i: the outer symbol itself, or 0 where both extents are 1. */
static bool same_outer(const cg_emit *e, const cg_aff *a, int i, int64_t dim) {
    if (cg_aff_is_sym(a, e->outer[i])) return true;
    const cg_sym *s = &e->syms[e->outer[i]];
    return dim == 1 && s->lo == 0 && s->hi == 0 && a->n == 0 && a->off == 0;
}

/* A named bounds check (memoised like index temporaries). */
static void cond_temp(cg_emit *e, const cg_aff *a, int64_t limit, char *names, size_t size, int *level) {
    char s[400], text[900], key[920];
    cg_aff_str(a, s, sizeof s);
    snprintf(text, sizeof text, "((%s) >= 0) & ((%s) < %lld)", s, s, (long long)limit);
    snprintf(key, sizeof key, "?%s", text);
    int lvl = cg_aff_level(e, a);
    const cg_memo *m = cg_memo_find(e, key);
    const char *name;
    if (m) {
        name = m->name;
        lvl = m->level;
    } else {
        char fresh[24];
        snprintf(fresh, sizeof fresh, "c%d", e->n_tmp++);
        cg_stmt(e, lvl, "const int %s CG_UNUSED = %s;", fresh, text); /* unused when its map never applies */
        name = cg_memo_add(e, key, fresh, lvl);
    }
    size_t used = strlen(names);
    if (used + strlen(name) + 4 >= size) {
        cg_fail(e, KORCH_ERR_UNSUPPORTED, "layout bounds check too long");
        return;
    }
    snprintf(names + used, size - used, "%s%s", used ? " & " : "", name);
    if (lvl > *level) *level = lvl;
}

/* Input coordinates of map `p` at output coordinates c: `in` clamped into
 * the input (safe to compute anything at), `raw` unclamped. `cond` gets the
 * bounds checks range analysis could not prove, as named temporaries each at
 * its own loop level (a row check is hoisted out of the column loop); empty
 * when the map is always in bounds. False when range analysis proves the map
 * never in bounds here (a concat's other inputs in one segment of a split
 * loop, emit_split.c): the caller skips it. */
static bool map_coords(cg_emit *e, const cg_node *n, int p, const cg_aff *c, cg_aff *in, cg_aff *raw, char *cond,
                       size_t csize, int *cond_level) {
    bool may_apply = true;
    const korch_index_map *map = &n->pn->u.layout.maps[p];
    const cg_value *u = &e->k->values[n->in[p]], *y = &e->k->values[n->out];
    cond[0] = '\0';
    *cond_level = -1;
    for (int k = 0; k < map->input_rank; k++) {
        const korch_index_term *t = &map->terms[k];
        cg_aff a = cg_aff_const(t->offset);
        for (int j = 0; j < y->shape.rank; j++) cg_aff_add(e, &a, &c[j], t->coef[j]);
        if (t->div > 1) a = cg_aff_floordiv(e, &a, t->div);
        if (t->mod > 0) a = cg_aff_mod(e, &a, t->mod);
        int64_t lo, hi;
        if (t->table) {
            if (t->table_size < 1 || t->table_size > (1 << 22)) {
                cg_fail(e, KORCH_ERR_UNSUPPORTED, "layout table of %lld entries", (long long)t->table_size);
                return false;
            }
            cg_aff_range(e, &a, &lo, &hi);
            int64_t q = 0, f = lo >= 0 && hi < t->table_size ? cg_table_as_div(t->table, t->table_size, &q) : 0;
            if (f > 1) { /* the table is floor((i + q) / f): index arithmetic, no lookup (emit_split.c) */
                cg_aff qa = cg_aff_const(q);
                cg_aff_add(e, &qa, &a, 1);
                a = cg_aff_floordiv(e, &qa, f);
            } else {
                if (hi < 0 || lo >= t->table_size) may_apply = false;
                if (lo < 0 || hi >= t->table_size) {
                    cond_temp(e, &a, t->table_size, cond, csize, cond_level);
                    a = cg_aff_clamp(e, &a, 0, t->table_size - 1);
                }
                a = cg_aff_table(e, &a, t->table, t->table_size);
            }
        }
        cg_aff_range(e, &a, &lo, &hi);
        int64_t dim = u->shape.dims[k];
        raw[k] = a;
        if (hi < 0 || lo >= dim) may_apply = false;
        if (lo < 0 || hi >= dim) {
            cond_temp(e, &a, dim, cond, csize, cond_level);
            a = cg_aff_clamp(e, &a, 0, dim - 1);
        }
        in[k] = a;
    }
    return may_apply;
}

/* A concat (or any select of input loads) whose guards are all invariant in
 * the innermost loop, and whose loads differ only in the invariant part of
 * their address: the input is chosen once per row, as a pointer, and the
 * loop reads through it (contiguous, no select per element). gcc does not
 * unswitch the select chain by itself, and reading every input at a clamped
 * address and selecting costs one load per input per element (staged
 * NCHW -> NHWC concat: docs/codegen.md, "Page-striding layouts"). A pad
 * branch (no guard true) reads a zero row when the pad is 0; other pads keep
 * the select chain. */
#define ZERO_ROW_MAX 8192
static const char *pointer_select(cg_emit *e, const cg_node *n, const char *key, const cg_aff *c, int *level) {
    const korch_prim_layout *l = &n->pn->u.layout;
    const cg_value *y = &e->k->values[n->out];
    int inner = e->depth - 1;
    if (inner < 0 || l->n_maps < 2 || l->n_maps > KORCH_MAX_RANK) return NULL;
    char base[KORCH_MAX_RANK][480], conds[KORCH_MAX_RANK][520];
    cg_aff var = cg_aff_const(0);
    int used = 0, lvl = -1;
    bool total = false;
    for (int p = 0; p < l->n_maps && !total; p++) {
        int u = n->in[p];
        const cg_value *uv = &e->k->values[u];
        if (e->loc[u] != CG_LOC_INPUT || uv->dtype != y->dtype) return NULL;
        cg_aff in[KORCH_MAX_RANK], raw[KORCH_MAX_RANK];
        char cond[512];
        int cl;
        if (!map_coords(e, n, p, c, in, raw, cond, sizeof cond, &cl) && e->st == KORCH_OK) continue;
        if (e->st != KORCH_OK || (cond[0] && cl >= inner)) return NULL;
        /* split the (clamped) offset into its innermost-loop part and the rest */
        cg_aff lin = cg_linear(e, &uv->shape, in), inv = cg_aff_const(lin.off), v = cg_aff_const(0);
        for (int t = 0; t < lin.n; t++) {
            cg_aff term = cg_aff_sym(lin.sym[t]);
            cg_aff_add(e, e->syms[lin.sym[t]].level >= inner ? &v : &inv, &term, lin.coef[t]);
        }
        if (v.n == 0) return NULL; /* nothing varies in the loop: the select is cheap */
        if (used == 0) var = v;
        else if (v.n != var.n || memcmp(v.sym, var.sym, (size_t)v.n * sizeof *v.sym) ||
                 memcmp(v.coef, var.coef, (size_t)v.n * sizeof *v.coef))
            return NULL;
        char is[400];
        cg_aff_str(&inv, is, sizeof is);
        snprintf(base[used], sizeof base[used], "in%d + (%s)", uv->input_slot, is);
        int il = cg_aff_level(e, &inv);
        if (il > lvl) lvl = il;
        if (cond[0] == '\0') total = true;
        else if (cl > lvl) lvl = cl;
        snprintf(conds[used], sizeof conds[used], "(%s)", cond);
        used++;
    }
    const char *ct = cg_ctype(y->dtype);
    char fallback[64] = "";
    if (!total) {
        int64_t lo, hi;
        cg_aff_range(e, &var, &lo, &hi);
        if (l->pad_value != 0.0 || lo < 0 || hi >= ZERO_ROW_MAX) return NULL;
        snprintf(fallback, sizeof fallback, "cg_zero_%s", ct);
        /* a tentative definition: legal again in the next kernel of the same file */
        uint32_t bit = (uint32_t)1 << ((unsigned)y->dtype % 32u);
        if (!(e->zero_rows & bit)) cg_buf_printf(e->file, "static const %s %s[%d];\n", ct, fallback, ZERO_ROW_MAX);
        e->zero_rows |= bit;
    }
    char expr[4096];
    snprintf(expr, sizeof expr, "%s", total ? base[used - 1] : fallback);
    for (int p = used - (total ? 2 : 1); p >= 0; p--) {
        char next[4200];
        int w = snprintf(next, sizeof next, "%s ? %s : (%s)", conds[p], base[p], expr);
        if (w < 0 || w >= (int)sizeof expr) return NULL;
        memcpy(expr, next, (size_t)w + 1);
    }
    char pname[24], vs[400], ref[480];
    snprintf(pname, sizeof pname, "p%d", e->n_tmp++);
    cg_stmt(e, lvl, "const %s *restrict %s = %s;", ct, pname, expr);
    cg_aff_str(&var, vs, sizeof vs);
    snprintf(ref, sizeof ref, "%s[%s]", pname, vs);
    *level = cg_aff_level(e, &var);
    return named(e, key, y->dtype, ref, *level);
}

/* The buffer a chain of plain affine layouts (transposes, broadcasts: one
 * map each, no div, mod or table, every term in bounds over the whole
 * output) computes value u from, with u's coordinates `raw` carried to it
 * (in place): a guarded load can read that buffer directly. The layout
 * pass's transpose in front of a window (a channels-last depthwise
 * convolution whose kernel holds its transposes, cgen/expand.c) then reads
 * with masked contiguous loads like a window over an input does. -1 when u
 * is not such a chain over a buffer. */
static int affine_source(cg_emit *e, int u, cg_aff *raw) {
    for (int hops = 0; hops < 8; hops++) {
        if (e->loc[u] != CG_LOC_COMPUTE) return e->loc[u] == CG_LOC_SCALAR ? -1 : u;
        const cg_value *v = &e->k->values[u];
        if (v->producer < 0) return -1;
        const cg_node *n = &e->k->nodes[v->producer];
        if (n->pn->kind != KORCH_PRIM_LAYOUT || n->pn->u.layout.n_maps != 1) return -1;
        const korch_index_map *map = &n->pn->u.layout.maps[0];
        const cg_value *x = &e->k->values[n->in[0]];
        if (map->input_rank != x->shape.rank) return -1;
        cg_aff next[KORCH_MAX_RANK];
        for (int k = 0; k < map->input_rank; k++) {
            const korch_index_term *t = &map->terms[k];
            if (t->div > 1 || t->mod > 0 || t->table) return -1;
            int64_t lo = t->offset, hi = t->offset;
            next[k] = cg_aff_const(t->offset);
            for (int j = 0; j < v->shape.rank; j++) {
                int64_t span;
                if (__builtin_mul_overflow(t->coef[j], v->shape.dims[j] - 1, &span) ||
                    __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi))
                    return -1;
                if (t->coef[j]) cg_aff_add(e, &next[k], &raw[j], t->coef[j]);
            }
            if (lo < 0 || hi >= x->shape.dims[k]) return -1;
        }
        for (int k = 0; k < map->input_rank; k++) raw[k] = next[k];
        u = n->in[0];
    }
    return -1;
}

static const char *layout_at(cg_emit *e, const cg_node *n, const char *key, const cg_aff *c, int *level) {
    const char *selected = pointer_select(e, n, key, c, level);
    if (selected) return selected;
    const korch_prim_layout *l = &n->pn->u.layout;
    const cg_value *y = &e->k->values[n->out];
    char pad[64];
    cg_literal(l->pad_value, y->dtype, pad, sizeof pad);
    /* evaluate maps up to the first one that is always in bounds */
    char names[KORCH_MAX_RANK][480], conds[KORCH_MAX_RANK][520];
    int used = 0, lvl = -1;
    bool total = false;
    for (int p = 0; p < l->n_maps && !total && e->st == KORCH_OK; p++) {
        cg_aff in[KORCH_MAX_RANK], raw[KORCH_MAX_RANK];
        char cond[512];
        int cl;
        if (!map_coords(e, n, p, c, in, raw, cond, sizeof cond, &cl) && e->st == KORCH_OK) continue;
        if (e->st != KORCH_OK) break;
        int vl;
        int u = n->in[p];
        int raw_level = -1;
        for (int k = 0; k < e->k->values[u].shape.rank; k++) {
            int l = cg_aff_level(e, &raw[k]);
            if (l > raw_level) raw_level = l;
        }
        int src = cond[0] && cl >= raw_level ? affine_source(e, u, raw) : -1;
        if (src >= 0) {
            /* a guarded load at the unclamped address where the guard varies
             * in the load's own loop: stays affine, so it vectorises as a
             * masked contiguous load instead of a gather. A guard hoisted
             * above the load's loop (a row of a pad or a concat) reads at
             * the clamped address instead, unconditionally, then selects:
             * still affine in the loop, and gcc 12.2 -O3 miscompiles the
             * masked loads it makes of such guards (docs/codegen.md). */
            buffer_ref(e, src, raw, names[used], sizeof names[used], &vl);
        } else {
            const char *v = cg_value_at(e, u, in, &vl);
            snprintf(names[used], sizeof names[used], "%s", v);
        }
        if (vl > lvl) lvl = vl;
        if (cond[0] == '\0') {
            total = true;
            conds[used][0] = '\0';
        } else {
            snprintf(conds[used], sizeof conds[used], "(%s)", cond);
            if (cl > lvl) lvl = cl;
        }
        used++;
    }
    if (used == 1 && total) {
        *level = lvl;
        return cg_memo_add(e, key, names[0], lvl);
    }
    char expr[4096];
    snprintf(expr, sizeof expr, "%s", total ? names[used - 1] : pad);
    for (int p = used - (total ? 2 : 1); p >= 0; p--) {
        char next[4200];
        int w = snprintf(next, sizeof next, "%s ? %s : (%s)", conds[p], names[p], expr);
        if (w < 0 || w >= (int)sizeof expr) {
            cg_fail(e, KORCH_ERR_UNSUPPORTED, "layout expression too long");
            return "0";
        }
        memcpy(expr, next, (size_t)w + 1);
    }
    *level = lvl;
    return named(e, key, y->dtype, expr, lvl);
}

/* "buf[offset]" for buffer-backed value v at coordinates c, with the fused
 * rows check; *level is where the access can be evaluated. */
static void buffer_ref(cg_emit *e, int v, const cg_aff *c, char *out, size_t size, int *level) {
    const cg_value *val = &e->k->values[v];
    char buf[32];
    if (e->loc[v] == CG_LOC_INPUT) snprintf(buf, sizeof buf, "in%d", val->input_slot);
    else if (e->loc[v] == CG_LOC_OUTPUT) snprintf(buf, sizeof buf, "out%d", val->output_slot);
    else snprintf(buf, sizeof buf, "sc%d", v);
    if (e->loc[v] != CG_LOC_INPUT && e->P > 0) {
        /* a reduction result must come from the same outer iteration */
        for (int i = 0; i < e->P; i++)
            if (i >= val->shape.rank || !same_outer(e, &c[i], i, val->shape.dims[i])) e->fusion_broken = true;
    }
    cg_aff lin = cg_linear(e, &val->shape, c);
    *level = cg_aff_level(e, &lin);
    /* a result of this kernel is written inside the fused loops: never read
     * it above them (its address may skip extent-1 or reordered loops) */
    if (e->loc[v] != CG_LOC_INPUT)
        for (int i = 0; i < e->P; i++)
            if (e->syms[e->outer[i]].level > *level) *level = e->syms[e->outer[i]].level;
    char s[400];
    cg_aff_str(&lin, s, sizeof s);
    if ((size_t)snprintf(out, size, "%s[%s]", buf, s) >= size) cg_fail(e, KORCH_ERR_UNSUPPORTED, "index too long");
}

static const char *buffer_at(cg_emit *e, int v, const char *key, const cg_aff *c, int *level) {
    char ref[480], name[24];
    buffer_ref(e, v, c, ref, sizeof ref, level);
    snprintf(name, sizeof name, "t%d", e->n_tmp++);
    cg_stmt(e, *level, "const %s %s = %s;", cg_ctype(e->k->values[v].dtype), name, ref);
    return cg_memo_add(e, key, name, *level);
}

/* A read of the row cached by the last reduction pass, if c is in its row. */
static const char *rowcache_at(cg_emit *e, int v, const char *key, const cg_aff *c, int *level) {
    const cg_value *val = &e->k->values[v];
    for (int i = 0; i < e->P; i++)
        if (!same_outer(e, &c[i], i, val->shape.dims[i])) return NULL;
    korch_shape inner = {.rank = val->shape.rank - e->P};
    for (int d = 0; d < inner.rank; d++) inner.dims[d] = val->shape.dims[e->P + d];
    cg_aff lin = cg_linear(e, &inner, c + e->P);
    int lvl = cg_aff_level(e, &lin);
    /* the cache lives inside the outer loops even where the inner index is constant */
    for (int i = 0; i < e->P; i++)
        if (e->syms[e->outer[i]].level > lvl) lvl = e->syms[e->outer[i]].level;
    char s[400], name[24];
    cg_aff_str(&lin, s, sizeof s);
    snprintf(name, sizeof name, "t%d", e->n_tmp++);
    cg_stmt(e, lvl, "const %s %s = rc%d[%s];", cg_ctype(val->dtype), name, v, s);
    *level = lvl;
    return cg_memo_add(e, key, name, lvl);
}

bool cg_value_key(const cg_emit *e, int v, const cg_aff *c, char *key, size_t size) {
    const cg_value *val = &e->k->values[v];
    int used = snprintf(key, size, "v%d@", v);
    for (int d = 0; d < val->shape.rank && used < (int)size; d++) {
        char s[400];
        cg_aff_str(&c[d], s, sizeof s);
        used += snprintf(key + used, size - (size_t)used, "%s;", s);
    }
    return used < (int)size;
}

const char *cg_value_at(cg_emit *e, int v, const cg_aff *c, int *level) {
    *level = -1;
    if (e->st != KORCH_OK) return "0";
    const cg_value *val = &e->k->values[v];
    char key[CG_VALUE_KEY_SIZE];
    if (!cg_value_key(e, v, c, key, sizeof key)) {
        cg_fail(e, KORCH_ERR_UNSUPPORTED, "index expressions too long");
        return "0";
    }
    const cg_memo *m = cg_memo_find(e, key);
    if (m) {
        *level = m->level;
        return m->name;
    }
    switch (e->loc[v]) {
    case CG_LOC_SCALAR: {
        char lit[64];
        cg_literal(val->scalar, val->dtype, lit, sizeof lit);
        return cg_memo_add(e, key, lit, -1);
    }
    case CG_LOC_INPUT:
    case CG_LOC_SCRATCH:
    case CG_LOC_OUTPUT: return buffer_at(e, v, key, c, level);
    case CG_LOC_COMPUTE: break;
    }
    if (e->rc_has[v]) {
        const char *r = rowcache_at(e, v, key, c, level);
        if (r) return r;
    }
    const cg_node *n = &e->k->nodes[val->producer];
    if (n->pn->kind == KORCH_PRIM_ELEMENTWISE) return elementwise_at(e, n, key, c, level);
    if (n->pn->kind == KORCH_PRIM_LAYOUT) return layout_at(e, n, key, c, level);
    cg_fail(e, KORCH_ERR_INTERNAL, "reduction value read before its pass");
    return "0";
}

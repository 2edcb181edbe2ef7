/* Symbolic index arithmetic for generated kernels (see emit.h).
 *
 * The simplifications that matter for speed:
 *   floor((Q*d + R) / d) = Q   and   (Q*m + R) mod m = R   when 0 <= R < d (m)
 * which turn the div/mod of reshapes that split or merge dimensions back into
 * plain affine terms, and range-based removal of clamps and bounds checks.
 * All arithmetic on coefficients and ranges is overflow-checked: the index
 * maps come from models, and an overflow marks the kernel unsupported. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/emit.h"

void cg_fail(cg_emit *e, korch_status st, const char *fmt, ...) {
    if (e->st != KORCH_OK) return;
    e->st = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->reason, e->size, fmt, ap);
    va_end(ap);
}

static int64_t checked_mul(cg_emit *e, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        cg_fail(e, KORCH_ERR_UNSUPPORTED, "index arithmetic overflows 64 bits");
        return 0;
    }
    return r;
}

static int64_t checked_add(cg_emit *e, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        cg_fail(e, KORCH_ERR_UNSUPPORTED, "index arithmetic overflows 64 bits");
        return 0;
    }
    return r;
}

int cg_new_sym(cg_emit *e, int64_t lo, int64_t hi, int level) {
    if (e->n_syms == e->cap_syms) {
        int cap = e->cap_syms ? e->cap_syms * 2 : 64;
        cg_sym *s = realloc(e->syms, (size_t)cap * sizeof *s);
        if (!s) {
            cg_fail(e, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
            return 0;
        }
        e->syms = s;
        e->cap_syms = cap;
    }
    e->syms[e->n_syms] = (cg_sym){.lo = lo, .hi = hi, .level = level};
    return e->n_syms++;
}

void cg_stmt(cg_emit *e, int level, const char *fmt, ...) {
    if (level < -1) level = -1;
    if (level >= e->depth) level = e->depth - 1;
    cg_buf *b = &e->lv[level + 1];
    for (int i = 0; i <= level + 1; i++) cg_buf_append(b, "    ", 4);
    char small[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof small) {
        cg_fail(e, KORCH_ERR_INTERNAL, "generated statement too long");
        return;
    }
    cg_buf_append(b, small, (size_t)n);
    cg_buf_append(b, "\n", 1);
}

const cg_memo *cg_memo_find(cg_emit *e, const char *key) {
    for (int i = e->n_memo - 1; i >= 0; i--)
        if (strcmp(e->memo[i].key, key) == 0) return &e->memo[i];
    return NULL;
}

const char *cg_memo_add(cg_emit *e, const char *key, const char *name, int level) {
    if (e->n_memo == e->cap_memo) {
        int cap = e->cap_memo ? e->cap_memo * 2 : 256;
        cg_memo *m = realloc(e->memo, (size_t)cap * sizeof *m);
        if (!m) {
            cg_fail(e, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
            return "0";
        }
        e->memo = m;
        e->cap_memo = cap;
    }
    char *k = strdup(key), *n = strdup(name);
    if (!k || !n) {
        free(k);
        free(n);
        cg_fail(e, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        return "0";
    }
    e->memo[e->n_memo++] = (cg_memo){.key = k, .name = n, .level = level};
    return n;
}

void cg_memo_drop(cg_emit *e, int from_level) {
    int w = 0;
    for (int i = 0; i < e->n_memo; i++) {
        if (e->memo[i].level >= from_level) {
            free(e->memo[i].key);
            free(e->memo[i].name);
        } else {
            e->memo[w++] = e->memo[i];
        }
    }
    e->n_memo = w;
}

/* ---- affine expressions ---------------------------------------------------- */

cg_aff cg_aff_const(int64_t c) { return (cg_aff){.off = c}; }

cg_aff cg_aff_sym(int sym) { return (cg_aff){.n = 1, .sym = {sym}, .coef = {1}}; }

void cg_aff_add(cg_emit *e, cg_aff *a, const cg_aff *b, int64_t scale) {
    a->off = checked_add(e, a->off, checked_mul(e, b->off, scale));
    for (int j = 0; j < b->n; j++) {
        int64_t c = checked_mul(e, b->coef[j], scale);
        if (c == 0) continue;
        int i = 0;
        while (i < a->n && a->sym[i] < b->sym[j]) i++;
        if (i < a->n && a->sym[i] == b->sym[j]) {
            a->coef[i] = checked_add(e, a->coef[i], c);
            if (a->coef[i] == 0) {
                memmove(&a->sym[i], &a->sym[i + 1], (size_t)(a->n - i - 1) * sizeof a->sym[0]);
                memmove(&a->coef[i], &a->coef[i + 1], (size_t)(a->n - i - 1) * sizeof a->coef[0]);
                a->n--;
            }
            continue;
        }
        if (a->n == CG_AFF_TERMS) {
            cg_fail(e, KORCH_ERR_UNSUPPORTED, "index expression has more than %d terms", CG_AFF_TERMS);
            return;
        }
        memmove(&a->sym[i + 1], &a->sym[i], (size_t)(a->n - i) * sizeof a->sym[0]);
        memmove(&a->coef[i + 1], &a->coef[i], (size_t)(a->n - i) * sizeof a->coef[0]);
        a->sym[i] = b->sym[j];
        a->coef[i] = c;
        a->n++;
    }
}

void cg_aff_range(cg_emit *e, const cg_aff *a, int64_t *lo, int64_t *hi) {
    int64_t l = a->off, h = a->off;
    for (int i = 0; i < a->n; i++) {
        const cg_sym *s = &e->syms[a->sym[i]];
        int64_t x = checked_mul(e, a->coef[i], s->lo), y = checked_mul(e, a->coef[i], s->hi);
        l = checked_add(e, l, x < y ? x : y);
        h = checked_add(e, h, x < y ? y : x);
    }
    *lo = l;
    *hi = h;
}

int cg_aff_level(const cg_emit *e, const cg_aff *a) {
    int level = -1;
    for (int i = 0; i < a->n; i++)
        if (e->syms[a->sym[i]].level > level) level = e->syms[a->sym[i]].level;
    return level;
}

bool cg_aff_is_sym(const cg_aff *a, int sym) { return a->n == 1 && a->sym[0] == sym && a->coef[0] == 1 && a->off == 0; }

void cg_aff_str(const cg_aff *a, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < a->n && used < size; i++) {
        const char *sep = i == 0 ? "" : " + ";
        int n;
        if (a->coef[i] == 1) n = snprintf(buf + used, size - used, "%sx%d", sep, a->sym[i]);
        else n = snprintf(buf + used, size - used, "%s%lld * x%d", sep, (long long)a->coef[i], a->sym[i]);
        used += n > 0 ? (size_t)n : 0;
    }
    if (used < size && (a->off != 0 || a->n == 0))
        snprintf(buf + used, size - used, a->n ? " + %lld" : "%lld", (long long)a->off);
    if (a->n == 0 && a->off < 0) snprintf(buf, size, "(%lld)", (long long)a->off);
}

/* A named int64 temporary holding C expression `text`, memoised. */
static cg_aff int_temp(cg_emit *e, const char *text, int64_t lo, int64_t hi, int level) {
    if (lo == hi) return cg_aff_const(lo);
    char key[600];
    snprintf(key, sizeof key, "#%s", text);
    const cg_memo *m = cg_memo_find(e, key);
    if (m) return cg_aff_sym(atoi(m->name + 1));
    int s = cg_new_sym(e, lo, hi, level);
    char name[24];
    snprintf(name, sizeof name, "x%d", s);
    cg_memo_add(e, key, name, level);
    /* CG_UNUSED: a clamped coordinate is dead when a guarded load reads the
     * unclamped address instead (exported code builds with -Wall -Werror) */
    cg_stmt(e, level, "const int64_t x%d CG_UNUSED = %s;", s, text);
    return cg_aff_sym(s);
}

/* Splits a into (multiples of d) and the rest: a = d*q + r. */
static void split(cg_emit *e, const cg_aff *a, int64_t d, cg_aff *q, cg_aff *r) {
    *q = cg_aff_const(0);
    *r = cg_aff_const(0);
    int64_t qo = a->off / d, ro = a->off % d;
    if (ro < 0) {
        ro += d;
        qo -= 1;
    }
    q->off = qo;
    r->off = ro;
    for (int i = 0; i < a->n; i++) {
        cg_aff t = cg_aff_sym(a->sym[i]);
        if (a->coef[i] % d == 0) cg_aff_add(e, q, &t, a->coef[i] / d);
        else cg_aff_add(e, r, &t, a->coef[i]);
    }
}

static int64_t floordiv(int64_t a, int64_t d) { return a / d - (a % d < 0); }

/* Records what a new temporary holds (the first definition wins: a memoised
 * temporary has the same text, so the same meaning). */
static cg_aff defined(cg_emit *e, cg_aff t, int kind, int64_t k, const cg_aff *arg) {
    if (t.n == 1 && t.coef[0] == 1 && t.off == 0 && e->syms[t.sym[0]].def == CG_DEF_NONE) {
        cg_sym *s = &e->syms[t.sym[0]];
        s->def = kind;
        s->def_k = k;
        s->def_arg = *arg;
    }
    return t;
}

static bool aff_equal(const cg_aff *a, const cg_aff *b) {
    if (a->n != b->n || a->off != b->off) return false;
    for (int i = 0; i < a->n; i++)
        if (a->sym[i] != b->sym[i] || a->coef[i] != b->coef[i]) return false;
    return true;
}

static bool is_plain_sym(const cg_aff *a) { return a->n == 1 && a->coef[0] == 1 && a->off == 0; }

cg_aff cg_aff_floordiv(cg_emit *e, const cg_aff *a, int64_t d) {
    if (d <= 1) return *a;
    cg_aff q, r;
    split(e, a, d, &q, &r);
    int64_t lo, hi;
    cg_aff_range(e, &r, &lo, &hi);
    if (lo >= 0 && hi < d) return q;
    cg_aff_range(e, a, &lo, &hi);
    char s[400], text[480];
    cg_aff_str(a, s, sizeof s);
    if (lo >= 0) snprintf(text, sizeof text, "(%s) / %lld", s, (long long)d);
    else snprintf(text, sizeof text, "cg_fdiv(%s, %lld)", s, (long long)d);
    return defined(e, int_temp(e, text, floordiv(lo, d), floordiv(hi, d), cg_aff_level(e, a)), CG_DEF_DIV, d, a);
}

/* One rewrite of cg_aff_fold: term i is c * (E mod m); a term j equal to
 * c*m * floor(A / mT), where floor(A / mT) differs from floor(E / m) by an
 * affine amount, absorbs it. floor(E/m) is taken as floor(A'/mT) with
 * (A', mT) = (A0, d0*m) when E is itself floor(A0/d0) (floor(floor(x/a)/b)
 * = floor(x/(a*b))), else (E, m); floor(A/mT) = qA + floor(rA/mT) for A =
 * mT*qA + rA, so equal remainders rA = rA' make the two floors differ by
 * qA - qA'. Then c*m*floor(A/mT) + c*(E mod m) = c*E + c*m*(qA - qA'). */
static bool fold_once(cg_emit *e, cg_aff *a, int i) {
    const cg_sym *ms = &e->syms[a->sym[i]];
    int64_t c = a->coef[i], m = ms->def_k, mT = m, want;
    const cg_aff *E = &ms->def_arg;
    cg_aff AT = *E;
    if (is_plain_sym(E) && e->syms[E->sym[0]].def == CG_DEF_DIV) {
        const cg_sym *ds = &e->syms[E->sym[0]];
        if (__builtin_mul_overflow(ds->def_k, m, &mT)) return false;
        AT = ds->def_arg;
    }
    if (__builtin_mul_overflow(c, m, &want)) return false;
    cg_aff qT, rT;
    split(e, &AT, mT, &qT, &rT);
    for (int j = 0; j < a->n; j++) {
        const cg_sym *dj = &e->syms[a->sym[j]];
        if (j == i || a->coef[j] != want || dj->def != CG_DEF_DIV || dj->def_k != mT) continue;
        cg_aff qj, rj;
        split(e, &dj->def_arg, mT, &qj, &rj);
        if (!aff_equal(&rj, &rT)) continue;
        if (a->n - 2 + E->n + qj.n + qT.n > CG_AFF_TERMS) return false;
        cg_aff t = *a, si = cg_aff_sym(a->sym[i]), sj = cg_aff_sym(a->sym[j]);
        cg_aff_add(e, &t, &si, -c);
        cg_aff_add(e, &t, &sj, -want);
        cg_aff_add(e, &t, E, c);
        cg_aff_add(e, &t, &qj, want);
        cg_aff_add(e, &t, &qT, -want);
        *a = t;
        return true;
    }
    return false;
}

void cg_aff_fold(cg_emit *e, cg_aff *a) {
    for (bool changed = true; changed && e->st == KORCH_OK;) {
        changed = false;
        for (int i = 0; i < a->n && !changed; i++)
            if (e->syms[a->sym[i]].def == CG_DEF_MOD) changed = fold_once(e, a, i);
    }
}

cg_aff cg_aff_mod(cg_emit *e, const cg_aff *a, int64_t m) {
    if (m <= 0) return *a;
    cg_aff q, r;
    split(e, a, m, &q, &r);
    int64_t lo, hi;
    cg_aff_range(e, &r, &lo, &hi);
    if (lo >= 0 && hi < m) return r;
    char s[400], text[480];
    cg_aff_str(&r, s, sizeof s);
    if (lo >= 0) snprintf(text, sizeof text, "(%s) %% %lld", s, (long long)m);
    else snprintf(text, sizeof text, "cg_fmod(%s, %lld)", s, (long long)m);
    return defined(e, int_temp(e, text, 0, m - 1, cg_aff_level(e, &r)), CG_DEF_MOD, m, &r);
}

cg_aff cg_aff_clamp(cg_emit *e, const cg_aff *a, int64_t lo, int64_t hi) {
    int64_t l, h;
    cg_aff_range(e, a, &l, &h);
    if (l >= lo && h <= hi) return *a;
    if (h < lo) return cg_aff_const(lo);
    if (l > hi) return cg_aff_const(hi);
    char s[400], text[480];
    cg_aff_str(a, s, sizeof s);
    snprintf(text, sizeof text, "cg_clamp(%s, %lld, %lld)", s, (long long)lo, (long long)hi);
    return int_temp(e, text, l > lo ? l : lo, h < hi ? h : hi, cg_aff_level(e, a));
}

/* The index must already be within [0, size). Tables are emitted once per
 * kernel as file-scope arrays (their contents are part of the signature). */
cg_aff cg_aff_table(cg_emit *e, const cg_aff *index, const int64_t *table, int64_t size) {
    int64_t lo, hi;
    cg_aff_range(e, index, &lo, &hi);
    if (lo < 0 || hi >= size) {
        cg_fail(e, KORCH_ERR_INTERNAL, "table index not clamped");
        return cg_aff_const(0);
    }
    int64_t tlo = table[lo], thi = table[lo];
    for (int64_t i = lo; i <= hi; i++) {
        if (table[i] < tlo) tlo = table[i];
        if (table[i] > thi) thi = table[i];
    }
    if (lo == hi) return cg_aff_const(table[lo]);
    /* one declaration per distinct table contents */
    char h[33], key[64];
    cg_hash_hex(table, (size_t)size * sizeof *table, h);
    snprintf(key, sizeof key, "T%s%lld", h, (long long)size);
    const cg_memo *m = cg_memo_find(e, key);
    char tname[96];
    if (m) {
        snprintf(tname, sizeof tname, "%s", m->name);
    } else {
        snprintf(tname, sizeof tname, "%s_t%d", e->fname, e->n_tables++);
        cg_buf_printf(e->file, "static const int64_t %s[%lld] = {", tname, (long long)size);
        for (int64_t i = 0; i < size; i++) cg_buf_printf(e->file, "%s%s%lld", i ? "," : "", i % 16 ? "" : "\n    ", (long long)table[i]);
        cg_buf_printf(e->file, "};\n");
        cg_memo_add(e, key, tname, -2); /* kernel lifetime */
    }
    char s[400], text[560];
    cg_aff_str(index, s, sizeof s);
    snprintf(text, sizeof text, "%s[%s]", tname, s);
    return int_temp(e, text, tlo, thi, cg_aff_level(e, index));
}

/* Solutions of binary programs already solved, by the program's exact text.
 *
 * Models with repeated structure (a recurrent layer unrolled over its time
 * steps, a stack of identical transformer blocks) give partitions whose
 * programs are the same to the bit: same candidates in the same order, same
 * costs (identical kernels share their profile), same rows. CBC would spend
 * its time share on each again (a CRNN's bidirectional LSTM: 30 such
 * partitions, 3-50 s each at the time limit). The memo keys a solution by
 * the whole program (costs, rows, MIP start), compared byte for byte, not
 * by a hash alone.
 *
 * Only solutions found without deadlock cuts are stored: such a solution is
 * the optimum (or, at a time limit, the best point found) of the base
 * program, which is a relaxation of the partition's real problem whatever
 * its deadlock structure; the solver (solve.c) reuses it for another
 * partition only after simulating it there, so a reused choice is always
 * schedulable, and optimal whenever the stored one was proven optimal. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrate/orchestrate.h"

typedef struct memo_entry {
    uint64_t hash;
    unsigned char *key;
    size_t key_len;
    int n_vars;
    bool *x;
    korch_blp_stats stats;
} memo_entry;

struct korch_solve_memo {
    memo_entry *entries;
    int n, cap;
};

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* the program as bytes: every number that defines it, the MIP start sorted
 * (written through open_memstream; *text is malloc'd, NULL on failure) */
static bool program_text(const korch_blp *b, const int *start, int n_start, unsigned char **text, size_t *len) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    int *sorted = malloc(((size_t)n_start + 1) * sizeof *sorted);
    bool ok = f && sorted;
    if (ok) {
        memcpy(sorted, start, (size_t)n_start * sizeof *sorted);
        qsort(sorted, (size_t)n_start, sizeof *sorted, cmp_int);
        size_t nz = (size_t)b->row_start[b->n_rows];
        fwrite(&b->n_vars, sizeof b->n_vars, 1, f);
        fwrite(b->cost, sizeof *b->cost, (size_t)b->n_vars, f);
        fwrite(&b->n_rows, sizeof b->n_rows, 1, f);
        fwrite(b->row_start, sizeof *b->row_start, (size_t)b->n_rows + 1, f);
        fwrite(b->cols, sizeof *b->cols, nz, f);
        fwrite(b->coefs, sizeof *b->coefs, nz, f);
        fwrite(b->sense, 1, (size_t)b->n_rows, f);
        fwrite(b->rhs, sizeof *b->rhs, (size_t)b->n_rows, f);
        fwrite(&n_start, sizeof n_start, 1, f);
        fwrite(sorted, sizeof *sorted, (size_t)n_start, f);
        ok = !ferror(f);
    }
    free(sorted);
    if (f && fclose(f) != 0) ok = false;
    if (!ok) {
        free(buf);
        buf = NULL;
    }
    *text = (unsigned char *)buf;
    *len = ok ? size : 0;
    return ok;
}

static uint64_t fnv1a(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

korch_solve_memo *korch_solve_memo_new(void) { return calloc(1, sizeof(korch_solve_memo)); }

void korch_solve_memo_free(korch_solve_memo *m) {
    if (!m) return;
    for (int i = 0; i < m->n; i++) {
        free(m->entries[i].key);
        free(m->entries[i].x);
    }
    free(m->entries);
    free(m);
}

bool korch_solve_memo_find(const korch_solve_memo *m, const korch_blp *b, const int *start, int n_start, bool *x,
                           korch_blp_stats *stats) {
    if (!m || m->n == 0) return false;
    unsigned char *text = NULL;
    size_t len = 0;
    bool found = false;
    if (program_text(b, start, n_start, &text, &len)) {
        uint64_t h = fnv1a(text, len);
        for (int i = 0; i < m->n && !found; i++) {
            const memo_entry *e = &m->entries[i];
            if (e->hash != h || e->key_len != len || e->n_vars != b->n_vars || memcmp(e->key, text, len)) continue;
            memcpy(x, e->x, (size_t)e->n_vars * sizeof *x);
            *stats = e->stats;
            found = true;
        }
    }
    free(text);
    return found;
}

void korch_solve_memo_put(korch_solve_memo *m, const korch_blp *b, const int *start, int n_start, const bool *x,
                          const korch_blp_stats *stats) {
    if (!m) return;
    unsigned char *text = NULL;
    size_t len = 0;
    bool *copy = malloc(((size_t)b->n_vars + 1) * sizeof *copy);
    if (!copy || !program_text(b, start, n_start, &text, &len)) goto fail; /* a memo is an optimisation: losing it is fine */
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 16;
        memo_entry *grown = realloc(m->entries, (size_t)cap * sizeof *grown);
        if (!grown) goto fail;
        m->entries = grown;
        m->cap = cap;
    }
    memcpy(copy, x, (size_t)b->n_vars * sizeof *copy);
    m->entries[m->n++] = (memo_entry){fnv1a(text, len), text, len, b->n_vars, copy, *stats};
    return;
fail:
    free(copy);
    free(text);
}

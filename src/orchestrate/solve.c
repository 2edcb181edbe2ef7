/* The optimal strategy for one partition: the binary program, solved again
 * with a cut whenever the chosen kernels deadlock.
 *
 *   minimise   sum_k latency_k x_k
 *   subject to sum_{k produces v} x_k >= 1          every value handed on
 *              x_k <= sum_{j produces v} x_j         every input v of k made here
 *              x_a + x_b - sum_P x_c <= 1            2-cycles (pre-added)
 *              sum_R x_k - sum_P x_j <= |R| - 1      deadlocks found so far
 *
 * After a solve, the chosen kernels are scheduled by simulation. If a set R
 * gets stuck, each kernel k of R waits for some value u_k that only kernels
 * of R produce. Any valid plan that contains all of R runs some kernel of R
 * first, and that kernel's u_k must come from a kernel outside R, i.e. from
 * P = {candidates outside R producing some u_k}. So
 *     sum_{k in R} x_k <= |R| - 1 + sum_{j in P} x_j
 * holds for every schedulable choice and is violated by the stuck one (no
 * chosen kernel outside R produces any u_k). Only finitely many 0/1 points
 * exist and each round removes one, so the loop ends, and the first
 * schedulable optimum of the relaxed program is optimal for the real one.
 * (docs/orchestration.md has the full argument.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrate/orchestrate.h"
#include "orchestrate/progress.h"

/* the cost a candidate has in the program of one partition */
typedef struct cost_ctx {
    int p;
    double untuned_scale;
} cost_ctx;

static double program_cost(void *user, const korch_candidate *c) {
    const cost_ctx *ctx = user;
    if (c->partition != ctx->p || !c->profiled || c->rejected) return INFINITY;
    return c->latency_ms * (c->untuned && !c->tune_tried ? ctx->untuned_scale : 1.0);
}

/* Marks the candidates of partition p that cannot beat their own split under
 * the program's costs (split_cost.c). Leaving them out keeps the optimum: in any
 * choice that uses such a C, the kernels of its split (recursively, down to
 * candidates that are variables) run C's nodes in a schedulable order, make
 * every value C makes, and cost no more. Single primitives, forced (greedy)
 * candidates and the MIP start are kept, so the start stays a solution. */
static korch_status mark_dominated(const korch_candidate_set *set, cost_ctx *ctx, const int *start, int n_start,
                                   bool *dominated, int *count) {
    *count = 0;
    bool *keep = calloc((size_t)set->n_candidates + 1, sizeof *keep);
    if (!keep) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
    for (int i = 0; i < n_start; i++) keep[start[i]] = true;
    korch_split_memo m;
    korch_split_init(&m, set, program_cost, ctx);
    for (int i = 0; i < set->n_candidates; i++) {
        const korch_candidate *c = &set->candidates[i];
        dominated[i] = false;
        if (c->partition != ctx->p || c->n_nodes < 2 || c->forced || keep[i]) continue;
        double cost = program_cost(ctx, c);
        if (cost == INFINITY) continue;
        if (korch_split_cost(&m, ctx->p, c->mask) <= cost) {
            dominated[i] = true;
            (*count)++;
        }
    }
    korch_split_free(&m);
    free(keep);
    return KORCH_OK;
}

typedef struct pair {
    int value, var;
} pair;

static int cmp_pair(const void *a, const void *b) {
    const pair *x = a, *y = b;
    if (x->value != y->value) return (x->value > y->value) - (x->value < y->value);
    return (x->var > y->var) - (x->var < y->var);
}

typedef struct problem {
    korch_candidate_set *set;
    int p;
    int n_vars;
    int *cand; /* var -> candidate index */
    korch_sched_kernel *k; /* var -> inputs/outputs */
    pair *prod; /* (value, var) for every output, sorted */
    int n_prod;
    bool *available; /* per value; true unless made in this partition */
    int *cols; /* row scratch */
    double *coefs;
} problem;

/* producers of v: prod[*first .. *first + count) */
static int producers(const problem *pr, int v, int *first) {
    int lo = 0, hi = pr->n_prod;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (pr->prod[mid].value < v) lo = mid + 1;
        else hi = mid;
    }
    *first = lo;
    int n = 0;
    while (lo + n < pr->n_prod && pr->prod[lo + n].value == v) n++;
    return n;
}

static bool made_here(const problem *pr, int v) { return !pr->available[v]; }

static bool produces(const problem *pr, int var, int v) {
    for (int j = 0; j < pr->k[var].n_outputs; j++)
        if (pr->k[var].outputs[j] == v) return true;
    return false;
}

/* x_k <= sum of producers, and coverage of the values handed on */
static korch_status base_rows(problem *pr, korch_blp *b, const int *required, int n_required) {
    for (int r = 0; r < n_required; r++) {
        int first, n = producers(pr, required[r], &first);
        for (int j = 0; j < n; j++) {
            pr->cols[j] = pr->prod[first + j].var;
            pr->coefs[j] = 1.0;
        }
        if (n == 0)
            return korch_error(KORCH_ERR_INTERNAL, "orchestrate: partition %d: no candidate produces value %d", pr->p,
                               required[r]);
        if (!korch_blp_add_row(b, n, pr->cols, pr->coefs, 'G', 1.0)) return KORCH_ERR_OUT_OF_MEMORY;
    }
    /* every node of the partition is computed by some chosen kernel: implied
     * by the rows below for schedulable choices (each node is an ancestor of
     * a value handed on), but stated explicitly it gives the relaxation the
     * set-cover structure CBC solves fast */
    const korch_partition *part = &pr->set->partitions[pr->p];
    for (int i = 0; i < part->n_nodes; i++) {
        int nz = 0;
        for (int var = 0; var < pr->n_vars; var++)
            if ((pr->set->candidates[pr->cand[var]].mask >> i) & 1u) {
                pr->cols[nz] = var;
                pr->coefs[nz++] = 1.0;
            }
        if (nz == 0)
            return korch_error(KORCH_ERR_INTERNAL, "orchestrate: partition %d: no candidate computes node %d", pr->p,
                               part->nodes[i]);
        if (!korch_blp_add_row(b, nz, pr->cols, pr->coefs, 'G', 1.0)) return KORCH_ERR_OUT_OF_MEMORY;
    }
    for (int var = 0; var < pr->n_vars; var++)
        for (int i = 0; i < pr->k[var].n_inputs; i++) {
            int v = pr->k[var].inputs[i];
            if (!made_here(pr, v)) continue;
            int first, n = producers(pr, v, &first), nz = 0;
            pr->cols[nz] = var;
            pr->coefs[nz++] = 1.0;
            for (int j = 0; j < n; j++) {
                pr->cols[nz] = pr->prod[first + j].var;
                pr->coefs[nz++] = -1.0;
            }
            if (!korch_blp_add_row(b, nz, pr->cols, pr->coefs, 'L', 0.0)) return KORCH_ERR_OUT_OF_MEMORY;
        }
    return KORCH_OK;
}

/* Of the inputs of `a` that `b` produces, the one with the fewest other
 * producers (the strongest cut); -1 if none. */
static int weakest_link(const problem *pr, int a, int b) {
    int best = -1, best_n = 0;
    for (int i = 0; i < pr->k[a].n_inputs; i++) {
        int v = pr->k[a].inputs[i];
        if (!made_here(pr, v) || !produces(pr, b, v)) continue;
        int first, n = producers(pr, v, &first);
        if (best < 0 || n < best_n) {
            best = v;
            best_n = n;
        }
    }
    return best;
}

/* x_a + x_b <= 1 + sum of the other producers of u_a and u_b, for every pair
 * of candidates that each need a value of the other: R = {a, b}. */
/* Bounds of one partition's program. REQUIRED_CAP: the values a partition
 * must produce (korch_partition_required): room for 8 per node of a full
 * partition. PAIR_ROWS_CAP: pairwise cut rows
 * added up front; beyond it the program grows faster than the cuts help,
 * and the simulation loop (below) still adds whatever cut a solution needs.
 * DEFAULT_CUT_ROUNDS: solve / simulate / cut rounds when
 * options->max_cut_rounds is 0. */
enum {
    REQUIRED_CAP = KORCH_PARTITION_MAX_NODES * 8,
    PAIR_ROWS_CAP = 20000,
    DEFAULT_CUT_ROUNDS = 50,
};

static korch_status pair_rows(problem *pr, korch_blp *b, int cap, int *added) {
    *added = 0;
    for (int a = 0; a < pr->n_vars && *added < cap; a++)
        for (int i = 0; i < pr->k[a].n_inputs && *added < cap; i++) {
            int v = pr->k[a].inputs[i];
            if (!made_here(pr, v)) continue;
            int first, n = producers(pr, v, &first);
            for (int j = 0; j < n && *added < cap; j++) {
                int bv = pr->prod[first + j].var;
                if (bv <= a) continue; /* each pair once */
                bool seen_earlier = false; /* a pair linked by several values: only at its first link */
                for (int e = 0; e < i && !seen_earlier; e++)
                    seen_earlier = made_here(pr, pr->k[a].inputs[e]) && produces(pr, bv, pr->k[a].inputs[e]);
                if (seen_earlier) continue;
                int ub = weakest_link(pr, bv, a);
                if (ub < 0) continue;
                int ua = weakest_link(pr, a, bv);
                int nz = 0;
                pr->cols[nz] = a;
                pr->coefs[nz++] = 1.0;
                pr->cols[nz] = bv;
                pr->coefs[nz++] = 1.0;
                int uu[2] = {ua, ub};
                for (int t = 0; t < 2; t++) {
                    int f, m = producers(pr, uu[t], &f);
                    for (int q = 0; q < m; q++) {
                        int c = pr->prod[f + q].var;
                        if (c == a || c == bv) continue;
                        bool dup = false;
                        for (int z = 2; z < nz && !dup; z++) dup = pr->cols[z] == c;
                        if (dup) continue;
                        pr->cols[nz] = c;
                        pr->coefs[nz++] = -1.0;
                    }
                }
                /* only the pure exclusions: with third producers the row is
                 * long, weak, and slows CBC down more than the rare deadlock
                 * it prevents (the cut loop catches those) */
                if (nz > 2) continue;
                if (!korch_blp_add_row(b, nz, pr->cols, pr->coefs, 'L', 1.0)) return KORCH_ERR_OUT_OF_MEMORY;
                (*added)++;
            }
        }
    return KORCH_OK;
}

/* From a stuck set, adds up to `max_cuts` cuts over small deadlock cores.
 * wait[k] is one value kernel k waits for; core(k0) closes {k0} under
 * "add every chosen producer of wait[k]". */
static korch_status deadlock_cuts(problem *pr, korch_blp *b, const bool *x, const bool *ran, int max_cuts, int *added) {
    int n = pr->n_vars;
    int *wait = malloc((size_t)n * sizeof *wait);
    int *core = malloc((size_t)n * sizeof *core);
    int *best_core = malloc((size_t)n * sizeof *best_core);
    bool *in_core = calloc((size_t)n, sizeof *in_core);
    bool *covered = calloc((size_t)n, sizeof *covered);
    korch_status st = KORCH_OK;
    *added = 0;
    if (!wait || !core || !best_core || !in_core || !covered) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
        goto done;
    }
    for (int k = 0; k < n; k++) {
        wait[k] = -1;
        if (!x[k] || ran[k]) continue;
        for (int i = 0; i < pr->k[k].n_inputs && wait[k] < 0; i++)
            if (!pr->available[pr->k[k].inputs[i]]) wait[k] = pr->k[k].inputs[i];
    }
    /* a core per uncovered stuck kernel; cores found from different starts may coincide */
    while (*added < max_cuts) {
        int best_n = 0;
        for (int k0 = 0; k0 < n; k0++) {
            if (!x[k0] || ran[k0] || covered[k0] || wait[k0] < 0) continue;
            int nc = 0;
            core[nc++] = k0;
            in_core[k0] = true;
            for (int h = 0; h < nc; h++) {
                int first, m = producers(pr, wait[core[h]], &first);
                for (int j = 0; j < m; j++) {
                    int c = pr->prod[first + j].var;
                    if (x[c] && !in_core[c]) {
                        in_core[c] = true;
                        core[nc++] = c;
                    }
                }
            }
            for (int h = 0; h < nc; h++) in_core[core[h]] = false;
            if (best_n == 0 || nc < best_n) {
                best_n = nc;
                memcpy(best_core, core, (size_t)nc * sizeof *core);
            }
        }
        if (best_n == 0) break;
        /* the cut: sum_core x - sum_P x <= |core| - 1 */
        int nz = 0;
        for (int h = 0; h < best_n; h++) {
            in_core[best_core[h]] = true;
            covered[best_core[h]] = true;
            pr->cols[nz] = best_core[h];
            pr->coefs[nz++] = 1.0;
        }
        for (int h = 0; h < best_n; h++) {
            int first, m = producers(pr, wait[best_core[h]], &first);
            for (int j = 0; j < m; j++) {
                int c = pr->prod[first + j].var;
                if (in_core[c]) continue;
                bool dup = false;
                for (int z = best_n; z < nz && !dup; z++) dup = pr->cols[z] == c;
                if (!dup) {
                    pr->cols[nz] = c;
                    pr->coefs[nz++] = -1.0;
                }
            }
        }
        for (int h = 0; h < best_n; h++) in_core[best_core[h]] = false;
        if (!korch_blp_add_row(b, nz, pr->cols, pr->coefs, 'L', (double)best_n - 1.0)) {
            st = KORCH_ERR_OUT_OF_MEMORY;
            goto done;
        }
        (*added)++;
    }
done:
    free(wait);
    free(core);
    free(best_core);
    free(in_core);
    free(covered);
    return st;
}

/* Simulates the chosen vars; returns how many ran and fills order/ran. */
static int simulate(problem *pr, const bool *x, int *chosen, int *order, bool *ran) {
    int n_chosen = 0;
    for (int k = 0; k < pr->n_vars; k++)
        if (x[k]) chosen[n_chosen++] = k;
    int count = korch_schedule_simulate(pr->k, chosen, n_chosen, pr->available, order);
    for (int k = 0; k < pr->n_vars; k++) ran[k] = false;
    for (int i = 0; i < count; i++) ran[order[i]] = true;
    return count == n_chosen ? count : -1;
}

static void reset_available(problem *pr) {
    const korch_partition *part = &pr->set->partitions[pr->p];
    const korch_pgraph *pg = pr->set->pg;
    for (int i = 0; i < part->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[part->nodes[i]];
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) pr->available[n->outputs[k]] = false;
    }
}

korch_status korch_solve_partition(korch_candidate_set *set, int p, const int *start, int n_start, double time_limit_s,
                                   double untuned_scale, const korch_orchestrate_options *options, bool *available,
                                   korch_solve_memo *memo, int *chosen, int *n_chosen, korch_blp_stats *stats) {
    memset(stats, 0, sizeof *stats);
    *n_chosen = 0;
    problem pr = {.set = set, .p = p, .available = available};
    korch_status st = KORCH_OK;
    int n_cand = set->n_candidates;
    int *var_of = malloc(((size_t)n_cand + 1) * sizeof *var_of);
    pr.cand = malloc(((size_t)n_cand + 1) * sizeof *pr.cand);
    double *cost = malloc(((size_t)n_cand + 1) * sizeof *cost);
    int *required = malloc(REQUIRED_CAP * sizeof *required);
    bool *dominated = malloc(((size_t)n_cand + 1) * sizeof *dominated);
    korch_blp b = {0};
    bool *x = NULL, *ran = NULL;
    int *order = NULL, *sel = NULL, *start_vars = NULL;
    if (!var_of || !pr.cand || !cost || !required || !dominated) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
        goto done;
    }
    cost_ctx ctx = {p, untuned_scale};
    if (options->drop_dominated)
        st = mark_dominated(set, &ctx, start, n_start, dominated, &stats->dominated);
    else
        memset(dominated, 0, (size_t)n_cand * sizeof *dominated);
    if (st != KORCH_OK) goto done;
    for (int i = 0; i < n_cand; i++) {
        var_of[i] = -1;
        double c_cost = program_cost(&ctx, &set->candidates[i]);
        if (c_cost == INFINITY || dominated[i]) continue;
        var_of[i] = pr.n_vars;
        cost[pr.n_vars] = c_cost;
        pr.cand[pr.n_vars++] = i;
    }
    int total_out = 0, max_row = 8;
    pr.k = calloc((size_t)pr.n_vars + 1, sizeof *pr.k);
    for (int v = 0; pr.k && v < pr.n_vars; v++) {
        const korch_candidate *c = &set->candidates[pr.cand[v]];
        pr.k[v] = (korch_sched_kernel){c->n_inputs, c->inputs, c->n_outputs, c->outputs};
        total_out += c->n_outputs;
    }
    pr.prod = malloc(((size_t)total_out + 1) * sizeof *pr.prod);
    x = calloc((size_t)pr.n_vars + 1, sizeof *x);
    ran = calloc((size_t)pr.n_vars + 1, sizeof *ran);
    order = malloc(((size_t)pr.n_vars + 1) * sizeof *order);
    sel = malloc(((size_t)pr.n_vars + 1) * sizeof *sel);
    start_vars = malloc(((size_t)n_start + 1) * sizeof *start_vars);
    if (!pr.k || !pr.prod || !x || !ran || !order || !sel || !start_vars) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
        goto done;
    }
    for (int v = 0; v < pr.n_vars; v++)
        for (int j = 0; j < pr.k[v].n_outputs; j++) pr.prod[pr.n_prod++] = (pair){pr.k[v].outputs[j], v};
    qsort(pr.prod, (size_t)pr.n_prod, sizeof *pr.prod, cmp_pair);
    /* the longest row: a kernel, its inputs' producers, and cut rows over all vars */
    max_row = pr.n_vars * 2 + pr.n_prod + 8;
    pr.cols = malloc((size_t)max_row * sizeof *pr.cols);
    pr.coefs = malloc((size_t)max_row * sizeof *pr.coefs);
    if (!pr.cols || !pr.coefs) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
        goto done;
    }
    reset_available(&pr);
    int n_required = korch_partition_required(set, p, required, REQUIRED_CAP);
    korch_blp_init(&b, pr.n_vars, cost);
    st = base_rows(&pr, &b, required, n_required);
    if (st == KORCH_OK && options->pairwise_cuts) st = pair_rows(&pr, &b, PAIR_ROWS_CAP, &stats->pair_cuts);
    if (st != KORCH_OK) goto done;
    int n_sv = 0;
    for (int i = 0; i < n_start; i++)
        if (var_of[start[i]] >= 0) start_vars[n_sv++] = var_of[start[i]];
    stats->variables = pr.n_vars;
    double t_start = korch_now_ms();
    bool solved = false;
    stats->optimal = true;
    int max_rounds = options->max_cut_rounds > 0 ? options->max_cut_rounds : DEFAULT_CUT_ROUNDS;
    korch_blp_stats seen;
    if (korch_solve_memo_find(memo, &b, start_vars, n_sv, x, &seen)) {
        /* the same program, solved for another partition: its choice holds
         * here if it schedules here (solve_memo.c has the argument) */
        if (simulate(&pr, x, sel, order, ran) >= 0) {
            solved = true;
            max_rounds = 0;
            stats->rounds = seen.rounds;
            stats->optimal = seen.optimal;
            stats->time_limit = seen.time_limit;
            stats->objective = seen.objective;
            stats->bound = seen.bound;
            stats->reused = 1;
        }
        reset_available(&pr);
    }
    for (int round = 0; round < max_rounds; round++) {
        double left = time_limit_s - (korch_now_ms() - t_start) / 1e3;
        if (round > 0 && left <= 0) break;
        korch_blp_result res;
        st = korch_blp_solve(&b, start_vars, n_sv, left, x, &res);
        if (st != KORCH_OK) goto done;
        stats->rounds++;
        stats->optimal &= res.optimal;
        stats->time_limit |= res.time_limit;
        stats->objective = res.objective;
        stats->bound = res.bound;
        if (!res.feasible) break;
        if (simulate(&pr, x, sel, order, ran) >= 0) {
            solved = true;
            /* no deadlock cut: the optimum of the base program, reusable */
            if (stats->cuts == 0) korch_solve_memo_put(memo, &b, start_vars, n_sv, x, stats);
            break;
        }
        int added = 0;
        st = deadlock_cuts(&pr, &b, x, ran, 4, &added);
        reset_available(&pr);
        if (st != KORCH_OK) goto done;
        stats->cuts += added;
        if (added == 0) break;
    }
    reset_available(&pr);
    stats->rows = b.n_rows;
    stats->seconds = (korch_now_ms() - t_start) / 1e3;
    if (!solved) {
        /* keep the known schedulable choice */
        stats->fell_back = true;
        stats->optimal = false;
        memset(x, 0, (size_t)pr.n_vars * sizeof *x);
        for (int i = 0; i < n_sv; i++) x[start_vars[i]] = true;
        stats->objective = 0;
        for (int i = 0; i < n_sv; i++) stats->objective += cost[start_vars[i]];
        if (simulate(&pr, x, sel, order, ran) < 0) {
            st = korch_error(KORCH_ERR_INTERNAL, "orchestrate: partition %d: no schedulable choice", p);
            goto done;
        }
    }
    int count = 0;
    for (int k = 0; k < pr.n_vars; k++) count += x[k];
    for (int i = 0; i < count; i++) chosen[i] = pr.cand[order[i]];
    *n_chosen = count;
    stats->gap = stats->objective > 0 ? (stats->objective - stats->bound) / stats->objective : 0;
done:
    if (pr.available) {
        /* leave `available` all true for the next partition */
        const korch_partition *part = &set->partitions[p];
        for (int i = 0; i < part->n_nodes; i++) {
            const korch_pnode *n = &set->pg->nodes[part->nodes[i]];
            for (int k = 0; k < n->n_outputs; k++)
                if (n->outputs[k] >= 0) available[n->outputs[k]] = true;
        }
    }
    korch_blp_free(&b);
    free(var_of);
    free(pr.cand);
    free(cost);
    free(required);
    free(dominated);
    free(pr.k);
    free(pr.prod);
    free(pr.cols);
    free(pr.coefs);
    free(x);
    free(ran);
    free(order);
    free(sel);
    free(start_vars);
    return st;
}

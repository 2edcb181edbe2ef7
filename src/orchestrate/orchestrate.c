/* The orchestrator: candidates, profiles, and a plan per strategy. All three
 * strategies choose from the same profiled candidates, so `korch bench`
 * compares them on equal terms and the greedy plan is always a valid start
 * for the binary program.
 *
 * Profiling has two phases: every candidate is timed with a default schedule
 * (korch_orchestrator_profile), and a strategy's choice is tuned when it is
 * asked for (korch_orchestrator_solve). The optimal strategy solves, tunes
 * the untuned kernels it chose, and solves again the partitions whose
 * latencies changed, until its choice is tuned or the budget is spent. */
#include "orchestrate/orchestrate.h"

#include <stdlib.h>
#include <string.h>

#include "orchestrate/progress.h"

struct korch_orchestrator {
    const korch_pgraph *pg;
    korch_kernel_oracle oracle;
    korch_orchestrate_options options;
    korch_strategy most; /* the most demanding strategy prepared for */
    int *group_of;
    korch_candidate_set *set;
    korch_blp_stats blp;
    korch_tune_state tune;
    /* the optimal strategy, per partition: its last choice (schedulable
     * order), the statistics of that solve, and whether latencies changed
     * since (then it is solved again) */
    int **solution;
    int *n_solution;
    korch_blp_stats *part_stats;
    bool *dirty;
    korch_solve_memo *memo; /* programs solved so far, for identical partitions */
    double solve_seconds; /* all binary programs, every round */
    int tune_rounds;
    korch_verify_log vlog;
};

const char *korch_strategy_name(korch_strategy s) {
    static const char *const names[] = {"none", "greedy", "optimal"};
    _Static_assert(sizeof names / sizeof names[0] == KORCH_STRATEGY_COUNT, "strategy names out of step");
    return (unsigned)s < KORCH_STRATEGY_COUNT ? names[s] : "?";
}

bool korch_strategy_parse(const char *text, korch_strategy *out) {
    for (int s = 0; s < KORCH_STRATEGY_COUNT; s++)
        if (strcmp(text, korch_strategy_name((korch_strategy)s)) == 0) {
            *out = (korch_strategy)s;
            return true;
        }
    return false;
}

korch_orchestrate_options korch_orchestrate_options_default(int threads) {
    korch_orchestrate_options o = {
        .candidates = korch_candidate_options_default(),
        .machine = korch_machine_model_default(threads),
        .prune_by_bound = true,
        .profile_budget_s = 0,
        .profile_chunk = 128,
        .tune_chunk = 32,
        .solve_time_limit_s = 60,
        .max_cut_rounds = 50,
        .pairwise_cuts = true,
        .drop_dominated = true,
        .progress = false,
        .log = NULL,
        .tune_greedy = true,
        .tune_margin = 1.0,
        .verifier = {0},
        .max_verify_rounds = 50,
    };
    return o;
}

korch_status korch_orchestrator_create(const korch_pgraph *pg, const korch_kernel_oracle *oracle,
                                       const korch_orchestrate_options *options, korch_strategy most,
                                       korch_orchestrator **out) {
    *out = NULL;
    korch_orchestrator *o = calloc(1, sizeof *o);
    if (!o) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
    o->pg = pg;
    o->oracle = *oracle;
    o->options = *options;
    o->most = most;
    o->group_of = malloc(((size_t)pg->n_nodes + 1) * sizeof *o->group_of);
    korch_pgraph_uses uses = {0};
    korch_status st = o->group_of ? korch_pgraph_uses_build(pg, &uses)
                                  : korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
    if (st == KORCH_OK && most >= KORCH_STRATEGY_GREEDY)
        st = korch_greedy_groups(pg, &uses, oracle->supports, oracle->user, options->candidates.max_partition_nodes,
                                 options->candidates.force_backend, o->group_of);
    korch_pgraph_uses_free(&uses);
    if (st == KORCH_OK) {
        korch_candidate_options co = options->candidates;
        co.group_of = most >= KORCH_STRATEGY_GREEDY ? o->group_of : NULL;
        co.supports = oracle->supports;
        co.supports_user = oracle->user;
        co.enumerate = most >= KORCH_STRATEGY_OPTIMAL;
        double t0 = korch_now_ms();
        st = korch_candidates_build(pg, &co, &o->set);
        if (st == KORCH_OK && options->log)
            fprintf(options->log, "candidates: built in %.2f s\n", (korch_now_ms() - t0) / 1e3);
    }
    if (st != KORCH_OK) {
        korch_orchestrator_free(o);
        return st;
    }
    *out = o;
    return KORCH_OK;
}

void korch_orchestrator_free(korch_orchestrator *o) {
    if (!o) return;
    for (int p = 0; o->solution && p < o->set->n_partitions; p++) free(o->solution[p]);
    free(o->solution);
    free(o->n_solution);
    free(o->part_stats);
    free(o->dirty);
    korch_solve_memo_free(o->memo);
    korch_tune_state_free(&o->tune);
    korch_verify_log_free(&o->vlog);
    korch_candidates_free(o->set);
    free(o->group_of);
    free(o);
}

korch_candidate_set *korch_orchestrator_candidates(korch_orchestrator *o) { return o->set; }
const korch_blp_stats *korch_orchestrator_blp_stats(const korch_orchestrator *o) { return &o->blp; }
const korch_tune_state *korch_orchestrator_tuning(const korch_orchestrator *o) { return &o->tune; }
int korch_orchestrator_tune_rounds(const korch_orchestrator *o) { return o->tune_rounds; }
const korch_verify_log *korch_orchestrator_verify_log(const korch_orchestrator *o) { return &o->vlog; }

korch_status korch_orchestrator_exclude(korch_orchestrator *o, const korch_plan_kernel *k,
                                        const korch_verify_result *r) {
    if (!o->dirty) return korch_error(KORCH_ERR_INVALID_ARGUMENT, "orchestrate: exclude before profile");
    o->vlog.rounds++;
    return korch_orchestrator_exclude_kernel(o->set, &o->oracle, &o->options.verifier, k, r, o->dirty, &o->vlog);
}

/* The candidate a plan kernel came from, or -1. */
static int plan_candidate(const korch_orchestrator *o, const korch_plan_kernel *k) {
    for (int i = 0; i < k->n_nodes; i++)
        if (k->nodes[i] < 0 || k->nodes[i] >= o->pg->n_nodes) return -1;
    if (k->n_nodes < 1) return -1;
    int p = o->set->partition_of[k->nodes[0]];
    korch_nodemask mask = 0;
    for (int i = 0; i < k->n_nodes; i++) mask |= (korch_nodemask)1 << o->set->local_of[k->nodes[i]];
    return korch_candidate_find(o->set, p, mask);
}

korch_status korch_orchestrator_set_cost(korch_orchestrator *o, const korch_plan_kernel *k, double ms) {
    if (!o->dirty) return korch_error(KORCH_ERR_INVALID_ARGUMENT, "orchestrate: set_cost before profile");
    int ci = plan_candidate(o, k);
    if (ci < 0 || !(ms > 0))
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "orchestrate: set_cost: no candidate for kernel %s", k->impl);
    o->set->candidates[ci].latency_ms = ms;
    o->dirty[o->set->candidates[ci].partition] = true;
    return KORCH_OK;
}

double korch_orchestrator_kernel_cost(const korch_orchestrator *o, const korch_plan_kernel *k) {
    int ci = plan_candidate(o, k);
    return ci >= 0 ? o->set->candidates[ci].latency_ms : k->latency_ms;
}

korch_status korch_orchestrator_profile(korch_orchestrator *o) {
    if (o->tune.start_ms == 0) {
        o->tune.clock_ms = o->options.clock_ms;
        o->tune.clock_user = o->options.clock_user;
        o->tune.start_ms = o->tune.clock_ms ? o->tune.clock_ms(o->tune.clock_user) : korch_now_ms();
        o->tune.budget_s = o->options.profile_budget_s;
    }
    int np = o->set->n_partitions;
    if (!o->solution) {
        o->solution = calloc((size_t)np + 1, sizeof *o->solution);
        o->n_solution = calloc((size_t)np + 1, sizeof *o->n_solution);
        o->part_stats = calloc((size_t)np + 1, sizeof *o->part_stats);
        o->dirty = calloc((size_t)np + 1, sizeof *o->dirty);
        o->memo = korch_solve_memo_new();
        if (!o->solution || !o->n_solution || !o->part_stats || !o->dirty || !o->memo)
            return korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
    }
    for (int p = 0; p < np; p++) o->dirty[p] = true;
    KORCH_TRY(korch_profile_candidates(o->set, &o->oracle, &o->options));
    KORCH_TRY(korch_verify_stored(o->set, &o->oracle, &o->options.verifier, &o->vlog));
    if (o->options.log) korch_candidates_report(o->set, o->options.log);
    return KORCH_OK;
}

static bool usable(const korch_candidate *c) { return c->profiled && !c->rejected; }

/* Candidates of partition p for the none or greedy strategy. */
static korch_status rule_choice(korch_orchestrator *o, int p, korch_strategy strategy, int *chosen, int *n_chosen) {
    const korch_candidate_set *set = o->set;
    const korch_partition *part = &set->partitions[p];
    *n_chosen = 0;
    korch_nodemask done = 0;
    for (int i = 0; i < part->n_nodes; i++) {
        if ((done >> i) & 1u) continue;
        korch_nodemask group = (korch_nodemask)1 << i;
        if (strategy == KORCH_STRATEGY_GREEDY) {
            int g = o->group_of[part->nodes[i]];
            for (int j = i + 1; j < part->n_nodes; j++)
                if (o->group_of[part->nodes[j]] == g) group |= (korch_nodemask)1 << j;
        }
        int ci = korch_candidate_find(set, p, group);
        if (ci < 0 || !usable(&set->candidates[ci])) {
            /* the group did not survive profiling: its primitives one by one */
            for (korch_nodemask m = group; m; m &= m - 1) {
                int s = korch_candidate_find(set, p, m & (~m + 1));
                if (s < 0 || !usable(&set->candidates[s]))
                    return korch_error(KORCH_ERR_INTERNAL, "orchestrate: primitive %d has no usable kernel",
                                       part->nodes[__builtin_ctzll(m)]);
                chosen[(*n_chosen)++] = s;
            }
        } else {
            chosen[(*n_chosen)++] = ci;
        }
        done |= group;
    }
    return KORCH_OK;
}

/* Puts a partition's chosen candidates into a schedulable order. */
static korch_status order_choice(korch_orchestrator *o, int p, int *chosen, int n, bool *available) {
    const korch_candidate_set *set = o->set;
    const korch_partition *part = &set->partitions[p];
    korch_sched_kernel *k = malloc(((size_t)n + 1) * sizeof *k);
    int *idx = malloc(((size_t)n + 1) * sizeof *idx), *order = malloc(((size_t)n + 1) * sizeof *order);
    if (!k || !idx || !order) {
        free(k);
        free(idx);
        free(order);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
    }
    for (int i = 0; i < n; i++) {
        const korch_candidate *c = &set->candidates[chosen[i]];
        k[i] = (korch_sched_kernel){c->n_inputs, c->inputs, c->n_outputs, c->outputs};
        idx[i] = i;
    }
    for (int i = 0; i < part->n_nodes; i++) {
        const korch_pnode *node = &set->pg->nodes[part->nodes[i]];
        for (int j = 0; j < node->n_outputs; j++)
            if (node->outputs[j] >= 0) available[node->outputs[j]] = false;
    }
    int ran = korch_schedule_simulate(k, idx, n, available, order);
    for (int i = 0; i < part->n_nodes; i++) {
        const korch_pnode *node = &set->pg->nodes[part->nodes[i]];
        for (int j = 0; j < node->n_outputs; j++)
            if (node->outputs[j] >= 0) available[node->outputs[j]] = true;
    }
    korch_status st = KORCH_OK;
    if (ran != n) {
        st = korch_error(KORCH_ERR_INTERNAL, "orchestrate: partition %d: %d of %d kernels cannot be scheduled", p,
                         n - ran, n);
    } else {
        for (int i = 0; i < n; i++) idx[i] = chosen[order[i]];
        memcpy(chosen, idx, (size_t)n * sizeof *chosen);
    }
    free(k);
    free(idx);
    free(order);
    return st;
}

static void add_stats(korch_blp_stats *sum, const korch_blp_stats *s) {
    sum->variables += s->variables;
    sum->rows += s->rows;
    sum->dominated += s->dominated;
    sum->rounds += s->rounds;
    sum->cuts += s->cuts;
    sum->pair_cuts += s->pair_cuts;
    sum->objective += s->objective;
    sum->bound += s->bound;
    sum->seconds += s->seconds;
    sum->optimal &= s->optimal;
    sum->time_limit |= s->time_limit;
    sum->fell_back |= s->fell_back;
    sum->reused += s->reused;
}

static double choice_cost(const korch_candidate_set *set, const int *c, int n, double untuned_scale) {
    double sum = 0;
    for (int i = 0; i < n; i++) {
        const korch_candidate *k = &set->candidates[c[i]];
        sum += k->latency_ms * (k->untuned && !k->tune_tried ? untuned_scale : 1.0);
    }
    return sum;
}

/* Solves every dirty partition once. */
static korch_status solve_dirty(korch_orchestrator *o, double untuned_scale, bool *available, int *chosen, int *start,
                                int *n_solved) {
    korch_candidate_set *set = o->set;
    double t0 = korch_now_ms();
    int np = set->n_partitions, left_parts = 0;
    *n_solved = 0;
    for (int p = 0; p < np; p++) left_parts += o->dirty[p];
    for (int p = 0; p < np; p++) {
        if (!o->dirty[p]) continue;
        /* MIP start: the cheaper of greedy and the last choice (both schedulable) */
        int n_start = 0;
        if (rule_choice(o, p, KORCH_STRATEGY_GREEDY, start, &n_start) != KORCH_OK) n_start = 0;
        bool last_usable = o->solution[p] != NULL; /* verification may have rejected part of it */
        for (int i = 0; last_usable && i < o->n_solution[p]; i++) last_usable = usable(&set->candidates[o->solution[p][i]]);
        if (last_usable && (n_start == 0 || choice_cost(set, o->solution[p], o->n_solution[p], untuned_scale) <
                                                choice_cost(set, start, n_start, untuned_scale))) {
            memcpy(start, o->solution[p], (size_t)o->n_solution[p] * sizeof *start);
            n_start = o->n_solution[p];
        }
        double left = o->options.solve_time_limit_s - (korch_now_ms() - t0) / 1e3;
        double share = left / (double)left_parts--;
        if (share < 0.2) share = 0.2;
        int n_chosen = 0;
        KORCH_TRY(korch_solve_partition(set, p, start, n_start, share, untuned_scale, &o->options, available, o->memo,
                                        chosen, &n_chosen, &o->part_stats[p]));
        int *copy = malloc(((size_t)n_chosen + 1) * sizeof *copy);
        if (!copy) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
        memcpy(copy, chosen, (size_t)n_chosen * sizeof *copy);
        free(o->solution[p]);
        o->solution[p] = copy;
        o->n_solution[p] = n_chosen;
        o->dirty[p] = false;
        o->solve_seconds += o->part_stats[p].seconds;
        (*n_solved)++;
    }
    return KORCH_OK;
}

/* The optimal choice of every partition, its kernels tuned: solve, tune what
 * the choice (and, the first time, the greedy plan) uses, solve the changed
 * partitions again; until nothing new is chosen or the budget is spent. */
static korch_status optimal_choice(korch_orchestrator *o, bool *available, int *chosen, int *start) {
    korch_candidate_set *set = o->set;
    int np = set->n_partitions;
    double margin = o->options.tune_margin > 0 && o->options.tune_margin < 1 ? o->options.tune_margin : 1.0;
    o->tune.scaled = margin < 1.0;
    int *list = malloc(((size_t)set->n_candidates + (size_t)np * KORCH_PARTITION_MAX_NODES + 1) * sizeof *list);
    if (!list) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
    korch_status st = KORCH_OK;
    for (int round = 0; st == KORCH_OK; round++) {
        int n_solved = 0, n_list = 0;
        double t0 = korch_now_ms();
        st = solve_dirty(o, margin, available, chosen, start, &n_solved);
        for (int p = 0; p < np && st == KORCH_OK; p++) {
            memcpy(list + n_list, o->solution[p], (size_t)o->n_solution[p] * sizeof *list);
            n_list += o->n_solution[p];
            int n_start = 0;
            if (round == 0 && o->options.tune_greedy && rule_choice(o, p, KORCH_STRATEGY_GREEDY, start, &n_start) == KORCH_OK) {
                memcpy(list + n_list, start, (size_t)n_start * sizeof *list);
                n_list += n_start;
            }
        }
        int submitted = 0;
        if (st == KORCH_OK)
            st = korch_tune_candidates(set, &o->oracle, &o->options, &o->tune, list, n_list, o->dirty, &submitted);
        if (st != KORCH_OK || submitted == 0) break;
        o->tune_rounds++;
        int changed = 0;
        for (int p = 0; p < np; p++) changed += o->dirty[p];
        if (o->options.log)
            fprintf(o->options.log,
                    "tuning round %d: %d partitions solved, %d kernels tuned (%.1f s); latencies changed in %d "
                    "partitions\n",
                    round + 1, n_solved, submitted, (korch_now_ms() - t0) / 1e3, changed);
    }
    /* a search with a margin ends optimal for the measured latencies too
     * (everything chosen is tuned); stopped by the budget, it is not: solve
     * again with the measured ones */
    if (st == KORCH_OK && margin < 1.0 && o->tune.out_of_budget) {
        for (int p = 0; p < np; p++) o->dirty[p] = true;
        int n_solved;
        st = solve_dirty(o, 1.0, available, chosen, start, &n_solved);
    }
    o->tune.scaled = false;
    free(list);
    return st;
}

/* Checks the kernels of the current choice (every partition); wrong ones
 * are rejected and their partitions marked dirty (verify_choice.c). */
static korch_status verify_choice(korch_orchestrator *o, korch_strategy strategy, int *chosen, int *n_wrong) {
    korch_candidate_set *set = o->set;
    *n_wrong = 0;
    if (!o->options.verifier.check) return KORCH_OK;
    int n_all = 0;
    for (int p = 0; p < set->n_partitions; p++) {
        if (strategy == KORCH_STRATEGY_OPTIMAL) {
            memcpy(chosen + n_all, o->solution[p], (size_t)o->n_solution[p] * sizeof *chosen);
            n_all += o->n_solution[p];
        } else {
            int n = 0;
            KORCH_TRY(rule_choice(o, p, strategy, chosen + n_all, &n));
            n_all += n;
        }
    }
    return korch_verify_chosen(set, &o->oracle, &o->options.verifier, chosen, n_all, o->dirty, &o->vlog, n_wrong);
}

/* The none or greedy choice, its kernels tuned. */
static korch_status rule_tune(korch_orchestrator *o, korch_strategy strategy, int *chosen) {
    korch_candidate_set *set = o->set;
    int n_all = 0;
    for (int p = 0; p < set->n_partitions; p++) {
        int n = 0;
        KORCH_TRY(rule_choice(o, p, strategy, chosen + n_all, &n));
        n_all += n;
    }
    int submitted;
    return korch_tune_candidates(set, &o->oracle, &o->options, &o->tune, chosen, n_all, o->dirty, &submitted);
}

static void report_tuning(korch_orchestrator *o, const korch_plan *plan) {
    if (!o->options.log) return;
    if (o->options.estimated) {
        fprintf(o->options.log, "tuning: none (latencies are estimates; the plan's kernels use their default "
                                "schedules)\n");
        return;
    }
    const korch_tune_state *t = &o->tune;
    int untuned = 0;
    double untuned_ms = 0;
    for (int k = 0; k < plan->n_kernels; k++) {
        const korch_plan_kernel *pk = &plan->kernels[k];
        int p = o->set->partition_of[pk->nodes[0]];
        korch_nodemask mask = 0;
        for (int i = 0; i < pk->n_nodes; i++) mask |= (korch_nodemask)1 << o->set->local_of[pk->nodes[i]];
        int ci = korch_candidate_find(o->set, p, mask);
        if (ci >= 0 && o->set->candidates[ci].untuned) {
            untuned++;
            untuned_ms += pk->latency_ms;
        }
    }
    fprintf(o->options.log,
            "tuning: %ld kernels tuned in %d rounds (%.1f s; their default schedules summed to %.4f ms, tuned to "
            "%.4f ms)%s\n",
            t->tuned, o->tune_rounds, t->seconds, t->default_ms, t->tuned_ms,
            t->out_of_budget ? "; the budget ran out" : "");
    if (untuned > 0)
        fprintf(o->options.log,
                "tuning: %d of the plan's %d kernels keep their default schedule (%.4f ms of the predicted %.4f ms)\n",
                untuned, plan->n_kernels, untuned_ms, plan->predicted_ms);
    else
        fprintf(o->options.log, "tuning: every kernel of the plan is tuned\n");
}

korch_status korch_orchestrator_solve(korch_orchestrator *o, korch_strategy strategy, korch_plan **out) {
    *out = NULL;
    if ((unsigned)strategy >= KORCH_STRATEGY_COUNT || strategy > o->most)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "orchestrate: strategy %s was not prepared for (created for %s)",
                           korch_strategy_name(strategy), korch_strategy_name(o->most));
    if (!o->solution) return korch_error(KORCH_ERR_INVALID_ARGUMENT, "orchestrate: solve before profile");
    korch_candidate_set *set = o->set;
    const korch_pgraph *pg = o->pg;
    korch_plan *plan = korch_plan_new();
    bool *available = calloc((size_t)pg->n_values + 1, sizeof *available);
    int *chosen = malloc(((size_t)set->n_candidates + (size_t)set->n_partitions * KORCH_PARTITION_MAX_NODES + 1) *
                         sizeof *chosen);
    int *start = malloc((KORCH_PARTITION_MAX_NODES + 1) * sizeof *start);
    korch_status st = plan && available && chosen && start
                          ? KORCH_OK
                          : korch_error(KORCH_ERR_OUT_OF_MEMORY, "orchestrate: out of memory");
    for (int v = 0; available && v < pg->n_values; v++) available[v] = true;
    for (int round = 0; st == KORCH_OK; round++) {
        if (strategy == KORCH_STRATEGY_OPTIMAL) st = optimal_choice(o, available, chosen, start);
        else st = rule_tune(o, strategy, chosen);
        int n_wrong = 0;
        if (st == KORCH_OK) st = verify_choice(o, strategy, chosen, &n_wrong);
        if (st != KORCH_OK || n_wrong == 0) break;
        o->vlog.rounds++;
        if (o->options.log)
            fprintf(o->options.log, "verification: %d chosen kernel%s from the interpreter; choosing again\n",
                    n_wrong, n_wrong == 1 ? " differs" : "s differ");
        if (round + 1 >= o->options.max_verify_rounds)
            st = korch_error(KORCH_ERR_RUNTIME,
                             "verification: still choosing wrong kernels after %d rounds (%d excluded so far)",
                             round + 1, o->vlog.n_excluded);
    }
    if (strategy == KORCH_STRATEGY_OPTIMAL) {
        memset(&o->blp, 0, sizeof o->blp);
        o->blp.optimal = true;
    }
    for (int p = 0; p < set->n_partitions && st == KORCH_OK; p++) {
        int n_chosen = 0;
        if (strategy != KORCH_STRATEGY_OPTIMAL) {
            st = rule_choice(o, p, strategy, chosen, &n_chosen);
            if (st == KORCH_OK) st = order_choice(o, p, chosen, n_chosen, available);
        } else {
            const korch_blp_stats *stats = &o->part_stats[p];
            n_chosen = o->n_solution[p];
            memcpy(chosen, o->solution[p], (size_t)n_chosen * sizeof *chosen);
            add_stats(&o->blp, stats);
            if (o->options.log)
                fprintf(o->options.log,
                        "  partition %3d: %5d vars (%d dominated) %5d rows, objective %.4f ms, bound %.4f ms, "
                        "gap %.2f%%, %.3f s, %d round%s, %d cuts, %d pair cuts%s%s%s\n",
                        p, stats->variables, stats->dominated, stats->rows, stats->objective, stats->bound,
                        100.0 * stats->gap,
                        stats->seconds, stats->rounds, stats->rounds == 1 ? "" : "s", stats->cuts, stats->pair_cuts,
                        stats->time_limit ? ", time limit" : "", stats->fell_back ? ", kept greedy" : "",
                        stats->reused ? ", the solution of an identical program" : "");
        }
        for (int i = 0; i < n_chosen && st == KORCH_OK; i++) {
            const korch_candidate *c = &set->candidates[chosen[i]];
            korch_plan_kernel *k = korch_plan_add_kernel(plan, pg, &set->uses, c->n_nodes, c->nodes);
            if (!k) {
                st = KORCH_ERR_OUT_OF_MEMORY;
                break;
            }
            k->backend = c->backend;
            k->latency_ms = c->latency_ms;
            k->verify_ratio = c->backend == KORCH_BACKEND_REF                 ? 0.0
                              : c->verdict == KORCH_VERDICT_VERIFIED ? c->verify_ratio
                                                                      : -1.0;
            snprintf(k->schedule, sizeof k->schedule, "%s", c->schedule);
            snprintf(k->impl, sizeof k->impl, "%s", c->impl);
            plan->predicted_ms += c->latency_ms;
        }
    }
    if (st == KORCH_OK && strategy == KORCH_STRATEGY_OPTIMAL) {
        korch_blp_stats *b = &o->blp;
        b->gap = b->objective > 0 ? (b->objective - b->bound) / b->objective : 0;
        b->seconds = o->solve_seconds;
        if (o->options.log)
            fprintf(o->options.log,
                    "binary program: %d variables (%d candidates dominated by their splits), %d rows, "
                    "objective %.4f ms, bound %.4f ms, gap %.3f%%, %.2f s, %d rounds, %d deadlock cuts, "
                    "%d pair cuts%s\n",
                    b->variables, b->dominated, b->rows, b->objective, b->bound, 100.0 * b->gap, b->seconds,
                    b->rounds, b->cuts, b->pair_cuts,
                    b->optimal      ? ", optimal"
                    : b->time_limit ? ", time limit hit"
                                    : "");
    }
    if (st == KORCH_OK) {
        snprintf(plan->strategy, sizeof plan->strategy, "%s", korch_strategy_name(strategy));
        plan->pgraph_hash = korch_pgraph_hash(pg);
        plan->pgraph_nodes = pg->n_nodes;
        st = korch_plan_describe_kernels(plan, pg);
    }
    if (st == KORCH_OK) st = korch_plan_validate(plan, pg);
    if (st == KORCH_OK) report_tuning(o, plan);
    free(available);
    free(chosen);
    free(start);
    if (st != KORCH_OK) {
        korch_plan_free(plan);
        return st;
    }
    *out = plan;
    return KORCH_OK;
}

/* Runs whole ONNX models with every linear primitive on the oneDNN backend
 * and everything else on the primitive interpreter, and compares.
 *
 *   dnnl_model_check [--layout nchw|nhwc|both] [--fused] [--quiet] [--stats-only] TARGET...
 *   dnnl_model_check --conformance DATA_DIR [...]
 *
 * A TARGET is an ONNX backend-test folder (model.onnx + test_data_set_0/
 * input_N.pb, output_N.pb: compared with the stored outputs, conformance
 * tolerance) or a model file M.onnx with inputs M.input.<name>.npy (compared
 * with the interpreter on the graph before the layout pass). --conformance
 * walks DATA_DIR/{node,pytorch-converted,pytorch-operator} for every test
 * whose name mentions conv, gemm, matmul, linear, addmm or mm.
 *
 * After the layout pass the rewritten graph is also interpreted alone and
 * compared. For each layout (fission alone, or fission + the channels-last pass) and
 * each oneDNN variant of each kernel (plain, blocked), the model runs once.
 * With --fused a kernel takes the longest run of following elementwise
 * primitives (and reshapes) that korch_dnnl_supports accepts (the orchestrator's largest
 * candidates), else the linear primitive alone. --stats-only runs nothing:
 * it prints what the layout pass did to each model (transposes and their
 * megabytes before and after). */
#define _GNU_SOURCE /* strcasestr */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/dnnl/dnnl_backend.h"
#include "fission/fission.h"
#include "ir/indexmap.h"
#include "frontend/frontend.h"
#include "frontend/onnx_load.h"
#include "io/npy.h"
#include "relayout/relayout.h"
#include "tensor_compare.h"

enum { MAX_T = 64, MAX_GROUP = 13 };

typedef struct run_stats {
    int kernels, fused_nodes, reference_impls;
    char impls[512];
} run_stats;

static bool verbose = true;
static bool stats_only = false;
static bool show_reasons = false; /* --reasons: why fused chains stop */ /* --stats-only: layout pass statistics, nothing run */

static void note_impl(run_stats *s, const char *impl) {
    const char *p = strncmp(impl, "dnnl ", 5) == 0 ? impl + 5 : impl;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(p, " "), p);
    if (strncmp(name, "ref", 3) == 0) s->reference_impls++;
    if (!strstr(s->impls, name) && strlen(s->impls) + strlen(name) + 2 < sizeof s->impls)
        snprintf(s->impls + strlen(s->impls), sizeof s->impls - strlen(s->impls), "%s%s", *s->impls ? "," : "", name);
}

/* ---- a kernel group: a linear node and (fused) its elementwise successors ---- */

typedef struct group {
    int n_nodes, nodes[MAX_GROUP];
    int n_inputs, inputs[2 * MAX_GROUP + 2];
    int n_outputs, outputs[MAX_GROUP];
} group;

static bool reads(const korch_pnode *n, int v) {
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] == v) return true;
    return false;
}

static bool in_group(const group *g, int node) {
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] == node) return true;
    return false;
}

/* Fills inputs (first use) and outputs (read outside or graph outputs). */
static void group_io(const korch_pgraph *pg, group *g) {
    g->n_inputs = g->n_outputs = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[g->nodes[i]];
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k], p = pg->values[v].producer;
            if (p >= 0 && in_group(g, p)) continue;
            bool seen = false;
            for (int j = 0; j < g->n_inputs; j++) seen |= g->inputs[j] == v;
            if (!seen) g->inputs[g->n_inputs++] = v;
        }
        int y = n->outputs[0];
        bool out = pg->values[y].graph_output >= 0;
        for (int c = 0; c < pg->n_nodes && !out; c++)
            if (!pg->nodes[c].dead && !in_group(g, c) && reads(&pg->nodes[c], y)) out = true;
        if (out) g->outputs[g->n_outputs++] = y;
    }
}

static korch_kernel_spec group_spec(const korch_pgraph *pg, const group *g) {
    return (korch_kernel_spec){.pg = pg, .n_nodes = g->n_nodes, .nodes = g->nodes, .n_inputs = g->n_inputs,
                               .inputs = g->inputs, .n_outputs = g->n_outputs, .outputs = g->outputs};
}

/* The largest supported prefix of the elementwise successors of `linear`
 * (in topological order `order`, from position `pos`). */
static void grow(const korch_pgraph *pg, const int *order, int count, int pos, const bool *done, bool fused, group *g) {
    g->n_nodes = 1;
    g->nodes[0] = order[pos];
    group_io(pg, g);
    if (!fused) return;
    group best = *g, trial = *g;
    for (int i = pos + 1; i < count && trial.n_nodes < MAX_GROUP; i++) {
        const korch_pnode *n = &pg->nodes[order[i]];
        bool reshape = n->kind == KORCH_PRIM_LAYOUT && korch_layout_as_reshape(pg, order[i]);
        if (n->kind != KORCH_PRIM_ELEMENTWISE && !reshape) continue;
        bool touches = false, available = true;
        for (int k = 0; k < n->n_inputs; k++) {
            int p = pg->values[n->inputs[k]].producer;
            if (p >= 0 && in_group(&trial, p)) touches = true;
            else if (p >= 0 && !done[p]) available = false;
        }
        if (!touches) continue;
        if (!available) break;
        trial.nodes[trial.n_nodes++] = order[i];
        group_io(pg, &trial);
        korch_kernel_spec spec = group_spec(pg, &trial);
        char reason[256];
        if (korch_dnnl_supports(&spec, reason, sizeof reason)) best = trial;
        else if (show_reasons && trial.n_outputs == 1) /* a complete chain oneDNN refuses */
            printf("  refused: %s\n", reason);
    }
    *g = best;
}

/* ---- hybrid execution ---------------------------------------------------------- */

static korch_status run_hybrid(const korch_pgraph *pg, const korch_tensor *inputs, bool fused, int variant,
                               korch_tensor *outputs, run_stats *stats) {
    int count = 0;
    int *order = malloc(((size_t)pg->n_nodes + 1) * sizeof *order);
    bool *done = calloc((size_t)pg->n_nodes + 1, sizeof *done);
    korch_tensor *vals = calloc((size_t)pg->n_values + 1, sizeof *vals);
    bool *owned = calloc((size_t)pg->n_values + 1, sizeof *owned);
    korch_status st = order && done && vals && owned ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == KORCH_OK) st = korch_pgraph_toposort(pg, order, &count);
    for (int v = 0; v < pg->n_values && st == KORCH_OK; v++) {
        const korch_pvalue *pv = &pg->values[v];
        if (pv->is_constant) vals[v] = pv->constant;
        else if (pv->graph_input >= 0) vals[v] = inputs[pv->graph_input];
    }
    for (int i = 0; i < count && st == KORCH_OK; i++) {
        int node = order[i];
        if (done[node]) continue;
        const korch_pnode *n = &pg->nodes[node];
        if (n->kind == KORCH_PRIM_LINEAR) {
            group g;
            grow(pg, order, count, i, done, fused, &g);
            korch_kernel_spec spec = group_spec(pg, &g);
            char variants[128], reason[256];
            if (!korch_dnnl_variants(&spec, 0, variants, sizeof variants, reason, sizeof reason)) {
                st = korch_error(KORCH_ERR_UNSUPPORTED, "linear node %d not supported by oneDNN: %s", node, reason);
                break;
            }
            char *save = NULL, *v = strtok_r(variants, ";", &save), *pick = v;
            for (int k = 0; k < variant && v; k++)
                if ((v = strtok_r(NULL, ";", &save)) != NULL) pick = v;
            korch_kernel *k = NULL;
            const char *sched = pick;
            st = korch_backend_build(KORCH_BACKEND_DNNL, &spec, &sched, 1, NULL, &k);
            if (st != KORCH_OK) break;
            void *in_ptrs[2 * MAX_GROUP + 2], *out_ptrs[1];
            for (int j = 0; j < g.n_inputs; j++) in_ptrs[j] = vals[g.inputs[j]].data;
            int y = g.outputs[0];
            st = korch_tensor_alloc(&vals[y], pg->values[y].dtype, &pg->values[y].shape);
            owned[y] = st == KORCH_OK;
            if (st == KORCH_OK) {
                out_ptrs[0] = vals[y].data;
                st = k->run(k, in_ptrs, out_ptrs);
            }
            note_impl(stats, k->impl);
            stats->kernels++;
            stats->fused_nodes += g.n_nodes - 1;
            korch_kernel_destroy(k);
            for (int j = 0; j < g.n_nodes; j++) done[g.nodes[j]] = true;
            continue;
        }
        korch_tensor *ins[KORCH_MAX_RANK], *outs[8];
        for (int k = 0; k < n->n_inputs; k++) ins[k] = &vals[n->inputs[k]];
        for (int k = 0; k < n->n_outputs && st == KORCH_OK; k++) {
            int y = n->outputs[k];
            outs[k] = &vals[y];
            if (y < 0) continue;
            st = korch_tensor_alloc(&vals[y], pg->values[y].dtype, &pg->values[y].shape);
            owned[y] = st == KORCH_OK;
        }
        if (st == KORCH_OK) st = korch_pgraph_run_node(pg, node, ins, outs);
        done[node] = true;
    }
    for (int i = 0; i < pg->n_outputs && st == KORCH_OK; i++) st = korch_tensor_clone(&vals[pg->outputs[i]], &outputs[i]);
    for (int v = 0; vals && v < pg->n_values; v++)
        if (owned[v]) korch_tensor_free(&vals[v]);
    free(order);
    free(done);
    free(vals);
    free(owned);
    return st;
}

/* ---- targets -------------------------------------------------------------------- */

typedef struct target {
    char name[512];
    korch_graph *g;
    int n_in;
    korch_tensor in[MAX_T];   /* bound to graph inputs, in order */
    int n_want;
    korch_tensor want[MAX_T]; /* expected outputs (backend tests) */
    bool have_want;
} target;

static void target_free(target *t) {
    for (int i = 0; i < t->n_in; i++) korch_tensor_free(&t->in[i]);
    for (int i = 0; i < t->n_want; i++) korch_tensor_free(&t->want[i]);
    korch_graph_free(t->g);
    memset(t, 0, sizeof *t);
}

static korch_status load_graph(const char *model, target *t) {
    KORCH_TRY(korch_onnx_load_file(model, &t->g));
    korch_input_shape shapes[MAX_T];
    for (int i = 0; i < t->n_in && i < t->g->n_inputs; i++)
        shapes[i] = (korch_input_shape){.name = t->g->values[t->g->inputs[i]].name, .shape = t->in[i].shape};
    KORCH_TRY(korch_graph_validate(t->g));
    return korch_graph_infer(t->g, shapes, t->n_in < t->g->n_inputs ? t->n_in : t->g->n_inputs);
}

/* A backend-test folder (first data set); inputs bound by position. */
static korch_status load_test_dir(const char *dir, target *t) {
    char path[4096];
    snprintf(t->name, sizeof t->name, "%s", dir);
    for (int k = 0; k < MAX_T; k++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
        if (access(path, F_OK) != 0) break;
        KORCH_TRY(korch_tensor_file_read(path, &t->in[t->n_in], NULL));
        t->n_in++;
    }
    for (int k = 0; k < MAX_T; k++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, k);
        if (access(path, F_OK) != 0) break;
        KORCH_TRY(korch_tensor_file_read(path, &t->want[t->n_want], NULL));
        t->n_want++;
    }
    t->have_want = true;
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    return load_graph(path, t);
}

/* M.onnx with M.input.<name>.npy per graph input. */
static korch_status load_model_file(const char *model, target *t) {
    snprintf(t->name, sizeof t->name, "%s", model);
    KORCH_TRY(korch_onnx_load_file(model, &t->g));
    char stem[4096], path[4200];
    snprintf(stem, sizeof stem, "%.*s", (int)(strlen(model) - 5), model);
    for (int i = 0; i < t->g->n_inputs && i < MAX_T; i++) {
        snprintf(path, sizeof path, "%s.input.%s.npy", stem, t->g->values[t->g->inputs[i]].name);
        KORCH_TRY(korch_npy_read(path, &t->in[i]));
        t->n_in++;
    }
    korch_graph_free(t->g);
    t->g = NULL;
    return load_graph(model, t);
}

/* |got - want| <= 1e-4 * (scale + |want|) for floats; exact otherwise. */
static bool close_enough(const korch_tensor *got, const korch_tensor *want, char *why, size_t size) {
    if (got->dtype != want->dtype || !korch_shape_equal(&got->shape, &want->shape)) {
        snprintf(why, size, "dtype or shape differs");
        return false;
    }
    if (got->dtype != KORCH_DTYPE_FLOAT32) return korch_tensor_compare(got, want, why, size);
    int64_t n = korch_tensor_numel(want), bad = 0, worst = -1;
    const float *g = got->data, *w = want->data;
    double scale = 1, worst_err = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(w[i]) && fabs(w[i]) > scale) scale = fabs(w[i]);
    for (int64_t i = 0; i < n; i++) {
        double err = fabs((double)g[i] - (double)w[i]);
        bool ok = isnan(w[i]) ? isnan(g[i]) : err <= 1e-4 * (scale + fabs(w[i]));
        if (!ok && (bad++ == 0 || err > worst_err)) {
            worst = i;
            worst_err = err;
        }
    }
    if (bad) snprintf(why, size, "%lld of %lld elements differ, worst %lld: %g vs %g", (long long)bad, (long long)n,
                      (long long)worst, (double)g[worst], (double)w[worst]);
    return bad == 0;
}

typedef struct totals {
    int targets, passed, failed, no_linear, runs, kernels, fused_nodes, reference_impls;
} totals;

/* Counts live primitives by kind and the transposes (and their bytes). */
static void census(const korch_pgraph *pg, int *prims, int *transposes, double *mbytes) {
    *prims = *transposes = 0;
    *mbytes = 0;
    for (int i = 0; i < pg->n_nodes; i++) {
        if (pg->nodes[i].dead) continue;
        (*prims)++;
        int64_t perm[KORCH_MAX_RANK];
        if (pg->nodes[i].kind == KORCH_PRIM_LAYOUT && korch_layout_as_transpose(pg, i, perm) &&
            !korch_layout_as_reshape(pg, i)) {
            (*transposes)++;
            *mbytes += (double)korch_shape_numel(&pg->values[pg->nodes[i].outputs[0]].shape) * 4 / 1e6;
        }
    }
}

static void layout_stats(target *t) {
    korch_pgraph *pg = NULL;
    korch_layout_stats ls;
    int p0, t0, p1, t1, convs = 0;
    double b0, b1;
    if (korch_fission(t->g, &pg, NULL) != KORCH_OK) {
        printf("FAIL %s: %s\n", t->name, korch_last_error());
        return;
    }
    census(pg, &p0, &t0, &b0);
    if (korch_layout_pass(pg, KORCH_LAYOUT_CHANNELS_LAST, &ls) != KORCH_OK) {
        printf("FAIL %s: %s\n", t->name, korch_last_error());
        korch_pgraph_free(pg);
        return;
    }
    census(pg, &p1, &t1, &b1);
    if (getenv("KORCH_LAYOUT_VERBOSE"))
        for (int i = 0; i < pg->n_nodes; i++) {
            int64_t perm[KORCH_MAX_RANK];
            if (pg->nodes[i].dead || pg->nodes[i].kind != KORCH_PRIM_LAYOUT || !korch_layout_as_transpose(pg, i, perm) ||
                korch_layout_as_reshape(pg, i))
                continue;
            int x = pg->nodes[i].inputs[0], y = pg->nodes[i].outputs[0], p = pg->values[x].producer;
            char sx[64], sy[64];
            printf("  transpose %s -> %s after %s, read by:", korch_shape_format(&pg->values[x].shape, sx, sizeof sx),
                   korch_shape_format(&pg->values[y].shape, sy, sizeof sy),
                   p < 0 ? "input" : korch_prim_kind_name(pg->nodes[p].kind));
            for (int c = 0; c < pg->n_nodes; c++)
                for (int k = 0; k < pg->nodes[c].n_inputs; k++)
                    if (!pg->nodes[c].dead && pg->nodes[c].inputs[k] == y) {
                        printf(" %s", korch_prim_kind_name(pg->nodes[c].kind));
                        if (pg->nodes[c].kind == KORCH_PRIM_ELEMENTWISE) printf(".%s", korch_ew_name(pg->nodes[c].u.ew.op));
                        if (pg->nodes[c].kind == KORCH_PRIM_LAYOUT) printf(".%s", korch_layout_tag_name(pg->nodes[c].u.layout.tag));
                        break;
                    }
            printf("\n");
        }
    for (int i = 0; i < pg->n_nodes; i++)
        convs += !pg->nodes[i].dead && pg->nodes[i].kind == KORCH_PRIM_LINEAR && pg->nodes[i].u.linear.channels_last;
    printf("%s: %d convs channels-last; primitives %d -> %d; transposes %d (%.2f MB) -> %d (%.2f MB); moved past "
           "%d elementwise, %d reduce, %d layout primitives; %d transpose pairs cancelled, %d chains collapsed to reshapes\n",
           t->name, convs, p0, p1, t0, b0, t1, b1, ls.sunk_elementwise, ls.sunk_reduce, ls.sunk_layout, ls.cancelled,
           ls.collapsed);
    korch_pgraph_free(pg);
}

static void check_target(target *t, int layouts, bool fused, totals *tot) {
    if (stats_only) {
        layout_stats(t);
        return;
    }
    bool ok = true, any_linear = false;
    char detail[1024] = "";
    run_stats stats = {0};
    korch_tensor reference[MAX_T];
    int n_out = t->g->n_outputs;
    bool have_reference = false;
    for (int layout = 0; layout < 2 && ok; layout++) {
        if (!(layouts & (1 << layout))) continue;
        korch_pgraph *pg = NULL;
        korch_status st = korch_fission(t->g, &pg, NULL);
        if (st == KORCH_OK && !t->have_want && !have_reference) {
            st = korch_pgraph_interpret(pg, t->in, reference);
            have_reference = st == KORCH_OK;
        }
        korch_layout_stats ls = {0};
        if (st == KORCH_OK && layout == 1) st = korch_layout_pass(pg, KORCH_LAYOUT_CHANNELS_LAST, &ls);
        if (st != KORCH_OK) {
            snprintf(detail, sizeof detail, "%s: %s", layout ? "fission + layout pass" : "fission", korch_last_error());
            ok = false;
            korch_pgraph_free(pg);
            break;
        }
        if (layout == 1) { /* the rewritten graph, interpreted, before any oneDNN kernel */
            korch_tensor interp[MAX_T];
            memset(interp, 0, sizeof interp);
            const korch_tensor *want = t->have_want ? t->want : reference;
            st = korch_pgraph_interpret(pg, t->in, interp);
            if (st != KORCH_OK) {
                snprintf(detail, sizeof detail, "interpreting after the layout pass: %s", korch_last_error());
                ok = false;
            }
            for (int k = 0; k < n_out && ok; k++) {
                char why[512];
                if (!close_enough(&interp[k], &want[k], why, sizeof why)) {
                    snprintf(detail, sizeof detail, "interpreted after the layout pass: output %d: %.400s", k, why);
                    ok = false;
                }
            }
            for (int k = 0; k < n_out; k++) korch_tensor_free(&interp[k]);
        }
        int linear = 0;
        for (int i = 0; i < pg->n_nodes; i++) linear += !pg->nodes[i].dead && pg->nodes[i].kind == KORCH_PRIM_LINEAR;
        any_linear |= linear > 0;
        const korch_tensor *want = t->have_want ? t->want : reference;
        for (int variant = 0; variant < 3 && ok && linear > 0; variant++) {
            korch_tensor got[MAX_T];
            memset(got, 0, sizeof got);
            run_stats rs = {0};
            st = run_hybrid(pg, t->in, fused, variant, got, &rs);
            tot->runs++;
            if (st != KORCH_OK) {
                snprintf(detail, sizeof detail, "%s variant %d: %s", layout ? "nhwc" : "nchw", variant, korch_last_error());
                ok = false;
            }
            for (int k = 0; k < n_out && ok; k++) {
                char why[512];
                if (!close_enough(&got[k], &want[k], why, sizeof why)) {
                    snprintf(detail, sizeof detail, "%s variant %d (%.200s): output %d: %.300s", layout ? "nhwc" : "nchw",
                             variant, rs.impls, k, why);
                    ok = false;
                }
            }
            for (int k = 0; k < n_out; k++) korch_tensor_free(&got[k]);
            stats.kernels += rs.kernels;
            stats.fused_nodes += rs.fused_nodes;
            stats.reference_impls += rs.reference_impls;
            note_impl(&stats, rs.impls);
            char *p = rs.impls;
            for (char *q; (q = strchr(p, ',')) != NULL; p = q + 1) {
                *q = '\0';
                note_impl(&stats, p);
            }
        }
        if (layout == 1 && verbose && ls.convs_rewritten)
            snprintf(detail + strlen(detail), sizeof detail - strlen(detail),
                     " [layout: %d convs, transposes %d -> %d, sunk %d ew / %d reduce / %d layout, %d cancelled]",
                     ls.convs_rewritten, ls.transposes_before, ls.transposes_after, ls.sunk_elementwise, ls.sunk_reduce,
                     ls.sunk_layout, ls.cancelled);
        korch_pgraph_free(pg);
    }
    if (have_reference)
        for (int k = 0; k < n_out; k++) korch_tensor_free(&reference[k]);
    tot->targets++;
    tot->kernels += stats.kernels;
    tot->fused_nodes += stats.fused_nodes;
    tot->reference_impls += stats.reference_impls;
    if (!any_linear && ok) {
        tot->no_linear++;
        if (verbose) printf("NOLINEAR %s (no linear primitive after fission)\n", t->name);
        return;
    }
    if (ok) tot->passed++;
    else tot->failed++;
    if (verbose || !ok)
        printf("%s %s: %d kernels, %d fused elementwise, impl %s%s%s\n", ok ? "PASS" : "FAIL", t->name, stats.kernels,
               stats.fused_nodes, stats.impls, *detail ? " " : "", detail);
}

static bool wanted_test(const char *name) {
    static const char *const keys[] = {"conv", "gemm", "matmul", "linear", "addmm", "_mm"};
    static const char *const not_linear[] = {"quantize", "integer", "qlinear", "gridsample", "resize", "einsum"};
    if (strncmp(name, "test_", 5) != 0) return false;
    for (size_t i = 0; i < sizeof not_linear / sizeof not_linear[0]; i++)
        if (strcasestr(name, not_linear[i])) return false;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcasestr(name, keys[i])) return true;
    return false;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* false when none of the test folders exists */
static bool walk_conformance(const char *data, int layouts, bool fused, totals *tot) {
    static const char *const subdirs[] = {"node", "pytorch-converted", "pytorch-operator"};
    bool found = false;
    for (size_t s = 0; s < 3; s++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", data, subdirs[s]);
        DIR *d = opendir(dir);
        if (!d) continue;
        found = true;
        char *names[2048];
        int n = 0;
        for (struct dirent *e; (e = readdir(d)) != NULL && n < 2048;)
            if (wanted_test(e->d_name)) names[n++] = strdup(e->d_name);
        closedir(d);
        qsort(names, (size_t)n, sizeof names[0], cmp_str);
        for (int i = 0; i < n; i++) {
            char path[4600];
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            target t = {0};
            korch_status st = load_test_dir(path, &t);
            if (st != KORCH_OK) {
                printf("SKIP %s: %s\n", path, korch_last_error());
            } else {
                check_target(&t, layouts, fused, tot);
            }
            target_free(&t);
            free(names[i]);
        }
    }
    return found;
}

int main(int argc, char **argv) {
    int layouts = 3;
    bool fused = false;
    totals tot = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--layout") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            layouts = strcmp(v, "nchw") == 0 ? 1 : strcmp(v, "nhwc") == 0 ? 2 : 3;
        } else if (strcmp(argv[i], "--fused") == 0) {
            fused = true;
        } else if (strcmp(argv[i], "--reasons") == 0) {
            show_reasons = true;
        } else if (strcmp(argv[i], "--stats-only") == 0) {
            stats_only = true;
        } else if (strcmp(argv[i], "--quiet") == 0) {
            verbose = false;
        } else if (strcmp(argv[i], "--conformance") == 0 && i + 1 < argc) {
            if (!walk_conformance(argv[i + 1], layouts, fused, &tot)) {
                /* exit 77: CTest reports the test as skipped, not passed */
                printf("no ONNX backend tests in %s (libonnx-testdata): skipped\n", argv[i + 1]);
                return 77;
            }
            i++;
        } else {
            target t = {0};
            size_t len = strlen(argv[i]);
            korch_status st = len > 5 && strcmp(argv[i] + len - 5, ".onnx") == 0 ? load_model_file(argv[i], &t)
                                                                                  : load_test_dir(argv[i], &t);
            if (st != KORCH_OK) {
                printf("FAIL %s: cannot load: %s\n", argv[i], korch_last_error());
                tot.failed++;
            } else {
                check_target(&t, layouts, fused, &tot);
            }
            target_free(&t);
        }
    }
    printf("%d targets: %d passed, %d failed, %d without a linear primitive; %d runs, %d oneDNN kernels (%d with a "
           "reference implementation), %d elementwise primitives fused\n",
           tot.targets, tot.passed, tot.failed, tot.no_linear, tot.runs, tot.kernels, tot.reference_impls,
           tot.fused_nodes);
    return tot.failed ? 1 : 0;
}

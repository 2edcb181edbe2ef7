/* The greedy strategy: rule-based fusion after TVM's FuseOps pass.
 *
 * Every primitive gets an operator pattern, as in TVM:
 *     elementwise (same shapes) < broadcast < injective (layout)
 *     < reduction < linear ("out-elementwise-fusable") < opaque
 * and every node its immediate post-dominator (the first node every path
 * from it to a graph output passes). A node fuses into its post-dominator,
 * together with every node on the paths in between, when the patterns allow:
 *   phase 1  a linear group absorbs an elementwise epilogue chain;
 *   phase 2  elementwise/broadcast nodes fuse forward into an
 *            elementwise, injective or reduction post-dominator;
 *   phase 3  injective (layout) chains fuse forward likewise;
 *   reductions never start a fusion, opaque nodes never fuse.
 * Fusing along post-dominator paths keeps groups convex and single-output,
 * so the greedy plan always schedules. Each group is still checked (convex,
 * one output, accepted by its backend, size) and split into single
 * primitives if it fails. */
#include <stdlib.h>
#include <string.h>

#include "orchestrate/orchestrate.h"

enum { PAT_ELEMWISE, PAT_BROADCAST, PAT_INJECTIVE, PAT_REDUCE, PAT_LINEAR, PAT_OPAQUE };

static int pattern_of(const korch_pgraph *pg, const korch_pnode *n) {
    switch (n->kind) {
    case KORCH_PRIM_ELEMENTWISE: {
        const korch_shape *out = &pg->values[n->outputs[0]].shape;
        for (int k = 0; k < n->n_inputs; k++)
            if (!korch_shape_equal(&pg->values[n->inputs[k]].shape, out)) return PAT_BROADCAST;
        return PAT_ELEMWISE;
    }
    case KORCH_PRIM_LAYOUT: return PAT_INJECTIVE;
    case KORCH_PRIM_REDUCE: return PAT_REDUCE;
    case KORCH_PRIM_LINEAR: return PAT_LINEAR;
    default: return PAT_OPAQUE;
    }
}

typedef struct greedy {
    const korch_pgraph *pg;
    const korch_pgraph_uses *uses;
    int n, sink;
    int *order, count, *pos;
    int *pattern, *ipdom, *depth;
    int *parent, *size, *gpat, *nlinear; /* union-find; group fields valid at roots */
    int *stamp, stamp_now;
    int *path, n_path;
} greedy;

static int find(greedy *g, int x) {
    while (g->parent[x] != x) {
        g->parent[x] = g->parent[g->parent[x]];
        x = g->parent[x];
    }
    return x;
}

static void unite(greedy *g, int a, int b) {
    a = find(g, a);
    b = find(g, b);
    if (a == b) return;
    if (g->size[a] < g->size[b]) {
        int t = a;
        a = b;
        b = t;
    }
    g->parent[b] = a;
    g->size[a] += g->size[b];
    g->gpat[a] = g->gpat[a] > g->gpat[b] ? g->gpat[a] : g->gpat[b];
    g->nlinear[a] += g->nlinear[b];
}

static int lca(const greedy *g, int a, int b) {
    while (a != b) {
        if (g->depth[a] > g->depth[b]) a = g->ipdom[a];
        else if (g->depth[b] > g->depth[a]) b = g->ipdom[b];
        else {
            a = g->ipdom[a];
            b = g->ipdom[b];
        }
    }
    return a;
}

static void post_dominators(greedy *g) {
    const korch_pgraph *pg = g->pg;
    g->ipdom[g->sink] = g->sink;
    g->depth[g->sink] = 0;
    for (int t = g->count - 1; t >= 0; t--) {
        int u = g->order[t], d = -1;
        const korch_pnode *n = &pg->nodes[u];
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            if (pg->values[v].graph_output >= 0) d = g->sink;
            for (int j = g->uses->consumer_start[v]; j < g->uses->consumer_start[v + 1]; j++) {
                int c = g->uses->consumers[j];
                d = d < 0 ? c : lca(g, d, c);
            }
        }
        g->ipdom[u] = d < 0 ? g->sink : d;
        g->depth[u] = g->depth[g->ipdom[u]] + 1;
    }
}

/* Pushes the unvisited consumers of node m (other than `stop`) onto the
 * g->path list, which doubles as a queue. */
static bool push_consumers(greedy *g, int m, int stop) {
    const korch_pnode *n = &g->pg->nodes[m];
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        if (v < 0) continue;
        if (g->pg->values[v].graph_output >= 0 && m != stop) return false; /* escapes to the sink */
        for (int j = g->uses->consumer_start[v]; j < g->uses->consumer_start[v + 1]; j++) {
            int c = g->uses->consumers[j];
            if (c == stop || g->stamp[c] == g->stamp_now) continue;
            g->stamp[c] = g->stamp_now;
            g->path[g->n_path++] = c;
        }
    }
    return true;
}

/* Collects the nodes strictly between u and its post-dominator d into
 * g->path. Returns false if the walk escapes past d (impossible for a true
 * post-dominator; checked anyway) or the path is longer than `limit`. */
static bool collect_path(greedy *g, int u, int d, int limit) {
    g->stamp_now++;
    g->n_path = 0;
    g->stamp[u] = g->stamp_now;
    if (!push_consumers(g, u, d)) return false;
    for (int head = 0; head < g->n_path; head++) {
        int m = g->path[head];
        if (g->pos[m] > g->pos[d] || g->n_path > limit || !push_consumers(g, m, d)) return false;
    }
    return true;
}

/* Tries to fuse u into its post-dominator under the given phase's rules. */
static void try_fuse(greedy *g, int u, int phase, int max_nodes) {
    int d = g->ipdom[u];
    if (d == g->sink) return;
    int gu = find(g, u), gd = find(g, d);
    if (gu == gd) return;
    int gp = g->gpat[gu], path_limit, sink_ok;
    if (phase == 0) {
        if (gp != PAT_LINEAR || g->nlinear[gd] > 0 || g->size[gd] != 1) return;
        path_limit = PAT_BROADCAST;
        sink_ok = g->pattern[d] <= PAT_BROADCAST;
    } else if (phase == 1) {
        if (gp > PAT_BROADCAST || g->nlinear[gd] > 0) return;
        path_limit = PAT_BROADCAST;
        sink_ok = g->pattern[d] <= PAT_INJECTIVE || g->pattern[d] == PAT_REDUCE;
    } else {
        if (gp != PAT_INJECTIVE || g->nlinear[gd] > 0) return;
        path_limit = PAT_INJECTIVE;
        sink_ok = g->pattern[d] <= PAT_INJECTIVE;
    }
    if (!sink_ok || !collect_path(g, u, d, max_nodes)) return;
    int total = g->size[gu] + g->size[gd], linear = g->nlinear[gu] + g->nlinear[gd];
    for (int i = 0; i < g->n_path; i++) {
        int m = g->path[i];
        if (g->pattern[m] > path_limit) return;
        int r = find(g, m);
        if (r == gu || r == gd) continue;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = find(g, g->path[j]) == r;
        if (seen) continue;
        if (g->nlinear[r] > 0) return;
        total += g->size[r];
        linear += g->nlinear[r];
    }
    if (total > max_nodes || linear > 1) return;
    for (int i = 0; i < g->n_path; i++) unite(g, u, g->path[i]);
    unite(g, u, d);
}

/* A group is usable when convex, single-output and accepted by its backend. */
static bool group_ok(greedy *g, const int *nodes, int n_nodes, bool *in_set, int *io, korch_supports_fn supports,
                     void *user, int force_backend) {
    const korch_pgraph *pg = g->pg;
    /* convexity: walk forward from the group through outside nodes; coming
     * back into the group means a path leaves and re-enters. Nodes after the
     * group's last node cannot lead back. */
    int max_pos = 0;
    for (int i = 0; i < n_nodes; i++) {
        in_set[nodes[i]] = true;
        if (g->pos[nodes[i]] > max_pos) max_pos = g->pos[nodes[i]];
    }
    g->stamp_now++;
    g->n_path = 0;
    bool convex = true;
    for (int i = -n_nodes; i < g->n_path && convex; i++) {
        int m = i < 0 ? nodes[i + n_nodes] : g->path[i];
        const korch_pnode *n = &pg->nodes[m];
        for (int k = 0; k < n->n_outputs && convex; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            for (int j = g->uses->consumer_start[v]; j < g->uses->consumer_start[v + 1] && convex; j++) {
                int c = g->uses->consumers[j];
                if (in_set[c]) {
                    convex = i < 0; /* from inside to inside is fine; from outside back in is not */
                    continue;
                }
                if (g->pos[c] >= max_pos || g->stamp[c] == g->stamp_now) continue;
                g->stamp[c] = g->stamp_now;
                g->path[g->n_path++] = c;
            }
        }
    }
    for (int i = 0; i < n_nodes; i++) in_set[nodes[i]] = false;
    if (!convex) return false;
    int n_in = 0, n_out = 0;
    korch_node_set_io(pg, g->uses, n_nodes, nodes, in_set, io, &n_in, io + 16 * n_nodes, &n_out);
    if (n_out != 1) return false;
    korch_kernel_spec spec = {.pg = pg,
                              .n_nodes = n_nodes,
                              .nodes = nodes,
                              .n_inputs = n_in,
                              .inputs = io,
                              .n_outputs = n_out,
                              .outputs = io + 16 * n_nodes};
    char reason[256];
    korch_backend_kind kind = korch_candidate_backend_for(pg, n_nodes, nodes, force_backend);
    return !supports || supports(user, kind, &spec, reason, sizeof reason);
}

korch_status korch_greedy_groups(const korch_pgraph *pg, const korch_pgraph_uses *uses, korch_supports_fn supports,
                                 void *supports_user, int max_nodes, int force_backend, int *group_of) {
    greedy g = {.pg = pg, .uses = uses, .n = pg->n_nodes, .sink = pg->n_nodes};
    size_t n1 = (size_t)pg->n_nodes + 1;
    korch_status st = KORCH_OK;
    g.order = malloc(n1 * sizeof *g.order);
    g.pos = calloc(n1, sizeof *g.pos);
    g.pattern = calloc(n1, sizeof *g.pattern);
    g.ipdom = calloc(n1, sizeof *g.ipdom);
    g.depth = calloc(n1, sizeof *g.depth);
    g.parent = malloc(n1 * sizeof *g.parent);
    g.size = malloc(n1 * sizeof *g.size);
    g.gpat = malloc(n1 * sizeof *g.gpat);
    g.nlinear = calloc(n1, sizeof *g.nlinear);
    g.stamp = calloc(n1, sizeof *g.stamp);
    g.path = malloc(n1 * sizeof *g.path);
    int *members = malloc(n1 * sizeof *members);
    int *io = malloc(32 * n1 * sizeof *io);
    bool *in_set = calloc(n1, sizeof *in_set);
    int *root_id = malloc(n1 * sizeof *root_id);
    if (!g.order || !g.pos || !g.pattern || !g.ipdom || !g.depth || !g.parent || !g.size || !g.gpat || !g.nlinear ||
        !g.stamp || !g.path || !members || !io || !in_set || !root_id) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "greedy: out of memory");
        goto done;
    }
    int all = 0;
    st = korch_pgraph_toposort(pg, g.order, &all);
    if (st != KORCH_OK) goto done;
    for (int t = 0; t < all; t++)
        if (uses->live[g.order[t]]) g.order[g.count++] = g.order[t];
    for (int i = 0; i < pg->n_nodes; i++) {
        group_of[i] = -1;
        g.parent[i] = i;
        g.size[i] = 1;
    }
    for (int t = 0; t < g.count; t++) {
        int u = g.order[t];
        g.pos[u] = t;
        g.pattern[u] = pattern_of(pg, &pg->nodes[u]);
        g.gpat[u] = g.pattern[u];
        g.nlinear[u] = g.pattern[u] == PAT_LINEAR;
    }
    post_dominators(&g);
    for (int phase = 0; phase < 3; phase++)
        for (int t = 0; t < g.count; t++) try_fuse(&g, g.order[t], phase, max_nodes);
    /* bucket the groups (in topological order of their first node), then
     * keep each group that passes the checks and split the others */
    int n_roots = 0;
    for (int i = 0; i < pg->n_nodes; i++) root_id[i] = -1;
    for (int t = 0; t < g.count; t++) {
        int r = find(&g, g.order[t]);
        if (root_id[r] < 0) root_id[r] = n_roots++;
    }
    int *start = calloc((size_t)n_roots + 2, sizeof *start);
    if (!start) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "greedy: out of memory");
        goto done;
    }
    for (int t = 0; t < g.count; t++) start[root_id[find(&g, g.order[t])] + 1]++;
    for (int r = 0; r < n_roots; r++) start[r + 1] += start[r];
    for (int t = 0; t < g.count; t++) members[start[root_id[find(&g, g.order[t])]]++] = g.order[t];
    for (int r = n_roots; r > 0; r--) start[r] = start[r - 1];
    start[0] = 0;
    int next_id = 0;
    for (int r = 0; r < n_roots; r++) {
        const int *nodes = members + start[r];
        int n_members = start[r + 1] - start[r];
        bool ok = n_members == 1 || group_ok(&g, nodes, n_members, in_set, io, supports, supports_user, force_backend);
        if (ok) {
            for (int i = 0; i < n_members; i++) group_of[nodes[i]] = next_id;
            next_id++;
        } else {
            for (int i = 0; i < n_members; i++) group_of[nodes[i]] = next_id++;
        }
    }
    free(start);
done:
    free(g.order);
    free(g.pos);
    free(g.pattern);
    free(g.ipdom);
    free(g.depth);
    free(g.parent);
    free(g.size);
    free(g.gpat);
    free(g.nlinear);
    free(g.stamp);
    free(g.path);
    free(members);
    free(io);
    free(in_set);
    free(root_id);
    return st;
}

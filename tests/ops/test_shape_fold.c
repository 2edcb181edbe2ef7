/* The shape arithmetic PyTorch exports around every view():
 *   Shape -> Gather -> Unsqueeze -> Concat -> Reshape
 * must fold away during inference (every node but Reshape dies and the
 * Reshape's shape becomes a constant), and the result must run. The graph is
 * built through the graph API, as the ONNX loader would build it. */
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ops/reference.h"
#include "test.h"

static int value(korch_graph *g, const char *name) {
    int v = korch_graph_intern_value(g, name);
    if (v < 0) abort();
    return v;
}

static void add_const_i64(korch_graph *g, const char *name, int rank, int64_t n, const int64_t *data) {
    korch_value *val = &g->values[value(g, name)];
    korch_shape s = {.rank = rank, .dims = {n}};
    if (korch_tensor_alloc(&val->constant, KORCH_DTYPE_INT64, &s) != KORCH_OK) abort();
    memcpy(val->constant.data, data, (size_t)korch_shape_numel(&s) * sizeof(int64_t));
    val->is_constant = true;
    val->dtype = KORCH_DTYPE_INT64;
    val->shape = s;
    val->has_shape = true;
}

/* inputs/outputs: comma-separated value names. One optional INT attribute. */
static int add_node(korch_graph *g, const char *op, const char *inputs, const char *outputs, const char *attr,
                    int64_t attr_value) {
    int ni = korch_graph_add_node(g);
    korch_node *n = &g->nodes[ni];
    char buf[256], *save = NULL;
    n->op_type = strdup(op);
    n->domain = strdup("");
    n->name = malloc(64);
    snprintf(n->name, 64, "%s_%d", op, ni);
    n->opset = 13;
    n->inputs = malloc(8 * sizeof(int));
    n->outputs = malloc(8 * sizeof(int));
    snprintf(buf, sizeof buf, "%s", inputs);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) n->inputs[n->n_inputs++] = value(g, t);
    snprintf(buf, sizeof buf, "%s", outputs);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int v = value(g, t);
        g->nodes[ni].outputs[g->nodes[ni].n_outputs++] = v;
        g->values[v].producer = ni;
    }
    n = &g->nodes[ni];
    if (attr) {
        n->attrs = calloc(1, sizeof *n->attrs);
        n->attrs[0] = (korch_attr){.name = strdup(attr), .type = KORCH_ATTR_INT, .i = attr_value};
        n->n_attrs = 1;
    }
    return ni;
}

int main(void) {
    korch_graph *g = NULL;
    CHECK_OK(korch_graph_create(&g));
    g->opsets = calloc(1, sizeof *g->opsets);
    g->opsets[0] = (korch_opset_import){.domain = strdup(""), .version = 13};
    g->n_opsets = 1;

    /* x: 2x3x4 float input; y = x.view(x.size(0), -1); z = y.t() */
    int x = value(g, "x");
    korch_value *xv = &g->values[x];
    xv->is_graph_input = true;
    xv->declared_dtype = KORCH_DTYPE_FLOAT32;
    xv->has_declared_shape = true;
    xv->declared_shape = (korch_shape){.rank = 3, .dims = {2, 3, 4}};
    g->inputs = malloc(sizeof(int));
    g->inputs[g->n_inputs++] = x;

    add_const_i64(g, "zero", 0, 1, (const int64_t[]){0});
    add_const_i64(g, "axes0", 1, 1, (const int64_t[]){0});
    add_const_i64(g, "minus1", 1, 1, (const int64_t[]){-1});
    add_node(g, "Shape", "x", "shape", NULL, 0);
    add_node(g, "Gather", "shape,zero", "batch", "axis", 0);
    add_node(g, "Unsqueeze", "batch,axes0", "batch1", NULL, 0);
    add_node(g, "Concat", "batch1,minus1", "target", "axis", 0);
    int reshape = add_node(g, "Reshape", "x,target", "y", NULL, 0);
    /* a Transpose after it: folding must stop at non-constant data */
    add_node(g, "Transpose", "y", "z", NULL, 0);
    int z = value(g, "z");
    g->values[z].is_graph_output = true;
    g->outputs = malloc(sizeof(int));
    g->outputs[g->n_outputs++] = z;

    CHECK_OK(korch_graph_validate(g));
    CHECK_OK(korch_graph_infer(g, NULL, 0));
    int live = 0;
    for (int i = 0; i < g->n_nodes; i++) live += !g->nodes[i].dead;
    CHECK_MSG(live == 2, "%d nodes survive folding, expected Reshape and Transpose", live);
    CHECK(!g->nodes[reshape].dead);
    const korch_value *target = &g->values[value(g, "target")];
    CHECK(target->is_constant && target->constant.dtype == KORCH_DTYPE_INT64 && target->shape.rank == 1 &&
          target->shape.dims[0] == 2);
    if (target->is_constant) {
        const int64_t *t = target->constant.data;
        CHECK(t[0] == 2 && t[1] == -1);
    }
    const korch_value *zv = &g->values[z];
    CHECK(zv->shape.rank == 2 && zv->shape.dims[0] == 12 && zv->shape.dims[1] == 2);

    float data[24];
    for (int i = 0; i < 24; i++) data[i] = (float)i;
    korch_tensor in = {.dtype = KORCH_DTYPE_FLOAT32, .shape = xv->shape, .data = data}, out = {0};
    CHECK_OK(korch_reference_run(g, &in, &out));
    /* z[i][j] = y[j][i] = x flattened at j*12 + i */
    bool ok = out.shape.rank == 2 && out.shape.dims[0] == 12;
    for (int i = 0; ok && i < 12; i++)
        for (int j = 0; j < 2; j++) ok = ok && ((float *)out.data)[i * 2 + j] == (float)(j * 12 + i);
    CHECK(ok);
    korch_tensor_free(&out);
    korch_graph_free(g);
    TEST_MAIN_END();
}

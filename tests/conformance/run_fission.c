/* The --fission path of the conformance runner: fission + clean-ups, then
 * the primitive interpreter, and the ONNX export reloaded through the korch
 * frontend and run by the reference executor. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "conformance.h"
#include "fission/fission.h"
#include "fission/pgraph_onnx.h"
#include "frontend/frontend.h"
#include "frontend/onnx_load.h"
#include "ops/reference.h"

int conformance_fission_mode = 0;

static korch_status run_exported(const korch_pgraph *pg, const korch_tensor *inputs, korch_tensor *out) {
    uint8_t *data = NULL;
    size_t size = 0;
    KORCH_TRY(korch_pgraph_export_onnx_buffer(pg, &data, &size));
    korch_graph *e = NULL;
    korch_status st = korch_onnx_load_buffer(data, size, NULL, &e);
    free(data);
    if (st == KORCH_OK) st = korch_graph_validate(e);
    if (st == KORCH_OK) st = korch_graph_infer(e, NULL, 0);
    if (st == KORCH_OK) st = korch_reference_run(e, inputs, out);
    if (st != KORCH_OK) st = korch_error_prefix(st, "exported ONNX model");
    korch_graph_free(e);
    return st;
}

int conformance_fission_run(const korch_graph *g, const korch_tensor *inputs, korch_tensor *interpreted,
                            korch_tensor *exported) {
    korch_pgraph *pg = NULL;
    korch_status st = korch_fission(g, &pg, NULL);
    /* KORCH_CONFORMANCE_OPAQUE=1 lists the operators fission kept whole */
    if (st == KORCH_OK && getenv("KORCH_CONFORMANCE_OPAQUE"))
        for (int i = 0; i < pg->n_nodes; i++)
            if (!pg->nodes[i].dead && pg->nodes[i].kind == KORCH_PRIM_OPAQUE)
                fprintf(stderr, "opaque: %s: %s\n", g->nodes[pg->nodes[i].source_node].op_type,
                        pg->nodes[i].u.opaque.reason ? pg->nodes[i].u.opaque.reason : "?");
    if (st == KORCH_OK) st = korch_pgraph_interpret(pg, inputs, interpreted);
    if (st == KORCH_OK) {
        st = run_exported(pg, inputs, exported);
        if (st != KORCH_OK)
            for (int k = 0; k < g->n_outputs; k++) korch_tensor_free(&interpreted[k]);
    }
    korch_pgraph_free(pg);
    return st;
}

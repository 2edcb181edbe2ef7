/* Prints the C source korch's generator writes for one row kernel under one
 * schedule (bench/kernels/schedules.sh times several side by side).
 *
 *   sched_source softmax|log-softmax ROWS COLS SCHEDULE
 *
 * The kernel is the whole graph fused: over the last axis of a [ROWS, COLS]
 * float32 input, softmax exp(x - max) / sum, or log-softmax x - max -
 * log(sum). The schedule is the text plans carry (docs/codegen.md,
 * "Schedules"); streaming stores apply from 32 MiB of output, korch's
 * threshold on a machine with a 32 MiB last-level cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cgen/cgen_backend.h"
#include "ir/pgraph.h"

static int ew(korch_pgraph *pg, korch_ew_op op, int a, int b) {
    int in[2] = {a, b};
    return korch_pgraph_elementwise(pg, op, b < 0 ? 1 : 2, in, 0, 0, KORCH_DTYPE_UNDEFINED);
}

int main(int argc, char **argv) {
    if (argc != 5 || (strcmp(argv[1], "softmax") != 0 && strcmp(argv[1], "log-softmax") != 0)) {
        fprintf(stderr, "usage: sched_source softmax|log-softmax ROWS COLS SCHEDULE\n");
        return 2;
    }
    char *end1, *end2;
    long long rows = strtoll(argv[2], &end1, 10), cols = strtoll(argv[3], &end2, 10);
    if (*end1 || *end2 || rows < 1 || cols < 1 || rows > (1 << 24) || cols > (1 << 24)) {
        fprintf(stderr, "sched_source: ROWS and COLS must be integers in 1..16777216\n");
        return 2;
    }
    korch_pgraph *pg = NULL;
    if (korch_pgraph_create(NULL, &pg) != KORCH_OK) {
        fprintf(stderr, "sched_source: %s\n", korch_last_error());
        return 1;
    }
    int64_t d[2] = {rows, cols};
    korch_shape sh = korch_shape_make(2, d);
    int x = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &sh);
    int m = korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, x, 2u, true);
    int c = ew(pg, KORCH_EW_SUB, x, m);
    int e = ew(pg, KORCH_EW_EXP, c, -1);
    int s = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, e, 2u, true);
    int y = strcmp(argv[1], "softmax") == 0 ? ew(pg, KORCH_EW_DIV, e, s)
                                            : ew(pg, KORCH_EW_SUB, c, ew(pg, KORCH_EW_LOG, s, -1));
    korch_pgraph_add_output(pg, y);
    /* one kernel: every node, the graph's input and output */
    int nodes[16], count = 0;
    korch_pgraph_toposort(pg, nodes, &count);
    korch_kernel_spec spec = {.pg = pg, .n_nodes = count, .nodes = nodes, .n_inputs = 1, .inputs = &x,
                              .n_outputs = pg->n_outputs, .outputs = pg->outputs};
    char *src = NULL;
    korch_profile_options opt = {.cg_stream_min_bytes = (int64_t)32 << 20};
    korch_status st = korch_cgen_source(&spec, argv[4], &opt, &src);
    if (st != KORCH_OK) {
        fprintf(stderr, "sched_source: %s\n", korch_last_error());
        return 1;
    }
    fputs(src, stdout);
    free(src);
    korch_pgraph_free(pg);
    return 0;
}

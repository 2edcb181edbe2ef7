/* Control-flow operators: their subgraphs run in the reference executor
 * (control_*.c, docs/control-flow.md). */
#ifndef KORCH_OPS_OP_LIST_CONTROL_H
#define KORCH_OPS_OP_LIST_CONTROL_H

#define KORCH_OP_LIST_CONTROL(X) \
    X(If)                        \
    X(Loop)                      \
    X(Scan)

#endif

/* The backends, one line each: X(KIND, name). KORCH_BACKEND_<KIND> is the
 * enum value and korch_backend_ops_<name> the table the backend defines in
 * src/backend/<name>/. The order is the enum's, which plans and the
 * database do not store (they store the name), and the candidates'
 * preference when several backends implement a kernel is decided in
 * candidates/, not here. Adding a backend: docs/architecture.md. */
#ifndef KORCH_BACKEND_BACKEND_LIST_H
#define KORCH_BACKEND_BACKEND_LIST_H

#define KORCH_BACKEND_LIST(X) \
    X(CGEN, cgen)             \
    X(DNNL, dnnl)             \
    X(REF, ref)

#endif

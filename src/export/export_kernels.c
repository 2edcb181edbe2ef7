/* One plan kernel as C: the export table's row for the kernel's backend
 * (export_internal.h; one row per backend of backend/backend_list.h) writes
 * its function or parameters and its call in model_run_kernels. */
#include <stdio.h>

#include "export/export_internal.h"

/* Indexed by korch_backend_kind, in backend_list.h's order: a backend added
 * there without an ex_backend_<name> row fails to link. */
static const ex_backend *const export_table[KORCH_BACKEND_COUNT] = {
#define EX_BACKEND_ROW(KIND, name) [KORCH_BACKEND_##KIND] = &ex_backend_##name,
    KORCH_BACKEND_LIST(EX_BACKEND_ROW)
#undef EX_BACKEND_ROW
};

korch_status ex_emit_kernel(ex_ctx *x, int i) {
    const korch_plan_kernel *pk = &x->plan->kernels[i];
    char what[600];
    ex_describe_kernel(x, pk, what, sizeof what);
    if ((int)pk->backend < 0 || pk->backend >= KORCH_BACKEND_COUNT)
        return korch_error(KORCH_ERR_INVALID_MODEL, "kernel %d: backend %d is not one of korch's", i, (int)pk->backend);
    cg_buf_printf(&x->calls, "    { /* kernel %d: %s, %s */\n", i, korch_backend_name(pk->backend), what);
    korch_status st = export_table[pk->backend]->emit(x, i, what);
    cg_buf_printf(&x->calls, "    }\n");
    return st;
}

void ex_finish_backends(ex_ctx *x) {
    for (int b = 0; b < KORCH_BACKEND_COUNT; b++)
        if (export_table[b]->finish) export_table[b]->finish(x);
}

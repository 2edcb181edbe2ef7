/* cgen kernels in exported C: the function the cgen backend's own emitter
 * generates for the plan's schedule (cg_emit_kernel), so the exported code
 * is the code korch timed and runs, and its call in model_run_kernels. The
 * row ex_backend_cgen of the export table (export_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"

/* The cgen function name korch's backend uses: signature and schedule hash. */
static void cgen_name(const cg_kernel *k, const cg_schedule *s, char *buf, size_t size) {
    char text[64], h[33];
    cg_schedule_format(s, text, sizeof text);
    cg_hash_hex(text, strlen(text), h);
    snprintf(buf, size, "korch_k%.16s_%.8s", k->sig, h);
}

static bool have_function(const ex_ctx *x, const char *name) {
    for (int i = 0; i < x->n_fn; i++)
        if (strcmp(x->fn_names[i], name) == 0) return true;
    return false;
}

static void emit_pointer_array(ex_ctx *x, const char *decl, int n, const int *values, const int *order) {
    cg_buf_printf(&x->calls, "        void *%s[%d] = {", decl, n > 0 ? n : 1);
    for (int j = 0; j < n; j++) {
        char ptr[64];
        ex_value_ptr(x, values[order ? order[j] : j], ptr, sizeof ptr);
        cg_buf_printf(&x->calls, "%s%s", j ? ", " : "", ptr);
    }
    cg_buf_printf(&x->calls, "%s};\n", n > 0 ? "" : "0");
}

/* Emits kernel i through the cgen emitter with its plan schedule (or the
 * default one for REF kernels cgen can also implement). *handled false when
 * cgen cannot implement the spec. */
korch_status ex_emit_cgen(ex_ctx *x, int i, const char *schedule, bool *handled) {
    const korch_plan_kernel *pk = &x->plan->kernels[i];
    korch_kernel_spec spec = korch_plan_kernel_spec(x->pg, pk);
    cg_kernel k;
    char reason[256];
    *handled = false;
    if (cg_kernel_from_spec(&spec, &k, reason, sizeof reason) != KORCH_OK) {
        if (pk->backend == KORCH_BACKEND_CGEN)
            return korch_error(KORCH_ERR_INVALID_MODEL, "kernel %d (cgen): %s", i, reason);
        korch_error_clear();
        return KORCH_OK;
    }
    cg_schedule s = cg_schedule_default(&k);
    if (schedule && *schedule && !cg_schedule_parse(schedule, &s)) {
        cg_kernel_free(&k);
        return korch_error(KORCH_ERR_INVALID_MODEL, "kernel %d (cgen): bad schedule \"%.64s\"", i, schedule);
    }
    char name[48];
    cgen_name(&k, &s, name, sizeof name);
    korch_status st = KORCH_OK;
    if (!have_function(x, name)) {
        cg_buf fn = {0};
        st = cg_emit_kernel(&k, &s, name, &fn, reason, sizeof reason);
        if (st == KORCH_OK) {
            cg_buf_append(&x->functions, fn.data, fn.len);
            char(*grown)[48] = realloc(x->fn_names, ((size_t)x->n_fn + 1) * sizeof *grown);
            if (!grown) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "export: out of memory");
            else {
                x->fn_names = grown;
                snprintf(x->fn_names[x->n_fn++], sizeof x->fn_names[0], "%s", name);
            }
        } else if (pk->backend != KORCH_BACKEND_CGEN) {
            /* a REF kernel the generator refuses: the reference emitters try */
            korch_error_clear();
            cg_buf_free(&fn);
            cg_kernel_free(&k);
            return KORCH_OK;
        } else {
            st = korch_error_prefix(st, "kernel %d", i);
        }
        cg_buf_free(&fn);
    }
    if (st == KORCH_OK) {
        x->cg_prelude = true;
        /* canonical input order: slot -> position in the plan's input list */
        emit_pointer_array(x, "in_", k.n_inputs, pk->inputs, k.input_spec);
        emit_pointer_array(x, "out_", pk->n_outputs, pk->outputs, NULL);
        cg_buf_printf(&x->calls,
                      "        if (%s(in_, out_, nt)) return model_kernel_fail(%d, MODEL_ERR_OUT_OF_MEMORY, "
                      "\"out of scratch memory\");\n",
                      name, i);
        *handled = true;
    }
    cg_kernel_free(&k);
    return st;
}

static korch_status emit(ex_ctx *x, int i, const char *what) {
    (void)what;
    bool handled = false;
    korch_status st = ex_emit_cgen(x, i, x->plan->kernels[i].schedule, &handled);
    if (st == KORCH_OK) x->stats.cgen++;
    return st;
}

const ex_backend ex_backend_cgen = {.emit = emit, .finish = NULL};

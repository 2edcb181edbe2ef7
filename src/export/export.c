/* The export driver: memory plan, weights layout, kernels, files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "export/export_internal.h"

#define WEIGHT_ALIGNMENT 64

/* Every constant a kernel reads, and every constant graph output, gets a
 * 64-byte aligned slot of the weights blob (in value order). */
static korch_status layout_weights(ex_ctx *x) {
    const korch_pgraph *pg = x->pg;
    x->weight_offset = malloc(((size_t)pg->n_values + 1) * sizeof *x->weight_offset);
    bool *used = calloc((size_t)pg->n_values + 1, sizeof *used);
    if (!x->weight_offset || !used) {
        free(used);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "export: out of memory");
    }
    for (int i = 0; i < x->plan->n_kernels; i++)
        for (int j = 0; j < x->plan->kernels[i].n_inputs; j++) used[x->plan->kernels[i].inputs[j]] = true;
    for (int i = 0; i < pg->n_outputs; i++) used[pg->outputs[i]] = true;
    uint64_t top = 0;
    for (int v = 0; v < pg->n_values; v++) {
        x->weight_offset[v] = -1;
        if (!used[v] || !pg->values[v].is_constant || pg->values[v].graph_input >= 0) continue;
        x->weight_offset[v] = (int64_t)top;
        top += (korch_tensor_bytes(&pg->values[v].constant) + WEIGHT_ALIGNMENT - 1) & ~(uint64_t)(WEIGHT_ALIGNMENT - 1);
    }
    free(used);
    x->weights_bytes = top;
    /* the checksum of the blob as written (zero padding included) */
    uint8_t *blob = calloc((size_t)top + 1, 1);
    if (!blob) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "export: cannot allocate %llu bytes", (unsigned long long)top);
    for (int v = 0; v < pg->n_values; v++)
        if (x->weight_offset[v] >= 0 && korch_tensor_bytes(&pg->values[v].constant))
            memcpy(blob + x->weight_offset[v], pg->values[v].constant.data, korch_tensor_bytes(&pg->values[v].constant));
    x->weights_checksum = ex_checksum(blob, top);
    free(blob);
    /* the id ties model.c to its weights file: weights, graph and plan */
    uint64_t mix[4] = {x->weights_checksum, top, korch_pgraph_hash(pg), (uint64_t)x->plan->n_kernels};
    x->model_id = ex_checksum((const uint8_t *)mix, sizeof mix);
    return KORCH_OK;
}

static korch_status make_dir(const char *dir) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return korch_error(KORCH_ERR_IO, "cannot create export directory \"%s\": %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return korch_error(KORCH_ERR_IO, "export target \"%s\" is not a directory", dir);
    return KORCH_OK;
}

static void ctx_free(ex_ctx *x) {
    korch_memory_plan_free(&x->mp);
    free(x->weight_offset);
    free(x->fn_names);
    cg_buf_free(&x->functions);
    cg_buf_free(&x->decls);
    cg_buf_free(&x->calls);
    cg_buf_free(&x->handle_fields);
    cg_buf_free(&x->session_fields);
    cg_buf_free(&x->hooks);
    cg_buf_free(&x->dnnl_load);
    cg_buf_free(&x->dnnl_session);
}

korch_status korch_export_write(const korch_plan *plan, const korch_pgraph *pg, const char *dir,
                                const korch_export_options *options, korch_export_stats *stats) {
    if (!plan || !pg || !dir) return korch_error(KORCH_ERR_INVALID_ARGUMENT, "korch_export_write: NULL argument");
    static const char *const needed[] = {"runtime.inc", "model_api.inc", "model_run_api.inc", "model_h.inc",
                                         "model_run.inc", "Makefile.inc", "ref_common.inc", "ref_reduce.inc",
                                         "ref_layout.inc", "ref_matmul.inc", "ref_conv.inc", "ref_gather.inc",
                                         "dnnl_weights_pad.inc", "dnnl_int8_weights.inc", "dnnl_zp_correction.inc", "dnnl_runtime.inc", "buffer.inc"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
        if (!korch_export_support(needed[i]))
            return korch_error(KORCH_ERR_INTERNAL, "export: support source %s is not built in", needed[i]);
    KORCH_TRY(korch_plan_validate(plan, pg));
    ex_ctx x = {.plan = plan, .pg = pg};
    if (options) x.options = *options;
    korch_status st = korch_memory_plan_build(plan, pg, &x.mp);
    if (st == KORCH_OK) st = layout_weights(&x);
    for (int i = 0; i < plan->n_kernels && st == KORCH_OK; i++) st = ex_emit_kernel(&x, i);
    if (st == KORCH_OK) ex_finish_backends(&x);
    if (st == KORCH_OK && (x.functions.oom || x.decls.oom || x.calls.oom || x.hooks.oom || x.handle_fields.oom ||
                           x.session_fields.oom))
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "export: out of memory");
    if (st == KORCH_OK) st = make_dir(dir);
    char path[4200];
    if (st == KORCH_OK) {
        snprintf(path, sizeof path, "%s/model.weights", dir);
        st = ex_write_weights(&x, path);
    }
    if (st == KORCH_OK) {
        snprintf(path, sizeof path, "%s/model.h", dir);
        st = ex_write_model_h(&x, path);
    }
    if (st == KORCH_OK) {
        snprintf(path, sizeof path, "%s/model.c", dir);
        st = ex_write_model_c(&x, path);
    }
    if (st == KORCH_OK) st = ex_write_runner(&x, dir);
    if (st == KORCH_OK && stats) {
        x.stats.kernels = plan->n_kernels;
        x.stats.functions = x.n_fn;
        x.stats.weights_bytes = x.weights_bytes;
        x.stats.arena_bytes = x.mp.arena_bytes;
        x.stats.model_id = x.model_id;
        struct stat sb;
        snprintf(path, sizeof path, "%s/model.c", dir);
        x.stats.source_bytes = stat(path, &sb) == 0 ? (size_t)sb.st_size : 0;
        *stats = x.stats;
    }
    ctx_free(&x);
    return st;
}

korch_status korch_export_plan(const korch_plan *plan, const char *plan_path, const char *dir,
                               korch_export_stats *stats) {
    korch_plan_model m;
    KORCH_TRY(korch_plan_model_open(plan, plan_path, &m));
    korch_status st = korch_export_write(plan, m.pg, dir, NULL, stats);
    korch_plan_model_close(&m);
    return st;
}

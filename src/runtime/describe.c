/* The public C API's korch_model_describe: `korch info` as JSON, for
 * bindings (python/korch reads it into a dict). The numbers come from
 * korch_model_summary_load, the same computation the CLI prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/summary.h"

/* A JSON string. Model names are untrusted bytes: quotes, backslashes and
 * control characters are escaped; other bytes pass through (UTF-8 in any
 * model that follows the ONNX spec). */
static void put_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* inferred: the inferred shapes; else as declared, a symbolic dimension as
 * its name (a string, like ONNX Runtime's get_inputs) and an unknown one as
 * null; no declared shape at all is null */
static void put_values(FILE *f, const korch_graph *g, const int *ids, int n, bool inferred) {
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        const korch_value *v = &g->values[ids[i]];
        fprintf(f, "%s{\"name\": ", i ? ", " : "");
        put_string(f, v->name);
        fprintf(f, ", \"dtype\": %d, \"shape\": ", (int)(inferred ? v->dtype : v->declared_dtype));
        if (inferred) {
            fputc('[', f);
            for (int d = 0; d < v->shape.rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)v->shape.dims[d]);
            fputc(']', f);
        } else if (!v->has_declared_shape) {
            fputs("null", f);
        } else {
            fputc('[', f);
            for (int d = 0; d < v->declared_shape.rank; d++) {
                if (d) fputs(", ", f);
                if (v->declared_shape.dims[d] >= 0) fprintf(f, "%lld", (long long)v->declared_shape.dims[d]);
                else if (v->dim_params[d] && v->dim_params[d][0]) put_string(f, v->dim_params[d]);
                else fputs("null", f);
            }
            fputc(']', f);
        }
        fputc('}', f);
    }
    fputc(']', f);
}

static void put_count(FILE *f, const char *key, long long v) {
    if (v < 0) fprintf(f, ", \"%s\": null", key);
    else fprintf(f, ", \"%s\": %lld", key, v);
}

korch_status korch_model_describe(const char *path, const char *input_shapes, char **json) {
    if (!path || !json) return korch_error(KORCH_ERR_INVALID_ARGUMENT, "korch_model_describe: NULL argument");
    *json = NULL;
    korch_input_shape shapes[64];
    int n_shapes = 0;
    char *spec = input_shapes ? strdup(input_shapes) : NULL;
    if (input_shapes && !spec) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    korch_status st = spec ? korch_input_shapes_parse(spec, shapes, 64, &n_shapes) : KORCH_OK;
    korch_model_summary s;
    if (st == KORCH_OK) st = korch_model_summary_load(path, shapes, n_shapes, &s);
    free(spec);
    if (st != KORCH_OK) return st;
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) {
        korch_model_summary_free(&s);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    const korch_graph *g = s.graph;
    fputs("{\"path\": ", f);
    put_string(f, path);
    fputs(", \"graph\": ", f);
    put_string(f, g->name);
    fprintf(f, ", \"ir_version\": %lld, \"opset\": %lld, \"inputs\": ", (long long)g->ir_version,
            (long long)korch_graph_opset(g, ""));
    bool inferred = s.open_inputs == 0;
    put_values(f, g, g->inputs, g->n_inputs, inferred);
    fputs(", \"outputs\": ", f);
    put_values(f, g, g->outputs, g->n_outputs, inferred);
    fprintf(f, ", \"nodes_in_file\": %d", s.nodes_in_file);
    put_count(f, "nodes", s.nodes_live);
    fprintf(f, ", \"parameters\": %lld, \"parameter_bytes\": %lld", (long long)s.param_count,
            (long long)s.param_bytes);
    put_count(f, "flops", s.flops);
    fprintf(f, ", \"symbolic_inputs\": %d", s.open_inputs);
    fputs(", \"operators\": [", f);
    for (int j = 0; j < s.n_ops; j++) {
        fprintf(f, "%s{\"op\": ", j ? ", " : "");
        put_string(f, s.ops[j].op);
        fprintf(f, ", \"count\": %d", s.ops[j].count);
        put_count(f, "flops", s.ops[j].flops);
        fputc('}', f);
    }
    fputs("]}", f);
    bool failed = ferror(f) != 0;
    fclose(f);
    korch_model_summary_free(&s);
    if (failed || !buf) {
        free(buf);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    *json = buf;
    return KORCH_OK;
}

void korch_string_free(char *s) { free(s); }

#include "cli/cli_inputs.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

const char *korch_cli_input_names(const korch_graph *g, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < g->n_inputs; i++) {
        char name[128];
        korch_printable(g->values[g->inputs[i]].name, name, sizeof name);
        /* room for this name, its separator and a closing ", ..." */
        if (used + strlen(name) + 8 >= size) {
            snprintf(buf + used, size - used, "%s...", i ? ", " : "");
            break;
        }
        used += (size_t)snprintf(buf + used, size - used, "%s\"%s\"", i ? ", " : "", name);
    }
    return buf;
}

const char *korch_cli_declared_shape(const korch_value *v, char *buf, size_t size) {
    if (!v->has_declared_shape) return korch_shape_format(&v->shape, buf, size);
    const korch_shape *s = &v->declared_shape;
    if (s->rank == 0) {
        snprintf(buf, size, "scalar");
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < s->rank && used < size; d++) {
        char dim[48];
        if (s->dims[d] >= 0) snprintf(dim, sizeof dim, "%lld", (long long)s->dims[d]);
        else korch_printable(v->dim_params[d] ? v->dim_params[d] : "?", dim, sizeof dim);
        int n = snprintf(buf + used, size - used, "%s%s", d ? "x" : "", dim);
        if (n < 0) break;
        used += (size_t)n;
    }
    return buf;
}

int korch_cli_input_fits(const korch_value *v, const korch_shape *file_shape, const char *path) {
    if (!v->has_declared_shape) return 0; /* nothing to hold it against: inference decides */
    const korch_shape *want = &v->declared_shape;
    int bad_dim = -1;
    if (want->rank == file_shape->rank)
        for (int d = 0; d < want->rank && bad_dim < 0; d++)
            if (want->dims[d] >= 0 && want->dims[d] != file_shape->dims[d]) bad_dim = d;
    if (want->rank == file_shape->rank && bad_dim < 0) return 0;
    char pbuf[300], nbuf[160], got[160], exp[160];
    fprintf(stderr, "korch: error: input file \"%s\" holds a %s tensor; the model's input \"%s\" is %s",
            korch_printable(path, pbuf, sizeof pbuf), korch_shape_format(file_shape, got, sizeof got),
            korch_printable(v->name, nbuf, sizeof nbuf), korch_cli_declared_shape(v, exp, sizeof exp));
    if (bad_dim >= 0)
        fprintf(stderr, " (dimension %d: the model fixes it to %lld, the file has %lld)\n", bad_dim,
                (long long)want->dims[bad_dim], (long long)file_shape->dims[bad_dim]);
    else
        fprintf(stderr, " (rank %d, the file has rank %d)\n", want->rank, file_shape->rank);
    return 1;
}

void korch_cli_print_outputs(const korch_graph *g, const korch_tensor *outputs, bool quiet) {
    for (int i = 0; i < g->n_outputs; i++) {
        const korch_tensor *t = &outputs[i];
        char name[200], dims[160];
        printf("output \"%s\": %s %s", korch_printable(g->values[g->outputs[i]].name, name, sizeof name),
               korch_dtype_name(t->dtype), korch_shape_format(&t->shape, dims, sizeof dims));
        int64_t n = korch_tensor_numel(t);
        if (t->dtype == KORCH_DTYPE_FLOAT32 && t->data && n > 0) {
            const float *x = t->data;
            double lo = x[0], hi = x[0], sum = 0;
            for (int64_t e = 0; e < n; e++) {
                lo = x[e] < lo ? x[e] : lo;
                hi = x[e] > hi ? x[e] : hi;
                sum += x[e];
            }
            printf(", min %.6g, max %.6g, mean %.6g", lo, hi, sum / (double)n);
        }
        printf("\n");
    }
    fflush(stdout); /* the note after the lines it is about, also through a pipe */
    if (!quiet)
        fprintf(stderr, "korch: note: the outputs were not written; --output-dir DIR writes one .npy file per output\n");
}

/* A plan's guards: the graph inputs it was specialized for (korch optimize
 * --specialize) and the check every run makes that they hold exactly those
 * values (docs/control-flow.md, "Guarded specialization"). The check is a
 * memcmp of a few bytes per guarded input; a different value is an error,
 * never a silent wrong answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/plan.h"

int korch_plan_guard_count(const korch_plan *plan) {
    int n = 0;
    for (int i = 0; plan && i < plan->n_input_shapes; i++) n += plan->input_shapes[i].specialized != NULL;
    return n;
}

int korch_plan_guard_values(const korch_plan *plan, korch_input_shape *shapes, korch_input_value *values) {
    int n = 0;
    for (int i = 0; i < plan->n_input_shapes; i++) {
        const korch_plan_shape *s = &plan->input_shapes[i];
        shapes[i] = (korch_input_shape){.name = s->name, .shape = s->shape};
        if (s->specialized) values[n++] = (korch_input_value){.name = s->name, .value = s->specialized};
    }
    return n;
}

void korch_plan_shapes_free(korch_plan *plan) {
    for (int i = 0; i < plan->n_input_shapes; i++) {
        free(plan->input_shapes[i].name);
        if (plan->input_shapes[i].specialized) korch_tensor_free(plan->input_shapes[i].specialized);
        free(plan->input_shapes[i].specialized);
    }
    free(plan->input_shapes);
    plan->input_shapes = NULL;
    plan->n_input_shapes = 0;
}

korch_status korch_plan_infer_graph(const korch_plan *plan, korch_graph *g) {
    korch_input_shape *shapes = calloc((size_t)plan->n_input_shapes + 1, sizeof *shapes);
    korch_input_value *values = calloc((size_t)plan->n_input_shapes + 1, sizeof *values);
    korch_status st = shapes && values ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == KORCH_OK) {
        int n_values = korch_plan_guard_values(plan, shapes, values);
        st = korch_graph_infer_specialized(g, shapes, plan->n_input_shapes, values, n_values);
    }
    free(shapes);
    free(values);
    return st;
}

korch_status korch_plan_guard_check(const korch_plan *plan, const korch_tensor *inputs) {
    for (int i = 0; i < plan->n_input_shapes; i++) {
        const korch_plan_shape *s = &plan->input_shapes[i];
        const korch_tensor *want = s->specialized;
        if (!want) continue;
        const korch_tensor *got = &inputs[i];
        if (got->dtype == want->dtype && korch_shape_equal(&got->shape, &want->shape) && got->data &&
            memcmp(got->data, want->data, korch_tensor_bytes(want)) == 0)
            continue;
        char name[160], a[200], b[200], other[200];
        korch_printable(s->name, name, sizeof name);
        korch_tensor_values_format(want, b, sizeof b);
        bool comparable = got->dtype == want->dtype && korch_shape_equal(&got->shape, &want->shape) && got->data;
        if (comparable) korch_tensor_values_format(got, a, sizeof a);
        else snprintf(a, sizeof a, "a %s tensor", korch_dtype_name(got->dtype));
        /* a one-element value can be given on the command line as it is */
        if (comparable && korch_tensor_numel(got) == 1) snprintf(other, sizeof other, "%s", a);
        else snprintf(other, sizeof other, "FILE.npy");
        return korch_error(KORCH_ERR_INVALID_ARGUMENT,
                           "input \"%s\" is %s, but this plan was specialized for %s=%s and is only right for that "
                           "value; for this value make another plan with korch optimize MODEL --specialize %s=%s "
                           "(or one for every value, without --specialize)",
                           name, a, name, b, name, other);
    }
    return KORCH_OK;
}

/* A pointwise convolution of a channel concatenation with upsampled parts
 * (src/fission/rules_linear.c, pointwise_of_concat; docs/fission.md):
 * computed part by part, each convolution at its part's own resolution and
 * then resized, never the concatenation. Against the reference executor
 * (which runs the graph as written) through fh_check, for linear and
 * nearest Resizes of several coordinate modes, Upsample, a part that is not
 * resized, a bias; and the rewrite's shape: as many linear primitives as
 * parts, no concatenation left, exactly the multiply-adds of the parts
 * commuted. A part is not commuted under tf_crop_and_resize (its
 * extrapolated constant) or when the convolution is wider than it; where
 * no part commutes, for a 3x3 convolution or a concatenation on another
 * axis, the graph keeps one convolution of the concatenation. */
#include <stdio.h>

#include "fission_harness.h"
#include "ir/indexmap.h"

/* linear primitives, concatenations, and the multiply-adds of the linear
 * primitives of g's cleaned primitive graph (g kept) */
static void shape_of(korch_graph *g, int *linears, int *concats, double *macs) {
    *linears = *concats = 0;
    *macs = 0;
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_graph_validate(g));
    CHECK_OK(korch_graph_infer(g, NULL, 0));
    CHECK_OK(korch_fission(g, &pg, NULL));
    for (int i = 0; pg && i < pg->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[i];
        if (n->dead) continue;
        if (n->kind == KORCH_PRIM_LAYOUT && n->u.layout.tag == KORCH_LAYOUT_CONCAT) (*concats)++;
        if (n->kind != KORCH_PRIM_LINEAR) continue;
        (*linears)++;
        const korch_shape *y = &pg->values[n->outputs[0]].shape, *w = &pg->values[n->inputs[1]].shape;
        *macs += (double)korch_shape_numel(y) * (double)w->dims[1];
    }
    korch_pgraph_free(pg);
}

/* a [1,4,4,5] resized by scale_a, b [1,6,8,10] resized x2, c [1,5,16,20]
 * as is; concatenated on `axis`, convolved k x k to `cout` channels with a
 * bias */
static korch_graph *head(const char *mode, const char *coord, float scale_a, int axis, int64_t k, bool upsample_op,
                         int64_t cout) {
    korch_graph *g = fh_begin(upsample_op ? 9 : 13);
    int64_t a[4] = {1, 4, 4, 5}, b[4] = {1, 6, 8, 10}, c[4] = {1, 5, 16, 20};
    if (axis != 1) a[1] = b[1] = 5; /* concatenated on H: equal channels, H adds up */
    fh_input(g, "a", KORCH_DTYPE_FLOAT32, 4, a);
    fh_input(g, "b", KORCH_DTYPE_FLOAT32, 4, b);
    fh_input(g, "c", KORCH_DTYPE_FLOAT32, 4, c);
    int64_t four[1] = {4};
    float sa[4] = {1, 1, scale_a, scale_a}, sb[4] = {1, 1, 2, 2};
    fh_const_f32(g, "sa", 1, four, sa);
    fh_const_f32(g, "sb", 1, four, sb);
    float roi[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    int64_t eight[1] = {8};
    fh_const_f32(g, "roi", 1, eight, roi);
    int ra = fh_node(g, upsample_op ? "Upsample" : "Resize", upsample_op ? "a,sa" : "a,roi,sa", "ra");
    int rb = fh_node(g, upsample_op ? "Upsample" : "Resize", upsample_op ? "b,sb" : "b,roi,sb", "rb");
    fh_attr_string(g, ra, "mode", mode);
    fh_attr_string(g, rb, "mode", "linear");
    if (!upsample_op) {
        fh_attr_string(g, ra, "coordinate_transformation_mode", coord);
        fh_attr_string(g, rb, "coordinate_transformation_mode", "half_pixel");
        if (!strcmp(coord, "tf_crop_and_resize")) fh_attr_float(g, ra, "extrapolation_value", 3.0f);
    }
    int cat = fh_node(g, "Concat", "ra,rb,c", "x");
    fh_attr_int(g, cat, "axis", axis);
    int64_t cin = axis == 1 ? 15 : 5;
    int64_t wd[4] = {cout, cin, k, k}, bd[1] = {cout};
    fh_const_random(g, "w", 4, wd, -0.5, 0.5);
    fh_const_random(g, "bias", 1, bd, -0.5, 0.5);
    fh_node(g, "Conv", "x,w,bias", "y");
    fh_output(g, "y");
    return g;
}

static void case_(const char *mode, const char *coord, float scale_a, int axis, int64_t k, bool upsample_op,
                  int64_t cout, int rewritten_parts) {
    char label[160];
    snprintf(label, sizeof label, "%s %s a x%g, axis %d, conv %lldx%lld to %lld%s", mode, coord, (double)scale_a, axis,
             (long long)k, (long long)k, (long long)cout, upsample_op ? ", Upsample-9" : "");
    int linears, concats;
    double macs;
    korch_graph *g = head(mode, coord, scale_a, axis, k, upsample_op, cout);
    shape_of(g, &linears, &concats, &macs);
    korch_graph_free(g);
    double whole = 16.0 * 20 * (double)cout * 15 * (double)(k * k); /* one convolution of the concatenation */
    if (rewritten_parts)
        CHECK_MSG(linears == 3 && concats == 0 && macs < whole,
                  "%s: not computed part by part (%d linear primitives, %d concatenations, %.0f of %.0f multiply-adds)",
                  label, linears, concats, macs, whole);
    else
        CHECK_MSG(linears == 1 && concats == 1, "%s: rewritten where it must not be (%d linear, %d concatenations)",
                  label, linears, concats);
    /* the parts commuted: a (4 channels, 16x smaller) and b (6, 4x smaller),
     * each only if it is at least cout wide */
    double expect = 16.0 * 20 * (double)cout * 5;
    expect += rewritten_parts & 1 ? 4.0 * 5 * (double)cout * 4 : 16.0 * 20 * (double)cout * 4;
    expect += rewritten_parts & 2 ? 8.0 * 10 * (double)cout * 6 : 16.0 * 20 * (double)cout * 6;
    if (rewritten_parts) CHECK_MSG(macs == expect, "%s: %.0f multiply-adds, expected %.0f", label, macs, expect);
    /* a rtol for float32 sums in another order, and bilinear weights */
    fh_check(head(mode, coord, scale_a, axis, k, upsample_op, cout), &(fh_options){.rtol = 2e-5}, label);
}

int main(void) {
    /* rewritten_parts: bit 0 a commuted, bit 1 b commuted; 0: left alone */
    case_("linear", "half_pixel", 4, 1, 1, false, 3, 3);
    case_("linear", "align_corners", 4, 1, 1, false, 3, 3);
    case_("linear", "asymmetric", 4, 1, 1, false, 4, 3);
    case_("linear", "pytorch_half_pixel", 4, 1, 1, false, 3, 3);
    case_("nearest", "half_pixel", 4, 1, 1, false, 3, 3);
    case_("nearest", "asymmetric", 4, 1, 1, true, 3, 3);         /* Upsample-9 */
    case_("linear", "tf_crop_and_resize", 4, 1, 1, false, 3, 2); /* a's extrapolation does not commute */
    case_("linear", "half_pixel", 4, 1, 1, false, 5, 2);         /* 5 > a's 4 channels: a not commuted */
    case_("linear", "half_pixel", 4, 1, 1, false, 7, 0);         /* wider than every part */
    case_("linear", "half_pixel", 4, 1, 3, false, 3, 0);         /* 3x3: not pointwise */
    case_("linear", "half_pixel", 4, 2, 1, false, 3, 0);         /* concatenated on H */
    TEST_MAIN_END();
}

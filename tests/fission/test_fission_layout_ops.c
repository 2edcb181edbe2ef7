/* Fission of shape and layout operators (and Resize/Upsample) against the
 * reference kernels. Layouts move data without arithmetic, so they must
 * match exactly; linear Resize has the tolerance of docs/fission.md. */
#include "fission_harness.h"

static const fh_options exact = {.rtol = 0, .min_primitives = 0};

static void reshapes(void) {
    for (int t = 0; t < 8; t++) {
        korch_shape s = fh_random_shape(1, 4, 4);
        int64_t n = korch_shape_numel(&s);
        /* target: the same elements as a random factorisation with a -1 */
        int64_t target[4];
        int rank = 0;
        int64_t rest = n;
        for (int64_t f = 2; f <= rest && rank < 2; f++)
            if (rest % f == 0 && fh_uniform() < 0.5) target[rank++] = f, rest /= f;
        target[rank++] = -1;
        korch_graph *g = fh_begin(13);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        fh_const_i64(g, "shape", rank, target);
        fh_node(g, "Reshape", "x,shape", "y");
        fh_output(g, "y");
        fh_check(g, &exact, "Reshape");
    }
    int64_t d[4] = {2, 1, 3, 1};
    int n;
    korch_graph *g = fh_unary_graph(13, "Squeeze", 4, d, &n);
    fh_check(g, &exact, "Squeeze all");
    g = fh_begin(11);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 4, d);
    n = fh_node(g, "Unsqueeze", "x", "y");
    fh_attr_ints(g, n, "axes", 2, (int64_t[]){0, 5});
    fh_output(g, "y");
    fh_check(g, &exact, "Unsqueeze opset 11");
    g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 4, d);
    fh_const_i64(g, "axes", 1, (int64_t[]){-1});
    fh_node(g, "Squeeze", "x,axes", "y");
    fh_output(g, "y");
    fh_check(g, &exact, "Squeeze opset 13");
    for (int axis = -4; axis <= 4; axis++) {
        g = fh_unary_graph(13, "Flatten", 4, d, &n);
        fh_attr_int(g, n, "axis", axis);
        fh_check(g, &exact, "Flatten");
    }
}

static void transposes(void) {
    for (int t = 0; t < 10; t++) {
        korch_shape s = fh_random_shape(1, 5, 4);
        int64_t perm[8];
        for (int k = 0; k < s.rank; k++) perm[k] = k;
        for (int k = s.rank - 1; k > 0; k--) {
            int j = (int)fh_int(0, k);
            int64_t tmp = perm[k];
            perm[k] = perm[j];
            perm[j] = tmp;
        }
        int n;
        korch_graph *g = fh_unary_graph(13, "Transpose", s.rank, s.dims, &n);
        if (t) fh_attr_ints(g, n, "perm", s.rank, perm);
        fh_check(g, &exact, "Transpose");
    }
}

static void concat_split(void) {
    for (int t = 0; t < 8; t++) {
        korch_shape s = fh_random_shape(1, 4, 4);
        int axis = (int)fh_int(0, s.rank - 1);
        int inputs = t == 7 ? 11 : (int)fh_int(1, 4); /* more than 8 become a tree */
        korch_graph *g = fh_begin(13);
        char names[128] = "";
        for (int i = 0; i < inputs; i++) {
            char nm[16];
            snprintf(nm, sizeof nm, "x%d", i);
            korch_shape si = s;
            si.dims[axis] = fh_int(t == 3 && i == 1 ? 0 : 1, 3);
            fh_input(g, nm, KORCH_DTYPE_FLOAT32, si.rank, si.dims);
            strcat(names, i ? "," : "");
            strcat(names, nm);
        }
        int n = fh_node(g, "Concat", names, "y");
        fh_attr_int(g, n, "axis", t & 1 ? axis - s.rank : axis);
        fh_output(g, "y");
        fh_check(g, &exact, "Concat");
    }
    for (int t = 0; t < 6; t++) {
        korch_shape s = fh_random_shape(1, 4, 6);
        int axis = (int)fh_int(0, s.rank - 1);
        int64_t parts[3], left = s.dims[axis];
        int count = 0;
        while (left > 0 && count < 2) {
            parts[count] = fh_int(1, left);
            left -= parts[count++];
        }
        if (left > 0) parts[count++] = left;
        korch_graph *g = fh_begin(t & 1 ? 11 : 13);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        const char *outs[3] = {"a", "a,b", "a,b,c"};
        int n;
        if (t & 1) {
            n = fh_node(g, "Split", "x", outs[count - 1]);
            fh_attr_ints(g, n, "split", count, parts);
        } else {
            fh_const_i64(g, "split", count, parts);
            n = fh_node(g, "Split", "x,split", outs[count - 1]);
        }
        fh_attr_int(g, n, "axis", axis);
        fh_output(g, "a");
        if (count > 1) fh_output(g, "b");
        if (count > 2) fh_output(g, "c");
        fh_check(g, &exact, "Split");
    }
}

static void slices(void) {
    for (int t = 0; t < 16; t++) {
        korch_shape s = fh_random_shape(1, 4, 7);
        int64_t st[4], en[4], ax[4], sp[4];
        int count = 0;
        for (int k = 0; k < s.rank; k++) {
            if (fh_uniform() < 0.3) continue;
            ax[count] = fh_uniform() < 0.5 ? k : k - s.rank;
            sp[count] = fh_uniform() < 0.3 ? -fh_int(1, 2) : fh_int(1, 3);
            st[count] = fh_int(-s.dims[k] - 2, s.dims[k] + 2);
            en[count] = fh_uniform() < 0.2 ? (sp[count] > 0 ? INT64_MAX : INT64_MIN) : fh_int(-s.dims[k] - 2, s.dims[k] + 2);
            count++;
        }
        korch_graph *g = fh_begin(13);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        fh_const_i64(g, "starts", count, st);
        fh_const_i64(g, "ends", count, en);
        fh_const_i64(g, "axes", count, ax);
        fh_const_i64(g, "steps", count, sp);
        fh_node(g, "Slice", "x,starts,ends,axes,steps", "y");
        fh_output(g, "y");
        fh_check(g, &exact, "Slice");
    }
    int64_t d[2] = {5, 6};
    korch_graph *g = fh_begin(9);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 2, d);
    int n = fh_node(g, "Slice", "x", "y");
    fh_attr_ints(g, n, "starts", 2, (int64_t[]){1, -4});
    fh_attr_ints(g, n, "ends", 2, (int64_t[]){100, -1});
    fh_output(g, "y");
    fh_check(g, &exact, "Slice opset 9");
}

static void gathers(void) {
    for (int t = 0; t < 10; t++) {
        korch_shape s = fh_random_shape(1, 4, 5);
        int axis = (int)fh_int(0, s.rank - 1);
        korch_shape is = fh_random_shape(0, 2, 3);
        korch_tensor idx;
        korch_tensor_alloc(&idx, KORCH_DTYPE_INT64, &is);
        for (int64_t i = 0; i < korch_tensor_numel(&idx); i++)
            ((int64_t *)idx.data)[i] = fh_int(-s.dims[axis], s.dims[axis] - 1);
        korch_graph *g = fh_begin(13);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        fh_const(g, "i", &idx);
        int n = fh_node(g, "Gather", "x,i", "y");
        fh_attr_int(g, n, "axis", axis);
        fh_output(g, "y");
        fh_check(g, &(fh_options){.rtol = 0, .min_primitives = 1}, "Gather constant indices");
    }
    /* run-time indices: data-dependent addressing stays opaque (docs/fission.md) */
    int64_t d[2] = {6, 4}, id[2] = {2, 3};
    korch_graph *g = fh_begin(13);
    fh_const_random(g, "table", 2, d, -1, 1);
    fh_input(g, "ids", KORCH_DTYPE_INT64, 2, id);
    fh_node(g, "Gather", "table,ids", "y");
    fh_output(g, "y");
    /* ids in [-5, 5]: valid for a 6-row table */
    fh_check(g, &(fh_options){.rtol = 0, .allow_opaque = true}, "Gather run-time indices");
}

static void expand_tile(void) {
    for (int t = 0; t < 8; t++) {
        korch_shape out = fh_random_shape(1, 4, 4), in = out;
        for (int k = 0; k < in.rank; k++)
            if (fh_uniform() < 0.5) in.dims[k] = 1;
        int drop = (int)fh_int(0, in.rank - 1);
        in.rank -= drop;
        memmove(in.dims, in.dims + drop, sizeof(int64_t) * (size_t)in.rank);
        korch_graph *g = fh_begin(13);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, in.rank, in.dims);
        fh_const_i64(g, "shape", out.rank, out.dims);
        fh_node(g, "Expand", "x,shape", "y");
        fh_output(g, "y");
        fh_check(g, &exact, "Expand");
    }
    for (int t = 0; t < 6; t++) {
        korch_shape s = fh_random_shape(1, 4, 3);
        int64_t reps[4];
        for (int k = 0; k < s.rank; k++) reps[k] = fh_int(1, 3);
        korch_graph *g = fh_begin(13);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        fh_const_i64(g, "r", s.rank, reps);
        fh_node(g, "Tile", "x,r", "y");
        fh_output(g, "y");
        fh_check(g, &exact, "Tile");
    }
}

static void pads(void) {
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    for (int t = 0; t < 24; t++) {
        const char *mode = modes[t % 4];
        korch_shape s = fh_random_shape(1, 4, 5);
        int64_t p[8];
        for (int k = 0; k < s.rank; k++) {
            /* reflect needs pads below the kept length; crops only where it stays non-empty */
            int64_t hi = strcmp(mode, "reflect") == 0 ? s.dims[k] - 1 : 3;
            p[k] = fh_int(0, hi > 0 ? hi : 0);
            p[s.rank + k] = fh_int(0, hi > 0 ? hi : 0);
            if (s.dims[k] > 2 && fh_uniform() < 0.25) {
                if (fh_uniform() < 0.5) p[k] = -1;
                else p[s.rank + k] = -1;
            }
        }
        bool attr = t >= 20;
        korch_graph *g = fh_begin(attr ? 2 : (t & 1 ? 18 : 13));
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        int n;
        if (attr) {
            n = fh_node(g, "Pad", "x", "y");
            fh_attr_ints(g, n, "pads", 2 * s.rank, p);
            fh_attr_float(g, n, "value", 1.5f);
        } else {
            fh_const_i64(g, "p", 2 * s.rank, p);
            float v = -2.5f;
            fh_const_f32(g, "v", 0, NULL, &v);
            n = fh_node(g, "Pad", t & 2 ? "x,p,v" : "x,p", "y");
        }
        fh_attr_string(g, n, "mode", mode);
        fh_output(g, "y");
        char label[64];
        snprintf(label, sizeof label, "Pad %s opset %d", mode, (int)g->opsets[0].version);
        fh_check(g, &exact, label);
    }
    /* a pad value that is a run-time input */
    int64_t d[2] = {3, 4}, pd[4] = {1, 0, 2, 1};
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 2, d);
    fh_const_i64(g, "p", 4, pd);
    fh_input(g, "v", KORCH_DTYPE_FLOAT32, 0, NULL);
    fh_node(g, "Pad", "x,p,v", "y");
    fh_output(g, "y");
    fh_check(g, &exact, "Pad run-time value");
}

static void depth_space(void) {
    for (int t = 0; t < 6; t++) {
        int64_t b = fh_int(1, 3), c = fh_int(1, 3);
        int64_t x[4] = {fh_int(1, 2), c * b * b, fh_int(1, 3), fh_int(1, 3)};
        int n;
        korch_graph *g = fh_unary_graph(13, "DepthToSpace", 4, x, &n);
        fh_attr_int(g, n, "blocksize", b);
        if (t & 1) fh_attr_string(g, n, "mode", "CRD");
        fh_check(g, &exact, t & 1 ? "DepthToSpace CRD" : "DepthToSpace DCR");
        int64_t y[4] = {x[0], c, x[2] * b, x[3] * b};
        g = fh_unary_graph(13, "SpaceToDepth", 4, y, &n);
        fh_attr_int(g, n, "blocksize", b);
        fh_check(g, &exact, "SpaceToDepth");
    }
}

static void resizes(void) {
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                         "tf_half_pixel_for_nearest", "half_pixel_symmetric", "tf_crop_and_resize"};
    static const char *const rounding[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    for (int t = 0; t < 56; t++) {
        bool linear = t & 1;
        const char *coord = coords[(t / 2) % 7];
        if (!linear && strcmp(coord, "tf_half_pixel_for_nearest") != 0 && t % 3 == 0) coord = "asymmetric";
        int64_t x[4] = {1, fh_int(1, 2), fh_int(1, 5), fh_int(1, 5)};
        bool sizes = t % 4 >= 2;
        int opset = t % 5 == 0 ? 18 : 13;
        korch_graph *g = fh_begin(opset);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, 4, x);
        float roi[8] = {0, 0, 0.1f, 0.2f, 1, 1, 0.8f, 1.1f};
        int64_t r4[1] = {8};
        fh_const_f32(g, "roi", 1, r4, roi);
        if (sizes) {
            int64_t sz[4] = {1, x[1], fh_int(1, 9), fh_int(1, 9)};
            fh_const_i64(g, "sizes", 4, sz);
        } else {
            float sc[4] = {1, 1, (float)(fh_int(1, 8) * 0.5), (float)(fh_int(1, 8) * 0.5)};
            int64_t four[1] = {4};
            fh_const_f32(g, "scales", 1, four, sc);
        }
        int n = fh_node(g, "Resize", sizes ? "x,roi,,sizes" : "x,roi,scales", "y");
        fh_attr_string(g, n, "mode", linear ? "linear" : "nearest");
        fh_attr_string(g, n, "coordinate_transformation_mode", coord);
        if (!linear) fh_attr_string(g, n, "nearest_mode", rounding[(t / 3) % 4]);
        if (strcmp(coord, "tf_crop_and_resize") == 0) fh_attr_float(g, n, "extrapolation_value", -7.0f);
        fh_output(g, "y");
        char label[128];
        snprintf(label, sizeof label, "Resize %s %s %s opset %d", linear ? "linear" : "nearest", coord,
                 sizes ? "sizes" : "scales", opset);
        fh_check(g, &(fh_options){.rtol = linear ? 1e-6 : 0}, label);
    }
    /* Resize-10 and Upsample: asymmetric coordinates, legacy rounding */
    for (int t = 0; t < 8; t++) {
        int64_t x[4] = {1, 2, fh_int(1, 4), fh_int(1, 4)};
        float sc[4] = {1, 1, (float)fh_int(1, 3), t & 2 ? 0.5f : 2.0f};
        int64_t four[1] = {4};
        int opset = t < 4 ? 10 : (t < 6 ? 9 : 7);
        korch_graph *g = fh_begin(opset);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, 4, x);
        int n;
        if (opset == 7) {
            n = fh_node(g, "Upsample", "x", "y");
            fh_attr_floats(g, n, "scales", 4, sc);
        } else {
            fh_const_f32(g, "s", 1, four, sc);
            n = fh_node(g, opset == 10 ? "Resize" : "Upsample", "x,s", "y");
        }
        fh_attr_string(g, n, "mode", t & 1 ? "linear" : "nearest");
        fh_output(g, "y");
        char label[64];
        snprintf(label, sizeof label, "%s opset %d %s", opset == 10 ? "Resize" : "Upsample", opset,
                 t & 1 ? "linear" : "nearest");
        fh_check(g, &(fh_options){.rtol = 1e-6}, label);
    }
}

int main(void) {
    fh_seed(4);
    reshapes();
    transposes();
    concat_split();
    slices();
    gathers();
    expand_tile();
    pads();
    depth_space();
    resizes();
    printf("%d graphs checked\n", fh_checked);
    TEST_MAIN_END();
}

/* fission_compare GOT WANT [TOL]: compares two tensor files (.npy or ONNX
 * TensorProto .pb) of whole-model outputs. Floats pass when
 * max |got - want| <= TOL * max |want| (default 1e-4): fission reassociates
 * float arithmetic (a convolution's bias is added after it, a softmax
 * divides by its sum), and a deep network amplifies those last-bit
 * differences, so model outputs are compared against their own scale, not
 * element by element (docs/fission.md). Integers and bools must be equal.
 * Exit 0: match; 1: mismatch (on stderr); 2: a file cannot be read. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/npy.h"

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: fission_compare GOT WANT [TOL]\n");
        return 2;
    }
    double tol = argc == 4 ? atof(argv[3]) : 1e-4;
    korch_tensor got = {0}, want = {0};
    if (korch_tensor_file_read(argv[1], &got, NULL) != KORCH_OK ||
        korch_tensor_file_read(argv[2], &want, NULL) != KORCH_OK) {
        fprintf(stderr, "fission_compare: %s\n", korch_last_error());
        korch_tensor_free(&got);
        return 2;
    }
    int rc = 0;
    char a[96], b[96];
    if (got.dtype != want.dtype || !korch_shape_equal(&got.shape, &want.shape)) {
        fprintf(stderr, "%s: %s %s, want %s %s\n", argv[1], korch_dtype_name(got.dtype),
                korch_shape_format(&got.shape, a, sizeof a), korch_dtype_name(want.dtype),
                korch_shape_format(&want.shape, b, sizeof b));
        rc = 1;
    } else if (want.dtype == KORCH_DTYPE_FLOAT32 || want.dtype == KORCH_DTYPE_FLOAT64) {
        double scale = 0, worst = 0;
        int64_t at = 0, n = korch_tensor_numel(&want);
        for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(korch_tensor_get_f64(&want, i)));
        for (int64_t i = 0; i < n; i++) {
            double d = fabs(korch_tensor_get_f64(&got, i) - korch_tensor_get_f64(&want, i));
            if (!(d <= worst)) worst = d, at = i; /* NaN counts as the worst */
        }
        if (!(worst <= tol * scale)) {
            fprintf(stderr, "%s: max |diff| %g at element %lld exceeds %g x max |want| (%g)\n", argv[1], worst,
                    (long long)at, tol, scale);
            rc = 1;
        }
    } else if (memcmp(got.data, want.data, korch_tensor_bytes(&want)) != 0) {
        fprintf(stderr, "%s: integer outputs differ\n", argv[1]);
        rc = 1;
    }
    korch_tensor_free(&got);
    korch_tensor_free(&want);
    return rc;
}

/* tensor_compare_tool GOT WANT: compares two tensor files (.npy, or ONNX
 * TensorProto .pb) with the conformance tolerance (tensor_compare.h).
 * Exit 0: match; 1: mismatch (reason on stderr); 2: a file cannot be read. */
#include <stdio.h>
#include <stdlib.h>

#include "io/npy.h"
#include "tensor_compare.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: tensor_compare_tool GOT WANT\n");
        return 2;
    }
    korch_tensor got = {0}, want = {0};
    if (korch_tensor_file_read(argv[1], &got, NULL) != KORCH_OK ||
        korch_tensor_file_read(argv[2], &want, NULL) != KORCH_OK) {
        fprintf(stderr, "tensor_compare_tool: %s\n", korch_last_error());
        korch_tensor_free(&got);
        return 2;
    }
    char why[1024];
    bool same = korch_tensor_compare(&got, &want, why, sizeof why);
    if (!same) fprintf(stderr, "%s vs %s: %s\n", argv[1], argv[2], why);
    korch_tensor_free(&got);
    korch_tensor_free(&want);
    return same ? 0 : 1;
}

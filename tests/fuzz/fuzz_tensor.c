/* libFuzzer target for the tensor files `korch run --input` reads: the first
 * byte picks the parser, the rest is the file. Even: a .npy file
 * (korch_npy_parse); odd: an ONNX TensorProto .pb (unpacked and converted as
 * korch_tensor_file_read does, external data forbidden). Checks that a parsed
 * tensor's data covers its shape. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_tensor.h"
#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    korch_tensor t;
    memset(&t, 0, sizeof t);
    korch_status st;
    if (data[0] % 2 == 0) {
        st = korch_npy_parse(data + 1, size - 1, "fuzz.npy", &t);
    } else {
        Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size - 1, data + 1);
        if (!tp) return 0;
        st = korch_onnx_tensor_convert(tp, NULL, "fuzz.pb", &t);
        onnx__tensor_proto__free_unpacked(tp, NULL);
    }
    if (st == KORCH_OK) {
        size_t bytes = korch_tensor_bytes(&t);
        /* touch every byte: ASan reports if the buffer is shorter than the shape */
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < bytes; i++) sink ^= ((const uint8_t *)t.data)[i];
        (void)sink;
    } else if (!korch_last_error()[0]) {
        fprintf(stderr, "fuzz_tensor: a failure left no error message\n");
        abort();
    }
    korch_tensor_free(&t);
    return 0;
}

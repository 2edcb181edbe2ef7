/* A program that knows korch only through its installed header and
 * pkg-config (tests/api/install_pkgconfig.sh): loads a model, lists its
 * inputs and outputs, runs it on a constant input and checks the outputs are
 * finite. Uses nothing but include/korch.h. */
#include <korch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static size_t numel(const korch_tensor_info *info) {
    size_t n = 1;
    for (int d = 0; d < info->rank; d++) n *= (size_t)info->dims[d];
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL\n", argv[0]);
        return 2;
    }
    printf("korch %s\n", korch_version());
    korch_model *model = NULL;
    korch_session *session = NULL;
    if (korch_model_load(argv[1], &model) != KORCH_OK || korch_session_create(model, NULL, &session) != KORCH_OK) {
        fprintf(stderr, "error: %s\n", korch_last_error());
        return 1;
    }
    int n_in = korch_session_input_count(session), n_out = korch_session_output_count(session);
    float *buffers[16] = {0};
    int rc = n_in + n_out <= 16 ? 0 : 1;
    for (int i = 0; i < n_in + n_out && rc == 0; i++) {
        korch_tensor_info info;
        korch_status st = i < n_in ? korch_session_input_info(session, i, &info)
                                   : korch_session_output_info(session, i - n_in, &info);
        if (st != KORCH_OK || info.dtype != KORCH_DTYPE_FLOAT32) {
            rc = 1;
            break;
        }
        size_t n = numel(&info);
        buffers[i] = malloc(n * sizeof(float));
        for (size_t e = 0; e < n && buffers[i]; e++) buffers[i][e] = 0.25f;
        printf("%s %d: %zu floats\n", i < n_in ? "input" : "output", i < n_in ? i : i - n_in, n);
        st = i < n_in ? korch_session_set_input(session, i, buffers[i], n * sizeof(float))
                      : korch_session_set_output(session, i - n_in, buffers[i], n * sizeof(float));
        if (st != KORCH_OK) rc = 1;
    }
    if (rc == 0 && korch_session_run(session) != KORCH_OK) rc = 1;
    for (int i = n_in; i < n_in + n_out && rc == 0; i++) {
        korch_tensor_info info;
        korch_session_output_info(session, i - n_in, &info);
        for (size_t e = 0; e < numel(&info); e++)
            if (!isfinite(buffers[i][e])) rc = 1;
    }
    if (rc) fprintf(stderr, "error: %s\n", korch_last_error());
    else printf("ok\n");
    for (int i = 0; i < 16; i++) free(buffers[i]);
    korch_session_destroy(session);
    korch_model_free(model);
    return rc;
}

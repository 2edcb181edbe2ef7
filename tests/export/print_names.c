/* Built against an exported model (tests/export/run_export_models.sh): prints
 * every input and output name as hex bytes, so the test can check that names
 * survive the export byte for byte. Uses model.h only. */
#include <stdio.h>

#include "model.h"

int main(int argc, char **argv) {
    model_handle *m = NULL;
    model_session *s = NULL;
    if (argc != 2 || model_load(argv[1], &m) != MODEL_OK || model_session_create(m, NULL, &s) != MODEL_OK) {
        fprintf(stderr, "print_names: %s\n", model_last_error());
        return 1;
    }
    for (int io = 0; io < 2; io++) {
        int n = io ? model_session_output_count(s) : model_session_input_count(s);
        for (int i = 0; i < n; i++) {
            model_tensor_info info;
            if ((io ? model_session_output_info(s, i, &info) : model_session_input_info(s, i, &info)) != MODEL_OK)
                return 1;
            printf("%s ", io ? "out" : "in");
            for (const unsigned char *p = (const unsigned char *)info.name; *p; p++) printf("%02x", *p);
            printf("\n");
        }
    }
    model_session_destroy(s);
    model_free(m);
    return 0;
}

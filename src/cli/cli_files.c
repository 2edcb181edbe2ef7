#include "cli/cli_files.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "runtime/plan.h"

/* Text, as far as the first bytes tell: an ONNX model is a binary protobuf
 * whose first byte is a field tag (0x08 for ir_version in every exporter's
 * output), never a printable line. */
static bool looks_like_text(const unsigned char *head, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = head[i];
        if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
        if (c == 0x7f) return false;
    }
    return n > 0;
}

korch_cli_file_kind korch_cli_file_kind_of(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return KORCH_CLI_FILE_MISSING;
    if (S_ISDIR(sb.st_mode)) return KORCH_CLI_FILE_DIRECTORY;
    FILE *f = fopen(path, "rb");
    if (!f) return KORCH_CLI_FILE_MISSING;
    unsigned char head[256];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n == 0) return KORCH_CLI_FILE_EMPTY;
    if (korch_plan_file_is_plan(path)) return KORCH_CLI_FILE_PLAN;
    if (n >= 6 && memcmp(head, "\x93NUMPY", 6) == 0) return KORCH_CLI_FILE_NPY;
    if (looks_like_text(head, n)) return KORCH_CLI_FILE_TEXT;
    return KORCH_CLI_FILE_ONNX;
}

static int file_error(const char *path, const char *fmt, const char *arg) {
    char buf[300], what[600];
    snprintf(what, sizeof what, fmt, arg);
    fprintf(stderr, "korch: error: \"%s\" %s\n", korch_printable(path, buf, sizeof buf), what);
    return 1;
}

/* the kinds every command refuses alike */
static int common_refusals(const char *path, korch_cli_file_kind kind) {
    char buf[300];
    if (kind == KORCH_CLI_FILE_MISSING) {
        fprintf(stderr, "korch: error: cannot open \"%s\": %s\n", korch_printable(path, buf, sizeof buf),
                strerror(errno));
        return 1;
    }
    if (kind == KORCH_CLI_FILE_DIRECTORY) return file_error(path, "is a folder, not a file%s", "");
    if (kind == KORCH_CLI_FILE_EMPTY) { /* the loader's words (tests/badinput: empty.onnx) */
        fprintf(stderr, "korch: error: %s: the file is empty\n", korch_printable(path, buf, sizeof buf));
        return 1;
    }
    return 0;
}

int korch_cli_expect_model(const char *path, const char *command) {
    korch_cli_file_kind kind = korch_cli_file_kind_of(path);
    if (common_refusals(path, kind)) return 1;
    switch (kind) {
    case KORCH_CLI_FILE_PLAN:
        return file_error(path,
                          "is a korch plan, not an ONNX model; korch %s reads a model (korch explain PLAN describes "
                          "a plan, korch run PLAN runs it)",
                          command);
    case KORCH_CLI_FILE_NPY:
        return file_error(path,
                          "is a .npy tensor, not an ONNX model; korch %s reads a model (tensors are inputs: "
                          "korch run MODEL --input NAME=FILE)",
                          command);
    case KORCH_CLI_FILE_TEXT:
        return file_error(path, "is a text file, not an ONNX model (a binary protobuf file, usually named .onnx)%s",
                          "");
    default:
        return 0;
    }
}

int korch_cli_expect_plan(const char *path, const char *command) {
    korch_cli_file_kind kind = korch_cli_file_kind_of(path);
    if (common_refusals(path, kind)) return 1;
    switch (kind) {
    case KORCH_CLI_FILE_PLAN:
        return 0;
    case KORCH_CLI_FILE_ONNX:
        return file_error(path,
                          "is an ONNX model, not a korch plan; korch %s reads a plan (make one with korch optimize "
                          "MODEL -o PLAN)",
                          command);
    case KORCH_CLI_FILE_NPY:
        return file_error(path, "is a .npy tensor, not a korch plan; korch %s reads a plan (make one with korch "
                                "optimize MODEL -o PLAN)",
                          command);
    default:
        return file_error(path,
                          "is not a korch plan (a plan starts with \"korch-plan\"; make one with korch optimize MODEL "
                          "-o PLAN)%s",
                          "");
    }
}

int korch_cli_expect_model_or_plan(const char *path, const char *command) {
    korch_cli_file_kind kind = korch_cli_file_kind_of(path);
    if (common_refusals(path, kind)) return 1;
    if (kind == KORCH_CLI_FILE_NPY)
        return file_error(path,
                          "is a .npy tensor, not an ONNX model or a korch plan; korch %s takes MODEL|PLAN first and "
                          "tensors after --input NAME=FILE",
                          command);
    if (kind == KORCH_CLI_FILE_TEXT)
        return file_error(path, "is a text file, neither an ONNX model nor a korch plan%s", "");
    return 0;
}

/* the folder part of `path` ("." when it has none) */
static void folder_of(const char *path, char *dir, size_t size) {
    snprintf(dir, size, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, size, ".");
    else if (slash == dir) slash[1] = '\0';
    else *slash = '\0';
}

static int output_error(const char *option, const char *path, const char *reason_path, const char *reason) {
    char a[300], b[300];
    fprintf(stderr, "korch: error: %s %s: cannot write there: ", option, korch_printable(path, a, sizeof a));
    if (reason_path) fprintf(stderr, "\"%s\": ", korch_printable(reason_path, b, sizeof b));
    fprintf(stderr, "%s\n", reason);
    return 1;
}

int korch_cli_check_output_file(const char *option, const char *path) {
    size_t len = strlen(path);
    if (len == 0) return output_error(option, path, NULL, "empty path");
    struct stat sb;
    if (path[len - 1] == '/' || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)))
        return output_error(option, path, NULL, "it is a folder; give a file name");
    char dir[4096];
    folder_of(path, dir, sizeof dir);
    if (stat(dir, &sb) != 0) return output_error(option, path, dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return output_error(option, path, dir, "not a folder");
    if (access(dir, W_OK | X_OK) != 0) return output_error(option, path, dir, strerror(errno));
    if (access(path, F_OK) == 0 && access(path, W_OK) != 0) return output_error(option, path, NULL, strerror(errno));
    return 0;
}

int korch_cli_make_output_dir(const char *option, const char *dir) {
    char path[4096], buf[256];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path) {
        fprintf(stderr, "korch: error: %s: bad output folder \"%s\"\n", option, korch_printable(dir, buf, sizeof buf));
        return 1;
    }
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char saved = path[i];
        path[i] = '\0';
        struct stat sb;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "korch: error: %s: cannot create output directory \"%s\": %s\n", option,
                    korch_printable(path, buf, sizeof buf), strerror(errno));
            return 1;
        }
        if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "korch: error: %s: output path \"%s\" exists and is not a directory\n", option,
                    korch_printable(path, buf, sizeof buf));
            return 1;
        }
        path[i] = saved;
    }
    if (access(dir, W_OK | X_OK) != 0) return output_error(option, dir, NULL, strerror(errno));
    return 0;
}

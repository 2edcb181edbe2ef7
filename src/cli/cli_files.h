/* The files a user hands the command line: what kind each one is (so that a
 * plan given where a model is expected, or a missing file, is named as such
 * rather than reported by whichever parser meets it first), and the outputs,
 * checked for writability before any work starts. */
#ifndef KORCH_CLI_CLI_FILES_H
#define KORCH_CLI_CLI_FILES_H

typedef enum korch_cli_file_kind {
    KORCH_CLI_FILE_MISSING,   /* cannot be opened (errno says why) */
    KORCH_CLI_FILE_DIRECTORY,
    KORCH_CLI_FILE_EMPTY,
    KORCH_CLI_FILE_PLAN,      /* "KORCH-PLAN ..." (docs/plan-format.md) */
    KORCH_CLI_FILE_NPY,       /* "\x93NUMPY" */
    KORCH_CLI_FILE_TEXT,      /* printable text that is not a plan */
    KORCH_CLI_FILE_ONNX,      /* anything else: a protobuf, as far as the first bytes tell */
} korch_cli_file_kind;

/* Looks at the first bytes only; errno is kept for KORCH_CLI_FILE_MISSING. */
korch_cli_file_kind korch_cli_file_kind_of(const char *path);

/* For commands that read an ONNX model (info, check, fission, optimize,
 * bench): 0, or 1 after a "korch: error:" line that names the file, says what
 * it is and which command takes it. A file that may be a model is left to
 * the loader, whose messages are more precise. */
int korch_cli_expect_model(const char *path, const char *command);
/* For commands that read a plan (explain, export); the same contract. */
int korch_cli_expect_plan(const char *path, const char *command);
/* For `korch run`, which takes either: only a missing file, a directory or a
 * .npy file is refused here. */
int korch_cli_expect_model_or_plan(const char *path, const char *command);

/* Output files and folders, checked before any work so that a long run does
 * not end in "cannot write". Each returns 0, or 1 after a "korch: error:"
 * line naming the option, the path and the reason. */
/* FILE will be created or replaced: its folder exists and is writable, and
 * FILE is not a folder. Nothing is created. */
int korch_cli_check_output_file(const char *option, const char *path);
/* mkdir -p DIR (every missing level), then checks it is a writable folder. */
int korch_cli_make_output_dir(const char *option, const char *dir);

#endif

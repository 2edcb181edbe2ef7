/* korch: the command-line tool. Each command only wires library stages
 * together; see docs/cli.md for the full reference. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const korch_cli_command commands[] = {
    {"info", "inputs, outputs, operator histogram, parameters and FLOPs of a model", korch_cmd_info},
    {"check", "validate a model without running it (exit 0 only if korch can run it)", korch_cmd_check},
    {"run", "run a model or plan on .npy/.pb inputs, write .npy outputs, optionally time it", korch_cmd_run},
    {"fission", "split operators into primitives; write the primitive graph as ONNX, print stats", korch_cmd_fission},
    {"optimize", "choose the fastest kernels for a model and write them as a plan", korch_cmd_optimize},
    {"explain", "show a plan's kernels: primitives, ONNX nodes, implementation, latency", korch_cmd_explain},
    {"bench", "compare the none, greedy and optimal strategies on a model", korch_cmd_bench},
    {"export", "write a plan as standalone C (model.c, weights, Makefile, runner)", korch_cmd_export},
    {"db", "look after the profile database: stats, check, prune, clear", korch_cmd_db},
};

/* edit distance, for "did you mean" (korch optimise -> optimize) */
static size_t distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b), row[32];
    if (la >= 31 || lb >= 31) return 99;
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

static void unknown_command(const char *name) {
    fprintf(stderr, "korch: unknown command \"%.64s\"", name);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (distance(name, commands[i].name) <= (strlen(name) >= 5 ? 2u : 1u)) {
            fprintf(stderr, "; did you mean '%s'?", commands[i].name);
            break;
        }
    fprintf(stderr, "\n\n");
}

static void usage(FILE *out) {
    fprintf(out,
            "korch %s: optimal kernel orchestration for ONNX models on the CPU\n\n"
            "usage: korch <command> [options]\n\ncommands:\n",
            korch_version());
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'korch <command> --help' (or 'korch help <command>') describes a command.\n");
}

int main(int argc, char **argv) {
    korch_cli_omp_policy(argv);
    korch_cli_env_get(); /* the environment, read once, before any command */
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (korch_cli_is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    /* korch help [COMMAND]: what a new user types first */
    if (strcmp(argv[1], "help") == 0) {
        if (argc < 3) {
            usage(stdout);
            return 0;
        }
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (strcmp(argv[2], commands[i].name) == 0) {
                char *help_argv[] = {argv[2], "--help", NULL};
                return commands[i].main(2, help_argv);
            }
        unknown_command(argv[2]);
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("korch %s\n", korch_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].main(argc - 1, argv + 1);
    unknown_command(argv[1]);
    usage(stderr);
    return 2;
}

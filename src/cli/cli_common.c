#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_files.h"

int korch_cli_fail(void) {
    fprintf(stderr, "korch: error: %s\n", korch_last_error());
    return 1;
}

int korch_cli_usage_error(const char *command, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "korch %s: ", command);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see 'korch %s --help')\n", command);
    va_end(ap);
    return 2;
}

bool korch_cli_is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

const char *korch_cli_value(int argc, char **argv, int *i, const char *command) {
    if (*i + 1 >= argc) {
        korch_cli_usage_error(command, "option %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

bool korch_cli_parse_int(const char *text, long lo, long hi, long *out) {
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

int korch_cli_cpus_usable(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int korch_cli_parse_threads(const char *command, const char *text, long *out) {
    if (!korch_cli_parse_int(text, 1, 1024, out))
        return korch_cli_usage_error(command, "--threads expects a number from 1 to 1024");
    int cpus = korch_cli_cpus_usable();
    /* allowed (a plan tuned for a bigger machine), but every parallel
     * region then waits for threads that share a CPU: measured 36-41 ms
     * for a 1.1 ms plan at --threads 64 on 2 CPUs */
    if (*out > cpus)
        fprintf(stderr,
                "korch: note: --threads %ld is more than the %d CPU%s this process can use; "
                "kernels will wait for threads sharing a CPU and run many times slower\n",
                *out, cpus, cpus == 1 ? "" : "s");
    return 0;
}

int korch_cli_shapes_add(korch_cli_shapes *s, const char *spec, const char *command) {
    if (s->count >= KORCH_CLI_MAX_SHAPES) return korch_cli_usage_error(command, "too many --input-shape options");
    char *copy = strdup(spec);
    if (!copy) return korch_cli_usage_error(command, "out of memory");
    char *eq = strrchr(copy, '=');
    if (!eq || eq == copy) {
        free(copy);
        return korch_cli_usage_error(command, "--input-shape expects NAME=DIMS, e.g. input=1x3x224x224");
    }
    *eq = '\0';
    korch_shape shape;
    if (!korch_shape_parse(eq + 1, &shape)) {
        int rc = korch_cli_usage_error(command, "--input-shape: bad dimensions \"%s\" (expected e.g. 1x3x224x224)", eq + 1);
        free(copy);
        return rc;
    }
    s->storage[s->count] = copy;
    s->items[s->count].name = copy;
    s->items[s->count].shape = shape;
    s->count++;
    return 0;
}

void korch_cli_shapes_free(korch_cli_shapes *s) {
    for (int i = 0; i < s->count; i++) free(s->storage[i]);
    s->count = 0;
}

static int model_args(int argc, char **argv, const char *command, void (*help)(void), const char **model,
                      korch_cli_shapes *shapes, bool plans_too) {
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        if (korch_cli_is_help(argv[i])) {
            help();
            korch_cli_shapes_free(shapes);
            return -1;
        } else if (strcmp(argv[i], "--input-shape") == 0) {
            const char *v = korch_cli_value(argc, argv, &i, command);
            rc = v ? korch_cli_shapes_add(shapes, v, command) : 2;
        } else if (argv[i][0] == '-') {
            rc = korch_cli_usage_error(command, "unknown option %s", argv[i]);
        } else if (!*model) {
            *model = argv[i];
        } else {
            rc = korch_cli_usage_error(command, "more than one model given");
        }
    }
    if (rc == 0 && !*model) rc = korch_cli_usage_error(command, "no model given");
    if (rc == 0) rc = plans_too ? korch_cli_expect_model_or_plan(*model, command) : korch_cli_expect_model(*model, command);
    if (rc) korch_cli_shapes_free(shapes);
    return rc;
}

int korch_cli_model_args(int argc, char **argv, const char *command, void (*help)(void), const char **model,
                         korch_cli_shapes *shapes) {
    return model_args(argc, argv, command, help, model, shapes, false);
}

int korch_cli_model_or_plan_args(int argc, char **argv, const char *command, void (*help)(void), const char **model,
                                 korch_cli_shapes *shapes) {
    return model_args(argc, argv, command, help, model, shapes, true);
}

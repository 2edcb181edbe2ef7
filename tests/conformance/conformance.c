/* conformance: runs the ONNX backend test folders through korch and reports
 * passed / failed / skipped per folder, with the skip reasons aggregated.
 * Each test runs in a child process, so that a crash or a hang in one
 * operator is reported as that test's failure and the run carries on.
 * Methodology and tolerance: docs/conformance.md. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conformance.h"

#define DEFAULT_DATA "/usr/share/libonnx-testdata/data"
#define DEFAULT_FOLDERS "node,pytorch-converted,pytorch-operator,simple"

typedef struct options {
    const char *data, *folders, *filter, *report_path;
    const char *known_paths[4]; /* --known-failures, repeatable: a mode's own list beside the common one */
    int n_known_paths;
    bool verbose, fork_tests;
    unsigned timeout_s;
} options;

typedef struct known_failure {
    char name[256];
    char reason[512];
    bool seen;
} known_failure;

typedef struct tally {
    int passed, failed, skipped, known, unexpected_pass;
} tally;

typedef struct reason_count {
    char key[160];
    int count;
} reason_count;

typedef struct run_state {
    options opt;
    FILE *report;
    known_failure *known;
    int n_known;
    reason_count *reasons;
    int n_reasons, cap_reasons;
    tally total;
    int unexpected_fail, stale;
} run_state;

static void usage(FILE *f) {
    fprintf(f, "usage: conformance [--data DIR] [--folders a,b] [--filter SUBSTR] [--known-failures FILE]...\n"
               "                   [--report FILE] [--timeout SECONDS] [--no-fork] [--fission] [-v]\n\n"
               "Runs every ONNX backend test folder (model.onnx + test_data_set_*) under\n"
               "DIR/<folder> (default " DEFAULT_DATA ", folders " DEFAULT_FOLDERS ")\n"
               "through the korch frontend and reference executor. Exit status 1 when a test\n"
               "fails that known-failures.txt does not list, or a listed test no longer fails.\n"
               "--fission also runs each test through operator fission (primitive interpreter\n"
               "and ONNX export); all three must match.\n");
}

/* Reads "folder/test_name  one-line reason" lines; '#' starts a comment. */
static int load_known_file(run_state *s, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "conformance: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        p[strcspn(p, "\r\n")] = '\0';
        if (!*p || *p == '#') continue;
        known_failure *grown = realloc(s->known, (size_t)(s->n_known + 1) * sizeof *grown);
        if (!grown) break;
        s->known = grown;
        known_failure *k = &s->known[s->n_known];
        memset(k, 0, sizeof *k);
        size_t len = strcspn(p, " \t");
        snprintf(k->name, sizeof k->name, "%.*s", (int)len, p);
        p += len;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) {
            fprintf(stderr, "%s:%d: \"%s\" needs a one-line reason\n", path, lineno, k->name);
            fclose(f);
            return -1;
        }
        snprintf(k->reason, sizeof k->reason, "%s", p);
        s->n_known++;
    }
    fclose(f);
    return 0;
}

static int load_known(run_state *s) {
    for (int i = 0; i < s->opt.n_known_paths; i++)
        if (load_known_file(s, s->opt.known_paths[i]) != 0) return -1;
    return 0;
}

static known_failure *find_known(run_state *s, const char *name) {
    for (int i = 0; i < s->n_known; i++)
        if (strcmp(s->known[i].name, name) == 0) return &s->known[i];
    return NULL;
}

static void count_reason(run_state *s, const char *key) {
    for (int i = 0; i < s->n_reasons; i++)
        if (strcmp(s->reasons[i].key, key) == 0) {
            s->reasons[i].count++;
            return;
        }
    if (s->n_reasons == s->cap_reasons) {
        int cap = s->cap_reasons ? 2 * s->cap_reasons : 64;
        reason_count *grown = realloc(s->reasons, (size_t)cap * sizeof *grown);
        if (!grown) return;
        s->reasons = grown;
        s->cap_reasons = cap;
    }
    snprintf(s->reasons[s->n_reasons].key, sizeof s->reasons[0].key, "%s", key);
    s->reasons[s->n_reasons++].count = 1;
}

/* Runs one test in a child: a crash, a sanitizer report or a hang becomes a failure. */
static void run_isolated(const char *dir, unsigned timeout_s, conformance_result *r) {
    int fds[2];
    memset(r, 0, sizeof *r);
    r->outcome = CONFORMANCE_FAIL;
    if (pipe(fds) != 0) {
        snprintf(r->detail, sizeof r->detail, "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->detail, sizeof r->detail, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        alarm(timeout_s);
        conformance_result mine;
        memset(&mine, 0, sizeof mine);
        conformance_run_test(dir, &mine);
        ssize_t w = write(fds[1], &mine, sizeof mine);
        close(fds[1]);
        exit(w == (ssize_t)sizeof mine ? 0 : 3); /* exit(), not _exit(): LeakSanitizer runs at exit */
    }
    close(fds[1]);
    conformance_result got;
    size_t have = 0;
    while (have < sizeof got) {
        ssize_t n = read(fds[0], (char *)&got + have, sizeof got - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += (size_t)n;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (sig == SIGALRM) snprintf(r->detail, sizeof r->detail, "timed out after %u s", timeout_s);
        else snprintf(r->detail, sizeof r->detail, "crashed: %s (signal %d)", strsignal(sig), sig);
        return;
    }
    if (have != sizeof got) {
        snprintf(r->detail, sizeof r->detail, "exited with status %d without a result (sanitizer report above?)",
                 WEXITSTATUS(status));
        return;
    }
    *r = got;
    r->reason[sizeof r->reason - 1] = r->detail[sizeof r->detail - 1] = '\0';
    if (WEXITSTATUS(status) != 0) {
        char was[sizeof r->detail];
        snprintf(was, sizeof was, "%s", r->detail);
        r->outcome = CONFORMANCE_FAIL;
        snprintf(r->detail, sizeof r->detail, "exited with status %d after the test (a leak or sanitizer report "
                 "above?); the test itself said: %.1200s", WEXITSTATUS(status), was);
    }
}

/* Prints a line to stdout (when loud) and always to the report. */
static void emit(run_state *s, bool loud, const char *tag, const char *name, const char *text) {
    if (loud) printf("%-6s %s%s%s\n", tag, name, *text ? ": " : "", text);
    if (s->report) {
        fprintf(s->report, "%-6s %s%s%s\n", tag, name, *text ? ": " : "", text);
        fflush(s->report);
    }
}

/* Both to stdout and the report. */
__attribute__((format(printf, 2, 3))) static void out(run_state *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (s->report) {
        va_start(ap, fmt);
        vfprintf(s->report, fmt, ap);
        va_end(ap);
    }
}

static void record(run_state *s, const char *name, const conformance_result *r, tally *folder) {
    known_failure *k = find_known(s, name);
    char text[2048];
    if (k) k->seen = true;
    switch (r->outcome) {
    case CONFORMANCE_PASS:
        folder->passed++;
        if (k) {
            folder->unexpected_pass++;
            snprintf(text, sizeof text, "unexpectedly passed: remove it from the known-failures list");
            emit(s, true, "XPASS", name, text);
        } else {
            emit(s, s->opt.verbose, "PASS", name, r->detail);
        }
        break;
    case CONFORMANCE_SKIP:
        folder->skipped++;
        count_reason(s, r->reason);
        snprintf(text, sizeof text, "[%s] %s", r->reason, r->detail);
        emit(s, s->opt.verbose, "SKIP", name, text);
        if (k) {
            folder->unexpected_pass++;
            emit(s, true, "XPASS", name, "listed as a known failure but now skipped: remove it from the list");
        }
        break;
    case CONFORMANCE_FAIL:
        folder->failed++;
        if (k) {
            folder->known++;
            snprintf(text, sizeof text, "%s  (known failure: %s)", r->detail, k->reason);
            emit(s, true, "KNOWN", name, text);
        } else {
            s->unexpected_fail++;
            emit(s, true, "FAIL", name, r->detail);
        }
        break;
    }
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Runs every test folder under data/folder; returns -1 when the folder is missing. */
static int run_folder(run_state *s, const char *folder, tally *t) {
    char dir[2048], test_dir[2560], model[2600], name[512];
    snprintf(dir, sizeof dir, "%s/%s", s->opt.data, folder);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "conformance: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **tests = NULL;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char **grown = realloc(tests, (size_t)(n + 1) * sizeof *grown);
        if (!grown || !(grown[n] = strdup(e->d_name))) {
            tests = grown ? grown : tests;
            break;
        }
        tests = grown;
        n++;
    }
    closedir(d);
    qsort(tests, (size_t)n, sizeof *tests, compare_names);
    for (int i = 0; i < n; i++) {
        snprintf(test_dir, sizeof test_dir, "%s/%s", dir, tests[i]);
        snprintf(model, sizeof model, "%s/model.onnx", test_dir);
        snprintf(name, sizeof name, "%s/%s", folder, tests[i]);
        struct stat sb;
        if (stat(model, &sb) != 0 || (s->opt.filter && !strstr(name, s->opt.filter))) continue;
        conformance_result r;
        if (s->opt.fork_tests) {
            run_isolated(test_dir, s->opt.timeout_s, &r);
        } else {
            memset(&r, 0, sizeof r);
            conformance_run_test(test_dir, &r);
        }
        record(s, name, &r, t);
    }
    for (int i = 0; i < n; i++) free(tests[i]);
    free(tests);
    return 0;
}

static int by_count(const void *a, const void *b) {
    const reason_count *x = a, *y = b;
    if (x->count != y->count) return y->count - x->count;
    return strcmp(x->key, y->key);
}

/* Whether a known-failures entry names a test in one of the folders that ran. */
static bool in_folders(const char *name, const char *folders) {
    size_t len = strcspn(name, "/");
    for (const char *f = folders; *f;) {
        size_t flen = strcspn(f, ",");
        if (flen == len && strncmp(f, name, len) == 0) return true;
        f += flen + (f[flen] == ',');
    }
    return false;
}

static void summarize(run_state *s, bool full_run) {
    for (int i = 0; i < s->n_known && full_run; i++)
        if (!s->known[i].seen && in_folders(s->known[i].name, s->opt.folders)) {
            s->stale++;
            emit(s, true, "STALE", s->known[i].name, "listed as a known failure, but no such test was run: remove it");
        }
    tally *t = &s->total;
    out(s, "conformance: %d passed, %d failed, %d skipped\n", t->passed, t->failed, t->skipped);
    out(s, "  known failures (listed, not counted against the run): %d; unexpected failures: %d; "
           "unexpected passes: %d; stale list entries: %d\n",
        t->known, s->unexpected_fail, t->unexpected_pass, s->stale);
    if (s->n_reasons) {
        qsort(s->reasons, (size_t)s->n_reasons, sizeof *s->reasons, by_count);
        out(s, "skip reasons (korch refused the model with KORCH_ERR_UNSUPPORTED):\n");
        for (int i = 0; i < s->n_reasons; i++) out(s, "  %5d  %s\n", s->reasons[i].count, s->reasons[i].key);
    }
}

static int parse_args(int argc, char **argv, options *o) {
    *o = (options){.data = DEFAULT_DATA, .folders = DEFAULT_FOLDERS, .fork_tests = true, .timeout_s = 300};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) o->verbose = true;
        else if (strcmp(a, "--no-fork") == 0) o->fork_tests = false;
        else if (strcmp(a, "--fission") == 0) conformance_fission_mode = 1;
        else if (strcmp(a, "--data") == 0 && has_value) o->data = argv[++i];
        else if (strcmp(a, "--folders") == 0 && has_value) o->folders = argv[++i];
        else if (strcmp(a, "--filter") == 0 && has_value) o->filter = argv[++i];
        else if (strcmp(a, "--known-failures") == 0 && has_value && o->n_known_paths < 4)
            o->known_paths[o->n_known_paths++] = argv[++i];
        else if (strcmp(a, "--report") == 0 && has_value) o->report_path = argv[++i];
        else if (strcmp(a, "--timeout") == 0 && has_value) o->timeout_s = (unsigned)strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "conformance: bad argument %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (o->timeout_s == 0) o->timeout_s = 300;
    return 0;
}

int main(int argc, char **argv) {
    run_state s;
    memset(&s, 0, sizeof s);
    if (parse_args(argc, argv, &s.opt)) return 2;
    if (access(s.opt.data, R_OK) != 0) {
        /* exit 77: CTest reports the test as skipped, not passed */
        printf("conformance: %s missing (libonnx-testdata, scripts/install-deps.sh): skipped\n", s.opt.data);
        return 77;
    }
    if (load_known(&s) != 0) {
        free(s.known);
        return 2;
    }
    if (s.opt.report_path && !(s.report = fopen(s.opt.report_path, "w"))) {
        fprintf(stderr, "conformance: cannot write %s: %s\n", s.opt.report_path, strerror(errno));
        free(s.known);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *folders = strdup(s.opt.folders);
    bool missing = false;
    tally per[16];
    const char *names[16];
    int n_folders = 0;
    char *save = NULL;
    for (char *f = strtok_r(folders, ",", &save); f && n_folders < 16; f = strtok_r(NULL, ",", &save)) {
        memset(&per[n_folders], 0, sizeof per[0]);
        names[n_folders] = f;
        if (run_folder(&s, f, &per[n_folders]) != 0) missing = true;
        s.total.passed += per[n_folders].passed;
        s.total.failed += per[n_folders].failed;
        s.total.skipped += per[n_folders].skipped;
        s.total.known += per[n_folders].known;
        s.total.unexpected_pass += per[n_folders].unexpected_pass;
        n_folders++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out(&s, "%-20s %7s %7s %7s %7s\n", "folder", "passed", "failed", "skipped", "known");
    for (int i = 0; i < n_folders; i++)
        out(&s, "%-20s %7d %7d %7d %7d\n", names[i], per[i].passed, per[i].failed, per[i].skipped, per[i].known);
    summarize(&s, !s.opt.filter && !missing);
    out(&s, "(%.1f s; full per-test report: %s)\n",
        (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
        s.opt.report_path ? s.opt.report_path : "none, use --report FILE");
    bool ok = !missing && s.unexpected_fail == 0 && s.total.unexpected_pass == 0 && s.stale == 0;
    if (s.report) fclose(s.report);
    free(folders);
    free(s.known);
    free(s.reasons);
    return ok ? 0 : 1;
}

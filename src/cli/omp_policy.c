/* How korch's OpenMP threads wait between kernels, chosen before libgomp
 * starts.
 *
 * A plan runs one parallel region per kernel, dozens per inference. By
 * default libgomp's idle threads spin for a long time (GOMP_SPINCOUNT
 * 300,000) before they sleep. On an idle machine that is the fastest choice
 * (a sleeping thread costs a futex wake per kernel: 7-9% on ResNet-50 and
 * MobileNetV2); on a machine where other processes want the same cores a
 * spinning worker burns its time slice, the scheduler then runs the
 * competitor for a full slice while the next kernel waits at the barrier:
 * beside two CPU-bound processes a plan ran 4-40x slower, against 2-3x for
 * ONNX Runtime and for korch with passive waiting (bench/load/RESULTS.md).
 *
 * So the CLI looks at the machine when it starts: when other runnable
 * processes plus korch's threads exceed the CPUs, its threads wait
 * passively; otherwise libgomp's default stands. The look is the minimum of
 * a few samples of the kernel's count of runnable tasks, so that a
 * momentary spike (a compiler starting) does not count, a sustained load
 * does; tasks much nicer than korch (a background build at nice 19) do not
 * count, since they barely take CPU from it.
 *
 * libgomp reads its environment in its constructor, before main(), and
 * nothing runs early enough to change it in-process: the executable's
 * .preinit_array runs before libc has even set `environ` (glibc sets it in
 * its own initialiser, after preinit, discarding a setenv made there). So
 * the CLI sets OMP_WAIT_POLICY and executes itself again (once: the second
 * process finds it set). A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT is
 * never overridden, and KORCH_OMP_DEFAULTS=0 keeps libgomp's default.
 * Programs that link libkorch keep their own OpenMP settings (docs/cli.md,
 * "Environment"). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/cli.h"

#define SAMPLES 4
#define SAMPLE_GAP_NS 2000000L /* 2 ms: 8 ms at most added to a start on a busy machine */

/* runnable tasks on the machine now, this process included; -1 if unknown */
static int procs_running(void) {
    FILE *f = fopen("/proc/stat", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "procs_running %d", &n) == 1) break;
    if (f) fclose(f);
    return n;
}

/* the threads this run will use: --threads N on the command line, else
 * OMP_NUM_THREADS, else every usable CPU (the CLI's default) */
static int threads_wanted(char **argv, int cpus) {
    for (int i = 1; argv[i]; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--threads") == 0) v = argv[i + 1];
        else if (strncmp(argv[i], "--threads=", 10) == 0) v = argv[i] + 10;
        if (v && atoi(v) > 0) return atoi(v);
    }
    const char *env = getenv("OMP_NUM_THREADS");
    return env && atoi(env) > 0 ? atoi(env) : cpus;
}

/* Whether a runnable task of another process takes CPU time from ours: one
 * much nicer than us gets a sliver of a shared core (nice 19 against nice 0:
 * 15/1024 of the weight), unless the kernel groups tasks per session
 * (sched_autogroup), where another session weighs as a whole whatever its
 * tasks' nice values. */
#define NICE_MARGIN 5 /* weight ratio about 1/3 */

static bool autogroup_enabled(void) {
    FILE *f = fopen("/proc/sys/kernel/sched_autogroup_enabled", "r");
    int on = 0;
    if (f) {
        if (fscanf(f, "%d", &on) != 1) on = 0;
        fclose(f);
    }
    return on != 0;
}

/* runnable tasks (threads) of other processes that compete with ours;
 * -1 if /proc cannot say */
static int competing_tasks(int my_nice, long my_session, bool autogroup) {
    DIR *proc = opendir("/proc");
    if (!proc) return -1;
    int count = 0;
    pid_t self = getpid();
    struct dirent *p;
    while ((p = readdir(proc))) {
        char *end;
        long pid = strtol(p->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self) continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/task", pid);
        DIR *tasks = opendir(path);
        struct dirent *t;
        while (tasks && (t = readdir(tasks))) {
            if (t->d_name[0] == '.') continue;
            char stat[96], line[512];
            snprintf(stat, sizeof stat, "/proc/%ld/task/%.20s/stat", pid, t->d_name);
            FILE *f = fopen(stat, "r");
            size_t n = f ? fread(line, 1, sizeof line - 1, f) : 0;
            if (f) fclose(f);
            line[n] = '\0';
            char *rest = strrchr(line, ')'); /* the command name may hold spaces and parentheses */
            char state;
            long session, nice;
            /* after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
             * utime stime cutime cstime priority nice */
            if (!rest || sscanf(rest + 1, " %c %*d %*d %ld %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %ld",
                                &state, &session, &nice) != 3 || state != 'R')
                continue;
            if ((autogroup && session != my_session) || nice <= my_nice + NICE_MARGIN) count++;
        }
        if (tasks) closedir(tasks);
    }
    closedir(proc);
    return count;
}

/* other runnable tasks that compete with ours, the least seen over a few
 * samples: the kernel's count first (cheap, and enough on an idle machine),
 * then, when it sees others, a look at each to leave out the much nicer */
static int others_running(void) {
    int least = -1;
    for (int s = 0; s < SAMPLES; s++) {
        if (s) nanosleep(&(struct timespec){.tv_nsec = SAMPLE_GAP_NS}, NULL);
        int n = procs_running();
        if (n < 0) return 0;
        if (least < 0 || n - 1 < least) least = n - 1;
        if (least <= 0) return 0;
    }
    errno = 0;
    int my_nice = getpriority(PRIO_PROCESS, 0);
    if (errno) return least;
    bool autogroup = autogroup_enabled();
    long session = (long)getsid(0);
    for (int s = 0; s < 2 && least > 0; s++) {
        if (s) nanosleep(&(struct timespec){.tv_nsec = SAMPLE_GAP_NS}, NULL);
        int n = competing_tasks(my_nice, session, autogroup);
        if (n >= 0 && n < least) least = n;
    }
    return least;
}

void korch_cli_omp_policy(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    const char *opt = getenv("KORCH_OMP_DEFAULTS");
    if (opt && strcmp(opt, "0") == 0) return;
    int cpus = korch_cli_cpus_usable(), others = others_running();
    if (others <= 0 || others + threads_wanted(argv, cpus) <= cpus) return;
    char why[96];
    snprintf(why, sizeof why, "passive (%d other runnable process%s on %d CPUs at start)", others,
             others == 1 ? "" : "es", cpus);
    if (setenv("OMP_WAIT_POLICY", "passive", 0) != 0 || setenv("KORCH_OMP_CHOSEN", why, 1) != 0) return;
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc): run on with libgomp's default */
    unsetenv("OMP_WAIT_POLICY");
    unsetenv("KORCH_OMP_CHOSEN");
}

void korch_cli_omp_note(void) {
    const char *why = getenv("KORCH_OMP_CHOSEN");
    if (why && *why)
        fprintf(stderr, "korch: OpenMP threads wait %s; timings differ from an idle machine's (KORCH_OMP_DEFAULTS=0 "
                        "keeps libgomp's spinning)\n", why);
}

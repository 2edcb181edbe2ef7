/* How korch's OpenMP threads wait between kernels, chosen before libgomp
 * starts.
 *
 * A plan runs one parallel region per kernel, dozens per inference. By
 * default libgomp's idle threads spin for a long time (GOMP_SPINCOUNT
 * 300,000) before they sleep. On an idle machine that costs nothing; on a
 * shared one a spinning worker burns its time slice, the scheduler then runs
 * the competing process for a full slice while the next kernel waits at the
 * barrier (bench/load/RESULTS.md has the numbers). A sleeping thread that is
 * woken is scheduled promptly, so a short spin degrades gracefully.
 *
 * libgomp reads its environment in its constructor, before main(), and
 * nothing runs early enough to change it in-process: the executable's
 * .preinit_array runs before libc has even set `environ` (glibc sets it in
 * its own initialiser, after preinit, discarding a setenv made there). So
 * when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, the CLI sets
 * GOMP_SPINCOUNT and executes itself again (once: the second process finds
 * it set). A user's own setting is never overridden, and
 * KORCH_OMP_DEFAULTS=0 keeps libgomp's default. Programs that link libkorch
 * keep their own OpenMP settings (docs/cli.md, "Environment"). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* chosen by measurement, bench/load/RESULTS.md */
#define KORCH_CLI_GOMP_SPINCOUNT "1000"

void korch_cli_omp_policy(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    const char *opt = getenv("KORCH_OMP_DEFAULTS");
    if (opt && strcmp(opt, "0") == 0) return;
    if (setenv("GOMP_SPINCOUNT", KORCH_CLI_GOMP_SPINCOUNT, 0) != 0) return;
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc): run on with libgomp's default */
    unsetenv("GOMP_SPINCOUNT");
}

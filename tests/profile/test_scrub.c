/* The profiling cache scrub (KORCH_PROFILE_SCRUB_MB): parsed strictly, part
 * of the machine fingerprint (scrubbed and plain latencies must never share
 * database rows), and timing still works with it on. The setting is read once
 * per process, so each case runs in a child. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "profile/profile.h"
#include "test.h"

static volatile float sink;
static korch_status work(void *ctx, int it) {
    (void)ctx;
    float s = 0;
    for (int i = 0; i < 1000; i++) s += (float)(i ^ it);
    sink = s;
    return KORCH_OK;
}

/* child: 0 if the scrub reads as `want` MiB and the fingerprint says so */
static int child(const char *value, size_t want, char hash_out[33]) {
    if (value) setenv("KORCH_PROFILE_SCRUB_MB", value, 1);
    else unsetenv("KORCH_PROFILE_SCRUB_MB");
    if (korch_profile_scrub_mib() != want) return 1;
    char hash[33], text[1024], tag[32];
    if (korch_machine_fingerprint(2, "cc", hash, text, sizeof text) != KORCH_OK) return 2;
    snprintf(tag, sizeof tag, ";scrub=%zuMiB", want);
    if ((want > 0) != (strstr(text, ";scrub=") != NULL)) return 3;
    if (want > 0 && !strstr(text, tag)) return 4;
    korch_timer_options o = korch_timer_defaults();
    o.target_ms = 2;
    korch_timing t;
    if (korch_profile_time(work, NULL, &o, &t) != KORCH_OK || !(t.median_ms > 0) || t.repeats < o.min_repeats)
        return 5;
    memcpy(hash_out, hash, 33);
    return 0;
}

/* runs child() in a process; its hash comes back through a pipe */
static int run_case(const char *value, size_t want, char hash[33]) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        char h[33] = "";
        int rc = child(value, want, h);
        if (write(fd[1], h, sizeof h) != (ssize_t)sizeof h) rc = 9;
        _exit(rc);
    }
    close(fd[1]);
    memset(hash, 0, 33);
    ssize_t got = read(fd[0], hash, 33);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return got == 33 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void) {
    char plain[33], scrub8[33], scrub16[33], other[33];
    CHECK_MSG(run_case(NULL, 0, plain) == 0, "no scrub by default");
    CHECK_MSG(run_case("8", 8, scrub8) == 0, "KORCH_PROFILE_SCRUB_MB=8");
    CHECK_MSG(run_case("16", 16, scrub16) == 0, "KORCH_PROFILE_SCRUB_MB=16");
    CHECK(strcmp(plain, scrub8) != 0 && strcmp(scrub8, scrub16) != 0);
    /* anything but a whole number of MiB in 1..4096 leaves it off */
    static const char *const bad[] = {"", "0", "-4", "abc", "8MB", "99999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(run_case(bad[i], 0, other) == 0, "KORCH_PROFILE_SCRUB_MB=\"%s\" is not off", bad[i]);
        CHECK_MSG(strcmp(other, plain) == 0, "KORCH_PROFILE_SCRUB_MB=\"%s\" changed the fingerprint", bad[i]);
    }
    TEST_MAIN_END();
}

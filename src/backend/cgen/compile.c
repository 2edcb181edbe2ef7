/* The compiler driver: generated C -> shared object, cached on disk by the
 * hash of (source, compiler, flags).
 *
 * The compiler is run with posix_spawn, never through a shell; its stderr
 * goes to a log whose start is quoted in the error message. Objects are
 * written under a temporary name and renamed into place, so concurrent korch
 * processes sharing a cache never load a half-written file. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/cgen/cgen.h"
#include "backend/cgen/cgen_backend.h"

extern char **environ;

const char *cg_compiler(const korch_profile_options *o) { return o && o->cc && *o->cc ? o->cc : "cc"; }

static bool is_clang(const korch_profile_options *o) { return strstr(cg_compiler(o), "clang") != NULL; }

/* -fno-math-errno lets calls to maths functions vectorise (see the prelude);
 * no -ffast-math, so NaN and inf keep their meaning. With clang, OpenMP must
 * be libgomp, the runtime oneDNN and korch itself use. The optimisation
 * level is -O3 unless korch_profile_options.cc_opt (KORCH_CC_OPT) says -O1 or -O2 (for measurements; the
 * level is part of the flags, hence of the machine fingerprint and the
 * object cache key). */
static const char *const gcc_flags[] = {"-march=native", "-fopenmp", "-fno-math-errno", "-fno-trapping-math",
                                        "-fPIC", "-shared", "-w", NULL};
static const char *const clang_flags[] = {"-march=native", "-fopenmp=libgomp", "-fno-math-errno",
                                          "-fno-trapping-math", "-fPIC", "-shared", "-w", NULL};

/* The optimisation flags: options->cc_opt (words starting with -O or -f, at
 * most 8, for experiments), else -O3. */
static const char *opt_level(const korch_profile_options *o) {
    const char *v = o ? o->cc_opt : NULL;
    if (!v || !*v || strlen(v) > 200) return "-O3";
    int words = 0;
    for (const char *p = v; *p;) {
        while (*p == ' ') p++;
        if (!*p) break;
        if (p[0] != '-' || (p[1] != 'O' && p[1] != 'f') || ++words > 8) return "-O3";
        while (*p && *p != ' ') {
            if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '=' || *p == '_')) return "-O3";
            p++;
        }
    }
    return words ? v : "-O3";
}

/* Splits the optimisation flags into argv. */
static int opt_argv(const korch_profile_options *o, const char **argv, char *buf, size_t size) {
    snprintf(buf, size, "%s", opt_level(o));
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok && n < 8; tok = strtok_r(NULL, " ", &save)) argv[n++] = tok;
    return n;
}

/* Per thread: sessions are created concurrently, each with its options. */
/* Derived from the argv arrays, so that a changed flag changes the object
 * cache key and the machine fingerprint (a hand-kept copy once did not). */
const char *cg_compiler_flags(const korch_profile_options *o) {
    static _Thread_local char buf[512];
    int n = snprintf(buf, sizeof buf, "%s", opt_level(o));
    for (const char *const *f = is_clang(o) ? clang_flags : gcc_flags; *f && n > 0 && (size_t)n < sizeof buf; f++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, " %s", *f);
    return buf;
}

static korch_status mkdirs(const char *path) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return korch_error(KORCH_ERR_IO, "kernel cache path too long: %s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return korch_error(KORCH_ERR_IO, "cannot create directory %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return korch_error(KORCH_ERR_IO, "cannot create kernel cache directory %s: %s", tmp, strerror(errno));
    return KORCH_OK;
}

korch_status cg_cache_dir(const char *requested, char *buf, size_t size) {
    int n;
    if (requested && *requested) {
        n = snprintf(buf, size, "%s", requested);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg) n = snprintf(buf, size, "%s/korch/kernels", xdg);
        else if (home && *home) n = snprintf(buf, size, "%s/.cache/korch/kernels", home);
        else return korch_error(KORCH_ERR_IO, "no kernel cache directory: set XDG_CACHE_HOME or HOME");
    }
    if (n < 0 || (size_t)n >= size) return korch_error(KORCH_ERR_IO, "kernel cache path too long");
    return mkdirs(buf);
}

static korch_status write_file(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return korch_error(KORCH_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    size_t w = fwrite(data, 1, len, f);
    if (fclose(f) != 0 || w != len) return korch_error(KORCH_ERR_IO, "cannot write %s", path);
    return KORCH_OK;
}

/* Starts argv with stdout+stderr into `log`; returns 0, or -1 with errno. */
static int spawn(const char *const *argv, const char *log, pid_t *pid) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = posix_spawnp(pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return 0;
}

/* Runs argv with stdout+stderr into `log`; returns the exit status, or -1 with
 * errno when the program could not be started. */
static int run(const char *const *argv, const char *log) {
    pid_t pid;
    if (spawn(argv, log, &pid) != 0) return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The compiler's output from its first "error" on (else its start). */
static void read_head(const char *path, char *buf, size_t size) {
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char all[16384];
    size_t n = fread(all, 1, sizeof all - 1, f);
    all[n] = '\0';
    fclose(f);
    const char *from = strstr(all, "error");
    if (!from) from = all;
    while (from > all && from[-1] != '\n') from--;
    n = strlen(from);
    if (n > size - 1) n = size - 1;
    memcpy(buf, from, n);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\n' && i + 1 < n) buf[i] = ' ';
}

korch_status cg_library_open(const char *path, cg_library **out); /* loader.c */

/* Compilers run at once: options->cc_jobs, default one per online CPU (at most 4). */
int cg_compile_jobs(const korch_profile_options *o) {
    if (o && o->cc_jobs >= 1) return o->cc_jobs < 16 ? o->cc_jobs : 16;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : cpus > 4 ? 4 : (int)cpus;
}

/* Compilers started by this process (cg_compile_count). */
static long compiler_runs;

long cg_compile_count(void) { return __atomic_load_n(&compiler_runs, __ATOMIC_RELAXED); }

/* One unit in flight: its file names and the compiler's pid. */
typedef struct pending {
    int unit;
    pid_t pid;
    char so[4200], tmp_c[4200], tmp_so[4200], log[4200];
} pending;

static void unit_fail(cg_unit *u, korch_status st) {
    u->status = st;
    snprintf(u->error, sizeof u->error, "%s", korch_last_error());
}

/* Key, cache lookup, source file and compiler start. Returns false when the
 * unit is finished already (cached, or failed). */
static bool unit_start(const korch_profile_options *o, cg_unit *u, int index, const char *dir, pending *p) {
    u->lib = NULL;
    u->status = KORCH_OK;
    u->error[0] = '\0';
    /* key: source + compiler + flags */
    size_t klen = u->len + 1024;
    char *keytext = malloc(klen);
    if (!keytext) {
        unit_fail(u, korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory"));
        return false;
    }
    memcpy(keytext, u->source, u->len);
    int extra = snprintf(keytext + u->len, 1024, "\n/* %s %s */", cg_compiler(o), cg_compiler_flags(o));
    char key[33];
    cg_hash_hex(keytext, u->len + (size_t)(extra > 0 ? extra : 0), key);
    free(keytext);
    p->unit = index;
    snprintf(p->so, sizeof p->so, "%s/%s.so", dir, key);
    if (access(p->so, R_OK) == 0) {
        if (cg_library_open(p->so, &u->lib) == KORCH_OK) return false;
        unlink(p->so); /* a damaged cache entry: rebuild it */
    }
    /* unique per process and per call: sessions created on different threads
     * of one process may compile the same source at the same time */
    static unsigned long calls;
    int pid = (int)getpid();
    unsigned long call = __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    snprintf(p->tmp_c, sizeof p->tmp_c, "%s/%s-%d-%lu.c", dir, key, pid, call);
    snprintf(p->tmp_so, sizeof p->tmp_so, "%s/%s-%d-%lu.so.tmp", dir, key, pid, call);
    snprintf(p->log, sizeof p->log, "%s/%s-%d-%lu.log", dir, key, pid, call);
    korch_status st = write_file(p->tmp_c, u->source, u->len);
    if (st != KORCH_OK) {
        unit_fail(u, st);
        return false;
    }
    const char *argv[32];
    int a = 0;
    argv[a++] = cg_compiler(o);
    char opt_buf[256];
    a += opt_argv(o, argv + a, opt_buf, sizeof opt_buf);
    for (const char *const *f = is_clang(o) ? clang_flags : gcc_flags; *f; f++) argv[a++] = *f;
    argv[a++] = "-o";
    argv[a++] = p->tmp_so;
    argv[a++] = p->tmp_c;
    argv[a++] = "-lm";
    argv[a] = NULL;
    if (spawn(argv, p->log, &p->pid) != 0) {
        int err = errno;
        unlink(p->tmp_c);
        unlink(p->log);
        unit_fail(u, korch_error(KORCH_ERR_RUNTIME,
                                 "cannot run the C compiler \"%s\" (%s; set KORCH_CC, korch_profile_options.cc) to build "
                                 "kernel(s) %.200s%s",
                                 cg_compiler(o), strerror(err), u->what, strlen(u->what) > 200 ? "..." : ""));
        return false;
    }
    __atomic_add_fetch(&compiler_runs, 1, __ATOMIC_RELAXED);
    return true;
}

/* The compiler of p exited with rc: load the object or record the failure. */
static void unit_finish(const korch_profile_options *o, cg_unit *u, pending *p, int rc) {
    if (rc != 0) {
        char head[1200];
        read_head(p->log, head, sizeof head);
        unlink(p->tmp_so);
        unit_fail(u, korch_error(KORCH_ERR_RUNTIME,
                                 "C compiler \"%s\" failed (exit %d) on kernel(s) %.200s%s: %s (source kept at %s)",
                                 cg_compiler(o), rc, u->what, strlen(u->what) > 200 ? "..." : "", head, p->tmp_c));
        return;
    }
    unlink(p->tmp_c);
    unlink(p->log);
    if (rename(p->tmp_so, p->so) != 0) {
        unit_fail(u, korch_error(KORCH_ERR_IO, "cannot move compiled kernel(s) %.200s into %s: %s", u->what, p->so,
                                 strerror(errno)));
        unlink(p->tmp_so);
        return;
    }
    korch_status st = cg_library_open(p->so, &u->lib);
    if (st != KORCH_OK) unit_fail(u, st);
}

korch_status cg_compile_units(cg_unit *units, int n, const korch_profile_options *o, int jobs) {
    char dir[4096];
    KORCH_TRY(cg_cache_dir(o ? o->cache_dir : NULL, dir, sizeof dir));
    if (jobs < 1) jobs = 1;
    if (jobs > 16) jobs = 16;
    pending run_[16];
    int running = 0, next = 0;
    while (next < n || running > 0) {
        while (running < jobs && next < n) {
            if (unit_start(o, &units[next], next, dir, &run_[running])) running++;
            next++;
        }
        if (running == 0) continue;
        /* reap whichever compiler finishes first; they run for a while, so
         * polling every millisecond costs nothing */
        int done = -1, rc = 0;
        while (done < 0) {
            for (int r = 0; r < running && done < 0; r++) {
                int status = 0;
                pid_t w = waitpid(run_[r].pid, &status, WNOHANG);
                if (w == 0) continue;
                if (w < 0 && errno == EINTR) continue;
                rc = w < 0 ? 127 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
                done = r;
            }
            if (done < 0) nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        }
        unit_finish(o, &units[run_[done].unit], &run_[done], rc);
        run_[done] = run_[--running];
    }
    return KORCH_OK;
}

korch_status cg_compile(const char *source, size_t len, const korch_profile_options *o, const char *what,
                        cg_library **out) {
    cg_unit u = {.source = source, .len = len, .what = what};
    *out = NULL;
    KORCH_TRY(cg_compile_units(&u, 1, o, 1));
    if (u.status != KORCH_OK) return korch_error(u.status, "%s", u.error);
    *out = u.lib;
    return KORCH_OK;
}

/* First line of `cc --version` (cached per compiler), or NULL. */
const char *cg_compiler_version(const korch_profile_options *o) {
    static char cached_for[256], version[256];
    const char *cc = cg_compiler(o);
    if (version[0] && strcmp(cached_for, cc) == 0) return version;
    char dir[4096], log[4200];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s", tmp && *tmp ? tmp : "/tmp");
    snprintf(log, sizeof log, "%s/korch-ccversion-%d.txt", dir, (int)getpid());
    const char *argv[] = {cc, "--version", NULL};
    int rc = run(argv, log);
    char head[256];
    read_head(log, head, sizeof head);
    unlink(log);
    if (rc != 0) return NULL;
    head[strcspn(head, "\n")] = '\0';
    /* read_head turned newlines into spaces: keep the first line's worth */
    char *cut = strstr(head, " Copyright");
    if (cut) *cut = '\0';
    snprintf(version, sizeof version, "%s", head);
    snprintf(cached_for, sizeof cached_for, "%s", cc);
    return version;
}

const char *korch_cgen_identity(const korch_profile_options *o) {
    static _Thread_local char buf[1024];
    const char *v = cg_compiler_version(o);
    snprintf(buf, sizeof buf, "%s; %s; %s", CG_GENERATOR_VERSION, v ? v : cg_compiler(o), cg_compiler_flags(o));
    return buf;
}

/* The machine state around measurements: was the machine disturbed while a
 * profile was taken? (docs/profiling.md, "Profile quality")
 *
 * Profiles taken while other processes used the cores were kept forever and
 * reused on an idle machine (a build beside `korch optimize` made predicted
 * latencies 3-5x the measured ones). Two signals, both cheap:
 *
 * - wait: run_delay of this process's threads (/proc/self/task/N/schedstat,
 *   nanoseconds a runnable thread waited for a CPU) over run time + run
 *   delay, during the measurement itself. Precise per measurement, unlike
 *   /proc/stat's 10 ms ticks or the load average (a minute-long mean). Our
 *   own threads never wait for each other: korch runs at most one thread
 *   per core.
 * - probe: fixed work (every thread sweeps its own 128 KiB with a
 *   multiply-add), the median of 3 runs, over the fastest quiet run of the
 *   same probe on this machine (the idle reference, per probe fingerprint,
 *   kept in the database). Catches what the guest does not see as waiting:
 *   a busy host, frequency throttling, memory contention.
 *
 * The probe result is reused for KORCH_PROBE_EVERY_S (process-wide), so a
 * profiling call probes about four times a second of timing. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "profile/profile.h"

bool korch_profile_disturbed(double probe, double wait) { return wait > KORCH_WAIT_LIMIT || probe > KORCH_PROBE_LIMIT; }

bool korch_profile_quieter(double probe, double wait, double row_probe, double row_wait) {
    if (probe <= 0) return false; /* no probe now: nothing to compare */
    if (row_probe > 0 && probe * KORCH_QUIETER_FACTOR < row_probe) return true;
    return row_wait > KORCH_WAIT_LIMIT && wait >= 0 && wait <= KORCH_WAIT_LIMIT && (row_probe <= 0 || probe <= row_probe);
}

/* ---- test hooks (the CLI turns KORCH_PROFILE_STATE into one) -------------- */

static korch_profile_hooks hooks;

void korch_profile_set_hooks(const korch_profile_hooks *h) {
    if (h) hooks = *h;
    else memset(&hooks, 0, sizeof hooks);
}

double korch_profile_hook_run_ms(double measured_ms) {
    return hooks.run_ms ? hooks.run_ms(hooks.user, measured_ms) : measured_ms;
}

/* true when the state is given instead of measured */
static bool given_state(double *probe, double *wait) {
    if (hooks.state) {
        hooks.state(hooks.user, probe, wait);
        return true;
    }
    return false;
}

/* ---- /proc/self/task/N/schedstat ------------------------------------------ */

/* Sums run time and run delay (seconds) over this process's threads. */
static bool sched_sample(double *run_s, double *delay_s) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return false;
    unsigned long long run = 0, delay = 0;
    int seen = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[96];
        snprintf(path, sizeof path, "/proc/self/task/%.32s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue; /* the thread ended */
        unsigned long long r = 0, w = 0;
        if (fscanf(f, "%llu %llu", &r, &w) == 2) {
            run += r;
            delay += w;
            seen++;
        }
        fclose(f);
    }
    closedir(d);
    *run_s = (double)run * 1e-9;
    *delay_s = (double)delay * 1e-9;
    return seen > 0;
}

static double wait_share(double run0, double delay0, double run1, double delay1) {
    double run = run1 - run0, delay = delay1 - delay0;
    if (!(run + delay > 0) || delay < 0) return 0.0;
    return delay / (run + delay);
}

/* ---- the probe ------------------------------------------------------------- */

#define PROBE_FLOATS (32 * 1024) /* 128 KiB per thread: stays in L2 */
#define PROBE_SWEEPS 224 /* ~0.5 ms per thread on an idle Zen 4 core */
#define PROBE_RUNS 3 /* the result: over the last PROBE_RUNS runs */
#define PROBE_STABLE 1.05 /* ...once they agree within this factor */
#define PROBE_WARM_MS 3.0 /* ...and after at least this much probe work */
#define PROBE_MAX_RUNS 24
#define PROBE_MAX_MS 25.0 /* whatever the runs say, a probe stops here */

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static float *probe_buf;
static int probe_threads;
/* the last probe, process-wide: reused for KORCH_PROBE_EVERY_S */
static struct {
    int threads;
    double t, ms, wait;
} last_probe = {.t = -1e9};

static double probe_once(int threads) {
    double t0 = korch_now_s();
#pragma omp parallel num_threads(threads)
    {
#ifdef _OPENMP
        int t = omp_get_thread_num();
#else
        int t = 0;
#endif
        float *a = probe_buf + (size_t)t * PROBE_FLOATS;
        for (int s = 0; s < PROBE_SWEEPS; s++)
            for (int i = 0; i < PROBE_FLOATS; i++) a[i] = a[i] * 0.999f + 0.001f; /* converges to 1: no denormals */
    }
    return (korch_now_s() - t0) * 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* true when the last k of runs[0..n) agree within PROBE_STABLE */
static bool probe_settled(const double *runs, int n, int k) {
    if (n < k) return false;
    double lo = runs[n - 1], hi = runs[n - 1];
    for (int i = n - k; i < n; i++) {
        if (runs[i] < lo) lo = runs[i];
        if (runs[i] > hi) hi = runs[i];
    }
    return hi <= lo * PROBE_STABLE;
}

/* The probe time (ms) and the wait share while probing; false when it
 * cannot run (out of memory).
 *
 * Why it starts with an untimed run and runs until the runs settle, not a fixed 3 times: a vCPU that was
 * idle comes back slow. Measured on a 2-vCPU AMD EPYC guest with nothing
 * else running (2026-11-26): after 0.1-0.3 s of idle, the first runs took
 * 1.5-7 ms where the settled run takes 0.35 ms, the slowness lasted 3-12 ms
 * of work, and a first run's wake-up showed as run delay (a wait share of
 * 0.2-0.5 with nothing else runnable). korch idles whenever it waits for
 * the C compiler, so three back-to-back runs read 1.3-2.6x the reference
 * on an idle machine and marked 47% of a fresh MobileNetV2 database
 * provisional; and a probe read as waiting delays the next one by 2 s, so
 * one false reading marked a hundred measurements. A busy machine does not
 * settle: its runs stay slow (the median of the last ones is slow) or keep
 * waiting (two runs in a row that waited end the probe).
 * The result is over the last PROBE_RUNS runs, once they agree within 5%
 * after at least 3 ms of work (the ramp is gradual: 0.50, 0.44, 0.42, 0.40,
 * 0.37 ms): the fastest of them, and the wait share of their time. */
static bool run_probe(int threads, double *ms, double *wait) {
    if (probe_threads < threads) {
        free(probe_buf);
        probe_buf = aligned_alloc(64, (size_t)threads * PROBE_FLOATS * sizeof(float));
        probe_threads = probe_buf ? threads : 0;
        if (!probe_buf) return false;
        /* first touch by the thread that sweeps it */
#pragma omp parallel num_threads(threads)
        {
#ifdef _OPENMP
            int t = omp_get_thread_num();
#else
            int t = 0;
#endif
            for (int i = 0; i < PROBE_FLOATS; i++) probe_buf[(size_t)t * PROBE_FLOATS + i] = 1.0f;
        }
    }
    (void)probe_once(threads); /* the wake-up: neither timed nor counted in the wait share */
    /* run[i], delay[i]: this process's threads' totals before run i */
    double runs[PROBE_MAX_RUNS], run[PROBE_MAX_RUNS + 1], delay[PROBE_MAX_RUNS + 1], spent = 0;
    bool sched = sched_sample(&run[0], &delay[0]);
    int n = 0, waited = 0;
    while (n < PROBE_MAX_RUNS) {
        runs[n] = probe_once(threads);
        spent += runs[n++];
        bool w = false;
        if (sched && (sched = sched_sample(&run[n], &delay[n])))
            w = wait_share(run[n - 1], delay[n - 1], run[n], delay[n]) > KORCH_WAIT_LIMIT;
        waited = w ? waited + 1 : 0;
        if (waited >= 2) break; /* busy: on a busy machine every run costs many times its idle time */
        if ((waited == 0 && spent >= PROBE_WARM_MS && probe_settled(runs, n, PROBE_RUNS)) || spent > PROBE_MAX_MS) break;
    }
    int k = n < PROBE_RUNS ? n : PROBE_RUNS;
    double last[PROBE_RUNS];
    memcpy(last, runs + (n - k), (size_t)k * sizeof last[0]);
    qsort(last, (size_t)k, sizeof last[0], cmp_double);
    *ms = last[0];
    *wait = sched ? wait_share(run[n - k], delay[n - k], run[n], delay[n]) : -1;
    return true;
}

/* ---- the monitor ------------------------------------------------------------ */

struct korch_profile_monitor {
    korch_profile_db *db;
    int threads;
    char key[33];
    char text[1024]; /* the probe fingerprint, readable */
    double idle_ms; /* 0: no reference yet */
    int new_samples;
    double best_new_ms; /* fastest quiet probe of this monitor (0: none) */
};

korch_status korch_profile_monitor_open(korch_profile_db *db, int threads, korch_profile_monitor **out) {
    *out = NULL;
    korch_profile_monitor *m = calloc(1, sizeof *m);
    if (!m) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "profile monitor: out of memory");
    m->db = db;
    m->threads = threads > 0 ? threads : 1;
    /* the probe's speed depends on the CPU, the thread count and how korch
     * itself was compiled */
    char what[256];
#ifdef __VERSION__
    snprintf(what, sizeof what, "machine-state probe 1; korch %s; cc %s", korch_version(), __VERSION__);
#else
    snprintf(what, sizeof what, "machine-state probe 1; korch %s", korch_version());
#endif
    korch_status st = korch_machine_fingerprint(m->threads, what, 0, m->key, m->text, sizeof m->text);
    int samples = 0;
    bool found = false;
    if (st == KORCH_OK && db) st = korch_profile_db_get_probe(db, m->key, &m->idle_ms, &samples, &found);
    if (!found) m->idle_ms = 0;
    if (st != KORCH_OK) {
        free(m);
        return st;
    }
    *out = m;
    return KORCH_OK;
}

void korch_profile_monitor_close(korch_profile_monitor *m) {
    if (!m) return;
    if (m->db && m->new_samples > 0 && m->best_new_ms > 0) {
        /* losing the reference costs accuracy later, never correctness */
        if (korch_profile_db_put_machine(m->db, m->key, m->text) != KORCH_OK ||
            korch_profile_db_put_probe(m->db, m->key, m->best_new_ms, m->new_samples) != KORCH_OK)
            korch_error_clear();
    }
    free(m);
}

/* A probe result into the reference; returns probe / reference (0: none). */
static double account(korch_profile_monitor *m, double ms, double wait) {
    if (wait >= 0 && wait <= KORCH_WAIT_LIMIT) {
        if (m->idle_ms <= 0 || ms < m->idle_ms) m->idle_ms = ms;
        if (m->best_new_ms <= 0 || ms < m->best_new_ms) m->best_new_ms = ms;
        m->new_samples++;
    }
    return m->idle_ms > 0 ? ms / m->idle_ms : 0.0;
}

/* The probe ratio and the wait share while probing: the last probe when it
 * is recent, else a new one. */
static void probe_state(korch_profile_monitor *m, double *ratio, double *wait) {
    if (given_state(ratio, wait)) return;
    pthread_mutex_lock(&probe_lock);
    double now = korch_now_s(), ms = 0, w = -1;
    /* after a probe that waited, the next one is 8x later: on a busy machine
     * a parallel probe run waits for its cores (~15-40 ms seen on 2 busy
     * cores), and every measurement's own wait share already says busy */
    double every = last_probe.wait > KORCH_WAIT_LIMIT ? 8 * KORCH_PROBE_EVERY_S : KORCH_PROBE_EVERY_S;
    bool fresh = last_probe.threads == m->threads && now - last_probe.t < every;
    if (fresh) {
        ms = last_probe.ms;
        w = last_probe.wait;
    } else if (run_probe(m->threads, &ms, &w)) {
        last_probe.threads = m->threads;
        last_probe.t = korch_now_s();
        last_probe.ms = ms;
        last_probe.wait = w;
    }
    pthread_mutex_unlock(&probe_lock);
    *ratio = ms > 0 ? (fresh ? (m->idle_ms > 0 ? ms / m->idle_ms : 0.0) : account(m, ms, w)) : 0.0;
    *wait = w;
}

void korch_profile_monitor_state(korch_profile_monitor *m, double *probe, double *wait) {
    probe_state(m, probe, wait);
}

bool korch_profile_monitor_quiet(korch_profile_monitor *m) {
    double probe, wait;
    probe_state(m, &probe, &wait);
    return !korch_profile_disturbed(probe, wait);
}

void korch_profile_monitor_begin(korch_profile_monitor *m, korch_monitor_mark *mark) {
    memset(mark, 0, sizeof *mark);
    double wait;
    probe_state(m, &mark->probe, &wait);
    mark->t = korch_now_s();
    double given_probe, given_wait;
    if (!given_state(&given_probe, &given_wait)) mark->have_sched = sched_sample(&mark->run_s, &mark->delay_s);
}

void korch_profile_monitor_warm(korch_profile_monitor *m, korch_monitor_mark *mark) {
    (void)m;
    double given_probe, given_wait;
    if (mark->have_sched && !given_state(&given_probe, &given_wait))
        mark->have_sched = sched_sample(&mark->run_s, &mark->delay_s);
}

void korch_profile_monitor_end(korch_profile_monitor *m, const korch_monitor_mark *mark, korch_profile_quality *q) {
    double probe = mark->probe, wait = -1;
    if (given_state(&probe, &wait)) {
        q->probe = probe;
        q->wait = wait;
        q->provisional = korch_profile_disturbed(probe, wait);
        return;
    }
    double run = 0, delay = 0;
    if (mark->have_sched && sched_sample(&run, &delay)) wait = wait_share(mark->run_s, mark->delay_s, run, delay);
    /* a long measurement: the probe after it as well, the worse of the two */
    if (korch_now_s() - mark->t > KORCH_PROBE_EVERY_S) {
        double after, after_wait;
        probe_state(m, &after, &after_wait);
        if (after > probe) probe = after;
    }
    q->probe = probe;
    q->wait = wait;
    q->provisional = korch_profile_disturbed(probe, wait);
}

korch_status korch_profile_db_watch(korch_profile_db *db, int threads, double fresh_after, korch_profile_monitor **m) {
    KORCH_TRY(korch_profile_monitor_open(db, threads, m));
    korch_profile_db_set_monitor(db, *m);
    korch_profile_db_set_fresh_after(db, fresh_after);
    return KORCH_OK;
}

void korch_profile_db_unwatch(korch_profile_db *db, korch_profile_monitor *m) {
    if (db) korch_profile_db_set_monitor(db, NULL);
    korch_profile_monitor_close(m);
}

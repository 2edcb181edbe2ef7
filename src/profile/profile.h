/* Profiling infrastructure shared by the backends: timing methodology,
 * machine fingerprint, the SQLite profile database and the schedule tuner.
 * See docs/profiling.md. */
#ifndef KORCH_PROFILE_PROFILE_H
#define KORCH_PROFILE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/status.h"

/* ---- timer.c ----------------------------------------------------------------
 * Warm-up runs, then repeats until both min_repeats and target_ms are reached
 * (or max_repeats); the result is the median, with min, max and spread
 * (max - min). The callback gets the iteration number so it can rotate over
 * several buffer sets (cache state, see docs/profiling.md).
 *
 * Two optional early stops (zero disables them):
 * - steady: once target_ms is spent (a long kernel) and at least
 *   steady_repeats runs were timed, stop when max - min <= steady_spread *
 *   min; a kernel that runs steadily needs no more repeats.
 * - racing: stop after cutoff_runs timed runs that were all slower than
 *   cutoff_ms (`cut` is set); a schedule clearly slower than the best known
 *   one needs no precise number. */
/* How far a measurement can be trusted (quality.c; docs/profiling.md,
 * "Profile quality"). Every stored profile carries one. */
typedef struct korch_profile_quality {
    double iqr_ms;    /* interquartile range of the timed runs */
    double probe;     /* machine-state probe around it / the machine's idle probe time (0: not probed) */
    double wait;      /* share of its threads' time spent waiting for a CPU held by others (-1: unknown) */
    bool provisional; /* the machine was disturbed (or the quality is unknown): never preferred
                         over a clean profile, measured again when needed on a quiet machine */
} korch_profile_quality;

typedef struct korch_profile_monitor korch_profile_monitor;

typedef struct korch_timing {
    double median_ms, min_ms, max_ms, spread_ms;
    int repeats;
    bool cut; /* stopped by the racing rule */
    /* iqr_ms always; the rest when the timer had a monitor (else probe 0,
     * wait -1, provisional false) */
    korch_profile_quality quality;
} korch_timing;

typedef struct korch_timer_options {
    int warmup_runs;    /* at least this many untimed runs ... */
    double warmup_ms;   /* ... and at least this long */
    int min_repeats, max_repeats;
    double target_ms;   /* timed runs continue until this much time is spent */
    int steady_repeats; /* steady stop (see above) */
    double steady_spread;
    double cutoff_ms;   /* racing stop (see above) */
    int cutoff_runs;
    /* untimed, before every timed run (NULL: nothing): e.g. evicting the
     * kernel's constants from the caches (korch_cache_evict) */
    void (*before_run)(void *ctx);
    /* the machine state around the measurement (NULL: not assessed) */
    korch_profile_monitor *monitor;
    /* MiB each core writes, untimed, before every timed run (0: off; at most
     * KORCH_SCRUB_MAX_MIB); korch_profile_options.scrub_mib. Give the same
     * value to korch_machine_fingerprint. */
    int scrub_mib;
} korch_timer_options;
#define KORCH_SCRUB_MAX_MIB 4096

typedef korch_status (*korch_timed_fn)(void *ctx, int iteration);

korch_timer_options korch_timer_defaults(void);
korch_status korch_profile_time(korch_timed_fn fn, void *ctx, const korch_timer_options *o, korch_timing *out);
/* korch_now_s, korch_wall_s: core/clock.h */
/* Writes back and evicts [p, p + bytes) from every cache level (clflush on
 * x86; elsewhere nothing). */
void korch_cache_evict(const void *p, size_t bytes);

/* ---- cache_state.c ----------------------------------------------------------
 * How many copies of a kernel's non-constant operands (footprint: bytes of
 * its inputs and outputs; input_bytes: of its inputs alone) a profiler
 * rotates over: enough that small operands come from L3, one copy for
 * operands that stay in L3, and for footprints of the last-level cache's
 * size or more enough copies that each run streams its inputs from memory,
 * as in a plan (docs/profiling.md, "Cache state"). korch_llc_bytes: the
 * last-level cache one core shares (sysfs; 32 MiB when unknown). */
int korch_profile_buffer_sets(size_t footprint, size_t input_bytes);
int korch_profile_buffer_sets_for(size_t footprint, size_t input_bytes, int64_t llc_bytes);
int64_t korch_llc_bytes(void);
/* Recorded in the machine fingerprint: bumped when the rule above changes. */
#define KORCH_CACHE_STATE_VERSION 3

/* ---- fingerprint.c ----------------------------------------------------------
 * What makes a latency measured on one machine valid on another: CPU model,
 * ISA flags, thread count, compiler and its version, and the cache scrub
 * the latencies were measured with (scrub_mib > 0, korch_timer_options).
 * `hash` keys the database; `text` is the readable form stored beside it. */
korch_status korch_machine_fingerprint(int threads, const char *compiler, int scrub_mib, char hash[33], char *text,
                                       size_t size);
/* This CPU's model name and its ISA extensions that matter to kernels
 * (comma-separated), as the fingerprint records them; static strings. */
void korch_machine_cpu(const char **model, const char **isa);

/* ---- database.c ------------------------------------------------------------ */
typedef struct korch_profile_db korch_profile_db;

typedef struct korch_profile_record {
    char schedule[256];
    double latency_ms, spread_ms;
    double default_ms; /* the default schedule's latency (best records) */
    int trials;        /* schedules timed to find it (best records) */
    korch_profile_quality quality; /* zero: clean, not probed; rows of a korch before
                                      profile quality read back as provisional */
    double created;    /* when it was measured, unix seconds (filled by lookups) */
} korch_profile_record;

/* path NULL or "": $XDG_CACHE_HOME/korch/profile.db (~/.cache fallback).
 * A corrupt file is moved aside (<path>.corrupt) and rebuilt, with a warning;
 * a read-only one is used read-only (nothing is saved), with a warning; a
 * locked one is waited for (busy_ms, korch_profile_options.db_busy_ms;
 * <= 0: 10 s), then a clear error. */
korch_status korch_profile_db_open(const char *path, int busy_ms, korch_profile_db **out);
void korch_profile_db_close(korch_profile_db *db);
const char *korch_profile_db_path(const korch_profile_db *db);
bool korch_profile_db_readonly(const korch_profile_db *db);

korch_status korch_profile_db_get_best(korch_profile_db *db, const char *backend, const char *sig, const char *machine,
                                       korch_profile_record *rec, bool *found);
korch_status korch_profile_db_put_best(korch_profile_db *db, const char *backend, const char *sig, const char *machine,
                                       const korch_profile_record *rec);
korch_status korch_profile_db_get_trial(korch_profile_db *db, const char *backend, const char *sig, const char *schedule,
                                        const char *machine, double *latency_ms, double *spread_ms, bool *found);
korch_status korch_profile_db_put_trial(korch_profile_db *db, const char *backend, const char *sig, const char *schedule,
                                        const char *machine, double latency_ms, double spread_ms);
/* The same for trials, with quality (rec->schedule is the schedule). The
 * two calls above read and write clean rows of unknown quality. */
korch_status korch_profile_db_get_trial_record(korch_profile_db *db, const char *backend, const char *sig,
                                               const char *schedule, const char *machine, korch_profile_record *rec,
                                               bool *found);
korch_status korch_profile_db_put_trial_record(korch_profile_db *db, const char *backend, const char *sig,
                                               const char *machine, const korch_profile_record *rec);
korch_status korch_profile_db_put_machine(korch_profile_db *db, const char *machine, const char *text);

/* Reuse rules of best and trial rows (docs/profiling.md, "Profile quality"):
 * - a put never replaces a clean row with a provisional measurement (the
 *   clean one stays; a later clean measurement replaces either);
 * - with a monitor set, a lookup answers "absent" for a provisional row
 *   while the machine is quiet, so the caller measures it again (and the
 *   put replaces it);
 * - with fresh_after > 0 (korch optimize --reprofile), rows measured before
 *   that time (unix seconds) read as absent and any put replaces them.
 * The monitor must outlive its use by db (or be unset with NULL). */
void korch_profile_db_set_monitor(korch_profile_db *db, korch_profile_monitor *m);
/* What every backend does after opening its database: a monitor for
 * measurements with `threads` threads, set on db with fresh_after; unwatch
 * unsets and closes it (m may be NULL). */
korch_status korch_profile_db_watch(korch_profile_db *db, int threads, double fresh_after, korch_profile_monitor **m);
void korch_profile_db_unwatch(korch_profile_db *db, korch_profile_monitor *m);
void korch_profile_db_set_fresh_after(korch_profile_db *db, double unix_s);
typedef struct korch_profile_db_reuse {
    long provisional_used;  /* provisional rows answered (the machine was busy) */
    long remeasure;         /* provisional rows read as absent (the machine quiet, or markedly quieter than then) */
    long stale;             /* rows read as absent: older than fresh_after */
} korch_profile_db_reuse;
korch_profile_db_reuse korch_profile_db_reuse_counts(const korch_profile_db *db);

/* The idle time of the machine-state probe per probe fingerprint (quality.c). */
korch_status korch_profile_db_get_probe(korch_profile_db *db, const char *machine, double *idle_ms, int *samples,
                                        bool *found);
korch_status korch_profile_db_put_probe(korch_profile_db *db, const char *machine, double idle_ms, int samples);
/* Verdicts of kernel verification (src/verify): "verified" or "wrong". */
typedef struct korch_verdict_record {
    char verdict[16];
    double worst_ratio; /* worst error / tolerance */
    double max_abs;
    char detail[256];
} korch_verdict_record;

korch_status korch_profile_db_get_verdict(korch_profile_db *db, const char *backend, const char *sig,
                                          const char *schedule, const char *machine, korch_verdict_record *rec,
                                          bool *found);
korch_status korch_profile_db_put_verdict(korch_profile_db *db, const char *backend, const char *sig,
                                          const char *schedule, const char *machine, const korch_verdict_record *rec);
/* Batch writes in one transaction (much faster than one per row). */
korch_status korch_profile_db_begin(korch_profile_db *db);
korch_status korch_profile_db_commit(korch_profile_db *db);

/* ---- quality.c ---------------------------------------------------------------
 * The machine state around measurements (docs/profiling.md, "Profile
 * quality"). Two signals:
 * - wait: the share of the time this process's threads were runnable but
 *   waited for a CPU (run_delay in /proc/self/task/N/schedstat, ns), i.e.
 *   other processes held the cores the kernel wanted;
 * - probe: a fixed compute probe (every thread sweeps 128 KiB with a
 *   multiply-add, the median of 3 runs, ~0.5 ms on an idle core) divided by
 *   the fastest quiet run of that probe ever seen on this machine (stored
 *   per probe fingerprint in the database): catches slowdowns the guest
 *   cannot see (host contention, throttling).
 * A measurement is disturbed when wait > KORCH_WAIT_LIMIT or probe >
 * KORCH_PROBE_LIMIT; a disturbed measurement is stored as provisional. The
 * probe is taken again when the last one is older than KORCH_PROBE_EVERY_S
 * (before a measurement, and after a long one), so it costs ~1% of
 * profiling time. */
#define KORCH_WAIT_LIMIT 0.10
#define KORCH_PROBE_LIMIT 1.25
#define KORCH_PROBE_EVERY_S 0.25

bool korch_profile_disturbed(double probe, double wait);
/* Whether the machine now (probe, wait) is markedly quieter than it was
 * around a provisional measurement (row_probe, row_wait): the probe at
 * least KORCH_QUIETER_FACTOR lower, or the wait back under its limit with
 * the probe no worse. Such a row is measured again even if the machine is
 * not quiet yet: on a machine that never turns quiet (a shared VM whose
 * sibling core is always busy), profiles taken under a heavy load would
 * otherwise stay in use forever. */
#define KORCH_QUIETER_FACTOR 1.25
bool korch_profile_quieter(double probe, double wait, double row_probe, double row_wait);

/* A monitor for measurements with `threads` threads; db (may be NULL) holds
 * the idle probe reference, read now and updated at close. */
korch_status korch_profile_monitor_open(korch_profile_db *db, int threads, korch_profile_monitor **out);
void korch_profile_monitor_close(korch_profile_monitor *m);
/* The state now (a fresh probe when the last is too old). */
void korch_profile_monitor_state(korch_profile_monitor *m, double *probe, double *wait);
bool korch_profile_monitor_quiet(korch_profile_monitor *m);

/* Around one measurement (korch_profile_time calls these). */
typedef struct korch_monitor_mark {
    double t, probe, run_s, delay_s;
    bool have_sched;
} korch_monitor_mark;
void korch_profile_monitor_begin(korch_profile_monitor *m, korch_monitor_mark *mark);
/* After the warm-up: the wait share counts from here. Why: the first runs
 * after an idle spell wake the vCPUs, which shows as run delay (up to half
 * of a short first run on an idle guest), not as another process. */
void korch_profile_monitor_warm(korch_profile_monitor *m, korch_monitor_mark *mark);
void korch_profile_monitor_end(korch_profile_monitor *m, const korch_monitor_mark *mark, korch_profile_quality *q);

/* Test hooks (never set outside tests; not thread-safe: set before
 * profiling). run_ms: the duration every timed run is recorded with, given
 * the measured one (a fake timer). state: the machine state instead of
 * probing it. NULL removes the hooks. The CLI sets a state hook for
 * KORCH_PROFILE_STATE=quiet|busy (tests of whole commands; src/cli/cli_env.c). */
typedef struct korch_profile_hooks {
    double (*run_ms)(void *user, double measured_ms);
    void (*state)(void *user, double *probe, double *wait);
    void *user;
} korch_profile_hooks;
void korch_profile_set_hooks(const korch_profile_hooks *hooks);
/* the run_ms hook applied (the identity without hooks) */
double korch_profile_hook_run_ms(double measured_ms);

/* ---- schedule_search.c------------------------------------------------------------
 * Explore, then exploit ("droplet search", Canesche et al. 2024): time the
 * start point and `explore` random points, then repeatedly time the unvisited
 * +-1 neighbours of the best point along every knob, moving to the best of
 * them while that improves, within `budget` trials. The first descent
 * round also times the start's own neighbours when another point is best:
 * a noisy first measurement of the start must not hide them. Points are
 * index vectors
 * (knob k takes values 0..size[k]-1). The tuner only proposes; the caller
 * times (in batches across kernels) and reports. */
#define KORCH_TUNER_MAX_KNOBS 12

typedef struct korch_tune_point {
    int8_t k[KORCH_TUNER_MAX_KNOBS];
} korch_tune_point;

typedef struct korch_tuner {
    int n_knobs;
    int size[KORCH_TUNER_MAX_KNOBS];
    int budget, explore;
    korch_tune_point start;
    int phase; /* 0 explore, 1 descent, 2 done */
    korch_tune_point *seen;
    double *ms;
    int n_seen, cap;
    int best;          /* index into seen, -1 before any report */
    int center;        /* best when the current descent round was proposed */
    int pending;       /* proposed, not yet reported */
    uint64_t rng;
    /* knobs whose values are unordered choices (bit k: knob k): every other
     * value is a neighbour, not just the next one up or down. 0 after init. */
    uint32_t categorical;
} korch_tuner;

void korch_tuner_init(korch_tuner *t, int n_knobs, const int *size, const korch_tune_point *start, int budget,
                      int explore, uint64_t seed);
/* Up to max new points to time; 0 when the search is over. */
int korch_tuner_propose(korch_tuner *t, korch_tune_point *out, int max);
void korch_tuner_report(korch_tuner *t, const korch_tune_point *p, double ms);
bool korch_tuner_best(const korch_tuner *t, korch_tune_point *p, double *ms);
double korch_tuner_start_ms(const korch_tuner *t); /* latency of the start point, or -1 */
void korch_tuner_free(korch_tuner *t);

#endif

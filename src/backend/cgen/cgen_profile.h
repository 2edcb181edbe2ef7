/* Internal to the cgen profiler: one job per distinct kernel signature, and
 * the session a profiling call shares (cgen_profile.c: entry point, database
 * lookups, quick mode; cgen_tune.c: tuning rounds). */
#ifndef KORCH_BACKEND_CGEN_CGEN_PROFILE_H
#define KORCH_BACKEND_CGEN_CGEN_PROFILE_H

#include "backend/cgen/cgen.h"
#include "backend/cgen/cgen_backend.h"
#include "backend/cgen/cgen_timing.h"
#include "profile/profile.h"

typedef struct cg_code_seen {
    char hash[33];
    double ms, spread;
} cg_code_seen;

/* a schedule timed in this call: its compiled function (lib held) */
typedef struct cg_timed {
    cg_library *lib;
    cg_entry fn;
    double ms, spread;
    korch_tune_point p;
} cg_timed;

typedef struct cg_job {
    int spec; /* the first spec with this signature */
    cg_kernel k;
    korch_tuner tuner;
    cg_code_seen *codes; /* generated code already timed (knobs that do not apply) */
    int n_codes;
    /* the fastest schedule timed in this call, and the runner-up (the
     * fastest other one, for the final duel: cgen_tune.c) */
    cg_timed best, second;
    int trials; /* schedules timed in this call */
    bool interrupted; /* the budget ran out before the search ended */
    char failure[256]; /* last compiler error of one of its schedules */
} cg_job;

typedef struct cg_session {
    cg_job *jobs;
    int n_jobs;
    korch_profile_db *db;
    korch_profile_monitor *monitor; /* the machine state around every measurement */
    const char *machine;
    const korch_profile_options *options;
    int threads;
    int compile_jobs; /* compilers at once */
    double deadline; /* korch_now_s() after which no trial starts; 0: none */
    cg_pool *pool;
    korch_timer_options trial_timer;
    korch_cgen_stats *stats;
} cg_session;

/* Function names of generated kernels (cgen_backend.c). */
void cg_kernel_name(const cg_kernel *k, const cg_schedule *s, char *buf, size_t size);
int cg_threads(const korch_profile_options *o);
/* An option's value, or `fallback` when it is 0 (unset). */
double cg_option(double value, double fallback);
/* The tuning log level of o (korch_profile_options.tune_log, default 1). */
int cg_tune_log(const korch_profile_options *o);

/* cgen_tune.c */
/* The tuner of a job, starting from its fastest quick schedule in the
 * database (else the default). */
void cg_tune_init(cg_session *S, cg_job *j, int budget, int explore);
/* One round: the proposals of every job, compiled together and timed.
 * *proposed: how many schedules the tuners asked for (0: all done). */
korch_status cg_tune_round(cg_session *S, int *proposed);
/* The result of a tuned job; stores it as the best when the search ended. */
void cg_tune_finish(cg_session *S, cg_job *j, korch_profile_result *r);
void cg_job_free(cg_job *j);

/* Units of at most `max_per_unit` functions, at least one per compiler. */
int cg_unit_size(int n_functions, int compile_jobs, int max_per_unit);

#endif

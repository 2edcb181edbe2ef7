/* The backend interface's types: kernel kinds, runnable kernels, profiling
 * options and results, and the table of functions every backend fills
 * (korch_backend_ops). A backend includes this and nothing of another
 * backend; backend/backend.h dispatches through the table. */
#ifndef KORCH_BACKEND_BACKEND_TYPES_H
#define KORCH_BACKEND_BACKEND_TYPES_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend_list.h"
#include "ir/nodeset.h"

typedef enum korch_backend_kind {
#define KORCH_BACKEND_ENUM_ENTRY(KIND, name) KORCH_BACKEND_##KIND,
    KORCH_BACKEND_LIST(KORCH_BACKEND_ENUM_ENTRY)
#undef KORCH_BACKEND_ENUM_ENTRY
    KORCH_BACKEND_COUNT
} korch_backend_kind;

/* A runnable kernel, built for one schedule. */
typedef struct korch_kernel {
    korch_backend_kind backend;
    char impl[160]; /* human-readable implementation, e.g. "cgen k3f2a1 tile=64 par=0"
                       or "dnnl brg:avx512_core" */
    void *state;
    /* bit j: input j is a constant the kernel copied when it was built (oneDNN's
     * reordered weights) and never reads at run time, so its data may be
     * released (korch_executor_release_constants) */
    uint64_t inputs_copied;
    korch_status (*run)(struct korch_kernel *k, void *const *inputs, void *const *outputs);
    void (*destroy)(struct korch_kernel *k);
} korch_kernel;

typedef struct korch_profile_options {
    int threads;          /* OpenMP threads kernels run with */
    double budget_s;      /* total tuning time budget for this call (<= 0: backend default) */
    const char *db_path;  /* profile database; NULL: $XDG_CACHE_HOME/korch/profile.db */
    const char *cache_dir;/* compiled-object cache; NULL: $XDG_CACHE_HOME/korch/kernels */
    bool progress;        /* progress bar on stderr (only when stderr is a terminal) */
    bool quiet;           /* no informational lines on stderr (korch optimize -q); warnings stay */
    bool quick;           /* time one default schedule per kernel, no tuning (results say
                             default_only); the orchestrator tunes what its plans use */
    double fresh_after;   /* > 0: stored profiles measured before this time (unix seconds) are
                             measured again and replaced (korch optimize --reprofile) */
    /* Tuning (cgen; docs/profiling.md). 0 means the default in brackets. The
     * CLI fills them from KORCH_TUNE_* / KORCH_BUSY_US (docs/cli.md). */
    int tune_trials;      /* schedules tried per kernel [24] */
    int tune_explore;     /* of which random exploration before the droplet search [7] */
    int tune_log;         /* stderr: < 0 nothing, 1 a summary per call, 2 also per kernel [1] */
    double busy_us;       /* an empty parallel region slower than this: the machine is busy and
                             quick profiling times serial schedules [100] */
    /* Toolchain, measurement and test settings. The library never reads the
     * environment for them: the CLI fills them from KORCH_CC, KORCH_CC_OPT,
     * ... (src/cli/cli_env.c, docs/cli.md "Environment"); a C API caller gets
     * the defaults in brackets (0 / NULL). */
    const char *cc;       /* C compiler for generated kernels ["cc"] */
    const char *cc_opt;   /* its optimisation flags: words starting with -O or -f, at most 8;
                             anything else is ignored ["-O3"]. The compiler and flags are part
                             of the kernel cache key and the machine fingerprint */
    int cc_jobs;          /* compilers run at once while profiling [one per CPU, at most 4] */
    long long cg_stream_min_bytes; /* cgen: outputs at least this large may be written with
                             non-temporal stores [the last-level cache]; tests lower it */
    int scrub_mib;        /* MiB each core writes before every timed run, 1..4096 [0: off];
                             part of the machine fingerprint (docs/profiling.md, "Cache state") */
    int db_busy_ms;       /* how long to wait for a locked profile database [10000] */
    const char *dnnl_variants; /* oneDNN variants timed, e.g. "fmt=plain;fmt=plain thr=1" [all] */
    bool dnnl_log;        /* one stderr line per timed oneDNN variant */
} korch_profile_options;

typedef struct korch_profile_result {
    korch_status status;  /* KORCH_OK, or why this spec could not be implemented */
    char reason[256];     /* when status != KORCH_OK */
    double latency_ms;    /* median */
    double spread_ms;     /* max - min of the timed repeats */
    char schedule[256];   /* opaque to callers; rebuilds the same kernel */
    char impl[160];
    char key[48];         /* the backend's signature of the kernel, its profile database key
                             (with the schedule: the key of stored verdicts, src/verify) */
    bool from_database;   /* nothing was compiled or timed */
    bool default_only;    /* only the default schedule was timed (quick mode): tuning can
                             lower latency_ms; false when tuned or nothing to tune */
    bool provisional;     /* measured while the machine was disturbed, or a stored profile of
                             unknown quality (docs/profiling.md, "Profile quality") */
} korch_profile_result;

typedef enum korch_fault {
    KORCH_FAULT_NONE,
    KORCH_FAULT_ELEMENT,    /* one element of the first output is off by +1 */
    KORCH_FAULT_SCALE,      /* every element of the first output becomes 1.5 x + 0.25 */
    KORCH_FAULT_ACCUMULATE, /* the first output is added to what its buffer held (right on zeroed memory only) */
} korch_fault;
typedef korch_fault (*korch_fault_fn)(void *user, korch_backend_kind kind, const korch_kernel_spec *spec);
/* One backend: what the dispatcher (backend.c) calls for its kind. Every
 * backend defines `const korch_backend_ops korch_backend_ops_<name>` in its
 * own folder and has one line in backend_list.h; nothing else names it.
 * The calls' contracts are those of korch_backend_supports / _profile /
 * _build / _identity in backend.h (arguments already checked). */
typedef struct korch_backend_ops {
    const char *name; /* as in plans, the database and logs: "cgen" */
    bool (*supports)(const korch_kernel_spec *spec, char *reason, size_t size);
    korch_status (*profile)(const korch_kernel_spec *specs, int n, const korch_profile_options *options,
                            korch_profile_result *results);
    korch_status (*build)(const korch_kernel_spec *specs, const char *const *schedules, int n,
                          const korch_profile_options *options, korch_kernel **kernels);
    const char *(*identity)(const korch_profile_options *options);
    /* optional (NULL: the backend's build needs no schedule to be
     * reproducible): see korch_backend_untimed_schedule in backend.h */
    bool (*untimed_schedule)(const korch_kernel_spec *spec, char *out, size_t size);
} korch_backend_ops;

#endif

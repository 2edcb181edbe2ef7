/* Progress on stderr. On a terminal, a bar redrawn in place at most ten
 * times a second: "label [=====     ] 120/400  ETA 1m05s". Elsewhere (CI
 * logs, 2>log, pipes) plain lines, at most one every few seconds, and one
 * when the stage ends: "korch: profiling 120/400, 35 s elapsed, about 1m05s
 * left" ... "korch: profiling 400/400, done in 2m10s". */
#ifndef KORCH_ORCHESTRATE_PROGRESS_H
#define KORCH_ORCHESTRATE_PROGRESS_H

#include <stdbool.h>

#include "core/clock.h"

typedef struct korch_progress {
    bool enabled; /* the bar, on a terminal */
    bool plain;   /* plain lines, when stderr is not a terminal */
    bool ending;  /* korch_progress_end is printing the closing line */
    const char *label;
    double start_ms, last_draw_ms;
    long done, total;
} korch_progress;

void korch_progress_begin(korch_progress *p, const char *label, long total, bool wanted);
void korch_progress_update(korch_progress *p, long done, long total);
void korch_progress_end(korch_progress *p);
/* Clears the bar's line before something else writes to stderr; the next
 * update draws it again. */
void korch_progress_clear(korch_progress *p);

#endif

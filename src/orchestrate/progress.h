/* A progress bar on stderr: "label [=====     ] 120/400  ETA 1m05s".
 * Drawn only when stderr is a terminal, at most ten times a second, so
 * logs and pipes stay clean. */
#ifndef KORCH_ORCHESTRATE_PROGRESS_H
#define KORCH_ORCHESTRATE_PROGRESS_H

#include <stdbool.h>

#include "core/clock.h"

typedef struct korch_progress {
    bool enabled;
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

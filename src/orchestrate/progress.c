#include "orchestrate/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static void draw(korch_progress *p) {
    enum { WIDTH = 30 };
    long total = p->total > 0 ? p->total : 1;
    long done = p->done < total ? p->done : total;
    int fill = (int)(WIDTH * done / total);
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '=' : ' ';
    bar[WIDTH] = '\0';
    double elapsed = (korch_now_ms() - p->start_ms) / 1e3;
    char eta[32] = "--";
    if (done > 0 && done < total) {
        double left = elapsed * (double)(total - done) / (double)done;
        if (left < 60) snprintf(eta, sizeof eta, "%.0fs", left);
        else snprintf(eta, sizeof eta, "%dm%02ds", (int)(left / 60), (int)left % 60);
    } else if (done >= total) {
        snprintf(eta, sizeof eta, "done in %.1fs", elapsed);
    }
    fprintf(stderr, "\r%s [%s] %ld/%ld  ETA %s\033[K", p->label, bar, done, total, eta);
    fflush(stderr);
    p->last_draw_ms = korch_now_ms();
}

void korch_progress_begin(korch_progress *p, const char *label, long total, bool wanted) {
    p->enabled = wanted && isatty(STDERR_FILENO);
    p->label = label;
    p->start_ms = korch_now_ms();
    p->last_draw_ms = 0;
    p->done = 0;
    p->total = total;
    if (p->enabled) draw(p);
}

void korch_progress_update(korch_progress *p, long done, long total) {
    p->done = done;
    p->total = total;
    if (p->enabled && korch_now_ms() - p->last_draw_ms >= 100.0) draw(p);
}

void korch_progress_end(korch_progress *p) {
    if (!p->enabled) return;
    draw(p);
    fprintf(stderr, "\n");
    p->enabled = false;
}

void korch_progress_clear(korch_progress *p) {
    if (!p->enabled) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    p->last_draw_ms = 0; /* redraw at the next update */
}

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

/* seconds as "12s" or "3m05s" */
static void format_seconds(double s, char *buf, size_t size) {
    if (s < 10) snprintf(buf, size, "%.1fs", s);
    else if (s < 60) snprintf(buf, size, "%.0fs", s);
    else snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)s % 60);
}

/* One plain line: stage, done/total, elapsed, estimate. */
static void plain_line(korch_progress *p) {
    long total = p->total > 0 ? p->total : 0;
    long done = p->done < total ? p->done : total;
    double elapsed = (korch_now_ms() - p->start_ms) / 1e3;
    char spent[32], left[32];
    format_seconds(elapsed, spent, sizeof spent);
    fflush(stdout); /* after the log lines before it, in a 2>&1 log */
    if (done >= total) {
        fprintf(stderr, "korch: %s %ld/%ld, done in %s\n", p->label, done, total, spent);
    } else if (p->ending) {
        fprintf(stderr, "korch: %s %ld/%ld, stopped after %s\n", p->label, done, total, spent);
    } else if (done > 0) {
        format_seconds(elapsed * (double)(total - done) / (double)done, left, sizeof left);
        fprintf(stderr, "korch: %s %ld/%ld, %s elapsed, about %s left\n", p->label, done, total, spent, left);
    } else {
        fprintf(stderr, "korch: %s %ld/%ld, %s elapsed\n", p->label, done, total, spent);
    }
    fflush(stderr);
    p->last_draw_ms = korch_now_ms();
}

/* a plain line at most this often */
#define PLAIN_EVERY_MS 5000.0

void korch_progress_begin(korch_progress *p, const char *label, long total, bool wanted) {
    p->enabled = wanted && isatty(STDERR_FILENO);
    p->plain = wanted && !p->enabled;
    p->ending = false;
    p->label = label;
    p->start_ms = korch_now_ms();
    p->last_draw_ms = p->start_ms; /* the first plain line after PLAIN_EVERY_MS */
    p->done = 0;
    p->total = total;
    if (p->enabled) draw(p);
}

void korch_progress_update(korch_progress *p, long done, long total) {
    p->done = done;
    p->total = total;
    if (p->enabled && korch_now_ms() - p->last_draw_ms >= 100.0) draw(p);
    if (p->plain && done < total && korch_now_ms() - p->last_draw_ms >= PLAIN_EVERY_MS) plain_line(p);
}

void korch_progress_end(korch_progress *p) {
    if (p->plain) {
        /* the closing line, however short the stage: a log shows every stage */
        p->ending = true;
        plain_line(p);
        p->plain = false;
    }
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

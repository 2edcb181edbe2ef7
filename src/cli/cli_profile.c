/* `korch run PLAN --bench N --profile`: every kernel timed inside the plan,
 * next to the latency it was profiled at in isolation (the number the binary
 * program minimised). The plan's measured/predicted ratio says how far off
 * the sum is; this says which kernels and which backend the difference comes
 * from, and how much of the wall time falls between kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "runtime/executor.h"
#include "runtime/plan.h"

struct korch_cli_profile {
    int n_kernels;
    long runs, recorded;
    double *last;    /* per kernel, the run just made (the executor writes it) */
    double *samples; /* runs x n_kernels */
};

korch_cli_profile *korch_cli_profile_create(int n_kernels, long runs) {
    korch_cli_profile *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n_kernels = n_kernels;
    p->runs = runs;
    p->last = calloc((size_t)n_kernels + 1, sizeof *p->last);
    p->samples = calloc((size_t)runs * (size_t)n_kernels + 1, sizeof *p->samples);
    if (!p->last || !p->samples) {
        korch_cli_profile_free(p);
        return NULL;
    }
    return p;
}

void korch_cli_profile_free(korch_cli_profile *p) {
    if (!p) return;
    free(p->last);
    free(p->samples);
    free(p);
}

double *korch_cli_profile_slots(korch_cli_profile *p) { return p->last; }

void korch_cli_profile_record(korch_cli_profile *p) {
    if (p->recorded >= p->runs) return;
    memcpy(p->samples + p->recorded * p->n_kernels, p->last, (size_t)p->n_kernels * sizeof *p->last);
    p->recorded++;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct row {
    int kernel;
    double measured, predicted;
} row;

static int cmp_gap(const void *a, const void *b) {
    const row *x = a, *y = b;
    double gx = x->measured - x->predicted, gy = y->measured - y->predicted;
    return (gx < gy) - (gx > gy);
}

/* "ew.ADD ew.RELU ..." cut to fit a column */
static void short_primitives(const char *text, char *out, size_t size) {
    snprintf(out, size, "%s", text ? text : "");
    if (text && strlen(text) >= size && size > 4) memcpy(out + size - 4, "...", 4);
}

void korch_cli_profile_report(const korch_cli_profile *p, const korch_plan *plan, double wall_median_ms, int top,
                              FILE *f) {
    int n = p->n_kernels;
    long runs = p->recorded;
    if (runs == 0 || n == 0) return;
    row *rows = calloc((size_t)n, sizeof *rows);
    double *col = calloc((size_t)runs, sizeof *col);
    if (!rows || !col) {
        free(rows);
        free(col);
        return;
    }
    double sum_measured = 0, sum_predicted = 0;
    double by_measured[KORCH_BACKEND_COUNT] = {0}, by_predicted[KORCH_BACKEND_COUNT] = {0};
    int by_count[KORCH_BACKEND_COUNT] = {0};
    for (int k = 0; k < n; k++) {
        for (long r = 0; r < runs; r++) col[r] = p->samples[r * n + k];
        qsort(col, (size_t)runs, sizeof *col, cmp_double);
        double median = runs % 2 ? col[runs / 2] : 0.5 * (col[runs / 2 - 1] + col[runs / 2]);
        rows[k] = (row){.kernel = k, .measured = median, .predicted = plan->kernels[k].latency_ms};
        sum_measured += median;
        sum_predicted += rows[k].predicted;
        int b = (int)plan->kernels[k].backend;
        if (b >= 0 && b < KORCH_BACKEND_COUNT) {
            by_measured[b] += median;
            by_predicted[b] += rows[k].predicted;
            by_count[b]++;
        }
    }
    fprintf(f, "kernel profile: %d kernels, median of %ld runs inside the plan vs the isolated profile\n", n, runs);
    fprintf(f, "  %-22s %10s %10s %8s\n", "", "in plan ms", "profile ms", "ratio");
    fprintf(f, "  %-22s %10.3f %10.3f %8.2f\n", "all kernels", sum_measured, sum_predicted,
            sum_predicted > 0 ? sum_measured / sum_predicted : 0);
    for (int b = 0; b < KORCH_BACKEND_COUNT; b++) {
        if (!by_count[b]) continue;
        char label[48];
        snprintf(label, sizeof label, "%s (%d)", korch_backend_name((korch_backend_kind)b), by_count[b]);
        fprintf(f, "  %-22s %10.3f %10.3f %8.2f\n", label, by_measured[b], by_predicted[b],
                by_predicted[b] > 0 ? by_measured[b] / by_predicted[b] : 0);
    }
    fprintf(f, "  between kernels: %.3f ms of the %.3f ms wall median (%.1f us per kernel)\n",
            wall_median_ms - sum_measured, wall_median_ms, 1e3 * (wall_median_ms - sum_measured) / n);
    qsort(rows, (size_t)n, sizeof *rows, cmp_gap);
    if (top > n) top = n;
    fprintf(f, "  largest differences (in plan - profile):\n");
    fprintf(f, "  %5s %-6s %10s %10s %7s  %s\n", "#", "impl", "in plan us", "profile us", "ratio", "primitives");
    for (int i = 0; i < top; i++) {
        const korch_plan_kernel *k = &plan->kernels[rows[i].kernel];
        char prims[64];
        short_primitives(k->primitives, prims, sizeof prims);
        fprintf(f, "  %5d %-6s %10.1f %10.1f %7.2f  %s\n", rows[i].kernel, korch_backend_name(k->backend),
                1e3 * rows[i].measured, 1e3 * rows[i].predicted,
                rows[i].predicted > 0 ? rows[i].measured / rows[i].predicted : 0, prims);
    }
    free(rows);
    free(col);
}

korch_status korch_cli_profile_write_csv(const korch_cli_profile *p, const korch_plan *plan, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return korch_error(KORCH_ERR_IO, "--profile-csv %s: cannot create the file", path);
    int n = p->n_kernels;
    long runs = p->recorded;
    double *col = calloc((size_t)runs + 1, sizeof *col);
    if (!col) {
        fclose(f);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "--profile-csv %s: out of memory", path);
    }
    fprintf(f, "kernel,backend,in_plan_median_ms,in_plan_min_ms,profile_ms,primitives\n");
    for (int k = 0; k < n; k++) {
        for (long r = 0; r < runs; r++) col[r] = p->samples[r * n + k];
        qsort(col, (size_t)runs, sizeof *col, cmp_double);
        double median = runs % 2 ? col[runs / 2] : 0.5 * (col[runs / 2 - 1] + col[runs / 2]);
        const korch_plan_kernel *pk = &plan->kernels[k];
        /* primitives are kind.OP words: no commas or quotes to escape */
        fprintf(f, "%d,%s,%.6f,%.6f,%.6f,%s\n", k, korch_backend_name(pk->backend), median, col[0], pk->latency_ms,
                pk->primitives ? pk->primitives : "");
    }
    free(col);
    if (fclose(f) != 0) return korch_error(KORCH_ERR_IO, "--profile-csv %s: write failed", path);
    return KORCH_OK;
}

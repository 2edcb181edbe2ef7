/* Scheduling a chosen kernel set by simulation: run any kernel whose inputs
 * are all available, until nothing can run. With single-output convex
 * kernels this always finishes; with multi-output kernels it can get stuck,
 * and the stuck set yields a cut (solve.c, docs/orchestration.md). */
#include "orchestrate/orchestrate.h"

int korch_schedule_simulate(const korch_sched_kernel *kernels, const int *chosen, int n_chosen, bool *available,
                            int *order) {
    int ran = 0;
    bool progress = true;
    /* done[] lives in order[]: a kernel has run once it is in order[0..ran) */
    while (progress) {
        progress = false;
        for (int i = 0; i < n_chosen; i++) {
            int k = chosen[i];
            bool already = false;
            for (int j = 0; j < ran && !already; j++) already = order[j] == k;
            if (already) continue;
            bool ready = true;
            for (int j = 0; j < kernels[k].n_inputs && ready; j++) ready = available[kernels[k].inputs[j]];
            if (!ready) continue;
            for (int j = 0; j < kernels[k].n_outputs; j++) available[kernels[k].outputs[j]] = true;
            order[ran++] = k;
            progress = true;
        }
    }
    return ran;
}

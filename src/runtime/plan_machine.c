/* The machine a plan was tuned on. A plan runs on any x86-64 CPU: its
 * kernels are rebuilt from their schedules at load, for the CPU at hand
 * (cgen compiles with -march=native, oneDNN dispatches at run time). What
 * does not travel is the tuning: the kernel choice and schedules were timed
 * on the plan's CPU. So a plan from another CPU is said to be foreign, in
 * one note, and runs. */
#include <stdio.h>
#include <string.h>

#include "profile/profile.h"
#include "runtime/plan.h"

void korch_plan_set_machine(korch_plan *plan) {
    const char *model = NULL, *isa = NULL;
    korch_machine_cpu(&model, &isa);
    snprintf(plan->machine_cpu, sizeof plan->machine_cpu, "%s", model);
    snprintf(plan->machine_isa, sizeof plan->machine_isa, "%s", isa);
}

/* Whether the comma-separated list holds `flag`. */
static bool has_flag(const char *list, const char *flag, size_t len) {
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, flag, len) == 0) return true;
        if (!end) break;
        p = end + 1;
    }
    return false;
}

bool korch_plan_machine_is_foreign(const korch_plan *plan, char *why, size_t size) {
    if (size) why[0] = '\0';
    if (!plan->machine_cpu[0] && !plan->machine_isa[0]) return false;
    const char *model = NULL, *isa = NULL;
    korch_machine_cpu(&model, &isa);
    if (strcmp(plan->machine_cpu, model) == 0 && strcmp(plan->machine_isa, isa) == 0) return false;
    /* the plan's extensions this CPU lacks: its kernels are rebuilt without them */
    char lacks[256] = "";
    size_t used = 0;
    for (const char *p = plan->machine_isa; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n && !has_flag(isa, p, n) && used < sizeof lacks) {
            int w = snprintf(lacks + used, sizeof lacks - used, "%s%.*s", used ? "," : "", (int)n, p);
            used += w > 0 ? (size_t)w : 0;
        }
        if (!end) break;
        p = end + 1;
    }
    snprintf(why, size, "tuned on %s, this is %s%s%s%s", plan->machine_cpu[0] ? plan->machine_cpu : "another CPU",
             model, used ? " (which lacks " : "", used ? lacks : "", used ? ")" : "");
    return true;
}

void korch_plan_note_foreign(const korch_plan *plan, const char *plan_path) {
    char why[512], printable[256];
    if (!korch_plan_machine_is_foreign(plan, why, sizeof why)) return;
    fprintf(stderr,
            "korch: note: plan \"%s\" is foreign: %s; it runs correctly, but its kernel choices may not be the fastest "
            "here (korch optimize on this machine tunes for it)\n",
            korch_printable(plan_path, printable, sizeof printable), why);
}

/* Backend refusal reasons are counted by category, not by node. */
#include <string.h>

#include "candidates/candidates.h"
#include "test.h"

int main(void) {
    static korch_candidate_set set; /* zeroed: only the refusal table is used */
    korch_candidates_note_refusal(&set, "node 12 (ew.ERF of \"/a/Erf\"): ERF has no oneDNN post-op");
    korch_candidates_note_refusal(&set, "node 40 (ew.ERF of \"/b(1)/Erf\"): ERF has no oneDNN post-op");
    korch_candidates_note_refusal(&set, "value 7 is needed outside the kernel");
    korch_candidates_note_refusal(&set, NULL);
    CHECK(set.n_refusals == 3);
    CHECK(set.refusals[0].count == 2);
    CHECK_MSG(strcmp(set.refusals[0].text, "node # : ERF has no oneDNN post-op") == 0, "got \"%s\"", set.refusals[0].text);
    CHECK(strcmp(set.refusals[1].text, "value # is needed outside the kernel") == 0);
    CHECK(strcmp(set.refusals[2].text, "no reason given") == 0);
    /* more categories than slots: the rest count as "other reasons" */
    char reason[64];
    for (int i = 0; i < KORCH_REFUSAL_KINDS + 5; i++) {
        snprintf(reason, sizeof reason, "reason %c%c", 'a' + i % 26, 'a' + i / 26);
        korch_candidates_note_refusal(&set, reason);
    }
    CHECK(set.n_refusals == KORCH_REFUSAL_KINDS);
    CHECK(strcmp(set.refusals[KORCH_REFUSAL_KINDS].text, "other reasons") == 0);
    CHECK(set.refusals[KORCH_REFUSAL_KINDS].count == 3 + 5);
    TEST_MAIN_END();
}

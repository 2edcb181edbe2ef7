/* The fission table: one rule per operator, generated from the op list like
 * the op table (ops/registry.c). An operator added to KORCH_OP_LIST without a
 * korch_fission_rule_<Name> fails to link, so the two cannot drift apart. */
#include "fission/rules.h"

#define KORCH_FISSION_DECLARE(name) KORCH_FISSION_RULE(name);
KORCH_OP_LIST(KORCH_FISSION_DECLARE)
#undef KORCH_FISSION_DECLARE

const korch_fission_rule korch_fission_rules[KORCH_OP_COUNT] = {
#define KORCH_FISSION_ENTRY(name) [KORCH_OP_##name] = korch_fission_rule_##name,
    KORCH_OP_LIST(KORCH_FISSION_ENTRY)
#undef KORCH_FISSION_ENTRY
};

_Static_assert(sizeof korch_fission_rules / sizeof korch_fission_rules[0] == KORCH_OP_COUNT,
               "fission table out of step with the op list");

/* Fission of LSTM, GRU and RNN (docs/fission.md, "Recurrent operators"). */
#include "fission/rules.h"

KORCH_FISSION_RULE(LSTM) { return fission_decline(ctx, "recurrent operator (fission pending)"); }
KORCH_FISSION_RULE(GRU) { return fission_decline(ctx, "recurrent operator (fission pending)"); }
KORCH_FISSION_RULE(RNN) { return fission_decline(ctx, "recurrent operator (fission pending)"); }

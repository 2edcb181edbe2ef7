/* Status codes and the per-thread error message. Library code reports every
 * failure through korch_error(), which records a message naming the element at
 * fault and returns the status so callers can write `return korch_error(...)`. */
#ifndef KORCH_CORE_STATUS_H
#define KORCH_CORE_STATUS_H

#include "korch.h"

#if defined(__GNUC__)
#define KORCH_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KORCH_PRINTF(f, a)
#endif

korch_status korch_error(korch_status status, const char *fmt, ...) KORCH_PRINTF(2, 3);
/* Prepend context to the current message: "node "x" (Conv): <old message>". */
korch_status korch_error_prefix(korch_status status, const char *fmt, ...) KORCH_PRINTF(2, 3);
void korch_error_clear(void);

#define KORCH_TRY(expr)                                                                            \
    do {                                                                                           \
        korch_status korch_try_status_ = (expr);                                                   \
        if (korch_try_status_ != KORCH_OK) return korch_try_status_;                               \
    } while (0)

#endif

#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { KORCH_ERROR_CAPACITY = 2048 };
static _Thread_local char korch_error_message[KORCH_ERROR_CAPACITY];

const char *korch_last_error(void) { return korch_error_message; }

void korch_error_clear(void) { korch_error_message[0] = '\0'; }

korch_status korch_error(korch_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(korch_error_message, sizeof korch_error_message, fmt, ap);
    va_end(ap);
    return status;
}

korch_status korch_error_prefix(korch_status status, const char *fmt, ...) {
    char old[KORCH_ERROR_CAPACITY];
    memcpy(old, korch_error_message, sizeof old);
    char prefix[KORCH_ERROR_CAPACITY];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* truncation is acceptable: messages are for humans */
    size_t len = strlen(prefix);
    if (len > KORCH_ERROR_CAPACITY - 3) len = KORCH_ERROR_CAPACITY - 3;
    memcpy(korch_error_message, prefix, len);
    korch_error_message[len++] = ':';
    korch_error_message[len++] = ' ';
    size_t rest = strlen(old);
    if (rest > KORCH_ERROR_CAPACITY - 1 - len) rest = KORCH_ERROR_CAPACITY - 1 - len;
    memcpy(korch_error_message + len, old, rest);
    korch_error_message[len + rest] = '\0';
    return status;
}

const char *korch_status_name(korch_status status) {
    static const char *const names[] = {
        [KORCH_OK] = "ok",
        [KORCH_ERR_INVALID_ARGUMENT] = "invalid argument",
        [KORCH_ERR_IO] = "I/O error",
        [KORCH_ERR_PARSE] = "parse error",
        [KORCH_ERR_INVALID_MODEL] = "invalid model",
        [KORCH_ERR_UNSUPPORTED] = "unsupported",
        [KORCH_ERR_SHAPE] = "shape error",
        [KORCH_ERR_OUT_OF_MEMORY] = "out of memory",
        [KORCH_ERR_RUNTIME] = "runtime error",
        [KORCH_ERR_INTERNAL] = "internal error",
    };
    _Static_assert(sizeof names / sizeof names[0] == KORCH_STATUS_COUNT, "status name table out of step");
    if ((unsigned)status >= KORCH_STATUS_COUNT) return "unknown status";
    return names[status];
}

const char *korch_version(void) {
#ifdef KORCH_VERSION
    return KORCH_VERSION;
#else
    return "unknown";
#endif
}

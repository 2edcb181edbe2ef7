/* A minimal test harness: CHECK records a failure and continues; each test
 * program returns non-zero if anything failed, which CTest reports. */
#ifndef KORCH_TESTS_TEST_H
#define KORCH_TESTS_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "korch.h"

static int test_failures = 0;
static int test_checks = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        test_checks++;                                                                             \
        if (!(cond)) {                                                                             \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);              \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        test_checks++;                                                                             \
        if (!(cond)) {                                                                             \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

/* Expects a korch call to succeed; prints korch_last_error() otherwise. */
#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        test_checks++;                                                                             \
        korch_status check_ok_status_ = (expr);                                                    \
        if (check_ok_status_ != KORCH_OK) {                                                        \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, korch_last_error()); \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol) CHECK_MSG(fabs((double)(a) - (double)(b)) <= (tol), "%g vs %g", (double)(a), (double)(b))

/* A test whose prerequisites are missing says so and exits with the code
 * CTest counts as skipped (SKIP_RETURN_CODE, tests/CMakeLists.txt): a
 * skipped test is never reported as passed. */
#define TEST_SKIP_CODE 77
#define TEST_SKIP(...)                                                                             \
    do {                                                                                           \
        printf("skipped: ");                                                                       \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        return TEST_SKIP_CODE;                                                                     \
    } while (0)

#define TEST_MAIN_END()                                                                            \
    do {                                                                                           \
        printf("%d checks, %d failed\n", test_checks, test_failures);                              \
        return test_failures ? 1 : 0;                                                              \
    } while (0)

#endif

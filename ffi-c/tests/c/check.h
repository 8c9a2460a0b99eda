/* The C suite's assertion helpers: every check prints its file, line and expression on failure, and a
 * status check also prints the status's name and this thread's weir_last_error_message(). Each test
 * program is one file that includes this header and returns check_summary() from main. */
#ifndef WEIR_CHECK_H
#define WEIR_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir.h"

static int check_failures = 0;
static int check_count = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* Checks that `expr` returns the status `want` (WEIR_OK, WEIR_ERR_...). */
#define CHECK_STATUS(expr, want)                                                                   \
    do {                                                                                           \
        weir_status check_got_ = (expr);                                                           \
        weir_status check_want_ = (want);                                                          \
        check_count++;                                                                             \
        if (check_got_ != check_want_) {                                                           \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: %s returned %s, wanted %s (last error: %s)\n", __FILE__,       \
                    __LINE__, #expr, weir_status_str(check_got_), weir_status_str(check_want_),     \
                    weir_last_error_message());                                                    \
        }                                                                                          \
    } while (0)

#define CHECK_OK(expr) CHECK_STATUS(expr, WEIR_OK)

/* Stops the program at once (for a failure that makes the rest meaningless). */
/* Evaluates `cond` once (it may have side effects, such as starting a thread). */
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        int require_ok_ = (cond) ? 1 : 0;                                                          \
        CHECK(require_ok_ && #cond);                                                               \
        if (!require_ok_) {                                                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Whether an error message names a Rust item instead of what this header declares: a core constant
 * (MAX_NODES; the header's constants are WEIR_MAX_*), a Rust path (Config::default) or type (f64), or a
 * core variant (LowestScore; the header has WEIR_ALGORITHM_LOWEST_SCORE). */
static inline int check_names_rust(const char *message) {
    for (const char *p = strstr(message, "MAX_"); p != NULL; p = strstr(p + 1, "MAX_")) {
        if (p - message < 5 || strncmp(p - 5, "WEIR_", 5) != 0) {
            return 1;
        }
    }
    return strstr(message, "::") != NULL || strstr(message, "f64") != NULL ||
           strstr(message, "LowestScore") != NULL;
}

static int check_summary(const char *name) {
    if (check_failures != 0) {
        fprintf(stderr, "%s: %d of %d checks FAILED\n", name, check_failures, check_count);
        return 1;
    }
    printf("%s: all %d checks passed\n", name, check_count);
    return 0;
}

#endif

/* The C contract of weir.h, function by function: a NULL for every pointer argument is WEIR_ERR_NULL
 * naming the argument and writes nothing; integers standing for enums are range-checked; a lease
 * released twice, forged or foreign changes nothing; outputs are written only on success. The program
 * reads include/weir.h and fails if the header declares a function this file does not exercise. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#ifndef WEIR_HEADER_PATH
#define WEIR_HEADER_PATH "include/weir.h"
#endif

#define SENTINEL 0xA5

#define CHECK_MESSAGE(text)                                                                        \
    do {                                                                                           \
        check_count++;                                                                             \
        if (strstr(weir_last_error_message(), (text)) == NULL) {                                   \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__,            \
                    weir_last_error_message(), (text));                                            \
        }                                                                                          \
    } while (0)

/* `expr` returns WEIR_ERR_NULL and the message names the argument `name`. */
#define CHECK_NULL_ARG(expr, name)                                                                 \
    do {                                                                                           \
        CHECK_STATUS(expr, WEIR_ERR_NULL);                                                         \
        CHECK_MESSAGE("argument `" name "` is NULL");                                              \
    } while (0)

/* `object` still holds the sentinel pattern. */
#define CHECK_UNTOUCHED(object) CHECK(untouched(&(object), sizeof(object)))

static int untouched(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        if (b[i] != SENTINEL) {
            return 0;
        }
    }
    return 1;
}

#define FILL(object) memset(&(object), SENTINEL, sizeof(object))

/* Every function of the header this program calls; main checks the header declares no other. */
static const char *const covered[] = {
    "weir_version",
    "weir_version_string",
    "weir_balancer_new",
    "weir_balancer_free",
    "weir_balancer_capacity",
    "weir_balancer_config",
    "weir_balancer_add",
    "weir_balancer_remove",
    "weir_balancer_set_lame_duck",
    "weir_rng_seed",
    "weir_balancer_acquire",
    "weir_balancer_acquire_with_rng",
    "weir_balancer_acquire_excluding",
    "weir_balancer_acquire_wait",
    "weir_balancer_release",
    "weir_balancer_release_loaded",
    "weir_balancer_due_check",
    "weir_balancer_report_check",
    "weir_outcome_from_http_status",
    "weir_outcome_is_retryable",
    "weir_outcome_from_errno",
    "weir_balancer_node_snapshot",
    "weir_balancer_nodes",
    "weir_balancer_stats",
    "weir_now_ns",
    "weir_status_str",
    "weir_last_error_message",
    "weir_config_default",
    "weir_config_cascade",
    "weir_config_validate",
    "weir_algorithm_lowest_score_default",
    "weir_algorithm_weighted_default",
    "weir_health_buckets_default",
    "weir_health_ewma_default",
    "weir_limit_fixed_default",
    "weir_limit_aimd_default",
    "weir_limit_vegas_default",
    "weir_limit_gradient_default",
    "weir_limit_gradient2_default",
    "weir_limit_ciad_default",
    "weir_limit_knee_default",
    "weir_limit_windowed_default",
};

static int is_covered(const char *name) {
    for (size_t i = 0; i < sizeof covered / sizeof covered[0]; i++) {
        if (strcmp(covered[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The overload tools' functions (shedder, CPU sampler, throttle, backoff, subsets) are exercised, NULL
 * arguments included, by test_overload.c, and the metrics writers by test_metrics.c: a function counts
 * as covered there when one of those files calls it. */
static const char *const other_tests[] = {"ffi-c/tests/c/test_overload.c", "ffi-c/tests/c/test_metrics.c"};
#define OTHER_TESTS "ffi-c/tests/c/test_overload.c or ffi-c/tests/c/test_metrics.c"

static int called_in(const char *path, const char *name) {
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    char line[1024];
    char call[128];
    snprintf(call, sizeof call, "%s(", name);
    int found = 0;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        const char *at = strstr(line, call);
        /* the whole identifier: not the tail of a longer name */
        found = at != NULL && (at == line || !(at[-1] == '_' || (at[-1] >= 'a' && at[-1] <= 'z')));
    }
    fclose(f);
    return found;
}

static int called_in_other_tests(const char *name) {
    for (size_t i = 0; i < sizeof other_tests / sizeof other_tests[0]; i++) {
        if (called_in(other_tests[i], name)) {
            return 1;
        }
    }
    return 0;
}

/* A function declaration in cbindgen's output starts at column 0 with its return type, and its name
 * is the identifier before the first '('. */
static void test_header_is_covered(void) {
    FILE *f = fopen(WEIR_HEADER_PATH, "r");
    CHECK(f != NULL);
    if (f == NULL) {
        fprintf(stderr, "cannot open %s (run from the repository root)\n", WEIR_HEADER_PATH);
        return;
    }
    char line[512];
    int declared = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        char *paren = strchr(line, '(');
        if (line[0] < 'a' || line[0] > 'z' || paren == NULL || strncmp(line, "typedef", 7) == 0) {
            continue;
        }
        char *end = paren;
        char *start = end;
        while (start > line && (start[-1] == '_' || (start[-1] >= 'a' && start[-1] <= 'z') ||
                                (start[-1] >= '0' && start[-1] <= '9'))) {
            start--;
        }
        *end = '\0';
        check_count++;
        if (is_covered(start)) {
            declared++;
        } else if (!called_in_other_tests(start)) {
            check_failures++;
            fprintf(stderr, "weir.h declares %s, which neither test_contract.c nor %s exercises\n",
                    start, OTHER_TESTS);
        }
    }
    fclose(f);
    /* Every function of this file's list is declared (the list is not stale), and the parse found them. */
    CHECK(declared == (int)(sizeof covered / sizeof covered[0]));
}

static weir_balancer *make(weir_config config, size_t capacity) {
    weir_balancer *b = NULL;
    weir_status status = weir_balancer_new(&config, capacity, &b);
    CHECK_OK(status);
    REQUIRE(b != NULL);
    return b;
}

static weir_config fixed(uint32_t limit) {
    weir_config c = weir_config_cascade();
    c.limit.fixed.limit = limit;
    return c;
}

static weir_balancer_statistics stats(const weir_balancer *b) {
    weir_balancer_statistics s;
    FILL(s);
    CHECK_OK(weir_balancer_stats(b, &s));
    return s;
}

static int same_stats(const weir_balancer_statistics *a, const weir_balancer_statistics *b) {
    int same = a->acquired == b->acquired && a->rejected_all_busy == b->rejected_all_busy &&
               a->rejected_no_active == b->rejected_no_active &&
               a->released_stale == b->released_stale && a->in_flight == b->in_flight &&
               a->active_nodes == b->active_nodes && a->lame_duck_nodes == b->lame_duck_nodes &&
               a->waits == b->waits && a->waits_granted == b->waits_granted &&
               a->waits_timed_out == b->waits_timed_out &&
               a->waits_cancelled == b->waits_cancelled && a->waiting == b->waiting;
    for (int i = 0; i < WEIR_OUTCOME_COUNT; i++) {
        same = same && a->released[i] == b->released[i];
    }
    return same;
}

static uint32_t in_flight(const weir_balancer *b, uint64_t id) {
    weir_node_info info;
    FILL(info);
    CHECK_OK(weir_balancer_node_snapshot(b, id, 0, &info));
    return info.in_flight;
}

/* The node `id` (the only one) admits exactly `room` more leases, then ALL_BUSY; all are released. */
static void check_room(const weir_balancer *b, uint32_t room) {
    weir_lease held[16];
    REQUIRE(room <= 16);
    for (uint32_t i = 0; i < room; i++) {
        CHECK_OK(weir_balancer_acquire(b, 100, &held[i]));
    }
    weir_lease l;
    CHECK_STATUS(weir_balancer_acquire(b, 100, &l), WEIR_ERR_ALL_BUSY);
    for (uint32_t i = 0; i < room; i++) {
        CHECK_OK(weir_balancer_release(b, &held[i], WEIR_OUTCOME_SUCCESS, 200));
    }
}

/* NULL for every pointer argument of every function, with every other output watched. */
static void test_null_arguments(void) {
    weir_config config = weir_config_default();
    weir_balancer *b = make(fixed(4), 4);
    CHECK_OK(weir_balancer_add(b, 1));
    const weir_balancer_statistics start = stats(b);

    weir_balancer *out_b;
    FILL(out_b);
    CHECK_NULL_ARG(weir_balancer_new(NULL, 4, &out_b), "config");
    CHECK_UNTOUCHED(out_b);
    CHECK_NULL_ARG(weir_balancer_new(&config, 4, NULL), "out");
    CHECK_NULL_ARG(weir_balancer_new(NULL, 4, NULL), "config");
    weir_balancer_free(NULL);

    size_t size;
    FILL(size);
    CHECK_NULL_ARG(weir_balancer_capacity(NULL, &size), "balancer");
    CHECK_UNTOUCHED(size);
    CHECK_NULL_ARG(weir_balancer_capacity(b, NULL), "out");

    weir_config cfg;
    FILL(cfg);
    CHECK_NULL_ARG(weir_balancer_config(NULL, &cfg), "balancer");
    CHECK_UNTOUCHED(cfg);
    CHECK_NULL_ARG(weir_balancer_config(b, NULL), "out");

    CHECK_NULL_ARG(weir_balancer_add(NULL, 2), "balancer");
    CHECK_NULL_ARG(weir_balancer_remove(NULL, 1), "balancer");
    CHECK_NULL_ARG(weir_balancer_set_lame_duck(NULL, 1, true), "balancer");

    weir_lease lease;
    FILL(lease);
    CHECK_NULL_ARG(weir_balancer_acquire(NULL, 0, &lease), "balancer");
    CHECK_UNTOUCHED(lease);
    CHECK_NULL_ARG(weir_balancer_acquire(b, 0, NULL), "out");

    weir_rng rng;
    FILL(rng);
    CHECK_NULL_ARG(weir_balancer_acquire_with_rng(NULL, 0, &rng, &lease), "balancer");
    CHECK_UNTOUCHED(rng);
    CHECK_UNTOUCHED(lease);
    CHECK_NULL_ARG(weir_balancer_acquire_with_rng(b, 0, NULL, &lease), "rng");
    CHECK_UNTOUCHED(lease);
    CHECK_NULL_ARG(weir_balancer_acquire_with_rng(b, 0, &rng, NULL), "out");
    CHECK_UNTOUCHED(rng); /* not advanced: nothing was drawn */

    const uint64_t tried[] = {1};
    CHECK_NULL_ARG(weir_balancer_acquire_excluding(NULL, 0, tried, 1, &rng, &lease), "balancer");
    CHECK_UNTOUCHED(rng);
    CHECK_UNTOUCHED(lease);
    CHECK_NULL_ARG(weir_balancer_acquire_excluding(b, 0, NULL, 1, &rng, &lease), "exclude");
    CHECK_UNTOUCHED(lease);
    CHECK_NULL_ARG(weir_balancer_acquire_excluding(b, 0, tried, 1, &rng, NULL), "out");
    CHECK_UNTOUCHED(rng); /* not advanced: nothing was drawn */

    CHECK_NULL_ARG(weir_balancer_acquire_wait(NULL, weir_now_ns() + 1000000000u, &lease), "balancer");
    CHECK_UNTOUCHED(lease);
    CHECK_NULL_ARG(weir_balancer_acquire_wait(b, weir_now_ns() + 1000000000u, NULL), "out");

    CHECK_NULL_ARG(weir_balancer_release(b, NULL, WEIR_OUTCOME_SUCCESS, 0), "lease");
    weir_lease real;
    CHECK_OK(weir_balancer_acquire(b, 10, &real));
    weir_balancer_statistics held = stats(b);
    CHECK_NULL_ARG(weir_balancer_release(NULL, &real, WEIR_OUTCOME_SUCCESS, 20), "balancer");
    CHECK_NULL_ARG(weir_balancer_release(b, NULL, WEIR_OUTCOME_SUCCESS, 20), "lease");
    CHECK_NULL_ARG(weir_balancer_release_loaded(NULL, &real, WEIR_OUTCOME_SUCCESS, 20, 0.5), "balancer");
    CHECK_NULL_ARG(weir_balancer_release_loaded(b, NULL, WEIR_OUTCOME_SUCCESS, 20, 0.5), "lease");
    CHECK_NULL_ARG(weir_balancer_release_loaded(b, NULL, WEIR_OUTCOME_SUCCESS, 20, NAN), "lease");
    weir_balancer_statistics after = stats(b);
    CHECK(same_stats(&held, &after));
    CHECK_OK(weir_balancer_release(b, &real, WEIR_OUTCOME_SUCCESS, 20));

    /* The health checks (the bool is compared by its bytes: 0xA5 is no bool to read as one). */
    bool due;
    uint64_t due_id;
    FILL(due);
    FILL(due_id);
    CHECK_NULL_ARG(weir_balancer_due_check(NULL, 30, 0, &due, &due_id), "balancer");
    CHECK_UNTOUCHED(due);
    CHECK_UNTOUCHED(due_id);
    CHECK_NULL_ARG(weir_balancer_due_check(b, 30, 0, NULL, &due_id), "due");
    CHECK_UNTOUCHED(due_id);
    CHECK_NULL_ARG(weir_balancer_due_check(b, 30, 0, &due, NULL), "node_id");
    CHECK_UNTOUCHED(due);
    CHECK_NULL_ARG(weir_balancer_report_check(NULL, 1, false, 30), "balancer");

    CHECK_NULL_ARG(weir_outcome_from_http_status(200, NULL), "out");
    CHECK_NULL_ARG(weir_outcome_from_http_status(99, NULL), "out"); /* NULL comes first */
    CHECK_NULL_ARG(weir_outcome_is_retryable(WEIR_OUTCOME_FAILURE, NULL), "out");
    CHECK_NULL_ARG(weir_outcome_is_retryable(6, NULL), "out"); /* NULL comes first */
    CHECK_NULL_ARG(weir_outcome_from_errno(1, NULL), "out");
    CHECK_NULL_ARG(weir_outcome_from_errno(0, NULL), "out");

    weir_node_info info;
    FILL(info);
    CHECK_NULL_ARG(weir_balancer_node_snapshot(NULL, 1, 0, &info), "balancer");
    CHECK_UNTOUCHED(info);
    CHECK_NULL_ARG(weir_balancer_node_snapshot(b, 1, 0, NULL), "out");

    weir_node_info buf[4];
    FILL(buf);
    FILL(size);
    CHECK_NULL_ARG(weir_balancer_nodes(NULL, 0, buf, 4, &size), "balancer");
    CHECK_UNTOUCHED(buf);
    CHECK_UNTOUCHED(size);
    CHECK_NULL_ARG(weir_balancer_nodes(b, 0, buf, 4, NULL), "len");
    CHECK_UNTOUCHED(buf);
    CHECK_NULL_ARG(weir_balancer_nodes(b, 0, NULL, 4, &size), "buf"); /* NULL with room claimed */
    CHECK_UNTOUCHED(size);
    CHECK_NULL_ARG(weir_balancer_nodes(b, 0, NULL, 0, NULL), "len");

    weir_balancer_statistics s;
    FILL(s);
    CHECK_NULL_ARG(weir_balancer_stats(NULL, &s), "balancer");
    CHECK_UNTOUCHED(s);
    CHECK_NULL_ARG(weir_balancer_stats(b, NULL), "out");

    CHECK_NULL_ARG(weir_config_validate(NULL), "config");

    /* Nothing above changed the balancer (the one lease was acquired and released). */
    weir_balancer_statistics end = stats(b);
    CHECK(end.acquired == start.acquired + 1 && end.released[WEIR_OUTCOME_SUCCESS] == 1);
    CHECK(end.in_flight == 0 && end.active_nodes == 1 && end.rejected_all_busy == 0);
    check_room(b, 4);
    weir_balancer_free(b);

    /* The functions without pointer arguments never fail and never return NULL. */
    CHECK(weir_version() == WEIR_VERSION_NUMBER);
    CHECK(weir_version_string() != NULL);
    CHECK(weir_rng_seed(UINT64_MAX).state == UINT64_MAX);
    uint64_t t0 = weir_now_ns();
    CHECK(weir_now_ns() >= t0);
    CHECK(weir_status_str(-5) != NULL && weir_last_error_message() != NULL);
    CHECK(weir_config_default().algorithm.family == WEIR_ALGORITHM_LOWEST_SCORE);
    CHECK(weir_config_cascade().algorithm.family == WEIR_ALGORITHM_WEIGHTED);
    CHECK(weir_algorithm_lowest_score_default().family == WEIR_ALGORITHM_LOWEST_SCORE);
    CHECK(weir_algorithm_weighted_default().family == WEIR_ALGORITHM_WEIGHTED);
    CHECK(weir_health_buckets_default().model == WEIR_HEALTH_BUCKETS);
    CHECK(weir_health_ewma_default().model == WEIR_HEALTH_EWMA);
    CHECK(weir_limit_fixed_default().algorithm == WEIR_LIMIT_FIXED);
    CHECK(weir_limit_aimd_default().algorithm == WEIR_LIMIT_AIMD);
    CHECK(weir_limit_vegas_default().algorithm == WEIR_LIMIT_VEGAS);
    CHECK(weir_limit_gradient_default().algorithm == WEIR_LIMIT_GRADIENT);
    CHECK(weir_limit_gradient2_default().algorithm == WEIR_LIMIT_GRADIENT2);
    CHECK(weir_limit_ciad_default().algorithm == WEIR_LIMIT_CIAD);
    CHECK(weir_limit_knee_default().algorithm == WEIR_LIMIT_KNEE);
    CHECK(weir_limit_windowed_default().algorithm == WEIR_LIMIT_WINDOWED);
}

/* `c` is refused with WEIR_ERR_INVALID_ARGUMENT naming `field`, by validation and construction. */
static void check_bad_tag(weir_config c, const char *field, int line) {
    weir_status v = weir_config_validate(&c);
    CHECK(v == WEIR_ERR_INVALID_ARGUMENT);
    int named = strstr(weir_last_error_message(), field) != NULL;
    CHECK(named);
    weir_balancer *b;
    FILL(b);
    weir_status n = weir_balancer_new(&c, 2, &b);
    CHECK(n == WEIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(weir_last_error_message(), field) != NULL);
    CHECK_UNTOUCHED(b);
    if (v != WEIR_ERR_INVALID_ARGUMENT || !named) {
        fprintf(stderr, "  (line %d: %s: %s)\n", line, field, weir_last_error_message());
    }
}

#define BAD_TAG(base, change, field)                                                               \
    do {                                                                                           \
        weir_config c_ = (base);                                                                   \
        change;                                                                                    \
        check_bad_tag(c_, field, __LINE__);                                                        \
    } while (0)

static void test_enum_ranges(void) {
    const uint32_t huge = UINT32_MAX;
    weir_config d = weir_config_default();
    weir_config s = weir_config_cascade();
    weir_config vegas = d, gradient = d, gradient2 = d, windowed = d;
    vegas.limit = weir_limit_vegas_default();
    gradient.limit = weir_limit_gradient_default();
    gradient2.limit = weir_limit_gradient2_default();
    windowed.limit = weir_limit_windowed_default();

    BAD_TAG(d, c_.algorithm.family = 2, "algorithm.family");
    BAD_TAG(s, c_.algorithm.family = huge, "algorithm.family");
    BAD_TAG(s, c_.algorithm.weighted.health.model = 2, "algorithm.weighted.health.model");
    BAD_TAG(s, c_.algorithm.weighted.health.model = huge, "algorithm.weighted.health.model");
    BAD_TAG(s, c_.algorithm.weighted.draw = 3, "algorithm.weighted.draw");
    BAD_TAG(s, c_.algorithm.weighted.draw = huge, "algorithm.weighted.draw");
    BAD_TAG(d, c_.limit.algorithm = WEIR_LIMIT_KNEE + 1, "limit.algorithm");
    BAD_TAG(d, c_.limit.algorithm = huge, "limit.algorithm");
    BAD_TAG(windowed, c_.limit.windowed.inner = WEIR_LIMIT_WINDOWED, "limit.windowed.inner");
    BAD_TAG(windowed, c_.limit.windowed.inner = WEIR_LIMIT_KNEE + 1, "limit.windowed.inner");
    BAD_TAG(windowed, c_.limit.windowed.inner = huge, "limit.windowed.inner");
    BAD_TAG(windowed, c_.limit.windowed.window.kind = 2, "limit.windowed.window.kind");
    BAD_TAG(windowed, c_.limit.windowed.window.kind = huge, "limit.windowed.window.kind");
    BAD_TAG(vegas, c_.limit.vegas.alpha.kind = 2, "limit.vegas.alpha.kind");
    BAD_TAG(vegas, c_.limit.vegas.beta.kind = huge, "limit.vegas.beta.kind");
    BAD_TAG(vegas, c_.limit.vegas.threshold.kind = 2, "limit.vegas.threshold.kind");
    BAD_TAG(vegas, c_.limit.vegas.increase.kind = 2, "limit.vegas.increase.kind");
    BAD_TAG(vegas, c_.limit.vegas.decrease.kind = huge, "limit.vegas.decrease.kind");
    BAD_TAG(gradient, c_.limit.gradient.queue_size.kind = 2, "limit.gradient.queue_size.kind");
    BAD_TAG(gradient2, c_.limit.gradient2.queue_size.kind = huge,
            "limit.gradient2.queue_size.kind");
    /* The wrapper reads its inner algorithm's kinds too. */
    BAD_TAG(windowed, c_.limit.vegas.alpha.kind = 2, "limit.vegas.alpha.kind");
    BAD_TAG(windowed,
            (c_.limit.windowed.inner = WEIR_LIMIT_GRADIENT, c_.limit.gradient.queue_size.kind = 5),
            "limit.gradient.queue_size.kind");

    /* Only the chosen parameter set is read: junk in the others is ignored. */
    weir_config c = d;
    c.algorithm.weighted.health.model = huge;
    c.algorithm.weighted.draw = huge;
    c.algorithm.weighted.health.buckets.count = 0;
    c.algorithm.weighted.health.ewma.half_life = 0;
    c.algorithm.weighted.floor = 0.0;
    c.limit.vegas.alpha.kind = huge;
    c.limit.gradient.queue_size.kind = huge;
    c.limit.windowed.inner = huge;
    c.limit.windowed.window.kind = huge;
    c.limit.aimd.timeout_ns = 0;
    c.limit.knee.min_limit = 0;
    c.limit.knee.hold = NAN;
    c.limit.knee.armed_for_ns = UINT64_MAX;
    CHECK_OK(weir_config_validate(&c));
    c = s;
    c.algorithm.lowest_score.success_half_life_ns = 0;
    c.algorithm.lowest_score.penalty = -1.0f;
    c.algorithm.lowest_score.probe_fraction = NAN;
    c.algorithm.lowest_score.forgiveness = 2.0f;
    c.algorithm.lowest_score.probe_after_ns = UINT64_MAX;
    c.algorithm.lowest_score.slow_ratio = 0.5f;
    CHECK_OK(weir_config_validate(&c));

    /* Outcomes: 6, 7 and UINT32_MAX leave the lease in flight and change nothing. */
    weir_balancer *b = make(fixed(2), 1);
    CHECK_OK(weir_balancer_add(b, 1));
    weir_lease l;
    CHECK_OK(weir_balancer_acquire(b, 0, &l));
    const weir_balancer_statistics before = stats(b);
    const weir_outcome bad[] = {WEIR_OUTCOME_COUNT, 7, UINT32_MAX};
    for (size_t i = 0; i < 3; i++) {
        CHECK_STATUS(weir_balancer_release(b, &l, bad[i], 10), WEIR_ERR_INVALID_ARGUMENT);
        CHECK_MESSAGE("outcome");
        weir_balancer_statistics now = stats(b);
        CHECK(same_stats(&before, &now));
        CHECK(in_flight(b, 1) == 1);
    }
    CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_CLIENT_ERROR, 10));
    check_room(b, 2);

    /* Utilizations NaN, infinite, negative or above 1000 leave the lease in flight, its tag and every
     * other byte as they were, and change nothing (an invalid outcome is named first); the ends of the
     * range, -0 included, are reports. */
    CHECK_OK(weir_balancer_acquire(b, 20, &l));
    const weir_lease copy = l;
    const weir_balancer_statistics held = stats(b);
    const double loads[] = {NAN, -NAN, INFINITY, -INFINITY, -0.5, -DBL_MIN, 1000.5,
                            nextafter(1000.0, INFINITY), DBL_MAX};
    for (size_t i = 0; i < sizeof loads / sizeof loads[0]; i++) {
        CHECK_STATUS(weir_balancer_release_loaded(b, &l, WEIR_OUTCOME_SUCCESS, 30, loads[i]),
                     WEIR_ERR_INVALID_ARGUMENT);
        CHECK_MESSAGE("utilization: ");
        CHECK_MESSAGE("a server load must");
        CHECK(!check_names_rust(weir_last_error_message()));
        CHECK(memcmp(&l, &copy, sizeof l) == 0);
        weir_balancer_statistics now = stats(b);
        CHECK(same_stats(&held, &now));
    }
    CHECK_STATUS(weir_balancer_release_loaded(b, &l, WEIR_OUTCOME_COUNT, 30, NAN),
                 WEIR_ERR_INVALID_ARGUMENT);
    CHECK_MESSAGE("outcome");
    CHECK(memcmp(&l, &copy, sizeof l) == 0);
    CHECK_OK(weir_balancer_release_loaded(b, &l, WEIR_OUTCOME_SUCCESS, 30, 1000.0));
    CHECK(l.balancer == 0 && in_flight(b, 1) == 0);
    const double ends[] = {0.0, -0.0, DBL_MIN};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        CHECK_OK(weir_balancer_acquire(b, 40, &l));
        CHECK_OK(weir_balancer_release_loaded(b, &l, WEIR_OUTCOME_SUCCESS, 50, ends[i]));
    }
    CHECK(stats(b).released[WEIR_OUTCOME_SUCCESS] == held.released[WEIR_OUTCOME_SUCCESS] + 4);
    check_room(b, 2);
    weir_balancer_free(b);

    /* HTTP statuses outside 100..=599. */
    const int32_t statuses[] = {99, 600, -1, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < 5; i++) {
        weir_outcome o;
        FILL(o);
        CHECK_STATUS(weir_outcome_from_http_status(statuses[i], &o), WEIR_ERR_INVALID_ARGUMENT);
        CHECK_UNTOUCHED(o);
    }

    /* Codes that are no outcome. */
    const weir_outcome codes[] = {6, 255, 256, UINT32_MAX};
    for (size_t i = 0; i < 4; i++) {
        bool r;
        FILL(r);
        CHECK_STATUS(weir_outcome_is_retryable(codes[i], &r), WEIR_ERR_INVALID_ARGUMENT);
        CHECK_UNTOUCHED(r);
    }
}

/* A release that must be refused: `status`, the message, and nothing changed. */
static void check_refused_release(const weir_balancer *b, weir_lease *lease,
                                  weir_status status, uint64_t node, uint32_t node_in_flight) {
    const weir_balancer_statistics before = stats(b);
    CHECK_STATUS(weir_balancer_release(b, lease, WEIR_OUTCOME_SUCCESS, 50), status);
    CHECK(weir_last_error_message()[0] != '\0');
    if (status == WEIR_ERR_INVALID_LEASE) {
        CHECK_MESSAGE("already released");
    }
    weir_balancer_statistics after = stats(b);
    CHECK(same_stats(&before, &after));
    CHECK(in_flight(b, node) == node_in_flight);
}

static void test_leases(void) {
    const uint32_t limit = 3;
    weir_balancer *b = make(fixed(limit), 4);
    weir_balancer *other = make(fixed(limit), 4);
    CHECK_OK(weir_balancer_add(b, 1));
    CHECK_OK(weir_balancer_add(other, 1));

    /* Released twice: refused, nothing changes, the limit holds. */
    weir_lease l;
    CHECK_OK(weir_balancer_acquire(b, 10, &l));
    CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_SUCCESS, 20));
    check_refused_release(b, &l, WEIR_ERR_INVALID_LEASE, 1, 0);
    check_room(b, limit);
    /* The same with a load report, either release first. */
    for (int loaded_first = 0; loaded_first < 2; loaded_first++) {
        CHECK_OK(weir_balancer_acquire(b, 10, &l));
        if (loaded_first) {
            CHECK_OK(weir_balancer_release_loaded(b, &l, WEIR_OUTCOME_SUCCESS, 20, 0.5));
            check_refused_release(b, &l, WEIR_ERR_INVALID_LEASE, 1, 0);
        } else {
            CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_SUCCESS, 20));
        }
        const weir_balancer_statistics before_again = stats(b);
        CHECK_STATUS(weir_balancer_release_loaded(b, &l, WEIR_OUTCOME_SUCCESS, 30, 0.5),
                     WEIR_ERR_INVALID_LEASE);
        CHECK_MESSAGE("already released");
        const weir_balancer_statistics after_again = stats(b);
        CHECK(same_stats(&before_again, &after_again));
        check_room(b, limit);
    }

    /* Forged: each identifying field changed in turn, while the real lease is in flight. */
    CHECK_OK(weir_balancer_acquire(b, 30, &l));
    weir_lease forged = l;
    forged.generation ^= 1;
    check_refused_release(b, &forged, WEIR_ERR_INVALID_LEASE, 1, 1);
    forged = l;
    forged.generation ^= 0x8000;
    check_refused_release(b, &forged, WEIR_ERR_INVALID_LEASE, 1, 1);
    forged = l;
    forged.slot ^= 1; /* a vacant slot */
    check_refused_release(b, &forged, WEIR_ERR_INVALID_LEASE, 1, 1);
    forged = l;
    forged.slot = UINT32_MAX; /* past the end */
    check_refused_release(b, &forged, WEIR_ERR_INVALID_LEASE, 1, 1);
    forged = l;
    forged.node_id ^= 1;
    check_refused_release(b, &forged, WEIR_ERR_INVALID_LEASE, 1, 1);
    forged = l;
    forged.balancer ^= 1;
    check_refused_release(b, &forged, WEIR_ERR_INVALID_LEASE, 1, 1);
    forged = l;
    forged.balancer = 0;
    check_refused_release(b, &forged, WEIR_ERR_INVALID_LEASE, 1, 1);
    weir_lease zero;
    memset(&zero, 0, sizeof zero);
    check_refused_release(b, &zero, WEIR_ERR_INVALID_LEASE, 1, 1);
    /* A forged lease naming a slot that holds another node's leases. */
    CHECK_OK(weir_balancer_add(b, 2));
    CHECK_OK(weir_balancer_set_lame_duck(b, 1, true));
    weir_lease on2;
    CHECK_OK(weir_balancer_acquire(b, 40, &on2));
    CHECK(on2.node_id == 2 && on2.slot != l.slot);
    forged = l;
    forged.slot = on2.slot;
    check_refused_release(b, &forged, WEIR_ERR_INVALID_LEASE, 1, 1);
    CHECK(in_flight(b, 2) == 1);
    CHECK_OK(weir_balancer_release(b, &on2, WEIR_OUTCOME_SUCCESS, 50));
    CHECK_OK(weir_balancer_remove(b, 2));
    CHECK_OK(weir_balancer_set_lame_duck(b, 1, false));
    /* The real one still releases, once. */
    CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_SUCCESS, 60));
    check_refused_release(b, &l, WEIR_ERR_INVALID_LEASE, 1, 0);
    check_room(b, limit);

    /* Another balancer's lease, for the same node id in the same slot: refused by both tags. */
    weir_lease mine, theirs;
    CHECK_OK(weir_balancer_acquire(b, 70, &mine));
    CHECK_OK(weir_balancer_acquire(other, 70, &theirs));
    CHECK(mine.balancer != theirs.balancer);
    CHECK(mine.slot == theirs.slot && mine.node_id == theirs.node_id);
    check_refused_release(b, &theirs, WEIR_ERR_INVALID_LEASE, 1, 1);
    check_refused_release(other, &mine, WEIR_ERR_INVALID_LEASE, 1, 1);
    CHECK_OK(weir_balancer_release(b, &mine, WEIR_OUTCOME_SUCCESS, 80));
    CHECK_OK(weir_balancer_release(other, &theirs, WEIR_OUTCOME_SUCCESS, 80));
    check_room(b, limit);
    check_room(other, limit);

    /* The node was removed: NODE_REMOVED once, counted stale; then INVALID_LEASE. */
    CHECK_OK(weir_balancer_acquire(b, 90, &l));
    CHECK_OK(weir_balancer_remove(b, 1));
    weir_balancer_statistics before = stats(b);
    CHECK_STATUS(weir_balancer_release(b, &l, WEIR_OUTCOME_FAILURE, 100), WEIR_ERR_NODE_REMOVED);
    CHECK_MESSAGE("removed");
    weir_balancer_statistics after = stats(b);
    CHECK(after.released_stale == before.released_stale + 1);
    CHECK(after.in_flight == before.in_flight - 1);
    CHECK(after.released[WEIR_OUTCOME_FAILURE] == before.released[WEIR_OUTCOME_FAILURE]);
    before = after;
    CHECK_STATUS(weir_balancer_release(b, &l, WEIR_OUTCOME_FAILURE, 100), WEIR_ERR_INVALID_LEASE);
    after = stats(b);
    CHECK(same_stats(&before, &after));
    /* Re-added in the same slot: the old lease is still refused, and the new node starts clean. */
    CHECK_OK(weir_balancer_add(b, 1));
    check_refused_release(b, &l, WEIR_ERR_INVALID_LEASE, 1, 0);
    weir_node_info info;
    CHECK_OK(weir_balancer_node_snapshot(b, 1, 100, &info));
    CHECK(info.in_flight == 0 && info.has_data == false);
    check_room(b, limit);
    weir_balancer_statistics end = stats(b);
    uint64_t released = 0;
    for (int i = 0; i < WEIR_OUTCOME_COUNT; i++) {
        released += end.released[i];
    }
    CHECK(end.acquired == released + end.released_stale + end.in_flight);
    weir_balancer_free(b);
    weir_balancer_free(other);
}

/* Every error of every function that has outputs leaves them as they were. */
static void test_outputs_only_on_success(void) {
    weir_config c = fixed(1);
    c.max_waiters = 0;
    weir_balancer *b = make(c, 1);
    weir_lease l;
    weir_rng rng = weir_rng_seed(11);
    FILL(l);
    CHECK_STATUS(weir_balancer_acquire(b, 0, &l), WEIR_ERR_NO_ACTIVE_NODES);
    CHECK_UNTOUCHED(l);
    CHECK_STATUS(weir_balancer_acquire_with_rng(b, 0, &rng, &l), WEIR_ERR_NO_ACTIVE_NODES);
    CHECK_UNTOUCHED(l);
    CHECK_STATUS(weir_balancer_acquire_wait(b, weir_now_ns() + 1000000u, &l), WEIR_ERR_NO_ACTIVE_NODES);
    CHECK_UNTOUCHED(l);
    CHECK_OK(weir_balancer_add(b, 1));
    weir_lease held;
    CHECK_OK(weir_balancer_acquire(b, 0, &held));
    CHECK_STATUS(weir_balancer_acquire(b, 0, &l), WEIR_ERR_ALL_BUSY);
    CHECK_UNTOUCHED(l);
    CHECK_STATUS(weir_balancer_acquire_with_rng(b, 0, &rng, &l), WEIR_ERR_ALL_BUSY);
    CHECK_UNTOUCHED(l);
    CHECK_STATUS(weir_balancer_acquire_wait(b, weir_now_ns() + 1000000u, &l), WEIR_ERR_QUEUE_FULL);
    CHECK_UNTOUCHED(l);
    weir_balancer_free(b);

    c.max_waiters = 2;
    b = make(c, 1);
    CHECK_OK(weir_balancer_add(b, 1));
    CHECK_OK(weir_balancer_acquire(b, 0, &held));
    CHECK_STATUS(weir_balancer_acquire_wait(b, weir_now_ns() + 2000000u, &l), WEIR_ERR_TIMEOUT);
    CHECK_UNTOUCHED(l);

    weir_node_info info;
    FILL(info);
    CHECK_STATUS(weir_balancer_node_snapshot(b, 2, 0, &info), WEIR_ERR_UNKNOWN_ID);
    CHECK_UNTOUCHED(info);
    weir_node_info buf[1];
    size_t len;
    CHECK_STATUS(weir_balancer_add(b, 2), WEIR_ERR_CAPACITY_FULL);
    /* No node due is no error: `*due` is written (false), the id is not. The weighted family takes
     * no checks; an unknown id is refused first. */
    bool due;
    uint64_t due_id;
    FILL(due_id);
    CHECK_OK(weir_balancer_due_check(b, 0, 0, &due, &due_id));
    CHECK(!due);
    CHECK_UNTOUCHED(due_id);
    CHECK_STATUS(weir_balancer_report_check(b, 2, true, 0), WEIR_ERR_UNKNOWN_ID);
    CHECK_MESSAGE("no node with id 2");
    CHECK_STATUS(weir_balancer_report_check(b, 1, true, 0), WEIR_ERR_NOT_LOWEST_SCORE);
    CHECK_MESSAGE("WEIR_ALGORITHM_LOWEST_SCORE");
    CHECK(!check_names_rust(weir_last_error_message()));
    FILL(buf);
    FILL(len);
    CHECK_STATUS(weir_balancer_nodes(b, 0, buf, 0, &len), WEIR_ERR_BUFFER_TOO_SMALL);
    CHECK_UNTOUCHED(buf);
    CHECK_UNTOUCHED(len);
    weir_outcome o;
    FILL(o);
    CHECK_STATUS(weir_outcome_from_http_status(700, &o), WEIR_ERR_INVALID_ARGUMENT);
    CHECK_UNTOUCHED(o);
    weir_balancer *nb;
    FILL(nb);
    weir_config bad = weir_config_default();
    bad.algorithm.lowest_score.penalty = -1.0f;
    CHECK_STATUS(weir_balancer_new(&bad, 1, &nb), WEIR_ERR_INVALID_CONFIG);
    CHECK_UNTOUCHED(nb);
    bad = weir_config_default();
    bad.algorithm.lowest_score.forgiveness = NAN;
    CHECK_STATUS(weir_balancer_new(&bad, 1, &nb), WEIR_ERR_INVALID_CONFIG);
    CHECK_UNTOUCHED(nb);
    bad = weir_config_default();
    bad.algorithm.lowest_score.slow_ratio = 0.5f;
    CHECK_STATUS(weir_balancer_new(&bad, 1, &nb), WEIR_ERR_INVALID_CONFIG);
    CHECK_UNTOUCHED(nb);
    bad = weir_config_default();
    bad.algorithm.lowest_score.probe_after_ns = 1;
    CHECK_STATUS(weir_balancer_new(&bad, 1, &nb), WEIR_ERR_INVALID_CONFIG);
    CHECK_UNTOUCHED(nb);
    bad = weir_config_default();
    CHECK_STATUS(weir_balancer_new(&bad, 0, &nb), WEIR_ERR_INVALID_CONFIG);
    CHECK_UNTOUCHED(nb);
    CHECK_OK(weir_balancer_release(b, &held, WEIR_OUTCOME_SUCCESS, 1));
    weir_balancer_free(b);
}

static void *fail_on_another_thread(void *arg) {
    (void)arg;
    /* A fresh thread starts with an empty message and gets its own. */
    int empty = weir_last_error_message()[0] == '\0';
    weir_status s = weir_balancer_add(NULL, 1);
    int own = s == WEIR_ERR_NULL && strstr(weir_last_error_message(), "balancer") != NULL;
    return (void *)(intptr_t)(empty && own);
}

/* The message is empty: the last call that returned a status succeeded. */
#define CHECK_NO_MESSAGE() CHECK(weir_last_error_message()[0] == '\0')

static void test_error_messages(void) {
    /* Every call that returns a status sets the message: its error, or "" on WEIR_OK. */
    CHECK_STATUS(weir_outcome_from_http_status(42, NULL), WEIR_ERR_NULL);
    CHECK_MESSAGE("`out`");
    const char *held = weir_last_error_message();
    char copy[64];
    snprintf(copy, sizeof copy, "%s", held);
    weir_outcome o;
    CHECK_OK(weir_outcome_from_http_status(200, &o));
    CHECK_NO_MESSAGE();
    /* A pointer read before the success still shows its text (valid until the next failure). */
    CHECK(strcmp(held, copy) == 0);

    /* Functions that return no status leave it as it was. */
    CHECK_STATUS(weir_outcome_from_http_status(600, &o), WEIR_ERR_INVALID_ARGUMENT);
    CHECK_MESSAGE("600");
    weir_config config = weir_config_default();
    weir_rng rng = weir_rng_seed(1);
    (void)rng;
    (void)weir_now_ns();
    CHECK(weir_version() == WEIR_VERSION_NUMBER);
    CHECK(weir_status_str(WEIR_OK) != NULL);
    weir_balancer_free(NULL);
    CHECK_MESSAGE("600");
    CHECK_OK(weir_config_validate(&config));
    CHECK_NO_MESSAGE();

    /* Each thread has its own: a failure elsewhere neither sets nor clears this one's. */
    CHECK_STATUS(weir_outcome_from_http_status(42, NULL), WEIR_ERR_NULL);
    pthread_t t;
    int created = pthread_create(&t, NULL, fail_on_another_thread, NULL);
    REQUIRE(created == 0);
    void *result = NULL;
    int joined = pthread_join(t, &result);
    REQUIRE(joined == 0);
    CHECK(result == (void *)1);
    CHECK_MESSAGE("`out`");
}

/* Messages name values as this header does: numbers and WEIR_ names, never the Rust core's. */
static void test_messages_use_the_headers_names(void) {
    weir_config config = weir_config_default();
    weir_balancer *b = NULL;
    CHECK_STATUS(weir_balancer_new(&config, 0, &b), WEIR_ERR_INVALID_CONFIG);
    CHECK_MESSAGE("capacity must be between 1 and 65,536");
    CHECK(!check_names_rust(weir_last_error_message()));
    CHECK_STATUS(weir_balancer_new(&config, 65537, &b), WEIR_ERR_INVALID_CONFIG);
    CHECK_MESSAGE("65,536");
    CHECK(b == NULL);

    config.max_waiters = (1u << 20) + 1;
    CHECK_STATUS(weir_config_validate(&config), WEIR_ERR_INVALID_CONFIG);
    CHECK_MESSAGE("max_waiters must be at most 2^20");
    CHECK(!check_names_rust(weir_last_error_message()));

    config = weir_config_default();
    config.algorithm.family = 7;
    CHECK_STATUS(weir_config_validate(&config), WEIR_ERR_INVALID_ARGUMENT);
    CHECK_MESSAGE("algorithm.family: 7 is not one of");
    CHECK_MESSAGE("WEIR_ALGORITHM_LOWEST_SCORE (0), WEIR_ALGORITHM_WEIGHTED (1)");
    CHECK(!check_names_rust(weir_last_error_message()));

    config = weir_config_cascade();
    config.algorithm.weighted.health = weir_health_ewma_default();
    config.algorithm.weighted.health.ewma.half_life = 0;
    CHECK_STATUS(weir_config_validate(&config), WEIR_ERR_INVALID_CONFIG);
    CHECK_MESSAGE("algorithm.weighted.health.ewma.half_life must be at least 1");
    CHECK(!check_names_rust(weir_last_error_message()));

    config = weir_config_default();
    config.limit = weir_limit_aimd_default();
    config.limit.aimd.max_limit = 1u << 24;
    CHECK_STATUS(weir_config_validate(&config), WEIR_ERR_INVALID_CONFIG);
    CHECK_MESSAGE("limit.aimd: ");
    CHECK_MESSAGE("2^24 - 1");
    CHECK(!check_names_rust(weir_last_error_message()));

    weir_backoff_config backoff = weir_backoff_config_default();
    backoff.max_ns = WEIR_MAX_BACKOFF_NS + 1;
    CHECK_STATUS(weir_backoff_config_validate(&backoff), WEIR_ERR_INVALID_CONFIG);
    CHECK_MESSAGE("max_ns must be 1 ..= WEIR_MAX_BACKOFF_NS");
    CHECK(!check_names_rust(weir_last_error_message()));
    weir_shedder_config shedder = weir_shedder_config_default();
    shedder.buckets = WEIR_MAX_WINDOW_BUCKETS + 1;
    CHECK_STATUS(weir_shedder_config_validate(&shedder), WEIR_ERR_INVALID_CONFIG);
    CHECK_MESSAGE("buckets must be 1 ..= WEIR_MAX_WINDOW_BUCKETS (128)");
    /* The core's text added "(shedder buckets must be between 1 and MAX_WINDOW_BUCKETS)". */
    CHECK(!check_names_rust(weir_last_error_message()));
}

int main(void) {
    test_header_is_covered();
    test_null_arguments();
    test_enum_ranges();
    test_leases();
    test_outputs_only_on_success();
    test_error_messages();
    test_messages_use_the_headers_names();
    return check_summary("test_contract");
}

/* Every balancer function of weir.h from C, with the results the header documents: the presets and
 * their values, validation naming the field, membership and its errors, the three acquires, release of
 * every outcome, the HTTP and errno mappings, snapshots, counters, versions and status names. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

/* The last error message contains `text`. */
#define CHECK_MESSAGE(text)                                                                        \
    do {                                                                                           \
        check_count++;                                                                             \
        if (strstr(weir_last_error_message(), (text)) == NULL) {                                   \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__,            \
                    weir_last_error_message(), (text));                                            \
        }                                                                                          \
    } while (0)

/* A configuration built from `base` with `change` applied is refused with `status`, naming `field` (and
 * no Rust item), by weir_config_validate and by weir_balancer_new (which writes nothing). */
#define CHECK_REFUSED(base, change, status, field)                                                 \
    do {                                                                                           \
        weir_config c_ = (base);                                                                   \
        change;                                                                                    \
        CHECK_STATUS(weir_config_validate(&c_), (status));                                         \
        CHECK_MESSAGE(field);                                                                      \
        CHECK(!check_names_rust(weir_last_error_message()));                                       \
        weir_balancer *b_ = (weir_balancer *)&check_count;                                         \
        CHECK_STATUS(weir_balancer_new(&c_, 4, &b_), (status));                                    \
        CHECK(b_ == (weir_balancer *)&check_count);                                                \
        CHECK_MESSAGE(field);                                                                      \
    } while (0)

#define SENTINEL 0xA5

static const uint64_t MS = 1000000u;
static const uint64_t SEC = 1000000000u;

static weir_balancer *make(weir_config config, size_t capacity) {
    weir_balancer *b = NULL;
    CHECK_OK(weir_balancer_new(&config, capacity, &b));
    REQUIRE(b != NULL);
    return b;
}

/* The configuration `b` reports, read over a sentinel fill, so that a field it leaves unwritten shows. */
static weir_config config_of(const weir_balancer *b) {
    weir_config back;
    memset(&back, SENTINEL, sizeof back);
    CHECK_OK(weir_balancer_config(b, &back));
    return back;
}

/* The original cascade's configuration with a fixed limit of `limit`. */
static weir_config fixed(uint32_t limit) {
    weir_config c = weir_config_cascade();
    c.limit.fixed.limit = limit;
    return c;
}

static weir_balancer_statistics stats(const weir_balancer *b) {
    weir_balancer_statistics s;
    memset(&s, 0, sizeof s);
    CHECK_OK(weir_balancer_stats(b, &s));
    return s;
}

static uint64_t released_total(const weir_balancer_statistics *s) {
    uint64_t total = 0;
    for (int i = 0; i < WEIR_OUTCOME_COUNT; i++) {
        total += s->released[i];
    }
    return total;
}

/* acquired == released (all outcomes) + released_stale + in flight, exactly; and every wait that
 * queued was granted, timed out, cancelled, or waits still. */
static void check_conserved(const weir_balancer *b) {
    weir_balancer_statistics s = stats(b);
    CHECK(s.acquired == released_total(&s) + s.released_stale + s.in_flight);
    CHECK(s.waits == s.waits_granted + s.waits_timed_out + s.waits_cancelled + s.waiting);
}

static void test_version(void) {
    CHECK(weir_version() == WEIR_VERSION_NUMBER);
    CHECK(WEIR_VERSION_NUMBER ==
          WEIR_VERSION_MAJOR * 1000000 + WEIR_VERSION_MINOR * 1000 + WEIR_VERSION_PATCH);
    REQUIRE(weir_version_string() != NULL);
    CHECK(strcmp(weir_version_string(), WEIR_VERSION_STRING) == 0);
    char text[64];
    snprintf(text, sizeof text, "%d.%d.%d", WEIR_VERSION_MAJOR, WEIR_VERSION_MINOR,
             WEIR_VERSION_PATCH);
    CHECK(strcmp(text, weir_version_string()) == 0);
}

static void test_status_names(void) {
    static const char *const names[] = {
        "WEIR_OK:",
        "WEIR_ERR_NULL:",
        "WEIR_ERR_PANIC:",
        "WEIR_ERR_INVALID_ARGUMENT:",
        "WEIR_ERR_INVALID_CONFIG:",
        "WEIR_ERR_NO_ACTIVE_NODES:",
        "WEIR_ERR_ALL_BUSY:",
        "WEIR_ERR_INVALID_LEASE:",
        "WEIR_ERR_NODE_REMOVED:",
        "WEIR_ERR_DUPLICATE_ID:",
        "WEIR_ERR_UNKNOWN_ID:",
        "WEIR_ERR_CAPACITY_FULL:",
        "WEIR_ERR_QUEUE_FULL:",
        "WEIR_ERR_TIMEOUT:",
        "WEIR_ERR_BUFFER_TOO_SMALL:",
        "WEIR_ERR_OVERLOADED:",
        "WEIR_ERR_INVALID_PROMISE:",
        "WEIR_ERR_UNSUPPORTED:",
        "WEIR_ERR_IO:",
        "WEIR_ERR_RETRY_BUDGET_EXHAUSTED:",
        "WEIR_ERR_NOT_LOWEST_SCORE:",
        "WEIR_ERR_SHED:",
    };
    const weir_status codes[] = {
        WEIR_OK,
        WEIR_ERR_NULL,
        WEIR_ERR_PANIC,
        WEIR_ERR_INVALID_ARGUMENT,
        WEIR_ERR_INVALID_CONFIG,
        WEIR_ERR_NO_ACTIVE_NODES,
        WEIR_ERR_ALL_BUSY,
        WEIR_ERR_INVALID_LEASE,
        WEIR_ERR_NODE_REMOVED,
        WEIR_ERR_DUPLICATE_ID,
        WEIR_ERR_UNKNOWN_ID,
        WEIR_ERR_CAPACITY_FULL,
        WEIR_ERR_QUEUE_FULL,
        WEIR_ERR_TIMEOUT,
        WEIR_ERR_BUFFER_TOO_SMALL,
        WEIR_ERR_OVERLOADED,
        WEIR_ERR_INVALID_PROMISE,
        WEIR_ERR_UNSUPPORTED,
        WEIR_ERR_IO,
        WEIR_ERR_RETRY_BUDGET_EXHAUSTED,
        WEIR_ERR_NOT_LOWEST_SCORE,
        WEIR_ERR_SHED,
    };
    const int n = (int)(sizeof codes / sizeof codes[0]);
    for (int i = 0; i < n; i++) {
        CHECK(codes[i] == i); /* stable codes, 0 ..= 21 in order */
        const char *s = weir_status_str(codes[i]);
        REQUIRE(s != NULL);
        CHECK(strncmp(s, names[i], strlen(names[i])) == 0);
        CHECK(strlen(s) > strlen(names[i]) + 1); /* a meaning follows the name */
    }
    const weir_status unknown[] = {-1, 22, 23, 1000, INT32_MAX, INT32_MIN};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *s = weir_status_str(unknown[i]);
        REQUIRE(s != NULL);
        CHECK(strcmp(s, "WEIR_ERR_UNKNOWN: not a weir status code") == 0);
    }
}

static void test_presets(void) {
    weir_config d = weir_config_default();
    CHECK(d.algorithm.family == WEIR_ALGORITHM_LOWEST_SCORE);
    const weir_lowest_score *ls = &d.algorithm.lowest_score;
    CHECK(ls->success_half_life_ns == 1 * SEC);
    CHECK(ls->failure_half_life_ns == 30 * SEC);
    CHECK(ls->dropped_cost == 0.1f);
    CHECK(ls->throttled_cost == 0.1f);
    CHECK(ls->client_error_cost == 0.01f);
    CHECK(ls->penalty == 10.0f);
    CHECK(ls->ratio_penalty == 16.0f);
    CHECK(ls->probe_fraction == 0.0f && ls->forgiveness == 0.0f); /* probation off */
    CHECK(ls->probe_after_ns == 0);                                 /* timed probes off */
    CHECK(ls->slow_ratio == 0.0f);                                  /* the slowness term off */
    /* The family not chosen holds the original cascade's parameters. */
    const weir_weighted *w = &d.algorithm.weighted;
    CHECK(w->health.model == WEIR_HEALTH_BUCKETS);
    CHECK(w->health.buckets.count == 6 && w->health.buckets.width_ns == 5 * SEC);
    CHECK(w->health.buckets.decay == 3.0);
    CHECK(w->health.ewma.half_life == 32);
    CHECK(w->draw == WEIR_DRAW_CASCADE);
    CHECK(w->weight_exponent == 3.0 && w->floor == 0.0001);
    CHECK(d.limit.algorithm == WEIR_LIMIT_CIAD);
    CHECK(d.limit.ciad.initial_limit == 20 && d.limit.ciad.min_limit == 1);
    CHECK(d.limit.ciad.max_limit == 1000000 && d.limit.ciad.backoff_ratio == 0.9);
    CHECK(d.limit.ciad.fast_start == true && d.limit.ciad.rtt_tolerance == 0.0);
    CHECK(d.seed == 0 && d.max_waiters == 1024);

    weir_config s = weir_config_cascade();
    CHECK(s.algorithm.family == WEIR_ALGORITHM_WEIGHTED);
    w = &s.algorithm.weighted;
    CHECK(w->health.model == WEIR_HEALTH_BUCKETS);
    CHECK(w->health.buckets.count == 6 && w->health.buckets.width_ns == 5 * SEC);
    CHECK(w->health.buckets.decay == 3.0);
    CHECK(w->draw == WEIR_DRAW_CASCADE);
    CHECK(w->weight_exponent == 3.0 && w->floor == 0.0001);
    CHECK(s.algorithm.lowest_score.success_half_life_ns == 1 * SEC);
    CHECK(s.algorithm.lowest_score.probe_fraction == 0.0f);
    CHECK(s.algorithm.lowest_score.forgiveness == 0.0f);
    CHECK(s.algorithm.lowest_score.probe_after_ns == 0);
    CHECK(s.algorithm.lowest_score.slow_ratio == 0.0f);
    CHECK(s.limit.algorithm == WEIR_LIMIT_FIXED && s.limit.fixed.limit == 100);
    CHECK(s.seed == 0 && s.max_waiters == 1024);

    weir_algorithm a = weir_algorithm_lowest_score_default();
    CHECK(a.family == WEIR_ALGORITHM_LOWEST_SCORE);
    CHECK(a.lowest_score.success_half_life_ns == 1 * SEC);
    CHECK(a.lowest_score.failure_half_life_ns == 30 * SEC && a.lowest_score.ratio_penalty == 16.0f);
    CHECK(a.lowest_score.probe_fraction == 0.0f && a.lowest_score.forgiveness == 0.0f);
    CHECK(a.lowest_score.probe_after_ns == 0);
    CHECK(a.lowest_score.slow_ratio == 0.0f);
    CHECK(a.weighted.health.model == WEIR_HEALTH_BUCKETS && a.weighted.draw == WEIR_DRAW_CASCADE);
    a = weir_algorithm_weighted_default();
    CHECK(a.family == WEIR_ALGORITHM_WEIGHTED && a.weighted.health.model == WEIR_HEALTH_BUCKETS);
    CHECK(a.weighted.health.buckets.count == 6 && a.weighted.health.buckets.decay == 3.0);
    CHECK(a.weighted.draw == WEIR_DRAW_CASCADE && a.weighted.weight_exponent == 3.0);
    CHECK(a.weighted.floor == 0.0001 && a.lowest_score.penalty == 10.0f);
    weir_health h = weir_health_buckets_default();
    CHECK(h.model == WEIR_HEALTH_BUCKETS && h.buckets.count == 6 && h.buckets.decay == 3.0);
    CHECK(h.buckets.width_ns == 5 * SEC && h.ewma.half_life == 32);
    h = weir_health_ewma_default();
    CHECK(h.model == WEIR_HEALTH_EWMA && h.ewma.half_life == 32 && h.buckets.count == 6);

    weir_limit l = weir_limit_fixed_default();
    CHECK(l.algorithm == WEIR_LIMIT_FIXED && l.fixed.limit == 100);
    l = weir_limit_aimd_default();
    CHECK(l.algorithm == WEIR_LIMIT_AIMD && l.aimd.initial_limit == 20);
    CHECK(l.aimd.min_limit == 20 && l.aimd.max_limit == 200);
    CHECK(l.aimd.backoff_ratio == 0.9 && l.aimd.timeout_ns == 5 * SEC);
    l = weir_limit_vegas_default();
    CHECK(l.algorithm == WEIR_LIMIT_VEGAS && l.vegas.initial_limit == 20);
    CHECK(l.vegas.max_limit == 1000 && l.vegas.smoothing == 1.0);
    CHECK(l.vegas.probe_multiplier == 30 && l.vegas.baseline_from_drops == true);
    CHECK(l.vegas.alpha.kind == WEIR_VEGAS_THRESHOLD_LOG10 && l.vegas.alpha.value == 3);
    CHECK(l.vegas.beta.kind == WEIR_VEGAS_THRESHOLD_LOG10 && l.vegas.beta.value == 6);
    CHECK(l.vegas.threshold.kind == WEIR_VEGAS_THRESHOLD_LOG10 && l.vegas.threshold.value == 1);
    CHECK(l.vegas.increase.kind == WEIR_VEGAS_STEP_LOG10);
    CHECK(l.vegas.decrease.kind == WEIR_VEGAS_STEP_LOG10);
    l = weir_limit_gradient_default();
    CHECK(l.algorithm == WEIR_LIMIT_GRADIENT && l.gradient.initial_limit == 50);
    CHECK(l.gradient.min_limit == 1 && l.gradient.max_limit == 1000);
    CHECK(l.gradient.smoothing == 0.2 && l.gradient.rtt_tolerance == 2.0);
    CHECK(l.gradient.queue_size.kind == WEIR_QUEUE_SIZE_SQRT && l.gradient.queue_size.value == 4);
    CHECK(l.gradient.probe == true && l.gradient.probe_interval == 1000);
    CHECK(l.gradient.backoff_ratio == 0.9);
    l = weir_limit_gradient2_default();
    CHECK(l.algorithm == WEIR_LIMIT_GRADIENT2 && l.gradient2.initial_limit == 20);
    CHECK(l.gradient2.min_limit == 20 && l.gradient2.max_limit == 200);
    CHECK(l.gradient2.smoothing == 0.2 && l.gradient2.long_window == 600);
    CHECK(l.gradient2.queue_size.kind == WEIR_QUEUE_SIZE_CONSTANT);
    CHECK(l.gradient2.queue_size.value == 4 && l.gradient2.rtt_tolerance == 1.5);
    CHECK(l.gradient2.drop_backoff_enabled == false);
    l = weir_limit_ciad_default();
    CHECK(l.algorithm == WEIR_LIMIT_CIAD && l.ciad.fast_start == false);
    CHECK(l.ciad.initial_limit == 20 && l.ciad.min_limit == 1 && l.ciad.max_limit == 1000000);
    l = weir_limit_knee_default();
    CHECK(l.algorithm == WEIR_LIMIT_KNEE && l.knee.initial_limit == 20);
    CHECK(l.knee.min_limit == 1 && l.knee.max_limit == 1000 && l.knee.backoff_ratio == 0.9);
    CHECK(l.knee.knee == 2.0 && l.knee.hold == 1.75 && l.knee.armed_for_ns == 60 * SEC);
    l = weir_limit_windowed_default();
    CHECK(l.algorithm == WEIR_LIMIT_WINDOWED && l.windowed.inner == WEIR_LIMIT_VEGAS);
    CHECK(l.windowed.min_window_ns == 1 * SEC && l.windowed.max_window_ns == 1 * SEC);
    CHECK(l.windowed.min_samples == 10 && l.windowed.min_rtt_threshold_ns == 100000);
    CHECK(l.windowed.window.kind == WEIR_SAMPLE_WINDOW_AVERAGE);
    CHECK(l.vegas.initial_limit == 20); /* the wrapped algorithm's parameters are Vegas' defaults */
}

/* Every family, model, draw and limit algorithm accepted, and a balancer built from each reports its
 * configuration. */
static void test_valid_configs(void) {
    const weir_limit limits[] = {
        weir_limit_fixed_default(),    weir_limit_aimd_default(), weir_limit_vegas_default(),
        weir_limit_gradient_default(), weir_limit_gradient2_default(),
        weir_limit_ciad_default(),     weir_limit_knee_default(), weir_limit_windowed_default(),
    };
    /* The weighted family with each model and each draw: no pair is refused. */
    const weir_health models[] = {weir_health_buckets_default(), weir_health_ewma_default()};
    const weir_draw draws[] = {WEIR_DRAW_CASCADE, WEIR_DRAW_CASCADE_APPROX, WEIR_DRAW_WEIGHTED_PICK};
    for (size_t m = 0; m < 2; m++) {
        for (size_t p = 0; p < 3; p++) {
            weir_config c = weir_config_default();
            c.algorithm = weir_algorithm_weighted_default();
            c.algorithm.weighted.health = models[m];
            c.algorithm.weighted.draw = draws[p];
            CHECK_OK(weir_config_validate(&c));
            weir_balancer *b = make(c, 2);
            weir_config back = config_of(b);
            CHECK(back.algorithm.family == WEIR_ALGORITHM_WEIGHTED);
            CHECK(back.algorithm.weighted.health.model == models[m].model);
            CHECK(back.algorithm.weighted.draw == draws[p]);
            weir_balancer_free(b);
        }
    }
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        weir_config c = weir_config_default();
        c.limit = limits[i];
        c.seed = 1000 + i;
        CHECK_OK(weir_config_validate(&c));
        weir_balancer *b = make(c, 2);
        weir_config back = config_of(b);
        CHECK(back.limit.algorithm == limits[i].algorithm);
        CHECK(back.seed == 1000 + i && back.max_waiters == 1024);
        CHECK(back.algorithm.family == WEIR_ALGORITHM_LOWEST_SCORE);
        size_t capacity = 0;
        CHECK_OK(weir_balancer_capacity(b, &capacity));
        CHECK(capacity == 2);
        weir_balancer_free(b);
    }
    /* The wrapper around every other algorithm. */
    for (weir_limit_algorithm inner = WEIR_LIMIT_FIXED; inner <= WEIR_LIMIT_KNEE; inner++) {
        if (inner == WEIR_LIMIT_WINDOWED) {
            continue;
        }
        weir_config c = weir_config_default();
        c.limit = weir_limit_windowed_default();
        c.limit.windowed.inner = inner;
        CHECK_OK(weir_config_validate(&c));
        weir_balancer *b = make(c, 1);
        weir_config back = config_of(b);
        CHECK(back.limit.algorithm == WEIR_LIMIT_WINDOWED && back.limit.windowed.inner == inner);
        weir_balancer_free(b);
    }
    weir_balancer *cascade = make(weir_config_cascade(), 1);
    weir_config back = config_of(cascade);
    CHECK(back.algorithm.family == WEIR_ALGORITHM_WEIGHTED);
    CHECK(back.algorithm.weighted.health.model == WEIR_HEALTH_BUCKETS);
    CHECK(back.algorithm.weighted.draw == WEIR_DRAW_CASCADE);
    CHECK(back.limit.algorithm == WEIR_LIMIT_FIXED && back.limit.fixed.limit == 100);
    weir_balancer_free(cascade);
    weir_balancer_free(NULL); /* a no-op */
}

/* A knee limit's parameters out of range: refused as WEIR_ERR_INVALID_CONFIG naming the field, by
 * validation and construction (which writes no balancer, see CHECK_REFUSED), at the top level and
 * wrapped; the edge values are accepted, and a refusal leaves nothing behind that a valid knee limit
 * built next would see. */
static void test_refused_knee(void) {
    weir_config k = weir_config_default();
    k.limit = weir_limit_knee_default();
    weir_config w = k;
    w.limit.algorithm = WEIR_LIMIT_WINDOWED;
    w.limit.windowed.inner = WEIR_LIMIT_KNEE;
    const weir_config bases[] = {k, w};
    for (size_t i = 0; i < 2; i++) {
        CHECK_REFUSED(bases[i], (c_.limit.knee.knee = 2.0, c_.limit.knee.hold = 2.5),
                      WEIR_ERR_INVALID_CONFIG, "limit.knee: knee and hold must be finite and >= 1, "
                                               "and hold <= knee");
        CHECK_REFUSED(bases[i], c_.limit.knee.knee = NAN, WEIR_ERR_INVALID_CONFIG,
                      "limit.knee: knee and hold");
        CHECK_REFUSED(bases[i], c_.limit.knee.hold = INFINITY, WEIR_ERR_INVALID_CONFIG,
                      "limit.knee: knee and hold");
        CHECK_REFUSED(bases[i], (c_.limit.knee.knee = 0.5, c_.limit.knee.hold = 0.5),
                      WEIR_ERR_INVALID_CONFIG, "limit.knee: knee and hold");
        CHECK_REFUSED(bases[i], c_.limit.knee.backoff_ratio = 1.0, WEIR_ERR_INVALID_CONFIG,
                      "limit.knee.backoff_ratio must be in [0.5, 1)");
        CHECK_REFUSED(bases[i], c_.limit.knee.backoff_ratio = 0.25, WEIR_ERR_INVALID_CONFIG,
                      "limit.knee.backoff_ratio");
        CHECK_REFUSED(bases[i], c_.limit.knee.min_limit = 0, WEIR_ERR_INVALID_CONFIG,
                      "limit.knee: min_limit must be at least 1");
        CHECK_REFUSED(bases[i], c_.limit.knee.initial_limit = 2000, WEIR_ERR_INVALID_CONFIG,
                      "limit.knee: min_limit must be at least 1, and min_limit <= initial_limit");
        CHECK_REFUSED(bases[i], c_.limit.knee.max_limit = 1u << 24, WEIR_ERR_INVALID_CONFIG,
                      "max_limit <= 2^24 - 1");
        CHECK_REFUSED(bases[i], c_.limit.knee.armed_for_ns = 1000 * SEC + 1, WEIR_ERR_INVALID_CONFIG,
                      "limit.knee.armed_for_ns must be at most 1000 s");
        CHECK_REFUSED(bases[i], c_.limit.knee.armed_for_ns = UINT64_MAX, WEIR_ERR_INVALID_CONFIG,
                      "limit.knee.armed_for_ns must be at most 1000 s");
        /* The arm's edges are accepted: 0 (the latency read always), 1 ns and 1000 s. */
        const uint64_t arms[] = {0, 1, 1000 * SEC};
        for (size_t a = 0; a < 3; a++) {
            weir_config ok = bases[i];
            ok.limit.knee.armed_for_ns = arms[a];
            CHECK_OK(weir_config_validate(&ok));
        }
    }
    /* A wrapped knee whose arm is in range and whose windows are not: the windows are named. */
    CHECK_REFUSED(w, (c_.limit.knee.armed_for_ns = 1000 * SEC, c_.limit.windowed.min_window_ns = 0),
                  WEIR_ERR_INVALID_CONFIG, "limit.windowed: the windows must satisfy");
    /* The edges: hold == knee == 1 and the lowest ratio are valid. */
    weir_config edge = k;
    edge.limit.knee.knee = 1.0;
    edge.limit.knee.hold = 1.0;
    edge.limit.knee.backoff_ratio = 0.5;
    CHECK_OK(weir_config_validate(&edge));
    /* Built after the refusals: a knee balancer whose nodes start at the configured limit, and which
     * reports the configuration it was given. */
    k.limit.knee.initial_limit = 3;
    k.limit.knee.knee = 3.0;
    k.limit.knee.hold = 2.0;
    k.limit.knee.armed_for_ns = 1000 * SEC;
    weir_balancer *b = make(k, 2);
    weir_config back = config_of(b);
    CHECK(back.limit.algorithm == WEIR_LIMIT_KNEE && back.limit.knee.initial_limit == 3);
    CHECK(back.limit.knee.knee == 3.0 && back.limit.knee.hold == 2.0);
    CHECK(back.limit.knee.armed_for_ns == 1000 * SEC);
    CHECK(back.limit.knee.backoff_ratio == 0.9 && back.limit.knee.max_limit == 1000);
    CHECK_OK(weir_balancer_add(b, 1));
    weir_node_info info;
    CHECK_OK(weir_balancer_node_snapshot(b, 1, 0, &info));
    CHECK(info.limit == 3 && info.in_flight == 0);
    weir_balancer_statistics s = stats(b);
    CHECK(s.active_nodes == 1 && s.acquired == 0);
    weir_balancer_free(b);
}

/* A balancer of `c` with a fixed limit (100), and nodes 1 and 2. */
static weir_balancer *two_nodes(weir_config c) {
    c.limit = weir_limit_fixed_default();
    weir_balancer *b = make(c, 2);
    CHECK_OK(weir_balancer_add(b, 1));
    CHECK_OK(weir_balancer_add(b, 2));
    return b;
}

/* A two-node default balancer (fixed limit) with probation's `probe_fraction` and `forgiveness`: node 2
 * fails 4 calls then succeeds once; returns how many of 200 acquires after that (each released at
 * once as ignored) land on node 2, and writes node 2's failures after its success to `*failures` if
 * not NULL. */
static int probation_reaches(float probe_fraction, float forgiveness, double *failures) {
    weir_config c = weir_config_default();
    c.algorithm.lowest_score.probe_fraction = probe_fraction;
    c.algorithm.lowest_score.forgiveness = forgiveness;
    weir_balancer *b = two_nodes(c);
    weir_rng rng = weir_rng_seed(7);
    const uint64_t not_node_2 = 1;
    weir_lease l;
    for (int i = 0; i < 5; i++) {
        CHECK_OK(weir_balancer_acquire_excluding(b, MS, &not_node_2, 1, &rng, &l));
        CHECK(l.node_id == 2);
        CHECK_OK(weir_balancer_release(b, &l, i < 4 ? WEIR_OUTCOME_FAILURE : WEIR_OUTCOME_SUCCESS,
                                       MS));
    }
    weir_node_info info;
    CHECK_OK(weir_balancer_node_snapshot(b, 2, MS, &info));
    if (failures != NULL) {
        *failures = info.failures;
    }
    int reached = 0;
    for (int i = 0; i < 200; i++) {
        CHECK_OK(weir_balancer_acquire_with_rng(b, 2 * MS, &rng, &l));
        reached += l.node_id == 2;
        CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_IGNORED, 2 * MS));
    }
    weir_balancer_free(b);
    return reached;
}

/* Probation's two fractions out of [0, 1] or not finite, and a timed probes' period neither 0 nor
 * within 1 ms ..= 1 hour: refused as WEIR_ERR_INVALID_CONFIG with the header's words (one message for
 * the three, the core's ConfigError::Probation), by validation and construction (which writes no
 * balancer, see CHECK_REFUSED); the ends, 0 and -0 are accepted, and a refusal leaves nothing behind
 * that a valid probation balancer built next would see: it reports the values it was given and
 * decides. */
static void test_refused_probation(void) {
    const weir_config d = weir_config_default();
    const char *const why = "invalid config: algorithm.lowest_score.probe_fraction and forgiveness "
                            "must be finite and in [0, 1], probe_after_ns 0 or between 1 ms and 1 "
                            "hour";
    const float bad[] = {NAN, -0.01f, 1.01f, INFINITY, -INFINITY, 1.0f + FLT_EPSILON};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_REFUSED(d, c_.algorithm.lowest_score.probe_fraction = bad[i], WEIR_ERR_INVALID_CONFIG,
                      why);
        CHECK(strcmp(weir_last_error_message(), why) == 0);
        CHECK_REFUSED(d, c_.algorithm.lowest_score.forgiveness = bad[i], WEIR_ERR_INVALID_CONFIG,
                      why);
        CHECK(strcmp(weir_last_error_message(), why) == 0);
        /* One bad field is enough, whatever the other holds. */
        CHECK_REFUSED(d,
                      (c_.algorithm.lowest_score.probe_fraction = 0.5f,
                       c_.algorithm.lowest_score.forgiveness = bad[i]),
                      WEIR_ERR_INVALID_CONFIG, why);
    }
    const uint64_t bad_after[] = {1, MS - 1, 3600 * SEC + 1, 3601 * SEC, UINT64_MAX};
    for (size_t i = 0; i < sizeof bad_after / sizeof bad_after[0]; i++) {
        CHECK_REFUSED(d, c_.algorithm.lowest_score.probe_after_ns = bad_after[i],
                      WEIR_ERR_INVALID_CONFIG, why);
        CHECK(strcmp(weir_last_error_message(), why) == 0);
        /* Good fractions do not make up for it. */
        CHECK_REFUSED(d,
                      (c_.algorithm.lowest_score.probe_fraction = 0.5f,
                       c_.algorithm.lowest_score.forgiveness = 0.5f,
                       c_.algorithm.lowest_score.probe_after_ns = bad_after[i]),
                      WEIR_ERR_INVALID_CONFIG, why);
    }
    /* Another refused field of the family keeps its own message: the checks come in the core's order. */
    CHECK_REFUSED(d,
                  (c_.algorithm.lowest_score.penalty = -1.0f,
                   c_.algorithm.lowest_score.probe_fraction = NAN),
                  WEIR_ERR_INVALID_CONFIG, "algorithm.lowest_score.penalty and ratio_penalty");
    /* The ends of the range, and -0. */
    const float edges[][2] = {{0.0f, 0.0f}, {1.0f, 1.0f}, {-0.0f, -0.0f}, {0.2f, 0.5f}};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        weir_config c = d;
        c.algorithm.lowest_score.probe_fraction = edges[i][0];
        c.algorithm.lowest_score.forgiveness = edges[i][1];
        CHECK_OK(weir_config_validate(&c));
    }
    const uint64_t good_after[] = {0, MS, SEC, 3600 * SEC};
    for (size_t i = 0; i < sizeof good_after / sizeof good_after[0]; i++) {
        weir_config c = d;
        c.algorithm.lowest_score.probe_after_ns = good_after[i];
        CHECK_OK(weir_config_validate(&c));
    }
    /* Built after the refusals: the balancer reports the values it was given, and decides by them. */
    weir_config p = d;
    p.algorithm.lowest_score.probe_fraction = 1.0f;
    p.algorithm.lowest_score.forgiveness = 0.5f;
    p.algorithm.lowest_score.probe_after_ns = 3600 * SEC;
    weir_balancer *b = make(p, 1);
    weir_config back = config_of(b);
    CHECK(back.algorithm.family == WEIR_ALGORITHM_LOWEST_SCORE);
    CHECK(back.algorithm.lowest_score.probe_fraction == 1.0f);
    CHECK(back.algorithm.lowest_score.forgiveness == 0.5f);
    CHECK(back.algorithm.lowest_score.probe_after_ns == 3600 * SEC);
    CHECK(back.algorithm.lowest_score.ratio_penalty == 16.0f);
    weir_balancer_free(b);
    const int off = probation_reaches(0.0f, 0.0f, NULL);
    const int all = probation_reaches(1.0f, 0.0f, NULL);
    CHECK(off == 0);              /* the failed node is avoided */
    CHECK(all > 60 && all < 140); /* every first try a probe: about half land on it */
    /* Forgiveness: the one success on the failed node takes away none, half or all of its failures. */
    double failures[3];
    (void)probation_reaches(0.0f, 0.0f, &failures[0]);
    (void)probation_reaches(0.0f, 0.5f, &failures[1]);
    (void)probation_reaches(0.0f, 1.0f, &failures[2]);
    CHECK(failures[0] > 3.9 && failures[0] <= 4.0);
    CHECK(failures[1] > 1.9 && failures[1] <= 2.0);
    CHECK(failures[2] == 0.0);
}

/* What a two-node default balancer (fixed limit, forgiveness 0.5, failures halving every 30 s) with
 * timed probes after `probe_after_ns` does with node 2 after one failure at 1 s (a lease lands on it
 * among calls released at once as successes): how many of 50 calls at 1.5 s land on it (`early`);
 * whether the first call at 2.5 s does (`probed`), released with `outcome`, and node 2's failures
 * after that (`failures`); how many of 50 calls at 3 s land on it (`later`); and whether the first
 * call at 4 s does (`again`). Every other call is released at once as a success. */
typedef struct timed_probe {
    int early;
    int probed;
    double failures;
    int later;
    int again;
} timed_probe;

/* Acquires at `now` and releases as a success at once, `calls` times: how many land on node 2. */
static int calls_on_node_2(weir_balancer *b, uint64_t now, weir_rng *rng, int calls) {
    int reached = 0;
    for (int i = 0; i < calls; i++) {
        weir_lease l;
        CHECK_OK(weir_balancer_acquire_with_rng(b, now, rng, &l));
        reached += l.node_id == 2;
        CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_SUCCESS, now));
    }
    return reached;
}

/* One acquire at `now`, released at once with `outcome`: whether it landed on node 2. */
static int first_on_node_2(weir_balancer *b, uint64_t now, weir_rng *rng, weir_outcome outcome) {
    weir_lease l;
    CHECK_OK(weir_balancer_acquire_with_rng(b, now, rng, &l));
    CHECK_OK(weir_balancer_release(b, &l, outcome, now));
    return l.node_id == 2;
}

/* Acquires at `now` until a lease lands on node 2 (the others released as successes), and releases
 * that one as a failure: node 2 fails once, node 1 only succeeds. */
static void fail_node_2(weir_balancer *b, uint64_t now, weir_rng *rng) {
    weir_lease l;
    int tries = 0;
    do {
        REQUIRE(tries++ < 64);
        CHECK_OK(weir_balancer_acquire_with_rng(b, now, rng, &l));
        if (l.node_id != 2) {
            CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_SUCCESS, now));
        }
    } while (l.node_id != 2);
    CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_FAILURE, now));
}

static timed_probe timed_probes(uint64_t probe_after_ns, weir_outcome outcome) {
    weir_config c = weir_config_default();
    c.algorithm.lowest_score.forgiveness = 0.5f;
    c.algorithm.lowest_score.probe_after_ns = probe_after_ns;
    weir_balancer *b = two_nodes(c);
    weir_rng rng = weir_rng_seed(13);
    fail_node_2(b, SEC, &rng);
    timed_probe t;
    t.early = calls_on_node_2(b, SEC + 500 * MS, &rng, 50);
    t.probed = first_on_node_2(b, 2500 * MS, &rng, outcome);
    weir_node_info info;
    CHECK_OK(weir_balancer_node_snapshot(b, 2, 2500 * MS, &info));
    t.failures = info.failures;
    t.later = calls_on_node_2(b, 3 * SEC, &rng, 50);
    t.again = first_on_node_2(b, 4 * SEC, &rng, WEIR_OUTCOME_SUCCESS);
    weir_balancer_free(b);
    return t;
}

/* Timed probes: a node that failed once is avoided until `probe_after_ns` has passed since, then the
 * first call of the clock epoch that marks it tries it. A probe answered well takes all its failures
 * (forgiveness), and the node is back among the calls; one that fails rewrites them, and the node waits
 * another period. Off (0), the node is avoided throughout. */
static void test_timed_probes(void) {
    const timed_probe back = timed_probes(SEC, WEIR_OUTCOME_SUCCESS);
    CHECK(back.early == 0);
    CHECK(back.probed == 1);
    CHECK(back.failures == 0.0);
    CHECK(back.later > 10 && back.later < 40); /* about half: the two score alike again */
    const timed_probe broken = timed_probes(SEC, WEIR_OUTCOME_FAILURE);
    CHECK(broken.early == 0);
    CHECK(broken.probed == 1);
    CHECK(broken.failures > 1.9 && broken.failures <= 2.0);
    CHECK(broken.later == 0); /* 0.5 s after the failed probe: not yet */
    CHECK(broken.again == 1); /* 1.5 s after it: probed again */
    const timed_probe off = timed_probes(0, WEIR_OUTCOME_SUCCESS);
    CHECK(off.early == 0);
    CHECK(off.probed == 0);
    CHECK(off.failures > 0.9 && off.failures <= 1.0);
    CHECK(off.later == 0);
    CHECK(off.again == 0);
}

/* weir_balancer_due_check at `now` with `quiet`: 0 when no node is due (the id left alone), else the
 * id named. */
static uint64_t named(const weir_balancer *b, uint64_t now, uint64_t quiet) {
    bool due = true;
    uint64_t id = UINT64_MAX;
    CHECK_OK(weir_balancer_due_check(b, now, quiet, &due, &id));
    CHECK(due || id == UINT64_MAX);
    return due ? id : 0;
}

/* Node 2 of a two-node default balancer fails once at 1 s; checks with a 2 s quiet period. */
static void test_health_checks(void) {
    const uint64_t quiet = 2 * SEC;
    weir_balancer *b = two_nodes(weir_config_default());
    weir_rng rng = weir_rng_seed(13);
    CHECK(named(b, SEC, 0) == 0); /* nothing avoided, nothing due */
    fail_node_2(b, SEC, &rng);
    weir_node_info info;
    CHECK_OK(weir_balancer_node_snapshot(b, 2, SEC, &info));
    CHECK(info.penalty > 0.0);
    /* Avoided, and not due before the quiet period has passed. */
    CHECK(calls_on_node_2(b, 2 * SEC, &rng, 50) == 0);
    CHECK(named(b, 2 * SEC, quiet) == 0);
    CHECK(named(b, 2 * SEC, UINT64_MAX) == 0);
    /* Quiet 2.5 s: named once, and not again at once (the check is under way). */
    const weir_balancer_statistics before = stats(b);
    CHECK(named(b, 3500 * MS, quiet) == 2);
    CHECK(named(b, 3500 * MS, quiet) == 0);
    CHECK(named(b, 4500 * MS, quiet) == 0); /* naming it dated it anew: 1 s ago */
    /* The check failed: one more failure, dated now, so another quiet period passes first. */
    weir_node_info failed;
    CHECK_OK(weir_balancer_node_snapshot(b, 2, 4500 * MS, &info));
    CHECK_OK(weir_balancer_report_check(b, 2, false, 4500 * MS));
    CHECK_OK(weir_balancer_node_snapshot(b, 2, 4500 * MS, &failed));
    CHECK(failed.failures > info.failures + 0.99 && failed.failures <= info.failures + 1.0);
    CHECK(failed.penalty > info.penalty);
    CHECK(named(b, 6 * SEC, quiet) == 0);
    CHECK(named(b, 7 * SEC, quiet) == 2);
    /* A check is not a call: no counter moved, no lease, no release. */
    const weir_balancer_statistics after = stats(b);
    CHECK(memcmp(&before, &after, sizeof before) == 0);
    CHECK(calls_on_node_2(b, 7 * SEC, &rng, 50) == 0);
    /* The check answered well: node 2 is forgiven (penalty 0) and takes acquires again. */
    CHECK_OK(weir_balancer_report_check(b, 2, true, 7 * SEC));
    CHECK_OK(weir_balancer_node_snapshot(b, 2, 7 * SEC, &info));
    CHECK(info.penalty == 0.0 && info.failures == 0.0);
    CHECK(named(b, 7 * SEC, 0) == 0); /* nothing avoided any more */
    CHECK(calls_on_node_2(b, 7 * SEC, &rng, 50) > 10);
    /* Quiet 0: a node avoided is due at once, and again at once. */
    CHECK_OK(weir_balancer_report_check(b, 1, false, 8 * SEC));
    CHECK(named(b, 8 * SEC, 0) == 1);
    CHECK(named(b, 8 * SEC, 0) == 1);
    check_conserved(b);
    weir_balancer_free(b);
}

/* The refusals: NULL arguments (nothing written), an unknown id, the weighted family's checks. */
static void test_health_check_refusals(void) {
    weir_balancer *b = two_nodes(weir_config_default());
    CHECK_OK(weir_balancer_report_check(b, 1, false, SEC)); /* node 1 is due at once with quiet 0 */
    bool due = true;
    uint64_t id = 77;
    CHECK_STATUS(weir_balancer_due_check(NULL, SEC, 0, &due, &id), WEIR_ERR_NULL);
    CHECK_MESSAGE("balancer");
    CHECK_STATUS(weir_balancer_due_check(b, SEC, 0, NULL, &id), WEIR_ERR_NULL);
    CHECK_MESSAGE("due");
    CHECK_STATUS(weir_balancer_due_check(b, SEC, 0, &due, NULL), WEIR_ERR_NULL);
    CHECK_MESSAGE("node_id");
    CHECK(due && id == 77);
    CHECK(named(b, SEC, 0) == 1); /* the refused calls claimed nothing */
    CHECK_STATUS(weir_balancer_report_check(NULL, 1, true, SEC), WEIR_ERR_NULL);
    CHECK_MESSAGE("balancer");
    CHECK_STATUS(weir_balancer_report_check(b, 3, true, SEC), WEIR_ERR_UNKNOWN_ID);
    CHECK_MESSAGE("no node with id 3");
    CHECK(strcmp(weir_status_str(WEIR_ERR_NOT_LOWEST_SCORE),
                 "WEIR_ERR_NOT_LOWEST_SCORE: health checks are read by the lowest-score family "
                 "only") == 0);
    weir_node_info info;
    CHECK_OK(weir_balancer_node_snapshot(b, 1, SEC, &info));
    CHECK(info.penalty > 0.0); /* the healthy report of an unknown id forgave nobody */
    weir_balancer_free(b);

    weir_balancer *w = two_nodes(weir_config_cascade());
    CHECK_STATUS(weir_balancer_report_check(w, 1, false, SEC), WEIR_ERR_NOT_LOWEST_SCORE);
    CHECK_MESSAGE("health checks are read by the lowest-score family only");
    CHECK_MESSAGE("WEIR_ALGORITHM_WEIGHTED");
    CHECK(!check_names_rust(weir_last_error_message()));
    CHECK_STATUS(weir_balancer_report_check(w, 1, true, SEC), WEIR_ERR_NOT_LOWEST_SCORE);
    CHECK_STATUS(weir_balancer_report_check(w, 3, true, SEC), WEIR_ERR_UNKNOWN_ID);
    weir_lease l;
    CHECK_OK(weir_balancer_acquire(w, SEC, &l));
    CHECK_OK(weir_balancer_release(w, &l, WEIR_OUTCOME_FAILURE, SEC));
    const uint64_t quiets[] = {0, 1, (1u << 20) - 1, 1u << 20, 1ull << 51, UINT64_MAX};
    for (size_t i = 0; i < sizeof quiets / sizeof quiets[0]; i++) {
        CHECK(named(w, 10 * SEC, quiets[i]) == 0); /* the weighted family names none */
    }
    weir_balancer_free(w);
}

/* A two-node default balancer (fixed limit) with the slowness term at `slow_ratio`: four calls on
 * each node, 5 ms on node 1 and 50 ms on node 2, over more than a clock epoch (so the rotation takes
 * node 1's latency as the fastest); then, a second later, 9 acquires held at once: returns how many
 * land on node 2. */
static int slow_reaches(float slow_ratio) {
    weir_config c = weir_config_default();
    c.algorithm.lowest_score.slow_ratio = slow_ratio;
    weir_balancer *b = two_nodes(c);
    weir_rng rng = weir_rng_seed(11);
    weir_lease l;
    for (uint64_t i = 0; i < 4; i++) {
        const uint64_t t = SEC + i * 300 * MS;
        for (uint64_t node = 1; node <= 2; node++) {
            const uint64_t other = 3 - node;
            CHECK_OK(weir_balancer_acquire_excluding(b, t, &other, 1, &rng, &l));
            CHECK(l.node_id == node);
            const uint64_t rtt = (node == 1 ? 5 : 50) * MS;
            CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_SUCCESS, t + rtt));
        }
    }
    weir_lease held[9];
    int reached = 0;
    for (int i = 0; i < 9; i++) {
        CHECK_OK(weir_balancer_acquire_with_rng(b, 3 * SEC, &rng, &held[i]));
        reached += held[i].node_id == 2;
    }
    for (int i = 0; i < 9; i++) {
        CHECK_OK(weir_balancer_release(b, &held[i], WEIR_OUTCOME_IGNORED, 3 * SEC));
    }
    weir_balancer_free(b);
    return reached;
}

/* The slowness term's ratio neither 0 nor in [1, 64], or not finite: refused as
 * WEIR_ERR_INVALID_CONFIG with the penalties' message (the core's ConfigError::Penalty), by validation
 * and construction (which writes no balancer, see CHECK_REFUSED); 0, -0 and the ends of [1, 64] are
 * accepted, and a refusal leaves nothing behind that a valid balancer built next would see: it reports
 * the ratio it was given and decides by it. */
static void test_refused_slow_ratio(void) {
    const weir_config d = weir_config_default();
    const char *const why = "invalid config: algorithm.lowest_score.penalty and ratio_penalty must be "
                            "finite and in [0, 1e6], slow_ratio 0 or in [1, 64]";
    const float bad[] = {NAN,   -1.0f,    -FLT_MIN,  FLT_MIN, 0.5f, 1.0f - FLT_EPSILON / 2,
                         65.0f, INFINITY, -INFINITY, 64.0f + 64 * FLT_EPSILON};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_REFUSED(d, c_.algorithm.lowest_score.slow_ratio = bad[i], WEIR_ERR_INVALID_CONFIG, why);
        CHECK(strcmp(weir_last_error_message(), why) == 0);
    }
    const float good[] = {0.0f, -0.0f, 1.0f, 2.0f, 64.0f};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        weir_config c = d;
        c.algorithm.lowest_score.slow_ratio = good[i];
        CHECK_OK(weir_config_validate(&c));
    }
    /* Built after the refusals: the balancer reports the ratio it was given, and decides by it. */
    weir_config p = d;
    p.algorithm.lowest_score.slow_ratio = 2.0f;
    weir_balancer *b = make(p, 1);
    weir_config back = config_of(b);
    CHECK(back.algorithm.family == WEIR_ALGORITHM_LOWEST_SCORE);
    CHECK(back.algorithm.lowest_score.slow_ratio == 2.0f);
    CHECK(back.algorithm.lowest_score.forgiveness == 0.0f);
    CHECK(back.algorithm.lowest_score.probe_after_ns == 0);
    weir_balancer_free(b);
    /* Node 2, ten times slower, counts each call about ten times over: node 1 takes all nine calls
     * (its ninth scores 8, node 2's first about 8.75); without the term they split evenly. */
    const int on = slow_reaches(2.0f);
    const int off = slow_reaches(0.0f);
    CHECK(on == 0);
    CHECK(off == 4 || off == 5);
}

static void test_refused_configs(void) {
    const weir_config d = weir_config_default();
    const weir_config s = weir_config_cascade();
    /* Unknown tags: WEIR_ERR_INVALID_ARGUMENT, naming the field. */
    CHECK_REFUSED(d, c_.algorithm.family = 2, WEIR_ERR_INVALID_ARGUMENT, "algorithm.family");
    CHECK_REFUSED(s, c_.algorithm.weighted.health.model = 2, WEIR_ERR_INVALID_ARGUMENT,
                  "algorithm.weighted.health.model");
    CHECK_REFUSED(s, c_.algorithm.weighted.draw = 3, WEIR_ERR_INVALID_ARGUMENT,
                  "algorithm.weighted.draw");
    CHECK_REFUSED(d, c_.limit.algorithm = WEIR_LIMIT_KNEE + 1, WEIR_ERR_INVALID_ARGUMENT,
                  "limit.algorithm");
    CHECK_REFUSED(d, (c_.limit = weir_limit_windowed_default(), c_.limit.windowed.inner = 6),
                  WEIR_ERR_INVALID_ARGUMENT, "limit.windowed.inner");
    CHECK_REFUSED(d,
                  (c_.limit = weir_limit_windowed_default(),
                   c_.limit.windowed.inner = WEIR_LIMIT_KNEE + 1),
                  WEIR_ERR_INVALID_ARGUMENT, "limit.windowed.inner");
    CHECK_REFUSED(d, (c_.limit = weir_limit_windowed_default(), c_.limit.windowed.window.kind = 2),
                  WEIR_ERR_INVALID_ARGUMENT, "limit.windowed.window.kind");
    CHECK_REFUSED(d, (c_.limit = weir_limit_vegas_default(), c_.limit.vegas.alpha.kind = 2),
                  WEIR_ERR_INVALID_ARGUMENT, "limit.vegas.alpha.kind");
    CHECK_REFUSED(d, (c_.limit = weir_limit_vegas_default(), c_.limit.vegas.increase.kind = 9),
                  WEIR_ERR_INVALID_ARGUMENT, "limit.vegas.increase.kind");
    CHECK_REFUSED(d, (c_.limit = weir_limit_gradient_default(), c_.limit.gradient.queue_size.kind = 2),
                  WEIR_ERR_INVALID_ARGUMENT, "limit.gradient.queue_size.kind");
    CHECK_REFUSED(d,
                  (c_.limit = weir_limit_gradient2_default(), c_.limit.gradient2.queue_size.kind = 2),
                  WEIR_ERR_INVALID_ARGUMENT, "limit.gradient2.queue_size.kind");

    /* Refused values: WEIR_ERR_INVALID_CONFIG, naming the field. The lowest-score family: */
    CHECK_REFUSED(d, c_.algorithm.lowest_score.success_half_life_ns = 0, WEIR_ERR_INVALID_CONFIG,
                  "algorithm.lowest_score.success_half_life_ns");
    CHECK_REFUSED(d, c_.algorithm.lowest_score.failure_half_life_ns = 3601 * SEC,
                  WEIR_ERR_INVALID_CONFIG, "failure_half_life_ns must be between 1 ms and 1 hour");
    CHECK_REFUSED(d, c_.algorithm.lowest_score.dropped_cost = NAN, WEIR_ERR_INVALID_CONFIG,
                  "algorithm.lowest_score.dropped_cost");
    CHECK_REFUSED(d, c_.algorithm.lowest_score.throttled_cost = 1.5f, WEIR_ERR_INVALID_CONFIG,
                  "throttled_cost");
    CHECK_REFUSED(d, c_.algorithm.lowest_score.client_error_cost = -0.5f, WEIR_ERR_INVALID_CONFIG,
                  "client_error_cost");
    CHECK_REFUSED(d, c_.algorithm.lowest_score.penalty = 2e6f, WEIR_ERR_INVALID_CONFIG,
                  "algorithm.lowest_score.penalty");
    CHECK_REFUSED(d, c_.algorithm.lowest_score.ratio_penalty = -1.0f, WEIR_ERR_INVALID_CONFIG,
                  "ratio_penalty");
    CHECK_REFUSED(d, c_.algorithm.lowest_score.probe_fraction = 1.01f, WEIR_ERR_INVALID_CONFIG,
                  "algorithm.lowest_score.probe_fraction");
    CHECK_REFUSED(d, c_.algorithm.lowest_score.forgiveness = -0.01f, WEIR_ERR_INVALID_CONFIG,
                  "forgiveness"); /* every value: test_refused_probation */
    CHECK_REFUSED(d, c_.algorithm.lowest_score.probe_after_ns = 3601 * SEC, WEIR_ERR_INVALID_CONFIG,
                  "probe_after_ns 0 or between 1 ms and 1 hour"); /* every value: the same */
    CHECK_REFUSED(d, c_.algorithm.lowest_score.slow_ratio = 0.5f, WEIR_ERR_INVALID_CONFIG,
                  "slow_ratio 0 or in [1, 64]"); /* every value: test_refused_slow_ratio */
    /* The weighted family: */
    CHECK_REFUSED(s, c_.algorithm.weighted.health.buckets.count = 0, WEIR_ERR_INVALID_CONFIG,
                  "algorithm.weighted.health.buckets.count");
    CHECK_REFUSED(s, c_.algorithm.weighted.health.buckets.count = 9, WEIR_ERR_INVALID_CONFIG,
                  "count");
    CHECK_REFUSED(s, c_.algorithm.weighted.health.buckets.width_ns = 0, WEIR_ERR_INVALID_CONFIG,
                  "width_ns");
    CHECK_REFUSED(s, c_.algorithm.weighted.health.buckets.decay = 0.5, WEIR_ERR_INVALID_CONFIG,
                  "decay");
    CHECK_REFUSED(s,
                  c_.algorithm.weighted.health = weir_health_ewma_default();
                  c_.algorithm.weighted.health.ewma.half_life = 0,
                  WEIR_ERR_INVALID_CONFIG, "algorithm.weighted.health.ewma.half_life");
    CHECK_REFUSED(s, c_.algorithm.weighted.weight_exponent = 0.0, WEIR_ERR_INVALID_CONFIG,
                  "algorithm.weighted.weight_exponent");
    CHECK_REFUSED(s, c_.algorithm.weighted.weight_exponent = 65.0, WEIR_ERR_INVALID_CONFIG,
                  "weight_exponent");
    CHECK_REFUSED(s, c_.algorithm.weighted.floor = 0.0, WEIR_ERR_INVALID_CONFIG,
                  "algorithm.weighted.floor");
    CHECK_REFUSED(s, c_.algorithm.weighted.floor = 1.5, WEIR_ERR_INVALID_CONFIG, "floor");
    /* The top level: */
    CHECK_REFUSED(d, c_.max_waiters = (1u << 20) + 1, WEIR_ERR_INVALID_CONFIG, "max_waiters");
    /* Every limit algorithm: */
    CHECK_REFUSED(d, (c_.limit = weir_limit_fixed_default(), c_.limit.fixed.limit = 1u << 24),
                  WEIR_ERR_INVALID_CONFIG, "limit");
    CHECK_REFUSED(d, (c_.limit = weir_limit_aimd_default(), c_.limit.aimd.initial_limit = 300),
                  WEIR_ERR_INVALID_CONFIG, "initial_limit");
    CHECK_REFUSED(d, (c_.limit = weir_limit_aimd_default(), c_.limit.aimd.backoff_ratio = 1.0),
                  WEIR_ERR_INVALID_CONFIG, "backoff_ratio");
    CHECK_REFUSED(d, (c_.limit = weir_limit_aimd_default(), c_.limit.aimd.timeout_ns = 0),
                  WEIR_ERR_INVALID_CONFIG, "timeout_ns");
    CHECK_REFUSED(d, (c_.limit = weir_limit_vegas_default(), c_.limit.vegas.smoothing = 1.5),
                  WEIR_ERR_INVALID_CONFIG, "smoothing");
    CHECK_REFUSED(d, (c_.limit = weir_limit_vegas_default(), c_.limit.vegas.probe_multiplier = 0),
                  WEIR_ERR_INVALID_CONFIG, "probe_multiplier");
    CHECK_REFUSED(d,
                  (c_.limit = weir_limit_vegas_default(),
                   c_.limit.vegas.decrease.kind = WEIR_VEGAS_STEP_FACTOR,
                   c_.limit.vegas.decrease.factor = 0.0),
                  WEIR_ERR_INVALID_CONFIG, "decrease");
    CHECK_REFUSED(d, (c_.limit = weir_limit_vegas_default(), c_.limit.vegas.max_limit = 1u << 24),
                  WEIR_ERR_INVALID_CONFIG, "max_limit");
    CHECK_REFUSED(d, (c_.limit = weir_limit_gradient_default(), c_.limit.gradient.rtt_tolerance = 0.5),
                  WEIR_ERR_INVALID_CONFIG, "rtt_tolerance");
    CHECK_REFUSED(d, (c_.limit = weir_limit_ciad_default(), c_.limit.ciad.rtt_tolerance = 0.5),
                  WEIR_ERR_INVALID_CONFIG, "rtt_tolerance");
    CHECK_REFUSED(d, (c_.limit = weir_limit_ciad_default(), c_.limit.ciad.rtt_tolerance = NAN),
                  WEIR_ERR_INVALID_CONFIG, "rtt_tolerance");
    CHECK_REFUSED(d, (c_.limit = weir_limit_gradient_default(), c_.limit.gradient.probe_interval = 0),
                  WEIR_ERR_INVALID_CONFIG, "probe_interval");
    CHECK_REFUSED(d,
                  (c_.limit = weir_limit_gradient_default(),
                   c_.limit.gradient.queue_size.value = 1u << 24),
                  WEIR_ERR_INVALID_CONFIG, "queue_size");
    CHECK_REFUSED(d, (c_.limit = weir_limit_gradient_default(), c_.limit.gradient.backoff_ratio = 0.4),
                  WEIR_ERR_INVALID_CONFIG, "backoff_ratio");
    CHECK_REFUSED(d, (c_.limit = weir_limit_gradient2_default(), c_.limit.gradient2.long_window = 0),
                  WEIR_ERR_INVALID_CONFIG, "long_window");
    CHECK_REFUSED(d,
                  (c_.limit = weir_limit_gradient2_default(),
                   c_.limit.gradient2.drop_backoff_enabled = true,
                   c_.limit.gradient2.drop_backoff = 1.0),
                  WEIR_ERR_INVALID_CONFIG, "limit.gradient2.drop_backoff");
    CHECK_REFUSED(d, (c_.limit = weir_limit_gradient2_default(), c_.limit.gradient2.min_limit = 300),
                  WEIR_ERR_INVALID_CONFIG, "min_limit");
    CHECK_REFUSED(d, c_.limit.ciad.min_limit = 0, WEIR_ERR_INVALID_CONFIG, "min_limit");
    CHECK_REFUSED(d, c_.limit.ciad.backoff_ratio = 0.25, WEIR_ERR_INVALID_CONFIG, "backoff_ratio");
    CHECK_REFUSED(d, (c_.limit = weir_limit_windowed_default(), c_.limit.windowed.min_window_ns = 0),
                  WEIR_ERR_INVALID_CONFIG, "min_window_ns");
    CHECK_REFUSED(d, (c_.limit = weir_limit_windowed_default(), c_.limit.windowed.min_samples = 0),
                  WEIR_ERR_INVALID_CONFIG, "min_samples");
    CHECK_REFUSED(d,
                  (c_.limit = weir_limit_windowed_default(),
                   c_.limit.windowed.window.kind = WEIR_SAMPLE_WINDOW_PERCENTILE,
                   c_.limit.windowed.window.percentile = 1.0, c_.limit.windowed.window.capacity = 100),
                  WEIR_ERR_INVALID_CONFIG, "percentile");
    /* The wrapped algorithm's parameters are checked too. */
    CHECK_REFUSED(d,
                  (c_.limit = weir_limit_windowed_default(),
                   c_.limit.windowed.inner = WEIR_LIMIT_AIMD, c_.limit.aimd.timeout_ns = 0),
                  WEIR_ERR_INVALID_CONFIG, "timeout_ns");

    /* The capacity: 1 ..= 65,536. */
    weir_config c = weir_config_default();
    weir_balancer *b = (weir_balancer *)&check_count;
    CHECK_STATUS(weir_balancer_new(&c, 0, &b), WEIR_ERR_INVALID_CONFIG);
    CHECK_MESSAGE("capacity must be between 1 and 65,536");
    CHECK_STATUS(weir_balancer_new(&c, 65537, &b), WEIR_ERR_INVALID_CONFIG);
    CHECK_MESSAGE("capacity must be between 1 and 65,536");
    CHECK(b == (weir_balancer *)&check_count);
    CHECK_OK(weir_balancer_new(&c, 65536, &b));
    size_t capacity = 0;
    CHECK_OK(weir_balancer_capacity(b, &capacity));
    CHECK(capacity == 65536);
    weir_balancer_free(b);
}

static void test_membership(void) {
    weir_balancer *b = make(fixed(100), 3);
    weir_balancer_statistics s = stats(b);
    CHECK(s.active_nodes == 0 && s.lame_duck_nodes == 0);
    CHECK_OK(weir_balancer_add(b, 10));
    CHECK_OK(weir_balancer_add(b, 20));
    CHECK_OK(weir_balancer_add(b, 30));
    CHECK_STATUS(weir_balancer_add(b, 20), WEIR_ERR_DUPLICATE_ID);
    CHECK_MESSAGE("20");
    CHECK_STATUS(weir_balancer_add(b, 40), WEIR_ERR_CAPACITY_FULL);
    CHECK_STATUS(weir_balancer_remove(b, 40), WEIR_ERR_UNKNOWN_ID);
    CHECK_MESSAGE("40");
    CHECK_STATUS(weir_balancer_set_lame_duck(b, 40, true), WEIR_ERR_UNKNOWN_ID);
    s = stats(b);
    CHECK(s.active_nodes == 3 && s.lame_duck_nodes == 0);

    CHECK_OK(weir_balancer_set_lame_duck(b, 20, true));
    s = stats(b);
    CHECK(s.active_nodes == 2 && s.lame_duck_nodes == 1);
    weir_node_info info;
    CHECK_OK(weir_balancer_node_snapshot(b, 20, 0, &info));
    CHECK(info.id == 20 && info.state == WEIR_NODE_LAME_DUCK);
    /* A lame duck gets no new leases. */
    int chosen[3] = {0, 0, 0};
    for (int i = 0; i < 300; i++) {
        weir_lease l;
        CHECK_OK(weir_balancer_acquire(b, (uint64_t)i * MS, &l));
        CHECK(l.node_id == 10 || l.node_id == 30);
        chosen[l.node_id / 10 - 1]++;
        CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_SUCCESS, (uint64_t)i * MS + 1));
    }
    CHECK(chosen[1] == 0 && chosen[0] + chosen[2] == 300);
    CHECK_OK(weir_balancer_set_lame_duck(b, 20, false));
    CHECK_OK(weir_balancer_node_snapshot(b, 20, 0, &info));
    CHECK(info.state == WEIR_NODE_ACTIVE);

    /* Removing frees the slot for another id; removing twice is an unknown id. */
    CHECK_OK(weir_balancer_remove(b, 30));
    CHECK_STATUS(weir_balancer_remove(b, 30), WEIR_ERR_UNKNOWN_ID);
    CHECK_STATUS(weir_balancer_node_snapshot(b, 30, 0, &info), WEIR_ERR_UNKNOWN_ID);
    s = stats(b);
    CHECK(s.active_nodes == 2 && s.lame_duck_nodes == 0);
    CHECK_OK(weir_balancer_add(b, 40));
    s = stats(b);
    CHECK(s.active_nodes == 3);

    /* Every node in lame duck: no active nodes. */
    CHECK_OK(weir_balancer_set_lame_duck(b, 10, true));
    CHECK_OK(weir_balancer_set_lame_duck(b, 20, true));
    CHECK_OK(weir_balancer_set_lame_duck(b, 40, true));
    weir_lease l;
    CHECK_STATUS(weir_balancer_acquire(b, 1 * SEC, &l), WEIR_ERR_NO_ACTIVE_NODES);
    s = stats(b);
    CHECK(s.active_nodes == 0 && s.lame_duck_nodes == 3 && s.rejected_no_active == 1);
    check_conserved(b);
    weir_balancer_free(b);
}

static void test_acquire(void) {
    weir_balancer *b = make(fixed(2), 2);
    weir_lease l;
    memset(&l, SENTINEL, sizeof l);
    weir_lease before = l;
    CHECK_STATUS(weir_balancer_acquire(b, 5, &l), WEIR_ERR_NO_ACTIVE_NODES);
    CHECK(memcmp(&l, &before, sizeof l) == 0);
    CHECK_OK(weir_balancer_add(b, 7));
    weir_lease first, second;
    CHECK_OK(weir_balancer_acquire(b, 1000, &first));
    CHECK_OK(weir_balancer_acquire(b, 2000, &second));
    CHECK(first.node_id == 7 && second.node_id == 7);
    CHECK(first.acquired_at == 1000 && second.acquired_at == 2000);
    CHECK(first.inflight == 1 && second.inflight == 2);
    CHECK(first.balancer != 0 && first.balancer == second.balancer);
    CHECK(first.slot == second.slot && first.generation == second.generation);
    CHECK_STATUS(weir_balancer_acquire(b, 3000, &l), WEIR_ERR_ALL_BUSY);
    CHECK(memcmp(&l, &before, sizeof l) == 0);
    weir_node_info info;
    CHECK_OK(weir_balancer_node_snapshot(b, 7, 3000, &info));
    CHECK(info.in_flight == 2 && info.limit == 2);
    weir_balancer_statistics s = stats(b);
    CHECK(s.acquired == 2 && s.rejected_all_busy == 1 && s.rejected_no_active == 1);
    CHECK(s.in_flight == 2);
    CHECK_OK(weir_balancer_release(b, &first, WEIR_OUTCOME_SUCCESS, 4000));
    CHECK_OK(weir_balancer_acquire(b, 5000, &l));
    CHECK(l.node_id == 7 && l.inflight == 2);
    CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_SUCCESS, 6000));
    CHECK_OK(weir_balancer_release(b, &second, WEIR_OUTCOME_SUCCESS, 6000));
    s = stats(b);
    CHECK(s.acquired == 3 && s.in_flight == 0 && s.released[WEIR_OUTCOME_SUCCESS] == 3);
    check_conserved(b);
    weir_balancer_free(b);
}

/* Two balancers built alike, driven alike with generators seeded alike, choose alike. */
static void test_acquire_with_rng(void) {
    CHECK(weir_rng_seed(5).state == 5);
    weir_config c = weir_config_cascade();
    weir_balancer *a = make(c, 8);
    weir_balancer *b = make(c, 8);
    for (uint64_t id = 1; id <= 5; id++) {
        CHECK_OK(weir_balancer_add(a, id * 11));
        CHECK_OK(weir_balancer_add(b, id * 11));
    }
    weir_rng ra = weir_rng_seed(42), rb = weir_rng_seed(42);
    int per_node[6] = {0};
    int same = 0;
    const int rounds = 2000;
    for (int i = 0; i < rounds; i++) {
        uint64_t now = (uint64_t)i * 7 * MS;
        weir_lease la, lb;
        CHECK_OK(weir_balancer_acquire_with_rng(a, now, &ra, &la));
        CHECK_OK(weir_balancer_acquire_with_rng(b, now, &rb, &lb));
        same += la.node_id == lb.node_id && la.inflight == lb.inflight;
        per_node[la.node_id / 11]++;
        /* Node 22 fails often, so the choices depend on health and the generator both. */
        weir_outcome o = la.node_id == 22 && i % 3 != 0 ? WEIR_OUTCOME_FAILURE : WEIR_OUTCOME_SUCCESS;
        CHECK_OK(weir_balancer_release(a, &la, o, now + 3 * MS));
        CHECK_OK(weir_balancer_release(b, &lb, o, now + 3 * MS));
    }
    CHECK(same == rounds);
    CHECK(ra.state == rb.state && ra.state != 42);
    /* Random choices: every healthy node was chosen, the failing one least. */
    for (int n = 1; n <= 5; n++) {
        CHECK(per_node[n] > 0);
        if (n != 2) {
            CHECK(per_node[n] > per_node[2]);
        }
    }
    /* A different seed gives a different sequence. */
    weir_balancer *c2 = make(c, 8);
    for (uint64_t id = 1; id <= 5; id++) {
        CHECK_OK(weir_balancer_add(c2, id * 11));
    }
    weir_rng r1 = weir_rng_seed(1), r2 = weir_rng_seed(2);
    int differ = 0;
    for (int i = 0; i < 64; i++) {
        weir_lease l1, l2;
        CHECK_OK(weir_balancer_acquire_with_rng(c2, 0, &r1, &l1));
        CHECK_OK(weir_balancer_acquire_with_rng(c2, 0, &r2, &l2));
        differ += l1.node_id != l2.node_id;
        CHECK_OK(weir_balancer_release(c2, &l1, WEIR_OUTCOME_SUCCESS, 1));
        CHECK_OK(weir_balancer_release(c2, &l2, WEIR_OUTCOME_SUCCESS, 1));
    }
    CHECK(differ > 0);
    /* The generator advances on a refusal too, as a Rust caller's would. */
    weir_balancer *empty = make(c, 1);
    weir_rng r = weir_rng_seed(9);
    weir_lease l;
    CHECK_STATUS(weir_balancer_acquire_with_rng(empty, 0, &r, &l), WEIR_ERR_NO_ACTIVE_NODES);
    check_conserved(a);
    check_conserved(b);
    weir_balancer_free(a);
    weir_balancer_free(b);
    weir_balancer_free(c2);
    weir_balancer_free(empty);
}

static void test_acquire_excluding(void) {
    weir_config c = weir_config_default();
    weir_balancer *a = make(c, 8);
    weir_balancer *b = make(c, 8);
    for (uint64_t id = 1; id <= 4; id++) {
        CHECK_OK(weir_balancer_add(a, id));
        CHECK_OK(weir_balancer_add(b, id));
    }
    /* While another node has room, the excluded ones are never chosen. */
    const uint64_t tried[] = {1, 3, 77};
    weir_rng rng = weir_rng_seed(3);
    int per_node[5] = {0};
    for (int i = 0; i < 200; i++) {
        weir_lease l;
        CHECK_OK(weir_balancer_acquire_excluding(a, (uint64_t)i * MS, tried, 3, &rng, &l));
        per_node[l.node_id]++;
        CHECK_OK(weir_balancer_release(a, &l, WEIR_OUTCOME_SUCCESS, (uint64_t)i * MS + 1));
    }
    CHECK(per_node[1] == 0 && per_node[3] == 0 && per_node[2] > 0 && per_node[4] > 0);
    /* Thread generator (rng NULL): the same rule. */
    for (int i = 0; i < 50; i++) {
        weir_lease l;
        CHECK_OK(weir_balancer_acquire_excluding(a, SEC, tried, 3, NULL, &l));
        CHECK(l.node_id == 2 || l.node_id == 4);
        CHECK_OK(weir_balancer_release(a, &l, WEIR_OUTCOME_SUCCESS, SEC + 1));
    }
    /* Nothing excluded (NULL, 0), or every node: the ordinary acquire's leases from the same draws. */
    const uint64_t all[] = {4, 3, 2, 1};
    weir_rng ra = weir_rng_seed(8), rb = weir_rng_seed(8);
    for (int i = 0; i < 100; i++) {
        weir_lease la, lb;
        uint64_t now = 2 * SEC + (uint64_t)i * MS;
        CHECK_OK(weir_balancer_acquire_with_rng(b, now, &ra, &la));
        if (i % 2 == 0) {
            CHECK_OK(weir_balancer_acquire_excluding(a, now, NULL, 0, &rb, &lb));
        } else {
            CHECK_OK(weir_balancer_acquire_excluding(a, now, all, 4, &rb, &lb));
        }
        CHECK(la.node_id == lb.node_id);
        CHECK_OK(weir_balancer_release(b, &la, WEIR_OUTCOME_SUCCESS, now + 1));
        CHECK_OK(weir_balancer_release(a, &lb, WEIR_OUTCOME_SUCCESS, now + 1));
    }
    CHECK(ra.state == rb.state);
    /* NULL with a length, a length no array has, NULL handles and outputs. */
    weir_lease l;
    CHECK_STATUS(weir_balancer_acquire_excluding(a, 0, NULL, 2, NULL, &l), WEIR_ERR_NULL);
    CHECK(strstr(weir_last_error_message(), "exclude") != NULL);
    CHECK_STATUS(weir_balancer_acquire_excluding(a, 0, tried, SIZE_MAX, NULL, &l),
                 WEIR_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(weir_balancer_acquire_excluding(NULL, 0, tried, 3, NULL, &l), WEIR_ERR_NULL);
    CHECK_STATUS(weir_balancer_acquire_excluding(a, 0, tried, 3, NULL, NULL), WEIR_ERR_NULL);
    weir_balancer *empty = make(c, 1);
    CHECK_STATUS(weir_balancer_acquire_excluding(empty, 0, tried, 3, NULL, &l),
                 WEIR_ERR_NO_ACTIVE_NODES);
    check_conserved(a);
    check_conserved(b);
    weir_balancer_free(a);
    weir_balancer_free(b);
    weir_balancer_free(empty);
}

struct delayed_release {
    weir_balancer *balancer;
    weir_lease lease;
    weir_status status;
};

static void sleep_ms(long ms) {
    uint64_t until = weir_now_ns() + (uint64_t)ms * MS;
    while (weir_now_ns() < until) {
        /* A busy wait on the library's clock: no POSIX-only sleep needed under -std=c11. */
    }
}

/* Releases once the main thread waits in the queue (or after 30 s: the check on `waits` then fails). */
static void *release_later(void *arg) {
    struct delayed_release *d = arg;
    uint64_t give_up = weir_now_ns() + 30 * SEC;
    while (stats(d->balancer).waiting == 0 && weir_now_ns() < give_up) {
        sleep_ms(1);
    }
    d->status = weir_balancer_release(d->balancer, &d->lease, WEIR_OUTCOME_SUCCESS, weir_now_ns());
    return NULL;
}

static void test_acquire_wait(void) {
    weir_config c = fixed(1);
    c.max_waiters = 4;
    weir_balancer *b = make(c, 2);
    weir_lease l, held;
    memset(&l, SENTINEL, sizeof l);
    const weir_lease before = l;
    CHECK_STATUS(weir_balancer_acquire_wait(b, weir_now_ns() + 10 * MS, &l), WEIR_ERR_NO_ACTIVE_NODES);
    CHECK(memcmp(&l, &before, sizeof l) == 0);
    CHECK_OK(weir_balancer_add(b, 3));

    /* Room now: a lease at once, acquired on the library's clock. */
    uint64_t t0 = weir_now_ns();
    CHECK_OK(weir_balancer_acquire_wait(b, t0 + 10 * SEC, &held));
    uint64_t t1 = weir_now_ns();
    CHECK(held.node_id == 3 && held.acquired_at >= t0 && held.acquired_at <= t1);
    CHECK(t1 - t0 < 2 * SEC);

    /* The only node at its limit: a timeout once the deadline passes. */
    uint64_t deadline = weir_now_ns() + 20 * MS;
    CHECK_STATUS(weir_balancer_acquire_wait(b, deadline, &l), WEIR_ERR_TIMEOUT);
    CHECK(weir_now_ns() >= deadline);
    CHECK(memcmp(&l, &before, sizeof l) == 0);
    /* A deadline already past: a timeout at once. */
    CHECK_STATUS(weir_balancer_acquire_wait(b, 0, &l), WEIR_ERR_TIMEOUT);

    /* A release from another thread wakes the waiter. */
    struct delayed_release d = {b, held, -1};
    pthread_t t;
    /* REQUIRE evaluates its condition twice: the calls stay outside it. */
    int created = pthread_create(&t, NULL, release_later, &d);
    REQUIRE(created == 0);
    CHECK_OK(weir_balancer_acquire_wait(b, weir_now_ns() + 30 * SEC, &l));
    int joined = pthread_join(t, NULL);
    REQUIRE(joined == 0);
    CHECK(d.status == WEIR_OK);
    CHECK(l.node_id == 3 && l.inflight == 1);
    CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_SUCCESS, weir_now_ns()));
    /* Refusals are the calls answered without a lease: no active nodes once, timeouts twice. Two
     * callers queued: the one that timed out, and the one the release served (a wait, not a
     * refusal). The deadline already past refused before queueing. */
    weir_balancer_statistics s = stats(b);
    CHECK(s.rejected_no_active == 1 && s.rejected_all_busy == 2);
    CHECK(s.waits == 2 && s.waits_granted == 1 && s.waits_timed_out == 1);
    CHECK(s.waits_cancelled == 0 && s.waiting == 0);
    check_conserved(b);
    weir_balancer_free(b);

    /* Waiting off: a lease when there is room, QUEUE_FULL at once when there is none. */
    c.max_waiters = 0;
    b = make(c, 1);
    CHECK_OK(weir_balancer_add(b, 1));
    CHECK_OK(weir_balancer_acquire_wait(b, weir_now_ns() + SEC, &held));
    memset(&l, SENTINEL, sizeof l);
    t0 = weir_now_ns();
    CHECK_STATUS(weir_balancer_acquire_wait(b, t0 + 30 * SEC, &l), WEIR_ERR_QUEUE_FULL);
    CHECK(weir_now_ns() - t0 < 5 * SEC);
    CHECK(memcmp(&l, &before, sizeof l) == 0);
    CHECK_OK(weir_balancer_release(b, &held, WEIR_OUTCOME_SUCCESS, weir_now_ns()));
    s = stats(b);
    CHECK(s.acquired == 1 && s.in_flight == 0);
    /* Turned away without queueing: a refusal, no wait. */
    CHECK(s.rejected_all_busy == 1 && s.waits == 0);
    weir_balancer_free(b);
}

struct timed_wait {
    weir_balancer *balancer;
    weir_status status;
};

/* Waits (deadline in 30 s) and releases the lease it gets at once. */
static void *wait_and_release(void *arg) {
    struct timed_wait *w = arg;
    weir_lease l;
    w->status = weir_balancer_acquire_wait(w->balancer, weir_now_ns() + 30 * SEC, &l);
    if (w->status == WEIR_OK) {
        (void)weir_balancer_release(w->balancer, &l, WEIR_OUTCOME_SUCCESS, weir_now_ns());
    }
    return NULL;
}

static void until_waiting(const weir_balancer *b, uint64_t n) {
    uint64_t give_up = weir_now_ns() + 30 * SEC;
    while (stats(b).waiting != n && weir_now_ns() < give_up) {
        sleep_ms(1);
    }
    CHECK(stats(b).waiting == n);
}

/* A standing queue (its oldest waiter waited more than 100 ms) serves the newest waiter first and sheds
 * the one it passed over: WEIR_ERR_SHED, before that one's deadline, counted as timed out. */
static void test_acquire_wait_shed(void) {
    weir_config c = fixed(1);
    c.max_waiters = 4;
    weir_balancer *b = make(c, 1);
    CHECK_OK(weir_balancer_add(b, 1));
    weir_lease held;
    CHECK_OK(weir_balancer_acquire_wait(b, weir_now_ns() + SEC, &held));
    struct timed_wait old = {b, -1}, newer = {b, -1};
    pthread_t t_old, t_new;
    int created = pthread_create(&t_old, NULL, wait_and_release, &old);
    REQUIRE(created == 0);
    until_waiting(b, 1);
    sleep_ms(150);
    created = pthread_create(&t_new, NULL, wait_and_release, &newer);
    REQUIRE(created == 0);
    until_waiting(b, 2);
    CHECK_OK(weir_balancer_release(b, &held, WEIR_OUTCOME_SUCCESS, weir_now_ns()));
    int joined = pthread_join(t_old, NULL);
    REQUIRE(joined == 0);
    joined = pthread_join(t_new, NULL);
    REQUIRE(joined == 0);
    CHECK(old.status == WEIR_ERR_SHED);
    CHECK(newer.status == WEIR_OK);
    weir_balancer_statistics s = stats(b);
    CHECK(s.waits == 2 && s.waits_granted == 1 && s.waits_timed_out == 1 && s.waiting == 0);
    CHECK(s.rejected_all_busy == 1 && s.in_flight == 0);
    CHECK(strncmp(weir_status_str(WEIR_ERR_SHED), "WEIR_ERR_SHED: ", 15) == 0);
    check_conserved(b);
    weir_balancer_free(b);
}

static void test_release_outcomes(void) {
    weir_balancer *b = make(fixed(10), 1);
    CHECK_OK(weir_balancer_add(b, 1));
    for (weir_outcome o = WEIR_OUTCOME_SUCCESS; o <= WEIR_OUTCOME_CLIENT_ERROR; o++) {
        for (weir_outcome k = 0; k <= o; k++) { /* outcome o released o + 1 times */
            weir_lease l;
            CHECK_OK(weir_balancer_acquire(b, 100, &l));
            CHECK_OK(weir_balancer_release(b, &l, o, 200));
        }
    }
    weir_balancer_statistics s = stats(b);
    for (int o = 0; o < WEIR_OUTCOME_COUNT; o++) {
        CHECK(s.released[o] == (uint64_t)o + 1);
    }
    CHECK(s.acquired == 21 && s.in_flight == 0 && s.released_stale == 0);
    /* An unknown outcome leaves the lease in flight; a valid one then releases it. */
    weir_lease l;
    CHECK_OK(weir_balancer_acquire(b, 300, &l));
    CHECK_STATUS(weir_balancer_release(b, &l, WEIR_OUTCOME_COUNT, 400), WEIR_ERR_INVALID_ARGUMENT);
    CHECK_MESSAGE("outcome");
    s = stats(b);
    CHECK(s.in_flight == 1 && s.acquired == 22);
    CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_IGNORED, 400));
    s = stats(b);
    CHECK(s.in_flight == 0 && s.released[WEIR_OUTCOME_IGNORED] == 5);
    check_conserved(b);
    weir_balancer_free(b);
}

static weir_outcome expected_outcome(int status) {
    if (status < 400) {
        return WEIR_OUTCOME_SUCCESS;
    }
    if (status == 429) {
        return WEIR_OUTCOME_THROTTLED;
    }
    if (status == 503 || status == 504) {
        return WEIR_OUTCOME_DROPPED;
    }
    return status < 500 ? WEIR_OUTCOME_CLIENT_ERROR : WEIR_OUTCOME_FAILURE;
}

static void test_http_status(void) {
    int mismatches = 0;
    for (int status = 100; status <= 599; status++) {
        weir_outcome o = 99;
        CHECK_OK(weir_outcome_from_http_status(status, &o));
        mismatches += o != expected_outcome(status);
    }
    CHECK(mismatches == 0);
    weir_outcome o = 0;
    CHECK_OK(weir_outcome_from_http_status(200, &o));
    CHECK(o == WEIR_OUTCOME_SUCCESS);
    CHECK_OK(weir_outcome_from_http_status(429, &o));
    CHECK(o == WEIR_OUTCOME_THROTTLED);
    CHECK_OK(weir_outcome_from_http_status(504, &o));
    CHECK(o == WEIR_OUTCOME_DROPPED);
    CHECK_OK(weir_outcome_from_http_status(404, &o));
    CHECK(o == WEIR_OUTCOME_CLIENT_ERROR);
    CHECK_OK(weir_outcome_from_http_status(500, &o));
    CHECK(o == WEIR_OUTCOME_FAILURE);
    const int32_t bad[] = {99, 600, -1, 0, 65536 + 200, INT32_MAX, INT32_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = 77;
        CHECK_STATUS(weir_outcome_from_http_status(bad[i], &o), WEIR_ERR_INVALID_ARGUMENT);
        CHECK(o == 77);
        CHECK_MESSAGE("status");
    }
}

/* Which outcomes may be retried elsewhere: the node's failures, drops and 429s, nothing else. */
static void test_retryable(void) {
    static const struct {
        weir_outcome outcome;
        bool retryable;
    } table[] = {
        {WEIR_OUTCOME_SUCCESS, false},   {WEIR_OUTCOME_FAILURE, true},
        {WEIR_OUTCOME_DROPPED, true},    {WEIR_OUTCOME_IGNORED, false},
        {WEIR_OUTCOME_THROTTLED, true},  {WEIR_OUTCOME_CLIENT_ERROR, false},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        bool r = !table[i].retryable;
        CHECK_OK(weir_outcome_is_retryable(table[i].outcome, &r));
        CHECK(r == table[i].retryable);
    }
    bool r = true;
    CHECK_STATUS(weir_outcome_is_retryable(6, &r), WEIR_ERR_INVALID_ARGUMENT);
    CHECK(r == true);
    CHECK_MESSAGE("outcome");
    CHECK_STATUS(weir_outcome_is_retryable(WEIR_OUTCOME_FAILURE, NULL), WEIR_ERR_NULL);
}

/* The errno table of the header (the core's Outcome::from_io_kind), with this system's values. */
static void test_errno(void) {
    static const struct {
        int errnum;
        weir_outcome outcome;
    } table[] = {
        {ECONNREFUSED, WEIR_OUTCOME_FAILURE},   {ECONNRESET, WEIR_OUTCOME_FAILURE},
        {ECONNABORTED, WEIR_OUTCOME_FAILURE},   {ENOTCONN, WEIR_OUTCOME_FAILURE},
        {EPIPE, WEIR_OUTCOME_FAILURE},          {EADDRNOTAVAIL, WEIR_OUTCOME_FAILURE},
        {EHOSTUNREACH, WEIR_OUTCOME_FAILURE},   {ENETUNREACH, WEIR_OUTCOME_FAILURE},
        {EACCES, WEIR_OUTCOME_FAILURE},         {EIO, WEIR_OUTCOME_FAILURE},
        {ENOENT, WEIR_OUTCOME_FAILURE},         {ETIMEDOUT, WEIR_OUTCOME_TIMEOUT},
        {EAGAIN, WEIR_OUTCOME_DROPPED},         {EWOULDBLOCK, WEIR_OUTCOME_DROPPED},
        {EINTR, WEIR_OUTCOME_IGNORED},          {EINVAL, WEIR_OUTCOME_IGNORED},
        {ENOMEM, WEIR_OUTCOME_IGNORED},         {ENOSYS, WEIR_OUTCOME_IGNORED},
        {EOPNOTSUPP, WEIR_OUTCOME_IGNORED},     {ENOTSUP, WEIR_OUTCOME_IGNORED},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        weir_outcome o = 99;
        CHECK_OK(weir_outcome_from_errno(table[i].errnum, &o));
        CHECK(o == table[i].outcome);
    }
    CHECK(WEIR_OUTCOME_TIMEOUT == WEIR_OUTCOME_DROPPED);
    CHECK(WEIR_OUTCOME_CANCELLED == WEIR_OUTCOME_IGNORED);
    const int bad[] = {0, -1, -ECONNREFUSED, INT32_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        weir_outcome o = 77;
        CHECK_STATUS(weir_outcome_from_errno(bad[i], &o), WEIR_ERR_INVALID_ARGUMENT);
        CHECK(o == 77);
        CHECK_MESSAGE("errnum");
    }
}

static void test_snapshots(void) {
    /* The lowest-score family: counters and penalty in the snapshot. */
    weir_config c = weir_config_default();
    c.limit = weir_limit_fixed_default();
    weir_balancer *b = make(c, 4);
    CHECK_OK(weir_balancer_add(b, 5));
    CHECK_OK(weir_balancer_add(b, 6));
    CHECK_OK(weir_balancer_add(b, 7));
    weir_node_info info;
    memset(&info, SENTINEL, sizeof info);
    const weir_node_info before = info;
    CHECK_STATUS(weir_balancer_node_snapshot(b, 8, 0, &info), WEIR_ERR_UNKNOWN_ID);
    CHECK_MESSAGE("8");
    CHECK(memcmp(&info, &before, sizeof info) == 0);
    CHECK_OK(weir_balancer_node_snapshot(b, 5, 0, &info));
    CHECK(info.id == 5 && info.state == WEIR_NODE_ACTIVE && info.limit == 100);
    CHECK(info.in_flight == 0 && info.has_data == false);
    CHECK(info.success_rate == 1.0 && info.successes == 0.0 && info.failures == 0.0);
    CHECK(info.penalty == 0.0 && info.weight == 1.0);

    weir_lease held[3];
    weir_rng r = weir_rng_seed(3);
    int on5 = 0;
    for (int i = 0; i < 3; i++) {
        CHECK_OK(weir_balancer_acquire_with_rng(b, 10, &r, &held[i]));
        on5 += held[i].node_id == 5;
    }
    CHECK_OK(weir_balancer_node_snapshot(b, 5, 10, &info));
    CHECK((int)info.in_flight == on5);
    for (int i = 0; i < 3; i++) {
        weir_outcome o = held[i].node_id == 5 ? WEIR_OUTCOME_FAILURE : WEIR_OUTCOME_SUCCESS;
        CHECK_OK(weir_balancer_release(b, &held[i], o, 20));
    }
    /* Failures on node 5 until it has data and a penalty. */
    weir_lease l;
    for (int i = 0; i < 200; i++) {
        CHECK_OK(weir_balancer_acquire_with_rng(b, 30, &r, &l));
        weir_outcome o = l.node_id == 5 ? WEIR_OUTCOME_FAILURE : WEIR_OUTCOME_SUCCESS;
        CHECK_OK(weir_balancer_release(b, &l, o, 40));
    }
    CHECK_OK(weir_balancer_node_snapshot(b, 5, 40, &info));
    CHECK(info.has_data == true && info.failures > 0.0 && info.penalty > 0.0);
    CHECK(info.success_rate < 1.0 && info.weight < 1.0 && info.in_flight == 0);
    CHECK_OK(weir_balancer_node_snapshot(b, 6, 40, &info));
    CHECK(info.has_data == true && info.successes > 0.0 && info.failures == 0.0);
    CHECK(info.success_rate == 1.0);

    /* weir_balancer_nodes: the count alone, a buffer too small (untouched), an exact fit, a larger
     * one. */
    size_t len = 99;
    CHECK_OK(weir_balancer_nodes(b, 40, NULL, 0, &len));
    CHECK(len == 3);
    weir_node_info buf[5];
    memset(buf, SENTINEL, sizeof buf);
    weir_node_info pristine[5];
    memcpy(pristine, buf, sizeof buf);
    len = 99;
    CHECK_STATUS(weir_balancer_nodes(b, 40, buf, 2, &len), WEIR_ERR_BUFFER_TOO_SMALL);
    CHECK_MESSAGE("3");
    CHECK(len == 99);
    CHECK(memcmp(buf, pristine, sizeof buf) == 0);
    CHECK_STATUS(weir_balancer_nodes(b, 40, buf, 0, &len), WEIR_ERR_BUFFER_TOO_SMALL);
    CHECK(memcmp(buf, pristine, sizeof buf) == 0 && len == 99);
    CHECK_OK(weir_balancer_nodes(b, 40, buf, 3, &len));
    CHECK(len == 3);
    CHECK(buf[0].id == 5 && buf[1].id == 6 && buf[2].id == 7); /* slot order */
    CHECK(memcmp(&buf[3], &pristine[3], 2 * sizeof buf[0]) == 0);
    CHECK(buf[0].has_data && buf[0].failures > 0.0 && buf[1].failures == 0.0);
    memset(buf, SENTINEL, sizeof buf);
    CHECK_OK(weir_balancer_nodes(b, 40, buf, 5, &len));
    CHECK(len == 3 && buf[2].id == 7 && buf[2].limit == 100);
    CHECK(memcmp(&buf[3], &pristine[3], 2 * sizeof buf[0]) == 0);
    /* A lame duck and a removed node show up as such. */
    CHECK_OK(weir_balancer_set_lame_duck(b, 6, true));
    CHECK_OK(weir_balancer_remove(b, 7));
    CHECK_OK(weir_balancer_nodes(b, 50, buf, 5, &len));
    CHECK(len == 2 && buf[0].id == 5 && buf[1].id == 6 && buf[1].state == WEIR_NODE_LAME_DUCK);
    check_conserved(b);
    weir_balancer_free(b);

    /* The bucket model fills the window counters. */
    b = make(weir_config_cascade(), 1);
    CHECK_OK(weir_balancer_add(b, 1));
    for (int i = 0; i < 10; i++) {
        CHECK_OK(weir_balancer_acquire(b, 1 * SEC, &l));
        weir_outcome outcome = i < 7 ? WEIR_OUTCOME_SUCCESS : WEIR_OUTCOME_FAILURE;
        CHECK_OK(weir_balancer_release(b, &l, outcome, 1 * SEC));
    }
    CHECK_OK(weir_balancer_node_snapshot(b, 1, 1 * SEC, &info));
    CHECK(info.window_finished == 10 && info.window_succeeded == 7);
    CHECK(info.successes == 0.0 && info.failures == 0.0 && info.penalty == 0.0);
    weir_balancer_free(b);
}

/* Every counter, exactly, after a scripted run. */
static void test_stats(void) {
    weir_balancer *b = make(fixed(3), 4);
    weir_balancer_statistics s = stats(b);
    CHECK(s.acquired == 0 && s.in_flight == 0 && released_total(&s) == 0);
    weir_lease l;
    CHECK_STATUS(weir_balancer_acquire(b, 0, &l), WEIR_ERR_NO_ACTIVE_NODES);
    CHECK_OK(weir_balancer_add(b, 1));
    CHECK_OK(weir_balancer_add(b, 2));
    weir_lease held[6];
    for (int i = 0; i < 6; i++) {
        CHECK_OK(weir_balancer_acquire(b, 1, &held[i]));
    }
    CHECK_STATUS(weir_balancer_acquire(b, 1, &l), WEIR_ERR_ALL_BUSY);
    CHECK_STATUS(weir_balancer_acquire(b, 1, &l), WEIR_ERR_ALL_BUSY);
    /* Node 2 leaves with its leases in flight: they come back stale. */
    CHECK_OK(weir_balancer_remove(b, 2));
    int stale = 0;
    for (int i = 0; i < 6; i++) {
        if (held[i].node_id == 2) {
            CHECK_STATUS(weir_balancer_release(b, &held[i], WEIR_OUTCOME_SUCCESS, 2),
                         WEIR_ERR_NODE_REMOVED);
            stale++;
        } else {
            CHECK_OK(weir_balancer_release(b, &held[i], (weir_outcome)(i % WEIR_OUTCOME_COUNT), 2));
        }
    }
    CHECK(stale == 3);
    s = stats(b);
    CHECK(s.acquired == 6 && s.rejected_all_busy == 2 && s.rejected_no_active == 1);
    CHECK(s.released_stale == 3 && released_total(&s) == 3 && s.in_flight == 0);
    CHECK(s.active_nodes == 1 && s.lame_duck_nodes == 0);
    /* Fail-fast calls only: no wait. */
    CHECK(s.waits == 0 && s.waits_granted == 0 && s.waits_timed_out == 0);
    CHECK(s.waits_cancelled == 0 && s.waiting == 0);
    check_conserved(b);
    weir_balancer_free(b);
}

/* A release with the server's load report is counted as a release: the same sequence of outcomes,
 * released plainly into one default balancer and with reports into another, leaves the same counters,
 * and the same health and limit (the default's CIAD limit does not read the report). */
static void test_release_loaded_counts(void) {
    weir_balancer *plain = make(weir_config_default(), 1);
    weir_balancer *loaded = make(weir_config_default(), 1);
    CHECK_OK(weir_balancer_add(plain, 1));
    CHECK_OK(weir_balancer_add(loaded, 1));
    const double reports[] = {0.0, 0.5, 1.0, 1.2, 999.9995, 1000.0};
    for (weir_outcome o = WEIR_OUTCOME_SUCCESS; o <= WEIR_OUTCOME_CLIENT_ERROR; o++) {
        weir_lease p, l;
        CHECK_OK(weir_balancer_acquire(plain, 100, &p));
        CHECK_OK(weir_balancer_acquire(loaded, 100, &l));
        CHECK_OK(weir_balancer_release(plain, &p, o, 200));
        CHECK_OK(weir_balancer_release_loaded(loaded, &l, o, 200, reports[o]));
        CHECK(l.balancer == 0);
    }
    weir_balancer_statistics a = stats(plain), b = stats(loaded);
    weir_node_info na, nb;
    CHECK_OK(weir_balancer_node_snapshot(plain, 1, 200, &na));
    CHECK_OK(weir_balancer_node_snapshot(loaded, 1, 200, &nb));
    for (int o = 0; o < WEIR_OUTCOME_COUNT; o++) {
        CHECK(b.released[o] == 1 && a.released[o] == 1);
        CHECK(nb.released[o] == 1 && na.released[o] == 1);
    }
    CHECK(a.acquired == b.acquired && a.in_flight == 0 && b.in_flight == 0);
    CHECK(na.limit == nb.limit && na.has_data && nb.has_data);
    CHECK(na.successes == nb.successes && na.failures == nb.failures && na.penalty == nb.penalty);
    check_conserved(loaded);
    weir_balancer_free(plain);
    weir_balancer_free(loaded);
}

/* A knee-limited node after the core's own example: 20 leases at 0 (its initial limit); with `armed`,
 * the 20th times out at 1 ms (the limit falls to 0.9 x 20 = 18 and the drop arms the knee); then the
 * 19th answers at 2 ms with the server reporting `utilization`. Writes the limit before that answer to
 * `*before` and returns the limit after it. */
static uint32_t knee_after_report(int armed, double utilization, uint32_t *before) {
    weir_config c = weir_config_default();
    c.limit = weir_limit_knee_default();
    weir_balancer *b = make(c, 1);
    CHECK_OK(weir_balancer_add(b, 1));
    weir_lease held[20];
    for (int i = 0; i < 20; i++) {
        CHECK_OK(weir_balancer_acquire(b, 0, &held[i]));
    }
    if (armed) {
        CHECK_OK(weir_balancer_release(b, &held[19], WEIR_OUTCOME_DROPPED, MS));
    }
    weir_node_info info;
    CHECK_OK(weir_balancer_node_snapshot(b, 1, MS, &info));
    *before = info.limit;
    CHECK_OK(weir_balancer_release_loaded(b, &held[18], WEIR_OUTCOME_SUCCESS, 2 * MS, utilization));
    CHECK_OK(weir_balancer_node_snapshot(b, 1, 2 * MS, &info));
    for (int i = 0; i < 20; i++) {
        if (held[i].balancer != 0) {
            CHECK_OK(weir_balancer_release(b, &held[i], WEIR_OUTCOME_IGNORED, 3 * MS));
        }
    }
    check_conserved(b);
    weir_balancer_free(b);
    return info.limit;
}

/* The report reaches the knee limit, which reads it in place of the latency while a drop arms it:
 * past the knee (1.2) the armed node's limit eases from 18 to 17.9 (17 whole calls); in the hold band
 * (0.9, above hold / knee = 0.875) it holds; well below it (0.5) the success may grow it, never lower
 * it. Unarmed (no drop yet), the report is not read and the same 1.2 does not lower the limit. */
static void test_release_loaded_knee(void) {
    uint32_t before = 0;
    CHECK(knee_after_report(1, 1.2, &before) == 17);
    CHECK(before == 18);
    CHECK(knee_after_report(1, 0.9, &before) == 18);
    CHECK(before == 18);
    uint32_t low = knee_after_report(1, 0.5, &before);
    CHECK(before == 18 && low >= 18);
    uint32_t unarmed = knee_after_report(0, 1.2, &before);
    CHECK(before == 20 && unarmed >= 20);
}

/* Per-node counts: a node counts its own releases from its add, so a node added into the slot another
 * left starts at 0, while the balancer's counters keep the old node's. */
static void test_node_released(void) {
    weir_balancer *b = make(fixed(10), 1);
    CHECK_OK(weir_balancer_add(b, 1));
    const weir_outcome outcomes[4] = {WEIR_OUTCOME_FAILURE, WEIR_OUTCOME_SUCCESS,
                                      WEIR_OUTCOME_FAILURE, WEIR_OUTCOME_THROTTLED};
    weir_lease l;
    for (int i = 0; i < 4; i++) {
        CHECK_OK(weir_balancer_acquire(b, 100, &l));
        CHECK_OK(weir_balancer_release(b, &l, outcomes[i], 200));
    }
    weir_node_info info;
    CHECK_OK(weir_balancer_node_snapshot(b, 1, 200, &info));
    const uint64_t want[WEIR_OUTCOME_COUNT] = {1, 2, 0, 0, 1, 0};
    for (int o = 0; o < WEIR_OUTCOME_COUNT; o++) {
        CHECK(info.released[o] == want[o]);
    }
    /* Node 1 leaves with a lease in flight: the only slot is reused once it is back (stale). */
    CHECK_OK(weir_balancer_acquire(b, 300, &l));
    CHECK_OK(weir_balancer_remove(b, 1));
    CHECK_STATUS(weir_balancer_add(b, 2), WEIR_ERR_CAPACITY_FULL);
    CHECK_STATUS(weir_balancer_release(b, &l, WEIR_OUTCOME_FAILURE, 400), WEIR_ERR_NODE_REMOVED);
    CHECK_OK(weir_balancer_add(b, 2));
    CHECK_OK(weir_balancer_node_snapshot(b, 2, 400, &info));
    for (int o = 0; o < WEIR_OUTCOME_COUNT; o++) {
        CHECK(info.released[o] == 0);
    }
    weir_balancer_statistics s = stats(b);
    for (int o = 0; o < WEIR_OUTCOME_COUNT; o++) {
        CHECK(s.released[o] == want[o]);
    }
    CHECK(s.released_stale == 1);
    CHECK_OK(weir_balancer_acquire(b, 500, &l));
    CHECK_OK(weir_balancer_release(b, &l, WEIR_OUTCOME_FAILURE, 600));
    CHECK_OK(weir_balancer_node_snapshot(b, 2, 600, &info));
    CHECK(info.released[WEIR_OUTCOME_FAILURE] == 1 && info.released[WEIR_OUTCOME_SUCCESS] == 0);
    CHECK(stats(b).released[WEIR_OUTCOME_FAILURE] == 3);
    check_conserved(b);
    weir_balancer_free(b);
}

int main(void) {
    /* Before any error, the message is empty (and never NULL). */
    REQUIRE(weir_last_error_message() != NULL);
    CHECK(weir_last_error_message()[0] == '\0');
    test_version();
    test_status_names();
    test_presets();
    test_valid_configs();
    test_refused_configs();
    test_refused_knee();
    test_refused_probation();
    test_timed_probes();
    test_health_checks();
    test_health_check_refusals();
    test_refused_slow_ratio();
    test_membership();
    test_acquire();
    test_acquire_with_rng();
    test_acquire_excluding();
    test_acquire_wait();
    test_acquire_wait_shed();
    test_release_outcomes();
    test_release_loaded_counts();
    test_release_loaded_knee();
    test_http_status();
    test_retryable();
    test_errno();
    test_snapshots();
    test_stats();
    test_node_released();
    return check_summary("test_balancer");
}

/* The overload tools from C: shedder and promises, CPU sampler (on a fake tree and on this machine),
 * throttle, backoff, shuffle and subsets. Every new function is called at least once, with its error
 * paths: NULLs, out-of-range enums, forged and foreign promises, buffers too small. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define MS 1000000ull
#define SEC 1000000000ull

static int contains(const char *text, const char *part) { return strstr(text, part) != NULL; }

static void test_shedder(void) {
    weir_shedder_config config = weir_shedder_config_default();
    CHECK(config.window_ns == 5 * SEC && config.buckets == 50 && config.cpu_threshold == 900);
    CHECK(config.cool_off_ns == SEC);
    CHECK(WEIR_MAX_WINDOW_BUCKETS == 128);
    CHECK_OK(weir_shedder_config_validate(&config));

    weir_shedder_config bad = config;
    bad.cpu_threshold = 1000;
    CHECK_STATUS(weir_shedder_config_validate(&bad), WEIR_ERR_INVALID_CONFIG);
    CHECK(contains(weir_last_error_message(), "cpu_threshold"));
    weir_shedder *refused = NULL;
    bad = config;
    bad.buckets = 0;
    CHECK_STATUS(weir_shedder_new(&bad, &refused), WEIR_ERR_INVALID_CONFIG);
    CHECK(contains(weir_last_error_message(), "buckets"));
    CHECK(refused == NULL);
    CHECK_STATUS(weir_shedder_new(NULL, &refused), WEIR_ERR_NULL);
    CHECK_STATUS(weir_shedder_new(&config, NULL), WEIR_ERR_NULL);
    CHECK_STATUS(weir_shedder_config_validate(NULL), WEIR_ERR_NULL);

    weir_shedder *shedder = NULL, *other = NULL;
    CHECK_OK(weir_shedder_new(&config, &shedder));
    CHECK_OK(weir_shedder_new(&config, &other));
    REQUIRE(shedder != NULL && other != NULL);

    weir_promise p, q;
    CHECK_OK(weir_shedder_allow(shedder, 100, 10 * MS, &p));
    CHECK(p.started_at == 10 * MS && p.shedder != 0);
    CHECK_OK(weir_shedder_allow(shedder, 100, 10 * MS, &q));

    /* Another shedder's, a zeroed and a forged promise: refused, nothing changes. */
    weir_promise zero;
    memset(&zero, 0, sizeof zero);
    weir_promise forged = p;
    forged.shedder += 1;
    CHECK_STATUS(weir_shedder_success(other, &p, 20 * MS), WEIR_ERR_INVALID_PROMISE);
    CHECK_STATUS(weir_shedder_failure(shedder, &zero), WEIR_ERR_INVALID_PROMISE);
    CHECK_STATUS(weir_shedder_success(shedder, &forged, 20 * MS), WEIR_ERR_INVALID_PROMISE);
    CHECK(contains(weir_last_error_message(), "promise"));
    weir_shedder_statistics st;
    CHECK_OK(weir_shedder_stats(shedder, 10 * MS, &st));
    CHECK(st.allowed == 2 && st.in_flight == 2 && st.succeeded == 0 && st.failed == 0);

    CHECK_OK(weir_shedder_success(shedder, &p, 30 * MS));
    CHECK_OK(weir_shedder_failure(shedder, &q));
    /* Completed twice with nothing in flight: refused. */
    CHECK_STATUS(weir_shedder_success(shedder, &p, 30 * MS), WEIR_ERR_INVALID_PROMISE);
    CHECK_STATUS(weir_shedder_failure(shedder, &q), WEIR_ERR_INVALID_PROMISE);
    CHECK_OK(weir_shedder_stats(shedder, 100 * MS, &st));
    CHECK(st.allowed == 2 && st.succeeded == 1 && st.failed == 1 && st.in_flight == 0);
    CHECK(st.min_rt_ms == 20 && st.max_pass == 1);

    double factor = 0.0;
    CHECK_OK(weir_shedder_overload_factor(shedder, 950, &factor));
    CHECK(factor == 0.5);

    /* NULLs. */
    CHECK_STATUS(weir_shedder_allow(NULL, 0, 0, &p), WEIR_ERR_NULL);
    CHECK_STATUS(weir_shedder_allow(shedder, 0, 0, NULL), WEIR_ERR_NULL);
    CHECK(contains(weir_last_error_message(), "`out`"));
    CHECK_STATUS(weir_shedder_success(shedder, NULL, 0), WEIR_ERR_NULL);
    CHECK_STATUS(weir_shedder_failure(NULL, &p), WEIR_ERR_NULL);
    CHECK_STATUS(weir_shedder_stats(shedder, 0, NULL), WEIR_ERR_NULL);
    CHECK_STATUS(weir_shedder_overload_factor(NULL, 0, &factor), WEIR_ERR_NULL);
    weir_shedder_free(shedder);
    weir_shedder_free(other);
    weir_shedder_free(NULL);

    /* Overloaded: threshold 0, 10 in flight with a risen average, cpu 1000 -> limit 1. */
    config.cpu_threshold = 0;
    CHECK_OK(weir_shedder_new(&config, &shedder));
    weir_promise held[20];
    for (int i = 0; i < 20; i++) {
        CHECK_OK(weir_shedder_allow(shedder, 0, 0, &held[i]));
    }
    for (int i = 0; i < 10; i++) {
        CHECK_OK(weir_shedder_failure(shedder, &held[i]));
    }
    weir_promise untouched = {.started_at = 42, .shedder = 42};
    CHECK_STATUS(weir_shedder_allow(shedder, 1000, 0, &untouched), WEIR_ERR_OVERLOADED);
    CHECK(contains(weir_last_error_message(), "service overloaded"));
    CHECK(untouched.started_at == 42 && untouched.shedder == 42);
    for (int i = 10; i < 20; i++) {
        CHECK_OK(weir_shedder_failure(shedder, &held[i]));
    }
    CHECK_OK(weir_shedder_stats(shedder, 0, &st));
    CHECK(st.allowed == 20 && st.dropped == 1 && st.failed == 20 && st.in_flight == 0);
    weir_shedder_free(shedder);
}

/* Threads admit and complete on one shedder; the counters are exact at the end. */
enum { SHED_THREADS = 4, SHED_ROUNDS = 5000 };
static weir_shedder *shared_shedder;
static uint64_t shed_allowed[SHED_THREADS], shed_dropped[SHED_THREADS];
static atomic_int shed_errors;

static void *shed_worker(void *arg) {
    size_t t = (size_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < SHED_ROUNDS; i++) {
        weir_promise p[3];
        int n = 0;
        for (int k = 0; k < 3; k++) {
            weir_status s = weir_shedder_allow(shared_shedder, 990, i * MS, &p[n]);
            if (s == WEIR_OK) {
                shed_allowed[t]++;
                n++;
            } else if (s == WEIR_ERR_OVERLOADED) {
                shed_dropped[t]++;
            } else {
                atomic_fetch_add_explicit(&shed_errors, 1, memory_order_relaxed);
            }
        }
        for (int k = 0; k < n; k++) {
            weir_status s = (k % 2) ? weir_shedder_failure(shared_shedder, &p[k])
                                    : weir_shedder_success(shared_shedder, &p[k], i * MS + MS);
            if (s != WEIR_OK) {
                atomic_fetch_add_explicit(&shed_errors, 1, memory_order_relaxed);
            }
        }
    }
    return NULL;
}

static void test_shedder_threads(void) {
    weir_shedder_config config = weir_shedder_config_default();
    config.cpu_threshold = 0;
    CHECK_OK(weir_shedder_new(&config, &shared_shedder));
    pthread_t threads[SHED_THREADS];
    for (size_t t = 0; t < SHED_THREADS; t++) {
        int created = pthread_create(&threads[t], NULL, shed_worker, (void *)(uintptr_t)t);
        REQUIRE(created == 0);
    }
    uint64_t allowed = 0, dropped = 0;
    for (size_t t = 0; t < SHED_THREADS; t++) {
        pthread_join(threads[t], NULL);
        allowed += shed_allowed[t];
        dropped += shed_dropped[t];
    }
    CHECK(atomic_load(&shed_errors) == 0);
    weir_shedder_statistics st;
    CHECK_OK(weir_shedder_stats(shared_shedder, 0, &st));
    CHECK(allowed + dropped == (uint64_t)SHED_THREADS * SHED_ROUNDS * 3);
    CHECK(st.allowed == allowed && st.dropped == dropped);
    CHECK(st.succeeded + st.failed == allowed && st.in_flight == 0);
    weir_shedder_free(shared_shedder);
}

static void write_file(const char *dir, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void test_cpu_sampler(void) {
    char root[] = "/tmp/weir-test-cpu-XXXXXX";
    /* REQUIRE evaluates its condition twice: calls with side effects go into a variable first. */
    char *made = mkdtemp(root);
    REQUIRE(made != NULL);
    char proc[600];
    snprintf(proc, sizeof proc, "%s/proc", root);
    int dir = mkdir(proc, 0700);
    REQUIRE(dir == 0);

    weir_cpu_sampler *sampler = NULL;
    /* No source under the root: unsupported, said honestly. */
    CHECK_STATUS(weir_cpu_sampler_with_root(root, &sampler), WEIR_ERR_UNSUPPORTED);
    CHECK(sampler == NULL);

    write_file(proc, "stat", "cpu  0 0 0 1000 0 0 0 0\ncpu0 0 0 0 1000 0 0 0\n");
    CHECK_OK(weir_cpu_sampler_with_root(root, &sampler));
    REQUIRE(sampler != NULL);
    weir_cpu_source source = 99;
    CHECK_OK(weir_cpu_sampler_source(sampler, &source));
    CHECK(source == WEIR_CPU_SOURCE_PROC_STAT);
    double allowance = 0.0;
    CHECK_OK(weir_cpu_sampler_allowance(sampler, &allowance));
    CHECK(allowance == 1.0);
    uint32_t usage = 99;
    CHECK_OK(weir_cpu_sampler_usage(sampler, &usage));
    CHECK(usage == 0);
    CHECK_OK(weir_cpu_sampler_sample(sampler, 0, &usage));
    CHECK(usage == 0);
    write_file(proc, "stat", "cpu  250 0 0 1750 0 0 0 0\n");
    CHECK_OK(weir_cpu_sampler_sample(sampler, 100 * SEC, &usage));
    CHECK(usage == 250);
    usage = 0;
    CHECK_OK(weir_cpu_sampler_usage(sampler, &usage));
    CHECK(usage == 250);

    char stat[700];
    snprintf(stat, sizeof stat, "%s/stat", proc);
    int removed = unlink(stat);
    REQUIRE(removed == 0);
    uint32_t kept = 7;
    CHECK_STATUS(weir_cpu_sampler_sample(sampler, 200 * SEC, &kept), WEIR_ERR_IO);
    CHECK(contains(weir_last_error_message(), "stat"));
    CHECK(kept == 7);

    CHECK_STATUS(weir_cpu_sampler_with_root(NULL, &sampler), WEIR_ERR_NULL);
    CHECK_STATUS(weir_cpu_sampler_with_root(root, NULL), WEIR_ERR_NULL);
    CHECK_STATUS(weir_cpu_sampler_new(NULL), WEIR_ERR_NULL);
    CHECK_STATUS(weir_cpu_sampler_source(NULL, &source), WEIR_ERR_NULL);
    CHECK_STATUS(weir_cpu_sampler_allowance(sampler, NULL), WEIR_ERR_NULL);
    CHECK_STATUS(weir_cpu_sampler_sample(NULL, 0, &usage), WEIR_ERR_NULL);
    CHECK_STATUS(weir_cpu_sampler_usage(sampler, NULL), WEIR_ERR_NULL);
    weir_cpu_sampler_free(sampler);
    weir_cpu_sampler_free(NULL);
    rmdir(proc);
    rmdir(root);

    /* This machine: a sampler, or an honest refusal. */
    weir_cpu_sampler *real = NULL;
    weir_status status = weir_cpu_sampler_new(&real);
    CHECK(status == WEIR_OK || status == WEIR_ERR_UNSUPPORTED || status == WEIR_ERR_IO);
    if (status == WEIR_OK) {
        CHECK_OK(weir_cpu_sampler_sample(real, weir_now_ns(), &usage));
        CHECK(usage <= 1000);
        weir_cpu_sampler_free(real);
    }
}

static void test_throttle(void) {
    weir_throttle_config config = weir_throttle_config_default();
    CHECK(config.window_ns == 120 * SEC && config.buckets == 120 && config.k == 2.0);
    CHECK(config.max_rejection == 1.0 && config.retry_ratio == 0.1 && config.seed == 0);
    CHECK_OK(weir_throttle_config_validate(&config));
    weir_throttle_config bad = config;
    bad.k = 0.5;
    CHECK_STATUS(weir_throttle_config_validate(&bad), WEIR_ERR_INVALID_CONFIG);
    CHECK(contains(weir_last_error_message(), "k must be"));
    weir_throttle *throttle = NULL;
    bad = config;
    bad.retry_ratio = 2.0;
    CHECK_STATUS(weir_throttle_new(&bad, &throttle), WEIR_ERR_INVALID_CONFIG);
    CHECK(contains(weir_last_error_message(), "retry_ratio"));
    CHECK(throttle == NULL);
    CHECK_STATUS(weir_throttle_new(NULL, &throttle), WEIR_ERR_NULL);
    CHECK_STATUS(weir_throttle_config_validate(NULL), WEIR_ERR_NULL);
    CHECK_OK(weir_throttle_new(&config, &throttle));
    REQUIRE(throttle != NULL);

    /* A criticality of 99: refused by every call, nothing counted, generator untouched. */
    bool allowed = false;
    weir_retry_verdict verdict = 99;
    double probability = -1.0;
    weir_rng rng = weir_rng_seed(1);
    CHECK_STATUS(weir_throttle_allow(throttle, 99, SEC, &allowed), WEIR_ERR_INVALID_ARGUMENT);
    CHECK(contains(weir_last_error_message(), "criticality: 99"));
    CHECK_STATUS(weir_throttle_allow_with_rng(throttle, 99, SEC, &rng, &allowed),
                 WEIR_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(weir_throttle_allow_retry(throttle, 99, SEC, &verdict), WEIR_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(weir_throttle_allow_retry_with_rng(throttle, 99, SEC, &rng, &verdict),
                 WEIR_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(weir_throttle_accepted(throttle, 99, SEC), WEIR_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(weir_throttle_probability(throttle, 99, SEC, &probability),
                 WEIR_ERR_INVALID_ARGUMENT);
    CHECK(rng.state == 1 && verdict == 99 && probability == -1.0);
    weir_throttle_statistics st;
    CHECK_OK(weir_throttle_stats(throttle, SEC, &st));
    CHECK(st.total_requests[WEIR_CRITICALITY_CRITICAL] == 0 && st.total_retries_denied == 0);

    /* No requests yet: a retry has no budget. */
    CHECK_OK(weir_throttle_allow_retry(throttle, WEIR_CRITICALITY_CRITICAL, SEC, &verdict));
    CHECK(verdict == WEIR_RETRY_DENIED_BUDGET);

    /* The backend refuses everything SHEDDABLE: it is throttled more and more. */
    int throttled = 0;
    for (int i = 0; i < 200; i++) {
        CHECK_OK(weir_throttle_allow_with_rng(throttle, WEIR_CRITICALITY_SHEDDABLE, SEC, &rng,
                                              &allowed));
        throttled += !allowed;
    }
    CHECK(throttled > 100);
    CHECK_OK(weir_throttle_probability(throttle, WEIR_CRITICALITY_SHEDDABLE, SEC, &probability));
    CHECK(probability == 200.0 / 201.0);
    CHECK(probability == weir_throttle_rejection_probability(200, 0, 2.0));
    /* CRITICAL_PLUS is throttled only by its own failures. */
    CHECK_OK(weir_throttle_probability(throttle, WEIR_CRITICALITY_CRITICAL_PLUS, SEC, &probability));
    CHECK(probability == 0.0);
    CHECK_OK(weir_throttle_allow(throttle, WEIR_CRITICALITY_CRITICAL_PLUS, SEC, &allowed));
    CHECK(allowed);
    CHECK_OK(weir_throttle_accepted(throttle, WEIR_CRITICALITY_CRITICAL_PLUS, SEC));
    CHECK_OK(weir_throttle_allow_retry_with_rng(throttle, WEIR_CRITICALITY_CRITICAL_PLUS, SEC, &rng,
                                                &verdict));
    CHECK(verdict == WEIR_RETRY_ALLOWED);

    CHECK_OK(weir_throttle_stats(throttle, SEC, &st));
    CHECK(st.total_requests[WEIR_CRITICALITY_SHEDDABLE] == 200);
    CHECK(st.total_throttled[WEIR_CRITICALITY_SHEDDABLE] == (uint64_t)throttled);
    CHECK(st.total_requests[WEIR_CRITICALITY_CRITICAL_PLUS] == 2);
    CHECK(st.total_accepts[WEIR_CRITICALITY_CRITICAL_PLUS] == 1);
    CHECK(st.total_retries == 1 && st.total_retries_denied == 1 && st.window_retries == 1);
    CHECK(st.window_requests[WEIR_CRITICALITY_SHEDDABLE] == 200);
    CHECK(st.window_accepts[WEIR_CRITICALITY_SHEDDABLE] == 0);
    CHECK(WEIR_CRITICALITY_COUNT == 4);

    CHECK_STATUS(weir_throttle_allow(NULL, 0, 0, &allowed), WEIR_ERR_NULL);
    CHECK_STATUS(weir_throttle_allow(throttle, 0, 0, NULL), WEIR_ERR_NULL);
    CHECK(contains(weir_last_error_message(), "`allowed`"));
    CHECK_STATUS(weir_throttle_allow_with_rng(throttle, 0, 0, NULL, &allowed), WEIR_ERR_NULL);
    CHECK_STATUS(weir_throttle_allow_retry(throttle, 0, 0, NULL), WEIR_ERR_NULL);
    CHECK_STATUS(weir_throttle_allow_retry_with_rng(throttle, 0, 0, NULL, &verdict), WEIR_ERR_NULL);
    CHECK_STATUS(weir_throttle_accepted(NULL, 0, 0), WEIR_ERR_NULL);
    CHECK_STATUS(weir_throttle_probability(throttle, 0, 0, NULL), WEIR_ERR_NULL);
    CHECK_STATUS(weir_throttle_stats(NULL, 0, &st), WEIR_ERR_NULL);
    weir_throttle_free(throttle);
    weir_throttle_free(NULL);
}

static void test_backoff(void) {
    weir_backoff_config config = weir_backoff_config_default();
    CHECK(config.initial_ns == 500 * MS && config.max_ns == 900 * SEC);
    CHECK(config.up_multiplier == 1.5 && config.down_multiplier == 0.9);
    CHECK(config.down_threshold == 10 && config.seed == 0);
    CHECK(config.jitter.kind == WEIR_JITTER_PROPORTIONAL && config.jitter.factor == 0.3);
    CHECK(config.jitter.max_ns == 120 * SEC);
    CHECK_OK(weir_backoff_config_validate(&config));
    weir_backoff_config bad = config;
    bad.jitter.kind = 99;
    CHECK_STATUS(weir_backoff_config_validate(&bad), WEIR_ERR_INVALID_ARGUMENT);
    CHECK(contains(weir_last_error_message(), "jitter.kind: 99"));
    bad = config;
    bad.max_ns = WEIR_MAX_BACKOFF_NS + 1;
    weir_backoff *backoff = NULL;
    CHECK_STATUS(weir_backoff_new(&bad, &backoff), WEIR_ERR_INVALID_CONFIG);
    CHECK(contains(weir_last_error_message(), "max_ns"));
    CHECK(backoff == NULL);
    CHECK_STATUS(weir_backoff_new(NULL, &backoff), WEIR_ERR_NULL);
    CHECK_STATUS(weir_backoff_config_validate(NULL), WEIR_ERR_NULL);

    config.jitter.kind = WEIR_JITTER_NONE;
    config.down_threshold = 2;
    CHECK_OK(weir_backoff_new(&config, &backoff));
    REQUIRE(backoff != NULL);
    weir_delay d;
    CHECK_OK(weir_backoff_on_success(backoff, &d));
    CHECK(d.ns == 0 && d.step == WEIR_STEP_IDLE);
    CHECK_OK(weir_backoff_on_failure(backoff, &d));
    CHECK(d.ns == 500 * MS && d.step == WEIR_STEP_UP);
    weir_rng rng = weir_rng_seed(5);
    CHECK_OK(weir_backoff_on_failure_with_rng(backoff, &rng, &d));
    CHECK(d.ns == 750 * MS && d.step == WEIR_STEP_UP);
    CHECK_OK(weir_backoff_on_success_with_rng(backoff, &rng, &d));
    CHECK(d.ns == 750 * MS && d.step == WEIR_STEP_HOLD);
    CHECK_OK(weir_backoff_on_success(backoff, &d));
    CHECK(d.ns == 675 * MS && d.step == WEIR_STEP_DOWN);
    uint64_t interval = 0;
    CHECK_OK(weir_backoff_interval_ns(backoff, &interval));
    CHECK(interval == 675 * MS);
    CHECK_OK(weir_backoff_reset(backoff));
    CHECK_OK(weir_backoff_interval_ns(backoff, &interval));
    CHECK(interval == 0);
    weir_backoff_statistics st;
    CHECK_OK(weir_backoff_stats(backoff, &st));
    CHECK(st.invocations == 5 && st.went_up == 2 && st.went_down == 1 && st.slept == 4);
    CHECK(st.sleep_ns == (500 + 750 + 750 + 675) * MS);

    CHECK_STATUS(weir_backoff_on_failure(NULL, &d), WEIR_ERR_NULL);
    CHECK_STATUS(weir_backoff_on_failure_with_rng(backoff, NULL, &d), WEIR_ERR_NULL);
    CHECK(contains(weir_last_error_message(), "`rng`"));
    CHECK_STATUS(weir_backoff_on_success(backoff, NULL), WEIR_ERR_NULL);
    CHECK_STATUS(weir_backoff_on_success_with_rng(NULL, &rng, &d), WEIR_ERR_NULL);
    CHECK_STATUS(weir_backoff_interval_ns(backoff, NULL), WEIR_ERR_NULL);
    CHECK_STATUS(weir_backoff_reset(NULL), WEIR_ERR_NULL);
    CHECK_STATUS(weir_backoff_stats(backoff, NULL), WEIR_ERR_NULL);
    weir_backoff_free(backoff);
    weir_backoff_free(NULL);
}

static void test_subsets(void) {
    uint64_t items[12];
    for (uint64_t i = 0; i < 12; i++) {
        items[i] = i;
    }
    const uint64_t shuffled[12] = {5, 11, 6, 7, 3, 1, 2, 9, 8, 0, 4, 10};
    CHECK_OK(weir_subset_shuffle(items, 12, 0));
    CHECK(memcmp(items, shuffled, sizeof items) == 0);
    CHECK_OK(weir_subset_shuffle(NULL, 0, 0));
    CHECK_STATUS(weir_subset_shuffle(NULL, 3, 0), WEIR_ERR_NULL);

    uint64_t backends[12];
    for (uint64_t i = 0; i < 12; i++) {
        backends[i] = i;
    }
    /* Round 0 is the shuffle with seed 0, cut in 4 subsets of 3. */
    uint64_t out[8];
    size_t len = 0;
    for (uint64_t client = 0; client < 4; client++) {
        CHECK_OK(weir_subset_deterministic(backends, 12, client, 3, out, 8, &len));
        CHECK(len == 3 && memcmp(out, &shuffled[client * 3], 3 * sizeof out[0]) == 0);
    }
    /* 10 backends, subsets of 3: client 2 gets 4 ids. Query, too small, then right. */
    CHECK_OK(weir_subset_deterministic(backends, 10, 2, 3, NULL, 0, &len));
    CHECK(len == 4);
    uint64_t small[3] = {7, 7, 7};
    size_t kept = 99;
    CHECK_STATUS(weir_subset_deterministic(backends, 10, 2, 3, small, 3, &kept),
                 WEIR_ERR_BUFFER_TOO_SMALL);
    CHECK(contains(weir_last_error_message(), "the subset has 4"));
    CHECK(small[0] == 7 && small[1] == 7 && small[2] == 7 && kept == 99);
    CHECK_OK(weir_subset_deterministic(backends, 10, 2, 3, out, 4, &len));
    CHECK(len == 4);
    CHECK_STATUS(weir_subset_deterministic(backends, 0, 0, 1, out, 8, &len),
                 WEIR_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(weir_subset_deterministic(backends, 12, 0, 0, out, 8, &len),
                 WEIR_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(weir_subset_deterministic(backends, 12, 0, 13, out, 8, &len),
                 WEIR_ERR_INVALID_ARGUMENT);
    CHECK(contains(weir_last_error_message(), "subset_size"));
    CHECK_STATUS(weir_subset_deterministic(NULL, 12, 0, 3, out, 8, &len), WEIR_ERR_NULL);
    CHECK_STATUS(weir_subset_deterministic(backends, 12, 0, 3, NULL, 8, &len), WEIR_ERR_NULL);
    CHECK_STATUS(weir_subset_deterministic(backends, 12, 0, 3, out, 8, NULL), WEIR_ERR_NULL);

    /* Random subsets: the same seed gives the same subset; errors leave the generator alone. */
    weir_rng a = weir_rng_seed(11), b = weir_rng_seed(11);
    uint64_t first[5], second[5];
    CHECK_OK(weir_subset_random(backends, 12, 5, &a, first, 5, &len));
    CHECK(len == 5);
    weir_rng before = b;
    CHECK_STATUS(weir_subset_random(backends, 12, 5, &b, second, 4, &len), WEIR_ERR_BUFFER_TOO_SMALL);
    CHECK(b.state == before.state);
    CHECK_OK(weir_subset_random(backends, 12, 5, &b, NULL, 0, &len));
    CHECK(len == 5 && b.state == before.state);
    CHECK_OK(weir_subset_random(backends, 12, 5, &b, second, 5, &len));
    CHECK(memcmp(first, second, sizeof first) == 0 && a.state == b.state);
    CHECK(a.state != before.state);
    for (int i = 0; i < 5; i++) {
        CHECK(first[i] < 12);
    }
    CHECK_STATUS(weir_subset_random(backends, 12, 13, &a, first, 5, &len), WEIR_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(weir_subset_random(backends, 12, 5, NULL, first, 5, &len), WEIR_ERR_NULL);
    CHECK_STATUS(weir_subset_random(NULL, 12, 5, &a, first, 5, &len), WEIR_ERR_NULL);
}

static void test_retry_budget(void) {
    weir_retry_budget_config config = weir_retry_budget_config_default();
    CHECK(config.window_ns == 10 * SEC && config.buckets == 10);
    CHECK(config.ratio == 0.2 && config.per_second == 10.0);
    weir_retry_budget *budget = NULL;
    weir_retry_budget_config bad = config;
    bad.per_second = -1.0;
    CHECK_STATUS(weir_retry_budget_new(&bad, &budget), WEIR_ERR_INVALID_CONFIG);
    CHECK(contains(weir_last_error_message(), "per_second"));
    CHECK(budget == NULL);
    CHECK_STATUS(weir_retry_budget_new(NULL, &budget), WEIR_ERR_NULL);
    /* 20 % of 10 requests and no floor: two retries, then refused with its own status. */
    config.per_second = 0.0;
    CHECK_OK(weir_retry_budget_new(&config, &budget));
    REQUIRE(budget != NULL);
    for (int i = 0; i < 10; i++) {
        CHECK_OK(weir_retry_budget_request(budget, SEC));
    }
    CHECK_OK(weir_retry_budget_try_retry(budget, SEC));
    CHECK_OK(weir_retry_budget_try_retry(budget, SEC));
    CHECK_STATUS(weir_retry_budget_try_retry(budget, SEC), WEIR_ERR_RETRY_BUDGET_EXHAUSTED);
    CHECK(contains(weir_last_error_message(), "2 retries for 10 requests"));
    weir_retry_budget_statistics st;
    CHECK_OK(weir_retry_budget_stats(budget, SEC, &st));
    CHECK(st.requests == 10 && st.retries == 2 && st.denied == 1);
    CHECK(st.window_requests == 10 && st.window_retries == 2 && st.available == 0);
    /* A whole window later, the window is empty again. */
    CHECK_OK(weir_retry_budget_stats(budget, 30 * SEC, &st));
    CHECK(st.window_requests == 0 && st.requests == 10);
    size_t len = 0;
    CHECK_OK(weir_retry_budget_write_metrics(budget, NULL, NULL, 0, &len, SEC));
    char text[2048];
    REQUIRE(len < sizeof text);
    CHECK_OK(weir_retry_budget_write_metrics(budget, NULL, text, sizeof text, &len, SEC));
    CHECK(strlen(text) == len);
    CHECK(contains(text, "\nweir_retry_budget_requests_total 10\n"));
    CHECK(contains(text, "\nweir_retry_budget_denied_total 1\n"));
    CHECK_STATUS(weir_retry_budget_write_metrics(NULL, NULL, text, sizeof text, &len, SEC), WEIR_ERR_NULL);
    CHECK_STATUS(weir_retry_budget_stats(budget, SEC, NULL), WEIR_ERR_NULL);
    CHECK_STATUS(weir_retry_budget_request(NULL, SEC), WEIR_ERR_NULL);
    CHECK_STATUS(weir_retry_budget_try_retry(NULL, SEC), WEIR_ERR_NULL);
    weir_retry_budget_free(budget);
    weir_retry_budget_free(NULL);
}

int main(void) {
    test_shedder();
    test_shedder_threads();
    test_cpu_sampler();
    test_throttle();
    test_retry_budget();
    test_backoff();
    test_subsets();
    return check_summary("test_overload");
}

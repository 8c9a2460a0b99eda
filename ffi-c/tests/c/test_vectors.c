/* Replays every shared decision trace in tests/vectors/ (the format: tests/vectors/README.md) through the
 * C ABI and checks every answer, every node snapshot and every counter, floats bit for bit. The Rust suite
 * (tests/tests/vectors.rs) replays the same files against the core: both must match the files exactly.
 *
 * The directory is $WEIR_VECTORS_DIR, or tests/vectors relative to the working directory (the repository
 * root, where `cargo xtask ctest` runs the C suite). */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define MAX_LINE 512
#define MAX_NODES 64

/* How many traces had their metrics text compared (tests/vectors/metrics/). */
static int metrics_compared = 0;
/* How many release_loaded lines were replayed, over all the files. */
static long loaded_releases = 0;
/* How many files with timed probes on (algorithm.probe_after_ns) were replayed to the end. */
static int timed_probe_files = 0;
/* How many due_check lines named a node, and report_check lines answered not_lowest_score, over all
 * the files. */
static long checks_named = 0;
static long checks_not_lowest_score = 0;

typedef struct replay {
    const char *file;
    long line;
    int failed;
} replay;

/* Reports the first difference of a file and stops its replay. */
#define MISMATCH(r, ...)                                                                           \
    do {                                                                                           \
        fprintf(stderr, "%s:%ld: ", (r)->file, (r)->line);                                         \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        (r)->failed = 1;                                                                           \
    } while (0)

static int parse_u64(const char *s, uint64_t *out) {
    char *end = NULL;
    if (s == NULL || *s < '0' || *s > '9') {
        return 0;
    }
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0') {
        return 0;
    }
    *out = (uint64_t)v;
    return 1;
}

static int parse_u32(const char *s, uint32_t *out) {
    uint64_t v;
    if (!parse_u64(s, &v) || v > UINT32_MAX) {
        return 0;
    }
    *out = (uint32_t)v;
    return 1;
}

/* A finite decimal (the format has no spelling for NaN, infinities or hexadecimal floats). */
static int is_decimal(const char *s) {
    if (s == NULL || *s == '\0') {
        return 0;
    }
    for (const char *p = s; *p; p++) {
        if (!((*p >= '0' && *p <= '9') || *p == '-' || *p == '+' || *p == '.' || *p == 'e')) {
            return 0;
        }
    }
    return 1;
}

static int parse_f64(const char *s, double *out) {
    char *end = NULL;
    if (!is_decimal(s)) {
        return 0;
    }
    *out = strtod(s, &end);
    return *end == '\0';
}

static int parse_f32(const char *s, float *out) {
    char *end = NULL;
    if (!is_decimal(s)) {
        return 0;
    }
    *out = strtof(s, &end); /* strtof, not strtod then a cast: that would round twice */
    return *end == '\0';
}

static int parse_bool(const char *s, bool *out) {
    if (s != NULL && strcmp(s, "true") == 0) {
        *out = true;
        return 1;
    }
    if (s != NULL && strcmp(s, "false") == 0) {
        *out = false;
        return 1;
    }
    return 0;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- the configuration ---------------------------------------------------------------------- */

/* One word among `names`, written to `*out` as its index (the tags are numbered in the same order). */
static int word_index(const char *w, const char *const *names, uint32_t count, uint32_t *out) {
    for (uint32_t i = 0; i < count; i++) {
        if (strcmp(w, names[i]) == 0) {
            *out = i;
            return 1;
        }
    }
    return 0;
}

static int limit_from_word(const char *w, uint32_t *out) {
    /* WEIR_LIMIT_FIXED .. WEIR_LIMIT_KNEE, in this order */
    static const char *const names[] = {"fixed", "aimd", "vegas", "gradient", "gradient2", "ciad",
                                        "windowed", "knee"};
    return word_index(w, names, sizeof names / sizeof names[0], out);
}

static int set_threshold(weir_vegas_threshold *t, const char *sub, const char *v) {
    if (sub[0] == '\0') {
        if (strcmp(v, "constant") == 0) {
            t->kind = WEIR_VEGAS_THRESHOLD_CONSTANT;
        } else if (strcmp(v, "log10") == 0) {
            t->kind = WEIR_VEGAS_THRESHOLD_LOG10;
        } else {
            return 0;
        }
        return 1;
    }
    return strcmp(sub, ".0") == 0 && parse_u32(v, &t->value);
}

static int set_step(weir_vegas_step *s, const char *sub, const char *v) {
    if (sub[0] == '\0') {
        if (strcmp(v, "log10") == 0) {
            s->kind = WEIR_VEGAS_STEP_LOG10;
        } else if (strcmp(v, "factor") == 0) {
            s->kind = WEIR_VEGAS_STEP_FACTOR;
        } else {
            return 0;
        }
        return 1;
    }
    return strcmp(sub, ".0") == 0 && parse_f64(v, &s->factor);
}

static int set_queue(weir_queue_size *q, const char *sub, const char *v) {
    if (sub[0] == '\0') {
        if (strcmp(v, "constant") == 0) {
            q->kind = WEIR_QUEUE_SIZE_CONSTANT;
        } else if (strcmp(v, "sqrt") == 0) {
            q->kind = WEIR_QUEUE_SIZE_SQRT;
        } else {
            return 0;
        }
        return 1;
    }
    if (strcmp(sub, ".0") == 0 && q->kind == WEIR_QUEUE_SIZE_CONSTANT) {
        return parse_u32(v, &q->value);
    }
    if (strcmp(sub, ".min") == 0 && q->kind == WEIR_QUEUE_SIZE_SQRT) {
        return parse_u32(v, &q->value);
    }
    return 0;
}

/* `field` starts with `name`, followed by nothing or by a '.' part, which `*sub` then points to. */
static int field_is(const char *field, const char *name, const char **sub) {
    size_t n = strlen(name);
    if (strncmp(field, name, n) != 0 || (field[n] != '\0' && field[n] != '.')) {
        return 0;
    }
    *sub = field + n;
    return 1;
}

/* One field of limit algorithm `alg`, its parameters in `l`. */
static int set_algorithm_field(weir_limit *l, uint32_t alg, const char *f, const char *v) {
    const char *sub = "";
    switch (alg) {
    case WEIR_LIMIT_FIXED:
        return strcmp(f, "limit") == 0 && parse_u32(v, &l->fixed.limit);
    case WEIR_LIMIT_AIMD:
        if (strcmp(f, "initial_limit") == 0) return parse_u32(v, &l->aimd.initial_limit);
        if (strcmp(f, "min_limit") == 0) return parse_u32(v, &l->aimd.min_limit);
        if (strcmp(f, "max_limit") == 0) return parse_u32(v, &l->aimd.max_limit);
        if (strcmp(f, "backoff_ratio") == 0) return parse_f64(v, &l->aimd.backoff_ratio);
        if (strcmp(f, "timeout_ns") == 0) return parse_u64(v, &l->aimd.timeout_ns);
        return 0;
    case WEIR_LIMIT_VEGAS:
        if (strcmp(f, "initial_limit") == 0) return parse_u32(v, &l->vegas.initial_limit);
        if (strcmp(f, "max_limit") == 0) return parse_u32(v, &l->vegas.max_limit);
        if (strcmp(f, "smoothing") == 0) return parse_f64(v, &l->vegas.smoothing);
        if (strcmp(f, "probe_multiplier") == 0) return parse_u32(v, &l->vegas.probe_multiplier);
        if (field_is(f, "alpha", &sub)) return set_threshold(&l->vegas.alpha, sub, v);
        if (field_is(f, "beta", &sub)) return set_threshold(&l->vegas.beta, sub, v);
        if (field_is(f, "threshold", &sub)) return set_threshold(&l->vegas.threshold, sub, v);
        if (field_is(f, "increase", &sub)) return set_step(&l->vegas.increase, sub, v);
        if (field_is(f, "decrease", &sub)) return set_step(&l->vegas.decrease, sub, v);
        if (strcmp(f, "baseline_from_drops") == 0) return parse_bool(v, &l->vegas.baseline_from_drops);
        return 0;
    case WEIR_LIMIT_GRADIENT:
        if (strcmp(f, "initial_limit") == 0) return parse_u32(v, &l->gradient.initial_limit);
        if (strcmp(f, "min_limit") == 0) return parse_u32(v, &l->gradient.min_limit);
        if (strcmp(f, "max_limit") == 0) return parse_u32(v, &l->gradient.max_limit);
        if (strcmp(f, "smoothing") == 0) return parse_f64(v, &l->gradient.smoothing);
        if (field_is(f, "queue_size", &sub)) return set_queue(&l->gradient.queue_size, sub, v);
        if (strcmp(f, "rtt_tolerance") == 0) return parse_f64(v, &l->gradient.rtt_tolerance);
        if (strcmp(f, "probe_interval") == 0) {
            l->gradient.probe = strcmp(v, "none") != 0;
            return !l->gradient.probe || parse_u32(v, &l->gradient.probe_interval);
        }
        if (strcmp(f, "backoff_ratio") == 0) return parse_f64(v, &l->gradient.backoff_ratio);
        return 0;
    case WEIR_LIMIT_GRADIENT2:
        if (strcmp(f, "initial_limit") == 0) return parse_u32(v, &l->gradient2.initial_limit);
        if (strcmp(f, "min_limit") == 0) return parse_u32(v, &l->gradient2.min_limit);
        if (strcmp(f, "max_limit") == 0) return parse_u32(v, &l->gradient2.max_limit);
        if (strcmp(f, "smoothing") == 0) return parse_f64(v, &l->gradient2.smoothing);
        if (field_is(f, "queue_size", &sub)) return set_queue(&l->gradient2.queue_size, sub, v);
        if (strcmp(f, "long_window") == 0) return parse_u32(v, &l->gradient2.long_window);
        if (strcmp(f, "rtt_tolerance") == 0) return parse_f64(v, &l->gradient2.rtt_tolerance);
        if (strcmp(f, "drop_backoff") == 0) {
            l->gradient2.drop_backoff_enabled = strcmp(v, "none") != 0;
            return !l->gradient2.drop_backoff_enabled || parse_f64(v, &l->gradient2.drop_backoff);
        }
        return 0;
    case WEIR_LIMIT_CIAD:
        if (strcmp(f, "initial_limit") == 0) return parse_u32(v, &l->ciad.initial_limit);
        if (strcmp(f, "min_limit") == 0) return parse_u32(v, &l->ciad.min_limit);
        if (strcmp(f, "max_limit") == 0) return parse_u32(v, &l->ciad.max_limit);
        if (strcmp(f, "backoff_ratio") == 0) return parse_f64(v, &l->ciad.backoff_ratio);
        if (strcmp(f, "fast_start") == 0) return parse_bool(v, &l->ciad.fast_start);
        if (strcmp(f, "rtt_tolerance") == 0) return parse_f64(v, &l->ciad.rtt_tolerance);
        return 0;
    case WEIR_LIMIT_KNEE:
        if (strcmp(f, "initial_limit") == 0) return parse_u32(v, &l->knee.initial_limit);
        if (strcmp(f, "min_limit") == 0) return parse_u32(v, &l->knee.min_limit);
        if (strcmp(f, "max_limit") == 0) return parse_u32(v, &l->knee.max_limit);
        if (strcmp(f, "backoff_ratio") == 0) return parse_f64(v, &l->knee.backoff_ratio);
        if (strcmp(f, "knee") == 0) return parse_f64(v, &l->knee.knee);
        if (strcmp(f, "hold") == 0) return parse_f64(v, &l->knee.hold);
        if (strcmp(f, "armed_for_ns") == 0) return parse_u64(v, &l->knee.armed_for_ns);
        return 0;
    default:
        return 0;
    }
}

static int set_limit_key(weir_limit *l, const char *key, const char *v) {
    if (strcmp(key, "limit") == 0) {
        return limit_from_word(v, &l->algorithm);
    }
    if (strncmp(key, "limit.", 6) != 0) {
        return 0;
    }
    const char *f = key + 6;
    if (l->algorithm != WEIR_LIMIT_WINDOWED) {
        return set_algorithm_field(l, l->algorithm, f, v);
    }
    if (strcmp(f, "inner") == 0) {
        return limit_from_word(v, &l->windowed.inner) && l->windowed.inner != WEIR_LIMIT_WINDOWED;
    }
    if (strncmp(f, "inner.", 6) == 0) {
        return set_algorithm_field(l, l->windowed.inner, f + 6, v);
    }
    weir_windowed_limit *w = &l->windowed;
    if (strcmp(f, "min_window_ns") == 0) return parse_u64(v, &w->min_window_ns);
    if (strcmp(f, "max_window_ns") == 0) return parse_u64(v, &w->max_window_ns);
    if (strcmp(f, "min_samples") == 0) return parse_u32(v, &w->min_samples);
    if (strcmp(f, "min_rtt_threshold_ns") == 0) return parse_u64(v, &w->min_rtt_threshold_ns);
    if (strcmp(f, "window") == 0) {
        if (strcmp(v, "average") == 0) {
            w->window.kind = WEIR_SAMPLE_WINDOW_AVERAGE;
        } else if (strcmp(v, "percentile") == 0) {
            w->window.kind = WEIR_SAMPLE_WINDOW_PERCENTILE;
        } else {
            return 0;
        }
        return 1;
    }
    if (strcmp(f, "window.percentile") == 0) return parse_f64(v, &w->window.percentile);
    if (strcmp(f, "window.capacity") == 0) return parse_u32(v, &w->window.capacity);
    return 0;
}

/* One field of the weighted family, `f` after "algorithm.". */
static int set_weighted_field(weir_weighted *w, const char *f, const char *v) {
    static const char *const models[] = {"buckets", "ewma"}; /* WEIR_HEALTH_BUCKETS, _EWMA */
    static const char *const draws[] = {"cascade", "cascade_approx", "weighted_pick"};
    if (strcmp(f, "health") == 0) return word_index(v, models, 2, &w->health.model);
    if (w->health.model == WEIR_HEALTH_BUCKETS) {
        if (strcmp(f, "health.count") == 0) return parse_u32(v, &w->health.buckets.count);
        if (strcmp(f, "health.width_ns") == 0) return parse_u64(v, &w->health.buckets.width_ns);
        if (strcmp(f, "health.decay") == 0) return parse_f64(v, &w->health.buckets.decay);
    }
    if (w->health.model == WEIR_HEALTH_EWMA && strcmp(f, "health.half_life") == 0) {
        return parse_u32(v, &w->health.ewma.half_life);
    }
    /* WEIR_DRAW_CASCADE .. WEIR_DRAW_WEIGHTED_PICK, in this order */
    if (strcmp(f, "draw") == 0) return word_index(v, draws, 3, &w->draw);
    if (strcmp(f, "weight_exponent") == 0) return parse_f64(v, &w->weight_exponent);
    if (strcmp(f, "floor") == 0) return parse_f64(v, &w->floor);
    return 0;
}

/* One field of the lowest-score family, `f` after "algorithm.". */
static int set_lowest_score_field(weir_lowest_score *l, const char *f, const char *v) {
    if (strcmp(f, "success_half_life_ns") == 0) return parse_u64(v, &l->success_half_life_ns);
    if (strcmp(f, "failure_half_life_ns") == 0) return parse_u64(v, &l->failure_half_life_ns);
    if (strcmp(f, "dropped_cost") == 0) return parse_f32(v, &l->dropped_cost);
    if (strcmp(f, "throttled_cost") == 0) return parse_f32(v, &l->throttled_cost);
    if (strcmp(f, "client_error_cost") == 0) return parse_f32(v, &l->client_error_cost);
    if (strcmp(f, "penalty") == 0) return parse_f32(v, &l->penalty);
    if (strcmp(f, "ratio_penalty") == 0) return parse_f32(v, &l->ratio_penalty);
    if (strcmp(f, "probe_fraction") == 0) return parse_f32(v, &l->probe_fraction);
    if (strcmp(f, "forgiveness") == 0) return parse_f32(v, &l->forgiveness);
    if (strcmp(f, "probe_after_ns") == 0) return parse_u64(v, &l->probe_after_ns);
    if (strcmp(f, "slow_ratio") == 0) return parse_f32(v, &l->slow_ratio);
    return 0;
}

static int set_config_key(weir_config *c, const char *key, const char *v) {
    weir_algorithm *a = &c->algorithm;
    if (strcmp(key, "algorithm") == 0) {
        /* WEIR_ALGORITHM_LOWEST_SCORE, WEIR_ALGORITHM_WEIGHTED, in this order */
        static const char *const families[] = {"lowest_score", "weighted"};
        return word_index(v, families, 2, &a->family);
    }
    if (strncmp(key, "algorithm.", 10) == 0) {
        const char *f = key + 10;
        return a->family == WEIR_ALGORITHM_WEIGHTED ? set_weighted_field(&a->weighted, f, v)
                                                    : set_lowest_score_field(&a->lowest_score, f, v);
    }
    if (strcmp(key, "max_waiters") == 0) return parse_u32(v, &c->max_waiters);
    if (strcmp(key, "seed") == 0) return parse_u64(v, &c->seed);
    return set_limit_key(&c->limit, key, v);
}

/* ---- answers ---------------------------------------------------------------------------------- */

static weir_status status_of(const char *answer) {
    static const struct {
        const char *name;
        weir_status status;
    } table[] = {
        {"ok", WEIR_OK},
        {"no_active_nodes", WEIR_ERR_NO_ACTIVE_NODES},
        {"all_busy", WEIR_ERR_ALL_BUSY},
        {"invalid_lease", WEIR_ERR_INVALID_LEASE},
        {"node_removed", WEIR_ERR_NODE_REMOVED},
        {"duplicate_id", WEIR_ERR_DUPLICATE_ID},
        {"unknown_id", WEIR_ERR_UNKNOWN_ID},
        {"capacity_full", WEIR_ERR_CAPACITY_FULL},
        {"not_lowest_score", WEIR_ERR_NOT_LOWEST_SCORE},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(answer, table[i].name) == 0) {
            return table[i].status;
        }
    }
    return -1;
}

static void check_answer(replay *r, const char *op, weir_status got, const char *answer) {
    weir_status want = status_of(answer);
    if (want < 0) {
        MISMATCH(r, "%s: unknown answer `%s`", op, answer);
    } else if (got != want) {
        MISMATCH(r, "%s: expected %s, got %s (%s)", op, answer, weir_status_str(got),
                 weir_last_error_message());
    }
}

/* ---- node and stats lines --------------------------------------------------------------------- */

static void check_node(replay *r, const weir_node_info *n, char **tok, int count) {
    if (count != 21) {
        MISMATCH(r, "node: %d fields, expected 20", count - 1);
        return;
    }
    uint64_t u;
    double f;
    bool b;
    const char *state = n->state == WEIR_NODE_ACTIVE ? "active" : "lame_duck";
    if (!parse_u64(tok[1], &u) || u != n->id) {
        MISMATCH(r, "node id: expected %s, got %" PRIu64, tok[1], n->id);
        return;
    }
    if (strcmp(tok[2], state) != 0) {
        MISMATCH(r, "node %" PRIu64 " state: expected %s, got %s", n->id, tok[2], state);
        return;
    }
    const double floats[5] = {n->success_rate, n->weight, n->successes, n->failures, n->penalty};
    static const char *const float_names[5] = {"success_rate", "weight", "successes", "failures",
                                               "penalty"};
    for (int i = 0; i < 5; i++) {
        if (!parse_f64(tok[3 + i], &f) || !same_bits(f, floats[i])) {
            MISMATCH(r, "node %" PRIu64 " %s: expected %s, got %.17g", n->id, float_names[i],
                     tok[3 + i], floats[i]);
            return;
        }
    }
    const uint64_t ints[6] = {n->limit,           n->in_flight,        n->window_finished,
                              n->window_succeeded, n->sticky_finished, n->sticky_succeeded};
    static const char *const int_names[6] = {"limit",           "in_flight",       "window_finished",
                                             "window_succeeded", "sticky_finished", "sticky_succeeded"};
    for (int i = 0; i < 6; i++) {
        if (!parse_u64(tok[8 + i], &u) || u != ints[i]) {
            MISMATCH(r, "node %" PRIu64 " %s: expected %s, got %" PRIu64, n->id, int_names[i],
                     tok[8 + i], ints[i]);
            return;
        }
    }
    if (!parse_bool(tok[14], &b) || b != n->has_data) {
        MISMATCH(r, "node %" PRIu64 " has_data: expected %s", n->id, tok[14]);
        return;
    }
    static const char *const outcome_names[WEIR_OUTCOME_COUNT] = {
        "success", "failure", "dropped", "ignored", "throttled", "client_error"};
    for (int i = 0; i < WEIR_OUTCOME_COUNT; i++) {
        if (!parse_u64(tok[15 + i], &u) || u != n->released[i]) {
            MISMATCH(r, "node %" PRIu64 " released %s: expected %s, got %" PRIu64, n->id,
                     outcome_names[i], tok[15 + i], n->released[i]);
            return;
        }
    }
}

#define STATS_FIELDS 18

static void check_stats(replay *r, const weir_balancer_statistics *s, char **tok, int count) {
    if (count != 1 + STATS_FIELDS) {
        MISMATCH(r, "stats: %d fields, expected %d", count - 1, STATS_FIELDS);
        return;
    }
    const uint64_t got[STATS_FIELDS] = {s->acquired,    s->rejected_all_busy, s->rejected_no_active,
                                        s->released[0], s->released[1],       s->released[2],
                                        s->released[3], s->released[4],       s->released[5],
                                        s->released_stale, s->in_flight,      s->active_nodes,
                                        s->lame_duck_nodes, s->waits,         s->waits_granted,
                                        s->waits_timed_out, s->waits_cancelled, s->waiting};
    static const char *const names[STATS_FIELDS] = {
        "acquired",           "rejected_all_busy", "rejected_no_active", "released success",
        "released failure",   "released dropped",  "released ignored",   "released throttled",
        "released client_error", "released_stale", "in_flight",          "active_nodes",
        "lame_duck_nodes",    "waits",             "waits_granted",      "waits_timed_out",
        "waits_cancelled",    "waiting"};
    for (int i = 0; i < STATS_FIELDS; i++) {
        uint64_t u;
        if (!parse_u64(tok[1 + i], &u) || u != got[i]) {
            MISMATCH(r, "stats %s: expected %s, got %" PRIu64, names[i], tok[1 + i], got[i]);
            return;
        }
    }
}

/* ---- one file ---------------------------------------------------------------------------------- */

static int split(char *line, char **tok, int max) {
    int n = 0;
    for (char *t = strtok(line, " \n"); t != NULL && n < max; t = strtok(NULL, " \n")) {
        tok[n++] = t;
    }
    return n;
}

/* Replays one file; returns its number of steps, or -1 on the first difference. */
/* If tests/vectors/metrics/<name>.prom exists for the trace at `path`, the metrics the balancer writes
 * now, with the fixed format of tests/vectors/metrics/README.md, must be that file byte for byte (the
 * Rust and Python suites compare their own surface's text with the same file). Returns 1 if compared. */
static int compare_metrics(replay *r, const char *path, const weir_balancer *b, uint64_t now) {
    const char *slash = strrchr(path, '/');
    const char *base = slash != NULL ? slash + 1 : path;
    size_t dir_len = (size_t)(base - path);
    size_t stem_len = strlen(base) - strlen(".trace");
    char prom[1024];
    if (dir_len + stem_len + 32 > sizeof prom) {
        MISMATCH(r, "path too long for the metrics file");
        return 0;
    }
    snprintf(prom, sizeof prom, "%.*smetrics/%.*s.prom", (int)dir_len, path, (int)stem_len, base);
    FILE *f = fopen(prom, "rb");
    if (f == NULL) {
        return 0;
    }
    static char want[1 << 16];
    size_t want_len = fread(want, 1, sizeof want - 1, f);
    fclose(f);
    want[want_len] = '\0';
    weir_metrics_label label = {"service", "or\"d\\ers\nEU"};
    weir_metrics_format format = {"weir", &label, 1, NULL, 0};
    static char got[1 << 16];
    size_t got_len = 0;
    weir_status st = weir_balancer_write_metrics(b, &format, got, sizeof got, &got_len, now);
    if (st != WEIR_OK) {
        MISMATCH(r, "weir_balancer_write_metrics: %s (%s)", weir_status_str(st), weir_last_error_message());
        return 0;
    }
    if (got_len != want_len || memcmp(got, want, got_len) != 0) {
        size_t i = 0;
        while (i < got_len && i < want_len && got[i] == want[i]) {
            i++;
        }
        MISMATCH(r, "%s: the metrics text differs from byte %zu: got \"%.60s\"", prom, i, got + i);
        return 0;
    }
    return 1;
}

static long replay_file(const char *path) {
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        fprintf(stderr, "%s: cannot open\n", path);
        return -1;
    }
    replay r = {path, 0, 0};
    weir_config config = weir_config_default();
    config.limit = weir_limit_fixed_default();
    size_t capacity = 0;
    weir_balancer *b = NULL;
    weir_rng rng = weir_rng_seed(0);
    weir_lease *leases = NULL;
    size_t leases_len = 0;
    long steps = 0, declared_steps = -1;
    int in_step = 0, nodes_seen = 0;
    size_t nodes_len = 0;
    uint64_t step_t = 0;
    weir_node_info nodes[MAX_NODES];
    char line[MAX_LINE];
    char *tok[24];

    while (!r.failed && fgets(line, sizeof line, in) != NULL) {
        r.line++;
        if (strchr(line, '\n') == NULL) {
            MISMATCH(&r, "line longer than %d bytes or without a newline", MAX_LINE - 1);
            break;
        }
        if (r.line == 1) {
            if (strcmp(line, "weir-trace 6\n") != 0) {
                MISMATCH(&r, "not a version 6 trace");
            }
            continue;
        }
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        int n = split(line, tok, 24);
        const char *kind = tok[0];
        if (strcmp(kind, "config") == 0) {
            for (int i = 1; i < n; i++) {
                char *eq = strchr(tok[i], '=');
                if (eq == NULL) {
                    MISMATCH(&r, "config token `%s` without '='", tok[i]);
                    break;
                }
                *eq = '\0';
                if (!set_config_key(&config, tok[i], eq + 1)) {
                    MISMATCH(&r, "config key `%s` unknown or its value `%s` invalid", tok[i], eq + 1);
                    break;
                }
            }
            continue;
        }
        if (strcmp(kind, "capacity") == 0) {
            uint64_t c;
            if (n != 2 || !parse_u64(tok[1], &c)) {
                MISMATCH(&r, "bad capacity line");
                break;
            }
            capacity = (size_t)c;
            continue;
        }
        if (strcmp(kind, "rng") == 0) {
            uint64_t seed;
            if (n != 2 || !parse_u64(tok[1], &seed)) {
                MISMATCH(&r, "bad rng line");
                break;
            }
            rng = weir_rng_seed(seed);
            continue;
        }
        if (strcmp(kind, "end") == 0) {
            uint64_t e;
            if (n != 2 || !parse_u64(tok[1], &e)) {
                MISMATCH(&r, "bad end line");
                break;
            }
            declared_steps = (long)e;
            continue;
        }
        if (strcmp(kind, "node") == 0 || strcmp(kind, "stats") == 0) {
            if (!in_step) {
                MISMATCH(&r, "%s line outside a step", kind);
                break;
            }
            if (nodes_seen == 0 && strcmp(kind, "node") == 0) {
                /* first snapshot line of the step: nothing to do, the snapshot was taken after the op */
            }
            if (strcmp(kind, "node") == 0) {
                if ((size_t)nodes_seen >= nodes_len) {
                    MISMATCH(&r, "node line %d but the balancer has %zu members", nodes_seen + 1,
                             nodes_len);
                    break;
                }
                check_node(&r, &nodes[nodes_seen], tok, n);
                nodes_seen++;
            } else {
                if ((size_t)nodes_seen != nodes_len) {
                    MISMATCH(&r, "%d node lines but the balancer has %zu members", nodes_seen,
                             nodes_len);
                    break;
                }
                weir_balancer_statistics s;
                CHECK_OK(weir_balancer_stats(b, &s));
                check_stats(&r, &s, tok, n);
                in_step = 0;
                steps++;
            }
            continue;
        }

        /* An operation line: build the balancer before the first one. */
        if (in_step) {
            MISMATCH(&r, "operation before the previous step's stats line");
            break;
        }
        if (b == NULL) {
            weir_status st = weir_balancer_new(&config, capacity, &b);
            if (st != WEIR_OK) {
                MISMATCH(&r, "weir_balancer_new: %s (%s)", weir_status_str(st),
                         weir_last_error_message());
                break;
            }
        }
        uint64_t t;
        if (n < 3 || !parse_u64(tok[1], &t)) {
            MISMATCH(&r, "bad operation line");
            break;
        }
        step_t = t;
        int excluding = strcmp(kind, "acquire_excluding") == 0;
        int loaded = strcmp(kind, "release_loaded") == 0;
        if (strcmp(kind, "acquire") == 0 || excluding || strcmp(kind, "release") == 0 || loaded) {
            uint64_t k;
            if (tok[2][0] != 'L' || !parse_u64(tok[2] + 1, &k) || k == 0 ||
                (excluding ? n != 5 : loaded ? n != 7 : n != 4 && n != 6)) {
                MISMATCH(&r, "bad lease name or field count");
                break;
            }
            if (k > leases_len) {
                size_t grown = leases_len == 0 ? 1024 : leases_len * 2;
                while (grown < k) {
                    grown *= 2;
                }
                weir_lease *more = realloc(leases, grown * sizeof *leases);
                REQUIRE(more != NULL);
                memset(more + leases_len, 0, (grown - leases_len) * sizeof *leases);
                leases = more;
                leases_len = grown;
            }
            weir_lease *lease = &leases[k - 1];
            if (strcmp(kind, "acquire") == 0 || excluding) {
                weir_status st;
                const char *answer = tok[3];
                if (excluding) {
                    /* `-`, or up to 8 ids separated by commas. */
                    uint64_t ids[8];
                    size_t count = 0;
                    int ok = 1;
                    if (strcmp(tok[3], "-") != 0) {
                        const char *p = tok[3];
                        for (;;) {
                            char id[24];
                            size_t len = strcspn(p, ",");
                            if (len == 0 || len >= sizeof id || count == 8) {
                                ok = 0;
                                break;
                            }
                            memcpy(id, p, len);
                            id[len] = '\0';
                            if (!parse_u64(id, &ids[count++])) {
                                ok = 0;
                                break;
                            }
                            if (p[len] == '\0') {
                                break;
                            }
                            p += len + 1;
                        }
                    }
                    if (!ok) {
                        MISMATCH(&r, "bad excluded ids %s", tok[3]);
                        break;
                    }
                    st = weir_balancer_acquire_excluding(b, t, count ? ids : NULL, count, &rng, lease);
                    answer = tok[4];
                } else {
                    st = weir_balancer_acquire_with_rng(b, t, &rng, lease);
                }
                uint64_t node;
                if (answer[0] >= '0' && answer[0] <= '9') {
                    if (!parse_u64(answer, &node)) {
                        MISMATCH(&r, "bad node id");
                    } else if (st != WEIR_OK) {
                        MISMATCH(&r, "%s: expected node %s, got %s", kind, answer, weir_status_str(st));
                    } else if (lease->node_id != node) {
                        MISMATCH(&r, "%s: expected node %s, got %" PRIu64, kind, answer, lease->node_id);
                    }
                } else {
                    check_answer(&r, kind, st, answer);
                }
            } else if (loaded) {
                /* The load in thousandths, at most 1000000; as a utilization, load / 1000.0 rounds back
                 * to the same thousandths (the core rounds to the nearest). */
                uint32_t code, load;
                if (!parse_u32(tok[3], &code) || !parse_u32(tok[5], &load) || load > 1000000) {
                    MISMATCH(&r, "bad release_loaded line");
                    break;
                }
                weir_status st = weir_balancer_release_loaded(b, lease, code, t, load / 1000.0);
                check_answer(&r, "release_loaded", st, tok[6]);
                loaded_releases++;
            } else {
                uint32_t code;
                if (n != 6 || !parse_u32(tok[3], &code)) {
                    MISMATCH(&r, "bad release line");
                    break;
                }
                weir_status st = weir_balancer_release(b, lease, code, t);
                check_answer(&r, "release", st, tok[5]);
            }
        } else if (strcmp(kind, "add") == 0 || strcmp(kind, "remove") == 0) {
            uint64_t id;
            if (n != 4 || !parse_u64(tok[2], &id)) {
                MISMATCH(&r, "bad %s line", kind);
                break;
            }
            weir_status st =
                strcmp(kind, "add") == 0 ? weir_balancer_add(b, id) : weir_balancer_remove(b, id);
            check_answer(&r, kind, st, tok[3]);
        } else if (strcmp(kind, "lame_duck") == 0) {
            uint64_t id;
            if (n != 5 || !parse_u64(tok[2], &id) ||
                (strcmp(tok[3], "on") != 0 && strcmp(tok[3], "off") != 0)) {
                MISMATCH(&r, "bad lame_duck line");
                break;
            }
            check_answer(&r, "lame_duck", weir_balancer_set_lame_duck(b, id, strcmp(tok[3], "on") == 0),
                         tok[4]);
        } else if (strcmp(kind, "due_check") == 0) {
            /* A node id, or `none`: no node due is no error (WEIR_OK with *due false). */
            uint64_t quiet, want = 0, got = 0;
            bool due = false;
            const int want_due = tok[3][0] >= '0' && tok[3][0] <= '9';
            if (n != 4 || !parse_u64(tok[2], &quiet) ||
                (want_due ? !parse_u64(tok[3], &want) : strcmp(tok[3], "none") != 0)) {
                MISMATCH(&r, "bad due_check line");
                break;
            }
            weir_status st = weir_balancer_due_check(b, t, quiet, &due, &got);
            if (st != WEIR_OK) {
                MISMATCH(&r, "due_check: %s (%s)", weir_status_str(st), weir_last_error_message());
            } else if (!want_due && due) {
                MISMATCH(&r, "due_check: expected none, got node %" PRIu64, got);
            } else if (want_due && !due) {
                MISMATCH(&r, "due_check: expected node %s, got none", tok[3]);
            } else if (want_due && got != want) {
                MISMATCH(&r, "due_check: expected node %s, got %" PRIu64, tok[3], got);
            }
            checks_named += want_due && !r.failed;
        } else if (strcmp(kind, "report_check") == 0) {
            uint64_t id;
            bool healthy;
            if (n != 5 || !parse_u64(tok[2], &id) || !parse_bool(tok[3], &healthy)) {
                MISMATCH(&r, "bad report_check line");
                break;
            }
            weir_status st = weir_balancer_report_check(b, id, healthy, t);
            check_answer(&r, "report_check", st, tok[4]);
            checks_not_lowest_score += st == WEIR_ERR_NOT_LOWEST_SCORE && !r.failed;
        } else {
            MISMATCH(&r, "unknown line kind `%s`", kind);
            break;
        }
        /* The snapshot after the operation, at the step's time. */
        weir_status st = weir_balancer_nodes(b, step_t, nodes, MAX_NODES, &nodes_len);
        if (st != WEIR_OK) {
            MISMATCH(&r, "weir_balancer_nodes: %s", weir_status_str(st));
            break;
        }
        in_step = 1;
        nodes_seen = 0;
    }
    if (!r.failed && declared_steps != steps) {
        MISMATCH(&r, "the file declares %ld steps, %ld replayed (truncated?)", declared_steps, steps);
    }
    fclose(in);
    free(leases);
    if (!r.failed && b != NULL && compare_metrics(&r, path, b, step_t)) {
        printf("  %s: the metrics text matches\n", path);
        metrics_compared++;
    }
    weir_balancer_free(b);
    CHECK(!r.failed);
    timed_probe_files += !r.failed && steps > 0 &&
                         config.algorithm.family == WEIR_ALGORITHM_LOWEST_SCORE &&
                         config.algorithm.lowest_score.probe_after_ns != 0;
    return r.failed ? -1 : steps;
}

/* The knee limit's keys, at the top level and wrapped (no file wraps it yet: this is the parse a
 * windowed-knee file would need), set the fields they name and nothing the other algorithms read. */
static void test_knee_keys(void) {
    static const char *const top[][2] = {
        {"limit", "knee"},           {"limit.initial_limit", "5"}, {"limit.min_limit", "2"},
        {"limit.max_limit", "40"},   {"limit.backoff_ratio", "0.6"}, {"limit.knee", "3.5"},
        {"limit.hold", "1.5"},
    };
    static const char *const wrapped[][2] = {
        {"limit", "windowed"},             {"limit.inner", "knee"},
        {"limit.inner.initial_limit", "5"}, {"limit.inner.min_limit", "2"},
        {"limit.inner.max_limit", "40"},    {"limit.inner.backoff_ratio", "0.6"},
        {"limit.inner.knee", "3.5"},        {"limit.inner.hold", "1.5"},
        {"limit.min_samples", "3"},
    };
    const weir_config base = weir_config_default();
    for (int round = 0; round < 2; round++) {
        weir_config c = base;
        size_t n = round == 0 ? sizeof top / sizeof top[0] : sizeof wrapped / sizeof wrapped[0];
        for (size_t i = 0; i < n; i++) {
            const char *const *kv = round == 0 ? top[i] : wrapped[i];
            int ok = set_config_key(&c, kv[0], kv[1]);
            CHECK(ok);
            if (!ok) {
                fprintf(stderr, "knee keys: `%s=%s` not parsed\n", kv[0], kv[1]);
            }
        }
        CHECK(c.limit.algorithm == (round == 0 ? WEIR_LIMIT_KNEE : WEIR_LIMIT_WINDOWED));
        CHECK(round == 0 || (c.limit.windowed.inner == WEIR_LIMIT_KNEE &&
                             c.limit.windowed.min_samples == 3));
        CHECK(c.limit.knee.initial_limit == 5 && c.limit.knee.min_limit == 2);
        CHECK(c.limit.knee.max_limit == 40 && c.limit.knee.backoff_ratio == 0.6);
        CHECK(c.limit.knee.knee == 3.5 && c.limit.knee.hold == 1.5);
        CHECK(c.limit.ciad.initial_limit == base.limit.ciad.initial_limit &&
              c.limit.ciad.min_limit == base.limit.ciad.min_limit &&
              c.limit.ciad.max_limit == base.limit.ciad.max_limit &&
              c.limit.ciad.backoff_ratio == base.limit.ciad.backoff_ratio);
        CHECK_OK(weir_config_validate(&c));
        /* Another algorithm's field is not the knee's. */
        CHECK(!set_config_key(&c, round == 0 ? "limit.fast_start" : "limit.inner.fast_start",
                              "true"));
    }
}

/* Whether two lowest-score families have the same half-lives, costs and penalties. */
static int same_penalties(const weir_lowest_score *l, const weir_lowest_score *b) {
    return l->success_half_life_ns == b->success_half_life_ns &&
           l->failure_half_life_ns == b->failure_half_life_ns &&
           l->dropped_cost == b->dropped_cost && l->throttled_cost == b->throttled_cost &&
           l->client_error_cost == b->client_error_cost && l->penalty == b->penalty &&
           l->ratio_penalty == b->ratio_penalty;
}

/* Probation's keys set the lowest-score fields they name and nothing else; the weighted family has no
 * such keys, and the format no spelling for NaN or a negative period. A period the core refuses parses,
 * and is refused by validation. */
static void test_probation_keys(void) {
    const weir_config base = weir_config_default();
    weir_config c = base;
    CHECK(set_config_key(&c, "algorithm", "lowest_score"));
    CHECK(set_config_key(&c, "algorithm.probe_fraction", "0.2"));
    CHECK(set_config_key(&c, "algorithm.forgiveness", "0.5"));
    CHECK(c.algorithm.lowest_score.probe_after_ns == 0);
    CHECK(set_config_key(&c, "algorithm.probe_after_ns", "5000000000"));
    CHECK(c.algorithm.lowest_score.probe_fraction == 0.2f);
    CHECK(c.algorithm.lowest_score.forgiveness == 0.5f);
    CHECK(c.algorithm.lowest_score.probe_after_ns == 5 * 1000000000ull);
    CHECK(same_penalties(&c.algorithm.lowest_score, &base.algorithm.lowest_score));
    CHECK(c.algorithm.lowest_score.slow_ratio == 0.0f);
    CHECK_OK(weir_config_validate(&c));
    CHECK(set_config_key(&c, "algorithm.probe_after_ns", "18446744073709551615"));
    CHECK(c.algorithm.lowest_score.probe_after_ns == UINT64_MAX);
    CHECK_STATUS(weir_config_validate(&c), WEIR_ERR_INVALID_CONFIG);
    CHECK(set_config_key(&c, "algorithm.probe_after_ns", "0"));
    CHECK_OK(weir_config_validate(&c));
    CHECK(!set_config_key(&c, "algorithm.probe_fraction", "nan"));
    CHECK(!set_config_key(&c, "algorithm.forgiveness", ""));
    CHECK(!set_config_key(&c, "algorithm.probe_after_ns", "-1"));
    CHECK(!set_config_key(&c, "algorithm.probe_after_ns", "18446744073709551616"));
    CHECK(!set_config_key(&c, "algorithm.probe_after_ns", "1.5"));
    CHECK(c.algorithm.lowest_score.probe_after_ns == 0);
    CHECK(set_config_key(&c, "algorithm", "weighted"));
    CHECK(!set_config_key(&c, "algorithm.probe_fraction", "0.2"));
    CHECK(!set_config_key(&c, "algorithm.forgiveness", "0.5"));
    CHECK(!set_config_key(&c, "algorithm.probe_after_ns", "5000000000"));
}

/* The slowness term's key sets the lowest-score field it names and nothing else; the weighted family
 * has no such key. A value the core refuses parses, and is refused by validation. */
static void test_slow_ratio_key(void) {
    const weir_config base = weir_config_default();
    weir_config c = base;
    CHECK(set_config_key(&c, "algorithm.slow_ratio", "2.0"));
    CHECK(c.algorithm.lowest_score.slow_ratio == 2.0f);
    CHECK(same_penalties(&c.algorithm.lowest_score, &base.algorithm.lowest_score));
    CHECK(c.algorithm.lowest_score.probe_fraction == 0.0f &&
          c.algorithm.lowest_score.forgiveness == 0.0f &&
          c.algorithm.lowest_score.probe_after_ns == 0);
    CHECK_OK(weir_config_validate(&c));
    CHECK(set_config_key(&c, "algorithm.slow_ratio", "0.5"));
    CHECK_STATUS(weir_config_validate(&c), WEIR_ERR_INVALID_CONFIG);
    CHECK(!set_config_key(&c, "algorithm.slow_ratio", "nan"));
    CHECK(set_config_key(&c, "algorithm", "weighted"));
    CHECK(!set_config_key(&c, "algorithm.slow_ratio", "2.0"));
}

static int is_trace(const char *name) {
    size_t n = strlen(name);
    return n > 6 && strcmp(name + n - 6, ".trace") == 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(void) {
    test_knee_keys();
    test_probation_keys();
    test_slow_ratio_key();
    const char *dir = getenv("WEIR_VECTORS_DIR");
    if (dir == NULL) {
        dir = "tests/vectors";
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "cannot open the trace directory %s (set WEIR_VECTORS_DIR)\n", dir);
        return 1;
    }
    char *names[256];
    size_t count = 0;
    for (struct dirent *e = readdir(d); e != NULL && count < 256; e = readdir(d)) {
        if (is_trace(e->d_name)) {
            size_t len = strlen(dir) + strlen(e->d_name) + 2;
            names[count] = malloc(len);
            REQUIRE(names[count] != NULL);
            snprintf(names[count], len, "%s/%s", dir, e->d_name);
            count++;
        }
    }
    closedir(d);
    qsort(names, count, sizeof names[0], by_name);
    REQUIRE(count >= 16); /* the files tests/vectors/README.md lists */
    long total = 0;
    /* The files that run probation and the slowness term, each replayed bit for bit. */
    const char *const opt_in[] = {"decay-lowest-score-probation.trace", "decay-lowest-score-slow.trace"};
    int opt_in_replayed[2] = {0, 0};
    for (size_t i = 0; i < count; i++) {
        long steps = replay_file(names[i]);
        if (steps >= 0) {
            printf("  %s: %ld steps match\n", names[i], steps);
            total += steps;
            const char *base = strrchr(names[i], '/');
            for (size_t k = 0; k < 2; k++) {
                opt_in_replayed[k] |= steps > 0 && base != NULL && strcmp(base + 1, opt_in[k]) == 0;
            }
        }
        free(names[i]);
    }
    CHECK(opt_in_replayed[0] && opt_in_replayed[1]);
    printf("%zu trace files, %ld steps replayed, %ld of them loaded releases\n", count, total,
           loaded_releases);
    CHECK(loaded_releases > 0); /* the knee trace's */
    CHECK(timed_probe_files > 0); /* the probation trace */
    printf("%ld due_check lines named a node, %ld report_check lines answered not_lowest_score\n",
           checks_named, checks_not_lowest_score);
    CHECK(checks_named > 0);            /* the checks trace, edges-decay */
    CHECK(checks_not_lowest_score > 0); /* edges-buckets, edges-ewma */
    CHECK(metrics_compared == 2); /* the .prom files of tests/vectors/metrics */
    return check_summary("test_vectors");
}

/* The metrics writers through the C ABI: the text, the size query, a buffer too small (nothing written,
 * the length reported), NULL arguments, refused formats, node names and escaping. The cross-surface
 * comparison on a replayed trace is in test_vectors.c. */
#include <string.h>

#include "check.h"

static int has_line(const char *text, const char *line) {
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++) {
        if ((p == text || p[-1] == '\n') && p[n] == '\n') {
            return 1;
        }
    }
    return 0;
}

static weir_balancer *make_balancer(void) {
    weir_config config = weir_config_default();
    weir_balancer *b = NULL;
    REQUIRE(weir_balancer_new(&config, 4, &b) == WEIR_OK);
    CHECK_OK(weir_balancer_add(b, 7));
    CHECK_OK(weir_balancer_add(b, 8));
    CHECK_OK(weir_balancer_set_lame_duck(b, 8, true));
    weir_lease lease;
    CHECK_OK(weir_balancer_acquire(b, 100, &lease));
    CHECK_OK(weir_balancer_release(b, &lease, WEIR_OUTCOME_FAILURE, 200));
    return b;
}

static void test_defaults_and_size_query(void) {
    weir_balancer *b = make_balancer();
    size_t need = 0;
    CHECK_OK(weir_balancer_write_metrics(b, NULL, NULL, 0, &need, 200));
    REQUIRE(need > 0);
    char *text = malloc(need + 1);
    REQUIRE(text != NULL);
    size_t len = 0;
    CHECK_OK(weir_balancer_write_metrics(b, NULL, text, need + 1, &len, 200));
    CHECK(len == need);
    CHECK(strlen(text) == len);
    CHECK(has_line(text, "# TYPE weir_acquired_total counter"));
    CHECK(has_line(text, "weir_acquired_total 1"));
    CHECK(has_line(text, "weir_released_total{outcome=\"failure\"} 1"));
    CHECK(has_line(text, "weir_nodes{state=\"lame_duck\"} 1"));
    CHECK(has_line(text, "weir_node_state{node=\"8\",state=\"lame_duck\"} 1"));
    CHECK(has_line(text, "weir_node_failures{node=\"7\"} 1.0"));
    CHECK(has_line(text, "weir_node_penalty{node=\"7\"} 26.0"));
    free(text);
    weir_balancer_free(b);
}

static void test_too_small_writes_nothing_and_reports_the_length(void) {
    weir_balancer *b = make_balancer();
    size_t need = 0;
    CHECK_OK(weir_balancer_write_metrics(b, NULL, NULL, 0, &need, 200));
    char *buf = malloc(need + 1);
    REQUIRE(buf != NULL);
    /* Exactly the text without room for its NUL: too small. */
    memset(buf, 'x', need + 1);
    size_t len = 0;
    CHECK_STATUS(weir_balancer_write_metrics(b, NULL, buf, need, &len, 200), WEIR_ERR_BUFFER_TOO_SMALL);
    CHECK(len == need);
    CHECK(buf[0] == 'x' && buf[need - 1] == 'x');
    CHECK(strstr(weir_last_error_message(), "needs") != NULL);
    len = 0;
    CHECK_STATUS(weir_balancer_write_metrics(b, NULL, buf, 1, &len, 200), WEIR_ERR_BUFFER_TOO_SMALL);
    CHECK(len == need && buf[0] == 'x');
    CHECK_OK(weir_balancer_write_metrics(b, NULL, buf, need + 1, &len, 200));
    CHECK(len == need && buf[need] == '\0');
    free(buf);
    weir_balancer_free(b);
}

static void test_null_arguments(void) {
    weir_balancer *b = make_balancer();
    char buf[64];
    size_t len = 0;
    CHECK_STATUS(weir_balancer_write_metrics(NULL, NULL, buf, sizeof buf, &len, 0), WEIR_ERR_NULL);
    CHECK_STATUS(weir_balancer_write_metrics(b, NULL, buf, sizeof buf, NULL, 0), WEIR_ERR_NULL);
    CHECK_STATUS(weir_balancer_write_metrics(b, NULL, NULL, 10, &len, 0), WEIR_ERR_NULL);
    weir_metrics_format f;
    memset(&f, 0, sizeof f);
    f.labels_len = 1; /* labels NULL */
    CHECK_STATUS(weir_balancer_write_metrics(b, &f, NULL, 0, &len, 0), WEIR_ERR_NULL);
    CHECK(strstr(weir_last_error_message(), "format->labels") != NULL);
    weir_metrics_label label = {"service", NULL};
    f.labels = &label;
    CHECK_STATUS(weir_balancer_write_metrics(b, &f, NULL, 0, &len, 0), WEIR_ERR_NULL);
    CHECK(strstr(weir_last_error_message(), "format->labels[0].value") != NULL);
    weir_metrics_node_name name = {7, NULL};
    f.labels_len = 0;
    f.node_names = &name;
    f.node_names_len = 1;
    CHECK_STATUS(weir_balancer_write_metrics(b, &f, NULL, 0, &len, 0), WEIR_ERR_NULL);
    CHECK_STATUS(weir_shedder_write_metrics(NULL, NULL, buf, sizeof buf, &len, 0, 0), WEIR_ERR_NULL);
    CHECK_STATUS(weir_throttle_write_metrics(NULL, NULL, buf, sizeof buf, &len, 0), WEIR_ERR_NULL);
    CHECK_STATUS(weir_backoff_write_metrics(NULL, NULL, buf, sizeof buf, &len, 0), WEIR_ERR_NULL);
    weir_balancer_free(b);
}

static void test_refused_formats(void) {
    weir_balancer *b = make_balancer();
    char buf[8] = "xxxxxxx";
    size_t len = 99;
    weir_metrics_format f;
    memset(&f, 0, sizeof f);
    f.prefix = "9lives";
    CHECK_STATUS(weir_balancer_write_metrics(b, &f, buf, sizeof buf, &len, 0), WEIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(weir_last_error_message(), "prefix") != NULL);
    f.prefix = "bad\xff";
    CHECK_STATUS(weir_balancer_write_metrics(b, &f, buf, sizeof buf, &len, 0), WEIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(weir_last_error_message(), "UTF-8") != NULL);
    f.prefix = "ok";
    weir_metrics_label labels[2] = {{"zone", "a"}, {"node", "b"}};
    f.labels = labels;
    f.labels_len = 2;
    CHECK_STATUS(weir_balancer_write_metrics(b, &f, buf, sizeof buf, &len, 0), WEIR_ERR_INVALID_ARGUMENT);
    labels[1].name = "__x";
    CHECK_STATUS(weir_balancer_write_metrics(b, &f, buf, sizeof buf, &len, 0), WEIR_ERR_INVALID_ARGUMENT);
    labels[1].name = "zone";
    CHECK_STATUS(weir_balancer_write_metrics(b, &f, buf, sizeof buf, &len, 0), WEIR_ERR_INVALID_ARGUMENT);
    CHECK(strcmp(buf, "xxxxxxx") == 0 && len == 99);
    weir_balancer_free(b);
}

static void test_names_prefix_labels_and_escaping(void) {
    weir_balancer *b = make_balancer();
    weir_metrics_label labels[1] = {{"service", "or\"d\\ers\n"}};
    weir_metrics_node_name names[2] = {{7, "db-7 \"primary\""}, {7, "ignored: the first one names it"}};
    weir_metrics_format f = {"", labels, 1, names, 2};
    char buf[16384];
    size_t len = 0;
    CHECK_OK(weir_balancer_write_metrics(b, &f, buf, sizeof buf, &len, 200));
    CHECK(has_line(buf, "node_in_flight{service=\"or\\\"d\\\\ers\\n\",node=\"db-7 \\\"primary\\\"\"} 0"));
    CHECK(has_line(buf, "node_limit{service=\"or\\\"d\\\\ers\\n\",node=\"8\"} 20"));
    CHECK(has_line(buf, "acquired_total{service=\"or\\\"d\\\\ers\\n\"} 1"));
    weir_balancer_free(b);
}

static void test_overload_tools(void) {
    char buf[8192];
    size_t len = 0;
    weir_shedder_config sc = weir_shedder_config_default();
    weir_shedder *s = NULL;
    REQUIRE(weir_shedder_new(&sc, &s) == WEIR_OK);
    weir_promise p;
    CHECK_OK(weir_shedder_allow(s, 250, 0, &p));
    CHECK_OK(weir_shedder_write_metrics(s, NULL, buf, sizeof buf, &len, 250, 0));
    CHECK(has_line(buf, "weir_shedder_allowed_total 1"));
    CHECK(has_line(buf, "weir_shedder_in_flight 1"));
    CHECK(has_line(buf, "weir_shedder_cpu_usage_ratio 0.25"));
    weir_shedder_free(s);

    weir_throttle_config tc = weir_throttle_config_default();
    weir_throttle *t = NULL;
    REQUIRE(weir_throttle_new(&tc, &t) == WEIR_OK);
    bool allowed = false;
    CHECK_OK(weir_throttle_allow(t, WEIR_CRITICALITY_SHEDDABLE, 0, &allowed));
    CHECK_OK(weir_throttle_write_metrics(t, NULL, buf, sizeof buf, &len, 0));
    CHECK(has_line(buf, "weir_throttle_requests_total{criticality=\"SHEDDABLE\"} 1"));
    CHECK(has_line(buf, "weir_throttle_rejection_probability{criticality=\"SHEDDABLE\"} 0.5"));
    CHECK_STATUS(weir_throttle_write_metrics(t, NULL, buf, 4, &len, 0), WEIR_ERR_BUFFER_TOO_SMALL);
    weir_throttle_free(t);

    weir_backoff_config bc = weir_backoff_config_default();
    weir_backoff *k = NULL;
    REQUIRE(weir_backoff_new(&bc, &k) == WEIR_OK);
    CHECK_OK(weir_backoff_write_metrics(k, NULL, buf, sizeof buf, &len, 0));
    CHECK(has_line(buf, "weir_backoff_delay_seconds 0.0"));
    CHECK(has_line(buf, "weir_backoff_invocations_total 0"));
    weir_backoff_free(k);
}

int main(void) {
    test_defaults_and_size_query();
    test_too_small_writes_nothing_and_reports_the_length();
    test_null_arguments();
    test_refused_formats();
    test_names_prefix_labels_and_escaping();
    test_overload_tools();
    return check_summary("test_metrics");
}

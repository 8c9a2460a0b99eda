/*
 * client.c: a small but real C client of libweir. It balances requests over TCP servers with the
 * default configuration and prints, per server, its share of the calls, its success rate and what
 * weir thinks of it (penalty, weight, limit).
 *
 *   client [-n REQUESTS] [-c THREADS] [-t TIMEOUT_MS] HOST:PORT...
 *   client -V
 *
 * Each HOST:PORT is one node, its id the argument's index (0, 1, ...). THREADS workers share one
 * balancer and take requests from one counter. For each request a worker
 *   1. asks weir for a node (weir_balancer_acquire; when every node is at its limit,
 *      weir_balancer_acquire_wait until the request's deadline; a request that gets no node by then is
 *      shed: no call is made),
 *   2. connects to that node, sends "PING\n" and reads one reply line, all before the deadline
 *      (TIMEOUT_MS after the request started),
 *   3. releases the lease with what happened:
 *        "OK" reply                                          WEIR_OUTCOME_SUCCESS
 *        refused, reset, closed early, any other reply       WEIR_OUTCOME_FAILURE
 *        deadline passed while connecting or waiting         WEIR_OUTCOME_DROPPED
 *        no socket for us (our own trouble, not the node's)  WEIR_OUTCOME_IGNORED
 *
 * "Warm-up": the default configuration (the lowest-score family) penalises a node from its first
 * failure on: its penalty is 10 in-flight requests' worth per failure plus 16 per doubling of failures
 * over successes (26 after one failure on a node without successes), fading with a 30 s half-life. So a node's warm-up ends when its first failure has been
 * released, and its "share after warm-up" is its part of the calls acquired after that moment (a node
 * that never failed has none: "-"). The share over the last 80 % of the calls is printed as well.
 *
 * No call is lost: every request started ends released (with one of the outcomes above) or shed; the
 * client checks this, and weir_balancer_stats (in flight 0, granted = released), and exits 1 if anything
 * is off or any weir call fails unexpectedly. The last lines, "SUMMARY ...", are for machines (see the
 * test, xtask/src/example.rs).
 *
 * C11, POSIX sockets and threads, weir.h; nothing else.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "weir.h"

#define MAX_NODES 64
#define MAX_THREADS 256
#define NO_FAILURE UINT64_MAX

/* One server: where it is and what happened to the calls sent to it. */
struct node {
    char address[256];
    struct sockaddr_storage addr;
    socklen_t addr_len;
    /* Releases by outcome (WEIR_OUTCOME_*). */
    atomic_uint_least64_t outcomes[WEIR_OUTCOME_COUNT];
    /* The number of leases granted when its first failure had been released; NO_FAILURE before. */
    atomic_uint_least64_t first_failure_at;
};

/* One run: the balancer and the counters every worker shares. */
struct run {
    weir_balancer *balancer;
    struct node nodes[MAX_NODES];
    size_t node_count;
    uint64_t requests;
    uint64_t timeout_ns;
    atomic_uint_least64_t next_request; /* requests handed out to workers (may pass `requests`) */
    atomic_uint_least64_t started;      /* requests a worker began */
    atomic_uint_least64_t acquired;     /* leases granted: the n-th lease is call n */
    atomic_uint_least64_t released;     /* leases released with WEIR_OK */
    atomic_uint_least64_t shed;         /* requests that got no lease before their deadline */
    atomic_bool broken;                 /* a weir call failed unexpectedly: stop */
    uint32_t *node_of_call;             /* node of call n (each entry written by one worker) */
};

static bool weir_ok(weir_status status, const char *what) {
    if (status == WEIR_OK) {
        return true;
    }
    fprintf(stderr, "client: %s: %s: %s\n", what, weir_status_str(status),
            weir_last_error_message());
    return false;
}

static int remaining_ms(uint64_t deadline) {
    uint64_t now = weir_now_ns();
    if (now >= deadline) {
        return 0;
    }
    uint64_t ms = (deadline - now + 999999) / 1000000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Waits until `fd` is ready for `events` or the deadline passes: 1 ready (or in error: the next call on
 * it says which), 0 timed out, -1 poll failed. */
static int wait_fd(int fd, short events, uint64_t deadline) {
    for (;;) {
        int ms = remaining_ms(deadline);
        if (ms == 0) {
            return 0;
        }
        struct pollfd p = {.fd = fd, .events = events, .revents = 0};
        int n = poll(&p, 1, ms);
        if (n > 0) {
            return 1;
        }
        if (n < 0 && errno != EINTR) {
            return -1;
        }
    }
}

/* One request on a fresh non-blocking connection `fd`. */
static weir_outcome exchange(int fd, const struct node *node, uint64_t deadline) {
    int flags = fcntl(fd, F_GETFL, 0);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        return WEIR_OUTCOME_IGNORED;
    }
    if (connect(fd, (const struct sockaddr *)&node->addr, node->addr_len) != 0) {
        if (errno != EINPROGRESS && errno != EINTR) {
            return WEIR_OUTCOME_FAILURE; /* refused at once, unreachable */
        }
        int ready = wait_fd(fd, POLLOUT, deadline);
        if (ready == 0) {
            return WEIR_OUTCOME_DROPPED;
        }
        int err = 0;
        socklen_t len = sizeof err;
        if (ready < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            return WEIR_OUTCOME_FAILURE; /* refused, reset */
        }
    }
    static const char request[] = "PING\n";
    size_t sent = 0;
    while (sent < sizeof request - 1) {
        ssize_t k = send(fd, request + sent, sizeof request - 1 - sent, 0);
        if (k > 0) {
            sent += (size_t)k;
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int ready = wait_fd(fd, POLLOUT, deadline);
            if (ready <= 0) {
                return ready == 0 ? WEIR_OUTCOME_DROPPED : WEIR_OUTCOME_FAILURE;
            }
        } else {
            return WEIR_OUTCOME_FAILURE; /* reset, broken pipe */
        }
    }
    char reply[64];
    size_t got = 0;
    for (;;) {
        ssize_t k = recv(fd, reply + got, sizeof reply - 1 - got, 0);
        if (k > 0) {
            got += (size_t)k;
            reply[got] = '\0';
            char *end = strchr(reply, '\n');
            if (end != NULL) {
                *end = '\0';
                return strcmp(reply, "OK") == 0 ? WEIR_OUTCOME_SUCCESS : WEIR_OUTCOME_FAILURE;
            }
            if (got == sizeof reply - 1) {
                return WEIR_OUTCOME_FAILURE; /* not a reply line */
            }
        } else if (k == 0) {
            return WEIR_OUTCOME_FAILURE; /* closed without replying */
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int ready = wait_fd(fd, POLLIN, deadline);
            if (ready <= 0) {
                return ready == 0 ? WEIR_OUTCOME_DROPPED : WEIR_OUTCOME_FAILURE;
            }
        } else {
            return WEIR_OUTCOME_FAILURE; /* reset */
        }
    }
}

static weir_outcome call_node(const struct node *node, uint64_t deadline) {
    int fd = socket(node->addr.ss_family, SOCK_STREAM, 0);
    if (fd < 0) {
        return WEIR_OUTCOME_IGNORED; /* out of descriptors: our trouble, not the node's */
    }
    weir_outcome outcome = exchange(fd, node, deadline);
    close(fd);
    return outcome;
}

/* A lease for one request: fail fast first; when every node is at its limit, wait in weir's queue
 * until the request's deadline. */
static weir_status acquire(const struct run *r, uint64_t deadline, weir_lease *lease) {
    weir_status status = weir_balancer_acquire(r->balancer, weir_now_ns(), lease);
    if (status == WEIR_ERR_ALL_BUSY) {
        status = weir_balancer_acquire_wait(r->balancer, deadline, lease);
    }
    return status;
}

static void *worker(void *arg) {
    struct run *r = arg;
    while (!atomic_load(&r->broken)) {
        if (atomic_fetch_add(&r->next_request, 1) >= r->requests) {
            break;
        }
        atomic_fetch_add(&r->started, 1);
        uint64_t deadline = weir_now_ns() + r->timeout_ns;
        weir_lease lease;
        weir_status status = acquire(r, deadline, &lease);
        if (status == WEIR_ERR_TIMEOUT || status == WEIR_ERR_QUEUE_FULL) {
            atomic_fetch_add(&r->shed, 1);
            continue;
        }
        if (!weir_ok(status, "weir_balancer_acquire")) {
            atomic_store(&r->broken, true);
            break;
        }
        if (lease.node_id >= r->node_count) {
            fprintf(stderr, "client: weir_balancer_acquire chose node %llu, not one of ours\n",
                    (unsigned long long)lease.node_id);
            atomic_store(&r->broken, true);
            break;
        }
        uint64_t call = atomic_fetch_add(&r->acquired, 1);
        r->node_of_call[call] = (uint32_t)lease.node_id;
        struct node *node = &r->nodes[lease.node_id];
        weir_outcome outcome = call_node(node, deadline);
        weir_status released = weir_balancer_release(r->balancer, &lease, outcome, weir_now_ns());
        if (!weir_ok(released, "weir_balancer_release")) {
            atomic_store(&r->broken, true);
            break;
        }
        atomic_fetch_add(&r->released, 1);
        atomic_fetch_add(&node->outcomes[outcome], 1);
        if (outcome == WEIR_OUTCOME_FAILURE) {
            uint_least64_t none = NO_FAILURE;
            atomic_compare_exchange_strong(&node->first_failure_at, &none,
                                           atomic_load(&r->acquired));
        }
    }
    return NULL;
}

static bool parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v < min || v > max) {
        fprintf(stderr, "client: not a number in [%llu, %llu]: %s\n", (unsigned long long)min,
                (unsigned long long)max, text);
        return false;
    }
    *out = v;
    return true;
}

/* "host:port" (or "[v6]:port") to a socket address. */
static bool resolve(const char *text, struct node *node) {
    if (strlen(text) >= sizeof node->address) {
        fprintf(stderr, "client: address too long: %s\n", text);
        return false;
    }
    strcpy(node->address, text);
    char host[sizeof node->address];
    strcpy(host, text);
    char *colon = strrchr(host, ':');
    if (colon == NULL || colon == host || colon[1] == '\0') {
        fprintf(stderr, "client: not HOST:PORT: %s\n", text);
        return false;
    }
    *colon = '\0';
    const char *port = colon + 1;
    char *name = host;
    if (host[0] == '[' && colon[-1] == ']') {
        colon[-1] = '\0';
        name = host + 1;
    }
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    struct addrinfo *found = NULL;
    int err = getaddrinfo(name, port, &hints, &found);
    if (err != 0 || found == NULL) {
        fprintf(stderr, "client: cannot resolve %s: %s\n", text, gai_strerror(err));
        return false;
    }
    memcpy(&node->addr, found->ai_addr, found->ai_addrlen);
    node->addr_len = found->ai_addrlen;
    freeaddrinfo(found);
    return true;
}

static void usage(void) {
    fprintf(stderr, "usage: client [-n REQUESTS] [-c THREADS] [-t TIMEOUT_MS] HOST:PORT...\n"
                    "       client -V   (the header's and the library's versions)\n");
}

static double ratio(uint64_t part, uint64_t whole) {
    return whole == 0 ? 0.0 : (double)part / (double)whole;
}

static uint64_t node_calls(const struct node *node) {
    uint64_t calls = 0;
    for (int o = 0; o < WEIR_OUTCOME_COUNT; o++) {
        calls += atomic_load(&node->outcomes[o]);
    }
    return calls;
}

/* Calls to `id` among calls [from, to). */
static uint64_t calls_between(const struct run *r, uint32_t id, uint64_t from, uint64_t to) {
    uint64_t n = 0;
    for (uint64_t c = from; c < to; c++) {
        n += r->node_of_call[c] == id;
    }
    return n;
}

/* The table, the totals and the SUMMARY lines; false if a call was lost or weir's counters disagree. */
static bool report(const struct run *r, unsigned threads) {
    uint64_t now = weir_now_ns();
    uint64_t acquired = atomic_load(&r->acquired);
    uint64_t last80_from = acquired / 5;
    uint64_t succeeded = 0;
    bool ok = true;

    printf("\nnode  address                 calls   share  succeeded  failed  dropped  success"
           "  after warm-up  last 80%% | weir: success  penalty  weight  limit\n");
    for (size_t i = 0; i < r->node_count; i++) {
        const struct node *node = &r->nodes[i];
        weir_node_info info;
        weir_status snapshot = weir_balancer_node_snapshot(r->balancer, i, now, &info);
        if (!weir_ok(snapshot, "weir_balancer_node_snapshot")) {
            return false;
        }
        uint64_t calls = node_calls(node);
        uint64_t good = atomic_load(&node->outcomes[WEIR_OUTCOME_SUCCESS]);
        succeeded += good;
        uint64_t warm = atomic_load(&node->first_failure_at);
        char after[32] = "-";
        uint64_t after_calls = 0, after_total = 0;
        if (warm != NO_FAILURE) {
            after_total = acquired - warm;
            after_calls = calls_between(r, (uint32_t)i, warm, acquired);
            snprintf(after, sizeof after, "%.2f%%", 100.0 * ratio(after_calls, after_total));
        }
        uint64_t last80 = calls_between(r, (uint32_t)i, last80_from, acquired);
        printf("%4zu  %-22s %6llu  %5.1f%%  %9llu  %6llu  %7llu  %6.1f%%  %13s  %7.2f%% |  %12.3f  %7.2f  %6.3f  %5u\n",
               i, node->address, (unsigned long long)calls, 100.0 * ratio(calls, acquired),
               (unsigned long long)good,
               (unsigned long long)atomic_load(&node->outcomes[WEIR_OUTCOME_FAILURE]),
               (unsigned long long)atomic_load(&node->outcomes[WEIR_OUTCOME_DROPPED]),
               100.0 * ratio(good, calls), after, 100.0 * ratio(last80, acquired - last80_from),
               info.success_rate, info.penalty, info.weight, (unsigned)info.limit);
    }

    uint64_t started = atomic_load(&r->started), released = atomic_load(&r->released);
    uint64_t shed = atomic_load(&r->shed);
    uint64_t completed = released + shed;
    printf("\nrequests %llu: started %llu, completed %llu (released %llu, shed %llu), lost %llu; "
           "succeeded %llu (%.2f%%); %u threads\n",
           (unsigned long long)r->requests, (unsigned long long)started,
           (unsigned long long)completed, (unsigned long long)released, (unsigned long long)shed,
           (unsigned long long)(started - completed), (unsigned long long)succeeded,
           100.0 * ratio(succeeded, started), threads);

    weir_balancer_statistics stats;
    if (!weir_ok(weir_balancer_stats(r->balancer, &stats), "weir_balancer_stats")) {
        return false;
    }
    uint64_t stats_released = stats.released_stale;
    for (int o = 0; o < WEIR_OUTCOME_COUNT; o++) {
        stats_released += stats.released[o];
        uint64_t ours = 0;
        for (size_t i = 0; i < r->node_count; i++) {
            ours += atomic_load(&r->nodes[i].outcomes[o]);
        }
        if (stats.released[o] != ours) {
            fprintf(stderr, "client: weir counted %llu releases with outcome %d, we made %llu\n",
                    (unsigned long long)stats.released[o], o, (unsigned long long)ours);
            ok = false;
        }
    }
    printf("weir_balancer_stats: acquired %llu, released %llu (success %llu, failure %llu, "
           "dropped %llu, ignored %llu), in flight %llu, rejected all busy %llu\n",
           (unsigned long long)stats.acquired, (unsigned long long)stats_released,
           (unsigned long long)stats.released[WEIR_OUTCOME_SUCCESS],
           (unsigned long long)stats.released[WEIR_OUTCOME_FAILURE],
           (unsigned long long)stats.released[WEIR_OUTCOME_DROPPED],
           (unsigned long long)stats.released[WEIR_OUTCOME_IGNORED],
           (unsigned long long)stats.in_flight, (unsigned long long)stats.rejected_all_busy);
    if (started != r->requests || completed != started || released != acquired) {
        fprintf(stderr, "client: lost calls: %llu requests, %llu started, %llu completed, "
                        "%llu leases granted, %llu released\n",
                (unsigned long long)r->requests, (unsigned long long)started,
                (unsigned long long)completed, (unsigned long long)acquired,
                (unsigned long long)released);
        ok = false;
    }
    if (stats.in_flight != 0 || stats.acquired != stats_released || stats.acquired != acquired) {
        fprintf(stderr, "client: weir_balancer_stats disagree: acquired %llu, released %llu, "
                        "in flight %llu; we were granted %llu\n",
                (unsigned long long)stats.acquired, (unsigned long long)stats_released,
                (unsigned long long)stats.in_flight, (unsigned long long)acquired);
        ok = false;
    }

    for (size_t i = 0; i < r->node_count; i++) {
        const struct node *node = &r->nodes[i];
        uint64_t calls = node_calls(node);
        uint64_t warm = atomic_load(&node->first_failure_at);
        printf("SUMMARY node=%zu address=%s calls=%llu succeeded=%llu failed=%llu dropped=%llu "
               "share=%.4f last80_share=%.4f",
               i, node->address, (unsigned long long)calls,
               (unsigned long long)atomic_load(&node->outcomes[WEIR_OUTCOME_SUCCESS]),
               (unsigned long long)atomic_load(&node->outcomes[WEIR_OUTCOME_FAILURE]),
               (unsigned long long)atomic_load(&node->outcomes[WEIR_OUTCOME_DROPPED]),
               ratio(calls, acquired),
               ratio(calls_between(r, (uint32_t)i, last80_from, acquired), acquired - last80_from));
        if (warm == NO_FAILURE) {
            printf(" warmup_calls=none after_warmup_calls=0 after_warmup_share=none\n");
        } else {
            uint64_t after = calls_between(r, (uint32_t)i, warm, acquired);
            printf(" warmup_calls=%llu after_warmup_calls=%llu after_warmup_share=%.4f\n",
                   (unsigned long long)warm, (unsigned long long)after,
                   ratio(after, acquired - warm));
        }
    }
    printf("SUMMARY total requests=%llu started=%llu completed=%llu lost=%llu shed=%llu "
           "acquired=%llu released=%llu succeeded=%llu success_rate=%.4f stats_acquired=%llu "
           "stats_released=%llu stats_in_flight=%llu consistent=%d\n",
           (unsigned long long)r->requests, (unsigned long long)started,
           (unsigned long long)completed, (unsigned long long)(started - completed),
           (unsigned long long)shed, (unsigned long long)acquired, (unsigned long long)released,
           (unsigned long long)succeeded, ratio(succeeded, started),
           (unsigned long long)stats.acquired, (unsigned long long)stats_released,
           (unsigned long long)stats.in_flight, ok ? 1 : 0);
    return ok;
}

int main(int argc, char **argv) {
    static struct run r; /* large (the nodes); zeroed, so every counter starts at 0 */
    uint64_t requests = 2000, threads = 4, timeout_ms = 1000;
    const char *addresses[MAX_NODES];
    size_t count = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "-V") == 0) {
            printf("weir.h %s, libweir %s\n", WEIR_VERSION_STRING, weir_version_string());
            return weir_version() == WEIR_VERSION_NUMBER ? 0 : 1;
        } else if (strcmp(a, "-h") == 0) {
            usage();
            return 0;
        } else if (strcmp(a, "-n") == 0 && has_value) {
            if (!parse_u64(argv[++i], 1, 100000000, &requests)) {
                return 2;
            }
        } else if (strcmp(a, "-c") == 0 && has_value) {
            if (!parse_u64(argv[++i], 1, MAX_THREADS, &threads)) {
                return 2;
            }
        } else if (strcmp(a, "-t") == 0 && has_value) {
            if (!parse_u64(argv[++i], 1, 3600000, &timeout_ms)) {
                return 2;
            }
        } else if (a[0] == '-') {
            usage();
            return 2;
        } else if (count == MAX_NODES) {
            fprintf(stderr, "client: at most %d servers\n", MAX_NODES);
            return 2;
        } else {
            addresses[count++] = a;
        }
    }
    if (count == 0) {
        usage();
        return 2;
    }
    if (weir_version() != WEIR_VERSION_NUMBER) {
        fprintf(stderr, "client: built against weir.h %s but running libweir %s\n",
                WEIR_VERSION_STRING, weir_version_string());
        return 1;
    }
    /* A reset connection must be an error return from send, not a signal that ends the process. */
    signal(SIGPIPE, SIG_IGN);

    r.node_count = count;
    r.requests = requests;
    r.timeout_ns = timeout_ms * 1000000;
    for (size_t i = 0; i < count; i++) {
        if (!resolve(addresses[i], &r.nodes[i])) {
            return 2;
        }
        atomic_store(&r.nodes[i].first_failure_at, NO_FAILURE);
    }
    r.node_of_call = calloc((size_t)requests, sizeof *r.node_of_call);
    if (r.node_of_call == NULL) {
        fprintf(stderr, "client: out of memory\n");
        return 1;
    }

    weir_config config = weir_config_default();
    if (!weir_ok(weir_balancer_new(&config, count, &r.balancer), "weir_balancer_new")) {
        free(r.node_of_call);
        return 1;
    }
    bool ok = true;
    for (size_t i = 0; i < count && ok; i++) {
        ok = weir_ok(weir_balancer_add(r.balancer, i), "weir_balancer_add");
    }
    printf("weir %s: %llu requests over %zu servers, %llu threads, timeout %llu ms, "
           "weir_config_default()\n",
           weir_version_string(), (unsigned long long)requests, count,
           (unsigned long long)threads, (unsigned long long)timeout_ms);

    pthread_t workers[MAX_THREADS];
    unsigned running = 0;
    uint64_t began = weir_now_ns();
    for (unsigned t = 0; t < threads && ok; t++) {
        if (pthread_create(&workers[t], NULL, worker, &r) != 0) {
            fprintf(stderr, "client: cannot start worker thread %u\n", t);
            atomic_store(&r.broken, true);
            ok = false;
            break;
        }
        running++;
    }
    for (unsigned t = 0; t < running; t++) {
        pthread_join(workers[t], NULL);
    }
    double seconds = (double)(weir_now_ns() - began) / 1e9;
    if (ok && atomic_load(&r.broken)) {
        ok = false;
    }
    if (running > 0) {
        printf("ran %.2f s\n", seconds);
        ok = report(&r, running) && ok;
    }
    weir_balancer_free(r.balancer);
    free(r.node_of_call);
    return ok ? 0 : 1;
}

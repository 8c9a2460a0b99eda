/* One balancer hammered from 8 threads while another thread changes membership and runs health checks,
 * then every counter checked exactly against what the threads counted (with a CIAD limit, then a knee
 * limit); and the same with waiting acquires that queue. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define THREADS 8
#define ITERATIONS 100000
#define WAIT_ITERATIONS 3000
#define HELD 3   /* leases each hammer thread holds at once */
#define NODES 5  /* ids 1..4 stay; id 5 is removed and added again */
#define MAX_LIMIT 4

static uint64_t next_random(uint64_t *state) {
    /* splitmix64 */
    uint64_t z = (*state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

struct tally {
    uint64_t acquired;
    uint64_t all_busy;
    uint64_t no_active;
    uint64_t released[WEIR_OUTCOME_COUNT];
    uint64_t stale;
    uint64_t unexpected; /* any other status: must stay 0 */
    uint64_t over_limit; /* a lease admitted beyond the largest possible limit: must stay 0 */
    uint64_t timeouts;
    uint64_t queue_full;
};

struct worker {
    weir_balancer *balancer;
    uint64_t seed;
    uint32_t limit; /* the most a node can ever admit */
    struct tally t;
};

static void release_one(struct worker *w, weir_lease *l, uint64_t *rng) {
    weir_outcome o = (weir_outcome)(next_random(rng) % WEIR_OUTCOME_COUNT);
    weir_status s = weir_balancer_release(w->balancer, l, o, weir_now_ns());
    if (s == WEIR_OK) {
        w->t.released[o]++;
    } else if (s == WEIR_ERR_NODE_REMOVED) {
        w->t.stale++;
    } else {
        w->t.unexpected++;
    }
}

static void *hammer(void *arg) {
    struct worker *w = arg;
    uint64_t rng = w->seed;
    weir_lease held[HELD];
    int count = 0;
    for (int i = 0; i < ITERATIONS; i++) {
        if (count == HELD || (count > 0 && next_random(&rng) % 2 == 0)) {
            /* Release a random held lease. */
            int k = (int)(next_random(&rng) % (uint64_t)count);
            release_one(w, &held[k], &rng);
            held[k] = held[--count];
            continue;
        }
        weir_lease l;
        weir_status s = weir_balancer_acquire(w->balancer, weir_now_ns(), &l);
        if (s == WEIR_OK) {
            w->t.acquired++;
            w->t.over_limit += l.inflight > w->limit || l.node_id == 0 || l.node_id > NODES;
            held[count++] = l;
        } else if (s == WEIR_ERR_ALL_BUSY) {
            w->t.all_busy++;
        } else if (s == WEIR_ERR_NO_ACTIVE_NODES) {
            w->t.no_active++;
        } else {
            w->t.unexpected++;
        }
    }
    while (count > 0) {
        release_one(w, &held[--count], &rng);
    }
    return NULL;
}

struct churn {
    weir_balancer *balancer;
    volatile int stop; /* written by main after the workers are joined */
    pthread_mutex_t lock;
    uint64_t changes;
    uint64_t checks; /* nodes weir_balancer_due_check named */
    uint64_t unexpected;
};

static int stopped(struct churn *c) {
    pthread_mutex_lock(&c->lock);
    int stop = c->stop;
    pthread_mutex_unlock(&c->lock);
    return stop;
}

static void *change_membership(void *arg) {
    struct churn *c = arg;
    uint64_t rng = 77;
    int five_in = 1;
    while (!stopped(c)) {
        uint64_t r = next_random(&rng);
        uint64_t id = 1 + r % 4;
        weir_status s = weir_balancer_set_lame_duck(c->balancer, id, (r >> 8) % 2 == 0);
        c->unexpected += s != WEIR_OK;
        if ((r >> 16) % 8 == 0) {
            s = five_in ? weir_balancer_remove(c->balancer, 5) : weir_balancer_add(c->balancer, 5);
            /* Adding fails only while every free slot still drains old leases. */
            if (s == WEIR_OK) {
                five_in = !five_in;
            } else if (s != WEIR_ERR_CAPACITY_FULL) {
                c->unexpected++;
            }
        }
        /* A checker on this thread: a node named is reported at once, well or not (this thread alone
         * removes nodes, so it is still a member). A check moves no counter the workers tally. */
        bool due = false;
        uint64_t named = 0;
        s = weir_balancer_due_check(c->balancer, weir_now_ns(), (r >> 24) % 2 == 0 ? 0 : 1000000u,
                                    &due, &named);
        c->unexpected += s != WEIR_OK;
        if (due) {
            c->checks++;
            c->unexpected += named == 0 || named > NODES;
            s = weir_balancer_report_check(c->balancer, named, (r >> 32) % 2 == 0, weir_now_ns());
            c->unexpected += s != WEIR_OK;
        }
        c->changes++;
        for (volatile int spin = 0; spin < 2000; spin++) {
        }
    }
    /* Everyone back in rotation. */
    for (uint64_t id = 1; id <= 4; id++) {
        c->unexpected += weir_balancer_set_lame_duck(c->balancer, id, false) != WEIR_OK;
    }
    return NULL;
}

static void sum_into(struct tally *total, const struct tally *t) {
    total->acquired += t->acquired;
    total->all_busy += t->all_busy;
    total->no_active += t->no_active;
    for (int o = 0; o < WEIR_OUTCOME_COUNT; o++) {
        total->released[o] += t->released[o];
    }
    total->stale += t->stale;
    total->unexpected += t->unexpected;
    total->over_limit += t->over_limit;
    total->timeouts += t->timeouts;
    total->queue_full += t->queue_full;
}

/* The balancer's counters equal the threads' tallies exactly, and nothing is in flight. The refusals
 * are the calls that returned no lease (a wait that got its lease is none); every wait that queued
 * ended once, and nobody waits any more. */
static void check_counters(const weir_balancer *b, const struct tally *total) {
    weir_balancer_statistics s;
    CHECK_OK(weir_balancer_stats(b, &s));
    CHECK(s.acquired == total->acquired);
    CHECK(s.rejected_all_busy == total->all_busy + total->timeouts + total->queue_full);
    CHECK(s.rejected_no_active == total->no_active);
    CHECK(s.waiting == 0 && s.waits_cancelled == 0);
    CHECK(s.waits == s.waits_granted + s.waits_timed_out);
    CHECK(s.waits_granted <= total->acquired && s.waits_timed_out <= total->timeouts);
    uint64_t released = 0;
    for (int o = 0; o < WEIR_OUTCOME_COUNT; o++) {
        CHECK(s.released[o] == total->released[o]);
        released += s.released[o];
    }
    CHECK(s.released_stale == total->stale);
    CHECK(s.in_flight == 0);
    CHECK(s.acquired == released + s.released_stale + s.in_flight);
    CHECK(total->unexpected == 0 && total->over_limit == 0);
    weir_node_info nodes[8];
    size_t len = 0;
    CHECK_OK(weir_balancer_nodes(b, weir_now_ns(), nodes, 8, &len));
    for (size_t i = 0; i < len; i++) {
        CHECK(nodes[i].in_flight == 0);
        CHECK(nodes[i].state == WEIR_NODE_ACTIVE);
    }
    if (s.acquired != total->acquired || s.in_flight != 0) {
        fprintf(stderr, "acquired %llu (threads: %llu), in flight %llu\n",
                (unsigned long long)s.acquired, (unsigned long long)total->acquired,
                (unsigned long long)s.in_flight);
    }
}

/* The hammer on a balancer built from `c`, whose limit never exceeds MAX_LIMIT; `name` in the report. */
static void hammer_config(const char *name, weir_config c) {
    weir_balancer *b = NULL;
    CHECK_OK(weir_balancer_new(&c, 8, &b));
    REQUIRE(b != NULL);
    for (uint64_t id = 1; id <= NODES; id++) {
        CHECK_OK(weir_balancer_add(b, id));
    }
    struct worker workers[THREADS];
    pthread_t threads[THREADS];
    struct churn churn = {.balancer = b, .stop = 0};
    int ok = pthread_mutex_init(&churn.lock, NULL);
    REQUIRE(ok == 0);
    pthread_t churner;
    ok = pthread_create(&churner, NULL, change_membership, &churn);
    REQUIRE(ok == 0);
    for (int i = 0; i < THREADS; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].balancer = b;
        workers[i].seed = 1000 + (uint64_t)i;
        workers[i].limit = MAX_LIMIT;
        ok = pthread_create(&threads[i], NULL, hammer, &workers[i]);
        REQUIRE(ok == 0);
    }
    struct tally total;
    memset(&total, 0, sizeof total);
    for (int i = 0; i < THREADS; i++) {
        ok = pthread_join(threads[i], NULL);
        REQUIRE(ok == 0);
        sum_into(&total, &workers[i].t);
    }
    pthread_mutex_lock(&churn.lock);
    churn.stop = 1;
    pthread_mutex_unlock(&churn.lock);
    ok = pthread_join(churner, NULL);
    REQUIRE(ok == 0);
    pthread_mutex_destroy(&churn.lock);
    CHECK(churn.unexpected == 0 && churn.changes > 0);
    check_counters(b, &total);
    /* The run exercised what it is meant to: contention, and releases of every outcome. */
    CHECK(total.acquired > 0 && total.all_busy > 0);
    /* Fail-fast calls only: nothing ever waited. */
    weir_balancer_statistics s;
    CHECK_OK(weir_balancer_stats(b, &s));
    CHECK(s.waits == 0 && s.waits_granted == 0 && s.waits_timed_out == 0);
    for (int o = 0; o < WEIR_OUTCOME_COUNT; o++) {
        CHECK(total.released[o] > 0);
    }
    printf("hammer (%s): %llu leases, %llu busy, %llu without active nodes, %llu stale, %llu "
           "membership changes, %llu health checks\n",
           name, (unsigned long long)total.acquired, (unsigned long long)total.all_busy,
           (unsigned long long)total.no_active, (unsigned long long)total.stale,
           (unsigned long long)churn.changes, (unsigned long long)churn.checks);
    weir_balancer_free(b);
}

static void test_hammer(void) {
    /* The default algorithm with an adaptive limit kept small, so that nodes fill up: CIAD (the
     * default's), and the knee limit, whose RTT tracker is the other shared state a sample updates. */
    weir_config c = weir_config_default();
    c.limit.ciad.initial_limit = 2;
    c.limit.ciad.max_limit = MAX_LIMIT;
    c.seed = 2024;
    hammer_config("ciad", c);
    c.limit = weir_limit_knee_default();
    c.limit.knee.initial_limit = 2;
    c.limit.knee.max_limit = MAX_LIMIT;
    hammer_config("knee", c);
}

static void *waiter(void *arg) {
    struct worker *w = arg;
    uint64_t rng = w->seed;
    for (int i = 0; i < WAIT_ITERATIONS; i++) {
        weir_lease l;
        weir_status s = weir_balancer_acquire_wait(w->balancer, weir_now_ns() + 20000000000u, &l);
        if (s == WEIR_OK) {
            w->t.acquired++;
            w->t.over_limit += l.inflight > w->limit;
            for (volatile uint64_t spin = next_random(&rng) % 500; spin > 0; spin--) {
            }
            release_one(w, &l, &rng);
        } else if (s == WEIR_ERR_TIMEOUT) {
            w->t.timeouts++;
        } else if (s == WEIR_ERR_QUEUE_FULL) {
            w->t.queue_full++;
        } else {
            w->t.unexpected++;
        }
    }
    return NULL;
}

static void test_waiting(void) {
    /* 2 nodes of 1: 8 threads want 4 times the room, so most acquires queue. */
    weir_config c = weir_config_cascade();
    c.limit.fixed.limit = 1;
    c.max_waiters = THREADS;
    weir_balancer *b = NULL;
    CHECK_OK(weir_balancer_new(&c, 2, &b));
    REQUIRE(b != NULL);
    CHECK_OK(weir_balancer_add(b, 1));
    CHECK_OK(weir_balancer_add(b, 2));
    struct worker workers[THREADS];
    pthread_t threads[THREADS];
    int ok;
    for (int i = 0; i < THREADS; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].balancer = b;
        workers[i].seed = 5000 + (uint64_t)i;
        workers[i].limit = 1;
        ok = pthread_create(&threads[i], NULL, waiter, &workers[i]);
        REQUIRE(ok == 0);
    }
    struct tally total;
    memset(&total, 0, sizeof total);
    for (int i = 0; i < THREADS; i++) {
        ok = pthread_join(threads[i], NULL);
        REQUIRE(ok == 0);
        sum_into(&total, &workers[i].t);
    }
    /* Every wait completed with a lease: none timed out, none was turned away, none lost. */
    CHECK(total.acquired == (uint64_t)THREADS * WAIT_ITERATIONS);
    CHECK(total.timeouts == 0 && total.queue_full == 0 && total.stale == 0);
    check_counters(b, &total);
    /* Callers did queue, and every wait ended with its lease: waits, not refusals. */
    weir_balancer_statistics s;
    CHECK_OK(weir_balancer_stats(b, &s));
    CHECK(s.waits > 0 && s.waits == s.waits_granted && s.rejected_all_busy == 0);
    printf("waiting: %llu of the leases waited for\n", (unsigned long long)s.waits);
    printf("waiting: %llu leases through a queue of %d waiters over 2 slots\n",
           (unsigned long long)total.acquired, THREADS);
    weir_balancer_free(b);
}

int main(void) {
    test_hammer();
    test_waiting();
    return check_summary("test_threads");
}

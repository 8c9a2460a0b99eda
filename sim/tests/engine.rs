//! The engine's semantics on tiny scenarios with exact expected figures.

use weir::{backoff::BackoffConfig, backoff::Jitter, Rng};
use weir_sim::engine;
use weir_sim::metrics::{CellResult, RequestEnd};
use weir_sim::model::{
    Action, Arrivals, Behavior, ClientSpec, Crash, Latency, Retries, RetryBackoff, RetryOn,
    Scenario, ServerSpec, StatusFn, MS, SEC,
};
use weir_sim::policy::{Balance, Completion, Pick, Refusal, Reply, ServerId};

/// Sends everything to the first listed non-draining server; with `queue_above`, refuses (queueing) while
/// that many of its attempts are in flight. Records every call.
#[derive(Default)]
struct First {
    servers: Vec<ServerId>,
    draining: Vec<ServerId>,
    inflight: usize,
    queue_above: Option<usize>,
    replies: Vec<Reply>,
    lists: Vec<Vec<ServerId>>,
}

impl Balance for First {
    fn pick(&mut self, _now: u64, _rng: &mut Rng) -> Option<Pick> {
        if self.queue_above.is_some_and(|q| self.inflight >= q) {
            return None;
        }
        let server = *self.servers.iter().find(|s| !self.draining.contains(s))?;
        self.inflight += 1;
        Some(Pick {
            server,
            lease: None,
            tag: 0,
        })
    }
    fn complete(&mut self, _pick: Pick, done: &Completion, _now: u64) {
        self.inflight -= 1;
        self.replies.push(done.reply);
    }
    fn set_servers(&mut self, servers: &[ServerId], _now: u64) {
        self.servers = servers.to_vec();
        self.lists.push(servers.to_vec());
    }
    fn set_draining(&mut self, server: ServerId, draining: bool, _now: u64) {
        self.draining.retain(|&s| s != server);
        if draining {
            self.draining.push(server);
        }
    }
    fn on_refusal(&self) -> Refusal {
        if self.queue_above.is_some() {
            Refusal::Queue
        } else {
            Refusal::FailFast
        }
    }
}

fn scenario(servers: Vec<ServerSpec>, arrivals: Vec<Arrivals>) -> Scenario {
    Scenario {
        name: "t".into(),
        about: "test".into(),
        servers,
        clients: ClientSpec::plain(1),
        arrivals,
        actions: Vec::new(),
        abort: 60 * SEC,
        bucket: SEC,
        seed: 1,
        java: None,
        not_comparable: None,
        faults: Vec::new(),
        at_capacity: false,
    }
}

fn run_first(s: &Scenario, queue_above: Option<usize>) -> CellResult {
    engine::run(s, &|_, _| {
        Box::new(First {
            queue_above,
            ..First::default()
        })
    })
}

#[test]
fn fixed_latency_figures_are_exact() {
    let s = scenario(
        vec![ServerSpec::new("a", Behavior::ok(10 * MS))],
        vec![Arrivals::burst(0, 10, SEC)],
    );
    let r = run_first(&s, None);
    assert_eq!(
        (r.sent, r.received, r.succeeded, r.fail_fast),
        (10, 10, 10, 0)
    );
    assert_eq!(r.server_busy_ns, 100 * u128::from(MS));
    assert_eq!(
        (r.client_mean_ns, r.client_p99_ns),
        (10.0 * MS as f64, 10 * MS)
    );
    assert_eq!(r.codes.get(&RequestEnd::Status(200)), Some(&10));
    assert_eq!(r.series[0].sent[..10], [1; 10]);
    assert_eq!(r.oracle_pct, 100.0);
    assert_eq!(r.end_ns, 9 * SEC + 10 * MS);
}

#[test]
fn linear_latency_counts_the_request_itself() {
    // Two requests 1 ns apart: 100 ms x (1 + 1/10) and 100 ms x (1 + 2/10); a 12th one in progress gets 5x.
    let s = scenario(
        vec![ServerSpec::new("a", Behavior::linear(100 * MS, 10))],
        vec![Arrivals::burst(0, 2, 1)],
    );
    let r = run_first(&s, None);
    assert_eq!(r.server_busy_ns, u128::from(110 * MS + 120 * MS));
    let s = scenario(
        vec![ServerSpec::new("a", Behavior::linear(100 * MS, 10))],
        vec![Arrivals::burst(0, 11, 1)],
    );
    let r = run_first(&s, None);
    let expected: u64 = (1..=10).map(|a| 100 * MS + 10 * MS * a).sum::<u64>() + 500 * MS;
    assert_eq!(r.server_busy_ns, u128::from(expected));
}

#[test]
fn capacity_status_is_decided_at_completion() {
    // dialogue's 200UntilCapacity: the first to complete sees both in progress (429), the second alone.
    let b = Behavior::ok(10 * MS).with_status(StatusFn::AboveCapacity {
        code: 429,
        capacity: 1,
    });
    let s = scenario(
        vec![ServerSpec::new("a", b)],
        vec![Arrivals::burst(0, 2, 1)],
    );
    let r = run_first(&s, None);
    assert_eq!(
        (
            r.codes.get(&RequestEnd::Status(429)),
            r.codes.get(&RequestEnd::Status(200))
        ),
        (Some(&1), Some(&1))
    );
}

#[test]
fn cut_overs_apply_to_requests_arriving_after_them() {
    let a = ServerSpec::new("a", Behavior::ok(10 * MS)).then(5 * SEC, Behavior::status(500, MS));
    let s = scenario(vec![a], vec![Arrivals::burst(0, 10, SEC)]);
    let r = run_first(&s, None);
    assert_eq!(
        (r.succeeded, r.codes.get(&RequestEnd::Status(500))),
        (5, Some(&5))
    );
    assert_eq!(r.oracle_pct, 50.0);
}

#[test]
fn a_black_hole_needs_a_deadline() {
    let hole = Behavior {
        latency: Latency::Never,
        status: StatusFn::Fixed(200),
    };
    let mut s = scenario(
        vec![ServerSpec::new("a", hole)],
        vec![Arrivals::burst(0, 2, SEC)],
    );
    let r = run_first(&s, None);
    assert_eq!(
        (r.received, r.codes.get(&RequestEnd::Unfinished)),
        (0, Some(&2))
    );
    // Server time counts finished attempts only (dialogue's definition): none; the server held both until
    // the abort.
    assert_eq!(r.server_busy_ns, 0);
    assert_eq!(r.server_held_ns, u128::from(60 * SEC + 59 * SEC));
    s.clients.timeout = Some(500 * MS);
    let r = run_first(&s, None);
    assert_eq!(
        (r.received, r.codes.get(&RequestEnd::Timeout)),
        (2, Some(&2))
    );
    assert_eq!(r.client_p99_ns, 500 * MS);
    assert_eq!(r.oracle_pct, 0.0);
}

#[test]
fn a_crash_resets_everything_in_progress_and_refuses_until_recovery() {
    let hole = Behavior {
        latency: Latency::Never,
        status: StatusFn::Fixed(200),
    };
    let a = ServerSpec::new("a", hole)
        .then(1200 * MS, Behavior::ok(MS))
        .crashing(Crash {
            active_above: 1,
            sustained: SEC,
            down_for: 2 * SEC,
        });
    // Two requests at 0 and 0.1 s (over the threshold from 0.1 s: crash at 1.1 s, up at 3.1 s), then
    // requests at 2 s (refused) and 4 s (answered).
    let s = scenario(
        vec![a],
        vec![
            Arrivals::burst(0, 2, 100 * MS),
            Arrivals::burst(2 * SEC, 2, 2 * SEC),
        ],
    );
    let r = run_first(&s, None);
    assert_eq!(
        (
            r.codes.get(&RequestEnd::Reset),
            r.codes.get(&RequestEnd::Status(200))
        ),
        (Some(&3), Some(&1))
    );
    assert_eq!(r.server_busy_ns, u128::from(1100 * MS + 1000 * MS + MS));
}

#[test]
fn retries_follow_the_rule_and_the_backoff() {
    let retries = Retries {
        max: 2,
        backoff: RetryBackoff::Responsive(BackoffConfig {
            initial_ns: 100 * MS,
            up_multiplier: 2.0,
            jitter: Jitter::None,
            ..BackoffConfig::default()
        }),
        budget: None,
        on: RetryOn::Retryable,
    };
    let mut s = scenario(
        vec![ServerSpec::new("a", Behavior::status(500, 10 * MS))],
        vec![Arrivals::burst(0, 1, 1)],
    );
    s.clients.retries = Some(retries);
    let r = run_first(&s, None);
    // Three attempts, 100 ms then 200 ms of backoff between them.
    assert_eq!(
        (r.server_attempts, r.codes.get(&RequestEnd::Status(500))),
        (3, Some(&1))
    );
    assert_eq!(r.client_p99_ns, 30 * MS + 300 * MS);
    assert_eq!(r.oracle_pct, 0.0);
    // dialogue's rule for a POST does not retry a 500.
    s.clients.retries = Some(Retries {
        on: RetryOn::Dialogue { safe_method: false },
        ..retries
    });
    assert_eq!(run_first(&s, None).server_attempts, 1);
    // The budget (10 % of requests) stops retries once spent.
    s.clients.retries = Some(Retries {
        budget: Some(weir::overload::ThrottleConfig::default()),
        ..retries
    });
    s.arrivals = vec![Arrivals::burst(0, 100, MS)];
    let r = run_first(&s, None);
    assert!(
        r.server_attempts > 100 && r.server_attempts <= 111,
        "{}",
        r.server_attempts
    );
}

#[test]
fn refused_requests_fail_fast_or_queue() {
    let s = scenario(
        vec![ServerSpec::new("a", Behavior::ok(10 * MS))],
        vec![Arrivals::burst(0, 3, 1)],
    );
    // Queued behind one in flight: answered at 10, 20 and 30 ms.
    let r = run_first(&s, Some(1));
    assert_eq!((r.succeeded, r.fail_fast), (3, 0));
    assert_eq!(r.client_p99_ns, 30 * MS - 2);
    // A deadline also bounds the wait in the queue: the third waits past 15 ms and times out there.
    let mut s = s;
    s.clients.timeout = Some(15 * MS);
    let r = run_first(&s, Some(1));
    assert_eq!(
        (r.succeeded, r.codes.get(&RequestEnd::Timeout)),
        (2, Some(&1))
    );
    assert_eq!(r.server_attempts, 2);
    // No servers at all: every request fails fast...
    s.servers[0].present = false;
    let r = run_first(&s, None);
    assert_eq!(
        (r.fail_fast, r.codes.get(&RequestEnd::FailFast)),
        (3, Some(&3))
    );
    // ... and a retrying client tries again after its backoff: 1 + 2 refusals each.
    s.clients.retries = Some(Retries {
        max: 2,
        backoff: RetryBackoff::Responsive(BackoffConfig {
            initial_ns: MS,
            jitter: Jitter::None,
            ..BackoffConfig::default()
        }),
        budget: None,
        on: RetryOn::Dialogue { safe_method: false },
    });
    let r = run_first(&s, None);
    assert_eq!(
        (r.fail_fast, r.codes.get(&RequestEnd::FailFast)),
        (9, Some(&3))
    );
}

#[test]
fn membership_actions_reach_every_client() {
    let mut s = scenario(
        vec![
            ServerSpec::new("a", Behavior::ok(MS)),
            ServerSpec::new("b", Behavior::ok(MS)).absent(),
        ],
        vec![Arrivals::burst(0, 4, SEC)],
    );
    s.clients = ClientSpec::plain(3);
    s.actions = vec![
        (1500 * MS, Action::Add(1)),
        (1600 * MS, Action::Drain(0, true)),
        (2500 * MS, Action::Remove(0)),
    ];
    let r = run_first(&s, None);
    // Requests at 0 and 1 s go to a; at 2 and 3 s to b (a is draining, then gone).
    assert_eq!(r.per_server_attempts, vec![2, 2]);
}

#[test]
fn the_same_seed_gives_the_same_figures() {
    let s = weir_sim::scenarios::flaky();
    let p = weir_sim::policy::registry::find("weir-cascade").unwrap();
    let a = weir_sim::output::report::run_cell(&s, &p);
    let b = weir_sim::output::report::run_cell(&s, &p);
    assert_eq!(a, b);
    let mut other = s.clone();
    other.seed += 1;
    assert_ne!(a, weir_sim::output::report::run_cell(&other, &p));
}

/// weir's waiting client (`Refusal::Wait`): the core's `acquire_wait` semantics over the real core.
#[test]
fn a_waiting_weir_client_queues_up_to_its_bound_and_fails_at_once_without_nodes() {
    use weir::limit::{FixedLimit, LimitAlgorithm};
    use weir_sim::policy::weir::WeirPolicy;
    let config = |max_waiters| weir::Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }),
        max_waiters,
        ..weir::Config::default()
    };
    let run = |s: &Scenario, max_waiters: u32| {
        let servers = s.servers.len();
        engine::run(s, &move |_, _| {
            Box::new(WeirPolicy::waiting(config(max_waiters), servers))
        })
    };
    let mut s = scenario(
        vec![ServerSpec::new("a", Behavior::ok(10 * MS))],
        vec![Arrivals::burst(0, 4, 1)],
    );
    // One in flight, the others wait in arrival order: answered at 10, 20, 30 and 40 ms.
    let r = run(&s, 8);
    assert_eq!((r.succeeded, r.fail_fast), (4, 0));
    assert_eq!(r.client_p99_ns, 40 * MS - 3);
    // A bound of 2 waiters: the fourth finds the queue full and fails fast.
    let r = run(&s, 2);
    assert_eq!(
        (r.succeeded, r.fail_fast, r.codes.get(&RequestEnd::FailFast)),
        (3, 1, Some(&1))
    );
    // Waiting off: only the first is sent.
    let r = run(&s, 0);
    assert_eq!((r.succeeded, r.fail_fast), (1, 3));
    // Unlike the engine's plain queue, the wait has no deadline of its own (dialogue's queue has none):
    // the attempt's deadline applies to the attempts only.
    s.clients.timeout = Some(15 * MS);
    let r = run(&s, 8);
    assert_eq!((r.succeeded, r.codes.get(&RequestEnd::Timeout)), (4, None));
    // No node in rotation: every request fails at once, none waits.
    s.servers[0].present = false;
    let r = run(&s, 8);
    assert_eq!(
        (r.fail_fast, r.codes.get(&RequestEnd::FailFast)),
        (4, Some(&4))
    );
    // A node coming into rotation drains the queue at once (the core wakes its waiters on an add).
    let mut s = scenario(
        vec![
            ServerSpec::new("a", Behavior::ok(SEC)),
            ServerSpec::new("b", Behavior::ok(10 * MS)).absent(),
        ],
        vec![Arrivals::burst(0, 2, 1)],
    );
    s.actions = vec![(100 * MS, Action::Add(1))];
    let r = run(&s, 8);
    assert_eq!(r.succeeded, 2);
    assert_eq!(r.per_server_attempts, vec![1, 1]);
    // The second waited 100 ms for b, then took 10 ms: well before a's answer at 1 s.
    assert_eq!(r.client_p99_ns, SEC);
}

/// A waiting weir client's queue that stands serves its newest request first and, as the core does, sheds
/// each request with a deadline that joined more than `weir::rt::STANDING_NS` before the one served (a
/// fail-fast refusal); requests with no deadline wait on, and a burst that joined together drains whole.
#[test]
fn a_standing_weir_queue_sheds_the_requests_with_a_deadline_it_passes_over() {
    use weir::limit::{FixedLimit, LimitAlgorithm};
    use weir_sim::policy::weir::WeirPolicy;
    let config = weir::Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }),
        max_waiters: 8,
        ..weir::Config::default()
    };
    let run = |s: &Scenario| {
        let servers = s.servers.len();
        engine::run(s, &move |_, _| {
            Box::new(WeirPolicy::waiting(config, servers))
        })
    };
    // r0 is sent at 0; r1 at 60 ms (it waited 60 ms: in order); r3 arrives at 110 ms; at 120 ms the
    // oldest, r2, has waited more than 100 ms: the newest, r3, is sent, and r2, queued 110 ms before
    // it, is shed.
    let mut s = scenario(
        vec![ServerSpec::new("a", Behavior::ok(60 * MS))],
        vec![Arrivals::burst(0, 3, 1), Arrivals::burst(110 * MS, 1, 1)],
    );
    let r = run(&s);
    assert_eq!((r.succeeded, r.fail_fast), (4, 0));
    s.clients.deadline = Some(10 * SEC);
    let r = run(&s);
    assert_eq!(
        (r.succeeded, r.fail_fast, r.codes.get(&RequestEnd::FailFast)),
        (3, 1, Some(&1))
    );
    assert_eq!(r.per_server_attempts, vec![3]);
    // Four that arrive together stand past 100 ms too, but nobody newer is served ahead of them.
    s.arrivals = vec![Arrivals::burst(0, 4, 1)];
    let r = run(&s);
    assert_eq!((r.succeeded, r.fail_fast), (4, 0));
}

/// Sends every request to the last server in its list and, with `checking`, asks for a check of server 0
/// before each try (whether or not its list still has it). Records every check's answer.
#[derive(Default)]
struct Checker {
    servers: Vec<ServerId>,
    checking: bool,
    answers: Vec<(ServerId, bool, u64)>,
}

impl Balance for Checker {
    fn pick(&mut self, _now: u64, _rng: &mut Rng) -> Option<Pick> {
        Some(Pick {
            server: *self.servers.last()?,
            lease: None,
            tag: 0,
        })
    }
    fn complete(&mut self, _pick: Pick, _done: &Completion, _now: u64) {}
    fn set_servers(&mut self, servers: &[ServerId], _now: u64) {
        self.servers = servers.to_vec();
    }
    fn set_draining(&mut self, _server: ServerId, _draining: bool, _now: u64) {}
    fn due_check(&mut self, _now: u64) -> Option<ServerId> {
        self.checking.then_some(0)
    }
    fn check_answered(&mut self, server: ServerId, healthy: bool, now: u64) {
        self.answers.push((server, healthy, now));
    }
}

/// Runs `s` with one [`Checker`] client; returns the figures and the checks' answers it heard.
fn run_checker(s: &Scenario, checking: bool) -> (CellResult, Vec<(ServerId, bool, u64)>) {
    use std::sync::{Arc, Mutex};
    let heard = Arc::new(Mutex::new(Vec::new()));
    /// Hands the answers over when the engine drops the client at the end of the run.
    struct Report(Checker, Arc<Mutex<Vec<(ServerId, bool, u64)>>>);
    impl Drop for Report {
        fn drop(&mut self) {
            self.1.lock().unwrap().append(&mut self.0.answers);
        }
    }
    impl Balance for Report {
        fn pick(&mut self, now: u64, rng: &mut Rng) -> Option<Pick> {
            self.0.pick(now, rng)
        }
        fn complete(&mut self, pick: Pick, done: &Completion, now: u64) {
            self.0.complete(pick, done, now)
        }
        fn set_servers(&mut self, servers: &[ServerId], now: u64) {
            self.0.set_servers(servers, now)
        }
        fn set_draining(&mut self, server: ServerId, draining: bool, now: u64) {
            self.0.set_draining(server, draining, now)
        }
        fn due_check(&mut self, now: u64) -> Option<ServerId> {
            self.0.due_check(now)
        }
        fn check_answered(&mut self, server: ServerId, healthy: bool, now: u64) {
            self.0.check_answered(server, healthy, now)
        }
    }
    let sink = Arc::clone(&heard);
    let r = engine::run(s, &move |_, _| {
        Box::new(Report(
            Checker {
                checking,
                ..Checker::default()
            },
            Arc::clone(&sink),
        ))
    });
    let answers = std::mem::take(&mut *heard.lock().unwrap());
    (r, answers)
}

#[test]
fn a_check_is_answered_from_the_servers_behaviour_and_is_no_attempt() {
    let hole = Behavior {
        latency: Latency::Never,
        status: StatusFn::Fixed(200),
    };
    // Server 0 (checked, never called): fast 500s until 3 s, then healthy, a black hole from 5 s, down from
    // 7 s, and removed at 8.5 s; twice as slow as nominal, which a check (no work) does not feel. Server 1
    // takes every request.
    let checked = ServerSpec::new("checked", Behavior::status(500, 10 * MS))
        .then(3 * SEC, Behavior::ok(10 * MS))
        .then(5 * SEC, hole)
        .then(7 * SEC, Behavior::DOWN)
        .slowness(2.0);
    let mut s = scenario(
        vec![checked, ServerSpec::new("served", Behavior::ok(10 * MS))],
        vec![Arrivals::burst(0, 10, SEC)],
    );
    s.actions = vec![(8500 * MS, Action::Remove(0))];
    let (r, answers) = run_checker(&s, true);
    let at = |t: u64, after: u64| t * SEC + after;
    assert_eq!(
        answers,
        vec![
            // 500, at once: a health endpoint does no work, whatever the calls' service time.
            (0, false, at(0, 0)),
            (0, false, at(1, 0)),
            (0, false, at(2, 0)),
            (0, true, at(3, 0)),
            (0, true, at(4, 0)),
            // No answer: failed at the check timeout.
            (0, false, at(5, engine::CHECK_TIMEOUT)),
            (0, false, at(6, engine::CHECK_TIMEOUT)),
            // Refused, then removed: failed at once (and the policy still hears of it).
            (0, false, at(7, 0)),
            (0, false, at(8, 0)),
            (0, false, at(9, 0)),
        ]
    );
    assert_eq!(r.checks, 10);
    // No attempt, answer or busy time of the checks'.
    assert_eq!(
        (r.server_attempts, r.server_answers, r.succeeded),
        (10, 10, 10)
    );
    assert_eq!(r.per_server_attempts, vec![0, 10]);
    assert_eq!(r.server_busy_ns, u128::from(10 * 10 * MS));
    assert!(r.series[0].sent.iter().all(|&n| n == 0));
}

#[test]
fn checks_leave_the_calls_draws_as_they_were() {
    // Both servers draw: server 0's checks their latency and error, server 1's calls theirs. Checks that
    // drew from the server's generator would change the calls' latencies and errors.
    let drawn = Behavior {
        latency: Latency::LogNormal {
            median: 10 * MS,
            sigma: 0.5,
        },
        status: StatusFn::ErrorRate { code: 500, p: 0.3 },
    };
    let s = scenario(
        vec![
            ServerSpec::new("checked", drawn),
            ServerSpec::new("served", drawn),
        ],
        vec![Arrivals::burst(0, 200, 10 * MS)],
    );
    let (plain, none) = run_checker(&s, false);
    let (mut checked, answers) = run_checker(&s, true);
    assert_eq!((plain.checks, none.len()), (0, 0));
    assert_eq!((checked.checks, answers.len()), (200, 200));
    // Some checks fail (30 % of them, drawn), some pass.
    let failed = answers.iter().filter(|a| !a.1).count();
    assert!((30..=90).contains(&failed), "{failed}");
    checked.checks = 0;
    assert_eq!(checked, plain);
}

/// weir's checking client: a node that answers 500 is avoided after its first failure, checked every 2 s
/// while it stays broken (no call reaches it between checks), and called again once a check passes.
#[test]
fn a_checking_weir_client_brings_a_recovered_node_back_without_calling_it() {
    use weir_sim::policy::weir::WeirPolicy;
    let mut s = scenario(
        vec![
            ServerSpec::new("broken", Behavior::status(500, 10 * MS))
                .then(20 * SEC, Behavior::ok(10 * MS)),
            ServerSpec::new("healthy", Behavior::ok(10 * MS)),
        ],
        vec![Arrivals::burst(0, 300, 100 * MS)],
    );
    s.abort = 40 * SEC;
    let run = |checks: bool| {
        engine::run(&s, &move |_, seed| {
            let p = WeirPolicy::waiting(
                weir::Config {
                    seed,
                    ..weir::Config::default()
                },
                2,
            );
            Box::new(if checks { p.checking(2 * SEC) } else { p })
        })
    };
    let r = run(true);
    let broken = &r.sent_per_second[0];
    let sent = |from: usize, to: usize| broken.iter().take(to).skip(from).sum::<u64>();
    // The first call to it fails; none follows while it is broken.
    assert!(sent(0, 2) >= 1, "{broken:?}");
    assert_eq!(sent(2, 20), 0, "{broken:?}");
    // A check every 2 s from the first failure (answered at once, 10 ms later; then 2 s quiet).
    assert!((8..=10).contains(&r.checks), "{}", r.checks);
    // Back within a check period of its recovery, with about its share from then on.
    assert!(sent(20, 23) > 0, "{broken:?}");
    assert!(sent(23, 30) >= 20, "{broken:?}");
    // Without checks, nothing brings it back (the default has no probes).
    let plain = run(false);
    assert_eq!(plain.checks, 0);
    assert_eq!(
        plain.sent_per_second[0].iter().skip(2).sum::<u64>(),
        0,
        "{:?}",
        plain.sent_per_second[0]
    );
}

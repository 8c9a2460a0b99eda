//! Least-loaded round robin.

use weir::Rng;

use super::members::{Cursor, Members};
use crate::policy::{Balance, Completion, Pick, Reply, ServerId};

/// [`LeastLoaded`]'s parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeastLoadedConfig {
    /// Count recent errors as active requests (the SRE chapter's fix for sinkholing).
    pub count_errors: bool,
    /// How fast an error stops counting: its weight halves every `error_half_life_ns` (default 1 s). Only
    /// used with `count_errors`.
    pub error_half_life_ns: u64,
}

impl Default for LeastLoadedConfig {
    /// Plain least-loaded round robin (errors not counted), half-life 1 s for when they are.
    fn default() -> Self {
        LeastLoadedConfig {
            count_errors: false,
            error_half_life_ns: 1_000_000_000,
        }
    }
}

/// Decaying count of a server's recent errors.
#[derive(Clone, Copy, Debug, Default)]
struct Penalty {
    /// The count at `at`.
    value: f64,
    at: u64,
}

impl Penalty {
    fn value_at(&self, now: u64, half_life_ns: u64) -> f64 {
        if self.value == 0.0 {
            return 0.0;
        }
        let elapsed = now.saturating_sub(self.at) as f64;
        // `half_life_ns` is at least 1 (see `with_config`), so the exponent is never NaN.
        self.value * 0.5f64.powf(elapsed / half_life_ns as f64)
    }

    /// How many active requests the errors count as: the decayed count rounded to the nearest integer
    /// (halves up), so one error counts as one request until it has decayed below one half.
    fn active_at(&self, now: u64, half_life_ns: u64) -> u64 {
        // A float-to-int `as` saturates, and the value is finite and non-negative.
        (self.value_at(now, half_life_ns) + 0.5).floor() as u64
    }

    fn add_error(&mut self, now: u64, half_life_ns: u64) {
        self.value = self.value_at(now, half_life_ns) + 1.0;
        self.at = now;
    }
}

/// Whether a reply is an error for [`LeastLoaded`]'s error counting: anything but a success or a client
/// error. A 4xx other than 429 is the caller's fault and says nothing about the server; 429, 5xx, connection
/// errors, timeouts (and 1xx/3xx, which a client should never see as a final answer) do.
fn is_error(reply: Reply) -> bool {
    let client_error = matches!(reply, Reply::Status(400..=499)) && reply != Reply::Status(429);
    !(reply.is_success() || client_error)
}

/// Least-loaded round robin ([SRE book] ch. 20, "Least-Loaded Round Robin"): round robin
/// among the servers with the fewest active requests, counting only this client's requests in flight.
///
/// The cursor moves like [`RoundRobin`](super::RoundRobin)'s (per-client random start, continues after the
/// last pick) but skips every server whose load is above the current minimum, so with nothing in flight it
/// is plain round robin and under load it steers away from servers that hold requests longer.
///
/// The chapter's pitfall is that a server failing fast has no active requests and *sinkholes* traffic; its
/// fix is to "count recent errors as if they were active requests". With
/// [`count_errors`](LeastLoadedConfig::count_errors) this policy does so, defining *recent* as follows: each
/// error (see below) adds 1 to a per-server penalty that halves every
/// [`error_half_life_ns`](LeastLoadedConfig::error_half_life_ns) (1 s by default), and the penalty rounded to
/// the nearest integer is added to the server's active count. One error thus counts as one active request for
/// one half-life; a burst of k errors for about log2(2k) half-lives. An integer keeps the SRE tie semantics
/// (round robin among equals) instead of letting a fading trace break every tie. Errors are replies that are
/// neither a success nor a 4xx other than 429: 5xx, 429, connection errors and timeouts.
///
/// It refuses only when no server can be used, and then fails fast.
///
/// [SRE book]: https://sre.google/sre-book/load-balancing-datacenter/
#[derive(Debug)]
pub struct LeastLoaded {
    config: LeastLoadedConfig,
    members: Members<Penalty>,
    cursor: Cursor,
    /// Scratch: each server's load during a pick.
    loads: Vec<u64>,
}

impl LeastLoaded {
    /// Plain least-loaded round robin (the SRE chapter's first version, which sinkholes).
    pub fn new(seed: u64) -> Self {
        Self::with_config(seed, LeastLoadedConfig::default())
    }

    /// Least-loaded round robin that counts recent errors as active requests, with the default half-life.
    pub fn counting_errors(seed: u64) -> Self {
        Self::with_config(
            seed,
            LeastLoadedConfig {
                count_errors: true,
                ..LeastLoadedConfig::default()
            },
        )
    }

    /// Least-loaded round robin with `config` (a half-life of 0 is taken as 1 ns); `seed` sets where in the
    /// list the client starts.
    pub fn with_config(seed: u64, config: LeastLoadedConfig) -> Self {
        LeastLoaded {
            config: LeastLoadedConfig {
                error_half_life_ns: config.error_half_life_ns.max(1),
                ..config
            },
            members: Members::new(),
            cursor: Cursor::new(seed),
            loads: Vec::new(),
        }
    }

    /// Attempts picked and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.members.in_flight()
    }
}

impl Balance for LeastLoaded {
    fn pick(&mut self, now: u64, _rng: &mut Rng) -> Option<Pick> {
        let half_life = self.config.error_half_life_ns;
        let count_errors = self.config.count_errors;
        let nodes = self.members.nodes();
        self.loads.clear();
        self.loads.extend(nodes.iter().map(|n| {
            let errors = if count_errors {
                n.state.active_at(now, half_life)
            } else {
                0
            };
            u64::from(n.inflight).saturating_add(errors)
        }));
        let min = self.members.usable().iter().map(|&i| self.loads[i]).min()?;
        let loads = &self.loads;
        let index = self
            .cursor
            .advance(nodes, |i| !nodes[i].draining && loads[i] == min)?;
        Some(self.members.start(index, ()))
    }

    fn complete(&mut self, pick: Pick, done: &Completion, now: u64) {
        let Some((index, ())) = self.members.finish(pick.tag) else {
            return;
        };
        if self.config.count_errors && is_error(done.reply) {
            let half_life = self.config.error_half_life_ns;
            self.members.nodes_mut()[index]
                .state
                .add_error(now, half_life);
        }
    }

    fn set_servers(&mut self, servers: &[ServerId], _now: u64) {
        self.members.set(servers, |_| Penalty::default());
        self.cursor.reset(&self.members);
    }

    fn set_draining(&mut self, server: ServerId, draining: bool, _now: u64) {
        self.members.set_draining(server, draining);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn done(status: u16) -> Completion {
        Completion {
            reply: Reply::Status(status),
            rtt_ns: MS,
            report: None,
        }
    }

    #[test]
    fn errors_are_what_the_server_is_responsible_for() {
        for s in [429, 500, 503, 302] {
            assert!(is_error(Reply::Status(s)), "{s}");
        }
        for s in [200, 204, 400, 404] {
            assert!(!is_error(Reply::Status(s)), "{s}");
        }
        assert!(is_error(Reply::Refused));
        assert!(is_error(Reply::Timeout));
    }

    #[test]
    fn round_robin_among_the_least_loaded() {
        // The SRE chapter's table: t0..t9 with 2 1 0 0 1 0 2 0 0 1 active requests.
        let mut rng = Rng::with_seed(1);
        let mut p = LeastLoaded::new(5);
        let servers: Vec<ServerId> = (0..10).collect();
        p.set_servers(&servers, 0);
        let active = [2, 1, 0, 0, 1, 0, 2, 0, 0, 1];
        let mut tags = vec![Vec::new(); 10];
        for (s, &k) in active.iter().enumerate() {
            let index = p.members.position(s).unwrap();
            for _ in 0..k {
                tags[s].push(p.members.start(index, ()).tag);
            }
        }
        p.cursor.next = 0;
        let first: Vec<ServerId> = (0..5)
            .map(|_| p.pick(0, &mut rng).unwrap())
            .map(|pick| {
                tags[pick.server].push(pick.tag);
                pick.server
            })
            .collect();
        assert_eq!(first, [2, 3, 5, 7, 8]);
        // Now everything but t0 and t6 has one: round robin among those eight, from t9 on.
        let next: Vec<ServerId> = (0..8)
            .map(|_| p.pick(0, &mut rng).unwrap())
            .map(|pick| {
                tags[pick.server].push(pick.tag);
                pick.server
            })
            .collect();
        assert_eq!(next, [9, 1, 2, 3, 4, 5, 7, 8]);
        // A completion on t4 makes it the only least-loaded one.
        p.complete(
            Pick {
                server: 4,
                lease: None,
                tag: tags[4][0],
            },
            &done(200),
            0,
        );
        assert_eq!(p.pick(0, &mut rng).unwrap().server, 4);
    }

    #[test]
    fn picks_the_server_with_fewer_in_flight() {
        let mut rng = Rng::with_seed(1);
        let mut p = LeastLoaded::new(0);
        p.set_servers(&[0, 1], 0);
        let a = p.pick(0, &mut rng).unwrap();
        let b = p.pick(0, &mut rng).unwrap();
        assert_ne!(a.server, b.server);
        p.complete(b, &done(200), 1);
        // `b` is now empty and `a` holds one: `b` is the least loaded; with `b` draining, `a` is the only choice.
        assert_eq!(p.pick(2, &mut rng).unwrap().server, b.server);
        p.set_draining(b.server, true, 2);
        assert_eq!(p.pick(2, &mut rng).unwrap().server, a.server);
    }

    /// Server 0 answers in 1 s; server 1 fails every attempt at once. One attempt every millisecond for
    /// 200 ms: the plain policy sends nearly everything to the failing server, the error-counting one only
    /// its share.
    fn fast_failure_share(mut p: LeastLoaded) -> usize {
        let mut rng = Rng::with_seed(9);
        p.set_servers(&[0, 1], 0);
        let mut to_failing = 0;
        for t in 0..200u64 {
            let now = t * MS;
            let pick = p.pick(now, &mut rng).unwrap();
            if pick.server == 1 {
                to_failing += 1;
                p.complete(pick, &done(503), now);
            }
        }
        to_failing
    }

    #[test]
    fn plain_sinkholes_into_a_fast_failing_server_and_counting_errors_does_not() {
        let plain = fast_failure_share(LeastLoaded::new(3));
        let counting = fast_failure_share(LeastLoaded::counting_errors(3));
        assert_eq!(
            plain, 199,
            "all but at most one attempt go to the failing server"
        );
        // Counting errors: the failing server's penalty (≈ its errors of the last 200 ms) competes with the
        // slow server's in-flight count, so it gets about half.
        assert!((95..=105).contains(&counting), "{counting}");
    }

    #[test]
    fn an_error_counts_as_one_request_for_one_half_life() {
        let mut p = Penalty::default();
        p.add_error(0, 1000);
        assert_eq!(p.active_at(0, 1000), 1);
        assert_eq!(p.active_at(999, 1000), 1);
        assert_eq!(p.active_at(1000, 1000), 1, "exactly one half rounds up");
        assert_eq!(p.active_at(1001, 1000), 0);
        p.add_error(1000, 1000);
        assert!((p.value_at(1000, 1000) - 1.5).abs() < 1e-12);
        assert!((p.value_at(3000, 1000) - 0.375).abs() < 1e-12);
    }
}

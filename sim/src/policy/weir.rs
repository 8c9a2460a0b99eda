//! weir's policies in the simulator: the real core ([`weir::Balancer`]), one per client.

use weir::balance::Rejected;
use weir::limit::ServerLoad;
use weir::{Balancer, Config, HeapBalancer, Lease, Rng};

use weir::backoff::BackoffConfig;
use weir::overload::RetryBudgetConfig;

use crate::model::{Retries, RetryBackoff, RetryOn, MS, SEC};
use crate::policy::{Balance, Completion, Pick, Refusal, RetryPlan, ServerId};

/// A client's weir balancer. Node ids are server indices; the lease travels inside the [`Pick`].
pub struct WeirPolicy {
    balancer: HeapBalancer,
    members: Vec<ServerId>,
    /// Releases the core refused (a lease of a node removed meanwhile): reported no-ops, counted.
    stale_releases: u64,
    /// What the client does with a refused request.
    refusal: Refusal,
    /// The last acquire's refusal.
    refused: Option<Rejected>,
    /// Retries go elsewhere (`acquire_excluding`), within weir's retry budget.
    elsewhere: bool,
    /// The tried nodes' ids, for `acquire_excluding` (kept to save an allocation per retry).
    exclude: Vec<u64>,
    /// Releases carry the server's load report, where its answer has one (`Balancer::release_loaded`).
    reads_load: bool,
    /// Health checks (`Balancer::due_check`) to the nodes the balancer avoids, each quiet this long.
    check_quiet_ns: Option<u64>,
    /// Check answers the core refused (a node removed while its check was under way): no-ops, counted.
    stale_checks: u64,
}

/// The rule of [`WeirPolicy::retrying_elsewhere`] where the scenario has none: every 5xx, 429, reset and
/// timeout retried up to 3 times, after weir's responsive backoff (from 25 ms, at most 1 s).
pub fn elsewhere_retries() -> Retries {
    Retries {
        max: 3,
        backoff: RetryBackoff::Responsive(BackoffConfig {
            initial_ns: 25 * MS,
            max_ns: SEC,
            ..BackoffConfig::default()
        }),
        budget: None,
        on: RetryOn::Retryable,
    }
}

impl WeirPolicy {
    /// A balancer with room for `servers` nodes (every server a scenario may add).
    ///
    /// # Panics
    /// If `config` is invalid or `servers` is 0 or above [`weir::balance::MAX_NODES`]: the policy table is code, not
    /// input, so that is a bug in the simulator.
    pub fn new(config: Config, servers: usize) -> WeirPolicy {
        WeirPolicy {
            balancer: Balancer::with_capacity(servers.max(1), config).expect("valid weir config"),
            members: Vec::new(),
            stale_releases: 0,
            refusal: Refusal::FailFast,
            refused: None,
            elsewhere: false,
            exclude: Vec::new(),
            reads_load: false,
            check_quiet_ns: None,
            stale_checks: 0,
        }
    }

    /// The same policy, releasing each answer with the utilization its server reported
    /// ([`Balancer::release_loaded`]).
    pub fn reading_load(self) -> WeirPolicy {
        WeirPolicy {
            reads_load: true,
            ..self
        }
    }

    /// The same policy, sending health checks: before each try, the client asks
    /// [`Balancer::due_check`] with `quiet_ns` for a node it avoids that is due for one, sends it a check,
    /// and reports the answer with [`Balancer::report_check`].
    pub fn checking(self, quiet_ns: u64) -> WeirPolicy {
        WeirPolicy {
            check_quiet_ns: Some(quiet_ns),
            ..self
        }
    }

    /// [`waiting`](Self::waiting) (weir's default client), whose retries go to another node than those
    /// the request tried (`Balancer::acquire_excluding`) within weir's `RetryBudget` (its defaults: 20 %
    /// of requests plus 10 a second over 10 s), which replaces the scenario's budget. The scenario's
    /// rule decides which replies are retried, how often and after what delay; where it has none,
    /// [`elsewhere_retries`].
    pub fn retrying_elsewhere(config: Config, servers: usize) -> WeirPolicy {
        WeirPolicy {
            elsewhere: true,
            ..WeirPolicy::waiting(config, servers)
        }
    }

    /// The same, but the client queues the requests weir refuses and asks again whenever one of its
    /// attempts completes (the simulator's stand-in for a caller-side queue such as dialogue's).
    pub fn queued(config: Config, servers: usize) -> WeirPolicy {
        WeirPolicy {
            refusal: Refusal::Queue,
            ..WeirPolicy::new(config, servers)
        }
    }

    /// The same, with the client waiting as the core's waiting acquire does (see [`Refusal::Wait`]),
    /// with the configuration's `max_waiters`.
    pub fn waiting(config: Config, servers: usize) -> WeirPolicy {
        WeirPolicy {
            refusal: Refusal::Wait {
                max_waiters: config.max_waiters as usize,
            },
            ..WeirPolicy::new(config, servers)
        }
    }

    /// The pick for an acquire's answer; a refusal is kept for [`Balance::no_nodes`].
    fn answer(&mut self, got: Result<Lease, Rejected>) -> Option<Pick> {
        let lease = got.map_err(|r| self.refused = Some(r)).ok()?;
        Some(Pick {
            server: lease.node_id() as ServerId,
            lease: Some(lease.into_raw()),
            tag: 0,
        })
    }

    /// Releases the core reported as stale (the node left while the attempt was in flight).
    pub fn stale_releases(&self) -> u64 {
        self.stale_releases
    }

    /// Check answers the core refused (the node left while its check was under way).
    pub fn stale_checks(&self) -> u64 {
        self.stale_checks
    }
}

impl Balance for WeirPolicy {
    fn pick(&mut self, now: u64, rng: &mut Rng) -> Option<Pick> {
        let got = self.balancer.acquire(now, rng);
        self.answer(got)
    }

    fn complete(&mut self, pick: Pick, done: &Completion, now: u64) {
        if let Some(raw) = pick.lease {
            let (lease, outcome) = (Lease::from_raw(raw), done.reply.outcome());
            // A report the core refuses (a utilization above 1,000) is not one the engine sends; it
            // would be released without.
            let load = done
                .report
                .filter(|_| self.reads_load)
                .and_then(|r| ServerLoad::from_utilization(r.utilization).ok());
            if self
                .balancer
                .release_loaded(lease, outcome, now, load)
                .is_err()
            {
                self.stale_releases += 1;
            }
        }
    }

    fn set_servers(&mut self, servers: &[ServerId], _now: u64) {
        for &gone in self.members.iter().filter(|s| !servers.contains(s)) {
            let _ = self.balancer.remove(gone as u64);
        }
        for &new in servers.iter().filter(|s| !self.members.contains(s)) {
            let _ = self.balancer.add(new as u64);
        }
        self.members.clear();
        self.members.extend_from_slice(servers);
    }

    fn set_draining(&mut self, server: ServerId, draining: bool, _now: u64) {
        let _ = self.balancer.set_lame_duck(server as u64, draining);
    }

    fn on_refusal(&self) -> Refusal {
        self.refusal
    }

    fn no_nodes(&self) -> bool {
        self.refused == Some(Rejected::NoActiveNodes)
    }

    fn pick_retry(&mut self, now: u64, rng: &mut Rng, tried: &[ServerId]) -> Option<Pick> {
        if !self.elsewhere {
            return self.pick(now, rng);
        }
        self.exclude.clear();
        self.exclude.extend(tried.iter().map(|&s| s as u64));
        let got = self.balancer.acquire_excluding(now, rng, &self.exclude);
        self.answer(got)
    }

    fn retry_plan(&self, scenario: Option<Retries>) -> RetryPlan {
        if !self.elsewhere {
            return RetryPlan {
                rule: scenario,
                budget: None,
            };
        }
        RetryPlan {
            rule: Some(Retries {
                budget: None,
                ..scenario.unwrap_or_else(elsewhere_retries)
            }),
            budget: Some(RetryBudgetConfig::default()),
        }
    }

    fn due_check(&mut self, now: u64) -> Option<ServerId> {
        let quiet_ns = self.check_quiet_ns?;
        self.balancer
            .due_check(now, quiet_ns)
            .map(|id| id as ServerId)
    }

    fn check_answered(&mut self, server: ServerId, healthy: bool, now: u64) {
        if self
            .balancer
            .report_check(server as u64, healthy, now)
            .is_err()
        {
            self.stale_checks += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Reply;

    #[test]
    fn follows_membership_and_releases_leases() {
        let mut p = WeirPolicy::new(Config::cascade(), 4);
        let mut rng = Rng::with_seed(7);
        p.set_servers(&[0, 2], 0);
        let mut seen = [0u32; 4];
        let mut picks = Vec::new();
        for _ in 0..200 {
            let pick = p.pick(1, &mut rng).unwrap();
            seen[pick.server] += 1;
            picks.push(pick);
        }
        assert_eq!((seen[1], seen[3]), (0, 0));
        assert!(seen[0] > 50 && seen[2] > 50, "{seen:?}");
        // Fixed(100) per node: 200 in flight on two nodes is the limit.
        assert!(p.pick(1, &mut rng).is_none());
        p.set_servers(&[2, 3], 2);
        let ok = Completion {
            reply: Reply::Status(200),
            rtt_ns: 1,
            report: None,
        };
        for pick in picks {
            p.complete(pick, &ok, 3);
        }
        assert_eq!(p.stale_releases(), seen[0] as u64);
        p.set_draining(2, true, 4);
        assert!((0..50).all(|_| p.pick(5, &mut rng).unwrap().server == 3));
    }

    #[test]
    fn checking_names_an_avoided_node_and_reports_the_answer_to_the_core() {
        const S: u64 = 1_000_000_000;
        let ok = Completion {
            reply: Reply::Status(200),
            rtt_ns: 1,
            report: None,
        };
        let failed = Completion {
            reply: Reply::Status(500),
            ..ok
        };
        let mut rng = Rng::with_seed(5);
        let mut plain = WeirPolicy::new(Config::default(), 2);
        let mut p = WeirPolicy::new(Config::default(), 2).checking(2 * S);
        let later = 3 * S + S / 2;
        for q in [&mut plain, &mut p] {
            q.set_servers(&[0, 1], 0);
            // Node 1 fails once, and is avoided from then on.
            loop {
                let pick = q.pick(S, &mut rng).unwrap();
                let one = pick.server == 1;
                q.complete(pick, if one { &failed } else { &ok }, S);
                if one {
                    break;
                }
            }
            let pick = q.pick(later, &mut rng).unwrap();
            assert_eq!(pick.server, 0);
            q.complete(pick, &ok, later);
        }
        // Quiet for 2.5 s: due for a check, named once, where the policy checks at all.
        assert_eq!(plain.due_check(later), None);
        assert_eq!(p.due_check(later), Some(1));
        assert_eq!(p.due_check(later), None);
        assert!(p.balancer.node(1, later).unwrap().penalty > 0.0);
        p.check_answered(1, true, later);
        assert_eq!(p.balancer.node(1, later).unwrap().penalty, 0.0);
        assert_eq!(p.stale_checks(), 0);
        // An answer for a node that left meanwhile: refused by the core, counted.
        p.set_servers(&[0], later);
        p.check_answered(1, false, later);
        assert_eq!(p.stale_checks(), 1);
    }

    #[test]
    fn retrying_elsewhere_excludes_the_tried_servers_within_a_budget() {
        let mut p = WeirPolicy::retrying_elsewhere(Config::default(), 3);
        let mut rng = Rng::with_seed(3);
        p.set_servers(&[0, 1, 2], 0);
        for _ in 0..100 {
            let pick = p.pick_retry(1, &mut rng, &[1, 2, 1]).unwrap();
            assert_eq!(pick.server, 0);
            let ok = Completion {
                reply: Reply::Status(200),
                rtt_ns: 1,
                report: None,
            };
            p.complete(pick, &ok, 2);
        }
        // Every server tried: the ordinary acquire, which may pick any.
        assert!(p.pick_retry(3, &mut rng, &[0, 1, 2]).is_some());
        let plan = p.retry_plan(None);
        assert_eq!(plan.rule, Some(elsewhere_retries()));
        assert_eq!(plan.budget, Some(RetryBudgetConfig::default()));
        // The plain policies keep the scenario's rule and ignore what was tried.
        let plain = WeirPolicy::new(Config::default(), 3);
        assert_eq!(
            plain.retry_plan(None),
            RetryPlan {
                rule: None,
                budget: None
            }
        );
    }
}

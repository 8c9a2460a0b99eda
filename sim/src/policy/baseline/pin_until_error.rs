//! dialogue's PIN_UNTIL_ERROR node selection.

use weir::Rng;

use super::aimd::{Aimd, HostVerdict};
use super::members::Members;
use crate::policy::{Balance, Completion, Pick, Refusal, Reply, ServerId};

const SECOND: u64 = 1_000_000_000;
/// The node order is reshuffled this often, plus the jitter.
const RESHUFFLE_EVERY_NS: u64 = 600 * SECOND;

/// Whether a reply moves the pin: any 5xx, a 308 (retry elsewhere; 503 is a 5xx already), a connection error
/// or a timeout. Never a 429: transactional workloads need their requests on one node even when a few are
/// rate limited.
fn switches(reply: Reply) -> bool {
    matches!(
        reply,
        Reply::Status(308 | 500..=599) | Reply::Refused | Reply::Timeout
    )
}

/// palantir/dialogue's `PIN_UNTIL_ERROR` strategy with its host-level AIMD limiter
/// (shared/reference/load-balancers.md §1.3).
///
/// The client shuffles its node list once (so a fleet of clients does not move, all together, from a
/// restarted node n to node n+1) and sends everything to `nodes[pin]`, which keeps caches warm. A 5xx, 308,
/// connection error or timeout moves the pin to `(pin + 1) mod n`, but only if the pin has not moved since
/// the failed attempt was sent: dialogue does `CAS(pin_at_send → pin_at_send + 1)`, so late answers from a
/// node it already left do not kick it off a good one. The comparison is on the pin *index*, as in dialogue:
/// a failure sent before a reshuffle can still move the pin afterwards if the index is unchanged. A 429 never
/// moves the pin.
///
/// The list is reshuffled every 10 min plus a jitter drawn once per node list, a whole number of seconds in
/// [−30 s, +30 s) (dialogue's `nextInt(60) − 30`), so the clients of a fleet do not reshuffle together. The
/// reshuffle happens on the first pick that finds it due and keeps the pin index, which usually lands the
/// client on another node: that is what spreads clients again after failures bunched them up.
///
/// Each node has a host-level [`Aimd`] limiter. If the pinned node's limiter refuses there is no fallback to
/// another node: [`pick`](Balance::pick) returns `None` and [`on_refusal`](Balance::on_refusal) says
/// [`Refusal::Queue`] (dialogue dropped switching on refusal because it round-robins while limiters warm up).
/// With no servers at all it says [`Refusal::FailFast`], as dialogue's zero-URI channel fails requests.
///
/// A pinned node in lame duck (not a dialogue concept) moves the pin forward to the next node not in lame
/// duck; with every node in lame duck the pick is refused. A change in the set of servers rebuilds
/// everything, as dialogue does on a URI change: a new shuffle from the seeded generator, pin 0, fresh limiters,
/// a new jitter; attempts still in flight complete against nothing. The same set in another order changes
/// nothing. The initial shuffles and jitters come from a generator seeded with `seed`; the periodic
/// reshuffles, made during a pick, use the `rng` passed to it.
#[derive(Debug)]
pub struct PinUntilError {
    rng: Rng,
    /// Per node its limiter; per attempt (admission in-flight count, pin index at send).
    members: Members<Aimd, (u32, usize)>,
    /// Index of the pinned node in the (shuffled) order.
    pin: usize,
    /// 10 min plus this list's jitter.
    reshuffle_every: u64,
    next_reshuffle: u64,
}

impl PinUntilError {
    /// dialogue's PIN_UNTIL_ERROR; `seed` sets the client's node order and reshuffle jitter.
    pub fn new(seed: u64) -> Self {
        PinUntilError {
            rng: Rng::with_seed(seed),
            members: Members::new(),
            pin: 0,
            reshuffle_every: RESHUFFLE_EVERY_NS,
            next_reshuffle: u64::MAX,
        }
    }

    /// Attempts picked and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.members.in_flight()
    }

    /// The server the next attempt would go to if its limiter admits it (ignoring a due reshuffle and lame
    /// ducks).
    pub fn pinned(&self) -> Option<ServerId> {
        self.members.nodes().get(self.pin).map(|n| n.id)
    }
}

impl Balance for PinUntilError {
    fn pick(&mut self, now: u64, rng: &mut Rng) -> Option<Pick> {
        let n = self.members.nodes().len();
        if n == 0 {
            return None;
        }
        if now >= self.next_reshuffle {
            self.members.shuffle(rng);
            self.next_reshuffle = now.saturating_add(self.reshuffle_every);
        }
        let nodes = self.members.nodes();
        let pin = (0..n)
            .map(|k| (self.pin + k) % n)
            .find(|&i| !nodes[i].draining)?;
        self.pin = pin;
        let snapshot = self.members.nodes_mut()[pin].state.try_acquire()?;
        Some(self.members.start(pin, (snapshot, pin)))
    }

    fn complete(&mut self, pick: Pick, done: &Completion, _now: u64) {
        let Some((index, (snapshot, pin_at_send))) = self.members.finish(pick.tag) else {
            return;
        };
        let n = self.members.nodes().len();
        self.members.nodes_mut()[index]
            .state
            .release(snapshot, HostVerdict::of(done.reply));
        if switches(done.reply) && self.pin == pin_at_send {
            self.pin = (pin_at_send + 1) % n;
        }
    }

    fn set_servers(&mut self, servers: &[ServerId], now: u64) {
        if self.members.same_set(servers) {
            return;
        }
        self.members.set(servers, false, |_| Aimd::new());
        self.members.shuffle(&mut self.rng);
        self.pin = 0;
        let jitter_s = self.rng.i64(-30..30);
        self.reshuffle_every = RESHUFFLE_EVERY_NS.saturating_add_signed(jitter_s * SECOND as i64);
        self.next_reshuffle = now.saturating_add(self.reshuffle_every);
    }

    fn set_draining(&mut self, server: ServerId, draining: bool, _now: u64) {
        self.members.set_draining(server, draining);
    }

    fn on_refusal(&self) -> Refusal {
        self.members.queue_unless_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(reply: Reply) -> Completion {
        Completion {
            reply,
            rtt_ns: 1,
            report: None,
        }
    }

    fn order_of(p: &PinUntilError) -> Vec<ServerId> {
        p.members.nodes().iter().map(|n| n.id).collect()
    }

    #[test]
    fn initial_order_is_shuffled_per_client() {
        let servers: Vec<ServerId> = (0..8).collect();
        let firsts: std::collections::BTreeSet<ServerId> = (0..20)
            .map(|seed| {
                let mut p = PinUntilError::new(seed);
                p.set_servers(&servers, 0);
                p.pinned().unwrap()
            })
            .collect();
        assert!(firsts.len() >= 5, "{firsts:?}");
    }

    #[test]
    fn stays_pinned_switches_on_500_but_not_on_429() {
        let mut rng = Rng::with_seed(1);
        let mut p = PinUntilError::new(5);
        p.set_servers(&[0, 1, 2, 3], 0);
        let order = order_of(&p);
        for t in 0..50 {
            let pick = p.pick(t, &mut rng).unwrap();
            assert_eq!(pick.server, order[0]);
            p.complete(
                pick,
                &done(Reply::Status(if t % 2 == 0 { 200 } else { 429 })),
                t,
            );
        }
        let pick = p.pick(50, &mut rng).unwrap();
        p.complete(pick, &done(Reply::Status(500)), 50);
        assert_eq!(p.pick(51, &mut rng).unwrap().server, order[1]);
        assert_eq!(p.pinned(), Some(order[1]));
        // The 500 did not touch the host limiter; a refused connection moves on and cuts the limit.
        let pick = p.pick(52, &mut rng).unwrap();
        p.complete(pick, &done(Reply::Refused), 52);
        assert_eq!(p.pinned(), Some(order[2]));
        assert_eq!(p.members.nodes()[1].state.limit(), 18.0);
        assert_eq!(p.members.nodes()[0].state.limit(), 20.0);
    }

    #[test]
    fn a_stale_failure_does_not_move_the_pin_again() {
        let mut rng = Rng::with_seed(1);
        let mut p = PinUntilError::new(6);
        p.set_servers(&[0, 1, 2], 0);
        let order = order_of(&p);
        let first = p.pick(0, &mut rng).unwrap();
        let second = p.pick(0, &mut rng).unwrap();
        p.complete(first, &done(Reply::Status(503)), 1);
        assert_eq!(p.pinned(), Some(order[1]));
        // `second` was sent to the old pin: its failure is stale.
        p.complete(second, &done(Reply::Timeout), 2);
        assert_eq!(p.pinned(), Some(order[1]));
        // The pin wraps around.
        for k in 1..=3 {
            let pick = p.pick(3, &mut rng).unwrap();
            assert_eq!(pick.server, order[k % 3]);
            p.complete(pick, &done(Reply::Status(502)), 3);
        }
        assert_eq!(p.pinned(), Some(order[1]));
    }

    #[test]
    fn reshuffles_after_about_ten_minutes() {
        let mut rng = Rng::with_seed(2);
        let mut p = PinUntilError::new(7);
        let servers: Vec<ServerId> = (0..8).collect();
        p.set_servers(&servers, 0);
        let every = p.reshuffle_every;
        assert!((570 * SECOND..630 * SECOND).contains(&every), "{every}");
        assert_eq!(every % SECOND, 0);
        let before = order_of(&p);
        let pick = p.pick(every - 1, &mut rng).unwrap();
        p.complete(pick, &done(Reply::Status(200)), every - 1);
        assert_eq!(order_of(&p), before);
        let pick = p.pick(every, &mut rng).unwrap();
        p.complete(pick, &done(Reply::Status(200)), every);
        assert_ne!(order_of(&p), before);
        assert_eq!(p.next_reshuffle, 2 * every);
        // The jitter differs between clients.
        let jitters: std::collections::BTreeSet<u64> = (0..10)
            .map(|seed| {
                let mut p = PinUntilError::new(seed);
                p.set_servers(&servers, 0);
                p.reshuffle_every
            })
            .collect();
        assert!(jitters.len() > 5, "{jitters:?}");
    }

    #[test]
    fn a_refusing_limiter_queues_instead_of_moving() {
        let mut rng = Rng::with_seed(3);
        let mut p = PinUntilError::new(8);
        p.set_servers(&[0, 1], 0);
        let pinned = p.pinned().unwrap();
        let picks: Vec<Pick> = (0..20).map(|_| p.pick(0, &mut rng).unwrap()).collect();
        assert!(picks.iter().all(|pick| pick.server == pinned));
        assert_eq!(p.pick(0, &mut rng), None);
        assert_eq!(p.on_refusal(), Refusal::Queue);
        assert_eq!(p.pinned(), Some(pinned));
        for pick in picks {
            p.complete(pick, &done(Reply::Status(200)), 1);
        }
        assert_eq!(p.in_flight(), 0);
    }

    #[test]
    fn a_lame_duck_pin_moves_on_and_a_new_set_rebuilds() {
        let mut rng = Rng::with_seed(4);
        let mut p = PinUntilError::new(9);
        p.set_servers(&[0, 1, 2], 0);
        let order = order_of(&p);
        p.set_draining(order[0], true, 0);
        p.set_draining(order[1], true, 0);
        assert_eq!(p.pick(0, &mut rng).unwrap().server, order[2]);
        // Leaving lame duck does not move the pin back.
        p.set_draining(order[0], false, 0);
        assert_eq!(p.pick(0, &mut rng).unwrap().server, order[2]);
        p.set_draining(order[0], true, 0);
        p.set_draining(order[2], true, 0);
        assert_eq!(p.pick(0, &mut rng), None);
        // The same set in another order changes nothing; another set rebuilds (pin 0, fresh limiters).
        p.set_servers(&[2, 1, 0], 1);
        assert_eq!(p.pinned(), Some(order[2]));
        p.set_servers(&[0, 1, 2, 3], 1);
        assert_eq!(
            p.members
                .nodes()
                .iter()
                .map(|n| n.state.in_flight())
                .sum::<u32>(),
            0
        );
        assert_eq!(p.pinned(), Some(order_of(&p)[0]));
        p.set_servers(&[], 2);
        assert_eq!(p.pick(2, &mut rng), None);
        assert_eq!(p.on_refusal(), Refusal::FailFast);
    }
}

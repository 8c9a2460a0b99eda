//! dialogue's PIN_UNTIL_ERROR node selection (`PinUntilErrorNodeSelectionStrategyChannel` with its
//! `ReshufflingNodeList`).

use super::java::JavaRandom;
use super::Outcome;

const SECOND: u64 = 1_000_000_000;
/// The node list is reshuffled this often, plus a jitter drawn once per list.
const RESHUFFLE_EVERY_NS: u64 = 600 * SECOND;

/// Whether an outcome moves the pin: any 5xx, a QoS status other than 429 (308, 503), any exception. Never a
/// 429: transactional workloads need their requests on one node even when a few are rate limited.
pub fn switches(outcome: Outcome) -> bool {
    match outcome {
        Outcome::Response(s) => s == 308 || (500..=599).contains(&s),
        Outcome::Io { .. } | Outcome::Failed => true,
    }
}

/// One client's pin: its shuffled node list, the pinned position, and the reshuffle clock.
///
/// Built from the shared generator, in dialogue's order: `Collections.shuffle` of the hosts (so a fleet of
/// clients does not move, all together, from a restarted node n to node n+1), then `nextInt(60) − 30`
/// whole seconds of jitter on the 10-minute reshuffle interval. Every request goes to `order[pin]`; the
/// list is reshuffled (keeping the pin position, which usually lands on another node) by the first request
/// that finds the reshuffle due. A failure moves the pin to `(pin_at_send + 1) mod n` only if the pin is
/// still where that request found it (dialogue's compare-and-set), so late answers from a node already
/// left do not kick the client off a good one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    order: Vec<usize>,
    pin: usize,
    interval: u64,
    next_reshuffle: u64,
}

impl Pin {
    /// The pin over hosts `0..hosts` of a channel built at `now`.
    pub fn new(hosts: usize, now: u64, java: &mut JavaRandom) -> Self {
        let mut order: Vec<usize> = (0..hosts).collect();
        java.shuffle(&mut order);
        let jitter = i64::from(java.next_int_below(60) - 30);
        let interval = RESHUFFLE_EVERY_NS.saturating_add_signed(jitter * SECOND as i64);
        Pin {
            order,
            pin: 0,
            interval,
            next_reshuffle: now.saturating_add(interval),
        }
    }

    /// The hosts in the current list order.
    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// The reshuffle interval, jitter included.
    pub fn interval(&self) -> u64 {
        self.interval
    }

    /// The position a new request is sent at and its host, after the reshuffle if one is due. Positions
    /// whose host `skip`s (lame duck, not a dialogue concept) move the pin forward; `None` if every host does.
    pub fn current(
        &mut self,
        now: u64,
        java: &mut JavaRandom,
        skip: impl Fn(usize) -> bool,
    ) -> Option<(usize, usize)> {
        if now >= self.next_reshuffle {
            self.next_reshuffle = now.saturating_add(self.interval);
            java.shuffle(&mut self.order);
        }
        let n = self.order.len();
        let pin = (0..n)
            .map(|k| (self.pin + k) % n)
            .find(|&p| !skip(self.order[p]))?;
        self.pin = pin;
        Some((pin, self.order[pin]))
    }

    /// A request sent at position `at` ended with `outcome`.
    pub fn complete(&mut self, at: usize, outcome: Outcome) {
        if switches(outcome) && self.pin == at {
            self.pin = (at + 1) % self.order.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_from_the_shared_generator_in_dialogues_order() {
        let mut java = JavaRandom::new(3_218_974_678);
        let p = Pin::new(3, 5, &mut java);
        let mut reference = JavaRandom::new(3_218_974_678);
        let mut order = vec![0, 1, 2];
        reference.shuffle(&mut order);
        let jitter = i64::from(reference.next_int_below(60) - 30);
        assert_eq!(p.order(), order);
        assert_eq!(
            p.interval() as i64,
            600 * SECOND as i64 + jitter * SECOND as i64
        );
        assert_eq!(
            java, reference,
            "a shuffle and one nextInt(60), nothing else"
        );
    }

    #[test]
    fn switches_on_5xx_308_and_exceptions_but_not_429_and_only_from_the_pin() {
        for (outcome, moves) in [
            (Outcome::Response(200), false),
            (Outcome::Response(400), false),
            (Outcome::Response(429), false),
            (Outcome::Response(308), true),
            (Outcome::Response(500), true),
            (Outcome::Response(503), true),
            (Outcome::Io { timeout: true }, true),
            (Outcome::Failed, true),
        ] {
            assert_eq!(switches(outcome), moves, "{outcome:?}");
        }
        let mut java = JavaRandom::new(9);
        let mut p = Pin::new(3, 0, &mut java);
        let (at, first) = p.current(0, &mut java, |_| false).unwrap();
        assert_eq!((at, first), (0, p.order()[0]));
        p.complete(at, Outcome::Response(500));
        assert_eq!(
            p.current(0, &mut java, |_| false).unwrap(),
            (1, p.order()[1])
        );
        // A second, stale failure from position 0 does not move the pin again.
        p.complete(0, Outcome::Response(500));
        assert_eq!(p.current(0, &mut java, |_| false).unwrap().0, 1);
        // A lame-duck host is stepped over; with all of them in lame duck, nothing.
        let skipped = p.order()[1];
        assert_eq!(p.current(0, &mut java, |h| h == skipped).unwrap().0, 2);
        assert_eq!(p.current(0, &mut java, |_| true), None);
    }

    #[test]
    fn reshuffles_when_due_keeping_the_position() {
        let mut java = JavaRandom::new(11);
        let mut p = Pin::new(4, 0, &mut java);
        let every = p.interval();
        assert!((570 * SECOND..630 * SECOND).contains(&every), "{every}");
        let before = p.order().to_vec();
        let mut reference = java.clone();
        assert_eq!(p.current(every - 1, &mut java, |_| false).unwrap().0, 0);
        assert_eq!(p.order(), before);
        assert_eq!(java, reference, "not due: no draw");
        p.current(every, &mut java, |_| false).unwrap();
        let mut order = before.clone();
        reference.shuffle(&mut order);
        assert_eq!(p.order(), order);
        assert_eq!(p.next_reshuffle, 2 * every);
    }
}

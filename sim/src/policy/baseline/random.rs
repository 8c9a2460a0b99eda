//! Uniform random selection.

use weir::Rng;

use super::members::Members;
use crate::policy::{Balance, Completion, Pick, ServerId};

/// Uniform random choice among the servers not in lame-duck state: the [SRE book]'s "selecting backend tasks
/// randomly" (ch. 20, "Simple Round Robin") and dialogue's short-lived random selection ([#514], which
/// replaced its round robin in March 2020 and gave way to BALANCED in April).
///
/// Kept as the floor every other policy should beat: it uses no information at all, and unlike round robin
/// it also lets short-term imbalance happen by chance. Draws come from the `rng` passed to
/// [`pick`](Balance::pick); the seed is unused (the policy has no state to randomize) and taken only so that
/// every baseline is built the same way. It refuses only when no server can be used, and then fails fast.
///
/// [SRE book]: https://sre.google/sre-book/load-balancing-datacenter/
/// [#514]: https://github.com/palantir/dialogue/pull/514
#[derive(Debug)]
pub struct RandomPick {
    members: Members<()>,
}

impl RandomPick {
    /// A client's random selection (`seed` is unused, see the type's documentation).
    pub fn new(_seed: u64) -> Self {
        RandomPick {
            members: Members::new(),
        }
    }

    /// Attempts picked and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.members.in_flight()
    }
}

impl Balance for RandomPick {
    fn pick(&mut self, _now: u64, rng: &mut Rng) -> Option<Pick> {
        let usable = self.members.usable();
        if usable.is_empty() {
            return None;
        }
        let index = usable[rng.usize(..usable.len())];
        Some(self.members.start(index, ()))
    }

    fn complete(&mut self, pick: Pick, _done: &Completion, _now: u64) {
        self.members.finish(pick.tag);
    }

    fn set_servers(&mut self, servers: &[ServerId], _now: u64) {
        self.members.set(servers, |_| ());
    }

    fn set_draining(&mut self, server: ServerId, draining: bool, _now: u64) {
        self.members.set_draining(server, draining);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roughly_uniform_and_skips_lame_ducks() {
        let mut rng = Rng::with_seed(42);
        let mut p = RandomPick::new(0);
        p.set_servers(&[0, 1, 2, 3, 4], 0);
        p.set_draining(2, true, 0);
        let mut counts = [0u32; 5];
        let draws = 40_000;
        for _ in 0..draws {
            counts[p.pick(0, &mut rng).unwrap().server] += 1;
        }
        assert_eq!(counts[2], 0);
        // Chi-square with 3 degrees of freedom: 16.27 is the 0.1 % critical value.
        let expected = f64::from(draws) / 4.0;
        let chi2: f64 = [0, 1, 3, 4]
            .iter()
            .map(|&i| (f64::from(counts[i]) - expected).powi(2) / expected)
            .sum();
        assert!(chi2 < 16.27, "{counts:?} chi2 {chi2}");
        assert_eq!(p.in_flight(), draws as usize);

        p.set_draining(0, true, 0);
        p.set_draining(1, true, 0);
        p.set_draining(3, true, 0);
        p.set_draining(4, true, 0);
        assert_eq!(p.pick(0, &mut rng), None);
    }
}

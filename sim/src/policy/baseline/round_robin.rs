//! Simple round robin.

use weir::Rng;

use super::members::{Cursor, Members};
use crate::policy::{Balance, Completion, Pick, ServerId};

/// Simple round robin ([SRE book] ch. 20, "Simple Round Robin"): each attempt goes to the
/// next server in the client's list that is not in lame-duck state.
///
/// Each client starts at its own random offset (drawn from the seed), otherwise every client of a fleet would
/// send its first request to the first server. When the list changes, the cycle continues after the server
/// picked last if it is still there. The policy looks at nothing but the list, which is the point of the
/// baseline: the SRE chapter reports a 2× CPU spread from it. It refuses only when no server can be used,
/// and then fails fast.
///
/// [SRE book]: https://sre.google/sre-book/load-balancing-datacenter/
#[derive(Debug)]
pub struct RoundRobin {
    members: Members<()>,
    cursor: Cursor,
}

impl RoundRobin {
    /// A client's round robin; `seed` sets where in the list it starts.
    pub fn new(seed: u64) -> Self {
        RoundRobin {
            members: Members::new(),
            cursor: Cursor::new(seed),
        }
    }

    /// Attempts picked and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.members.in_flight()
    }
}

impl Balance for RoundRobin {
    fn pick(&mut self, _now: u64, _rng: &mut Rng) -> Option<Pick> {
        let nodes = self.members.nodes();
        let index = self.cursor.advance(nodes, |i| !nodes[i].draining)?;
        Some(self.members.start(index, ()))
    }

    fn complete(&mut self, pick: Pick, _done: &Completion, _now: u64) {
        self.members.finish(pick.tag);
    }

    fn set_servers(&mut self, servers: &[ServerId], _now: u64) {
        self.members.set(servers, |_| ());
        self.cursor.reset(&self.members);
    }

    fn set_draining(&mut self, server: ServerId, draining: bool, _now: u64) {
        self.members.set_draining(server, draining);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Refusal, Reply};

    fn ok() -> Completion {
        Completion {
            reply: Reply::Status(200),
            rtt_ns: 1,
            report: None,
        }
    }

    fn picks(p: &mut RoundRobin, rng: &mut Rng, n: usize) -> Vec<ServerId> {
        (0..n).map(|_| p.pick(0, rng).unwrap().server).collect()
    }

    #[test]
    fn cycles_from_a_per_client_offset_and_skips_lame_ducks() {
        let mut rng = Rng::with_seed(1);
        let mut p = RoundRobin::new(7);
        p.set_servers(&[10, 11, 12], 0);
        let first = picks(&mut p, &mut rng, 6);
        let start = first[0] - 10;
        let expected: Vec<ServerId> = (0..6).map(|k| 10 + (start + k) % 3).collect();
        assert_eq!(first, expected);

        // Ten clients do not all start on the same server.
        let starts: std::collections::BTreeSet<ServerId> = (0..10)
            .map(|seed| {
                let mut p = RoundRobin::new(seed);
                p.set_servers(&[10, 11, 12], 0);
                p.pick(0, &mut rng).unwrap().server
            })
            .collect();
        assert_eq!(starts.len(), 3);

        // 11 in lame duck: 10, 12, 10, 12, ...
        p.set_draining(11, true, 0);
        let next = picks(&mut p, &mut rng, 4);
        assert!(!next.contains(&11));
        assert_eq!(next[0..2], next[2..4]);
        p.set_draining(11, false, 0);
        assert!(picks(&mut p, &mut rng, 3).contains(&11));
    }

    #[test]
    fn continues_after_the_last_pick_when_the_list_changes() {
        let mut rng = Rng::with_seed(1);
        let mut p = RoundRobin::new(3);
        p.set_servers(&[0, 1, 2], 0);
        while p.pick(0, &mut rng).unwrap().server != 1 {}
        p.set_servers(&[5, 1, 6, 2], 0);
        assert_eq!(picks(&mut p, &mut rng, 4), [6, 2, 5, 1]);
    }

    #[test]
    fn refuses_only_without_servers_and_fails_fast() {
        let mut rng = Rng::with_seed(1);
        let mut p = RoundRobin::new(3);
        p.set_servers(&[], 0);
        assert_eq!(p.pick(0, &mut rng), None);
        assert_eq!(p.on_refusal(), Refusal::FailFast);
        p.set_servers(&[4], 0);
        let pick = p.pick(0, &mut rng).unwrap();
        assert_eq!(pick.server, 4);
        p.set_draining(4, true, 0);
        assert_eq!(p.pick(0, &mut rng), None);
        p.set_servers(&[], 0);
        p.complete(pick, &ok(), 1);
        assert_eq!(p.in_flight(), 0);
    }
}

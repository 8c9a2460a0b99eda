//! Leases: acquire (three ways) and release of held, released, mutated, forged and foreign leases.

use super::*;
use std::ptr::null_mut;

impl Fuzz<'_> {
    pub(super) fn acquire(&mut self, own_rng: bool) {
        let k = self.side_index();
        let now = self.time();
        let h = self.handle(k);
        let (null_rng, null_out) = (own_rng && self.null(), self.null());
        let mut out = POISON_LEASE;
        let out_ptr: *mut weir_lease = if null_out { null_mut() } else { &mut out };
        let b = h.unwrap_or(null_mut());
        // SAFETY: NULL or valid pointers.
        let status = unsafe {
            if own_rng {
                let rng: *mut weir_rng = if null_rng { null_mut() } else { &mut self.rng };
                weir_balancer_acquire_with_rng(b, now, rng, out_ptr)
            } else {
                weir_balancer_acquire(b, now, out_ptr)
            }
        };
        let call = if own_rng {
            "weir_balancer_acquire_with_rng"
        } else {
            "weir_balancer_acquire"
        };
        expect_in(
            call,
            status,
            &[
                WEIR_OK,
                WEIR_ERR_ALL_BUSY,
                WEIR_ERR_NO_ACTIVE_NODES,
                WEIR_ERR_NULL,
            ],
        );
        if h.is_none() || null_rng || null_out {
            assert_eq!(status, WEIR_ERR_NULL, "{call}");
            assert_eq!(out, POISON_LEASE, "{call} wrote its output on an error");
            return;
        }
        self.granted(k, call, status, out, now);
    }

    /// Checks an acquire's result against the model and records it.
    pub(super) fn granted(
        &mut self,
        k: usize,
        call: &str,
        status: weir_status,
        out: weir_lease,
        now: u64,
    ) {
        let Some(s) = self.sides[k].as_mut() else {
            unreachable!("a handle came from this side")
        };
        let active = s.members.iter().filter(|m| !m.1).count();
        if active == 0 {
            assert_eq!(status, WEIR_ERR_NO_ACTIVE_NODES, "{call}: {}", message());
        } else {
            assert_ne!(
                status, WEIR_ERR_NO_ACTIVE_NODES,
                "{call} with {active} active"
            );
        }
        match status {
            WEIR_OK => {}
            WEIR_ERR_ALL_BUSY | WEIR_ERR_TIMEOUT | WEIR_ERR_QUEUE_FULL => s.busy += 1,
            WEIR_ERR_NO_ACTIVE_NODES => s.empty += 1,
            _ => {}
        }
        if status != WEIR_OK {
            assert_eq!(out, POISON_LEASE, "{call} wrote its output on an error");
            return;
        }
        assert!(
            s.members.iter().any(|m| m.0 == out.node_id && !m.1),
            "{call} granted a lease on {}, not an active member: {:?}",
            out.node_id,
            s.members
        );
        assert_ne!(out.balancer, 0, "{call}: a lease with balancer tag 0");
        if call != "weir_balancer_acquire_wait" {
            assert_eq!(out.acquired_at, now, "{call}: acquired_at");
        }
        s.held.push(Held {
            lease: out,
            removed: false,
        });
        s.acquired += 1;
        self.stats.granted += 1;
        // The node's count includes the lease, and the lease fits under its limit.
        let mut info = poison_info();
        // SAFETY: a live handle and a valid output.
        let st = unsafe { weir_balancer_node_snapshot(s.handle, out.node_id, now, &mut info) };
        assert_eq!(
            st,
            WEIR_OK,
            "weir_balancer_node_snapshot of a granted node: {}",
            message()
        );
        let held = s
            .held
            .iter()
            .filter(|h| !h.removed && h.lease.node_id == out.node_id)
            .count();
        assert_eq!(
            info.in_flight as usize, held,
            "node {}'s in_flight",
            out.node_id
        );
        assert_eq!(out.inflight, info.in_flight, "{call}: the lease's inflight");
        assert!(
            out.inflight <= info.limit,
            "{call}: node {} admitted {} over its limit {}",
            out.node_id,
            out.inflight,
            info.limit
        );
    }

    pub(super) fn acquire_wait(&mut self) {
        let k = self.side_index();
        let h = self.handle(k);
        let null_out = self.null();
        // Only deadlines already past: a single-threaded caller has no one to make room, and the fuzzer
        // must not sleep.
        let deadline = match self.input.u8() % 2 {
            0 => 0,
            _ => weir_now_ns(),
        };
        let mut out = POISON_LEASE;
        // SAFETY: NULL or valid pointers.
        let status = unsafe {
            weir_balancer_acquire_wait(
                h.unwrap_or(null_mut()),
                deadline,
                if null_out { null_mut() } else { &mut out },
            )
        };
        expect_in(
            "weir_balancer_acquire_wait",
            status,
            &[
                WEIR_OK,
                WEIR_ERR_TIMEOUT,
                WEIR_ERR_QUEUE_FULL,
                WEIR_ERR_NO_ACTIVE_NODES,
                WEIR_ERR_NULL,
            ],
        );
        if h.is_none() || null_out {
            assert_eq!(status, WEIR_ERR_NULL);
            assert_eq!(out, POISON_LEASE);
            return;
        }
        let now = weir_now_ns();
        self.granted(k, "weir_balancer_acquire_wait", status, out, now);
    }

    /// Releases `lease` into side `k` (or NULL) and checks the status against the model: `held` is the
    /// index of the held lease it is (a copy of, possibly with its non-identity fields changed), if any.
    /// With a load report now and then (`weir_balancer_release_loaded`), valid or not.
    pub(super) fn release(&mut self, k: usize, lease: weir_lease, held: Option<usize>) {
        let outcome = self.outcome();
        let now = self.time();
        let utilization = self.utilization();
        let h = self.handle(k);
        let null_lease = self.null();
        let mut passed = lease;
        let (b, l) = (
            h.unwrap_or(null_mut()),
            if null_lease { null_mut() } else { &mut passed },
        );
        // SAFETY: NULL or valid pointers.
        let status = unsafe {
            match utilization {
                None => weir_balancer_release(b, l, outcome, now),
                Some(u) => weir_balancer_release_loaded(b, l, outcome, now, u),
            }
        };
        let call = match utilization {
            None => "weir_balancer_release",
            Some(_) => "weir_balancer_release_loaded",
        };
        // A closed lease (released, or its node removed) has its balancer tag cleared; any other status
        // leaves it untouched.
        let mut closed = lease;
        if status == WEIR_OK || status == WEIR_ERR_NODE_REMOVED {
            closed.balancer = 0;
        }
        assert_eq!(passed, closed, "{call}'s write to the lease ({status})");
        expect_in(
            call,
            status,
            &[
                WEIR_OK,
                WEIR_ERR_INVALID_LEASE,
                WEIR_ERR_NODE_REMOVED,
                WEIR_ERR_INVALID_ARGUMENT,
                WEIR_ERR_NULL,
            ],
        );
        if h.is_none() || null_lease {
            assert_eq!(status, WEIR_ERR_NULL);
            return;
        }
        // The header's range: NaN, infinities, negatives and anything above 1000 are refused.
        let bad_load = utilization.is_some_and(|u| !(0.0..=1_000.0).contains(&u));
        if outcome as usize >= WEIR_OUTCOME_COUNT || bad_load {
            // The lease stays in flight.
            assert_eq!(
                status, WEIR_ERR_INVALID_ARGUMENT,
                "{call}: outcome {outcome}, utilization {utilization:?}"
            );
            self.stats.refused += 1;
            return;
        }
        let Some(s) = self.sides[k].as_mut() else {
            unreachable!("a handle came from this side")
        };
        // The held lease the balancer will take it for: itself, or a twin with the same identity.
        let is_own = held.is_some();
        let taken = held.or_else(|| s.held.iter().position(|h| same_identity(&h.lease, &lease)));
        let expected = match taken.map(|i| s.held[i]) {
            None => WEIR_ERR_INVALID_LEASE,
            Some(h) if h.removed => WEIR_ERR_NODE_REMOVED,
            Some(_) => WEIR_OK,
        };
        assert_eq!(
            status,
            expected,
            "{call}({lease:?}, outcome {outcome}, load {utilization:?}) into a balancer holding {:?}: {}",
            s.held,
            message()
        );
        let Some(i) = taken else {
            self.stats.refused += 1;
            return;
        };
        if !is_own {
            self.stats.twins += 1;
        }
        let h = s.held.swap_remove(i);
        if h.removed {
            s.stale += 1;
            self.stats.refused += 1;
        } else {
            s.released[outcome as usize] += 1;
            self.stats.released += 1;
            self.stats.loaded += u64::from(utilization.is_some());
        }
        // The held copy keeps its tag (a copy of a released lease); the one passed in has it cleared.
        self.dead.push(h.lease);
        self.dead.push(passed);
        self.trim_dead();
    }

    pub(super) fn release_held(&mut self) {
        let k = self.side_index();
        let n = self.sides[k].as_ref().map_or(0, |s| s.held.len());
        if n == 0 {
            return;
        }
        let i = usize::from(self.input.u8()) % n;
        let lease = self.sides[k].as_ref().map(|s| s.held[i].lease);
        if let Some(lease) = lease {
            // Now and then into the other balancer, where it is not valid.
            if self.input.one_in(8) && self.sides[1 - k].is_some() {
                self.release(1 - k, lease, None);
            } else {
                self.release(k, lease, Some(i));
            }
        }
    }

    pub(super) fn release_dead(&mut self) {
        if self.dead.is_empty() {
            return;
        }
        let lease = self.dead[usize::from(self.input.u8()) % self.dead.len()];
        let k = self.side_index();
        if self.sides[k].is_some() {
            self.release(k, lease, None);
        }
    }

    pub(super) fn release_mutated(&mut self) {
        let k = self.side_index();
        let n = self.sides[k].as_ref().map_or(0, |s| s.held.len());
        let j = usize::from(self.input.u8()) % n.max(1);
        let mut lease = match self.sides[k].as_ref() {
            Some(s) if n > 0 => s.held[j].lease,
            Some(_) => weir_lease::default(),
            None => return,
        };
        let mut own = None;
        let i = &mut self.input;
        let x = i.edgy_u32();
        match i.u8() % 7 {
            0 => lease.node_id ^= u64::from(x.max(1)),
            1 => lease.slot = x,
            2 => lease.generation ^= (x as u16).max(1),
            3 => lease.balancer = x,
            // Not identity: the lease is still the same one (these fields feed the limiter's sample).
            4 => {
                lease.acquired_at = i.edgy_u64();
                own = Some(j).filter(|_| n > 0);
            }
            5 => {
                lease.inflight = x;
                own = Some(j).filter(|_| n > 0);
            }
            _ => {
                lease = weir_lease {
                    node_id: i.edgy_u64(),
                    acquired_at: i.edgy_u64(),
                    slot: i.edgy_u32(),
                    inflight: i.edgy_u32(),
                    generation: i.u8().into(),
                    balancer: i.edgy_u32(),
                }
            }
        }
        // Otherwise the release finds a held lease by identity, if one matches (a mutation may land on a
        // twin).
        self.release(k, lease, own);
    }
}

//! Balancers and their members: new (with random configurations and capacities), free, add, remove,
//! lame duck.

use super::*;
use std::ptr::{null, null_mut};

impl Fuzz<'_> {
    pub(super) fn new_balancer(&mut self) {
        let k = self.side_index();
        self.free(k);
        let config = self.config();
        let capacity = match self.input.u8() {
            0 => self.input.pick(&[0, 65_536, 65_537, usize::MAX]),
            b => usize::from(b % 10),
        };
        let (null_config, null_out) = (self.null(), self.null());
        // SAFETY: a valid config.
        let valid = unsafe { weir_config_validate(&config) };
        expect_in(
            "weir_config_validate",
            valid,
            &[WEIR_OK, WEIR_ERR_INVALID_ARGUMENT, WEIR_ERR_INVALID_CONFIG],
        );
        let sentinel = std::ptr::NonNull::<weir_balancer>::dangling().as_ptr();
        let mut out = sentinel;
        // SAFETY: NULL or valid pointers.
        let status = unsafe {
            weir_balancer_new(
                if null_config { null() } else { &config },
                capacity,
                if null_out { null_mut() } else { &mut out },
            )
        };
        let allowed = [
            WEIR_OK,
            WEIR_ERR_NULL,
            WEIR_ERR_INVALID_ARGUMENT,
            WEIR_ERR_INVALID_CONFIG,
        ];
        expect_in("weir_balancer_new", status, &allowed);
        let expected = if null_config || null_out {
            WEIR_ERR_NULL
        } else if valid != WEIR_OK {
            valid
        } else if !(1..=65_536).contains(&capacity) {
            WEIR_ERR_INVALID_CONFIG
        } else {
            WEIR_OK
        };
        assert_eq!(
            status,
            expected,
            "weir_balancer_new(capacity {capacity}): {}; config {config:?}",
            message()
        );
        if status != WEIR_OK {
            assert_eq!(
                out, sentinel,
                "weir_balancer_new wrote its output on an error"
            );
            return;
        }
        assert!(!out.is_null() && out != sentinel);
        // The balancer reads back its capacity and a configuration that validates.
        let mut cap = 0;
        let mut back = weir_config_default();
        // SAFETY: a live handle and valid outputs.
        unsafe {
            assert_eq!(weir_balancer_capacity(out, &mut cap), WEIR_OK);
            assert_eq!(weir_balancer_config(out, &mut back), WEIR_OK);
            assert_eq!(weir_config_validate(&back), WEIR_OK, "{back:?}");
        }
        assert_eq!(cap, capacity);
        self.sides[k] = Some(Side {
            handle: out,
            capacity,
            members: Vec::new(),
            held: Vec::new(),
            acquired: 0,
            released: [0; WEIR_OUTCOME_COUNT],
            stale: 0,
            busy: 0,
            empty: 0,
            lowest_score: back.algorithm.family == WEIR_ALGORITHM_LOWEST_SCORE,
        });
    }

    pub(super) fn free(&mut self, k: usize) {
        if let Some(s) = self.sides[k].take() {
            // Its leases may still be offered to the other balancer (never to this freed one).
            self.dead.extend(s.held.iter().map(|h| h.lease));
            // SAFETY: a live handle, freed once.
            unsafe { weir_balancer_free(s.handle) };
        }
        self.trim_dead();
    }

    pub(super) fn trim_dead(&mut self) {
        if self.dead.len() > 64 {
            let extra = self.dead.len() - 64;
            self.dead.drain(..extra);
        }
    }

    pub(super) fn free_balancer(&mut self) {
        if self.input.one_in(4) {
            // SAFETY: NULL is a no-op.
            unsafe { weir_balancer_free(null_mut()) };
        } else {
            let k = self.side_index();
            self.free(k);
        }
    }

    /// The handle of side `k`, or NULL (empty, or chosen): `(handle, is_null)`.
    pub(super) fn handle(&mut self, k: usize) -> Option<*mut weir_balancer> {
        let null = self.null();
        match &self.sides[k] {
            Some(s) if !null => Some(s.handle),
            _ => None,
        }
    }

    pub(super) fn add(&mut self) {
        let k = self.side_index();
        let id = self.id();
        let h = self.handle(k);
        // SAFETY: NULL or a live handle.
        let status = unsafe { weir_balancer_add(h.unwrap_or(null_mut()), id) };
        let allowed = [
            WEIR_OK,
            WEIR_ERR_DUPLICATE_ID,
            WEIR_ERR_CAPACITY_FULL,
            WEIR_ERR_NULL,
        ];
        expect_in("weir_balancer_add", status, &allowed);
        let Some(s) = (if h.is_some() {
            self.sides[k].as_mut()
        } else {
            None
        }) else {
            assert_eq!(status, WEIR_ERR_NULL);
            return;
        };
        // Slots in use: the members, and the removed nodes' slots still draining leases.
        let mut draining: Vec<(u32, u16)> = s
            .held
            .iter()
            .filter(|h| h.removed)
            .map(|h| (h.lease.slot, h.lease.generation))
            .collect();
        draining.sort_unstable();
        draining.dedup();
        let expected = if s.members.iter().any(|m| m.0 == id) {
            WEIR_ERR_DUPLICATE_ID
        } else if s.members.len() + draining.len() >= s.capacity {
            WEIR_ERR_CAPACITY_FULL
        } else {
            WEIR_OK
        };
        assert_eq!(status, expected, "weir_balancer_add({id}): {}", message());
        if status == WEIR_OK {
            s.members.push((id, false));
        }
    }

    pub(super) fn remove(&mut self) {
        let k = self.side_index();
        let id = self.id();
        let h = self.handle(k);
        // SAFETY: NULL or a live handle.
        let status = unsafe { weir_balancer_remove(h.unwrap_or(null_mut()), id) };
        expect_in(
            "weir_balancer_remove",
            status,
            &[WEIR_OK, WEIR_ERR_UNKNOWN_ID, WEIR_ERR_NULL],
        );
        let Some(s) = (if h.is_some() {
            self.sides[k].as_mut()
        } else {
            None
        }) else {
            assert_eq!(status, WEIR_ERR_NULL);
            return;
        };
        let member = s.members.iter().position(|m| m.0 == id);
        assert_eq!(
            status,
            if member.is_some() {
                WEIR_OK
            } else {
                WEIR_ERR_UNKNOWN_ID
            },
            "weir_balancer_remove({id}): {}",
            message()
        );
        if let Some(i) = member {
            s.members.remove(i);
            for h in s.held.iter_mut().filter(|h| h.lease.node_id == id) {
                h.removed = true;
            }
        }
    }

    pub(super) fn lame_duck(&mut self) {
        let k = self.side_index();
        let id = self.id();
        let lame = self.input.u8() & 1 == 1;
        let h = self.handle(k);
        // SAFETY: NULL or a live handle.
        let status = unsafe { weir_balancer_set_lame_duck(h.unwrap_or(null_mut()), id, lame) };
        expect_in(
            "weir_balancer_set_lame_duck",
            status,
            &[WEIR_OK, WEIR_ERR_UNKNOWN_ID, WEIR_ERR_NULL],
        );
        let Some(s) = (if h.is_some() {
            self.sides[k].as_mut()
        } else {
            None
        }) else {
            assert_eq!(status, WEIR_ERR_NULL);
            return;
        };
        let member = s.members.iter_mut().find(|m| m.0 == id);
        assert_eq!(
            status,
            if member.is_some() {
                WEIR_OK
            } else {
                WEIR_ERR_UNKNOWN_ID
            },
            "weir_balancer_set_lame_duck({id}): {}",
            message()
        );
        if let Some(m) = member {
            m.1 = lame;
        }
    }
}

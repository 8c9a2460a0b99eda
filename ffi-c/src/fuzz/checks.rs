//! Health checks: `weir_balancer_due_check` with quiet periods at the counters' tick and past any
//! clock, and `weir_balancer_report_check` of members and unknown ids, under both families.

use super::*;
use std::ptr::null_mut;

/// A health check's quiet period: at or around the counters' tick (2^20 ns), 0 (due at once), a period
/// longer than any clock (2^51 ns, `u64::MAX`), or one of [`input::Bytes::edgy_u64`]'s values.
fn quiet_ns(input: &mut Bytes<'_>) -> u64 {
    match input.u8() % 3 {
        0 => input.edgy_u64(),
        _ => input.pick(&[0, 1, (1 << 20) - 1, 1 << 20, 1 << 51, u64::MAX]),
    }
}

impl Fuzz<'_> {
    /// One of the two calls, on either balancer or NULL.
    pub(super) fn health_check(&mut self) {
        if self.input.one_in(2) {
            self.due_check();
        } else {
            self.report_check();
        }
    }

    /// A node named is a member in rotation with no call in flight, under the lowest-score family only;
    /// the id is written only then, and nothing is written on an error.
    fn due_check(&mut self) {
        let k = self.side_index();
        let now = self.time();
        let quiet = quiet_ns(&mut self.input);
        let h = self.handle(k);
        let (null_due, null_id) = (self.null(), self.null());
        let (mut due, mut id) = (true, 0xA5A5_A5A5_A5A5_A5A5_u64);
        // SAFETY: NULL or valid pointers.
        let status = unsafe {
            weir_balancer_due_check(
                h.unwrap_or(null_mut()),
                now,
                quiet,
                if null_due { null_mut() } else { &mut due },
                if null_id { null_mut() } else { &mut id },
            )
        };
        let call = format!("weir_balancer_due_check({now}, {quiet})");
        expect_in(&call, status, &[WEIR_OK, WEIR_ERR_NULL]);
        let side = h.and(self.sides[k].as_ref());
        let Some(s) = side.filter(|_| !null_due && !null_id) else {
            assert_eq!(status, WEIR_ERR_NULL, "{call}");
            assert_eq!(
                (due, id),
                (true, 0xA5A5_A5A5_A5A5_A5A5),
                "{call} wrote on an error"
            );
            return;
        };
        if !due {
            assert_eq!(
                id, 0xA5A5_A5A5_A5A5_A5A5,
                "{call} wrote an id with none due"
            );
            return;
        }
        assert!(
            s.lowest_score,
            "{call}: the weighted family named node {id}"
        );
        let member = s.members.iter().find(|m| m.0 == id);
        assert_eq!(
            member,
            Some(&(id, false)),
            "{call}: node {id} is no member in rotation"
        );
        let held = s
            .held
            .iter()
            .filter(|h| !h.removed && h.lease.node_id == id)
            .count();
        assert_eq!(held, 0, "{call}: node {id} has calls in flight");
        self.stats.named += 1;
    }

    /// Members are recorded under the lowest-score family and refused under the weighted one, unknown
    /// ids refused first; a check moves no counter (`check_all`), and a healthy one leaves no penalty.
    fn report_check(&mut self) {
        let k = self.side_index();
        let id = self.id();
        let healthy = self.input.u8() & 1 == 1;
        let now = self.time();
        let h = self.handle(k);
        // SAFETY: NULL or a live handle.
        let status =
            unsafe { weir_balancer_report_check(h.unwrap_or(null_mut()), id, healthy, now) };
        let call = format!("weir_balancer_report_check({id}, {healthy}, {now})");
        expect_in(
            &call,
            status,
            &[
                WEIR_OK,
                WEIR_ERR_UNKNOWN_ID,
                WEIR_ERR_NOT_LOWEST_SCORE,
                WEIR_ERR_NULL,
            ],
        );
        let expected = match h.and(self.sides[k].as_ref()) {
            None => WEIR_ERR_NULL,
            Some(s) if !s.members.iter().any(|m| m.0 == id) => WEIR_ERR_UNKNOWN_ID,
            Some(s) if !s.lowest_score => WEIR_ERR_NOT_LOWEST_SCORE,
            Some(_) => WEIR_OK,
        };
        assert_eq!(status, expected, "{call}: {}", message());
        self.stats.not_lowest_score += u64::from(status == WEIR_ERR_NOT_LOWEST_SCORE);
        if status != WEIR_OK {
            return;
        }
        self.stats.reported += 1;
        if healthy {
            let mut info = poison_info();
            // SAFETY: a live handle (the report succeeded) and a valid output.
            let read =
                unsafe { weir_balancer_node_snapshot(h.unwrap_or(null_mut()), id, now, &mut info) };
            assert_eq!(read, WEIR_OK, "{}", message());
            assert_eq!(info.penalty, 0.0, "{call}: node {id} kept a penalty");
        }
    }
}

//! The calls that read: snapshots, node lists with random buffers, configurations, status names,
//! versions, HTTP statuses.

use super::*;
use std::ffi::CStr;
use std::ptr::{null, null_mut};

impl Fuzz<'_> {
    pub(super) fn node_snapshot(&mut self) {
        let k = self.side_index();
        let id = self.id();
        let now = self.time();
        let h = self.handle(k);
        let null_out = self.null();
        let mut info = poison_info();
        // SAFETY: NULL or valid pointers.
        let status = unsafe {
            weir_balancer_node_snapshot(
                h.unwrap_or(null_mut()),
                id,
                now,
                if null_out { null_mut() } else { &mut info },
            )
        };
        expect_in(
            "weir_balancer_node_snapshot",
            status,
            &[WEIR_OK, WEIR_ERR_UNKNOWN_ID, WEIR_ERR_NULL],
        );
        let member = h
            .and(self.sides[k].as_ref())
            .and_then(|s| s.members.iter().find(|m| m.0 == id).copied());
        let expected = match member {
            _ if h.is_none() || null_out => WEIR_ERR_NULL,
            None => WEIR_ERR_UNKNOWN_ID,
            Some(_) => WEIR_OK,
        };
        assert_eq!(
            status,
            expected,
            "weir_balancer_node_snapshot({id}): {}",
            message()
        );
        match member {
            Some((_, lame)) if status == WEIR_OK => {
                assert_eq!(info.id, id);
                let want = if lame {
                    WEIR_NODE_LAME_DUCK
                } else {
                    WEIR_NODE_ACTIVE
                };
                assert_eq!(info.state, want, "node {id}'s state");
                check_info(&info);
            }
            _ => assert_eq!(
                info,
                poison_info(),
                "weir_balancer_node_snapshot wrote on an error"
            ),
        }
    }

    pub(super) fn nodes(&mut self) {
        let k = self.side_index();
        let now = self.time();
        let h = self.handle(k);
        let null_len = self.null();
        let cap = usize::from(self.input.u8() % 12);
        let null_buf = self.input.one_in(4);
        let mut buf = vec![poison_info(); cap];
        let mut len = 0xA5A5_usize;
        // SAFETY: NULL or valid pointers; `buf` has room for `cap`.
        let status = unsafe {
            weir_balancer_nodes(
                h.unwrap_or(null_mut()),
                now,
                if null_buf {
                    null_mut()
                } else {
                    buf.as_mut_ptr()
                },
                cap,
                if null_len { null_mut() } else { &mut len },
            )
        };
        expect_in(
            "weir_balancer_nodes",
            status,
            &[WEIR_OK, WEIR_ERR_BUFFER_TOO_SMALL, WEIR_ERR_NULL],
        );
        let members = h.and(self.sides[k].as_ref()).map(|s| s.members.clone());
        let expected = match &members {
            _ if h.is_none() || null_len => WEIR_ERR_NULL,
            Some(_) if null_buf && cap == 0 => WEIR_OK,
            Some(_) if null_buf => WEIR_ERR_NULL,
            Some(m) if m.len() > cap => WEIR_ERR_BUFFER_TOO_SMALL,
            _ => WEIR_OK,
        };
        assert_eq!(
            status,
            expected,
            "weir_balancer_nodes(cap {cap}): {}",
            message()
        );
        let untouched = buf.iter().all(|i| *i == poison_info());
        match members {
            Some(m) if status == WEIR_OK => {
                assert_eq!(len, m.len());
                if !null_buf {
                    let mut ids: Vec<u64> = buf[..len].iter().map(|i| i.id).collect();
                    let mut want: Vec<u64> = m.iter().map(|m| m.0).collect();
                    ids.sort_unstable();
                    want.sort_unstable();
                    assert_eq!(ids, want, "weir_balancer_nodes' members");
                    buf[..len].iter().for_each(check_info);
                    assert!(buf[len..].iter().all(|i| *i == poison_info()));
                }
            }
            _ => {
                assert_eq!(len, 0xA5A5, "weir_balancer_nodes wrote len on an error");
                assert!(untouched, "weir_balancer_nodes wrote buf on an error");
            }
        }
    }

    /// The configuration functions on their own: the fillers, validation, a balancer's config and
    /// capacity (with NULL outputs).
    pub(super) fn config_calls(&mut self) {
        let config = self.config();
        let null_config = self.null();
        // SAFETY: NULL or a valid config.
        let status = unsafe { weir_config_validate(if null_config { null() } else { &config }) };
        expect_in(
            "weir_config_validate",
            status,
            &[
                WEIR_OK,
                WEIR_ERR_NULL,
                WEIR_ERR_INVALID_ARGUMENT,
                WEIR_ERR_INVALID_CONFIG,
            ],
        );
        if null_config {
            assert_eq!(status, WEIR_ERR_NULL);
        }
        let k = self.side_index();
        let h = self.handle(k);
        let null_out = self.null();
        let mut back = weir_config_default();
        back.seed = 0xA5A5;
        let before = back;
        let mut cap = 0xA5A5_usize;
        let b = h.unwrap_or(null_mut());
        // SAFETY: NULL or valid pointers.
        let (s1, s2) = unsafe {
            (
                weir_balancer_config(b, if null_out { null_mut() } else { &mut back }),
                weir_balancer_capacity(b, if null_out { null_mut() } else { &mut cap }),
            )
        };
        for (call, s) in [("weir_balancer_config", s1), ("weir_balancer_capacity", s2)] {
            expect_in(call, s, &[WEIR_OK, WEIR_ERR_NULL]);
            assert_eq!(s == WEIR_ERR_NULL, h.is_none() || null_out, "{call}");
        }
        if s1 != WEIR_OK {
            assert_eq!(back, before, "weir_balancer_config wrote on an error");
            assert_eq!(cap, 0xA5A5, "weir_balancer_capacity wrote on an error");
        } else if let Some(s) = self.sides[k].as_ref() {
            assert_eq!(cap, s.capacity);
            // SAFETY: a valid config.
            assert_eq!(unsafe { weir_config_validate(&back) }, WEIR_OK);
        }
    }

    /// The functions without a handle: status names, the message, versions, HTTP statuses, the clock,
    /// the stats with a NULL output.
    pub(super) fn pure_calls(&mut self) {
        let code = match self.input.u8() % 3 {
            0 => self.input.u32() as i32,
            _ => i32::from(self.input.u8() % 24) - 2,
        };
        let p = weir_status_str(code);
        assert!(!p.is_null(), "weir_status_str({code}) is NULL");
        // SAFETY: static, NUL-terminated.
        let name = unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("");
        if ALL_STATUSES.contains(&code) {
            assert!(name.starts_with("WEIR_"), "{code}: {name}");
            assert!(!name.starts_with("WEIR_ERR_UNKNOWN:"), "{code}: {name}");
        } else {
            assert!(name.starts_with("WEIR_ERR_UNKNOWN:"), "{code}: {name}");
        }
        let _ = message();
        // The number and the text name the same version.
        let v = weir_version_string();
        assert!(!v.is_null());
        // SAFETY: static, NUL-terminated.
        let text = unsafe { CStr::from_ptr(v) }.to_str().unwrap_or("");
        let parts: Vec<u32> = text.split('.').filter_map(|p| p.parse().ok()).collect();
        assert_eq!(parts.len(), 3, "weir_version_string {text:?}");
        assert_eq!(
            weir_version(),
            parts[0] * 1_000_000 + parts[1] * 1_000 + parts[2]
        );
        let http = match self.input.u8() % 2 {
            0 => self.input.u32() as i32,
            _ => i32::from(self.input.u8()) * 3,
        };
        let null_out = self.null();
        let mut out = 0xA5A5_u32;
        // SAFETY: NULL or a valid output.
        let status = unsafe {
            weir_outcome_from_http_status(http, if null_out { null_mut() } else { &mut out })
        };
        expect_in(
            "weir_outcome_from_http_status",
            status,
            &[WEIR_OK, WEIR_ERR_INVALID_ARGUMENT, WEIR_ERR_NULL],
        );
        let expected = if null_out {
            WEIR_ERR_NULL
        } else if (100..=599).contains(&http) {
            WEIR_OK
        } else {
            WEIR_ERR_INVALID_ARGUMENT
        };
        assert_eq!(status, expected, "weir_outcome_from_http_status({http})");
        if status == WEIR_OK {
            assert!((out as usize) < WEIR_OUTCOME_COUNT);
        } else {
            assert_eq!(out, 0xA5A5);
        }
        let k = self.side_index();
        let h = self.handle(k);
        let mut st = weir_balancer_statistics {
            acquired: 0xA5A5,
            ..Default::default()
        };
        let before = st;
        // SAFETY: NULL or a valid pointer; a NULL output.
        let status = unsafe { weir_balancer_stats(h.unwrap_or(null_mut()), null_mut()) };
        expect_in("weir_balancer_stats", status, &[WEIR_ERR_NULL]);
        if h.is_none() {
            // SAFETY: a NULL handle, a valid output.
            let status = unsafe { weir_balancer_stats(null(), &mut st) };
            expect_in("weir_balancer_stats", status, &[WEIR_ERR_NULL]);
            assert_eq!(st, before);
        }
    }
}

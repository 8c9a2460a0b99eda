//! What the unit tests of dialogue's client share: a retry rule that never retries, and the sends and ends
//! among a client's effects.

use super::java::JavaRandom;
use super::{Effect, Retry};
use crate::policy::{Reply, ServerId};

/// Never retries.
pub(super) struct NoRetry;

impl Retry for NoRetry {
    fn after(&mut self, _: Reply, _: u32, _: u64, _: &mut JavaRandom) -> Option<u64> {
        None
    }
}

/// The attempts among `fx`: (request number, server, token).
pub(super) fn sends(fx: &[Effect]) -> Vec<(usize, ServerId, u64)> {
    fx.iter()
        .filter_map(|e| match *e {
            Effect::Send { req, server, token } => Some((req.0, server, token)),
            _ => None,
        })
        .collect()
}

/// The requests that ended among `fx`: (request number, final reply).
pub(super) fn finished(fx: &[Effect]) -> Vec<(usize, Option<Reply>)> {
    fx.iter()
        .filter_map(|e| match *e {
            Effect::Finish { req, reply } => Some((req.0, reply)),
            _ => None,
        })
        .collect()
}

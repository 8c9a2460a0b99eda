//! dialogue's `QueuedChannel` in front of node selection: the channel's multi-host queue (and each sticky
//! session's own). FIFO, with a fast path only while it is empty, drained head first whenever one of its
//! requests completes.

use std::collections::VecDeque;

use super::java::JavaRandom;
use super::retrying::Retry;
use super::{DialogueClient, Effect};
use crate::policy::RequestId;

/// A queue holds at most this many requests; a request that finds it full fails at once (`QueuedChannel`'s
/// `maxQueueSize`).
pub const MAX_QUEUE: usize = 100_000;

/// What a queue's delegate did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Admit {
    Sent,
    Refused,
    /// Failed at once (no URIs).
    Failed,
}

/// Which queue a request waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum QueueRef {
    Main(usize),
    Session(usize),
}

impl DialogueClient {
    pub(super) fn queue_of(&self, r: RequestId) -> QueueRef {
        let req = &self.requests[&r];
        match req.session {
            Some(s) => QueueRef::Session(s),
            None => QueueRef::Main(req.generation),
        }
    }

    fn queue(&mut self, q: QueueRef) -> &mut VecDeque<RequestId> {
        match q {
            QueueRef::Main(g) => &mut self.channels[g].queue,
            QueueRef::Session(s) => &mut self.sessions[s].queue,
        }
    }

    /// `QueuedChannel.maybeExecute`: the fast path only when the queue is empty.
    pub(super) fn enqueue(
        &mut self,
        r: RequestId,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        let q = self.queue_of(r);
        if self.queue(q).is_empty() {
            match self.admit(r, false, now, java, fx) {
                Admit::Sent => return,
                Admit::Failed => return self.fail(r, now, java, retry, fx),
                Admit::Refused => {}
            }
        }
        if self.queue(q).len() >= MAX_QUEUE {
            return self.fail(r, now, java, retry, fx);
        }
        self.queue(q).push_back(r);
        self.drain(q, now, java, retry, fx);
    }

    /// `QueuedChannel.schedule`: sends from the head until one is refused.
    pub(super) fn drain(
        &mut self,
        q: QueueRef,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        while let Some(&r) = self.queue(q).front() {
            match self.admit(r, true, now, java, fx) {
                Admit::Sent => {
                    self.queue(q).pop_front();
                }
                Admit::Failed => {
                    self.queue(q).pop_front();
                    self.fail(r, now, java, retry, fx);
                }
                Admit::Refused => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::baseline::dialogue::testing::{sends, NoRetry};
    use crate::policy::baseline::dialogue::Strategy;
    use crate::policy::Reply;

    /// A full host limiter keeps requests in the multi-host queue; a completion drains it head first, and
    /// a new request joins the back of a non-empty queue instead of jumping it.
    #[test]
    fn the_multi_host_queue_is_fifo_and_drained_by_completions() {
        let mut java = JavaRandom::new(3);
        let mut c = DialogueClient::new(Strategy::Balanced, 1, &[0, 1]);
        let mut fx = Vec::new();
        for r in 0..40 {
            c.submit(RequestId(r), 0, None, 0, &mut java, &mut NoRetry, &mut fx);
        }
        assert_eq!(sends(&fx).len(), 40, "two hosts, twenty each");
        fx.clear();
        c.submit(RequestId(40), 0, None, 0, &mut java, &mut NoRetry, &mut fx);
        c.submit(RequestId(41), 0, None, 0, &mut java, &mut NoRetry, &mut fx);
        assert!(fx.is_empty());
        assert_eq!(c.channels[0].queue, [RequestId(40), RequestId(41)]);
        c.complete(5, Reply::Status(200), 1, &mut java, &mut NoRetry, &mut fx);
        let sent = sends(&fx);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].0, 40, "the head goes first");
        fx.clear();
        c.submit(RequestId(42), 0, None, 2, &mut java, &mut NoRetry, &mut fx);
        assert_eq!(c.channels[0].queue, [RequestId(41), RequestId(42)]);
    }
}

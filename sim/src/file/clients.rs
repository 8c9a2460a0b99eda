//! The clients of a file: their count, endpoints, timeout and deadline, subsetting, and the retry rule with
//! either backoff and weir's retry budget, checked with weir's own rules.

use weir::backoff::{BackoffConfig, BackoffConfigError, Jitter, MAX_BACKOFF_NS};
use weir::overload::{ThrottleConfig, ThrottleConfigError};

use super::convert::{fail, need, ns_or, only, or, positive, span, R};
use super::duration::{show, MAX};
use super::schema::{self as f, S};
use crate::model::{ClientSpec, Retries, RetryBackoff, RetryOn, Subsetting};

/// The most clients a scenario may have (each has its own balancer).
pub const MAX_CLIENTS: usize = 10_000;
/// The most endpoints per client (dialogue's generator picks among clients × endpoints with an `i32`).
pub const MAX_ENDPOINTS: usize = 1_000;

pub(super) fn clients(c: &S<f::Clients>, servers: usize) -> R<ClientSpec> {
    let t = c.get_ref();
    let count = |v: &Option<S<usize>>, most: usize| match v {
        Some(n) if *n.get_ref() == 0 || *n.get_ref() > most => {
            fail(n.span(), format!("must be from 1 to {most}"))
        }
        Some(n) => Ok(*n.get_ref()),
        None => Ok(1),
    };
    let subset = match &t.subset {
        None => Subsetting::None,
        Some(s) => {
            let st = s.get_ref();
            let size = *st.size.get_ref();
            if size == 0 || size > servers {
                return fail(
                    st.size.span(),
                    format!("a subset has 1 to {servers} servers (the scenario's)"),
                );
            }
            match st.kind.get_ref().as_str() {
                "deterministic" => Subsetting::Deterministic(size),
                "random" => Subsetting::Random(size),
                other => {
                    return fail(
                        st.kind.span(),
                        format!("\"{other}\" is not a subsetting: deterministic or random"),
                    )
                }
            }
        }
    };
    Ok(ClientSpec {
        count: count(&t.count, MAX_CLIENTS)?,
        endpoints: count(&t.endpoints, MAX_ENDPOINTS)?,
        sticky: t.sticky,
        timeout: t.timeout.as_ref().map(positive).transpose()?,
        deadline: t.deadline.as_ref().map(positive).transpose()?,
        retries: t.retries.as_ref().map(retries).transpose()?,
        subset,
    })
}

fn retries(r: &S<f::Retries>) -> R<Retries> {
    let t = r.get_ref();
    let on = match (t.on.get_ref().as_str(), &t.safe_method) {
        ("retryable", None) => RetryOn::Retryable,
        ("retryable", Some(s)) => {
            return fail(s.span(), "`safe_method` goes with on = \"dialogue\" only")
        }
        ("dialogue", safe) => RetryOn::Dialogue {
            safe_method: safe.as_ref().is_some_and(|s| *s.get_ref()),
        },
        (other, _) => {
            return fail(
                t.on.span(),
                format!("\"{other}\" is not a retry rule: retryable or dialogue"),
            )
        }
    };
    let max = *t.max.get_ref();
    Ok(Retries {
        max,
        backoff: backoff(&t.backoff, max)?,
        budget: t.budget.as_ref().map(budget).transpose()?,
        on,
    })
}

fn backoff(b: &S<f::Backoff>, retries: u32) -> R<RetryBackoff> {
    let t = b.get_ref();
    let kind = t.kind.get_ref().as_str();
    let fields = [
        ("slot", span(&t.slot)),
        ("initial", span(&t.initial)),
        ("max", span(&t.max)),
        ("up_multiplier", span(&t.up_multiplier)),
        ("down_multiplier", span(&t.down_multiplier)),
        ("down_threshold", span(&t.down_threshold)),
        ("jitter", span(&t.jitter)),
    ];
    match kind {
        "exponential" => {
            only("backoff", kind, &fields, &["slot"])?;
            let slot = need(&t.slot, "slot", "backoff", kind, b.span())?;
            // The engine's longest delay is slot × 2^(retries − 1), the exponent capped at 30.
            let longest = u128::from(slot.get_ref().0) << retries.clamp(1, 31).saturating_sub(1);
            if longest > u128::from(MAX) {
                return fail(
                    slot.span(),
                    format!("slot × 2^(max − 1) must be at most {}", show(MAX)),
                );
            }
            Ok(RetryBackoff::Exponential {
                slot: slot.get_ref().0,
            })
        }
        "responsive" => {
            only(
                "backoff",
                kind,
                &fields,
                &[
                    "initial",
                    "max",
                    "up_multiplier",
                    "down_multiplier",
                    "down_threshold",
                    "jitter",
                ],
            )?;
            let d = BackoffConfig::default();
            let jitter = match &t.jitter {
                None => d.jitter,
                Some(j) => match j.get_ref() {
                    f::Jitter::Named(n) => match n.as_str() {
                        "none" => Jitter::None,
                        "full" => Jitter::Full,
                        "equal" => Jitter::Equal,
                        "decorrelated" => Jitter::Decorrelated,
                        other => {
                            return fail(
                                j.span(),
                                format!(
                                    "\"{other}\" is not a jitter: none, full, equal, \
                                     decorrelated or {{ factor, max }}"
                                ),
                            )
                        }
                    },
                    f::Jitter::Proportional(p) => Jitter::Proportional {
                        factor: *p.factor.get_ref(),
                        max_ns: p.max.get_ref().0,
                    },
                },
            };
            let c = BackoffConfig {
                initial_ns: ns_or(&t.initial, d.initial_ns),
                max_ns: ns_or(&t.max, d.max_ns),
                up_multiplier: or(&t.up_multiplier, d.up_multiplier),
                down_multiplier: or(&t.down_multiplier, d.down_multiplier),
                down_threshold: or(&t.down_threshold, d.down_threshold),
                jitter,
            };
            match c.validate() {
                Ok(()) => Ok(RetryBackoff::Responsive(c)),
                Err(e) => {
                    let (field, message) = match e {
                        BackoffConfigError::Initial => (
                            span(&t.initial),
                            "`initial` must be between 1 ns and `max`".to_string(),
                        ),
                        BackoffConfigError::Max => (
                            span(&t.max),
                            format!("`max` must be between 1 ns and {}", show(MAX_BACKOFF_NS)),
                        ),
                        BackoffConfigError::UpMultiplier => (
                            span(&t.up_multiplier),
                            "`up_multiplier` must be finite and at least 1".to_string(),
                        ),
                        BackoffConfigError::DownMultiplier => (
                            span(&t.down_multiplier),
                            "`down_multiplier` must be above 0 and at most 1".to_string(),
                        ),
                        BackoffConfigError::DownThreshold => (
                            span(&t.down_threshold),
                            "`down_threshold` must be at least 1".to_string(),
                        ),
                        BackoffConfigError::JitterFactor => (
                            span(&t.jitter),
                            "the jitter's `factor` must be between 0 and 1".to_string(),
                        ),
                        other => (None, other.to_string()),
                    };
                    fail(field.unwrap_or(b.span()), message)
                }
            }
        }
        other => fail(
            t.kind.span(),
            format!("\"{other}\" is not a backoff kind: exponential or responsive"),
        ),
    }
}

fn budget(b: &S<f::Budget>) -> R<ThrottleConfig> {
    let t = b.get_ref();
    let d = ThrottleConfig::default();
    let c = ThrottleConfig {
        window_ns: ns_or(&t.window, d.window_ns),
        buckets: or(&t.buckets, d.buckets),
        k: or(&t.k, d.k),
        max_rejection: or(&t.max_rejection, d.max_rejection),
        retry_ratio: or(&t.retry_ratio, d.retry_ratio),
    };
    match c.validate() {
        Ok(()) => Ok(c),
        Err(e) => {
            let (field, message) = match e {
                ThrottleConfigError::Buckets => (
                    span(&t.buckets),
                    format!(
                        "`buckets` must be between 1 and {}",
                        weir::overload::MAX_WINDOW_BUCKETS
                    ),
                ),
                ThrottleConfigError::Window => (
                    span(&t.window),
                    "`window` must be at least 1 ns per bucket".to_string(),
                ),
                ThrottleConfigError::K => {
                    (span(&t.k), "`k` must be finite and at least 1".to_string())
                }
                ThrottleConfigError::MaxRejection => (
                    span(&t.max_rejection),
                    "`max_rejection` must be between 0 and 1".to_string(),
                ),
                ThrottleConfigError::RetryRatio => (
                    span(&t.retry_ratio),
                    "`retry_ratio` must be between 0 and 1".to_string(),
                ),
                other => (None, other.to_string()),
            };
            fail(field.unwrap_or(b.span()), message)
        }
    }
}

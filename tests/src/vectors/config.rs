//! `weir::Config` as `key=value` tokens: every field under its Rust name, nested fields joined by `.`,
//! an enum as its variant's snake-case name with the variant's fields under the same key, an `Option`
//! as its value or `none`. The README lists every key and its type.

use super::{bad, boolean, float, float32, floating, floating32, uint, uint32, ParseError};
use std::collections::BTreeMap;
use weir::balance::{BucketHealth, DecayHealth, EwmaHealth};
use weir::balance::{HealthModel, Policy};
use weir::limit::{
    AimdLimit, CiadLimit, FixedLimit, Gradient2Limit, GradientLimit, InnerAlgorithm,
    LimitAlgorithm, QueueSize, SampleWindow, VegasLimit, VegasStep, VegasThreshold, WindowedLimit,
};
use weir::Config;

/// The tokens of `c`, in the order the files write them (the struct's field order).
pub(super) fn tokens(c: &Config) -> Vec<(String, String)> {
    let mut out = Tokens(Vec::new());
    match c.health {
        HealthModel::Decay(DecayHealth {
            success_half_life_ns,
            failure_half_life_ns,
            dropped_cost,
            throttled_cost,
            client_error_cost,
            penalty,
            ratio_penalty,
        }) => {
            out.put("health", "decay");
            out.put("health.success_half_life_ns", success_half_life_ns);
            out.put("health.failure_half_life_ns", failure_half_life_ns);
            out.put("health.dropped_cost", float32(dropped_cost));
            out.put("health.throttled_cost", float32(throttled_cost));
            out.put("health.client_error_cost", float32(client_error_cost));
            out.put("health.penalty", float32(penalty));
            out.put("health.ratio_penalty", float32(ratio_penalty));
        }
        HealthModel::Buckets(BucketHealth {
            count,
            width_ns,
            decay,
        }) => {
            out.put("health", "buckets");
            out.put("health.count", count);
            out.put("health.width_ns", width_ns);
            out.put("health.decay", float(decay));
        }
        HealthModel::Ewma(EwmaHealth { half_life }) => {
            out.put("health", "ewma");
            out.put("health.half_life", half_life);
        }
    }
    out.put("weight_exponent", float(c.weight_exponent));
    out.put("floor", float(c.floor));
    out.put("policy", policy_name(c.policy));
    match c.limit {
        LimitAlgorithm::Windowed(w) => {
            out.put("limit", "windowed");
            inner(&mut out, "limit.inner", w.inner);
            out.put("limit.min_window_ns", w.min_window_ns);
            out.put("limit.max_window_ns", w.max_window_ns);
            out.put("limit.min_samples", w.min_samples);
            out.put("limit.min_rtt_threshold_ns", w.min_rtt_threshold_ns);
            match w.window {
                SampleWindow::Average => out.put("limit.window", "average"),
                SampleWindow::Percentile {
                    percentile,
                    capacity,
                } => {
                    out.put("limit.window", "percentile");
                    out.put("limit.window.percentile", float(percentile));
                    out.put("limit.window.capacity", capacity);
                }
            }
        }
        LimitAlgorithm::Fixed(l) => inner(&mut out, "limit", InnerAlgorithm::Fixed(l)),
        LimitAlgorithm::Aimd(l) => inner(&mut out, "limit", InnerAlgorithm::Aimd(l)),
        LimitAlgorithm::Vegas(l) => inner(&mut out, "limit", InnerAlgorithm::Vegas(l)),
        LimitAlgorithm::Gradient(l) => inner(&mut out, "limit", InnerAlgorithm::Gradient(l)),
        LimitAlgorithm::Gradient2(l) => inner(&mut out, "limit", InnerAlgorithm::Gradient2(l)),
        LimitAlgorithm::Ciad(l) => inner(&mut out, "limit", InnerAlgorithm::Ciad(l)),
    }
    out.put("seed", c.seed);
    out.put("max_waiters", c.max_waiters);
    out.0
}

struct Tokens(Vec<(String, String)>);

impl Tokens {
    fn put(&mut self, key: &str, value: impl ToString) {
        self.0.push((key.to_string(), value.to_string()));
    }
}

fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::LowestScore => "lowest_score",
        Policy::Cascade => "cascade",
        Policy::CascadeApprox => "cascade_approx",
        Policy::WeightedPick => "weighted_pick",
    }
}

/// A non-windowed algorithm: its name at `p`, its fields at `p.<field>`.
fn inner(out: &mut Tokens, p: &str, a: InnerAlgorithm) {
    let k = |f: &str| format!("{p}.{f}");
    match a {
        InnerAlgorithm::Fixed(l) => {
            out.put(p, "fixed");
            out.put(&k("limit"), l.limit);
        }
        InnerAlgorithm::Aimd(l) => {
            out.put(p, "aimd");
            out.put(&k("initial_limit"), l.initial_limit);
            out.put(&k("min_limit"), l.min_limit);
            out.put(&k("max_limit"), l.max_limit);
            out.put(&k("backoff_ratio"), float(l.backoff_ratio));
            out.put(&k("timeout_ns"), l.timeout_ns);
        }
        InnerAlgorithm::Vegas(l) => {
            out.put(p, "vegas");
            out.put(&k("initial_limit"), l.initial_limit);
            out.put(&k("max_limit"), l.max_limit);
            out.put(&k("smoothing"), float(l.smoothing));
            out.put(&k("probe_multiplier"), l.probe_multiplier);
            for (f, t) in [
                ("alpha", l.alpha),
                ("beta", l.beta),
                ("threshold", l.threshold),
            ] {
                let (name, v) = match t {
                    VegasThreshold::Constant(v) => ("constant", v),
                    VegasThreshold::Log10(v) => ("log10", v),
                };
                out.put(&k(f), name);
                out.put(&k(&format!("{f}.0")), v);
            }
            for (f, s) in [("increase", l.increase), ("decrease", l.decrease)] {
                match s {
                    VegasStep::Log10 => out.put(&k(f), "log10"),
                    VegasStep::Factor(x) => {
                        out.put(&k(f), "factor");
                        out.put(&k(&format!("{f}.0")), float(x));
                    }
                }
            }
            out.put(&k("baseline_from_drops"), l.baseline_from_drops);
        }
        InnerAlgorithm::Gradient(l) => {
            out.put(p, "gradient");
            out.put(&k("initial_limit"), l.initial_limit);
            out.put(&k("min_limit"), l.min_limit);
            out.put(&k("max_limit"), l.max_limit);
            out.put(&k("smoothing"), float(l.smoothing));
            queue(out, &k("queue_size"), l.queue_size);
            out.put(&k("rtt_tolerance"), float(l.rtt_tolerance));
            match l.probe_interval {
                Some(v) => out.put(&k("probe_interval"), v),
                None => out.put(&k("probe_interval"), "none"),
            }
            out.put(&k("backoff_ratio"), float(l.backoff_ratio));
        }
        InnerAlgorithm::Gradient2(l) => {
            out.put(p, "gradient2");
            out.put(&k("initial_limit"), l.initial_limit);
            out.put(&k("min_limit"), l.min_limit);
            out.put(&k("max_limit"), l.max_limit);
            out.put(&k("smoothing"), float(l.smoothing));
            queue(out, &k("queue_size"), l.queue_size);
            out.put(&k("long_window"), l.long_window);
            out.put(&k("rtt_tolerance"), float(l.rtt_tolerance));
            match l.drop_backoff {
                Some(v) => out.put(&k("drop_backoff"), float(v)),
                None => out.put(&k("drop_backoff"), "none"),
            }
        }
        InnerAlgorithm::Ciad(l) => {
            out.put(p, "ciad");
            out.put(&k("initial_limit"), l.initial_limit);
            out.put(&k("min_limit"), l.min_limit);
            out.put(&k("max_limit"), l.max_limit);
            out.put(&k("backoff_ratio"), float(l.backoff_ratio));
            out.put(&k("fast_start"), l.fast_start);
            out.put(&k("rtt_tolerance"), float(l.rtt_tolerance));
        }
    }
}

fn queue(out: &mut Tokens, p: &str, q: QueueSize) {
    match q {
        QueueSize::Constant(v) => {
            out.put(p, "constant");
            out.put(&format!("{p}.0"), v);
        }
        QueueSize::Sqrt { min } => {
            out.put(p, "sqrt");
            out.put(&format!("{p}.min"), min);
        }
    }
}

/// The `config` tokens of a file, each taken once; what is left at the end is an error.
struct Keys {
    map: BTreeMap<String, (String, usize)>,
    last: usize,
}

impl Keys {
    fn take(&mut self, key: &str) -> Result<(String, usize), ParseError> {
        self.map
            .remove(key)
            .ok_or_else(|| bad(self.last, format!("config: no `{key}=`")))
    }
    fn word(&mut self, key: &str) -> Result<(String, usize), ParseError> {
        self.take(key)
    }
    fn u64(&mut self, key: &str) -> Result<u64, ParseError> {
        let (v, l) = self.take(key)?;
        uint(l, key, &v)
    }
    fn u32(&mut self, key: &str) -> Result<u32, ParseError> {
        let (v, l) = self.take(key)?;
        uint32(l, key, &v)
    }
    fn f64(&mut self, key: &str) -> Result<f64, ParseError> {
        let (v, l) = self.take(key)?;
        floating(l, key, &v)
    }
    fn f32(&mut self, key: &str) -> Result<f32, ParseError> {
        let (v, l) = self.take(key)?;
        floating32(l, key, &v)
    }
    fn bool(&mut self, key: &str) -> Result<bool, ParseError> {
        let (v, l) = self.take(key)?;
        boolean(l, key, &v)
    }
}

fn unknown(key: &str, (v, l): (String, usize)) -> ParseError {
    bad(l, format!("config: `{key}={v}` names no variant"))
}

/// Rebuilds a `Config` from `(key, value, line)` tokens: every key exactly once, none unknown, and the
/// result must pass `Config::validate`.
pub(super) fn parse(tokens: Vec<(String, String, usize)>) -> Result<Config, ParseError> {
    let mut keys = Keys {
        map: BTreeMap::new(),
        last: tokens.last().map_or(1, |t| t.2),
    };
    for (k, v, l) in tokens {
        if keys.map.contains_key(&k) {
            return Err(bad(l, format!("config: `{k}` given twice")));
        }
        keys.map.insert(k, (v, l));
    }
    let k = &mut keys;
    let health = match k.word("health")? {
        (w, _) if w == "decay" => HealthModel::Decay(DecayHealth {
            success_half_life_ns: k.u64("health.success_half_life_ns")?,
            failure_half_life_ns: k.u64("health.failure_half_life_ns")?,
            dropped_cost: k.f32("health.dropped_cost")?,
            throttled_cost: k.f32("health.throttled_cost")?,
            client_error_cost: k.f32("health.client_error_cost")?,
            penalty: k.f32("health.penalty")?,
            ratio_penalty: k.f32("health.ratio_penalty")?,
        }),
        (w, l) if w == "buckets" => HealthModel::Buckets(BucketHealth {
            count: k
                .u64("health.count")?
                .try_into()
                .map_err(|_| bad(l, "health.count out of range"))?,
            width_ns: k.u64("health.width_ns")?,
            decay: k.f64("health.decay")?,
        }),
        (w, _) if w == "ewma" => HealthModel::Ewma(EwmaHealth {
            half_life: k.u32("health.half_life")?,
        }),
        other => return Err(unknown("health", other)),
    };
    let weight_exponent = k.f64("weight_exponent")?;
    let floor = k.f64("floor")?;
    let policy = match k.word("policy")? {
        (w, _) if w == "lowest_score" => Policy::LowestScore,
        (w, _) if w == "cascade" => Policy::Cascade,
        (w, _) if w == "cascade_approx" => Policy::CascadeApprox,
        (w, _) if w == "weighted_pick" => Policy::WeightedPick,
        other => return Err(unknown("policy", other)),
    };
    let limit = match k.word("limit")? {
        (w, _) if w == "windowed" => {
            let (name, l) = k.word("limit.inner")?;
            LimitAlgorithm::Windowed(WindowedLimit {
                inner: parse_inner(k, "limit.inner", (name, l))?,
                min_window_ns: k.u64("limit.min_window_ns")?,
                max_window_ns: k.u64("limit.max_window_ns")?,
                min_samples: k.u32("limit.min_samples")?,
                min_rtt_threshold_ns: k.u64("limit.min_rtt_threshold_ns")?,
                window: match k.word("limit.window")? {
                    (w, _) if w == "average" => SampleWindow::Average,
                    (w, _) if w == "percentile" => SampleWindow::Percentile {
                        percentile: k.f64("limit.window.percentile")?,
                        capacity: k.u32("limit.window.capacity")?,
                    },
                    other => return Err(unknown("limit.window", other)),
                },
            })
        }
        word => LimitAlgorithm::from(parse_inner(k, "limit", word)?),
    };
    let config = Config {
        health,
        weight_exponent,
        floor,
        policy,
        limit,
        seed: k.u64("seed")?,
        max_waiters: k.u32("max_waiters")?,
    };
    if let Some((key, (v, l))) = keys.map.into_iter().next() {
        return Err(bad(
            l,
            format!("config: `{key}={v}` is not a field of this configuration"),
        ));
    }
    config
        .validate()
        .map_err(|e| bad(keys.last, format!("config: invalid: {e}")))?;
    Ok(config)
}

fn parse_inner(k: &mut Keys, p: &str, word: (String, usize)) -> Result<InnerAlgorithm, ParseError> {
    let f = |name: &str| format!("{p}.{name}");
    Ok(match word.0.as_str() {
        "fixed" => InnerAlgorithm::Fixed(FixedLimit {
            limit: k.u32(&f("limit"))?,
        }),
        "aimd" => InnerAlgorithm::Aimd(AimdLimit {
            initial_limit: k.u32(&f("initial_limit"))?,
            min_limit: k.u32(&f("min_limit"))?,
            max_limit: k.u32(&f("max_limit"))?,
            backoff_ratio: k.f64(&f("backoff_ratio"))?,
            timeout_ns: k.u64(&f("timeout_ns"))?,
        }),
        "vegas" => {
            let mut threshold = |name: &str| -> Result<VegasThreshold, ParseError> {
                let w = k.word(&f(name))?;
                let v = k.u32(&f(&format!("{name}.0")))?;
                match w.0.as_str() {
                    "constant" => Ok(VegasThreshold::Constant(v)),
                    "log10" => Ok(VegasThreshold::Log10(v)),
                    _ => Err(unknown(&f(name), w)),
                }
            };
            let (alpha, beta, threshold) = (
                threshold("alpha")?,
                threshold("beta")?,
                threshold("threshold")?,
            );
            let mut step = |name: &str| -> Result<VegasStep, ParseError> {
                let w = k.word(&f(name))?;
                match w.0.as_str() {
                    "log10" => Ok(VegasStep::Log10),
                    "factor" => Ok(VegasStep::Factor(k.f64(&f(&format!("{name}.0")))?)),
                    _ => Err(unknown(&f(name), w)),
                }
            };
            let (increase, decrease) = (step("increase")?, step("decrease")?);
            InnerAlgorithm::Vegas(VegasLimit {
                initial_limit: k.u32(&f("initial_limit"))?,
                max_limit: k.u32(&f("max_limit"))?,
                smoothing: k.f64(&f("smoothing"))?,
                probe_multiplier: k.u32(&f("probe_multiplier"))?,
                alpha,
                beta,
                threshold,
                increase,
                decrease,
                baseline_from_drops: k.bool(&f("baseline_from_drops"))?,
            })
        }
        "gradient" => InnerAlgorithm::Gradient(GradientLimit {
            initial_limit: k.u32(&f("initial_limit"))?,
            min_limit: k.u32(&f("min_limit"))?,
            max_limit: k.u32(&f("max_limit"))?,
            smoothing: k.f64(&f("smoothing"))?,
            queue_size: parse_queue(k, &f("queue_size"))?,
            rtt_tolerance: k.f64(&f("rtt_tolerance"))?,
            probe_interval: match k.take(&f("probe_interval"))? {
                (v, _) if v == "none" => None,
                (v, l) => Some(uint32(l, &f("probe_interval"), &v)?),
            },
            backoff_ratio: k.f64(&f("backoff_ratio"))?,
        }),
        "gradient2" => InnerAlgorithm::Gradient2(Gradient2Limit {
            initial_limit: k.u32(&f("initial_limit"))?,
            min_limit: k.u32(&f("min_limit"))?,
            max_limit: k.u32(&f("max_limit"))?,
            smoothing: k.f64(&f("smoothing"))?,
            queue_size: parse_queue(k, &f("queue_size"))?,
            long_window: k.u32(&f("long_window"))?,
            rtt_tolerance: k.f64(&f("rtt_tolerance"))?,
            drop_backoff: match k.take(&f("drop_backoff"))? {
                (v, _) if v == "none" => None,
                (v, l) => Some(floating(l, &f("drop_backoff"), &v)?),
            },
        }),
        "ciad" => InnerAlgorithm::Ciad(CiadLimit {
            initial_limit: k.u32(&f("initial_limit"))?,
            min_limit: k.u32(&f("min_limit"))?,
            max_limit: k.u32(&f("max_limit"))?,
            backoff_ratio: k.f64(&f("backoff_ratio"))?,
            fast_start: k.bool(&f("fast_start"))?,
            rtt_tolerance: k.f64(&f("rtt_tolerance"))?,
        }),
        _ => return Err(unknown(p, word)),
    })
}

fn parse_queue(k: &mut Keys, p: &str) -> Result<QueueSize, ParseError> {
    let w = k.word(p)?;
    match w.0.as_str() {
        "constant" => Ok(QueueSize::Constant(k.u32(&format!("{p}.0"))?)),
        "sqrt" => Ok(QueueSize::Sqrt {
            min: k.u32(&format!("{p}.min"))?,
        }),
        _ => Err(unknown(p, w)),
    }
}

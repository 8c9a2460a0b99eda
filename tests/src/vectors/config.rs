//! `weir::Config` as `key=value` tokens: every field under its Rust name, nested fields joined by `.`,
//! an enum as its variant's snake-case name with the variant's fields under the same key, an `Option`
//! as its value or `none`. The README lists every key and its type.

use super::{bad, boolean, float, float32, floating, floating32, uint, uint32, ParseError};
use std::collections::BTreeMap;
use weir::balance::{
    Algorithm, BucketHealth, Draw, EwmaHealth, LowestScore, Weighted, WeightedHealth,
};
use weir::limit::{
    AimdLimit, CiadLimit, FixedLimit, Gradient2Limit, GradientLimit, InnerAlgorithm, KneeLimit,
    LimitAlgorithm, QueueSize, SampleWindow, VegasLimit, VegasStep, VegasThreshold, WindowedLimit,
};
use weir::Config;

/// The tokens of `c`, in the order the files write them (the struct's field order).
pub(super) fn tokens(c: &Config) -> Vec<(String, String)> {
    let mut out = Tokens(Vec::new());
    match c.algorithm {
        Algorithm::LowestScore(LowestScore {
            success_half_life_ns,
            failure_half_life_ns,
            dropped_cost,
            throttled_cost,
            client_error_cost,
            penalty,
            ratio_penalty,
            probe_fraction,
            forgiveness,
            probe_after_ns,
            slow_ratio,
        }) => {
            out.put("algorithm", "lowest_score");
            out.put("algorithm.success_half_life_ns", success_half_life_ns);
            out.put("algorithm.failure_half_life_ns", failure_half_life_ns);
            out.put("algorithm.dropped_cost", float32(dropped_cost));
            out.put("algorithm.throttled_cost", float32(throttled_cost));
            out.put("algorithm.client_error_cost", float32(client_error_cost));
            out.put("algorithm.penalty", float32(penalty));
            out.put("algorithm.ratio_penalty", float32(ratio_penalty));
            out.put("algorithm.probe_fraction", float32(probe_fraction));
            out.put("algorithm.forgiveness", float32(forgiveness));
            out.put("algorithm.probe_after_ns", probe_after_ns);
            out.put("algorithm.slow_ratio", float32(slow_ratio));
        }
        Algorithm::Weighted(Weighted {
            health,
            draw,
            weight_exponent,
            floor,
        }) => {
            out.put("algorithm", "weighted");
            match health {
                WeightedHealth::Buckets(BucketHealth {
                    count,
                    width_ns,
                    decay,
                }) => {
                    out.put("algorithm.health", "buckets");
                    out.put("algorithm.health.count", count);
                    out.put("algorithm.health.width_ns", width_ns);
                    out.put("algorithm.health.decay", float(decay));
                }
                WeightedHealth::Ewma(EwmaHealth { half_life }) => {
                    out.put("algorithm.health", "ewma");
                    out.put("algorithm.health.half_life", half_life);
                }
            }
            out.put("algorithm.draw", draw_name(draw));
            out.put("algorithm.weight_exponent", float(weight_exponent));
            out.put("algorithm.floor", float(floor));
        }
    }
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
        LimitAlgorithm::Knee(l) => inner(&mut out, "limit", InnerAlgorithm::Knee(l)),
    }
    out.put("max_waiters", c.max_waiters);
    out.put("seed", c.seed);
    out.0
}

struct Tokens(Vec<(String, String)>);

impl Tokens {
    fn put(&mut self, key: &str, value: impl ToString) {
        self.0.push((key.to_string(), value.to_string()));
    }
}

fn draw_name(d: Draw) -> &'static str {
    match d {
        Draw::Cascade => "cascade",
        Draw::CascadeApprox => "cascade_approx",
        Draw::WeightedPick => "weighted_pick",
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
        InnerAlgorithm::Knee(l) => {
            out.put(p, "knee");
            out.put(&k("initial_limit"), l.initial_limit);
            out.put(&k("min_limit"), l.min_limit);
            out.put(&k("max_limit"), l.max_limit);
            out.put(&k("backoff_ratio"), float(l.backoff_ratio));
            out.put(&k("knee"), float(l.knee));
            out.put(&k("hold"), float(l.hold));
            out.put(&k("armed_for_ns"), l.armed_for_ns);
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
    let algorithm = match k.word("algorithm")? {
        (w, _) if w == "lowest_score" => Algorithm::LowestScore(LowestScore {
            success_half_life_ns: k.u64("algorithm.success_half_life_ns")?,
            failure_half_life_ns: k.u64("algorithm.failure_half_life_ns")?,
            dropped_cost: k.f32("algorithm.dropped_cost")?,
            throttled_cost: k.f32("algorithm.throttled_cost")?,
            client_error_cost: k.f32("algorithm.client_error_cost")?,
            penalty: k.f32("algorithm.penalty")?,
            ratio_penalty: k.f32("algorithm.ratio_penalty")?,
            probe_fraction: k.f32("algorithm.probe_fraction")?,
            forgiveness: k.f32("algorithm.forgiveness")?,
            probe_after_ns: k.u64("algorithm.probe_after_ns")?,
            slow_ratio: k.f32("algorithm.slow_ratio")?,
        }),
        (w, _) if w == "weighted" => {
            let health = match k.word("algorithm.health")? {
                (w, l) if w == "buckets" => WeightedHealth::Buckets(BucketHealth {
                    count: k
                        .u64("algorithm.health.count")?
                        .try_into()
                        .map_err(|_| bad(l, "algorithm.health.count out of range"))?,
                    width_ns: k.u64("algorithm.health.width_ns")?,
                    decay: k.f64("algorithm.health.decay")?,
                }),
                (w, _) if w == "ewma" => WeightedHealth::Ewma(EwmaHealth {
                    half_life: k.u32("algorithm.health.half_life")?,
                }),
                other => return Err(unknown("algorithm.health", other)),
            };
            let draw = match k.word("algorithm.draw")? {
                (w, _) if w == "cascade" => Draw::Cascade,
                (w, _) if w == "cascade_approx" => Draw::CascadeApprox,
                (w, _) if w == "weighted_pick" => Draw::WeightedPick,
                other => return Err(unknown("algorithm.draw", other)),
            };
            Algorithm::Weighted(Weighted {
                health,
                draw,
                weight_exponent: k.f64("algorithm.weight_exponent")?,
                floor: k.f64("algorithm.floor")?,
            })
        }
        other => return Err(unknown("algorithm", other)),
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
        algorithm,
        limit,
        max_waiters: k.u32("max_waiters")?,
        seed: k.u64("seed")?,
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
        "knee" => InnerAlgorithm::Knee(KneeLimit {
            initial_limit: k.u32(&f("initial_limit"))?,
            min_limit: k.u32(&f("min_limit"))?,
            max_limit: k.u32(&f("max_limit"))?,
            backoff_ratio: k.f64(&f("backoff_ratio"))?,
            knee: k.f64(&f("knee"))?,
            hold: k.f64(&f("hold"))?,
            armed_for_ns: k.u64(&f("armed_for_ns"))?,
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

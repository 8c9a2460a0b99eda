//! Reading the input: numbers (often at a boundary), times, ids, outcomes, NULL choices and
//! configurations, valid and not.

use super::*;
use weir_core::limit::KNEE_MAX_ARMED_NS;

/// The input, read as numbers; an exhausted input reads zeros.
pub(super) struct Bytes<'a> {
    pub(super) data: &'a [u8],
    pub(super) pos: usize,
}

impl Bytes<'_> {
    pub(super) fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
    pub(super) fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    pub(super) fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    pub(super) fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    /// True one time in `n`.
    pub(super) fn one_in(&mut self, n: u8) -> bool {
        self.u8() % n == 0
    }
    pub(super) fn pick<T: Copy>(&mut self, choices: &[T]) -> T {
        choices[usize::from(self.u8()) % choices.len()]
    }
    /// A u32 that is often at a boundary.
    pub(super) fn edgy_u32(&mut self) -> u32 {
        match self.u8() % 4 {
            0 => self.pick(&[
                0,
                1,
                2,
                3,
                20,
                100,
                1 << 20,
                (1 << 24) - 1,
                1 << 24,
                u32::MAX,
            ]),
            1 => u32::from(self.u8()),
            _ => self.u32(),
        }
    }
    pub(super) fn edgy_u64(&mut self) -> u64 {
        match self.u8() % 4 {
            0 => self.pick(&[
                0,
                1,
                1_000_000,
                5_000_000_000,
                3_600_000_000_000,
                u64::MAX / 2,
                u64::MAX - 1,
                u64::MAX,
            ]),
            1 => u64::from(self.u32()),
            _ => self.u64(),
        }
    }
    pub(super) fn edgy_f64(&mut self) -> f64 {
        match self.u8() % 3 {
            0 => self.pick(&[
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                0.0,
                -0.0,
                f64::MIN_POSITIVE,
                1e-300,
                0.01,
                0.1,
                0.5,
                0.9,
                0.99,
                1.0,
                1.5,
                2.0,
                3.0,
                64.0,
                64.5,
                1e6,
                1e300,
                -1.0,
            ]),
            1 => f64::from(self.u8()) / 128.0,
            _ => f64::from_bits(self.u64()),
        }
    }
    /// An f32 for a fraction in [0, 1], often at or just past an end of that range in f32 steps (which
    /// [`Bytes::edgy_f64`]'s values lose in the conversion), or one of its values.
    pub(super) fn edgy_fraction(&mut self) -> f32 {
        match self.u8() % 2 {
            0 => self.pick(&[
                0.0,
                -0.0,
                f32::from_bits(1),
                -f32::from_bits(1),
                0.2,
                0.5,
                1.0 - f32::EPSILON / 2.0,
                1.0,
                1.0 + f32::EPSILON,
                -0.01,
                1.01,
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
            ]),
            _ => self.edgy_f64() as f32,
        }
    }
    /// An f32 for a slow ratio (0, or in [1, 64]), often at or just past an end of those ranges in f32
    /// steps, or one of [`Bytes::edgy_fraction`]'s values.
    pub(super) fn edgy_slow_ratio(&mut self) -> f32 {
        match self.u8() % 2 {
            0 => self.pick(&[
                0.0,
                -0.0,
                f32::from_bits(1),
                1.0 - f32::EPSILON / 2.0,
                1.0,
                1.0 + f32::EPSILON,
                2.0,
                5.0,
                64.0 - f32::EPSILON * 32.0,
                64.0,
                64.0 + f32::EPSILON * 64.0,
                65.0,
                f32::NAN,
                f32::INFINITY,
            ]),
            _ => self.edgy_fraction(),
        }
    }
    /// A knee limit's `armed_for_ns` (at most 1000 s), often 0 (the latency read always), at or just
    /// past that end, or at a drop tick's edge (2^30 ns), else one of [`Bytes::edgy_u64`]'s values.
    pub(super) fn edgy_armed_ns(&mut self) -> u64 {
        match self.u8() % 2 {
            0 => self.pick(&[
                0,
                1,
                (1 << 30) - 1,
                1 << 30,
                (1 << 30) + 1,
                60_000_000_000,
                KNEE_MAX_ARMED_NS - 1,
                KNEE_MAX_ARMED_NS,
                KNEE_MAX_ARMED_NS + 1,
                u64::MAX,
            ]),
            _ => self.edgy_u64(),
        }
    }
    /// A lowest-score `probe_after_ns` (0, off, or 1 ms ..= 1 hour): 0, at or just past an end of the
    /// range, at the counters' tick (2^20 ns, just above 1 ms) or a clock epoch, or one of
    /// [`Bytes::edgy_u64`]'s values.
    pub(super) fn edgy_probe_after_ns(&mut self) -> u64 {
        match self.u8() % 2 {
            0 => self.pick(&[
                0,
                1,
                999_999,
                1_000_000,
                (1 << 20) - 1,
                1 << 20,
                250_000_000,
                1_000_000_000,
                3_600_000_000_000,
                3_600_000_000_001,
                u64::MAX,
            ]),
            _ => self.edgy_u64(),
        }
    }
}

impl Fuzz<'_> {
    pub(super) fn time(&mut self) -> u64 {
        match self.input.u8() % 8 {
            0 => self.input.edgy_u64(),
            // Backwards a little.
            1 => self.now.saturating_sub(u64::from(self.input.u32())),
            _ => {
                self.now = self.now.saturating_add(u64::from(self.input.u32()));
                self.now
            }
        }
    }

    pub(super) fn id(&mut self) -> u64 {
        if self.input.one_in(16) {
            self.input.edgy_u64()
        } else {
            u64::from(self.input.u8() % 10)
        }
    }

    pub(super) fn outcome(&mut self) -> weir_outcome {
        if self.input.one_in(12) {
            self.input.edgy_u32()
        } else {
            u32::from(self.input.u8()) % WEIR_OUTCOME_COUNT as u32
        }
    }

    /// A release's load report: none (`weir_balancer_release`) two times in three, else a utilization
    /// for `weir_balancer_release_loaded`, often at or just past an end of [0, 1000], or one of
    /// [`Bytes::edgy_f64`]'s values.
    pub(super) fn utilization(&mut self) -> Option<f64> {
        let i = &mut self.input;
        match i.u8() % 6 {
            0 => Some(i.pick(&[
                0.0,
                -0.0,
                -f64::MIN_POSITIVE,
                0.0005,
                0.875,
                1.0,
                1.2,
                999.9995,
                1_000.0,
                f64::from_bits(1_000f64.to_bits() + 1),
                1_000.5,
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ])),
            1 => Some(i.edgy_f64()),
            _ => None,
        }
    }

    /// Whether to pass NULL for a pointer argument.
    pub(super) fn null(&mut self) -> bool {
        self.input.one_in(24)
    }

    /// A balancer handle: one of the two sides (or NULL when empty or chosen).
    pub(super) fn side_index(&mut self) -> usize {
        usize::from(self.input.u8() & 1)
    }

    pub(super) fn config(&mut self) -> weir_config {
        let mut c = match self.input.u8() % 4 {
            0 => weir_config_cascade(),
            _ => weir_config_default(),
        };
        match self.input.u8() % 4 {
            0 => c.algorithm = weir_algorithm_lowest_score_default(),
            1 => c.algorithm = weir_algorithm_weighted_default(),
            _ => {}
        }
        match self.input.u8() % 4 {
            0 => c.algorithm.weighted.health = weir_health_buckets_default(),
            1 => c.algorithm.weighted.health = weir_health_ewma_default(),
            _ => {}
        }
        c.limit = match self.input.u8() % 11 {
            0 => weir_limit_fixed_default(),
            1 => weir_limit_aimd_default(),
            2 => weir_limit_vegas_default(),
            3 => weir_limit_gradient_default(),
            4 => weir_limit_gradient2_default(),
            5 => weir_limit_ciad_default(),
            6 => weir_limit_windowed_default(),
            7 => weir_limit_knee_default(),
            _ => c.limit,
        };
        c.algorithm.weighted.draw = u32::from(self.input.u8() % 3);
        // A few fields set to edgy values; most configurations stay valid.
        let mutations = match self.input.u8() % 4 {
            0 => self.input.u8() % 4,
            _ => 0,
        };
        for _ in 0..mutations {
            let i = &mut self.input;
            let l = &mut c.algorithm.lowest_score;
            let w = &mut c.algorithm.weighted;
            match i.u8() % 52 {
                0 => c.algorithm.family = i.edgy_u32() % 3,
                1 => l.success_half_life_ns = i.edgy_u64(),
                2 => l.failure_half_life_ns = i.edgy_u64(),
                3 => l.throttled_cost = i.edgy_f64() as f32,
                4 => l.client_error_cost = i.edgy_f64() as f32,
                5 => l.penalty = i.edgy_f64() as f32,
                6 => l.ratio_penalty = i.edgy_f64() as f32,
                7 => w.health.buckets.count = i.edgy_u32(),
                8 => w.health.buckets.width_ns = i.edgy_u64(),
                9 => w.health.buckets.decay = i.edgy_f64(),
                10 => w.health.ewma.half_life = i.edgy_u32(),
                11 => w.weight_exponent = i.edgy_f64(),
                12 => w.floor = i.edgy_f64(),
                13 => w.draw = i.edgy_u32(),
                14 => c.limit.algorithm = i.edgy_u32() % 9,
                15 => c.limit.fixed.limit = i.edgy_u32(),
                16 => c.limit.aimd.initial_limit = i.edgy_u32(),
                17 => c.limit.aimd.max_limit = i.edgy_u32(),
                18 => c.limit.aimd.backoff_ratio = i.edgy_f64(),
                19 => c.limit.aimd.timeout_ns = i.edgy_u64(),
                20 => c.limit.vegas.initial_limit = i.edgy_u32(),
                21 => c.limit.vegas.smoothing = i.edgy_f64(),
                22 => c.limit.vegas.probe_multiplier = i.edgy_u32(),
                23 => c.limit.vegas.alpha.kind = i.edgy_u32() % 3,
                24 => c.limit.vegas.increase.factor = i.edgy_f64(),
                25 => c.limit.vegas.decrease.kind = i.edgy_u32() % 3,
                26 => c.limit.gradient.min_limit = i.edgy_u32(),
                27 => c.limit.gradient.rtt_tolerance = i.edgy_f64(),
                28 => c.limit.gradient.probe_interval = i.edgy_u32(),
                29 => c.limit.gradient.queue_size.kind = i.edgy_u32() % 3,
                30 => c.limit.gradient2.long_window = i.edgy_u32(),
                31 => c.limit.gradient2.drop_backoff = i.edgy_f64(),
                32 => c.limit.gradient2.drop_backoff_enabled = i.u8() & 1 == 1,
                33 => c.limit.ciad.min_limit = i.edgy_u32(),
                34 => c.limit.ciad.backoff_ratio = i.edgy_f64(),
                35 => c.limit.windowed.inner = i.edgy_u32() % 9,
                36 => c.limit.windowed.min_window_ns = i.edgy_u64(),
                37 => c.limit.windowed.window.kind = i.edgy_u32() % 3,
                38 => c.limit.windowed.window.capacity = i.edgy_u32(),
                39 => l.dropped_cost = i.edgy_f64() as f32,
                40 => c.limit.ciad.rtt_tolerance = i.edgy_f64(),
                41 => w.health.model = i.edgy_u32() % 3,
                42 => c.limit.knee.min_limit = i.edgy_u32(),
                43 => c.limit.knee.backoff_ratio = i.edgy_f64(),
                44 => c.limit.knee.knee = i.edgy_f64(),
                45 => c.limit.knee.hold = i.edgy_f64(),
                46 => l.probe_fraction = i.edgy_fraction(),
                47 => l.forgiveness = i.edgy_fraction(),
                48 => l.slow_ratio = i.edgy_slow_ratio(),
                49 => c.limit.knee.armed_for_ns = i.edgy_armed_ns(),
                50 => l.probe_after_ns = i.edgy_probe_after_ns(),
                _ => c.max_waiters = i.edgy_u32(),
            }
        }
        c.seed = self.input.u64();
        c
    }
}

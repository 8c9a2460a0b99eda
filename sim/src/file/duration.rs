//! Durations as people write them (`"250ms"`, `"1.5s"`, `"2m"`, `"3333333ns"`), read exactly into virtual
//! nanoseconds, and written back the same way for messages.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};

use crate::model::{MIN, MS, SEC};

/// The longest duration a file may give: 100,000 hours (about 11 years). Far beyond any scenario, and far
/// enough below `u64::MAX` ns that the engine's `now + delay` sums cannot overflow.
pub const MAX: u64 = 100_000 * 60 * MIN;

/// The units, longest name first where one is a prefix of another (`ms` before `m`).
const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", MS),
    ("s", SEC),
    ("min", MIN),
    ("m", MIN),
    ("h", 60 * MIN),
];

/// A duration in virtual nanoseconds, read from a string such as `"250ms"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Dur(pub u64);

/// Reads `"250ms"`, `"1.5s"`, `"2m"`, `"10 us"`: a decimal number, optional spaces, a unit (`ns`, `us` or
/// `µs`, `ms`, `s`, `m` or `min`, `h`). The value must be a whole number of nanoseconds, at most [`MAX`].
///
/// ```
/// use weir_sim::file::duration::parse;
/// assert_eq!(parse("1.5s"), Ok(1_500_000_000));
/// assert_eq!(parse("250 ms"), Ok(250_000_000));
/// assert!(parse("0.5ns").is_err() && parse("5").is_err());
/// ```
pub fn parse(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (&t[..split], t[split..].trim_start());
    let bad = || {
        format!(
            "\"{text}\" is not a duration: write a number and a unit (ns, us, ms, s, m, h), \
             such as \"250ms\" or \"1.5s\""
        )
    };
    let scale = UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|&(_, scale)| u128::from(scale))
        .ok_or_else(bad)?;
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return Err(bad());
    }
    // Exact: the digits as an integer over a power of ten, in u128 (at most 38 digits fit).
    let digits = format!("{whole}{fraction}");
    // 10^30 fits a u128 (up to 3.4 × 10^38); its product with the unit is checked.
    if digits.len() > 30 {
        return Err(format!("\"{text}\" is too long (at most {})", show(MAX)));
    }
    let mantissa: u128 = digits.parse().map_err(|_| bad())?;
    let ten = 10u128.pow(fraction.len() as u32);
    let too_long = || format!("\"{text}\" is too long (at most {})", show(MAX));
    let ns = mantissa.checked_mul(scale).ok_or_else(too_long)?;
    if ns % ten != 0 {
        return Err(format!("\"{text}\" is not a whole number of nanoseconds"));
    }
    match u64::try_from(ns / ten) {
        Ok(ns) if ns <= MAX => Ok(ns),
        _ => Err(too_long()),
    }
}

/// A duration the way a file writes it: the largest unit that gives a whole number, else the shortest
/// decimal (`"250ms"`, `"1.5s"`, `"3333333ns"`).
///
/// ```
/// use weir_sim::file::duration::show;
/// assert_eq!(show(250_000_000), "250ms");
/// assert_eq!(show(1_500_000_000), "1.5s");
/// assert_eq!(show(120_000_000_000), "2m");
/// assert_eq!(show(0), "0s");
/// ```
pub fn show(ns: u64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    for (name, scale) in [("h", 60 * MIN), ("m", MIN)] {
        if ns % scale == 0 {
            return format!("{}{name}", ns / scale);
        }
    }
    // Seconds and milliseconds with up to three decimals; else whole microseconds; else nanoseconds.
    for (name, scale) in [("s", SEC), ("ms", MS)] {
        let milli = scale / 1_000;
        if ns >= scale && ns % milli == 0 {
            let (whole, thousandths) = (ns / scale, ns % scale / milli);
            let decimals = format!(".{thousandths:03}");
            return format!(
                "{whole}{}{name}",
                decimals.trim_end_matches('0').trim_end_matches('.')
            );
        }
    }
    if ns % 1_000 == 0 {
        return format!("{}us", ns / 1_000);
    }
    format!("{ns}ns")
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as \"250ms\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Dur, E> {
                parse(s).map(Dur).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "{n} has no unit: write a string such as \"{n}ms\" or \"{n}s\""
                )))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "{n} has no unit: write a string such as \"{n}s\""
                )))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_and_decimals_are_exact() {
        for (text, ns) in [
            ("3333333ns", 3_333_333),
            ("10us", 10_000),
            ("10µs", 10_000),
            ("1.5ms", 1_500_000),
            ("0.001s", MS),
            ("2m", 2 * MIN),
            ("2min", 2 * MIN),
            ("1000h", 1000 * 60 * MIN),
            (" 7 s ", 7 * SEC),
            (".5s", SEC / 2),
            ("5.s", 5 * SEC),
            ("0ms", 0),
        ] {
            assert_eq!(parse(text), Ok(ns), "{text}");
        }
    }

    #[test]
    fn mistakes_are_named() {
        for (text, says) in [
            ("5", "not a duration"),
            ("5 sec", "not a duration"),
            ("-5s", "not a duration"),
            ("1.2.3s", "not a duration"),
            ("s", "not a duration"),
            ("", "not a duration"),
            ("1.5ns", "whole number of nanoseconds"),
            ("100001h", "too long"),
            ("99999999999999999999999999999999s", "too long"),
            ("999999999999999999999999999999h", "too long"),
            ("99999999999999.9999999999999999h", "too long"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn show_reads_back() {
        for ns in [
            1,
            999,
            1_000,
            1_500_000,
            166_666_666,
            3_333_333,
            SEC,
            90 * SEC,
            3 * MIN / 2,
            MAX,
        ] {
            assert_eq!(parse(&show(ns)), Ok(ns), "{}", show(ns));
        }
        assert_eq!(show(166_666_666), "166666666ns");
        assert_eq!(show(2_500_000), "2.5ms");
        assert_eq!(show(1_500), "1500ns");
    }
}

//! The one syntax of every option that takes a time (`run --runtime`,
//! `proxy --delay`, `prof --thinktime`, ...): a number of seconds (`5`,
//! `0.5`), or a number with a unit (`1s`, `500ms`, `6ms`, `250us`, `2m`,
//! `1h`; `1m 30s` too). Documented once, in docs/run.md ("Durations").
//!
//! Why not humantime alone: it refuses a bare number (`--delay 6`) and a
//! decimal (`0.5s`), which `run --runtime 0.5` and mrskew's
//! `--thinktime=0.5` users write; it is still what reads the unit forms,
//! so every spelling the options took before (humantime's `6ms`, `500us`,
//! `1min`) still works. And clap would take `--runtime -1` for an unknown
//! option: the options that use these parsers accept a leading `-`, so that
//! a negative time gets a message that says what is wrong.

use std::time::Duration;

/// Why a time was refused.
#[derive(Debug, thiserror::Error)]
pub enum DurationError {
    #[error("`{0}`: a time cannot be negative")]
    Negative(String),
    #[error("`{0}`: expected a number of seconds (5, 0.5) or a number with a unit (1s, 500ms, 250us, 2m)")]
    Syntax(String),
    #[error("`{0}`: too long a time")]
    TooLong(String),
}

/// A time whose bare number is seconds: the syntax of every time option.
pub fn seconds(s: &str) -> Result<Duration, DurationError> {
    parse(s, 1.0)
}

/// As [`seconds`], for the one option whose bare number has always been
/// milliseconds: `run --result-cache-lag 3000`, as Oracle's
/// CLIENT_RESULT_CACHE_LAG is given (a unit, `3s`, works as everywhere).
pub fn millis(s: &str) -> Result<Duration, DurationError> {
    parse(s, 1e-3)
}

/// Reads `s`; a bare number is `bare_unit` seconds each.
fn parse(s: &str, bare_unit: f64) -> Result<Duration, DurationError> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(DurationError::Negative(s.to_string()));
    }
    let secs = match t.parse::<f64>() {
        Ok(n) => n * bare_unit,
        Err(_) => match decimal_with_unit(t) {
            Some(secs) => secs,
            None => {
                return humantime::parse_duration(t).map_err(|e| match e {
                    humantime::DurationError::NumberOverflow => {
                        DurationError::TooLong(s.to_string())
                    }
                    _ => DurationError::Syntax(s.to_string()),
                })
            }
        },
    };
    if secs.is_nan() {
        return Err(DurationError::Syntax(s.to_string()));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| DurationError::TooLong(s.to_string()))
}

/// A single decimal number and unit (`0.5s`, `1.5ms`), which humantime
/// does not read; `None` for anything else (humantime then reads it).
fn decimal_with_unit(t: &str) -> Option<f64> {
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|&p| p > 0)?;
    let (num, unit) = t.split_at(split);
    if !num.contains('.') {
        return None;
    }
    let n: f64 = num.parse().ok()?;
    let scale = match unit.trim() {
        "h" | "hr" | "hour" | "hours" => 3600.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "ms" | "msec" | "millis" => 1e-3,
        "us" | "µs" | "usec" => 1e-6,
        "ns" | "nsec" => 1e-9,
        _ => return None,
    };
    Some(n * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_seconds_and_units_say_otherwise() {
        let ms = Duration::from_millis;
        for (text, want) in [
            ("5", Duration::from_secs(5)),
            ("0.5", ms(500)),
            ("1s", Duration::from_secs(1)),
            ("0.5s", ms(500)),
            ("500ms", ms(500)),
            ("6ms", ms(6)),
            ("1.5ms", Duration::from_micros(1500)),
            ("250us", Duration::from_micros(250)),
            ("2m", Duration::from_secs(120)),
            ("1min", Duration::from_secs(60)),
            ("1m 30s", Duration::from_secs(90)),
            ("0", Duration::ZERO),
            ("0ms", Duration::ZERO),
        ] {
            assert_eq!(seconds(text).unwrap(), want, "{text}");
        }
        assert_eq!(millis("3000").unwrap(), ms(3000));
        assert_eq!(millis("3s").unwrap(), ms(3000));
    }

    #[test]
    fn negatives_and_nonsense_are_refused_by_name() {
        for bad in ["-1", "-1s", " -0.5"] {
            let e = seconds(bad).unwrap_err().to_string();
            assert!(e.contains("cannot be negative"), "{bad}: {e}");
        }
        for bad in ["", "abc", "6 parsecs", "1.2.3s", "NaN"] {
            let e = seconds(bad).unwrap_err().to_string();
            assert!(e.contains("expected a number of seconds"), "{bad}: {e}");
        }
        assert!(seconds("1e300")
            .unwrap_err()
            .to_string()
            .contains("too long"));
    }
}

//! [`RunOptions`](crate::RunOptions) read from a file (a study's
//! workload) under `tracelab run`'s option names: the values that the
//! command line spells as words (`--tx-behavior rollback`, `--binds-order
//! shuffled`) are spelled so here too, and every time in the one duration
//! syntax (`crate::duration`).

use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::ConnectMode;

/// A time: a number of seconds (`0.01`) or text with a unit (`"10ms"`).
pub(crate) fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Time {
        Secs(f64),
        Text(String),
    }
    let text = match Time::deserialize(d)? {
        Time::Secs(n) => n.to_string(),
        Time::Text(t) => t,
    };
    crate::duration::seconds(&text).map_err(serde::de::Error::custom)
}

/// `commit` (the default) or `rollback`: true for rollback.
pub(crate) fn tx_behavior<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match String::deserialize(d)?.as_str() {
        "commit" => Ok(false),
        "rollback" => Ok(true),
        other => Err(serde::de::Error::custom(format!(
            "`{other}`: expected `commit` or `rollback`"
        ))),
    }
}

/// `in-order` (the default) or `shuffled`: true for shuffled.
pub(crate) fn binds_order<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match String::deserialize(d)?.as_str() {
        "in-order" | "in_order" => Ok(false),
        "shuffled" => Ok(true),
        other => Err(serde::de::Error::custom(format!(
            "`{other}`: expected `in-order` or `shuffled`"
        ))),
    }
}

/// Error codes as `run --ignore-errors` reads them: SQLSTATEs are text
/// (`"23505"`), MariaDB's error numbers may be numbers (`1062`).
pub(crate) fn error_codes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Code {
        Num(u64),
        Text(String),
    }
    Ok(Vec::<Code>::deserialize(d)?
        .into_iter()
        .map(|c| match c {
            Code::Num(n) => n.to_string(),
            Code::Text(t) => t.trim().to_uppercase(),
        })
        .collect())
}

/// Transactions per second of the whole run: more than 0.
pub(crate) fn rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let r = f64::deserialize(d)?;
    if r > 0.0 && r.is_finite() {
        Ok(Some(r))
    } else {
        Err(serde::de::Error::custom(format!(
            "{r}: expected transactions per second, more than 0"
        )))
    }
}

impl TryFrom<String> for ConnectMode {
    type Error = String;

    fn try_from(s: String) -> Result<ConnectMode, String> {
        let t = s.trim();
        match t {
            "flood" => return Ok(ConnectMode::Flood),
            "tsunami" => return Ok(ConnectMode::Tsunami),
            // `run --connect-delay`'s default.
            "trickle" => return Ok(ConnectMode::Trickle(Duration::from_millis(250))),
            _ => {}
        }
        match t.strip_prefix("trickle") {
            Some(delay) if delay.starts_with(char::is_whitespace) => {
                crate::duration::seconds(delay.trim())
                    .map(ConnectMode::Trickle)
                    .map_err(|e| e.to_string())
            }
            _ => Err(format!(
                "`{s}`: expected `flood`, `tsunami`, `trickle` or `trickle TIME` (logons TIME apart)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{ConnectMode, RunOptions, Timer};
    use serde::Deserialize;
    use std::collections::BTreeMap;
    use std::time::Duration;

    /// Options from `name = text` pairs, as a file's strings.
    fn read(pairs: &[(&str, &str)]) -> Result<RunOptions, String> {
        let m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let d: serde::de::value::MapDeserializer<'_, _, serde::de::value::Error> =
            serde::de::value::MapDeserializer::new(m.into_iter());
        RunOptions::deserialize(d).map_err(|e| e.to_string())
    }

    #[test]
    fn options_read_under_their_run_names() {
        let o = read(&[
            ("exe_delay", "10ms"),
            ("connect_mode", "trickle 100ms"),
            ("tx_behavior", "rollback"),
            ("binds_order", "shuffled"),
            ("timer", "coarse"),
        ])
        .unwrap();
        assert_eq!(o.exe_delay, Duration::from_millis(10));
        assert_eq!(o.connect, ConnectMode::Trickle(Duration::from_millis(100)));
        assert!(o.rollback && o.shuffle_binds);
        assert_eq!(o.timer, Timer::Coarse);
        // What is not given keeps `run`'s default.
        assert_eq!(o.rate, None);
        assert_eq!(o.sessions, 1);
        let o = read(&[("connect_mode", "trickle")]).unwrap();
        assert_eq!(o.connect, ConnectMode::Trickle(Duration::from_millis(250)));
    }

    #[test]
    fn bad_values_and_unknown_names_are_said() {
        for (k, v, want) in [
            ("exe_delay", "-1s", "cannot be negative"),
            ("connect_mode", "storm", "expected `flood`, `tsunami`"),
            ("tx_behavior", "abort", "expected `commit` or `rollback`"),
            ("timer", "tsc", "unknown variant `tsc`"),
            ("rat", "5", "unknown field `rat`"),
            // The caller's own, not an option of a file.
            ("url", "postgres://x", "unknown field `url`"),
        ] {
            let e = read(&[(k, v)]).unwrap_err();
            assert!(e.contains(want), "{k} = {v}: {e}");
        }
    }
}

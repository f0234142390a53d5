//! `[report] profiles` of a study file, the `measure.profile_where`
//! check, and how a call name becomes a measurement name (profiles are
//! measured by `execute::profile`, reported by `report::profile`).

use serde::Deserialize;
use tracelab_query::Question;

/// `[report] profiles = { of = ["proxy", "client"], top = 10 }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfilesSpec {
    /// Which traces, in this order: `proxy` (the proxy's, of the server
    /// side of the wire), `client` (`run --trace`'s), `server` (the server
    /// tracer's, from inside PostgreSQL).
    #[serde(default = "both")]
    pub of: Vec<String>,
    /// Rows before the rest fold into `N others` (mrskew's `--top`).
    #[serde(default = "ten")]
    pub top: usize,
}

fn both() -> Vec<String> {
    vec!["proxy".into(), "client".into()]
}
fn ten() -> usize {
    10
}

/// The traces a profile can be of.
pub const SOURCES: [&str; 3] = ["proxy", "client", "server"];

impl ProfilesSpec {
    /// Every source named is one of [`SOURCES`].
    pub fn check(&self) -> Result<(), String> {
        match self.of.iter().find(|o| !SOURCES.contains(&o.as_str())) {
            Some(o) => Err(format!(
                "`{o}`: expected traces of {}",
                SOURCES.map(|s| format!("`{s}`")).join(", ")
            )),
            None => Ok(()),
        }
    }
}

/// Whether `w` is an expression the skew engine takes for `--where`.
pub fn check_where(w: &str) -> Result<(), String> {
    tracelab_query::Query::new(&Question {
        where0: w.to_string(),
        ..Question::default()
    })
    .map(|_| ())
    .map_err(|e| format!("`{w}`: {e}"))
}

/// A call name as a measurement name usable in expressions:
/// "SQL*Net message from client" → `sql_net_message_from_client`.
pub fn measurement_name(label: &str) -> String {
    let mut out = String::new();
    for c in label.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_filters() {
        assert_eq!(
            measurement_name("SQL*Net message from client"),
            "sql_net_message_from_client"
        );
        assert!(check_where("$af < 1").is_ok());
        assert!(check_where("$af <").is_err());
    }
}

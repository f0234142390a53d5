//! Measurements from outside tracelab: a command run beside (or after)
//! each measured run, whose output lines `name value` become
//! measurements, and `perf stat` counters of the server's processes (run
//! by `execute::command` and `execute::perf`).

use std::collections::BTreeSet;

use serde::Deserialize;

/// `[[measure.command]]`: a shell command whose stdout lines `NAME VALUE`
/// become the run's measurements `{name}_NAME`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// The measurements' prefix: letters, digits and `_`.
    pub name: String,
    /// The command, run with `sh -c`; `{var}`s are the cell's, and
    /// `$TRACELAB_SERVER_PID` is the server's process (the postmaster),
    /// when it is known.
    pub run: String,
    /// `beside` (started before the run, sent SIGTERM after it, its
    /// output read once it ends) or `after` (run after the run, waited
    /// for).
    #[serde(default)]
    pub when: CommandWhen,
    /// The longest the command may take after the run (after SIGTERM, or
    /// from its start with `after`): a number of seconds or `"10s"`;
    /// then it is killed and the study stops with an error.
    #[serde(default = "ten_seconds")]
    pub timeout: toml::Value,
}

fn ten_seconds() -> toml::Value {
    toml::Value::Integer(10)
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CommandWhen {
    #[default]
    Beside,
    After,
}

/// `[measure.perf]`: `perf stat -e EVENT,... -p PID` of the server's
/// processes over each measured run, as `perf_EVENT` (`-` and `:` made
/// `_`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerfSpec {
    pub events: Vec<String>,
}

impl CommandSpec {
    /// The timeout as a duration.
    pub fn timeout(&self) -> Result<std::time::Duration, String> {
        let text = match &self.timeout {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            other => return Err(format!("timeout {other}: expected a time (10, \"30s\")")),
        };
        tracelab_run::duration::seconds(&text).map_err(|e| format!("timeout {e}"))
    }
}

/// A name of measurements: letters, digits and `_`, not starting with a
/// digit.
pub fn good_name(n: &str) -> bool {
    !n.is_empty()
        && !n.starts_with(|c: char| c.is_ascii_digit())
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The measurement of a perf event: `perf_` and its name with every other
/// character than a letter or digit made `_` (`context-switches` →
/// `perf_context_switches`).
pub fn perf_name(event: &str) -> String {
    let n: String = event
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("perf_{}", n.trim_matches('_'))
}

/// Checks the commands (names unique and good, timeouts) and perf's
/// events; the error is (key, what).
pub fn check(
    commands: &[CommandSpec],
    perf: Option<&PerfSpec>,
) -> Result<(), (&'static str, String)> {
    let mut seen = BTreeSet::new();
    for c in commands {
        if !good_name(&c.name) {
            return Err((
                "measure.command.name",
                format!("`{}`: expected a name of letters, digits and `_`", c.name),
            ));
        }
        if !seen.insert(c.name.as_str()) {
            return Err((
                "measure.command.name",
                format!("command `{}` twice", c.name),
            ));
        }
        if c.run.trim().is_empty() {
            return Err((
                "measure.command.run",
                format!("command `{}`: empty", c.name),
            ));
        }
        c.timeout().map_err(|e| {
            (
                "measure.command.timeout",
                format!("command `{}`: {e}", c.name),
            )
        })?;
    }
    if let Some(p) = perf {
        if p.events.is_empty() {
            return Err(("measure.perf.events", "expected at least one event".into()));
        }
        for e in &p.events {
            // Passed to perf as one `-e` list: a comma would split it.
            if e.is_empty()
                || !e
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_:./".contains(c))
            {
                return Err((
                    "measure.perf.events",
                    format!("`{e}`: expected an event name as `perf list` shows it (cycles, context-switches)"),
                ));
            }
        }
    }
    Ok(())
}

/// One line of a command's output: `NAME VALUE` (a blank line and a
/// `#` comment are nothing); the error says what was expected.
pub fn parse_line(line: &str) -> Result<Option<(String, f64)>, String> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let mut f = t.split_whitespace();
    let (Some(name), Some(value), None) = (f.next(), f.next(), f.next()) else {
        return Err("expected `NAME VALUE` (two fields)".into());
    };
    if !good_name(name) {
        return Err(format!(
            "`{name}`: expected a name of letters, digits and `_`"
        ));
    }
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Some((name.to_string(), v))),
        _ => Err(format!("`{value}`: expected a number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_name_and_number() {
        assert_eq!(
            parse_line("load1 0.25").unwrap(),
            Some(("load1".into(), 0.25))
        );
        assert_eq!(parse_line("  # a comment").unwrap(), None);
        assert_eq!(parse_line("").unwrap(), None);
        for (bad, want) in [
            ("load1", "two fields"),
            ("a b c", "two fields"),
            ("load-1 3", "letters, digits"),
            ("x many", "expected a number"),
            ("x NaN", "expected a number"),
        ] {
            let e = parse_line(bad).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
        assert_eq!(perf_name("context-switches"), "perf_context_switches");
        assert_eq!(perf_name("cpu/cycles/"), "perf_cpu_cycles");
    }
}

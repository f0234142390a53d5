//! `[report.sessions]` of a study file: the per-session sections asked for
//! (written by `report::sessions`).

use serde::Deserialize;

use crate::model::spec::Study;

/// `[report.sessions]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsSpec {
    /// The start of each run's tally id (sqlrun: the tracefile id; `RC`
    /// in the original). Every line of a run has the same id, as sqlrun
    /// wrote them.
    #[serde(default = "rc")]
    pub tally: String,
    /// Each session's cache statistics, in Oracle's columns.
    #[serde(default)]
    pub cache_stats: bool,
    /// A chart of each session's value (`executions`) by cell.
    pub chart: Option<SessionChart>,
}

fn rc() -> String {
    "RC".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionChart {
    pub title: String,
    /// The per-session value drawn: `executions` (the tally) or
    /// `transactions`.
    #[serde(default = "executions")]
    pub value: String,
    #[serde(default)]
    pub y_label: String,
    /// A log10 y axis (for values apart by orders of magnitude).
    #[serde(default)]
    pub log_y: bool,
}

fn executions() -> String {
    "executions".into()
}

impl SessionsSpec {
    pub fn check(&self, _s: &Study) -> Result<(), String> {
        if let Some(c) = &self.chart {
            if c.value != "executions" && c.value != "transactions" {
                return Err(format!(
                    "chart.value = \"{}\": expected executions or transactions",
                    c.value
                ));
            }
        }
        if self.tally.chars().any(char::is_whitespace) {
            return Err("tally: expected an id without spaces".into());
        }
        Ok(())
    }
}

//! A level's `result_cache = { ... }`: the tables annotated, the lag, the
//! size of `tracelab run --result-cache` (run by `execute::result_cache`).

use serde::Deserialize;

use crate::model::profiles::measurement_name;
use crate::model::spec::Num;

/// What a level's cache is: the tables annotated, the lag, the size.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheLevel {
    /// `NAME:force` (every query on it cached) or `NAME:manual` (only
    /// hinted ones: the original's "cache off").
    pub tables: Vec<String>,
    /// The longest a served result may lag a committed change, ms
    /// (CLIENT_RESULT_CACHE_LAG); a number or `"{var}"`.
    #[serde(default = "lag")]
    pub lag: Num,
    /// Bytes (CLIENT_RESULT_CACHE_SIZE); a number or `"{var}"`.
    #[serde(default = "size")]
    pub size: Num,
    /// Install the invalidation triggers before the run.
    #[serde(default)]
    pub setup: bool,
    /// One cache per session, as each of sqlrun's sessions was a process
    /// with its cache.
    #[serde(default)]
    pub per_session: bool,
}

fn lag() -> Num {
    Num::Int(3000)
}
fn size() -> Num {
    Num::Int(1 << 20)
}

impl CacheLevel {
    pub fn check(&self) -> Result<(), String> {
        if self.tables.is_empty() {
            return Err("tables: expected at least one NAME:force or NAME:manual".into());
        }
        tracelab_run::parse_tables(&self.tables).map(|_| ())
    }
}

/// The names `execute::result_cache::measurements` gives a run with a
/// cache, known before the first run (`model::names`).
pub fn measurement_names() -> Vec<String> {
    let mut v: Vec<String> = tracelab_run::CacheStats::default()
        .rows()
        .iter()
        .map(|(name, _)| format!("rc_{}", measurement_name(name)))
        .collect();
    v.push("rc_channel_failures".into());
    v
}

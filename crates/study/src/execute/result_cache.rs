//! A client result cache for a level's runs (`result_cache = { tables =
//! ["holiday:force"], lag = "{lag}", size = 1048576, setup = true,
//! per_session = true }`): `tracelab run --result-cache` with those
//! settings. Its statistics, named as Oracle's CLIENT_RESULT_CACHE_STATS$,
//! become measurements (`rc_find_count`, ... for the run) and, with a
//! cache per session, values of each session.

use std::collections::BTreeMap;
use std::time::Duration;

use tracelab_run::{CacheOptions, Summary};

use crate::model::profiles::measurement_name;
use crate::model::result_cache::CacheLevel;
use crate::model::spec::{Level, Num};

/// The cache options of a cell's levels (the last level that names one),
/// or else the workload's (`own`), with `num` turning `lag` and `size`
/// into numbers.
pub fn options(
    levels: &[Level],
    own: Option<&CacheLevel>,
    num: impl Fn(&str, &Num) -> Result<f64, crate::error::StudyError>,
) -> Result<Option<CacheOptions>, crate::error::StudyError> {
    let (key, c) = match levels.iter().rev().find_map(|l| l.result_cache.as_ref()) {
        Some(c) => ("factors.levels.result_cache", c),
        None => match own {
            Some(c) => ("workload.result_cache", c),
            None => return Ok(None),
        },
    };
    let lag = num(&format!("{key}.lag"), &c.lag)?;
    let size = num(&format!("{key}.size"), &c.size)?;
    Ok(Some(CacheOptions {
        size: size.max(BLOCK as f64) as usize,
        lag: Duration::from_secs_f64(lag.max(1.0) / 1000.0),
        tables: tracelab_run::parse_tables(&c.tables).map_err(crate::error::StudyError::Usage)?,
        setup: c.setup,
        per_session: c.per_session,
    }))
}

/// Oracle's cache block: a cache smaller than one holds nothing.
const BLOCK: usize = 256;

/// The run's cache statistics as measurements: `rc_block_size`,
/// `rc_find_count`, ... (Oracle's names in snake case), and
/// `rc_channel_failures`.
pub fn measurements(summary: &Summary) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    if let Some(c) = &summary.result_cache {
        for (name, v) in c.rows() {
            m.insert(format!("rc_{}", measurement_name(name)), v as f64);
        }
        m.insert("rc_channel_failures".into(), c.channel_failures as f64);
    }
    m
}

/// Each session's values: its tally (`executions`, as sqlrun's
/// --xact-tally counts them; `transactions`), and its cache's statistics
/// under Oracle's names when it had a cache of its own.
pub fn session_values(summary: &Summary) -> Vec<(usize, String, f64)> {
    let mut out = Vec::new();
    for s in &summary.per_session {
        out.push((s.session, "executions".to_string(), s.executions as f64));
        out.push((s.session, "transactions".to_string(), s.transactions as f64));
        if let Some(c) = &s.result_cache {
            for (name, v) in c.rows() {
                out.push((s.session, name.to_string(), v as f64));
            }
        }
    }
    out
}

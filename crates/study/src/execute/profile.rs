//! Profiles of a run's traces (the client's, and a proxy's server-side
//! ones) by call name, through the skew engine: as measurements
//! (`trace_NAME_s`, `trace_NAME_calls`, ...), and as rows kept in the
//! store from which the report prints mrskew's table for each cell.

use std::collections::BTreeMap;
use std::path::Path;

use tracelab_query::{Layout, Profiling, Question};

use crate::model::profiles::measurement_name;
use crate::store::ProfileRow;

/// The trace files of a directory, in name order.
fn trace_files(dir: &Path) -> Result<Vec<String>, String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".trc"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: no trace files", dir.display()));
    }
    Ok(files)
}

/// The profile by call name of every trace in `dir`, of the calls `where`
/// passes (`1`: all), as `tracelab skew --where=... --top=0` computes it
/// (mrskew's accounted-for time: a call's CPU and every wait).
pub fn of_dir(dir: &Path, filter: &str) -> Result<Vec<ProfileRow>, String> {
    let files = trace_files(dir)?;
    let opts = Profiling {
        question: Question {
            where0: filter.to_string(),
            ..Question::default()
        },
        layout: Layout {
            top: 0,
            ..Layout::default()
        },
        jobs: 1,
        ..Profiling::default()
    };
    let out = tracelab_query::profile(&opts, &files, None).map_err(|e| e.to_string())?;
    Ok(out
        .report
        .rows
        .iter()
        .filter_map(|r| {
            r.stats.map(|s| ProfileRow {
                source: String::new(),
                name: r.label.clone(),
                duration: s.duration,
                calls: s.calls,
                min: s.min,
                max: s.max,
            })
        })
        .collect())
}

/// Rows marked as coming from `source`'s traces.
pub fn tagged(rows: Vec<ProfileRow>, source: &str) -> Vec<ProfileRow> {
    rows.into_iter()
        .map(|r| ProfileRow {
            source: source.to_string(),
            ..r
        })
        .collect()
}

/// The rows as measurements: `{prefix}NAME_s`, `{prefix}NAME_calls` and
/// `{prefix}total_s`.
pub fn measurements(rows: &[ProfileRow], prefix: &str) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for r in rows {
        let name = measurement_name(&r.name);
        m.insert(format!("{prefix}{name}_s"), r.duration);
        m.insert(format!("{prefix}{name}_calls"), r.calls as f64);
    }
    if !rows.is_empty() {
        m.insert(
            format!("{prefix}total_s"),
            rows.iter().map(|r| r.duration).sum(),
        );
    }
    m
}

/// Bytes of the files in `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Moves a run's trace directory to `keep` (kept traces), or removes it.
pub fn keep_or_remove(dir: &Path, keep: Option<&Path>, notes: &mut Vec<String>) {
    match keep {
        Some(to) => {
            let moved = to
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::rename(dir, to));
            if let Err(e) = moved {
                notes.push(format!("traces not kept in {}: {e}", to.display()));
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        None => {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

//! Profiles of a run's traces (the client's, and a proxy's server-side
//! ones) by call name, through the skew engine: as measurements
//! (`trace_NAME_s`, `trace_NAME_calls`, ...), and as rows kept in the
//! store from which the report prints mrskew's table for each cell.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use tracelab_query::{Agg, Groups, Layout, Profiling, Question, Report};

/// One call name of a run's profile.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileRow {
    /// Whose traces: `client` or `proxy`.
    pub source: String,
    pub name: String,
    pub duration: f64,
    pub calls: u64,
    pub min: f64,
    pub max: f64,
}

/// `[report] profiles = { of = ["proxy", "client"], top = 10 }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfilesSpec {
    /// Which traces, in this order: `proxy` (server side) and/or `client`.
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

/// Whether `w` is an expression the skew engine takes for `--where`.
pub fn check_where(w: &str) -> Result<(), String> {
    tracelab_query::Query::new(&Question {
        where0: w.to_string(),
        ..Question::default()
    })
    .map(|_| ())
    .map_err(|e| format!("`{w}`: {e}"))
}

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

/// mrskew's table of a cell, by skew's own report: the rows of its runs
/// added up (durations and calls summed, the least minimum, the greatest
/// maximum, in whole microseconds as the traces have them), sorted by
/// duration, ties in the order the rows came (each run's are in skew's
/// order: first appearance), the rest past `top` folded into `N others`.
pub fn table(rows: &[&ProfileRow], top: usize) -> String {
    let us = |s: f64| (s * 1e6).round() as i64;
    let mut groups = Groups::default();
    for (i, r) in rows.iter().enumerate() {
        let a = Agg::micros(
            i128::from(us(r.duration)),
            r.calls,
            us(r.min),
            us(r.max),
            (0, 0, i as u64),
        );
        match groups.map.get_mut(r.name.as_str()) {
            Some(x) => x.merge(&a),
            None => {
                groups.map.insert(r.name.as_str().into(), a);
            }
        }
    }
    let o = Layout {
        top,
        ..Layout::default()
    };
    Report::build(groups, &o, "CALL-NAME", "DURATION").render(&o)
}

/// The report's section: mrskew's table of each cell's traces, per
/// source asked for (the proxy's server-side traces, the client's).
pub fn section(
    st: &crate::store::Stored,
    study: &crate::spec::Study,
    format: crate::report::Format,
    out: &mut String,
) {
    use crate::report::{esc, Format};
    use std::fmt::Write as _;
    let Some(spec) = &study.report.profiles else {
        return;
    };
    let filter = study.measure.profile_where.as_deref().unwrap_or("1");
    let pos = |f: &str, l: &str| crate::report::level_pos(study, f, l);
    let mut runs: Vec<&crate::store::StoredRun> = st.runs.iter().collect();
    runs.sort_by_key(|r| {
        (
            r.cell.iter().map(|(f, l)| pos(f, l)).collect::<Vec<_>>(),
            r.seq,
        )
    });
    for source in &spec.of {
        let what = if source == "proxy" {
            "the proxy's server-side traces"
        } else {
            "the client's traces"
        };
        let title = if filter == "1" {
            format!("Profiles of {what}")
        } else {
            format!("Profiles of {what} (--where='{filter}')")
        };
        let mut cells: Vec<(String, Vec<usize>)> = Vec::new();
        for r in &runs {
            let key = crate::plan::cell_key(&r.cell);
            if !st
                .profiles
                .iter()
                .any(|(s, p)| *s == r.seq && &p.source == source)
            {
                continue;
            }
            match cells.iter_mut().find(|(k, _)| *k == key) {
                Some(c) => c.1.push(r.seq),
                None => cells.push((key, vec![r.seq])),
            }
        }
        if cells.is_empty() {
            continue;
        }
        crate::report::heading(out, format, 2, &title);
        for (key, seqs) in &cells {
            let rows: Vec<&ProfileRow> = st
                .profiles
                .iter()
                .filter(|(s, p)| seqs.contains(s) && &p.source == source)
                .map(|(_, p)| p)
                .collect();
            let head = format!(
                "{key} ({} run{})",
                seqs.len(),
                if seqs.len() == 1 { "" } else { "s" }
            );
            let t = table(&rows, spec.top);
            match format {
                Format::Text => {
                    let _ = writeln!(out, "{head}\n{t}");
                }
                Format::Markdown => {
                    let _ = writeln!(out, "### {head}\n\n```\n{t}```\n");
                }
                Format::Html => {
                    let _ = writeln!(out, "<h3>{}</h3>\n<pre>{}</pre>", esc(&head), esc(&t));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(name: &str, d: f64, calls: u64, min: f64, max: f64) -> ProfileRow {
        ProfileRow {
            source: "proxy".into(),
            name: name.into(),
            duration: d,
            calls,
            min,
            max,
        }
    }

    #[test]
    fn a_cells_runs_add_up_into_mrskews_table() {
        let a = r("SQL*Net message from client", 3.0, 100, 0.01, 0.05);
        let b = r("SQL*Net message from client", 1.0, 50, 0.005, 0.02);
        let c = r("EXEC", 1.0, 150, 0.001, 0.02);
        let t = table(&[&a, &b, &c], 10);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0].split_whitespace().next(), Some("CALL-NAME"));
        assert!(
            lines[2].starts_with("SQL*Net message from client")
                && lines[2].contains("4.000000")
                && lines[2].contains("80.0%")
                && lines[2].contains("150")
                && lines[2].contains("0.005000")
                && lines[2].contains("0.050000"),
            "{t}"
        );
        assert!(lines[3].starts_with("EXEC"), "{t}");
        assert!(t.contains("TOTAL (2)"), "{t}");
        assert!(t.contains("5.000000  100.0%"), "{t}");
    }

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

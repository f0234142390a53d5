//! The report's per-session sections: each run's tally as sqlrun's
//! `--xact-tally` file has it (the "RC log": `ID: executions`, one line
//! per session), the spread of the sessions' tallies per cell with a
//! chart, and the cache statistics of each session in the columns of
//! Oracle's CLIENT_RESULT_CACHE_STATS$.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::model::spec::Study;
use crate::plan::cell_key;
use crate::report::document::Block;
use crate::report::stats::describe;
use crate::report::{fmt_num, Document, Table};
use crate::store::{Stored, StoredRun};

/// The columns of Oracle's CLIENT_RESULT_CACHE_STATS$ as sqlrun's
/// crc-stats.sql pivots them (by name), with tracelab's highest block
/// count after the current one. Oracle's Hash Bucket Count has no
/// counterpart: the cache's map has no fixed number of buckets.
const STATS: &[&str] = &[
    "Block Count Current",
    "Block Count Current (highest)",
    "Block Count Max",
    "Block Size",
    "Create Count Failure",
    "Create Count Success",
    "Delete Count Invalid",
    "Delete Count Valid",
    "Find Count",
    "Hash Bucket Count",
    "Invalidation Count",
];

/// The runs in the order of their factors' levels, then repetitions.
fn ordered<'a>(st: &'a Stored, study: &Study) -> Vec<&'a StoredRun> {
    let pos = |f: &str, l: &str| crate::report::level_pos(study, f, l);
    let mut runs: Vec<&StoredRun> = st.runs.iter().collect();
    runs.sort_by_key(|r| {
        (
            r.cell.iter().map(|(f, l)| pos(f, l)).collect::<Vec<_>>(),
            r.rep,
            r.seq,
        )
    });
    runs
}

/// A run's values by session: session → name → value.
fn by_session(st: &Stored, seq: usize) -> BTreeMap<usize, BTreeMap<&str, f64>> {
    let mut out: BTreeMap<usize, BTreeMap<&str, f64>> = BTreeMap::new();
    for (s, sess, name, v) in &st.session_values {
        if *s == seq {
            out.entry(*sess).or_default().insert(name.as_str(), *v);
        }
    }
    out
}

/// The sessions' spread per cell (and its chart), then each session's
/// cache statistics: the report's middle.
pub fn section(st: &Stored, study: &Study, doc: &mut Document) {
    let Some(spec) = &study.report.sessions else {
        return;
    };
    if st.session_values.is_empty() {
        return;
    }
    let runs = ordered(st, study);
    let value = spec
        .chart
        .as_ref()
        .map_or("executions", |c| c.value.as_str());
    // Per cell: every session of every repetition.
    let mut cells: Vec<(String, Vec<f64>, usize)> = Vec::new();
    // The chart names a cell by the levels of the factors that vary.
    let varying: Vec<&str> = study
        .factors
        .iter()
        .map(|f| f.name.as_str())
        .filter(|f| {
            let mut levels = runs
                .iter()
                .filter_map(|r| r.cell.iter().find(|(x, _)| x == f).map(|(_, l)| l));
            let first = levels.next();
            levels.any(|l| Some(l) != first)
        })
        .collect();
    let short = |r: &StoredRun| {
        r.cell
            .iter()
            .filter(|(f, _)| varying.contains(&f.as_str()))
            .map(|(_, l)| l.as_str())
            .collect::<Vec<_>>()
            .join(" · ")
    };
    let mut labels: Vec<String> = Vec::new();
    for r in &runs {
        let key = cell_key(&r.cell);
        let vals: Vec<f64> = by_session(st, r.seq)
            .values()
            .filter_map(|m| m.get(value).copied())
            .collect();
        match cells.iter_mut().find(|(k, _, _)| *k == key) {
            Some(c) => {
                c.1.extend(vals);
                c.2 += 1;
            }
            None => {
                cells.push((key, vals, 1));
                labels.push(short(r));
            }
        }
    }
    doc.heading(
        2,
        format!("{value} per session (each session of each repetition)"),
    );
    let rows = cells
        .iter()
        .filter_map(|(k, v, n)| {
            let d = describe(v)?;
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            Some(vec![
                k.clone(),
                n.to_string(),
                d.n.to_string(),
                fmt_num(min, 0),
                fmt_num(d.median, 0),
                fmt_num(d.mean, 0),
                fmt_num(max, 0),
                format!("{:.2}", if min > 0.0 { max / min } else { 0.0 }),
            ])
        })
        .collect();
    doc.table(Table {
        head: [
            "cell", "runs", "sessions", "min", "median", "mean", "max", "max/min",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
        left: 1,
    });
    if let Some(ch) = &spec.chart {
        doc.chart(crate::report::svg::strip_chart(
            &ch.title,
            &varying.join(" · "),
            &ch.y_label,
            ch.log_y,
            &cells
                .iter()
                .zip(&labels)
                .map(|((_, v, _), l)| (l.clone(), v.clone()))
                .collect::<Vec<_>>(),
        ));
    }
    if spec.cache_stats {
        stats_tables(st, &runs, doc);
    }
}

/// Each session's cache statistics, for the first repetition of every
/// cell whose sessions had a cache of their own.
fn stats_tables(st: &Stored, runs: &[&StoredRun], doc: &mut Document) {
    let mut shown = Vec::new();
    let mut first = true;
    for r in runs {
        let key = cell_key(&r.cell);
        if shown.contains(&key) {
            continue;
        }
        let sess = by_session(st, r.seq);
        if !sess.values().any(|m| m.contains_key("Find Count")) {
            continue;
        }
        shown.push(key.clone());
        let used = |m: &BTreeMap<&str, f64>| {
            ["Find Count", "Create Count Success", "Create Count Failure"]
                .iter()
                .any(|n| m.get(n).is_some_and(|v| *v > 0.0))
        };
        if first {
            doc.heading(
                2,
                "Client result cache statistics per session (CLIENT_RESULT_CACHE_STATS$)",
            );
            let note = "Each session has a cache of its own, as each of sqlrun's sessions was a \
                        process with one; the first repetition of each cell is shown (every \
                        run's are in the store, table session_values). Block Count Current \
                        (highest) is the most blocks the cache held at any time; Hash Bucket \
                        Count has no counterpart here (the cache's map has no fixed number of \
                        buckets).";
            doc.paragraph(note);
            first = false;
        }
        if !sess.values().any(used) {
            // A cache that took nothing (tables annotated manual): one line.
            let line = format!(
                "{key}, repetition {}: every session's cache stayed empty (Find Count 0, Create Count Success 0, Create Count Failure 0).",
                r.rep + 1
            );
            doc.paragraph(line);
            continue;
        }
        doc.heading(3, format!("{key}, repetition {}", r.rep + 1));
        let mut head = vec!["session".to_string()];
        head.extend(STATS.iter().map(|s| s.to_string()));
        let rows = sess
            .iter()
            .map(|(s, m)| {
                let mut row = vec![(s + 1).to_string()];
                row.extend(
                    STATS
                        .iter()
                        .map(|n| m.get(n).map_or("—".into(), |v| fmt_num(*v, 0))),
                );
                row
            })
            .collect();
        doc.table(Table {
            head,
            rows,
            left: 1,
        });
    }
}

/// Every run's tally as sqlrun's rc.log lists it: the report's appendix.
pub fn tallies(st: &Stored, study: &Study, doc: &mut Document) {
    let Some(spec) = &study.report.sessions else {
        return;
    };
    if st.session_values.is_empty() {
        return;
    }
    doc.heading(2, "Transactions per session, as sqlrun's rc.log lists them");
    let mut text = String::new();
    for r in ordered(st, study) {
        let sess = by_session(st, r.seq);
        if sess.is_empty() {
            continue;
        }
        let id = std::iter::once(spec.tally.clone())
            .chain(r.cell.iter().map(|(_, l)| l.clone()))
            .chain(std::iter::once(format!("r{}", r.rep + 1)))
            .collect::<Vec<_>>()
            .join("-");
        let _ = writeln!(text, "# {} repetition {}", cell_key(&r.cell), r.rep + 1);
        let mut total = 0.0;
        for m in sess.values() {
            let v = m.get("executions").copied().unwrap_or(0.0);
            total += v;
            let _ = writeln!(text, "{id}: {v:.0}");
        }
        let _ = writeln!(text, "# total {total:.0}\n");
    }
    doc.push(Block::Preformatted(text));
}

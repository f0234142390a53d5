//! The "System calls" section of a report: the `strace -c` table of each
//! level of the rows factor, in strace's own layout (% time, seconds,
//! usecs/call, calls, errors, syscall), side by side as the original
//! study printed them, each sorted by calls, with the syscalls whose
//! counts differ most between the levels marked, the differences in a
//! table, and (in HTML) a chart of the top syscalls per level.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::spec::Study;
use crate::report::document::Block;
use crate::report::svg;
use crate::report::{fmt_num, tabled, Document, Table};
use crate::store::StoredRun;
use crate::store::Syscall;

/// How many of the most different syscalls are marked.
const MARKED: usize = 5;
/// How many syscalls the chart shows.
const CHARTED: usize = 8;

/// What the subtitle adds when the study has runs under strace.
pub fn subtitle(study: &Study) -> String {
    match study.measure.strace_runs {
        0 => String::new(),
        n => format!(
            "; plus {n} run{} per cell under strace, apart{}",
            if n == 1 { "" } else { "s" },
            if study.report.strace_tables {
                " (System calls, below)"
            } else {
                ""
            }
        ),
    }
}

/// One level's table: the mean of its runs under strace.
struct Level {
    name: String,
    runs: usize,
    /// By calls, most first (then by name).
    rows: Vec<Syscall>,
    /// Mean elapsed under strace, ms.
    elapsed_ms: Option<f64>,
}

fn level(name: &str, runs: &[&StoredRun]) -> Level {
    let mut sum: BTreeMap<&str, (f64, f64, f64)> = BTreeMap::new();
    for r in runs {
        for c in &r.syscalls {
            let e = sum.entry(c.name.as_str()).or_default();
            e.0 += c.calls as f64;
            e.1 += c.errors as f64;
            e.2 += c.seconds;
        }
    }
    let n = runs.len().max(1) as f64;
    let mut rows: Vec<Syscall> = sum
        .into_iter()
        .map(|(name, (c, e, s))| Syscall {
            name: name.to_string(),
            calls: (c / n).round() as u64,
            errors: (e / n).round() as u64,
            seconds: s / n,
        })
        .collect();
    rows.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.name.cmp(&b.name)));
    // A run under strace keeps its figures under a `strace_` prefix.
    let el: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.values.get("strace_elapsed_ms").copied())
        .collect();
    Level {
        name: name.to_string(),
        runs: runs.len(),
        rows,
        elapsed_ms: (!el.is_empty()).then(|| el.iter().sum::<f64>() / el.len() as f64),
    }
}

/// The syscalls whose calls differ most between the levels: by absolute
/// difference (most calls − fewest, a level without it counting 0), among
/// those at least twofold; at most [`MARKED`], most different first.
fn most_different(levels: &[Level]) -> Vec<String> {
    if levels.len() < 2 {
        return Vec::new();
    }
    let names: BTreeSet<&str> = levels
        .iter()
        .flat_map(|l| l.rows.iter().map(|r| r.name.as_str()))
        .collect();
    let mut diffs: Vec<(u64, &str)> = names
        .into_iter()
        .filter_map(|n| {
            let calls: Vec<u64> = levels.iter().map(|l| calls_of(l, n)).collect();
            let (lo, hi) = (*calls.iter().min()?, *calls.iter().max()?);
            (hi > lo && hi >= 2 * lo).then_some((hi - lo, n))
        })
        .collect();
    diffs.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    diffs
        .into_iter()
        .take(MARKED)
        .map(|(_, n)| n.to_string())
        .collect()
}

fn calls_of(l: &Level, name: &str) -> u64 {
    l.rows
        .iter()
        .find(|r| r.name == name)
        .map_or(0, |r| r.calls)
}

/// One level's table as strace prints it (`strace -c`, strace 6), each
/// line led by `* ` when its syscall is marked.
fn strace_block(l: &Level, marked: &[String]) -> Vec<String> {
    let width = l
        .rows
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .max(16);
    let total_s: f64 = l.rows.iter().map(|r| r.seconds).sum();
    let total_calls: u64 = l.rows.iter().map(|r| r.calls).sum();
    let total_errors: u64 = l.rows.iter().map(|r| r.errors).sum();
    let rule = format!(
        "  ------ ----------- ----------- --------- --------- {}",
        "-".repeat(width)
    );
    let line = |mark: bool, pct: f64, s: f64, calls: u64, errors: u64, name: &str| {
        let per = if calls > 0 {
            (s * 1e6 / calls as f64) as u64
        } else {
            0
        };
        let errors = if errors > 0 {
            errors.to_string()
        } else {
            String::new()
        };
        format!(
            "{}{pct:6.2} {s:11.6} {per:11} {calls:9} {errors:>9} {name}",
            if mark { "* " } else { "  " }
        )
    };
    let pct = |s: f64| {
        if total_s > 0.0 {
            s * 100.0 / total_s
        } else {
            0.0
        }
    };
    let mut out = vec![
        format!(
            "  {} ({} run{} under strace{})",
            l.name,
            l.runs,
            if l.runs == 1 { "" } else { "s" },
            l.elapsed_ms
                .map_or(String::new(), |e| format!(", elapsed {} ms", fmt_num(e, 0)))
        ),
        "  % time     seconds  usecs/call     calls    errors syscall".to_string(),
        rule.clone(),
    ];
    for r in &l.rows {
        out.push(line(
            marked.contains(&r.name),
            pct(r.seconds),
            r.seconds,
            r.calls,
            r.errors,
            &r.name,
        ));
    }
    out.push(rule);
    out.push(line(
        false,
        100.0,
        total_s,
        total_calls,
        total_errors,
        "total",
    ));
    out
}

/// The section, when any run has a strace table.
pub fn render(study: &Study, runs: &[StoredRun], doc: &mut Document) {
    if !study.report.strace_tables || runs.iter().all(|r| r.syscalls.is_empty()) {
        return;
    }
    let rows_f = study.report.rows.join(" ");
    let intro = format!(
        "The strace -c -f table of the server during the query (every thread of mariadbd; the \
         postmaster and the backends and parallel workers it starts), per {rows_f}, means of its \
         runs under strace, sorted by calls. strace stops the server at every syscall, so these \
         are runs of their own, after the timed ones: their elapsed (shown) is not in the \
         figures above. Marked *: the syscalls whose calls differ most between the {rows_f} \
         levels (largest difference, at least twofold)."
    );
    doc.heading(2, "System calls");
    doc.paragraph(intro);
    for t in tabled(study, runs) {
        let levels: Vec<Level> = t
            .rows
            .iter()
            .filter_map(|(name, rs)| {
                let with: Vec<&StoredRun> = rs
                    .iter()
                    .copied()
                    .filter(|r| !r.syscalls.is_empty())
                    .collect();
                (!with.is_empty()).then(|| level(&name.join(" "), &with))
            })
            .collect();
        if levels.is_empty() {
            continue;
        }
        let title = if t.title.is_empty() {
            "Results".to_string()
        } else {
            t.title.clone()
        };
        let marked = most_different(&levels);
        let blocks: Vec<Vec<String>> = levels.iter().map(|l| strace_block(l, &marked)).collect();
        let mut head = vec!["syscall".to_string()];
        head.extend(levels.iter().map(|l| format!("{} calls", l.name)));
        head.push("most / fewest".into());
        let diffs = Table {
            head,
            rows: marked
                .iter()
                .map(|n| {
                    let calls: Vec<u64> = levels.iter().map(|l| calls_of(l, n)).collect();
                    let lo = calls.iter().copied().min().unwrap_or(0);
                    let hi = calls.iter().copied().max().unwrap_or(0);
                    let mut r = vec![n.clone()];
                    r.extend(calls.iter().map(|c| fmt_num(*c as f64, 0)));
                    r.push(if lo == 0 {
                        "only one".into()
                    } else {
                        format!("{:.1}x", hi as f64 / lo as f64)
                    });
                    r
                })
                .collect(),
            left: 1,
        };
        doc.heading(3, format!("System calls ({title})"));
        doc.push(Block::Panels(blocks));
        if !marked.is_empty() {
            doc.table(diffs);
        }
        // The most frequent syscalls of any level, each level a bar.
        let mut top: Vec<(u64, &str)> = levels
            .iter()
            .flat_map(|l| l.rows.iter().map(|r| r.name.as_str()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(|n| (levels.iter().map(|l| calls_of(l, n)).max().unwrap_or(0), n))
            .collect();
        top.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let names: Vec<&str> = top.iter().take(CHARTED).map(|(_, n)| *n).collect();
        let series: Vec<(String, Vec<(String, f64)>)> = levels
            .iter()
            .map(|l| {
                (
                    l.name.clone(),
                    names
                        .iter()
                        .map(|n| (n.to_string(), calls_of(l, n) as f64))
                        .collect(),
                )
            })
            .collect();
        doc.chart(svg::line_chart(
            format!("Top system calls per {rows_f} {}", t.title).trim(),
            "syscall",
            "calls",
            false,
            &series,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(name: &str, calls: u64, errors: u64, seconds: f64) -> Syscall {
        Syscall {
            name: name.into(),
            calls,
            errors,
            seconds,
        }
    }

    #[test]
    fn blocks_follow_straces_layout_and_mark_the_most_different() {
        let a = Level {
            name: "processes".into(),
            runs: 1,
            rows: vec![
                sc("getrusage", 159, 0, 0.000318),
                sc("times", 12, 0, 0.000024),
            ],
            elapsed_ms: Some(11980.0),
        };
        let b = Level {
            name: "threads".into(),
            runs: 1,
            rows: vec![
                sc("poll", 980840, 0, 1.5),
                sc("getrusage", 419, 0, 0.000838),
                sc("futex", 10, 4, 0.01),
            ],
            elapsed_ms: Some(12580.0),
        };
        let levels = vec![a, b];
        let marked = most_different(&levels);
        // poll (0 → 980,840) first; getrusage (159 → 419) is twofold;
        // times (12 → 0) and futex (0 → 10) too; nothing else.
        assert_eq!(marked, vec!["poll", "getrusage", "times", "futex"]);
        let block = strace_block(&levels[1], &marked);
        assert_eq!(
            block[1],
            "  % time     seconds  usecs/call     calls    errors syscall"
        );
        assert_eq!(
            block[3],
            "*  99.28    1.500000           1    980840           poll"
        );
        assert_eq!(
            block[5],
            "*   0.66    0.010000        1000        10         4 futex"
        );
        assert_eq!(
            block[7],
            "  100.00    1.510838           1    981269         4 total"
        );
        let text = crate::report::render::text::panels(&[strace_block(&levels[0], &marked), block]);
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with("  processes (1 run under strace, elapsed 11,980 ms)")
                && first.ends_with("  threads (1 run under strace, elapsed 12,580 ms)"),
            "{text}"
        );
        // The shorter block is padded: the longer one's lines stay in
        // their column.
        let col = first.find("  threads").unwrap();
        for l in text.lines().filter(|l| l.len() > col) {
            assert!(l.is_char_boundary(col), "{l}");
        }
    }

    #[test]
    fn many_levels_go_on_in_bands_two_across() {
        let b = |n: &str| vec![format!("{n} head"), format!("{n} body")];
        let text = crate::report::render::text::panels(&[b("a"), b("b"), b("c")]);
        assert_eq!(
            text,
            "a head    b head\na body    b body\n\nc head\nc body\n"
        );
    }
}

//! The text report: the resource profile (mrskew's table), the statements
//! ranked by their share of the response time, the recursive hierarchy,
//! then each statement as tkprof prints it (net of its recursive calls)
//! with what tkprof leaves out (the gross figures with the recursive
//! statements', bind sets, the skew of its executions), and tkprof's
//! OVERALL TOTALS.

use std::fmt::Write as _;

use tracelab_query::number::{commify, fixed};
use tracelab_query::{Agg, Groups, Layout, Num, Report};

use crate::report::{FileProfile, StatementReport};
use crate::stats::{P10, P10_BUCKETS};
use crate::tkprof::{self, call_table, legend, statement_with, totals_and_summary_with, STARS};

/// Seconds with six decimals and thousands separators, as mrskew prints
/// durations.
pub fn secs6(us: i64) -> String {
    fixed(Num::micros(i128::from(us)), 6, true)
}

/// A plain table: columns as wide as their widest cell, two spaces apart,
/// the first column left-aligned unless `right` says otherwise.
pub fn table(head: &[&str], rows: &[Vec<String>], right: &[bool]) -> String {
    let mut width: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.zip(&width).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = w.saturating_sub(c.chars().count());
            if right.get(i).copied().unwrap_or(false) {
                s.extend(std::iter::repeat_n(' ', pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                s.extend(std::iter::repeat_n(' ', pad));
            }
        }
        let mut s = s.trim_end().to_string();
        s.push('\n');
        s
    };
    let mut out = line(&mut head.iter().copied());
    out.push_str(&line(
        &mut width
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str),
    ));
    for r in rows {
        out.push_str(&line(&mut r.iter().map(String::as_str)));
    }
    out
}

/// The resource profile in mrskew's table (the query engine's table, as skew prints it).
pub fn profile_table(p: &FileProfile) -> String {
    let mut groups = Groups::default();
    for (i, c) in p.profile.iter().enumerate() {
        groups.map.insert(
            c.name.as_str().into(),
            Agg::micros(
                i128::from(c.duration_us),
                c.calls,
                c.min_us,
                c.max_us,
                (0, 0, i as u64),
            ),
        );
    }
    let o = Layout {
        top: 0,
        ..Layout::default()
    };
    Report::build(groups, &o, "RESPONSE TIME COMPONENT", "DURATION").render(&o)
}

fn first_line(sql: &str, n: usize) -> String {
    let flat: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > n {
        let mut s: String = flat.chars().take(n - 1).collect();
        s.push('…');
        s
    } else {
        flat
    }
}

/// The statement's id for tables: its sqlid, or `#<cursor>` when the trace
/// has no text for it.
fn label(s: &StatementReport) -> String {
    if s.placeholder {
        s.sqlid.split(':').next().unwrap_or("").to_string()
    } else {
        s.sqlid.clone()
    }
}

fn text_of(s: &StatementReport, n: usize) -> String {
    if s.placeholder {
        "(no PARSING IN CURSOR for this cursor in the trace)".to_string()
    } else {
        first_line(&s.sql, n)
    }
}

/// Statements shown: those with database calls (a cursor seen only in
/// waits counts in the totals).
pub fn shown(s: &StatementReport) -> bool {
    s.with_recursive.total().count + s.with_recursive.other.count > 0
}

fn ranking(p: &FileProfile) -> String {
    let rows: Vec<Vec<String>> = p
        .statements
        .iter()
        .filter(|s| shown(s))
        .map(|s| {
            vec![
                format!("#{}", s.rank),
                label(s),
                s.dep.map_or("?".into(), |d| d.to_string()),
                secs6(s.self_elapsed_us),
                format!("{:.1}%", s.percent_of_r),
                secs6(s.self_cpu_us),
                commify(&s.executions.count.to_string()),
                commify(
                    &(s.with_recursive.total().count + s.with_recursive.other.count).to_string(),
                ),
                text_of(s, 60),
            ]
        })
        .collect();
    table(
        &[
            "RANK",
            "SQL ID",
            "DEP",
            "ELAPSED",
            "% OF R",
            "CPU",
            "EXECUTIONS",
            "CALLS",
            "TEXT",
        ],
        &rows,
        &[false, false, true, true, true, true, true, true, false],
    )
}

/// TVD$XTAT's ranking: statements by the elapsed time of their calls with
/// the recursive statements run inside them (a parent's time includes its
/// children's, so the ranks do not add up to R as prof's own ranking does).
fn ranking_with_recursive(p: &FileProfile) -> String {
    let mut shown_stmts: Vec<&StatementReport> = p.statements.iter().filter(|s| shown(s)).collect();
    shown_stmts.sort_by_key(|s| s.rank_with_recursive);
    let rows: Vec<Vec<String>> = shown_stmts
        .iter()
        .map(|s| {
            vec![
                format!("#{}", s.rank_with_recursive),
                label(s),
                s.dep.map_or("?".into(), |d| d.to_string()),
                secs6(s.elapsed_with_recursive_us),
                format!(
                    "{:.1}%",
                    crate::report::pct(s.elapsed_with_recursive_us, p.response_time_us)
                ),
                secs6(s.cpu_with_recursive_us),
                format!("#{}", s.rank),
                text_of(s, 60),
            ]
        })
        .collect();
    table(
        &[
            "RANK", "SQL ID", "DEP", "ELAPSED", "% OF R", "CPU", "OWN RANK", "TEXT",
        ],
        &rows,
        &[false, false, true, true, true, true, true, false],
    )
}

/// The recursive hierarchy: each top statement with the statements run
/// inside it, by depth.
fn hierarchy(p: &FileProfile) -> String {
    let mut out = String::new();
    let mut done = vec![false; p.statements.len()];
    // A statement run under several parents shows its own children once.
    fn walk(
        p: &FileProfile,
        i: usize,
        depth: usize,
        path: &mut Vec<usize>,
        done: &mut Vec<bool>,
        out: &mut String,
    ) {
        done[i] = true;
        for c in &p.statements[i].children {
            if path.contains(&c.statement) || depth > 16 {
                continue;
            }
            let s = &p.statements[c.statement];
            let _ = writeln!(
                out,
                "{}└ #{} {} dep={} {} calls, {} s elapsed, {} s CPU: {}",
                "  ".repeat(depth),
                s.rank,
                label(s),
                s.dep.map_or("?".into(), |d| d.to_string()),
                commify(&c.calls.to_string()),
                secs6(c.elapsed_us),
                secs6(c.cpu_us),
                text_of(s, 50)
            );
            if done[c.statement] {
                if !p.statements[c.statement].children.is_empty() {
                    let _ = writeln!(
                        out,
                        "{}  (its recursive statements are shown above)",
                        "  ".repeat(depth)
                    );
                }
                continue;
            }
            path.push(c.statement);
            walk(p, c.statement, depth + 1, path, done, out);
            path.pop();
        }
    }
    for (i, s) in p.statements.iter().enumerate() {
        if s.children.is_empty() || !s.parents.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "#{} {} dep={}: {}",
            s.rank,
            label(s),
            s.dep.map_or("?".into(), |d| d.to_string()),
            text_of(s, 60)
        );
        walk(p, i, 1, &mut vec![i], &mut done, &mut out);
    }
    out
}

/// The p10 labels, as mrskew's p10.rc prints them.
pub fn p10_labels() -> Vec<String> {
    tracelab_query::buckets::Buckets::parse("p10")
        .map(|b| b.labels().to_vec())
        .unwrap_or_default()
}

fn histograms(out: &mut String, s: &StatementReport) {
    let hs: [(&str, &P10); 3] = [
        ("EXEC calls", &s.exec_histogram),
        ("FETCH calls", &s.fetch_histogram),
        ("executions", &s.execution_histogram),
    ];
    if hs.iter().all(|(_, h)| h.count() == 0) {
        return;
    }
    let labels = p10_labels();
    let rows: Vec<Vec<String>> = (0..P10_BUCKETS)
        .filter(|&b| hs.iter().any(|(_, h)| h.counts[b] > 0))
        .map(|b| {
            let mut r = vec![labels.get(b).cloned().unwrap_or_default()];
            for (_, h) in &hs {
                r.push(if h.counts[b] > 0 {
                    commify(&h.counts[b].to_string())
                } else {
                    String::new()
                });
            }
            r
        })
        .collect();
    out.push_str(
        "Skew: EXEC and FETCH calls, and executions (an EXEC and its FETCHes), by elapsed time:\n",
    );
    out.push_str(&table(
        &[
            "DURATION RANGE (s)",
            "EXEC calls",
            "FETCH calls",
            "executions",
        ],
        &rows,
        &[false, true, true, true],
    ));
    if s.executions.count > 0 {
        let _ = writeln!(
            out,
            "Executions: {}, mean {} s, min {} s, max {} s",
            commify(&s.executions.count.to_string()),
            secs6(s.executions.total_us / s.executions.count as i64),
            secs6(s.executions.min_us),
            secs6(s.executions.max_us)
        );
    }
    if let Some(x) = &s.slowest {
        let at = if x.line > 0 {
            format!(" (EXEC at line {})", x.line)
        } else {
            " (begun before the trace)".to_string()
        };
        let _ = writeln!(
            out,
            "Slowest execution: {} s{at}{}",
            secs6(x.elapsed_us),
            bind_list(&x.binds).map_or(String::new(), |b| format!(", binds {b}"))
        );
    }
}

fn bind_list(v: &[Option<String>]) -> Option<String> {
    (!v.is_empty()).then(|| {
        let parts: Vec<String> = v
            .iter()
            .enumerate()
            .map(|(i, b)| format!(":{}={}", i + 1, b.as_deref().unwrap_or("NULL")))
            .collect();
        parts.join(" ")
    })
}

/// What tracelab adds to tkprof's block of a statement.
fn extras(out: &mut String, p: &FileProfile, s: &StatementReport, gross: bool) {
    out.push('\n');
    let _ = writeln!(
        out,
        "tracelab: rank #{}, {:.1}% of R: {} s elapsed, {} s CPU in its own calls (recursive statements' time left out)",
        s.rank,
        s.percent_of_r,
        secs6(s.self_elapsed_us),
        secs6(s.self_cpu_us)
    );
    if !s.children.is_empty() {
        if gross {
            out.push_str("\nWithout recursive statements (net, as tkprof prints it: the recursive calls' figures taken out):\n\n");
            call_table(out, &s.without_recursive, p.engine.has_block_stats());
        } else {
            out.push_str("\nWith recursive statements (gross: the calls as the trace lines give them, the recursive calls' figures included):\n\n");
            call_table(out, &s.with_recursive, p.engine.has_block_stats());
        }
        out.push_str("\nRecursive statements run inside it:\n");
        for c in &s.children {
            let k = &p.statements[c.statement];
            let _ = writeln!(
                out,
                "  #{} {} dep={}: {} calls, {} s elapsed, {} s CPU: {}",
                k.rank,
                label(k),
                k.dep.map_or("?".into(), |d| d.to_string()),
                commify(&c.calls.to_string()),
                secs6(c.elapsed_us),
                secs6(c.cpu_us),
                text_of(k, 50)
            );
        }
    }
    if !s.parents.is_empty() {
        let ps: Vec<String> = s
            .parents
            .iter()
            .map(|&i| format!("#{} {}", p.statements[i].rank, label(&p.statements[i])))
            .collect();
        let _ = writeln!(out, "Run inside: {}", ps.join(", "));
    }
    if s.binds.executions > 0 {
        let _ = writeln!(
            out,
            "\nBind sets: {}{} distinct in {} executions with binds{}",
            if s.binds.capped { "at least " } else { "" },
            commify(&s.binds.distinct.to_string()),
            commify(&s.binds.executions.to_string()),
            if s.binds.sets.len() < s.binds.distinct as usize {
                format!("; the first {} seen:", s.binds.sets.len())
            } else {
                ":".to_string()
            }
        );
        for set in &s.binds.sets {
            let _ = writeln!(
                out,
                "  {:>10}  {}",
                commify(&set.executions.to_string()),
                bind_list(&set.values).unwrap_or_default()
            );
        }
    }
    out.push('\n');
    histograms(out, s);
    if s.error_count > 0 {
        let _ = writeln!(
            out,
            "Errors: {} (err= {})",
            s.error_count,
            s.errors.join(", ")
        );
    }
}

/// The line that says how many statements the report folded away, if any.
pub fn folded_line(p: &FileProfile) -> Option<String> {
    let f = &p.folded;
    (f.statements > 0).then(|| {
        format!(
            "... and {} more statements folded away (past --top {}): {} s elapsed ({:.1}% of R), {} s CPU, {} calls",
            commify(&f.statements.to_string()),
            p.statements.len(),
            secs6(f.self_elapsed_us),
            crate::report::pct(f.self_elapsed_us, p.response_time_us),
            secs6(f.self_cpu_us),
            commify(&f.calls.to_string())
        )
    })
}

/// Options of the text report.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    /// tkprof's layout only: statements in the order they first appear,
    /// no profile and no tracelab additions (for comparing with tkprof's
    /// own output).
    pub tkprof: bool,
    /// Call tables gross, as the trace lines give them (a parent's calls
    /// with the recursive calls made inside them), instead of tkprof's net
    /// figures.
    pub gross: bool,
}

/// The whole text report of one trace.
pub fn render(p: &FileProfile, o: TextOptions) -> String {
    let mut out = String::new();
    if o.tkprof {
        let _ = writeln!(out, "\ntracelab prof --tkprof: {}\n", p.file);
        let _ = writeln!(out, "Trace file: {}", tkprof::trace_file_name(p));
        out.push_str("Sort options: default\n\n");
        if o.gross {
            out.push_str("Figures gross (--gross): a statement's calls with the recursive calls made inside them, as the trace lines give them; tkprof prints them net.\n\n");
        }
        legend(&mut out);
        let mut order: Vec<&StatementReport> = p.statements.iter().collect();
        order.sort_by_key(|s| s.first_line);
        // tkprof shows statements whose text the trace holds; the others
        // count only in the totals.
        for s in order.into_iter().filter(|s| shown(s) && !s.placeholder) {
            statement_with(&mut out, s, &p.engine, o.gross);
            out.push_str(STARS);
            out.push('\n');
        }
        totals_and_summary_with(&mut out, p, o.gross);
        return out;
    }
    let _ = writeln!(out, "tracelab prof: {}", p.file);
    let mut facts = vec![p.engine.describe()];
    if let Some(n) = &p.trace_name {
        facts.push(format!("trace file {n}"));
    }
    if !p.sessions.is_empty() {
        facts.push(format!("session {}", p.sessions.join(", ")));
    }
    if let Some(s) = &p.started {
        facts.push(format!("started {s}"));
    }
    let _ = writeln!(out, "{}", facts.join("; "));
    let mut facts = vec![
        format!("{} lines", commify(&p.lines.to_string())),
        format!("{} calls", commify(&p.calls.to_string())),
    ];
    if let (Some(a), Some(b)) = (p.first_tim, p.last_tim) {
        facts.push(format!("tim {a} to {b}"));
    }
    if p.process_blocks > 0 {
        facts.push(format!(
            "a trcsess merge of {} process blocks",
            p.process_blocks
        ));
    }
    let _ = writeln!(out, "{}", facts.join("; "));
    for w in &p.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for n in &p.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let _ = writeln!(
        out,
        "\nResponse time R = {} s: every call and wait, the time the trace does not account for, and think time ({} of {} s or more).\n",
        secs6(p.response_time_us),
        crate::collect::SNMFC,
        secs6(p.thinktime_us)
    );
    out.push_str("RESOURCE PROFILE\n");
    out.push_str(&profile_table(p));
    let _ = writeln!(
        out,
        "CPU total: {} s ({:.1}% of R): the CPU rows added up, the c of the database calls at the top depth.",
        secs6(p.cpu_us),
        crate::report::pct(p.cpu_us, p.response_time_us)
    );
    out.push_str(
        "(a wait counts its ela; unaccounted-for within calls is e - c - the waits inside)\n",
    );
    if !p.statements.is_empty() {
        out.push_str("\nSTATEMENTS BY SHARE OF R (elapsed in their own calls, recursive statements' time left out)\n");
        out.push_str(&ranking(p));
    }
    if let Some(line) = folded_line(p) {
        let _ = writeln!(out, "{line}");
    }
    if p.statements.iter().any(|s| !s.children.is_empty()) {
        out.push_str("\nSTATEMENTS BY ELAPSED WITH THEIR RECURSIVE STATEMENTS (TVD$XTAT's ranking; a parent's time includes its children's)\n");
        out.push_str(&ranking_with_recursive(p));
    }
    let h = hierarchy(p);
    if !h.is_empty() {
        out.push_str("\nRECURSIVE STATEMENTS UNDER THEIR PARENTS\n");
        out.push_str(&h);
    }
    out.push('\n');
    legend(&mut out);
    for s in p.statements.iter().filter(|s| shown(s)) {
        statement_with(&mut out, s, &p.engine, o.gross);
        extras(&mut out, p, s, o.gross);
        out.push_str(STARS);
        out.push('\n');
    }
    totals_and_summary_with(&mut out, p, o.gross);
    out
}

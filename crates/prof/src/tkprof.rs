//! tkprof's layout, line for line: the legend, each statement's SQL text
//! (re-flowed as tkprof does), its `call count cpu elapsed disk query
//! current rows` table, the library-cache misses, optimizer mode, parsing
//! user, row-source plan and waits, the OVERALL TOTALS sections and the
//! closing summary.
//!
//! Figures are tkprof's: a statement's calls net of the recursive calls
//! made inside them, seconds truncated to 0.01. Oracle writes a parent
//! call's c, e, p, cr and cu including those of the recursive (dep+1) calls
//! it ran; tkprof lists a recursive statement's figures under that
//! statement and not under the one that caused it, so it prints the
//! parent's calls less its children's (a PARSE `c=2000,e=9000,p=5,cr=20`
//! whose recursive calls account for all of it prints as
//! `0.00 0.00 0 0 0`). The gross figures, as the trace lines give them, are
//! printed instead when asked for (`--gross`).

use std::fmt::Write as _;

use crate::report::{Engine, FileProfile, StatementReport, Totals, WaitRow};
use crate::stats::{CallSums, CallTable};

pub const STARS: &str =
    "********************************************************************************";

/// Seconds with two decimals, truncated as tkprof prints them.
pub fn secs2(us: i64) -> String {
    let cs = (us / 10_000).abs(); // toward zero
    let sign = if us < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", cs / 100, cs % 100)
}

/// tkprof's legend after the header.
pub fn legend(out: &mut String) {
    out.push_str(STARS);
    out.push('\n');
    out.push_str(
        "count    = number of times OCI procedure was executed
cpu      = cpu time in seconds executing 
elapsed  = elapsed time in seconds executing
disk     = number of physical reads of buffers from disk
query    = number of buffers gotten for consistent read
current  = number of buffers gotten in current mode (usually for update)
rows     = number of rows processed by the fetch or execute call
",
    );
    out.push_str(STARS);
    out.push('\n');
}

fn row(out: &mut String, label: &str, s: &CallSums, blocks: bool) {
    let n = |v: i64| {
        if blocks {
            v.to_string()
        } else {
            "n/a".to_string()
        }
    };
    let _ = writeln!(
        out,
        "{label:<7}{:>7}{:>10}{:>11}{:>11}{:>11}{:>11}{:>12}",
        s.count,
        secs2(s.cpu_us),
        secs2(s.elapsed_us),
        n(s.disk),
        n(s.query),
        n(s.current),
        s.rows
    );
}

/// The call table: Parse, Execute, Fetch and their total.
pub fn call_table(out: &mut String, t: &CallTable, blocks: bool) {
    const DASHES: &str =
        "------- ------  -------- ---------- ---------- ---------- ----------  ----------";
    out.push_str(
        "call     count       cpu    elapsed       disk      query    current        rows\n",
    );
    out.push_str(DASHES);
    out.push('\n');
    row(out, "Parse", &t.parse, blocks);
    row(out, "Execute", &t.execute, blocks);
    row(out, "Fetch", &t.fetch, blocks);
    out.push_str(DASHES);
    out.push('\n');
    row(out, "total", &t.total(), blocks);
}

/// The SQL text as tkprof re-flows it: words on lines of at most 78
/// characters (continuations indented by two spaces, long lists broken
/// after a comma), and the first FROM (WHERE for an UPDATE) on a line of
/// its own.
pub fn sql_text(sql: &str) -> String {
    const WIDTH: usize = 78;
    let words: Vec<&str> = sql.split_whitespace().collect();
    let first = words.first().copied().unwrap_or("");
    let update = first.eq_ignore_ascii_case("update");
    // A PL/SQL block is only re-flowed.
    let plsql = ["begin", "declare", "call"]
        .iter()
        .any(|k| first.eq_ignore_ascii_case(k));
    let key = if update { "where" } else { "from" };
    let split_at = words
        .iter()
        .position(|w| w.eq_ignore_ascii_case(key))
        .filter(|_| !plsql);
    let mut out = String::new();
    let mut line = String::new();
    let mut indent = "";
    let flush = |out: &mut String, line: &mut String| {
        out.push_str(line);
        out.push('\n');
        line.clear();
    };
    for (i, w) in words.iter().enumerate() {
        if Some(i) == split_at && i > 0 {
            flush(&mut out, &mut line);
            out.push_str(w);
            out.push('\n');
            line.push(' ');
            indent = "  ";
            continue;
        }
        // A word is broken after its commas when it does not fit.
        let mut pieces: Vec<&str> = w.split_inclusive(',').collect();
        if line.len() + w.len() <= WIDTH || pieces.len() == 1 {
            pieces = vec![w];
        }
        for p in pieces {
            if !line.trim().is_empty() && line.len() + p.len() > WIDTH {
                flush(&mut out, &mut line);
                line.push_str(indent);
            }
            if line.is_empty() {
                line.push_str(indent);
            }
            line.push_str(p);
            indent = "  ";
        }
        line.push(' ');
    }
    if !line.trim().is_empty() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn optimizer_mode(og: i64) -> Option<&'static str> {
    match og {
        1 => Some("ALL_ROWS"),
        2 => Some("FIRST_ROWS"),
        3 => Some("RULE"),
        4 => Some("CHOOSE"),
        _ => None,
    }
}

fn waits(out: &mut String, rows: &[WaitRow]) {
    if rows.is_empty() {
        return;
    }
    out.push_str("Elapsed times include waiting on following events:\n");
    out.push_str("  Event waited on                             Times   Max. Wait  Total Waited\n");
    out.push_str("  ----------------------------------------   Waited  ----------  ------------\n");
    for w in rows {
        let name: String = w.name.chars().take(40).collect();
        let _ = writeln!(
            out,
            "  {name:<40}{:>9}{:>12}{:>14}",
            w.times,
            secs2(w.max_us),
            secs2(w.total_us)
        );
    }
}

/// One statement as tkprof prints it (without the closing stars): its
/// calls net of the recursive calls inside them.
pub fn statement(out: &mut String, s: &StatementReport, engine: &Engine) {
    statement_with(out, s, engine, false);
}

/// One statement as tkprof lays it out, its calls net of the recursive
/// calls inside them, or `gross` as the trace lines give them.
pub fn statement_with(out: &mut String, s: &StatementReport, engine: &Engine, gross: bool) {
    let blocks = engine.has_block_stats();
    out.push('\n');
    if s.placeholder {
        let _ = writeln!(
            out,
            "SQL ID: {}  (no PARSING IN CURSOR in the trace: its text is unknown)\n",
            s.sqlid
        );
    } else {
        let _ = writeln!(out, "SQL ID: {} Plan Hash: {}\n", s.sqlid, s.plan_hash);
        out.push_str(&sql_text(&s.sql));
    }
    out.push_str("\n\n");
    let calls = if gross {
        &s.with_recursive
    } else {
        &s.without_recursive
    };
    call_table(out, calls, blocks);
    out.push('\n');
    if blocks {
        let _ = writeln!(
            out,
            "Misses in library cache during parse: {}",
            s.with_recursive.parse.misses
        );
        if s.with_recursive.execute.misses > 0 {
            let _ = writeln!(
                out,
                "Misses in library cache during execute: {}",
                s.with_recursive.execute.misses
            );
        }
        if let Some(mode) = s.optimizer_goal.and_then(optimizer_mode) {
            let _ = writeln!(out, "Optimizer mode: {mode}");
        }
        let user = match s.uid {
            Some(0) => "SYS".to_string(),
            Some(u) => u.to_string(),
            None => "?".to_string(),
        };
        match s.dep {
            Some(d) if d > 0 => {
                let _ = writeln!(out, "Parsing user id: {user:<5} (recursive depth: {d})");
            }
            _ => {
                let _ = writeln!(out, "Parsing user id: {user}  ");
            }
        }
    } else {
        let _ = writeln!(
            out,
            "Misses in library cache during parse: n/a ({})",
            engine.missing()
        );
        if let Some(d) = s.dep.filter(|&d| d > 0) {
            let _ = writeln!(out, "(recursive depth: {d})");
        }
    }
    for p in &s.plans {
        let _ = writeln!(out, "Number of plan statistics captured: {}", p.captures);
        out.push('\n');
        out.push_str("Rows (1st) Rows (avg) Rows (max)  Row Source Operation\n");
        out.push_str(
            "---------- ---------- ----------  ---------------------------------------------------\n",
        );
        for (i, l) in p.lines.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:>10} {:>10} {:>10}  {}{}",
                l.rows_first,
                p.rows_avg(i),
                l.rows_max,
                " ".repeat(l.depth),
                l.op
            );
        }
        out.push('\n');
    }
    out.push('\n');
    waits(out, &s.waits);
}

/// An OVERALL TOTALS section: net of recursive calls as tkprof adds them
/// up, or `gross`.
pub fn overall(out: &mut String, title: &str, t: &Totals, engine: &Engine, gross: bool) {
    let blocks = engine.has_block_stats();
    let _ = writeln!(out, "{title}\n");
    let calls = if gross { &t.with_recursive } else { &t.calls };
    call_table(out, calls, blocks);
    out.push('\n');
    if blocks {
        let _ = writeln!(
            out,
            "Misses in library cache during parse: {}",
            t.calls.parse.misses
        );
        if t.calls.execute.misses > 0 {
            let _ = writeln!(
                out,
                "Misses in library cache during execute: {}",
                t.calls.execute.misses
            );
        }
    } else {
        let _ = writeln!(
            out,
            "Misses in library cache during parse: n/a ({})",
            engine.missing()
        );
    }
    out.push('\n');
    waits(out, &t.waits);
    out.push('\n');
}

/// The two OVERALL TOTALS sections and tkprof's closing summary, net of
/// recursive calls as tkprof prints them.
pub fn totals_and_summary(out: &mut String, p: &FileProfile) {
    totals_and_summary_with(out, p, false);
}

/// The same, net or `gross`.
pub fn totals_and_summary_with(out: &mut String, p: &FileProfile, gross: bool) {
    // The last statement's block closed with a line of stars.
    if !out.ends_with(&format!("{STARS}\n")) {
        out.push_str(STARS);
        out.push('\n');
    }
    out.push('\n');
    overall(
        out,
        "OVERALL TOTALS FOR ALL NON-RECURSIVE STATEMENTS",
        &p.non_recursive,
        &p.engine,
        gross,
    );
    overall(
        out,
        "OVERALL TOTALS FOR ALL RECURSIVE STATEMENTS",
        &p.recursive,
        &p.engine,
        gross,
    );
    let s = &p.summary;
    let user = s.user_statements;
    let internal = s.internal_statements;
    let _ = writeln!(out, "{user:>5}  user  SQL statements in session.");
    let _ = writeln!(out, "{internal:>5}  internal SQL statements in session.");
    let _ = writeln!(out, "{:>5}  SQL statements in session.", user + internal);
    out.push_str(STARS);
    out.push('\n');
    let name = trace_file_name(p);
    let _ = writeln!(out, "Trace file: {name}");
    let _ = writeln!(out, "Trace file compatibility: {}", p.compatibility);
    out.push_str("Sort options: default\n\n");
    let sessions = p.sessions.len().max(1);
    let _ = writeln!(
        out,
        "{sessions:>8}  session{} in tracefile.",
        if sessions == 1 { "" } else { "s" }
    );
    let _ = writeln!(out, "{user:>8}  user  SQL statements in trace file.");
    let _ = writeln!(out, "{internal:>8}  internal SQL statements in trace file.");
    let _ = writeln!(out, "{:>8}  SQL statements in trace file.", user + internal);
    let _ = writeln!(
        out,
        "{:>8}  unique SQL statements in trace file.",
        s.unique_statements
    );
    let _ = writeln!(out, "{:>8}  lines in trace file.", p.lines);
    let _ = writeln!(
        out,
        "{:>8}  elapsed seconds in trace file.",
        s.elapsed_seconds
    );
}

/// The file's name as tkprof prints it: as named on the command line.
pub fn trace_file_name(p: &FileProfile) -> String {
    p.file.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_truncated_to_hundredths() {
        assert_eq!(secs2(0), "0.00");
        assert_eq!(secs2(9_999), "0.00");
        assert_eq!(secs2(10_000), "0.01");
        assert_eq!(secs2(1_809_924), "1.80");
        assert_eq!(secs2(60_002_586), "60.00");
        assert_eq!(secs2(-5_000), "-0.00");
        assert_eq!(secs2(-25_000), "-0.02");
    }

    #[test]
    fn sql_is_reflowed_as_tkprof_does() {
        let sql = "select /*+ rule */ bucket_cnt, row_cnt, cache_cnt, null_cnt, timestamp#, sample_size, minimum, maximum, distcnt, lowval, hival, density, col#, spare1, spare2, avgcln from hist_head$ where obj#=:1 and intcol#=:2";
        assert_eq!(
            sql_text(sql),
            "select /*+ rule */ bucket_cnt, row_cnt, cache_cnt, null_cnt, timestamp#, \n  sample_size, minimum, maximum, distcnt, lowval, hival, density, col#, \n  spare1, spare2, avgcln \nfrom\n hist_head$ where obj#=:1 and intcol#=:2\n"
        );
        let upd = "update seq$ set increment$=:2,minvalue=:3,maxvalue=:4,cycle#=:5,order$=:6,cache=:7,highwater=:8,audit$=:9,flags=:10,partcount=:11 where obj#=:1";
        assert_eq!(
            sql_text(upd),
            "update seq$ set increment$=:2,minvalue=:3,maxvalue=:4,cycle#=:5,order$=:6,\n  cache=:7,highwater=:8,audit$=:9,flags=:10,partcount=:11 \nwhere\n obj#=:1\n"
        );
        assert_eq!(
            sql_text("BEGIN DBMS_OUTPUT.GET_LINES(:LINES, :NUMLINES); END;"),
            "BEGIN DBMS_OUTPUT.GET_LINES(:LINES, :NUMLINES); END;\n"
        );
    }

    #[test]
    fn call_table_columns_line_up_with_tkprofs() {
        let mut t = CallTable::default();
        t.parse.count = 1;
        t.fetch.count = 2;
        t.fetch.rows = 1;
        t.fetch.query = 3;
        let mut out = String::new();
        call_table(&mut out, &t, true);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[2],
            "Parse        1      0.00       0.00          0          0          0           0"
        );
        assert_eq!(
            lines[4],
            "Fetch        2      0.00       0.00          0          3          0           1"
        );
        assert_eq!(lines[0].len(), lines[1].len());
        assert_eq!(lines[1].len(), lines[2].len());
    }
}

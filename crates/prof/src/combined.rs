//! The combined profile of several traces: what a DBA reads first when a
//! job ran in 20 sessions (one trace each), as `tracelab skew` gives one
//! table for all its files. The response times of the files add up (each
//! file's R is its own session's), the resource profile's rows are added
//! by name, the statements by sqlid; then one line per file with its R.
//! Each file's own report follows it (the binary's `--each`).

use std::collections::HashMap;
use std::fmt::Write as _;

use tracelab_query::number::commify;
use tracelab_query::{Agg, Groups, Layout, Report};

use crate::report::FileProfile;
use crate::text::{secs6, table};

/// A profile row's sums over the files: µs, calls, min µs, max µs.
type RowSums = (i64, u64, i64, i64);

/// Statements listed in the combined profile.
const COMBINED_STATEMENTS: usize = 20;

/// The combined profile of `profiles` (two or more files), as text.
pub fn render_combined(profiles: &[&FileProfile]) -> String {
    let mut out = String::new();
    let r: i64 = profiles.iter().map(|p| p.response_time_us).sum();
    let lines: u64 = profiles.iter().map(|p| p.lines).sum();
    let calls: u64 = profiles.iter().map(|p| p.calls).sum();
    let _ = writeln!(
        out,
        "tracelab prof: combined profile of {} trace files",
        profiles.len()
    );
    let _ = writeln!(
        out,
        "{} lines; {} calls",
        commify(&lines.to_string()),
        commify(&calls.to_string())
    );
    let _ = writeln!(
        out,
        "\nResponse time R = {} s: the sum of the files' response times (each file's R is its session's).\n",
        secs6(r)
    );
    // The resource profile: rows added by name (mrskew's table, as for one
    // file).
    // Added up as integers first: an `Agg` built from a total cannot be
    // merged with another (it holds no values to replay).
    // Rows in the order they first appear (ties in the sort keep it).
    let mut rows: Vec<(&str, RowSums)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for p in profiles {
        for c in &p.profile {
            let i = *at.entry(c.name.as_str()).or_insert_with(|| {
                rows.push((c.name.as_str(), (0, 0, c.min_us, c.max_us)));
                rows.len() - 1
            });
            let e = &mut rows[i].1;
            e.0 += c.duration_us;
            e.1 += c.calls;
            e.2 = e.2.min(c.min_us);
            e.3 = e.3.max(c.max_us);
        }
    }
    let mut groups = Groups::default();
    for (i, (name, (us, calls, min, max))) in rows.into_iter().enumerate() {
        groups.map.insert(
            name.into(),
            Agg::micros(i128::from(us), calls, min, max, (0, 0, i as u64)),
        );
    }
    let o = Layout {
        top: 0,
        ..Layout::default()
    };
    out.push_str("RESOURCE PROFILE (all files)\n");
    out.push_str(&Report::build(groups, &o, "RESPONSE TIME COMPONENT", "DURATION").render(&o));
    // Statements by sqlid, their time without their recursive statements'
    // (no double counting), over all files.
    struct Stmt {
        self_us: i64,
        calls: u64,
        files: usize,
        sql: String,
    }
    let mut stmts: HashMap<&str, Stmt> = HashMap::new();
    for p in profiles {
        for s in &p.statements {
            let e = stmts.entry(s.sqlid.as_str()).or_insert_with(|| Stmt {
                self_us: 0,
                calls: 0,
                files: 0,
                sql: s.sql.clone(),
            });
            e.self_us += s.self_elapsed_us;
            e.calls += s.with_recursive.total().count;
            e.files += 1;
        }
    }
    let mut ranked: Vec<(&str, Stmt)> = stmts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.self_us.cmp(&a.1.self_us).then(a.0.cmp(b.0)));
    if !ranked.is_empty() {
        let _ = writeln!(
            out,
            "\nSTATEMENTS (all files; the first {} of {} by their time without their recursive statements')",
            COMBINED_STATEMENTS.min(ranked.len()),
            ranked.len()
        );
        let rows: Vec<Vec<String>> = ranked
            .iter()
            .take(COMBINED_STATEMENTS)
            .map(|(id, s)| {
                vec![
                    id.to_string(),
                    secs6(s.self_us),
                    pct(s.self_us, r),
                    commify(&s.calls.to_string()),
                    s.files.to_string(),
                    flat(&s.sql, 60),
                ]
            })
            .collect();
        out.push_str(&table(
            &["SQLID", "SECONDS", "% R", "CALLS", "FILES", "STATEMENT"],
            &rows,
            &[false, true, true, true, true, false],
        ));
    }
    let _ = writeln!(out, "\nFILES");
    let rows: Vec<Vec<String>> = profiles
        .iter()
        .map(|p| {
            vec![
                p.file.clone(),
                secs6(p.response_time_us),
                pct(p.response_time_us, r),
                commify(&p.calls.to_string()),
                p.warnings.len().to_string(),
            ]
        })
        .collect();
    out.push_str(&table(
        &["FILE", "R SECONDS", "% R", "CALLS", "WARNINGS"],
        &rows,
        &[false, true, true, true, true],
    ));
    out
}

fn pct(part: i64, whole: i64) -> String {
    if whole == 0 {
        "0.0%".into()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}

fn flat(sql: &str, n: usize) -> String {
    let flat: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > n {
        let mut s: String = flat.chars().take(n - 1).collect();
        s.push('…');
        s
    } else {
        flat
    }
}

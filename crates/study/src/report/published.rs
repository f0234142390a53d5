//! The original study's published figures next to this run's: the values
//! of report columns per cell, and the ratio of each level of the rows
//! factor to the baseline (the original's single figure against this
//! run's mean with its 95 % interval).
//!
//! ```toml
//! [report.published]
//! title = "Oracle 19.3, sqlrun, 20 sessions x 1200 s"
//! columns = ["transactions"]
//! cells = [{ cache = "off", latency = "0ms", transactions = 18253215 }, ...]
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::model::columns::compile;
use crate::model::published::Published;
use crate::model::spec::Study;
use crate::report::stats::{compare, describe};
use crate::report::{esc, fmt_num, Format, Table};
use crate::store::Stored;

/// A published cell's levels: (factor, level).
type CellLevels<'a> = [(&'a str, String)];

/// The report's section: per combination of the factors the published
/// cells leave out (the engine, say), the original's values and these,
/// then the ratios.
pub fn section(st: &Stored, study: &Study, format: Format, out: &mut String) {
    let Some(p) = &study.report.published else {
        return;
    };
    // The rows factor the baseline belongs to: the first.
    let Some(rows_f) = study.report.rows.first() else {
        return;
    };
    let Some(baseline) = &study.report.baseline else {
        return;
    };
    let named = named_factors(p, study);
    let exprs: Vec<(String, usize, crate::model::columns::Expr)> = p
        .columns
        .iter()
        .filter_map(|c| {
            let col = study.report.columns.iter().find(|x| &x.name == c)?;
            compile(&col.expr).ok().map(|e| (c.clone(), col.digits, e))
        })
        .collect();
    // The other factors' combinations that ran, in level order.
    let pos = |f: &str, l: &str| crate::report::level_pos(study, f, l);
    let mut groups: Vec<Vec<(String, String)>> = Vec::new();
    let mut runs: Vec<&crate::store::StoredRun> = st.runs.iter().collect();
    runs.sort_by_key(|r| r.cell.iter().map(|(f, l)| pos(f, l)).collect::<Vec<_>>());
    for r in &runs {
        let g: Vec<(String, String)> = r
            .cell
            .iter()
            .filter(|(f, _)| !named.contains(f))
            .cloned()
            .collect();
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let title = format!("The original and this run ({})", p.title);
    match format {
        Format::Text => {
            let _ = writeln!(out, "{title}\n");
        }
        Format::Markdown => {
            let _ = writeln!(out, "## The original and this run\n\n{}\n", p.title);
        }
        Format::Html => {
            let _ = writeln!(
                out,
                "<h2>The original and this run</h2>\n<p>{}</p>",
                esc(&p.title)
            );
        }
    }
    for g in &groups {
        // This run's values of a column in the runs of a published cell.
        let values = |cell: &[(&str, String)], col: &crate::model::columns::Expr| -> Vec<f64> {
            runs.iter()
                .filter(|r| {
                    g.iter().all(|x| r.cell.contains(x))
                        && cell
                            .iter()
                            .all(|(f, l)| r.cell.iter().any(|(rf, rl)| rf == f && rl == l))
                })
                .filter_map(|r| col.eval(&r.values))
                .collect()
        };
        let mut head: Vec<String> = named.clone();
        for (c, _, _) in &exprs {
            head.push(format!("{c} (original)"));
            head.push(format!("{c} (here, mean)"));
        }
        let mut rows = Vec::new();
        for cell in &p.cells {
            let lv = p.levels(cell);
            let mut row: Vec<String> = named
                .iter()
                .map(|f| {
                    lv.iter()
                        .find(|(k, _)| k == f)
                        .map_or("—".into(), |(_, l)| l.clone())
                })
                .collect();
            for (c, digits, e) in &exprs {
                row.push(
                    cell.get(c)
                        .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
                        .map_or("—".into(), |v| fmt_num(v, *digits)),
                );
                row.push(
                    describe(&values(&lv, e)).map_or("—".into(), |d| fmt_num(d.mean, *digits)),
                );
            }
            rows.push(row);
        }
        // Ratios of each level of the rows factor to the baseline, the
        // other named factors equal.
        let ratio_col = p.ratio.as_ref().or(p.columns.first());
        let ratios = match exprs.iter().find(|(c, _, _)| Some(c) == ratio_col) {
            Some((rc, _, re)) => ratio_rows(p, rows_f, baseline, rc, &|cell| values(cell, re)),
            None => Vec::new(),
        };
        let gtitle = g
            .iter()
            .map(|(f, l)| format!("{f}={l}"))
            .collect::<Vec<_>>()
            .join(" ");
        let table = Table {
            head,
            rows,
            left: named.len(),
        };
        let width = ratios.first().map_or(0, Vec::len);
        let mut rhead: Vec<String> = (0..width.saturating_sub(3))
            .map(|_| "cell".to_string())
            .collect();
        rhead.extend([
            rows_f.to_string(),
            format!("{} ratio (original)", ratio_col.map_or("", |s| s.as_str())),
            format!("{} ratio (here)", ratio_col.map_or("", |s| s.as_str())),
        ]);
        let rtable = Table {
            head: rhead,
            rows: ratios,
            left: width.saturating_sub(2),
        };
        put_group(out, format, &gtitle, &table, &rtable);
    }
    for n in &p.notes {
        match format {
            Format::Text => {
                let _ = writeln!(out, "original: {n}");
            }
            Format::Markdown => {
                let _ = writeln!(out, "- original: {n}");
            }
            Format::Html => {
                let _ = writeln!(out, "<p>Original: {}</p>", esc(n));
            }
        }
    }
    if !p.notes.is_empty() && format != Format::Html {
        out.push('\n');
    }
}

/// The ratios of each level of the rows factor to the baseline, the other
/// named factors equal: the original's (of column `rc`) and this run's
/// (`values` gives this run's values in a published cell).
fn ratio_rows(
    p: &Published,
    rows_f: &str,
    baseline: &str,
    rc: &str,
    values: &dyn Fn(&CellLevels<'_>) -> Vec<f64>,
) -> Vec<Vec<String>> {
    let mut ratios = Vec::new();
    for cell in &p.cells {
        let lv = p.levels(cell);
        let Some((_, level)) = lv.iter().find(|(k, _)| *k == rows_f) else {
            continue;
        };
        if level == baseline {
            continue;
        }
        let same = |other: &BTreeMap<String, toml::Value>| {
            let ol = p.levels(other);
            ol.iter().any(|(k, l)| *k == rows_f && l == baseline)
                && lv
                    .iter()
                    .filter(|(k, _)| *k != rows_f)
                    .all(|x| ol.contains(x))
        };
        let Some(base) = p.cells.iter().find(|c| same(c)) else {
            continue;
        };
        let num = |c: &BTreeMap<String, toml::Value>| {
            c.get(rc)
                .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
        };
        let original = match (num(cell), num(base)) {
            (Some(a), Some(b)) if b != 0.0 => format!("{:.1}x", a / b),
            _ => "—".into(),
        };
        let here = compare(&values(&lv), &values(&p.levels(base))).map_or(
            "—".into(),
            // The interval is the ratio's only when the test was
            // on the log scale; a difference's interval is no ratio.
            |c| match (c.test, c.ci) {
                (crate::report::stats::Test::LogRatio, Some((lo, hi))) => {
                    format!("{:.1}x (95% CI {:.1}..{:.1})", c.ratio, lo, hi)
                }
                _ => format!("{:.1}x", c.ratio),
            },
        );
        let mut row: Vec<String> = lv
            .iter()
            .filter(|(k, _)| *k != rows_f)
            .map(|(k, l)| format!("{k}={l}"))
            .collect();
        row.push(format!("{level} / {baseline}"));
        row.push(original);
        row.push(here);
        ratios.push(row);
    }
    ratios
}

/// A group's title, its values table and its ratios table.
fn put_group(out: &mut String, format: Format, gtitle: &str, table: &Table, rtable: &Table) {
    match format {
        Format::Text => {
            if !gtitle.is_empty() {
                let _ = writeln!(out, "{gtitle}\n");
            }
            table.text(out);
            out.push('\n');
            rtable.text(out);
            out.push('\n');
        }
        Format::Markdown => {
            if !gtitle.is_empty() {
                let _ = writeln!(out, "### {gtitle}\n");
            }
            table.markdown(out);
            out.push('\n');
            rtable.markdown(out);
            out.push('\n');
        }
        Format::Html => {
            if !gtitle.is_empty() {
                let _ = writeln!(out, "<h3>{}</h3>", esc(gtitle));
            }
            table.html(out);
            rtable.html(out);
        }
    }
}

/// The factors the published cells name, in the study's order.
fn named_factors(p: &Published, study: &Study) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for c in &p.cells {
        for (k, _) in p.levels(c) {
            if !v.iter().any(|x| x == k) {
                v.push(k.to_string());
            }
        }
    }
    // In the study's factor order.
    study
        .factors
        .iter()
        .map(|f| f.name.clone())
        .filter(|f| v.contains(f))
        .collect()
}

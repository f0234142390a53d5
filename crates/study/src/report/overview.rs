//! The report's overview of a factorial study, before its per-group
//! tables: every cell in one table (the layout of the classic studies'
//! published tables), averages by one factor, the study's questions
//! answered by tests, charts with a series per level of a factor, and the
//! cells a level's `only_with` left out.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::model::columns::Expr;
use crate::model::spec::{value_text, Study};
use crate::report::stats::{compare, TOO_WIDE};
use crate::report::svg;
use crate::report::{esc, fmt_num, level_pos, mean, Document, Table};
use crate::store::StoredRun;

/// A cell: (factor, level) in factor order.
type Cell = Vec<(String, String)>;

/// Column name → the values of a cell's runs.
type Values = BTreeMap<String, Vec<f64>>;

/// A row being summed: where it sorts, its levels, its values.
type Keyed = (Vec<usize>, Vec<String>, Values);

/// Every cell's runs' values, cells in the order of their levels.
fn cells(study: &Study, cols: &[(String, Expr)], runs: &[StoredRun]) -> Vec<(Cell, Values)> {
    let mut out: Vec<(Cell, Values)> = Vec::new();
    for r in runs {
        let i = match out.iter().position(|(c, _)| *c == r.cell) {
            Some(i) => i,
            None => {
                out.push((r.cell.clone(), BTreeMap::new()));
                out.len() - 1
            }
        };
        for (name, e) in cols {
            if let Some(v) = e.eval(&r.values) {
                out[i].1.entry(name.clone()).or_default().push(v);
            }
        }
    }
    out.sort_by_key(|(c, _)| order(study, c));
    out
}

fn order(study: &Study, cell: &[(String, String)]) -> Vec<usize> {
    cell.iter().map(|(f, l)| level_pos(study, f, l)).collect()
}

fn level<'a>(cell: &'a [(String, String)], f: &str) -> Option<&'a str> {
    cell.iter().find(|(x, _)| x == f).map(|(_, l)| l.as_str())
}

/// The levels of each factor among the runs.
fn levels_run(runs: &[StoredRun]) -> BTreeMap<String, BTreeSet<String>> {
    let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in runs {
        for (f, l) in &r.cell {
            m.entry(f.clone()).or_default().insert(l.clone());
        }
    }
    m
}

fn label(study: &Study, name: &str) -> String {
    study
        .report
        .columns
        .iter()
        .find(|c| c.name == name)
        .map_or(name.to_string(), |c| c.label.clone())
}

fn digits(study: &Study, name: &str) -> usize {
    study
        .report
        .columns
        .iter()
        .find(|c| c.name == name)
        .map_or(2, |c| c.digits)
}

/// The sections the report's `cells`, `averages` and `questions` ask for.
pub(crate) fn sections(
    study: &Study,
    cols: &[(String, Expr)],
    runs: &[StoredRun],
    doc: &mut Document,
) {
    let spec = &study.report;
    let all = cells(study, cols, runs);
    let present = levels_run(runs);
    let varies = |f: &str| present.get(f).is_some_and(|l| l.len() > 1);
    let fixed: Vec<String> = study
        .factors
        .iter()
        .filter(|f| !varies(&f.name))
        .filter_map(|f| {
            present
                .get(&f.name)
                .and_then(|l| l.iter().next())
                .map(|l| format!("{}={l}", f.name))
        })
        .collect();
    let fixed = if fixed.is_empty() {
        String::new()
    } else {
        format!(" ({})", fixed.join(" "))
    };

    if let Some(c) = &spec.cells {
        let shown: Vec<&str> = c
            .factors
            .iter()
            .map(String::as_str)
            .filter(|f| varies(f))
            .collect();
        let t = summary(study, &all, &shown, &c.columns, false);
        let title = if c.title.is_empty() {
            "Every cell".to_string()
        } else {
            c.title.clone()
        };
        doc.heading(2, format!("{title}{fixed}"));
        doc.table(t);
    }

    for a in &spec.averages {
        // The mean of the cell means, so that a cell with more runs does
        // not weigh more.
        let mut by: Vec<&str> = a
            .per
            .iter()
            .map(String::as_str)
            .filter(|f| varies(f))
            .collect();
        by.push(&a.by);
        let t = summary(study, &all, &by, &a.columns, true);
        doc.heading(
            2,
            format!("Averages by {} (means of the cells){fixed}", a.by),
        );
        doc.table(t);
    }

    for q in &spec.questions {
        questions(study, q, &all, &varies, doc);
    }
}

/// The cells summed into a row per combination of the levels of
/// `factors` (cells without one of them left out): per column, the mean of
/// the runs' values, or with `cell_means` the mean of the cells' means,
/// after a count of the runs (or cells).
fn summary(
    study: &Study,
    all: &[(Cell, Values)],
    factors: &[&str],
    columns: &[String],
    cell_means: bool,
) -> Table {
    let mut rows: Vec<Keyed> = Vec::new();
    for (cell, vals) in all {
        let Some(key) = factors
            .iter()
            .map(|f| level(cell, f).map(str::to_string))
            .collect::<Option<Vec<String>>>()
        else {
            continue;
        };
        let pos: Vec<usize> = factors
            .iter()
            .zip(&key)
            .map(|(f, l)| level_pos(study, f, l))
            .collect();
        let i = match rows.iter().position(|(_, k, _)| *k == key) {
            Some(i) => i,
            None => {
                rows.push((pos, key, BTreeMap::new()));
                rows.len() - 1
            }
        };
        for n in columns {
            let v = rows[i].2.entry(n.clone()).or_default();
            match (cell_means, vals.get(n)) {
                (true, x) => v.extend(mean(x)),
                (false, Some(x)) => v.extend(x),
                (false, None) => {}
            }
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let mut head: Vec<String> = factors.iter().map(|f| f.to_string()).collect();
    head.push(if cell_means { "cells" } else { "runs" }.into());
    head.extend(columns.iter().map(|n| label(study, n)));
    Table {
        head,
        rows: rows
            .iter()
            .map(|(_, key, vals)| {
                let mut r = key.clone();
                let n = columns
                    .first()
                    .and_then(|n| vals.get(n))
                    .map_or(0, Vec::len);
                r.push(n.to_string());
                for name in columns {
                    r.push(
                        mean(vals.get(name))
                            .map_or("—".into(), |x| fmt_num(x, digits(study, name))),
                    );
                }
                r
            })
            .collect(),
        left: factors.len(),
    }
}

/// One question: for each combination of its `per` factors, each level of
/// its factor against the baseline in every context (the other factors'
/// levels) where both ran.
fn questions(
    study: &Study,
    q: &crate::model::spec::Question,
    all: &[(Cell, Values)],
    varies: &dyn Fn(&str) -> bool,
    doc: &mut Document,
) {
    let per: Vec<&String> = q.per.iter().filter(|f| varies(f)).collect();
    // per-combination → context → factor level → values
    type ByLevel<'a> = BTreeMap<&'a str, &'a Vec<f64>>;
    type Contexts<'a> = Vec<(Cell, ByLevel<'a>)>;
    let mut groups: Vec<(Vec<String>, Contexts<'_>)> = Vec::new();
    for (cell, vals) in all {
        let Some(lv) = level(cell, &q.factor) else {
            continue;
        };
        let Some(v) = vals.get(&q.column) else {
            continue;
        };
        let key: Vec<String> = per
            .iter()
            .map(|f| format!("{f}={}", level(cell, f).unwrap_or("")))
            .collect();
        let context: Vec<(String, String)> = cell
            .iter()
            .filter(|(f, _)| f != &q.factor && !q.per.contains(f) && varies(f))
            .cloned()
            .collect();
        let gi = match groups.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                groups.push((key, Vec::new()));
                groups.len() - 1
            }
        };
        let g = &mut groups[gi].1;
        let ci = match g.iter().position(|(c, _)| *c == context) {
            Some(i) => i,
            None => {
                g.push((context, BTreeMap::new()));
                g.len() - 1
            }
        };
        g[ci].1.insert(lv, v);
    }
    let factor_levels: Vec<String> = study
        .factors
        .iter()
        .find(|f| f.name == q.factor)
        .map(|f| f.level_names())
        .unwrap_or_default();
    doc.heading(2, &q.title);
    doc.paragraph(
        format!(
            "Each level of {} against {} with every other factor equal, one test of `{}` each (Welch's t-test of the ratio on the log scale, of the difference where a value is not positive; 5 %).",
            q.factor, q.baseline, q.column
        ),
    );
    let mut answered = false;
    for (key, contexts) in &groups {
        let mut rows = Vec::new();
        let mut tested = 0;
        let mut differ = 0;
        let mut too_wide = 0;
        let mut fewest = usize::MAX;
        for (context, by) in contexts {
            let Some(base) = by.get(q.baseline.as_str()) else {
                continue;
            };
            for l in &factor_levels {
                if *l == q.baseline {
                    continue;
                }
                let Some(v) = by.get(l.as_str()) else {
                    continue;
                };
                let Some(c) = compare(v, base) else { continue };
                tested += 1;
                fewest = fewest.min(v.len()).min(base.len());
                if c.p.is_some_and(|p| p < 0.05) {
                    differ += 1;
                } else if c.detectable().is_some_and(|d| d > TOO_WIDE) {
                    too_wide += 1;
                }
                let ctx: Vec<String> = context.iter().map(|(f, l)| format!("{f}={l}")).collect();
                rows.push(vec![
                    if ctx.is_empty() {
                        "—".into()
                    } else {
                        ctx.join(" ")
                    },
                    l.clone(),
                    v.len().to_string(),
                    c.shown(digits(study, &q.column) + 1),
                    c.verdict(),
                ]);
            }
        }
        if rows.is_empty() {
            continue;
        }
        answered = true;
        let answer = answer(&q.baseline, tested, differ, too_wide, fewest);
        let title = if key.is_empty() {
            answer
        } else {
            format!("{}: {answer}", key.join(" "))
        };
        doc.heading(3, title);
        let t = Table {
            head: vec![
                "other factors".into(),
                q.factor.clone(),
                "n".into(),
                format!("vs {} (95% CI)", q.baseline),
                format!("vs {}: t-test at 5%", q.baseline),
            ],
            rows,
            left: 2,
        };
        doc.table(t);
    }
    if !answered {
        doc.paragraph(
        format!(
                "Not answered: no cell ran both {}={} and another level of {} with every other factor equal.",
                q.factor, q.baseline, q.factor
            ),
        );
    }
}

/// A question's answer in a line: whether any comparison differs from
/// the baseline, or, where none does, whether the runs could have told.
fn answer(baseline: &str, tested: usize, differ: usize, too_wide: usize, fewest: usize) -> String {
    match differ {
        // Absence of evidence, not evidence of absence: the runs per
        // cell say how much a test could see.
        // Every comparison too wide to tell: the runs cannot answer.
        0 if too_wide == tested => format!(
            "cannot tell: the runs are too few to tell any of the {tested} comparisons \
             from {} ({fewest} runs a cell; the table says how many would tell)",
            baseline
        ),
        0 => format!(
            "no difference found: none of the {tested} comparisons differs from {} at the 5 % level \
             ({fewest} runs a cell: differences within the intervals below are not ruled out)",
            baseline
        ),
        1 => format!(
            "yes: 1 of the {tested} comparisons differs from {} at the 5 % level",
            baseline
        ),
        d => format!(
            "yes: {d} of the {tested} comparisons differ from {} at the 5 % level",
            baseline
        ),
    }
}

/// The chart's series form (`series = "timer"`): one chart per
/// combination of the factors other than the rows and the series, the
/// rows along x, a bar per level of the series. HTML only.
pub(crate) fn series_charts(study: &Study, cols: &[(String, Expr)], runs: &[StoredRun]) -> String {
    let spec = &study.report;
    let (Some(ch), Some(sf)) = (
        spec.chart.as_ref(),
        spec.chart.as_ref().and_then(|c| c.series.as_ref()),
    ) else {
        return String::new();
    };
    let Some(col) = ch.lines.first() else {
        return String::new();
    };
    let all = cells(study, cols, runs);
    let present = levels_run(runs);
    let varies = |f: &str| present.get(f).is_some_and(|l| l.len() > 1);
    // chart title → series level (by its position) → (its name, [(row
    // label, mean)])
    type Series = BTreeMap<Vec<usize>, (String, Vec<(String, f64)>)>;
    let mut charts: Vec<(String, Series)> = Vec::new();
    let mut xs: Vec<(Vec<usize>, String)> = Vec::new();
    for (cell, vals) in &all {
        let Some(s) = level(cell, sf) else { continue };
        let Some(y) = mean(vals.get(col)) else {
            continue;
        };
        let title: Vec<String> = cell
            .iter()
            .filter(|(f, _)| f != sf && !spec.rows.contains(f) && varies(f))
            .map(|(f, l)| format!("{f}={l}"))
            .collect();
        let title = title.join(" ");
        let x: Vec<&str> = spec.rows.iter().filter_map(|f| level(cell, f)).collect();
        let x = x.join(" ");
        let xpos: Vec<usize> = spec
            .rows
            .iter()
            .filter_map(|f| level(cell, f).map(|l| level_pos(study, f, l)))
            .collect();
        if !xs.iter().any(|(_, l)| *l == x) {
            xs.push((xpos, x.clone()));
        }
        let ci = match charts.iter().position(|(t, _)| *t == title) {
            Some(i) => i,
            None => {
                charts.push((title, BTreeMap::new()));
                charts.len() - 1
            }
        };
        charts[ci]
            .1
            .entry(vec![level_pos(study, sf, s)])
            .or_insert_with(|| (s.to_string(), Vec::new()))
            .1
            .push((x, y));
    }
    xs.sort();
    let mut out = String::new();
    for (title, series) in &charts {
        let series: Vec<(String, Vec<(String, f64)>)> = series
            .values()
            .map(|(name, pts)| {
                // Every series in the order of the x levels.
                let mut pts = pts.clone();
                pts.sort_by_key(|(x, _)| xs.iter().position(|(_, l)| l == x));
                (format!("{sf}={name}"), pts)
            })
            .collect();
        let _ = writeln!(
            out,
            "<h3>{}</h3>",
            esc(format!("{} {title}", ch.title).trim())
        );
        out.push_str(&svg::line_chart(
            format!("{} {title}", ch.title).trim(),
            &spec.rows.join(" "),
            &ch.y_label,
            false,
            &series,
        ));
    }
    out
}

/// The cells that were not run because a level does not apply there, in
/// words: "tracing=client_trace is not run with loop=server: it applies
/// only with loop=client (why)".
pub(crate) fn not_run(study: &Study, runs: &[StoredRun]) -> Vec<String> {
    let present = levels_run(runs);
    let mut out = Vec::new();
    for f in &study.factors {
        for lv in f.all_levels() {
            if !present.get(&f.name).is_some_and(|l| l.contains(&lv.name)) {
                continue;
            }
            for (other, allowed) in &lv.only_with {
                let allowed: Vec<String> = allowed.iter().map(value_text).collect();
                let left_out: Vec<&String> = present
                    .get(other)
                    .map(|ls| ls.iter().filter(|l| !allowed.contains(l)).collect())
                    .unwrap_or_default();
                if left_out.is_empty() {
                    continue;
                }
                let mut left_out = left_out;
                left_out.sort_by_key(|l| level_pos(study, other, l));
                out.push(format!(
                    "{}={} is not run with {other}={}: it applies only with {other}={}{}",
                    f.name,
                    lv.name,
                    left_out
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                    allowed.join(","),
                    lv.why
                        .as_ref()
                        .map(|w| format!(" ({})", w.trim()))
                        .unwrap_or_default()
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::report::{render, Format};
    use crate::store::{Stored, StoredRun};

    /// A study of two factors, `tracing` (off, on) and `timer` (a, b),
    /// whose runs' elapsed times are given per cell.
    fn stored(cells: &[(&str, &str, &[f64])]) -> Stored {
        let text = r#"
name = "q"
[workload]
sql = "select 1"
[[factors]]
name = "timer"
values = ["a", "b"]
[[factors]]
name = "tracing"
values = ["off", "on"]
[report]
rows = "tracing"
baseline = "off"
columns = [{ name = "elapsed", label = "elapsed (ms)", expr = "$elapsed_ms", digits = 1 }]
questions = [{ title = "Does tracing cost?", factor = "tracing", baseline = "off", column = "elapsed" }]
"#;
        let mut runs = Vec::new();
        for (timer, tracing, values) in cells {
            for (rep, v) in values.iter().enumerate() {
                runs.push(StoredRun {
                    seq: runs.len(),
                    rep: rep as u32,
                    cell: vec![
                        ("timer".into(), timer.to_string()),
                        ("tracing".into(), tracing.to_string()),
                    ],
                    values: [("elapsed_ms".to_string(), *v)].into_iter().collect(),
                    notes: String::new(),
                    strace: false,
                    syscalls: Vec::new(),
                });
            }
        }
        Stored {
            name: "q".into(),
            file: "q.toml".into(),
            text: text.into(),
            quick: false,
            reps: 3,
            seed: 1,
            facts: BTreeMap::new(),
            planned: runs.len(),
            runs,
            session_values: Vec::new(),
            profiles: Vec::new(),
            freshness: BTreeMap::new(),
        }
    }

    #[test]
    fn a_question_is_answered_by_a_test_per_context_and_no_difference_is_not_a_no() {
        // Tracing doubles elapsed under timer a, clearly; under timer b
        // the runs are too scattered to tell.
        let st = stored(&[
            ("a", "off", &[100.0, 101.0, 99.0]),
            ("a", "on", &[200.0, 202.0, 198.0]),
            ("b", "off", &[100.0, 50.0, 150.0]),
            ("b", "on", &[120.0, 60.0, 180.0]),
        ]);
        let r = render(&st, Format::Text).unwrap();
        assert!(
            r.contains("Does tracing cost?\n")
                && r.contains("yes: 1 of the 2 comparisons differs from off at the 5 % level"),
            "{r}"
        );
        let line = |ctx: &str| {
            r.lines()
                .find(|l| l.starts_with(ctx) && l.contains(" on "))
                .unwrap_or_else(|| panic!("no row for {ctx}: {r}"))
                .to_string()
        };
        assert!(line("timer=a").contains("×2.000") && line("timer=a").contains("higher by 100%"));
        // Three runs of 50 % spread cannot tell: said so, not "no difference".
        assert!(line("timer=b").contains("too few runs to tell"), "{r}");
        // Nothing detected is said as such, with the runs per cell.
        let st = stored(&[
            ("a", "off", &[100.0, 50.0, 150.0]),
            ("a", "on", &[120.0, 60.0, 180.0]),
        ]);
        let r = render(&st, Format::Text).unwrap();
        assert!(
            r.contains(
                "cannot tell: the runs are too few to tell any of the 1 comparisons from off (3 runs a cell"
            ),
            "{r}"
        );
        assert!(!r.contains("no: none"), "{r}");
    }
}

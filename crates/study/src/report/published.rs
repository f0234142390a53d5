//! The original study's published figures next to this run's: the values
//! of report columns per cell, and the side-by-side table of the ratios
//! of a level of the rows factor to the baseline: the original's figure,
//! ours with its 95 % interval and the smallest ratio our repetitions
//! could detect, whether they agree (claimed only where our interval
//! holds the original's; else the direction and the size), and why where
//! not.
//!
//! ```toml
//! [report.published]
//! title = "Oracle 19.3, sqlrun, 20 sessions x 1200 s"
//! columns = ["transactions"]
//! cells = [{ cache = "off", latency = "0ms", transactions = 18253215 }, ...]
//! ratios = [{ batch = "32768", response = 0.27, why = "..." }]
//! ```

use std::collections::BTreeMap;

use crate::model::columns::{compile, Expr};
use crate::model::published::{number, Direction, Published, WHY};
use crate::model::spec::{value_text, Study};
use crate::report::document::Block;
use crate::report::stats::{compare, describe, Test, TOO_WIDE};
use crate::report::{fmt_num, Document, Table};
use crate::store::{Stored, StoredRun};

/// Levels of some factors: (factor, level).
type Combination = Vec<(String, String)>;

/// A published cell's levels: (factor, level).
type CellLevels<'a> = [(&'a str, String)];

/// The head of the side-by-side table.
const SIDE_HEAD: [&str; 8] = [
    "cell",
    "column",
    "original",
    "ours",
    "our 95 % interval",
    "could detect",
    "agreement",
    "why, where not",
];

/// The report's section: per combination of the factors the published
/// figures leave out (the engine, say) in which something ran, the
/// original's values and ours, then the side-by-side table of ratios.
pub fn section(st: &Stored, study: &Study, doc: &mut Document) {
    let Some(p) = &study.report.published else {
        return;
    };
    // The rows factor the baseline belongs to: the first.
    let Some(rows_f) = study.report.rows.first() else {
        return;
    };
    let Some(baseline) = &baseline(p, study, rows_f) else {
        return;
    };
    let named = named_factors(p, study);
    let exprs: Vec<(String, usize, Expr)> = p
        .columns
        .iter()
        .filter_map(|c| {
            let col = study.report.columns.iter().find(|x| &x.name == c)?;
            compile(&col.expr).ok().map(|e| (c.clone(), col.digits, e))
        })
        .collect();
    let (runs, groups) = combinations(st, study, &named);
    doc.push(Block::Sourced {
        text: "The original and this run".into(),
        source: p.title.clone(),
    });
    let mut shown = 0;
    for g in &groups {
        // This run's values of a column in the runs of a published cell.
        let values = |cell: &CellLevels<'_>, col: &Expr| -> Vec<f64> {
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
            head.push(format!("{c} (ours, mean)"));
        }
        let mut rows = Vec::new();
        let mut matched = false;
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
                        .and_then(number)
                        .map_or("—".into(), |v| fmt_num(v, *digits)),
                );
                let ours = describe(&values(&lv, e));
                matched |= ours.is_some();
                row.push(ours.map_or("—".into(), |d| fmt_num(d.mean, *digits)));
            }
            rows.push(row);
        }
        // Ratios of a level of the rows factor to the baseline, the other
        // named factors equal: from pairs of published cells (of the
        // ratio column), then those the original gives as ratios.
        let ratio_col = p.ratio.as_ref().or(p.columns.first());
        let mut ratios = Vec::new();
        if let Some((rc, _, re)) = exprs.iter().find(|(c, _, _)| Some(c) == ratio_col) {
            ratios.extend(ratio_rows(p, rows_f, baseline, rc, &|cell| {
                values(cell, re)
            }));
        }
        for entry in &p.ratios {
            let lv = p.levels(entry);
            let base: Vec<(&str, String)> = lv
                .iter()
                .map(|(k, l)| {
                    if *k == rows_f.as_str() {
                        (*k, baseline.clone())
                    } else {
                        (*k, l.clone())
                    }
                })
                .collect();
            for (c, _, e) in &exprs {
                let original = match entry.get(c) {
                    Some(v) => match (number(v), v.as_str().and_then(Direction::parse)) {
                        (Some(x), _) => Original::Ratio(x),
                        (None, Some(d)) => Original::Direction(d),
                        (None, None) => continue,
                    },
                    None => continue,
                };
                ratios.push(side_by_side(
                    &cell_name(&lv, rows_f, baseline),
                    c,
                    original,
                    &values(&lv, e),
                    &values(&base, e),
                    entry.get(WHY).and_then(|v| v.as_str()).unwrap_or(""),
                ));
            }
        }
        matched |= ratios.iter().any(|r| r[3] != "—");
        if !matched {
            continue;
        }
        shown += 1;
        let gtitle = g
            .iter()
            .map(|(f, l)| format!("{f}={l}"))
            .collect::<Vec<_>>()
            .join(" ");
        let table = (!p.cells.is_empty()).then_some(Table {
            head,
            rows,
            left: named.len(),
        });
        let rtable = Table {
            head: SIDE_HEAD.map(String::from).to_vec(),
            rows: ratios,
            // Words in most columns: all aligned left.
            left: SIDE_HEAD.len(),
        };
        if !gtitle.is_empty() {
            doc.heading(3, gtitle);
        }
        if let Some(t) = table {
            doc.table(t);
        }
        doc.table(rtable);
    }
    if shown == 0 {
        doc.paragraph("No run of this plan is in a cell the original's figures are of.");
    }
    doc.push(Block::Labelled {
        label: "original".into(),
        items: p.notes.clone(),
    });
}

/// The baseline: the report's, or the first of its `baselines` the
/// original's cells name (one engine's models each).
fn baseline(p: &Published, study: &Study, rows_f: &str) -> Option<String> {
    let named_levels: Vec<String> = p
        .cells
        .iter()
        .chain(&p.ratios)
        .filter_map(|c| c.get(rows_f).map(value_text))
        .collect();
    study
        .report
        .baseline_of(named_levels.iter().map(String::as_str))
        .or(study.report.baseline.clone())
}

/// The runs in level order, and the combinations of the factors the
/// original's figures do not name that ran, in that order.
fn combinations<'a>(
    st: &'a Stored,
    study: &Study,
    named: &[String],
) -> (Vec<&'a StoredRun>, Vec<Combination>) {
    let pos = |f: &str, l: &str| crate::report::level_pos(study, f, l);
    let mut groups: Vec<Combination> = Vec::new();
    let mut runs: Vec<&StoredRun> = st.runs.iter().collect();
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
    (runs, groups)
}

/// "batch=32768 / 1", "cache=on / off latency=6ms": the level against the
/// baseline, then the other factors' levels.
fn cell_name(lv: &CellLevels<'_>, rows_f: &str, baseline: &str) -> String {
    let mut parts: Vec<String> = lv
        .iter()
        .filter(|(k, _)| *k == rows_f)
        .map(|(k, l)| format!("{k}={l} / {baseline}"))
        .collect();
    parts.extend(
        lv.iter()
            .filter(|(k, _)| *k != rows_f)
            .map(|(k, l)| format!("{k}={l}")),
    );
    parts.join(" ")
}

/// The ratios of each level of the rows factor to the baseline, the other
/// named factors equal, from pairs of published cells: the original's (of
/// column `rc`) beside ours (`values` gives ours in a published cell).
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
        let (Some(a), Some(b)) = (cell.get(rc).and_then(number), base.get(rc).and_then(number))
        else {
            continue;
        };
        if b <= 0.0 || a <= 0.0 {
            continue;
        }
        ratios.push(side_by_side(
            &cell_name(&lv, rows_f, baseline),
            rc,
            Original::Ratio(a / b),
            &values(&lv),
            &values(&p.levels(base)),
            cell.get(WHY).and_then(|v| v.as_str()).unwrap_or(""),
        ));
    }
    ratios
}

/// A ratio as the tables show it: three decimals below 0.1 (a fall of
/// 97 % is ×0.033, not ×0.03), two below 10, one above.
fn ratio_text(x: f64) -> String {
    if x < 0.1 {
        format!("×{x:.3}")
    } else if x < 10.0 {
        format!("×{x:.2}")
    } else {
        format!("×{x:.1}")
    }
}

/// Whether a ratio is a rise or a fall.
fn direction(x: f64) -> &'static str {
    if x > 1.0 {
        "higher"
    } else {
        "lower"
    }
}

/// What the original gives of a change: its ratio, or only its direction
/// (its figures not in the text we have).
#[derive(Debug, Clone, Copy)]
enum Original {
    Ratio(f64),
    Direction(Direction),
}

impl Original {
    fn text(self) -> String {
        match self {
            Original::Ratio(x) => ratio_text(x),
            Original::Direction(Direction::Higher) => "higher (no figure)".into(),
            Original::Direction(Direction::Lower) => "lower (no figure)".into(),
        }
    }

    fn higher(self) -> bool {
        match self {
            Original::Ratio(x) => x > 1.0,
            Original::Direction(d) => d == Direction::Higher,
        }
    }

    fn direction(self) -> &'static str {
        if self.higher() {
            "higher"
        } else {
            "lower"
        }
    }
}

/// One row of the side-by-side table: the original's ratio of a level to
/// the baseline (or its direction), ours (the means of `a` over `base`)
/// with the log-ratio test's 95 % interval and the smallest ratio the
/// runs could detect (80 % power), and the verdict. Agreement is claimed
/// only where our interval holds the original's ratio and is narrow
/// enough to tell a difference at all; else the direction and the size
/// are said. A direction alone agrees when our interval lies wholly on
/// its side of 1.
fn side_by_side(
    cell: &str,
    column: &str,
    original: Original,
    a: &[f64],
    base: &[f64],
    why: &str,
) -> Vec<String> {
    let dash = || "—".to_string();
    let (ours, interval, detect, agreement) = match compare(a, base) {
        None => (dash(), dash(), dash(), "not run in this plan".to_string()),
        Some(c) if !c.ratio.is_finite() => (
            dash(),
            dash(),
            dash(),
            "no ratio here (the baseline's mean is 0)".to_string(),
        ),
        Some(c) => {
            let ours = ratio_text(c.ratio);
            let detect = c.detectable().map_or(dash(), |d| format!("×{d:.2}"));
            let same = original.higher() == (c.ratio > 1.0);
            match (c.test, c.ci) {
                (Test::LogRatio, Some((lo, hi))) => {
                    let wide = c.detectable().is_some_and(|d| d > TOO_WIDE);
                    let agreement = match original {
                        _ if lo <= 1.0 && 1.0 <= hi => {
                            if matches!(original, Original::Ratio(x) if lo <= x && x <= hi) {
                                "consistent, but our interval holds no change too: no agreement claimed".to_string()
                            } else {
                                format!(
                                    "differs: no detectable change here, the original {}",
                                    original.text()
                                )
                            }
                        }
                        Original::Ratio(x) if lo <= x && x <= hi => {
                            if wide {
                                "consistent, but our interval is too wide to call it agreement"
                                    .to_string()
                            } else {
                                "agrees: the original's is within our interval".to_string()
                            }
                        }
                        Original::Direction(_) if same => {
                            format!(
                                "same direction ({}); the original's size not known",
                                original.direction()
                            )
                        }
                        Original::Ratio(x) if same => {
                            let size = if c.ratio.ln().abs() > x.ln().abs() {
                                "larger"
                            } else {
                                "smaller"
                            };
                            format!("same direction ({}), {size} here", original.direction())
                        }
                        _ => format!(
                            "opposite direction: {} here, {} in the original",
                            direction(c.ratio),
                            original.direction()
                        ),
                    };
                    let interval = format!("{}..{}", ratio_text(lo), ratio_text(hi));
                    (ours, interval, detect, agreement)
                }
                (Test::LogRatio, None) => (
                    ours,
                    dash(),
                    detect,
                    "too few runs for an interval".to_string(),
                ),
                (Test::Difference, _) => {
                    let agreement = if same {
                        format!(
                            "same direction ({}); no interval of a ratio (values not all above 0)",
                            original.direction()
                        )
                    } else {
                        format!(
                            "opposite direction: {} here, {} in the original; no interval of a ratio",
                            direction(c.ratio),
                            original.direction()
                        )
                    };
                    (ours, dash(), detect, agreement)
                }
            }
        }
    };
    vec![
        cell.to_string(),
        column.to_string(),
        original.text(),
        ours,
        interval,
        detect,
        agreement,
        if why.is_empty() {
            dash()
        } else {
            why.to_string()
        },
    ]
}

/// The factors the published figures name, in the study's order.
fn named_factors(p: &Published, study: &Study) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for c in p.cells.iter().chain(&p.ratios) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(original: Original, a: &[f64], base: &[f64]) -> String {
        side_by_side("", "c", original, a, base, "")[6].clone()
    }

    /// Agreement only where our interval holds the original's ratio and
    /// leaves out 1; otherwise the direction and the size.
    #[test]
    fn agreement_is_claimed_only_where_the_interval_supports_it() {
        let base = [10.0, 10.2, 9.8, 10.1, 9.9];
        let half = [5.0, 5.1, 4.9, 5.05, 4.95];
        assert!(verdict(Original::Ratio(0.5), &half, &base).starts_with("agrees"));
        assert_eq!(
            verdict(Original::Ratio(0.8), &half, &base),
            "same direction (lower), larger here"
        );
        assert_eq!(
            verdict(Original::Ratio(0.2), &half, &base),
            "same direction (lower), smaller here"
        );
        assert!(verdict(Original::Ratio(1.9), &half, &base).starts_with("opposite direction"));
        // No detectable change: the original's ratio within the interval
        // is no agreement.
        let same = [10.1, 9.9, 10.3, 9.7, 10.0];
        assert!(verdict(Original::Ratio(1.01), &same, &base).starts_with("consistent, but"));
        assert!(verdict(Original::Ratio(1.9), &same, &base).starts_with("differs"));
        // A direction alone.
        assert_eq!(
            verdict(Original::Direction(Direction::Lower), &half, &base),
            "same direction (lower); the original's size not known"
        );
        assert!(
            verdict(Original::Direction(Direction::Higher), &half, &base)
                .starts_with("opposite direction")
        );
        // Not run.
        assert_eq!(
            verdict(Original::Ratio(0.5), &[], &base),
            "not run in this plan"
        );
    }
}

//! Reports, built from the results store alone: the study's table, the
//! statistics per cell and against the baseline, the facts, and (in HTML)
//! a chart. The same function renders the report at the end of a run and
//! in `study report`, so both are the same, byte for byte. The sections
//! build one [`Document`] (`document.rs`); `render/` writes it in each
//! format.

pub mod document;
pub mod freshness;
pub mod overview;
pub mod profile;
pub mod published;
pub mod render;
pub mod sessions;
pub mod stats;
pub mod svg;
pub mod syscall_report;
pub mod widths;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::error::StudyError;
use crate::model::columns::{compile, Expr};
use crate::model::spec::{Chart, Column, Loaded, ReportSpec, Study};
use crate::report::stats::{compare, describe, sig, UNSTABLE_CV};
use crate::store::{Stored, StoredRun};

/// The formats a report is written in, each by its renderer in `render/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Html,
}

use crate::report::document::{Block, Mark};
pub(crate) use crate::report::document::{Document, Table};

pub use tracelab_chart::esc;

/// A number with `digits` decimals and thousands separators.
pub fn fmt_num(x: f64, digits: usize) -> String {
    let s = format!("{:.*}", digits, x.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), ""), |(a, b)| (a, b));
    let mut grouped = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let sign = if x < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    if frac.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{frac}")
    }
}

fn pct(x: f64) -> String {
    format!("{:+.0}%", x)
}

/// A row of a group: a level of each rows factor, and column name → the
/// values of its runs.
type Row = (Vec<String>, BTreeMap<String, Vec<f64>>);

/// One table's worth of runs: the other factors' levels fixed.
struct Group {
    /// e.g. "engine=postgres"; empty when the rows factor is the only one.
    title: String,
    /// Row (a level of each rows factor) → column name → values of its
    /// runs.
    cells: Vec<Row>,
}

/// Where a factor's level stands among its levels (for orderings that do
/// not depend on the order the runs ran in).
pub(crate) fn level_pos(study: &Study, f: &str, l: &str) -> usize {
    study
        .factors
        .iter()
        .find(|x| x.name == f)
        .and_then(|x| x.level_names().iter().position(|n| n == l))
        .unwrap_or(usize::MAX)
}

/// The runs of one table: the other factors' levels fixed, by row (a
/// level of each rows factor), in the factors' level order.
pub(crate) struct Tabled<'a> {
    /// e.g. "engine=postgres"; empty when the rows factors are the only
    /// ones.
    pub title: String,
    pub rows: Vec<(Vec<String>, Vec<&'a StoredRun>)>,
}

/// Runs by table and row, in the order of the factors' levels, so that a
/// shuffled run order gives the same report.
pub(crate) fn tabled<'a>(study: &Study, runs: &'a [StoredRun]) -> Vec<Tabled<'a>> {
    let rows_f = &study.report.rows;
    let mut out: Vec<Tabled<'a>> = Vec::new();
    let level_pos = |f: &str, l: &str| level_pos(study, f, l);
    let mut sorted: Vec<&StoredRun> = runs.iter().collect();
    sorted.sort_by_key(|r| {
        let key: Vec<usize> = r
            .cell
            .iter()
            .filter(|(f, _)| !rows_f.contains(f))
            .map(|(f, l)| level_pos(f, l))
            .collect();
        (key, r.seq)
    });
    for r in sorted {
        let title = r
            .cell
            .iter()
            .filter(|(f, _)| !rows_f.contains(f))
            .map(|(f, l)| format!("{f}={l}"))
            .collect::<Vec<_>>()
            .join(" ");
        let row: Vec<String> = rows_f
            .iter()
            .map(|rf| {
                r.cell
                    .iter()
                    .find(|(f, _)| f == rf)
                    .map(|(_, l)| l.clone())
                    .unwrap_or_default()
            })
            .collect();
        if out.last().is_none_or(|g| g.title != title) {
            out.push(Tabled {
                title: title.clone(),
                rows: Vec::new(),
            });
        }
        let Some(g) = out.last_mut() else { continue };
        match g.rows.iter_mut().find(|(l, _)| *l == row) {
            Some((_, v)) => v.push(r),
            None => g.rows.push((row, vec![r])),
        }
    }
    for g in &mut out {
        g.rows.sort_by_key(|(row, _)| {
            rows_f
                .iter()
                .zip(row)
                .map(|(f, l)| level_pos(f, l))
                .collect::<Vec<usize>>()
        });
    }
    out
}

fn groups(study: &Study, cols: &[(String, Expr)], runs: &[StoredRun]) -> Vec<Group> {
    tabled(study, runs)
        .into_iter()
        .map(|t| Group {
            title: t.title,
            cells: t
                .rows
                .into_iter()
                .map(|(level, runs)| {
                    let mut vals: BTreeMap<String, Vec<f64>> = BTreeMap::new();
                    for r in runs {
                        for (name, e) in cols {
                            if let Some(v) = e.eval(&r.values) {
                                vals.entry(name.clone()).or_default().push(v);
                            }
                        }
                    }
                    (level, vals)
                })
                .collect(),
        })
        .collect()
}

/// Why a cell of the table is to be read with care; the notes under a
/// table are grouped by cause (`grouped`), one line each, so that many
/// unstable cells on a busy machine do not drown the table.
enum Note {
    /// The runs vary by more than [`UNSTABLE_CV`]: the cell and column,
    /// the CV, and the repetitions that would hold its interval within
    /// ±10 %.
    Spread {
        at: String,
        cv: f64,
        reps: Option<usize>,
    },
    /// A run far off the others: the cell and column, which run, and the
    /// repetitions to see whether it recurs.
    Outlier {
        at: String,
        run: String,
        more: usize,
    },
    /// A value below what the quantity can be, said in full.
    Below(String),
}

/// The notes of a table, one line per cause: every cell whose runs vary,
/// then every outlier, then each value below its floor.
fn grouped(notes: Vec<Note>) -> Vec<String> {
    let mut spread = Vec::new();
    let mut reps = Some(0usize);
    let mut outliers = Vec::new();
    let mut more = 0;
    let mut lines = Vec::new();
    for n in notes {
        match n {
            Note::Spread { at, cv, reps: r } => {
                spread.push(format!("{at} at {:.0}%", cv * 100.0));
                reps = reps.zip(r).map(|(a, b)| a.max(b));
            }
            Note::Outlier { at, run, more: m } => {
                outliers.push(format!("{at}: {run}"));
                more = more.max(m);
            }
            Note::Below(text) => lines.push(text),
        }
    }
    let mut out = Vec::new();
    if !spread.is_empty() {
        let advice = match reps {
            Some(n) if n <= 30 => format!(
                "about {n} repetitions would hold their 95% intervals within ±10% (--reps {n})"
            ),
            _ => {
                "more repetitions than 30 would be needed to hold their 95% intervals within ±10%; \
                  look at what else ran on the machine"
                    .to_string()
            }
        };
        out.push(format!(
            "unstable, runs vary by more than {:.0}% (CV) in {} cell(s): {}; {advice}",
            UNSTABLE_CV * 100.0,
            spread.len(),
            spread.join(", ")
        ));
    }
    if !outliers.is_empty() {
        out.push(format!(
            "unstable, an outlier run in {} cell(s): {}; repeat with more repetitions (--reps {more}) \
             to see whether it recurs, and look at what else ran on the machine",
            outliers.len(),
            outliers.join("; ")
        ));
    }
    out.extend(lines);
    out
}

/// Why one cell of the table is to be read with care: its runs disagree
/// (a coefficient of variation above 25 %, an outlier), or a value is
/// below what the quantity can be, with how that arose. Empty when the
/// cell is sound.
fn cell_notes(cell: &str, c: &Column, e: &Expr, values: &[f64]) -> Vec<Note> {
    let Some(d) = describe(values) else {
        return Vec::new();
    };
    let dg = c.digits + 1;
    let mut notes = Vec::new();
    let at = format!("{cell}, {}", c.label);
    if c.stats && d.unstable() {
        if let Some(cv) = d.cv.filter(|cv| *cv > UNSTABLE_CV) {
            notes.push(Note::Spread {
                at: at.clone(),
                cv,
                reps: d.reps_for_ten_percent(),
            });
        }
        for &i in &d.outliers {
            let x = values[i];
            let (f, dir) = if x.abs() > d.median.abs() {
                (x / d.median, "above")
            } else {
                (d.median / x, "below")
            };
            let times = if f.is_finite() && f > 0.0 {
                format!(", {f:.1}x {dir} it")
            } else {
                String::new()
            };
            notes.push(Note::Outlier {
                at: at.clone(),
                run: format!(
                    "run {} of {} ({} against a median of {}{times})",
                    i + 1,
                    d.n,
                    fmt_num(x, dg),
                    fmt_num(d.median, dg)
                ),
                more: (d.n * 2).max(6),
            });
        }
    }
    if let Some(min) = c.min {
        let below: Vec<f64> = values.iter().copied().filter(|x| *x < min).collect();
        if !below.is_empty() {
            let floor = sig(min);
            let names: Vec<String> = e.names().iter().map(|n| format!("${n}")).collect();
            let how = if names.len() > 1 && c.expr.contains('-') {
                format!(
                    "subtracts measurements taken apart ({}), and their own errors are larger than the \
                     true difference here",
                    names.join(", ")
                )
            } else {
                format!(
                    "reads {} as measured, and the measurement itself came out below {floor}",
                    names.join(", ")
                )
            };
            notes.push(Note::Below(format!(
                "{cell}, {}: {} of {} runs below {floor} ({}), which the quantity cannot be: its \
                 expression `{}` {how}; read it as {floor} within that error",
                c.label,
                below.len(),
                d.n,
                below
                    .iter()
                    .map(|x| fmt_num(*x, dg))
                    .collect::<Vec<_>>()
                    .join(", "),
                c.expr,
            )));
        }
    }
    notes
}

pub(crate) fn mean(v: Option<&Vec<f64>>) -> Option<f64> {
    v.and_then(|v| describe(v)).map(|d| d.mean)
}

/// Renders the report of a store.
pub fn render(st: &Stored, format: Format) -> Result<String, StudyError> {
    Ok(render::render(&document(st)?, format))
}

/// The report of a store as a document, every format's.
pub fn document(st: &Stored) -> Result<Document, StudyError> {
    let loaded = Loaded::parse(
        &st.file,
        &st.text,
        None,
        crate::model::builtin::files(&st.name),
    )?;
    let study = &loaded.study;
    let spec = &study.report;
    let cols: Vec<(String, Expr)> = spec
        .columns
        .iter()
        .map(|c| {
            compile(&c.expr)
                .map(|e| (c.name.clone(), e))
                .map_err(|e| loaded.error("report.columns.expr", e.message))
        })
        .collect::<Result<_, _>>()?;
    let gs = groups(study, &cols, &st.runs);
    let mut doc = Document::default();
    doc.push(Block::Title {
        title: if study.title.is_empty() {
            study.name.clone()
        } else {
            format!("{} — {}", study.name, study.title)
        },
        subtitle: subtitle(st, study),
    });
    if !study.about.is_empty() {
        doc.push(Block::About(study.about.clone()));
    }
    crate::report::overview::sections(study, &cols, &st.runs, &mut doc);
    doc.chart(crate::report::overview::series_charts(
        study, &cols, &st.runs,
    ));
    for g in &gs {
        group_section(&mut doc, spec, &cols, g);
    }
    crate::report::syscall_report::render(study, &st.runs, &mut doc);
    // The sections a study asks for beyond its table.
    crate::report::published::section(st, study, &mut doc);
    crate::report::sessions::section(st, study, &mut doc);
    crate::report::profile::section(st, study, &mut doc);
    crate::report::freshness::section(st, study, &mut doc);
    crate::report::sessions::tallies(st, study, &mut doc);
    appendix(st, spec, study, &mut doc);
    Ok(doc)
}

/// The line under the title: how many runs, how repeated, in what order.
fn subtitle(st: &Stored, study: &Study) -> String {
    let order = match study.order {
        crate::model::spec::Order::Interleaved => "interleaved order".to_string(),
        crate::model::spec::Order::Random => format!("random order (seed {})", st.seed),
    };
    let mut subtitle = format!(
        "{} of {} runs{}, {} repetition{} per cell in {order}; values are means of the repetitions \
         (* marks a value to read with care, said under its table)",
        st.runs.len(),
        st.planned,
        if st.quick { " (--quick)" } else { "" },
        st.reps,
        if st.reps == 1 { "" } else { "s" }
    );
    subtitle.push_str(&crate::report::syscall_report::subtitle(study));
    subtitle
}

/// The report's end: column definitions, the runs' notes, the facts.
fn appendix(st: &Stored, spec: &ReportSpec, study: &Study, doc: &mut Document) {
    let defs = Table {
        head: vec!["column".into(), "label".into(), "expression".into()],
        rows: spec
            .columns
            .iter()
            .map(|c| vec![c.name.clone(), c.label.clone(), c.expr.clone()])
            .collect(),
        left: 3,
    };
    let mut notes: Vec<String> = st
        .runs
        .iter()
        .filter(|r| !r.notes.is_empty())
        .map(|r| r.notes.clone())
        .collect();
    notes.sort();
    notes.dedup();
    notes.extend(crate::report::overview::not_run(study, &st.runs));
    let facts = Table {
        head: vec!["fact".into(), "value".into()],
        rows: st
            .facts
            .iter()
            .map(|(k, v)| vec![k.clone(), v.clone()])
            .collect(),
        left: 2,
    };
    doc.heading(2, "Columns");
    doc.table_with(defs, Mark::Note, notes);
    doc.heading(2, "Machine and engine");
    doc.table(facts);
}

/// One table's worth of runs: the study's table, the cells to read with
/// care, the chart (in HTML), then the statistics.
fn group_section(doc: &mut Document, spec: &ReportSpec, cols: &[(String, Expr)], g: &Group) {
    // Each table's own: the first listed baseline level it has.
    let baseline = spec.baseline_of(g.cells.iter().map(|(l, _)| l[0].as_str()));
    let base_vals = baseline
        .as_ref()
        .and_then(|b| g.cells.iter().find(|(l, _)| &l[0] == b))
        .map(|(_, m)| m.clone());
    // The study's table.
    let mut head = spec.rows.clone();
    for c in &spec.columns {
        head.push(c.label.clone());
        if c.change && base_vals.is_some() {
            head.push("%Δ".into());
        }
    }
    let mut rows = Vec::new();
    // Cells to read with care, said under the table.
    let mut careful: Vec<Note> = Vec::new();
    for (level, vals) in &g.cells {
        let mut r = level.clone();
        let at = spec
            .rows
            .iter()
            .zip(level)
            .map(|(f, l)| format!("{f}={l}"))
            .collect::<Vec<_>>()
            .join(" ");
        for (c, (_, e)) in spec.columns.iter().zip(cols) {
            let m = mean(vals.get(&c.name));
            let notes = vals
                .get(&c.name)
                .map(|v| cell_notes(&at, c, e, v))
                .unwrap_or_default();
            let mark = if notes.is_empty() { "" } else { "*" };
            careful.extend(notes);
            r.push(m.map_or("—".into(), |x| format!("{}{mark}", fmt_num(x, c.digits))));
            if c.change {
                if let Some(b) = &base_vals {
                    r.push(match (m, mean(b.get(&c.name))) {
                        (Some(x), Some(y)) if y != 0.0 => pct((x / y - 1.0) * 100.0),
                        _ => "—".into(),
                    });
                }
            }
        }
        rows.push(r);
    }
    let careful = grouped(careful);
    let table = Table {
        head,
        rows,
        left: spec.rows.len(),
    };
    let gtitle = if g.title.is_empty() {
        "Results".to_string()
    } else {
        g.title.clone()
    };
    doc.heading(2, gtitle.as_str());
    doc.table_with(table, Mark::Star, careful);
    if let Some(ch) = spec.chart.as_ref().filter(|c| c.series.is_none()) {
        doc.chart(group_chart(spec, ch, g));
    }
    // Statistics.
    let mut head = vec![
        "column".to_string(),
        spec.rows.join(" "),
        "n".into(),
        "mean".into(),
        "median".into(),
        "sd".into(),
        "CV".into(),
        "95% CI".into(),
    ];
    if let Some(b) = &baseline {
        head.push(format!("vs {b} (95% CI)"));
        head.push(format!("vs {b}: t-test at 5%"));
    }
    let rows = stats_rows(spec, g, baseline.as_deref(), base_vals.as_ref());
    let stats = Table {
        head,
        rows,
        left: 2,
    };
    doc.heading(3, format!("Statistics ({gtitle})"));
    doc.table(stats);
}

/// The chart of a group (HTML): each point the mean of its repetitions,
/// its whisker the 95 % interval of the statistics table.
fn group_chart(spec: &ReportSpec, ch: &Chart, g: &Group) -> String {
    // Each point the mean of its repetitions, its whisker
    // the 95 % interval of the statistics table.
    let series: Vec<tracelab_chart::Series> = ch
        .lines
        .iter()
        .map(|name| {
            let col = spec.columns.iter().find(|c| &c.name == name);
            let label = col.map_or(name.clone(), |c| c.label.clone());
            let floor = col.and_then(|c| c.min);
            let points = g
                .cells
                .iter()
                .filter_map(|(l, v)| {
                    let d = describe(v.get(name)?)?;
                    let p = tracelab_chart::Point::new(l.join(" "), d.mean);
                    Some(match d.ci {
                        Some((a, b)) => p.with_interval(floor.map_or(a, |m| a.max(m)), b),
                        None => p,
                    })
                })
                .collect();
            tracelab_chart::Series { label, points }
        })
        .collect();
    let title = if g.title.is_empty() {
        ch.title.clone()
    } else {
        format!("{} ({})", ch.title, g.title)
    };
    svg::chart(
        title.trim(),
        &spec.rows.join(" "),
        &ch.y_label,
        ch.log2_x,
        &series,
    )
}

/// The statistics table's rows of a group: per column and row, the
/// spread of its runs, and against the baseline's when there is one.
fn stats_rows(
    spec: &ReportSpec,
    g: &Group,
    baseline: Option<&str>,
    base_vals: Option<&BTreeMap<String, Vec<f64>>>,
) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for c in spec.columns.iter().filter(|c| c.stats) {
        for (row, vals) in &g.cells {
            let Some(v) = vals.get(&c.name) else { continue };
            let Some(d) = describe(v) else { continue };
            let dg = c.digits + 1;
            let level = &row[0];
            let mark = if d.unstable() || c.min.is_some_and(|m| v.iter().any(|x| *x < m)) {
                "*"
            } else {
                ""
            };
            let mut r = vec![
                c.name.clone(),
                row.join(" "),
                d.n.to_string(),
                format!("{}{mark}", fmt_num(d.mean, dg)),
                fmt_num(d.median, dg),
                fmt_num(d.sd, dg),
                d.cv.map_or("—".into(), |cv| format!("{:.0}%", cv * 100.0)),
                d.ci.map_or("—".into(), |(a, b)| {
                    // A quantity with a floor: the interval stops there.
                    let a = c.min.map_or(a, |m| a.max(m));
                    format!("{} .. {}", fmt_num(a, dg), fmt_num(b, dg))
                }),
            ];
            if let Some(b) = baseline {
                let base = base_vals.and_then(|m| m.get(&c.name));
                match base.and_then(|bv| compare(v, bv)) {
                    Some(cmp) if Some(level.as_str()) != Some(b) => {
                        r.push(cmp.shown(dg));
                        r.push(cmp.verdict());
                    }
                    _ => {
                        r.push("—".into());
                        r.push(if Some(level.as_str()) == Some(b) {
                            "baseline".into()
                        } else {
                            "—".into()
                        });
                    }
                }
            }
            rows.push(r);
        }
    }
    rows
}

/// Two stores of the same study, cell by cell: B against A.
pub fn compare_stores(a: &Stored, b: &Stored) -> Result<String, StudyError> {
    let la = Loaded::parse(
        &a.file,
        &a.text,
        None,
        crate::model::builtin::files(&a.name),
    )?;
    if a.name != b.name {
        return Err(StudyError::Usage(format!(
            "cannot compare study `{}` with study `{}`",
            a.name, b.name
        )));
    }
    let spec = &la.study.report;
    let cols: Vec<(String, Expr)> = spec
        .columns
        .iter()
        .filter_map(|c| compile(&c.expr).ok().map(|e| (c.name.clone(), e)))
        .collect();
    let ga = groups(&la.study, &cols, &a.runs);
    let gb = groups(&la.study, &cols, &b.runs);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: B ({} runs) against A ({} runs), Welch's t-test per cell\n",
        a.name,
        b.runs.len(),
        a.runs.len()
    );
    let mut rows = Vec::new();
    for g in &ga {
        let Some(h) = gb.iter().find(|x| x.title == g.title) else {
            continue;
        };
        for c in spec.columns.iter().filter(|c| c.stats) {
            for (level, va) in &g.cells {
                let Some(vb) = h
                    .cells
                    .iter()
                    .find(|(l, _)| l == level)
                    .and_then(|(_, m)| m.get(&c.name))
                else {
                    continue;
                };
                let Some(xa) = va.get(&c.name) else { continue };
                let (Some(da), Some(db)) = (describe(xa), describe(vb)) else {
                    continue;
                };
                let verdict = compare(vb, xa).map_or("—".into(), |c| c.verdict());
                rows.push(vec![
                    g.title.clone(),
                    c.name.clone(),
                    level.join(" "),
                    fmt_num(da.mean, c.digits + 1),
                    fmt_num(db.mean, c.digits + 1),
                    verdict,
                ]);
            }
        }
    }
    let t = Table {
        head: vec![
            "cell".into(),
            "column".into(),
            spec.rows.join(" "),
            "A mean".into(),
            "B mean".into(),
            "B vs A".into(),
        ],
        rows,
        left: 3,
    };
    render::text::table(&t, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A study of two levels whose runs are given: `t` (a time, floor 0),
    /// `q` (a difference of two measurements, floor 0).
    fn stored(runs: &[(&str, f64, f64, f64)]) -> Stored {
        let text = r#"
name = "s"
[workload]
sql = "select 1"
[[factors]]
name = "lv"
values = ["a", "b"]
[report]
rows = "lv"
baseline = "a"
columns = [
  { name = "t", label = "time (ms)", expr = "$elapsed_ms", digits = 1, min = 0 },
  { name = "q", label = "queue (ms)", expr = "$elapsed_ms - $backend_cpu_ms", digits = 1, min = 0 },
]
"#;
        Stored {
            name: "s".into(),
            file: "s.toml".into(),
            text: text.into(),
            quick: false,
            reps: 3,
            seed: 1,
            facts: BTreeMap::new(),
            planned: runs.len(),
            runs: runs
                .iter()
                .enumerate()
                .map(|(i, (lv, e, cpu, _))| StoredRun {
                    seq: i,
                    rep: 0,
                    cell: vec![("lv".into(), lv.to_string())],
                    values: [
                        ("elapsed_ms".to_string(), *e),
                        ("backend_cpu_ms".to_string(), *cpu),
                    ]
                    .into_iter()
                    .collect(),
                    notes: String::new(),
                    strace: false,
                    syscalls: Vec::new(),
                })
                .collect(),
            session_values: Vec::new(),
            profiles: Vec::new(),
            freshness: BTreeMap::new(),
        }
    }

    /// Issue 35: ten cells of wide spread on a busy machine made ten
    /// notes that drowned the table; they are one line per cause.
    #[test]
    fn notes_of_many_unstable_cells_are_one_line_per_cause() {
        let mut runs = Vec::new();
        for lv in ["a", "b", "c", "d", "e", "f"] {
            for x in [1.0, 2.0, 3.0] {
                runs.push((lv, x, 0.1 * x, 0.0));
            }
        }
        let text = render(&stored(&runs), Format::Text).unwrap();
        let unstable: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("* unstable"))
            .collect();
        assert_eq!(unstable.len(), 1, "{text}");
        assert!(
            unstable[0].contains("in 12 cell(s): lv=a, time (ms) at 50%")
                && unstable[0].contains("lv=f, queue (ms) at 50%"),
            "{text}"
        );
    }

    /// The issue's figures: a run 10x off its cell's others passed
    /// without a word, a time's interval went below zero, queue time went
    /// below zero without a note, and the ratio's interval and the verdict
    /// came from two tests and disagreed.
    #[test]
    fn a_report_flags_unstable_cells_and_impossible_values_and_keeps_intervals_sound() {
        let st = stored(&[
            ("a", 1.0, 0.5, 0.0),
            ("a", 1.1, 0.5, 0.0),
            ("a", 0.9, 0.5, 0.0),
            ("b", 11.2, 11.3, 0.0),
            ("b", 10.6, 10.0, 0.0),
            ("b", 1.1, 0.2, 0.0),
        ]);
        let text = render(&st, Format::Text).unwrap();
        // The unstable cell is marked and explained, with advice.
        assert!(
            text.contains("unstable, an outlier run in 1 cell(s): lv=b, time (ms): run 3 of 3 (1.10 against a median of 10.60"),
            "{text}"
        );
        assert!(
            text.contains(
                "unstable, runs vary by more than 25% (CV) in 2 cell(s): lv=b, time (ms) at 74%"
            ),
            "{text}"
        );
        assert!(text.contains("--reps 6"), "{text}");
        let table_row = text.lines().find(|l| l.starts_with("b ")).unwrap();
        assert!(table_row.contains('*'), "{table_row}");
        // Queue below zero in one run: said, with how it arose.
        assert!(
            text.contains(
                "lv=b, queue (ms): 1 of 3 runs below 0 (-0.10), which the quantity cannot be"
            ) && text.contains("subtracts measurements taken apart ($elapsed_ms, $backend_cpu_ms)"),
            "{text}"
        );
        // Intervals of the times stay at or above zero.
        for l in text
            .lines()
            .filter(|l| l.starts_with("t ") || l.starts_with("q "))
        {
            let ci = l.split("  ").find(|c| c.contains(" .. ")).unwrap_or("");
            assert!(!ci.trim_start().starts_with('-'), "{l}");
        }
        // The interval shown and the verdict are one test's.
        let t_b = text
            .lines()
            .find(|l| l.starts_with("t ") && l.contains(" b "))
            .unwrap();
        let c = compare(&[11.2, 10.6, 1.1], &[1.0, 1.1, 0.9]).unwrap();
        let (lo, hi) = c.ci.unwrap();
        assert!(
            t_b.contains(&c.shown(2)) && t_b.contains(&c.verdict()),
            "{t_b}"
        );
        let v = c.verdict();
        assert_eq!(
            v.starts_with("no detectable difference") || v.starts_with("too few runs to tell"),
            (lo..=hi).contains(&1.0)
        );
    }

    #[test]
    fn numbers_group_thousands() {
        assert_eq!(fmt_num(1234567.891, 2), "1,234,567.89");
        assert_eq!(fmt_num(-0.0001, 2), "0.00");
        assert_eq!(fmt_num(-12.5, 1), "-12.5");
        assert_eq!(fmt_num(999.0, 0), "999");
    }
}

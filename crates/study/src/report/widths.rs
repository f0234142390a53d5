//! How narrow a store's comparisons are, for `study run --reps auto`: the
//! widest 95 % interval among the statistics the report shows.

use crate::error::StudyError;
use crate::model::columns::compile;
use crate::model::spec::Loaded;
use crate::report::stats::{compare, describe, Test};
use crate::report::{groups, mean};
use crate::store::Stored;

/// The widest interval of a store: how wide, in % of the quantity it is
/// around, and which comparison it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Widest {
    /// The interval's width, % of the ratio (or of the baseline's mean,
    /// for a difference; of the cell's mean where there is no baseline);
    /// infinite where a side has fewer than two runs.
    pub pct: f64,
    pub what: String,
}

/// The widest 95 % interval of every comparison the report makes (each
/// level against its table's baseline, per statistics column); with no
/// baseline, of each cell's mean. `None` when there is nothing to compare.
pub fn widest(st: &Stored) -> Result<Option<Widest>, StudyError> {
    let loaded = Loaded::parse(
        &st.file,
        &st.text,
        None,
        crate::model::builtin::files(&st.name),
    )?;
    let spec = &loaded.study.report;
    let cols: Vec<_> = spec
        .columns
        .iter()
        .filter_map(|c| compile(&c.expr).ok().map(|e| (c.name.clone(), e)))
        .collect();
    let timed: Vec<_> = st.runs.iter().filter(|r| !r.strace).cloned().collect();
    let mut out: Option<Widest> = None;
    let mut consider = |pct: f64, what: String| {
        if out.as_ref().is_none_or(|w| pct > w.pct) {
            out = Some(Widest { pct, what });
        }
    };
    for g in groups(&loaded.study, &cols, &timed) {
        let baseline = spec.baseline_of(g.cells.iter().map(|(l, _)| l[0].as_str()));
        let base = baseline
            .as_ref()
            .and_then(|b| g.cells.iter().find(|(l, _)| &l[0] == b))
            .map(|(_, m)| m);
        let table = if g.title.is_empty() {
            String::new()
        } else {
            format!(" ({})", g.title)
        };
        for c in spec.columns.iter().filter(|c| c.stats) {
            for (row, vals) in &g.cells {
                let Some(v) = vals.get(&c.name) else { continue };
                let at = row.join(" ");
                match (&baseline, base.and_then(|b| b.get(&c.name))) {
                    (Some(b), Some(bv)) => {
                        if &row[0] == b {
                            continue;
                        }
                        let what = format!("`{}`, {at} against {b}{table}", c.name);
                        let pct = match compare(v, bv) {
                            Some(cmp) => match (cmp.test, cmp.ci) {
                                (Test::LogRatio, Some((lo, hi))) => (hi - lo) / cmp.ratio * 100.0,
                                (Test::Difference, Some((lo, hi))) => mean(Some(bv))
                                    .filter(|m| *m != 0.0)
                                    .map_or(f64::INFINITY, |m| (hi - lo) / m.abs() * 100.0),
                                _ => f64::INFINITY,
                            },
                            None => f64::INFINITY,
                        };
                        consider(pct, what);
                    }
                    _ => {
                        let what = format!("`{}`, {at}{table}", c.name);
                        let pct = describe(v)
                            .and_then(|d| {
                                d.ci.filter(|_| d.mean != 0.0)
                                    .map(|(lo, hi)| (hi - lo) / d.mean.abs() * 100.0)
                            })
                            .unwrap_or(f64::INFINITY);
                        consider(pct, what);
                    }
                }
            }
        }
    }
    Ok(out)
}

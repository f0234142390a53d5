//! `tracelab study`: controlled experiments on databases. A study file
//! (TOML plus SQL) names the factors and levels, the workload (a `tracelab
//! run` specification), the measurements and the report; the runner
//! applies each level, measures, and writes every run to a SQLite results
//! store at once, from which any report can be rebuilt and two studies
//! compared.
//!
//! The crate is in layers, each importing only the layers below it (and
//! `error`, beneath them all); `tests/layers.rs` checks every `crate::`
//! path of the sources against this order:
//!
//! 1. `model`: the study file and every feature's spec type, their
//!    checks, the built-in studies, report expressions, SQL scripts.
//! 2. `plan`: the runs of a study, each cell resolved once into a typed
//!    cell (engine, levels, variables, workload).
//! 3. `store`: the results store (an SQLite file) and the rows it keeps.
//! 4. `execute` and `report`, side by side, neither importing the
//!    other: the executor runs the plan and writes the store; the report
//!    reads the store alone.
//!
//! This file, the crate's face, sits above them all.

mod error;
mod execute;
mod model;
mod plan;
mod report;
mod store;

pub use error::StudyError;
pub use execute::dry_run::dry_run;
pub use execute::{run_study, set_server_tracer, Observer, Options, Outcome};
pub use model::builtin;
pub use model::engine::{redact, ENGINES};
pub use model::load;
pub use model::script::statements;
pub use model::spec::{Loaded, Study, MAX_REPS};
pub use plan::Choice;
pub use report::stats::{compare, describe, Compare, Describe};
pub use report::{compare_stores, render, Format};
pub use store::{Store, Stored, FILE as STORE_FILE};

/// `study run --reps auto`: repetitions are added, a round of every cell
/// at a time, until the widest 95 % interval of the report's comparisons
/// is at most `target_pct` % wide, or the cell has `max_reps`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Auto {
    pub target_pct: f64,
    pub max_reps: u32,
}

impl Auto {
    /// The default target: intervals at most 10 % wide (about ±5 %).
    pub const TARGET_PCT: f64 = 10.0;
    /// The default cap of repetitions per cell.
    pub const MAX_REPS: u32 = 20;
}

/// Runs a study as [`run_study`], then adds rounds (each cell once more)
/// while its widest comparison interval is wider than `auto` asks and the
/// cap is not reached. Starts from the study's repetitions (`--reps`,
/// `quick_reps`, `reps`), at least 2, the fewest that give an interval.
/// Returns the outcome of all its runs and a line saying where it
/// stopped and why.
pub fn run_study_auto(
    given: &Loaded,
    o: &Options,
    auto: Auto,
    obs: &dyn Observer,
) -> Result<(Outcome, String), StudyError> {
    let s = &given.study;
    let first = o
        .choice
        .reps
        .or(if o.choice.quick { s.quick_reps } else { None })
        .unwrap_or(s.reps)
        .clamp(2, auto.max_reps.max(2));
    let mut opts = o.clone();
    if !o.resume {
        opts.choice.reps = Some(first);
    }
    let mut total = run_study(given, &opts, obs)?;
    // Later rounds go on from the store (its vars among its facts).
    opts.resume = true;
    opts.choice.vars.clear();
    loop {
        if total.interrupted {
            return Ok((total, "--reps auto: interrupted".into()));
        }
        let st = Store::open(&o.out, false)?.load()?;
        let widest = report::widths::widest(&st)?;
        let said = |w: &report::widths::Widest| {
            if w.pct.is_finite() {
                format!("{:.1} %, {}", w.pct, w.what)
            } else {
                format!("no interval yet, {}", w.what)
            }
        };
        let Some(w) = widest.clone().filter(|w| w.pct > auto.target_pct) else {
            let how = widest
                .as_ref()
                .map_or("nothing to compare".to_string(), |w| {
                    format!("widest {}", said(w))
                });
            return Ok((
                total,
                format!(
                    "--reps auto: {} repetitions; every 95 % interval is within {} % ({how})",
                    st.reps, auto.target_pct
                ),
            ));
        };
        if st.reps >= auto.max_reps {
            return Ok((
                total,
                format!(
                    "--reps auto: stopped at the cap of {} repetitions with an interval wider than {} % (widest {})",
                    auto.max_reps,
                    auto.target_pct,
                    said(&w)
                ),
            ));
        }
        {
            let _lock = store::StoreLock::take(&o.out)?;
            Store::open(&o.out, false)?.add_round()?;
        }
        let more = run_study(given, &opts, obs)?;
        total.ran += more.ran;
        total.interrupted = more.interrupted;
    }
}

/// The report of the store in `dir`.
pub fn report_dir(dir: &std::path::Path, format: Format) -> Result<String, StudyError> {
    render(&Store::open(dir, false)?.load()?, format)
}

/// The report of the store in `dir` laid out by `study`'s `[report]` (and
/// its title, about and freshness words): layout edits without running
/// again. Refused, naming the difference, when `study` is not the stored
/// study with the same factors, levels, workload and measurements (the
/// rule of `--resume` with a changed file, `model/revision.rs`). Returns
/// the report and the parts that differ.
pub fn report_dir_as(
    dir: &std::path::Path,
    study: &Loaded,
    format: Format,
) -> Result<(String, Vec<&'static str>), StudyError> {
    let store = Store::open(dir, false)?;
    let mut st = store.load()?;
    let refuse = |why: String| {
        StudyError::Usage(format!(
            "{}: not a layout of the study stored in {}: {why}",
            study.file,
            store.path().display()
        ))
    };
    if study.study.name != st.name {
        return Err(refuse(format!(
            "it is study `{}`, the store holds `{}`",
            study.study.name, st.name
        )));
    }
    let stored = Loaded::parse(&st.file, &st.text, None, model::builtin::files(&st.name))?;
    let planned: Vec<Vec<(String, String)>> = store.plan()?.into_iter().map(|p| p.cell).collect();
    let done: Vec<Vec<(String, String)>> = st.runs.iter().map(|r| r.cell.clone()).collect();
    let changed =
        model::revision::revise(&stored.study, &study.study, &planned, &done).map_err(refuse)?;
    st.file = study.file.clone();
    st.text = study.text.clone();
    Ok((render(&st, format)?, changed))
}

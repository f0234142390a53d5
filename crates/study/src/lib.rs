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
pub use model::spec::{Loaded, Study};
pub use plan::Choice;
pub use report::stats::{compare, describe, Compare, Describe};
pub use report::{compare_stores, render, Format};
pub use store::{Store, Stored, FILE as STORE_FILE};

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

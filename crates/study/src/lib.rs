//! `tracelab study`: controlled experiments on databases. A study file
//! (TOML plus SQL) names the factors and levels, the workload (a `tracelab
//! run` specification), the measurements and the report; the runner
//! applies each level, measures, and writes every run to a SQLite results
//! store at once, from which any report can be rebuilt and two studies
//! compared.

pub mod builtin;
mod changes;
mod columns;
mod dry_run;
mod engine;
mod error;
mod execute;
mod freshness;
mod mariadb;
mod measure;
mod names;
mod overview;
mod plan;
mod profile;
mod proxy;
mod published;
mod report;
mod result_cache;
mod script;
mod server_counters;
mod sessions;
mod spec;
mod stats;
mod store;
mod svg;
mod syscall_report;

pub use dry_run::dry_run;
pub use engine::{redact, ENGINES};
pub use error::StudyError;
pub use execute::{run_study, set_server_tracer, Observer, Options, Outcome};
pub use plan::Choice;
pub use report::{compare_stores, render, Format};
pub use script::statements;
pub use spec::{Loaded, Study};
pub use stats::{compare, describe, Compare, Describe};
pub use store::{Store, Stored, FILE as STORE_FILE};

/// A study by built-in name or file path.
pub fn load(name_or_file: &str) -> Result<Loaded, StudyError> {
    if let Some(t) = builtin::text(name_or_file) {
        return Loaded::parse(
            &format!("{name_or_file}.toml (built in)"),
            t,
            None,
            builtin::files(name_or_file),
        );
    }
    let p = std::path::Path::new(name_or_file);
    if p.is_file() {
        return Loaded::from_path(p);
    }
    Err(StudyError::NoStudy(name_or_file.to_string()))
}

/// The report of the store in `dir`.
pub fn report_dir(dir: &std::path::Path, format: Format) -> Result<String, StudyError> {
    render(&Store::open(dir, false)?.load()?, format)
}

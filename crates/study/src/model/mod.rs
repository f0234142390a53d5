//! The model: the study file and every feature's part of it (the types a
//! study file reads into, their checks before anything runs), the
//! built-in studies, report expressions, the SQL scripts' statements, and
//! the names a study's runs will produce. It imports no other layer.

pub mod builtin;
pub mod changes;
pub mod columns;
pub mod engine;
pub mod freshness;
pub mod names;
pub mod outside;
pub mod profiles;
pub mod proxy;
pub mod published;
pub mod result_cache;
pub mod revision;
pub mod run_options;
pub mod script;
pub mod sessions;
pub mod spec;

use crate::error::StudyError;
use spec::Loaded;

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

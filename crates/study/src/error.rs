//! Why a study could not be read, planned, run or reported.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// The study file (or one of its SQL files) is wrong: where and what.
    #[error("{file}:{line}: key `{key}`: {what}")]
    File {
        file: String,
        line: usize,
        key: String,
        what: String,
    },
    /// No built-in study of this name and no such file.
    #[error("no study `{0}`: neither a built-in study (see `tracelab study list`) nor a file")]
    NoStudy(String),
    /// The engines the study needs are not all here; nothing was run.
    #[error("the study cannot run here; nothing was run:\n{}", .0.join("\n"))]
    Requirements(Vec<String>),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("results store {path}: {what}")]
    Store { path: PathBuf, what: String },
    /// Another `study run` holds the results store (its lock file): two
    /// runs at once would each be measured under the other's load.
    #[error(
        "results store {path} is in use by another `tracelab study run` ({holder}); \
         nothing was run: wait for it to end (or stop it), then run again"
    )]
    Busy { path: PathBuf, holder: String },
    #[error("database: {0}")]
    Database(String),
    #[error(transparent)]
    Server(#[from] tracelab_db::DbError),
    #[error("{0}")]
    Usage(String),
}

pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> StudyError {
    let path = path.into();
    move |source| StudyError::Io { path, source }
}

/// An engine's error with its detail (message and code), never with the
/// URL.
pub(crate) fn admin_error(what: &str, e: tracelab_engine::AdminError) -> StudyError {
    StudyError::Database(format!("{what}: {}", e.detail()))
}

//! What can stop an export.

use std::path::Path;

use tracelab_skew::SkewError;

/// Errors that stop `tracelab calls`. Damaged lines and unreadable
/// inputs are not errors: they are reported per file and the other files
/// are still exported.
#[derive(Debug, thiserror::Error)]
pub enum CallsError {
    /// A bad option (the filter's expressions and `--name` included).
    #[error(transparent)]
    Filter(#[from] SkewError),
    #[error("{0}")]
    Usage(String),
    /// An output file or directory could not be written.
    #[error("cannot write {path}: {message}")]
    Write { path: String, message: String },
}

impl CallsError {
    pub(crate) fn write(path: &Path, e: &dyn std::fmt::Display) -> CallsError {
        CallsError::Write {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }
}

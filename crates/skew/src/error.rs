//! What can stop a profile before it prints anything.

use tracelab_query::QueryError;

/// Errors of `tracelab skew` that leave no report. Damaged lines and
/// unreadable files are not errors: they are reported per file and the
/// others are still profiled.
#[derive(Debug, thiserror::Error)]
pub enum SkewError {
    /// A bad option value.
    #[error("{0}")]
    Usage(String),
    /// The question itself: an expression, `--name`, `--buckets`, no input.
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error("{file}:{line}: {message}")]
    Rc {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{0}")]
    InitRefused(String),
}

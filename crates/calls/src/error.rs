//! What can stop an export.

use std::path::Path;

use tracelab_query::QueryError;

/// Errors that stop `tracelab calls`. Damaged lines and unreadable
/// inputs are not errors: they are reported per file and the other files
/// are still exported.
#[derive(Debug, thiserror::Error)]
pub enum CallsError {
    /// A bad option (`--name` and the filter's options included).
    #[error("{0}")]
    Usage(String),
    /// A filter's expression (`--where`, `--where1`) does not compile.
    #[error("error in the {option} expression: {error}")]
    Expression {
        option: String,
        error: tracelab_expr::CompileError,
    },
    #[error("no trace files named (use - for standard input)")]
    NoInput,
    /// An output file or directory could not be written.
    #[error("cannot write {path}: {message}")]
    Write { path: String, message: String },
}

/// The filter is compiled by the query engine: its refusals are the
/// export's usage errors, with the engine's words.
impl From<QueryError> for CallsError {
    fn from(e: QueryError) -> CallsError {
        match e {
            QueryError::Usage(m) => CallsError::Usage(m),
            QueryError::Expression { option, error } => CallsError::Expression { option, error },
            QueryError::NoInput => CallsError::NoInput,
        }
    }
}

impl CallsError {
    pub(crate) fn write(path: &Path, e: &dyn std::fmt::Display) -> CallsError {
        CallsError::Write {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }
}

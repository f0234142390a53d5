//! What can stop a profile before it prints anything.

/// Errors of `tracelab skew` that leave no report. Damaged lines and
/// unreadable files are not errors: they are reported per file and the
/// others are still profiled.
#[derive(Debug, thiserror::Error)]
pub enum SkewError {
    /// A bad option value.
    #[error("{0}")]
    Usage(String),
    #[error("error in the {option} expression: {error}")]
    Expression {
        option: String,
        error: tracelab_expr::CompileError,
    },
    #[error("{file}:{line}: {message}")]
    Rc {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{0}")]
    InitRefused(String),
    #[error("no trace files named (use - for standard input)")]
    NoInput,
}

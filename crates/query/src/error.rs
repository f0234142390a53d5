//! What can stop a question before any call is read.

/// A question that cannot be asked: a bad option value, an expression
/// that does not compile, no input. Damaged lines and unreadable files
/// are not errors: they are reported per file and the others are still
/// read.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// A bad option value.
    #[error("{0}")]
    Usage(String),
    #[error("error in the {option} expression: {error}")]
    Expression {
        option: String,
        error: tracelab_expr::CompileError,
    },
    #[error("no trace files named (use - for standard input)")]
    NoInput,
}

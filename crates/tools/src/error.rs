//! What can go wrong in the utilities; the binary maps each to a message
//! and an exit status.

use tracelab_trace::{OpenError, ReadError};

#[derive(Debug, thiserror::Error)]
pub enum ToolsError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The output could not be written (a closed pipe is one: the caller
    /// ends quietly on it).
    #[error("cannot write {what}: {source}")]
    Write {
        what: String,
        source: std::io::Error,
    },
    /// A value on the command line that is not what was expected.
    #[error("{0}")]
    Usage(String),
    /// A directory could not be listed.
    #[error("{path}: cannot list the directory: {source}")]
    Dir {
        path: String,
        source: std::io::Error,
    },
}

impl ToolsError {
    /// Whether the reader of the output went away (`| head`): not an
    /// error of the command.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, ToolsError::Write { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

pub(crate) fn write_err(what: &str) -> impl Fn(std::io::Error) -> ToolsError + '_ {
    move |source| ToolsError::Write {
        what: what.to_string(),
        source,
    }
}

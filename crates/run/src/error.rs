//! What stops a run before it starts.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {what}")]
    Binds {
        path: PathBuf,
        line: u64,
        what: String,
    },
    #[error("{0}")]
    Usage(String),
}

impl From<tracelab_engine::EngineError> for RunError {
    fn from(e: tracelab_engine::EngineError) -> Self {
        match e {
            tracelab_engine::EngineError::Usage(m) => RunError::Usage(m),
        }
    }
}

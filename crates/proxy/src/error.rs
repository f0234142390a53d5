//! What can stop the proxy as a whole. Trouble on one connection is
//! logged and ends that connection only.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// A bad option value.
    #[error("{0}")]
    Config(String),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("trace directory {}: {source}", path.display())]
    TraceDir {
        path: PathBuf,
        source: std::io::Error,
    },
}

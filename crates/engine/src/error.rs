//! What the engine layer refuses before anything is sent.

/// A URL or setting the engine layer cannot use; the message names it
/// (password hidden) and says what was expected.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Usage(String),
}

//! The two error types: [`CompileError`] (the expression is wrong, reported
//! once, with a caret under the spot) and [`EvalError`] (a record made a
//! valid expression fail, e.g. a division by zero).
//!
//! `Display` is written by hand rather than with a `thiserror` format string
//! so that a multi-line expression (rc files allow them) shows only the line
//! holding the error, with the caret under the right column.

use std::fmt;

/// A compile error: the expression, a position in it and what was expected.
/// `Display` prints the expression with a caret under the position.
#[derive(Debug, Clone, PartialEq)]
pub struct CompileError {
    /// What went wrong, e.g. "expected ')' to close '(' opened at column 5".
    pub message: String,
    /// The expression as given.
    pub source_text: String,
    /// Byte offset of the error in `source_text`.
    pub position: usize,
    caret: String,
}

impl CompileError {
    /// Builds an error at byte offset `position` of `source` (clamped to the
    /// text and moved back to a character boundary, so that any offset is safe).
    pub(crate) fn new(message: impl Into<String>, source: &str, position: usize) -> CompileError {
        let mut position = position.min(source.len());
        while !source.is_char_boundary(position) {
            position -= 1;
        }
        let line_start = source[..position].rfind('\n').map_or(0, |i| i + 1);
        let caret = source[line_start..position]
            .chars()
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        CompileError {
            message: message.into(),
            source_text: source.to_string(),
            position,
            caret,
        }
    }

    /// The 1-based character column of the error on its line.
    pub fn column(&self) -> usize {
        self.caret.chars().count() + 1
    }

    /// The line of the source that holds the error.
    fn error_line(&self) -> &str {
        let pos = self.position.min(self.source_text.len());
        let start = self.source_text[..pos].rfind('\n').map_or(0, |i| i + 1);
        let end = self.source_text[pos..]
            .find('\n')
            .map_or(self.source_text.len(), |i| pos + i);
        &self.source_text[start..end]
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\n  {}\n  {}^",
            self.message,
            self.error_line(),
            self.caret
        )
    }
}

impl std::error::Error for CompileError {}

/// An evaluation error (e.g. "Illegal division by zero").
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct EvalError {
    pub message: String,
}

impl EvalError {
    pub(crate) fn new(message: impl Into<String>) -> EvalError {
        EvalError {
            message: message.into(),
        }
    }
}

/// 1-based character column of byte offset `pos` in `src`, for messages such
/// as "'(' opened at column 5".
pub(crate) fn column_of(src: &str, pos: usize) -> usize {
    let mut pos = pos.min(src.len());
    while !src.is_char_boundary(pos) {
        pos -= 1;
    }
    let line_start = src[..pos].rfind('\n').map_or(0, |i| i + 1);
    src[line_start..pos].chars().count() + 1
}

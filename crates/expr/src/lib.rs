//! A compiled subset of Perl expressions, enough for the `--where`, `--group`,
//! `--group-label` and `--select` expressions mrskew users write.
//!
//! Why hand-written: mrskew's expressions are Perl, and no crate evaluates a
//! Perl expression subset with Perl's scalar semantics (numeric/string
//! duality, undef, `%.15g` number formatting, `sprintf`, `x`, `q{}`/`qq{}`).
//!
//! Use: [`Program::compile`] once per expression with a [`Scope`] that names
//! the variables the host offers, then [`Program::eval`] per record with a
//! [`Vars`] that reads them. Compilation resolves every variable to a
//! [`VarId`], so evaluation does no name look-ups.

use std::borrow::Cow;

/// A Perl scalar value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Undef,
    Num(f64),
    Str(Cow<'a, str>),
}

/// Index of a host variable, handed out by the host's [`Scope`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VarId(pub u16);

/// Names the variables a host offers, at compile time.
pub trait Scope {
    /// `$name` (without the sigil) → id, or `None` if unknown.
    fn scalar(&self, name: &str) -> Option<VarId>;
    /// `@name` (without the sigil) → id, or `None` if unknown.
    fn array(&self, name: &str) -> Option<VarId>;
}

/// Reads the host's variables for one record, at evaluation time.
pub trait Vars {
    fn scalar(&self, id: VarId) -> Value<'_>;
    fn array(&self, id: VarId) -> Vec<Value<'_>>;
}

/// A compiled expression. Cheap to clone; `Send + Sync` so that worker
/// threads can share or clone it.
#[derive(Debug, Clone)]
pub struct Program {
    source: String,
}

impl Program {
    /// Compiles `src`. Unknown variables, unsupported Perl (subs, `my`,
    /// assignment, `BEGIN`/`END`, `s///`), and syntax errors are errors that
    /// point at the offending position.
    pub fn compile(src: &str, scope: &dyn Scope) -> Result<Program, CompileError> {
        let _ = scope;
        Ok(Program {
            source: src.to_string(),
        })
    }

    /// The text the program was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The value, when the program does not depend on any variable
    /// (e.g. `1`, `"FILE"`); lets the host skip evaluating it per record.
    pub fn constant(&self) -> Option<Value<'static>> {
        todo!()
    }

    /// Every host variable (scalar or array) the program reads, so the
    /// host can skip computing the others.
    pub fn variables(&self) -> Vec<VarId> {
        todo!()
    }

    /// Evaluates in Perl scalar context.
    pub fn eval<'a>(&'a self, vars: &'a dyn Vars) -> Result<Value<'a>, EvalError> {
        let _ = vars;
        todo!()
    }

    /// Evaluates and takes Perl truth (undef, "", "0" and 0 are false).
    pub fn eval_bool(&self, vars: &dyn Vars) -> Result<bool, EvalError> {
        let _ = vars;
        todo!()
    }

    /// Evaluates and numifies the result the way Perl does.
    pub fn eval_num(&self, vars: &dyn Vars) -> Result<f64, EvalError> {
        let _ = vars;
        todo!()
    }
}

/// A compile error: the expression, a position in it and what was expected.
/// `Display` prints the expression with a caret under the position.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}\n  {source_text}\n  {caret}^")]
pub struct CompileError {
    /// What went wrong, e.g. "expected ')' to close '(' opened at column 5".
    pub message: String,
    /// The expression as given.
    pub source_text: String,
    /// Byte offset of the error in `source_text`.
    pub position: usize,
    caret: String,
}

/// An evaluation error (e.g. "Illegal division by zero").
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct EvalError {
    pub message: String,
}

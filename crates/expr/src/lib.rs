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
//!
//! Modules: `lexer` and `parser` (with `interpolate` for strings and
//! patterns) build the tree of `ast`, which `ast::eval` (and `ast::call` for
//! the built-ins) evaluates and `ast::fold` simplifies at compile time;
//! `value` holds Perl's scalar conversions, `number_format` its number
//! printing, `sprintf` its `sprintf`, `functions` the other built-ins,
//! `perl_regex` the translation of Perl patterns for the `regex` crate and
//! `pattern` their compiled forms and `split`; `error` the two error types.
//!
//! Supported: numbers (`1_000`, `0x1f`, `017`, `0b101`, `1e-6`), strings
//! (`'…'`, `"…"`, `q{}`, `qq{}`, `qw()`), interpolation (`$x`, `${x}`,
//! `$x[i]`, `$#x`, `@x`, `@x[i, j]`, `$1`, escapes, `\U \L \u \l \Q \E`),
//! `$name`, `@name`, `$name[i]`, `$#name`, `$1`…, `undef`, every operator of
//! perlop except assignment, `..`, `->` and `++`/`--` (including chained
//! comparisons and the string forms of `~ & | ^`), `=~`/`!~` with
//! `/…/imsxn`, `m{}`, `qr//` or a string as the pattern, list context
//! (`split`, list slices, matches returning their groups), and the functions
//! `lc uc lcfirst ucfirst length substr index rindex sprintf join split int
//! abs sqrt log exp sin cos atan2 hex oct ord chr defined scalar quotemeta
//! reverse basename dirname fileparse`. Assignment, declarations, subs,
//! blocks, statements, hashes, references, `s///`/`tr///` and the regex
//! features the `regex` crate lacks (backreferences, lookaround) are compile
//! errors that say so.
//!
//! Known differences from perl: values are `f64`, so integers past 2^53 lose
//! precision (results of the bit operators past 1e15 are returned as their
//! exact digits); strings are Unicode, so `length`, `substr` and `sprintf`
//! widths count characters and `lc`/`\w` follow Unicode; special
//! punctuation variables (`$/`, `$,`, `$&`…) are not available and `$`
//! followed by punctuation in a string is literal; `$1` is read when it is
//! evaluated, not when the enclosing call runs.

use std::sync::Arc;

mod ast;
mod error;
mod fast;
mod functions;
mod interpolate;
mod lexer;
mod number_format;
mod parser;
mod pattern;
mod perl_regex;
mod sprintf;
mod value;

use std::borrow::Cow;

pub use error::{CompileError, EvalError};
pub use value::{perl_number_to_string, perl_str_to_num};

use ast::eval::Ctx;
use ast::fold::NoVars;
use ast::Node;
use fast::Fast;

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
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    source: String,
    root: Node,
    variables: Vec<VarId>,
    constant: Option<Value<'static>>,
    /// The program reads `$1`…, so matches must record their groups.
    want_caps: bool,
    /// The program's form when it takes a path around the tree.
    fast: Option<Fast>,
}

/// Collects the variables a tree reads and whether it reads `$1`….
fn scan(node: &Node, vars: &mut Vec<VarId>, caps: &mut bool) {
    match node {
        Node::Scalar(id) | Node::Array(id) | Node::ArrayLast(id) | Node::Elem(id, _)
            if !vars.contains(id) =>
        {
            vars.push(*id);
        }
        Node::Capture(_) => *caps = true,
        _ => {}
    }
    node.for_each_child(&mut |c| scan(c, vars, caps));
}

impl Program {
    /// Compiles `src`. Unknown variables, unsupported Perl (subs, `my`,
    /// assignment, `BEGIN`/`END`, `s///`), and syntax errors are errors that
    /// point at the offending position.
    pub fn compile(src: &str, scope: &dyn Scope) -> Result<Program, CompileError> {
        let root = parser::Parser::parse_program(src, scope)?;
        let mut variables = Vec::new();
        let mut want_caps = false;
        scan(&root, &mut variables, &mut want_caps);
        let constant = match &root {
            Node::Const(v) => Some(v.clone()),
            _ if variables.is_empty() => {
                let mut cx = Ctx::new(&NoVars, want_caps);
                root.eval(&mut cx).ok().map(Value::into_owned)
            }
            _ => None,
        };
        let fast = if constant.is_none() {
            Fast::of(&root)
        } else {
            None
        };
        Ok(Program {
            inner: Arc::new(Inner {
                fast,
                source: src.to_string(),
                root,
                variables,
                constant,
                want_caps,
            }),
        })
    }

    /// The text the program was compiled from.
    pub fn source(&self) -> &str {
        &self.inner.source
    }

    /// The value, when the program does not depend on any variable
    /// (e.g. `1`, `"FILE"`); lets the host skip evaluating it per record.
    pub fn constant(&self) -> Option<Value<'static>> {
        self.inner.constant.clone()
    }

    /// Every host variable (scalar or array) the program reads, so the
    /// host can skip computing the others.
    pub fn variables(&self) -> Vec<VarId> {
        self.inner.variables.clone()
    }

    /// Evaluates in Perl scalar context.
    pub fn eval<'a>(&'a self, vars: &'a dyn Vars) -> Result<Value<'a>, EvalError> {
        if let Some(v) = &self.inner.constant {
            return Ok(v.reborrow());
        }
        match &self.inner.fast {
            Some(Fast::Scalar(id)) => return Ok(vars.scalar(*id)),
            Some(Fast::Test(t)) => return Ok(t.value(vars)),
            None => {}
        }
        let mut cx = Ctx::new(vars, self.inner.want_caps);
        self.inner.root.eval(&mut cx)
    }

    /// Evaluates and takes Perl truth (undef, "", "0" and 0 are false).
    pub fn eval_bool(&self, vars: &dyn Vars) -> Result<bool, EvalError> {
        if let Some(v) = &self.inner.constant {
            return Ok(v.truthy());
        }
        match &self.inner.fast {
            Some(Fast::Scalar(id)) => return Ok(vars.scalar(*id).truthy()),
            Some(Fast::Test(t)) => return Ok(t.holds(vars)),
            None => {}
        }
        let mut cx = Ctx::new(vars, self.inner.want_caps);
        self.inner.root.eval_bool(&mut cx)
    }

    /// Evaluates and numifies the result the way Perl does.
    pub fn eval_num(&self, vars: &dyn Vars) -> Result<f64, EvalError> {
        if let Some(v) = &self.inner.constant {
            return Ok(v.to_num());
        }
        match &self.inner.fast {
            Some(Fast::Scalar(id)) => return Ok(vars.scalar(*id).to_num()),
            Some(Fast::Test(t)) => return Ok(t.value(vars).to_num()),
            None => {}
        }
        let mut cx = Ctx::new(vars, self.inner.want_caps);
        self.inner.root.eval_num(&mut cx)
    }
}

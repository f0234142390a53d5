//! Parser: tokens → [`Node`] tree, with Perl's precedence and associativity.
//!
//! Precedence climbing over perlop's table (lowest first):
//! `or xor` · `and` · `not` · list operators · `,` · `= += …` (rejected) ·
//! `?:` · `..` (rejected) · `|| //` · `&&` · `| ^` · `&` ·
//! `== != <=> eq ne cmp` · `< > <= >= lt gt le ge` · named unary operators ·
//! `<< >>` · `+ - .` · `* / % x` · `=~ !~` · `! ~ \ unary+ unary-` · `**`.
//!
//! While parsing it resolves variables through the host's [`Scope`],
//! compiles constant regexes and folds constants, so that every error —
//! unknown variable, bad regex, unsupported Perl — is a [`CompileError`]
//! pointing at the spot. Recursion and tree depth are bounded
//! ([`MAX_DEPTH`]) so that no input can overflow the stack, here or when the
//! tree is evaluated or dropped.

use std::borrow::Cow;

use crate::ast::fold::fold;
use crate::ast::{CmpOp, Logic, Node, NumOp};
use crate::error::{column_of, CompileError};
use crate::functions::{self, Syntax};
use crate::lexer::{Lexer, Op, Span, Tok, Token};
use crate::pattern::{Pattern, SplitPattern};
use crate::perl_regex::{self, Flags};
use crate::{Scope, Value};

/// Deepest nesting accepted, in tree levels and in parser recursion.
pub(crate) const MAX_DEPTH: usize = 256;

pub(crate) const NOT_SUPPORTED: &str = "is not supported by tracelab's expression language";

const P_OR: u8 = 1;
const P_AND: u8 = 2;
const P_NOT: u8 = 3;
const P_COMMA: u8 = 5;
const P_ASSIGN: u8 = 6;
const P_COND: u8 = 7;
const P_RANGE: u8 = 8;
const P_OROR: u8 = 9;
const P_ANDAND: u8 = 10;
const P_BITOR: u8 = 11;
const P_BITAND: u8 = 12;
const P_EQ: u8 = 13;
const P_REL: u8 = 14;
const P_UNI: u8 = 15;
const P_SHIFT: u8 = 16;
const P_ADD: u8 = 17;
const P_MUL: u8 = 18;
const P_BIND: u8 = 19;

/// A parsed sub-expression.
pub(crate) struct Expr {
    pub node: Node,
    /// Height of the tree under `node`.
    pub depth: usize,
    /// Where it starts in the source.
    pub pos: usize,
    /// Written in parentheses (or `qw`): makes `x` a list repetition.
    pub parens: bool,
}

impl Expr {
    pub(crate) fn leaf(node: Node, pos: usize) -> Expr {
        Expr {
            node,
            depth: 1,
            pos,
            parens: false,
        }
    }
}

#[derive(Clone, Copy)]
enum Bin {
    Comma,
    Assign,
    Cond,
    Range,
    Logic(Logic),
    Xor,
    Num(NumOp),
    Concat,
    Repeat,
    Compare,
    Bind(bool),
}

fn binop(tok: &Tok) -> Option<(u8, Bin)> {
    let op = match tok {
        Tok::Op(op) => *op,
        Tok::Assign(_) => return Some((P_ASSIGN, Bin::Assign)),
        _ => return None,
    };
    Some(match op {
        Op::WordOr => (P_OR, Bin::Logic(Logic::Or)),
        Op::WordXor => (P_OR, Bin::Xor),
        Op::WordAnd => (P_AND, Bin::Logic(Logic::And)),
        Op::Comma | Op::FatComma => (P_COMMA, Bin::Comma),
        Op::Question => (P_COND, Bin::Cond),
        Op::Range => (P_RANGE, Bin::Range),
        Op::OrOr => (P_OROR, Bin::Logic(Logic::Or)),
        Op::DefinedOr => (P_OROR, Bin::Logic(Logic::Dor)),
        Op::AndAnd => (P_ANDAND, Bin::Logic(Logic::And)),
        Op::BitOr => (P_BITOR, Bin::Num(NumOp::BitOr)),
        Op::BitXor => (P_BITOR, Bin::Num(NumOp::BitXor)),
        Op::BitAnd => (P_BITAND, Bin::Num(NumOp::BitAnd)),
        Op::NumEq | Op::NumNe | Op::Spaceship | Op::StrEq | Op::StrNe | Op::StrCmp => {
            (P_EQ, Bin::Compare)
        }
        Op::Lt | Op::Gt | Op::Le | Op::Ge | Op::StrLt | Op::StrGt | Op::StrLe | Op::StrGe => {
            (P_REL, Bin::Compare)
        }
        Op::Shl => (P_SHIFT, Bin::Num(NumOp::Shl)),
        Op::Shr => (P_SHIFT, Bin::Num(NumOp::Shr)),
        Op::Plus => (P_ADD, Bin::Num(NumOp::Add)),
        Op::Minus => (P_ADD, Bin::Num(NumOp::Sub)),
        Op::Dot => (P_ADD, Bin::Concat),
        Op::Star => (P_MUL, Bin::Num(NumOp::Mul)),
        Op::Slash => (P_MUL, Bin::Num(NumOp::Div)),
        Op::Percent => (P_MUL, Bin::Num(NumOp::Mod)),
        Op::Repeat => (P_MUL, Bin::Repeat),
        Op::Bind => (P_BIND, Bin::Bind(false)),
        Op::NotBind => (P_BIND, Bin::Bind(true)),
        _ => return None,
    })
}

fn cmp_op(op: Op) -> Option<CmpOp> {
    Some(match op {
        Op::Lt => CmpOp::NumLt,
        Op::Gt => CmpOp::NumGt,
        Op::Le => CmpOp::NumLe,
        Op::Ge => CmpOp::NumGe,
        Op::NumEq => CmpOp::NumEq,
        Op::NumNe => CmpOp::NumNe,
        Op::Spaceship => CmpOp::NumCmp,
        Op::StrLt => CmpOp::StrLt,
        Op::StrGt => CmpOp::StrGt,
        Op::StrLe => CmpOp::StrLe,
        Op::StrGe => CmpOp::StrGe,
        Op::StrEq => CmpOp::StrEq,
        Op::StrNe => CmpOp::StrNe,
        Op::StrCmp => CmpOp::StrCmp,
        _ => return None,
    })
}

/// How a token reads in an error message.
pub(crate) fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Num(n) => format!("the number {}", crate::value::perl_number_to_string(*n)),
        Tok::Str(_) | Tok::Interp { .. } | Tok::Qw(_) => "a string".into(),
        Tok::Pattern { .. } => "a pattern".into(),
        Tok::Scalar(n) => format!("${n}"),
        Tok::Array(n) => format!("@{n}"),
        Tok::ArrayLast(n) => format!("$#{n}"),
        Tok::Capture(n) => format!("${n}"),
        Tok::Ident(w) => format!("'{w}'"),
        Tok::Op(op) => format!("'{}'", op.text()),
        Tok::Assign(a) => format!("'{a}'"),
        Tok::Eof => "the end of the expression".into(),
    }
}

pub(crate) struct Parser<'s> {
    pub(crate) src: &'s str,
    lex: Lexer<'s>,
    peeked: Option<Token>,
    pub(crate) scope: &'s dyn Scope,
    nesting: usize,
}

impl<'s> Parser<'s> {
    /// Parses a whole expression.
    pub(crate) fn parse_program(src: &'s str, scope: &'s dyn Scope) -> Result<Node, CompileError> {
        let mut p = Parser {
            src,
            lex: Lexer::new(src, 0, src.len()),
            peeked: None,
            scope,
            nesting: 0,
        };
        if p.peek()?.tok == Tok::Eof {
            return Err(p.err("empty expression", 0));
        }
        let e = p.parse_binary(P_OR)?;
        let t = p.next()?;
        match t.tok {
            Tok::Eof => {}
            Tok::Op(Op::Semi) => {
                let after = p.next()?;
                if after.tok != Tok::Eof {
                    return Err(p.err(
                        "several statements separated by ';' are not supported: tracelab's expression language evaluates one expression",
                        t.start,
                    ));
                }
            }
            other => return Err(p.unexpected(&other, t.start)),
        }
        Ok(e.node)
    }

    pub(crate) fn err(&self, msg: impl Into<String>, pos: usize) -> CompileError {
        CompileError::new(msg, self.src, pos)
    }

    fn unexpected(&self, tok: &Tok, pos: usize) -> CompileError {
        let msg = match tok {
            Tok::Op(Op::RParen) => "unmatched ')'".to_string(),
            Tok::Op(Op::RBracket) => "unmatched ']'".to_string(),
            Tok::Op(Op::RBrace) => "unmatched '}'".to_string(),
            Tok::Op(Op::Colon) => "':' without a matching '?'".to_string(),
            Tok::Op(Op::Semi) => {
                "';' here: tracelab's expression language evaluates one expression, not statements".to_string()
            }
            Tok::Op(Op::Arrow) => format!("method calls and dereferences (->) {NOT_SUPPORTED}"),
            Tok::Op(Op::Inc | Op::Dec) => format!("'++' and '--' (assignment) {NOT_SUPPORTED}"),
            Tok::Op(Op::LBrace) => format!("blocks and hash subscripts ({{...}}) {NOT_SUPPORTED}"),
            Tok::Op(Op::DoubleColon) => format!("package names (::) {NOT_SUPPORTED}"),
            Tok::Op(Op::Pow) => "unexpected '**'".to_string(),
            Tok::Eof => "unexpected end of the expression".to_string(),
            t => format!("syntax error: unexpected {} (missing operator?)", describe(t)),
        };
        self.err(msg, pos)
    }

    pub(crate) fn peek(&mut self) -> Result<&Token, CompileError> {
        if self.peeked.is_none() {
            self.peeked = Some(self.lex.next_token()?);
        }
        match &self.peeked {
            Some(t) => Ok(t),
            None => Err(self.err("internal error: no token", self.src.len())),
        }
    }

    pub(crate) fn next(&mut self) -> Result<Token, CompileError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lex.next_token(),
        }
    }

    fn peek_op(&mut self) -> Result<Option<Op>, CompileError> {
        Ok(match self.peek()?.tok {
            Tok::Op(op) => Some(op),
            _ => None,
        })
    }

    fn expect(&mut self, op: Op, what: impl FnOnce(&Self) -> String) -> Result<Token, CompileError> {
        let t = self.next()?;
        if t.tok == Tok::Op(op) {
            Ok(t)
        } else {
            Err(self.err(what(self), t.start))
        }
    }

    fn enter(&mut self, pos: usize) -> Result<(), CompileError> {
        self.nesting += 1;
        if self.nesting > 2 * MAX_DEPTH {
            return Err(self.too_deep(pos));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.nesting = self.nesting.saturating_sub(1);
    }

    fn too_deep(&self, pos: usize) -> CompileError {
        self.err(
            format!("expression is nested too deeply (more than {MAX_DEPTH} levels)"),
            pos,
        )
    }

    /// Builds a node over `children`, folding constants and checking depth.
    pub(crate) fn make(&self, node: Node, pos: usize, children: &[usize]) -> Result<Expr, CompileError> {
        let depth = 1 + children.iter().copied().max().unwrap_or(0);
        if depth > MAX_DEPTH {
            return Err(self.too_deep(pos));
        }
        Ok(Expr {
            node: fold(node),
            depth,
            pos,
            parens: false,
        })
    }

    /// Runs `f` over `src[span]` as if it were the whole input (for
    /// subscripts inside interpolated strings), keeping absolute positions.
    pub(crate) fn sub_parse(&mut self, span: Span) -> Result<Expr, CompileError> {
        let saved_lex = std::mem::replace(&mut self.lex, Lexer::new(self.src, span.start, span.end));
        let saved_peek = self.peeked.take();
        let result = self.parse_binary(P_OR).and_then(|e| {
            let t = self.next()?;
            if t.tok == Tok::Eof {
                Ok(e)
            } else {
                Err(self.unexpected(&t.tok, t.start))
            }
        });
        self.lex = saved_lex;
        self.peeked = saved_peek;
        result
    }

    fn parse_binary(&mut self, min: u8) -> Result<Expr, CompileError> {
        let pos = self.peek()?.start;
        self.enter(pos)?;
        let mut lhs = self.parse_unary()?;
        loop {
            let (op_pos, bin, prec) = {
                let t = self.peek()?;
                match binop(&t.tok) {
                    Some((prec, bin)) if prec >= min => (t.start, bin, prec),
                    _ => break,
                }
            };
            lhs = match bin {
                Bin::Comma => self.parse_comma(lhs)?,
                Bin::Assign => {
                    let t = self.next()?;
                    let text = match t.tok {
                        Tok::Assign(a) => a,
                        _ => "=".into(),
                    };
                    return Err(self.err(
                        format!("assignment ('{text}') {NOT_SUPPORTED}: it evaluates expressions, it does not set variables (did you mean '==' or 'eq'?)"),
                        op_pos,
                    ));
                }
                Bin::Range => {
                    return Err(self.err(format!("the range operator '..' {NOT_SUPPORTED}"), op_pos))
                }
                Bin::Cond => {
                    self.next()?;
                    let mid = self.parse_binary(P_ASSIGN)?;
                    self.expect(Op::Colon, |p| {
                        format!("expected ':' for the '?' at column {}", column_of(p.src, op_pos))
                    })?;
                    let rhs = self.parse_binary(P_COND)?;
                    let depths = [lhs.depth, mid.depth, rhs.depth];
                    let pos = lhs.pos;
                    self.make(
                        Node::Cond(Box::new(lhs.node), Box::new(mid.node), Box::new(rhs.node)),
                        pos,
                        &depths,
                    )?
                }
                Bin::Compare => self.parse_comparison(lhs, prec)?,
                Bin::Bind(negate) => {
                    self.next()?;
                    self.parse_bind(lhs, negate, op_pos)?
                }
                Bin::Logic(kind) => {
                    self.next()?;
                    let rhs = self.parse_binary(prec + 1)?;
                    let pos = lhs.pos;
                    match lhs.node {
                        Node::Logic(k, mut items) if k == kind => {
                            let depth = lhs.depth.max(rhs.depth + 1);
                            if depth > MAX_DEPTH {
                                return Err(self.too_deep(op_pos));
                            }
                            items.push(rhs.node);
                            Expr {
                                node: fold(Node::Logic(kind, items)),
                                depth,
                                pos,
                                parens: false,
                            }
                        }
                        node => self.make(Node::Logic(kind, vec![node, rhs.node]), pos, &[lhs.depth, rhs.depth])?,
                    }
                }
                Bin::Xor => {
                    self.next()?;
                    let rhs = self.parse_binary(prec + 1)?;
                    self.make(Node::Xor(Box::new(lhs.node), Box::new(rhs.node)), lhs.pos, &[lhs.depth, rhs.depth])?
                }
                Bin::Num(op) => {
                    self.next()?;
                    let rhs = self.parse_binary(prec + 1)?;
                    self.make(Node::Num(op, Box::new(lhs.node), Box::new(rhs.node)), lhs.pos, &[lhs.depth, rhs.depth])?
                }
                Bin::Concat => {
                    self.next()?;
                    let rhs = self.parse_binary(prec + 1)?;
                    let pos = lhs.pos;
                    match lhs.node {
                        Node::Concat(mut parts) if !lhs.parens => {
                            let depth = lhs.depth.max(rhs.depth + 1);
                            if depth > MAX_DEPTH {
                                return Err(self.too_deep(op_pos));
                            }
                            parts.push(rhs.node);
                            Expr {
                                node: fold(Node::Concat(parts)),
                                depth,
                                pos,
                                parens: false,
                            }
                        }
                        node => self.make(Node::Concat(vec![node, rhs.node]), pos, &[lhs.depth, rhs.depth])?,
                    }
                }
                Bin::Repeat => {
                    self.next()?;
                    let rhs = self.parse_binary(prec + 1)?;
                    let list = lhs.parens;
                    self.make(
                        Node::Repeat {
                            item: Box::new(lhs.node),
                            count: Box::new(rhs.node),
                            list,
                        },
                        lhs.pos,
                        &[lhs.depth, rhs.depth],
                    )?
                }
            };
        }
        self.leave();
        Ok(lhs)
    }

    /// `a, b, c` (a trailing comma is allowed, as in Perl).
    fn parse_comma(&mut self, first: Expr) -> Result<Expr, CompileError> {
        let pos = first.pos;
        let mut depth = first.depth;
        let mut items = vec![first.node];
        while matches!(self.peek_op()?, Some(Op::Comma | Op::FatComma)) {
            self.next()?;
            if !self.can_start_term()? {
                break;
            }
            let e = self.parse_binary(P_COMMA + 1)?;
            depth = depth.max(e.depth);
            items.push(e.node);
        }
        self.make(Node::List(items), pos, &[depth])
    }

    /// A run of comparisons at one precedence level: a single one, or a
    /// Perl 5.32 chain `a < b <= c`. `<=>` and `cmp` do not chain.
    fn parse_comparison(&mut self, first: Expr, level: u8) -> Result<Expr, CompileError> {
        let pos = first.pos;
        let mut depth = first.depth;
        let mut rest: Vec<(CmpOp, Node)> = Vec::new();
        loop {
            let (op, op_pos) = {
                let t = self.peek()?;
                let op = match (&t.tok, binop(&t.tok)) {
                    (Tok::Op(op), Some((p, Bin::Compare))) if p == level => cmp_op(*op),
                    _ => None,
                };
                match op {
                    Some(op) => (op, t.start),
                    None => break,
                }
            };
            let non_assoc = |o: CmpOp| matches!(o, CmpOp::NumCmp | CmpOp::StrCmp);
            if !rest.is_empty() && (non_assoc(op) || non_assoc(rest[rest.len() - 1].0)) {
                return Err(self.err(
                    "'<=>' and 'cmp' cannot be chained with other comparisons; add parentheses",
                    op_pos,
                ));
            }
            self.next()?;
            let rhs = self.parse_binary(level + 1)?;
            depth = depth.max(rhs.depth);
            rest.push((op, rhs.node));
        }
        if rest.len() == 1 {
            let Some((op, rhs)) = rest.pop() else {
                return Err(self.err("internal error: empty comparison", pos));
            };
            self.make(Node::Cmp(op, Box::new(first.node), Box::new(rhs)), pos, &[depth])
        } else {
            self.make(Node::Chain(Box::new(first.node), rest), pos, &[depth])
        }
    }

    /// The right side of `=~` / `!~`.
    fn parse_bind(&mut self, lhs: Expr, negate: bool, op_pos: usize) -> Result<Expr, CompileError> {
        let is_pattern = matches!(self.peek()?.tok, Tok::Pattern { .. });
        let (pattern, depth) = if is_pattern {
            let t = self.next()?;
            let Tok::Pattern {
                body,
                flags,
                flags_pos,
                interpolate,
                ..
            } = t.tok
            else {
                return Err(self.err("internal error: expected a pattern", t.start));
            };
            self.pattern_literal(body, &flags, flags_pos, interpolate, t.start, false)?
        } else {
            if !self.can_start_term()? {
                let t = self.next()?;
                return Err(self.err(
                    format!("expected a pattern after '{}' but found {}", if negate { "!~" } else { "=~" }, describe(&t.tok)),
                    t.start,
                ));
            }
            let rhs = self.parse_binary(P_BIND + 1)?;
            let depth = rhs.depth;
            (self.pattern_from_expr(rhs, Flags::default())?, depth)
        };
        let pos = lhs.pos;
        self.make(
            Node::Match {
                target: Box::new(lhs.node),
                pattern,
                negate,
            },
            pos.min(op_pos),
            &[lhs.depth, depth],
        )
    }

    /// A `/.../flags` literal as a pattern: compiled now when constant,
    /// otherwise compiled per evaluation.
    fn pattern_literal(
        &mut self,
        body: Span,
        flags: &str,
        flags_pos: usize,
        interpolate: bool,
        pos: usize,
        for_split: bool,
    ) -> Result<(Pattern, usize), CompileError> {
        let mut flags = Flags::parse(flags).map_err(|m| self.err(m, flags_pos))?;
        let text = if interpolate {
            self.interpolate(body, crate::interpolate::Mode::Regex, pos)?
        } else {
            Expr::leaf(
                Node::Const(Value::Str(Cow::Owned(self.src.get(body.start..body.end).unwrap_or("").to_string()))),
                pos,
            )
        };
        match text.node {
            Node::Const(v) => {
                let s = v.to_str();
                if for_split && s == "^" {
                    flags.m = true;
                }
                let re = perl_regex::compile(&s, flags).map_err(|m| self.err(m, pos))?;
                Ok((Pattern::Static(re), 1))
            }
            node => Ok((
                Pattern::Dynamic {
                    source: Box::new(node),
                    flags,
                },
                text.depth,
            )),
        }
    }

    /// An expression used as a pattern (`$name =~ q{message from client}`).
    fn pattern_from_expr(&self, e: Expr, flags: Flags) -> Result<Pattern, CompileError> {
        match e.node {
            Node::Const(v) => {
                let s = v.to_str();
                perl_regex::compile(&s, flags)
                    .map(Pattern::Static)
                    .map_err(|m| self.err(m, e.pos))
            }
            node => Ok(Pattern::Dynamic {
                source: Box::new(node),
                flags,
            }),
        }
    }

    fn can_start_term(&mut self) -> Result<bool, CompileError> {
        Ok(match &self.peek()?.tok {
            Tok::Num(_)
            | Tok::Str(_)
            | Tok::Interp { .. }
            | Tok::Qw(_)
            | Tok::Pattern { .. }
            | Tok::Scalar(_)
            | Tok::Array(_)
            | Tok::ArrayLast(_)
            | Tok::Capture(_)
            | Tok::Ident(_) => true,
            Tok::Op(op) => matches!(
                op,
                Op::LParen
                    | Op::Minus
                    | Op::Plus
                    | Op::Not
                    | Op::BitNot
                    | Op::WordNot
                    | Op::Backslash
                    | Op::LBracket
                    | Op::LBrace
                    | Op::Inc
                    | Op::Dec
            ),
            Tok::Assign(_) | Tok::Eof => false,
        })
    }

    fn parse_unary(&mut self) -> Result<Expr, CompileError> {
        let (tok, pos) = {
            let t = self.peek()?;
            (t.tok.clone(), t.start)
        };
        self.enter(pos)?;
        let result = match tok {
            Tok::Op(Op::Not) => {
                self.next()?;
                let e = self.parse_unary()?;
                self.make(Node::Not(Box::new(e.node)), pos, &[e.depth])
            }
            Tok::Op(Op::WordNot) => {
                self.next()?;
                if !self.can_start_term()? {
                    // `not` with nothing after it is `not(())`, i.e. true.
                    Ok(Expr::leaf(Node::Const(Value::Num(1.0)), pos))
                } else {
                    // Its operand runs to the next `and`/`or`, commas included.
                    let e = self.parse_binary(P_NOT + 1)?;
                    self.make(Node::Not(Box::new(e.node)), pos, &[e.depth])
                }
            }
            Tok::Op(Op::Minus) => {
                self.next()?;
                if let Tok::Ident(w) = &self.peek()?.tok {
                    if w.len() == 1 && "rwxoRWXOezsfdlpSbcugktTBAMC".contains(w.as_str()) {
                        let msg = format!("file test operators (-{w}) {NOT_SUPPORTED}");
                        return Err(self.err(msg, pos));
                    }
                }
                let e = self.parse_unary()?;
                self.make(Node::Neg(Box::new(e.node)), pos, &[e.depth])
            }
            Tok::Op(Op::Plus) => {
                self.next()?;
                self.parse_unary()
            }
            Tok::Op(Op::BitNot) => {
                self.next()?;
                let e = self.parse_unary()?;
                self.make(Node::BitNot(Box::new(e.node)), pos, &[e.depth])
            }
            Tok::Op(Op::Backslash) => Err(self.err(format!("references (\\) {NOT_SUPPORTED}"), pos)),
            Tok::Op(Op::Inc | Op::Dec) => {
                Err(self.err(format!("'++' and '--' (assignment) {NOT_SUPPORTED}"), pos))
            }
            _ => {
                let base = self.parse_primary()?;
                if self.peek_op()? == Some(Op::Pow) {
                    self.next()?;
                    let exp = self.parse_unary()?;
                    let bpos = base.pos;
                    self.make(
                        Node::Num(NumOp::Pow, Box::new(base.node), Box::new(exp.node)),
                        bpos,
                        &[base.depth, exp.depth],
                    )
                } else {
                    Ok(base)
                }
            }
        };
        self.leave();
        result
    }

    fn parse_primary(&mut self) -> Result<Expr, CompileError> {
        let t = self.next()?;
        let pos = t.start;
        let e = match t.tok {
            Tok::Num(n) => Expr::leaf(Node::Const(Value::Num(n)), pos),
            Tok::Str(s) => Expr::leaf(Node::Const(Value::Str(Cow::Owned(s))), pos),
            Tok::Interp { body, .. } => self.interpolate(body, crate::interpolate::Mode::String, pos)?,
            Tok::Qw(words) => {
                let items = words
                    .into_iter()
                    .map(|w| Node::Const(Value::Str(Cow::Owned(w))))
                    .collect();
                Expr {
                    node: Node::List(items),
                    depth: 2,
                    pos,
                    parens: true,
                }
            }
            Tok::Pattern {
                body,
                flags,
                flags_pos,
                interpolate,
                qr: true,
            } => self.qr_value(body, &flags, flags_pos, interpolate, pos)?,
            Tok::Pattern { .. } => {
                return Err(self.err(
                    "a pattern needs a target: write EXPR =~ /.../ (tracelab has no $_)",
                    pos,
                ))
            }
            Tok::Scalar(name) => self.scalar_var(&name, pos)?,
            Tok::Array(name) => self.array_var(&name, pos)?,
            Tok::ArrayLast(name) => {
                let id = self.resolve_array(&name, pos)?;
                Expr::leaf(Node::ArrayLast(id), pos)
            }
            Tok::Capture(n) => Expr::leaf(Node::Capture(n), pos),
            Tok::Ident(word) => self.parse_word(&word, pos)?,
            Tok::Op(Op::LParen) => self.parse_paren(pos)?,
            Tok::Op(Op::LBrace) => {
                return Err(self.err(format!("blocks and anonymous hashes ({{...}}) {NOT_SUPPORTED}"), pos))
            }
            Tok::Op(Op::LBracket) => {
                return Err(self.err(format!("array references ([...]) {NOT_SUPPORTED}"), pos))
            }
            Tok::Eof => {
                return Err(self.err(
                    "expected a value, variable, function or '(' but the expression ended",
                    pos,
                ))
            }
            other => {
                return Err(self.err(
                    format!("expected a value, variable, function or '(' but found {}", describe(&other)),
                    pos,
                ))
            }
        };
        match &self.peek()?.tok {
            Tok::Op(Op::Arrow) => {
                let p = self.peek()?.start;
                Err(self.err(format!("method calls and dereferences (->) {NOT_SUPPORTED}"), p))
            }
            Tok::Op(Op::Inc | Op::Dec) => {
                let p = self.peek()?.start;
                Err(self.err(format!("'++' and '--' (assignment) {NOT_SUPPORTED}"), p))
            }
            _ => Ok(e),
        }
    }

    pub(crate) fn resolve_scalar(&self, name: &str, pos: usize) -> Result<crate::VarId, CompileError> {
        self.scope
            .scalar(name)
            .ok_or_else(|| self.err(format!("unknown variable ${name}"), pos))
    }

    pub(crate) fn resolve_array(&self, name: &str, pos: usize) -> Result<crate::VarId, CompileError> {
        self.scope
            .array(name)
            .ok_or_else(|| self.err(format!("unknown array @{name}"), pos))
    }

    fn scalar_var(&mut self, name: &str, pos: usize) -> Result<Expr, CompileError> {
        match self.peek_op()? {
            Some(Op::LBracket) => {
                let id = self.resolve_array(name, pos)?;
                let open = self.next()?.start;
                let index = self.parse_binary(P_OR)?;
                self.expect(Op::RBracket, |p| {
                    format!("expected ']' to close the '[' at column {}", column_of(p.src, open))
                })?;
                self.make(Node::Elem(id, Box::new(index.node)), pos, &[index.depth])
            }
            Some(Op::LBrace) => Err(self.err(
                format!("hash element ${name}{{...}} {NOT_SUPPORTED} (it has no hashes)"),
                pos,
            )),
            _ => {
                let id = self.resolve_scalar(name, pos)?;
                Ok(Expr::leaf(Node::Scalar(id), pos))
            }
        }
    }

    fn array_var(&mut self, name: &str, pos: usize) -> Result<Expr, CompileError> {
        let id = self.resolve_array(name, pos)?;
        match self.peek_op()? {
            Some(Op::LBracket) => {
                let open = self.next()?.start;
                let index = self.parse_binary(P_OR)?;
                self.expect(Op::RBracket, |p| {
                    format!("expected ']' to close the '[' at column {}", column_of(p.src, open))
                })?;
                self.make(
                    Node::Slice {
                        list: Box::new(Node::Array(id)),
                        indices: Box::new(index.node),
                    },
                    pos,
                    &[index.depth],
                )
            }
            Some(Op::LBrace) => Err(self.err(format!("hash slices @{name}{{...}} {NOT_SUPPORTED}"), pos)),
            _ => Ok(Expr::leaf(Node::Array(id), pos)),
        }
    }

    fn parse_paren(&mut self, pos: usize) -> Result<Expr, CompileError> {
        let mut e = if self.peek_op()? == Some(Op::RParen) {
            self.next()?;
            Expr::leaf(Node::List(Vec::new()), pos)
        } else {
            let inner = self.parse_binary(P_OR)?;
            self.expect(Op::RParen, |p| {
                format!("expected ')' to close the '(' opened at column {}", column_of(p.src, pos))
            })?;
            inner
        };
        e.pos = pos;
        if self.peek_op()? == Some(Op::LBracket) {
            let open = self.next()?.start;
            let index = self.parse_binary(P_OR)?;
            self.expect(Op::RBracket, |p| {
                format!("expected ']' to close the '[' at column {}", column_of(p.src, open))
            })?;
            return self.make(
                Node::Slice {
                    list: Box::new(e.node),
                    indices: Box::new(index.node),
                },
                pos,
                &[e.depth, index.depth],
            );
        }
        e.parens = true;
        Ok(e)
    }

    /// `qr/.../` as a value: the string perl gives it, `(?^flags:pattern)`.
    fn qr_value(
        &mut self,
        body: Span,
        flags: &str,
        flags_pos: usize,
        interpolate: bool,
        pos: usize,
    ) -> Result<Expr, CompileError> {
        let parsed = Flags::parse(flags).map_err(|m| self.err(m, flags_pos))?;
        let text = if interpolate {
            self.interpolate(body, crate::interpolate::Mode::Regex, pos)?
        } else {
            Expr::leaf(
                Node::Const(Value::Str(Cow::Owned(self.src.get(body.start..body.end).unwrap_or("").to_string()))),
                pos,
            )
        };
        if let Node::Const(v) = &text.node {
            // Check it now, so that a bad qr// is a compile error.
            perl_regex::compile(&v.to_str(), parsed).map_err(|m| self.err(m, pos))?;
        }
        let open = Node::Const(Value::Str(Cow::Owned(format!("(?^{}:", parsed.perl_letters()))));
        let close = Node::Const(Value::Str(Cow::Borrowed(")")));
        let depth = text.depth;
        self.make(Node::Concat(vec![open, text.node, close]), pos, &[depth])
    }

    fn parse_word(&mut self, word: &str, pos: usize) -> Result<Expr, CompileError> {
        let unsupported = |what: &str| self.err(format!("{what} {NOT_SUPPORTED}"), pos);
        match word {
            "my" | "our" | "local" | "state" => {
                return Err(unsupported("variable declarations (my, our, local)"))
            }
            "sub" => return Err(unsupported("sub definitions (sub NAME {...})")),
            "BEGIN" | "END" | "INIT" | "CHECK" | "UNITCHECK" => {
                return Err(unsupported("BEGIN/END blocks"))
            }
            "use" | "no" | "require" | "package" => {
                return Err(unsupported("loading modules (use, require, package)"))
            }
            "if" | "unless" | "while" | "until" | "for" | "foreach" | "do" | "eval" | "return"
            | "last" | "next" | "redo" | "goto" | "else" | "elsif" => {
                return Err(self.err(
                    format!("statements ('{word}') {NOT_SUPPORTED}; use the ?: operator for conditions"),
                    pos,
                ))
            }
            "print" | "printf" | "say" | "die" | "warn" | "exit" | "open" | "close" | "system"
            | "exec" | "unlink" | "keys" | "values" | "each" | "delete" | "exists" | "push" | "pop"
            | "shift" | "unshift" | "splice" | "map" | "grep" | "sort" | "wantarray"
            | "bless" | "ref" => {
                return Err(unsupported(&format!("the Perl built-in '{word}'")))
            }
            _ => {}
        }
        if word == "undef" {
            // `undef` and `undef()` are the undefined value; `undef $x`
            // would clear a variable.
            if self.peek_op()? == Some(Op::LParen) {
                self.next()?;
                if self.peek_op()? != Some(Op::RParen) {
                    return Err(self.err(format!("undef(EXPR) (clearing a variable) {NOT_SUPPORTED}"), pos));
                }
                self.next()?;
            } else if matches!(self.peek()?.tok, Tok::Scalar(_) | Tok::Array(_)) {
                return Err(self.err(format!("undef EXPR (clearing a variable) {NOT_SUPPORTED}"), pos));
            }
            return Ok(Expr::leaf(Node::Const(Value::Undef), pos));
        }
        let Some(spec) = functions::lookup(word) else {
            return Err(self.err(
                format!(
                    "unknown function '{word}' (tracelab's expression language has no user-defined subs or --init code; its functions are: {})",
                    functions::NAMES
                ),
                pos,
            ));
        };
        if word == "split" {
            return self.parse_split(pos);
        }
        let has_parens = self.peek_op()? == Some(Op::LParen);
        let args: Vec<Expr> = if has_parens {
            let open = self.next()?.start;
            if self.peek_op()? == Some(Op::RParen) {
                self.next()?;
                Vec::new()
            } else {
                let e = self.parse_binary(P_OR)?;
                self.expect(Op::RParen, |p| {
                    format!("expected ')' to close the '(' of {word} at column {}", column_of(p.src, open))
                })?;
                if spec.func.is_none() {
                    // `scalar(1, 2, 3)` is the comma operator in scalar context.
                    vec![e]
                } else {
                    flatten(e)
                }
            }
        } else if !self.can_start_term()? {
            Vec::new()
        } else {
            match spec.syntax {
                Syntax::NamedUnary => vec![self.parse_binary(P_UNI + 1)?],
                Syntax::ListOp => flatten(self.parse_binary(P_COMMA)?),
            }
        };
        if args.len() < spec.min {
            return Err(self.err(
                format!("not enough arguments for {word} (tracelab has no $_ to default to)"),
                pos,
            ));
        }
        if args.len() > spec.max {
            return Err(self.err(format!("too many arguments for {word}"), pos));
        }
        let depth = args.iter().map(|a| a.depth).max().unwrap_or(0);
        let mut nodes: Vec<Node> = args.into_iter().map(|a| a.node).collect();
        match spec.func {
            Some(func) => self.make(Node::Call(func, nodes), pos, &[depth]),
            None => {
                // `scalar`
                let arg = nodes.pop().unwrap_or(Node::Const(Value::Undef));
                self.make(Node::ScalarCtx(Box::new(arg)), pos, &[depth])
            }
        }
    }

    /// `split /PATTERN/, EXPR, LIMIT` (with or without parentheses).
    fn parse_split(&mut self, pos: usize) -> Result<Expr, CompileError> {
        let has_parens = self.peek_op()? == Some(Op::LParen);
        let open = if has_parens { self.next()?.start } else { pos };
        if !self.can_start_term()? {
            return Err(self.err("split needs a pattern and a string (tracelab has no $_)", pos));
        }
        let mut depth = 0;
        let pattern = if matches!(self.peek()?.tok, Tok::Pattern { qr: false, .. }) {
            let t = self.next()?;
            let Tok::Pattern {
                body,
                flags,
                flags_pos,
                interpolate,
                ..
            } = t.tok
            else {
                return Err(self.err("internal error: expected a pattern", t.start));
            };
            let (p, d) = self.pattern_literal(body, &flags, flags_pos, interpolate, t.start, true)?;
            depth = d;
            SplitPattern::Regex(p)
        } else {
            let e = self.parse_binary(P_COMMA + 1)?;
            depth = depth.max(e.depth);
            match &e.node {
                Node::Const(v) if v.to_str() == " " => SplitPattern::Awk,
                Node::Const(v) => {
                    let s = v.to_str();
                    let flags = Flags {
                        m: s == "^",
                        ..Flags::default()
                    };
                    let re = perl_regex::compile(&s, flags).map_err(|m| self.err(m, e.pos))?;
                    SplitPattern::Regex(Pattern::Static(re))
                }
                _ => SplitPattern::Expr(Box::new(e.node)),
            }
        };
        if self.peek_op()? != Some(Op::Comma) {
            let t = self.peek()?.start;
            return Err(self.err("split needs a string to split after the pattern (tracelab has no $_)", t));
        }
        self.next()?;
        let text = self.parse_binary(P_COMMA + 1)?;
        depth = depth.max(text.depth);
        let mut limit = None;
        if self.peek_op()? == Some(Op::Comma) {
            self.next()?;
            if self.can_start_term()? {
                let l = self.parse_binary(P_COMMA + 1)?;
                depth = depth.max(l.depth);
                limit = Some(Box::new(l.node));
            }
        }
        if has_parens {
            self.expect(Op::RParen, |p| {
                format!("expected ')' to close the '(' of split at column {}", column_of(p.src, open))
            })?;
        }
        self.make(
            Node::Split {
                pattern,
                text: Box::new(text.node),
                limit,
            },
            pos,
            &[depth],
        )
    }
}

/// The arguments of a call: a comma list is spread into its elements.
fn flatten(e: Expr) -> Vec<Expr> {
    match e.node {
        Node::List(items) => {
            let depth = e.depth.saturating_sub(1);
            items
                .into_iter()
                .map(|node| Expr {
                    node,
                    depth,
                    pos: e.pos,
                    parens: false,
                })
                .collect()
        }
        node => vec![Expr { node, ..e }],
    }
}

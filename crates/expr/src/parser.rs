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
use crate::interpolate::Mode;
use crate::lexer::{Lexer, Op, Span, Tok, Token};
use crate::pattern::{Pattern, SplitPattern};
use crate::perl_regex::{self, Flags};
use crate::{Scope, Value};

/// Deepest nesting accepted: tree levels, and parenthesis or call levels
/// (far beyond any real mrskew expression, and small enough that the
/// deepest accepted input parses and evaluates within a 2 MiB thread stack
/// even in an unoptimised build).
pub(crate) const MAX_DEPTH: usize = 128;

/// Recursion budget of the parser, in units of [`Parser::enter`]. Each
/// recursive construct is charged for its stack frames (about 3 KiB per unit
/// unoptimised): a parenthesis or subscript level 4, `?:` and `**` 4, a
/// function call 6, an interpolated string 8, a unary operator 2.
const RECURSION_BUDGET: usize = 4 * MAX_DEPTH;

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
                "';' here: tracelab's expression language evaluates one expression, not statements"
                    .to_string()
            }
            Tok::Op(Op::Arrow) => format!("method calls and dereferences (->) {NOT_SUPPORTED}"),
            Tok::Op(Op::Inc | Op::Dec) => format!("'++' and '--' (assignment) {NOT_SUPPORTED}"),
            Tok::Op(Op::LBrace) => format!("blocks and hash subscripts ({{...}}) {NOT_SUPPORTED}"),
            Tok::Op(Op::DoubleColon) => format!("package names (::) {NOT_SUPPORTED}"),
            Tok::Op(Op::Pow) => "unexpected '**'".to_string(),
            Tok::Eof => "unexpected end of the expression".to_string(),
            t => format!(
                "syntax error: unexpected {} (missing operator?)",
                describe(t)
            ),
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

    /// Reads the bracket `close` that ends `opener` (e.g. "the '(' of
    /// split"), which stands at `open`. The error names the opener's column:
    /// a missing bracket is noticed far from where it was left out.
    fn expect_close(
        &mut self,
        close: Op,
        opener: &dyn std::fmt::Display,
        open: usize,
    ) -> Result<Token, CompileError> {
        let t = self.next()?;
        if t.tok == Tok::Op(close) {
            Ok(t)
        } else {
            Err(self.unclosed(close, opener, open, t.start))
        }
    }

    #[cold]
    fn unclosed(
        &self,
        close: Op,
        opener: &dyn std::fmt::Display,
        open: usize,
        at: usize,
    ) -> CompileError {
        self.err(
            format!(
                "expected '{}' to close {opener} at column {}",
                close.text(),
                column_of(self.src, open)
            ),
            at,
        )
    }

    /// Counts `cost` levels of recursion; refuses past the budget.
    ///
    /// The functions on a recursive path are kept small (each operator,
    /// term kind and error message has its own function), because unoptimised
    /// builds give every temporary of a function its own stack slot; the
    /// budget then keeps the deepest accepted input well inside a 2 MiB
    /// thread stack.
    pub(crate) fn enter(&mut self, pos: usize, cost: usize) -> Result<(), CompileError> {
        self.nesting += cost;
        if self.nesting > RECURSION_BUDGET {
            return Err(self.too_deep(pos));
        }
        Ok(())
    }

    pub(crate) fn leave(&mut self, cost: usize) {
        self.nesting = self.nesting.saturating_sub(cost);
    }

    #[cold]
    fn too_deep(&self, pos: usize) -> CompileError {
        self.err(
            format!("expression is nested too deeply (more than {MAX_DEPTH} levels)"),
            pos,
        )
    }

    /// Builds a node over `children`, folding constants and checking depth.
    pub(crate) fn make(
        &self,
        node: Node,
        pos: usize,
        children: &[usize],
    ) -> Result<Expr, CompileError> {
        let depth = 1 + children.iter().copied().max().unwrap_or(0);
        if depth > MAX_DEPTH {
            return Err(self.too_deep(pos));
        }
        Ok(folded(node, depth, pos))
    }

    /// Parses `src[span]` as a whole expression (a subscript inside an
    /// interpolated string), keeping absolute positions.
    pub(crate) fn sub_parse(&mut self, span: Span) -> Result<Expr, CompileError> {
        let saved_lex =
            std::mem::replace(&mut self.lex, Lexer::new(self.src, span.start, span.end));
        let saved_peek = self.peeked.take();
        let result = self.sub_parse_inner();
        self.lex = saved_lex;
        self.peeked = saved_peek;
        result
    }

    fn sub_parse_inner(&mut self) -> Result<Expr, CompileError> {
        let e = self.parse_binary(P_OR)?;
        let t = self.next()?;
        if t.tok == Tok::Eof {
            Ok(e)
        } else {
            Err(self.unexpected(&t.tok, t.start))
        }
    }

    // ---- binary operators -------------------------------------------------

    fn parse_binary(&mut self, min: u8) -> Result<Expr, CompileError> {
        let pos = self.peek()?.start;
        self.enter(pos, 1)?;
        let mut lhs = self.parse_unary()?;
        while let Some((bin, prec, op_pos)) = self.peek_binop(min)? {
            lhs = self.binary_step(lhs, bin, prec, op_pos)?;
        }
        self.leave(1);
        Ok(lhs)
    }

    fn peek_binop(&mut self, min: u8) -> Result<Option<(Bin, u8, usize)>, CompileError> {
        let t = self.peek()?;
        Ok(match binop(&t.tok) {
            Some((prec, bin)) if prec >= min => Some((bin, prec, t.start)),
            _ => None,
        })
    }

    fn binary_step(
        &mut self,
        lhs: Expr,
        bin: Bin,
        prec: u8,
        op_pos: usize,
    ) -> Result<Expr, CompileError> {
        match bin {
            Bin::Comma => self.parse_comma(lhs),
            Bin::Assign => Err(self.assignment_error(op_pos)),
            Bin::Range => Err(self.range_error(op_pos)),
            Bin::Cond => self.parse_cond(lhs, op_pos),
            Bin::Compare => self.parse_comparison(lhs, prec),
            Bin::Bind(negate) => self.parse_bind(lhs, negate, op_pos),
            Bin::Logic(kind) => self.parse_logic(lhs, kind, prec, op_pos),
            Bin::Concat => self.parse_concat(lhs, prec, op_pos),
            Bin::Xor | Bin::Num(_) | Bin::Repeat => self.parse_simple_binary(lhs, bin, prec),
        }
    }

    #[cold]
    fn assignment_error(&mut self, op_pos: usize) -> CompileError {
        let text = match self.next() {
            Ok(Token {
                tok: Tok::Assign(a),
                ..
            }) => a,
            _ => "=".into(),
        };
        self.err(
            format!("assignment ('{text}') {NOT_SUPPORTED}: it evaluates expressions, it does not set variables (did you mean '==' or 'eq'?)"),
            op_pos,
        )
    }

    #[cold]
    fn range_error(&self, op_pos: usize) -> CompileError {
        self.err(format!("the range operator '..' {NOT_SUPPORTED}"), op_pos)
    }

    #[cold]
    fn missing_colon(&self, question: usize, at: usize) -> CompileError {
        self.err(
            format!(
                "expected ':' for the '?' at column {}",
                column_of(self.src, question)
            ),
            at,
        )
    }

    /// `COND ? A : B` (right associative).
    fn parse_cond(&mut self, cond: Expr, op_pos: usize) -> Result<Expr, CompileError> {
        self.next()?;
        self.enter(op_pos, 3)?;
        let mid = self.parse_binary(P_ASSIGN)?;
        let colon = self.next()?;
        if colon.tok != Tok::Op(Op::Colon) {
            return Err(self.missing_colon(op_pos, colon.start));
        }
        let rhs = self.parse_binary(P_COND)?;
        self.leave(3);
        let depths = [cond.depth, mid.depth, rhs.depth];
        let pos = cond.pos;
        self.make(
            Node::Cond(Box::new(cond.node), Box::new(mid.node), Box::new(rhs.node)),
            pos,
            &depths,
        )
    }

    /// `&&`, `||`, `//`, `and`, `or`: chains of one operator become one
    /// n-ary node, so that long `or` lists stay shallow.
    fn parse_logic(
        &mut self,
        lhs: Expr,
        kind: Logic,
        prec: u8,
        op_pos: usize,
    ) -> Result<Expr, CompileError> {
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
                Ok(folded(Node::Logic(kind, items), depth, pos))
            }
            node => self.make(
                Node::Logic(kind, vec![node, rhs.node]),
                pos,
                &[lhs.depth, rhs.depth],
            ),
        }
    }

    /// `.`: chains become one n-ary concatenation.
    fn parse_concat(&mut self, lhs: Expr, prec: u8, op_pos: usize) -> Result<Expr, CompileError> {
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
                Ok(folded(Node::Concat(parts), depth, pos))
            }
            node => self.make(
                Node::Concat(vec![node, rhs.node]),
                pos,
                &[lhs.depth, rhs.depth],
            ),
        }
    }

    /// Left-associative operators that build a plain binary node.
    fn parse_simple_binary(&mut self, lhs: Expr, bin: Bin, prec: u8) -> Result<Expr, CompileError> {
        self.next()?;
        let rhs = self.parse_binary(prec + 1)?;
        let (a, b) = (Box::new(lhs.node), Box::new(rhs.node));
        let node = match bin {
            Bin::Xor => Node::Xor(a, b),
            Bin::Num(op) => Node::Num(op, a, b),
            _ => Node::Repeat {
                item: a,
                count: b,
                list: lhs.parens,
            },
        };
        self.make(node, lhs.pos, &[lhs.depth, rhs.depth])
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

    fn peek_comparison(&mut self, level: u8) -> Result<Option<(CmpOp, usize)>, CompileError> {
        let t = self.peek()?;
        Ok(match (&t.tok, binop(&t.tok)) {
            (Tok::Op(op), Some((p, Bin::Compare))) if p == level => {
                cmp_op(*op).map(|o| (o, t.start))
            }
            _ => None,
        })
    }

    #[cold]
    fn chained_spaceship(&self, pos: usize) -> CompileError {
        self.err(
            "'<=>' and 'cmp' cannot be chained with other comparisons; add parentheses",
            pos,
        )
    }

    /// A run of comparisons at one precedence level: a single one, or a
    /// Perl 5.32 chain `a < b <= c`. `<=>` and `cmp` do not chain.
    fn parse_comparison(&mut self, first: Expr, level: u8) -> Result<Expr, CompileError> {
        let pos = first.pos;
        let mut depth = first.depth;
        let mut rest: Vec<(CmpOp, Node)> = Vec::new();
        while let Some((op, op_pos)) = self.peek_comparison(level)? {
            let non_assoc = |o: CmpOp| matches!(o, CmpOp::NumCmp | CmpOp::StrCmp);
            if rest
                .last()
                .is_some_and(|(prev, _)| non_assoc(op) || non_assoc(*prev))
            {
                return Err(self.chained_spaceship(op_pos));
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
            self.make(
                Node::Cmp(op, Box::new(first.node), Box::new(rhs)),
                pos,
                &[depth],
            )
        } else {
            self.make(Node::Chain(Box::new(first.node), rest), pos, &[depth])
        }
    }

    #[cold]
    fn missing_pattern(&mut self, negate: bool) -> CompileError {
        match self.next() {
            Ok(t) => self.err(
                format!(
                    "expected a pattern after '{}' but found {}",
                    if negate { "!~" } else { "=~" },
                    describe(&t.tok)
                ),
                t.start,
            ),
            Err(e) => e,
        }
    }

    /// `EXPR =~ PATTERN` / `EXPR !~ PATTERN`; the operator is next.
    fn parse_bind(&mut self, lhs: Expr, negate: bool, op_pos: usize) -> Result<Expr, CompileError> {
        self.next()?;
        let (pattern, depth) = if matches!(self.peek()?.tok, Tok::Pattern { .. }) {
            let t = self.next()?;
            self.pattern_token(t, false)?
        } else if self.can_start_term()? {
            let rhs = self.parse_binary(P_BIND + 1)?;
            let depth = rhs.depth;
            (self.pattern_from_expr(rhs, Flags::default())?, depth)
        } else {
            return Err(self.missing_pattern(negate));
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

    /// A `Tok::Pattern` as a pattern.
    fn pattern_token(
        &mut self,
        t: Token,
        for_split: bool,
    ) -> Result<(Pattern, usize), CompileError> {
        match t.tok {
            Tok::Pattern {
                body,
                flags,
                flags_pos,
                interpolate,
                ..
            } => self.pattern_literal(body, &flags, flags_pos, interpolate, t.start, for_split),
            _ => Err(self.err("internal error: expected a pattern", t.start)),
        }
    }

    /// The body of a pattern literal: interpolated, or taken as written.
    fn pattern_text(
        &mut self,
        body: Span,
        interpolate: bool,
        pos: usize,
    ) -> Result<Expr, CompileError> {
        if interpolate {
            self.interpolate(body, Mode::Regex, pos)
        } else {
            let text = self.src.get(body.start..body.end).unwrap_or("").to_string();
            Ok(Expr::leaf(Node::Const(Value::Str(Cow::Owned(text))), pos))
        }
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
        let text = self.pattern_text(body, interpolate, pos)?;
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
            Tok::Ident(_) => true,
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
            t => t.is_operand(),
        })
    }

    // ---- unary operators --------------------------------------------------

    fn parse_unary(&mut self) -> Result<Expr, CompileError> {
        let (kind, pos) = self.peek_unary()?;
        self.enter(pos, 1)?;
        let result = self.unary_step(kind, pos);
        self.leave(1);
        result
    }

    fn peek_unary(&mut self) -> Result<(Unary, usize), CompileError> {
        let t = self.peek()?;
        let kind = match t.tok {
            Tok::Op(Op::Not) => Unary::Not,
            Tok::Op(Op::WordNot) => Unary::WordNot,
            Tok::Op(Op::Minus) => Unary::Neg,
            Tok::Op(Op::Plus) => Unary::Plus,
            Tok::Op(Op::BitNot) => Unary::BitNot,
            Tok::Op(Op::Backslash) => Unary::Reference,
            Tok::Op(Op::Inc | Op::Dec) => Unary::IncDec,
            _ => Unary::None,
        };
        Ok((kind, t.start))
    }

    fn unary_step(&mut self, kind: Unary, pos: usize) -> Result<Expr, CompileError> {
        match kind {
            Unary::Not => self.unary_operand(pos, |n| Node::Not(Box::new(n))),
            Unary::BitNot => self.unary_operand(pos, |n| Node::BitNot(Box::new(n))),
            Unary::Neg => self.unary_minus(pos),
            Unary::Plus => self.unary_plus(),
            Unary::WordNot => self.word_not(pos),
            Unary::Reference => Err(self.err(format!("references (\\) {NOT_SUPPORTED}"), pos)),
            Unary::IncDec => Err(self.inc_dec_error(pos)),
            Unary::None => self.power(),
        }
    }

    #[cold]
    fn inc_dec_error(&self, pos: usize) -> CompileError {
        self.err(format!("'++' and '--' (assignment) {NOT_SUPPORTED}"), pos)
    }

    /// `OP operand`, the operator being next.
    fn unary_operand(&mut self, pos: usize, build: fn(Node) -> Node) -> Result<Expr, CompileError> {
        self.next()?;
        self.enter(pos, 1)?;
        let e = self.parse_unary()?;
        self.leave(1);
        self.make(build(e.node), pos, &[e.depth])
    }

    fn unary_plus(&mut self) -> Result<Expr, CompileError> {
        self.next()?;
        self.parse_unary()
    }

    #[cold]
    fn file_test_error(&self, w: &str, pos: usize) -> CompileError {
        self.err(format!("file test operators (-{w}) {NOT_SUPPORTED}"), pos)
    }

    fn unary_minus(&mut self, pos: usize) -> Result<Expr, CompileError> {
        self.next()?;
        if let Tok::Ident(w) = &self.peek()?.tok {
            if w.len() == 1 && "rwxoRWXOezsfdlpSbcugktTBAMC".contains(w.as_str()) {
                let w = w.clone();
                return Err(self.file_test_error(&w, pos));
            }
        }
        self.enter(pos, 1)?;
        let e = self.parse_unary()?;
        self.leave(1);
        self.make(Node::Neg(Box::new(e.node)), pos, &[e.depth])
    }

    /// `not EXPR`: its operand runs to the next `and`/`or`, commas included.
    fn word_not(&mut self, pos: usize) -> Result<Expr, CompileError> {
        self.next()?;
        if !self.can_start_term()? {
            // `not` with nothing after it is `not(())`, i.e. true.
            return Ok(Expr::leaf(Node::Const(Value::Num(1.0)), pos));
        }
        self.enter(pos, 2)?;
        let e = self.parse_binary(P_NOT + 1)?;
        self.leave(2);
        self.make(Node::Not(Box::new(e.node)), pos, &[e.depth])
    }

    /// A term, then `** EXPR` (right associative, binding tighter than a
    /// unary minus on its left: `-2 ** 2` is -4).
    fn power(&mut self) -> Result<Expr, CompileError> {
        let base = self.parse_primary()?;
        if self.peek_op()? != Some(Op::Pow) {
            return Ok(base);
        }
        self.power_rhs(base)
    }

    fn power_rhs(&mut self, base: Expr) -> Result<Expr, CompileError> {
        self.next()?;
        let pos = base.pos;
        self.enter(pos, 3)?;
        let exp = self.parse_unary()?;
        self.leave(3);
        self.make(
            Node::Num(NumOp::Pow, Box::new(base.node), Box::new(exp.node)),
            pos,
            &[base.depth, exp.depth],
        )
    }

    // ---- terms --------------------------------------------------------------

    fn parse_primary(&mut self) -> Result<Expr, CompileError> {
        let t = self.next()?;
        let e = self.primary_token(t)?;
        self.check_postfix()?;
        Ok(e)
    }

    fn primary_token(&mut self, t: Token) -> Result<Expr, CompileError> {
        let pos = t.start;
        match t.tok {
            Tok::Num(n) => Ok(Expr::leaf(Node::Const(Value::Num(n)), pos)),
            Tok::Str(s) => Ok(Expr::leaf(Node::Const(Value::Str(Cow::Owned(s))), pos)),
            Tok::Interp { body, .. } => self.interpolate(body, Mode::String, pos),
            Tok::Qw(words) => Ok(qw_list(words, pos)),
            Tok::Pattern {
                body,
                flags,
                flags_pos,
                interpolate,
                qr: true,
            } => self.qr_value(body, &flags, flags_pos, interpolate, pos),
            Tok::Scalar(name) => self.scalar_var(&name, pos),
            Tok::Array(name) => self.array_var(&name, pos),
            Tok::ArrayLast(name) => {
                let id = self.resolve_array(&name, pos)?;
                Ok(Expr::leaf(Node::ArrayLast(id), pos))
            }
            Tok::Capture(n) => Ok(Expr::leaf(Node::Capture(n), pos)),
            Tok::Ident(word) => self.parse_word(&word, pos),
            Tok::Op(Op::LParen) => self.parse_paren(pos),
            other => Err(self.not_a_term(&other, pos)),
        }
    }

    #[cold]
    fn not_a_term(&self, tok: &Tok, pos: usize) -> CompileError {
        match tok {
            Tok::Pattern { .. } => self.err(
                "a pattern needs a target: write EXPR =~ /.../ (tracelab has no $_)",
                pos,
            ),
            Tok::Op(Op::LBrace) => self.err(
                format!("blocks and anonymous hashes ({{...}}) {NOT_SUPPORTED}"),
                pos,
            ),
            Tok::Op(Op::LBracket) => {
                self.err(format!("array references ([...]) {NOT_SUPPORTED}"), pos)
            }
            Tok::Eof => self.err(
                "expected a value, variable, function or '(' but the expression ended",
                pos,
            ),
            other => self.err(
                format!(
                    "expected a value, variable, function or '(' but found {}",
                    describe(other)
                ),
                pos,
            ),
        }
    }

    /// `->`, `++` and `--` after a term are refused.
    fn check_postfix(&mut self) -> Result<(), CompileError> {
        let t = self.peek()?;
        match t.tok {
            Tok::Op(Op::Arrow) => {
                let p = t.start;
                Err(self.err(
                    format!("method calls and dereferences (->) {NOT_SUPPORTED}"),
                    p,
                ))
            }
            Tok::Op(Op::Inc | Op::Dec) => {
                let p = t.start;
                Err(self.inc_dec_error(p))
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn resolve_scalar(
        &self,
        name: &str,
        pos: usize,
    ) -> Result<crate::VarId, CompileError> {
        self.scope
            .scalar(name)
            .ok_or_else(|| self.err(format!("unknown variable ${name}"), pos))
    }

    pub(crate) fn resolve_array(
        &self,
        name: &str,
        pos: usize,
    ) -> Result<crate::VarId, CompileError> {
        self.scope
            .array(name)
            .ok_or_else(|| self.err(format!("unknown array @{name}"), pos))
    }

    /// `[ EXPR ]` after a variable or a list; the `[` is next.
    fn subscript(&mut self) -> Result<Expr, CompileError> {
        let open = self.next()?.start;
        self.enter(open, 2)?;
        let index = self.parse_binary(P_OR)?;
        self.leave(2);
        self.expect_close(Op::RBracket, &"the '['", open)?;
        Ok(index)
    }

    #[cold]
    fn hash_error(&self, what: &str, pos: usize) -> CompileError {
        self.err(format!("{what} {NOT_SUPPORTED} (it has no hashes)"), pos)
    }

    fn scalar_var(&mut self, name: &str, pos: usize) -> Result<Expr, CompileError> {
        match self.peek_op()? {
            Some(Op::LBracket) => {
                let id = self.resolve_array(name, pos)?;
                let index = self.subscript()?;
                self.make(Node::Elem(id, Box::new(index.node)), pos, &[index.depth])
            }
            Some(Op::LBrace) => Err(self.hash_error(&format!("hash element ${name}{{...}}"), pos)),
            _ => match self.scope.scalar(name) {
                Some(id) => Ok(Expr::leaf(Node::Scalar(id), pos)),
                None => {
                    // `$x = 1`: the assignment is the real mistake.
                    let t = self.peek()?;
                    if matches!(t.tok, Tok::Assign(_)) {
                        let at = t.start;
                        return Err(self.assignment_error(at));
                    }
                    Err(self.err(format!("unknown variable ${name}"), pos))
                }
            },
        }
    }

    fn array_var(&mut self, name: &str, pos: usize) -> Result<Expr, CompileError> {
        let id = self.resolve_array(name, pos)?;
        match self.peek_op()? {
            Some(Op::LBracket) => {
                let index = self.subscript()?;
                let node = Node::Slice {
                    list: Box::new(Node::Array(id)),
                    indices: Box::new(index.node),
                };
                self.make(node, pos, &[index.depth])
            }
            Some(Op::LBrace) => Err(self.hash_error(&format!("hash slices @{name}{{...}}"), pos)),
            _ => Ok(Expr::leaf(Node::Array(id), pos)),
        }
    }

    /// `( ... )`, `()` and the list slice `( ... )[ ... ]`; `(` was read.
    fn parse_paren(&mut self, pos: usize) -> Result<Expr, CompileError> {
        self.enter(pos, 2)?;
        let inner = self.paren_inner(pos);
        self.leave(2);
        let mut inner = inner?;
        inner.pos = pos;
        if self.peek_op()? == Some(Op::LBracket) {
            return self.list_slice(inner, pos);
        }
        inner.parens = true;
        Ok(inner)
    }

    fn paren_inner(&mut self, pos: usize) -> Result<Expr, CompileError> {
        if self.peek_op()? == Some(Op::RParen) {
            self.next()?;
            return Ok(Expr::leaf(Node::List(Vec::new()), pos));
        }
        let inner = self.parse_binary(P_OR)?;
        self.expect_close(Op::RParen, &"the '(' opened", pos)?;
        Ok(inner)
    }

    fn list_slice(&mut self, list: Expr, pos: usize) -> Result<Expr, CompileError> {
        let index = self.subscript()?;
        let depths = [list.depth, index.depth];
        self.make(
            Node::Slice {
                list: Box::new(list.node),
                indices: Box::new(index.node),
            },
            pos,
            &depths,
        )
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
        let text = self.pattern_text(body, interpolate, pos)?;
        if let Node::Const(v) = &text.node {
            // Check it now, so that a bad qr// is a compile error.
            perl_regex::compile(&v.to_str(), parsed).map_err(|m| self.err(m, pos))?;
        }
        let open = Node::Const(Value::Str(Cow::Owned(format!(
            "(?^{}:",
            parsed.perl_letters()
        ))));
        let close = Node::Const(Value::Str(Cow::Borrowed(")")));
        let depth = text.depth;
        self.make(Node::Concat(vec![open, text.node, close]), pos, &[depth])
    }

    /// Perl keywords and built-ins that are refused, with the reason.
    #[cold]
    fn keyword_error(&self, word: &str, pos: usize) -> Option<CompileError> {
        let what = match word {
            "my" | "our" | "local" | "state" => {
                "variable declarations (my, our, local)".to_string()
            }
            "sub" => "sub definitions (sub NAME {...})".to_string(),
            "BEGIN" | "END" | "INIT" | "CHECK" | "UNITCHECK" => "BEGIN/END blocks".to_string(),
            "use" | "no" | "require" | "package" => {
                "loading modules (use, require, package)".to_string()
            }
            "if" | "unless" | "while" | "until" | "for" | "foreach" | "do" | "eval" | "return"
            | "last" | "next" | "redo" | "goto" | "else" | "elsif" => {
                return Some(self.err(
                    format!(
                        "statements ('{word}') {NOT_SUPPORTED}; use the ?: operator for conditions"
                    ),
                    pos,
                ))
            }
            "print" | "printf" | "say" | "die" | "warn" | "exit" | "open" | "close" | "system"
            | "exec" | "unlink" | "keys" | "values" | "each" | "delete" | "exists" | "push"
            | "pop" | "shift" | "unshift" | "splice" | "map" | "grep" | "sort" | "wantarray"
            | "bless" | "ref" => format!("the Perl built-in '{word}'"),
            _ => return None,
        };
        Some(self.err(format!("{what} {NOT_SUPPORTED}"), pos))
    }

    #[cold]
    fn unknown_function(&self, word: &str, pos: usize) -> CompileError {
        self.err(
            format!(
                "unknown function '{word}' (tracelab's expression language has no user-defined subs or --init code; its functions are: {})",
                functions::NAMES
            ),
            pos,
        )
    }

    /// A word: a function call, `undef`, a refused keyword, or a bareword.
    ///
    /// Outside `use strict` (mrskew's expressions are not strict), a word
    /// that names no function is a string of itself: mrskew users write
    /// `--gl='FETCH . sprintf(q{%10s},q{acct for})'`. A word followed by
    /// `(` or by a term is a call, so a misspelt function still gets an
    /// error pointing at it.
    fn parse_word(&mut self, word: &str, pos: usize) -> Result<Expr, CompileError> {
        if let Some(e) = self.keyword_error(word, pos) {
            return Err(e);
        }
        if word == "undef" {
            return self.parse_undef(pos);
        }
        let Some(spec) = functions::lookup(word) else {
            let next = &self.peek()?.tok;
            if matches!(next, Tok::Op(Op::LParen) | Tok::Ident(_)) || next.is_operand() {
                return Err(self.unknown_function(word, pos));
            }
            return Ok(Expr::leaf(
                Node::Const(Value::Str(Cow::Owned(word.to_string()))),
                pos,
            ));
        };
        if word == "split" {
            return self.parse_split(pos);
        }
        self.enter(pos, 4)?;
        let args = self.call_args(word, &spec)?;
        self.leave(4);
        self.build_call(word, &spec, args, pos)
    }

    /// `undef` and `undef()` are the undefined value; `undef $x` would
    /// clear a variable.
    fn parse_undef(&mut self, pos: usize) -> Result<Expr, CompileError> {
        if self.peek_op()? == Some(Op::LParen) {
            self.next()?;
            if self.peek_op()? != Some(Op::RParen) {
                return Err(self.err(
                    format!("undef(EXPR) (clearing a variable) {NOT_SUPPORTED}"),
                    pos,
                ));
            }
            self.next()?;
        } else if matches!(self.peek()?.tok, Tok::Scalar(_) | Tok::Array(_)) {
            return Err(self.err(
                format!("undef EXPR (clearing a variable) {NOT_SUPPORTED}"),
                pos,
            ));
        }
        Ok(Expr::leaf(Node::Const(Value::Undef), pos))
    }

    /// The arguments of a call, with or without parentheses.
    fn call_args(
        &mut self,
        word: &str,
        spec: &functions::FuncSpec,
    ) -> Result<Vec<Expr>, CompileError> {
        if self.peek_op()? == Some(Op::LParen) {
            return self.paren_args(word, spec.func.is_none());
        }
        if !self.can_start_term()? {
            return Ok(Vec::new());
        }
        match spec.syntax {
            Syntax::NamedUnary => Ok(vec![self.parse_binary(P_UNI + 1)?]),
            Syntax::ListOp => Ok(flatten(self.parse_binary(P_COMMA)?)),
        }
    }

    /// `( args )` after a function name; `(` is next. `keep_list` for
    /// `scalar(1, 2, 3)`, which is the comma operator in scalar context.
    fn paren_args(&mut self, word: &str, keep_list: bool) -> Result<Vec<Expr>, CompileError> {
        let open = self.next()?.start;
        if self.peek_op()? == Some(Op::RParen) {
            self.next()?;
            return Ok(Vec::new());
        }
        let e = self.parse_binary(P_OR)?;
        self.expect_close(Op::RParen, &format_args!("the '(' of {word}"), open)?;
        Ok(if keep_list { vec![e] } else { flatten(e) })
    }

    fn build_call(
        &mut self,
        word: &str,
        spec: &functions::FuncSpec,
        args: Vec<Expr>,
        pos: usize,
    ) -> Result<Expr, CompileError> {
        if args.len() < spec.min {
            return Err(self.err(
                format!("not enough arguments for {word} (tracelab has no $_ to default to)"),
                pos,
            ));
        }
        if args.len() > spec.max {
            return Err(self.err(format!("too many arguments for {word}"), pos));
        }
        if spec.func == Some(crate::ast::Func::Defined) && matches!(args[0].node, Node::Array(_)) {
            return Err(self.err(
                "Can't use 'defined(@array)' (Maybe you should just omit the defined()?)",
                pos,
            ));
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
            return Err(self.err(
                "split needs a pattern and a string (tracelab has no $_)",
                pos,
            ));
        }
        self.enter(pos, 4)?;
        let (pattern, mut depth) = self.split_pattern()?;
        if self.peek_op()? != Some(Op::Comma) {
            let t = self.peek()?.start;
            return Err(self.err(
                "split needs a string to split after the pattern (tracelab has no $_)",
                t,
            ));
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
        self.leave(4);
        if has_parens {
            self.expect_close(Op::RParen, &"the '(' of split", open)?;
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

    /// split's first argument: a pattern literal, `' '` (awk mode), a
    /// constant string (compiled now) or an expression.
    fn split_pattern(&mut self) -> Result<(SplitPattern, usize), CompileError> {
        if matches!(self.peek()?.tok, Tok::Pattern { qr: false, .. }) {
            let t = self.next()?;
            let (p, d) = self.pattern_token(t, true)?;
            return Ok((SplitPattern::Regex(p), d));
        }
        let e = self.parse_binary(P_COMMA + 1)?;
        let depth = e.depth;
        let pattern = match &e.node {
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
        };
        Ok((pattern, depth))
    }
}

#[derive(Clone, Copy)]
enum Unary {
    Not,
    WordNot,
    Neg,
    Plus,
    BitNot,
    Reference,
    IncDec,
    None,
}

/// `node` after constant folding; a constant is a leaf again.
fn folded(node: Node, depth: usize, pos: usize) -> Expr {
    let node = fold(node);
    let depth = if matches!(node, Node::Const(_)) {
        1
    } else {
        depth
    };
    Expr {
        node,
        depth,
        pos,
        parens: false,
    }
}

/// `qw(...)`: a parenthesised list of constant strings.
fn qw_list(words: Vec<String>, pos: usize) -> Expr {
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

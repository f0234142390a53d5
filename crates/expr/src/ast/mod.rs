//! The compiled expression tree.
//!
//! The parser resolves every variable to a [`VarId`], compiles every constant
//! regex and folds constant sub-expressions, so a [`Node`] holds nothing that
//! needs a look-up at evaluation time. Evaluation ([`eval`]) walks this tree
//! directly; n-ary nodes ([`Node::Logic`], [`Node::Concat`]) keep long
//! `and`/`or`/`.` chains (rc files list 140 idle events that way) shallow.

pub(crate) mod call;
pub(crate) mod eval;
pub(crate) mod fold;

use crate::pattern::{Pattern, SplitPattern};
use crate::{Value, VarId};

/// Binary numeric operators (both operands numified).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

/// Comparison operators: the numeric ones numify, the string ones stringify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    NumLt,
    NumGt,
    NumLe,
    NumGe,
    NumEq,
    NumNe,
    NumCmp,
    StrLt,
    StrGt,
    StrLe,
    StrGe,
    StrEq,
    StrNe,
    StrCmp,
}

impl CmpOp {
    pub(crate) fn is_numeric(self) -> bool {
        matches!(
            self,
            CmpOp::NumLt
                | CmpOp::NumGt
                | CmpOp::NumLe
                | CmpOp::NumGe
                | CmpOp::NumEq
                | CmpOp::NumNe
                | CmpOp::NumCmp
        )
    }
}

/// Short-circuit operators, which return the deciding operand's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Logic {
    /// `&&` / `and`: the first false operand, else the last.
    And,
    /// `||` / `or`: the first true operand, else the last.
    Or,
    /// `//`: the first defined operand, else the last.
    Dor,
}

impl Logic {
    /// Does operand value `v` end the chain (and become its value)?
    /// Evaluation in scalar and list context and constant folding all ask
    /// this, and must agree.
    pub(crate) fn decides(self, v: &Value<'_>) -> bool {
        match self {
            Logic::And => !v.truthy(),
            Logic::Or => v.truthy(),
            Logic::Dor => v.is_defined(),
        }
    }
}

/// Built-in functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Lc,
    Uc,
    Lcfirst,
    Ucfirst,
    Length,
    Substr,
    Index,
    Rindex,
    Sprintf,
    Join,
    Int,
    Abs,
    Sqrt,
    Log,
    Exp,
    Sin,
    Cos,
    Atan2,
    Hex,
    Oct,
    Ord,
    Chr,
    Defined,
    Basename,
    Dirname,
    Fileparse,
    Reverse,
    Quotemeta,
}

#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// A literal or folded constant.
    Const(Value<'static>),
    /// `$name`.
    Scalar(VarId),
    /// `@name`: its elements in list context, their count in scalar context.
    Array(VarId),
    /// `$#name`: the last index.
    ArrayLast(VarId),
    /// `$name[index]`.
    Elem(VarId, Box<Node>),
    /// `$1`, `$2`...: capture groups of the last successful match.
    Capture(usize),
    /// Unary minus (Perl's: `-"foo"` is `"-foo"`).
    Neg(Box<Node>),
    /// `!` and `not`.
    Not(Box<Node>),
    /// `~` on 64-bit unsigned integers.
    BitNot(Box<Node>),
    Num(NumOp, Box<Node>, Box<Node>),
    /// `.` chains and interpolated strings.
    Concat(Vec<Node>),
    /// `x`; `list` when the left side is a parenthesised list (list repetition).
    Repeat {
        item: Box<Node>,
        count: Box<Node>,
        list: bool,
    },
    Cmp(CmpOp, Box<Node>, Box<Node>),
    /// Chained comparison `a < b <= c` (Perl 5.32+): each middle operand is
    /// evaluated once.
    Chain(Box<Node>, Vec<(CmpOp, Node)>),
    Logic(Logic, Vec<Node>),
    Xor(Box<Node>, Box<Node>),
    Cond(Box<Node>, Box<Node>, Box<Node>),
    Match {
        target: Box<Node>,
        pattern: Pattern,
        negate: bool,
    },
    Call(Func, Vec<Node>),
    Split {
        pattern: SplitPattern,
        text: Box<Node>,
        limit: Option<Box<Node>>,
    },
    /// A comma list: all elements in list context, the last in scalar context.
    List(Vec<Node>),
    /// `(LIST)[indices]` and `@name[indices]`.
    Slice {
        list: Box<Node>,
        indices: Box<Node>,
    },
    /// `scalar(EXPR)`: forces scalar context.
    ScalarCtx(Box<Node>),
}

impl Node {
    /// Calls `f` on each direct child.
    pub(crate) fn for_each_child(&self, f: &mut dyn FnMut(&Node)) {
        match self {
            Node::Const(_)
            | Node::Scalar(_)
            | Node::Array(_)
            | Node::ArrayLast(_)
            | Node::Capture(_) => {}
            Node::Elem(_, a)
            | Node::Neg(a)
            | Node::Not(a)
            | Node::BitNot(a)
            | Node::ScalarCtx(a) => f(a),
            Node::Num(_, a, b) | Node::Cmp(_, a, b) | Node::Xor(a, b) => {
                f(a);
                f(b);
            }
            Node::Repeat { item, count, .. } => {
                f(item);
                f(count);
            }
            Node::Concat(v) | Node::Logic(_, v) | Node::Call(_, v) | Node::List(v) => {
                v.iter().for_each(&mut *f)
            }
            Node::Chain(first, rest) => {
                f(first);
                rest.iter().for_each(|(_, n)| f(n));
            }
            Node::Cond(c, a, b) => {
                f(c);
                f(a);
                f(b);
            }
            Node::Match {
                target, pattern, ..
            } => {
                f(target);
                if let Pattern::Dynamic { source, .. } = pattern {
                    f(source);
                }
            }
            Node::Split {
                pattern,
                text,
                limit,
            } => {
                match pattern {
                    SplitPattern::Regex(Pattern::Dynamic { source, .. }) => f(source),
                    SplitPattern::Expr(source) => f(source),
                    _ => {}
                }
                f(text);
                if let Some(l) = limit {
                    f(l);
                }
            }
            Node::Slice { list, indices } => {
                f(list);
                f(indices);
            }
        }
    }

    pub(crate) fn as_const(&self) -> Option<&Value<'static>> {
        match self {
            Node::Const(v) => Some(v),
            _ => None,
        }
    }
}

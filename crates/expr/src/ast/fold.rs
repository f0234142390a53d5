//! Constant folding, applied by the parser to every node it builds.
//!
//! A sub-expression that reads no variable is evaluated once at compile time
//! (`'x' . 'y'`, `1e-6 * 100`, `lc "ABC"`), and short-circuit operators with
//! a constant left side are reduced (`1 and X` is `X`, so mrskew's default
//! filter `((1) and ($dep==$depmin)) and ...` costs nothing for its `1`).
//! A sub-expression whose evaluation fails (`1/0`) is left alone, so that the
//! error is reported when the expression is evaluated, as Perl would at run
//! time. Matches are never folded: in list context they are lists, and they
//! set `$1`...

use crate::ast::eval::Ctx;
use crate::ast::{Logic, Node};
use crate::functions::returns_list;
use crate::{Value, VarId, Vars};

/// The [`Vars`] of a compile-time evaluation, which reads no variables.
pub(crate) struct NoVars;

impl Vars for NoVars {
    fn scalar(&self, _: VarId) -> Value<'_> {
        Value::Undef
    }
    fn array(&self, _: VarId) -> Vec<Value<'_>> {
        Vec::new()
    }
}

/// Evaluates a variable-free node.
pub(crate) fn eval_const(node: &Node) -> Option<Value<'static>> {
    let mut cx = Ctx::new(&NoVars, false);
    node.eval(&mut cx).ok().map(Value::into_owned)
}

fn all_children_const(node: &Node) -> bool {
    let mut all = true;
    node.for_each_child(&mut |c| all &= matches!(c, Node::Const(_)));
    all
}

/// Can `node` be replaced by its value (given constant children)?
fn foldable(node: &Node) -> bool {
    match node {
        Node::Const(_)
        | Node::Scalar(_)
        | Node::Array(_)
        | Node::ArrayLast(_)
        | Node::Elem(..)
        | Node::Capture(_)
        | Node::List(_)
        | Node::Slice { .. }
        | Node::Split { .. } => false,
        Node::Repeat { list: true, .. } => false,
        Node::Call(f, _) if returns_list(*f) => false,
        // A match is a list in list context (its groups, or an empty list
        // when it fails), so its scalar value cannot stand for it; it may
        // also set `$1`.
        Node::Match { .. } => false,
        _ => all_children_const(node),
    }
}

/// Folds `node` if it is constant, and simplifies short-circuit operators
/// with constant operands.
pub(crate) fn fold(node: Node) -> Node {
    match node {
        Node::Logic(kind, items) => fold_logic(kind, items),
        Node::Cond(c, a, b) => match c.as_const() {
            Some(v) => {
                if v.truthy() {
                    *a
                } else {
                    *b
                }
            }
            None => Node::Cond(c, a, b),
        },
        node if foldable(&node) => match eval_const(&node) {
            Some(v) => Node::Const(v),
            None => node,
        },
        node => node,
    }
}

fn fold_logic(kind: Logic, items: Vec<Node>) -> Node {
    let count = items.len();
    let mut out = Vec::with_capacity(count);
    for (i, item) in items.into_iter().enumerate() {
        if out.is_empty() {
            if let Node::Const(v) = &item {
                if kind.decides(v) || i + 1 == count {
                    return item;
                }
                continue;
            }
        }
        out.push(item);
    }
    if out.len() == 1 {
        out.pop().unwrap_or(Node::Const(Value::Undef))
    } else {
        Node::Logic(kind, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::NumOp;

    fn c(n: f64) -> Node {
        Node::Const(Value::Num(n))
    }

    #[test]
    fn folds_arithmetic_but_not_errors() {
        let n = fold(Node::Num(NumOp::Add, Box::new(c(1.0)), Box::new(c(2.0))));
        assert!(matches!(n, Node::Const(Value::Num(v)) if v == 3.0));
        let n = fold(Node::Num(NumOp::Div, Box::new(c(1.0)), Box::new(c(0.0))));
        assert!(matches!(n, Node::Num(NumOp::Div, ..)));
    }

    #[test]
    fn short_circuits_with_constant_left_side() {
        let x = || Node::Scalar(VarId(0));
        assert!(matches!(
            fold(Node::Logic(Logic::And, vec![c(1.0), x()])),
            Node::Scalar(_)
        ));
        assert!(matches!(
            fold(Node::Logic(Logic::And, vec![c(0.0), x()])),
            Node::Const(_)
        ));
        assert!(matches!(
            fold(Node::Logic(Logic::Or, vec![c(0.0), x()])),
            Node::Scalar(_)
        ));
        assert!(matches!(
            fold(Node::Logic(Logic::Or, vec![c(2.0), x()])),
            Node::Const(_)
        ));
        assert!(matches!(
            fold(Node::Logic(
                Logic::Dor,
                vec![Node::Const(Value::Undef), x()]
            )),
            Node::Scalar(_)
        ));
        assert!(
            matches!(fold(Node::Logic(Logic::And, vec![c(1.0), c(0.0)])), Node::Const(Value::Num(v)) if v == 0.0)
        );
        assert!(matches!(
            fold(Node::Logic(Logic::And, vec![x(), c(1.0)])),
            Node::Logic(..)
        ));
        assert!(matches!(
            fold(Node::Cond(
                Box::new(c(0.0)),
                Box::new(x()),
                Box::new(c(5.0))
            )),
            Node::Const(_)
        ));
    }
}

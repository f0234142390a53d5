//! The shapes of expression mrskew users write most, evaluated without
//! walking the tree: a variable alone (`--group='$sqlid'`), a variable
//! compared with a number (`--where='$af < 1'`), and `and`/`or` of such
//! comparisons (`$af >= 1 and $dur < 65`). Walking the tree for `$af < 1`
//! took about 290 instructions a call, a tenth of a profile's work.
//! The results are those of the tree: the tests below compare both on
//! every shape and on undef, strings and NaN.

use crate::ast::eval::num_test;
use crate::ast::{CmpOp, Logic, Node};
use crate::{Value, VarId, Vars};

#[derive(Debug)]
pub(crate) enum Fast {
    /// `$x`.
    Scalar(VarId),
    /// A predicate of numeric comparisons of variables with constants.
    Test(Test),
}

#[derive(Debug)]
pub(crate) enum Test {
    /// `$x OP k` (`var_first`) or `k OP $x`: `$x` numified as Perl does.
    Cmp {
        id: VarId,
        op: CmpOp,
        k: f64,
        var_first: bool,
    },
    All(Vec<Test>),
    Any(Vec<Test>),
}

impl Fast {
    /// The fast form of `root`, if it has one.
    pub(crate) fn of(root: &Node) -> Option<Fast> {
        match root {
            Node::Scalar(id) => Some(Fast::Scalar(*id)),
            _ => Test::of(root).map(Fast::Test),
        }
    }
}

impl Test {
    fn of(node: &Node) -> Option<Test> {
        match node {
            // `<=>` is a number, not a truth: left to the tree.
            Node::Cmp(op, a, b) if op.is_numeric() && *op != CmpOp::NumCmp => {
                match (a.as_ref(), b.as_ref()) {
                    (Node::Scalar(id), Node::Const(v)) | (Node::Const(v), Node::Scalar(id)) => {
                        Some(Test::Cmp {
                            id: *id,
                            op: *op,
                            k: v.to_num(),
                            var_first: matches!(a.as_ref(), Node::Scalar(_)),
                        })
                    }
                    _ => None,
                }
            }
            Node::Logic(Logic::And, items) => items
                .iter()
                .map(Test::of)
                .collect::<Option<_>>()
                .map(Test::All),
            Node::Logic(Logic::Or, items) => items
                .iter()
                .map(Test::of)
                .collect::<Option<_>>()
                .map(Test::Any),
            _ => None,
        }
    }

    /// Perl truth of the predicate.
    pub(crate) fn holds(&self, vars: &dyn Vars) -> bool {
        match self {
            Test::Cmp {
                id,
                op,
                k,
                var_first,
            } => {
                let x = vars.scalar(*id).to_num();
                if *var_first {
                    num_test(*op, x, *k)
                } else {
                    num_test(*op, *k, x)
                }
            }
            Test::All(items) => items.iter().all(|t| t.holds(vars)),
            Test::Any(items) => items.iter().any(|t| t.holds(vars)),
        }
    }

    /// The value Perl gives the predicate: a comparison is 1 or Perl's
    /// false, and `and`/`or` return the deciding operand's value.
    pub(crate) fn value(&self, vars: &dyn Vars) -> Value<'static> {
        match self {
            Test::Cmp { .. } => Value::from_bool(self.holds(vars)),
            Test::All(items) => deciding(items, vars, false),
            Test::Any(items) => deciding(items, vars, true),
        }
    }
}

/// The value of the first of `items` whose truth is `stop`, else of the
/// last: what `and` (`stop` false) and `or` (`stop` true) return. Each
/// item is evaluated once.
fn deciding(items: &[Test], vars: &dyn Vars, stop: bool) -> Value<'static> {
    let mut last = Value::from_bool(!stop);
    for t in items {
        last = t.value(vars);
        if last.truthy() == stop {
            break;
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::eval::Ctx;
    use crate::{Program, Scope};

    const NAMES: [&str; 7] = ["a", "b", "c", "d", "e", "f", "g"];

    struct S;
    impl Scope for S {
        fn scalar(&self, name: &str) -> Option<VarId> {
            NAMES
                .iter()
                .position(|n| *n == name)
                .map(|i| VarId(i as u16))
        }
        fn array(&self, _: &str) -> Option<VarId> {
            None
        }
    }

    /// Numbers, undef, strings Perl numifies in part or not at all, NaN.
    struct V;
    impl Vars for V {
        fn scalar(&self, id: VarId) -> Value<'_> {
            match id.0 {
                0 => Value::Num(0.5),
                1 => Value::Undef,
                2 => Value::Str("1.5abc".into()),
                3 => Value::Str("".into()),
                4 => Value::Num(f64::NAN),
                5 => Value::Num(2.0),
                _ => Value::Str("abc".into()),
            }
        }
        fn array(&self, _: VarId) -> Vec<Value<'_>> {
            Vec::new()
        }
    }

    /// The same value, Perl's false told apart from other empty strings
    /// and NaN from NaN.
    fn same(x: &Value<'_>, y: &Value<'_>) -> bool {
        match (x, y) {
            (Value::Num(a), Value::Num(b)) => a.to_bits() == b.to_bits(),
            _ => x == y && x.is_perl_false() == y.is_perl_false(),
        }
    }

    #[test]
    fn fast_forms_give_what_the_tree_gives() {
        let fast = [
            "$a < 1",
            "1 > $a",
            "$a <= 0.5",
            "$a >= 1",
            "$a == 0.5",
            "$a != 0.5",
            "$b == 0",
            "$b < 1",
            "$c >= 1.5",
            "$c == 1.5",
            "$d != 0",
            "$d == 0",
            "$e < 1",
            "$e != 1",
            "$g == 0",
            "'2' == $f",
            "0x10 > $f",
            "$f == '2abc'",
            "$a >= 0.5 and $f < 3",
            "$a > 1 or $f == 2",
            "$a > 1 || $f > 3",
            "$a < 1 && $c > 1 && $g == 0",
            "$a < 1 && $f > 3",
            "$a > 1 || $f > 3 || $b == 0",
            "$a > 1 && $f == 2",
            "$a < 1 || $f > 3",
            "$a",
            "$b",
            "$d",
            "$g",
            "$e",
        ];
        let slow = [
            "$e == $e",
            "-$a < 0",
            "$a <=> 1",
            "$a lt 1",
            "$a < $f",
            "1 < $a < 3",
        ];
        for src in fast.iter().chain(&slow) {
            let p = Program::compile(src, &S).unwrap();
            let is_fast = p.inner.fast.is_some();
            // `$e == $e` compares two variables: the tree's.
            assert_eq!(is_fast, !slow.contains(src), "{src}");
            let root = &p.inner.root;
            let tree = root.eval(&mut Ctx::new(&V, false)).unwrap();
            let got = p.eval(&V).unwrap();
            assert!(same(&got, &tree), "{src}: {got:?} against {tree:?}");
            let tree_bool = root.eval_bool(&mut Ctx::new(&V, false)).unwrap();
            assert_eq!(p.eval_bool(&V).unwrap(), tree_bool, "{src}");
            let tree_num = root.eval_num(&mut Ctx::new(&V, false)).unwrap();
            let num = p.eval_num(&V).unwrap();
            assert_eq!(
                num.to_bits(),
                tree_num.to_bits(),
                "{src}: {num} against {tree_num}"
            );
        }
    }
}

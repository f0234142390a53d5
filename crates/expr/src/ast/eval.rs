//! Evaluation of the compiled tree, in Perl's three contexts.
//!
//! Each node can be asked for a value ([`Node::eval`], scalar context), a
//! number ([`Node::eval_num`]), a truth value ([`Node::eval_bool`]) or a list
//! ([`Node::eval_list`]). The number and truth paths never build a [`Value`]
//! for arithmetic, comparisons, `and`/`or` and constant-pattern matches, and
//! strings are compared and matched where they lie (numbers are rendered in a
//! stack buffer), so a filter such as `$af >= 1 and $dur < 65` or
//! `$nam =~ /read/i` runs without touching the heap. Bodies of the larger
//! cases live in separate functions to keep the recursive frames small.

use std::borrow::Cow;
use std::cmp::Ordering;

use regex::Regex;

use crate::ast::{CmpOp, Logic, Node, NumOp};
use crate::error::EvalError;
use crate::functions::{to_iv, to_uv};
use crate::number_format::{write_perl_number, NumBuf};
use crate::pattern::{awk_regex, split_fields, with_dynamic_regex, Pattern, SplitPattern};
use crate::value::{looks_like_number, perl_str_to_num, too_long, MAX_STRING_BYTES};
use crate::{Value, VarId, Vars};

type R<T> = Result<T, EvalError>;

/// Per-evaluation state.
pub(crate) struct Ctx<'a> {
    pub vars: &'a dyn Vars,
    /// Whether the program reads `$1`..: only then do matches record groups.
    pub want_caps: bool,
    /// `$1`, `$2`... of the last successful match in this evaluation.
    pub caps: Vec<Option<String>>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(vars: &'a dyn Vars, want_caps: bool) -> Ctx<'a> {
        Ctx {
            vars,
            want_caps,
            caps: Vec::new(),
        }
    }
}

/// Appends the Perl string form of `v`.
pub(crate) fn push_value(out: &mut String, v: &Value<'_>) {
    match v {
        Value::Undef => {}
        Value::Num(n) => {
            let _ = write_perl_number(out, *n);
        }
        Value::Str(s) => out.push_str(s),
    }
}

fn owned(s: String) -> Value<'static> {
    Value::Str(Cow::Owned(s))
}

impl Node {
    /// Scalar-context value.
    ///
    /// This and the other `eval*` methods only dispatch: each case has its
    /// own function, so that the frames on the recursive path stay small
    /// even in an unoptimised build (see `parser::MAX_DEPTH`).
    pub(crate) fn eval<'a>(&'a self, cx: &mut Ctx<'a>) -> R<Value<'a>> {
        match self {
            Node::Const(v) => Ok(v.reborrow()),
            Node::Scalar(id) => Ok(cx.vars.scalar(*id)),
            Node::Array(id) => Ok(Value::Num(cx.vars.array(*id).len() as f64)),
            Node::ArrayLast(id) => Ok(Value::Num(cx.vars.array(*id).len() as f64 - 1.0)),
            Node::Elem(id, index) => eval_elem(*id, index, cx),
            Node::Capture(n) => Ok(capture(cx, *n)),
            Node::Neg(a) => eval_neg(a, cx),
            Node::Num(op @ (NumOp::BitAnd | NumOp::BitOr | NumOp::BitXor), a, b) => {
                eval_bitwise(*op, a, b, cx)
            }
            Node::Num(op @ (NumOp::Shl | NumOp::Shr), a, b) => eval_shift(*op, a, b, cx),
            Node::BitNot(a) => eval_bit_not(a, cx),
            Node::Num(..) => value_of_num(self, cx),
            Node::Concat(parts) => eval_concat(parts, cx),
            Node::Repeat { item, count, .. } => eval_repeat(item, count, cx),
            Node::Cmp(CmpOp::NumCmp, a, b) => eval_spaceship(a, b, cx),
            Node::Cmp(CmpOp::StrCmp, a, b) => eval_str_cmp(a, b, cx),
            Node::Not(_) | Node::Cmp(..) | Node::Chain(..) | Node::Match { .. } | Node::Xor(..) => {
                value_of_bool(self, cx)
            }
            Node::Logic(kind, items) => eval_logic(*kind, items, cx),
            Node::Cond(c, a, b) => eval_cond(c, a, b, cx),
            Node::Call(f, args) => crate::ast::call::call(*f, args, cx),
            Node::Split {
                pattern,
                text,
                limit,
            } => eval_split_count(pattern, text, limit.as_deref(), cx),
            Node::List(items) => eval_comma(items, cx),
            Node::Slice { list, indices } => eval_slice_last(list, indices, cx),
            Node::ScalarCtx(a) => a.eval(cx),
        }
    }

    /// The value numified, without building a [`Value`] where possible.
    pub(crate) fn eval_num<'a>(&'a self, cx: &mut Ctx<'a>) -> R<f64> {
        match self {
            Node::Const(v) => Ok(v.to_num()),
            Node::Scalar(id) => Ok(cx.vars.scalar(*id).to_num()),
            Node::Num(NumOp::BitAnd | NumOp::BitOr | NumOp::BitXor, ..) | Node::BitNot(_) => {
                // Bit operators work on strings too; decide from the values.
                num_of_value(self, cx)
            }
            Node::Num(op, a, b) => num_binary(*op, a, b, cx),
            Node::Neg(a) => num_neg(a, cx),
            Node::Cmp(op, ..) if !matches!(op, CmpOp::NumCmp | CmpOp::StrCmp) => {
                num_of_bool(self, cx)
            }
            Node::Chain(..) | Node::Match { .. } | Node::Not(_) | Node::Xor(..) => {
                num_of_bool(self, cx)
            }
            Node::Cond(c, a, b) => num_cond(c, a, b, cx),
            _ => num_of_value(self, cx),
        }
    }

    /// Perl truth of the value, without building a [`Value`] where possible.
    pub(crate) fn eval_bool<'a>(&'a self, cx: &mut Ctx<'a>) -> R<bool> {
        match self {
            Node::Const(v) => Ok(v.truthy()),
            Node::Scalar(id) => Ok(cx.vars.scalar(*id).truthy()),
            Node::Cmp(op, a, b) if !matches!(op, CmpOp::NumCmp | CmpOp::StrCmp) => {
                bool_cmp(*op, a, b, cx)
            }
            Node::Chain(first, rest) => eval_chain(first, rest, cx),
            Node::Match {
                target,
                pattern,
                negate,
            } => bool_match(target, pattern, *negate, cx),
            Node::Not(a) => bool_not(a, cx),
            Node::Logic(Logic::And, items) => bool_all(items, cx),
            Node::Logic(Logic::Or, items) => bool_any(items, cx),
            Node::Xor(a, b) => bool_xor(a, b, cx),
            Node::Cond(c, a, b) => bool_cond(c, a, b, cx),
            Node::Num(NumOp::BitAnd | NumOp::BitOr | NumOp::BitXor, ..) => bool_of_value(self, cx),
            Node::Num(..) => bool_of_num(self, cx),
            _ => bool_of_value(self, cx),
        }
    }

    /// List-context evaluation, appending to `out`.
    pub(crate) fn eval_list<'a>(&'a self, cx: &mut Ctx<'a>, out: &mut Vec<Value<'a>>) -> R<()> {
        match self {
            Node::List(items) => list_items(items, cx, out),
            Node::Array(id) => {
                out.extend(cx.vars.array(*id));
                Ok(())
            }
            Node::Slice { list, indices } => eval_slice(list, indices, cx, out),
            Node::Split {
                pattern,
                text,
                limit,
            } => list_split(pattern, text, limit.as_deref(), cx, out),
            Node::Call(f, args) if crate::functions::returns_list(*f) => {
                crate::ast::call::call_list(*f, args, cx, out)
            }
            Node::Cond(c, a, b) => list_cond(c, a, b, cx, out),
            Node::Logic(kind, items) => list_logic(*kind, items, cx, out),
            Node::Match {
                target,
                pattern,
                negate: false,
            } => list_match(target, pattern, cx, out),
            Node::Repeat {
                item,
                count,
                list: true,
            } => list_repeat(item, count, cx, out),
            _ => list_scalar(self, cx, out),
        }
    }
}

fn value_of_num<'a>(node: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    Ok(Value::Num(node.eval_num(cx)?))
}

fn value_of_bool<'a>(node: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    Ok(Value::from_bool(node.eval_bool(cx)?))
}

fn eval_neg<'a>(a: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    Ok(negate(a.eval(cx)?))
}

fn eval_spaceship<'a>(a: &'a Node, b: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let x = a.eval_num(cx)?;
    let y = b.eval_num(cx)?;
    Ok(match x.partial_cmp(&y) {
        Some(o) => Value::Num(o as i8 as f64),
        None => Value::Undef,
    })
}

fn eval_str_cmp<'a>(a: &'a Node, b: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let x = a.eval(cx)?;
    let y = b.eval(cx)?;
    Ok(Value::Num(str_order(&x, &y) as i8 as f64))
}

fn eval_cond<'a>(c: &'a Node, a: &'a Node, b: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    branch(c, a, b, cx)?.eval(cx)
}

/// `c ? a : b` picks its operand the same way in every context.
fn branch<'a>(c: &'a Node, a: &'a Node, b: &'a Node, cx: &mut Ctx<'a>) -> R<&'a Node> {
    Ok(if c.eval_bool(cx)? { a } else { b })
}

fn eval_split_count<'a>(
    pattern: &'a SplitPattern,
    text: &'a Node,
    limit: Option<&'a Node>,
    cx: &mut Ctx<'a>,
) -> R<Value<'a>> {
    Ok(Value::Num(
        eval_split(pattern, text, limit, cx)?.len() as f64
    ))
}

/// The comma operator in scalar context: every element is evaluated, the
/// last one is the value.
fn eval_comma<'a>(items: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let Some((last, init)) = items.split_last() else {
        return Ok(Value::Undef);
    };
    for item in init {
        item.eval(cx)?;
    }
    last.eval(cx)
}

fn eval_slice_last<'a>(list: &'a Node, indices: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let mut out = Vec::new();
    eval_slice(list, indices, cx, &mut out)?;
    Ok(out.pop().unwrap_or(Value::Undef))
}

fn num_binary<'a>(op: NumOp, a: &'a Node, b: &'a Node, cx: &mut Ctx<'a>) -> R<f64> {
    let x = a.eval_num(cx)?;
    let y = b.eval_num(cx)?;
    arith(op, x, y)
}

/// Perl's string negation ("-foo") numifies to the same value as this.
fn num_neg<'a>(a: &'a Node, cx: &mut Ctx<'a>) -> R<f64> {
    let n = a.eval_num(cx)?;
    Ok(if n == 0.0 { 0.0 } else { -n })
}

/// A 64-bit unsigned result (bit operators): perl prints it as an
/// integer, so one past what `%.15g` keeps exactly is returned as digits.
fn uv_value(u: u64) -> Value<'static> {
    if u < 1_000_000_000_000_000 {
        Value::Num(u as f64)
    } else {
        owned(u.to_string())
    }
}

/// The unsigned 64-bit value of an operand of a bit operator. An integer
/// string is read exactly, as perl does (so the digits [`uv_value`] returns
/// past 1e15 do not lose precision through `f64`).
fn uv_of(v: &Value<'_>) -> u64 {
    if let Value::Str(s) = v {
        let t = s.trim();
        if let Ok(u) = t.parse::<u64>() {
            return u;
        }
        if let Ok(i) = t.parse::<i64>() {
            return i as u64;
        }
    }
    to_uv(v.to_num())
}

/// `&`, `|`, `^`: on numbers when either operand is a number, else on the
/// characters of two strings (perl's string bitwise operators).
fn eval_bitwise<'a>(op: NumOp, a: &'a Node, b: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let x = a.eval(cx)?;
    let y = b.eval(cx)?;
    let numeric = |v: &Value<'_>| matches!(v, Value::Num(_)) || v.is_perl_false();
    if numeric(&x) || numeric(&y) {
        let (p, q) = (uv_of(&x), uv_of(&y));
        return Ok(uv_value(match op {
            NumOp::BitAnd => p & q,
            NumOp::BitOr => p | q,
            _ => p ^ q,
        }));
    }
    let (mut bx, mut by) = (NumBuf::new(), NumBuf::new());
    let (sx, sy) = (x.as_str_in(&mut bx), y.as_str_in(&mut by));
    let name = match op {
        NumOp::BitAnd => "bitwise and (&)",
        NumOp::BitOr => "bitwise or (|)",
        _ => "bitwise xor (^)",
    };
    let bytes = |s: &str| -> R<Vec<u8>> {
        s.chars()
            .map(|c| u8::try_from(u32::from(c)))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| {
                EvalError::new(format!(
                    "Use of strings with code points over 0xFF as arguments to {name} operator is not allowed"
                ))
            })
    };
    let (p, q) = (bytes(sx)?, bytes(sy)?);
    let len = if op == NumOp::BitAnd {
        p.len().min(q.len())
    } else {
        p.len().max(q.len())
    };
    let out: String = (0..len)
        .map(|i| {
            let (u, v) = (
                p.get(i).copied().unwrap_or(0),
                q.get(i).copied().unwrap_or(0),
            );
            char::from(match op {
                NumOp::BitAnd => u & v,
                NumOp::BitOr => u | v,
                _ => u ^ v,
            })
        })
        .collect();
    Ok(owned(out))
}

/// `~`: the 64-bit complement of a number, or the complement of each
/// character of a string (undef counts as the empty string, as in perl).
fn eval_bit_not<'a>(a: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    match a.eval(cx)? {
        Value::Num(n) => Ok(uv_value(!to_uv(n))),
        v if v.is_perl_false() => Ok(uv_value(!0)),
        v => {
            let mut buf = NumBuf::new();
            let s = v.as_str_in(&mut buf);
            let mut out = String::with_capacity(s.len());
            for c in s.chars() {
                let b = u8::try_from(u32::from(c)).map_err(|_| {
                    EvalError::new("Use of strings with code points over 0xFF as arguments to 1's complement (~) operator is not allowed")
                })?;
                out.push(char::from(!b));
            }
            Ok(owned(out))
        }
    }
}

/// `<<`, `>>`: always numeric, with an unsigned result.
fn eval_shift<'a>(op: NumOp, a: &'a Node, b: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let x = a.eval(cx)?;
    let y = b.eval_num(cx)?;
    Ok(uv_value(shift(uv_of(&x), y, op == NumOp::Shl)))
}

fn num_of_bool<'a>(node: &'a Node, cx: &mut Ctx<'a>) -> R<f64> {
    Ok(if node.eval_bool(cx)? { 1.0 } else { 0.0 })
}

fn num_cond<'a>(c: &'a Node, a: &'a Node, b: &'a Node, cx: &mut Ctx<'a>) -> R<f64> {
    branch(c, a, b, cx)?.eval_num(cx)
}

fn num_of_value<'a>(node: &'a Node, cx: &mut Ctx<'a>) -> R<f64> {
    Ok(node.eval(cx)?.to_num())
}

fn bool_cmp<'a>(op: CmpOp, a: &'a Node, b: &'a Node, cx: &mut Ctx<'a>) -> R<bool> {
    if op.is_numeric() {
        let x = a.eval_num(cx)?;
        let y = b.eval_num(cx)?;
        Ok(num_test(op, x, y))
    } else {
        let x = a.eval(cx)?;
        let y = b.eval(cx)?;
        Ok(str_test(op, str_order(&x, &y)))
    }
}

fn bool_match<'a>(
    target: &'a Node,
    pattern: &'a Pattern,
    negate: bool,
    cx: &mut Ctx<'a>,
) -> R<bool> {
    Ok(eval_match(target, pattern, cx)? != negate)
}

fn bool_not<'a>(a: &'a Node, cx: &mut Ctx<'a>) -> R<bool> {
    Ok(!a.eval_bool(cx)?)
}

fn bool_all<'a>(items: &'a [Node], cx: &mut Ctx<'a>) -> R<bool> {
    for item in items {
        if !item.eval_bool(cx)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn bool_any<'a>(items: &'a [Node], cx: &mut Ctx<'a>) -> R<bool> {
    for item in items {
        if item.eval_bool(cx)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn bool_xor<'a>(a: &'a Node, b: &'a Node, cx: &mut Ctx<'a>) -> R<bool> {
    let x = a.eval_bool(cx)?;
    let y = b.eval_bool(cx)?;
    Ok(x != y)
}

fn bool_cond<'a>(c: &'a Node, a: &'a Node, b: &'a Node, cx: &mut Ctx<'a>) -> R<bool> {
    branch(c, a, b, cx)?.eval_bool(cx)
}

fn bool_of_num<'a>(node: &'a Node, cx: &mut Ctx<'a>) -> R<bool> {
    Ok(node.eval_num(cx)? != 0.0)
}

fn bool_of_value<'a>(node: &'a Node, cx: &mut Ctx<'a>) -> R<bool> {
    Ok(node.eval(cx)?.truthy())
}

fn list_items<'a>(items: &'a [Node], cx: &mut Ctx<'a>, out: &mut Vec<Value<'a>>) -> R<()> {
    for item in items {
        item.eval_list(cx, out)?;
    }
    Ok(())
}

fn list_split<'a>(
    pattern: &'a SplitPattern,
    text: &'a Node,
    limit: Option<&'a Node>,
    cx: &mut Ctx<'a>,
    out: &mut Vec<Value<'a>>,
) -> R<()> {
    let fields = eval_split(pattern, text, limit, cx)?;
    out.extend(fields.into_iter().map(|f| f.map_or(Value::Undef, owned)));
    Ok(())
}

fn list_cond<'a>(
    c: &'a Node,
    a: &'a Node,
    b: &'a Node,
    cx: &mut Ctx<'a>,
    out: &mut Vec<Value<'a>>,
) -> R<()> {
    branch(c, a, b, cx)?.eval_list(cx, out)
}

/// `(LIST) x N` in list context.
fn list_repeat<'a>(
    item: &'a Node,
    count: &'a Node,
    cx: &mut Ctx<'a>,
    out: &mut Vec<Value<'a>>,
) -> R<()> {
    let mut items = Vec::new();
    item.eval_list(cx, &mut items)?;
    let n = repeat_count(count.eval_num(cx)?);
    if items.len().saturating_mul(n) > MAX_STRING_BYTES {
        return Err(too_large());
    }
    for _ in 0..n {
        out.extend(items.iter().cloned());
    }
    Ok(())
}

/// `&&`, `||`, `//` in list context: a deciding operand is a scalar, the
/// last operand is evaluated in list context (`$x && @bind`).
fn list_logic<'a>(
    kind: Logic,
    items: &'a [Node],
    cx: &mut Ctx<'a>,
    out: &mut Vec<Value<'a>>,
) -> R<()> {
    let Some((last, init)) = items.split_last() else {
        return Ok(());
    };
    for item in init {
        let v = item.eval(cx)?;
        if kind.decides(&v) {
            out.push(v);
            return Ok(());
        }
    }
    last.eval_list(cx, out)
}

/// `EXPR =~ /(..)(..)/` in list context: the groups on success (or `1`
/// when there are none), an empty list on failure.
fn list_match<'a>(
    target: &'a Node,
    pattern: &'a Pattern,
    cx: &mut Ctx<'a>,
    out: &mut Vec<Value<'a>>,
) -> R<()> {
    let v = target.eval(cx)?;
    let mut buf = NumBuf::new();
    let s = v.as_str_in(&mut buf);
    let groups = with_pattern(pattern, cx, |re, _| capture_groups(re, s))?;
    if let Some(groups) = groups {
        if groups.is_empty() {
            out.push(Value::Num(1.0));
        } else {
            out.extend(groups.iter().map(|g| g.clone().map_or(Value::Undef, owned)));
        }
        if cx.want_caps {
            cx.caps = groups;
        }
    }
    Ok(())
}

fn capture_groups(re: &Regex, s: &str) -> Option<Vec<Option<String>>> {
    re.captures(s).map(|c| {
        (1..c.len())
            .map(|g| c.get(g).map(|m| m.as_str().to_string()))
            .collect()
    })
}

fn list_scalar<'a>(node: &'a Node, cx: &mut Ctx<'a>, out: &mut Vec<Value<'a>>) -> R<()> {
    out.push(node.eval(cx)?);
    Ok(())
}

fn too_large() -> EvalError {
    too_long("repetition (x)")
}

/// Perl's array index: truncated, negative from the end, undef outside.
fn pick<'a>(mut items: Vec<Value<'a>>, index: f64) -> Value<'a> {
    let len = items.len() as i64;
    let k = to_iv(index);
    let k = if k < 0 { k + len } else { k };
    if k < 0 || k >= len {
        return Value::Undef;
    }
    items.swap_remove(k as usize)
}

fn eval_elem<'a>(id: VarId, index: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let i = index.eval_num(cx)?;
    Ok(pick(cx.vars.array(id), i))
}

fn capture<'a>(cx: &Ctx<'a>, n: usize) -> Value<'a> {
    match cx.caps.get(n.wrapping_sub(1)) {
        Some(Some(s)) => owned(s.clone()),
        _ => Value::Undef,
    }
}

/// Perl's unary minus: strings that start like an identifier get a `-`,
/// `-foo` becomes `+foo`, `+x` becomes `-x`, anything else is numeric.
pub(crate) fn negate(v: Value<'_>) -> Value<'static> {
    let s = match v {
        Value::Undef => return Value::Num(0.0),
        Value::Num(n) => return Value::Num(if n == 0.0 { 0.0 } else { -n }),
        Value::Str(s) => s,
    };
    let first = s.chars().next();
    match first {
        // perl (reading bytes, as mrskew does) tests for an ASCII identifier start.
        Some(c) if c.is_ascii_alphabetic() || c == '_' => owned(format!("-{s}")),
        Some('+') => owned(format!("-{}", &s[1..])),
        Some('-') if !looks_like_number(&s) => owned(format!("+{}", &s[1..])),
        _ => {
            let n = perl_str_to_num(&s);
            Value::Num(if n == 0.0 { 0.0 } else { -n })
        }
    }
}

/// Perl's `%`: integer modulus whose result has the sign of the right
/// operand; operands beyond 64 bits use the floating-point rule of perlop.
fn perl_mod(l: f64, r: f64) -> R<f64> {
    const UV_MAX_P1: f64 = 18_446_744_073_709_551_616.0;
    let right_neg = r < 0.0;
    let mut dright = r.abs();
    let left_neg = l < 0.0;
    let mut dleft = l.abs();
    if dright < UV_MAX_P1 {
        let right = dright as u64;
        if dleft < UV_MAX_P1 {
            let left = dleft as u64;
            if right == 0 {
                return Err(EvalError::new("Illegal modulus zero"));
            }
            let mut ans = left % right;
            if left_neg != right_neg && ans != 0 {
                ans = right - ans;
            }
            return Ok(if right_neg { -(ans as f64) } else { ans as f64 });
        }
        dleft = (dleft + 0.5).floor();
        dright = (dright + 0.5).floor();
    }
    if dright == 0.0 {
        return Err(EvalError::new("Illegal modulus zero"));
    }
    let mut ans = dleft % dright;
    if left_neg != right_neg && ans != 0.0 {
        ans = dright - ans;
    }
    Ok(if right_neg { -ans } else { ans })
}

/// Perl's `<<`/`>>` on 64-bit unsigned values: a negative count shifts the
/// other way, and a count of 64 or more (however large) gives 0.
fn shift(v: u64, by: f64, left: bool) -> u64 {
    let by = if by.is_nan() { 0.0 } else { by.trunc() };
    let (by, left) = if by < 0.0 { (-by, !left) } else { (by, left) };
    if by >= 64.0 {
        0
    } else if by == 0.0 {
        v
    } else if left {
        v << (by as u32)
    } else {
        v >> (by as u32)
    }
}

pub(crate) fn arith(op: NumOp, a: f64, b: f64) -> R<f64> {
    Ok(match op {
        NumOp::Add => a + b,
        NumOp::Sub => a - b,
        NumOp::Mul => a * b,
        NumOp::Div => {
            if b == 0.0 {
                return Err(EvalError::new("Illegal division by zero"));
            }
            a / b
        }
        NumOp::Mod => return perl_mod(a, b),
        NumOp::Pow => a.powf(b),
        NumOp::BitAnd => (to_uv(a) & to_uv(b)) as f64,
        NumOp::BitOr => (to_uv(a) | to_uv(b)) as f64,
        NumOp::BitXor => (to_uv(a) ^ to_uv(b)) as f64,
        NumOp::Shl => shift(to_uv(a), b, true) as f64,
        NumOp::Shr => shift(to_uv(a), b, false) as f64,
    })
}

fn eval_concat<'a>(parts: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let mut s = String::new();
    for part in parts {
        let v = part.eval(cx)?;
        push_value(&mut s, &v);
        if s.len() > MAX_STRING_BYTES {
            return Err(too_long("concatenation (.)"));
        }
    }
    Ok(owned(s))
}

fn repeat_count(n: f64) -> usize {
    if n.is_nan() || n < 1.0 {
        0
    } else {
        to_iv(n).max(0) as usize
    }
}

fn eval_repeat<'a>(item: &'a Node, count: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let v = item.eval(cx)?;
    let n = repeat_count(count.eval_num(cx)?);
    let mut buf = NumBuf::new();
    let s = v.as_str_in(&mut buf);
    if s.len().saturating_mul(n) > MAX_STRING_BYTES {
        return Err(too_large());
    }
    Ok(owned(s.repeat(n)))
}

pub(crate) fn num_test(op: CmpOp, x: f64, y: f64) -> bool {
    match op {
        CmpOp::NumLt => x < y,
        CmpOp::NumGt => x > y,
        CmpOp::NumLe => x <= y,
        CmpOp::NumGe => x >= y,
        CmpOp::NumEq => x == y,
        CmpOp::NumNe => x != y,
        _ => false,
    }
}

fn str_test(op: CmpOp, o: Ordering) -> bool {
    match op {
        CmpOp::StrLt => o == Ordering::Less,
        CmpOp::StrGt => o == Ordering::Greater,
        CmpOp::StrLe => o != Ordering::Greater,
        CmpOp::StrGe => o != Ordering::Less,
        CmpOp::StrEq => o == Ordering::Equal,
        CmpOp::StrNe => o != Ordering::Equal,
        _ => false,
    }
}

/// String order of two values (code point order, like Perl without locale).
fn str_order(x: &Value<'_>, y: &Value<'_>) -> Ordering {
    let (mut bx, mut by) = (NumBuf::new(), NumBuf::new());
    x.as_str_in(&mut bx).cmp(y.as_str_in(&mut by))
}

fn test_values(op: CmpOp, x: &Value<'_>, y: &Value<'_>) -> bool {
    if op.is_numeric() {
        num_test(op, x.to_num(), y.to_num())
    } else {
        str_test(op, str_order(x, y))
    }
}

fn eval_chain<'a>(first: &'a Node, rest: &'a [(CmpOp, Node)], cx: &mut Ctx<'a>) -> R<bool> {
    let mut prev = first.eval(cx)?;
    for (op, node) in rest {
        let cur = node.eval(cx)?;
        if !test_values(*op, &prev, &cur) {
            return Ok(false);
        }
        prev = cur;
    }
    Ok(true)
}

fn eval_logic<'a>(kind: Logic, items: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let Some((last, init)) = items.split_last() else {
        return Ok(Value::Undef);
    };
    for item in init {
        let v = item.eval(cx)?;
        if kind.decides(&v) {
            return Ok(v);
        }
    }
    last.eval(cx)
}

/// Runs `re` on `s`, recording groups when the program reads them.
fn run_match(re: &Regex, s: &str, cx: &mut Ctx<'_>) -> bool {
    if !cx.want_caps {
        return re.is_match(s);
    }
    match re.captures(s) {
        Some(c) => {
            cx.caps = (1..c.len())
                .map(|g| c.get(g).map(|m| m.as_str().to_string()))
                .collect();
            true
        }
        None => false,
    }
}

fn eval_match<'a>(target: &'a Node, pattern: &'a Pattern, cx: &mut Ctx<'a>) -> R<bool> {
    let v = target.eval(cx)?;
    let mut buf = NumBuf::new();
    let s = v.as_str_in(&mut buf);
    with_pattern(pattern, cx, |re, cx| run_match(re, s, cx))
}

/// Runs `f` with the regex of `pattern`: the one compiled with the
/// program, or for a run-time pattern the one its text compiles to (through
/// the per-thread cache, so no allocation once warm). `f` gets the context
/// back, since evaluating the pattern's text needed it first.
fn with_pattern<'a, T>(
    pattern: &'a Pattern,
    cx: &mut Ctx<'a>,
    f: impl FnOnce(&Regex, &mut Ctx<'a>) -> T,
) -> R<T> {
    match pattern {
        Pattern::Static(re) => Ok(f(re, cx)),
        Pattern::Dynamic { source, flags } => {
            let p = source.eval(cx)?;
            let mut pbuf = NumBuf::new();
            let ps = p.as_str_in(&mut pbuf);
            with_dynamic_regex(ps, *flags, |re| f(re, cx))
        }
    }
}

fn eval_split<'a>(
    pattern: &'a SplitPattern,
    text: &'a Node,
    limit: Option<&'a Node>,
    cx: &mut Ctx<'a>,
) -> R<Vec<Option<String>>> {
    let t = text.eval(cx)?;
    let limit = match limit {
        Some(l) => to_iv(l.eval_num(cx)?),
        None => 0,
    };
    let mut tbuf = NumBuf::new();
    let ts = t.as_str_in(&mut tbuf);
    match pattern {
        SplitPattern::Awk => Ok(split_fields(awk_regex(), ts, true, limit)),
        SplitPattern::Regex(p) => with_pattern(p, cx, |re, _| split_fields(re, ts, false, limit)),
        SplitPattern::Expr(source) => {
            let p = source.eval(cx)?;
            let mut pbuf = NumBuf::new();
            let ps = p.as_str_in(&mut pbuf);
            if ps == " " {
                return Ok(split_fields(awk_regex(), ts, true, limit));
            }
            let flags = crate::perl_regex::Flags {
                m: ps == "^",
                ..Default::default()
            };
            with_dynamic_regex(ps, flags, |re| split_fields(re, ts, false, limit))
        }
    }
}

fn eval_slice<'a>(
    list: &'a Node,
    indices: &'a Node,
    cx: &mut Ctx<'a>,
    out: &mut Vec<Value<'a>>,
) -> R<()> {
    let mut items = Vec::new();
    list.eval_list(cx, &mut items)?;
    if items.is_empty() {
        // "A slice of an empty list is still an empty list."
        return Ok(());
    }
    let mut idx = Vec::new();
    indices.eval_list(cx, &mut idx)?;
    let len = items.len() as i64;
    for i in idx {
        let k = to_iv(i.to_num());
        let k = if k < 0 { k + len } else { k };
        if k >= 0 && k < len {
            out.push(items[k as usize].clone());
        } else {
            out.push(Value::Undef);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modulus_follows_perl() {
        assert_eq!(perl_mod(7.0, -3.0).unwrap(), -2.0);
        assert_eq!(perl_mod(-7.0, 3.0).unwrap(), 2.0);
        assert_eq!(perl_mod(7.5, 2.0).unwrap(), 1.0);
        assert_eq!(perl_mod(-7.0, -3.0).unwrap(), -1.0);
        assert_eq!(perl_mod(1e300, 7.0).unwrap(), 1.0);
        assert_eq!(perl_mod(-7.0, 1e300).unwrap(), 1e300);
        assert!(perl_mod(1.0, 0.0).is_err());
        assert!(perl_mod(1.0, 0.5).is_err());
    }

    #[test]
    fn negation_follows_perl() {
        let n = |s: &str| negate(Value::from(s)).to_string();
        assert_eq!(n("foo"), "-foo");
        assert_eq!(n("-foo"), "+foo");
        assert_eq!(n("+foo"), "-foo");
        assert_eq!(n("12abc"), "-12");
        assert_eq!(n("-12"), "12");
        assert_eq!(n(""), "0");
        assert_eq!(n("0"), "0");
        assert_eq!(negate(Value::Undef).to_string(), "0");
        assert!(looks_like_number(" 1.5e3 "));
        assert!(!looks_like_number("1e"));
        assert!(!looks_like_number("-foo"));
    }

    #[test]
    fn bit_operations() {
        assert_eq!(arith(NumOp::BitAnd, -1.0, 255.0).unwrap(), 255.0);
        assert_eq!(arith(NumOp::Shl, 1.0, 3.0).unwrap(), 8.0);
        assert_eq!(arith(NumOp::Shr, 256.0, 2.0).unwrap(), 64.0);
        assert_eq!(arith(NumOp::Shl, 1.0, 64.0).unwrap(), 0.0);
        assert_eq!(arith(NumOp::Shl, 4.0, -1.0).unwrap(), 2.0);
        assert_eq!(arith(NumOp::BitXor, 6.0, 3.0).unwrap(), 5.0);
        assert_eq!(arith(NumOp::BitOr, 6.0, 3.0).unwrap(), 7.0);
        assert!(arith(NumOp::Div, 1.0, 0.0).is_err());
    }

    #[test]
    fn array_index_picks_like_perl() {
        let v = || vec![Value::Num(1.0), Value::Num(2.0), Value::Num(3.0)];
        assert_eq!(pick(v(), 0.0), Value::Num(1.0));
        assert_eq!(pick(v(), -1.0), Value::Num(3.0));
        assert_eq!(pick(v(), 1.9), Value::Num(2.0));
        assert_eq!(pick(v(), 3.0), Value::Undef);
        assert_eq!(pick(v(), -4.0), Value::Undef);
    }
}

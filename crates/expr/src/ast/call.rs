//! Evaluation of built-in function calls: argument contexts (scalar for
//! named unary operators and `substr`/`index`, a flattened list for
//! `join`/`sprintf`/`reverse`/`basename`) and the calls into
//! [`crate::functions`] and [`crate::sprintf`].

use std::borrow::Cow;

use crate::ast::eval::{push_value, Ctx};
use crate::ast::{Func, Node};
use crate::error::EvalError;
use crate::functions as f;
use crate::number_format::NumBuf;
use crate::value::{perl_number_to_string, too_long, MAX_STRING_BYTES};
use crate::Value;

type R<T> = Result<T, EvalError>;

fn owned(s: String) -> Value<'static> {
    Value::Str(Cow::Owned(s))
}

/// Evaluates `n` in scalar context and hands its string form to `g`.
fn with_str<'a, T>(n: &'a Node, cx: &mut Ctx<'a>, g: impl FnOnce(&str) -> T) -> R<T> {
    let v = n.eval(cx)?;
    let mut buf = NumBuf::new();
    Ok(g(v.as_str_in(&mut buf)))
}

/// The list-context values of `args`.
fn list<'a>(args: &'a [Node], cx: &mut Ctx<'a>) -> R<Vec<Value<'a>>> {
    let mut out = Vec::new();
    for a in args {
        a.eval_list(cx, &mut out)?;
    }
    Ok(out)
}

fn arg(args: &[Node], i: usize) -> R<&Node> {
    args.get(i)
        .ok_or_else(|| EvalError::new("internal error: missing function argument"))
}

/// The arguments after the first.
fn rest(args: &[Node]) -> &[Node] {
    args.get(1..).unwrap_or(&[])
}

fn opt_num<'a>(args: &'a [Node], i: usize, cx: &mut Ctx<'a>) -> R<Option<f64>> {
    match args.get(i) {
        Some(n) => Ok(Some(n.eval_num(cx)?)),
        None => Ok(None),
    }
}

/// Scalar-context call. Only dispatches, to keep the recursive frame small.
pub(crate) fn call<'a>(func: Func, args: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    match func {
        Func::Lc | Func::Uc | Func::Lcfirst | Func::Ucfirst | Func::Quotemeta => {
            string_fn(func, arg(args, 0)?, cx)
        }
        Func::Dirname => dirname(args, cx),
        Func::Length => length(arg(args, 0)?, cx),
        Func::Defined => defined(arg(args, 0)?, cx),
        Func::Int | Func::Abs | Func::Sqrt | Func::Log | Func::Exp | Func::Sin | Func::Cos => {
            math(func, arg(args, 0)?, cx)
        }
        Func::Atan2 => atan2(args, cx),
        Func::Hex | Func::Oct | Func::Ord => string_to_num(func, arg(args, 0)?, cx),
        Func::Chr => chr(arg(args, 0)?, cx),
        Func::Substr => substr(args, cx),
        Func::Index | Func::Rindex => index(func, args, cx),
        Func::Sprintf => sprintf(args, cx),
        Func::Join => join(args, cx),
        Func::Basename => basename(args, cx),
        Func::Fileparse => fileparse_scalar(args, cx),
        Func::Reverse => reverse_scalar(args, cx),
    }
}

fn string_fn<'a>(func: Func, a: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let g: fn(&str) -> String = match func {
        Func::Lc => str::to_lowercase,
        Func::Uc => str::to_uppercase,
        Func::Lcfirst => f::lcfirst,
        Func::Ucfirst => f::ucfirst,
        _ => f::quotemeta,
    };
    Ok(owned(with_str(a, cx, g)?))
}

fn length<'a>(a: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let v = a.eval(cx)?;
    if !v.is_defined() {
        return Ok(Value::Undef);
    }
    let mut buf = NumBuf::new();
    Ok(Value::Num(f::char_len(v.as_str_in(&mut buf)) as f64))
}

fn defined<'a>(a: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    Ok(Value::from_bool(a.eval(cx)?.is_defined()))
}

fn math<'a>(func: Func, a: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let n = a.eval_num(cx)?;
    Ok(Value::Num(match func {
        Func::Int => n.trunc(),
        Func::Abs => n.abs(),
        Func::Sqrt if n < 0.0 => {
            return Err(EvalError::new(format!(
                "Can't take sqrt of {}",
                perl_number_to_string(n)
            )))
        }
        Func::Sqrt => n.sqrt(),
        Func::Log if n <= 0.0 => {
            return Err(EvalError::new(format!(
                "Can't take log of {}",
                perl_number_to_string(n)
            )))
        }
        Func::Log => n.ln(),
        Func::Exp => n.exp(),
        Func::Sin => n.sin(),
        _ => n.cos(),
    }))
}

fn atan2<'a>(args: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let y = arg(args, 0)?.eval_num(cx)?;
    let x = arg(args, 1)?.eval_num(cx)?;
    Ok(Value::Num(y.atan2(x)))
}

fn string_to_num<'a>(func: Func, a: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let g: fn(&str) -> f64 = match func {
        Func::Hex => f::hex,
        Func::Oct => f::oct,
        _ => |s| s.chars().next().map_or(0.0, |c| c as u32 as f64),
    };
    Ok(Value::Num(with_str(a, cx, g)?))
}

fn chr<'a>(a: &'a Node, cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let n = a.eval_num(cx)?;
    if !n.is_finite() {
        return Err(EvalError::new(format!(
            "Cannot chr {}",
            perl_number_to_string(n)
        )));
    }
    let code = f::to_uv(n);
    if n >= 0.0 && code > i64::MAX as u64 {
        return Err(EvalError::new(format!(
            "Use of code point 0x{code:X} is not allowed; the permissible max is 0x7FFFFFFFFFFFFFFF"
        )));
    }
    Ok(owned(f::chr(n).to_string()))
}

fn substr<'a>(args: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let s = arg(args, 0)?.eval(cx)?;
    let pos = arg(args, 1)?.eval_num(cx)?;
    let len = opt_num(args, 2, cx)?;
    let mut buf = NumBuf::new();
    Ok(match f::substr(s.as_str_in(&mut buf), pos, len) {
        Some(r) => owned(r),
        None => Value::Undef,
    })
}

fn index<'a>(func: Func, args: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let s = arg(args, 0)?.eval(cx)?;
    let needle = arg(args, 1)?.eval(cx)?;
    let pos = opt_num(args, 2, cx)?;
    let (mut b1, mut b2) = (NumBuf::new(), NumBuf::new());
    let (s, needle) = (s.as_str_in(&mut b1), needle.as_str_in(&mut b2));
    Ok(Value::Num(if func == Func::Index {
        f::index(s, needle, pos)
    } else {
        f::rindex(s, needle, pos)
    }))
}

fn sprintf<'a>(args: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let fmt = arg(args, 0)?.eval(cx)?;
    let values = list(rest(args), cx)?;
    let mut buf = NumBuf::new();
    Ok(owned(crate::sprintf::sprintf(
        fmt.as_str_in(&mut buf),
        &values,
    )?))
}

fn join<'a>(args: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let sep = arg(args, 0)?.eval(cx)?;
    let items = list(rest(args), cx)?;
    let mut buf = NumBuf::new();
    let sep = sep.as_str_in(&mut buf);
    let mut out = String::new();
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        push_value(&mut out, v);
        if out.len() > MAX_STRING_BYTES {
            return Err(too_long("join"));
        }
    }
    Ok(owned(out))
}

/// File::Basename's functions are Perl subs: their arguments form one
/// list, whose first element is the path (which must be defined).
fn path_and_rest<'a>(args: &'a [Node], cx: &mut Ctx<'a>) -> R<(Value<'a>, Vec<Value<'a>>)> {
    let mut all = list(args, cx)?.into_iter();
    match all.next() {
        Some(path) if path.is_defined() => Ok((path, all.collect())),
        _ => Err(EvalError::new("fileparse(): need a valid pathname")),
    }
}

fn basename<'a>(args: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let (path, rest) = path_and_rest(args, cx)?;
    let suffixes: Vec<String> = rest
        .into_iter()
        .map(|v| v.into_cow().into_owned())
        .collect();
    let mut buf = NumBuf::new();
    Ok(owned(f::basename(path.as_str_in(&mut buf), &suffixes)))
}

fn dirname<'a>(args: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let (path, _) = path_and_rest(args, cx)?;
    let mut buf = NumBuf::new();
    Ok(owned(f::dirname(path.as_str_in(&mut buf))))
}

/// `fileparse` in scalar context is its first element, the name.
fn fileparse_scalar<'a>(args: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let mut out = Vec::new();
    call_list(Func::Fileparse, args, cx, &mut out)?;
    Ok(out.into_iter().next().unwrap_or(Value::Undef))
}

/// `reverse` in scalar context: the concatenated arguments, reversed.
fn reverse_scalar<'a>(args: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let items = list(args, cx)?;
    let mut s = String::new();
    for v in &items {
        push_value(&mut s, v);
    }
    Ok(owned(s.chars().rev().collect()))
}

/// List-context call, for the functions that return lists.
pub(crate) fn call_list<'a>(
    func: Func,
    args: &'a [Node],
    cx: &mut Ctx<'a>,
    out: &mut Vec<Value<'a>>,
) -> R<()> {
    match func {
        Func::Reverse => {
            let mut items = list(args, cx)?;
            items.reverse();
            out.extend(items);
        }
        Func::Fileparse => {
            let (path, patterns) = path_and_rest(args, cx)?;
            let mut suffixes = Vec::with_capacity(patterns.len());
            for p in &patterns {
                let mut buf = NumBuf::new();
                let text = format!("({})$", p.as_str_in(&mut buf));
                let flags = crate::perl_regex::Flags {
                    s: true,
                    ..Default::default()
                };
                suffixes.push(crate::perl_regex::compile(&text, flags).map_err(EvalError::new)?);
            }
            let mut buf = NumBuf::new();
            let (name, dir, tail) = f::fileparse(path.as_str_in(&mut buf), &suffixes);
            out.push(owned(name));
            out.push(owned(dir.to_string()));
            out.push(owned(tail));
        }
        _ => out.push(call(func, args, cx)?),
    }
    Ok(())
}

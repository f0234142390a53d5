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
use crate::value::perl_number_to_string;
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

/// Scalar-context call.
pub(crate) fn call<'a>(func: Func, args: &'a [Node], cx: &mut Ctx<'a>) -> R<Value<'a>> {
    let a0 = arg(args, 0);
    Ok(match func {
        Func::Lc => owned(with_str(a0?, cx, str::to_lowercase)?),
        Func::Uc => owned(with_str(a0?, cx, str::to_uppercase)?),
        Func::Lcfirst => owned(with_str(a0?, cx, f::lcfirst)?),
        Func::Ucfirst => owned(with_str(a0?, cx, f::ucfirst)?),
        Func::Quotemeta => owned(with_str(a0?, cx, f::quotemeta)?),
        Func::Length => {
            let v = a0?.eval(cx)?;
            if v.is_defined() {
                let mut buf = NumBuf::new();
                Value::Num(f::char_len(v.as_str_in(&mut buf)) as f64)
            } else {
                Value::Undef
            }
        }
        Func::Defined => Value::from_bool(a0?.eval(cx)?.is_defined()),
        Func::Int => Value::Num(a0?.eval_num(cx)?.trunc()),
        Func::Abs => Value::Num(a0?.eval_num(cx)?.abs()),
        Func::Sqrt => {
            let n = a0?.eval_num(cx)?;
            if n < 0.0 {
                return Err(EvalError::new(format!(
                    "Can't take sqrt of {}",
                    perl_number_to_string(n)
                )));
            }
            Value::Num(n.sqrt())
        }
        Func::Log => {
            let n = a0?.eval_num(cx)?;
            if n <= 0.0 {
                return Err(EvalError::new(format!(
                    "Can't take log of {}",
                    perl_number_to_string(n)
                )));
            }
            Value::Num(n.ln())
        }
        Func::Exp => Value::Num(a0?.eval_num(cx)?.exp()),
        Func::Sin => Value::Num(a0?.eval_num(cx)?.sin()),
        Func::Cos => Value::Num(a0?.eval_num(cx)?.cos()),
        Func::Atan2 => {
            let y = a0?.eval_num(cx)?;
            let x = arg(args, 1)?.eval_num(cx)?;
            Value::Num(y.atan2(x))
        }
        Func::Hex => Value::Num(with_str(a0?, cx, f::hex)?),
        Func::Oct => Value::Num(with_str(a0?, cx, f::oct)?),
        Func::Ord => Value::Num(with_str(a0?, cx, |s| s.chars().next().map_or(0.0, |c| c as u32 as f64))?),
        Func::Chr => owned(f::chr(a0?.eval_num(cx)?).to_string()),
        Func::Substr => {
            let s = a0?.eval(cx)?;
            let pos = arg(args, 1)?.eval_num(cx)?;
            let len = opt_num(args, 2, cx)?;
            let mut buf = NumBuf::new();
            match f::substr(s.as_str_in(&mut buf), pos, len) {
                Some(r) => owned(r),
                None => Value::Undef,
            }
        }
        Func::Index | Func::Rindex => {
            let s = a0?.eval(cx)?;
            let needle = arg(args, 1)?.eval(cx)?;
            let pos = opt_num(args, 2, cx)?;
            let (mut b1, mut b2) = (NumBuf::new(), NumBuf::new());
            let (s, needle) = (s.as_str_in(&mut b1), needle.as_str_in(&mut b2));
            Value::Num(if func == Func::Index {
                f::index(s, needle, pos)
            } else {
                f::rindex(s, needle, pos)
            })
        }
        Func::Sprintf => {
            let fmt = a0?.eval(cx)?;
            let values = list(rest(args), cx)?;
            let mut buf = NumBuf::new();
            owned(crate::sprintf::sprintf(fmt.as_str_in(&mut buf), &values)?)
        }
        Func::Join => {
            let sep = a0?.eval(cx)?;
            let items = list(rest(args), cx)?;
            let mut buf = NumBuf::new();
            let sep = sep.as_str_in(&mut buf);
            let mut out = String::new();
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                push_value(&mut out, v);
            }
            owned(out)
        }
        Func::Basename => {
            let path = a0?.eval(cx)?;
            let suffixes: Vec<String> = list(rest(args), cx)?
                .into_iter()
                .map(|v| v.into_cow().into_owned())
                .collect();
            let mut buf = NumBuf::new();
            owned(f::basename(path.as_str_in(&mut buf), &suffixes))
        }
        Func::Dirname => owned(with_str(a0?, cx, f::dirname)?),
        Func::Fileparse => {
            let mut out = Vec::new();
            call_list(func, args, cx, &mut out)?;
            out.into_iter().next().unwrap_or(Value::Undef)
        }
        Func::Reverse => {
            let items = list(args, cx)?;
            let mut s = String::new();
            for v in &items {
                push_value(&mut s, v);
            }
            owned(s.chars().rev().collect())
        }
    })
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
            let path = arg(args, 0)?.eval(cx)?;
            let patterns = list(rest(args), cx)?;
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

//! Perl's `sprintf`.
//!
//! Hand-written because no crate formats a run-time format string over
//! dynamically typed values with Perl's rules: arguments are numified or
//! stringified per conversion, missing ones are undef (`""`/0), `%d`
//! truncates toward zero and wraps past 64 bits like perl's casts, `%s` pads
//! strings with zeros under the `0` flag, `%v` formats each character's
//! ordinal, explicit indexes (`%2$s`) do not move the implicit argument
//! counter, an invalid directive is copied through as text, and infinities
//! print as `Inf`/`NaN` in every numeric conversion. Group labels made with
//! `sprintf(q{%3.5f}, $af)` must match mrskew's byte for byte.

use std::fmt::Write;

use crate::error::EvalError;
use crate::functions::{chr, to_iv, to_uv};
use crate::number_format::{write_exp, write_fixed, write_general};
use crate::value::{too_long, MAX_STRING_BYTES};
use crate::Value;

/// Widths and precisions beyond this are refused rather than allocated.
const MAX_FIELD: i64 = 1 << 24;

#[derive(Default, Clone, Copy)]
struct Spec {
    minus: bool,
    plus: bool,
    space: bool,
    zero: bool,
    alt: bool,
    vector: bool,
    width: usize,
    precision: Option<usize>,
}

struct Args<'v, 'a> {
    args: &'v [Value<'a>],
    next: usize,
}

static UNDEF: Value<'static> = Value::Undef;

impl<'v, 'a> Args<'v, 'a> {
    fn get(&mut self, explicit: Option<usize>) -> &'v Value<'a> {
        match explicit {
            Some(n) => self.args.get(n.wrapping_sub(1)).unwrap_or(&UNDEF),
            None => {
                let v = self.args.get(self.next).unwrap_or(&UNDEF);
                self.next += 1;
                v
            }
        }
    }
}

fn parse_digits(b: &[u8], i: &mut usize) -> Option<i64> {
    let start = *i;
    let mut v: i64 = 0;
    while *i < b.len() && b[*i].is_ascii_digit() {
        v = v.saturating_mul(10).saturating_add((b[*i] - b'0') as i64);
        *i += 1;
    }
    (*i > start).then_some(v)
}

/// `N$` after a `%` or `*`: an explicit argument index.
fn parse_index(b: &[u8], i: &mut usize) -> Option<usize> {
    let save = *i;
    if let Some(n) = parse_digits(b, i) {
        if *i < b.len() && b[*i] == b'$' && n > 0 {
            *i += 1;
            return Some(n as usize);
        }
    }
    *i = save;
    None
}

fn overflow() -> EvalError {
    EvalError::new("Integer overflow in format string for sprintf")
}

/// Formats `args` with Perl format `fmt`.
pub(crate) fn sprintf(fmt: &str, args: &[Value<'_>]) -> Result<String, EvalError> {
    let b = fmt.as_bytes();
    let mut out = String::with_capacity(fmt.len() + 16);
    let mut args = Args { args, next: 0 };
    let mut i = 0;
    while i < b.len() {
        let Some(off) = fmt[i..].find('%') else {
            out.push_str(&fmt[i..]);
            break;
        };
        out.push_str(&fmt[i..i + off]);
        if out.len() > MAX_STRING_BYTES {
            return Err(too_long("sprintf"));
        }
        let start = i + off;
        i = start + 1;
        if i < b.len() && b[i] == b'%' {
            out.push('%');
            i += 1;
            continue;
        }
        let explicit = parse_index(b, &mut i);
        let mut spec = Spec::default();
        while i < b.len() {
            match b[i] {
                b'-' => spec.minus = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'0' => spec.zero = true,
                b'#' => spec.alt = true,
                _ => break,
            }
            i += 1;
        }
        if i < b.len() && b[i] == b'v' {
            spec.vector = true;
            i += 1;
        }
        if i < b.len() && b[i] == b'*' {
            i += 1;
            let idx = parse_index(b, &mut i);
            let w = to_iv(args.get(idx).to_num());
            if w < 0 {
                spec.minus = true;
            }
            let w = w.unsigned_abs().min(u64::MAX >> 1) as i64;
            if w > MAX_FIELD {
                return Err(overflow());
            }
            spec.width = w as usize;
        } else if let Some(w) = parse_digits(b, &mut i) {
            if w > MAX_FIELD {
                return Err(overflow());
            }
            spec.width = w as usize;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            if i < b.len() && b[i] == b'*' {
                i += 1;
                let idx = parse_index(b, &mut i);
                let p = to_iv(args.get(idx).to_num());
                if p > MAX_FIELD {
                    return Err(overflow());
                }
                spec.precision = (p >= 0).then_some(p as usize);
            } else {
                let p = parse_digits(b, &mut i).unwrap_or(0);
                if p > MAX_FIELD {
                    return Err(overflow());
                }
                spec.precision = Some(p as usize);
            }
        }
        while i < b.len() && matches!(b[i], b'h' | b'l' | b'q' | b'L' | b'V' | b'z' | b't' | b'j') {
            i += 1;
        }
        let Some(&conv) = b.get(i) else {
            out.push_str(&fmt[start..]);
            break;
        };
        if !conv.is_ascii() {
            // Not a conversion; copy the directive through as perl does.
            out.push_str(&fmt[start..i]);
            continue;
        }
        i += 1;
        if conv == b'%' && !spec.vector {
            // A `%` with flags is formatted like a one-character %s.
            let body = if spec.precision == Some(0) { "" } else { "%" };
            pad(&mut out, "", body, &spec, spec.zero);
            continue;
        }
        let valid = if spec.vector {
            matches!(conv, b'd' | b'i' | b'u' | b'o' | b'x' | b'X' | b'b' | b'B')
        } else {
            matches!(
                conv,
                b'c' | b's'
                    | b'd'
                    | b'i'
                    | b'u'
                    | b'o'
                    | b'x'
                    | b'X'
                    | b'b'
                    | b'B'
                    | b'e'
                    | b'E'
                    | b'f'
                    | b'F'
                    | b'g'
                    | b'G'
            )
        };
        if !valid {
            out.push_str(&fmt[start..i]);
            continue;
        }
        let arg = args.get(explicit);
        if spec.vector {
            let s = arg.to_str();
            let mut element = spec;
            for (k, c) in s.chars().enumerate() {
                if out.len() > MAX_STRING_BYTES {
                    return Err(too_long("sprintf"));
                }
                if k > 0 {
                    out.push('.');
                    // Only the first number gets the sign flags.
                    element.plus = false;
                    element.space = false;
                }
                integer(&mut out, conv, c as u32 as f64, &element);
            }
            continue;
        }
        match conv {
            b'c' => {
                let n = arg.to_num();
                if !n.is_finite() {
                    return Err(EvalError::new(format!(
                        "Cannot printf {} with 'c'",
                        if n.is_nan() { "NaN" } else { "Inf" }
                    )));
                }
                // The code point is the value as an unsigned integer (so a
                // negative one is huge and refused, as in perl); the
                // character is then formatted like a one-character %s.
                let code = to_uv(n);
                if code > i64::MAX as u64 {
                    return Err(EvalError::new(format!(
                        "Use of code point 0x{code:X} is not allowed; the permissible max is 0x7FFFFFFFFFFFFFFF"
                    )));
                }
                let c = chr(code as f64);
                let mut buf = [0; 4];
                let body: &str = if spec.precision == Some(0) {
                    ""
                } else {
                    c.encode_utf8(&mut buf)
                };
                pad(&mut out, "", body, &spec, spec.zero);
            }
            b's' => {
                let s = arg.to_str();
                let s: &str = match spec.precision {
                    Some(p) => {
                        let end = s.char_indices().nth(p).map_or(s.len(), |(b, _)| b);
                        &s[..end]
                    }
                    None => &s,
                };
                pad(&mut out, "", s, &spec, spec.zero);
            }
            b'e' | b'E' | b'f' | b'F' | b'g' | b'G' => float(&mut out, conv, arg.to_num(), &spec),
            _ => integer(&mut out, conv, arg.to_num(), &spec),
        }
    }
    Ok(out)
}

/// Appends `prefix` + `body` padded to the field width.
fn pad(out: &mut String, prefix: &str, body: &str, spec: &Spec, zero: bool) {
    let len = prefix.chars().count() + body.chars().count();
    let fill = spec.width.saturating_sub(len);
    if spec.minus {
        out.push_str(prefix);
        out.push_str(body);
        out.extend(std::iter::repeat_n(' ', fill));
    } else if zero {
        out.push_str(prefix);
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(body);
    } else {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(prefix);
        out.push_str(body);
    }
}

fn sign_of(negative: bool, spec: &Spec) -> &'static str {
    if negative {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    }
}

/// Perl prints infinities and NaN as words in every numeric conversion:
/// `+Inf` under either the `+` or the space flag, and zero padding goes to
/// the left of the sign (`%06d` of -Inf is `00-Inf`).
fn inf_nan(out: &mut String, v: f64, spec: &Spec) {
    let body = if v.is_nan() {
        "NaN"
    } else if v < 0.0 {
        "-Inf"
    } else if spec.plus || spec.space {
        "+Inf"
    } else {
        "Inf"
    };
    pad(out, "", body, spec, spec.zero);
}

fn integer(out: &mut String, conv: u8, v: f64, spec: &Spec) {
    if !v.is_finite() {
        return inf_nan(out, v, spec);
    }
    let mut digits = String::new();
    let mut prefix = String::new();
    let value_is_zero;
    match conv {
        b'd' | b'i' => {
            let iv = to_iv(v);
            value_is_zero = iv == 0;
            let _ = write!(digits, "{}", iv.unsigned_abs());
            prefix.push_str(sign_of(iv < 0, spec));
        }
        _ => {
            let uv = to_uv(v);
            value_is_zero = uv == 0;
            let _ = match conv {
                b'u' => write!(digits, "{uv}"),
                b'o' => write!(digits, "{uv:o}"),
                b'x' => write!(digits, "{uv:x}"),
                b'X' => write!(digits, "{uv:X}"),
                _ => write!(digits, "{uv:b}"),
            };
        }
    }
    if let Some(p) = spec.precision {
        if p == 0 && value_is_zero {
            // `%#.0o` still prints the 0: `#` forces a leading zero digit.
            if !(spec.alt && conv == b'o') {
                digits.clear();
            }
        } else if digits.len() < p {
            digits.insert_str(0, &"0".repeat(p - digits.len()));
        }
    }
    if spec.alt && !value_is_zero {
        match conv {
            b'o' if !digits.starts_with('0') => prefix.push('0'),
            b'x' => prefix.push_str("0x"),
            b'X' => prefix.push_str("0X"),
            b'b' => prefix.push_str("0b"),
            b'B' => prefix.push_str("0B"),
            _ => {}
        }
    }
    let zero = spec.zero && spec.precision.is_none();
    pad(out, &prefix, &digits, spec, zero);
}

fn float(out: &mut String, conv: u8, v: f64, spec: &Spec) {
    if !v.is_finite() {
        return inf_nan(out, v, spec);
    }
    let prec = spec.precision.unwrap_or(6);
    let mut body = String::new();
    let a = v.abs();
    match conv {
        b'e' | b'E' => write_exp(&mut body, a, prec, spec.alt, conv == b'E'),
        b'f' | b'F' => write_fixed(&mut body, a, prec, spec.alt),
        _ => {
            let _ = write_general(&mut body, a, prec, spec.alt, conv == b'G');
        }
    }
    pad(
        out,
        sign_of(v.is_sign_negative(), spec),
        &body,
        spec,
        spec.zero,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn f(fmt: &str, args: &[Value]) -> String {
        sprintf(fmt, args).unwrap()
    }
    fn n(v: f64) -> Value<'static> {
        Value::Num(v)
    }
    fn s(v: &str) -> Value<'_> {
        Value::Str(Cow::Borrowed(v))
    }

    #[test]
    fn brief_cases() {
        assert_eq!(f("%3.5f", &[n(0.0001)]), "0.00010");
        assert_eq!(f("%-10s|", &[s("ab")]), "ab        |");
        assert_eq!(f("%05.1f", &[n(3.14158)]), "003.1");
        assert_eq!(f("%+d", &[n(5.0)]), "+5");
        assert_eq!(f("%x", &[n(255.0)]), "ff");
        assert_eq!(f("%e", &[n(1234.5)]), "1.234500e+03");
    }

    #[test]
    fn integers() {
        assert_eq!(f("%d", &[n(-3.7)]), "-3");
        assert_eq!(f("%d", &[s("42abc")]), "42");
        assert_eq!(f("%d", &[n(1e19)]), "-8446744073709551616");
        assert_eq!(f("%d", &[n(1e20)]), "-1");
        assert_eq!(f("%u", &[n(-1.0)]), "18446744073709551615");
        assert_eq!(f("%x", &[n(-1.0)]), "ffffffffffffffff");
        assert_eq!(
            f(
                "[%05s][%-05d][%.3d][%+.3d][%5.3d][%05.3d]",
                &[s("ab"), n(3.0), n(7.0), n(7.0), n(7.0), n(7.0)]
            ),
            "[000ab][3    ][007][+007][  007][  007]"
        );
        assert_eq!(
            f(
                "[%#o][%#x][%#X][%#b][%.0d][%#.3o][% d][%+ d]",
                &[
                    n(0.0),
                    n(0.0),
                    n(255.0),
                    n(5.0),
                    n(0.0),
                    n(8.0),
                    n(5.0),
                    n(5.0)
                ]
            ),
            "[0][0][0XFF][0b101][][010][ 5][+5]"
        );
        assert_eq!(
            f("%i|%o|%b|%B", &[n(9.0), n(8.0), n(5.0), n(5.0)]),
            "9|10|101|101"
        );
        assert_eq!(f("%05d", &[n(-42.0)]), "-0042");
    }

    #[test]
    fn args_width_precision_index() {
        assert_eq!(
            f(
                "[%s][%s][%s][%2$s %s][%*d][%-*d][%.*f]",
                &[
                    s("a"),
                    Value::Undef,
                    n(1.5),
                    s("z"),
                    n(4.0),
                    n(7.0),
                    n(-4.0),
                    n(7.0),
                    n(2.0),
                    n(3.14158)
                ]
            ),
            "[a][][1.5][ z][   7][7   ][3.14]"
        );
        assert_eq!(f("%v02x", &[s("1.2.3")]), "31.2e.32.2e.33");
        assert_eq!(f("%vd", &[s("1.22.333")]), "49.46.50.50.46.51.51.51");
        assert_eq!(f("%s|%d|%f", &[]), "|0|0.000000");
        assert_eq!(f("%.*f", &[n(-1.0), n(2.5)]), "2.500000");
        assert_eq!(f("%3$s", &[n(1.0)]), "");
    }

    #[test]
    fn floats() {
        assert_eq!(
            f(
                "[%.3s][%y][%G][%#g][%g][%.0e][%E]",
                &[s("abcdef"), n(1.0), n(0.00001234), n(1.5), n(1e-5), n(15.0)]
            ),
            "[abc][%y][1][1.23400e-05][1.5][1e-05][1.500000E+01]"
        );
        assert_eq!(f("%.2f", &[n(0.125)]), "0.12");
        assert_eq!(f("%.0f %.0f %.0f", &[n(0.5), n(1.5), n(2.5)]), "0 2 2");
        assert_eq!(f("%f", &[n(-0.0)]), "-0.000000");
        assert_eq!(f("%5.2f", &[n(-0.5)]), "-0.50");
        assert_eq!(f("%+.0e", &[n(12345.0)]), "+1e+04");
        assert_eq!(f("%#.0f", &[n(3.0)]), "3.");
        assert_eq!(f("%.3g", &[n(1234567.0)]), "1.23e+06");
        assert_eq!(f("%10.4f|", &[n(std::f64::consts::PI)]), "    3.1416|");
        assert_eq!(f("%-10.2e|", &[n(0.000123)]), "1.23e-04  |");
        assert_eq!(f("%F", &[n(1.5)]), "1.500000");
    }

    #[test]
    fn inf_nan_and_errors() {
        let inf = n(f64::INFINITY);
        let nan = n(f64::NAN);
        assert_eq!(
            f(
                "%d|%x|%5.1f|%e|%g|%s|%+d|%05d|%-6d|",
                &[
                    inf.clone(),
                    inf.clone(),
                    inf.clone(),
                    inf.clone(),
                    inf.clone(),
                    inf.clone(),
                    inf.clone(),
                    inf.clone(),
                    inf.clone()
                ]
            ),
            "Inf|Inf|  Inf|Inf|Inf|Inf|+Inf|00Inf|Inf   |"
        );
        assert_eq!(f("%d|%+d", &[nan.clone(), nan.clone()]), "NaN|NaN");
        assert_eq!(f("%d", &[n(f64::NEG_INFINITY)]), "-Inf");
        assert_eq!(
            f(
                "[% 5.3u][%- 6g][%#012.3f]",
                &[inf.clone(), inf.clone(), n(f64::NEG_INFINITY)]
            ),
            "[ +Inf][+Inf  ][00000000-Inf]"
        );
        assert!(sprintf("%c", &[n(-1.0)])
            .unwrap_err()
            .message
            .contains("0xFFFFFFFFFFFFFFFF"));
        assert_eq!(
            f(
                "[%#012.c][% .c][%#.0o][%#012.o]",
                &[n(3.0), n(0.0), n(0.0), n(0.5)]
            ),
            "[000000000000][][0][           0]"
        );
        assert!(sprintf("%c", &[inf])
            .unwrap_err()
            .message
            .contains("Cannot printf Inf"));
        assert!(sprintf("%999999999d", &[n(1.0)]).is_err());
        assert!(sprintf("%.999999999f", &[n(1.0)]).is_err());
        assert!(sprintf("%*d", &[n(1e18), n(1.0)]).is_err());
        let long = "x".repeat(5000);
        assert!(sprintf("%v16000000d", &[s(&long)])
            .unwrap_err()
            .message
            .contains("Out of memory"));
    }

    #[test]
    fn odd_formats_are_copied() {
        assert_eq!(f("100%", &[]), "100%");
        assert_eq!(f("%%|%5%|%-3%|%", &[]), "%|    %|%  |%");
        assert_eq!(f("[%05.%][%+vd]", &[s("1.5")]), "[00000][+49.46.53]");
        assert_eq!(f("%é", &[]), "%é");
        assert_eq!(f("%c%c", &[n(65.0), n(0x263A as f64)]), "A☺");
        assert_eq!(f("%-3c|", &[n(66.0)]), "B  |");
        assert_eq!(f("é%sü", &[s("x")]), "éxü");
        assert_eq!(f("%.2s", &[s("héllo")]), "hé");
        assert_eq!(f("%5s|", &[s("hé")]), "   hé|");
        assert_eq!(f("%ld %lld %hd", &[n(1.0), n(2.0), n(3.0)]), "1 2 3");
    }
}

//! Perl scalar semantics for [`Value`]: how a value reads as a number, as a
//! string and as a truth value.
//!
//! A Perl scalar is a number and a string at once: `"12abc" + 1` is 13,
//! `0.1 + 0.2 . ""` is `"0.3"`, undef is 0 and `""`. Getting these exactly
//! right is what makes mrskew expressions (and their group labels) give the
//! same answers here, so the rules live in one place.

use std::borrow::Cow;
use std::fmt;

use crate::number_format::{write_perl_number, NumBuf};
use crate::Value;

/// Longest string an expression may build (by `x`, `.`, `join` or
/// `sprintf`); beyond it evaluation fails instead of exhausting memory.
pub(crate) const MAX_STRING_BYTES: usize = 1 << 26;

/// The error for a string past [`MAX_STRING_BYTES`].
pub(crate) fn too_long(what: &str) -> crate::EvalError {
    crate::EvalError::new(format!(
        "Out of memory in {what}: the result would be longer than {} MiB",
        MAX_STRING_BYTES >> 20
    ))
}

impl<'a> Value<'a> {
    /// The value as a Perl number: undef is 0, a string numifies by its
    /// longest numeric prefix (see [`perl_str_to_num`]).
    pub fn to_num(&self) -> f64 {
        match self {
            Value::Undef => 0.0,
            Value::Num(n) => *n,
            Value::Str(s) => perl_str_to_num(s),
        }
    }

    /// The value as a Perl string: undef is `""`, a number prints like
    /// Perl's `%.15g` (see [`perl_number_to_string`]). Borrows when it can.
    pub fn to_str(&self) -> Cow<'_, str> {
        match self {
            Value::Undef => Cow::Borrowed(""),
            Value::Num(n) => Cow::Owned(perl_number_to_string(*n)),
            Value::Str(s) => Cow::Borrowed(s),
        }
    }

    /// Like [`Value::to_str`] but keeps the original borrow.
    pub fn into_cow(self) -> Cow<'a, str> {
        match self {
            Value::Undef => Cow::Borrowed(""),
            Value::Num(n) => Cow::Owned(perl_number_to_string(n)),
            Value::Str(s) => s,
        }
    }

    /// Perl truth: undef, `""`, `"0"` and 0 are false; everything else
    /// (including `"0.0"`, `"00"`, `" "` and NaN) is true.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Undef => false,
            Value::Num(n) => *n != 0.0,
            Value::Str(s) => !(s.is_empty() || s.as_ref() == "0"),
        }
    }

    /// Perl's `defined`.
    pub fn is_defined(&self) -> bool {
        !matches!(self, Value::Undef)
    }

    /// Detaches the value from whatever it borrows.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Undef => Value::Undef,
            Value::Num(n) => Value::Num(n),
            v if v.is_perl_false() => Value::from_bool(false),
            Value::Str(s) => Value::Str(Cow::Owned(s.into_owned())),
        }
    }

    /// A copy that borrows from `self` (no allocation).
    pub fn reborrow(&self) -> Value<'_> {
        match self {
            Value::Undef => Value::Undef,
            Value::Num(n) => Value::Num(*n),
            Value::Str(s) => Value::Str(Cow::Borrowed(s)),
        }
    }

    /// The string form without allocating: numbers are rendered into `buf`.
    pub(crate) fn as_str_in<'v>(&'v self, buf: &'v mut NumBuf) -> &'v str {
        match self {
            Value::Undef => "",
            Value::Str(s) => s,
            Value::Num(n) => {
                buf.clear();
                let _ = write_perl_number(buf, *n);
                buf.as_str()
            }
        }
    }

    /// Perl's boolean results: 1 for true, `""` (which numifies to 0) for false.
    pub(crate) fn from_bool(b: bool) -> Value<'static> {
        if b {
            Value::Num(1.0)
        } else {
            Value::Str(Cow::Borrowed(perl_false()))
        }
    }

    /// Is this the false value of a comparison, match or `!` (see
    /// [`perl_false`]) rather than an ordinary empty string?
    pub(crate) fn is_perl_false(&self) -> bool {
        matches!(self, Value::Str(Cow::Borrowed(s)) if std::ptr::eq(s.as_ptr(), FALSE_BACKING.as_ptr()))
    }
}

/// Backing store whose address marks Perl's false value.
static FALSE_BACKING: [u8; 1] = [0];

/// Perl's false (`PL_sv_no`) is both `""` and 0: a string to `.` and `eq`,
/// but a number to the bit operators (`~(1 < 0)` is `~0`). It is an empty
/// string here, told apart from other empty strings by its address.
fn perl_false() -> &'static str {
    std::str::from_utf8(&FALSE_BACKING[..0]).unwrap_or("")
}

impl fmt::Display for Value<'_> {
    /// Perl stringification, written without an intermediate `String`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Undef => Ok(()),
            Value::Num(n) => write_perl_number(f, *n),
            Value::Str(s) => f.write_str(s),
        }
    }
}

impl From<f64> for Value<'_> {
    fn from(n: f64) -> Self {
        Value::Num(n)
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(s: &'a str) -> Self {
        Value::Str(Cow::Borrowed(s))
    }
}

impl From<String> for Value<'_> {
    fn from(s: String) -> Self {
        Value::Str(Cow::Owned(s))
    }
}

impl<'a> From<Cow<'a, str>> for Value<'a> {
    fn from(s: Cow<'a, str>) -> Self {
        Value::Str(s)
    }
}

/// Perl's stringification of a number (`%.15g`; `Inf`, `-Inf`, `NaN`; `0`
/// for negative zero): 58081 → `"58081"`, 1e15 → `"1e+15"`, 0.1+0.2 → `"0.3"`.
pub fn perl_number_to_string(n: f64) -> String {
    let mut s = String::new();
    let _ = write_perl_number(&mut s, n);
    s
}

/// Perl's numification of a string: leading whitespace, then the longest
/// prefix that reads as a decimal number (sign, digits, `.`, exponent), or
/// `inf`/`infinity`/`nan` in any case; anything else is 0. `"0x1A"` is 0 and
/// `"1_000"` is 1, as in Perl.
pub fn perl_str_to_num(s: &str) -> f64 {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c') {
        i += 1;
    }
    let start = i;
    let mut negative = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        negative = b[i] == b'-';
        i += 1;
    }
    let rest = &b[i..];
    if rest.len() >= 3 {
        let word = [
            rest[0].to_ascii_lowercase(),
            rest[1].to_ascii_lowercase(),
            rest[2].to_ascii_lowercase(),
        ];
        if &word == b"inf" {
            return if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            };
        }
        if &word == b"nan" {
            return f64::NAN;
        }
    }
    let Some(len) = decimal_len(rest) else {
        return 0.0;
    };
    let end = i + len;
    // `start..end` covers ASCII bytes only, so it is a char boundary.
    s.get(start..end)
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// Perl's `looks_like_number`: the whole string (bar surrounding
/// whitespace) is a decimal number or Inf/NaN.
pub(crate) fn looks_like_number(s: &str) -> bool {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    if ["inf", "infinity", "nan"]
        .iter()
        .any(|w| t.eq_ignore_ascii_case(w))
    {
        return true;
    }
    decimal_len(t.as_bytes()) == Some(t.len())
}

/// Length of the unsigned decimal number at the start of `b`: digits with
/// an optional `.` and fraction (at least one digit in all), then an
/// exponent only when it has digits, so `"1e"` reads as 1 followed by `e`.
/// `None` when there are no digits.
///
/// Numification ([`perl_str_to_num`]) reads this prefix and
/// [`looks_like_number`] wants it to be the whole string; one scanner keeps
/// the two agreeing on what a number is.
fn decimal_len(b: &[u8]) -> Option<usize> {
    let digits_at = |i: usize| b.iter().skip(i).take_while(|c| c.is_ascii_digit()).count();
    let mut end = digits_at(0);
    let mut digits = end;
    if b.get(end) == Some(&b'.') {
        let fraction = digits_at(end + 1);
        end += 1 + fraction;
        digits += fraction;
    }
    if digits == 0 {
        return None;
    }
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let mut j = end + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exponent = digits_at(j);
        if exponent > 0 {
            end = j + exponent;
        }
    }
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numification_follows_perl() {
        let cases: &[(&str, f64)] = &[
            ("1_000", 1.0),
            (" 12abc", 12.0),
            ("0x1A", 0.0),
            (".5", 0.5),
            ("1e3", 1000.0),
            ("+3", 3.0),
            ("- 3", 0.0),
            ("1e", 1.0),
            (".", 0.0),
            ("\t\n 5", 5.0),
            ("1.5e+2x", 150.0),
            ("-.5", -0.5),
            ("5.", 5.0),
            ("", 0.0),
            ("abc", 0.0),
            ("+.5e-1", 0.05),
            ("é1", 0.0),
        ];
        for (s, n) in cases {
            assert_eq!(perl_str_to_num(s), *n, "{s:?}");
        }
        assert_eq!(perl_str_to_num("Inf"), f64::INFINITY);
        assert_eq!(perl_str_to_num("-infinity"), f64::NEG_INFINITY);
        assert_eq!(perl_str_to_num("  INFxyz"), f64::INFINITY);
        assert!(perl_str_to_num("nan").is_nan());
        assert!(perl_str_to_num("NaN").is_nan());
    }

    #[test]
    fn truth_follows_perl() {
        assert!(!Value::Undef.truthy());
        assert!(!Value::from("").truthy());
        assert!(!Value::from("0").truthy());
        assert!(!Value::Num(0.0).truthy());
        assert!(!Value::Num(-0.0).truthy());
        assert!(Value::from("0.0").truthy());
        assert!(Value::from("00").truthy());
        assert!(Value::from(" ").truthy());
        assert!(Value::from("a").truthy());
        assert!(Value::Num(f64::NAN).truthy());
        assert!(Value::Num(-1.0).truthy());
    }

    #[test]
    fn conversions() {
        assert_eq!(Value::Undef.to_str(), "");
        assert_eq!(Value::Undef.to_num(), 0.0);
        assert_eq!(Value::Num(3.0).to_str(), "3");
        assert_eq!(Value::from("4.5x").to_num(), 4.5);
        assert_eq!(Value::Num(0.5).to_string(), "0.5");
        assert_eq!(Value::Num(2.0).into_cow(), "2");
        assert!(!Value::Undef.is_defined());
        assert!(Value::from("").is_defined());
        let owned = Value::from(String::from("x")).into_owned();
        assert_eq!(owned.reborrow(), Value::from("x"));
        let mut buf = NumBuf::new();
        assert_eq!(Value::Num(1e15).as_str_in(&mut buf), "1e+15");
        assert_eq!(Value::from_bool(false), Value::from(""));
        assert!(Value::from_bool(false).is_perl_false());
        assert!(Value::from_bool(false).into_owned().is_perl_false());
        assert!(!Value::from("").is_perl_false());
        assert!(!Value::from(String::new()).is_perl_false());
        assert_eq!(Value::from_bool(true), Value::Num(1.0));
    }
}

//! C-printf style formatting of floating-point numbers (`%f`, `%e`, `%g`),
//! shared by Perl's number stringification (which is `%.15g`) and `sprintf`.
//!
//! Rust's `{:.N}` and `{:.Ne}` are correctly rounded with ties to even on the
//! exact binary value, which is what glibc's printf does, so the digits come
//! from them; this module only rearranges them into C's layout (exponent sign
//! and at least two exponent digits, `%g`'s choice of style and trailing-zero
//! removal). Stringifying a number must not allocate on the evaluation hot
//! path, so [`NumBuf`] gives a stack buffer to write into.

use std::fmt::{self, Write};

/// A fixed-size stack buffer that implements [`fmt::Write`], big enough for
/// any `%.15g` rendering of an `f64` (at most 22 bytes).
pub(crate) struct NumBuf {
    buf: [u8; 64],
    len: usize,
}

impl NumBuf {
    pub(crate) fn new() -> NumBuf {
        NumBuf {
            buf: [0; 64],
            len: 0,
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only whole `&str`s are ever appended, so the bytes are valid UTF-8.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}

impl fmt::Write for NumBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Writes `v` the way Perl stringifies a number: `%.15g`, with `Inf`,
/// `-Inf` and `NaN` for the special values and `0` for negative zero.
pub(crate) fn write_perl_number<W: Write>(w: &mut W, v: f64) -> fmt::Result {
    if v.is_nan() {
        return w.write_str("NaN");
    }
    if v.is_infinite() {
        return w.write_str(if v > 0.0 { "Inf" } else { "-Inf" });
    }
    if v == 0.0 {
        return w.write_char('0');
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        // What %.15g prints for these, without the detour.
        return write!(w, "{}", v as i64);
    }
    if v < 0.0 {
        w.write_char('-')?;
    }
    write_general(w, v.abs(), 15, false, false)
}

/// C's `%.{prec}g` of a finite, non-negative `v`; `alt` is the `#` flag.
pub(crate) fn write_general<W: Write>(
    w: &mut W,
    v: f64,
    prec: usize,
    alt: bool,
    upper: bool,
) -> fmt::Result {
    let p = prec.max(1);
    if p <= 40 {
        let mut scratch = NumBuf::new();
        write!(scratch, "{:.*e}", p - 1, v)?;
        general_from_exp(w, scratch.as_str(), p, alt, upper)
    } else {
        let scratch = format!("{:.*e}", p - 1, v);
        general_from_exp(w, &scratch, p, alt, upper)
    }
}

/// Lays out `%g` from Rust's `{:.(p-1)e}` rendering (`d.ddde[-]x`): the
/// rounded significant digits are the same in both of C's styles, only their
/// placement differs.
fn general_from_exp<W: Write>(
    w: &mut W,
    e_repr: &str,
    p: usize,
    alt: bool,
    upper: bool,
) -> fmt::Result {
    let (mant, exp) = e_repr.split_once('e').unwrap_or((e_repr, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let mant = if alt { mant } else { trim_fraction_zeros(mant) };
        w.write_str(mant)?;
        if alt && !mant.contains('.') {
            w.write_char('.')?;
        }
        return write_exponent(w, exp, upper);
    }
    let digits = mant.as_bytes().iter().filter(|b| b.is_ascii_digit());
    let mut int_part = NumBuf::new();
    let mut frac = NumBuf::new();
    let mut frac_big = String::new();
    let big = p > 40;
    if exp >= 0 {
        let int_len = exp as usize + 1;
        for (i, &d) in digits.enumerate() {
            if i < int_len {
                int_part.write_char(d as char)?;
            } else if big {
                frac_big.push(d as char);
            } else {
                frac.write_char(d as char)?;
            }
        }
    } else {
        int_part.write_char('0')?;
        let zeros = (-exp - 1) as usize;
        for _ in 0..zeros {
            if big {
                frac_big.push('0');
            } else {
                frac.write_char('0')?;
            }
        }
        for &d in digits {
            if big {
                frac_big.push(d as char);
            } else {
                frac.write_char(d as char)?;
            }
        }
    }
    let frac_str = if big {
        frac_big.as_str()
    } else {
        frac.as_str()
    };
    let frac_str = if alt {
        frac_str
    } else {
        frac_str.trim_end_matches('0')
    };
    w.write_str(int_part.as_str())?;
    if !frac_str.is_empty() || alt {
        w.write_char('.')?;
        w.write_str(frac_str)?;
    }
    Ok(())
}

/// `1.2300` → `1.23`, `1.000` → `1`, `1` → `1`.
fn trim_fraction_zeros(mant: &str) -> &str {
    if mant.contains('.') {
        mant.trim_end_matches('0').trim_end_matches('.')
    } else {
        mant
    }
}

/// C's exponent: `e`, a sign, at least two digits.
fn write_exponent<W: Write>(w: &mut W, exp: i32, upper: bool) -> fmt::Result {
    w.write_char(if upper { 'E' } else { 'e' })?;
    w.write_char(if exp < 0 { '-' } else { '+' })?;
    write!(w, "{:02}", exp.unsigned_abs())
}

/// C's `%.{prec}e` of a finite, non-negative `v`.
pub(crate) fn write_exp(out: &mut String, v: f64, prec: usize, alt: bool, upper: bool) {
    let repr = format!("{:.*e}", prec, v);
    let (mant, exp) = repr.split_once('e').unwrap_or((&repr, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    out.push_str(mant);
    if alt && prec == 0 {
        out.push('.');
    }
    let _ = write_exponent(out, exp, upper);
}

/// C's `%.{prec}f` of a finite, non-negative `v`.
pub(crate) fn write_fixed(out: &mut String, v: f64, prec: usize, alt: bool) {
    let _ = write!(out, "{:.*}", prec, v);
    if alt && prec == 0 {
        out.push('.');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perl(v: f64) -> String {
        let mut s = String::new();
        write_perl_number(&mut s, v).unwrap();
        s
    }

    fn g(v: f64, p: usize, alt: bool) -> String {
        let mut s = String::new();
        write_general(&mut s, v, p, alt, false).unwrap();
        s
    }

    #[test]
    fn perl_stringification_matches_percent_15g() {
        assert_eq!(perl(58081.0), "58081");
        assert_eq!(perl(1e15), "1e+15");
        assert_eq!(perl(1e14), "100000000000000");
        assert_eq!(perl(0.1 + 0.2), "0.3");
        assert_eq!(perl(1e-6 * 100.0), "0.0001");
        assert_eq!(perl(-0.0), "0");
        assert_eq!(perl(f64::INFINITY), "Inf");
        assert_eq!(perl(f64::NEG_INFINITY), "-Inf");
        assert_eq!(perl(f64::NAN), "NaN");
        assert_eq!(perl(1.0 / 7.0), "0.142857142857143");
        assert_eq!(perl(1e-5), "1e-05");
        assert_eq!(perl(1e-7), "1e-07");
        assert_eq!(perl(3e-5), "3e-05");
        assert_eq!(perl(2f64.sqrt()), "1.4142135623731");
        assert_eq!(perl(10.0 / 3.0), "3.33333333333333");
        assert_eq!(perl(1e21), "1e+21");
        assert_eq!(perl(1e100), "1e+100");
        assert_eq!(perl(-2.5), "-2.5");
        assert_eq!(perl(60.002586), "60.002586");
        assert_eq!(perl(2f64.powi(53)), "9.00719925474099e+15");
    }

    #[test]
    fn general_format_edge_cases() {
        assert_eq!(g(0.0, 6, false), "0");
        assert_eq!(g(0.0, 6, true), "0.00000");
        assert_eq!(g(100000.0, 6, false), "100000");
        assert_eq!(g(1000000.0, 6, false), "1e+06");
        assert_eq!(g(1234567.0, 3, false), "1.23e+06");
        assert_eq!(g(0.00001234, 6, true), "1.23400e-05");
        assert_eq!(g(0.0001, 6, false), "0.0001");
        assert_eq!(g(9.9999999, 3, false), "10");
        assert_eq!(g(1.5, 0, false), "2");
        assert_eq!(g(1.0 / 3.0, 50, false).len(), 52);
    }

    #[test]
    fn exp_and_fixed() {
        let mut s = String::new();
        write_exp(&mut s, 1234.5, 6, false, false);
        assert_eq!(s, "1.234500e+03");
        s.clear();
        write_exp(&mut s, 12345.0, 0, true, true);
        assert_eq!(s, "1.E+04");
        s.clear();
        write_fixed(&mut s, 3.0, 0, true);
        assert_eq!(s, "3.");
        s.clear();
        write_fixed(&mut s, 2.5, 0, false);
        assert_eq!(s, "2");
    }

    #[test]
    fn numbuf_refuses_overflow_instead_of_panicking() {
        let mut b = NumBuf::new();
        assert!(b.write_str(&"x".repeat(65)).is_err());
        assert!(b.write_str("abc").is_ok());
        assert_eq!(b.as_str(), "abc");
        b.clear();
        assert_eq!(b.as_str(), "");
    }
}

//! The numbers of the report and how they are printed: fixed decimals,
//! with thousands separators, as mrskew's printf prints them.
//!
//! mrskew is Perl: every figure is a double, printed by printf (`%.6f`,
//! `%.1f`), which rounds the exact binary value of the double it is
//! given, correctly (glibc; a tie in binary goes to even, and a double is
//! almost never an exact decimal tie). So a mean whose exact decimal value
//! is a tie (150.5 µs) prints either way, as the double computed for it
//! falls: `(100e-6 + 201e-6) / 2` prints `0.000150`, `(100e-6 + 213e-6) /
//! 2` prints `0.000157`. Rust's `{:.N}` formatting rounds the exact binary
//! value correctly too, so a double is printed with it.
//!
//! A figure is held as the double Perl would have ([`Num::Float`]), or,
//! where only its exact value is known (whole microseconds summed as
//! integers), as that value ([`Num::Exact`]) — used only where every
//! double near it prints the same digits ([`Num::settled`]).

use std::cmp::Ordering;

/// A number of the report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// Exactly `num / den × 10^exp10` (`den > 0`).
    Exact { num: i128, den: u128, exp10: i32 },
    /// A double (from `--select` expressions).
    Float(f64),
}

impl Num {
    /// `us` microseconds, in seconds.
    pub fn micros(us: i128) -> Num {
        Num::Exact {
            num: us,
            den: 1,
            exp10: -6,
        }
    }

    /// `us / n` microseconds, in seconds (a mean).
    pub fn micros_over(us: i128, n: u64) -> Num {
        Num::Exact {
            num: us,
            den: u128::from(n.max(1)),
            exp10: -6,
        }
    }

    /// `part / whole × factor` (a percentage): exact for an integer factor.
    pub fn ratio(part: i128, whole: i128, factor: f64) -> Num {
        let (num, den) = if whole < 0 {
            (-part, -whole)
        } else {
            (part, whole)
        };
        if den == 0 {
            return Num::Float(0.0);
        }
        if factor.fract() == 0.0 && factor.abs() < 1e15 {
            if let Some(n) = num.checked_mul(factor as i128) {
                return Num::Exact {
                    num: n,
                    den: den as u128,
                    exp10: 0,
                };
            }
        }
        Num::Float(part as f64 / whole as f64 * factor)
    }

    /// The nearest double.
    pub fn to_f64(self) -> f64 {
        match self {
            Num::Exact { num, den, exp10 } => num as f64 / den as f64 * 10f64.powi(exp10),
            Num::Float(x) => x,
        }
    }

    /// Orders two numbers; exact ones exactly.
    pub fn compare(self, other: Num) -> Ordering {
        if let (
            Num::Exact {
                num: a,
                den: da,
                exp10: ea,
            },
            Num::Exact {
                num: b,
                den: db,
                exp10: eb,
            },
        ) = (self, other)
        {
            if ea == eb {
                let (Ok(da), Ok(db)) = (i128::try_from(da), i128::try_from(db)) else {
                    return self.to_f64().total_cmp(&other.to_f64());
                };
                if let (Some(x), Some(y)) = (a.checked_mul(db), b.checked_mul(da)) {
                    return x.cmp(&y);
                }
            }
        }
        self.to_f64()
            .partial_cmp(&other.to_f64())
            .unwrap_or(Ordering::Equal)
    }

    /// The value with `precision` decimals: a double as printf rounds
    /// it, an exact value exactly (one at a decimal tie as its nearest
    /// double, which is what printf would be given).
    pub fn fixed(self, precision: usize) -> String {
        match self {
            Num::Exact { .. } if self.boundary_gap(precision).is_some_and(|g| g == 0.0) => {
                float_fixed(self.to_f64(), precision)
            }
            Num::Exact { num, den, exp10 } => exact_fixed(num, den, exp10, precision),
            Num::Float(x) => float_fixed(x, precision),
        }
    }

    /// Whether every double within `bound` of this exact value prints the
    /// same with `p` decimals: no rounding boundary (a half unit of the
    /// last printed digit) lies within `bound` of it, with a margin of a
    /// factor of two for the double arithmetic of this test. An exact
    /// decimal tie is never settled; a double ([`Num::Float`]) is, as
    /// itself, only with a zero bound.
    pub fn settled(self, p: usize, bound: f64) -> bool {
        if !matches!(self, Num::Exact { .. }) {
            return bound == 0.0;
        }
        let Some(gap) = self.boundary_gap(p) else {
            return false;
        };
        gap != 0.0 && gap > 2.0 * bound * 10f64.powi(p as i32)
    }

    /// The distance of an exact value from the nearest rounding boundary
    /// at `p` decimals, in units of the last printed digit (0 at a tie);
    /// `None` for a double, or if the arithmetic would overflow.
    fn boundary_gap(self, p: usize) -> Option<f64> {
        let Num::Exact { num, den, exp10 } = self else {
            return None;
        };
        // The value in units of the last printed digit: n / d.
        let e = exp10 + p as i32;
        let scaled = if e >= 0 {
            10i128
                .checked_pow(e as u32)
                .and_then(|k| num.checked_mul(k))
                .zip(i128::try_from(den).ok())
        } else {
            10i128
                .checked_pow(e.unsigned_abs())
                .zip(i128::try_from(den).ok())
                .and_then(|(k, d)| d.checked_mul(k))
                .map(|d| (num, d))
        };
        let (n, d) = scaled?;
        let (n2, d2) = (n.checked_mul(2)?, d.checked_mul(2)?);
        // 2n mod 2d is d exactly at a tie; its distance from d, over 2d,
        // is the value's distance from the nearest boundary.
        let gap = (n2.rem_euclid(d2) - d).unsigned_abs();
        Some(if gap == 0 {
            0.0
        } else {
            gap as f64 / d2 as f64
        })
    }
}

/// Digits of a decimal value: `int` digits before the point, then `frac`
/// (at least one more than will be printed, for the rounding).
struct Decimal {
    negative: bool,
    int: Vec<u8>,
    frac: Vec<u8>,
}

impl Decimal {
    /// Rounds half up to `p` decimals and prints it (`-` kept on a value
    /// that rounds to zero, as C's printf does).
    fn render(mut self, p: usize) -> String {
        let round_up = self.frac.get(p).is_some_and(|&d| d >= 5);
        self.frac.resize(p, 0);
        if round_up {
            let mut carry = true;
            for d in self.frac.iter_mut().rev().chain(self.int.iter_mut().rev()) {
                if *d == 9 {
                    *d = 0;
                } else {
                    *d += 1;
                    carry = false;
                    break;
                }
            }
            if carry {
                self.int.insert(0, 1);
            }
        }
        while self.int.len() > 1 && self.int[0] == 0 {
            self.int.remove(0);
        }
        if self.int.is_empty() {
            self.int.push(0);
        }
        let mut s = String::with_capacity(self.int.len() + p + 2);
        if self.negative {
            s.push('-');
        }
        s.extend(self.int.iter().map(|d| char::from(b'0' + d)));
        if p > 0 {
            s.push('.');
            s.extend(self.frac.iter().map(|d| char::from(b'0' + d)));
        }
        s
    }
}

/// `num / den × 10^exp10` to `p` decimals, by long division: no overflow
/// and no rounding before the last digit.
fn exact_fixed(num: i128, den: u128, exp10: i32, p: usize) -> String {
    let negative = num < 0;
    let mut n = num.unsigned_abs();
    let mut d = den.max(1);
    // Fold the power of ten into the numerator or the denominator; a
    // product that would overflow is folded into the digits below.
    let mut shift = 0i64; // decimal places to move the point right
    let mut e = exp10;
    while e > 0 {
        match n.checked_mul(10) {
            Some(x) => n = x,
            None => shift += 1,
        }
        e -= 1;
    }
    while e < 0 {
        match d.checked_mul(10) {
            Some(x) => d = x,
            None => shift -= 1,
        }
        e += 1;
    }
    let int = n / d;
    let mut r = n % d;
    let mut int_digits: Vec<u8> = int.to_string().bytes().map(|b| b - b'0').collect();
    let want = (p as i64 + 1 - shift).max(0) as usize;
    let mut frac = Vec::with_capacity(want);
    for _ in 0..want {
        // r < d; a denominator past u128::MAX / 10 (never met: it would
        // take 10^25 calls) is printed through a double instead.
        let Some(x) = r.checked_mul(10) else {
            return float_fixed(Num::Exact { num, den, exp10 }.to_f64(), p);
        };
        frac.push((x / d) as u8);
        r = x % d;
    }
    // Apply a leftover power of ten by moving digits across the point.
    while shift > 0 {
        int_digits.push(if frac.is_empty() { 0 } else { frac.remove(0) });
        shift -= 1;
    }
    while shift < 0 {
        frac.insert(0, int_digits.pop().unwrap_or(0));
        shift += 1;
    }
    Decimal {
        negative,
        int: int_digits,
        frac,
    }
    .render(p)
}

/// A double to `p` decimals, as printf (and Perl's `printf`, `sprintf`)
/// prints it: the exact binary value, correctly rounded; `Inf` and `NaN`
/// as Perl names them.
fn float_fixed(x: f64, p: usize) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Inf" } else { "-Inf" }.into();
    }
    format!("{x:.p$}")
}

/// Inserts a comma every three digits left of the decimal point
/// (`22800.576222` → `22,800.576222`).
pub fn commify(s: &str) -> String {
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", s),
    };
    let int_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (int, frac) = rest.split_at(int_end);
    let mut out = String::with_capacity(s.len() + int.len() / 3);
    out.push_str(sign);
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out.push_str(frac);
    out
}

/// A value with `precision` decimals, with or without separators.
pub fn fixed(x: Num, precision: usize, commas: bool) -> String {
    let s = x.fixed(precision);
    if commas {
        commify(&s)
    } else {
        s
    }
}

/// A count, with or without separators.
pub fn count(n: u64, commas: bool) -> String {
    let s = n.to_string();
    if commas {
        commify(&s)
    } else {
        s
    }
}

/// `--pform`: a printf format with one conversion for the % column, such
/// as `%.1f%%` (the default) or `%6.2f`. The number is rounded by this
/// module's rule (for `f`), then laid out with the format's flags and
/// width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PercentFormat {
    prefix: String,
    suffix: String,
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    width: usize,
    precision: usize,
}

impl PercentFormat {
    pub fn parse(f: &str) -> Result<PercentFormat, String> {
        let err = || {
            format!("--pform={f}: expected a printf format with one %f conversion, such as %.1f%% or %6.2f")
        };
        let literal = |s: &str| -> Result<String, String> {
            let mut out = String::new();
            let mut it = s.chars();
            while let Some(c) = it.next() {
                if c == '%' && it.next() != Some('%') {
                    return Err(err());
                }
                out.push(c);
            }
            Ok(out)
        };
        // The conversion: the first % not followed by %.
        let b = f.as_bytes();
        let mut i = 0;
        let start = loop {
            match b.get(i) {
                None => return Err(err()),
                Some(b'%') if b.get(i + 1) == Some(&b'%') => i += 2,
                Some(b'%') => break i,
                Some(_) => i += 1,
            }
        };
        let mut j = start + 1;
        let mut out = PercentFormat {
            prefix: literal(&f[..start])?,
            suffix: String::new(),
            left: false,
            zero: false,
            plus: false,
            space: false,
            width: 0,
            precision: 6,
        };
        while let Some(&c) = b.get(j) {
            match c {
                b'-' => out.left = true,
                b'0' => out.zero = true,
                b'+' => out.plus = true,
                b' ' => out.space = true,
                _ => break,
            }
            j += 1;
        }
        let digits = |j: &mut usize| -> usize {
            let s = *j;
            while b.get(*j).is_some_and(u8::is_ascii_digit) {
                *j += 1;
            }
            f[s..*j].parse().unwrap_or(0)
        };
        out.width = digits(&mut j);
        if b.get(j) == Some(&b'.') {
            j += 1;
            out.precision = digits(&mut j);
        }
        if !matches!(b.get(j), Some(b'f' | b'F')) {
            return Err(err());
        }
        out.suffix = literal(&f[j + 1..])?;
        Ok(out)
    }

    /// Decimals of the conversion.
    pub fn precision(&self) -> usize {
        self.precision
    }

    pub fn format(&self, x: Num) -> String {
        let mut body = x.fixed(self.precision);
        if !body.starts_with('-') {
            if self.plus {
                body.insert(0, '+');
            } else if self.space {
                body.insert(0, ' ');
            }
        }
        let pad = self.width.saturating_sub(body.chars().count());
        let padded = if self.left {
            format!("{body}{}", " ".repeat(pad))
        } else if self.zero {
            let sign_len = usize::from(body.starts_with(['-', '+', ' ']));
            format!(
                "{}{}{}",
                &body[..sign_len],
                "0".repeat(pad),
                &body[sign_len..]
            )
        } else {
            format!("{}{body}", " ".repeat(pad))
        };
        format!("{}{padded}{}", self.prefix, self.suffix)
    }
}

impl Default for PercentFormat {
    fn default() -> Self {
        PercentFormat::parse("%.1f%%").expect("the default format parses")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas() {
        assert_eq!(commify("22800.576222"), "22,800.576222");
        assert_eq!(commify("241693"), "241,693");
        assert_eq!(commify("100.000000"), "100.000000");
        assert_eq!(commify("-1234.5"), "-1,234.5");
        assert_eq!(fixed(Num::micros(67_254_634), 6, true), "67.254634");
        assert_eq!(fixed(Num::micros(1_000_000_000), 6, true), "1,000.000000");
        assert_eq!(count(60041, true), "60,041");
        assert_eq!(count(60041, false), "60041");
    }

    #[test]
    fn doubles_print_as_printf_rounds_them() {
        // perl -e 'printf "%.6f %.6f\n", (100/1e6+201/1e6)/2, (100/1e6+213/1e6)/2'
        // 0.000150 0.000157: both exact ties, broken by the double.
        assert_eq!(
            Num::Float((100.0 / 1e6 + 201.0 / 1e6) / 2.0).fixed(6),
            "0.000150"
        );
        assert_eq!(
            Num::Float((100.0 / 1e6 + 213.0 / 1e6) / 2.0).fixed(6),
            "0.000157"
        );
        // perl -e 'printf "%.6f\n", 0.034593/6'  prints 0.005765
        assert_eq!(Num::Float(0.034593 / 6.0).fixed(6), "0.005765");
        // Ties in binary go to even: 2.5 and 0.125 are exact doubles.
        // perl -e 'printf "%.0f %.0f %.2f\n", 2.5, 3.5, 0.125'  prints 2 4 0.12
        assert_eq!(Num::Float(2.5).fixed(0), "2");
        assert_eq!(Num::Float(3.5).fixed(0), "4");
        assert_eq!(Num::Float(0.125).fixed(2), "0.12");
    }

    #[test]
    fn exact_values_and_their_ties() {
        assert_eq!(Num::micros_over(60_042_722, 3).fixed(6), "20.014241");
        assert_eq!(Num::micros(10_301_060).fixed(2), "10.30");
        assert_eq!(Num::micros(5).fixed(9), "0.000005000");
        assert_eq!(Num::micros_over(1, 3).fixed(9), "0.000000333");
        assert_eq!(Num::micros_over(-1, 3).fixed(6), "-0.000000");
        // At a tie, printed as its nearest double: 5764.5 µs.
        assert_eq!(
            Num::micros_over(11_529, 2).fixed(6),
            format!("{:.6}", 0.0057645)
        );
        // Settled: no double within the bound prints otherwise.
        assert!(Num::micros_over(34_592, 6).settled(6, 1e-15));
        assert!(!Num::micros_over(34_592, 6).settled(6, 1e-7));
        assert!(!Num::micros_over(34_593, 6).settled(6, 1e-30));
        assert!(!Num::micros_over(11_529, 2).settled(6, 0.0));
        assert!(Num::micros(10_301_060).settled(6, 1e-9));
        assert!(!Num::micros(10_305_000).settled(2, 0.0));
        assert!(!Num::Float(1.0).settled(6, 1e-9));
        assert!(Num::Float(1.0).settled(6, 0.0));
    }

    #[test]
    fn percentages_are_exact_fractions() {
        assert_eq!(Num::ratio(1, 2000, 100.0).fixed(1), "0.1");
        assert_eq!(Num::ratio(10_301_060, 10_668_190, 100.0).fixed(1), "96.6");
        assert_eq!(Num::ratio(5, 10, 1.0).fixed(3), "0.500");
        assert_eq!(Num::ratio(1, 3, 0.5).fixed(4), "0.1667");
        assert_eq!(Num::ratio(1, 0, 100.0).fixed(1), "0.0");
    }

    #[test]
    fn huge_values_do_not_overflow() {
        // Twenty waits of 999999999999999999 µs.
        let sum = 20 * 999_999_999_999_999_999i128;
        assert_eq!(
            fixed(Num::micros(sum), 6, true),
            "19,999,999,999,999.999980"
        );
        assert_eq!(
            Num::micros_over(i128::MAX, 3).fixed(2),
            "56713727820156410577229101238628.04"
        );
        let e = Num::Exact {
            num: i128::MAX,
            den: 1,
            exp10: 3,
        };
        assert_eq!(e.fixed(0), format!("{}000", i128::MAX));
    }

    #[test]
    fn doubles_print_in_full() {
        assert_eq!(Num::Float(0.1 + 0.2).fixed(17), "0.30000000000000004");
        assert_eq!(Num::Float(-2.5).fixed(0), "-2");
        assert_eq!(Num::Float(1234567.891).fixed(2), "1234567.89");
        assert_eq!(Num::Float(0.0).fixed(3), "0.000");
        assert_eq!(Num::Float(1e20).fixed(1), "100000000000000000000.0");
        assert_eq!(Num::Float(f64::INFINITY).fixed(1), "Inf");
    }

    #[test]
    fn exact_comparison() {
        let a = Num::micros_over(10, 2);
        let b = Num::micros_over(15, 3);
        assert_eq!(a.compare(b), Ordering::Equal);
        assert_eq!(Num::micros(1).compare(Num::micros(2)), Ordering::Less);
    }

    #[test]
    fn percent_formats() {
        let p = Num::ratio(1, 3, 100.0);
        assert_eq!(PercentFormat::default().format(p), "33.3%");
        assert_eq!(PercentFormat::parse("%6.2f").unwrap().format(p), " 33.33");
        assert_eq!(
            PercentFormat::parse("%-7.1f|").unwrap().format(p),
            "33.3   |"
        );
        assert_eq!(PercentFormat::parse("%07.3f").unwrap().format(p), "033.333");
        assert_eq!(
            PercentFormat::parse("%+.0f pct").unwrap().format(p),
            "+33 pct"
        );
        assert!(PercentFormat::parse("%d").is_err());
        assert!(PercentFormat::parse("%").is_err());
        assert!(PercentFormat::parse("50%").is_err());
        assert!(PercentFormat::parse("%.1f %s").is_err());
    }
}

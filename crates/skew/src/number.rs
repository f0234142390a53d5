//! Number formatting of the report: fixed decimals and thousands
//! separators, as mrskew prints them.

/// Inserts a comma every three digits left of the decimal point
/// (`22800.576222` → `22,800.576222`).
pub fn commify(s: &str) -> String {
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", s),
    };
    let int_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
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
pub fn fixed(x: f64, precision: usize, commas: bool) -> String {
    let s = format!("{x:.precision$}");
    // Rust prints -0.000000 for tiny negatives; so does C's printf, which
    // is what Perl's sprintf calls: keep it.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas() {
        assert_eq!(commify("22800.576222"), "22,800.576222");
        assert_eq!(commify("241693"), "241,693");
        assert_eq!(commify("100.000000"), "100.000000");
        assert_eq!(commify("-1234.5"), "-1,234.5");
        assert_eq!(fixed(67.254634, 6, true), "67.254634");
        assert_eq!(fixed(1000.0, 6, true), "1,000.000000");
        assert_eq!(count(60041, true), "60,041");
        assert_eq!(count(60041, false), "60041");
    }
}

/// Perl's default number-to-string conversion (`%.15g`).
pub fn perl_g15(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Inf".into() } else { "-Inf".into() };
    }
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{}", x as i64);
    }
    let e = format!("{x:.14e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..15).contains(&exp) {
        let mant = mant.trim_end_matches('0').trim_end_matches('.');
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    let decimals = (14 - exp).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod g15_tests {
    use super::perl_g15;

    #[test]
    fn like_perl() {
        assert_eq!(perl_g15(58081.0), "58081");
        assert_eq!(perl_g15(0.1 + 0.2), "0.3");
        assert_eq!(perl_g15(100.0 * 1e-6), "0.0001");
        assert_eq!(perl_g15(1e15), "1e+15");
        assert_eq!(perl_g15(1.5e-7), "1.5e-07");
        assert_eq!(perl_g15(14521990.544882), "14521990.544882");
    }
}

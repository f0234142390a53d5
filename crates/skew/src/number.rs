//! Number formatting of the report: fixed decimals and thousands
//! separators, as mrskew prints them.

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

//! Literal-normalised statement text: mrskew's `$ssql` and `$ssqlid`.
//!
//! Two statements that differ only in their literals (`where id = 1` and
//! `where id = 2`) are one statement to an application and would be one
//! shared cursor under `cursor_sharing=force`; grouping by the shareable
//! text finds the applications that should have used bind variables.
//!
//! The text is normalised the way `cursor_sharing=force` rewrites it:
//! string and numeric literals become system bind variables `:"SYS_B_0"`,
//! `:"SYS_B_1"`, ... numbered from the left; runs of white space outside
//! literals and quoted identifiers become one space, and the ends are
//! trimmed. Bind variables, quoted identifiers and comments are kept as
//! written; letter case is kept (Oracle's SQL_ID tells case apart). The
//! shareable SQL_ID is the SQL_ID of that text ([`crate::sqlid`]).
//!
//! Why by hand: this is a small lexer for Oracle's literal syntax (`''`
//! escapes, `N'…'`, `q'[…]'` quoting), which no SQL crate offers without a
//! full parser that would refuse the PL/SQL and the fragments traces hold.

/// A statement's shareable text and its SQL_ID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shareable {
    pub sql: String,
    pub sqlid: String,
}

impl Shareable {
    /// The shareable form of `sql`.
    pub fn of(sql: &str) -> Shareable {
        let sql = normalise(sql);
        let sqlid = crate::sqlid(&sql).0;
        Shareable { sql, sqlid }
    }
}

/// `cursor_sharing=force`'s rewrite of `sql` (see the module comment).
pub fn normalise(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut binds = 0usize;
    let mut space = false;
    let mut i = 0;
    // Copies b[from..to] (a whole token: never splits a UTF-8 character).
    let copy = |out: &mut String, from: usize, to: usize| out.push_str(&sql[from..to]);
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            space = !out.is_empty();
            i += 1;
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        let prev = out.as_bytes().last().copied();
        let ident_before = prev
            .is_some_and(|p| p.is_ascii_alphanumeric() || matches!(p, b'_' | b'$' | b'#' | b':'));
        match c {
            b'\'' => {
                i = string_end(b, i + 1);
                push_bind(&mut out, &mut binds);
            }
            // N'…', n'…', q'[…]', Q'{…}', nq'…'
            b'n' | b'N' | b'q' | b'Q' if !ident_before && literal_prefix(b, i).is_some() => {
                let (quote_at, q) = literal_prefix(b, i).unwrap_or((i, false));
                i = if q {
                    q_string_end(b, quote_at + 1)
                } else {
                    string_end(b, quote_at + 1)
                };
                push_bind(&mut out, &mut binds);
            }
            b'"' => {
                let end = b[i + 1..]
                    .iter()
                    .position(|&x| x == b'"')
                    .map_or(b.len(), |p| i + 2 + p);
                copy(&mut out, i, end);
                i = end;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                let end = b[i..]
                    .iter()
                    .position(|&x| x == b'\n')
                    .map_or(b.len(), |p| i + p);
                copy(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = b[i + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(b.len(), |p| i + 4 + p);
                copy(&mut out, i, end);
                i = end;
            }
            b'0'..=b'9' if !ident_before => {
                i = number_end(b, i);
                push_bind(&mut out, &mut binds);
            }
            b'.' if !ident_before && b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = number_end(b, i);
                push_bind(&mut out, &mut binds);
            }
            _ => {
                // One character (ASCII or a whole UTF-8 sequence).
                let len = sql[i..].chars().next().map_or(1, char::len_utf8);
                copy(&mut out, i, i + len);
                i += len;
            }
        }
    }
    out
}

fn push_bind(out: &mut String, n: &mut usize) {
    out.push_str(&format!(":\"SYS_B_{n}\""));
    *n += 1;
}

/// After an opening `'` at `from - 1`: the index after the closing one
/// (`''` is a quote inside the string), or the end.
fn string_end(b: &[u8], mut from: usize) -> usize {
    while from < b.len() {
        if b[from] == b'\'' {
            if b.get(from + 1) == Some(&b'\'') {
                from += 2;
                continue;
            }
            return from + 1;
        }
        from += 1;
    }
    b.len()
}

/// `N'`, `Q'`, `NQ'` (any case) at `i`: the index of the quote, and
/// whether it is q-quoting.
fn literal_prefix(b: &[u8], i: usize) -> Option<(usize, bool)> {
    let up = |k: usize| b.get(k).map(u8::to_ascii_uppercase);
    match (up(i), up(i + 1), up(i + 2)) {
        (Some(b'N'), Some(b'\''), _) => Some((i + 1, false)),
        (Some(b'Q'), Some(b'\''), _) => Some((i + 1, true)),
        (Some(b'N'), Some(b'Q'), Some(b'\'')) => Some((i + 2, true)),
        _ => None,
    }
}

/// After `q'` at `from - 1`: the delimiter at `from`, the text, then the
/// closing delimiter and `'`.
fn q_string_end(b: &[u8], from: usize) -> usize {
    let Some(&open) = b.get(from) else {
        return b.len();
    };
    let close = match open {
        b'[' => b']',
        b'{' => b'}',
        b'(' => b')',
        b'<' => b'>',
        c => c,
    };
    let mut k = from + 1;
    while k + 1 < b.len() {
        if b[k] == close && b[k + 1] == b'\'' {
            return k + 2;
        }
        k += 1;
    }
    b.len()
}

/// A numeric literal from `i`: digits, a fraction, an exponent, and
/// Oracle's `f`/`d` suffixes.
fn number_end(b: &[u8], mut i: usize) -> usize {
    let digits = |i: &mut usize| {
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
    };
    digits(&mut i);
    if b.get(i) == Some(&b'.') && b.get(i + 1) != Some(&b'.') {
        i += 1;
        digits(&mut i);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut k = i + 1;
        if matches!(b.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        if b.get(k).is_some_and(u8::is_ascii_digit) {
            i = k;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'f' | b'F' | b'd' | b'D'))
        && !b
            .get(i + 1)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_become_system_binds_numbered_from_the_left() {
        assert_eq!(
            normalise("select * from t where id = 42 and name = 'O''Hara'"),
            "select * from t where id = :\"SYS_B_0\" and name = :\"SYS_B_1\""
        );
        assert_eq!(
            normalise("select 1.5e-3, .5, 7f from dual"),
            "select :\"SYS_B_0\", :\"SYS_B_1\", :\"SYS_B_2\" from dual"
        );
        assert_eq!(
            normalise("select N'x', q'[it's]', nq'{y}' from dual"),
            "select :\"SYS_B_0\", :\"SYS_B_1\", :\"SYS_B_2\" from dual"
        );
    }

    #[test]
    fn identifiers_binds_comments_and_quoted_names_are_kept() {
        assert_eq!(
            normalise("select t1.c2, \"Col 3\" from t1 where x = :1 and y = :b2 /* 'not' 9 */"),
            "select t1.c2, \"Col 3\" from t1 where x = :1 and y = :b2 /* 'not' 9 */"
        );
        assert_eq!(
            normalise("select sys_b_0, col$9, a#1 from x"),
            "select sys_b_0, col$9, a#1 from x"
        );
    }

    #[test]
    fn white_space_runs_become_one_space() {
        assert_eq!(
            normalise("  select *\n  from   t\twhere a = 'x  y'\n"),
            "select * from t where a = :\"SYS_B_0\""
        );
    }

    #[test]
    fn statements_differing_in_literals_share_a_sqlid() {
        let a = Shareable::of("select * from t where id = 1");
        let b = Shareable::of("select *\nfrom t where id = 2");
        assert_eq!(a, b);
        assert_eq!(a.sqlid.len(), 13);
        assert_ne!(a.sqlid, crate::sqlid("select * from t where id = 1").0);
    }
}

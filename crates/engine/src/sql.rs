//! Where SQL text is not code: string literals, comments and PostgreSQL's
//! dollar quotes. Every walker of SQL text in tracelab (placeholder
//! rewriting, the result cache's table names, a study's script splitter)
//! skips them the same way.
//!
//! Hand-written because only this much of SQL's lexical rules is needed,
//! and no crate offers just that.

/// If a string literal (`'...'`, `''` inside), a comment (`-- ...` to the
/// end of the line, `/* ... */`) or a dollar-quoted string (`$$...$$`,
/// `$tag$...$tag$`) starts at byte `i`, where it ends (the byte after it;
/// the end of the text if it is not closed).
pub fn skip_literal_or_comment(sql: &str, i: usize) -> Option<usize> {
    let b = sql.as_bytes();
    match b.get(i)? {
        b'\'' => {
            let mut j = i + 1;
            loop {
                match b[j.min(b.len())..].iter().position(|&c| c == b'\'') {
                    None => return Some(b.len()),
                    Some(p) => {
                        j += p + 1;
                        // A doubled quote is a quote inside the literal.
                        if b.get(j) == Some(&b'\'') {
                            j += 1;
                        } else {
                            return Some(j);
                        }
                    }
                }
            }
        }
        b'-' if b.get(i + 1) == Some(&b'-') => Some(
            b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p),
        ),
        b'/' if b.get(i + 1) == Some(&b'*') => {
            Some(sql[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2))
        }
        b'$' => {
            // A tag of letters, digits and _ not starting with a digit
            // (`$1` is a placeholder), between two `$`.
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            if j < b.len() && b[j] == b'$' && !b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                let tag = &sql[i..=j];
                Some(
                    sql[j + 1..]
                        .find(tag)
                        .map_or(b.len(), |k| j + 1 + k + tag.len()),
                )
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Copies `sql`, letting `token` rewrite what starts at a byte outside
/// quoted text: it appends its replacement and returns where the consumed
/// text ends, or `None` to copy the character as it is. Both placeholder
/// rewriters walk SQL this way.
fn rewrite(sql: &str, mut token: impl FnMut(usize, &mut String) -> Option<usize>) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 16);
    let mut i = 0;
    while i < b.len() {
        // Literals, comments, dollar quotes and quoted names are copied
        // as they are: a `:name` or `$1` inside them is not a placeholder.
        let quoted_name = (b[i] == b'"').then(|| {
            b[i + 1..]
                .iter()
                .position(|&x| x == b'"')
                .map_or(b.len(), |p| i + 1 + p + 1)
        });
        if let Some(end) = quoted_name.or_else(|| skip_literal_or_comment(sql, i)) {
            out.push_str(&sql[i..end]);
            i = end;
            continue;
        }
        if let Some(end) = token(i, &mut out) {
            i = end;
            continue;
        }
        let ch_len = sql[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&sql[i..i + ch_len]);
        i += ch_len;
    }
    out
}

/// The end of the run of bytes from `start` that `keep` accepts.
fn run_end(b: &[u8], start: usize, keep: impl Fn(u8) -> bool) -> usize {
    b[start..]
        .iter()
        .position(|&x| !keep(x))
        .map_or(b.len(), |p| start + p)
}

/// Rewrites Oracle-style placeholders (`:1`, `:name`) as PostgreSQL's
/// (`$1`...), numbered by first appearance (a repeated `:name` reuses its
/// number, as Oracle binds by name). Leaves quoted text, `::` casts and
/// `$n` alone.
pub fn postgres_placeholders(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut names: Vec<&str> = Vec::new();
    let word = |x: u8| x.is_ascii_alphanumeric() || x == b'_';
    rewrite(sql, |i, out| {
        if b[i] != b':' {
            return None;
        }
        if b.get(i + 1) == Some(&b':') {
            out.push_str("::");
            return Some(i + 2);
        }
        if !b.get(i + 1).is_some_and(|&x| word(x)) {
            return None;
        }
        let end = run_end(b, i + 1, word);
        let name = &sql[i + 1..end];
        let n = match names.iter().position(|x| *x == name) {
            Some(p) => p + 1,
            None => {
                names.push(name);
                names.len()
            }
        };
        out.push_str(&format!("${n}"));
        Some(end)
    })
}

/// The number of bind values `engine_sql` (placeholders already `$n`)
/// takes: its highest `$n`, 0 for none.
pub fn placeholder_count(engine_sql: &str) -> usize {
    let mut most = 0;
    map_dollar_placeholders(engine_sql, |n, _| most = most.max(n));
    most
}

/// Where the first placeholder of `sql` (`:1`, `:name` or `$1`, outside
/// quoted text) starts, as a byte offset.
pub fn first_placeholder(sql: &str) -> Option<usize> {
    let b = sql.as_bytes();
    let mut first = None;
    rewrite(sql, |i, _| {
        if first.is_some() {
            return None;
        }
        match (b[i], b.get(i + 1).copied()) {
            (b':', Some(b':')) => Some(i + 2),
            (b':', Some(x)) if x.is_ascii_alphanumeric() || x == b'_' => {
                first = Some(i);
                None
            }
            (b'$', Some(x)) if x.is_ascii_digit() => {
                first = Some(i);
                None
            }
            _ => None,
        }
    });
    first
}

/// Copies `sql`, letting `f` write what replaces each `$n` placeholder
/// outside quoted text (`n` counts from 1).
pub fn map_dollar_placeholders(sql: &str, mut f: impl FnMut(usize, &mut String)) -> String {
    let b = sql.as_bytes();
    rewrite(sql, |i, out| {
        if b[i] != b'$' || !b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        let end = run_end(b, i + 1, |x| x.is_ascii_digit());
        match sql[i + 1..end].parse::<usize>() {
            Ok(n) if n > 0 => f(n, out),
            _ => out.push_str(&sql[i..end]),
        }
        Some(end)
    })
}

/// As [`map_dollar_placeholders`] for engines without `::` casts: a
/// `$n::type` (from a bind file's `#types:` line) becomes
/// `CAST(<placeholder> AS type)`, the placeholder written by `f`.
pub fn map_typed_placeholders(sql: &str, mut f: impl FnMut(usize, &mut String)) -> String {
    let b = sql.as_bytes();
    rewrite(sql, |i, out| {
        if b[i] != b'$' || !b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        let end = run_end(b, i + 1, |x| x.is_ascii_digit());
        let Ok(n) = sql[i + 1..end].parse::<usize>() else {
            out.push_str(&sql[i..end]);
            return Some(end);
        };
        if n == 0 {
            out.push_str(&sql[i..end]);
            return Some(end);
        }
        if b[end..].starts_with(b"::") {
            let tend = run_end(b, end + 2, |x| x.is_ascii_alphanumeric() || x == b'_');
            if tend > end + 2 {
                out.push_str("CAST(");
                f(n, out);
                out.push_str(" AS ");
                out.push_str(&sql[end + 2..tend]);
                out.push(')');
                return Some(tend);
            }
        }
        f(n, out);
        Some(end)
    })
}

/// Gives each `$n` of `sql` the type `types[n - 1]` as a `::type` cast
/// (unless it has one already): how a bind file's `#types:` line reaches
/// the statement.
pub fn cast_placeholders(sql: &str, types: &[Option<String>]) -> String {
    let b = sql.as_bytes();
    rewrite(sql, |i, out| {
        if b[i] != b'$' || !b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        let end = run_end(b, i + 1, |x| x.is_ascii_digit());
        out.push_str(&sql[i..end]);
        if let Ok(n) = sql[i + 1..end].parse::<usize>() {
            if let Some(Some(t)) = types.get(n.wrapping_sub(1)) {
                if !b[end..].starts_with(b"::") {
                    out.push_str("::");
                    out.push_str(t);
                }
            }
        }
        Some(end)
    })
}

/// The statement with its `$n` placeholders replaced by the values as SQL
/// literals (quoted, `'` doubled; NULL for `None`), for the simple query
/// protocol, which sends no separate values. Quoted text is left alone.
pub fn inline_binds(sql: &str, values: &[Option<&str>]) -> String {
    inline_literals(sql, values, false)
}

/// As [`inline_binds`]; with `backslashes` a `\` is doubled too, as
/// MariaDB's string literals need.
pub fn inline_literals(sql: &str, values: &[Option<&str>], backslashes: bool) -> String {
    map_dollar_placeholders(sql, |n, out| match values.get(n - 1) {
        Some(Some(v)) => {
            out.push('\'');
            for ch in v.chars() {
                match ch {
                    '\'' => out.push_str("''"),
                    '\\' if backslashes => out.push_str("\\\\"),
                    _ => out.push(ch),
                }
            }
            out.push('\'');
        }
        Some(None) => out.push_str("NULL"),
        None => {
            out.push('$');
            out.push_str(&n.to_string());
        }
    })
}

/// `text` as an SQL string literal: in single quotes, each quote doubled
/// (standard SQL; PostgreSQL with standard_conforming_strings, its default).
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::skip_literal_or_comment as skip;

    #[test]
    fn placeholders_are_counted_and_found_outside_quotes() {
        use super::{first_placeholder, placeholder_count, postgres_placeholders};
        assert_eq!(
            placeholder_count(&postgres_placeholders("select :a, :b, :a")),
            2
        );
        assert_eq!(placeholder_count("select $3, '$9'"), 3);
        assert_eq!(placeholder_count("select now()::date, 'x:y'"), 0);
        let sql = "select 1::int,\n -- :no\n 'it''s :no' , :yes";
        assert_eq!(&sql[first_placeholder(sql).unwrap()..], ":yes");
        assert_eq!(first_placeholder("select $$ :no $$"), None);
    }

    #[test]
    fn literals_comments_and_dollar_quotes_are_skipped_whole() {
        let s = "x 'it''s' y";
        assert_eq!(&s[2..skip(s, 2).unwrap()], "'it''s'");
        let s = "a -- c\nb";
        assert_eq!(&s[2..skip(s, 2).unwrap()], "-- c");
        let s = "a /* c */ b";
        assert_eq!(&s[2..skip(s, 2).unwrap()], "/* c */");
        let s = "do $f$ begin; end $f$;";
        assert_eq!(&s[3..skip(s, 3).unwrap()], "$f$ begin; end $f$");
        let s = "$$x$$";
        assert_eq!(skip(s, 0), Some(5));
        assert_eq!(skip("$1 + 2", 0), None, "a placeholder");
        assert_eq!(skip("'open", 0), Some(5), "unclosed: to the end");
        assert_eq!(skip("abc", 1), None);
    }
}

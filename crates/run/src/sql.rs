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

#[cfg(test)]
mod tests {
    use super::skip_literal_or_comment as skip;

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

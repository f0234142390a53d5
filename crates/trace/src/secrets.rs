//! Passwords never reach a trace, a summary or an error message: the one
//! redaction every writer of SQL text in tracelab uses (run's traces and
//! summaries, the proxy's traces).
//!
//! A statement that may carry a password (it says PASSWORD or IDENTIFIED:
//! `CREATE/ALTER ROLE/USER … PASSWORD '…'`, MariaDB's `IDENTIFIED BY '…'`,
//! `IDENTIFIED VIA … USING PASSWORD('…')`, `SET PASSWORD = …`) has every
//! quoted text masked, in every form the engines read: `'…'` (with `''`
//! and, to be safe, `\'` inside), `E'…'` and other prefixed strings,
//! `$$…$$` and `$tag$…$tag$`, and `"…"` (a string on MariaDB). Masking
//! errs on the side of too much: a role's double-quoted name goes too.
//!
//! Hand-written: what is needed is a lexer for quotes only, and masking
//! more than a parser would is the point.

use std::borrow::Cow;

/// Whether `sql` may carry a password (and so is masked, its binds left
/// out).
pub fn mentions_password(sql: &str) -> bool {
    // One pass, no lowered copy: every statement a tracer writes is
    // checked, and a simple-protocol workload sends a new text each time.
    let b = sql.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        let word: &[u8] = match c | 0x20 {
            b'p' => b"password",
            b'i' => b"identified",
            _ => return false,
        };
        b.get(i..i + word.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(word))
    })
}

/// `sql` with every quoted text masked if it may carry a password;
/// unchanged (borrowed) otherwise. Also for messages that quote such a
/// statement.
pub fn redact_sql(sql: &str) -> Cow<'_, str> {
    if !mentions_password(sql) {
        return Cow::Borrowed(sql);
    }
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        match b[i] {
            // Comments are copied as they are.
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = sql[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
            }
            q @ (b'\'' | b'"') => {
                let end = quoted_end(b, i, q);
                out.push_str(&sql[copied..=i]);
                out.push_str("***");
                if end > i + 1 && b[end - 1] == q {
                    out.push(q as char);
                }
                i = end;
                copied = end;
            }
            b'$' => match dollar_tag(sql, i) {
                Some(tag) => {
                    let body = i + tag.len();
                    let end = sql[body..].find(tag).map(|p| body + p);
                    out.push_str(&sql[copied..i]);
                    out.push_str(tag);
                    out.push_str("***");
                    match end {
                        Some(e) => {
                            out.push_str(tag);
                            i = e + tag.len();
                        }
                        None => i = b.len(),
                    }
                    copied = i;
                }
                None => i += 1,
            },
            _ => i += 1,
        }
    }
    out.push_str(&sql[copied..]);
    Cow::Owned(out)
}

/// A server's message about statement `sql`, with any quoted text of
/// `sql` that may be a password replaced by `***` (a message is prose:
/// its own apostrophes are not quotes, so it is not lexed itself).
pub fn redact_message(message: &str, sql: &str) -> String {
    if !mentions_password(sql) {
        return message.to_string();
    }
    let masked = redact_sql(sql);
    // The secrets are what masking took out of the statement.
    let mut secrets: Vec<&str> = Vec::new();
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                let end = quoted_end(b, i, q);
                let stop = if end > i + 1 && b[end - 1] == q {
                    end - 1
                } else {
                    end
                };
                secrets.push(&sql[i + 1..stop.max(i + 1)]);
                i = end;
            }
            b'$' => match dollar_tag(sql, i) {
                Some(tag) => {
                    let body = i + tag.len();
                    let end = sql[body..].find(tag).map_or(b.len(), |p| body + p);
                    secrets.push(&sql[body..end]);
                    i = (end + tag.len()).min(b.len());
                }
                None => i += 1,
            },
            _ => i += 1,
        }
    }
    secrets.retain(|s| !s.is_empty());
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = message.replace(sql, &masked);
    for s in secrets {
        out = out.replace(s, "***");
    }
    out
}

/// The byte after the quoted text that opens at `i` with `q` (the end of
/// the text if it is not closed). A doubled quote and a backslash-escaped
/// one stay inside: reading too far only masks more.
fn quoted_end(b: &[u8], i: usize, q: u8) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        if b[j] == b'\\' {
            j += 2;
            continue;
        }
        if b[j] == q {
            if b.get(j + 1) == Some(&q) {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    b.len()
}

/// A dollar-quote tag (`$$`, `$tag$`) starting at `i`, if one does
/// (`$1` is a placeholder).
fn dollar_tag(sql: &str, i: usize) -> Option<&str> {
    let b = sql.as_bytes();
    if b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let mut j = i + 1;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
        j += 1;
    }
    (j < b.len() && b[j] == b'$').then(|| &sql[i..=j])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_seen_in_any_case_and_place() {
        for sql in [
            "password",
            "ALTER ROLE a PASSWORD 'x'",
            "alter role a PassWord 'x'",
            "CREATE USER u IDENTIFIED BY 'x'",
            "set password = 'x'",
            "select 'é' from t where x = 'identified'",
        ] {
            assert!(mentions_password(sql), "{sql}");
        }
        for sql in [
            "",
            "select 1",
            "passwor",
            "identifie",
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
            "select 'pässword', 'ïdentified'",
        ] {
            assert!(!mentions_password(sql), "{sql}");
        }
    }

    #[test]
    fn every_form_of_password_literal_is_masked() {
        for (sql, want) in [
            (
                "ALTER ROLE bob PASSWORD 'it''s s3cret' VALID UNTIL 'x'",
                "ALTER ROLE bob PASSWORD '***' VALID UNTIL '***'",
            ),
            (
                "alter role u2 password E's3\\'cret'",
                "alter role u2 password E'***'",
            ),
            (
                "create user u with password $$s3cret$$",
                "create user u with password $$***$$",
            ),
            (
                "create role u login password $q$s3$$cret$q$",
                "create role u login password $q$***$q$",
            ),
            (
                "CREATE USER 'u'@'%' IDENTIFIED BY \"s3cret\"",
                "CREATE USER '***'@'***' IDENTIFIED BY \"***\"",
            ),
            (
                "set password for u = PASSWORD('s3cret')",
                "set password for u = PASSWORD('***')",
            ),
            (
                "alter user u identified via mysql_native_password using password('s3cret')",
                "alter user u identified via mysql_native_password using password('***')",
            ),
            (
                "alter role u password 'unterminated s3cret",
                "alter role u password '***",
            ),
            (
                "alter role u password $1 -- 'comment'",
                "alter role u password $1 -- 'comment'",
            ),
        ] {
            assert_eq!(redact_sql(sql), want, "{sql}");
            assert!(!redact_sql(sql).contains("s3"), "{sql}");
        }
        assert!(matches!(redact_sql("select 'a'"), Cow::Borrowed(_)));
        assert_eq!(
            redact_message(
                "Can't find any matching row for 'SECRETM2'",
                "set password for u = password('SECRETM2')"
            ),
            "Can't find any matching row for '***'"
        );
        assert_eq!(redact_message("it's fine", "select 1"), "it's fine");
    }
}

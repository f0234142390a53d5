//! SQL scripts of a study (setup, before, after) split into statements, so
//! that each runs on its own: VACUUM and CHECKPOINT refuse to run inside
//! the implicit transaction of a multi-statement query string.
//!
//! Hand-written because the split needs only PostgreSQL's quoting rules
//! (quotes, dollar quotes, comments: `tracelab_run::sql`), and no crate
//! does just that.

/// The statements of `sql`, trimmed, without empty ones.
pub fn statements(sql: &str) -> Vec<String> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        if let Some(end) = tracelab_run::sql::skip_literal_or_comment(sql, i) {
            i = end;
            continue;
        }
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += 1;
                }
                i += 1;
            }
            b';' => {
                push(&mut out, &sql[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    push(&mut out, &sql[start.min(sql.len())..]);
    out
}

fn push(out: &mut Vec<String>, s: &str) {
    // A statement of comments only is no statement.
    let meaningful = s
        .lines()
        .map(|l| l.split("--").next().unwrap_or("").trim())
        .any(|l| !l.is_empty());
    if meaningful {
        // Leading comment lines are dropped; the statement keeps the rest.
        let body: Vec<&str> = s
            .trim()
            .lines()
            .skip_while(|l| l.trim().is_empty() || l.trim_start().starts_with("--"))
            .collect();
        out.push(body.join("\n").trim().to_string());
    }
}

/// `{name}` replaced by the var's text; an unknown name is an error.
pub fn substitute(
    text: &str,
    vars: &std::collections::BTreeMap<String, String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        match after.find('}') {
            Some(j)
                if !after[..j].is_empty()
                    && after[..j]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                let name = &after[..j];
                match vars.get(name) {
                    Some(v) => out.push_str(v),
                    None => {
                        return Err(format!(
                            "no var `{name}` (vars: {})",
                            vars.keys().cloned().collect::<Vec<_>>().join(", ")
                        ))
                    }
                }
                rest = &after[j + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_outside_quotes_and_dollar_bodies() {
        let s = statements(
            "CREATE TABLE t (a text); -- a comment; still comment\n\
             DO $$ BEGIN PERFORM 1; END $$;\n\
             INSERT INTO t VALUES ('a;b'); SELECT $1;\n-- trailing",
        );
        assert_eq!(s.len(), 4, "{s:?}");
        assert_eq!(s[1], "DO $$ BEGIN PERFORM 1; END $$");
        assert_eq!(s[2], "INSERT INTO t VALUES ('a;b')");
        assert_eq!(s[3], "SELECT $1");
    }

    #[test]
    fn substitutes_known_vars_and_refuses_unknown_ones() {
        let mut v = std::collections::BTreeMap::new();
        v.insert("rows".to_string(), "10".to_string());
        assert_eq!(
            substitute("g(1, {rows}) {x y}", &v).unwrap(),
            "g(1, 10) {x y}"
        );
        assert!(substitute("{nope}", &v)
            .unwrap_err()
            .contains("no var `nope`"));
    }
}

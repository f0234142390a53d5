//! SQL scripts of a study (setup, before, after) split into statements, so
//! that each runs on its own: VACUUM and CHECKPOINT refuse to run inside
//! the implicit transaction of a multi-statement query string.
//!
//! The text is read by the one SQL lexer of tracelab
//! (`tracelab_run::sql`, PostgreSQL's rules): quotes, dollar quotes,
//! comments and quoted names are passed over whole.

use tracelab_run::sql::{tokens, Dialect, Kind, Lexer, Token};

/// The tokens of `sql` from byte `from` on that are code: not literals,
/// comments, dollar quotes or quoted names.
fn code(sql: &str, from: usize) -> impl Iterator<Item = Token> + '_ {
    Lexer::new(sql, Dialect::Postgres, from).filter(|t| !t.is_quoted())
}

/// The statements of `sql`, trimmed, without empty ones.
pub fn statements(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    for t in code(sql, 0) {
        if t.text(sql) == ";" {
            push(&mut out, &sql[start..t.start]);
            start = t.end;
        }
    }
    push(&mut out, &sql[start.min(sql.len())..]);
    out
}

fn push(out: &mut Vec<String>, s: &str) {
    // A statement of comments only is no statement.
    let meaningful = tokens(s).any(|t| !matches!(t.kind, Kind::Space | Kind::Comment));
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

/// The names of the columns a statement returns, as the server names
/// them (`AS name`, a column's own name, a function's name, a cast's
/// value), for checking report expressions before a study runs. `None`
/// when they cannot be known from the text (`*`, `WITH`, `RETURNING`,
/// `SHOW`, ...); an empty list for a statement that returns no rows.
/// Columns the server would call `?column?` are left out: no expression
/// can name them.
///
/// Hand-written: it needs the select list's top-level commas and
/// keywords only, over the tokens of `tracelab_run::sql`; a full SQL
/// parser would be a large dependency for that.
pub fn output_names(statement: &str) -> Option<Vec<String>> {
    let b = statement.as_bytes();
    // Skip leading comments and parentheses.
    let mut i = tokens(statement)
        .find(|t| !matches!(t.kind, Kind::Space | Kind::Comment) && t.text(statement) != "(")
        .map_or(statement.len(), |t| t.start);
    let first = word_at(statement, i).to_ascii_lowercase();
    if first == "pragma" || first == "show" {
        // SQLite's PRAGMA and PostgreSQL's SHOW name their column after
        // the setting; wal_checkpoint returns three.
        let rest = statement[i + first.len()..].trim_start();
        let name = word_at(rest, 0).to_ascii_lowercase();
        return Some(match name.as_str() {
            "wal_checkpoint" => vec!["busy".into(), "log".into(), "checkpointed".into()],
            "" => Vec::new(),
            _ => vec![name],
        });
    }
    if first != "select" {
        let rows_unknown = ["with", "values", "table", "explain", "call", "execute"];
        let returning = statement.to_ascii_lowercase().contains("returning");
        return if rows_unknown.contains(&first.as_str()) || returning {
            None
        } else {
            Some(Vec::new())
        };
    }
    i += first.len();
    // The select list: up to the first top-level clause keyword.
    let mut items: Vec<&str> = Vec::new();
    let (mut depth, mut start) = (0usize, i);
    let mut end = statement.len();
    for t in code(statement, i) {
        match (t.kind, t.text(statement)) {
            (_, "(") => depth += 1,
            (_, ")") => depth = depth.saturating_sub(1),
            (_, ",") if depth == 0 => {
                items.push(&statement[start..t.start]);
                start = t.end;
            }
            (Kind::Word, _) if depth == 0 && (t.start == 0 || !is_word(b[t.start - 1])) => {
                let w = word_at(statement, t.start).to_ascii_lowercase();
                const ENDS: [&str; 14] = [
                    "from",
                    "where",
                    "group",
                    "order",
                    "limit",
                    "union",
                    "into",
                    "having",
                    "window",
                    "offset",
                    "fetch",
                    "for",
                    "intersect",
                    "except",
                ];
                if ENDS.contains(&w.as_str()) {
                    end = t.start;
                    break;
                }
            }
            _ => {}
        }
    }
    items.push(&statement[start..end]);
    let mut names = Vec::new();
    for (k, item) in items.iter().enumerate() {
        let mut item = item.trim();
        if k == 0 {
            for lead in ["distinct", "all"] {
                if word_at(item, 0).eq_ignore_ascii_case(lead) {
                    item = item[lead.len()..].trim_start();
                }
            }
            if item.starts_with("on") && item[2..].trim_start().starts_with('(') {
                return None;
            }
        }
        if item.is_empty() {
            continue;
        }
        if item == "*" || item.ends_with(".*") {
            return None;
        }
        if let Some(n) = column_name(item) {
            names.push(n);
        }
    }
    Some(names)
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'{' || c == b'}' || c == b'$'
}

/// The word (letters, digits, `_`, and `{var}` braces) at byte `i`.
fn word_at(s: &str, i: usize) -> &str {
    let b = s.as_bytes();
    let mut j = i;
    while j < b.len() && is_word(b[j]) {
        j += 1;
    }
    &s[i.min(j)..j]
}

/// The name the server gives one select-list item, lower case.
fn column_name(item: &str) -> Option<String> {
    let unquote = |w: &str| w.trim_matches('"').to_ascii_lowercase();
    let lower = item.to_ascii_lowercase();
    // `expr AS name`, or `expr name` after a closing parenthesis or a
    // value (an operator before the last word makes it an operand).
    let words: Vec<&str> = item.split_whitespace().collect();
    if words.len() >= 2 {
        let last = words[words.len() - 1];
        let before = words[words.len() - 2];
        let plain = |w: &str| w.bytes().all(|c| is_word(c) || c == b'"') && !w.is_empty();
        if plain(last) && before.eq_ignore_ascii_case("as") {
            return Some(unquote(last));
        }
        let operand = before
            .bytes()
            .last()
            .is_some_and(|c| c == b')' || c == b'"' || c == b'\'' || c.is_ascii_alphanumeric());
        let keyword = ["end", "null", "true", "false"]
            .contains(&last.to_ascii_lowercase().as_str())
            || [
                "and", "or", "not", "is", "like", "in", "then", "else", "when",
            ]
            .contains(&before.to_ascii_lowercase().as_str());
        if plain(last) && operand && !keyword && !lower.starts_with("case") {
            return Some(unquote(last));
        }
    }
    if lower.starts_with("case") {
        return Some("case".into());
    }
    // A cast: the value's name, or the type's for an expression.
    if let Some((value, ty)) = item.rsplit_once("::") {
        let value = value.trim();
        if !value.contains(['(', ' ']) || value.ends_with(')') && !value.starts_with('(') {
            return column_name(value);
        }
        return Some(word_at(ty.trim(), 0).to_ascii_lowercase()).filter(|w| !w.is_empty());
    }
    // A column (`t.col`) or a function call (`schema.f(...)`).
    let head: String = item
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || "_.\"{}$".contains(*c))
        .collect();
    let rest = item[head.len()..].trim_start();
    if head.is_empty() || head.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if rest.is_empty() || rest.starts_with('(') {
        return head.rsplit('.').next().map(unquote);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_of_a_select_lists_columns() {
        let n = |s: &str| output_names(s);
        let v = |xs: &[&str]| Some(xs.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(
            n("SELECT wal_records, wal_bytes, wal_sync, wal_sync_time FROM pg_stat_wal"),
            v(&["wal_records", "wal_bytes", "wal_sync", "wal_sync_time"])
        );
        assert_eq!(
            n("SELECT pg_relation_size(to_regclass('t')) AS heap_bytes"),
            v(&["heap_bytes"])
        );
        assert_eq!(
            n("SELECT ((j->0->'Plan'->>'Shared Dirtied Blocks')::int\n + (j->0->'Plan'->>'Local, Blocks')::int) AS firstread_dirtied\n FROM (SELECT 1) s"),
            v(&["firstread_dirtied"])
        );
        assert_eq!(
            n("select count(*), s.blks_read, max(x) m, a + b, wal_bytes::text, (1)::numeric, \"Q\" from s"),
            v(&["count", "blks_read", "m", "wal_bytes", "numeric", "q"])
        );
        assert_eq!(
            n("SELECT (SELECT wal_bytes FROM pg_stat_wal) - 1 AS freeze_wal_bytes"),
            v(&["freeze_wal_bytes"])
        );
        assert_eq!(n("select distinct a from t"), v(&["a"]));
        assert_eq!(
            n("SELECT pg_stat_force_next_flush()"),
            v(&["pg_stat_force_next_flush"])
        );
        assert_eq!(n("select * from t"), None);
        assert_eq!(n("with x as (select 1) select * from x"), None);
        assert_eq!(n("insert into t values (1) returning id"), None);
        assert_eq!(n("CHECKPOINT"), v(&[]));
        assert_eq!(
            n("PRAGMA wal_checkpoint(TRUNCATE)"),
            v(&["busy", "log", "checkpointed"])
        );
        assert_eq!(n("show work_mem"), v(&["work_mem"]));
        assert_eq!(n("DROP TABLE IF EXISTS t"), v(&[]));
        assert_eq!(n("-- a comment\nselect 1 as one"), v(&["one"]));
    }

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
    fn e_strings_and_nested_comments_hold_their_semicolons() {
        let s = statements("SELECT E'a\\';b'; /* x /* y */ ; */ SELECT 2;\n/* only a comment */");
        assert_eq!(s, ["SELECT E'a\\';b'", "/* x /* y */ ; */ SELECT 2"]);
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

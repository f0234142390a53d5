//! What the sessions execute: a statement and the bind values of each
//! execution.

use std::path::Path;

use crate::error::RunError;

/// One statement and its bind rows.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The SQL as given (written to traces).
    pub sql: String,
    /// The SQL with the engine's placeholders.
    pub engine_sql: String,
    /// One row of values per execution, cycled; `None` is NULL.
    pub binds: Vec<Vec<Option<String>>>,
}

impl Workload {
    pub fn postgres(sql: &str, binds: Vec<Vec<Option<String>>>) -> Workload {
        Workload {
            sql: sql.to_string(),
            engine_sql: postgres_placeholders(sql),
            binds,
        }
    }
}

/// Rewrites Oracle-style placeholders (`:1`, `:name`) as PostgreSQL's
/// (`$1`...), numbered by first appearance (a repeated `:name` reuses its
/// number, as Oracle binds by name). Leaves quoted text, `::` casts and
/// `$n` alone.
pub fn postgres_placeholders(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut names: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\'' || c == b'"' {
            let end = b[i + 1..]
                .iter()
                .position(|&x| x == c)
                .map_or(b.len(), |p| i + 1 + p + 1);
            out.push_str(&sql[i..end]);
            i = end;
            continue;
        }
        if c == b':' && b.get(i + 1) == Some(&b':') {
            out.push_str("::");
            i += 2;
            continue;
        }
        if c == b':'
            && b.get(i + 1)
                .is_some_and(|x| x.is_ascii_alphanumeric() || *x == b'_')
        {
            let start = i + 1;
            let mut end = start;
            while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
                end += 1;
            }
            let name = &sql[start..end];
            let n = match names.iter().position(|x| x == name) {
                Some(p) => p + 1,
                None => {
                    names.push(name.to_string());
                    names.len()
                }
            };
            out.push_str(&format!("${n}"));
            i = end;
            continue;
        }
        let ch_len = sql[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&sql[i..i + ch_len]);
        i += ch_len;
    }
    out
}

/// Reads a bind file: one execution per line, values separated by commas,
/// double quotes around values that hold commas, an unquoted `NULL` for
/// NULL. Every line must have as many values as the first.
pub fn read_binds(path: &Path) -> Result<Vec<Vec<Option<String>>>, RunError> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_path(path)
        .map_err(|e| RunError::Binds {
            path: path.to_path_buf(),
            line: 0,
            what: e.to_string(),
        })?;
    let mut rows = Vec::new();
    let mut width = None;
    for (n, rec) in rdr.records().enumerate() {
        let line = n as u64 + 1;
        let rec = rec.map_err(|e| RunError::Binds {
            path: path.to_path_buf(),
            line: e.position().map_or(line, |p| p.line()),
            what: format!("expected comma-separated values: {e}"),
        })?;
        let w = *width.get_or_insert(rec.len());
        if rec.len() != w {
            return Err(RunError::Binds {
                path: path.to_path_buf(),
                line: rec.position().map_or(line, |p| p.line()),
                what: format!(
                    "expected {w} values like the first line, found {}",
                    rec.len()
                ),
            });
        }
        rows.push(
            rec.iter()
                .map(|v| (v != "NULL").then(|| v.to_string()))
                .collect(),
        );
    }
    if rows.is_empty() {
        return Err(RunError::Binds {
            path: path.to_path_buf(),
            line: 1,
            what: "expected at least one line of bind values".into(),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        assert_eq!(
            postgres_placeholders("select * from t where a = :1 and b >= :2 and c <= :2"),
            "select * from t where a = $1 and b >= $2 and c <= $2"
        );
        assert_eq!(
            postgres_placeholders(
                "select ':x', a::int from t where n = :name and m = :other and o = :name"
            ),
            "select ':x', a::int from t where n = $1 and m = $2 and o = $1"
        );
        assert_eq!(
            postgres_placeholders("select $1, 'é:1'"),
            "select $1, 'é:1'"
        );
    }

    #[test]
    fn bind_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("b.csv");
        std::fs::write(&p, "1686,5/11/2023 0:0:0\n\"a,b\",NULL\n").unwrap();
        assert_eq!(
            read_binds(&p).unwrap(),
            vec![
                vec![Some("1686".into()), Some("5/11/2023 0:0:0".into())],
                vec![Some("a,b".into()), None]
            ]
        );
        std::fs::write(&p, "1,2\n3\n").unwrap();
        let e = read_binds(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("b.csv:2: expected 2 values like the first line, found 1"),
            "{e}"
        );
        std::fs::write(&p, "").unwrap();
        assert!(read_binds(&p).is_err());
    }
}

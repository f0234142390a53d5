//! What the sessions execute: statements, the bind values of each
//! execution, and how sessions pick among them.

use std::io::BufRead;
use std::path::Path;

use crate::binds::{Binds, Builder, NulAt};
use crate::error::RunError;
use tracelab_engine::sql::{first_placeholder, placeholder_count, postgres_placeholders};

/// One statement and its bind rows.
#[derive(Debug, Clone)]
pub struct Statement {
    /// The SQL as given (written to traces).
    pub sql: String,
    /// The SQL with the engine's placeholders.
    pub engine_sql: String,
    /// One row of values per execution, cycled; `None` is NULL. Shared,
    /// not copied, by the sessions.
    pub binds: Binds,
    /// Relative frequency in `semi-random` mode.
    pub weight: u32,
}

/// How a session picks the next statement (sqlrun's `--exe-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExeMode {
    /// Each statement in turn, in manifest order.
    #[default]
    Sequential,
    /// At random, weighted by the manifest's frequencies.
    SemiRandom,
    /// At random, every statement equally likely.
    TrulyRandom,
}

/// What the sessions execute.
#[derive(Debug, Clone)]
pub struct Workload {
    pub statements: Vec<Statement>,
    pub mode: ExeMode,
}

impl Workload {
    /// One statement with its bind rows.
    pub fn postgres(sql: &str, binds: Vec<Vec<Option<String>>>) -> Workload {
        Workload::with_binds(sql, binds.into())
    }

    /// One statement with its bind rows, as [`read_typed_binds`] reads
    /// them.
    pub fn with_binds(sql: &str, binds: Binds) -> Workload {
        Workload {
            statements: vec![Statement {
                sql: sql.to_string(),
                engine_sql: postgres_placeholders(sql),
                binds,
                weight: 1,
            }],
            mode: ExeMode::Sequential,
        }
    }

    /// An sqlrun kit: `DIR/sqlfile.conf` (or `DIR/Pg/sqlfile.conf`, where
    /// sqlrun looks for PostgreSQL kits), whose first line is the field
    /// delimiter and whose records are `frequency,sqlfile[,bindfile]`.
    ///
    /// sqlrun's quirks are fixed, not copied: the delimiter is text, not a
    /// regex; records keep their file order (not Perl hash order); blank
    /// and `#` lines of bind files are skipped; every bind row is used,
    /// the last one too.
    pub fn from_sqldir(dir: &Path, mode: ExeMode) -> Result<Workload, RunError> {
        let dir = if dir.join("sqlfile.conf").is_file() {
            dir.to_path_buf()
        } else {
            dir.join("Pg")
        };
        let manifest = dir.join("sqlfile.conf");
        let text = std::fs::read_to_string(&manifest).map_err(|source| RunError::Io {
            path: manifest.clone(),
            source,
        })?;
        let mut lines = text.lines().enumerate();
        let delim = lines
            .next()
            .map(|(_, l)| l.trim().to_string())
            .filter(|d| !d.is_empty())
            .ok_or_else(|| {
                bad(
                    &manifest,
                    1,
                    "expected the field delimiter (e.g. `,`) on the first line",
                )
            })?;
        let mut statements: Vec<(String, Statement)> = Vec::new();
        for (n, line) in lines {
            let line_no = n as u64 + 1;
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = t.split(delim.as_str()).map(str::trim).collect();
            let weight: f64 = f[0].parse().map_err(|_| {
                bad(
                    &manifest,
                    line_no,
                    &format!("expected `frequency{delim}sqlfile[{delim}bindfile]`, found '{t}'"),
                )
            })?;
            let file = f.get(1).filter(|s| !s.is_empty()).ok_or_else(|| {
                bad(
                    &manifest,
                    line_no,
                    &format!("expected an SQL file after the frequency{delim}"),
                )
            })?;
            let sql_path = dir.join(file);
            let raw = std::fs::read_to_string(&sql_path).map_err(|source| RunError::Io {
                path: sql_path.clone(),
                source,
            })?;
            let sql: Vec<&str> = raw.lines().filter(|l| !l.trim().is_empty()).collect();
            let sql = sql.join("\n");
            let sql = sql.trim().trim_end_matches(';').trim_end().to_string();
            let binds = match f.get(2).filter(|s| !s.is_empty()) {
                Some(b) => read_delimited_binds(&dir.join(b), &delim)?,
                None => Binds::default(),
            };
            // A statement with placeholders and no bind values would fail
            // every execution (a million errors a second): refused here.
            let takes = placeholder_count(&postgres_placeholders(&sql));
            if takes > 0 && binds.is_empty() {
                let at = first_placeholder(&raw).unwrap_or(0);
                return Err(bad(
                    &sql_path,
                    raw[..at].matches('\n').count() as u64 + 1,
                    &format!(
                        "the statement has {takes} placeholder(s) and no bind values were \
                         given: name a bind file as the third field of its record \
                         ({}:{line_no})",
                        manifest.display()
                    ),
                ));
            }
            let st = Statement {
                engine_sql: postgres_placeholders(&sql),
                sql,
                binds,
                weight: weight.max(0.0).round() as u32,
            };
            // The same file twice: the later line wins, in its first place.
            match statements.iter_mut().find(|(f, _)| f == file) {
                Some(slot) => slot.1 = st,
                None => statements.push((file.to_string(), st)),
            }
        }
        if statements.is_empty() {
            return Err(bad(
                &manifest,
                2,
                "expected at least one `frequency,sqlfile` record",
            ));
        }
        Ok(Workload {
            statements: statements.into_iter().map(|(_, s)| s).collect(),
            mode,
        })
    }

    /// The statement a session runs next: `turn` counts its executions.
    pub fn pick(&self, turn: u64, rng: &mut fastrand::Rng) -> usize {
        let n = self.statements.len();
        match self.mode {
            ExeMode::Sequential => (turn % n as u64) as usize,
            ExeMode::TrulyRandom => rng.usize(..n),
            ExeMode::SemiRandom => {
                let total: u64 = self.statements.iter().map(|s| s.weight as u64).sum();
                if total == 0 {
                    return rng.usize(..n);
                }
                let mut x = rng.u64(..total);
                for (i, s) in self.statements.iter().enumerate() {
                    if x < s.weight as u64 {
                        return i;
                    }
                    x -= s.weight as u64;
                }
                n - 1
            }
        }
    }
}

fn bad(path: &Path, line: u64, what: &str) -> RunError {
    RunError::Binds {
        path: path.to_path_buf(),
        line,
        what: what.to_string(),
    }
}

/// An sqlrun bind file: values split on the manifest's delimiter, no
/// quoting; blank and `#` lines skipped. Read line by line into the
/// compact rows (crate::binds), never whole.
fn read_delimited_binds(path: &Path, delim: &str) -> Result<Binds, RunError> {
    let io = |source| RunError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (file, size) = open_sized(path)?;
    let mut b = Builder::new(size);
    let mut reader = std::io::BufReader::new(file);
    let mut bytes = Vec::new();
    let (mut line_no, mut offset) = (0u64, 0u64);
    loop {
        bytes.clear();
        let n = reader.read_until(b'\n', &mut bytes).map_err(io)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        // Text that is not UTF-8 is named where it is, not just refused.
        let line = std::str::from_utf8(&bytes).map_err(|e| {
            bad(
                path,
                line_no,
                &format!(
                    "expected UTF-8 text, found a byte that is not at byte offset {} of the file",
                    offset + e.valid_up_to() as u64
                ),
            )
        })?;
        offset += n as u64;
        let l = line.trim_end_matches('\n').trim_end_matches('\r');
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        for (i, v) in l.split(delim).enumerate() {
            if v.contains('\0') {
                b.nul_at(|| NulAt {
                    path: path.to_path_buf(),
                    line: line_no,
                    value: i + 1,
                });
            }
            b.push(Some(v));
        }
        b.end_row();
    }
    if b.rows() == 0 {
        return Err(bad(path, 1, "expected at least one line of bind values"));
    }
    Ok(b.finish())
}

/// Opens a bind file and tells its size (to size the rows' text).
fn open_sized(path: &Path) -> Result<(std::fs::File, u64), RunError> {
    let io = |source| RunError::Io {
        path: path.to_path_buf(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let size = f.metadata().map_err(io)?.len();
    Ok((f, size))
}

/// Reads a bind file: one execution per line, values separated by commas,
/// double quotes around values that hold commas, an unquoted `NULL` for
/// NULL. Every line must have as many values as the first. A first line
/// `#types: int, timestamp, ...` is skipped (see [`read_typed_binds`]).
pub fn read_binds(path: &Path) -> Result<Binds, RunError> {
    read_typed_binds(path).map(|(_, rows)| rows)
}

/// As [`read_binds`], with the types of an optional first line
/// `#types: int, , timestamp` (one per column, empty for none): each
/// value is then cast to its type in the statement (`$1::int` on
/// PostgreSQL, `CAST(? AS int)` elsewhere), for statements whose
/// parameters the server cannot type by itself.
///
/// The file is read as a stream into the compact rows (crate::binds):
/// the memory it takes is about its size plus 4 bytes per value.
pub fn read_typed_binds(path: &Path) -> Result<BindFile, RunError> {
    let io = |source| RunError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (file, size) = open_sized(path)?;
    let mut reader = std::io::BufReader::with_capacity(64 << 10, file);
    let typed = reader.fill_buf().map_err(io)?.starts_with(b"#types:");
    let mut types = Vec::new();
    if typed {
        let mut line = String::new();
        reader.read_line(&mut line).map_err(io)?;
        types = line["#types:".len()..]
            .trim_end_matches(['\n', '\r'])
            .split(',')
            .map(|t| {
                let t = t.trim();
                (!t.is_empty()).then(|| t.to_string())
            })
            .collect();
        if let Some(bad) = types
            .iter()
            .flatten()
            .find(|t| !t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        {
            return Err(RunError::Binds {
                path: path.to_path_buf(),
                line: 1,
                what: format!(
                    "expected type names of letters, digits and _ after #types:, found `{bad}`"
                ),
            });
        }
    }
    let rows = read_csv_binds(path, reader, size, u64::from(typed))?;
    Ok((types, rows))
}

/// A bind file's column types (from `#types:`) and rows.
pub type BindFile = (Vec<Option<String>>, Binds);

fn read_csv_binds(
    path: &Path,
    body: impl std::io::Read,
    size: u64,
    skipped: u64,
) -> Result<Binds, RunError> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(body);
    let mut b = Builder::new(size);
    let mut width = None;
    let mut rec = csv::StringRecord::new();
    loop {
        let line = b.rows() as u64 + 1 + skipped;
        match rdr.read_record(&mut rec) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                let at = e.position().map_or(line, |p| p.line() + skipped);
                let what = match e.kind() {
                    csv::ErrorKind::Utf8 { err, .. } => format!(
                        "expected UTF-8 text, found a byte that is not in value {}",
                        err.field() + 1
                    ),
                    _ => format!("expected comma-separated values: {e}"),
                };
                return Err(RunError::Binds {
                    path: path.to_path_buf(),
                    line: at,
                    what,
                });
            }
        }
        let w = *width.get_or_insert(rec.len());
        if rec.len() != w {
            return Err(RunError::Binds {
                path: path.to_path_buf(),
                line: rec.position().map_or(line, |p| p.line() + skipped),
                what: format!(
                    "expected {w} values like the first line, found {}",
                    rec.len()
                ),
            });
        }
        for (i, v) in rec.iter().enumerate() {
            if v.contains('\0') {
                b.nul_at(|| NulAt {
                    path: path.to_path_buf(),
                    line: rec.position().map_or(line, |p| p.line() + skipped),
                    value: i + 1,
                });
            }
            b.push((v != "NULL").then_some(v));
        }
        b.end_row();
    }
    if b.rows() == 0 {
        return Err(RunError::Binds {
            path: path.to_path_buf(),
            line: 1 + skipped,
            what: "expected at least one line of bind values".into(),
        });
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelab_engine::sql::{cast_placeholders, inline_binds, map_typed_placeholders};

    #[test]
    fn placeholders() {
        // Comments, doubled quotes and dollar quotes hide no placeholder.
        assert_eq!(
            postgres_placeholders(
                "select :a, 'it''s :b' -- :c\n/* :d */ from t where x = $q$:e$q$"
            ),
            "select $1, 'it''s :b' -- :c\n/* :d */ from t where x = $q$:e$q$"
        );
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
    fn inlined_binds_for_the_simple_protocol() {
        assert_eq!(
            inline_binds(
                "select * from t where a = $1 and b = $2 and c = '$1'",
                &[Some("it's"), None]
            ),
            "select * from t where a = 'it''s' and b = NULL and c = '$1'"
        );
        assert_eq!(inline_binds("select $3", &[Some("x")]), "select $3");
    }

    #[test]
    fn typed_bind_files_cast_their_placeholders() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        std::fs::write(
            &p,
            "#types: int, , timestamp\n1,a,2023-05-11\nNULL,b,2023-05-12\n",
        )
        .unwrap();
        let (types, rows) = read_typed_binds(&p).unwrap();
        assert_eq!(
            types,
            vec![Some("int".into()), None, Some("timestamp".into())]
        );
        assert_eq!(rows.len(), 2);
        assert_eq!(rows.row(1).next(), Some(None));
        assert_eq!(
            cast_placeholders("select $1, $2, $3, $1::bigint", &types),
            "select $1::int, $2, $3::timestamp, $1::bigint"
        );
        assert_eq!(
            map_typed_placeholders("select $1::int, '$2::x'", |n, o| o
                .push_str(&format!("?{n}"))),
            "select CAST(?1 AS int), '$2::x'"
        );
        // Lines count from the top of the file, the types line included.
        std::fs::write(&p, "#types: int\n1\n1,2\n").unwrap();
        let e = read_typed_binds(&p).unwrap_err().to_string();
        assert!(e.contains("t.csv:3:"), "{e}");
        std::fs::write(&p, "#types: int; drop\n1\n").unwrap();
        let e = read_typed_binds(&p).unwrap_err().to_string();
        assert!(e.contains(":1:") && e.contains("type names"), "{e}");
    }

    #[test]
    fn bind_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("b.csv");
        std::fs::write(&p, "1686,5/11/2023 0:0:0\n\"a,b\",NULL\n").unwrap();
        assert_eq!(
            read_binds(&p).unwrap().to_vec(),
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

#[cfg(test)]
mod kit_tests {
    use super::*;

    #[test]
    fn sqlrun_kits_read_with_their_quirks_fixed() {
        let d = tempfile::tempdir().unwrap();
        let pg = d.path().join("Pg");
        std::fs::create_dir_all(&pg).unwrap();
        std::fs::write(
            pg.join("sqlfile.conf"),
            ",\n# frequency,sqlfile,bindfile\n5,sql-3.sql,sql-3-binds.txt\n1,select-one.sql,\n2,sql-3.sql,sql-3-binds.txt\n",
        )
        .unwrap();
        std::fs::write(
            pg.join("sql-3.sql"),
            "select 'with bind' myval\n\nwhere 1 = :1;\n",
        )
        .unwrap();
        std::fs::write(pg.join("sql-3-binds.txt"), "1\n\n2\n").unwrap();
        std::fs::write(pg.join("select-one.sql"), "select 1").unwrap();
        let w = Workload::from_sqldir(d.path(), ExeMode::SemiRandom).unwrap();
        assert_eq!(w.statements.len(), 2, "a repeated file is one statement");
        assert_eq!(
            w.statements[0].sql,
            "select 'with bind' myval\nwhere 1 = :1"
        );
        assert_eq!(
            w.statements[0].engine_sql,
            "select 'with bind' myval\nwhere 1 = $1"
        );
        assert_eq!(w.statements[0].weight, 2, "the later line wins");
        assert_eq!(
            w.statements[0].binds.to_vec(),
            vec![vec![Some("1".into())], vec![Some("2".into())]]
        );
        assert!(w.statements[1].binds.is_empty());
        let mut rng = fastrand::Rng::with_seed(7);
        let picks: Vec<usize> = (0..3000).map(|t| w.pick(t, &mut rng)).collect();
        let zeros = picks.iter().filter(|&&p| p == 0).count();
        assert!(
            (1800..2200).contains(&zeros),
            "weights 2:1 → about 2000 of 3000: {zeros}"
        );
        let seq = Workload {
            mode: ExeMode::Sequential,
            ..w.clone()
        };
        assert_eq!(
            (0..4).map(|t| seq.pick(t, &mut rng)).collect::<Vec<_>>(),
            [0, 1, 0, 1]
        );

        std::fs::write(pg.join("sqlfile.conf"), ",\nfive,x.sql\n").unwrap();
        let e = Workload::from_sqldir(d.path(), ExeMode::Sequential)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "sqlfile.conf:2: expected `frequency,sqlfile[,bindfile]`, found 'five,x.sql'"
            ),
            "{e}"
        );
    }
}

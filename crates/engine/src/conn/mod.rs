//! The engines a session talks to, behind one small interface: connect,
//! prepare, execute with text binds, and run transaction control. The
//! session measures and traces; an engine only does the round trips.

pub mod mysql;
pub mod pgwire;
pub mod postgres;
pub mod sqlite;

use crate::error::EngineError;

/// Rows as an engine returns them: each value's bytes, `None` for NULL.
/// The result cache keeps them as they are.
pub type Rows = Vec<Vec<Option<Vec<u8>>>>;

/// Which engine a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Postgres,
    Mysql,
    Sqlite,
}

impl Engine {
    /// The engine a connection URL names by its scheme.
    pub fn of_url(url: &str) -> Result<Engine, EngineError> {
        let scheme = url.split(':').next().unwrap_or("").to_ascii_lowercase();
        match scheme.as_str() {
            "postgres" | "postgresql" => Ok(Engine::Postgres),
            "mysql" | "mariadb" => Ok(Engine::Mysql),
            "sqlite" => Ok(Engine::Sqlite),
            _ => Err(EngineError::Usage(format!(
                "cannot tell the engine of `{}`: expected a URL starting with postgres://, \
                 mysql:// (or mariadb://), or sqlite:PATH (or sqlite::memory:)",
                redact(url)
            ))),
        }
    }

    /// Every engine, in the order studies list them.
    pub const ALL: [Engine; 3] = [Engine::Postgres, Engine::Sqlite, Engine::Mysql];

    /// The engine of a name as trace headers, summaries and study files
    /// write it (`postgres`, `mariadb`, `sqlite`).
    pub fn from_name(name: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The names of every engine, in the order of [`Engine::ALL`], for
    /// messages listing what is expected.
    pub const NAMES: [&'static str; 3] = [
        Engine::ALL[0].name(),
        Engine::ALL[1].name(),
        Engine::ALL[2].name(),
    ];

    /// The name written in trace headers and summaries.
    pub const fn name(self) -> &'static str {
        match self {
            Engine::Postgres => "postgres",
            Engine::Mysql => "mariadb",
            Engine::Sqlite => "sqlite",
        }
    }

    /// The engine's name as people write it, for messages.
    pub const fn title(self) -> &'static str {
        match self {
            Engine::Postgres => "PostgreSQL",
            Engine::Mysql => "MariaDB",
            Engine::Sqlite => "SQLite",
        }
    }

    /// Whether every call blocks its thread (an in-process engine): such
    /// sessions each get a thread of their own.
    pub fn blocks(self) -> bool {
        self == Engine::Sqlite
    }
}

/// A URL as it may be shown: any password replaced by `***`.
///
/// What `--db` is given may be something other than a URL (a mistake the
/// error then shows): a libpq key=value string (`host=h password=x`) or
/// Oracle's `user/password@service`; their passwords are masked too.
pub fn redact(url: &str) -> String {
    if !url.contains("://") {
        return redact_other(url);
    }
    let url = redact_query(url);
    // scheme://user:password@host... : the password is between the first
    // ':' after "//" and the last '@' before the path.
    let Some(auth_start) = url.find("//").map(|p| p + 2) else {
        return url;
    };
    let rest = &url[auth_start..];
    let host_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..host_end].rfind('@') else {
        return url;
    };
    match rest[..at].find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..auth_start],
            &rest[..colon],
            &rest[at..]
        ),
        None => url,
    }
}

/// `url` with the value of a `password=` (or `pass=`) query parameter
/// masked: libpq and MariaDB URLs may carry the password there too.
fn redact_query(url: &str) -> String {
    let Some(q) = url.find('?') else {
        return url.to_string();
    };
    let params: Vec<String> = url[q + 1..]
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if matches!(k.to_ascii_lowercase().as_str(), "password" | "pass") => {
                format!("{k}=***")
            }
            _ => p.to_string(),
        })
        .collect();
    format!("{}?{}", &url[..q], params.join("&"))
}

/// Whether `key` names a password in a key=value list (libpq's
/// `password`, MariaDB's `pass`, ODBC's `pwd`).
fn is_password_key(key: &str) -> bool {
    matches!(
        key.to_ascii_lowercase().as_str(),
        "password" | "pass" | "pwd"
    )
}

/// A connection string that is not a `scheme://` URL, as it may be shown:
/// the value of every password key masked (values as libpq reads them:
/// up to a blank, `;` or `&`, or between single quotes with `\` escapes),
/// and a `user/password@` or `user:password@` prefix masked.
fn redact_other(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let sep = |c: char| c.is_whitespace() || matches!(c, ';' | '&' | '?');
    while i < b.len() {
        // The key before a `=`: its last word (libpq allows blanks
        // around the `=`).
        let key = || {
            let before = s[..i].trim_end();
            &before[before.rfind(sep).map_or(0, |p| p + 1)..]
        };
        if b[i] == b'=' && is_password_key(key()) {
            out.push('=');
            let mut j = i + 1;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            if b.get(j) == Some(&b'\'') {
                j += 1;
                while j < b.len() && b[j] != b'\'' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                j = (j + 1).min(b.len());
            } else {
                while j < b.len() && !matches!(b[j], b' ' | b'\t' | b'\n' | b'\r' | b';' | b'&') {
                    j += 1;
                }
            }
            out.push_str("***");
            i = j;
            continue;
        }
        let ch_len = s[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&s[i..i + ch_len]);
        i += ch_len;
    }
    // `scott/tiger@orcl`, `u:p@h/db`: the credentials before the last
    // `@`, when that part is one word with no key=value in it.
    if out.starts_with("sqlite:") {
        return out;
    }
    if let Some(at) = out.rfind('@') {
        let cred = &out[..at];
        if !cred.contains(|c: char| c.is_whitespace() || c == '=') {
            if let Some(sep) = cred.find(['/', ':']) {
                return format!("{}***{}", &out[..=sep], &out[at..]);
            }
        }
    }
    out
}

/// An error's innermost cause, said once: client libraries wrap an I/O
/// error in layers that each repeat its words ("Input/output error:
/// Input/output error: Connection refused").
pub fn innermost(e: &dyn std::error::Error) -> String {
    let mut e = e;
    while let Some(inner) = e.source() {
        e = inner;
    }
    e.to_string()
}

/// Checks a connection URL before anything starts: the scheme names a
/// known engine and the engine's client can read the rest. A mistake is a
/// usage error naming the URL (password hidden) and what is wrong.
pub fn check_url(url: &str) -> Result<Engine, EngineError> {
    let engine = Engine::of_url(url)?;
    let bad = |what: String| EngineError::Usage(format!("--db {}: {what}", redact(url)));
    match engine {
        Engine::Postgres => {
            // As the session will read it: libpq's service file, PG*
            // variables and password file included.
            crate::conninfo::postgres(url).map_err(bad)?;
        }
        Engine::Mysql => {
            let url_m = match url.strip_prefix("mariadb:") {
                Some(rest) => format!("mysql:{rest}"),
                None => url.to_string(),
            };
            mysql_async::Opts::from_url(&url_m)
                .map_err(|_| bad("expected mysql://user[:password]@host[:port]/database".into()))?;
        }
        Engine::Sqlite => {
            let rest = url.split_once(':').map_or("", |(_, r)| r);
            if rest.trim().is_empty() {
                return Err(bad("expected sqlite:PATH or sqlite::memory:".into()));
            }
        }
    }
    Ok(engine)
}

/// An engine's error, as the session reports it.
#[derive(Debug, Clone)]
pub struct DbError {
    /// The engine's code: a SQLSTATE on PostgreSQL, the error number on
    /// MariaDB, the extended result code on SQLite; `connection` when the
    /// connection itself failed.
    pub code: String,
    /// A message for people, never holding a password.
    pub message: String,
}

/// What a session needs of a connection. Every call is one round trip
/// (one step of an in-process engine).
// `async fn` without a `Send` bound on purpose: each session drives its
// connection on a current-thread runtime of its own, never across threads.
#[allow(async_fn_in_trait)]
pub trait Conn {
    /// Prepares a statement written with `$n` placeholders and returns
    /// its handle for `execute`.
    async fn prepare(&mut self, sql: &str) -> Result<usize, DbError>;
    /// Executes a prepared statement with text bind values (`None` is
    /// NULL) and returns the number of rows it returned.
    async fn execute(&mut self, handle: usize, binds: &[Option<&str>]) -> Result<u64, DbError>;
    /// As `execute`, and returns the rows' values (for the result cache).
    async fn fetch_rows(
        &mut self,
        _handle: usize,
        _binds: &[Option<&str>],
    ) -> Result<Rows, DbError> {
        Err(DbError {
            code: "usage".into(),
            message: "this engine has no result cache".into(),
        })
    }
    /// Whether the latest call failed because a prepared statement's plan
    /// went stale, which preparing it again cures (PostgreSQL after a
    /// column's type changed; MariaDB and SQLite prepare again by
    /// themselves).
    fn stale_plan(&self) -> bool {
        false
    }
    /// Prepares statement `handle` again, under the same handle.
    async fn reprepare(&mut self, _handle: usize) -> Result<(), DbError> {
        Ok(())
    }
    /// Runs a statement without binds or rows (BEGIN, COMMIT, SET).
    async fn batch(&mut self, sql: &str) -> Result<(), DbError>;
    /// Runs a statement without binds, unprepared, and returns the number
    /// of rows it returned (a cursor's FETCH, whose result shape is only
    /// known once the cursor exists).
    async fn query_text(&mut self, _sql: &str) -> Result<u64, DbError> {
        Err(DbError {
            code: "usage".into(),
            message: "this engine has no cursors".into(),
        })
    }
    /// Sets a session parameter.
    async fn set(&mut self, name: &str, value: &str) -> Result<(), DbError>;
    /// The connection is gone: nothing more can be sent on it.
    fn is_closed(&self) -> bool;
    /// The server's id for this session (PostgreSQL backend pid, MariaDB
    /// connection id).
    fn backend_id(&self) -> Option<i64>;
    /// Whether `DECLARE ... CURSOR` / `FETCH n` work, for --fetch-size.
    fn cursors(&self) -> bool {
        false
    }
    /// Ends the connection politely.
    async fn close(self);
}

/// Rewrites `$n` placeholders as `?`, and returns for each `?` the index
/// of its value: MariaDB binds by position only, so a value used twice
/// is sent twice.
pub fn question_marks(sql: &str) -> (String, Vec<usize>) {
    let mut order = Vec::new();
    let text = crate::sql::map_typed_placeholders(sql, |n, out| {
        order.push(n - 1);
        out.push('?');
    });
    (text, order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_by_scheme() {
        assert_eq!(
            Engine::of_url("postgres://x@h/db").unwrap(),
            Engine::Postgres
        );
        assert_eq!(Engine::of_url("postgresql://h").unwrap(), Engine::Postgres);
        assert_eq!(
            Engine::of_url("mariadb://root@h:3306/t").unwrap(),
            Engine::Mysql
        );
        assert_eq!(Engine::of_url("sqlite::memory:").unwrap(), Engine::Sqlite);
        let e = Engine::of_url("oracle://scott:tiger@h/orcl")
            .unwrap_err()
            .to_string();
        assert!(e.contains("scott:***@h/orcl"), "{e}");
        assert!(!e.contains("tiger"), "{e}");
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("mysql://u:p@ss@h:1/d"), "mysql://u:***@h:1/d");
        assert_eq!(redact("postgres://u@h/d"), "postgres://u@h/d");
        assert_eq!(redact("sqlite:/tmp/x.db"), "sqlite:/tmp/x.db");
        assert_eq!(
            redact("postgres://u@h/d?sslmode=disable&password=s3cret&x=1"),
            "postgres://u@h/d?sslmode=disable&password=***&x=1"
        );
    }

    #[test]
    fn passwords_of_strings_that_are_not_urls_are_redacted() {
        assert_eq!(
            redact("host=127.0.0.1 password=secret dbname=x"),
            "host=127.0.0.1 password=*** dbname=x"
        );
        assert_eq!(
            redact("host=h PASSWORD = 'se cr\\'et' user=u"),
            "host=h PASSWORD =*** user=u"
        );
        assert_eq!(
            redact("Server=h;Uid=u;Pwd=s3;Database=d"),
            "Server=h;Uid=u;Pwd=***;Database=d"
        );
        assert_eq!(redact("scott/tiger@orcl"), "scott/***@orcl");
        assert_eq!(redact("u:p@ss@h/db"), "u:***@h/db");
        assert_eq!(redact("sqlite:/tmp/a@b.db"), "sqlite:/tmp/a@b.db");
        assert_eq!(redact("host=/tmp dbname=x"), "host=/tmp dbname=x");
        let e = Engine::of_url("host=127.0.0.1 password=secret dbname=x")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("secret") && e.contains("password=***"), "{e}");
    }

    #[test]
    fn question_marks_repeat_values_used_twice() {
        let (sql, order) = question_marks("select $2, '$1', $1 + $2");
        assert_eq!(sql, "select ?, '$1', ? + ?");
        assert_eq!(order, vec![1, 0, 1]);
        let (sql, order) = question_marks("select $1::signed, $2");
        assert_eq!(sql, "select CAST(? AS signed), ?");
        assert_eq!(order, vec![0, 1]);
    }
}

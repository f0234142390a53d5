//! The administrative connection: set-up scripts, probes and catalog
//! questions, outside any measured session. Synchronous (its callers are
//! the study's executor and the binary, which wait for each answer) and
//! text-valued (every engine can give a value as text; numbers are read
//! by each engine's own rule).
//!
//! One client per engine, the same the measured sessions use: PostgreSQL
//! through the session wire code (`conn::pgwire`), MariaDB through
//! mysql_async, SQLite through rusqlite.

use std::sync::Arc;

use crate::conn::pgwire::{columns, Wire};
use crate::conn::{innermost, DbError};
use crate::Engine;

/// One row of an administrative answer: its values as text and, where
/// the engine gives one, as a number.
#[derive(Debug, Clone, PartialEq)]
pub struct TextRow {
    columns: Arc<[String]>,
    values: Vec<Option<String>>,
    numbers: Vec<Option<f64>>,
}

impl TextRow {
    /// A row of the given columns and values (numbers read from the text);
    /// for engines written outside this crate, such as the fake engine of
    /// tests.
    pub fn new(columns: Arc<[String]>, values: Vec<Option<String>>) -> TextRow {
        let numbers = values
            .iter()
            .map(|v| v.as_deref().and_then(|s| s.parse().ok()))
            .collect();
        TextRow {
            columns,
            values,
            numbers,
        }
    }

    /// The column names.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The value of column `i` as text; `None` for NULL (or no such column).
    pub fn get(&self, i: usize) -> Option<&str> {
        self.values.get(i)?.as_deref()
    }

    /// The value of column `i` as a number, when the engine says it is one.
    pub fn number(&self, i: usize) -> Option<f64> {
        *self.numbers.get(i)?
    }

    /// The (column name, number) pairs of the row's numeric values: what a
    /// script or probe row gives as measurements.
    pub fn numeric(&self) -> impl Iterator<Item = (&str, f64)> {
        self.columns
            .iter()
            .zip(&self.numbers)
            .filter_map(|(c, n)| Some((c.as_str(), (*n)?)))
    }
}

/// What an administrative statement ran into: the engine's code, when it
/// gave one, and its message (never the URL or a password).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct AdminError {
    /// SQLSTATE on PostgreSQL, the error number on MariaDB, the result
    /// code on SQLite; `None` for a connection or client failure.
    pub code: Option<String>,
    pub message: String,
}

impl AdminError {
    pub(crate) fn client(what: impl std::fmt::Display) -> AdminError {
        AdminError {
            code: None,
            message: what.to_string(),
        }
    }

    /// The message with its code in parentheses, as reports say it.
    pub fn detail(&self) -> String {
        match &self.code {
            Some(c) => format!("{} ({c})", self.message),
            None => self.message.clone(),
        }
    }
}

/// The administrative connection to one database.
pub trait Admin: Send {
    /// The engine this connection talks to.
    fn engine(&self) -> Engine;
    /// Runs `sql` unprepared and returns the rows of all its results. On
    /// MariaDB `sql` may be a script of several statements sent whole (the
    /// server parses it, stored programs included); on the others one
    /// statement.
    fn query(&mut self, sql: &str) -> Result<Vec<TextRow>, AdminError>;
    /// Runs `sql` for its effect.
    fn execute(&mut self, sql: &str) -> Result<(), AdminError> {
        self.query(sql).map(|_| ())
    }
    /// The connection is gone: a new one is needed.
    fn is_closed(&self) -> bool;
    /// The server's id of this session (PostgreSQL backend pid, MariaDB
    /// connection id); `None` for an in-process engine.
    fn session_id(&self) -> Option<i64>;
}

/// Opens the administrative connection `url` names.
pub fn connect(url: &str) -> Result<Box<dyn Admin>, AdminError> {
    connect_with(url, &[])
}

/// Opens the administrative connection `url` names, with the session
/// settings of a measured session: on PostgreSQL in force from the
/// backend's start (the startup packet, as sessions started with them
/// get them), on MariaDB by `SET SESSION`; SQLite has none.
pub fn connect_with(
    url: &str,
    settings: &[(String, String)],
) -> Result<Box<dyn Admin>, AdminError> {
    let engine = Engine::of_url(url).map_err(AdminError::client)?;
    Ok(match engine {
        Engine::Postgres => Box::new(PgAdmin::connect(url, settings)?),
        Engine::Mysql => {
            let mut a = MariaAdmin::connect(url)?;
            for (k, v) in settings {
                a.execute(&format!("SET SESSION {k} = {v}"))?;
            }
            Box::new(a)
        }
        Engine::Sqlite if !settings.is_empty() => {
            return Err(AdminError::client(
                "an administrative SQLite connection takes no settings (its sessions set PRAGMAs)",
            ))
        }
        Engine::Sqlite => Box::new(SqliteAdmin::connect(url)?),
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, AdminError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AdminError::client(format!("cannot start a runtime: {e}")))
}

/// A PostgreSQL error as the admin reports it: the wire code words its
/// message "text (SQLSTATE code)" for session traces; here the code is
/// a field of its own.
fn pg_error(e: DbError) -> AdminError {
    let suffix = format!(" (SQLSTATE {})", e.code);
    match e.message.strip_suffix(&suffix) {
        Some(m) if e.code != "connection" => AdminError {
            message: m.to_string(),
            code: Some(e.code),
        },
        _ => AdminError::client(e.message),
    }
}

struct PgAdmin {
    rt: tokio::runtime::Runtime,
    wire: Option<Wire>,
    pid: Option<i64>,
}

impl PgAdmin {
    fn connect(url: &str, settings: &[(String, String)]) -> Result<PgAdmin, AdminError> {
        let rt = runtime()?;
        let wire = rt
            .block_on(Wire::connect_with(url, settings))
            .map_err(pg_error)?;
        Ok(PgAdmin {
            pid: wire.pid.map(i64::from),
            wire: Some(wire),
            rt,
        })
    }
}

impl Admin for PgAdmin {
    fn engine(&self) -> Engine {
        Engine::Postgres
    }

    fn query(&mut self, sql: &str) -> Result<Vec<TextRow>, AdminError> {
        let wire = self
            .wire
            .as_mut()
            .ok_or_else(|| AdminError::client("the connection is closed"))?;
        // Both callbacks see the current result's names.
        let names: std::cell::RefCell<Arc<[String]>> = Default::default();
        let mut rows = Vec::new();
        self.rt
            .block_on(wire.simple_named(
                sql,
                |n| *names.borrow_mut() = Arc::from(n),
                |b| {
                    let values = columns(b)
                        .map(|v| v.map(|v| String::from_utf8_lossy(v).into_owned()))
                        .collect();
                    rows.push(TextRow::new(names.borrow().clone(), values));
                },
            ))
            .map_err(pg_error)?;
        Ok(rows)
    }

    fn is_closed(&self) -> bool {
        self.wire.as_ref().is_none_or(Wire::is_closed)
    }

    fn session_id(&self) -> Option<i64> {
        self.pid
    }
}

impl Drop for PgAdmin {
    fn drop(&mut self) {
        if let Some(w) = self.wire.take() {
            self.rt.block_on(w.close());
        }
    }
}

struct MariaAdmin {
    rt: tokio::runtime::Runtime,
    conn: Option<mysql_async::Conn>,
}

/// A MariaDB value as text and as a number, when it is one.
fn maria_value(v: &mysql_async::Value) -> (Option<String>, Option<f64>) {
    use mysql_async::Value;
    match v {
        Value::NULL => (None, None),
        Value::Int(i) => (Some(i.to_string()), Some(*i as f64)),
        Value::UInt(u) => (Some(u.to_string()), Some(*u as f64)),
        Value::Float(f) => (Some(f.to_string()), Some(f64::from(*f))),
        Value::Double(d) => (Some(d.to_string()), Some(*d)),
        Value::Bytes(b) => {
            let s = String::from_utf8_lossy(b).into_owned();
            let n = s.trim().parse().ok();
            (Some(s), n)
        }
        other => (Some(other.as_sql(true)), None),
    }
}

pub(crate) fn maria_error(e: mysql_async::Error) -> AdminError {
    match &e {
        mysql_async::Error::Server(s) => AdminError {
            code: Some(s.code.to_string()),
            message: s.message.clone(),
        },
        other => AdminError::client(innermost(other)),
    }
}

/// MariaDB's rows as text rows, numbers where the protocol says so.
pub(crate) fn maria_rows(rows: Vec<mysql_async::Row>) -> impl Iterator<Item = TextRow> {
    rows.into_iter().map(|r| {
        let names: Arc<[String]> = r
            .columns_ref()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect();
        let (values, numbers) = (0..names.len())
            .map(|i| r.as_ref(i).map_or((None, None), maria_value))
            .unzip();
        TextRow {
            columns: names,
            values,
            numbers,
        }
    })
}

impl MariaAdmin {
    fn connect(url: &str) -> Result<MariaAdmin, AdminError> {
        let rt = runtime()?;
        let opts = crate::conninfo::mariadb(url).map_err(AdminError::client)?;
        let conn = rt
            .block_on(mysql_async::Conn::new(opts))
            .map_err(|e| AdminError::client(format!("connect: {e}")))?;
        Ok(MariaAdmin {
            rt,
            conn: Some(conn),
        })
    }
}

impl Admin for MariaAdmin {
    fn engine(&self) -> Engine {
        Engine::Mysql
    }

    fn query(&mut self, sql: &str) -> Result<Vec<TextRow>, AdminError> {
        use mysql_async::prelude::Queryable;
        let c = self
            .conn
            .as_mut()
            .ok_or_else(|| AdminError::client("the connection is closed"))?;
        self.rt.block_on(async {
            let mut out = Vec::new();
            let mut res = c.query_iter(sql).await.map_err(maria_error)?;
            while !res.is_empty() {
                let rows: Vec<mysql_async::Row> = res.collect().await.map_err(maria_error)?;
                out.extend(maria_rows(rows));
            }
            Ok(out)
        })
    }

    fn is_closed(&self) -> bool {
        self.conn.is_none()
    }

    fn session_id(&self) -> Option<i64> {
        self.conn.as_ref().map(|c| i64::from(c.id()))
    }
}

impl Drop for MariaAdmin {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            let _ = self.rt.block_on(c.disconnect());
        }
    }
}

struct SqliteAdmin {
    conn: rusqlite::Connection,
}

impl SqliteAdmin {
    fn connect(url: &str) -> Result<SqliteAdmin, AdminError> {
        let path = url.trim_start_matches("sqlite:");
        let conn = rusqlite::Connection::open(path).map_err(AdminError::client)?;
        Ok(SqliteAdmin { conn })
    }
}

fn sqlite_error(e: rusqlite::Error) -> AdminError {
    AdminError::client(e)
}

impl Admin for SqliteAdmin {
    fn engine(&self) -> Engine {
        Engine::Sqlite
    }

    fn query(&mut self, sql: &str) -> Result<Vec<TextRow>, AdminError> {
        use rusqlite::types::ValueRef;
        let mut p = self.conn.prepare(sql).map_err(sqlite_error)?;
        let names: Arc<[String]> = p.column_names().iter().map(|s| s.to_string()).collect();
        let mut rows = p.query([]).map_err(sqlite_error)?;
        let mut out = Vec::new();
        // A step that fails ends the rows, as a script's reading always did.
        while let Ok(Some(r)) = rows.next() {
            let (values, numbers) = (0..names.len())
                .map(|i| match r.get_ref(i) {
                    Ok(ValueRef::Integer(n)) => (Some(n.to_string()), Some(n as f64)),
                    Ok(ValueRef::Real(f)) => (Some(f.to_string()), Some(f)),
                    Ok(ValueRef::Text(t)) => (Some(String::from_utf8_lossy(t).into_owned()), None),
                    Ok(ValueRef::Blob(b)) => (Some(String::from_utf8_lossy(b).into_owned()), None),
                    Ok(ValueRef::Null) | Err(_) => (None, None),
                })
                .unzip();
            out.push(TextRow {
                columns: names.clone(),
                values,
                numbers,
            });
        }
        Ok(out)
    }

    fn is_closed(&self) -> bool {
        false
    }

    fn session_id(&self) -> Option<i64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_rows_by_name_with_numbers_only_where_the_engine_has_them() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite:{}", dir.path().join("a.db").display());
        let mut a = connect(&url).unwrap();
        assert_eq!(a.engine(), Engine::Sqlite);
        a.execute("create table t (n int, x real, s text)").unwrap();
        a.execute("insert into t values (3, 0.5, '12')").unwrap();
        let rows = a.query("select n, x, s, null as z from t").unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].columns(), ["n", "x", "s", "z"]);
        assert_eq!(rows[0].get(2), Some("12"));
        assert_eq!(rows[0].get(3), None);
        // A text column is not a measurement, though it reads as one.
        let nums: Vec<(&str, f64)> = rows[0].numeric().collect();
        assert_eq!(nums, vec![("n", 3.0), ("x", 0.5)]);
        let e = a.query("select * from missing").unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
    }

    #[test]
    fn postgres_errors_keep_their_code_apart() {
        let e = pg_error(DbError {
            code: "42P01".into(),
            message: "relation \"x\" does not exist (SQLSTATE 42P01)".into(),
        });
        assert_eq!(e.code.as_deref(), Some("42P01"));
        assert_eq!(e.detail(), "relation \"x\" does not exist (42P01)");
        let e = pg_error(DbError {
            code: "connection".into(),
            message: "Connection refused".into(),
        });
        assert_eq!(e.code, None);
        assert_eq!(e.detail(), "Connection refused");
    }

    /// Against a real server: column names, NULLs, numbers read from the
    /// text, errors with their SQLSTATE, the session id.
    #[test]
    fn postgres_admin_against_a_real_server() {
        let dir = tempfile::tempdir().unwrap();
        let state = tracelab_db::start_postgres(&tracelab_db::PgOptions {
            dir: Some(dir.path().join("pg")),
            settings: vec![],
        })
        .unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut a = connect(&state.url).unwrap();
            let rows = a
                .query("select 1 as one, null::text as nothing, 'x' as word")
                .unwrap();
            assert_eq!(rows[0].columns(), ["one", "nothing", "word"]);
            assert_eq!(rows[0].number(0), Some(1.0));
            assert_eq!(rows[0].get(1), None);
            assert_eq!(rows[0].number(2), None);
            let pid = a.query("select pg_backend_pid()").unwrap()[0]
                .number(0)
                .unwrap();
            assert_eq!(a.session_id(), Some(pid as i64));
            let e = a.query("select * from missing").unwrap_err();
            assert_eq!(e.code.as_deref(), Some("42P01"), "{e:?}");
            // The connection is still usable after an error.
            assert_eq!(a.query("select 2").unwrap()[0].number(0), Some(2.0));
            assert!(!a.is_closed());
        }));
        let _ = tracelab_db::stop(&state.dir);
        if let Err(p) = r {
            std::panic::resume_unwind(p);
        }
    }
}

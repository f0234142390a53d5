//! SQLite in process, through rusqlite with the bundled library: every
//! call is a step of the library on the session's own thread, not a round
//! trip, so the trace shows what SQLite itself costs.

use rusqlite::{Connection, OpenFlags};

use super::{Conn, DbError};
use crate::sql::map_typed_placeholders;

pub struct Sqlite {
    conn: Connection,
    /// Statement texts with `?n` placeholders; rusqlite's statement cache
    /// keeps them prepared (a `Statement` borrows its connection, so it
    /// cannot live beside it in this struct).
    texts: Vec<String>,
}

/// Opens `sqlite:PATH`, `sqlite://PATH` or `sqlite::memory:` (one
/// in-memory database shared by the run's sessions).
pub fn connect(url: &str) -> Result<Sqlite, DbError> {
    let rest = url
        .strip_prefix("sqlite:")
        .or_else(|| url.strip_prefix("SQLITE:"))
        .unwrap_or(url);
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let target = if rest == ":memory:" {
        format!(
            "file:tracelab-run-{}?mode=memory&cache=shared",
            std::process::id()
        )
    } else {
        rest.to_string()
    };
    let conn = Connection::open_with_flags(&target, flags).map_err(|e| error(&e))?;
    // Concurrent writers wait for the lock rather than fail at once, as a
    // server's sessions would; `-s busy_timeout=0` restores SQLite's own
    // default.
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(|e| error(&e))?;
    Ok(Sqlite {
        conn,
        texts: Vec::new(),
    })
}

impl Conn for Sqlite {
    async fn prepare(&mut self, sql: &str) -> Result<usize, DbError> {
        let text = map_typed_placeholders(sql, |n, out| {
            out.push('?');
            out.push_str(&n.to_string());
        });
        self.conn
            .set_prepared_statement_cache_capacity(self.texts.len() + 16);
        self.conn.prepare_cached(&text).map_err(|e| error(&e))?;
        self.texts.push(text);
        Ok(self.texts.len() - 1)
    }

    async fn execute(&mut self, handle: usize, binds: &[Option<&str>]) -> Result<u64, DbError> {
        let mut st = self
            .conn
            .prepare_cached(&self.texts[handle])
            .map_err(|e| error(&e))?;
        for (i, v) in binds.iter().enumerate().take(st.parameter_count()) {
            st.raw_bind_parameter(i + 1, v).map_err(|e| error(&e))?;
        }
        let mut rows = st.raw_query();
        let mut n = 0u64;
        while rows.next().map_err(|e| error(&e))?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    async fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.conn.execute_batch(sql).map_err(|e| error(&e))
    }

    async fn set(&mut self, name: &str, value: &str) -> Result<(), DbError> {
        if name.eq_ignore_ascii_case("busy_timeout") {
            let ms: u64 = value.parse().map_err(|_| DbError {
                code: "usage".into(),
                message: format!("busy_timeout={value}: expected milliseconds"),
            })?;
            return self
                .conn
                .busy_timeout(std::time::Duration::from_millis(ms))
                .map_err(|e| error(&e));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        {
            return Err(DbError {
                code: "usage".into(),
                message: format!("`{name}` is not a PRAGMA name"),
            });
        }
        // A PRAGMA may answer with a row (journal_mode does): read it.
        let sql = format!("PRAGMA {name} = {value}");
        let mut st = self.conn.prepare(&sql).map_err(|e| error(&e))?;
        let mut rows = st.raw_query();
        while rows.next().map_err(|e| error(&e))?.is_some() {}
        Ok(())
    }

    fn is_closed(&self) -> bool {
        false
    }

    fn backend_id(&self) -> Option<i64> {
        None
    }

    async fn close(self) {
        let _ = self.conn.close();
    }
}

fn error(e: &rusqlite::Error) -> DbError {
    match e {
        rusqlite::Error::SqliteFailure(f, msg) => DbError {
            code: f.extended_code.to_string(),
            message: format!(
                "{} (SQLite error {})",
                msg.clone().unwrap_or_else(|| f.to_string()),
                f.extended_code
            ),
        },
        other => DbError {
            code: "sqlite".into(),
            message: other.to_string(),
        },
    }
}

//! PostgreSQL: the extended protocol with one prepared statement per
//! workload statement, or the simple protocol with the values inlined
//! (pgbench's `-M prepared` and `-M simple`), over the session's own
//! protocol connection (engine::pgwire).

use super::pgwire::{columns, Wire};
use super::Rows;
use super::{Conn, DbError};
use crate::sql::inline_binds;

pub struct Postgres {
    wire: Wire,
    simple: bool,
    /// Prepared statements (extended protocol): name, parameter count
    /// and text (to prepare it again) ...
    prepared: Vec<(String, usize, String)>,
    /// ... or the text to inline values into (simple protocol).
    texts: Vec<String>,
}

/// Connects; the connection's I/O runs in the session's own task.
pub async fn connect(url: &str, simple: bool) -> Result<Postgres, DbError> {
    connect_with(url, simple, &[]).await
}

/// As [`connect`], with `settings` in force from the backend's start
/// (sent in the startup packet, see [`Wire::connect_with`]).
pub async fn connect_with(
    url: &str,
    simple: bool,
    settings: &[(String, String)],
) -> Result<Postgres, DbError> {
    Ok(Postgres {
        wire: Wire::connect_with(url, settings).await?,
        simple,
        prepared: Vec::new(),
        texts: Vec::new(),
    })
}

/// Checks the values given against a prepared statement's placeholders
/// (the server would refuse the Bind less clearly).
fn check_binds(params: usize, binds: &[Option<&str>]) -> Result<(), DbError> {
    if params != binds.len() {
        return Err(DbError {
            code: "binds".into(),
            message: format!(
                "the statement has {params} placeholder(s) and {} bind value(s) were given",
                binds.len()
            ),
        });
    }
    Ok(())
}

impl Conn for Postgres {
    async fn prepare(&mut self, sql: &str) -> Result<usize, DbError> {
        if self.simple {
            self.texts.push(sql.to_string());
            return Ok(self.texts.len() - 1);
        }
        let name = format!("tracelab_{}", self.prepared.len() + 1);
        let params = self.wire.prepare(&name, sql).await?;
        self.prepared.push((name, params, sql.to_string()));
        Ok(self.prepared.len() - 1)
    }

    async fn execute(&mut self, handle: usize, binds: &[Option<&str>]) -> Result<u64, DbError> {
        if self.simple {
            let text = inline_binds(&self.texts[handle], binds);
            return self.query_text(&text).await;
        }
        // Rows are counted as they stream in, not collected: the driver's
        // own cost per call stays small beside pgbench's.
        let (name, params, _) = &self.prepared[handle];
        check_binds(*params, binds)?;
        let mut n = 0u64;
        self.wire.execute(name, binds, |_| n += 1).await?;
        Ok(n)
    }

    fn stale_plan(&self) -> bool {
        self.wire.stale
    }

    async fn reprepare(&mut self, handle: usize) -> Result<(), DbError> {
        let Some((name, _, sql)) = self.prepared.get(handle) else {
            return Ok(());
        };
        let params = self.wire.reprepare(name, sql).await?;
        self.prepared[handle].1 = params;
        Ok(())
    }

    async fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.wire.simple(sql, |_| {}).await
    }

    async fn fetch_rows(&mut self, handle: usize, binds: &[Option<&str>]) -> Result<Rows, DbError> {
        let mut rows: Rows = Vec::new();
        let keep = |b: &[u8]| -> Vec<Option<Vec<u8>>> {
            columns(b).map(|v| v.map(<[u8]>::to_vec)).collect()
        };
        if self.simple {
            let text = inline_binds(&self.texts[handle], binds);
            self.wire.simple(&text, |b| rows.push(keep(b))).await?;
        } else {
            let (name, params, _) = &self.prepared[handle];
            check_binds(*params, binds)?;
            self.wire
                .execute(name, binds, |b| rows.push(keep(b)))
                .await?;
        }
        Ok(rows)
    }

    async fn query_text(&mut self, sql: &str) -> Result<u64, DbError> {
        let mut n = 0u64;
        self.wire.simple(sql, |_| n += 1).await?;
        Ok(n)
    }

    async fn set(&mut self, name: &str, value: &str) -> Result<(), DbError> {
        // set_config takes the name and value as values: nothing to quote.
        self.wire
            .query_once(
                "select set_config($1, $2, false)",
                &[Some(name), Some(value)],
                |_| {},
            )
            .await
    }

    fn is_closed(&self) -> bool {
        self.wire.is_closed()
    }

    fn backend_id(&self) -> Option<i64> {
        self.wire.pid.map(i64::from)
    }

    fn cursors(&self) -> bool {
        true
    }

    async fn close(self) {
        self.wire.close().await
    }
}

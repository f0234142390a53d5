//! The watching connection: catalog questions and change notifications,
//! for a process-wide result cache that must hear of every change to what
//! it holds. Asynchronous (it lives on the cache's own thread, beside a
//! heartbeat and pauses), text-valued like [`crate::admin`].
//!
//! PostgreSQL goes through tokio-postgres here, not the session wire code
//! (`conn::pgwire`): a listener must read notifications as they arrive,
//! between its own questions, and tokio-postgres's connection task does
//! exactly that, whereas the wire code reads only while a call is waiting
//! for its reply. The hand-off it costs per call does not matter on a
//! connection that asks a few questions per heartbeat. MariaDB goes
//! through mysql_async, as its sessions do.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::admin::{maria_error, maria_rows, AdminError, TextRow};
use crate::Engine;

/// A watching connection to PostgreSQL or MariaDB.
pub struct Watch {
    inner: Inner,
}

enum Inner {
    Postgres {
        client: tokio_postgres::Client,
        lost: Arc<AtomicBool>,
        _driver: AbortOnDrop,
    },
    Mysql(Option<mysql_async::Conn>),
}

/// The task reading a PostgreSQL connection's messages ends with the
/// connection, however the caller lets go of it.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn pg_error(e: &tokio_postgres::Error) -> AdminError {
    match e.as_db_error() {
        Some(db) => AdminError {
            code: Some(db.code().code().to_string()),
            message: db.message().to_string(),
        },
        None => AdminError::client(e),
    }
}

impl Watch {
    /// Connects to `url` as `application` (PostgreSQL's
    /// `application_name`, so that the connection can be told apart in
    /// `pg_stat_activity`). On PostgreSQL, `on_notify` is called with the
    /// payload of each notification as it arrives, before any later reply
    /// is returned to the caller; MariaDB has no notifications.
    ///
    /// Must run inside a [`tokio::task::LocalSet`]: PostgreSQL's messages
    /// are read by a local task, so that `on_notify` need not be `Send`.
    /// SQLite has no other process to hear from: it is refused.
    pub async fn connect(
        url: &str,
        application: &str,
        mut on_notify: impl FnMut(&str) + 'static,
    ) -> Result<Watch, AdminError> {
        match Engine::of_url(url).map_err(AdminError::client)? {
            Engine::Postgres => {
                let mut config = crate::conninfo::postgres(url).map_err(AdminError::client)?;
                config.application_name(application);
                let (client, mut connection) = config
                    .connect(tokio_postgres::NoTls)
                    .await
                    .map_err(|e| pg_error(&e))?;
                let lost = Arc::new(AtomicBool::new(false));
                let driver = {
                    let lost = lost.clone();
                    tokio::task::spawn_local(async move {
                        loop {
                            let m = std::future::poll_fn(|cx| connection.poll_message(cx)).await;
                            match m {
                                Some(Ok(tokio_postgres::AsyncMessage::Notification(n))) => {
                                    on_notify(n.payload())
                                }
                                Some(Ok(_)) => {}
                                Some(Err(_)) | None => {
                                    lost.store(true, Ordering::Release);
                                    return;
                                }
                            }
                        }
                    })
                };
                Ok(Watch {
                    inner: Inner::Postgres {
                        client,
                        lost,
                        _driver: AbortOnDrop(driver),
                    },
                })
            }
            Engine::Mysql => {
                let opts = crate::conninfo::mariadb(url).map_err(AdminError::client)?;
                let conn = mysql_async::Conn::new(opts)
                    .await
                    .map_err(|e| AdminError::client(crate::conn::innermost(&e)))?;
                Ok(Watch {
                    inner: Inner::Mysql(Some(conn)),
                })
            }
            Engine::Sqlite => Err(AdminError::client(
                "SQLite has no other process to watch for changes",
            )),
        }
    }

    /// The engine this connection talks to.
    pub fn engine(&self) -> Engine {
        match self.inner {
            Inner::Postgres { .. } => Engine::Postgres,
            Inner::Mysql(_) => Engine::Mysql,
        }
    }

    /// Runs `sql` unprepared (PostgreSQL's simple protocol, MariaDB's text
    /// protocol) and returns the rows of all its results.
    pub async fn query(&mut self, sql: &str) -> Result<Vec<TextRow>, AdminError> {
        match &mut self.inner {
            Inner::Postgres { client, .. } => {
                let mut out = Vec::new();
                let mut names: Arc<[String]> = Arc::from(Vec::new());
                for m in client.simple_query(sql).await.map_err(|e| pg_error(&e))? {
                    match m {
                        tokio_postgres::SimpleQueryMessage::RowDescription(cols) => {
                            names = cols.iter().map(|c| c.name().to_string()).collect();
                        }
                        tokio_postgres::SimpleQueryMessage::Row(r) => {
                            if names.len() != r.len() {
                                names = r.columns().iter().map(|c| c.name().to_string()).collect();
                            }
                            let values = (0..r.len()).map(|i| r.get(i).map(str::to_string));
                            out.push(TextRow::new(names.clone(), values.collect()));
                        }
                        _ => {}
                    }
                }
                Ok(out)
            }
            Inner::Mysql(c) => {
                use mysql_async::prelude::Queryable;
                let c = c
                    .as_mut()
                    .ok_or_else(|| AdminError::client("the connection is closed"))?;
                let mut out = Vec::new();
                let mut res = c.query_iter(sql).await.map_err(maria_error)?;
                while !res.is_empty() {
                    let rows: Vec<mysql_async::Row> = res.collect().await.map_err(maria_error)?;
                    out.extend(maria_rows(rows));
                }
                Ok(out)
            }
        }
    }

    /// Runs `sql` for its effect.
    pub async fn execute(&mut self, sql: &str) -> Result<(), AdminError> {
        self.query(sql).await.map(|_| ())
    }

    /// The types the server gives the `$n` parameters of `sql` (schema,
    /// name), without running it: what a parameter-free copy of the
    /// query casts its NULLs to. MariaDB's parameters have no types: it
    /// answers with none.
    pub async fn parameter_types(
        &mut self,
        sql: &str,
    ) -> Result<Vec<(String, String)>, AdminError> {
        match &mut self.inner {
            Inner::Postgres { client, .. } => {
                let st = client.prepare(sql).await.map_err(|e| pg_error(&e))?;
                Ok(st
                    .params()
                    .iter()
                    .map(|t| (t.schema().to_string(), t.name().to_string()))
                    .collect())
            }
            Inner::Mysql(_) => Ok(Vec::new()),
        }
    }

    /// Sets a session parameter (PostgreSQL's `set_config`, MariaDB's
    /// `SET SESSION` of a system variable, whose name must be a plain
    /// word).
    pub async fn set(&mut self, name: &str, value: &str) -> Result<(), AdminError> {
        let q = crate::sql::quote_literal;
        match self.inner {
            Inner::Postgres { .. } => {
                let sql = format!("select set_config({}, {}, false)", q(name), q(value));
                self.execute(&sql).await
            }
            Inner::Mysql(_) => {
                if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                    return Err(AdminError::client(format!(
                        "`{name}` is not a system variable name"
                    )));
                }
                self.execute(&format!("SET SESSION {name} = {value}")).await
            }
        }
    }

    /// Whether the connection was lost while nobody was asking (PostgreSQL:
    /// its message reader ended).
    pub fn is_lost(&self) -> bool {
        match &self.inner {
            Inner::Postgres { lost, client, .. } => {
                lost.load(Ordering::Acquire) || client.is_closed()
            }
            Inner::Mysql(c) => c.is_none(),
        }
    }

    /// Says goodbye to the server.
    pub async fn close(mut self) {
        if let Inner::Mysql(c) = &mut self.inner {
            if let Some(c) = c.take() {
                let _ = c.disconnect().await;
            }
        }
    }
}

//! PostgreSQL through tokio-postgres: the extended protocol with one
//! prepared statement per workload statement, or the simple protocol with
//! the values inlined (pgbench's `-M prepared` and `-M simple`).

use std::error::Error as _;

use futures_util::StreamExt;

use tokio_postgres::types::{Format, IsNull, ToSql, Type};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage, Statement};

use super::{Conn, DbError};
use crate::cache::Rows;
use crate::workload::inline_binds;

/// A bind value sent in text format, whatever the parameter's type: the
/// server parses it as it would a literal, as psql and sqlrun do, so a
/// bind file needs no type annotations.
#[derive(Debug)]
struct Text<'a>(Option<&'a str>);

impl ToSql for Text<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            Some(v) => {
                out.extend_from_slice(v.as_bytes());
                Ok(IsNull::No)
            }
            None => Ok(IsNull::Yes),
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        Format::Text
    }

    tokio_postgres::types::to_sql_checked!();
}

/// A value of any type, as the server sent it (binary format): what the
/// result cache keeps and hands back.
struct Raw(Vec<u8>);

impl<'a> tokio_postgres::types::FromSql<'a> for Raw {
    fn from_sql(
        _ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw.to_vec()))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

pub(crate) struct Postgres {
    client: Client,
    simple: bool,
    /// Prepared statements (extended protocol) ...
    prepared: Vec<Statement>,
    /// ... or the text to inline values into (simple protocol).
    texts: Vec<String>,
    pid: Option<i64>,
}

/// Connects; the connection's I/O runs as a task of the session's thread.
pub(crate) async fn connect(url: &str, simple: bool) -> Result<Postgres, DbError> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| error(&e))?;
    tokio::task::spawn_local(connection);
    let pid = client
        .query_one("select pg_backend_pid()", &[])
        .await
        .ok()
        .map(|r| r.get::<_, i32>(0) as i64);
    Ok(Postgres {
        client,
        simple,
        prepared: Vec::new(),
        texts: Vec::new(),
        pid,
    })
}

impl Conn for Postgres {
    async fn prepare(&mut self, sql: &str) -> Result<usize, DbError> {
        if self.simple {
            self.texts.push(sql.to_string());
            return Ok(self.texts.len() - 1);
        }
        let st = self.client.prepare(sql).await.map_err(|e| error(&e))?;
        self.prepared.push(st);
        Ok(self.prepared.len() - 1)
    }

    async fn execute(&mut self, handle: usize, binds: &[Option<&str>]) -> Result<u64, DbError> {
        if self.simple {
            let text = inline_binds(&self.texts[handle], binds);
            return self.query_text(&text).await;
        }
        // Rows are counted as they stream in, not collected: the driver's
        // own cost per call stays small beside pgbench's.
        let rows = self
            .client
            .query_raw(&self.prepared[handle], binds.iter().map(|v| Text(*v)))
            .await
            .map_err(|e| error(&e))?;
        let mut rows = std::pin::pin!(rows);
        let mut n = 0u64;
        while let Some(row) = rows.next().await {
            row.map_err(|e| error(&e))?;
            n += 1;
        }
        Ok(n)
    }

    async fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.client.batch_execute(sql).await.map_err(|e| error(&e))
    }

    async fn fetch_rows(&mut self, handle: usize, binds: &[Option<&str>]) -> Result<Rows, DbError> {
        let to_rows = |rows: Vec<tokio_postgres::Row>| -> Result<Rows, DbError> {
            rows.iter()
                .map(|r| {
                    (0..r.len())
                        .map(|i| {
                            r.try_get::<_, Option<Raw>>(i)
                                .map(|v| v.map(|v| v.0))
                                .map_err(|e| error(&e))
                        })
                        .collect()
                })
                .collect()
        };
        if self.simple {
            let text = inline_binds(&self.texts[handle], binds);
            let msgs = self
                .client
                .simple_query(&text)
                .await
                .map_err(|e| error(&e))?;
            return Ok(msgs
                .iter()
                .filter_map(|m| match m {
                    SimpleQueryMessage::Row(r) => Some(
                        (0..r.len())
                            .map(|i| r.get(i).map(|v| v.as_bytes().to_vec()))
                            .collect(),
                    ),
                    _ => None,
                })
                .collect());
        }
        let params: Vec<Text<'_>> = binds.iter().map(|v| Text(*v)).collect();
        let params: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
        let rows = self
            .client
            .query(&self.prepared[handle], &params)
            .await
            .map_err(|e| error(&e))?;
        to_rows(rows)
    }

    async fn tables_among(&mut self, names: &[String]) -> Result<Vec<String>, DbError> {
        let rows = self
            .client
            .query(
                "select distinct lower(relname) from pg_class where lower(relname) = any($1) \
                 and relkind in ('r', 'p', 'v', 'm', 'f') and pg_table_is_visible(oid)",
                &[&names],
            )
            .await
            .map_err(|e| error(&e))?;
        Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
    }

    async fn query_text(&mut self, sql: &str) -> Result<u64, DbError> {
        let msgs = self.client.simple_query(sql).await.map_err(|e| error(&e))?;
        Ok(msgs
            .iter()
            .filter(|m| matches!(m, SimpleQueryMessage::Row(_)))
            .count() as u64)
    }

    async fn set(&mut self, name: &str, value: &str) -> Result<(), DbError> {
        // set_config takes the name and value as values: nothing to quote.
        self.client
            .query_one("select set_config($1, $2, false)", &[&name, &value])
            .await
            .map(|_| ())
            .map_err(|e| error(&e))
    }

    fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    fn backend_id(&self) -> Option<i64> {
        self.pid
    }

    fn cursors(&self) -> bool {
        true
    }

    async fn close(self) {}
}

/// A PostgreSQL error as the user wants it: the server's message and
/// SQLSTATE, never the connection string.
fn error(e: &tokio_postgres::Error) -> DbError {
    let code = e.code().map_or("connection", |c| c.code()).to_string();
    let message = match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => match e.source() {
            Some(src) => format!("{e}: {src}"),
            None => e.to_string(),
        },
    };
    DbError { code, message }
}

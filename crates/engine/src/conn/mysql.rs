//! MariaDB (and MySQL) through mysql_async: server-side prepared
//! statements (the binary protocol) by default, or the text protocol with
//! the values inlined.

use mysql_async::prelude::Queryable;
use mysql_async::{Params, Row, Value};

use super::Rows;
use super::{question_marks, Conn, DbError};
use crate::sql::inline_literals;

pub struct Mysql {
    conn: mysql_async::Conn,
    simple: bool,
    /// Per statement: the prepared statement (binary protocol) or the
    /// `$n` text (text protocol), and which value each `?` takes.
    prepared: Vec<(Option<mysql_async::Statement>, String, Vec<usize>)>,
    id: i64,
    closed: bool,
}

pub async fn connect(url: &str, simple: bool) -> Result<Mysql, DbError> {
    // The URL completed from the option files and MYSQL_PWD; the
    // parser's own message may quote the URL: the message hides the
    // password instead.
    let opts = crate::conninfo::mariadb(url).map_err(|message| DbError {
        code: "connection".into(),
        message,
    })?;
    let conn = mysql_async::Conn::new(opts).await.map_err(|e| error(&e))?;
    let id = conn.id() as i64;
    Ok(Mysql {
        conn,
        simple,
        prepared: Vec::new(),
        id,
        closed: false,
    })
}

impl Mysql {
    fn check(&mut self, e: mysql_async::Error) -> DbError {
        if e.is_fatal() {
            self.closed = true;
        }
        error(&e)
    }
}

impl Conn for Mysql {
    async fn prepare(&mut self, sql: &str) -> Result<usize, DbError> {
        let (text, order) = question_marks(sql);
        let st = if self.simple {
            None
        } else {
            match self.conn.prep(text.as_str()).await {
                Ok(st) => Some(st),
                Err(e) => return Err(self.check(e)),
            }
        };
        self.prepared.push((st, sql.to_string(), order));
        Ok(self.prepared.len() - 1)
    }

    async fn execute(&mut self, handle: usize, binds: &[Option<&str>]) -> Result<u64, DbError> {
        let (st, text, order) = &self.prepared[handle];
        let result = match st {
            Some(st) => {
                let params = params(order, binds);
                count_rows(self.conn.exec_iter(st.clone(), params).await).await
            }
            None => {
                let sql = inline_literals(text, binds, true);
                count_rows(self.conn.query_iter(sql).await).await
            }
        };
        result.map_err(|e| self.check(e))
    }

    async fn fetch_rows(&mut self, handle: usize, binds: &[Option<&str>]) -> Result<Rows, DbError> {
        let (st, text, order) = &self.prepared[handle];
        let result: mysql_async::Result<Vec<Row>> = match st {
            Some(st) => {
                let params = params(order, binds);
                self.conn.exec(st.clone(), params).await
            }
            None => {
                let sql = inline_literals(text, binds, true);
                self.conn.query(sql).await
            }
        };
        let rows = result.map_err(|e| self.check(e))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                r.unwrap()
                    .into_iter()
                    .map(|v| match v {
                        Value::NULL => None,
                        Value::Bytes(b) => Some(b),
                        other => Some(other.as_sql(true).into_bytes()),
                    })
                    .collect()
            })
            .collect())
    }

    async fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        match self.conn.query_drop(sql).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.check(e)),
        }
    }

    async fn set(&mut self, name: &str, value: &str) -> Result<(), DbError> {
        if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(DbError {
                code: "usage".into(),
                message: format!("`{name}` is not a system variable name"),
            });
        }
        self.batch(&format!("SET SESSION {name} = {value}")).await
    }

    fn is_closed(&self) -> bool {
        self.closed
    }

    fn backend_id(&self) -> Option<i64> {
        Some(self.id)
    }

    async fn close(self) {
        let _ = self.conn.disconnect().await;
    }
}

/// The values for the `?`s of a statement, in their order.
fn params(order: &[usize], binds: &[Option<&str>]) -> Params {
    if order.is_empty() {
        return Params::Empty;
    }
    Params::Positional(
        order
            .iter()
            .map(|&i| match binds.get(i).copied().flatten() {
                Some(v) => Value::Bytes(v.as_bytes().to_vec()),
                None => Value::NULL,
            })
            .collect(),
    )
}

/// Counts the rows of every result set (a procedure may return several).
async fn count_rows<P: mysql_async::prelude::Protocol>(
    result: mysql_async::Result<mysql_async::QueryResult<'_, 'static, P>>,
) -> mysql_async::Result<u64> {
    let mut r = result?;
    let mut n = 0u64;
    while !r.is_empty() {
        n += r.reduce(0u64, |n, _: Row| n + 1).await?;
    }
    Ok(n)
}

/// A MariaDB error: the server's message, number and SQLSTATE.
fn error(e: &mysql_async::Error) -> DbError {
    match e {
        mysql_async::Error::Server(s) => DbError {
            code: s.code.to_string(),
            message: format!(
                "{} (MariaDB error {}, SQLSTATE {})",
                s.message, s.code, s.state
            ),
        },
        mysql_async::Error::Url(_) => DbError {
            code: "connection".into(),
            message: "cannot read the MariaDB URL".into(),
        },
        other => DbError {
            code: "connection".into(),
            message: super::innermost(other),
        },
    }
}

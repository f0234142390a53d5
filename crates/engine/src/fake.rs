//! A fake engine: an [`Admin`] that answers from a script of canned
//! replies and records what it was sent. It lets the layers above (the
//! study's planner and executor) be tested without a server; it is not a
//! mock of any client library, only of the interface this crate defines.

use std::sync::{Arc, Mutex};

use crate::admin::{Admin, AdminError, TextRow};
use crate::Engine;

/// A canned row: (column, value) pairs.
pub type FakeRow = Vec<(String, String)>;

/// The replies a fake engine gives and what it has been sent, shared
/// between the test and every connection it opens.
#[derive(Debug, Default)]
pub struct FakeServer {
    /// (a statement's prefix, the rows it returns, or the error message
    /// it fails with), tried in order; a statement matching none returns
    /// no rows.
    pub replies: Vec<(String, Result<Vec<FakeRow>, String>)>,
    /// Every statement sent, in order.
    pub sent: Vec<String>,
    /// Connections opened.
    pub connections: usize,
}

/// A connection to a [`FakeServer`], as `engine`.
pub struct FakeAdmin {
    engine: Engine,
    server: Arc<Mutex<FakeServer>>,
    id: i64,
}

impl FakeAdmin {
    /// Opens a connection to `server`, which counts it.
    pub fn connect(engine: Engine, server: &Arc<Mutex<FakeServer>>) -> FakeAdmin {
        let mut s = server.lock().unwrap_or_else(|p| p.into_inner());
        s.connections += 1;
        FakeAdmin {
            engine,
            server: Arc::clone(server),
            id: s.connections as i64,
        }
    }
}

impl Admin for FakeAdmin {
    fn engine(&self) -> Engine {
        self.engine
    }

    fn query(&mut self, sql: &str) -> Result<Vec<TextRow>, AdminError> {
        let mut s = self.server.lock().unwrap_or_else(|p| p.into_inner());
        s.sent.push(sql.to_string());
        let Some((_, reply)) = s.replies.iter().find(|(p, _)| sql.starts_with(p.as_str())) else {
            return Ok(Vec::new());
        };
        match reply {
            Err(m) => Err(AdminError {
                code: Some("fake".into()),
                message: m.clone(),
            }),
            Ok(rows) => Ok(rows
                .iter()
                .map(|r| {
                    let cols: Arc<[String]> = r.iter().map(|(c, _)| c.clone()).collect();
                    TextRow::new(cols, r.iter().map(|(_, v)| Some(v.clone())).collect())
                })
                .collect()),
        }
    }

    fn is_closed(&self) -> bool {
        false
    }

    fn session_id(&self) -> Option<i64> {
        Some(self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_by_prefix_and_records_what_was_sent() {
        let server = Arc::new(Mutex::new(FakeServer {
            replies: vec![
                (
                    "select version()".into(),
                    Ok(vec![vec![("version".into(), "PostgreSQL 15.4".into())]]),
                ),
                ("drop".into(), Err("not allowed".into())),
            ],
            ..FakeServer::default()
        }));
        let mut a = FakeAdmin::connect(Engine::Postgres, &server);
        let f = crate::facts::server_facts(&mut a);
        assert_eq!(
            f.get("postgres.version").map(String::as_str),
            Some("PostgreSQL 15.4")
        );
        assert!(a
            .execute("drop table t")
            .unwrap_err()
            .to_string()
            .contains("not allowed"));
        let s = server.lock().unwrap();
        assert_eq!(s.sent.len(), 3, "{:?}", s.sent);
        assert_eq!(s.connections, 1);
    }
}

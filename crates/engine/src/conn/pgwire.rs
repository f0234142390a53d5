//! A PostgreSQL connection that speaks the frontend/backend protocol
//! itself, inside the session's task.
//!
//! Why by hand, for measured calls and administrative ones alike (one
//! PostgreSQL client): tokio-postgres (still used by the result cache's
//! catalog questions and notifications in crates/run) splits a
//! connection into a client and a connection task joined by channels, so
//! every call crosses two task hand-offs and allocates its response
//! buffers; that cost about 1 µs of client CPU per call more than libpq in
//! pgbench, which a load driver that claims pgbench's throughput cannot
//! afford. This connection encodes a call into one reused buffer, sends it
//! with one write, and parses the response in place from one reused read
//! buffer. The message formats and SCRAM come from postgres-protocol (the
//! crate tokio-postgres is built on); URLs are parsed by tokio-postgres's
//! `Config`, so both accept the same connection strings.

use std::time::Duration;

use bytes::BytesMut;
use postgres_protocol::authentication::{self, sasl};
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::config::{Host, SslMode};

use super::DbError;

/// Backend message types this connection looks at.
mod tag {
    pub const AUTH: u8 = b'R';
    pub const KEY: u8 = b'K';
    pub const READY: u8 = b'Z';
    pub const ERROR: u8 = b'E';
    pub const NOTICE: u8 = b'N';
    pub const PARAMETER: u8 = b'S';
    pub const NOTIFICATION: u8 = b'A';
    pub const DATA_ROW: u8 = b'D';
    pub const ROW_DESCRIPTION: u8 = b'T';
    pub const PARAMETER_DESCRIPTION: u8 = b't';
    pub const COPY_IN: u8 = b'G';
}

/// Bytes read at once; a message larger than this grows the buffer.
const READ_CHUNK: usize = 16 << 10;

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    async fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(b).await,
            Stream::Unix(s) => s.write_all(b).await,
        }
    }

    async fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(b).await,
            Stream::Unix(s) => s.read(b).await,
        }
    }
}

/// One connection to a PostgreSQL server.
pub struct Wire {
    io: Stream,
    /// The messages of the call being sent.
    out: BytesMut,
    /// Bytes read and not yet parsed are `inp[start..end]`.
    inp: Vec<u8>,
    start: usize,
    end: usize,
    closed: bool,
    /// The latest call failed because a prepared statement's plan went
    /// stale (see [`stale_plan`]).
    pub stale: bool,
    /// The backend's process id (from BackendKeyData).
    pub pid: Option<i32>,
}

/// A connection-level failure, as a session reports it.
fn lost(what: impl std::fmt::Display) -> DbError {
    DbError {
        code: "connection".into(),
        message: what.to_string(),
    }
}

/// The ErrorResponse fields a session reports: SQLSTATE and message, and
/// whether the server ends the session (FATAL, PANIC).
fn server_error(body: &[u8]) -> (DbError, bool) {
    let (mut code, mut message, mut severity) = ("", "", "");
    let mut rest = body;
    while let Some((&field, tail)) = rest.split_first() {
        if field == 0 {
            break;
        }
        let n = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let value = std::str::from_utf8(&tail[..n]).unwrap_or("");
        match field {
            b'C' => code = value,
            b'M' => message = value,
            b'V' => severity = value,
            b'S' if severity.is_empty() => severity = value,
            _ => {}
        }
        rest = tail.get(n + 1..).unwrap_or(&[]);
    }
    (
        DbError {
            code: code.to_string(),
            message: format!("{message} (SQLSTATE {code})"),
        },
        matches!(severity, "FATAL" | "PANIC"),
    )
}

/// Whether an ErrorResponse says a prepared statement's cached plan went
/// stale: the result type changed under it (`ALTER TABLE ... ALTER COLUMN
/// ... TYPE`), SQLSTATE 0A000 "cached plan must not change result type",
/// raised by the server's RevalidateCachedQuery (RevalidateCachedPlan
/// before 9.2). Told by the routine, as the PostgreSQL JDBC driver tells
/// it, not by the message, which the server translates. Preparing the
/// statement again cures it.
pub(crate) fn stale_plan(body: &[u8]) -> bool {
    let (mut code, mut routine) = ("", "");
    let mut rest = body;
    while let Some((&field, tail)) = rest.split_first() {
        if field == 0 {
            break;
        }
        let n = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let value = std::str::from_utf8(&tail[..n]).unwrap_or("");
        match field {
            b'C' => code = value,
            b'R' => routine = value,
            _ => {}
        }
        rest = tail.get(n + 1..).unwrap_or(&[]);
    }
    code == "0A000" && matches!(routine, "RevalidateCachedQuery" | "RevalidateCachedPlan")
}

/// The columns of a DataRow body: each value, `None` for NULL.
pub fn columns(body: &[u8]) -> impl Iterator<Item = Option<&[u8]>> {
    let n = body
        .get(..2)
        .map_or(0, |b| i16::from_be_bytes([b[0], b[1]]).max(0) as usize);
    let mut at = 2;
    (0..n).map_while(move |_| {
        let len = i32::from_be_bytes(body.get(at..at + 4)?.try_into().ok()?);
        at += 4;
        if len < 0 {
            return Some(None);
        }
        let v = body.get(at..at + len as usize)?;
        at += len as usize;
        Some(Some(v))
    })
}

/// The column names of a RowDescription body: a count, then per column
/// its name (NUL-terminated) and 18 bytes of type facts.
fn column_names(body: &[u8]) -> Vec<String> {
    let n = body
        .get(..2)
        .map_or(0, |b| i16::from_be_bytes([b[0], b[1]]).max(0) as usize);
    let mut at = 2;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let Some(len) = body.get(at..).and_then(|r| r.iter().position(|&c| c == 0)) else {
            break;
        };
        out.push(String::from_utf8_lossy(&body[at..at + len]).into_owned());
        at += len + 1 + 18;
    }
    out
}

/// A connection attempt that outlived its timeout.
/// The startup packet's `options`: the URL's, then each setting as
/// `-c name=value`. The server splits them at spaces, a backslash taking
/// the next character as it is: both are escaped in names and values.
fn startup_options(url: Option<&str>, settings: &[(String, String)]) -> Option<String> {
    let esc = |s: &str| s.replace('\\', "\\\\").replace(' ', "\\ ");
    let mut parts: Vec<String> = url.map(str::to_string).into_iter().collect();
    parts.extend(
        settings
            .iter()
            .map(|(k, v)| format!("-c {}={}", esc(k), esc(v))),
    );
    (!parts.is_empty()).then(|| parts.join(" "))
}

fn timed_out() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out")
}

impl Wire {
    /// Connects to the first host of `url` that answers, authenticates
    /// (trust, password, md5, SCRAM-SHA-256) and waits for the server to
    /// be ready. Errors never hold the password.
    pub async fn connect(url: &str) -> Result<Wire, DbError> {
        Wire::connect_with(url, &[]).await
    }

    /// As [`Wire::connect`], with `settings` sent in the startup packet
    /// (`-c name=value` after the URL's own `options`): they are in force
    /// from the backend's start, as libpq's `options` puts them, with no
    /// round trip of their own and nothing for a proxy in the path to
    /// see as a statement.
    pub async fn connect_with(url: &str, settings: &[(String, String)]) -> Result<Wire, DbError> {
        // The URL completed as libpq completes it (service, PG*
        // variables, password file).
        let cfg = crate::conninfo::postgres(url).map_err(lost)?;
        if cfg.get_ssl_mode() == SslMode::Require {
            return Err(lost(
                "sslmode=require: tracelab run speaks to PostgreSQL without TLS \
                 (use sslmode=prefer or disable, or a local server)",
            ));
        }
        let timeout = cfg
            .get_connect_timeout()
            .copied()
            .unwrap_or(Duration::from_secs(30));
        let ports = cfg.get_ports();
        let mut failure = lost("no host in the connection string");
        for (i, host) in cfg.get_hosts().iter().enumerate() {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            let io = match host {
                Host::Tcp(h) => {
                    let addr = cfg
                        .get_hostaddrs()
                        .get(i)
                        .map_or_else(|| h.clone(), |a| a.to_string());
                    tokio::time::timeout(timeout, TcpStream::connect((addr.as_str(), port)))
                        .await
                        .unwrap_or_else(|_| Err(timed_out()))
                        .and_then(|s| s.set_nodelay(true).map(|()| Stream::Tcp(s)))
                        .map_err(|e| lost(format!("cannot reach {h}:{port}: {e}")))
                }
                Host::Unix(dir) => {
                    let path = dir.join(format!(".s.PGSQL.{port}"));
                    tokio::time::timeout(timeout, UnixStream::connect(&path))
                        .await
                        .unwrap_or_else(|_| Err(timed_out()))
                        .map(Stream::Unix)
                        .map_err(|e| lost(format!("cannot reach {}: {e}", path.display())))
                }
            };
            let io = match io {
                Ok(io) => io,
                Err(e) => {
                    failure = e;
                    continue;
                }
            };
            let mut w = Wire {
                io,
                out: BytesMut::with_capacity(4096),
                inp: vec![0; READ_CHUNK],
                start: 0,
                end: 0,
                closed: false,
                stale: false,
                pid: None,
            };
            match tokio::time::timeout(timeout, w.startup(&cfg, settings)).await {
                Ok(Ok(())) => return Ok(w),
                Ok(Err(e)) => failure = e,
                Err(_) => failure = lost("the server did not complete the startup in time"),
            }
        }
        Err(failure)
    }

    async fn startup(
        &mut self,
        cfg: &tokio_postgres::Config,
        settings: &[(String, String)],
    ) -> Result<(), DbError> {
        let user = match cfg.get_user() {
            Some(u) => u.to_string(),
            None => return Err(lost("no user in the connection string")),
        };
        let mut params = vec![("client_encoding", "UTF8"), ("user", user.as_str())];
        if let Some(db) = cfg.get_dbname() {
            params.push(("database", db));
        }
        let options = startup_options(cfg.get_options(), settings);
        if let Some(o) = &options {
            params.push(("options", o));
        }
        if let Some(a) = cfg.get_application_name() {
            params.push(("application_name", a));
        }
        self.out.clear();
        frontend::startup_message(params, &mut self.out).map_err(lost)?;
        self.send().await?;
        let password = || {
            cfg.get_password().ok_or_else(|| {
                lost(
                    "the server asks for a password and none was given (URL, PGPASSWORD, \
                         service or password file)",
                )
            })
        };
        let mut scram: Option<sasl::ScramSha256> = None;
        loop {
            let (t, len) = self.message().await?;
            let body = self.body(len);
            match t {
                tag::AUTH => {
                    let code = body
                        .get(..4)
                        .map_or(-1, |b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                    let data = body.get(4..).unwrap_or(&[]).to_vec();
                    self.consume(len);
                    self.out.clear();
                    match code {
                        0 => continue,
                        3 => frontend::password_message(password()?, &mut self.out),
                        5 => {
                            let salt: [u8; 4] = data
                                .get(..4)
                                .and_then(|s| s.try_into().ok())
                                .ok_or_else(|| lost("malformed md5 request"))?;
                            let hash = authentication::md5_hash(user.as_bytes(), password()?, salt);
                            frontend::password_message(hash.as_bytes(), &mut self.out)
                        }
                        10 => {
                            let offers_scram = data
                                .split(|&b| b == 0)
                                .any(|m| m == sasl::SCRAM_SHA_256.as_bytes());
                            if !offers_scram {
                                return Err(lost("the server offers no SASL mechanism tracelab speaks (SCRAM-SHA-256 without TLS)"));
                            }
                            let s = sasl::ScramSha256::new(
                                password()?,
                                sasl::ChannelBinding::unsupported(),
                            );
                            let r = frontend::sasl_initial_response(
                                sasl::SCRAM_SHA_256,
                                s.message(),
                                &mut self.out,
                            );
                            scram = Some(s);
                            r
                        }
                        11 => {
                            let s = scram.as_mut().ok_or_else(|| lost("unexpected SASL step"))?;
                            s.update(&data)
                                .map_err(|e| lost(format!("authentication failed: {e}")))?;
                            frontend::sasl_response(s.message(), &mut self.out)
                        }
                        12 => {
                            let s = scram.as_mut().ok_or_else(|| lost("unexpected SASL step"))?;
                            s.finish(&data)
                                .map_err(|e| lost(format!("authentication failed: {e}")))?;
                            continue;
                        }
                        c => {
                            return Err(lost(format!(
                                "the server asks for authentication method {c}, which tracelab does not speak"
                            )))
                        }
                    }
                    .map_err(lost)?;
                    self.send().await?;
                    continue;
                }
                tag::KEY => {
                    self.pid = body
                        .get(..4)
                        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                }
                tag::ERROR => {
                    let (e, _) = server_error(body);
                    self.closed = true;
                    return Err(e);
                }
                tag::READY => {
                    self.consume(len);
                    return Ok(());
                }
                _ => {}
            }
            self.consume(len);
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Sends what `out` holds.
    async fn send(&mut self) -> Result<(), DbError> {
        if self.closed {
            return Err(lost("the connection to the server is closed"));
        }
        if let Err(e) = self.io.write_all(&self.out).await {
            self.closed = true;
            return Err(lost(format!("connection to the server lost: {e}")));
        }
        Ok(())
    }

    /// Waits until a whole message is buffered; returns its type and body
    /// length.
    async fn message(&mut self) -> Result<(u8, usize), DbError> {
        loop {
            let have = self.end - self.start;
            if have >= 5 {
                let h = &self.inp[self.start..self.start + 5];
                let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
                if len < 4 {
                    self.closed = true;
                    return Err(lost("malformed message from the server"));
                }
                if have > len {
                    return Ok((h[0], len - 4));
                }
                if self.start + 1 + len > self.inp.len() {
                    // Make room: move what is buffered to the front, and
                    // grow for a message larger than the buffer.
                    self.inp.copy_within(self.start..self.end, 0);
                    self.end = have;
                    self.start = 0;
                    if 1 + len > self.inp.len() {
                        self.inp.resize(1 + len + READ_CHUNK, 0);
                    }
                }
            } else if self.start > 0 && self.inp.len() - self.end < 5 {
                self.inp.copy_within(self.start..self.end, 0);
                self.end = have;
                self.start = 0;
            }
            let n = match self.io.read(&mut self.inp[self.end..]).await {
                Ok(0) => {
                    self.closed = true;
                    return Err(lost("the server closed the connection"));
                }
                Ok(n) => n,
                Err(e) => {
                    self.closed = true;
                    return Err(lost(format!("connection to the server lost: {e}")));
                }
            };
            self.end += n;
        }
    }

    fn body(&self, len: usize) -> &[u8] {
        &self.inp[self.start + 5..self.start + 5 + len]
    }

    fn consume(&mut self, len: usize) {
        self.start += 5 + len;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Sends what `out` holds and reads the responses up to ReadyForQuery,
    /// handing every other message but errors, notices and asynchronous
    /// ones to `on`. The first error is returned once the server is ready
    /// again (or at once if it ends the session).
    async fn call(&mut self, mut on: impl FnMut(u8, &[u8])) -> Result<(), DbError> {
        self.stale = false;
        self.send().await?;
        let mut failed: Option<DbError> = None;
        loop {
            let (t, len) = match self.message().await {
                Ok(m) => m,
                // A FATAL error says more than the closed socket after it.
                Err(e) => return Err(failed.unwrap_or(e)),
            };
            let body = self.body(len);
            match t {
                tag::READY => {
                    self.consume(len);
                    return failed.map_or(Ok(()), Err);
                }
                tag::ERROR => {
                    let (e, fatal) = server_error(body);
                    let stale = failed.is_none() && stale_plan(body);
                    if fatal {
                        self.closed = true;
                    }
                    if failed.is_none() {
                        self.stale = stale;
                    }
                    failed.get_or_insert(e);
                }
                tag::NOTICE | tag::PARAMETER | tag::NOTIFICATION => {}
                tag::COPY_IN => {
                    // COPY ... FROM STDIN: there is no data to send.
                    self.consume(len);
                    self.out.clear();
                    frontend::copy_fail("tracelab run sends no COPY data", &mut self.out)
                        .map_err(lost)?;
                    self.send().await?;
                    continue;
                }
                _ => on(t, body),
            }
            self.consume(len);
        }
    }

    /// Parses and describes a named statement; returns its number of
    /// parameters.
    pub async fn prepare(&mut self, name: &str, sql: &str) -> Result<usize, DbError> {
        self.out.clear();
        frontend::parse(name, sql, std::iter::empty(), &mut self.out).map_err(lost)?;
        frontend::describe(b'S', name, &mut self.out).map_err(lost)?;
        frontend::sync(&mut self.out);
        let mut params = 0;
        self.call(|t, b| {
            if t == tag::PARAMETER_DESCRIPTION && b.len() >= 2 {
                params = u16::from_be_bytes([b[0], b[1]]) as usize;
            }
        })
        .await?;
        Ok(params)
    }

    /// Prepares named statement `name` again, in one round trip: Close
    /// of the old one, then Parse and Describe as [`Wire::prepare`].
    pub(crate) async fn reprepare(&mut self, name: &str, sql: &str) -> Result<usize, DbError> {
        self.out.clear();
        frontend::close(b'S', name, &mut self.out).map_err(lost)?;
        frontend::parse(name, sql, std::iter::empty(), &mut self.out).map_err(lost)?;
        frontend::describe(b'S', name, &mut self.out).map_err(lost)?;
        frontend::sync(&mut self.out);
        let mut params = 0;
        self.call(|t, b| {
            if t == tag::PARAMETER_DESCRIPTION && b.len() >= 2 {
                params = u16::from_be_bytes([b[0], b[1]]) as usize;
            }
        })
        .await?;
        Ok(params)
    }

    /// Writes Bind (text values, results in `result_format`), Execute and
    /// Sync for statement `name` ("" for the unnamed one) into `out`.
    fn bind(
        &mut self,
        name: &str,
        binds: &[Option<&str>],
        result_format: i16,
    ) -> Result<(), DbError> {
        frontend::bind(
            "",
            name,
            [0i16],
            binds.iter(),
            |v, buf| {
                Ok(match v {
                    Some(s) => {
                        buf.extend_from_slice(s.as_bytes());
                        IsNull::No
                    }
                    None => IsNull::Yes,
                })
            },
            [result_format],
            &mut self.out,
        )
        .map_err(|e| match e {
            frontend::BindError::Conversion(e) => lost(e),
            frontend::BindError::Serialization(e) => lost(e),
        })?;
        frontend::execute("", 0, &mut self.out).map_err(lost)?;
        frontend::sync(&mut self.out);
        Ok(())
    }

    /// Executes prepared statement `name` with text values; hands each
    /// DataRow body to `row`. Results come in binary, as tokio-postgres
    /// asks for them.
    pub async fn execute(
        &mut self,
        name: &str,
        binds: &[Option<&str>],
        mut row: impl FnMut(&[u8]),
    ) -> Result<(), DbError> {
        self.out.clear();
        self.bind(name, binds, 1)?;
        self.call(|t, b| {
            if t == tag::DATA_ROW {
                row(b)
            }
        })
        .await
    }

    /// Parses, binds and executes `sql` as the unnamed statement, values
    /// and results in text, in one round trip.
    pub async fn query_once(
        &mut self,
        sql: &str,
        binds: &[Option<&str>],
        mut row: impl FnMut(&[u8]),
    ) -> Result<(), DbError> {
        self.out.clear();
        frontend::parse("", sql, std::iter::empty(), &mut self.out).map_err(lost)?;
        self.bind("", binds, 0)?;
        self.call(|t, b| {
            if t == tag::DATA_ROW {
                row(b)
            }
        })
        .await
    }

    /// Runs `sql` by the simple query protocol (any number of statements);
    /// hands each DataRow body (text values) to `row`.
    pub async fn simple(&mut self, sql: &str, row: impl FnMut(&[u8])) -> Result<(), DbError> {
        self.simple_query(sql, None, row).await
    }

    /// As [`Wire::simple`], and hands each result's column names (its
    /// RowDescription) to `names` before its rows: administrative
    /// questions read values by column name.
    pub async fn simple_named(
        &mut self,
        sql: &str,
        mut names: impl FnMut(Vec<String>),
        row: impl FnMut(&[u8]),
    ) -> Result<(), DbError> {
        self.simple_query(sql, Some(&mut names), row).await
    }

    /// The simple query protocol for both: the column names are read only
    /// when asked for (a measured session's call does not pay for them).
    async fn simple_query(
        &mut self,
        sql: &str,
        mut names: Option<&mut dyn FnMut(Vec<String>)>,
        mut row: impl FnMut(&[u8]),
    ) -> Result<(), DbError> {
        self.out.clear();
        if sql.contains('\0') {
            // A statement is sent as a NUL-terminated string: a bad value
            // (22021, as the server says of a NUL in a bound value), not a
            // lost connection.
            return Err(DbError {
                code: "22021".into(),
                message: "a NUL byte in the statement (a bind value?): the simple protocol \
                          cannot send it"
                    .into(),
            });
        }
        frontend::query(sql, &mut self.out).map_err(lost)?;
        self.call(|t, b| match t {
            tag::DATA_ROW => row(b),
            tag::ROW_DESCRIPTION => {
                if let Some(names) = names.as_mut() {
                    names(column_names(b))
                }
            }
            _ => {}
        })
        .await
    }

    /// Says goodbye to the server.
    pub async fn close(mut self) {
        if !self.closed {
            self.out.clear();
            frontend::terminate(&mut self.out);
            let _ = self.send().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The protocol paths a workload can take, against a real server:
    /// messages larger than the read buffer, errors that leave the
    /// connection usable, notices, COPY FROM STDIN, and a session the
    /// server ends.
    #[test]
    fn against_a_real_server() {
        let dir = tempfile::tempdir().unwrap();
        let state = tracelab_db::start_postgres(&tracelab_db::PgOptions {
            dir: Some(dir.path().join("pg")),
            settings: vec![],
        })
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.block_on(async {
                let mut w = Wire::connect(&state.url).await.unwrap();
                assert!(w.pid.is_some());
                // A 1 MB value through a prepared statement, twice (the
                // buffer grows once and is reused).
                assert_eq!(
                    w.prepare("big", "select repeat('x', $1::int), $2")
                        .await
                        .unwrap(),
                    2
                );
                for _ in 0..2 {
                    let mut got = Vec::new();
                    w.execute("big", &[Some("1000000"), None], |b| {
                        got = columns(b).map(|v| v.map(<[u8]>::len)).collect()
                    })
                    .await
                    .unwrap();
                    assert_eq!(got, vec![Some(1_000_000), None]);
                }
                // Many small rows spanning several reads.
                let mut n = 0;
                w.simple(
                    "select g, repeat('y', 100) from generate_series(1, 20000) g",
                    |_| n += 1,
                )
                .await
                .unwrap();
                assert_eq!(n, 20_000);
                // An error names its SQLSTATE; the connection goes on.
                let e = w.simple("select 1/0", |_| {}).await.unwrap_err();
                assert_eq!(e.code, "22012");
                assert!(e.message.contains("division by zero"), "{}", e.message);
                let e = w.execute("nope", &[], |_| {}).await.unwrap_err();
                assert_eq!(e.code, "26000", "{}", e.message);
                // Notices are skipped; COPY FROM STDIN is refused cleanly.
                w.simple("do $$ begin raise notice 'hello'; end $$", |_| {})
                    .await
                    .unwrap();
                w.simple("create temp table t (x int)", |_| {})
                    .await
                    .unwrap();
                let e = w.simple("copy t from stdin", |_| {}).await.unwrap_err();
                assert_eq!(e.code, "57014", "{}", e.message);
                let mut one = Vec::new();
                w.query_once("select $1::text || 'b'", &[Some("a")], |b| {
                    one = columns(b).flatten().map(<[u8]>::to_vec).collect()
                })
                .await
                .unwrap();
                assert_eq!(one, vec![b"ab".to_vec()]);
                assert!(!w.is_closed());
                // Settings in the startup packet, after the URL's own
                // options, as written (spaces and backslashes too).
                let sep = if state.url.contains('?') { '&' } else { '?' };
                let url = format!("{}{sep}options=-c%20work_mem%3D5MB", state.url);
                let settings = [
                    ("tracelab.x".to_string(), "a b\\c".to_string()),
                    (
                        "search_path".to_string(),
                        "\"my schema\", public".to_string(),
                    ),
                ];
                let mut s = Wire::connect_with(&url, &settings).await.unwrap();
                let mut got = Vec::new();
                s.simple(
                    "select current_setting('work_mem'), current_setting('tracelab.x'), \
                     current_setting('search_path')",
                    |b| {
                        got = columns(b)
                            .flatten()
                            .map(|v| String::from_utf8_lossy(v).into_owned())
                            .collect()
                    },
                )
                .await
                .unwrap();
                assert_eq!(got, ["5MB", "a b\\c", "\"my schema\", public"]);
                s.close().await;
                // The server ends the session: FATAL, then closed.
                let e = w
                    .simple("select pg_terminate_backend(pg_backend_pid())", |_| {})
                    .await
                    .unwrap_err();
                assert_eq!(e.code, "57P01", "{}", e.message);
                assert!(w.is_closed());
                let e = w.simple("select 1", |_| {}).await.unwrap_err();
                assert_eq!(e.code, "connection");
            })
        }));
        let _ = tracelab_db::stop(&state.dir);
        if let Err(p) = r {
            std::panic::resume_unwind(p);
        }
    }

    #[test]
    fn settings_follow_the_urls_options_escaped() {
        assert_eq!(startup_options(None, &[]), None);
        assert_eq!(
            startup_options(Some("-c a=1"), &[]).as_deref(),
            Some("-c a=1")
        );
        let s = [
            (
                "search_path".to_string(),
                "\"my schema\", public".to_string(),
            ),
            ("x.y".to_string(), "a\\b".to_string()),
        ];
        assert_eq!(
            startup_options(Some("-c a=1"), &s).as_deref(),
            Some("-c a=1 -c search_path=\"my\\ schema\",\\ public -c x.y=a\\\\b")
        );
    }

    #[test]
    fn data_row_columns_with_nulls() {
        // 3 columns: "ab", NULL, "".
        let body = [0, 3, 0, 0, 0, 2, b'a', b'b', 255, 255, 255, 255, 0, 0, 0, 0];
        let cols: Vec<_> = columns(&body).collect();
        assert_eq!(cols, vec![Some(&b"ab"[..]), None, Some(&b""[..])]);
        // A truncated row yields what it holds, no panic.
        let cols: Vec<_> = columns(&body[..8]).collect();
        assert_eq!(cols, vec![Some(&b"ab"[..])]);
    }

    #[test]
    fn error_fields() {
        let body = b"SERROR\0VFATAL\0C57P01\0Mterminating connection\0\0";
        let (e, fatal) = server_error(body);
        assert_eq!(e.code, "57P01");
        assert_eq!(e.message, "terminating connection (SQLSTATE 57P01)");
        assert!(fatal);
        let (e, fatal) = server_error(b"SERROR\0C42601\0Msyntax error\0\0");
        assert_eq!(e.code, "42601");
        assert!(!fatal);
        assert!(stale_plan(
            b"SERROR\0C0A000\0Mcached plan must not change result type\0RRevalidateCachedQuery\0\0"
        ));
        assert!(!stale_plan(
            b"SERROR\0C0A000\0Mnot supported\0Rtransformfoo\0\0"
        ));
    }
}

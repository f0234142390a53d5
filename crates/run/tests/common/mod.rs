//! What the engine tests share: reading a session's trace back.

#![allow(dead_code)]

use std::path::Path;

use tracelab_run::Summary;
use tracelab_trace::{open, CallKind, ReadOptions, Reader, Source};

/// One call of a session's trace: kind, duration (µs), mrskew's
/// accounted-for time (µs: CPU of a call, ela of a wait), rows, first
/// bind, whether it is a wait inside a call (for the database).
pub struct Traced {
    pub kind: CallKind,
    pub dur: i64,
    pub af: i64,
    pub inner: bool,
    pub rows: i64,
    pub bind: Option<String>,
}

/// The calls of session `i`'s trace in `dir`.
pub fn traced(dir: &Path, i: usize) -> Vec<Traced> {
    let mut v = Vec::new();
    let path = dir.join(format!("tracelab_run_{i}.trc"));
    Reader::new(ReadOptions {
        binds: true,
        ..ReadOptions::default()
    })
    .read(open(&Source::Path(path)).unwrap(), |c| {
        v.push(Traced {
            kind: c.kind,
            dur: c.dur_us(),
            af: c.af_us(),
            inner: c.kind == CallKind::Wait && !c.name.contains("from client"),
            rows: c.db.r.unwrap_or(0),
            bind: c.binds.first().and_then(|b| b.as_deref().map(String::from)),
        })
    })
    .unwrap();
    v
}

pub fn count(calls: &[Traced], kind: CallKind) -> usize {
    calls.iter().filter(|c| c.kind == kind).count()
}

/// Per session, the calls and waits of its trace account for the
/// session's measured elapsed time within 1 %; returns the calls of each.
pub fn traces_add_up(dir: &Path, sum: &Summary) -> Vec<Vec<Traced>> {
    sum.per_session
        .iter()
        .map(|s| {
            let calls = traced(dir, s.session);
            // Calls and the waits between them (a wait inside a call is
            // part of the call's time).
            let time: i64 = calls.iter().filter(|c| !c.inner).map(|c| c.dur).sum();
            let diff = (time - s.elapsed_us).abs() as f64;
            assert!(
                diff <= 0.01 * s.elapsed_us as f64,
                "session {}: trace {time} µs vs measured {} µs",
                s.session,
                s.elapsed_us
            );
            // mrskew's profile (CPU of calls + every wait) covers the
            // elapsed time too: the waits inside calls hold their time off
            // the client's CPU. (A call's CPU can exceed its elapsed time by
            // the thread's work just before it, so only the lower bound is
            // tight.)
            let af: i64 = calls.iter().map(|c| c.af).sum();
            assert!(
                af as f64 >= 0.99 * s.elapsed_us as f64,
                "session {}: profile {af} µs vs measured {} µs",
                s.session,
                s.elapsed_us
            );
            // One wait inside every round trip: every EXEC and CLOSE is
            // one, and every PARSE but the two of BEGIN and COMMIT (written
            // with their first EXEC); a FETCH is one unless it came with
            // its EXEC.
            let of = |k: &[CallKind]| calls.iter().filter(|c| k.contains(&c.kind)).count();
            let inner = calls.iter().filter(|c| c.inner).count();
            let trips = of(&[CallKind::Parse, CallKind::Exec, CallKind::Close]);
            assert!(
                (trips.saturating_sub(2)..=trips + of(&[CallKind::Fetch])).contains(&inner),
                "session {}: {inner} waits inside {trips} round trips",
                s.session
            );
            calls
        })
        .collect()
}

/// The rows all FETCH lines of `calls` returned.
pub fn fetched(calls: &[Traced]) -> i64 {
    calls
        .iter()
        .filter(|c| c.kind == CallKind::Fetch)
        .map(|c| c.rows)
        .sum()
}

/// A private server for one test, stopped (and its directory removed)
/// when dropped.
pub struct Server {
    pub state: tracelab_db::ServerState,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = tracelab_db::stop(&self.state.dir);
    }
}

fn server_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tracelab-run-test-")
        .tempdir_in("/tmp")
        .unwrap()
}

/// A private PostgreSQL with `setup` run on it.
pub fn postgres(setup: &str) -> Server {
    let dir = server_dir();
    let state = tracelab_db::start_postgres(&tracelab_db::PgOptions {
        dir: Some(dir.path().join("pg")),
        settings: vec![],
    })
    .unwrap();
    let mut c = postgres::Client::connect(&state.url, postgres::NoTls).unwrap();
    c.batch_execute(setup).unwrap();
    Server { state, _dir: dir }
}

/// A private MariaDB with `setup` run on it.
pub fn mariadb(setup: &str) -> Server {
    let dir = server_dir();
    let state = tracelab_db::start_mariadb(&tracelab_db::MariaOptions {
        dir: Some(dir.path().join("m")),
        settings: vec![],
    })
    .unwrap();
    let s = Server { state, _dir: dir };
    s.maria_sql(setup);
    s
}

impl Server {
    /// Runs SQL on a MariaDB with the real `mariadb` client; its output.
    pub fn maria_sql(&self, sql: &str) -> String {
        let port = self.state.port.to_string();
        let out = std::process::Command::new("mariadb")
            .args([
                "-h",
                "127.0.0.1",
                "-P",
                &port,
                "-u",
                "root",
                "-N",
                "-B",
                "tracelab",
                "-e",
                sql,
            ])
            .output()
            .expect("the mariadb client runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

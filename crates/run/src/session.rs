//! One session: connect, prepare, execute until told to stop, measure each
//! call, and trace it.

use std::error::Error as _;
use std::fs::File;
use std::time::Instant;

use hdrhistogram::Histogram;
use postgres::types::{Format, IsNull, ToSql, Type};
use postgres::{Client, NoTls};
use tracelab_trace::{CallTimes, Header, TraceWriter};

use crate::clock::{micros_since, thread_cpu_micros};
use crate::summary::SessionSummary;
use crate::workload::Workload;
use crate::{RunOptions, Stop};

/// A bind value sent in text format, whatever the parameter's type: the
/// server parses it as it would a literal, as psql and sqlrun do, so a
/// bind file needs no type annotations.
#[derive(Debug)]
struct Text<'a>(Option<&'a str>);

impl ToSql for Text<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut postgres::types::private::BytesMut,
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

    postgres::types::to_sql_checked!();
}

/// The trace cursor number of the session's statement.
const CURSOR: u64 = 1;

/// Runs session `index` and returns what it measured.
pub fn run(index: usize, opts: &RunOptions, w: &Workload, t0: Instant) -> SessionSummary {
    let mut s = SessionSummary::new(index);
    let mut hist = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds");
    let mut client = match Client::connect(&opts.url, NoTls) {
        Ok(c) => c,
        Err(e) => {
            s.fail(format!("cannot connect: {}", describe(&e)));
            return s;
        }
    };
    s.backend_pid = client
        .query_one("select pg_backend_pid()", &[])
        .ok()
        .map(|r| r.get::<_, i32>(0));
    let mut trace = opts.trace_dir.as_ref().and_then(|dir| {
        let name = format!("tracelab_run_{index}.trc");
        let f = File::create(dir.join(&name)).ok()?;
        TraceWriter::new(
            f,
            &Header {
                name: &name,
                engine: "postgres",
                side: "client",
                timer: "vdso",
                started: "unknown",
            },
        )
        .ok()
    });
    let session_start = micros_since(t0);
    let cpu0 = thread_cpu_micros();
    let stmt = match client.prepare(&w.engine_sql) {
        Ok(st) => st,
        Err(e) => {
            s.fail(format!("cannot prepare the statement: {}", describe(&e)));
            return s;
        }
    };
    let mut last_end = micros_since(t0);
    if let Some(t) = trace.as_mut() {
        let _ = t.parse(
            CURSOR,
            &w.sql,
            3,
            CallTimes {
                c: thread_cpu_micros() - cpu0,
                e: last_end - session_start,
                r: 0,
                dep: 0,
                tim: last_end,
            },
        );
    }
    let deadline = match opts.stop {
        Stop::Runtime(d) => Some(session_start + d.as_micros() as i64),
        Stop::Transactions(_) => None,
    };
    let mut i = 0usize;
    loop {
        match opts.stop {
            Stop::Transactions(n) if s.transactions + s.errors >= n => break,
            _ => {}
        }
        if deadline.is_some_and(|d| micros_since(t0) >= d) {
            break;
        }
        let row: Vec<Text<'_>> = if w.binds.is_empty() {
            Vec::new()
        } else {
            w.binds[i % w.binds.len()]
                .iter()
                .map(|v| Text(v.as_deref()))
                .collect()
        };
        let params: Vec<&(dyn ToSql + Sync)> =
            row.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
        // The thread CPU clock is a system call, not a vDSO read: only a
        // trace needs it.
        let tracing = trace.is_some();
        let start = micros_since(t0);
        let cpu = if tracing { thread_cpu_micros() } else { 0 };
        let result = client.query(&stmt, &params);
        let end = micros_since(t0);
        let c = if tracing {
            thread_cpu_micros() - cpu
        } else {
            0
        };
        if let Some(t) = trace.as_mut() {
            // The time outside the database between two calls: what
            // Oracle's server side sees as SQL*Net message from client.
            let _ = t.wait(
                CURSOR,
                "SQL*Net message from client",
                start - last_end,
                [("driver id", 0), ("#bytes", 1), ("p3", 0)],
                start,
            );
            let vals: Vec<Option<&str>> = row.iter().map(|v| v.0).collect();
            if !vals.is_empty() {
                let _ = t.binds(CURSOR, &vals);
            }
        }
        match result {
            Ok(rows) => {
                s.transactions += 1;
                let _ = hist.record((end - start).max(1) as u64);
                if let Some(t) = trace.as_mut() {
                    let times = |r| CallTimes {
                        c,
                        e: end - start,
                        r,
                        dep: 0,
                        tim: end,
                    };
                    let _ = t.exec(CURSOR, times(0));
                    let _ = t.fetch(
                        CURSOR,
                        CallTimes {
                            c: 0,
                            e: 0,
                            ..times(rows.len() as i64)
                        },
                    );
                }
            }
            Err(e) => {
                let code = e.code().map_or("connection", |c| c.code()).to_string();
                s.error(
                    &code,
                    format!(
                        "{} (bind row {})",
                        describe(&e),
                        i % w.binds.len().max(1) + 1
                    ),
                );
                if let Some(t) = trace.as_mut() {
                    let _ = t.exec(
                        CURSOR,
                        CallTimes {
                            c,
                            e: end - start,
                            r: 0,
                            dep: 0,
                            tim: end,
                        },
                    );
                }
                if client.is_closed() {
                    s.fail("the connection to the server was lost".to_string());
                    last_end = end;
                    break;
                }
            }
        }
        last_end = end;
        i += 1;
        if !opts.exe_delay.is_zero() {
            std::thread::sleep(opts.exe_delay);
        }
    }
    s.elapsed_us = last_end - session_start;
    s.latency = hist;
    if let Some(t) = trace.as_mut() {
        let _ = t.flush();
    }
    s
}

/// A PostgreSQL error as the user wants it: the server's message and
/// SQLSTATE, never the connection string.
fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => match e.source() {
            Some(src) => format!("{e}: {src}"),
            None => e.to_string(),
        },
    }
}

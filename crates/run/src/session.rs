//! One session: connect, prepare, execute until told to stop, measure each
//! call, and trace it.

use std::error::Error as _;
use std::fs::File;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::SystemTime;

use hdrhistogram::Histogram;
use tokio_postgres::types::{Format, IsNull, ToSql, Type};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};
use tracelab_trace::{CallTimes, Header, TraceWriter};

use crate::clock::{thread_cpu_micros, Clock};
use crate::live::Live;
use crate::summary::SessionSummary;
use crate::workload::{inline_binds, Workload};
use crate::{ConnectMode, RunOptions, Stop};

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

/// Trace cursor numbers: the workload's statements are 1..=n; the
/// transaction control statements the session sends itself use these (far
/// above any kit's statement count).
const CURSOR_BEGIN: u64 = 1_000_001;
const CURSOR_END: u64 = 1_000_002;

/// A session between its connection and its end.
struct Session {
    trace: Option<TraceWriter<File>>,
    clock: Clock,
    /// End of the latest call, µs on the run's clock.
    last_end: i64,
    s: SessionSummary,
    hist: Histogram<u64>,
    /// Control statements already written to the trace with their text.
    parsed: [bool; 2],
}

impl<T> Timed<T> {
    /// The call's times as a trace line writes them (no rows, top level).
    fn times(&self) -> CallTimes {
        CallTimes {
            c: self.cpu,
            e: self.end - self.start,
            r: 0,
            dep: 0,
            tim: self.end,
        }
    }
}

/// Counts a session in, once, at a point the others wait for (the
/// tsunami start, the pause at exit): when it gets there, or when it ends
/// before (so that the others do not wait for it forever).
struct Mark<'a>(&'a std::sync::atomic::AtomicUsize, bool);

impl Mark<'_> {
    fn arrive(&mut self) {
        if !self.1 {
            self.1 = true;
            self.0.fetch_add(1, Ordering::Release);
        }
    }
}

impl Drop for Mark<'_> {
    fn drop(&mut self) {
        self.arrive();
    }
}

/// A future that adds up the CPU its own polls take on whatever worker
/// thread runs them: the client's CPU for one call, even when many
/// sessions share a thread.
struct CpuTimed<F> {
    inner: Pin<Box<F>>,
    measure: bool,
    cpu: i64,
}

impl<F: Future> Future for CpuTimed<F> {
    type Output = (F::Output, i64);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let t = if self.measure { thread_cpu_micros() } else { 0 };
        let r = self.inner.as_mut().poll(cx);
        if self.measure {
            self.cpu += thread_cpu_micros() - t;
        }
        r.map(|out| (out, self.cpu))
    }
}

/// One measured round trip.
struct Timed<T> {
    result: Result<T, tokio_postgres::Error>,
    start: i64,
    end: i64,
    cpu: i64,
}

impl Session {
    /// Runs one round trip, measured; in the trace, the time since the
    /// previous call becomes the wait before it: the time the session
    /// spent outside the database, which Oracle's server side names
    /// 'SQL*Net message from client'.
    async fn round_trip<T>(
        &mut self,
        cursor: u64,
        call: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Timed<T> {
        // The thread CPU clock is a system call, not a vDSO read: only a
        // trace needs it.
        let tracing = self.trace.is_some();
        let start = self.clock.now();
        let (result, cpu) = CpuTimed {
            inner: Box::pin(call),
            measure: tracing,
            cpu: 0,
        }
        .await;
        let end = self.clock.now();
        if let Some(t) = self.trace.as_mut() {
            let _ = t.wait(
                cursor,
                "SQL*Net message from client",
                start - self.last_end,
                [("driver id", 0), ("#bytes", 1), ("p3", 0)],
                start,
            );
        }
        self.last_end = end;
        Timed {
            result,
            start,
            end,
            cpu,
        }
    }

    /// Sends BEGIN, COMMIT or ROLLBACK; traced as an EXEC of its own
    /// cursor, a commit or rollback preceded by XCTEND as Oracle writes it.
    async fn control(
        &mut self,
        client: &Client,
        sql: &'static str,
    ) -> Result<(), tokio_postgres::Error> {
        let (cursor, slot) = if sql == "BEGIN" {
            (CURSOR_BEGIN, 0)
        } else {
            (CURSOR_END, 1)
        };
        let r = self.round_trip(cursor, client.batch_execute(sql)).await;
        if let Some(t) = self.trace.as_mut() {
            let times = r.times();
            if sql != "BEGIN" {
                let _ = t.xctend(sql == "ROLLBACK", false, r.end);
            }
            if !self.parsed[slot] {
                self.parsed[slot] = true;
                let _ = t.parse(
                    cursor,
                    sql,
                    if sql == "BEGIN" { 0 } else { 44 },
                    CallTimes {
                        c: 0,
                        e: 0,
                        ..times
                    },
                );
            }
            let _ = t.exec(cursor, times);
        }
        r.result
    }

    fn lost(&mut self, client: &Client) -> bool {
        if client.is_closed() {
            self.s
                .fail("the connection to the server was lost".to_string());
            return true;
        }
        false
    }
}

/// Runs session `index` and returns what it measured.
pub async fn run(
    index: usize,
    opts: &RunOptions,
    w: &Workload,
    clock: Clock,
    (live, worker): (&Live, usize),
) -> SessionSummary {
    let mut summary = SessionSummary::new(index);
    // Counts this session in for a tsunami start, whatever happens to it.
    let mut arrival = Mark(&live.arrived, false);
    let mut paused = Mark(&live.paused, false);
    if let ConnectMode::Trickle(gap) = opts.connect {
        tokio::time::sleep(gap * index as u32).await;
    }
    let client = match tokio_postgres::connect(&opts.url, NoTls).await {
        Ok((client, connection)) => {
            tokio::task::spawn_local(connection);
            client
        }
        Err(e) => {
            summary.fail(format!("cannot connect: {}", describe(&e)));
            return summary;
        }
    };
    let trace = opts.trace_dir.as_ref().and_then(|dir| {
        let name = format!("tracelab_run_{index}.trc");
        let f = File::create(dir.join(&name)).ok()?;
        TraceWriter::new(
            f,
            &Header {
                name: &name,
                engine: "postgres",
                side: "client",
                timer: clock.timer().name(),
                // Oracle 12.2+ writes the zone as an offset, not `Z`.
                started: &humantime::format_rfc3339_micros(SystemTime::now())
                    .to_string()
                    .replace('Z', "+00:00"),
            },
        )
        .ok()
    });
    let mut ss = Session {
        trace,
        clock,
        last_end: 0,
        s: summary,
        hist: Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
        parsed: [false; 2],
    };
    ss.s.backend_pid = client
        .query_one("select pg_backend_pid()", &[])
        .await
        .ok()
        .map(|r| r.get::<_, i32>(0));
    let session_start = clock.now();
    ss.last_end = session_start;
    // Every statement prepared once (extended protocol); its trace cursor
    // is its position + 1. The simple protocol sends text each time.
    let mut prepared_stmts = Vec::with_capacity(w.statements.len());
    for (k, st) in w.statements.iter().enumerate() {
        let times = if opts.simple {
            prepared_stmts.push(None);
            CallTimes {
                tim: ss.last_end,
                ..CallTimes::default()
            }
        } else {
            let prepared = ss
                .round_trip(k as u64 + 1, client.prepare(&st.engine_sql))
                .await;
            let times = prepared.times();
            match prepared.result {
                Ok(p) => prepared_stmts.push(Some(p)),
                Err(e) => {
                    ss.s.fail(format!("cannot prepare `{}`: {}", st.sql, describe(&e)));
                    return ss.s;
                }
            }
            times
        };
        if let Some(t) = ss.trace.as_mut() {
            let _ = t.parse(k as u64 + 1, &st.sql, 3, times);
        }
    }
    if opts.connect == ConnectMode::Tsunami {
        // Every session connected and prepared: all start at once.
        arrival.arrive();
        while live.arrived.load(Ordering::Acquire) < opts.sessions {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
    let mut rng = fastrand::Rng::with_seed(0x7ace_1ab0 + index as u64);
    // Each statement walks its own bind rows.
    let mut next_row = vec![0usize; w.statements.len()];
    // With shuffled binds each session walks its own random order of the
    // rows, so that sessions do not run the same values in lockstep.
    let orders: Vec<Vec<usize>> = w
        .statements
        .iter()
        .map(|st| {
            let mut order: Vec<usize> = (0..st.binds.len()).collect();
            if opts.shuffle_binds {
                rng.shuffle(&mut order);
            }
            order
        })
        .collect();
    // Runtime counts from the session's own start (after a tsunami's wait).
    let own_start = if opts.connect == ConnectMode::Tsunami {
        clock.now()
    } else {
        session_start
    };
    let deadline = match opts.stop {
        Stop::Runtime(d) => Some(own_start + d.as_micros() as i64),
        Stop::Transactions(_) => None,
    };
    let end_sql = if opts.rollback { "ROLLBACK" } else { "COMMIT" };
    let per_session_rate = opts
        .rate
        .map(|r| r / opts.sessions as f64)
        .filter(|r| *r > 0.0);
    let mut intended = own_start;
    let mut in_batch = 0u64;
    let mut i = 0usize;
    loop {
        let done = match opts.stop {
            Stop::Transactions(n) => ss.s.transactions + ss.s.errors + ss.s.ignored >= n,
            Stop::Runtime(_) => deadline.is_some_and(|d| clock.now() >= d),
        };
        if done
            || opts
                .interrupt
                .as_ref()
                .is_some_and(|f| f.load(Ordering::Relaxed))
        {
            break;
        }
        if opts.per_commit > 0 && in_batch == 0 {
            if let Err(e) = ss.control(&client, "BEGIN").await {
                ss.s.error(&code_of(&e), describe(&e));
                live.errors.fetch_add(1, Ordering::Relaxed);
                if ss.lost(&client) {
                    break;
                }
                continue;
            }
        }
        // With --rate, calls arrive as a Poisson process: the next one is
        // due an exponential gap after the previous one was due, and its
        // latency counts from when it was due (pgbench's -R), so a driver
        // that falls behind shows it.
        let due = match per_session_rate {
            Some(rate) => {
                intended += (-(1.0 - rng.f64()).ln() / rate * 1e6) as i64;
                let now = clock.now();
                if intended > now {
                    tokio::time::sleep(std::time::Duration::from_micros((intended - now) as u64))
                        .await;
                }
                Some(intended)
            }
            None => None,
        };
        let k = w.pick(i as u64, &mut rng);
        let (st, stmt) = (&w.statements[k], prepared_stmts[k].as_ref());
        let cursor = k as u64 + 1;
        let bind_row = next_row[k];
        next_row[k] += 1;
        let row: Vec<Text<'_>> = if st.binds.is_empty() {
            Vec::new()
        } else {
            st.binds[orders[k][bind_row % st.binds.len()]]
                .iter()
                .map(|v| Text(v.as_deref()))
                .collect()
        };
        let params: Vec<&(dyn ToSql + Sync)> =
            row.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
        let call = async {
            match stmt {
                Some(stmt) => client.query(stmt, &params).await.map(|rows| rows.len()),
                None => {
                    let vals: Vec<Option<&str>> = row.iter().map(|v| v.0).collect();
                    let text = inline_binds(&st.engine_sql, &vals);
                    client.simple_query(&text).await.map(|msgs| {
                        msgs.iter()
                            .filter(|m| matches!(m, SimpleQueryMessage::Row(_)))
                            .count()
                    })
                }
            }
        };
        let r = ss.round_trip(cursor, call).await;
        if let Some(t) = ss.trace.as_mut() {
            let vals: Vec<Option<&str>> = row.iter().map(|v| v.0).collect();
            if !vals.is_empty() {
                let _ = t.binds(cursor, &vals);
            }
            let times = r.times();
            let _ = t.exec(cursor, times);
            if let Ok(rows) = &r.result {
                let _ = t.fetch(
                    cursor,
                    CallTimes {
                        c: 0,
                        e: 0,
                        r: *rows as i64,
                        ..times
                    },
                );
            }
        }
        match r.result {
            Ok(_) => {
                ss.s.executions += 1;
                let latency = r.end - due.unwrap_or(r.start);
                let _ = ss.hist.record(latency.max(1) as u64);
                live.record(worker, latency as u64);
                live.transactions.fetch_add(1, Ordering::Relaxed);
                if opts.per_commit == 0 {
                    ss.s.transactions += 1;
                } else {
                    in_batch += 1;
                }
            }
            Err(e) => {
                let row_no = orders[k]
                    .get(bind_row % st.binds.len().max(1))
                    .map_or(1, |r| r + 1);
                let code = code_of(&e);
                if opts.ignore_errors.contains(&code) {
                    ss.s.ignored += 1;
                } else {
                    ss.s.error(
                        &code,
                        format!("{} (`{}`, bind row {row_no})", describe(&e), st.sql),
                    );
                    live.errors.fetch_add(1, Ordering::Relaxed);
                }
                if ss.lost(&client) {
                    break;
                }
                if opts.per_commit > 0 {
                    // PostgreSQL aborts the transaction: end it and start
                    // the next batch afresh.
                    let _ = ss.control(&client, "ROLLBACK").await;
                    in_batch = 0;
                }
            }
        }
        if opts.per_commit > 0 && in_batch >= opts.per_commit {
            match ss.control(&client, end_sql).await {
                Ok(()) => ss.s.transactions += 1,
                Err(e) => {
                    ss.s.error(&code_of(&e), describe(&e));
                    live.errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            in_batch = 0;
            if ss.lost(&client) {
                break;
            }
        }
        i += 1;
        if !opts.exe_delay.is_zero() {
            tokio::time::sleep(opts.exe_delay).await;
        }
    }
    // A batch left open at the end is ended the way batches end.
    if opts.per_commit > 0
        && in_batch > 0
        && !client.is_closed()
        && ss.control(&client, end_sql).await.is_ok()
    {
        ss.s.transactions += 1;
    }
    ss.s.elapsed_us = ss.last_end - session_start;
    if opts.pause_at_exit.is_some() {
        // Stay connected, so that server statistics of the sessions can be
        // read, until the run is released.
        paused.arrive();
        while !live.released.load(Ordering::Acquire) && !client.is_closed() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
    ss.s.latency = ss.hist;
    if let Some(t) = ss.trace.as_mut() {
        let _ = t.flush();
    }
    ss.s
}

fn code_of(e: &tokio_postgres::Error) -> String {
    e.code().map_or("connection", |c| c.code()).to_string()
}

/// A PostgreSQL error as the user wants it: the server's message and
/// SQLSTATE, never the connection string.
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => match e.source() {
            Some(src) => format!("{e}: {src}"),
            None => e.to_string(),
        },
    }
}

//! One session: connect, prepare, execute until told to stop, measure each
//! call, and trace it. The engine does the round trips (tracelab_engine::conn);
//! everything measured and written is decided here, the same for all.

use std::fs::File;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::SystemTime;

use tracelab_trace::{CallTimes, Header, TraceWriter, WaitLine};

use crate::binds::Shuffle;
use crate::cache::{self, Candidate, ResultCache, Rows, Seen};
use crate::clock::Clock;
use crate::live::Live;
use crate::summary::{SessionSummary, StatementCounts};
use crate::thread_cpu::thread_cpu_nanos;
use crate::workload::Workload;
use crate::{ConnectMode, RunOptions, Stop};
use tracelab_engine::conn::{self as engine, Conn, DbError};
use tracelab_engine::Engine;

/// Trace cursor numbers: the workload's statements are 1..=n; the
/// transaction control statements the session sends itself use these (far
/// above any kit's statement count).
const CURSOR_BEGIN: u64 = 1_000_001;
const CURSOR_END: u64 = 1_000_002;

/// The name of the cursor `--fetch-size` declares.
const FETCH_CURSOR: &str = "tracelab_fetch";

/// How a statement is executed.
enum Plan {
    /// One round trip returns every row.
    Whole(usize),
    /// `--fetch-size`: DECLARE a cursor, FETCH n rows per round trip,
    /// CLOSE it: the round trips an Oracle client with that array size
    /// makes, and what psql's FETCH_COUNT does.
    Cursor {
        declare: usize,
        fetch: String,
        close: String,
    },
}

impl Plan {
    /// The engine's handle of the statement prepared (a cursor's DECLARE).
    fn handle(&self) -> usize {
        match self {
            Plan::Whole(h) => *h,
            Plan::Cursor { declare, .. } => *declare,
        }
    }
}

/// A session between its connection and its end.
struct Session<C> {
    conn: C,
    trace: Option<TraceWriter<File>>,
    clock: Clock,
    /// End of the latest call, µs on the run's clock.
    last_end: i64,
    s: SessionSummary,
    /// Control statements already written to the trace with their text.
    parsed: [bool; 2],
    /// The name of the wait inside a call (see `waited`).
    inner_wait: &'static str,
    /// The two WAIT lines of each cursor traced so far (see `waited`),
    /// rendered once, by the cursor's slot.
    waits: Vec<Option<[WaitLine; 2]>>,
    /// The latest execution failed because its prepared plan went stale
    /// (engine::Conn::stale_plan): when that call started.
    stale: Option<i64>,
}

/// One measured round trip.
struct Timed<T> {
    result: Result<T, DbError>,
    /// When the call started and ended (the latency the summary counts).
    start: i64,
    end: i64,
    /// The call as its trace lines give it (see [`traced_span`]).
    traced: (i64, i64),
}

impl<T> Timed<T> {
    /// The call's times as a trace line writes them (no rows, top level).
    fn times(&self) -> CallTimes {
        let (start, cpu) = self.traced;
        CallTimes {
            c: cpu,
            e: self.end - start,
            r: 0,
            dep: 0,
            tim: self.end,
        }
    }
}

/// The start and CPU a call's trace lines give it, so that its accounting
/// closes exactly: `e` is `tim` minus the start (both whole µs of the same
/// clock), and `c` is never more than `e`.
///
/// The call's CPU (see `CpuTimed`) also holds the thread's work just
/// before the call's clock read (the runtime's wake-up, the session's
/// bookkeeping): written as it was, `c` exceeded `e` and a profile showed
/// negative time "unaccounted-for within calls". That work is the call's
/// own, so the call is traced as starting when it began, as far back as
/// the end of the session's previous call (the 'SQL*Net message from
/// client' before it is shorter by as much); CPU that does not fit even
/// then (another session's on a shared thread) is left out of `c`.
fn traced_span(last_end: i64, start: i64, end: i64, cpu: i64) -> (i64, i64) {
    let start = start.min(end - cpu).max(last_end.min(start));
    (start, cpu.clamp(0, end - start))
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

thread_local! {
    /// The worker thread's CPU clock (ns) at the end of the latest
    /// measured poll on it; -1 before the first.
    static LAST_CPU: std::cell::Cell<i64> = const { std::cell::Cell::new(-1) };
}

/// A future that adds up the worker thread's CPU over its polls: the
/// client's CPU for one call, even when many sessions share a thread.
///
/// Each poll reads the thread's CPU clock once, at its end, and counts
/// from the previous measured poll's end on the thread. So a call's `c`
/// holds its own work (the encoding and the send, where the kernel does
/// most of a round trip's work; reading and parsing the reply) and what
/// the thread did just before its polls (the runtime's wake-up, the
/// session's bookkeeping), and the calls of all sessions on a thread add
/// up to the thread's CPU. The read is cheap: a system call only after the
/// thread was switched out (see thread_cpu.rs).
struct CpuTimed<'a, F> {
    inner: Pin<&'a mut F>,
    measure: bool,
    /// The call's CPU so far, ns.
    cpu: i64,
}

impl<F: Future> Future for CpuTimed<'_, F> {
    type Output = (F::Output, i64);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let r = self.inner.as_mut().poll(cx);
        if self.measure {
            let now = thread_cpu_nanos();
            let before = LAST_CPU.with(|last| last.replace(now));
            if before >= 0 {
                self.cpu += now - before;
            }
        }
        r.map(|out| (out, self.cpu / 1000))
    }
}

/// Runs one round trip of `call` on the connection, measured; in the
/// trace, the time since the previous call becomes the wait before it:
/// the time the session spent outside the database, which Oracle's server
/// side names 'SQL*Net message from client'.
macro_rules! round_trip {
    ($ss:expr, $cursor:expr, |$c:ident| $call:expr) => {{
        let tracing = $ss.trace.is_some();
        let start = $ss.clock.now();
        let (result, cpu) = {
            let $c = &mut $ss.conn;
            let call = std::pin::pin!($call);
            CpuTimed {
                inner: call,
                measure: tracing,
                cpu: 0,
            }
            .await
        };
        let end = $ss.clock.now();
        let traced = traced_span($ss.last_end, start, end, cpu);
        $ss.waited($cursor, traced.0, end, traced.1);
        Timed {
            result,
            start,
            end,
            traced,
        }
    }};
}

impl<C: Conn> Session<C> {
    /// The settings not sent at connection, each with `set`; false (the
    /// session failed, said in its summary) when one is refused.
    async fn apply_settings(&mut self, opts: &RunOptions, engine: Engine) -> bool {
        let at_connect = startup_settings(opts, engine);
        for (name, value) in opts.settings.iter().skip(at_connect.len()) {
            if let Err(e) = self.conn.set(name, value).await {
                self.s.fail_with(
                    &e.code,
                    format!("cannot set {name} = {value}: {}", e.message),
                );
                return false;
            }
        }
        true
    }

    /// Every statement of the workload prepared once (a cursor's DECLARE
    /// with `--fetch-size`, but not for a query the cache takes), each
    /// PARSE traced; `None` (the session failed, said in its summary)
    /// when one is refused.
    async fn prepare_all(
        &mut self,
        opts: &RunOptions,
        w: &Workload,
        caching: bool,
        candidates: &[Candidate],
    ) -> Option<Vec<Plan>> {
        let cursors = opts.fetch_size > 0 && self.conn.cursors();
        let mut plans = Vec::with_capacity(w.statements.len());
        for (k, st) in w.statements.iter().enumerate() {
            let cursor = k as u64 + 1;
            let cached = caching && candidates[k] == Candidate::Query;
            let prepared = if cursors && is_query(&st.sql) && !cached {
                let declare = format!(
                    "DECLARE {FETCH_CURSOR} NO SCROLL CURSOR FOR {}",
                    st.engine_sql
                );
                let fetch = format!("FETCH FORWARD {} FROM {FETCH_CURSOR}", opts.fetch_size);
                let close = format!("CLOSE {FETCH_CURSOR}");
                let r = round_trip!(self, cursor, |c| async {
                    Ok(Plan::Cursor {
                        declare: c.prepare(&declare).await?,
                        fetch,
                        close,
                    })
                });
                (r.times(), r.result)
            } else {
                let r = round_trip!(self, cursor, |c| c.prepare(&st.engine_sql));
                (r.times(), r.result.map(Plan::Whole))
            };
            match prepared {
                (times, Ok(plan)) => {
                    plans.push(plan);
                    if let Some(t) = self.trace.as_mut() {
                        let _ = t.parse(cursor, &st.sql, 3, times);
                    }
                }
                (_, Err(e)) => {
                    self.s
                        .fail_with(&e.code, shown(&st.sql, &e.message, "cannot prepare", ""));
                    return None;
                }
            }
        }
        Some(plans)
    }

    /// The session's end: a pause until the run is released
    /// (`pause_at_exit`), its latencies merged, its trace flushed, its
    /// connection closed.
    async fn finish(
        mut self,
        opts: &RunOptions,
        live: &Live,
        mut paused: Mark<'_>,
        trace_path: Option<std::path::PathBuf>,
    ) -> SessionSummary {
        if opts.pause_at_exit.is_some() {
            // Stay connected, so that server statistics of the sessions can be
            // read, until the run is released.
            paused.arrive();
            let interrupted = || {
                opts.interrupt
                    .as_ref()
                    .is_some_and(|f| f.load(Ordering::Relaxed))
            };
            while !live.released.load(Ordering::Acquire) && !self.conn.is_closed() && !interrupted()
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
        // The session's latencies are its statements' together: one
        // histogram recorded per call, merged once here.
        for st in &self.s.statements {
            let _ = self.s.latency.add(&st.latency);
        }
        if opts.per_commit == 0 {
            // In autocommit each statement that succeeded is a transaction,
            // with the statement's own latency: the same histogram, not
            // recorded twice in the loop.
            self.s.tx_latency = self.s.latency.clone();
        }
        if let Some(t) = self.trace.as_mut() {
            // Every write of the session loop lands here: the first that
            // failed (a full disk) is reported once, naming the file.
            if let Err(e) = t.flush() {
                self.s.trace_error = Some(format!(
                    "{}: {e} (the trace is incomplete)",
                    trace_path
                        .as_ref()
                        .map_or(String::new(), |p| p.display().to_string())
                ));
            }
        }
        let Session { conn, s, .. } = self;
        conn.close().await;
        s
    }

    /// Writes the waits around a call that ran from `start` to `end` using
    /// `cpu` of the client's CPU: before it, the time since the previous
    /// call ('SQL*Net message from client', the session outside the
    /// database); inside it, the time the client waited for the database
    /// ('SQL*Net message from dblink', Oracle's name for a session waiting
    /// on a remote database; for SQLite, in process, the call's time off
    /// the CPU: its I/O and lock waits). So `tracelab skew`'s default profile, which
    /// counts a call's CPU `c` and the waits (mrskew's `$af`), adds up to
    /// the session's elapsed time and shows where it went.
    fn waited(&mut self, cursor: u64, start: i64, end: i64, cpu: i64) {
        if let Some(t) = self.trace.as_mut() {
            // BEGIN and COMMIT/ROLLBACK in slots 0 and 1, statement k in k + 1.
            let slot = match cursor {
                CURSOR_BEGIN.. => (cursor - CURSOR_BEGIN) as usize,
                _ => cursor as usize + 1,
            };
            if self.waits.len() <= slot {
                self.waits.resize(slot + 1, None);
            }
            let inner_wait = self.inner_wait;
            let [before, inside] = self.waits[slot].get_or_insert_with(|| {
                const PARAMS: [(&str, i64); 3] = [("driver id", 0), ("#bytes", 1), ("p3", 0)];
                [
                    WaitLine::new(cursor, "SQL*Net message from client", PARAMS),
                    WaitLine::new(cursor, inner_wait, PARAMS),
                ]
            });
            let _ = t.wait_line(before, start - self.last_end, start);
            let _ = t.wait_line(inside, (end - start - cpu).max(0), end);
        }
        self.last_end = end;
    }

    /// Sends BEGIN, COMMIT or ROLLBACK; traced as an EXEC of its own
    /// cursor, a commit or rollback preceded by XCTEND as Oracle writes it.
    /// Returns when the call started and ended.
    async fn control(&mut self, sql: &'static str) -> Result<(i64, i64), DbError> {
        let (cursor, slot) = if sql == "BEGIN" {
            (CURSOR_BEGIN, 0)
        } else {
            (CURSOR_END, 1)
        };
        let r = round_trip!(self, cursor, |c| c.batch(sql));
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
            trace_error(t, cursor, &r.result, r.end);
        }
        r.result.map(|()| (r.start, r.end))
    }

    /// Executes statement `cursor` by its plan: BINDS and EXEC, then one
    /// FETCH per round trip that brought rows (and a CLOSE for a cursor).
    /// Returns when it started and ended.
    async fn execute(
        &mut self,
        cursor: u64,
        plan: &Plan,
        binds: &[Option<&str>],
        fetch_size: u32,
    ) -> Result<(i64, i64), DbError> {
        let (first, later) = match plan {
            Plan::Whole(h) => (*h, None),
            Plan::Cursor {
                declare,
                fetch,
                close,
            } => (*declare, Some((fetch, close))),
        };
        let r = round_trip!(self, cursor, |c| c.execute(first, binds));
        self.stale = (r.result.is_err() && self.conn.stale_plan()).then_some(r.start);
        let start = r.start;
        // With a cursor, the rows come with the FETCHes below.
        let rows = match (&r.result, later) {
            (Ok(n), None) => Some(*n),
            _ => None,
        };
        self.trace_exec(cursor, binds, r.times(), rows);
        if let Some(t) = self.trace.as_mut() {
            trace_error(t, cursor, &r.result, r.end);
        }
        r.result?;
        let Some((fetch, close)) = later else {
            return Ok((start, self.last_end));
        };
        loop {
            let f = round_trip!(self, cursor, |c| c.query_text(fetch));
            let rows = f.result.as_ref().map_or(0, |n| *n);
            if let Some(t) = self.trace.as_mut() {
                let _ = t.fetch(
                    cursor,
                    CallTimes {
                        r: rows as i64,
                        ..f.times()
                    },
                );
                trace_error(t, cursor, &f.result, f.end);
            }
            f.result?;
            if rows < fetch_size as u64 {
                break;
            }
        }
        let c = round_trip!(self, cursor, |c| c.query_text(close));
        if let Some(t) = self.trace.as_mut() {
            let _ = t.close(cursor, c.times());
            trace_error(t, cursor, &c.result, c.end);
        }
        c.result?;
        Ok((start, self.last_end))
    }

    /// Traces an execution: its BINDS, its EXEC, and a FETCH of the rows it
    /// brought back in the same round trip (`rows`), as Oracle writes a
    /// fetch that took no time of its own.
    fn trace_exec(
        &mut self,
        cursor: u64,
        binds: &[Option<&str>],
        times: CallTimes,
        rows: Option<u64>,
    ) {
        let Some(t) = self.trace.as_mut() else {
            return;
        };
        if !binds.is_empty() {
            let _ = t.binds(cursor, binds);
        }
        let _ = t.exec(cursor, times);
        if let Some(rows) = rows {
            let _ = t.fetch(
                cursor,
                CallTimes {
                    c: 0,
                    e: 0,
                    r: rows as i64,
                    ..times
                },
            );
        }
    }

    /// Executes a prepared statement in one round trip and returns its
    /// rows' values too (for the result cache); traced as `execute` is.
    async fn execute_rows(
        &mut self,
        cursor: u64,
        handle: usize,
        binds: &[Option<&str>],
    ) -> Result<(i64, i64, Rows), DbError> {
        let r = round_trip!(self, cursor, |c| c.fetch_rows(handle, binds));
        self.stale = (r.result.is_err() && self.conn.stale_plan()).then_some(r.start);
        let rows = r.result.as_ref().ok().map(|rows| rows.len() as u64);
        self.trace_exec(cursor, binds, r.times(), rows);
        if let Some(t) = self.trace.as_mut() {
            trace_error(t, cursor, &r.result, r.end);
        }
        let rows = r.result?;
        Ok((r.start, r.end, rows))
    }

    /// Prepares statement `cursor` (engine handle `handle`) again after
    /// its plan went stale, as the PostgreSQL JDBC driver does on 0A000
    /// "cached plan must not change result type": traced as a PARSE of
    /// the cursor (Oracle writes a hard parse again after an
    /// invalidation), counted in the summary.
    async fn reprepare(&mut self, cursor: u64, handle: usize, sql: &str) -> Result<(), DbError> {
        let r = round_trip!(self, cursor, |c| c.reprepare(handle));
        if let Some(t) = self.trace.as_mut() {
            let _ = t.parse(cursor, sql, 3, r.times());
            trace_error(t, cursor, &r.result, r.end);
        }
        if r.result.is_ok() {
            self.s.reprepares += 1;
        }
        r.result
    }

    fn lost(&mut self) -> bool {
        if self.conn.is_closed() {
            self.s
                .fail("the connection to the server was lost".to_string());
            return true;
        }
        false
    }
}

/// After the line of a call that failed, Oracle's `ERROR #c:err=N tim=T`
/// with the engine's code (SQLSTATE, MariaDB error number, SQLite result
/// code), as the proxy writes it: so a profile counts the errors, and the
/// failed call's time stays in its EXEC (or FETCH) line. Failures found by
/// the client get the SQLSTATE that says so: 08006 (connection failure)
/// for a lost connection, 07001 (wrong number of parameters) for bind
/// values that do not fit the statement, HY000 otherwise.
fn trace_error<T>(t: &mut TraceWriter<File>, cursor: u64, r: &Result<T, DbError>, tim: i64) {
    let Err(e) = r else { return };
    let code = match e.code.as_str() {
        c if is_engine_code(c) => c,
        "connection" => "08006",
        "binds" => "07001",
        _ => "HY000",
    };
    let _ = t.error(cursor, code, tim);
}

/// Whether an error code is the engine's own (a SQLSTATE, an error or
/// result number) rather than one the driver made up (`connection`).
/// The settings a session's connection takes in its startup packet (see
/// `RunOptions::settings_at_connect`): all of them or none; the session
/// sets the others once connected.
fn startup_settings(opts: &RunOptions, engine: Engine) -> &[(String, String)] {
    if opts.settings_at_connect && engine == Engine::Postgres {
        &opts.settings
    } else {
        &[]
    }
}

fn is_engine_code(code: &str) -> bool {
    let c = code.as_bytes();
    (!c.is_empty() && c.iter().all(u8::is_ascii_digit))
        || (c.len() == 5
            && c.iter()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()))
}

/// Runs session `index` and returns what it measured.
pub async fn run(
    index: usize,
    opts: &RunOptions,
    w: &Workload,
    clock: Clock,
    (live, worker): (&Live, usize),
    cache: Option<&ResultCache>,
    trace_first: usize,
) -> SessionSummary {
    let mut summary = SessionSummary::new(index);
    // Counts this session in for a tsunami start and the pause at exit,
    // whatever happens to it.
    let marks = (Mark(&live.arrived, false), Mark(&live.paused, false));
    if let ConnectMode::Trickle(gap) = opts.connect {
        tokio::time::sleep(gap * index as u32).await;
    }
    let engine = match Engine::of_url(&opts.url) {
        Ok(e) => e,
        Err(e) => {
            summary.fail(e.to_string());
            return summary;
        }
    };
    let env = Env {
        index,
        opts,
        w,
        clock,
        live,
        worker,
        engine,
        cache,
        trace_first,
    };
    let connected = match engine {
        Engine::Postgres => match engine::postgres::connect_with(
            &opts.url,
            opts.simple,
            startup_settings(opts, engine),
        )
        .await
        {
            Ok(c) => return drive(c, env, summary, marks).await,
            Err(e) => e,
        },
        Engine::Mysql => match engine::mysql::connect(&opts.url, opts.simple).await {
            Ok(c) => return drive(c, env, summary, marks).await,
            Err(e) => e,
        },
        Engine::Sqlite => match engine::sqlite::connect(&opts.url) {
            Ok(c) => return drive(c, env, summary, marks).await,
            Err(e) => e,
        },
    };
    // One message per cause, naming the target (never its password); the
    // failed connection counts as an error, with the server's SQLSTATE
    // when it refused the login, else 08001 (unable to connect).
    let code = if is_engine_code(&connected.code) {
        connected.code.as_str()
    } else {
        "08001"
    };
    summary.fail_with(
        code,
        format!(
            "cannot connect to {}: {}",
            opts.shown_url(),
            connected.message
        ),
    );
    summary
}

/// A session's tallies, kept in its summary as its calls end.
impl SessionSummary {
    /// Whether the session is to stop: its count of transactions reached
    /// (errors and ignored ones count), its runtime over at `now`, or the
    /// run interrupted.
    #[inline]
    fn done(&self, opts: &RunOptions, deadline: Option<i64>, now: i64) -> bool {
        let done = match opts.stop {
            Stop::Transactions(n) => self.transactions + self.errors + self.ignored >= n,
            Stop::Runtime(_) => deadline.is_some_and(|d| now >= d),
        };
        done || opts
            .interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Statement `k` executed, started at `start`, its latency counted from
    /// when it was due (`due`, with `--rate`) or started.
    #[inline]
    fn executed(&mut self, k: usize, start: i64, latency: i64, due: Option<i64>) {
        self.executions += 1;
        if let Some(due) = due {
            // pgbench's schedule lag: how late the call started.
            let _ = self.lag.record((start - due).max(0) as u64);
        }
        let counts = &mut self.statements[k];
        counts.executions += 1;
        let _ = counts.latency.record(latency.max(1) as u64);
    }

    /// A transaction is counted: it began at `tx_start` (its BEGIN's
    /// start) and the call that ended it (its COMMIT) ran from `start` to
    /// `end`; the latency of both is recorded.
    fn committed(&mut self, tx_start: i64, (start, end): (i64, i64)) {
        self.transactions += 1;
        let _ = self.tx_latency.record((end - tx_start).max(1) as u64);
        let _ = self.commit_latency.record((end - start).max(1) as u64);
    }

    /// Statement `k` (`sql`, with bind row `row_no`) failed with `e`:
    /// ignored (`--ignore-errors`), or counted and said.
    fn failed_call(
        &mut self,
        opts: &RunOptions,
        k: usize,
        e: &DbError,
        sql: &str,
        row_no: usize,
        live: &Live,
    ) {
        if opts.ignore_errors.contains(&e.code) {
            self.ignored += 1;
        } else {
            self.statements[k].errors += 1;
            self.error(
                &e.code,
                shown(sql, &e.message, "", &format!("bind row {row_no}")),
            );
            live.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What a session is given besides its connection.
#[derive(Clone, Copy)]
struct Env<'a> {
    index: usize,
    opts: &'a RunOptions,
    w: &'a Workload,
    clock: Clock,
    live: &'a Live,
    worker: usize,
    engine: Engine,
    cache: Option<&'a ResultCache>,
    /// The number of the run's first trace file (see traces.rs).
    trace_first: usize,
}

/// A transaction ended: what it wrote is visible to all (or gone), so the
/// cache drops it again and the session's queries use the cache again.
fn end_of_transaction(cache: Option<&ResultCache>, written: &mut Option<Vec<String>>) {
    if let (Some(c), Some(names)) = (cache, written.take()) {
        c.invalidate_names(&names);
    }
}

/// An error about statement `sql` as the summary shows it, a password in
/// the statement masked there and in the server's message
/// (tracelab_trace's redaction, the proxy's too).
fn shown(sql: &str, message: &str, before: &str, after: &str) -> String {
    let message = tracelab_trace::redact_message(message, sql);
    let sql = tracelab_trace::redact_sql(sql);
    if before.is_empty() {
        format!("{message} (`{sql}`, {after})")
    } else {
        format!("{before} `{sql}`: {message}")
    }
}

/// Hands a result to `RunOptions::on_result`, if set.
fn seen(
    opts: &RunOptions,
    session: usize,
    cursor: u64,
    binds: &[Option<&str>],
    rows: &Rows,
    cached: bool,
) {
    if let Some(hook) = &opts.on_result {
        (hook.0)(&Seen {
            session,
            cursor,
            binds,
            rows,
            cached,
            at: std::time::Instant::now(),
        });
    }
}

/// Whether a statement returns rows a cursor can fetch (its first word is
/// SELECT, WITH, VALUES or TABLE, after comments and parentheses).
fn is_query(sql: &str) -> bool {
    let mut s = sql.trim_start();
    loop {
        if let Some(rest) = s.strip_prefix("--") {
            s = rest.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if let Some(rest) = s.strip_prefix("/*") {
            s = rest.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else if let Some(rest) = s.strip_prefix('(') {
            s = rest.trim_start();
        } else {
            break;
        }
    }
    let word: String = s
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_lowercase();
    matches!(word.as_str(), "select" | "with" | "values" | "table")
}

/// What a session's loop works with, fixed once it is connected and has
/// prepared its statements.
struct Work<'a> {
    /// What the session was given.
    env: Env<'a>,
    /// What each statement is to the result cache, by its text.
    candidates: Vec<Candidate>,
    plans: Vec<Plan>,
    /// COMMIT, or ROLLBACK with `--rollback`: how a transaction ends.
    end_sql: &'static str,
    /// With `--runtime`: when the session stops, µs on the run's clock.
    deadline: Option<i64>,
    /// With `--rate`: this session's share of it.
    rate: Option<f64>,
    /// Think time or a rate: the session waits between calls.
    paced: bool,
}

impl Work<'_> {
    /// Whether statement `k` runs in a transaction of its own that the
    /// session opens and ends around it: a cursor lives in a transaction,
    /// so in autocommit each cursor query gets one, as psql's FETCH_COUNT
    /// does.
    fn wrapped(&self, k: usize) -> bool {
        self.env.opts.per_commit == 0 && matches!(self.plans[k], Plan::Cursor { .. })
    }
}

/// What a session's loop carries from one call to the next.
struct Walk {
    rng: fastrand::Rng,
    /// Per statement, the position of its next bind row in its walk.
    next_row: Vec<usize>,
    /// With shuffled binds each session walks its own random order of the
    /// rows, so that sessions do not run the same values in lockstep: an
    /// order computed row by row, not a copy per session (crate::binds).
    orders: Vec<Option<Shuffle>>,
    /// With `--rate`: when the latest call was due.
    intended: i64,
    pacer: Option<crate::pace::Pacer>,
    /// Statements done in the open transaction (`--tx-per-commit`).
    in_batch: u64,
    /// When the open transaction's BEGIN started.
    tx_start: i64,
    /// Turns of the loop: the statement picked follows it.
    turn: u64,
    /// End of the latest cache hit (hits leave `last_end` alone: they are
    /// not calls to the server).
    hit_end: i64,
    /// Names of tables this session's open transaction wrote (None: none):
    /// its queries bypass the cache until it ends.
    written: Option<Vec<String>>,
}

impl Walk {
    /// The bind row at position `n` of statement `k`'s walk.
    fn row_at(&self, w: &Workload, k: usize, n: usize) -> usize {
        let n = n % w.statements[k].binds.len().max(1);
        self.orders[k].as_ref().map_or(n, |s| s.at(n))
    }
}

/// One statement's call as the loop made it.
struct Call {
    k: usize,
    /// Its position in the statement's walk of bind rows.
    bind_row: usize,
    /// When it was due (`--rate`).
    due: Option<i64>,
    /// In a transaction of its own (see `Work::wrapped`).
    wrapped: bool,
    /// When the loop took it up: a cache hit's and a wrapped query's
    /// latency count from here.
    began: i64,
    /// It went through the result cache.
    through_cache: bool,
}

/// The session on its connection: its settings, its statements prepared,
/// the loop of calls (`Session::work`), a batch left open ended, and its
/// end (`Session::finish`).
async fn drive<C: Conn>(
    conn: C,
    env: Env<'_>,
    summary: SessionSummary,
    (mut arrival, paused): (Mark<'_>, Mark<'_>),
) -> SessionSummary {
    let Env {
        index,
        opts,
        w,
        clock,
        live,
        worker: _,
        engine,
        cache,
        trace_first,
    } = env;
    let mut summary = summary;
    let (trace_path, trace) = open_trace(opts, engine, clock, trace_first + index, &mut summary);
    let mut ss = Session {
        conn,
        trace,
        clock,
        last_end: 0,
        s: summary,
        parsed: [false; 2],
        stale: None,
        inner_wait: if engine.blocks() {
            "SQLite I/O or lock wait"
        } else {
            "SQL*Net message from dblink"
        },
        waits: Vec::new(),
    };
    ss.s.backend_pid = ss.conn.backend_id().and_then(|id| i32::try_from(id).ok());
    if !ss.apply_settings(opts, engine).await {
        ss.conn.close().await;
        return ss.s;
    }
    // What each statement is to the result cache, by its text; which
    // queries are served from it the invalidation channel decides, from
    // the catalog (crate::resolve).
    let candidates: Vec<Candidate> = w
        .statements
        .iter()
        .map(|st| cache::candidate(&st.sql, is_query(&st.sql)))
        .collect();
    let session_start = clock.now();
    ss.last_end = session_start;
    // Every statement prepared once; its trace cursor is its position + 1.
    let Some(plans) = ss.prepare_all(opts, w, cache.is_some(), &candidates).await else {
        ss.conn.close().await;
        return ss.s;
    };
    if opts.connect == ConnectMode::Tsunami {
        // Every session connected and prepared: all start at once.
        arrival.arrive();
        while live.arrived.load(Ordering::Acquire) < opts.sessions {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
    let mut rng = fastrand::Rng::with_seed(0x7ace_1ab0 + index as u64);
    let orders: Vec<Option<Shuffle>> = w
        .statements
        .iter()
        .map(|st| {
            (opts.shuffle_binds && st.binds.len() > 1)
                .then(|| Shuffle::new(st.binds.len(), &mut rng))
        })
        .collect();
    ss.s.statements = w
        .statements
        .iter()
        .map(|_| StatementCounts::new())
        .collect();
    // Runtime counts from the session's own start (after a tsunami's wait).
    let own_start = if opts.connect == ConnectMode::Tsunami {
        clock.now()
    } else {
        session_start
    };
    let rate = opts
        .rate
        .map(|r| r / opts.sessions as f64)
        .filter(|r| *r > 0.0);
    let work = Work {
        env,
        candidates,
        plans,
        end_sql: if opts.rollback { "ROLLBACK" } else { "COMMIT" },
        deadline: match opts.stop {
            Stop::Runtime(d) => Some(own_start + d.as_micros() as i64),
            Stop::Transactions(_) => None,
        },
        rate,
        paced: !opts.exe_delay.is_zero() || rate.is_some(),
    };
    let mut walk = Walk {
        rng,
        next_row: vec![0usize; w.statements.len()],
        orders,
        intended: own_start,
        pacer: rate.map(|_| crate::pace::Pacer::new()),
        in_batch: 0,
        tx_start: 0,
        turn: 0,
        hit_end: 0,
        written: None,
    };
    ss.work(&work, &mut walk).await;
    // A batch left open at the end is ended the way batches end.
    if opts.per_commit > 0 && walk.in_batch > 0 && !ss.conn.is_closed() {
        if let Ok(call) = ss.control(work.end_sql).await {
            ss.s.committed(walk.tx_start, call);
        }
    }
    // Cache hits count: they are the session's work too.
    ss.s.elapsed_us = ss.last_end.max(walk.hit_end) - session_start;
    ss.finish(opts, live, paused, trace_path).await
}

/// The session's loop: a call after another until told to stop.
impl<C: Conn> Session<C> {
    async fn work<'a>(&mut self, work: &Work<'a>, walk: &mut Walk) {
        let (opts, live) = (work.env.opts, work.env.live);
        let mut values: Vec<Option<&'a str>> = Vec::new();
        loop {
            // Flat out, the end of the latest call is "now" closely enough:
            // one clock read per call saved (they add up at 80,000 calls/s).
            let now = if work.paced {
                work.env.clock.now()
            } else {
                self.last_end.max(walk.hit_end)
            };
            if self.s.done(opts, work.deadline, now) {
                break;
            }
            if opts.per_commit > 0 && walk.in_batch == 0 {
                match self.control("BEGIN").await {
                    Ok((start, _)) => walk.tx_start = start,
                    Err(e) => {
                        self.s.error(&e.code, e.message);
                        live.errors.fetch_add(1, Ordering::Relaxed);
                        if self.lost() {
                            break;
                        }
                        continue;
                    }
                }
            }
            // With --rate, calls arrive as a Poisson process: the next one is
            // due an exponential gap after the previous one was due, and its
            // latency counts from when it was due (pgbench's -R), so a driver
            // that falls behind shows it.
            let due = match (work.rate, walk.pacer.as_mut()) {
                (Some(rate), Some(pacer)) => {
                    walk.intended += (-(1.0 - walk.rng.f64()).ln() / rate * 1e6) as i64;
                    pacer.sleep_until(&work.env.clock, walk.intended).await;
                    Some(walk.intended)
                }
                _ => None,
            };
            let k = work.env.w.pick(walk.turn, &mut walk.rng);
            let st = &work.env.w.statements[k];
            let bind_row = walk.next_row[k];
            walk.next_row[k] += 1;
            values.clear();
            if !st.binds.is_empty() {
                values.extend(st.binds.row(walk.row_at(work.env.w, k, bind_row)));
            }
            let wrapped = work.wrapped(k);
            let mut call = Call {
                k,
                bind_row,
                due,
                wrapped,
                // Only a cache hit and a wrapped cursor query count their
                // latency from here; a plain call from its own round trip's
                // start.
                began: if wrapped || work.env.cache.is_some() {
                    work.env.clock.now()
                } else {
                    0
                },
                through_cache: false,
            };
            let r = self.make_call(work, walk, &mut call, &values).await;
            let r = self.retry_stale(work, &call, &values, r).await;
            if !self.tally(work, walk, &call, r).await {
                break;
            }
            if opts.per_commit > 0 && walk.in_batch >= opts.per_commit {
                match self.control(work.end_sql).await {
                    Ok(ended) => self.s.committed(walk.tx_start, ended),
                    Err(e) => {
                        self.s.error(&e.code, e.message);
                        live.errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
                walk.in_batch = 0;
                end_of_transaction(work.env.cache, &mut walk.written);
                if self.lost() {
                    break;
                }
            }
            walk.turn += 1;
            if !opts.exe_delay.is_zero() {
                tokio::time::sleep(opts.exe_delay).await;
            }
        }
    }

    /// Makes `call`: through the result cache (a hit, or a miss that
    /// brings the rows), or to the server by the statement's plan (in a
    /// transaction of its own when wrapped). Returns when it started and
    /// ended.
    async fn make_call(
        &mut self,
        work: &Work<'_>,
        walk: &mut Walk,
        call: &mut Call,
        values: &[Option<&str>],
    ) -> Result<(i64, i64), DbError> {
        let (opts, k) = (work.env.opts, call.k);
        let st = &work.env.w.statements[k];
        let cursor = k as u64 + 1;
        // A query the cache may take goes through it; one it may not
        // (now: the channel decides, see crate::resolve) still brings its
        // rows, for `on_result`.
        let cached = match (work.env.cache, &work.plans[k]) {
            (Some(c), &Plan::Whole(h)) if work.candidates[k] == Candidate::Query => {
                Some((c, c.plan(k), h))
            }
            _ => None,
        };
        call.through_cache = cached.is_some();
        if let Some((c, plan, handle)) = cached {
            // A hit costs no round trip and leaves no trace: the trace
            // shows only what reached the server.
            let key = cache::key(&st.sql, values, &opts.settings);
            // The session's open transaction wrote: it must see its own
            // change, which no one else may see yet.
            let bypass = walk.written.is_some();
            // Results are kept and served only while the invalidation
            // channel vouches for freshness.
            let serving = plan.is_some() && c.serving(call.began) && !bypass;
            let hit = if serving { c.find(&key) } else { None };
            if let Some(rows) = hit {
                seen(opts, work.env.index, cursor, values, &rows, true);
                let end = work.env.clock.now();
                walk.hit_end = end;
                // A hit awaits nothing: yield, or a session serving
                // itself from memory would starve the others of its
                // thread (and their connections' I/O).
                tokio::task::yield_now().await;
                return Ok((call.began, end));
            }
            let before = plan
                .as_ref()
                .map(|(state, tables)| state.generations(tables));
            let (start, end, rows) = self.execute_rows(cursor, handle, values).await?;
            seen(opts, work.env.index, cursor, values, &rows, false);
            if let (true, Some((state, tables)), Some(before)) = (serving, plan, before) {
                c.create(key, rows, &state, tables, &before);
            }
            return Ok((start, end));
        }
        let mut r = if call.wrapped {
            self.control("BEGIN").await.map(|_| (0, 0))
        } else {
            Ok((0, 0))
        };
        if r.is_ok() {
            r = self
                .execute(cursor, &work.plans[k], values, opts.fetch_size)
                .await;
        }
        if call.wrapped {
            r = match r {
                Ok((start, _)) => self.control(work.end_sql).await.map(|ended| {
                    // Counted as a transaction, with its COMMIT, if the
                    // call stands (see `tally`).
                    let _ = self
                        .s
                        .commit_latency
                        .record((ended.1 - ended.0).max(1) as u64);
                    (start, ended.1)
                }),
                Err(e) => {
                    let _ = self.control("ROLLBACK").await;
                    Err(e)
                }
            };
        }
        // A session's own change invalidates at once (DDL: every entry);
        // in an open transaction its queries bypass the cache.
        if let (Ok(_), Candidate::Write { ddl, names }, Some(c)) =
            (&r, &work.candidates[k], work.env.cache)
        {
            if *ddl {
                c.invalidate_all();
            } else {
                c.invalidate_names(names);
            }
            if opts.per_commit > 0 {
                walk.written
                    .get_or_insert_with(Vec::new)
                    .extend(names.iter().cloned());
            }
        }
        r
    }

    /// A plan gone stale (a column's type altered during the run):
    /// prepared again, as JDBC does. In autocommit the call is made again,
    /// once, and its latency counts from the failed attempt; in a
    /// transaction (aborted by the error) it counts as an error, and the
    /// statement is prepared again after the rollback (`tally`).
    async fn retry_stale(
        &mut self,
        work: &Work<'_>,
        call: &Call,
        values: &[Option<&str>],
        r: Result<(i64, i64), DbError>,
    ) -> Result<(i64, i64), DbError> {
        let Some(first_start) = self.stale.filter(|_| r.is_err()) else {
            self.stale = None;
            return r;
        };
        if work.env.opts.per_commit > 0 || call.wrapped {
            return r;
        }
        self.stale = None;
        let (k, st) = (call.k, &work.env.w.statements[call.k]);
        let cursor = k as u64 + 1;
        let handle = work.plans[k].handle();
        if self.reprepare(cursor, handle, &st.sql).await.is_err() {
            return r;
        }
        let again = if call.through_cache {
            self.execute_rows(cursor, handle, values)
                .await
                .map(|(_, end, rows)| {
                    seen(work.env.opts, work.env.index, cursor, values, &rows, false);
                    (first_start, end)
                })
        } else {
            self.execute(cursor, &work.plans[k], values, work.env.opts.fetch_size)
                .await
                .map(|(_, end)| (first_start, end))
        };
        self.stale = None;
        again
    }

    /// Counts `call`'s outcome `r`: its latency, or its error (a
    /// transaction aborted by it rolled back, a stale plan prepared
    /// again). False when the connection is lost.
    async fn tally(
        &mut self,
        work: &Work<'_>,
        walk: &mut Walk,
        call: &Call,
        r: Result<(i64, i64), DbError>,
    ) -> bool {
        let (opts, live, k) = (work.env.opts, work.env.live, call.k);
        match r {
            Ok((start, end)) => {
                let start = if call.wrapped { call.began } else { start };
                let latency = end - call.due.unwrap_or(start);
                self.s.executed(k, start, latency, call.due);
                live.record(work.env.worker, latency as u64);
                live.transactions.fetch_add(1, Ordering::Relaxed);
                if opts.per_commit == 0 {
                    // In autocommit the statement is the transaction (its
                    // latency is taken from the statements' at the end).
                    self.s.transactions += 1;
                } else {
                    walk.in_batch += 1;
                }
            }
            Err(e) => {
                let st = &work.env.w.statements[k];
                // A stale plan left for after the rollback (`retry_stale`).
                let stale = self.stale.take();
                let row_no = walk.row_at(work.env.w, k, call.bind_row) + 1;
                self.s.failed_call(opts, k, &e, &st.sql, row_no, live);
                if self.lost() {
                    return false;
                }
                if opts.per_commit > 0 {
                    // PostgreSQL aborts the transaction: end it and start
                    // the next batch afresh.
                    let _ = self.control("ROLLBACK").await;
                    walk.in_batch = 0;
                    end_of_transaction(work.env.cache, &mut walk.written);
                }
                if stale.is_some() {
                    // Outside the aborted transaction now.
                    let handle = work.plans[k].handle();
                    let _ = self.reprepare(k as u64 + 1, handle, &st.sql).await;
                    if self.lost() {
                        return false;
                    }
                }
            }
        }
        true
    }
}

/// The session's client trace, `n`th of the run, with its header; a trace
/// that cannot be made is said in the summary (and the exit status): the
/// run goes on without it.
fn open_trace(
    opts: &RunOptions,
    engine: Engine,
    clock: Clock,
    n: usize,
    summary: &mut SessionSummary,
) -> (Option<std::path::PathBuf>, Option<TraceWriter<File>>) {
    let trace_path = opts
        .trace_dir
        .as_ref()
        .map(|dir| dir.join(crate::traces::name(n)));
    let trace = trace_path.as_ref().and_then(|path| {
        let name = path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned());
        let made = File::create(path).and_then(|f| {
            TraceWriter::new(
                f,
                &Header {
                    name: &name,
                    engine: engine.name(),
                    side: "client",
                    timer: clock.timer().name(),
                    // Oracle 12.2+ writes the zone as an offset, not `Z`.
                    started: &humantime::format_rfc3339_micros(SystemTime::now())
                        .to_string()
                        .replace('Z', "+00:00"),
                },
            )
        });
        match made {
            Ok(t) => Some(t),
            Err(e) => {
                summary.trace_error = Some(format!("{}: {e}", path.display()));
                None
            }
        }
    });
    (trace_path, trace)
}

#[cfg(test)]
mod tests {
    use super::is_query;

    #[test]
    fn queries_are_told_from_other_statements() {
        assert!(is_query("select 1"));
        assert!(is_query("  /* hint */ -- c\n (SELECT 1)"));
        assert!(is_query("WITH t AS (select 1) select * from t"));
        assert!(!is_query("insert into t values (1)"));
        assert!(!is_query("call p()"));
    }
}

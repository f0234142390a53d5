//! `tracelab run`: drive SQL from many sessions, measure every call with
//! pgbench's semantics (HDR histograms of latency), and optionally write a
//! 10046-format trace of every call from the client's side.
//!
//! Engines: PostgreSQL (extended or simple protocol), MariaDB/MySQL
//! (binary or text protocol) and SQLite (in process), named by the URL.

mod binds;
mod cache;
mod clock;
pub mod duration;
mod error;
mod invalidate;
mod live;
mod named;
mod pace;
pub mod report;
mod resolve;
mod session;
mod summary;
mod thread_cpu;
mod traces;
mod workload;

pub use binds::{Binds, NulAt};
pub use cache::{
    parse_tables, read_tables_file, CacheMode, CacheOptions, CacheStats, ResultHook, Rows, Seen,
};
pub use clock::Timer;
pub use error::RunError;
pub use invalidate::setup_sql as result_cache_setup_sql;
pub use live::Second;
pub use summary::{Bucket, Counted, Latency, SessionSummary, StatementSummary, Summary};
pub use tracelab_engine::sql::{
    cast_placeholders, inline_binds, placeholder_count, postgres_placeholders,
};
pub use tracelab_engine::{check_url, conninfo, redact, sql, Engine};
pub use workload::{read_binds, read_typed_binds, BindFile, ExeMode, Statement, Workload};

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When a session stops.
#[derive(Debug, Clone, Copy)]
pub enum Stop {
    /// After this long, counted by each session from its own start.
    Runtime(Duration),
    /// After this many transactions per session.
    Transactions(u64),
}

/// How sessions connect (sqlrun's `--connect-mode`). In a file:
/// `"flood"`, `"tsunami"`, `"trickle"` (logons 0.25 s apart, as `run
/// --connect-delay`'s default) or `"trickle 100ms"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum ConnectMode {
    /// All at once: a logon storm.
    #[default]
    Flood,
    /// One after another, this far apart.
    Trickle(Duration),
    /// All connect, then all start together.
    Tsunami,
}

/// A run, resolved. Build it with `..RunOptions::default()` so that new
/// options do not break callers.
///
/// It also reads from a file under `tracelab run`'s option names (snake
/// case: `rate`, `exe_delay = "10ms"`, `connect_mode`, `tx_behavior`,
/// `binds_order`, `ignore_errors`, `timer`): a study's workload and its
/// levels' `run` tables are these options, so that a new option here is a
/// study option with no more code. The fields marked `skip` are the
/// caller's (where to connect, live output) or a study key of their own
/// that takes vars and engines (`sessions`, `statements`, `protocol`,
/// `fetch_size`, `settings`, `result_cache`, `trace`).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunOptions {
    /// Where to connect; the scheme names the engine: `postgres://` or
    /// `postgresql://`, `mysql://` or `mariadb://`, `sqlite:PATH` or
    /// `sqlite::memory:`. A password in it never reaches any output.
    #[serde(skip)]
    pub url: String,
    /// The URL as the user gave it, shown in messages instead of `url`
    /// when the caller added parameters of its own to it (a study's
    /// `application_name` and `options`); its password is masked too.
    #[serde(skip)]
    pub shown_url: Option<String>,
    #[serde(skip)]
    pub sessions: usize,
    #[serde(skip)]
    pub stop: Stop,
    /// Think time between calls.
    #[serde(deserialize_with = "named::seconds")]
    pub exe_delay: Duration,
    /// Write one trace per session here.
    #[serde(skip)]
    pub trace_dir: Option<PathBuf>,
    /// The trace directory may hold traces this run would not replace:
    /// keep them, and number this run's after them. Without it such a
    /// directory is refused, so that one profile never mixes two runs.
    #[serde(skip)]
    pub trace_append: bool,
    /// Statements per transaction; 0 is autocommit (each statement its
    /// own transaction).
    #[serde(skip)]
    pub per_commit: u64,
    /// End each batch with ROLLBACK instead of COMMIT.
    #[serde(rename = "tx_behavior", deserialize_with = "named::tx_behavior")]
    pub rollback: bool,
    /// Set (by Ctrl-C) to make every session stop after its current call.
    #[serde(skip)]
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Show a live progress line on a terminal.
    #[serde(skip)]
    pub progress: bool,
    /// Keep throughput and latency percentiles of every second and the
    /// latency histogram in the summary (`run --report`).
    #[serde(skip)]
    pub timeline: bool,
    #[serde(rename = "connect_mode")]
    pub connect: ConnectMode,
    /// SQLSTATEs of statement errors that are counted apart, not as errors.
    #[serde(deserialize_with = "named::error_codes")]
    pub ignore_errors: Vec<String>,
    /// The clock read for each timestamp.
    pub timer: Timer,
    /// Each session walks the bind rows in its own random order.
    #[serde(rename = "binds_order", deserialize_with = "named::binds_order")]
    pub shuffle_binds: bool,
    /// Keep every session connected after its work until released: by
    /// creating this file (`Some(Some(path))`) or by Enter on a terminal
    /// (`Some(None)`). With `progress` on, a note on stderr says how.
    #[serde(skip)]
    pub pause_at_exit: Option<Option<PathBuf>>,
    /// Use the simple query protocol (values inlined as literals, no
    /// prepared statement) instead of the extended one.
    #[serde(skip)]
    pub simple: bool,
    /// Target transactions per second of the whole run (Poisson arrivals,
    /// latency from the intended start); `None` runs flat out.
    #[serde(deserialize_with = "named::rate")]
    pub rate: Option<f64>,
    /// Rows per round trip of a query's fetches (PostgreSQL portals);
    /// 0 fetches every row in one go.
    #[serde(skip)]
    pub fetch_size: u32,
    /// Session parameters set on every connection before the work
    /// (`SET name = value` on PostgreSQL and MariaDB, `PRAGMA` on SQLite).
    #[serde(skip)]
    pub settings: Vec<(String, String)>,
    /// On PostgreSQL, send `settings` in each connection's startup packet
    /// (`-c name=value`, as libpq's `options` does) instead of setting
    /// them after it connects: in force from the backend's start (those
    /// that only take effect then too), no round trip of their own, and
    /// nothing a proxy in the path sees as a statement. A study's levels
    /// are set so; `tracelab run -s` sets them after connecting, with a
    /// message naming the setting when the server refuses it. The other
    /// engines set them after connecting either way.
    #[serde(skip)]
    pub settings_at_connect: bool,
    /// A client result cache shared by the sessions (Oracle's Client
    /// Result Cache semantics).
    #[serde(skip)]
    pub result_cache: Option<CacheOptions>,
    /// Called with every result a session receives (from the server or
    /// the cache), for tests and for embedding tracelab.
    #[serde(skip)]
    pub on_result: Option<ResultHook>,
}

impl RunOptions {
    /// The URL as messages show it: the one the user gave, its password
    /// masked.
    pub fn shown_url(&self) -> String {
        tracelab_engine::redact(self.shown_url.as_deref().unwrap_or(&self.url))
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            url: String::new(),
            shown_url: None,
            sessions: 1,
            stop: Stop::Transactions(1),
            exe_delay: Duration::ZERO,
            trace_dir: None,
            trace_append: false,
            per_commit: 0,
            rollback: false,
            interrupt: None,
            progress: false,
            timeline: false,
            connect: ConnectMode::Flood,
            ignore_errors: Vec::new(),
            timer: Timer::Vdso,
            shuffle_binds: false,
            pause_at_exit: None,
            simple: false,
            rate: None,
            fetch_size: 0,
            settings: Vec::new(),
            settings_at_connect: false,
            result_cache: None,
            on_result: None,
        }
    }
}

/// Runs the workload and returns the summary. Session errors (a failed
/// statement, a lost connection) are counted in the summary, not returned:
/// what was measured is never lost.
pub fn run(opts: &RunOptions, workload: &Workload) -> Result<Summary, RunError> {
    let engine = tracelab_engine::check_url(&opts.url)?;
    refuse_before(opts, workload, engine)?;
    let trace_first = match &opts.trace_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|source| RunError::Io {
                path: dir.clone(),
                source,
            })?;
            traces::first_number(dir, opts.sessions, opts.trace_append)?
        }
        None => 0,
    };
    // Sessions are tasks on one thread per core, each thread with its own
    // single-threaded runtime, as pgbench's -j threads multiplex their
    // connections: twenty blocking threads on two cores spend their time
    // switching, and a work-stealing runtime in moving tasks between
    // threads.
    // An in-process engine blocks its thread for every call: each of its
    // sessions gets a thread of its own.
    let workers = if engine.blocks() {
        opts.sessions.max(1)
    } else {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .min(opts.sessions)
            .max(1)
    };
    let clock = clock::Clock::start(opts.timer);
    let (caches, channels, channel_done) = start_caches(opts, workload, engine, clock)?;
    // The run's elapsed time starts with its sessions.
    let start = Instant::now();
    let shared: Shared = Arc::new((
        opts.clone(),
        workload.clone(),
        live::Live::new(if opts.progress || opts.timeline {
            workers
        } else {
            0
        }),
        caches.clone(),
        trace_first,
    ));
    let done = AtomicBool::new(false);
    let mut timeline = Vec::new();
    let mut results: Vec<SessionSummary> = std::thread::scope(|s| {
        let watcher = (opts.progress || opts.timeline).then(|| {
            let (shared, done) = (shared.clone(), &done);
            s.spawn(move || live::watch(&shared.2, start, done, opts.progress, opts.timeline))
        });
        if let Some(file) = &opts.pause_at_exit {
            let (shared, done) = (shared.clone(), &done);
            s.spawn(move || {
                live::release_when(
                    &shared.2,
                    opts.sessions,
                    file.as_deref(),
                    done,
                    !opts.progress,
                )
            });
        }
        let handles: Vec<_> = (0..workers)
            .map(|wk| {
                let shared = shared.clone();
                s.spawn(move || sessions_of_worker(opts, wk, workers, &shared, clock))
            })
            .collect();
        let out: Vec<SessionSummary> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect();
        // The progress line stops with the sessions.
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(w) = watcher {
            timeline = w.join().unwrap_or_default();
        }
        out
    });
    results.sort_by_key(|s| s.session);
    // The run ends with its sessions, not with the channel's last sleep.
    let elapsed = start.elapsed();
    channel_done.store(true, std::sync::atomic::Ordering::Release);
    for h in channels {
        let _ = h.join();
    }
    let stats: Vec<cache::CacheStats> = caches.iter().map(|c| c.stats()).collect();
    if stats.len() > 1 {
        for s in &mut results {
            s.result_cache = stats.get(s.session).cloned();
        }
    }
    let sql: Vec<&str> = workload.statements.iter().map(|s| s.sql.as_str()).collect();
    let mut summary = Summary::new(results, elapsed, &sql);
    summary.result_cache = (!stats.is_empty()).then(|| cache::CacheStats::sum(&stats));
    if opts.timeline {
        summary.timeline = timeline;
    } else {
        summary.latency_histogram.clear();
    }
    Ok(summary)
}

/// What no run can do, refused before any session starts: a bind value
/// the protocol cannot send, a statement with placeholders and no binds.
fn refuse_before(opts: &RunOptions, workload: &Workload, engine: Engine) -> Result<(), RunError> {
    // The simple protocol sends a statement as a NUL-terminated string:
    // a bind value with a NUL cannot go (nor can PostgreSQL's text hold
    // one). A bad bind value, named where it is, before the run.
    if opts.simple && engine == Engine::Postgres {
        if let Some(at) = workload.statements.iter().find_map(|st| st.binds.nul()) {
            return Err(RunError::Binds {
                path: at.path.clone(),
                line: at.line,
                what: format!(
                    "value {} holds a NUL byte, which --protocol simple cannot send to \
                     PostgreSQL (nor can its text hold one)",
                    at.value
                ),
            });
        }
    }
    // A statement with placeholders and no bind values fails every
    // execution: said once, before the run, not counted a million times.
    for st in &workload.statements {
        let takes = placeholder_count(&st.engine_sql);
        if takes > 0 && st.binds.is_empty() {
            return Err(RunError::Usage(format!(
                "`{}` has {takes} placeholder(s) and no bind values were given",
                tracelab_trace::redact_sql(&st.sql)
            )));
        }
    }
    Ok(())
}

/// The result caches of the run (`--result-cache`), their invalidation
/// channels started and vouching for freshness; the flag that stops them.
type Channels = (
    Vec<Arc<cache::ResultCache>>,
    Vec<std::thread::JoinHandle<()>>,
    Arc<AtomicBool>,
);

fn start_caches(
    opts: &RunOptions,
    workload: &Workload,
    engine: Engine,
    clock: clock::Clock,
) -> Result<Channels, RunError> {
    let caches: Vec<Arc<cache::ResultCache>> = match &opts.result_cache {
        Some(c) => {
            if engine == Engine::Sqlite {
                return Err(RunError::Usage(
                    "--result-cache works with PostgreSQL and MariaDB: SQLite runs in process, \
                     where there is no round trip to save"
                        .into(),
                ));
            }
            let n = if c.per_session {
                opts.sessions.max(1)
            } else {
                1
            };
            (0..n)
                .map(|_| Arc::new(cache::ResultCache::new(c.clone())))
                .collect()
        }
        None => Vec::new(),
    };
    // Each cache's invalidation channel runs beside the sessions, and stops
    // after them.
    let channel_done = Arc::new(AtomicBool::new(false));
    let spawn_channel = |c: &Arc<cache::ResultCache>, setup: bool| {
        let ch = invalidate::Channel {
            engine,
            url: opts.url.clone(),
            settings: opts.settings.clone(),
            ask: resolve::Ask {
                statements: workload
                    .statements
                    .iter()
                    .map(|s| (s.sql.clone(), s.engine_sql.clone()))
                    .collect(),
                tables: c.opts.tables.clone(),
                setup,
            },
            clock,
        };
        let (c, done) = (c.clone(), channel_done.clone());
        std::thread::spawn(move || invalidate::run(c, ch, done))
    };
    // Sessions start once a channel vouches for freshness (or has failed,
    // or has had ten seconds): a run measures the cache at work, not its
    // first heartbeats, however short the run.
    let ready = |c: &cache::ResultCache| {
        let waited = Instant::now();
        while !c.serving(clock.now())
            && c.stats().channel_failures == 0
            && waited.elapsed() < std::time::Duration::from_secs(10)
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    };
    let mut channels = Vec::with_capacity(caches.len());
    if let Some(first) = caches.first() {
        // The first channel installs the triggers (--result-cache-setup);
        // the others start once it has, so that no two install them at once.
        channels.push(spawn_channel(first, first.opts.setup));
        ready(first);
        // --result-cache-setup that failed (no privilege, a bad name) is
        // a usage error, said before anything runs.
        if let Some(why) = first
            .stats()
            .channel_error
            .filter(|e| e.starts_with("--result-cache-setup"))
        {
            channel_done.store(true, std::sync::atomic::Ordering::Release);
            for h in channels {
                let _ = h.join();
            }
            return Err(RunError::Usage(format!("{why} (on {})", opts.shown_url())));
        }
        for c in &caches[1..] {
            channels.push(spawn_channel(c, false));
        }
        for c in &caches[1..] {
            ready(c);
        }
    }
    Ok((caches, channels, channel_done))
}

/// What every session of a run shares: the options, the workload, the live
/// counters, the result caches and the first trace file's number.
type Shared = Arc<(
    RunOptions,
    Workload,
    live::Live,
    Vec<Arc<cache::ResultCache>>,
    usize,
)>;

/// What one worker thread runs: its share of the sessions (every
/// `workers`-th from `wk`) as tasks on a single-threaded runtime.
fn sessions_of_worker(
    opts: &RunOptions,
    wk: usize,
    workers: usize,
    shared: &Shared,
    clock: clock::Clock,
) -> Vec<SessionSummary> {
    let mine: Vec<usize> = (wk..opts.sessions).step_by(workers).collect();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return mine
                .iter()
                .map(|&i| SessionSummary::failed(i, &format!("cannot start a runtime: {e}")))
                .collect()
        }
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let handles: Vec<_> = mine
            .iter()
            .map(|&i| {
                let shared = shared.clone();
                tokio::task::spawn_local(async move {
                    session::run(
                        i,
                        &shared.0,
                        &shared.1,
                        clock,
                        (&shared.2, wk),
                        (!shared.3.is_empty()).then(|| &*shared.3[i % shared.3.len()]),
                        shared.4,
                    )
                    .await
                })
            })
            .collect();
        let mut out = Vec::with_capacity(handles.len());
        for (h, &i) in handles.into_iter().zip(&mine) {
            out.push(
                h.await
                    .unwrap_or_else(|_| SessionSummary::failed(i, "the session task panicked")),
            );
        }
        out
    })
}

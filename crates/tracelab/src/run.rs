//! `tracelab run`: drive SQL from many sessions against a database, or
//! against a private server started for the run.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tracelab_db::{
    private_dir, start_mariadb_with_env, start_postgres_with_env, stop, MariaOptions, PgOptions,
    ServerState,
};
use tracelab_engine::Engine;
use tracelab_run::{
    cast_placeholders, read_typed_binds, run as drive, CacheOptions, ConnectMode, ExeMode,
    RunOptions, Stop, Timer, Workload,
};

use crate::exit::{self, Failure};
use crate::output::{out, say};
use crate::signals;
use tracelab_run::duration;

/// Options of `tracelab run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to run: postgres://user@host:port/db, mysql://user@host:port/db
    /// (MariaDB or MySQL), sqlite:PATH or sqlite::memory:. Without it a
    /// private server of --engine is started for the run and removed
    /// afterwards.
    #[arg(long, value_name = "URL")]
    db: Option<String>,
    /// The engine of the private server started when --db is not given
    /// (sqlite: a database file in a temporary directory).
    #[arg(long, value_name = "ENGINE", default_value = "postgres", conflicts_with = "db",
          value_parser = crate::db::engine_parser(&Engine::NAMES))]
    engine: Engine,
    /// A session parameter set on every connection before the work:
    /// SET on PostgreSQL and MariaDB, PRAGMA on SQLite (for example
    /// -s synchronous_commit=off, -s journal_mode=wal). Repeatable.
    #[arg(short = 's', long = "set", value_name = "NAME=VALUE")]
    settings: Vec<String>,
    /// Rows per round trip for queries (PostgreSQL: a cursor fetched N rows
    /// at a time, in a transaction of its own under autocommit, as psql's
    /// FETCH_COUNT; 0 fetches all rows in one round trip).
    #[arg(long, value_name = "N", default_value_t = 0)]
    fetch_size: u32,
    /// The statement; `:1`/`:name` and `$1` placeholders both work.
    #[arg(
        long,
        value_name = "SQL",
        required_unless_present = "sqldir",
        conflicts_with = "sqldir"
    )]
    sql: Option<String>,
    /// An sqlrun kit: a directory with sqlfile.conf (delimiter line, then
    /// frequency,sqlfile,bindfile records), or with Pg/sqlfile.conf.
    #[arg(long, value_name = "DIR")]
    sqldir: Option<PathBuf>,
    /// How each session picks the next statement of a kit.
    #[arg(long, value_name = "MODE", default_value = "sequential",
          value_parser = ["sequential", "semi-random", "truly-random"])]
    exe_mode: String,
    /// Bind values, one execution per line, comma-separated, NULL for
    /// NULL. Cycled: a run longer than the file uses its rows again (an
    /// INSERT of the same keys then fails; --transactions sets how many
    /// rows a run uses).
    #[arg(long, value_name = "FILE")]
    binds: Option<PathBuf>,
    /// Bind rows in file order, or in a random order of each session's own.
    #[arg(long, value_name = "ORDER", default_value = "in-order", value_parser = ["in-order", "shuffled"])]
    binds_order: String,
    /// Concurrent sessions.
    #[arg(long, visible_alias = "max-sessions", default_value_t = 1)]
    sessions: usize,
    /// How long each session runs, from its own start: seconds, or a
    /// time with a unit (5, 0.5, 1s, 500ms, 2m) [default: 10 when
    /// --transactions is not given either].
    #[arg(long, value_name = "TIME", conflicts_with = "transactions",
          allow_hyphen_values = true, value_parser = duration::seconds)]
    runtime: Option<Duration>,
    /// Transactions per session (with --tx-per-commit N, commits of N
    /// statements) [default: run for --runtime instead].
    #[arg(long, value_name = "N")]
    transactions: Option<u64>,
    /// How sessions connect: all at once (flood), one every --connect-delay
    /// (trickle), or all first and then start together (tsunami).
    #[arg(long, value_name = "MODE", default_value = "flood",
          value_parser = ["flood", "trickle", "tsunami"])]
    connect_mode: String,
    /// Time between two logons in trickle mode (seconds, or 250ms).
    #[arg(long, value_name = "TIME", default_value = "0.25",
          allow_hyphen_values = true, value_parser = duration::seconds)]
    connect_delay: Duration,
    /// The clock read for every timestamp: vdso (no system call), syscall
    /// (a real system call each time) or coarse (cheapest, ms resolution).
    #[arg(long, value_name = "TIMER", default_value = "vdso", value_parser = ["vdso", "syscall", "coarse"])]
    timer: String,
    /// The protocol: extended (prepared statements, binds sent apart; the
    /// binary protocol on MariaDB) or simple (values inlined as literals,
    /// as pgbench -M simple; the text protocol on MariaDB).
    #[arg(long, value_name = "PROTOCOL", default_value = "extended", value_parser = ["extended", "prepared", "simple"])]
    protocol: String,
    /// Target transactions per second of the whole run: Poisson arrivals,
    /// latency counted from each call's intended start (pgbench's -R)
    /// [default: as fast as the sessions go].
    #[arg(long, value_name = "TPS")]
    rate: Option<f64>,
    /// Think time between calls (seconds, or 10ms).
    #[arg(long, value_name = "TIME", default_value = "0",
          allow_hyphen_values = true, value_parser = duration::seconds)]
    exe_delay: Duration,
    /// Statements per transaction (BEGIN ... COMMIT around every N)
    /// [default: each statement commits on its own (autocommit)].
    #[arg(long, value_name = "N", conflicts_with = "autocommit")]
    tx_per_commit: Option<u64>,
    /// How batches end.
    #[arg(long, value_name = "HOW", default_value = "commit", value_parser = ["commit", "rollback"])]
    tx_behavior: String,
    /// Each statement its own transaction (the default).
    #[arg(long)]
    autocommit: bool,
    /// Write a 10046-format trace per session into this directory
    /// (profile them with `tracelab skew`).
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
    /// The --trace directory may hold traces of an earlier run that this
    /// one would not replace: keep them, and number this run's traces
    /// after them (without it such a directory is refused, so that one
    /// profile never mixes two runs).
    #[arg(long, requires = "trace")]
    trace_append: bool,
    /// Trace the private server's sessions from inside PostgreSQL or
    /// MariaDB: one 10046-format trace per session in DIR, with each
    /// call's CPU and every wait named with PostgreSQL's wait event or
    /// MariaDB's thd_wait type (docs/server-trace.md). Needs the private
    /// server (no --db).
    #[arg(long, value_name = "DIR", conflicts_with = "db")]
    server_trace: Option<PathBuf>,
    /// Error codes (comma-separated) of statement errors to count apart
    /// rather than as errors: SQLSTATEs on PostgreSQL (23505,40001), error
    /// numbers on MariaDB (1062), result codes on SQLite (1555).
    #[arg(long, value_name = "CODES", value_delimiter = ',')]
    ignore_errors: Vec<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Keep the sessions connected after their work (to read server
    /// statistics) until FILE is created, or Enter is pressed without FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pause_at_exit: Option<Option<PathBuf>>,
    /// A client result cache shared by the sessions, with Oracle Client
    /// Result Cache semantics: read-only queries on annotated tables are
    /// answered from memory; changes invalidate within --result-cache-lag.
    #[arg(long)]
    result_cache: bool,
    /// The most the cache holds, in bytes (K, M, G suffixes).
    #[arg(long, value_name = "BYTES", default_value = "1M")]
    result_cache_size: String,
    /// The longest a served result may lag a committed change: a bare
    /// number is milliseconds, as Oracle's CLIENT_RESULT_CACHE_LAG (3000),
    /// or a time with a unit (3s, 500ms).
    #[arg(long, value_name = "MS|TIME", default_value = "3000",
          allow_hyphen_values = true, value_parser = duration::millis)]
    result_cache_lag: Duration,
    /// An annotated table: force (every query on it cached) or manual
    /// (only queries with a /*+ result_cache */ hint). Repeatable.
    #[arg(long, value_name = "NAME:MODE")]
    result_cache_table: Vec<String>,
    /// A file of annotated tables: `NAME force|manual` per line.
    #[arg(long, value_name = "FILE")]
    result_cache_config: Option<PathBuf>,
    /// Install the invalidation triggers on the annotated tables first
    /// (PostgreSQL: NOTIFY; MariaDB: a change-counter table).
    #[arg(long)]
    result_cache_setup: bool,
    /// One cache, with its own invalidation channel and statistics, per
    /// session rather than one shared by the run's sessions: as each of
    /// sqlrun's sessions was a process with a client cache of its own.
    #[arg(long)]
    result_cache_per_session: bool,
    /// Append one line per session to this file at the end, as sqlrun's
    /// --xact-tally does: `<session id>: <successful executions>`.
    #[arg(long, value_name = "FILE")]
    xact_tally_file: Option<PathBuf>,
    /// Also write the run as one self-contained HTML page: throughput per
    /// second, latency percentiles over the run, the latency histogram and
    /// the summary tables.
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<i32, Failure> {
    // A URL that cannot be read is a mistake on the command line, said
    // before anything starts.
    if let Some(url) = &a.db {
        tracelab_engine::check_url(url).map_err(|e| Failure::Usage(e.to_string()))?;
    }
    let stop_at = match (a.runtime, a.transactions) {
        (Some(d), _) if !d.is_zero() => Stop::Runtime(d),
        (Some(_), _) => {
            return Err(Failure::Usage(
                "--runtime 0: expected a time longer than zero".into(),
            ))
        }
        (None, Some(n)) => Stop::Transactions(n),
        (None, None) => Stop::Runtime(Duration::from_secs(10)),
    };
    if a.sessions == 0 {
        return Err(Failure::Usage("--sessions: expected at least 1".into()));
    }
    let mode = match a.exe_mode.as_str() {
        "semi-random" => ExeMode::SemiRandom,
        "truly-random" => ExeMode::TrulyRandom,
        _ => ExeMode::Sequential,
    };
    let workload = match (&a.sql, &a.sqldir) {
        (_, Some(dir)) => {
            Workload::from_sqldir(dir, mode).map_err(|e| Failure::Usage(e.to_string()))?
        }
        (Some(sql), None) => {
            let (types, binds) = match &a.binds {
                Some(p) => read_typed_binds(p).map_err(|e| Failure::Usage(e.to_string()))?,
                None => (Vec::new(), Default::default()),
            };
            let mut w = Workload::with_binds(sql, binds);
            let takes = tracelab_run::placeholder_count(&w.statements[0].engine_sql);
            if takes > 0 && a.binds.is_none() {
                return Err(Failure::Usage(format!(
                    "--sql: the statement has {takes} placeholder(s) and no bind values were \
                     given: give them with --binds FILE (one execution per line, \
                     comma-separated values)"
                )));
            }
            for st in &mut w.statements {
                st.engine_sql = cast_placeholders(&st.engine_sql, &types);
            }
            w
        }
        (None, None) => {
            return Err(Failure::Usage(
                "name a statement with --sql or a kit with --sqldir".into(),
            ))
        }
    };
    // Ctrl-C, SIGTERM and SIGHUP stop the sessions after their current
    // call (or the private server being made); the summary is printed and
    // the private server torn down all the same.
    let interrupt = signals::install();
    let result_cache = if a.result_cache || a.result_cache_setup || a.result_cache_per_session {
        let mut tables = match &a.result_cache_config {
            Some(p) => tracelab_run::read_tables_file(p).map_err(Failure::Usage)?,
            None => Vec::new(),
        };
        for (n, m) in tracelab_run::parse_tables(&a.result_cache_table).map_err(Failure::Usage)? {
            match tables.iter_mut().find(|(t, _)| *t == n) {
                Some(slot) => slot.1 = m,
                None => tables.push((n, m)),
            }
        }
        if tables.is_empty() {
            return Err(Failure::Usage(
                "--result-cache: name the cached tables with --result-cache-table NAME:force|manual \
                 or --result-cache-config FILE"
                    .into(),
            ));
        }
        Some(CacheOptions {
            size: parse_bytes(&a.result_cache_size)?,
            lag: a.result_cache_lag,
            tables,
            setup: a.result_cache_setup,
            per_session: a.result_cache_per_session,
        })
    } else {
        None
    };
    let settings = a
        .settings
        .iter()
        .map(|s| match s.split_once('=') {
            Some((n, v)) if !n.trim().is_empty() => {
                Ok((n.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(Failure::Usage(format!("--set {s}: expected NAME=VALUE"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if a.server_trace.is_some() && !matches!(a.engine, Engine::Postgres | Engine::Mysql) {
        return Err(Failure::Usage(format!(
            "--server-trace: traces from inside the server are made for PostgreSQL and MariaDB only, not {}",
            a.engine.title()
        )));
    }
    // The private server lives only as long as the run.
    let private = match (&a.db, a.engine) {
        (Some(_), _) | (None, Engine::Sqlite) => None,
        (None, engine) => Some(Private::start(engine, a.server_trace.as_deref())?),
    };
    let private = private.as_ref().map(|p| &p.state);
    let scratch = match (&a.db, a.engine) {
        (None, Engine::Sqlite) => Some(
            tempfile::tempdir()
                .map_err(|e| Failure::Usage(format!("cannot make a temporary directory: {e}")))?,
        ),
        _ => None,
    };
    let url = match (&a.db, &private, &scratch) {
        (Some(url), _, _) => url.clone(),
        (None, Some(s), _) => s.url.clone(),
        (None, None, Some(dir)) => format!("sqlite:{}", dir.path().join("tracelab.db").display()),
        (None, None, None) => String::new(),
    };
    let opts = RunOptions {
        url,
        shown_url: None,
        sessions: a.sessions,
        stop: stop_at,
        exe_delay: a.exe_delay,
        trace_dir: a.trace.clone(),
        trace_append: a.trace_append,
        per_commit: if a.autocommit {
            0
        } else {
            a.tx_per_commit.unwrap_or(0)
        },
        rollback: a.tx_behavior == "rollback",
        interrupt: Some(interrupt.clone()),
        progress: !a.json,
        timeline: a.report.is_some(),
        rate: a.rate.filter(|r| *r > 0.0 && r.is_finite()),
        simple: a.protocol == "simple",
        pause_at_exit: a.pause_at_exit.clone(),
        shuffle_binds: a.binds_order == "shuffled",
        timer: match a.timer.as_str() {
            "syscall" => Timer::Syscall,
            "coarse" => Timer::Coarse,
            _ => Timer::Vdso,
        },
        ignore_errors: a
            .ignore_errors
            .iter()
            .map(|c| c.trim().to_uppercase())
            .collect(),
        connect: match a.connect_mode.as_str() {
            "trickle" => ConnectMode::Trickle(a.connect_delay),
            "tsunami" => ConnectMode::Tsunami,
            _ => ConnectMode::Flood,
        },
        fetch_size: a.fetch_size,
        settings,
        // `-s` is set once connected: a refused one is named in the summary.
        settings_at_connect: false,
        result_cache,
        on_result: None,
    };
    let result = drive(&opts, &workload);
    let summary = result.map_err(|e| Failure::Usage(e.to_string()))?;
    // Output that could not be written completely: named, and the exit
    // status says so (what was measured is still printed).
    let mut unwritten = false;
    for e in summary.trace_errors() {
        say!("tracelab: cannot write the trace {e}");
        unwritten = true;
    }
    if let Some(path) = &a.xact_tally_file {
        let lines: String = summary
            .per_session
            .iter()
            .map(|s| format!("tracelab_run_{}: {}\n", s.session, s.executions))
            .collect();
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, lines.as_bytes()));
        if let Err(source) = appended {
            // The summary still goes out below: nothing measured is lost.
            say!("tracelab: cannot write {}: {source}", path.display());
            unwritten = true;
        }
    }
    if let Some(path) = &a.report {
        let what = format!(
            "{}, {} session(s), {}",
            opts.shown_url(),
            a.sessions,
            match opts.stop {
                Stop::Runtime(d) => format!("{} s", d.as_secs_f64()),
                Stop::Transactions(n) => format!("{n} transaction(s) each"),
            }
        );
        if let Err(source) = std::fs::write(path, tracelab_run::report::html(&summary, &what)) {
            say!("tracelab: cannot write {}: {source}", path.display());
            unwritten = true;
        }
    }
    if let Some(hint) = reused_binds_hint(&workload, &summary) {
        say!("tracelab: {hint}");
    }
    if a.json {
        out(&summary.json())?;
    } else if summary.ran_nothing() {
        // No session got to work: the zero figures say nothing, the cause
        // does (one line per cause, not per session).
        for line in summary.failures() {
            say!("tracelab: {line}");
        }
    } else {
        out(&summary.text())?;
    }
    Ok(if interrupt.load(Ordering::Relaxed) {
        signals::status()
    } else if unwritten {
        exit::OUTPUT
    } else if summary.failed() || summary.errors > 0 {
        exit::TROUBLE
    } else {
        exit::OK
    })
}

/// Unique-key violations after the bind rows ran out and were used again
/// (they cycle): the likely cause, said once, with the remedy.
fn reused_binds_hint(w: &Workload, s: &tracelab_run::Summary) -> Option<String> {
    // 23505 PostgreSQL, 1062 MariaDB, 1555 and 2067 SQLite (primary key,
    // unique).
    let dups: u64 = s
        .errors_by_code
        .iter()
        .filter(|(c, _)| ["23505", "1062", "1555", "2067"].contains(&c.as_str()))
        .map(|(_, (n, _))| n)
        .sum();
    let rows = w
        .statements
        .iter()
        .map(|st| st.binds.len())
        .max()
        .unwrap_or(0) as u64;
    if dups == 0 || rows == 0 {
        return None;
    }
    let most = s
        .per_session
        .iter()
        .map(|p| p.executions + p.errors + p.ignored)
        .max()
        .unwrap_or(0);
    let mut why = Vec::new();
    if most > rows {
        why.push(format!(
            "a session made {most} executions with a bind file of {rows} rows, so it used rows \
             again (they cycle; --transactions sets how many a session runs)"
        ));
    }
    if s.sessions > 1 {
        why.push("every session walks the same bind rows".to_string());
    }
    (!why.is_empty()).then(|| format!("{dups} duplicate-key errors: {}", why.join("; and ")))
}

/// The run's private server, in a directory of its own marked as this
/// process's (so that, should the process be killed, the next start
/// removes it): stopped and removed when the run ends, however it ends.
struct Private {
    state: ServerState,
}

impl Private {
    fn start(engine: Engine, server_trace: Option<&std::path::Path>) -> Result<Private, Failure> {
        let env = match server_trace {
            Some(d) => crate::server_trace::prepare(d, engine)?,
            None => Vec::new(),
        };
        crate::db::remove_orphans();
        let dir = private_dir()?;
        let started = if engine == Engine::Mysql {
            start_mariadb_with_env(
                &MariaOptions {
                    dir: Some(dir.clone()),
                    ..MariaOptions::default()
                },
                &env,
            )
        } else {
            start_postgres_with_env(
                &PgOptions {
                    dir: Some(dir.clone()),
                    ..PgOptions::default()
                },
                &env,
            )
        };
        match started {
            Ok(state) => {
                say!(
                    "tracelab: started a private {} in {} ({}), removed after the run",
                    engine.title(),
                    state.dir.display(),
                    state.url
                );
                Ok(Private { state })
            }
            Err(e) => {
                let _ = stop(&dir);
                let _ = std::fs::remove_dir_all(&dir);
                Err(e.into())
            }
        }
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        let _ = stop(&self.state.dir);
        let _ = std::fs::remove_dir_all(&self.state.dir);
    }
}

/// A size in bytes with an optional K, M or G suffix (powers of 1024), as
/// Oracle's size parameters take them.
fn parse_bytes(s: &str) -> Result<usize, Failure> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1usize << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.trim()
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            Failure::Usage(format!(
                "--result-cache-size {s}: expected a number of bytes, e.g. 1048576 or 1M"
            ))
        })
}

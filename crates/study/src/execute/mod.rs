//! Running a study: check the engines, start the private server, then for
//! each planned run apply its levels, warm up, measure and store it.

mod command;
pub mod dry_run;
pub mod freshness;
pub mod mariadb;
pub mod measure;
mod observed;
pub mod perf;
pub mod profile;
pub mod proxy;
pub mod requirement;
pub mod result_cache;
pub mod server_counters;
mod study;

pub use study::run_study;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracelab_db::{
    start_mariadb_with_env, start_postgres_with_env, stop, MariaOptions, PgOptions, ServerState,
};
use tracelab_run::{read_binds, RunOptions, Stop, Workload};

use crate::error::{admin_error, StudyError};
use crate::execute::server_counters::Server;
use crate::model::engine::redact;
use crate::model::script::{statements, substitute};
use crate::model::spec::{Level, Loaded, Probe, When};
use crate::plan::cell::{engine_of, levels_of, num, sql_of};
use crate::plan::{Amounts, Cell, Choice, Phase, Planned, VarSource};
use crate::store::Syscall;
use tracelab_engine::admin::{Admin, AdminError};
use tracelab_engine::sql::quote_literal;
use tracelab_engine::Engine as Kind;

/// tracelab's timer shim (crates/timeshim), built by this crate's build
/// script; empty where it could not be built.
const CLOCK_LIB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libtracelab_clock.so"));

/// tracelab's server tracer (crates/servertrace), for `{server_trace_lib}`:
/// the tracelab binary embeds it (its build script builds it) and hands it
/// over with [`set_server_tracer`] before a study runs.
static SERVER_TRACER: std::sync::OnceLock<&'static [u8]> = std::sync::OnceLock::new();

/// Gives the study runner the server tracer library's bytes (see
/// `SERVER_TRACER`); the first call counts.
pub fn set_server_tracer(lib: &'static [u8]) {
    let _ = SERVER_TRACER.set(lib);
}

/// How to run a study.
#[derive(Debug, Clone)]
pub struct Options {
    pub choice: Choice,
    /// `--db` URLs, one per engine at most (the scheme names the engine).
    pub dbs: Vec<String>,
    pub out: PathBuf,
    pub resume: bool,
    /// Set by Ctrl-C: stop after the current run.
    pub interrupt: Arc<AtomicBool>,
    /// Keep every run's traces (client, proxy) in `out/traces/SEQ-SIDE/`
    /// rather than remove them once profiled.
    pub keep_traces: bool,
    /// Consent to what the study creates, drops or changes on a `--db`
    /// database (named, and refused without it, before anything runs).
    pub yes: bool,
    /// Consent to server settings that run programs or load code
    /// (`archive_command`, ...): refused without it, before anything runs.
    pub allow_server_programs: bool,
}

/// Told about progress (the CLI draws a bar).
pub trait Observer {
    fn begin(&self, total: usize, done: usize);
    fn run_done(&self, cell: &str);
    fn note(&self, msg: &str);
    /// A line the user must see whether or not progress is shown (what a
    /// `--resume` takes from a changed study file).
    fn tell(&self, msg: &str);
}

/// What a `run` did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub store: PathBuf,
    pub ran: usize,
    pub skipped: usize,
    pub interrupted: bool,
}

/// One engine's connection state during a study.
pub(crate) struct Engine {
    pub(crate) name: String,
    /// The engine `name` names.
    pub(crate) kind: Kind,
    pub(crate) url: String,
    private: Option<ServerState>,
    /// Server settings applied with ALTER SYSTEM, as the levels want.
    applied: BTreeMap<String, String>,
    /// The environment the private server was started with.
    env: BTreeMap<String, String>,
    setup_done: bool,
    probe: Option<Box<dyn Admin>>,
    /// Probes not taken on this engine (their `needs` are not met).
    skipped_probes: BTreeSet<String>,
    /// What every run's notes say about this engine (settings the study
    /// wanted and a database of the user's does not have).
    notes: Vec<String>,
    /// What the study has told the user about this engine once (perf
    /// cannot count here): a note of the first run, not of every run.
    told: BTreeSet<String>,
}

impl Engine {
    /// The engine's administrative connection, opened again when the
    /// server went away (a restart).
    fn client(&mut self) -> Result<&mut dyn Admin, StudyError> {
        if self.probe.as_ref().is_none_or(|c| c.is_closed()) {
            self.probe = Some(
                tracelab_engine::admin::connect(&self.url)
                    .map_err(|e| admin_error(&format!("connect to {}", redact(&self.url)), e))?,
            );
        }
        match self.probe.as_mut() {
            Some(c) => Ok(c.as_mut()),
            None => Err(StudyError::Database("no connection".into())),
        }
    }
}

/// What every run of a study shares.
pub(crate) struct Context<'a> {
    pub(crate) l: &'a Loaded,
    /// Server settings whose change restarts the private server.
    pub(crate) restart_keys: &'a BTreeSet<String>,
    pub(crate) scratch: &'a std::path::Path,
    /// Where the cells' vars come from besides the file.
    pub(crate) vars: VarSource<'a>,
    /// Where every run's traces are kept (`--keep-traces`), if anywhere.
    keep: Option<&'a std::path::Path>,
    pub(crate) obs: &'a dyn Observer,
}

/// Whether a planned run on `engine` uses a level that restarts the server
/// (restart settings or an environment).
fn uses_restart(l: &Loaded, planned: &[Planned], engine: &str) -> bool {
    planned
        .iter()
        .filter(|p| engine_of(&p.cell) == engine)
        .any(|p| {
            levels_of(l, &p.cell).iter().any(|lv| {
                let env = lv.env.for_engine(engine);
                !lv.restart.for_engine(engine).is_empty()
                    || !(env.is_empty() || only_server_tracer(&env, &BTreeMap::new()))
            })
        })
}

/// The private PostgreSQL's settings at every start: the study's.
fn pg_options(l: &Loaded, dir: PathBuf) -> PgOptions {
    PgOptions {
        dir: Some(dir),
        settings: l
            .study
            .server
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

/// A private MariaDB with its defaults (innodb_flush_log_at_trx_commit =
/// 1: every commit flushes, as the commit-batch study wants); the levels'
/// server settings are set as globals on it, their restart settings are
/// options of mariadbd (`restart`: those in force). See
/// `crate::execute::mariadb::server_options` for what the measurements add.
fn maria_options(l: &Loaded, dir: PathBuf, restart: &BTreeMap<String, String>) -> MariaOptions {
    MariaOptions {
        dir: Some(dir),
        settings: crate::execute::mariadb::server_options(l, restart),
    }
}

fn open_engine(
    e: &str,
    db: Option<&str>,
    l: &Loaded,
    scratch: &std::path::Path,
    first_restart: &BTreeMap<String, String>,
) -> Result<Engine, StudyError> {
    let Some(k) = Kind::from_name(e) else {
        return Err(StudyError::Usage(format!(
            "engine {e}: no server to run on (pass --db)"
        )));
    };
    let mut applied = BTreeMap::new();
    let (url, private) = match (k, db) {
        (_, Some(u)) => (u.to_string(), None),
        (Kind::Postgres, None) => {
            let s = start_postgres_with_env(&pg_options(l, scratch.join("pg")), &[])?;
            (s.url.clone(), Some(s))
        }
        (Kind::Sqlite, None) => (
            format!("sqlite:{}", scratch.join("study.sqlite").display()),
            None,
        ),
        (Kind::Mysql, None) => {
            let s = start_mariadb_with_env(
                &maria_options(l, scratch.join("mariadb"), first_restart),
                &[],
            )?;
            applied = first_restart.clone();
            (s.url.clone(), Some(s))
        }
    };
    let mut eng = Engine {
        name: e.to_string(),
        kind: k,
        url,
        private,
        applied,
        env: BTreeMap::new(),
        setup_done: false,
        probe: None,
        skipped_probes: BTreeSet::new(),
        notes: Vec::new(),
        told: BTreeSet::new(),
    };
    // A database that cannot be reached fails the study before any run.
    if k == Kind::Postgres {
        if let Err(err) = eng.client() {
            if let Some(s) = &eng.private {
                let _ = stop(&s.dir);
            }
            return Err(err);
        }
    }
    Ok(eng)
}

/// The server's value of a setting (PostgreSQL), or `None` when it
/// cannot be read.
fn setting(eng: &mut Engine, name: &str) -> Option<String> {
    let c = eng.client().ok()?;
    let rows = c
        .query(&format!(
            "SELECT current_setting({}, true)",
            quote_literal(name)
        ))
        .ok()?;
    Some(rows.first()?.get(0)?.to_string())
}

/// Whether a server's value is the one wanted (`on` and `true` alike).
fn same_setting(have: &str, want: &str) -> bool {
    let norm = |v: &str| match v.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => "on".to_string(),
        "false" | "no" | "0" => "off".to_string(),
        other => other.to_string(),
    };
    norm(have) == norm(want)
}

/// Probes whose `needs` the server does not meet are not taken, and
/// every run of the engine says why; on a database of the user's, the
/// study's `[server]` settings it lacks are noted too (its private server
/// would have had them). PostgreSQL only: the other engines have no
/// probe connection here.
fn check_needs(eng: &mut Engine, l: &Loaded) {
    if eng.kind != Kind::Postgres {
        return;
    }
    let major = if l.study.probes.iter().any(|p| p.versions.is_some()) {
        setting(eng, "server_version_num")
            .and_then(|v| v.trim().parse::<u32>().ok())
            .map(|v| v / 10_000)
    } else {
        None
    };
    for pr in &l.study.probes {
        if let (Some(versions), Some(major)) = (pr.versions, major) {
            if !versions.contains(major) {
                // Another probe is this version's form of it, as a rule;
                // where none is, the report says why its columns are
                // empty.
                eng.skipped_probes.insert(pr.name.clone());
                let other =
                    l.study.probes.iter().any(|o| {
                        o.name != pr.name && o.versions.is_some_and(|v| v.contains(major))
                    });
                if !other {
                    eng.notes.push(format!(
                        "probe {} not taken: its SQL is for PostgreSQL {}, and the server is {major}",
                        pr.name,
                        versions_text(versions)
                    ));
                }
                continue;
            }
        }
        for (k, want) in &pr.needs {
            let Some(have) = setting(eng, k) else {
                continue;
            };
            if !same_setting(&have, want) {
                eng.skipped_probes.insert(pr.name.clone());
                eng.notes.push(format!(
                    "probe {} not taken: it needs {k} = {want}, and the server has {k} = {have} \
                     (its figures would read 0; ALTER SYSTEM SET {k} = '{want}' and a reload turn it on)",
                    pr.name
                ));
            }
        }
    }
    if eng.private.is_none() {
        for (k, want) in &l.study.server {
            let Some(have) = setting(eng, k) else {
                continue;
            };
            if !same_setting(&have, want) {
                eng.notes.push(format!(
                    "the study runs its private server with {k} = {want}; this database has {k} = {have}"
                ));
            }
        }
    }
}

/// A probe's `versions` as a reader writes it.
fn versions_text(v: crate::model::spec::Versions) -> String {
    match (v.from, v.to) {
        (a, b) if a == b => a.to_string(),
        (0, b) => format!("{b} and older"),
        (a, u32::MAX) => format!("{a} and newer"),
        (a, b) => format!("{a} to {b}"),
    }
}

/// Version and relevant settings of an engine, for the report.
fn engine_facts(eng: &mut Engine) -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let name = eng.name.clone();
    f.insert(format!("{name}.url"), redact(&eng.url));
    // MariaDB's facts through a connection of their own, as its scripts
    // (the probe connection is PostgreSQL's).
    let facts = match eng.kind {
        Kind::Postgres => match eng.client() {
            Ok(c) => tracelab_engine::facts::server_facts(c),
            Err(_) => BTreeMap::new(),
        },
        Kind::Mysql => match tracelab_engine::admin::connect(&eng.url) {
            Ok(mut c) => tracelab_engine::facts::server_facts(c.as_mut()),
            Err(_) => BTreeMap::new(),
        },
        Kind::Sqlite => BTreeMap::new(),
    };
    f.extend(facts);
    f
}

struct RunResult {
    vars: BTreeMap<String, f64>,
    measurements: BTreeMap<String, f64>,
    syscalls: Vec<Syscall>,
    summary: String,
    notes: Vec<String>,
    /// (session, name, value): each session's tally and cache statistics.
    sessions: Vec<(usize, String, f64)>,
    profiles: Vec<crate::store::ProfileRow>,
}

/// Runs a script on the engine; the numeric columns of any row it
/// returns become measurements. PostgreSQL and SQLite get it statement
/// by statement; MariaDB whole, on a connection of its own: the server
/// parses it, stored programs (`CREATE PROCEDURE ... BEGIN ...; END`)
/// included, which a split at `;` would break.
fn script(
    eng: &mut Engine,
    sql: &str,
    what: &str,
    into: &mut BTreeMap<String, f64>,
) -> Result<(), StudyError> {
    let failed = |st: &str, e: AdminError| {
        StudyError::Database(format!("{what}: `{}`: {}", short(st), e.detail()))
    };
    let mut run = |c: &mut dyn Admin, st: &str| -> Result<(), StudyError> {
        for r in c.query(st).map_err(|e| failed(st, e))? {
            for (name, v) in r.numeric() {
                into.insert(name.to_string(), v);
            }
        }
        Ok(())
    };
    match eng.kind {
        Kind::Postgres => {
            let c = eng.client()?;
            for st in statements(sql) {
                run(c, &st)?;
            }
            Ok(())
        }
        Kind::Sqlite => {
            let mut c = tracelab_engine::admin::connect(&eng.url)
                .map_err(|e| StudyError::Database(format!("{what}: {e}")))?;
            for st in statements(sql) {
                run(c.as_mut(), &st)?;
            }
            Ok(())
        }
        Kind::Mysql => {
            let mut c = tracelab_engine::admin::connect(&eng.url)
                .map_err(|e| StudyError::Database(format!("{what}: {e}")))?;
            run(c.as_mut(), sql)
        }
    }
}

fn short(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 80 {
        one.chars().take(77).collect::<String>() + "..."
    } else {
        one
    }
}

/// The libraries an environment preloads (`LD_PRELOAD`: separated by
/// colons or spaces).
fn preloads(env: &BTreeMap<String, String>) -> Vec<PathBuf> {
    env.get("LD_PRELOAD")
        .map(|v| {
            v.split([':', ' '])
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The private server's main process.
fn server_pid(eng: &Engine) -> Option<i32> {
    eng.private
        .as_ref()
        .and_then(|s| measure::pid_from_file(&s.pid_file()))
}

/// Applies the server settings and environment a cell's levels want:
/// ALTER SYSTEM SET or RESET (SET GLOBAL on MariaDB), then a reload, or a
/// restart of the private server when a restart setting or the
/// environment changed. After a restart with `LD_PRELOAD`, checks that the
/// server really mapped the libraries.
fn apply_server(
    ctx: &Context<'_>,
    eng: &mut Engine,
    levels: &[Level],
    vars: &BTreeMap<String, String>,
) -> Result<(), StudyError> {
    let e = eng.name.clone();
    let k = eng.kind;
    let mut want: BTreeMap<String, String> = BTreeMap::new();
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for lv in levels {
        want.extend(lv.server.for_engine(&e));
        want.extend(lv.restart.for_engine(&e));
        for (k, v) in lv.env.for_engine(&e) {
            let v = substitute(&v, vars).map_err(|x| ctx.l.error("factors.levels.env", x))?;
            env.insert(k, v);
        }
    }
    if k == Kind::Sqlite {
        // In process: no server to set or restart.
        return Ok(());
    }
    // The server tracer is an instrument, not a factor: on a server that
    // is not the private one (no restart with it preloaded) the run goes
    // on untraced, and its report says so (`observed`).
    if eng.private.is_none() && only_server_tracer(&env, vars) {
        env.clear();
    }
    if want == eng.applied && env == eng.env {
        return Ok(());
    }
    let restart_env = env != eng.env;
    if restart_env && eng.private.is_none() {
        return Err(StudyError::Usage(
            "a level sets the server's environment, which needs a restart of the private server (run without --db)"
                .into(),
        ));
    }
    if k == Kind::Mysql {
        // MariaDB: restart settings are options of mariadbd (a restart of
        // the private server when they or the environment change, which
        // resets the globals); the others global variables, set on the
        // running server.
        let restart_of = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
            m.iter()
                .filter(|(k, _)| ctx.restart_keys.contains(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let options = restart_of(&want);
        if restart_env || options != restart_of(&eng.applied) {
            restart(ctx, eng, &env, &options)?;
            eng.applied = options;
        }
        let mut sql = String::new();
        let keys: BTreeSet<&String> = want.keys().chain(eng.applied.keys()).collect();
        for k in keys {
            if ctx.restart_keys.contains(k) {
                continue;
            }
            let v = match want.get(k) {
                Some(v) if v.parse::<f64>().is_ok() => v.clone(),
                Some(v) => format!("'{}'", v.replace('\'', "''")),
                None => "DEFAULT".into(),
            };
            sql.push_str(&format!("SET GLOBAL {k} = {v};\n"));
        }
        if !sql.is_empty() {
            script(eng, &sql, "server settings", &mut BTreeMap::new())?;
        }
        eng.applied = want;
        return Ok(());
    }
    if k != Kind::Postgres {
        return Err(StudyError::Usage(format!(
            "engine {e}: server settings by level are for PostgreSQL and MariaDB"
        )));
    }
    let mut must_restart = restart_env;
    let keys: BTreeSet<String> = want.keys().chain(eng.applied.keys()).cloned().collect();
    let applied = eng.applied.clone();
    let c = eng.client()?;
    for k in &keys {
        if want.get(k) == applied.get(k) {
            continue;
        }
        must_restart |= ctx.restart_keys.contains(k);
        let sql = match want.get(k) {
            Some(v) => format!("ALTER SYSTEM SET {k} = '{}'", v.replace('\'', "''")),
            None => format!("ALTER SYSTEM RESET {k}"),
        };
        c.execute(&sql).map_err(|e| admin_error(&sql, e))?;
    }
    if must_restart {
        if eng.private.is_none() {
            return Err(StudyError::Usage(
                "a level needs a server restart, which only the private server allows".into(),
            ));
        }
        restart(ctx, eng, &env, &BTreeMap::new())?;
    } else {
        let c = eng.client()?;
        c.execute("SELECT pg_reload_conf()")
            .map_err(|e| admin_error("pg_reload_conf", e))?;
        // The reload reaches the backends when they next look.
        std::thread::sleep(Duration::from_millis(200));
    }
    eng.applied = want;
    Ok(())
}

/// Whether an environment only preloads tracelab's server tracer (as the
/// level writes it, or with `vars` substituted).
fn only_server_tracer(env: &BTreeMap<String, String>, vars: &BTreeMap<String, String>) -> bool {
    !env.is_empty()
        && env.iter().all(|(k, v)| {
            k == "TRACELAB_SERVER_TRACE_DIR"
                || (k == "LD_PRELOAD"
                    && (v == "{server_trace_lib}" || vars.get("server_trace_lib") == Some(v)))
        })
}

/// Restarts the private server with `env` (and MariaDB with the restart
/// settings `options`; PostgreSQL's are in its configuration), and checks
/// that every library it preloads is mapped in its main process.
fn restart(
    ctx: &Context<'_>,
    eng: &mut Engine,
    env: &BTreeMap<String, String>,
    options: &BTreeMap<String, String>,
) -> Result<(), StudyError> {
    let Some(s) = eng.private.clone() else {
        return Err(StudyError::Usage(
            "a level needs a server restart, which only the private server allows".into(),
        ));
    };
    let shown: Vec<String> = env
        .iter()
        .chain(options)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    ctx.obs.note(&format!(
        "restarting the private {} server{}",
        eng.name,
        if shown.is_empty() {
            String::new()
        } else {
            format!(" with {}", shown.join(" "))
        }
    ));
    eng.probe = None;
    stop(&s.dir)?;
    let env_list: Vec<(String, String)> = env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let s2 = if eng.kind == Kind::Mysql {
        start_mariadb_with_env(&maria_options(ctx.l, s.dir.clone(), options), &env_list)?
    } else {
        start_postgres_with_env(&pg_options(ctx.l, s.dir.clone()), &env_list)?
    };
    eng.url = s2.url.clone();
    eng.private = Some(s2);
    eng.env = env.clone();
    let libs = preloads(env);
    if !libs.is_empty() {
        let pid = server_pid(eng)
            .ok_or_else(|| StudyError::Database("the restarted server left no pid file".into()))?;
        for lib in &libs {
            if !measure::maps_file(pid, lib) {
                return Err(StudyError::Database(format!(
                    "the {} server was restarted with LD_PRELOAD={}, but its process {pid} has not mapped it (a library the server user cannot read, or a set-user-id server, is ignored by the loader)",
                    eng.name,
                    lib.display()
                )));
            }
        }
    }
    Ok(())
}

/// Brings the engine to a cell's levels: its server settings and
/// environment, and the study's setup the first time.
pub(crate) fn ready(ctx: &Context<'_>, cell: &Cell, eng: &mut Engine) -> Result<(), StudyError> {
    apply_server(ctx, eng, &cell.levels, &cell.vars)?;
    if !eng.setup_done {
        if let Some(sql) = ctx.l.study.setup.as_ref() {
            if let Some(t) = sql_of(ctx.l, "setup", sql, &eng.name, &cell.vars)? {
                script(eng, &t, "setup", &mut BTreeMap::new())?;
            }
        }
        eng.setup_done = true;
    }
    Ok(())
}

/// A cell's run as `tracelab run` takes it, resolved from its levels and
/// vars, before the measured run's own touches (its application_name,
/// pause, traces, a proxy).
pub(crate) struct Prepared {
    /// Options of the run, the sessions' settings among them (on
    /// PostgreSQL sent when each session connects); the URL names the
    /// warm-up's sessions, not yet the run's tag or the proxy.
    pub base: RunOptions,
    pub workload: Workload,
    pub sessions: usize,
    pub per_commit: u64,
    /// Statements (or transactions) of the unmeasured warm-up run.
    pub warmup: u64,
    /// A client-side trace per session.
    pub trace: bool,
}

/// The workload, options and settings of a cell's levels with its vars.
pub(crate) fn prepare(
    l: &Loaded,
    cell: &Cell,
    eng: &Engine,
    scratch: &std::path::Path,
) -> Result<Prepared, StudyError> {
    let (levels, vars) = (&cell.levels, &cell.vars);
    let s = &l.study;
    let w = &s.workload;
    let workload = workload_of(l, cell, eng, scratch)?;
    let Amounts {
        sessions,
        per_commit,
        stop,
        warmup,
    } = cell.workload(l)?;
    let mut fetch = num(l, "workload.fetch_size", &w.fetch_size, vars)?;
    let mut trace = s.measure.trace;
    for lv in levels {
        if let Some(f) = &lv.run.fetch_size {
            fetch = num(l, "factors.levels.run.fetch_size", f, vars)?;
        }
        trace |= lv.run.trace;
    }
    // `tracelab run`'s options by their own names; the study's keys
    // over them.
    let mut base = cell.run_options(l)?;
    let mut settings: Vec<(String, String)> =
        w.settings.for_engine(&eng.name).into_iter().collect();
    for lv in levels {
        settings.extend(lv.settings.for_engine(&eng.name));
    }
    base = RunOptions {
        url: if eng.kind == Kind::Postgres {
            with_tag(&eng.url, "tracelab-study")
        } else {
            eng.url.clone()
        },
        // Messages show the URL the user gave, not the parameters added.
        shown_url: Some(eng.url.clone()),
        sessions,
        stop,
        per_commit,
        simple: w.protocol == "simple",
        fetch_size: fetch.max(0.0) as u32,
        settings,
        // In force from each backend's start, as libpq's `options` would
        // put them, and no statement of their own for a proxy to trace.
        settings_at_connect: true,
        result_cache: crate::execute::result_cache::options(
            levels,
            w.result_cache.as_ref(),
            |k, n| num(l, k, n, vars),
        )?,
        ..base
    };
    Ok(Prepared {
        base,
        workload,
        sessions,
        per_commit,
        warmup,
        trace,
    })
}

/// What a cell's sessions execute: the workload's (or a level's) SQL with
/// the bind file, or an sqlrun kit (`workload.sqldir`, as `tracelab run
/// --sqldir` reads it, from its directory next to the study file).
fn workload_of(
    l: &Loaded,
    cell: &Cell,
    eng: &Engine,
    scratch: &std::path::Path,
) -> Result<Workload, StudyError> {
    let w = &l.study.workload;
    let e = eng.name.as_str();
    let own = cell.levels.iter().rev().find_map(|lv| lv.sql.as_ref());
    if let (Some(kit), None) = (&w.sqldir, own) {
        let dir =
            l.dir.as_ref().map(|d| d.join(kit)).ok_or_else(|| {
                l.error("workload.sqldir", "a built-in study has no kit directory")
            })?;
        let mode = crate::model::spec::exe_mode(w.exe_mode.as_deref()).unwrap_or_default();
        return Workload::from_sqldir(&dir, mode)
            .map_err(|e| l.error("workload.sqldir", e.to_string()));
    }
    let sql = sql_of(l, "workload.sql", own.unwrap_or(&w.sql), e, &cell.vars)?
        .ok_or_else(|| l.error("workload.sql", format!("no SQL for engine {e}")))?;
    let binds = match &w.binds {
        Some(b) => {
            let path = l.data_file("workload.binds", b, scratch)?;
            read_binds(&path).map_err(|e| l.error("workload.binds", e.to_string()))?
        }
        None => Default::default(),
    };
    // Several statements with prepared statements: each its own
    // execution, in turn (sqlrun's sequential mode).
    let pieces = if w.protocol == "simple" {
        Vec::new()
    } else {
        statements(&sql)
    };
    Ok(if pieces.len() > 1 {
        let mut wl = Workload::with_binds(&pieces[0], binds.clone());
        for p in &pieces[1..] {
            wl.statements
                .extend(Workload::with_binds(p, binds.clone()).statements);
        }
        wl
    } else {
        Workload::with_binds(&sql, binds)
    })
}

fn run_one(
    ctx: &Context<'_>,
    p: &Planned,
    cell: &Cell,
    eng: &mut Engine,
) -> Result<RunResult, StudyError> {
    let l = ctx.l;
    let s = &l.study;
    let mut m: BTreeMap<String, f64> = BTreeMap::new();

    ready(ctx, cell, eng)?;
    let prep = prepare(l, cell, eng, ctx.scratch)?;

    // Warm up: the same work, shorter, not measured.
    if prep.warmup > 0 {
        let n = if prep.per_commit > 0 {
            prep.warmup.div_ceil(prep.per_commit)
        } else {
            prep.warmup
        };
        let _ = tracelab_run::run(
            &RunOptions {
                stop: Stop::Transactions(n),
                ..prep.base.clone()
            },
            &prep.workload,
        );
    }

    // Before: scripts, then the probes' first look.
    // The levels' scripts first, the workload's last (it may end with
    // the CHECKPOINT the measurement starts from).
    let before_sql = cell.scripts(l, Phase::Before)?;
    for b in &before_sql {
        script(eng, b, "before", &mut m)?;
    }
    flush_stats(eng, &s.probes);
    let mut first: BTreeMap<String, f64> = BTreeMap::new();
    for pr in &s.probes {
        if pr.when == When::After || eng.skipped_probes.contains(&pr.name) {
            continue;
        }
        if let Some(q) = cell.sql(l, "probes.sql", &pr.sql)? {
            let mut got = BTreeMap::new();
            script(eng, &q, &format!("probe {}", pr.name), &mut got)?;
            if pr.when == When::Before {
                m.extend(got);
            } else {
                first.extend(got);
            }
        }
    }

    // The measured run.
    let measured = observed::observed_run(ctx, p, cell, eng, &prep)?;
    m.extend(measured.m);
    let mut notes = eng.notes.clone();
    notes.extend(measured.notes);
    let summary = measured.summary;

    // After: the probes' second look, the after scripts, the after probes.
    flush_stats(eng, &s.probes);
    for pr in &s.probes {
        if pr.when != When::Delta || eng.skipped_probes.contains(&pr.name) {
            continue;
        }
        if let Some(q) = cell.sql(l, "probes.sql", &pr.sql)? {
            let mut got = BTreeMap::new();
            script(eng, &q, &format!("probe {}", pr.name), &mut got)?;
            for (k, v) in got {
                if let Some(b) = first.get(&k) {
                    m.insert(k, v - b);
                }
            }
        }
    }
    let after_sql = cell.scripts(l, Phase::After)?;
    for a in &after_sql {
        script(eng, a, "after", &mut m)?;
    }
    flush_stats(eng, &s.probes);
    for pr in &s.probes {
        if pr.when != When::After || eng.skipped_probes.contains(&pr.name) {
            continue;
        }
        if let Some(q) = cell.sql(l, "probes.sql", &pr.sql)? {
            script(eng, &q, &format!("probe {}", pr.name), &mut m)?;
        }
    }
    let numeric = cell.numeric_vars();
    if cell.strace {
        // Slowed by strace: out of the timed columns.
        m = m
            .into_iter()
            .map(|(k, v)| {
                if is_syscall_count(&k) {
                    (k, v)
                } else {
                    (format!("strace_{k}"), v)
                }
            })
            .collect();
    }
    Ok(RunResult {
        vars: numeric,
        measurements: m,
        syscalls: measured.syscalls,
        summary: summary.json(),
        notes,
        sessions: crate::execute::result_cache::session_values(&summary),
        profiles: measured.profiles,
    })
}

/// A count of strace's (the server's or the driver's), which a run under
/// strace keeps under its own name.
fn is_syscall_count(name: &str) -> bool {
    ["syscalls", "client_syscalls"].contains(&name)
        || name.starts_with("syscall_")
        || name.starts_with("client_syscall_")
}

/// The system calls a study names (`strace_calls`) as 0 where strace saw
/// none, so that a column can name them; `syscalls` 0 too when strace
/// wrote no total.
fn zero_calls(m: &mut BTreeMap<String, f64>, calls: &[String]) {
    m.entry("syscalls".into()).or_insert(0.0);
    for c in calls {
        m.entry(format!("syscall_{c}")).or_insert(0.0);
    }
}

/// The server's processes as strace and the counters follow them: the
/// private server's (its pid file), or a PostgreSQL's found through a
/// backend of its own.
fn server_of(eng: &mut Engine) -> Result<Option<Server>, StudyError> {
    Ok(match eng.kind {
        Kind::Postgres => {
            let pm = match server_pid(eng) {
                Some(pid) => Some(pid),
                None => {
                    let c = eng.client()?;
                    let me = c.session_id().ok_or_else(|| {
                        StudyError::Database("backend pid: the server gave none".into())
                    })?;
                    measure::parent_pid(me as i32)
                }
            };
            pm.map(Server::Children)
        }
        Kind::Mysql => server_pid(eng).map(Server::Threads),
        Kind::Sqlite => None,
    })
}

/// A PostgreSQL URL that names the session (`application_name`, so that
/// the study finds its backends). A later `application_name` in a URL
/// wins over an earlier one, as libpq reads it.
pub(crate) fn with_tag(url: &str, tag: &str) -> String {
    let enc = |s: &str| -> String {
        s.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    };
    format!(
        "{url}{}application_name={}",
        if url.contains('?') { '&' } else { '?' },
        enc(tag)
    )
}

/// Makes the statistics sent so far readable before probes are read:
/// the probe connection's own pending ones, so that its scripts' WAL
/// does not land in the run's deltas (`pg_stat_force_next_flush()`,
/// PostgreSQL 15+). PostgreSQL 14 has no such function: its backends
/// send their statistics to a collector process, and a read accepts the
/// collector's file up to 500 ms old (`PGSTAT_STAT_INTERVAL`), so two
/// reads less than that apart can see the same file and a run's deltas
/// read 0. There the probes wait 0.6 s first.
fn flush_stats(eng: &mut Engine, probes: &[Probe]) {
    if eng.kind != Kind::Postgres || probes.is_empty() {
        return;
    }
    let Ok(c) = eng.client() else { return };
    if let Err(e) = c.execute("SELECT pg_stat_force_next_flush()") {
        // 42883: undefined_function, PostgreSQL 14 (another error, a
        // role not allowed to flush, say, leaves the deltas as before).
        if e.code.as_deref() == Some("42883") {
            std::thread::sleep(std::time::Duration::from_millis(600));
        }
    }
}

/// Waits until the run's backends have exited: they flush their
/// statistics (WAL, blocks) on the way out.
fn wait_gone(eng: &mut Engine, tag: &str) {
    let Ok(c) = eng.client() else { return };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match c.query(&format!(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = {}",
            quote_literal(tag)
        )) {
            Ok(r) if r.first().and_then(|r| r.number(0)) == Some(0.0) => return,
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelab_run::Timer;

    const STUDY: &str = r#"
name = "t"
[workload]
sql = "select 1"
[[factors]]
name = "n"
values = [1]
[report]
rows = "n"
columns = [{ name = "r", label = "r", expr = "$elapsed_ms" }]
"#;

    #[test]
    fn ld_preload_lists_its_libraries() {
        let env: BTreeMap<String, String> = [(
            "LD_PRELOAD".to_string(),
            "/a/x.so:/b/y.so /c/z.so".to_string(),
        )]
        .into();
        assert_eq!(
            preloads(&env),
            ["/a/x.so", "/b/y.so", "/c/z.so"].map(PathBuf::from)
        );
        assert!(preloads(&BTreeMap::new()).is_empty());
    }

    use std::sync::Mutex;
    use tracelab_engine::fake::{FakeAdmin, FakeRow, FakeServer};

    /// A study engine whose administrative connection is the fake
    /// engine's, on a database of the user's (no private server).
    fn fake_engine(
        kind: Kind,
        url: &str,
        replies: Vec<(&str, Result<Vec<FakeRow>, String>)>,
    ) -> (Engine, Arc<Mutex<FakeServer>>) {
        let server = Arc::new(Mutex::new(FakeServer {
            replies: replies
                .into_iter()
                .map(|(p, r)| (p.to_string(), r))
                .collect(),
            ..FakeServer::default()
        }));
        let eng = Engine {
            name: kind.name().to_string(),
            kind,
            url: url.to_string(),
            private: None,
            applied: BTreeMap::new(),
            env: BTreeMap::new(),
            setup_done: false,
            probe: Some(Box::new(FakeAdmin::connect(kind, &server))),
            skipped_probes: BTreeSet::new(),
            notes: Vec::new(),
            told: BTreeSet::new(),
        };
        (eng, server)
    }

    fn row(pairs: &[(&str, &str)]) -> FakeRow {
        pairs
            .iter()
            .map(|(c, v)| (c.to_string(), v.to_string()))
            .collect()
    }

    fn sent(server: &Arc<Mutex<FakeServer>>) -> Vec<String> {
        server.lock().unwrap().sent.clone()
    }

    struct Quiet;
    impl Observer for Quiet {
        fn begin(&self, _: usize, _: usize) {}
        fn run_done(&self, _: &str) {}
        fn note(&self, _: &str) {}
        fn tell(&self, _: &str) {}
    }

    #[test]
    fn a_script_runs_statement_by_statement_and_its_numbers_become_measurements() {
        let (mut eng, server) = fake_engine(
            Kind::Postgres,
            "postgres://u@h/d",
            vec![
                (
                    "select count(*)",
                    Ok(vec![row(&[("rows", "42"), ("label", "t")])]),
                ),
                ("select wal", Ok(vec![row(&[("wal_bytes", "8192.5")])])),
                ("select broken", Err("syntax error".into())),
            ],
        );
        let mut m = BTreeMap::new();
        script(
            &mut eng,
            "select count(*) from t; select wal from w",
            "probe p",
            &mut m,
        )
        .unwrap();
        assert_eq!(m.get("rows"), Some(&42.0));
        assert_eq!(m.get("wal_bytes"), Some(&8192.5));
        // Text is not a measurement.
        assert!(!m.contains_key("label"), "{m:?}");
        assert_eq!(
            sent(&server),
            ["select count(*) from t", "select wal from w"]
        );
        let e = script(&mut eng, "select broken", "setup", &mut m)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("setup: `select broken`: syntax error (fake)"),
            "{e}"
        );
    }

    #[test]
    fn a_probe_the_server_cannot_serve_is_skipped_and_every_run_says_why() {
        let text = format!(
            "{STUDY}\n[server]\nwal_level = \"minimal\"\n\
             [[probes]]\nname = \"wal\"\nsql = \"select 1\"\n\
             needs = {{ track_wal_io_timing = \"on\" }}\n"
        );
        let l = Loaded::parse("t", &text, None, &[]).unwrap();
        let (mut eng, server) = fake_engine(
            Kind::Postgres,
            "postgres://u@h/d",
            vec![
                (
                    "SELECT current_setting('track_wal_io_timing'",
                    Ok(vec![row(&[("current_setting", "off")])]),
                ),
                (
                    "SELECT current_setting('wal_level'",
                    Ok(vec![row(&[("current_setting", "replica")])]),
                ),
            ],
        );
        check_needs(&mut eng, &l);
        assert!(
            eng.skipped_probes.contains("wal"),
            "{:?}",
            eng.skipped_probes
        );
        assert!(
            eng.notes[0].contains("needs track_wal_io_timing = on")
                && eng.notes[0].contains("has track_wal_io_timing = off"),
            "{:?}",
            eng.notes
        );
        // A database of the user's: the study's server settings it lacks
        // are said too.
        assert!(
            eng.notes[1].contains("wal_level = minimal") && eng.notes[1].contains("replica"),
            "{:?}",
            eng.notes
        );
        assert_eq!(
            sent(&server),
            [
                "SELECT current_setting('track_wal_io_timing', true)",
                "SELECT current_setting('wal_level', true)"
            ]
        );
        // SQLite has no server settings: nothing is asked.
        let (mut lite, server) = fake_engine(Kind::Sqlite, "sqlite:x.db", vec![]);
        check_needs(&mut lite, &l);
        assert!(lite.skipped_probes.is_empty() && sent(&server).is_empty());
    }

    #[test]
    fn a_probe_for_other_versions_is_left_to_the_one_for_this_version() {
        // A PostgreSQL server of `server_version_num` `num`.
        let postgres_of = |num: &str| {
            fake_engine(
                Kind::Postgres,
                "postgres://u@h/d",
                vec![(
                    "SELECT current_setting('server_version_num'",
                    Ok(vec![row(&[("current_setting", num)])]),
                )],
            )
        };
        let text = format!(
            "{STUDY}\n[[probes]]\nname = \"old\"\nsql = \"select 1\"\nversions = \"-17\"\n\
             [[probes]]\nname = \"new\"\nsql = \"select 2\"\nversions = \"18-\"\n\
             [[probes]]\nname = \"only16\"\nsql = \"select 3\"\nversions = \"16\"\n"
        );
        let l = Loaded::parse("t", &text, None, &[]).unwrap();
        let (mut eng, _) = postgres_of("180001");
        check_needs(&mut eng, &l);
        assert_eq!(
            eng.skipped_probes.iter().collect::<Vec<_>>(),
            ["old", "only16"]
        );
        // Another probe is for this version ("new"): the skipped ones are
        // taken as its other versions' forms, and not spoken of.
        assert!(eng.notes.is_empty(), "{:?}", eng.notes);
        // A study with no probe for this version: the report says why
        // the probe's columns are empty.
        let lone = format!(
            "{STUDY}\n[[probes]]\nname = \"only16\"\nsql = \"select 3\"\nversions = \"16\"\n"
        );
        let lone = Loaded::parse("t", &lone, None, &[]).unwrap();
        let (mut eng, _) = postgres_of("180001");
        check_needs(&mut eng, &lone);
        assert!(eng.skipped_probes.contains("only16"));
        assert!(
            eng.notes.len() == 1
                && eng.notes[0].contains(
                    "probe only16 not taken: its SQL is for PostgreSQL 16, and the server is 18"
                ),
            "{:?}",
            eng.notes
        );
        let (mut old, _) = postgres_of("150018");
        check_needs(&mut old, &l);
        assert_eq!(
            old.skipped_probes.iter().collect::<Vec<_>>(),
            ["new", "only16"]
        );
    }

    #[test]
    fn facts_name_the_server_and_never_its_password() {
        let (mut eng, _) = fake_engine(
            Kind::Postgres,
            "postgres://app:s3cret@h:5432/d",
            vec![
                (
                    "select version()",
                    Ok(vec![row(&[("version", "PostgreSQL 15.8")])]),
                ),
                (
                    "select name, current_setting(name)",
                    Ok(vec![row(&[("name", "fsync"), ("current_setting", "on")])]),
                ),
            ],
        );
        let f = engine_facts(&mut eng);
        assert_eq!(f["postgres.url"], "postgres://app:***@h:5432/d");
        assert_eq!(f["postgres.version"], "PostgreSQL 15.8");
        assert_eq!(f["postgres.setting.fsync"], "on");
        assert!(f.values().all(|v| !v.contains("s3cret")), "{f:?}");
    }

    #[test]
    fn level_server_settings_are_set_reloaded_and_reset_on_a_user_database() {
        let text = STUDY.replace(
            "[[factors]]\nname = \"n\"\nvalues = [1]",
            "[[factors]]\nname = \"n\"\nlevels = [{ name = \"small\", server = { work_mem = \"8MB\" } }]",
        );
        let l = Loaded::parse("t", &text, None, &[]).unwrap();
        let levels = l.study.factors[0].all_levels();
        let scratch = tempfile::tempdir().unwrap();
        let (restart_keys, builtins, overrides) =
            (BTreeSet::new(), BTreeMap::new(), BTreeMap::new());
        let ctx = Context {
            l: &l,
            restart_keys: &restart_keys,
            scratch: scratch.path(),
            vars: VarSource {
                quick: false,
                builtins: &builtins,
                overrides: &overrides,
            },
            keep: None,
            obs: &Quiet,
        };
        let (mut eng, server) = fake_engine(Kind::Postgres, "postgres://u@h/d", vec![]);
        apply_server(&ctx, &mut eng, &levels, &BTreeMap::new()).unwrap();
        assert_eq!(eng.applied.get("work_mem").map(String::as_str), Some("8MB"));
        // The same level again sends nothing; no level resets it.
        apply_server(&ctx, &mut eng, &levels, &BTreeMap::new()).unwrap();
        apply_server(&ctx, &mut eng, &[], &BTreeMap::new()).unwrap();
        assert!(eng.applied.is_empty());
        assert_eq!(
            sent(&server),
            [
                "ALTER SYSTEM SET work_mem = '8MB'",
                "SELECT pg_reload_conf()",
                "ALTER SYSTEM RESET work_mem",
                "SELECT pg_reload_conf()",
            ]
        );
    }

    /// A study whose cell has vars, session settings, its own SQL and run
    /// options, for `ready` and `prepare`.
    const CELL_STUDY: &str = r#"
name = "t"
setup = "create table t{rows} (x int)"
[vars]
rows = 5
s = 2
[workload]
sql = "select 1"
sessions = "{s}"
statements = 10
tx_per_commit = 3
settings = { work_mem = "4MB" }
[[factors]]
name = "n"
levels = [{ name = "a", settings = { jit = "off" }, sql = "select {rows}; select 2", run = { fetch_size = "{rows}", timer = "syscall" } }]
[report]
rows = "n"
columns = [{ name = "r", label = "r", expr = "$elapsed_ms" }]
"#;

    fn cell_ctx<'a>(
        l: &'a Loaded,
        scratch: &'a std::path::Path,
        empty: &'a (BTreeSet<String>, BTreeMap<String, String>),
    ) -> Context<'a> {
        Context {
            l,
            restart_keys: &empty.0,
            scratch,
            vars: VarSource {
                quick: false,
                builtins: &empty.1,
                overrides: &empty.1,
            },
            keep: None,
            obs: &Quiet,
        }
    }

    #[test]
    fn ready_runs_the_setup_once_with_the_cells_vars() {
        let l = Loaded::parse("t", CELL_STUDY, None, &[]).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let empty = (BTreeSet::new(), BTreeMap::new());
        let ctx = cell_ctx(&l, scratch.path(), &empty);
        let cell = Cell::resolve(&l, &[("n".into(), "a".into())], false, &ctx.vars);
        let (mut eng, server) = fake_engine(Kind::Postgres, "postgres://u@h/d", vec![]);
        ready(&ctx, &cell, &mut eng).unwrap();
        ready(&ctx, &cell, &mut eng).unwrap();
        let setups: Vec<String> = sent(&server)
            .into_iter()
            .filter(|s| s.starts_with("create table"))
            .collect();
        assert_eq!(setups, ["create table t5 (x int)"], "once, vars filled in");
    }

    #[test]
    fn prepare_takes_the_cells_workload_settings_and_run_options() {
        let l = Loaded::parse("t", CELL_STUDY, None, &[]).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let empty = (BTreeSet::new(), BTreeMap::new());
        let ctx = cell_ctx(&l, scratch.path(), &empty);
        let cell = Cell::resolve(&l, &[("n".into(), "a".into())], false, &ctx.vars);
        let (eng, _) = fake_engine(Kind::Postgres, "postgres://u@h/d", vec![]);
        let prep = prepare(&l, &cell, &eng, scratch.path()).unwrap();
        assert_eq!((prep.sessions, prep.per_commit, prep.warmup), (2, 3, 0));
        // 10 statements, 3 to a commit: 4 transactions.
        assert!(
            matches!(prep.base.stop, Stop::Transactions(4)),
            "{:?}",
            prep.base.stop
        );
        assert_eq!(prep.base.sessions, 2);
        assert_eq!(
            prep.base.settings,
            [
                ("work_mem".to_string(), "4MB".to_string()),
                ("jit".to_string(), "off".to_string())
            ]
        );
        assert!(prep.base.settings_at_connect);
        assert_eq!(prep.base.fetch_size, 5, "the level's, with the cell's vars");
        assert_eq!(prep.base.timer, Timer::Syscall);
        // The level's SQL, each statement its own execution.
        let sql: Vec<&str> = prep
            .workload
            .statements
            .iter()
            .map(|s| s.sql.as_str())
            .collect();
        assert_eq!(sql, ["select 5", "select 2"]);
        // The sessions are tagged; messages show the URL as given.
        assert_ne!(prep.base.url, eng.url);
        assert!(
            prep.base.url.contains("tracelab-study"),
            "{}",
            prep.base.url
        );
        assert_eq!(prep.base.shown_url.as_deref(), Some("postgres://u@h/d"));
        assert!(prep.base.result_cache.is_none());
        assert_eq!(prep.base.rate, None);
    }

    /// `tracelab run`'s options by their own names in the workload, a
    /// level's `run` over them, and the workload's own result cache.
    #[test]
    fn prepare_takes_run_options_by_name_and_the_workloads_cache() {
        let text = CELL_STUDY
            .replace(
                "tx_per_commit = 3\n",
                "tx_per_commit = 3\nrate = \"{rows}\"\nexe-delay = \"10ms\"\ntx_behavior = \"rollback\"\nresult_cache = { tables = [\"t:force\"], lag = 500 }\n",
            )
            .replace("timer = \"syscall\"", "timer = \"syscall\", connect_mode = \"tsunami\", rate = 7.5");
        let l = Loaded::parse("t", &text, None, &[]).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let empty = (BTreeSet::new(), BTreeMap::new());
        let ctx = cell_ctx(&l, scratch.path(), &empty);
        let cell = Cell::resolve(&l, &[("n".into(), "a".into())], false, &ctx.vars);
        let (eng, _) = fake_engine(Kind::Postgres, "postgres://u@h/d", vec![]);
        let prep = prepare(&l, &cell, &eng, scratch.path()).unwrap();
        assert_eq!(prep.base.rate, Some(7.5), "the level's over the workload's");
        assert_eq!(prep.base.exe_delay, Duration::from_millis(10));
        assert!(prep.base.rollback);
        assert_eq!(prep.base.connect, tracelab_run::ConnectMode::Tsunami);
        assert_eq!(prep.base.timer, Timer::Syscall);
        let c = prep.base.result_cache.expect("the workload's cache");
        assert_eq!(c.lag, Duration::from_millis(500));
        // Without the level's rate, the workload's with the cell's var.
        let plain = text.replace(", rate = 7.5", "");
        let l = Loaded::parse("t", &plain, None, &[]).unwrap();
        let cell = Cell::resolve(&l, &[("n".into(), "a".into())], false, &ctx.vars);
        assert_eq!(
            prepare(&l, &cell, &eng, scratch.path()).unwrap().base.rate,
            Some(5.0)
        );
        // A level's option `run` does not have: named with the level.
        let bad = text.replace("connect_mode", "conect_mode");
        let e = Loaded::parse("t", &bad, None, &[]).unwrap_err().to_string();
        assert!(
            e.contains(
                "key `factors.levels.run.conect_mode`: level `a`: unknown field `conect_mode`"
            ),
            "{e}"
        );
    }
}

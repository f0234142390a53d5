//! Running a study: check the engines, start the private server, then for
//! each planned run apply its levels, warm up, measure and store it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracelab_db::{
    start_mariadb_with_env, start_postgres_with_env, stop, MariaOptions, PgOptions, ServerState,
};
use tracelab_run::{read_binds, RunOptions, Stop, Summary, Timer, Workload};

use crate::engine::{engine_of_url, redact, requirement};
use crate::error::{admin_error, StudyError};
use crate::measure::{self, CpuWatch, LogWatch, Strace, Syscall};
use crate::plan::{cell_key, plan, Choice, Planned};
use crate::script::{statements, substitute};
use crate::server_counters::{Server, ServerWatch};
use crate::spec::{value_text, Level, Loaded, Num, Sql, When, WorkloadSpec};
use crate::store::{Header, Store};
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

fn now_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// Runs (or continues) a study; every finished run is in the store.
pub fn run_study(given: &Loaded, o: &Options, obs: &dyn Observer) -> Result<Outcome, StudyError> {
    // A study file is code; server settings that make the server run a
    // program are refused unless the user said they may.
    let programs = given.server_programs();
    if !o.allow_server_programs && !programs.is_empty() {
        return Err(StudyError::Usage(format!(
            "study {} sets server settings that run programs or load code on the server's machine:\n  {}\nNothing was run; read them (`tracelab study run STUDY --dry-run` lists everything the study runs), then run again with --allow-server-programs to go ahead.",
            given.study.name,
            programs.join("\n  ")
        )));
    }
    // A resumed study is the stored one: same file, same plan.
    let seed = o.choice.seed.or(given.study.seed).unwrap_or_else(now_seed);
    let mut quick = o.choice.quick;
    let mut overrides = o.choice.vars.clone();
    let (loaded, planned, mut store) = if o.resume {
        let store = Store::open(&o.out, false)?;
        let st = store.load()?;
        // The stored study decides, --quick or not, and its vars.
        quick = st.quick;
        if !overrides.is_empty() {
            return Err(StudyError::Usage(
                "--var with --resume: the study goes on with the vars it started with".into(),
            ));
        }
        overrides = st
            .facts
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("var.").map(|n| (n.to_string(), v.clone())))
            .collect();
        let loaded = Loaded::parse(&st.file, &st.text, given.dir.clone(), given.embedded)?;
        if loaded.study.name != given.study.name {
            return Err(StudyError::Usage(format!(
                "{} holds study `{}`, not `{}`",
                store.path().display(),
                loaded.study.name,
                given.study.name
            )));
        }
        let p = store.plan()?;
        (loaded, p, Some(store))
    } else {
        if o.out.join(crate::store::FILE).exists() {
            // Refused before any server starts.
            Store::open(&o.out, true)?;
        }
        let p = plan(given, &o.choice, seed)?;
        (given.clone(), p, None)
    };
    let study = &loaded.study;
    for k in overrides.keys() {
        if !study.vars.contains_key(k) && !study.quick.vars.contains_key(k) {
            return Err(StudyError::Usage(format!(
                "--var {k}=...: the study has no var `{k}` (it has: {})",
                study.vars.keys().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    // Every report expression names something the runs will produce, and
    // every cell's amounts are sound, before anything runs.
    loaded.check_measurements()?;
    let mut cells_seen = BTreeSet::new();
    for p in &planned {
        if cells_seen.insert((cell_key(&p.cell), p.strace)) {
            let levels = levels_of(&loaded, &p.cell);
            let vars = vars_of(
                &loaded,
                quick,
                &BTreeMap::new(),
                &overrides,
                &p.cell,
                &levels,
                p.strace,
            );
            amounts(&loaded, &vars)?;
        }
    }
    // The study's private servers live here, marked as this process's:
    // should it be killed, the next tracelab to start a server removes
    // them.
    let tmp = std::env::temp_dir();
    let scratch = tempfile::Builder::new()
        .prefix("tracelab-study-")
        .tempdir_in(&tmp)
        .map_err(crate::error::io(&tmp))?;
    tracelab_db::mark_owner(scratch.path())?;
    // The private server runs as an unprivileged user, who must reach it.
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o755));
    }

    // Requirements of every engine the plan uses, before any run.
    let engines: BTreeSet<String> = planned.iter().map(|p| engine_of(&p.cell)).collect();
    let restart_keys: BTreeSet<String> = study
        .factors
        .iter()
        .flat_map(|f| f.all_levels())
        .flat_map(|l| l.restart.names().cloned().collect::<Vec<_>>())
        .collect();
    let db_for = |e: &str| {
        o.dbs
            .iter()
            .find(|u| engine_of_url(u) == Some(e))
            .map(String::as_str)
    };
    for u in &o.dbs {
        if engine_of_url(u).is_none() {
            return Err(StudyError::Usage(format!(
                "--db {}: expected a postgres://, mysql:// or sqlite: URL",
                redact(u)
            )));
        }
        // A URL the engine's client cannot read: said now, not as a
        // failed session later.
        tracelab_run::check_url(u).map_err(|e| StudyError::Usage(e.to_string()))?;
    }
    // A database of the user's: name what the study would change there,
    // and go on only with consent.
    if !o.yes {
        let mut told = Vec::new();
        for e in &engines {
            let Some(url) = db_for(e) else { continue };
            let changes = loaded.changes(e)?;
            if changes.is_empty() {
                continue;
            }
            told.push(format!(
                "study {} would change {} ({e}), a database that is not tracelab's own:",
                study.name,
                redact(url)
            ));
            for (when, what) in changes {
                told.push(format!("  {when}: {}", what.join(", ")));
            }
        }
        if !told.is_empty() {
            told.push("Nothing was run; run it again with --yes to go ahead.".into());
            return Err(StudyError::Usage(told.join("\n")));
        }
    }
    let mut problems = Vec::new();
    for e in &engines {
        let restarts =
            Kind::from_name(e) != Some(Kind::Sqlite) && uses_restart(&loaded, &planned, e);
        problems.extend(requirement(e, db_for(e), scratch.path(), restarts));
    }
    // Built-in vars: `{clock_lib}`, the clock shim written out for the
    // server to preload (only when the study names it).
    let mut builtins = BTreeMap::new();
    if loaded.text.contains("{clock_lib}") {
        let path = scratch.path().join("libtracelab_clock.so");
        if CLOCK_LIB.is_empty() {
            problems.push(
                "the study preloads tracelab's clock shim ({clock_lib}), which this build of tracelab lacks (it builds on Linux x86_64 and aarch64 only)"
                    .into(),
            );
        } else {
            std::fs::write(&path, CLOCK_LIB).map_err(crate::error::io(&path))?;
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755));
            builtins.insert("clock_lib".to_string(), path.display().to_string());
        }
    }
    // `{server_trace_lib}` and `{server_trace_dir}`: tracelab's server
    // tracer written out, and a directory the server's user may write its
    // traces to (docs/server-trace.md).
    if loaded.text.contains("{server_trace_lib}") {
        let lib = SERVER_TRACER.get().copied().unwrap_or_default();
        if lib.is_empty() {
            problems.push(
                "the study preloads tracelab's server tracer ({server_trace_lib}), which this build of tracelab lacks (it builds on Linux x86_64 and aarch64 only)"
                    .into(),
            );
        } else {
            let path = scratch.path().join("libtracelab_servertrace.so");
            std::fs::write(&path, lib).map_err(crate::error::io(&path))?;
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755));
            let dir = scratch.path().join("server-traces");
            std::fs::create_dir_all(&dir).map_err(crate::error::io(&dir))?;
            tracelab_db::give_to_server(&dir)?;
            builtins.insert("server_trace_lib".to_string(), path.display().to_string());
            builtins.insert("server_trace_dir".to_string(), dir.display().to_string());
        }
    }
    if !problems.is_empty() {
        return Err(StudyError::Requirements(problems));
    }
    // One `study run` at a time per results directory, held to the end;
    // taken once the study is known to be runnable (a mistake leaves no
    // directory behind), before any server starts.
    let _lock = crate::store::StoreLock::take(&o.out)?;

    let mut facts = measure::machine_facts(scratch.path());
    facts.extend(
        overrides
            .iter()
            .map(|(k, v)| (format!("var.{k}"), v.clone())),
    );
    // Engines, started (private) or connected (--db).
    let mut engs: BTreeMap<String, Engine> = BTreeMap::new();
    let result = (|| -> Result<Outcome, StudyError> {
        for e in &engines {
            // A MariaDB starts with the restart settings of its first run.
            let first: BTreeMap<String, String> = planned
                .iter()
                .find(|p| engine_of(&p.cell) == *e)
                .map(|p| {
                    levels_of(&loaded, &p.cell)
                        .iter()
                        .flat_map(|lv| lv.restart.for_engine(e))
                        .collect()
                })
                .unwrap_or_default();
            let eng = open_engine(e, db_for(e), &loaded, scratch.path(), &first)?;
            engs.insert(e.clone(), eng);
        }
        for eng in engs.values_mut() {
            facts.extend(engine_facts(eng));
            check_needs(eng, &loaded);
        }
        let mut store = match store.take() {
            Some(s) => {
                s.facts(&facts)?;
                s
            }
            None => {
                let mut s = Store::open(&o.out, true)?;
                let reps = planned
                    .iter()
                    .filter(|p| !p.strace)
                    .map(|p| p.rep + 1)
                    .max()
                    .unwrap_or(1);
                s.begin(
                    &Header {
                        name: &study.name,
                        file: &loaded.file,
                        text: &loaded.text,
                        quick,
                        reps,
                        seed,
                    },
                    &facts,
                    &planned,
                )?;
                s
            }
        };
        let done = store.done()?;
        // The freshness check runs once per engine after the plan.
        let checks: Vec<&String> = if study.freshness.is_some() {
            engines.iter().collect()
        } else {
            Vec::new()
        };
        let checked = store.freshness_done()?;
        obs.begin(
            planned.len() + checks.len(),
            done.len() + checks.iter().filter(|e| checked.contains(**e)).count(),
        );
        let keep = o.keep_traces.then(|| o.out.join("traces"));
        let ctx = Context {
            l: &loaded,
            quick,
            restart_keys: &restart_keys,
            scratch: scratch.path(),
            builtins: &builtins,
            overrides: &overrides,
            keep: keep.as_deref(),
            obs,
        };
        let mut ran = 0;
        let mut interrupted = false;
        for p in &planned {
            if done.contains(&p.seq) {
                continue;
            }
            if o.interrupt.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            let t0 = Instant::now();
            let e = engine_of(&p.cell);
            let eng = engs
                .get_mut(&e)
                .ok_or_else(|| StudyError::Usage(format!("engine {e} not started")))?;
            let r = run_one(&ctx, p, eng)?;
            if !r.syscalls.is_empty() {
                store.record_syscalls(p.seq, &r.syscalls)?;
            }
            store.record_details(p.seq, &r.sessions, &r.profiles)?;
            store.record(
                p.seq,
                t0.elapsed().as_secs_f64(),
                &r.vars,
                &r.summary,
                &r.measurements,
                &r.notes.join("; "),
            )?;
            ran += 1;
            obs.run_done(&cell_key(&p.cell));
        }
        if let Some(fr) = study.freshness.as_ref().filter(|_| !interrupted) {
            for e in checks.into_iter().filter(|e| !checked.contains(*e)) {
                if o.interrupt.load(Ordering::Relaxed) {
                    interrupted = true;
                    break;
                }
                let eng = engs
                    .get_mut(e)
                    .ok_or_else(|| StudyError::Usage(format!("engine {e} not started")))?;
                let values = crate::freshness::run(&ctx, &o.choice, fr, eng)?;
                store.record_freshness(e, &values)?;
                obs.run_done(&format!("freshness check engine={e}"));
            }
        }
        Ok(Outcome {
            store: store.path().to_path_buf(),
            ran,
            skipped: done.len(),
            interrupted,
        })
    })();
    for eng in engs.values_mut() {
        // Server settings the levels changed on a database of the user's
        // go back to what they were.
        if eng.private.is_none() && eng.kind == Kind::Postgres && !eng.applied.is_empty() {
            let keys: Vec<String> = eng.applied.keys().cloned().collect();
            if let Ok(c) = eng.client() {
                for k in keys {
                    let _ = c.execute(&format!("ALTER SYSTEM RESET {k}"));
                }
                let _ = c.execute("SELECT pg_reload_conf()");
            }
        }
        eng.probe = None;
        if let Some(s) = &eng.private {
            let _ = stop(&s.dir);
        }
    }
    result
}

/// What every run of a study shares.
pub(crate) struct Context<'a> {
    pub(crate) l: &'a Loaded,
    pub(crate) quick: bool,
    /// Server settings whose change restarts the private server.
    pub(crate) restart_keys: &'a BTreeSet<String>,
    pub(crate) scratch: &'a std::path::Path,
    /// Vars tracelab provides (`clock_lib`).
    builtins: &'a BTreeMap<String, String>,
    /// `--var` values, over the study's own (and its quick ones).
    overrides: &'a BTreeMap<String, String>,
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
                !lv.restart.for_engine(engine).is_empty() || !lv.env.for_engine(engine).is_empty()
            })
        })
}

pub(crate) fn engine_of(cell: &[(String, String)]) -> String {
    cell.iter()
        .find(|(f, _)| f == "engine")
        .map_or(Kind::Postgres.name().to_string(), |(_, l)| l.clone())
}

pub(crate) fn levels_of(l: &Loaded, cell: &[(String, String)]) -> Vec<Level> {
    cell.iter()
        .filter_map(|(f, name)| {
            l.study
                .factors
                .iter()
                .find(|x| &x.name == f)
                .and_then(|x| x.all_levels().into_iter().find(|lv| &lv.name == name))
        })
        .collect()
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
/// `crate::mariadb::server_options` for what the measurements add.
fn maria_options(l: &Loaded, dir: PathBuf, restart: &BTreeMap<String, String>) -> MariaOptions {
    MariaOptions {
        dir: Some(dir),
        settings: crate::mariadb::server_options(l, restart),
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
    for pr in &l.study.probes {
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
    profiles: Vec<crate::profile::ProfileRow>,
}

/// The text of each var for this run: tracelab's own (`clock_lib`), study
/// vars (quick ones over them, `--var` over both), each factor's level
/// name under the factor's name, the levels' vars, and for a run under
/// strace the study's `strace_vars`.
pub(crate) fn run_vars(
    ctx: &Context<'_>,
    cell: &[(String, String)],
    levels: &[Level],
    strace: bool,
) -> BTreeMap<String, String> {
    vars_of(
        ctx.l,
        ctx.quick,
        ctx.builtins,
        ctx.overrides,
        cell,
        levels,
        strace,
    )
}

/// [`run_vars`] before a run's context exists (`builtins` may be empty:
/// the checks made before anything runs need no path of tracelab's).
pub(crate) fn vars_of(
    l: &Loaded,
    quick: bool,
    builtins: &BTreeMap<String, String>,
    overrides: &BTreeMap<String, String>,
    cell: &[(String, String)],
    levels: &[Level],
    strace: bool,
) -> BTreeMap<String, String> {
    let mut v: BTreeMap<String, String> = builtins.clone();
    v.extend(l.study.vars.iter().map(|(k, x)| (k.clone(), value_text(x))));
    if quick {
        for (k, x) in &l.study.quick.vars {
            v.insert(k.clone(), value_text(x));
        }
    }
    v.extend(overrides.iter().map(|(k, x)| (k.clone(), x.clone())));
    for (f, name) in cell {
        v.insert(f.clone(), name.clone());
    }
    for lv in levels {
        for (k, x) in &lv.vars {
            // A level's var may name a study var: rows = "{small}".
            let text = value_text(x);
            let text = substitute(&text, &v).unwrap_or(text);
            v.insert(k.clone(), text);
        }
    }
    if strace {
        // A run under strace: `strace_vars` over the cell's, before the
        // references left are resolved (`iterations = "{strace_iter}"`
        // changes `calls = "3 * {iterations}"` too).
        for (k, x) in &l.study.measure.strace_vars {
            let text = value_text(x);
            let text = substitute(&text, &v).unwrap_or(text);
            v.insert(k.clone(), text);
        }
    }
    resolve(&mut v);
    v
}

/// Replaces the `{var}`s left in vars' texts (a level's var naming another
/// var of a later level, or of its own), until none changes; a reference
/// to no var stays, to be reported where the var is used.
fn resolve(v: &mut BTreeMap<String, String>) {
    for _ in 0..8 {
        let mut changed = false;
        let snapshot = v.clone();
        for text in v.values_mut() {
            if !text.contains('{') {
                continue;
            }
            if let Ok(t) = substitute(text, &snapshot) {
                if t != *text {
                    *text = t;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
}

/// A number, or text that becomes one once its `{var}`s are replaced: a
/// number, or arithmetic in the report's expression language (`"3 *
/// {iterations}"`).
pub(crate) fn num(
    l: &Loaded,
    key: &str,
    n: &Num,
    vars: &BTreeMap<String, String>,
) -> Result<f64, StudyError> {
    match n {
        Num::Int(i) => Ok(*i as f64),
        Num::Float(f) => Ok(*f),
        Num::Text(t) => {
            let s = substitute(t, vars).map_err(|e| l.error(key, e))?;
            if let Ok(x) = s.trim().parse::<f64>() {
                return Ok(x);
            }
            // Arithmetic on numbers only: the expression language reads a
            // bare word as text (which counts as 0).
            let arithmetic = s
                .chars()
                .all(|c| c.is_ascii_digit() || " \t.+-*/()".contains(c));
            arithmetic
                .then(|| crate::columns::compile(&s).ok())
                .flatten()
                .and_then(|e| e.eval(&BTreeMap::new()))
                .ok_or_else(|| l.error(key, format!("expected a number, found `{s}`")))
        }
    }
}

/// How much one run does, checked: a count is a whole number in its
/// range (`sessions = 0` and `sessions = 1.5` were taken as 1), a runtime
/// a positive number of seconds.
struct Amounts {
    sessions: usize,
    per_commit: u64,
    stop: Stop,
    warmup: u64,
}

/// The most sessions a run may open.
const MAX_SESSIONS: u64 = 10_000;
/// The most statements or transactions a count may name.
const MAX_COUNT: u64 = 1_000_000_000_000;

fn whole(
    l: &Loaded,
    key: &str,
    n: &Num,
    vars: &BTreeMap<String, String>,
    least: u64,
    most: u64,
) -> Result<u64, StudyError> {
    let x = num(l, key, n, vars)?;
    if x.is_finite() && x.fract() == 0.0 && x >= least as f64 && x <= most as f64 {
        Ok(x as u64)
    } else {
        Err(l.error(
            key,
            format!("{x}: expected a whole number from {least} to {most}"),
        ))
    }
}

fn amounts(l: &Loaded, vars: &BTreeMap<String, String>) -> Result<Amounts, StudyError> {
    let w = &l.study.workload;
    let sessions = whole(l, "workload.sessions", &w.sessions, vars, 1, MAX_SESSIONS)? as usize;
    let per_commit = whole(
        l,
        "workload.tx_per_commit",
        &w.tx_per_commit,
        vars,
        0,
        MAX_COUNT,
    )?;
    let stop = if let Some(n) = &w.statements {
        let n = whole(l, "workload.statements", n, vars, 1, MAX_COUNT)?;
        Stop::Transactions(if per_commit > 0 {
            n.div_ceil(per_commit)
        } else {
            n
        })
    } else if let Some(n) = &w.transactions {
        Stop::Transactions(whole(l, "workload.transactions", n, vars, 1, MAX_COUNT)?)
    } else if let Some(r) = &w.runtime {
        let secs = num(l, "workload.runtime", r, vars)?;
        if !(secs > 0.0 && secs <= 7.0 * 86400.0) {
            return Err(l.error(
                "workload.runtime",
                format!("{secs}: expected seconds, more than 0 and at most a week"),
            ));
        }
        Stop::Runtime(Duration::from_secs_f64(secs))
    } else {
        Stop::Transactions(1)
    };
    let warmup = whole(l, "workload.warmup", &w.warmup, vars, 0, MAX_COUNT)?;
    Ok(Amounts {
        sessions,
        per_commit,
        stop,
        warmup,
    })
}

/// The SQL for `engine` (its pieces joined in order), with vars replaced.
pub(crate) fn sql_of(
    l: &Loaded,
    key: &str,
    sql: &Sql,
    engine: &str,
    vars: &BTreeMap<String, String>,
) -> Result<Option<String>, StudyError> {
    let Some(pieces) = sql.for_engine(engine) else {
        return Ok(None);
    };
    let mut text = Vec::new();
    for p in pieces {
        let t = l.sql_text(key, p)?;
        let t = substitute(&t, vars).map_err(|e| l.error(key, e))?;
        text.push(t.trim().trim_end_matches(';').trim_end().to_string());
    }
    Ok(Some(text.join(";\n")))
}

/// When a run's scripts go: before its measurement or after it.
#[derive(Clone, Copy)]
pub(crate) enum Phase {
    Before,
    After,
}

/// A run's before or after scripts for its engine: the levels' first, the
/// workload's last (it may end with the CHECKPOINT a measurement starts
/// from).
pub(crate) fn scripts(
    l: &Loaded,
    levels: &[Level],
    w: &WorkloadSpec,
    engine: &str,
    vars: &BTreeMap<String, String>,
    phase: Phase,
) -> Result<Vec<String>, StudyError> {
    let (key, pick): (&str, fn(&Level) -> Option<&Sql>) = match phase {
        Phase::Before => ("before", |lv| lv.before.as_ref()),
        Phase::After => ("after", |lv| lv.after.as_ref()),
    };
    let mut out = Vec::new();
    for lv in levels {
        if let Some(sql) = pick(lv) {
            out.extend(sql_of(
                l,
                &format!("factors.levels.{key}"),
                sql,
                engine,
                vars,
            )?);
        }
    }
    let own = match phase {
        Phase::Before => w.before.as_ref(),
        Phase::After => w.after.as_ref(),
    };
    if let Some(sql) = own {
        out.extend(sql_of(l, &format!("workload.{key}"), sql, engine, vars)?);
    }
    Ok(out)
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
pub(crate) fn ready(
    ctx: &Context<'_>,
    levels: &[Level],
    vars: &BTreeMap<String, String>,
    eng: &mut Engine,
) -> Result<(), StudyError> {
    apply_server(ctx, eng, levels, vars)?;
    if !eng.setup_done {
        if let Some(sql) = ctx.l.study.setup.as_ref() {
            if let Some(t) = sql_of(ctx.l, "setup", sql, &eng.name, vars)? {
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

/// The workload, options and settings of a cell's levels with `vars`.
pub(crate) fn prepare(
    l: &Loaded,
    levels: &[Level],
    vars: &BTreeMap<String, String>,
    eng: &Engine,
    scratch: &std::path::Path,
) -> Result<Prepared, StudyError> {
    let s = &l.study;
    let w = &s.workload;
    let e = eng.name.as_str();
    let k = eng.kind;
    let mut sql_spec = &w.sql;
    for lv in levels {
        if let Some(x) = &lv.sql {
            sql_spec = x;
        }
    }
    let sql = sql_of(l, "workload.sql", sql_spec, e, vars)?
        .ok_or_else(|| l.error("workload.sql", format!("no SQL for engine {e}")))?;
    let binds = match &w.binds {
        Some(b) => {
            let path = l.data_file("workload.binds", b, scratch)?;
            read_binds(&path).map_err(|e| l.error("workload.binds", e.to_string()))?
        }
        None => Default::default(),
    };
    let simple = w.protocol == "simple";
    // Several statements with prepared statements: each its own
    // execution, in turn (sqlrun's sequential mode).
    let pieces = if simple { Vec::new() } else { statements(&sql) };
    let workload = if pieces.len() > 1 {
        let mut wl = Workload::with_binds(&pieces[0], binds.clone());
        for p in &pieces[1..] {
            wl.statements
                .extend(Workload::with_binds(p, binds.clone()).statements);
        }
        wl
    } else {
        Workload::with_binds(&sql, binds)
    };
    let Amounts {
        sessions,
        per_commit,
        stop,
        warmup,
    } = amounts(l, vars)?;
    let mut settings: Vec<(String, String)> = w.settings.for_engine(e).into_iter().collect();
    for lv in levels {
        settings.extend(lv.settings.for_engine(e));
    }
    let mut fetch = num(l, "workload.fetch_size", &w.fetch_size, vars)?;
    let mut timer = Timer::Vdso;
    let mut trace = s.measure.trace;
    for lv in levels {
        if let Some(f) = &lv.run.fetch_size {
            fetch = num(l, "factors.levels.run.fetch_size", f, vars)?;
        }
        timer = match lv.run.timer.as_deref() {
            Some("syscall") => Timer::Syscall,
            Some("coarse") => Timer::Coarse,
            Some(_) => Timer::Vdso,
            None => timer,
        };
        trace |= lv.run.trace;
    }
    let result_cache = crate::result_cache::options(levels, |k, n| num(l, k, n, vars))?;
    let base = RunOptions {
        url: if k == Kind::Postgres {
            with_tag(&eng.url, "tracelab-study")
        } else {
            eng.url.clone()
        },
        // Messages show the URL the user gave, not the parameters added.
        shown_url: Some(eng.url.clone()),
        sessions,
        stop,
        per_commit,
        simple,
        timer,
        fetch_size: fetch.max(0.0) as u32,
        settings,
        // In force from each backend's start, as libpq's `options` would
        // put them, and no statement of their own for a proxy to trace.
        settings_at_connect: true,
        result_cache,
        ..RunOptions::default()
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

fn run_one(ctx: &Context<'_>, p: &Planned, eng: &mut Engine) -> Result<RunResult, StudyError> {
    let l = ctx.l;
    let s = &l.study;
    let w = &s.workload;
    let levels = levels_of(l, &p.cell);
    let vars = run_vars(ctx, &p.cell, &levels, p.strace);
    let e = eng.name.clone();
    let mut m: BTreeMap<String, f64> = BTreeMap::new();

    ready(ctx, &levels, &vars, eng)?;
    let prep = prepare(l, &levels, &vars, eng, ctx.scratch)?;

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
    let before_sql = scripts(l, &levels, w, &e, &vars, Phase::Before)?;
    for b in &before_sql {
        script(eng, b, "before", &mut m)?;
    }
    flush_stats(eng);
    let mut first: BTreeMap<String, f64> = BTreeMap::new();
    for pr in &s.probes {
        if pr.when == When::After || eng.skipped_probes.contains(&pr.name) {
            continue;
        }
        if let Some(q) = sql_of(l, "probes.sql", &pr.sql, &e, &vars)? {
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
    let measured = observed_run(ctx, p, eng, &prep)?;
    m.extend(measured.m);
    let mut notes = eng.notes.clone();
    notes.extend(measured.notes);
    let summary = measured.summary;

    // After: the probes' second look, the after scripts, the after probes.
    flush_stats(eng);
    for pr in &s.probes {
        if pr.when != When::Delta || eng.skipped_probes.contains(&pr.name) {
            continue;
        }
        if let Some(q) = sql_of(l, "probes.sql", &pr.sql, &e, &vars)? {
            let mut got = BTreeMap::new();
            script(eng, &q, &format!("probe {}", pr.name), &mut got)?;
            for (k, v) in got {
                if let Some(b) = first.get(&k) {
                    m.insert(k, v - b);
                }
            }
        }
    }
    let after_sql = scripts(l, &levels, w, &e, &vars, Phase::After)?;
    for a in &after_sql {
        script(eng, a, "after", &mut m)?;
    }
    flush_stats(eng);
    for pr in &s.probes {
        if pr.when != When::After || eng.skipped_probes.contains(&pr.name) {
            continue;
        }
        if let Some(q) = sql_of(l, "probes.sql", &pr.sql, &e, &vars)? {
            script(eng, &q, &format!("probe {}", pr.name), &mut m)?;
        }
    }
    let numeric: BTreeMap<String, f64> = vars
        .iter()
        .filter_map(|(k, v)| v.parse::<f64>().ok().map(|x| (k.clone(), x)))
        .collect();
    if p.strace {
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
        sessions: crate::result_cache::session_values(&summary),
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

struct Observed {
    summary: Summary,
    m: BTreeMap<String, f64>,
    notes: Vec<String>,
    /// The server's strace table, of a run under strace.
    syscalls: Vec<Syscall>,
    /// The profile of its traces (client and proxy), for the report.
    profiles: Vec<crate::profile::ProfileRow>,
}

/// The measured run of a cell and what is measured around it: the
/// sessions' server CPU, server counters, system calls (the server's and
/// the driver's), the server log's growth, the libraries the server
/// preloads, the traces of the client and of a proxy in the path, and the
/// run's own figures.
fn observed_run(
    ctx: &Context<'_>,
    p: &Planned,
    eng: &mut Engine,
    prep: &Prepared,
) -> Result<Observed, StudyError> {
    let s = &ctx.l.study;
    let e = eng.name.clone();
    let k = eng.kind;
    let scratch = ctx.scratch;
    let mut notes = Vec::new();
    let mut m: BTreeMap<String, f64> = BTreeMap::new();
    let levels = levels_of(ctx.l, &p.cell);
    let tag = format!("tracelab-study-{}", p.seq);
    let release = scratch.join(format!("release-{}", p.seq));
    let _ = std::fs::remove_file(&release);
    let mut opts = prep.base.clone();
    if k == Kind::Postgres {
        opts.url = with_tag(&eng.url, &tag);
    }
    let sessions = prep.sessions;

    // The libraries the server preloads, in each of its processes.
    let libs = preloads(&eng.env);
    if !libs.is_empty() {
        if let Some(pid) = server_pid(eng) {
            let procs = measure::process_tree(pid);
            let mapped = procs
                .iter()
                .filter(|p| libs.iter().all(|l| measure::maps_file(**p, l)))
                .count();
            m.insert("server_processes".into(), procs.len() as f64);
            m.insert("preload_processes".into(), mapped as f64);
        }
    }

    let mut watch = None;
    let mut connect_cost = None;
    if k == Kind::Postgres && s.measure.backend_cpu {
        connect_cost = measure::connect_cost_ns(&prep.base.url, &prep.base.settings);
        watch = CpuWatch::start(&eng.url, &tag, sessions, release.clone());
        if watch.is_none() {
            notes.push("backend CPU not measured: no watcher connection".into());
        }
    }
    if k == Kind::Mysql && s.measure.backend_cpu {
        // The sessions are threads of the server process, read in /proc:
        // only for the private server, which is on this machine.
        match server_pid(eng) {
            None if eng.private.is_none() => notes.push(
                "backend CPU not measured: MariaDB's session threads are read from /proc, \
                 for the private server only (not with --db)"
                    .into(),
            ),
            None => notes.push("backend CPU not measured: no MariaDB pid file".into()),
            Some(pid) => {
                connect_cost = measure::mariadb_connect_cost_ns(&eng.url, pid, &prep.base.settings);
                watch = CpuWatch::start_mariadb(&eng.url, pid, sessions, release.clone());
                if watch.is_none() {
                    notes.push("backend CPU not measured: no watcher connection".into());
                }
            }
        }
    }
    if watch.is_some() {
        opts.pause_at_exit = Some(Some(release.clone()));
    }

    // The server's processes: the postmaster (its backends and workers
    // are its children) or mariadbd (its sessions are threads).
    let straced = s.measure.strace || p.strace;
    let wants_server = straced || s.measure.server_counters;
    let server = if wants_server { server_of(eng)? } else { None };
    if wants_server && server.is_none() && k != Kind::Sqlite {
        notes.push(format!(
            "server counters and syscalls not taken: {}",
            if eng.private.is_none() && k == Kind::Mysql {
                "MariaDB's processes are read on this machine, for the private server only (not with --db)"
            } else {
                "the server's process was not found on this machine"
            }
        ));
    }
    // strace of the server, and of this process (the driver).
    let strace_ok = straced && Strace::available();
    if straced && !strace_ok {
        notes.push("syscalls not counted: strace not installed (apt-get install -y strace)".into());
    }
    let server_strace = match server {
        Some(srv) if strace_ok => {
            let st = Strace::attach(srv.top(), &scratch.join("strace.txt"));
            if st.is_none() {
                notes.push(format!(
                    "server syscalls not counted: strace could not attach to the {e} server"
                ));
            }
            st
        }
        _ => None,
    };
    let client_strace = if strace_ok && s.measure.strace_client {
        let st = Strace::attach(
            std::process::id() as i32,
            &scratch.join("strace-client.txt"),
        );
        if st.is_none() {
            notes.push("client syscalls not counted: strace could not attach to tracelab".into());
        }
        st
    } else {
        None
    };
    let counters = match server {
        Some(srv) if s.measure.server_counters => {
            let w = ServerWatch::start(srv, scratch);
            if w.is_none() {
                notes.push("server counters not taken: cannot read the server's /proc".into());
            }
            w
        }
        _ => None,
    };

    // The client's traces, and a proxy in the path (the sessions, and a
    // cache's channels, go to it).
    let trace_dir = scratch.join(format!("trace-{}", p.seq));
    if prep.trace {
        let _ = std::fs::remove_dir_all(&trace_dir);
        opts.trace_dir = Some(trace_dir.clone());
    }
    let proxy_dir = scratch.join(format!("proxy-{}", p.seq));
    let in_path = crate::proxy::start_for(&levels, k, &eng.url, Some(&proxy_dir))?;
    if let Some((px, _)) = &in_path {
        opts.url = px.url(&opts.url)?;
        opts.shown_url = Some(px.url(&eng.url)?);
    }

    // The server's logs, from here on.
    let logs = if s.measure.server_log.on {
        match &eng.private {
            Some(st) => Some(LogWatch::start(st.log_files())),
            None => {
                if k != Kind::Sqlite {
                    notes.push(format!(
                        "server log not measured: the {e} server is not the private one"
                    ));
                }
                None
            }
        }
    } else {
        None
    };

    let cpu0 = measure::self_cpu_ns();
    let ran = tracelab_run::run(&opts, &prep.workload);
    let cpu1 = measure::self_cpu_ns();
    let backend_ns = watch.map(CpuWatch::finish);
    let _ = std::fs::remove_file(&release);
    // Every trace written (the proxy's as its connections end: it is
    // stopped here), then the counts of the system calls that wrote them.
    let filter = s.measure.profile_where.as_deref().unwrap_or("1");
    let kept = |what: &str| ctx.keep.map(|k| k.join(format!("{}-{}", p.seq, what)));
    let mut profiles = Vec::new();
    if let Some((px, traced)) = in_path {
        let c = crate::proxy::collect(px, traced, filter, kept("proxy").as_deref());
        m.extend(c.measurements);
        profiles.extend(c.profile);
        notes.extend(c.notes);
    }
    if let Some(st) = client_strace {
        let t = st.finish_table();
        if t.total.is_none() {
            notes.push("client syscalls not counted: strace wrote no table".into());
        }
        let mut c = t.measurements();
        zero_calls(&mut c, &s.measure.strace_calls);
        m.extend(c.into_iter().map(|(k, v)| (format!("client_{k}"), v)));
    }
    let summary: Summary =
        ran.map_err(|e| StudyError::Database(format!("run {}: {e}", cell_key(&p.cell))))?;
    if let Some(f) = summary.per_session.iter().find_map(|s| s.failure.clone()) {
        return Err(StudyError::Database(format!(
            "run {}: a session failed: {f}",
            cell_key(&p.cell)
        )));
    }
    if summary.errors > 0 {
        let first_error = summary
            .errors_by_code
            .iter()
            .next()
            .map(|(c, (_, msg))| format!("{c}: {msg}"))
            .unwrap_or_default();
        return Err(StudyError::Database(format!(
            "run {}: {} statement errors, first {first_error}",
            cell_key(&p.cell),
            summary.errors
        )));
    }
    if k == Kind::Postgres {
        wait_gone(eng, &tag);
    }
    if let Some(w) = counters {
        let (c, note) = w.finish();
        m.extend(c);
        notes.extend(note);
    }
    let mut syscalls = Vec::new();
    if let Some(st) = server_strace {
        // A run made for strace keeps its whole table (the report's
        // System calls section); strace on every run, its counts.
        let t = st.finish_table();
        if t.total.is_none() {
            notes.push("syscalls not counted: strace wrote no table".into());
        }
        let mut c = t.measurements();
        zero_calls(&mut c, &s.measure.strace_calls);
        m.extend(c);
        if p.strace {
            syscalls = t.rows;
        }
    }
    if let Some(w) = logs {
        m.extend(w.finish(&s.measure.server_log.count));
    }
    for e in summary.trace_errors() {
        notes.push(format!(
            "trace not written completely, its profile is short: {e}"
        ));
    }
    if prep.trace {
        m.insert(
            "trace_bytes".into(),
            crate::profile::dir_bytes(&trace_dir) as f64,
        );
        match measure::trace_profile(&trace_dir) {
            Ok(t) => m.extend(t),
            Err(e) => notes.push(format!("traces not profiled: {e}")),
        }
        if let Ok(rows) = crate::profile::of_dir(&trace_dir, filter) {
            profiles.extend(crate::profile::tagged(rows, "client"));
        }
        crate::profile::keep_or_remove(&trace_dir, kept("client").as_deref(), &mut notes);
    }
    // The server tracer's traces (a level preloading `{server_trace_lib}`):
    // their size, then they go, so that each run counts its own.
    if let Some(dir) = eng.env.get("TRACELAB_SERVER_TRACE_DIR") {
        let dir = std::path::Path::new(dir);
        m.insert(
            "server_trace_bytes".into(),
            crate::profile::dir_bytes(dir) as f64,
        );
        if let Ok(rd) = std::fs::read_dir(dir) {
            for f in rd.filter_map(|e| e.ok()) {
                let _ = std::fs::remove_file(f.path());
            }
        }
    }
    m.extend(crate::result_cache::measurements(&summary));

    // The run's own figures.
    for (name, v) in measure::run_figures(&summary) {
        m.insert(name.into(), v);
    }
    // The run's own ids of its server sessions (PostgreSQL backend pids,
    // MariaDB connection ids): the watcher must have read those.
    let run_ids: Option<Vec<i64>> = summary
        .per_session
        .iter()
        .map(|s| s.backend_pid.map(i64::from))
        .collect::<Option<Vec<i64>>>()
        .map(|mut v| {
            v.sort_unstable();
            v
        });
    match (k, backend_ns) {
        (_, Some(Ok(r))) if run_ids.as_ref().is_some_and(|ids| *ids != r.ids) => notes.push(
            format!(
                "backend CPU not measured for a run: the sessions read ({:?}) were not the run's ({:?})",
                r.ids,
                run_ids.unwrap_or_default()
            ),
        ),
        (_, Some(Ok(r))) => {
            let cost = connect_cost.unwrap_or(0) * sessions as u64;
            m.insert(
                "backend_cpu_ms".into(),
                r.ns.saturating_sub(cost) as f64 / 1e6,
            );
        }
        (_, Some(Err(why))) => notes.push(format!("backend CPU not measured for a run: {why}")),
        (Kind::Sqlite, _) if s.measure.backend_cpu => {
            // SQLite runs in this process: its CPU is ours (the driver's
            // included).
            m.insert(
                "backend_cpu_ms".into(),
                cpu1.saturating_sub(cpu0) as f64 / 1e6,
            );
        }
        _ => {}
    }
    Ok(Observed {
        summary,
        m,
        notes,
        syscalls,
        profiles,
    })
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

/// Makes the probe connection's own pending statistics visible (PG 15+),
/// so that its scripts' WAL does not land in the run's deltas.
fn flush_stats(eng: &mut Engine) {
    if eng.kind == Kind::Postgres {
        if let Ok(c) = eng.client() {
            let _ = c.execute("SELECT pg_stat_force_next_flush()");
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
    fn numeric_keys_take_arithmetic_over_vars() {
        let l = Loaded::parse("t", STUDY, None, &[]).unwrap();
        let mut v = BTreeMap::new();
        // A var naming a var defined after it resolves all the same.
        v.insert("calls".to_string(), "3 * {iterations}".to_string());
        v.insert("iterations".to_string(), "{n}".to_string());
        v.insert("n".to_string(), "250".to_string());
        resolve(&mut v);
        assert_eq!(v["calls"], "3 * 250");
        let n = num(&l, "workload.statements", &Num::Text("{calls}".into()), &v).unwrap();
        assert_eq!(n, 750.0);
        let e = num(&l, "workload.statements", &Num::Text("{nope}".into()), &v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no var `nope`"), "{e}");
        let e = num(&l, "workload.statements", &Num::Text("many".into()), &v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected a number, found `many`"), "{e}");
    }

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
            quick: false,
            restart_keys: &restart_keys,
            scratch: scratch.path(),
            builtins: &builtins,
            overrides: &overrides,
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
}

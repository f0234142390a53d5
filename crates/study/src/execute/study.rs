//! A whole study run: the checks made before anything runs (server
//! programs, vars, measurement names, every cell's amounts, the `--db`
//! URLs, consent to change a user's database, each engine's
//! requirements), the engines started, then every planned run not yet in
//! the store, the freshness check, and the engines stopped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tracelab_db::stop;
use tracelab_engine::Engine as Kind;

use crate::error::StudyError;
use crate::execute::requirement::requirement;
use crate::execute::{
    check_needs, engine_facts, measure, open_engine, run_one, uses_restart, Context, Engine,
    Observer, Options, Outcome, CLOCK_LIB, SERVER_TRACER,
};
use crate::model::engine::{engine_of_url, redact};
use crate::model::revision::revise;
use crate::model::spec::Loaded;
use crate::plan::cell::{engine_of, levels_of};
use crate::plan::{cell_key, plan, Cell, Planned, VarSource};
use crate::store::{Header, Store, StoreLock};

fn now_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// What a run goes on from: the study (the stored one on `--resume`), its
/// plan, the store when resumed, `--quick` and the `--var` values.
struct Start {
    loaded: Loaded,
    planned: Vec<Planned>,
    store: Option<Store>,
    /// The results directory's lock, taken before a resumed store is
    /// read: a run still writing it refuses this one at once.
    lock: Option<StoreLock>,
    /// On `--resume` with a study file changed since the runs stored
    /// (and compatible with them): the parts that changed.
    revised: Option<Vec<&'static str>>,
    quick: bool,
    overrides: BTreeMap<String, String>,
    seed: u64,
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
    let mut start = start(given, o)?;
    let resumed = start.store.take();
    check_cells(&start)?;
    if let Some(changed) = &start.revised {
        obs.tell(&format!(
            "the study file changed since the runs stored: {}; the runs done are kept, the store now holds the file as it is",
            if changed.is_empty() { "layout only".to_string() } else { changed.join(", ") }
        ));
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
    let loaded = &start.loaded;
    let engines: BTreeSet<String> = start.planned.iter().map(|p| engine_of(&p.cell)).collect();
    check_dbs(o)?;
    consent(o, loaded, &engines)?;
    let mut problems = Vec::new();
    for e in &engines {
        let restarts =
            Kind::from_name(e) != Some(Kind::Sqlite) && uses_restart(loaded, &start.planned, e);
        problems.extend(requirement(e, db_for(o, e), scratch.path(), restarts));
    }
    let builtins = builtins(loaded, scratch.path(), &mut problems)?;
    if !problems.is_empty() {
        return Err(StudyError::Requirements(problems));
    }
    // One `study run` at a time per results directory, held to the end;
    // taken once the study is known to be runnable (a mistake leaves no
    // directory behind), before any server starts.
    // A resumed store's lock was taken before the store was read.
    let _lock = match start.lock.take() {
        Some(held) => held,
        None => StoreLock::take(&o.out)?,
    };

    let mut facts = measure::machine_facts(scratch.path());
    facts.extend(
        start
            .overrides
            .iter()
            .map(|(k, v)| (format!("var.{k}"), v.clone())),
    );
    // Engines, started (private) or connected (--db).
    let mut engs: BTreeMap<String, Engine> = BTreeMap::new();
    let result = (|| -> Result<Outcome, StudyError> {
        for e in &engines {
            // A MariaDB starts with the restart settings of its first run.
            let first: BTreeMap<String, String> = start
                .planned
                .iter()
                .find(|p| engine_of(&p.cell) == *e)
                .map(|p| {
                    levels_of(loaded, &p.cell)
                        .iter()
                        .flat_map(|lv| lv.restart.for_engine(e))
                        .collect()
                })
                .unwrap_or_default();
            let eng = open_engine(e, db_for(o, e), loaded, scratch.path(), &first)?;
            engs.insert(e.clone(), eng);
        }
        for eng in engs.values_mut() {
            facts.extend(engine_facts(eng));
            check_needs(eng, loaded);
        }
        let store = open_store(resumed, &start, o, &facts)?;
        let vars = VarSource {
            quick: start.quick,
            builtins: &builtins,
            overrides: &start.overrides,
        };
        run_plan(&start, vars, store, &mut engs, scratch.path(), o, obs)
    })();
    close_engines(&mut engs);
    result
}

/// The study and its plan: the stored ones on `--resume` (same file, same
/// plan, its `--quick` and vars), else the given study planned afresh.
fn start(given: &Loaded, o: &Options) -> Result<Start, StudyError> {
    let seed = o.choice.seed.or(given.study.seed).unwrap_or_else(now_seed);
    if !o.resume {
        if o.out.join(crate::store::FILE).exists() {
            // Refused before any server starts.
            Store::open(&o.out, true)?;
        }
        return Ok(Start {
            planned: plan(given, &o.choice, seed)?,
            loaded: given.clone(),
            store: None,
            lock: None,
            revised: None,
            quick: o.choice.quick,
            overrides: o.choice.vars.clone(),
            seed,
        });
    }
    // The lock first: a run that made the store may not have written its
    // study yet, and is refused rather than read half-written.
    if !o.out.join(crate::store::FILE).exists() {
        Store::open(&o.out, false)?;
    }
    let lock = StoreLock::take(&o.out)?;
    let store = Store::open(&o.out, false)?;
    let st = store.load()?;
    // The stored study decides, --quick or not, and its vars.
    if !o.choice.vars.is_empty() {
        return Err(StudyError::Usage(
            "--var with --resume: the study goes on with the vars it started with".into(),
        ));
    }
    let overrides = st
        .facts
        .iter()
        .filter_map(|(k, v)| k.strip_prefix("var.").map(|n| (n.to_string(), v.clone())))
        .collect();
    let stored = Loaded::parse(&st.file, &st.text, given.dir.clone(), given.embedded)?;
    if stored.study.name != given.study.name {
        return Err(StudyError::Usage(format!(
            "{} holds study `{}`, not `{}`",
            store.path().display(),
            stored.study.name,
            given.study.name
        )));
    }
    let planned = store.plan()?;
    // The file as it is now, when the runs stored can be kept with it (a
    // mistake the user fixed as told); the stored text when unchanged.
    let (loaded, revised) = if stored.text == given.text {
        (stored, None)
    } else {
        let done = store.done()?;
        let cells = |keep: &dyn Fn(&Planned) -> bool| {
            planned
                .iter()
                .filter(|p| keep(p))
                .map(|p| p.cell.clone())
                .collect::<Vec<_>>()
        };
        let changed = revise(
            &stored.study,
            &given.study,
            &cells(&|_| true),
            &cells(&|p| done.contains(&p.seq)),
        );
        match changed {
            Ok(changed) => (given.clone(), Some(changed)),
            // A built-in study a newer tracelab changed: the user cannot
            // put it back, and the stored one is what the runs ran.
            Err(_) if given.dir.is_none() => (stored, None),
            Err(why) => {
                return Err(StudyError::Usage(format!(
                    "{}: the study file changed since the runs stored in {}: {why}; nothing was run (put it back as it was, or run the study into another --out)",
                    given.file,
                    store.path().display()
                )))
            }
        }
    };
    Ok(Start {
        planned,
        revised,
        loaded,
        store: Some(store),
        lock: Some(lock),
        quick: st.quick,
        overrides,
        seed,
    })
}

/// Every `--var` names a var of the study, every report expression names
/// something the runs will produce, and every cell's amounts are sound,
/// before anything runs.
fn check_cells(start: &Start) -> Result<(), StudyError> {
    let study = &start.loaded.study;
    for k in start.overrides.keys() {
        if !study.vars.contains_key(k) && !study.quick.vars.contains_key(k) {
            return Err(StudyError::Usage(format!(
                "--var {k}=...: the study has no var `{k}` (it has: {})",
                study.vars.keys().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    start.loaded.check_measurements()?;
    let no_builtins = BTreeMap::new();
    let checking = VarSource {
        quick: start.quick,
        builtins: &no_builtins,
        overrides: &start.overrides,
    };
    let mut cells_seen = BTreeSet::new();
    for p in &start.planned {
        if cells_seen.insert((cell_key(&p.cell), p.strace)) {
            let cell = Cell::resolve(&start.loaded, &p.cell, p.strace, &checking);
            cell.workload(&start.loaded)?;
            cell.run_options(&start.loaded)?;
        }
    }
    Ok(())
}

/// The `--db` URL given for engine `e`, if any.
fn db_for<'a>(o: &'a Options, e: &str) -> Option<&'a str> {
    o.dbs
        .iter()
        .find(|u| engine_of_url(u) == Some(e))
        .map(String::as_str)
}

/// Every `--db` URL names an engine and its client reads it: said now, not
/// as a failed session later.
fn check_dbs(o: &Options) -> Result<(), StudyError> {
    for u in &o.dbs {
        if engine_of_url(u).is_none() {
            return Err(StudyError::Usage(format!(
                "--db {}: expected a postgres://, mysql:// or sqlite: URL",
                redact(u)
            )));
        }
        tracelab_run::check_url(u).map_err(|e| StudyError::Usage(e.to_string()))?;
    }
    Ok(())
}

/// A database of the user's: name what the study would change there, and
/// go on only with consent (`--yes`).
fn consent(o: &Options, loaded: &Loaded, engines: &BTreeSet<String>) -> Result<(), StudyError> {
    if o.yes {
        return Ok(());
    }
    let mut told = Vec::new();
    for e in engines {
        let Some(url) = db_for(o, e) else { continue };
        let changes = loaded.changes(e)?;
        if changes.is_empty() {
            continue;
        }
        told.push(format!(
            "study {} would change {} ({e}), a database that is not tracelab's own:",
            loaded.study.name,
            redact(url)
        ));
        for (when, what) in changes {
            told.push(format!("  {when}: {}", what.join(", ")));
        }
    }
    if told.is_empty() {
        return Ok(());
    }
    told.push("Nothing was run; run it again with --yes to go ahead.".into());
    Err(StudyError::Usage(told.join("\n")))
}

/// Built-in vars, their files written to `scratch` (only when the study
/// names them): `{clock_lib}`, the clock shim for the server to preload;
/// `{server_trace_lib}` and `{server_trace_dir}`, tracelab's server tracer
/// and a directory the server's user may write its traces to
/// (docs/server-trace.md). What this build lacks is a problem.
fn builtins(
    loaded: &Loaded,
    scratch: &Path,
    problems: &mut Vec<String>,
) -> Result<BTreeMap<String, String>, StudyError> {
    use std::os::unix::fs::PermissionsExt;
    let mut builtins = BTreeMap::new();
    if loaded.text.contains("{clock_lib}") {
        let path = scratch.join("libtracelab_clock.so");
        if CLOCK_LIB.is_empty() {
            problems.push(
                "the study preloads tracelab's clock shim ({clock_lib}), which this build of tracelab lacks (it builds on Linux x86_64 and aarch64 only)"
                    .into(),
            );
        } else {
            std::fs::write(&path, CLOCK_LIB).map_err(crate::error::io(&path))?;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755));
            builtins.insert("clock_lib".to_string(), path.display().to_string());
        }
    }
    if loaded.text.contains("{server_trace_lib}") {
        let lib = SERVER_TRACER.get().copied().unwrap_or_default();
        if lib.is_empty() {
            problems.push(
                "the study preloads tracelab's server tracer ({server_trace_lib}), which this build of tracelab lacks (it builds on Linux x86_64 and aarch64 only)"
                    .into(),
            );
        } else {
            let path = scratch.join("libtracelab_servertrace.so");
            std::fs::write(&path, lib).map_err(crate::error::io(&path))?;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755));
            let dir = scratch.join("server-traces");
            std::fs::create_dir_all(&dir).map_err(crate::error::io(&dir))?;
            tracelab_db::share_with_servers(&dir)?;
            builtins.insert("server_trace_lib".to_string(), path.display().to_string());
            builtins.insert("server_trace_dir".to_string(), dir.display().to_string());
        }
    }
    Ok(builtins)
}

/// The store: the resumed one, its facts brought up to date, or a new one
/// holding the study, the facts and the plan.
fn open_store(
    resumed: Option<Store>,
    start: &Start,
    o: &Options,
    facts: &BTreeMap<String, String>,
) -> Result<Store, StudyError> {
    if let Some(mut s) = resumed {
        s.facts(facts)?;
        if start.revised.is_some() {
            s.revise(&start.loaded.file, &start.loaded.text)?;
        }
        return Ok(s);
    }
    let mut s = Store::open(&o.out, true)?;
    let reps = start
        .planned
        .iter()
        .filter(|p| !p.strace)
        .map(|p| p.rep + 1)
        .max()
        .unwrap_or(1);
    s.begin(
        &Header {
            name: &start.loaded.study.name,
            file: &start.loaded.file,
            text: &start.loaded.text,
            quick: start.quick,
            reps,
            seed: start.seed,
        },
        facts,
        &start.planned,
    )?;
    Ok(s)
}

/// Every planned run not yet in the store, each written as it ends, then
/// the freshness check once per engine; until done or interrupted.
fn run_plan(
    start: &Start,
    vars: VarSource<'_>,
    mut store: Store,
    engs: &mut BTreeMap<String, Engine>,
    scratch: &Path,
    o: &Options,
    obs: &dyn Observer,
) -> Result<Outcome, StudyError> {
    let (loaded, planned) = (&start.loaded, &start.planned);
    let study = &loaded.study;
    let done = store.done()?;
    // The freshness check runs once per engine after the plan.
    let checks: Vec<&String> = if study.freshness.is_some() {
        engs.keys().collect()
    } else {
        Vec::new()
    };
    let checked = store.freshness_done()?;
    obs.begin(
        planned.len() + checks.len(),
        done.len() + checks.iter().filter(|e| checked.contains(**e)).count(),
    );
    let checks: Vec<String> = checks.into_iter().cloned().collect();
    let restart_keys: BTreeSet<String> = study
        .factors
        .iter()
        .flat_map(|f| f.all_levels())
        .flat_map(|l| l.restart.names().cloned().collect::<Vec<_>>())
        .collect();
    let keep = o.keep_traces.then(|| o.out.join("traces"));
    let ctx = Context {
        l: loaded,
        restart_keys: &restart_keys,
        scratch,
        vars,
        keep: keep.as_deref(),
        obs,
    };
    // Each cell resolved once, for all of its runs.
    let mut cells: BTreeMap<(String, bool), Cell> = BTreeMap::new();
    for p in planned {
        cells
            .entry((cell_key(&p.cell), p.strace))
            .or_insert_with(|| Cell::resolve(loaded, &p.cell, p.strace, &ctx.vars));
    }
    let mut ran = 0;
    let mut interrupted = false;
    for p in planned {
        if done.contains(&p.seq) {
            continue;
        }
        if o.interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let t0 = Instant::now();
        let cell = &cells[&(cell_key(&p.cell), p.strace)];
        let e = &cell.engine;
        let eng = engs
            .get_mut(e)
            .ok_or_else(|| StudyError::Usage(format!("engine {e} not started")))?;
        let r = run_one(&ctx, p, cell, eng)?;
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
        obs.run_done(&cell.key());
    }
    if let Some(fr) = study.freshness.as_ref().filter(|_| !interrupted) {
        for e in checks.iter().filter(|e| !checked.contains(*e)) {
            if o.interrupt.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            let eng = engs
                .get_mut(e)
                .ok_or_else(|| StudyError::Usage(format!("engine {e} not started")))?;
            let values = crate::execute::freshness::run(&ctx, &o.choice, fr, eng)?;
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
}

/// Server settings the levels changed on a database of the user's go back
/// to what they were; private servers stop.
fn close_engines(engs: &mut BTreeMap<String, Engine>) {
    for eng in engs.values_mut() {
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
}

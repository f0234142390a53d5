//! The measured run of a cell and what is measured around it: the
//! sessions' server CPU, server counters, system calls (the server's and
//! the driver's), the server log's growth, the libraries the server
//! preloads, the traces of the client and of a proxy in the path, and the
//! run's own figures.

use std::collections::BTreeMap;
use std::path::Path;

use tracelab_engine::Engine as Kind;
use tracelab_run::Summary;

use crate::error::StudyError;
use crate::execute::measure::{self, CpuWatch, LogWatch, Reading, Strace};
use crate::execute::server_counters::ServerWatch;
use crate::execute::{
    preloads, server_of, server_pid, wait_gone, with_tag, zero_calls, Context, Engine, Prepared,
};
use crate::model::outside::CommandWhen;
use crate::model::spec::Study;
use crate::plan::{Cell, Planned};
use crate::store::{ProfileRow, Syscall};

/// What a measured run gives.
pub(crate) struct Observed {
    pub(crate) summary: Summary,
    pub(crate) m: BTreeMap<String, f64>,
    pub(crate) notes: Vec<String>,
    /// The server's strace table, of a run under strace.
    pub(crate) syscalls: Vec<Syscall>,
    /// The profile of its traces (client, proxy, server), for the report.
    pub(crate) profiles: Vec<ProfileRow>,
}

/// The watcher of the sessions' server CPU, and what connecting costs a
/// session (taken off what the watcher reads).
struct Backend {
    watch: Option<CpuWatch>,
    connect_cost: Option<u64>,
}

/// What watches the server's (and the driver's) processes during the run.
struct Watches {
    server_strace: Option<Strace>,
    client_strace: Option<Strace>,
    counters: Option<ServerWatch>,
}

/// The measured run of `cell` (planned as `p`) on `eng`, as `prep` says.
pub(crate) fn observed_run(
    ctx: &Context<'_>,
    p: &Planned,
    cell: &Cell,
    eng: &mut Engine,
    prep: &Prepared,
) -> Result<Observed, StudyError> {
    let s = &ctx.l.study;
    let k = eng.kind;
    let scratch = ctx.scratch;
    let mut notes = Vec::new();
    let mut m: BTreeMap<String, f64> = BTreeMap::new();
    let tag = format!("tracelab-study-{}", p.seq);
    let release = scratch.join(format!("release-{}", p.seq));
    let _ = std::fs::remove_file(&release);
    let mut opts = prep.base.clone();
    if k == Kind::Postgres {
        opts.url = with_tag(&eng.url, &tag);
    }

    preload_counts(eng, &mut m);
    let backend = backend_watch(s, eng, prep, &tag, &release, &mut notes);
    if backend.watch.is_some() {
        opts.pause_at_exit = Some(Some(release.clone()));
    }
    let watches = server_watches(s, cell, eng, scratch, &mut notes)?;

    // The client's traces, and a proxy in the path (the sessions, and a
    // cache's channels, go to it).
    let trace_dir = scratch.join(format!("trace-{}", p.seq));
    if prep.trace {
        let _ = std::fs::remove_dir_all(&trace_dir);
        opts.trace_dir = Some(trace_dir.clone());
    }
    let proxy_dir = scratch.join(format!("proxy-{}", p.seq));
    let in_path = crate::execute::proxy::start_for(&cell.levels, k, &eng.url, Some(&proxy_dir))?;
    if let Some((px, _)) = &in_path {
        opts.url = px.url(&opts.url)?;
        opts.shown_url = Some(px.url(&eng.url)?);
    }
    let logs = server_logs(s, eng, &mut notes);
    // The server tracer's traces of what ran before (setup, scripts,
    // probes) go: the run's are profiled after it.
    if let Some(dir) = eng.env.get("TRACELAB_SERVER_TRACE_DIR") {
        clear_traces(Path::new(dir));
    }

    let outside = outside_start(ctx, cell, eng)?;

    let cpu0 = measure::self_cpu_ns();
    let ran = tracelab_run::run(&opts, &prep.workload);
    let cpu1 = measure::self_cpu_ns();
    let backend_ns = backend.watch.map(CpuWatch::finish);
    let _ = std::fs::remove_file(&release);
    outside_finish(ctx, cell, eng, outside, &mut m, &mut notes)?;
    // Every trace written (the proxy's as its connections end: it is
    // stopped here), then the counts of the system calls that wrote them.
    let filter = s.measure.profile_where.as_deref().unwrap_or("1");
    let kept = |what: &str| ctx.keep.map(|k| k.join(format!("{}-{}", p.seq, what)));
    let mut profiles = Vec::new();
    if let Some((px, traced)) = in_path {
        let c = crate::execute::proxy::collect(px, traced, filter, kept("proxy").as_deref());
        m.extend(c.measurements);
        profiles.extend(c.profile);
        notes.extend(c.notes);
    }
    if let Some(st) = watches.client_strace {
        let t = st.finish_table();
        if t.total.is_none() {
            notes.push("client syscalls not counted: strace wrote no table".into());
        }
        let mut c = t.measurements();
        zero_calls(&mut c, &s.measure.strace_calls);
        m.extend(c.into_iter().map(|(k, v)| (format!("client_{k}"), v)));
    }
    let summary = checked(ran, cell)?;
    if k == Kind::Postgres {
        wait_gone(eng, &tag);
    }
    if let Some(w) = watches.counters {
        let (c, note) = w.finish();
        m.extend(c);
        notes.extend(note);
    }
    let mut syscalls = Vec::new();
    if let Some(st) = watches.server_strace {
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
        client_traces(
            &trace_dir,
            filter,
            kept("client").as_deref(),
            &mut m,
            &mut profiles,
            &mut notes,
        );
    }
    ServerTraces {
        filter,
        keep: kept("server").as_deref(),
        untraced: untraced(s, cell, eng),
    }
    .take(eng, &summary, &mut m, &mut profiles, &mut notes);
    m.extend(crate::execute::result_cache::measurements(&summary));

    // The run's own figures.
    for (name, v) in measure::run_figures(&summary) {
        m.insert(name.into(), v);
    }
    let cpu = Cpu {
        backend: backend_ns,
        connect_cost: backend.connect_cost,
        sessions: prep.sessions,
        own_ns: cpu1.saturating_sub(cpu0),
    };
    backend_cpu(s, k, cpu, &summary, &mut m, &mut notes);
    Ok(Observed {
        summary,
        m,
        notes,
        syscalls,
        profiles,
    })
}

/// What measures a run from outside tracelab: the commands beside it and
/// `perf stat` of the server.
struct Outside {
    beside: Vec<crate::execute::command::Running>,
    perf: Option<Result<crate::execute::perf::Perf, String>>,
    server_pid: Option<i32>,
}

/// Starts the study's `beside` commands and perf, just before the run.
fn outside_start(ctx: &Context<'_>, cell: &Cell, eng: &mut Engine) -> Result<Outside, StudyError> {
    let m = &ctx.l.study.measure;
    if m.command.is_empty() && m.perf.is_none() {
        return Ok(Outside {
            beside: Vec::new(),
            perf: None,
            server_pid: None,
        });
    }
    let server_pid = server_of(eng)?.map(|s| s.top());
    let mut beside = Vec::new();
    for c in m.command.iter().filter(|c| c.when == CommandWhen::Beside) {
        beside.push(crate::execute::command::start(
            ctx.l,
            c,
            &cell.vars,
            server_pid,
            ctx.scratch,
        )?);
    }
    let perf = m.perf.as_ref().map(|p| match server_pid {
        Some(pid) => crate::execute::perf::Perf::start(
            pid,
            &p.events,
            &ctx.scratch.join(format!("perf-events-{pid}.csv")),
        ),
        None => Err(format!("no server process to attach to ({})", eng.name)),
    });
    Ok(Outside {
        beside,
        perf,
        server_pid,
    })
}

/// Stops the `beside` commands and perf, runs the `after` commands, and
/// takes their measurements; what perf cannot count is said once (a note
/// of the first run and a line for the user), not as a failure.
fn outside_finish(
    ctx: &Context<'_>,
    cell: &Cell,
    eng: &mut Engine,
    o: Outside,
    m: &mut BTreeMap<String, f64>,
    notes: &mut Vec<String>,
) -> Result<(), StudyError> {
    let spec = &ctx.l.study.measure;
    let counted = o
        .perf
        .map(|p| p.and_then(crate::execute::perf::Perf::finish));
    for c in o.beside {
        m.extend(c.stop(ctx.l)?);
    }
    for c in spec.command.iter().filter(|c| c.when == CommandWhen::After) {
        let run = crate::execute::command::start(ctx.l, c, &cell.vars, o.server_pid, ctx.scratch)?;
        m.extend(run.finish(ctx.l)?);
    }
    let (Some(counted), Some(p)) = (counted, &spec.perf) else {
        return Ok(());
    };
    let mut say = |what: String| {
        if eng.told.insert(what.clone()) {
            ctx.obs.tell(&format!("tracelab: {what}"));
            notes.push(what);
        }
    };
    match counted {
        Ok(c) => {
            for e in &p.events {
                match crate::execute::perf::count_of(&c, e) {
                    Some(n) => {
                        m.insert(crate::model::outside::perf_name(e), n as f64);
                    }
                    None => say(format!(
                        "perf event {e} not counted: this machine does not count it (perf stat: <not supported>); its column stays empty"
                    )),
                }
            }
        }
        Err(why) => say(format!(
            "perf events not counted on {}: {why}; the study goes on without them",
            eng.name
        )),
    }
    Ok(())
}

/// The libraries the server preloads, in each of its processes:
/// `server_processes` and `preload_processes` (those mapping them all).
fn preload_counts(eng: &Engine, m: &mut BTreeMap<String, f64>) {
    let libs = preloads(&eng.env);
    if libs.is_empty() {
        return;
    }
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

/// The watcher of the sessions' server CPU (`measure.backend_cpu`): on
/// PostgreSQL the backends of the run's tag; on MariaDB the session
/// threads of the private server, read in /proc.
fn backend_watch(
    s: &Study,
    eng: &Engine,
    prep: &Prepared,
    tag: &str,
    release: &Path,
    notes: &mut Vec<String>,
) -> Backend {
    let mut b = Backend {
        watch: None,
        connect_cost: None,
    };
    let sessions = prep.sessions;
    let release = release.to_path_buf();
    if eng.kind == Kind::Postgres && s.measure.backend_cpu {
        b.connect_cost = measure::connect_cost_ns(&prep.base.url, &prep.base.settings);
        b.watch = CpuWatch::start(&eng.url, tag, sessions, release.clone());
        if b.watch.is_none() {
            notes.push("backend CPU not measured: no watcher connection".into());
        }
    }
    if eng.kind == Kind::Mysql && s.measure.backend_cpu {
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
                b.connect_cost =
                    measure::mariadb_connect_cost_ns(&eng.url, pid, &prep.base.settings);
                b.watch = CpuWatch::start_mariadb(&eng.url, pid, sessions, release);
                if b.watch.is_none() {
                    notes.push("backend CPU not measured: no watcher connection".into());
                }
            }
        }
    }
    b
}

/// strace of the server's processes (the postmaster, its backends and
/// workers being its children, or mariadbd, its sessions being threads)
/// and of this process (the driver), and the server's counters.
fn server_watches(
    s: &Study,
    cell: &Cell,
    eng: &mut Engine,
    scratch: &Path,
    notes: &mut Vec<String>,
) -> Result<Watches, StudyError> {
    let k = eng.kind;
    let straced = s.measure.strace || cell.strace;
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
    let strace_ok = straced && Strace::available();
    if straced && !strace_ok {
        notes.push("syscalls not counted: strace not installed (apt-get install -y strace)".into());
    }
    let server_strace = match server {
        Some(srv) if strace_ok => {
            let st = Strace::attach(srv.top(), &scratch.join("strace.txt"));
            if st.is_none() {
                notes.push(format!(
                    "server syscalls not counted: strace could not attach to the {} server",
                    eng.name
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
    Ok(Watches {
        server_strace,
        client_strace,
        counters,
    })
}

/// The server's logs, from here on (the private server's only).
fn server_logs(s: &Study, eng: &Engine, notes: &mut Vec<String>) -> Option<LogWatch> {
    if !s.measure.server_log.on {
        return None;
    }
    match &eng.private {
        Some(st) => Some(LogWatch::start(st.log_files())),
        None => {
            if eng.kind != Kind::Sqlite {
                notes.push(format!(
                    "server log not measured: the {} server is not the private one",
                    eng.name
                ));
            }
            None
        }
    }
}

/// The run's summary, or why the run failed: a session that failed, or
/// statement errors.
fn checked(
    ran: Result<Summary, tracelab_run::RunError>,
    cell: &Cell,
) -> Result<Summary, StudyError> {
    let summary = ran.map_err(|e| StudyError::Database(format!("run {}: {e}", cell.key())))?;
    if let Some(f) = summary.per_session.iter().find_map(|s| s.failure.clone()) {
        return Err(StudyError::Database(format!(
            "run {}: a session failed: {f}",
            cell.key()
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
            cell.key(),
            summary.errors
        )));
    }
    Ok(summary)
}

/// The client's traces: their size, their profile (as measurements, and
/// the rows `filter` passes for the report), then kept or removed.
fn client_traces(
    trace_dir: &Path,
    filter: &str,
    keep: Option<&Path>,
    m: &mut BTreeMap<String, f64>,
    profiles: &mut Vec<ProfileRow>,
    notes: &mut Vec<String>,
) {
    m.insert(
        "trace_bytes".into(),
        crate::execute::profile::dir_bytes(trace_dir) as f64,
    );
    match measure::trace_profile(trace_dir) {
        Ok(t) => m.extend(t),
        Err(e) => notes.push(format!("traces not profiled: {e}")),
    }
    if let Ok(rows) = crate::execute::profile::of_dir(trace_dir, filter) {
        profiles.extend(crate::execute::profile::tagged(rows, "client"));
    }
    crate::execute::profile::keep_or_remove(trace_dir, keep, notes);
}

/// The server tracer's traces (a level preloading `{server_trace_lib}`):
/// their size and their profile, the run's sessions' only (a trace per
/// backend, `tracelab_server_PID.trc`: the watcher's and the probes'
/// backends are traced too), as measurements and as the report's rows of
/// source `server`; then they are kept (`--keep-traces`) or go, so that
/// each run counts its own.
struct ServerTraces<'a> {
    filter: &'a str,
    keep: Option<&'a Path>,
    /// Why the run's server is not traced when the study reports on its
    /// traces.
    untraced: Option<String>,
}

impl ServerTraces<'_> {
    fn take(
        &self,
        eng: &Engine,
        summary: &Summary,
        m: &mut BTreeMap<String, f64>,
        profiles: &mut Vec<ProfileRow>,
        notes: &mut Vec<String>,
    ) {
        let Some(dir) = eng.env.get("TRACELAB_SERVER_TRACE_DIR") else {
            if let Some(why) = &self.untraced {
                notes.push(why.clone());
            }
            return;
        };
        let dir = Path::new(dir);
        m.insert(
            "server_trace_bytes".into(),
            crate::execute::profile::dir_bytes(dir) as f64,
        );
        let pids: Option<Vec<i32>> = summary.per_session.iter().map(|s| s.backend_pid).collect();
        let files: Vec<String> = match pids {
            Some(pids) => pids
                .iter()
                .map(|p| dir.join(format!("tracelab_server_{p}.trc")))
                .filter(|f| f.exists())
                .map(|f| f.to_string_lossy().into_owned())
                .collect(),
            // A session's backend unknown: every trace of the directory.
            None => trace_files_in(dir),
        };
        if files.is_empty() {
            notes.push(format!(
                "server traces not profiled: no trace of the run's sessions in {}",
                dir.display()
            ));
        } else {
            use crate::execute::profile::{of_files, server_sums, tagged};
            let all = of_files(&files, "1", ".+");
            let db = of_files(&files, "1", ":dbcall");
            let exit: Result<f64, String> = files
                .iter()
                .map(|f| crate::execute::profile::exit_wait_s(f))
                .sum();
            match (all, db, exit) {
                (Ok(all), Ok(db), Ok(exit)) => m.extend(server_sums(&all, &db, exit)),
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                    notes.push(format!("server traces not profiled: {e}"))
                }
            }
            match of_files(&files, self.filter, ".+") {
                Ok(rows) => profiles.extend(tagged(rows, "server")),
                Err(e) => notes.push(format!("server traces not profiled: {e}")),
            }
            if let Some(to) = self.keep {
                let kept = std::fs::create_dir_all(to).and_then(|()| {
                    files.iter().try_for_each(|f| {
                        let f = Path::new(f);
                        std::fs::rename(f, to.join(f.file_name().unwrap_or_default()))
                    })
                });
                if let Err(e) = kept {
                    notes.push(format!("server traces not kept in {}: {e}", to.display()));
                }
            }
        }
        clear_traces(dir);
    }
}

/// Why the run's server is not traced, when the study's report columns
/// use the server's traces (they print `—` for this run): the engine is
/// not PostgreSQL, or the server is not the private one.
fn untraced(s: &Study, cell: &Cell, eng: &Engine) -> Option<String> {
    if !s
        .report
        .columns
        .iter()
        .any(|c| c.expr.contains("$server_trace_"))
    {
        return None;
    }
    let wanted = cell.levels.iter().any(|l| {
        l.env
            .for_engine(&eng.name)
            .contains_key("TRACELAB_SERVER_TRACE_DIR")
    });
    Some(if !matches!(eng.kind, Kind::Postgres | Kind::Mysql) {
        format!(
            "server trace not taken: tracelab's server tracer runs inside PostgreSQL and MariaDB only, not {}",
            eng.name
        )
    } else if wanted && eng.private.is_none() {
        "server trace not taken: the server tracer is preloaded at the private server's start (run without --db)".to_string()
    } else {
        "server trace not taken: no level of this run preloads the server tracer".to_string()
    })
}

/// The `.trc` files of `dir`, in name order.
fn trace_files_in(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path().to_string_lossy().into_owned())
                .filter(|p| p.ends_with(".trc"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Removes the files of the server tracer's directory.
fn clear_traces(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for f in rd.filter_map(|e| e.ok()) {
            let _ = std::fs::remove_file(f.path());
        }
    }
}

/// The CPU figures of a run: the watcher's reading of the sessions, what
/// connecting costs one, how many there were, and this process's own CPU
/// during the run.
struct Cpu {
    backend: Option<Result<Reading, String>>,
    connect_cost: Option<u64>,
    sessions: usize,
    own_ns: u64,
}

/// `backend_cpu_ms`: the sessions' server CPU less their connections'
/// (only when the sessions read were the run's own: PostgreSQL backend
/// pids, MariaDB connection ids); SQLite's is this process's.
fn backend_cpu(
    s: &Study,
    k: Kind,
    cpu: Cpu,
    summary: &Summary,
    m: &mut BTreeMap<String, f64>,
    notes: &mut Vec<String>,
) {
    let run_ids: Option<Vec<i64>> = summary
        .per_session
        .iter()
        .map(|s| s.backend_pid.map(i64::from))
        .collect::<Option<Vec<i64>>>()
        .map(|mut v| {
            v.sort_unstable();
            v
        });
    match (k, cpu.backend) {
        (_, Some(Ok(r))) if run_ids.as_ref().is_some_and(|ids| *ids != r.ids) => notes.push(
            format!(
                "backend CPU not measured for a run: the sessions read ({:?}) were not the run's ({:?})",
                r.ids,
                run_ids.unwrap_or_default()
            ),
        ),
        (_, Some(Ok(r))) => {
            let cost = cpu.connect_cost.unwrap_or(0) * cpu.sessions as u64;
            m.insert(
                "backend_cpu_ms".into(),
                r.ns.saturating_sub(cost) as f64 / 1e6,
            );
        }
        (_, Some(Err(why))) => notes.push(format!("backend CPU not measured for a run: {why}")),
        (Kind::Sqlite, _) if s.measure.backend_cpu => {
            // SQLite runs in this process: its CPU is ours (the driver's
            // included).
            m.insert("backend_cpu_ms".into(), cpu.own_ns as f64 / 1e6);
        }
        _ => {}
    }
}

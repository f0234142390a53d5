//! `study run --dry-run`: everything a study would run, cell by cell,
//! before it runs and without starting a server.
//!
//! A study file is a program, as a Makefile is: its SQL runs with the
//! rights of the database user (a superuser on tracelab's private
//! servers, where `COPY ... TO PROGRAM` runs a shell command), its server
//! settings configure the server (`archive_command` runs one), and on
//! SQLite `ATTACH` and `VACUUM INTO` write files anywhere. The dry run
//! lists all of it, vars replaced, and marks the statements and settings
//! that reach outside the database.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::OnceLock;

use regex::Regex;
use tracelab_engine::Engine;

use crate::error::StudyError;
use crate::execute::Options;
use crate::model::freshness::FreshnessSpec;
use crate::model::script::statements;
use crate::model::spec::{value_text, Loaded, When};
use crate::plan::cell::{engine_of, sql_of};
use crate::plan::{cell_key, plan, Cell, Phase, Planned, VarSource};

/// What a statement that reaches outside the database does, if it does:
/// runs a program, or reads or writes a file of the server's machine (or,
/// for SQLite, of this one).
fn reaches_out(sql: &str) -> Option<&'static str> {
    static RULES: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    let rules = RULES.get_or_init(|| {
        [
            (r"(?is)\bCOPY\b.*\bPROGRAM\b", "runs a program"),
            (
                r"(?is)\bCOPY\b.*\b(TO|FROM)\s+(E?'|\$)",
                "reads or writes a file",
            ),
            (r"(?is)\bATTACH\b", "opens or creates a database file"),
            (r"(?is)\bVACUUM\b.*\bINTO\b", "writes a database file"),
            (r"(?is)\bINTO\s+(OUTFILE|DUMPFILE)\b", "writes a file"),
            (r"(?is)\bLOAD\s+DATA\b", "reads a file"),
            (r"(?is)\bLOAD_FILE\s*\(", "reads a file"),
            (r"(?is)\blo_(import|export)\s*\(", "reads or writes a file"),
            (
                r"(?is)\bpg_(read_file|read_binary_file|ls_dir|stat_file)\s*\(",
                "reads a file",
            ),
            (r"(?is)\bload_extension\s*\(", "loads a library"),
            (r"(?is)^\s*LOAD\s+'", "loads a library"),
            (r"(?is)\bCREATE\s+(OR\s+REPLACE\s+)?FUNCTION\b.*\bLANGUAGE\s+'?(c|plperlu|plpython3?u|pltclu)\b", "defines code the server runs outside SQL"),
        ]
        .into_iter()
        .filter_map(|(re, what)| Regex::new(re).ok().map(|r| (r, what)))
        .collect()
    });
    rules
        .iter()
        .find(|(re, _)| re.is_match(sql))
        .map(|(_, what)| *what)
}

/// The statements of a script, one per line block, each marked when it
/// reaches outside the database.
fn list_sql(out: &mut String, indent: &str, sql: &str) {
    for st in statements(sql) {
        let st = st.trim();
        if st.is_empty() {
            continue;
        }
        let text = format!("{st};");
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default();
        let _ = writeln!(out, "{indent}{first}");
        for l in lines {
            let _ = writeln!(out, "{indent}  {l}");
        }
        if let Some(what) = reaches_out(st) {
            let _ = writeln!(out, "{indent}  ^ {what} (outside the database)");
        }
    }
}

fn list_settings(out: &mut String, indent: &str, engine: &str, m: &BTreeMap<String, String>) {
    for (k, v) in m {
        let mark = if tracelab_db::runs_program(engine, k, v) {
            "   ^ runs a program or loads code: needs --allow-server-programs"
        } else {
            ""
        };
        let _ = writeln!(out, "{indent}{k} = {v:?}{mark}");
    }
}

/// A cell of the plan: its key, its levels, its runs, whether under
/// strace.
type CellRuns = (String, Vec<(String, String)>, usize, bool);

/// The dry run's text: the study's plan, then per engine what runs once,
/// then per cell what each of its runs does.
pub fn dry_run(l: &Loaded, o: &Options) -> Result<String, StudyError> {
    let s = &l.study;
    let seed = o.choice.seed.or(s.seed).unwrap_or(1);
    let planned = plan(l, &o.choice, seed)?;
    // Paths tracelab provides at run time, named as such.
    let builtins: BTreeMap<String, String> = [(
        "clock_lib".to_string(),
        "<tracelab's clock shim, written to a temporary directory>".to_string(),
    )]
    .into_iter()
    .collect();
    let src = VarSource {
        quick: o.choice.quick,
        builtins: &builtins,
        overrides: &o.choice.vars,
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "study {} ({}): what it would run, before anything runs (nothing was started).\n\
         A study file is a program: its SQL runs with the rights of the database user (a superuser on\n\
         tracelab's private servers) and its server settings configure the server. Marked `^`: what\n\
         reaches outside the database.\n",
        s.name, l.file
    );
    let cells: Vec<CellRuns> = {
        let mut seen: Vec<CellRuns> = Vec::new();
        for p in &planned {
            let key = cell_key(&p.cell);
            match seen
                .iter_mut()
                .find(|(k, _, _, st)| *k == key && *st == p.strace)
            {
                Some(c) => c.2 += 1,
                None => seen.push((key, p.cell.clone(), 1, p.strace)),
            }
        }
        seen
    };
    let _ = writeln!(
        out,
        "plan: {} runs of {} cells, {} order",
        planned.len(),
        cells.len(),
        match s.order {
            crate::model::spec::Order::Interleaved => "interleaved",
            crate::model::spec::Order::Random => "random",
        }
    );
    let engines: BTreeSet<String> = planned.iter().map(|p| engine_of(&p.cell)).collect();
    for e in &engines {
        engine_section(&mut out, l, o, &src, &planned, e)?;
    }
    for (key, factors, runs, strace) in &cells {
        cell_section(&mut out, l, &src, key, factors, *runs, *strace)?;
    }
    if let Some(fr) = &s.freshness {
        freshness_section(&mut out, l, fr, &engines);
    }
    let programs = l.server_programs();
    if !programs.is_empty() {
        let _ = writeln!(
            out,
            "\nserver settings that run programs or load code (refused without --allow-server-programs):"
        );
        for p in programs {
            let _ = writeln!(out, "  {p}");
        }
    }
    Ok(out)
}

/// What runs once on engine `e`: where, its server settings at start, and
/// the setup script (with the first cell's vars).
fn engine_section(
    out: &mut String,
    l: &Loaded,
    o: &Options,
    src: &VarSource<'_>,
    planned: &[Planned],
    e: &String,
) -> Result<(), StudyError> {
    let s = &l.study;
    let db = o
        .dbs
        .iter()
        .find(|u| crate::model::engine::engine_of_url(u) == Some(e.as_str()));
    let _ = writeln!(out, "\nengine {e}:");
    let kind = Engine::from_name(e);
    match (db, kind) {
        (Some(u), _) => {
            let _ = writeln!(out, "  on --db {}", crate::model::engine::redact(u));
        }
        (None, Some(Engine::Sqlite)) => {
            let _ = writeln!(
                out,
                "  a SQLite file in a temporary directory, in this process"
            );
        }
        (None, _) => {
            let _ = writeln!(out, "  a private {e} server started by tracelab");
        }
    }
    if kind == Some(Engine::Postgres) && db.is_none() && !s.server.is_empty() {
        let _ = writeln!(out, "  server settings at its start (postgresql.conf):");
        list_settings(out, "    ", e, &s.server);
    }
    // Setup runs once per engine, with the first cell's vars.
    if let (Some(sql), Some(first)) = (&s.setup, planned.iter().find(|p| engine_of(&p.cell) == *e))
    {
        let cell = Cell::resolve(l, &first.cell, false, src);
        if let Some(t) = cell.sql(l, "setup", sql)? {
            let _ = writeln!(out, "  setup, once before the first run:");
            list_sql(out, "    ", &t);
        }
    }
    Ok(())
}

/// What each run of a cell does: its settings, probes, scripts, workload
/// and the commands tracelab attaches.
fn cell_section(
    out: &mut String,
    l: &Loaded,
    src: &VarSource<'_>,
    key: &str,
    factors: &[(String, String)],
    runs: usize,
    strace: bool,
) -> Result<(), StudyError> {
    let s = &l.study;
    let cell = Cell::resolve(l, factors, strace, src);
    let (e, levels, vars) = (&cell.engine, &cell.levels, &cell.vars);
    let kind = cell.kind();
    let _ = writeln!(
        out,
        "\ncell {key}{}: {runs} run{}",
        if strace { " (under strace)" } else { "" },
        if runs == 1 { "" } else { "s" }
    );
    let mut server = BTreeMap::new();
    let mut restart = BTreeMap::new();
    let mut env = BTreeMap::new();
    let mut session = s.workload.settings.for_engine(e);
    for lv in levels {
        server.extend(lv.server.for_engine(e));
        restart.extend(lv.restart.for_engine(e));
        env.extend(lv.env.for_engine(e));
        session.extend(lv.settings.for_engine(e));
    }
    if kind != Some(Engine::Sqlite) {
        if !server.is_empty() {
            let how = if kind == Some(Engine::Mysql) {
                "SET GLOBAL"
            } else {
                "ALTER SYSTEM SET and a reload"
            };
            let _ = writeln!(out, "  server settings ({how}):");
            list_settings(out, "    ", e, &server);
        }
        if !restart.is_empty() {
            let _ = writeln!(out, "  server settings (a restart of the private server):");
            list_settings(out, "    ", e, &restart);
        }
        if !env.is_empty() {
            let _ = writeln!(
                out,
                "  server environment (a restart of the private server):"
            );
            for (k, v) in &env {
                let v = crate::model::script::substitute(v, vars).unwrap_or_else(|_| v.clone());
                let _ = writeln!(out, "    {k}={v}");
            }
        }
    }
    if !session.is_empty() {
        let how = if kind == Some(Engine::Sqlite) {
            "PRAGMA"
        } else {
            "SET"
        };
        let _ = writeln!(out, "  session settings ({how}, every session):");
        for (k, v) in &session {
            let _ = writeln!(out, "    {k} = {v:?}");
        }
    }
    for p in s.probes.iter().filter(|p| p.when != When::After) {
        if let Some(t) = cell.sql(l, "probes.sql", &p.sql)? {
            let _ = writeln!(out, "  probe {} (before each run):", p.name);
            list_sql(out, "    ", &t);
        }
    }
    let before = cell.scripts(l, Phase::Before)?;
    if !before.is_empty() {
        let _ = writeln!(out, "  before each run:");
        for t in &before {
            list_sql(out, "    ", t);
        }
    }
    let mut sql_spec = &s.workload.sql;
    for lv in levels {
        if let Some(x) = &lv.sql {
            sql_spec = x;
        }
    }
    if let (Some(kit), true) = (&s.workload.sqldir, sql_spec.is_empty()) {
        let sessions = vars_text(&s.workload.sessions, vars);
        let _ = writeln!(
            out,
            "  workload ({sessions} sessions, each): the statements of sqlrun kit {kit} ({})",
            s.workload.exe_mode.as_deref().unwrap_or("sequential")
        );
    } else if let Some(t) = cell.sql(l, "workload.sql", sql_spec)? {
        let sessions = vars_text(&s.workload.sessions, vars);
        let _ = writeln!(out, "  workload ({sessions} sessions, each):");
        list_sql(out, "    ", &t);
    }
    let mut tables = vec![&s.workload.run];
    tables.extend(levels.iter().map(|lv| &lv.run.options));
    let options = crate::model::run_options::shown(&tables, vars);
    if !options.is_empty() {
        let _ = writeln!(
            out,
            "  run options (tracelab run's): {}",
            options.join(", ")
        );
    }
    let after = cell.scripts(l, Phase::After)?;
    if !after.is_empty() {
        let _ = writeln!(out, "  after each run:");
        for t in &after {
            list_sql(out, "    ", t);
        }
    }
    for p in s.probes.iter().filter(|p| p.when != When::Before) {
        if let Some(t) = cell.sql(l, "probes.sql", &p.sql)? {
            let _ = writeln!(out, "  probe {} (after each run):", p.name);
            list_sql(out, "    ", &t);
        }
    }
    measure_commands(out, l, vars, strace)
}

/// The commands that run beside or after each run of a cell: tracelab's
/// own (strace, perf) and the study's (`[[measure.command]]`).
fn measure_commands(
    out: &mut String,
    l: &Loaded,
    vars: &BTreeMap<String, String>,
    strace: bool,
) -> Result<(), StudyError> {
    let s = &l.study;
    let m = &s.measure;
    let mut commands = Vec::new();
    if m.strace || strace {
        commands.push("strace -c -f, attached to the server's processes");
    }
    if m.server_counters {
        commands.push("perf stat -e context-switches, attached to the server's processes");
    }
    let perf = m.perf.as_ref().map(|p| {
        format!(
            "perf stat -e {}, attached to the server's processes",
            p.events.join(",")
        )
    });
    commands.extend(perf.as_deref());
    if !commands.is_empty() {
        let _ = writeln!(out, "  commands (tracelab's own):");
        for c in commands {
            let _ = writeln!(out, "    {c}");
        }
    }
    // The study's own commands run on this machine, as this user.
    for c in &m.command {
        let text = crate::model::script::substitute(&c.run, vars)
            .map_err(|e| l.error("measure.command.run", format!("command `{}`: {e}", c.name)))?;
        let when = match c.when {
            crate::model::outside::CommandWhen::Beside => "beside each run, stopped by SIGTERM",
            crate::model::outside::CommandWhen::After => "after each run",
        };
        let _ = writeln!(out, "  command {} ({when}), sh -c:", c.name);
        let _ = writeln!(out, "    {}", text.replace('\n', "\n    "));
        let _ = writeln!(
            out,
            "      ^ runs a program on this machine, as this user (outside the database)"
        );
    }
    Ok(())
}

/// The freshness check's change, per engine.
fn freshness_section(out: &mut String, l: &Loaded, fr: &FreshnessSpec, engines: &BTreeSet<String>) {
    let s = &l.study;
    let _ = writeln!(
        out,
        "\nfreshness check, once per engine after the plan: a cached run while a writer runs, every {} ms:",
        vars_text(&fr.every_ms, &BTreeMap::new())
    );
    for e in engines {
        let mut vars = BTreeMap::new();
        for (k, v) in &s.vars {
            vars.insert(k.clone(), value_text(v));
        }
        for (k, v) in &fr.vars {
            vars.insert(k.clone(), value_text(v));
        }
        vars.insert("version".into(), "N".into());
        if let Ok(Some(t)) = sql_of(l, "freshness.write", &fr.write, e, &vars) {
            let _ = writeln!(out, "  {e}, change N = 1, 2, ...:");
            list_sql(out, "    ", &t);
        }
    }
}

/// A number as written, `{var}`s replaced where they can be.
fn vars_text(n: &crate::model::spec::Num, vars: &BTreeMap<String, String>) -> String {
    match n {
        crate::model::spec::Num::Int(i) => i.to_string(),
        crate::model::spec::Num::Float(f) => f.to_string(),
        crate::model::spec::Num::Text(t) => {
            crate::model::script::substitute(t, vars).unwrap_or_else(|_| t.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_that_reach_outside_the_database_are_told() {
        for (sql, what) in [
            ("COPY t TO PROGRAM 'touch /tmp/x'", "runs a program"),
            ("copy t from program 'env'", "runs a program"),
            ("COPY t TO '/tmp/x.csv'", "reads or writes a file"),
            (
                "ATTACH DATABASE '/tmp/x.db' AS x",
                "opens or creates a database file",
            ),
            ("VACUUM INTO '/tmp/copy.db'", "writes a database file"),
            ("SELECT * FROM t INTO OUTFILE '/tmp/x'", "writes a file"),
            ("SELECT pg_read_file('/etc/passwd')", "reads a file"),
        ] {
            assert_eq!(reaches_out(sql), Some(what), "{sql}");
        }
        for sql in [
            "SELECT 1",
            "COPY t FROM STDIN",
            "INSERT INTO t VALUES (1)",
            "VACUUM t",
            "CREATE TABLE program (a int)",
        ] {
            assert_eq!(reaches_out(sql), None, "{sql}");
        }
    }
}

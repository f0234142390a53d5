//! The names a study's report expressions may use, known before its first
//! run: the figures every run has, the optional measurements it asks for,
//! its vars, and the columns its probes and scripts return. A report column
//! that names anything else would print `—` after every run; it is refused
//! (exit 2) before anything runs instead.

use std::collections::BTreeSet;

use crate::error::StudyError;
use crate::model::columns::compile;
use crate::model::script::{output_names, statements};
use crate::model::spec::{Loaded, Sql};

/// The figures every run has, from its summary (`execute::measure::run_figures`) (their names are what
/// report expressions check against before a study runs).
pub const RUN_FIGURES: [&str; 7] = [
    "elapsed_ms",
    "run_ms",
    "statements",
    "transactions",
    "tps",
    "p50_us",
    "p99_us",
];

/// The latency figures of a run's transactions (BEGIN to the end of
/// COMMIT; in autocommit, a statement's) and of its COMMIT calls alone,
/// from its summary (`execute::measure::run_figures`): each where the run
/// had such calls (no `commit_` in autocommit, where the commit is inside
/// the statement).
pub const TX_FIGURES: [&str; 6] = [
    "tx_p50_us",
    "tx_p99_us",
    "tx_mean_us",
    "commit_p50_us",
    "commit_p99_us",
    "commit_mean_us",
];

/// The measurements `execute::server_counters::ServerWatch` gives (`perf_context_switches` only
/// where perf counts).
pub const COUNTERS: [&str; 7] = [
    "voluntary_ctxt_switches",
    "nonvoluntary_ctxt_switches",
    "tasks_started",
    "syscr",
    "syscw",
    "server_cpu_ms",
    "perf_context_switches",
];

/// The measurements of a run whose server preloads tracelab's server
/// tracer (`execute::profile::server_sums`), beside its profile's
/// `server_trace_NAME_s` and `_calls`.
pub const SERVER_TRACE: [&str; 6] = [
    "server_trace_bytes",
    "server_trace_cpu_s",
    "server_trace_waits_s",
    "server_trace_idle_s",
    "server_trace_total_s",
    "server_trace_exit_s",
];

/// What a study's runs will produce.
struct Produced {
    names: BTreeSet<String>,
    /// Families of names known only once a run has happened
    /// (`syscall_read`, `trace_exec_s`).
    prefixes: Vec<String>,
    /// A script returns columns the text does not name (`SELECT *`):
    /// nothing can be refused.
    open: bool,
}

impl Produced {
    fn has(&self, name: &str) -> bool {
        self.open || self.names.contains(name) || self.prefixes.iter().any(|p| name.starts_with(p))
    }
}

impl Loaded {
    /// Every name the study's runs will have: figures, measurements, vars,
    /// and the columns of probes and before/after scripts.
    fn produced(&self) -> Result<Produced, StudyError> {
        let s = &self.study;
        let mut p = Produced {
            names: RUN_FIGURES
                .iter()
                .chain(&TX_FIGURES)
                .map(|n| n.to_string())
                .collect(),
            prefixes: Vec::new(),
            open: false,
        };
        if s.measure.backend_cpu {
            p.names.insert("backend_cpu_ms".into());
        }
        let m = &s.measure;
        if m.strace || m.strace_runs > 0 {
            p.names.insert("syscalls".into());
            p.prefixes.push("syscall_".into());
            if m.strace_client {
                p.names.insert("client_syscalls".into());
                p.prefixes.push("client_syscall_".into());
            }
        }
        if m.strace_runs > 0 {
            // The runs under strace keep their other figures as `strace_...`.
            p.prefixes.push("strace_".into());
            p.names.extend(m.strace_vars.keys().cloned());
        }
        // A command's names are known once it has run: its prefix.
        p.prefixes
            .extend(m.command.iter().map(|c| format!("{}_", c.name)));
        if let Some(perf) = &m.perf {
            p.names.extend(
                perf.events
                    .iter()
                    .map(|e| crate::model::outside::perf_name(e)),
            );
        }
        let log = &s.measure.server_log;
        if log.on {
            p.names.insert("server_log_bytes".into());
            p.names.insert("server_log_lines".into());
            p.names.extend(log.count.keys().map(|k| format!("log_{k}")));
        }
        let levels: Vec<_> = s.factors.iter().flat_map(|f| f.all_levels()).collect();
        if s.measure.trace || levels.iter().any(|l| l.run.trace) {
            p.names.insert("trace_bytes".into());
            p.prefixes.push("trace_".into());
        }
        if s.measure.server_counters {
            p.names.extend(COUNTERS.iter().map(|n| n.to_string()));
        }
        // A proxy in a level's path: its counters and its traces' profile
        // (crate::execute::proxy::collect); a result cache: Oracle's statistics
        // (crate::execute::result_cache::measurements).
        if levels.iter().any(|l| l.proxy.is_some()) {
            p.names
                .extend(crate::model::proxy::MEASUREMENTS.map(String::from));
            p.prefixes.push("proxy_trace_".into());
        }
        if s.workload.result_cache.is_some() || levels.iter().any(|l| l.result_cache.is_some()) {
            p.names
                .extend(crate::model::result_cache::measurement_names());
        }
        // A preloaded library: the server's processes, and those that
        // mapped it.
        if levels
            .iter()
            .any(|l| l.env.names().any(|n| n == "LD_PRELOAD"))
        {
            p.names.insert("server_processes".into());
            p.names.insert("preload_processes".into());
        }
        if levels
            .iter()
            .any(|l| l.env.names().any(|n| n == "TRACELAB_SERVER_TRACE_DIR"))
        {
            // The tracer's traces: their size, the time accounting of the
            // run's backends, and their profile by call or wait name
            // (crate::execute::profile::server_sums).
            p.names.extend(SERVER_TRACE.map(String::from));
            p.prefixes.push("server_trace_".into());
        }
        p.names.extend(s.vars.keys().cloned());
        p.names.extend(s.quick.vars.keys().cloned());
        for f in &s.factors {
            p.names.insert(f.name.clone());
            for l in f.all_levels() {
                p.names.extend(l.vars.keys().cloned());
            }
        }
        let mut scripts: Vec<(String, &Sql)> = Vec::new();
        for pr in &s.probes {
            scripts.push(("probes.sql".into(), &pr.sql));
        }
        for (key, sql) in [
            ("workload.before", &s.workload.before),
            ("workload.after", &s.workload.after),
        ] {
            if let Some(sql) = sql {
                scripts.push((key.into(), sql));
            }
        }
        for f in &s.factors {
            for l in &f.levels {
                for (key, sql) in [
                    ("factors.levels.before", &l.before),
                    ("factors.levels.after", &l.after),
                ] {
                    if let Some(sql) = sql {
                        scripts.push((key.into(), sql));
                    }
                }
            }
        }
        for (key, sql) in scripts {
            for t in sql.pieces() {
                for st in statements(&self.sql_text(&key, t)?) {
                    match output_names(&st) {
                        Some(names) => p.names.extend(names),
                        None => p.open = true,
                    }
                }
            }
        }
        Ok(p)
    }

    /// Refuses a report column that names a measurement or var the study
    /// will not produce, with the nearest name it will, before any run.
    pub fn check_measurements(&self) -> Result<(), StudyError> {
        let p = self.produced()?;
        for c in &self.study.report.columns {
            let Ok(e) = compile(&c.expr) else { continue };
            for n in e.names() {
                if p.has(n) {
                    continue;
                }
                let near = p
                    .names
                    .iter()
                    .min_by_key(|k| strsim::levenshtein(k, n))
                    .filter(|k| strsim::levenshtein(k, n) <= 3)
                    .map(|k| format!(" (did you mean `${k}`?)"))
                    .unwrap_or_default();
                let mut known: Vec<String> = p.names.iter().map(|k| format!("${k}")).collect();
                known.extend(p.prefixes.iter().map(|x| format!("${x}...")));
                return Err(self.error(
                    "report.columns.expr",
                    format!(
                        "column `{}`: `${n}` is not a measurement or var this study produces{near}; \
                         it has {}",
                        c.name,
                        known.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::model::spec::Loaded;

    const STUDY: &str = r#"
name = "t"
[vars]
rows = 10
[workload]
sql = "select 1"
statements = "{rows}"
after = "SELECT pg_relation_size('t') AS heap_bytes"
[[factors]]
name = "batch"
values = [1, 2]
[[probes]]
name = "wal"
sql.postgres = "SELECT wal_bytes, wal_sync_time FROM pg_stat_wal"
[report]
rows = "batch"
columns = [{ name = "r", label = "r", expr = "EXPR" }]
"#;

    fn check(expr: &str) -> Result<(), String> {
        Loaded::parse("t.toml", &STUDY.replace("EXPR", expr), None, &[])
            .unwrap()
            .check_measurements()
            .map_err(|e| e.to_string())
    }

    #[test]
    fn report_expressions_name_only_what_the_study_produces() {
        for good in [
            "$elapsed_ms / $statements",
            "$backend_cpu_ms",
            "$wal_bytes / $rows",
            "$heap_bytes * $batch",
            "$p99_us",
            "$tx_p99_us / $p99_us",
            "$commit_p50_us",
        ] {
            assert_eq!(check(good), Ok(()), "{good}");
        }
        let e = check("$elapsed_msx / $statements").unwrap_err();
        assert!(
            e.starts_with("t.toml:17: key `report.columns.expr`: column `r`: `$elapsed_msx` is not a measurement")
                && e.contains("did you mean `$elapsed_ms`?"),
            "{e}"
        );
        assert!(check("$wal_flush_time")
            .unwrap_err()
            .contains("`$wal_flush_time`"));
        // Families known only after a run: accepted when measured.
        assert!(check("$trace_exec_s").is_err());
        let traced = STUDY
            .replace("[report]", "[measure]\ntrace = true\n[report]")
            .replace("EXPR", "$trace_exec_s");
        let l = Loaded::parse("t.toml", &traced, None, &[]).unwrap();
        assert!(l.check_measurements().is_ok());
    }

    #[test]
    fn every_built_in_study_names_only_what_it_produces() {
        for (name, text, _) in crate::model::builtin::STUDIES {
            let l = Loaded::parse(name, text, None, crate::model::builtin::files(name)).unwrap();
            l.check_measurements()
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn docs_define_every_fixed_measurement_name() {
        // docs/study.md's Measurements table says what each name times;
        // a name added in the code without a row there fails here.
        let doc = include_str!("../../../../docs/study.md");
        let table = doc
            .split("### Measurements")
            .nth(1)
            .and_then(|t| t.split("\n## ").next())
            .expect("docs/study.md has a Measurements section");
        let mut names: Vec<String> = super::RUN_FIGURES
            .iter()
            .chain(&super::TX_FIGURES)
            .chain(&super::COUNTERS)
            .chain(&super::SERVER_TRACE)
            .chain(&crate::model::proxy::MEASUREMENTS)
            .map(|n| n.to_string())
            .collect();
        names.extend(crate::model::result_cache::measurement_names());
        names.extend(
            [
                "backend_cpu_ms",
                "syscalls",
                "syscall_errors",
                "syscall_seconds",
                "client_syscalls",
                "server_log_bytes",
                "server_log_lines",
                "trace_bytes",
                "server_processes",
                "preload_processes",
                "proxy_trace_bytes",
            ]
            .map(String::from),
        );
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| !table.contains(&format!("`{n}`")))
            .collect();
        assert!(
            missing.is_empty(),
            "not in docs/study.md's Measurements: {missing:?}"
        );
    }
}

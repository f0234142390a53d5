//! The built-in exec-model study on real private servers (a MariaDB
//! restarted per thread_handling, a PostgreSQL serial and parallel), with
//! a small table: each model is in effect, the strace tables are stored
//! per syscall and add up, the pool waits with epoll, the server traces
//! of both engines are profiled (the pool's queue among MariaDB's waits),
//! and the report rebuilds from the store. No timing is asserted.

mod common;
use common::tracelab;

use std::collections::BTreeMap;
use std::path::Path;

/// A stored run: its levels, its measurements, and whether it ran under
/// strace (apart from the timed runs).
struct Run {
    seq: i64,
    cell: BTreeMap<String, String>,
    m: BTreeMap<String, f64>,
    straced: bool,
}

impl Run {
    /// A figure of the run; a run under strace keeps its figures other
    /// than the syscalls as `strace_NAME`.
    fn get(&self, name: &str) -> Option<f64> {
        let key = if self.straced {
            format!("strace_{name}")
        } else {
            name.to_string()
        };
        self.m.get(&key).copied()
    }
}

fn runs(store: &Path) -> Vec<Run> {
    let c = rusqlite::Connection::open(store.join("results.sqlite")).unwrap();
    let mut st = c
        .prepare(
            "SELECT p.seq, p.levels, p.seq IN (SELECT seq FROM strace_runs) \
             FROM plan p JOIN runs r ON r.seq = p.seq ORDER BY p.seq",
        )
        .unwrap();
    let rows: Vec<(i64, String, bool)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.into_iter()
        .map(|(seq, levels, straced)| {
            let cell: Vec<(String, String)> = serde_json::from_str(&levels).unwrap();
            let mut q = c
                .prepare("SELECT name, value FROM measurements WHERE seq = ?1")
                .unwrap();
            let m = q
                .query_map([seq], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            Run {
                seq,
                cell: cell.into_iter().collect(),
                m,
                straced,
            }
        })
        .collect()
}

/// The stored strace table of a run: name → calls.
fn syscalls(store: &Path, seq: i64) -> BTreeMap<String, i64> {
    let c = rusqlite::Connection::open(store.join("results.sqlite")).unwrap();
    let mut q = c
        .prepare("SELECT name, calls FROM syscalls WHERE seq = ?1")
        .unwrap();
    q.query_map([seq], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn each_model_is_in_effect_the_strace_tables_add_up_and_the_report_rebuilds() {
    let dir = tempfile::Builder::new()
        .prefix("tracelab-study-em-")
        .tempdir_in("/tmp")
        .unwrap();
    // The built-in study as shipped, with a small table and two rounds.
    let (text, err, code) = tracelab(&["study", "show", "exec-model"]);
    assert_eq!(code, 0, "{err}");
    let small = text
        .replace("rows = 2000000", "rows = 20000")
        .replace("rows = 500000", "rows = 20000")
        .replace("reps = 3", "reps = 2");
    assert!(small.contains("rows = 20000") && !small.contains("rows = 2000000"));
    let file = dir.path().join("exec-model.toml");
    std::fs::write(&file, small).unwrap();
    let out = dir.path().join("out");
    let out_s = out.to_str().unwrap();
    let (stdout, err, code) = tracelab(&["study", "run", file.to_str().unwrap(), "--out", out_s]);
    assert_eq!(code, 0, "{err}\n{stdout}");

    let all = runs(&out);
    // 2 engines x 2 models x 2 sessions levels, two timed rounds and one
    // round under strace; no cell pairs a model with another engine.
    assert_eq!(all.len(), 8 * 3, "{stdout}");
    assert_eq!(all.iter().filter(|r| r.straced).count(), 8);
    for r in &all {
        let model = r.cell["model"].as_str();
        let engine = r.cell["engine"].as_str();
        let what = format!("run {} {:?}", r.seq, r.cell);
        match model {
            // @@thread_handling read back from the server before the run:
            // the restart per level took.
            "one-thread-per-connection" | "pool-of-threads" => {
                assert_eq!(engine, "mariadb", "{what}");
                let pool = if model == "pool-of-threads" { 1.0 } else { 0.0 };
                assert_eq!(r.get("pool_of_threads"), Some(pool), "{what}: {:?}", r.m);
            }
            // The plan with the level's settings in force: Gather and its
            // two workers, or none.
            "parallel" | "serial" => {
                assert_eq!(engine, "postgres", "{what}");
                let (gathers, workers) = if model == "parallel" {
                    (1.0, 2.0)
                } else {
                    (0.0, 0.0)
                };
                assert_eq!(r.get("gather_nodes"), Some(gathers), "{what}: {:?}", r.m);
                assert_eq!(r.get("workers_planned"), Some(workers), "{what}");
            }
            _ => panic!("{what}: unexpected model"),
        }
        // The counters without ptrace, on every run.
        for k in ["voluntary_ctxt_switches", "syscr", "tasks_started"] {
            assert!(r.get(k).is_some(), "{what}: no {k}: {:?}", r.m);
        }
        if r.straced {
            // Slowed by strace: out of the timed columns.
            assert!(
                r.m.contains_key("strace_elapsed_ms") && !r.m.contains_key("elapsed_ms"),
                "{what}: {:?}",
                r.m
            );
            // The table, one row per syscall, whose calls add up to its
            // total line.
            let table = syscalls(&out, r.seq);
            assert!(table.len() >= 3, "{what}: {table:?}");
            let sum: i64 = table.values().sum();
            assert_eq!(
                Some(&(sum as f64)),
                r.m.get("syscalls"),
                "{what}: {table:?}"
            );
            for (name, calls) in &table {
                assert_eq!(r.m.get(&format!("syscall_{name}")), Some(&(*calls as f64)));
            }
            // The pool waits for its clients' sockets with epoll.
            if model == "pool-of-threads" {
                assert!(
                    table.keys().any(|n| n.starts_with("epoll_wait")),
                    "{what}: no epoll_wait: {table:?}"
                );
            }
        } else {
            assert!(r.m.contains_key("elapsed_ms"), "{what}");
            assert!(syscalls(&out, r.seq).is_empty(), "{what}");
        }
    }
    // The parallel plan's workers were started: more processes of the
    // postmaster than under the serial plan, over the cell's runs (summed
    // over both session counts: a one-session run on a loaded machine may
    // end before /proc shows its workers).
    let tasks = |model: &str| -> f64 {
        all.iter()
            .filter(|r| {
                !r.straced
                    && r.cell["model"] == model
                    && r.cell.get("engine").is_none_or(|e| e == "postgres")
            })
            .filter_map(|r| r.m.get("tasks_started"))
            .sum()
    };
    assert!(tasks("parallel") >= tasks("serial") + 2.0, "{}", stdout);

    // The report: the timed table with its baseline per engine, and the
    // strace tables side by side in strace's layout.
    assert!(
        stdout.contains("System calls (engine=mariadb sessions=8)"),
        "{stdout}"
    );
    assert!(stdout.contains("% time     seconds  usecs/call     calls    errors syscall"));
    assert!(
        stdout.contains("pool-of-threads (1 run under strace"),
        "{stdout}"
    );
    // The leader's per-call waits from the server tracer, per PostgreSQL
    // cell: the parallel leader waits for its workers (IPC events).
    let server = stdout
        .split("Profiles of the server's traces")
        .nth(1)
        .unwrap_or_else(|| panic!("no server profiles: {stdout}"));
    let parallel = server
        .split("engine=postgres model=parallel")
        .nth(1)
        .unwrap_or_else(|| panic!("no parallel cell: {server}"));
    let parallel = parallel.split("\n\n").next().unwrap_or_default();
    assert!(
        parallel.contains("EXEC") && parallel.contains("IPC:"),
        "{parallel}"
    );
    // Each MariaDB session's query from the server tracer too, under
    // either scheduler; under the pool, each request's wait in its
    // queue after the wait for the client.
    let cell = |model: &str| {
        let c = server
            .split(&format!("engine=mariadb model={model} sessions=8"))
            .nth(1)
            .unwrap_or_else(|| panic!("no {model} cell: {server}"));
        c.split("\n\n").next().unwrap_or_default().to_string()
    };
    let (threads, pool) = (cell("one-thread-per-connection"), cell("pool-of-threads"));
    assert!(
        threads.contains("EXEC") && threads.contains("thd_wait:NET"),
        "{threads}"
    );
    assert!(!threads.contains("thread pool queue"), "{threads}");
    assert!(
        pool.contains("EXEC")
            && pool.contains("thd_wait:NET")
            && pool.contains("thread pool queue"),
        "{pool}"
    );
    // Rebuilt byte for byte from the store alone, in every format.
    let (again, err, code) = tracelab(&["study", "report", out_s]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(again, stdout);
    for (format, file) in [("markdown", "report.md"), ("html", "report.html")] {
        let written = std::fs::read_to_string(out.join(file)).unwrap();
        let (rebuilt, _, code) = tracelab(&["study", "report", out_s, "--format", format]);
        assert_eq!(code, 0);
        assert_eq!(rebuilt, written, "{format}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Top system calls per model"), "chart missing");
}

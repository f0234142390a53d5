//! A study whose PostgreSQL level preloads tracelab's server tracer: each
//! run's sessions' traces are profiled (the time accounting of the
//! backends: CPU, waits, the wait for the client), printed as mrskew's
//! table of source `server`, and kept with `--keep-traces`.

mod common;
use common::tracelab;

use std::collections::BTreeMap;

/// The measurements of the run of each level, by level.
fn by_level(store: &std::path::Path) -> BTreeMap<String, BTreeMap<String, f64>> {
    let c = rusqlite::Connection::open(store.join("results.sqlite")).unwrap();
    let mut st = c
        .prepare("SELECT p.levels, m.name, m.value FROM measurements m JOIN plan p USING (seq)")
        .unwrap();
    let mut out: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, f64>(2)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (levels, name, v) = row.unwrap();
        let cell: Vec<(String, String)> = serde_json::from_str(&levels).unwrap();
        out.entry(cell[0].1.clone()).or_default().insert(name, v);
    }
    out
}

/// Runs the study `text` (with `extra` options) in a scratch directory
/// under /tmp: the scratch directory, the report printed and the
/// measurements by level.
fn run_study(
    text: &str,
    extra: &[&str],
) -> (
    tempfile::TempDir,
    String,
    BTreeMap<String, BTreeMap<String, f64>>,
) {
    let dir = tempfile::Builder::new()
        .prefix("tracelab-study-srvtrace-")
        .tempdir_in("/tmp")
        .unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out");
    let mut args = vec!["study", "run", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend(["--out", out.to_str().unwrap()]);
    let (stdout, err, code) = tracelab(&args);
    assert_eq!(code, 0, "{err}\n{stdout}");
    let m = by_level(&out);
    (dir, stdout, m)
}

/// The server's time is its CPU, its waits and its waits for the client,
/// to the µs.
fn check_adds_up(on: &BTreeMap<String, f64>) {
    let get = |k: &str| *on.get(k).unwrap_or_else(|| panic!("no {k}: {on:?}"));
    let sum = get("server_trace_cpu_s") + get("server_trace_waits_s") + get("server_trace_idle_s");
    assert!(
        (sum - get("server_trace_total_s")).abs() < 1e-6,
        "{sum} vs {}",
        get("server_trace_total_s")
    );
}

/// One session, 50 one-row INSERTs each committed (a WAL flush each).
const STUDY: &str = r#"
name = "server-trace-check"
reps = 1
[vars]
n = 50
[server]
autovacuum = "off"
[setup]
postgres = "DROP TABLE IF EXISTS st_t; CREATE TABLE st_t (id int)"
[workload]
sql = "INSERT INTO st_t VALUES (1)"
sessions = 1
statements = "{n}"
tx_per_commit = 1
[[factors]]
name = "tracer"
levels = [
  { name = "off" },
  { name = "on", settings = { synchronous_commit = "on" }, env = { LD_PRELOAD = "{server_trace_lib}", TRACELAB_SERVER_TRACE_DIR = "{server_trace_dir}" } },
]
[report]
rows = "tracer"
columns = [
  { name = "queue", label = "queue ms/insert", expr = "1000 * $server_trace_waits_s / $statements" },
]
profiles = { of = ["server"], top = 20 }
"#;

#[test]
fn a_traced_servers_time_is_its_cpu_its_waits_and_the_wait_for_the_client() {
    let (dir, stdout, m) = run_study(STUDY, &["--keep-traces"]);
    let out = dir.path().join("out");
    assert!(
        !m["off"].keys().any(|k| k.starts_with("server_trace_")),
        "{:?}",
        m["off"]
    );
    let on = &m["on"];
    let get = |k: &str| *on.get(k).unwrap_or_else(|| panic!("no {k}: {on:?}"));
    // Every commit waits for its WAL flush.
    assert!(get("server_trace_waits_s") > 0.0, "{on:?}");
    assert!(get("server_trace_io_walsync_calls") >= 50.0, "{on:?}");
    assert!(get("server_trace_io_walsync_s") > 0.0, "{on:?}");
    assert!(get("server_trace_cpu_s") > 0.0, "{on:?}");
    // Between the calls, the backend waits for its client.
    assert!(get("server_trace_idle_s") > 0.0, "{on:?}");
    assert!(
        get("server_trace_client_clientread_calls") >= 50.0,
        "{on:?}"
    );
    check_adds_up(on);
    assert!(
        get("server_trace_waits_s") >= get("server_trace_io_walsync_s"),
        "{on:?}"
    );
    // mrskew's table of the server's traces, in the report.
    let section = stdout
        .split("Profiles of the server's traces")
        .nth(1)
        .unwrap_or_else(|| panic!("no server profile: {stdout}"));
    assert!(section.contains("IO:WALSync"), "{section}");
    assert!(section.contains("EXEC"), "{section}");
    // The run's backend's trace, kept.
    let kept: Vec<String> = std::fs::read_dir(out.join("traces"))
        .expect("--keep-traces keeps DIR/traces")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let server: Vec<_> = kept.iter().filter(|k| k.ends_with("-server")).collect();
    assert_eq!(server.len(), 1, "{kept:?}");
    let files: Vec<String> = std::fs::read_dir(out.join("traces").join(server[0]))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        files.len() == 1 && files[0].starts_with("tracelab_server_"),
        "{files:?}"
    );
}

/// The same on MariaDB: one session, 50 one-row INSERTs each committed.
const MARIADB_STUDY: &str = r#"
name = "server-trace-check-mariadb"
reps = 1
[vars]
n = 50
[setup]
mariadb = "DROP TABLE IF EXISTS st_t; CREATE TABLE st_t (id int) ENGINE = InnoDB"
[workload]
sql = "INSERT INTO st_t VALUES (1)"
sessions = 1
statements = "{n}"
tx_per_commit = 1
[[factors]]
name = "engine"
levels = [
  { name = "mariadb", server = { innodb_flush_log_at_trx_commit = "1" }, env = { LD_PRELOAD = "{server_trace_lib}", TRACELAB_SERVER_TRACE_DIR = "{server_trace_dir}" } },
]
[report]
rows = "engine"
columns = [
  { name = "queue", label = "queue ms/insert", expr = "1000 * $server_trace_waits_s / $statements" },
]
profiles = { of = ["server"], top = 20 }
"#;

/// A study's MariaDB level with the server tracer preloaded: its
/// connection's time is its CPU, its waits (each commit's redo log
/// flush) and its waits for the client (`thd_wait:NET`), as PostgreSQL's.
#[test]
fn a_traced_mariadbs_time_is_its_cpu_its_redo_flushes_and_the_wait_for_the_client() {
    let (_dir, stdout, m) = run_study(MARIADB_STUDY, &[]);
    let on = &m["mariadb"];
    let get = |k: &str| *on.get(k).unwrap_or_else(|| panic!("no {k}: {on:?}"));
    assert!(get("server_trace_cpu_s") > 0.0, "{on:?}");
    // The commits flush the redo log, by the thread itself here (one
    // session: it leads its own group commit). Not every one: a commit
    // whose redo the server's background thread has just flushed (once a
    // second) has nothing left to flush.
    assert!(
        get("server_trace_fdatasync_ib_logfile0_calls") >= 40.0,
        "{on:?}"
    );
    assert!(
        get("server_trace_waits_s") >= get("server_trace_fdatasync_ib_logfile0_s"),
        "{on:?}"
    );
    // Between calls, the connection waits for its client: a wait only
    // where its read would block (a command already in the socket is not
    // waited for, so not every round trip has one).
    assert!(get("server_trace_thd_wait_net_calls") >= 1.0, "{on:?}");
    assert!(get("server_trace_idle_s") > 0.0, "{on:?}");
    check_adds_up(on);
    let section = stdout
        .split("Profiles of the server's traces")
        .nth(1)
        .unwrap_or_else(|| panic!("no server profile: {stdout}"));
    assert!(section.contains("fdatasync ib_logfile0"), "{section}");
}

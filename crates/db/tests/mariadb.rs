//! A real private MariaDB: started, reached by the real client over TCP and
//! over its socket, configured, stopped, started again on the same data;
//! as root the server runs as an unprivileged user.

use std::path::Path;
use std::process::Command;

use tracelab_db::{
    start_mariadb, start_postgres, status, stop, MariaOptions, PgOptions, ServerState, Status,
};

/// Stops the server even when an assertion fails.
struct Teardown<'a>(&'a Path);

impl Drop for Teardown<'_> {
    fn drop(&mut self) {
        let _ = stop(self.0);
        let _ = std::fs::remove_dir_all(self.0);
    }
}

/// The MariaDB command-line client (`mariadb`, or `mysql` on older packages).
fn client() -> &'static str {
    if Command::new("mariadb").arg("--version").output().is_ok() {
        "mariadb"
    } else {
        "mysql"
    }
}

/// Runs SQL through the client with the given connection arguments and
/// returns the bare result.
fn sql(conn: &[&str], query: &str) -> String {
    let out = Command::new(client())
        .arg("--no-defaults")
        .args(conn)
        .args(["-uroot", "-N", "-B", "-e", query])
        .output()
        .expect("the mariadb client runs");
    assert!(
        out.status.success(),
        "{query}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn tcp(state: &ServerState) -> Vec<String> {
    vec![
        "-h127.0.0.1".into(),
        format!("-P{}", state.port),
        "--protocol=TCP".into(),
        "tracelab".into(),
    ]
}

fn q(state: &ServerState, query: &str) -> String {
    let conn = tcp(state);
    sql(&conn.iter().map(String::as_str).collect::<Vec<_>>(), query)
}

fn uid_of(pid: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string()
}

#[test]
fn start_connect_configure_stop_restart() {
    let base = tempfile::Builder::new()
        .prefix("tracelab-mariadb-test-")
        .tempdir_in("/tmp")
        .unwrap();
    let dir = base.path().join("m");
    let _teardown = Teardown(&dir);
    let state = start_mariadb(&MariaOptions {
        dir: Some(dir.clone()),
        settings: vec![
            // Not the default (1), so seeing 2 proves the setting arrived.
            ("innodb_flush_log_at_trx_commit".into(), "2".into()),
            ("sql-mode".into(), "ANSI_QUOTES".into()),
        ],
    })
    .expect("server starts");
    assert_eq!(
        state.url,
        format!("mysql://root@127.0.0.1:{}/tracelab", state.port)
    );
    assert_eq!(state.engine, "mariadb");

    // TCP on 127.0.0.1 only, in the database the URL names, with the settings.
    assert_eq!(
        q(
            &state,
            "select database(), @@innodb_flush_log_at_trx_commit, @@sql_mode, @@bind_address"
        ),
        "tracelab\t2\tANSI_QUOTES\t127.0.0.1"
    );
    // The socket in the directory reaches the same server.
    let socket = state.socket_path();
    assert!(socket.starts_with(&dir), "{}", socket.display());
    assert_eq!(
        sql(
            &["-S", socket.to_str().unwrap(), "--protocol=SOCKET"],
            "select @@port, @@socket"
        ),
        format!("{}\t{}", state.port, socket.display())
    );
    // Never as root.
    let pid = std::fs::read_to_string(state.pid_file()).unwrap();
    let pid = pid.trim().to_string();
    assert_ne!(uid_of(&pid), "0", "the server does not run as root");
    q(
        &state,
        "create table kept (n int); insert into kept values (42)",
    );

    assert_eq!(status(&dir).unwrap(), Status::Running(state.clone()));
    stop(&dir).unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}/cmdline")).exists()
            || std::fs::read(format!("/proc/{pid}/cmdline"))
                .unwrap()
                .is_empty(),
        "the server process is gone"
    );
    assert!(matches!(status(&dir).unwrap(), Status::Stopped(_)));
    // Stopping twice is fine.
    stop(&dir).unwrap();

    // A server that dies on start because of a -c option says why, from
    // its log, as a refused setting (the command line was wrong).
    let err = start_mariadb(&MariaOptions {
        dir: Some(dir.clone()),
        settings: vec![("no_such_option_here".into(), "1".into())],
    })
    .unwrap_err();
    assert!(matches!(err, tracelab_db::DbError::Setting { .. }), "{err}");
    let err = err.to_string();
    assert!(
        err.contains("no_such_option_here") && err.contains("unknown variable"),
        "{err}"
    );
    // Another engine is not started over it.
    let err = start_postgres(&PgOptions {
        dir: Some(dir.clone()),
        settings: vec![],
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("holds a stopped mariadb server"), "{err}");

    // Starting again reuses the data; settings were for that start only.
    let again = start_mariadb(&MariaOptions {
        dir: Some(dir.clone()),
        settings: vec![],
    })
    .unwrap();
    assert_eq!(q(&again, "select n from kept"), "42");
    assert_eq!(q(&again, "select @@innodb_flush_log_at_trx_commit"), "1");
    // A second start while it runs is refused with the URL.
    let err = start_mariadb(&MariaOptions {
        dir: Some(dir.clone()),
        settings: vec![],
    })
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("already runs") && err.contains(&again.url),
        "{err}"
    );
}

#[test]
fn settings_tracelab_owns_are_refused_before_anything_starts() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("m");
    let err = start_mariadb(&MariaOptions {
        dir: Some(dir.clone()),
        settings: vec![("bind-address".into(), "0.0.0.0".into())],
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("tracelab sets this option itself"), "{err}");
    assert!(!dir.exists(), "nothing was created");
}

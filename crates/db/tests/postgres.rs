//! A real private PostgreSQL: started, reached by a real client (psql),
//! configured, stopped and started again; as root the server runs as an
//! unprivileged user.

use std::path::Path;
use std::process::Command;

use tracelab_db::{start_postgres, status, stop, PgOptions, Status};

/// Stops the server even when an assertion fails.
struct Teardown<'a>(&'a Path);

impl Drop for Teardown<'_> {
    fn drop(&mut self) {
        let _ = stop(self.0);
        let _ = std::fs::remove_dir_all(self.0);
    }
}

fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-X", "-tA", "-c", sql])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn start_connect_configure_stop_restart() {
    let base = tempfile::Builder::new()
        .prefix("tracelab-db-test-")
        .tempdir_in("/tmp")
        .unwrap();
    let dir = base.path().join("pg");
    let _teardown = Teardown(&dir);
    let state = start_postgres(&PgOptions {
        dir: Some(dir.clone()),
        settings: vec![
            ("work_mem".into(), "8MB".into()),
            ("application_name".into(), "it's quoted".into()),
        ],
    })
    .expect("server starts");
    assert!(
        state.url.starts_with("postgres://postgres@127.0.0.1:"),
        "{}",
        state.url
    );
    let userinfo = state
        .url
        .trim_start_matches("postgres://")
        .split('@')
        .next()
        .unwrap();
    assert!(
        !userinfo.contains(':'),
        "no password in the URL: {}",
        state.url
    );
    assert_eq!(psql(&state.url, "select 1"), "1");
    assert_eq!(psql(&state.url, "show work_mem"), "8MB");
    assert_eq!(psql(&state.url, "show listen_addresses"), "127.0.0.1");
    // Never as root.
    let uid_line = std::fs::read_to_string(format!(
        "/proc/{}/status",
        std::fs::read_to_string(state.data_dir().join("postmaster.pid"))
            .unwrap()
            .lines()
            .next()
            .unwrap()
    ))
    .unwrap()
    .lines()
    .find(|l| l.starts_with("Uid:"))
    .unwrap()
    .to_string();
    assert!(
        !uid_line.split_whitespace().nth(1).unwrap().eq("0"),
        "the server does not run as root: {uid_line}"
    );

    assert!(matches!(status(&dir).unwrap(), Status::Running(_)));
    stop(&dir).unwrap();
    assert!(matches!(status(&dir).unwrap(), Status::Stopped(_)));
    // Stopping twice is fine; starting again reuses the cluster.
    stop(&dir).unwrap();
    let again = start_postgres(&PgOptions {
        dir: Some(dir.clone()),
        settings: vec![],
    })
    .unwrap();
    assert_eq!(psql(&again.url, "select 2"), "2");
    // A second start while it runs is refused with the URL.
    let err = start_postgres(&PgOptions {
        dir: Some(dir.clone()),
        settings: vec![],
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("already runs"), "{err}");
}

#[test]
fn status_of_a_directory_without_a_server_says_so() {
    let d = tempfile::tempdir().unwrap();
    let err = status(d.path()).unwrap_err().to_string();
    assert!(err.contains("no tracelab server here"), "{err}");
}

//! `tracelab db` as a user runs it: start prints a URL a real client
//! (psql) connects to, status and stop say what they did, in exit codes
//! too.

mod common;
use common::tracelab;

use std::process::Command;

struct Teardown(String);

impl Drop for Teardown {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_tracelab"))
            .args(["db", "stop", "--dir", &self.0])
            .output();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn start_status_stop() {
    let base = tempfile::Builder::new()
        .prefix("tracelab-dbcli-")
        .tempdir_in("/tmp")
        .unwrap();
    let dir = base.path().join("pg").to_string_lossy().into_owned();
    let _t = Teardown(dir.clone());
    let (url, err, code) = tracelab(&["db", "start", "--dir", &dir, "-c", "work_mem=16MB"]);
    assert_eq!(code, 0, "{err}");
    let url = url.trim();
    assert!(url.starts_with("postgres://postgres@127.0.0.1:"), "{url}");
    let q = Command::new("psql")
        .args([url, "-X", "-tA", "-c", "show work_mem"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&q.stdout).trim(), "16MB");

    let (out, _, code) = tracelab(&["db", "status", "--dir", &dir]);
    assert_eq!(
        (code, out.trim()),
        (0, format!("running postgres {url}").as_str())
    );
    let (_, err, code) = tracelab(&["db", "stop", "--dir", &dir]);
    assert_eq!(code, 0, "{err}");
    let (out, _, code) = tracelab(&["db", "status", "--dir", &dir]);
    assert_eq!(code, 1);
    assert!(out.starts_with("stopped postgres"), "{out}");

    let (_, err, code) = tracelab(&["db", "start", "--dir", &dir, "-c", "work_mem"]);
    assert_eq!(code, 2);
    assert!(err.contains("expected NAME=VALUE"), "{err}");
    let (_, err, code) = tracelab(&["db", "status", "--dir", "/nonexistent/tracelab"]);
    assert_eq!(code, 4);
    assert!(err.contains("no tracelab server here"), "{err}");
}

#[test]
fn mariadb_start_status_stop() {
    let base = tempfile::Builder::new()
        .prefix("tracelab-dbcli-")
        .tempdir_in("/tmp")
        .unwrap();
    let dir = base.path().join("m").to_string_lossy().into_owned();
    let _t = Teardown(dir.clone());
    let (url, err, code) = tracelab(&[
        "db",
        "start",
        "--engine",
        "mariadb",
        "--dir",
        &dir,
        "-c",
        "innodb_flush_log_at_trx_commit=2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("MariaDB running in"), "{err}");
    let url = url.trim();
    let port = url
        .strip_prefix("mysql://root@127.0.0.1:")
        .and_then(|r| r.strip_suffix("/tracelab"))
        .unwrap_or_else(|| panic!("a mysql URL without password: {url}"));
    let client = if Command::new("mariadb").arg("--version").output().is_ok() {
        "mariadb"
    } else {
        "mysql"
    };
    let q = Command::new(client)
        .args([
            "--no-defaults",
            "-h127.0.0.1",
            &format!("-P{port}"),
            "--protocol=TCP",
            "-uroot",
            "-N",
            "-B",
            "-e",
            "select database(), @@innodb_flush_log_at_trx_commit",
            "tracelab",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&q.stdout).trim(),
        "tracelab\t2",
        "{}",
        String::from_utf8_lossy(&q.stderr)
    );

    let (out, _, code) = tracelab(&["db", "status", "--dir", &dir]);
    assert_eq!(
        (code, out.trim()),
        (0, format!("running mariadb {url}").as_str())
    );
    let (_, err, code) = tracelab(&["db", "stop", "--dir", &dir]);
    assert_eq!(code, 0, "{err}");
    let (out, _, code) = tracelab(&["db", "status", "--dir", &dir]);
    assert_eq!(code, 1);
    assert!(out.starts_with("stopped mariadb"), "{out}");

    let (_, err, code) = tracelab(&[
        "db",
        "start",
        "--engine",
        "mariadb",
        "--dir",
        &dir,
        "-c",
        "datadir=/x",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("tracelab sets this option itself"), "{err}");
    let (_, err, code) = tracelab(&["db", "start", "--engine", "oracle", "--dir", &dir]);
    assert_eq!(code, 2, "{err}");
}

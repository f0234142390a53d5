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

/// A setting the engine refuses is a mistake on the command line (exit
/// 2), said in one plain line, and the directory stays usable: `status`,
/// `start` and `stop` know it (they said "no tracelab-db.json" after an
/// exit 4 with a nested, doubled message).
#[test]
fn a_setting_the_engine_refuses_is_exit_2_and_the_directory_stays_usable() {
    let base = tempfile::Builder::new()
        .prefix("tracelab-dbcli-")
        .tempdir_in("/tmp")
        .unwrap();
    for (engine, bad) in [
        ("postgres", "no_such_setting=1"),
        ("postgres", "work_mem=lots"),
        ("mariadb", "no_such_setting=1"),
    ] {
        let dir = base
            .path()
            .join(format!("{engine}-{}", bad.split('=').next().unwrap()))
            .to_string_lossy()
            .into_owned();
        let _t = Teardown(dir.clone());
        let (out, err, code) =
            tracelab(&["db", "start", "--engine", engine, "--dir", &dir, "-c", bad]);
        assert_eq!(code, 2, "{engine} -c {bad}: {out}{err}");
        let name = bad.split('=').next().unwrap();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0].starts_with(&format!("tracelab: -c {name}: "))
                && lines[0].contains("refuses it"),
            "{err}"
        );
        assert!(!err.contains("its output"), "{err}");
        let (out, err, code) = tracelab(&["db", "status", "--dir", &dir]);
        assert_eq!(
            (code, out.split(' ').next()),
            (1, Some("stopped")),
            "{out}{err}"
        );
        let (url, err, code) = tracelab(&["db", "start", "--engine", engine, "--dir", &dir]);
        assert_eq!(code, 0, "{engine}: the next start works: {err}");
        assert!(!url.trim().is_empty());
        let (_, err, code) = tracelab(&["db", "stop", "--dir", &dir]);
        assert_eq!(code, 0, "{err}");
    }
}

/// After a kill -9 of the server, `db start` on its directory keeps the
/// port when it is free, so that URLs in scripts keep working (it picked
/// a new one).
#[test]
fn a_restart_after_kill_9_keeps_the_port() {
    let base = tempfile::Builder::new()
        .prefix("tracelab-dbcli-")
        .tempdir_in("/tmp")
        .unwrap();
    for (engine, pid_file) in [
        ("postgres", "data/postmaster.pid"),
        ("mariadb", "server.pid"),
    ] {
        let dir = base.path().join(engine).to_string_lossy().into_owned();
        let _t = Teardown(dir.clone());
        let (url, err, code) = tracelab(&["db", "start", "--engine", engine, "--dir", &dir]);
        assert_eq!(code, 0, "{err}");
        let pid: i32 = std::fs::read_to_string(std::path::Path::new(&dir).join(pid_file))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // SAFETY: kill takes plain integers.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        // Gone, or a zombie nobody has reaped yet.
        let t0 = std::time::Instant::now();
        while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| !r.trim_start().starts_with('Z'))
        }) {
            assert!(t0.elapsed() < std::time::Duration::from_secs(30));
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let (out, _, code) = tracelab(&["db", "status", "--dir", &dir]);
        assert_eq!(code, 1, "{engine}: a killed server is stopped: {out}");
        let (again, err, code) = tracelab(&["db", "start", "--engine", engine, "--dir", &dir]);
        assert_eq!(code, 0, "{engine}: {err}");
        assert_eq!(again.trim(), url.trim(), "{engine}: the same URL");
        let (_, err, code) = tracelab(&["db", "stop", "--dir", &dir]);
        assert_eq!(code, 0, "{err}");
    }
}

/// A `-c` whose name carries a newline once wrote whole lines of its own
/// into postgresql.conf (here an `archive_command` that runs at once);
/// a value with a newline, a name that is no setting name and the same
/// for MariaDB are refused before anything is written or started.
#[test]
fn a_setting_that_would_inject_lines_is_refused_with_exit_2() {
    let base = tempfile::Builder::new()
        .prefix("tracelab-dbcli-inject-")
        .tempdir_in("/tmp")
        .unwrap();
    let dir = base.path().join("pg").to_string_lossy().into_owned();
    let _t = Teardown(dir.clone());
    let ran = base.path().join("ran");
    // postgresql.conf takes `name value` lines (the `=` is optional).
    let injected = format!(
        "archive_mode on\narchive_command 'touch {}'\nwork_mem=8MB",
        ran.display()
    );
    let (_, err, code) = tracelab(&["db", "start", "--dir", &dir, "-c", &injected]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not a setting name") && err.contains("archive_command"),
        "the message names the bad name: {err}"
    );
    let conf = std::path::Path::new(&dir).join("data/postgresql.conf");
    let text = std::fs::read_to_string(&conf).unwrap_or_default();
    assert!(!text.contains("archive_command 'touch"), "{text}");
    assert!(!ran.exists(), "the injected command ran");

    let (_, err, code) = tracelab(&[
        "db",
        "start",
        "--dir",
        &dir,
        "-c",
        "application_name=a\narchive_command = 'x'",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("application_name") && err.contains("newline"),
        "{err}"
    );
    for bad in ["work mem=1MB", "1x=2", "a;b=1", "=1"] {
        let (_, err, code) = tracelab(&["db", "start", "--dir", &dir, "-c", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("not a setting name"), "{bad}: {err}");
    }
    let mdir = base.path().join("m").to_string_lossy().into_owned();
    let (_, err, code) = tracelab(&[
        "db",
        "start",
        "--engine",
        "mariadb",
        "--dir",
        &mdir,
        "-c",
        "init_connect=x\ny",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("init_connect") && err.contains("newline"),
        "{err}"
    );
    assert!(
        !std::path::Path::new(&mdir).join("data").exists(),
        "nothing was made for a refused setting"
    );
}

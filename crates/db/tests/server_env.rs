//! A private server does not inherit its caller's secrets: a password or
//! a cloud key in tracelab's environment is absent from the server's
//! process environment (/proc/PID/environ) and from what a superuser
//! client can make the server run (`COPY ... FROM PROGRAM 'env'`); what
//! the server is given on purpose (LD_PRELOAD-style variables) is there.

use std::path::Path;
use std::process::Command;

use tracelab_db::{start_mariadb_with_env, start_postgres_with_env, stop, MariaOptions, PgOptions};

/// Stops the server even when an assertion fails.
struct Teardown<'a>(&'a Path);

impl Drop for Teardown<'_> {
    fn drop(&mut self) {
        let _ = stop(self.0);
        let _ = std::fs::remove_dir_all(self.0);
    }
}

/// Made-up secrets, in this test process's environment (both tests set
/// the same values: the order they run in does not matter).
const SECRETS: [(&str, &str); 3] = [
    ("PGPASSWORD", "pg-secret-4711"),
    ("MYSQL_PWD", "my-secret-4712"),
    ("AWS_SECRET_ACCESS_KEY", "aws-secret-4713"),
];

fn set_secrets() {
    for (k, v) in SECRETS {
        // Edition 2021: safe; std serialises its own environment access.
        std::env::set_var(k, v);
    }
}

fn assert_no_secret(what: &str, env: &str) {
    for (k, v) in SECRETS {
        assert!(
            !env.contains(v),
            "{k}'s value is readable in {what}:\n{env}"
        );
    }
}

fn environ(pid: &str) -> String {
    let raw = std::fs::read(format!("/proc/{}/environ", pid.trim())).unwrap();
    String::from_utf8_lossy(&raw).replace('\0', "\n")
}

fn tmp(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/tmp")
        .unwrap()
}

#[test]
fn postgres_starts_without_the_callers_secrets() {
    set_secrets();
    let base = tmp("tracelab-db-env-pg-");
    let dir = base.path().join("pg");
    let _teardown = Teardown(&dir);
    let given = vec![("TRACELAB_CLOCK".to_string(), "vdso".to_string())];
    let state = start_postgres_with_env(
        &PgOptions {
            dir: Some(dir.clone()),
            settings: vec![],
        },
        &given,
    )
    .expect("server starts");
    let pid = std::fs::read_to_string(state.data_dir().join("postmaster.pid")).unwrap();
    let pid = pid.lines().next().unwrap();
    let env = environ(pid);
    assert_no_secret("the postmaster's /proc/PID/environ", &env);
    assert!(env.contains("TRACELAB_CLOCK=vdso"), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");

    // What any superuser client can read: the environment of a program
    // the server runs. Each line one row (\x01 and \x02 appear in no
    // environment, so nothing is taken for a delimiter or a quote).
    let sql = "CREATE TEMP TABLE e(line text); \
               COPY e FROM PROGRAM 'env' WITH (FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02'); \
               SELECT string_agg(line, E'\\n') FROM e";
    let out = Command::new("psql")
        .env_remove("PGPASSWORD")
        .args([state.url.as_str(), "-X", "-tA", "-c", sql])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_program = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        from_program.contains("PATH="),
        "the program's environment was read: {from_program}"
    );
    assert_no_secret("COPY ... FROM PROGRAM 'env'", &from_program);
}

#[test]
fn mariadb_starts_without_the_callers_secrets() {
    set_secrets();
    let base = tmp("tracelab-db-env-maria-");
    let dir = base.path().join("m");
    let _teardown = Teardown(&dir);
    let given = vec![("TRACELAB_CLOCK".to_string(), "vdso".to_string())];
    let state = start_mariadb_with_env(
        &MariaOptions {
            dir: Some(dir.clone()),
            settings: vec![],
        },
        &given,
    )
    .expect("server starts");
    let pid = std::fs::read_to_string(state.pid_file()).unwrap();
    let env = environ(&pid);
    assert_no_secret("mariadbd's /proc/PID/environ", &env);
    assert!(env.contains("TRACELAB_CLOCK=vdso"), "{env}");
}

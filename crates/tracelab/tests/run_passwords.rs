//! `tracelab run` finds passwords where the engines' own clients do, so
//! that none need be in a URL (which every user sees in
//! `/proc/PID/cmdline`): PGPASSWORD, the password file (PGPASSFILE), a
//! service (PGSERVICEFILE + PGSERVICE) for PostgreSQL, the result cache's
//! own connection too; MYSQL_PWD and `~/.my.cnf` for MariaDB. Real
//! servers that refuse a login without the password.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::tracelab_env;

struct Server {
    state: tracelab_db::ServerState,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = tracelab_db::stop(&self.state.dir);
    }
}

fn dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tracelab-pw-test-")
        .tempdir_in("/tmp")
        .unwrap()
}

fn private_file(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

const PW: &str = "Pg-Secret-9090";

#[test]
fn postgres_pgpassword_password_file_and_service() {
    let d = dir();
    let state = tracelab_db::start_postgres(&tracelab_db::PgOptions {
        dir: Some(d.path().join("pg")),
        settings: vec![],
    })
    .unwrap();
    let srv = Server { state, _dir: d };
    let psql = |sql: &str| {
        let out = Command::new("psql")
            .args([
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                &srv.state.url,
                "-c",
                sql,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    psql(&format!(
        "create role pw_u login superuser password '{PW}'; create table t (k int primary key);
         insert into t values (1)"
    ));
    let hba = srv.state.data_dir().join("pg_hba.conf");
    let old = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(
        &hba,
        format!("host all pw_u 127.0.0.1/32 scram-sha-256\n{old}"),
    )
    .unwrap();
    psql("select pg_reload_conf()");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let port = srv.state.port.to_string();
    let url = format!("postgres://pw_u@127.0.0.1:{port}/postgres");
    let home = dir();
    let h = home.path().to_str().unwrap();
    let run = |url: &str, env: &[(&str, &str)], extra: &[&str]| {
        let mut args = vec![
            "run",
            "--db",
            url,
            "--sql",
            "select k from t where k = 1",
            "--sessions",
            "2",
            "--transactions",
            "5",
        ];
        args.extend_from_slice(extra);
        let mut env = env.to_vec();
        env.push(("HOME", h));
        tracelab_env(&args, &env)
    };
    // Without a password anywhere: refused, said so.
    let (out, err, code) = run(&url, &[], &[]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(format!("{out}{err}").contains("password"), "{out}{err}");
    // PGPASSWORD.
    let (out, err, code) = run(&url, &[("PGPASSWORD", PW)], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("transactions: 10"), "{out}");
    // A password in the URL, as user:password@ or as ?password=, reaches
    // neither the output nor the HTML report (which names the target).
    let report = home.path().join("r.html");
    for u in [
        format!("postgres://pw_u:{PW}@127.0.0.1:{port}/postgres"),
        format!("postgres://pw_u@127.0.0.1:{port}/postgres?password={PW}"),
    ] {
        let (out, err, code) = run(&u, &[], &["--report", report.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}{err}");
        let html = std::fs::read_to_string(&report).unwrap();
        assert!(html.contains("pw_u") && html.contains("***"), "{html}");
        assert!(
            !format!("{html}{out}{err}").contains(PW),
            "{html}{out}{err}"
        );
    }
    // The password file, named by PGPASSFILE (and ~/.pgpass).
    let pass = home.path().join("pgpass");
    private_file(
        &pass,
        &format!("# tracelab\n127.0.0.1:{port}:postgres:pw_u:{PW}\n"),
    );
    let (out, err, code) = run(&url, &[("PGPASSFILE", pass.to_str().unwrap())], &[]);
    assert_eq!(code, 0, "{out}{err}");
    private_file(&home.path().join(".pgpass"), &format!("*:*:*:pw_u:{PW}\n"));
    let (out, err, code) = run(&url, &[], &[]);
    assert_eq!(code, 0, "{out}{err}");
    std::fs::remove_file(home.path().join(".pgpass")).unwrap();
    // A service: the URL names nothing but the service; the result
    // cache's own connection (LISTEN, catalog) uses it too.
    let svc = home.path().join("services.conf");
    std::fs::write(
        &svc,
        format!("[lab]\nhost=127.0.0.1\nport={port}\nuser=pw_u\ndbname=postgres\npassword={PW}\n"),
    )
    .unwrap();
    let (out, err, code) = run(
        "postgres://",
        &[
            ("PGSERVICEFILE", svc.to_str().unwrap()),
            ("PGSERVICE", "lab"),
        ],
        &[
            "--result-cache",
            "--result-cache-table",
            "t",
            "--result-cache-setup",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Find Count"), "{out}");
    assert!(!out.contains("channel failed"), "{out}");
    assert!(!format!("{out}{err}").contains(PW));
}

#[test]
fn mariadb_mysql_pwd_and_option_file() {
    let d = dir();
    let state = tracelab_db::start_mariadb(&tracelab_db::MariaOptions {
        dir: Some(d.path().join("m")),
        settings: vec![],
    })
    .unwrap();
    let srv = Server { state, _dir: d };
    let port = srv.state.port.to_string();
    let out = Command::new("mariadb")
        .args([
            "-h",
            "127.0.0.1",
            "-P",
            &port,
            "-u",
            "root",
            "tracelab",
            "-e",
        ])
        .arg("create user pw_m@'%' identified by 'Maria-Secret-77'; grant all on *.* to pw_m@'%'")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = format!("mysql://pw_m@127.0.0.1:{port}/tracelab");
    let home = dir();
    let h = home.path().to_str().unwrap();
    let run = |env: &[(&str, &str)]| {
        let mut env = env.to_vec();
        env.push(("HOME", h));
        tracelab_env(
            &[
                "run",
                "--db",
                &url,
                "--sql",
                "select 1",
                "--transactions",
                "3",
            ],
            &env,
        )
    };
    let (out, err, code) = run(&[]);
    assert_ne!(code, 0, "without a password: refused\n{out}{err}");
    let (out, err, code) = run(&[("MYSQL_PWD", "Maria-Secret-77")]);
    assert_eq!(code, 0, "{out}{err}");
    private_file(
        &home.path().join(".my.cnf"),
        "[client]\npassword = \"Maria-Secret-77\"\n",
    );
    let (out, err, code) = run(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!format!("{out}{err}").contains("Maria-Secret-77"));
}

/// What `--db` is given may not be a URL at all: a libpq key=value string
/// or Oracle's `user/password@service`. The errors that quote it (the
/// engine cannot be told) mask its password as a URL's is masked.
#[test]
fn connection_strings_that_are_not_urls_are_masked_in_errors() {
    for db in [
        "host=127.0.0.1 password=KvSecret-1 dbname=x",
        "host=127.0.0.1 password = 'Kv Secret-1' dbname=x",
        "scott/KvSecret-1@orcl",
    ] {
        let (out, err, code) = tracelab_env(&["run", "--db", db, "--sql", "select 1"], &[]);
        assert_eq!(code, 2, "{db}: {err}");
        assert!(err.contains("cannot tell the engine"), "{db}: {err}");
        assert!(err.contains("***"), "{db}: {err}");
        assert!(
            !err.contains("Secret-1") && !out.contains("Secret-1"),
            "{db}: the password leaked: {err}{out}"
        );
    }
}

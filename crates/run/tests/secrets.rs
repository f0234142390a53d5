//! Passwords in statements never reach what `run` writes: the trace of
//! every session, the summary (text and JSON) and its error messages, on
//! real PostgreSQL and MariaDB servers, in every form the engines take a
//! password literal.

use tracelab_run::{run, ExeMode, RunOptions, Statement, Stop, Summary, Workload};

mod common;

fn workload(sqls: &[&str]) -> Workload {
    Workload {
        statements: sqls
            .iter()
            .map(|s| Statement {
                sql: s.to_string(),
                engine_sql: s.to_string(),
                binds: Default::default(),
                weight: 1,
            })
            .collect(),
        mode: ExeMode::Sequential,
    }
}

/// Runs `sqls` once each with a trace; everything written, as one text.
fn written(url: &str, sqls: &[&str]) -> (Summary, String) {
    let dir = tempfile::tempdir().unwrap();
    let sum = run(
        &RunOptions {
            url: url.to_string(),
            stop: Stop::Transactions(sqls.len() as u64),
            trace_dir: Some(dir.path().to_path_buf()),
            ..RunOptions::default()
        },
        &workload(sqls),
    )
    .unwrap();
    let mut all = sum.text() + &sum.json();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        all.push_str(&String::from_utf8_lossy(
            &std::fs::read(e.unwrap().path()).unwrap(),
        ));
    }
    (sum, all)
}

#[test]
fn postgres_password_literals_in_every_form_are_masked() {
    let srv = common::postgres("create role rc_u");
    let (sum, all) = written(
        &srv.state.url,
        &[
            // Fails (no such role): the error summary quotes it.
            "alter role u2 password 'SECRETPW3'",
            "alter role rc_u password E'SECRET\\'PW4'",
            "alter role rc_u password $$SECRETPW5$$",
            "alter role rc_u password $q$SECRETPW6$q$",
            // Fails: conflicting options; the message quotes the statement.
            "alter role rc_u with password 'SECRETPW7' password 'SECRETPW8'",
            "do $$ begin execute format('alter role rc_u password %L', 'SECRETPW9'); end $$",
        ],
    );
    assert!(sum.errors >= 2, "{:?}", sum.errors_by_code);
    for n in 3..=9 {
        assert!(
            !all.contains(&format!("PW{n}")),
            "SECRETPW{n} leaked:\n{all}"
        );
    }
    assert!(all.contains("alter role u2 password '***'"), "{all}");
    assert!(all.contains("alter role rc_u password $q$***$q$"), "{all}");
}

#[test]
fn mariadb_identified_by_and_password_functions_are_masked() {
    let srv = common::mariadb("create user rc_m@'%' identified by 'x'");
    let (sum, all) = written(
        &srv.state.url,
        &[
            // Fails (no such user): the error summary quotes it.
            "alter user nobody@'%' identified by 'SECRETM1'",
            "set password for nobody@'%' = password('SECRETM2')",
            "alter user rc_m@'%' identified by \"SECRETM3\"",
            "alter user rc_m@'%' identified via mysql_native_password using password('SECRETM4')",
        ],
    );
    assert!(sum.errors >= 2, "{:?}", sum.errors_by_code);
    for n in 1..=4 {
        assert!(
            !all.contains(&format!("SECRETM{n}")),
            "SECRETM{n} leaked:\n{all}"
        );
    }
    assert!(all.contains("identified by '***'"), "{all}");
}

/// A session that cannot connect names the URL the user gave, its
/// password masked: not the parameters a caller (a study) added to it,
/// `application_name` and `options`, which repeated in every message.
#[test]
fn a_failed_connection_names_the_url_as_given() {
    // Port 1 on loopback: refused at once, no server needed.
    let given = "postgres://app:SECRETPW1@127.0.0.1:1/db";
    let sum = run(
        &RunOptions {
            url: format!("{given}?application_name=tracelab-study&options=-c%20work_mem%3D64MB"),
            shown_url: Some(given.to_string()),
            stop: Stop::Transactions(1),
            ..RunOptions::default()
        },
        &workload(&["select 1"]),
    )
    .unwrap();
    let failures = sum.failures().join("\n");
    assert!(
        failures.contains("cannot connect to postgres://app:***@127.0.0.1:1/db:"),
        "{failures}"
    );
    let all = failures + &sum.text() + &sum.json();
    for leak in ["application_name", "work_mem", "SECRETPW1"] {
        assert!(!all.contains(leak), "{leak} in {all}");
    }
}

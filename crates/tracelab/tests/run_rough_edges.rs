//! What a new user of `tracelab run` tripped over (issue 35): one syntax
//! for every time option, a statement with placeholders and no bind
//! values, bind files that are not UTF-8, and client traces whose
//! accounting must close. On SQLite (in process), so that nothing waits
//! for a server.

mod common;
use common::tracelab;

/// Every option that takes a time reads the same syntax: seconds, or a
/// number with a unit; a negative time is refused by name, not taken for
/// an unknown option.
#[test]
fn every_time_option_takes_seconds_or_a_unit() {
    for runtime in ["1s", "0.3", "300ms"] {
        let (out, err, code) = tracelab(&[
            "run",
            "--db",
            "sqlite::memory:",
            "--sql",
            "select 1",
            "--runtime",
            runtime,
            "--exe-delay",
            "10ms",
            "--json",
        ]);
        assert_eq!(code, 0, "--runtime {runtime}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
        assert!(v["transactions"].as_u64().unwrap() > 0, "{out}");
    }
    for (args, option) in [
        (
            vec!["run", "--sql", "select 1", "--runtime", "-1"],
            "--runtime",
        ),
        (
            vec!["run", "--sql", "select 1", "--connect-delay", "-2ms"],
            "--connect-delay",
        ),
        (
            vec![
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:1",
                "--delay",
                "-6",
            ],
            "--delay",
        ),
        (vec!["prof", "--thinktime", "-1", "x.trc"], "--thinktime"),
        (vec!["skew", "--thinktime=-1", "x.trc"], "--thinktime"),
        (vec!["calls", "--thinktime", "-0.5", "x.trc"], "--thinktime"),
    ] {
        let (_, err, code) = tracelab(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(option) && err.contains("cannot be negative"),
            "{args:?}: {err}"
        );
    }
    let (_, err, code) = tracelab(&["run", "--sql", "select 1", "--runtime", "soon"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("500ms"), "the message shows the syntax: {err}");
}

/// A statement with placeholders and no bind values is refused before the
/// run (it once ran 1.8 million failing executions a second): the message
/// says how many placeholders, and for a kit names the SQL file and line.
#[test]
fn placeholders_without_bind_values_are_refused_before_the_run() {
    let (out, err, code) = tracelab(&[
        "run",
        "--db",
        "sqlite::memory:",
        "--sql",
        "select :a + :b",
        "--runtime",
        "1",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "nothing ran: {out}");
    assert!(
        err.contains("2 placeholder(s)") && err.contains("--binds"),
        "{err}"
    );
    let kit = tempfile::tempdir().unwrap();
    std::fs::write(kit.path().join("sqlfile.conf"), ",\n1,ok.sql\n1,q.sql\n").unwrap();
    std::fs::write(kit.path().join("ok.sql"), "select 1\n").unwrap();
    std::fs::write(
        kit.path().join("q.sql"),
        "-- the lookup, :not_this\nselect name\n  from t where id = $1\n",
    )
    .unwrap();
    let (out, err, code) = tracelab(&[
        "run",
        "--db",
        "sqlite::memory:",
        "--sqldir",
        kit.path().to_str().unwrap(),
        "--runtime",
        "1",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    let at = format!("{}:3:", kit.path().join("q.sql").display());
    assert!(
        err.contains(&at) && err.contains("1 placeholder(s)") && err.contains("sqlfile.conf:3"),
        "{err}"
    );
}

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

/// The components of a profile, by name: (duration µs, calls).
fn components(profile_json: &str) -> Vec<(String, i64, u64)> {
    let v: serde_json::Value = serde_json::from_str(profile_json).expect("prof --json");
    v[0]["profile"]
        .as_array()
        .expect("a profile")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["duration_us"].as_i64().unwrap(),
                c["calls"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A run's client trace accounts for its time exactly: prof finds no
/// negative time "unaccounted-for within calls" (a call's CPU more than
/// its elapsed time, or the 1 µs wait before a call taken for one inside
/// it), and the calls, their CPU and the waits add up to the response
/// time.
#[test]
fn a_client_trace_accounts_for_every_microsecond() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    let (_, err, code) = tracelab(&[
        "run",
        "--db",
        "sqlite::memory:",
        "--sql",
        "select 1",
        "--transactions",
        "5000",
        "--trace",
        traces.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let trace = traces.join("tracelab_run_0.trc");
    let (out, err, code) = tracelab(&["prof", "--json", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let profile = components(&out);
    for (name, us, calls) in &profile {
        assert!(
            !name.starts_with("unaccounted-for"),
            "{name}: {us} µs on {calls} calls in {profile:?}"
        );
    }
    // And in the trace itself: no call's c exceeds its e.
    let text = std::fs::read_to_string(&trace).unwrap();
    for line in text.lines().filter(|l| l.starts_with("EXEC #")) {
        let field = |k: &str| -> i64 {
            let at = line
                .find(&format!(",{k}="))
                .or_else(|| line.find(&format!(":{k}=")))
                .unwrap();
            let rest = &line[at + k.len() + 2..];
            rest[..rest.find(',').unwrap()].parse().unwrap()
        };
        assert!(field("c") <= field("e"), "{line}");
    }
}

/// A 'SQL*Net message from client' of 1 µs that ends where the call
/// starts is before the call, not inside it (the ±1 µs rounding tolerance
/// took it for one inside: −1 µs within the call, +1 µs between calls).
#[test]
fn a_one_microsecond_wait_before_a_call_is_not_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trc");
    std::fs::write(
        &trace,
        "Trace file t.trc\n\
         tracelab 0.1.0 client-side trace of postgres (timer: vdso)\n\n\
         *** 2026-01-01T00:00:00.000000+00:00\n\
         =====================\n\
         PARSING IN CURSOR #1 len=8 dep=0 uid=0 oct=3 lid=0 tim=100 hv=1 ad='0' sqlid='0y30pf6xwqt3x'\n\
         select 1\n\
         END OF STMT\n\
         PARSE #1:c=0,e=0,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=100\n\
         WAIT #1: nam='SQL*Net message from client' ela= 1 driver id=0 #bytes=1 p3=0 obj#=-1 tim=101\n\
         WAIT #1: nam='SQL*Net message from dblink' ela= 7 driver id=0 #bytes=1 p3=0 obj#=-1 tim=111\n\
         EXEC #1:c=3,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=111\n\
         WAIT #1: nam='SQL*Net message from client' ela= 1 driver id=0 #bytes=1 p3=0 obj#=-1 tim=112\n\
         WAIT #1: nam='SQL*Net message from dblink' ela= 5 driver id=0 #bytes=1 p3=0 obj#=-1 tim=120\n\
         EXEC #1:c=3,e=8,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=120\n",
    )
    .unwrap();
    let (out, err, code) = tracelab(&["prof", "--json", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let profile = components(&out);
    let us = |n: &str| profile.iter().find(|c| c.0 == n).map_or(0, |c| c.1);
    assert_eq!(us("unaccounted-for within calls"), 0, "{profile:?}");
    assert_eq!(us("unaccounted-for between calls"), 0, "{profile:?}");
    assert_eq!(us("SQL*Net message from client"), 2, "{profile:?}");
    let (out, err, code) = tracelab(&["skew", "--unaccounted", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("unaccounted-for"), "{out}");
}

/// A bind file that is not UTF-8 is refused naming its line (a kit's bind
/// file named none), and a NUL byte in a value under `--protocol simple`
/// is a bad bind value named by its line, not a connection error.
#[test]
fn bad_bind_values_are_named_by_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let kit = dir.path();
    std::fs::write(kit.join("sqlfile.conf"), ",\n1,q.sql,b.csv\n").unwrap();
    std::fs::write(kit.join("q.sql"), "select :1, :2\n").unwrap();
    std::fs::write(kit.join("b.csv"), b"1,a\n# a comment\n2,b\xff\xfe\n").unwrap();
    let (out, err, code) = tracelab(&[
        "run",
        "--db",
        "sqlite::memory:",
        "--sqldir",
        kit.to_str().unwrap(),
        "--transactions",
        "1",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    let at = format!("{}:3:", kit.join("b.csv").display());
    assert!(err.contains(&at) && err.contains("UTF-8"), "{err}");
    assert!(err.contains("byte offset 19"), "{err}");

    std::fs::write(kit.join("c.csv"), b"1,a\n2,b\xff\xfe\n").unwrap();
    let (out, err, code) = tracelab(&[
        "run",
        "--db",
        "sqlite::memory:",
        "--sql",
        "select $1, $2",
        "--binds",
        kit.join("c.csv").to_str().unwrap(),
        "--transactions",
        "1",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    let at = format!("{}:2:", kit.join("c.csv").display());
    assert!(
        err.contains(&at) && err.contains("UTF-8") && err.contains("value 2"),
        "{err}"
    );

    let nul = kit.join("nul.csv");
    std::fs::write(&nul, b"1,a\n2,b\x00c\n").unwrap();
    // Refused before any connection: port 1 is never tried.
    let (out, err, code) = tracelab(&[
        "run",
        "--db",
        "postgres://u@127.0.0.1:1/db",
        "--sql",
        "select $1, $2",
        "--binds",
        nul.to_str().unwrap(),
        "--protocol",
        "simple",
        "--transactions",
        "1",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    let at = format!("{}:2:", nul.display());
    assert!(
        err.contains(&at) && err.contains("value 2 holds a NUL byte"),
        "{err}"
    );
    assert!(!err.contains("connect"), "{err}");
}

/// The README's main-job command leaves traces of a sensible size (it
/// left 100 MB for its 5 s): run as documented, on SQLite rather than a
/// private PostgreSQL (the trace's size per call is alike), into a
/// temporary directory.
#[test]
fn the_readme_main_job_leaves_traces_of_a_sensible_size() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("cargo run --release -p tracelab -- run "))
        .expect("the README's main-job command");
    let words: Vec<&str> = line.split(" -- ").nth(1).unwrap().split(' ').collect();
    // The words as the shell passes them: the quoted statement is one.
    let mut args: Vec<String> = Vec::new();
    let mut quoted: Option<String> = None;
    for w in words {
        match quoted.take() {
            Some(q) if w.ends_with('\'') => args.push(format!("{q} {}", w.trim_end_matches('\''))),
            Some(q) => quoted = Some(format!("{q} {w}")),
            None if w.starts_with('\'') && !w[1..].ends_with('\'') => {
                quoted = Some(w.trim_start_matches('\'').to_string())
            }
            None => args.push(w.trim_matches('\'').to_string()),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let at = args.iter().position(|a| a == "--trace").expect("--trace");
    args[at + 1] = dir.path().join("traces").to_string_lossy().into_owned();
    args.extend(["--engine".into(), "sqlite".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, err, code) = tracelab(&args);
    assert_eq!(code, 0, "{args:?}: {err}");
    assert!(out.contains("transactions:"), "{out}");
    let bytes: u64 = std::fs::read_dir(dir.path().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(bytes > 0 && bytes < 5 << 20, "{bytes} bytes of traces");
}

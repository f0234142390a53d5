//! `tracelab run` as a user runs it: on the private default server, and
//! against a server of one's own with bind values and traces that
//! `tracelab skew` profiles.

mod common;
use common::tracelab;

/// The trace files a run wrote into `dir`.
fn trace_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_embedded_default_needs_no_database() {
    let (out, err, code) = tracelab(&[
        "run",
        "--sql",
        "select 1",
        "--sessions",
        "2",
        "--transactions",
        "30",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    assert_eq!(v["transactions"], 60);
    assert_eq!(v["sessions"], 2);
    assert_eq!(v["per_session"].as_array().unwrap().len(), 2);
    assert!(v["latency_us"]["p99"].as_u64().unwrap() >= v["latency_us"]["p50"].as_u64().unwrap());
}

#[test]
fn binds_and_traces_profile_with_skew() {
    let base = tempfile::Builder::new()
        .prefix("tracelab-runcli-")
        .tempdir_in("/tmp")
        .unwrap();
    let pg = base.path().join("pg").to_string_lossy().into_owned();
    let (url, err, code) = tracelab(&["db", "start", "--dir", &pg]);
    assert_eq!(code, 0, "{err}");
    let url = url.trim().to_string();
    struct Stop(String);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = tracelab(&["db", "stop", "--dir", &self.0]);
        }
    }
    let _stop = Stop(pg.clone());
    let binds = base.path().join("binds.csv");
    std::fs::write(&binds, "1,one\n2,two\n3,NULL\n").unwrap();
    let traces = base.path().join("traces");
    let (out, err, code) = tracelab(&[
        "run",
        "--db",
        &url,
        "--sql",
        "select :1::int + 1, :2::text",
        "--binds",
        binds.to_str().unwrap(),
        "--sessions",
        "2",
        "--transactions",
        "25",
        "--trace",
        traces.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("transactions: 50"), "{out}");
    let files = trace_files(&traces);
    assert_eq!(files.len(), 2);
    let mut args = vec!["skew", "--name=EXEC", "--csv", "--nohead"];
    args.extend(files.iter().map(String::as_str));
    let (csv, err, code) = tracelab(&args);
    assert_eq!(code, 0, "{err}");
    assert!(csv.starts_with("EXEC,"), "{csv}");
    assert_eq!(
        csv.lines().next().unwrap().split(',').nth(3),
        Some("50"),
        "{csv}"
    );
    // Executions by bind values, as analysts do with Oracle traces.
    let mut args = vec![
        "skew",
        "--name=EXEC",
        "--group=join(',', @bind)",
        "--csv",
        "--nohead",
        "--nofoot",
    ];
    args.extend(files.iter().map(String::as_str));
    let (by_bind, _, _) = tracelab(&args);
    assert_eq!(by_bind.lines().count(), 3, "{by_bind}");
}

#[test]
fn a_bad_bind_file_is_named_with_its_line() {
    let d = tempfile::tempdir().unwrap();
    let binds = d.path().join("b.csv");
    std::fs::write(&binds, "1,2\n3\n").unwrap();
    let (_, err, code) = tracelab(&[
        "run",
        "--db",
        "postgres://127.0.0.1:1/none",
        "--sql",
        "select :1, :2",
        "--binds",
        binds.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("b.csv:2: expected 2 values"), "{err}");
}

#[test]
fn ctrl_c_stops_every_session_with_a_summary() {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .args([
            "run",
            "--sql",
            "select 1",
            "--sessions",
            "2",
            "--runtime",
            "60",
            "--tx-per-commit",
            "5",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the private server has started (a Ctrl-C before that removes
    // it and prints no summary: signals_cli.rs), give the run a moment.
    let mut child = child;
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    assert!(line.contains("started a private PostgreSQL"), "{line}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}");
    assert!(stdout.contains("transactions: "), "{stdout}");
    let runtime: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("runtime: "))
        .and_then(|v| v.trim_end_matches(" s").parse().ok())
        .unwrap();
    assert!(runtime < 30.0, "stopped early: {runtime}");
}

#[test]
fn an_sqlrun_kit_runs_unchanged() {
    let kit = tempfile::tempdir().unwrap();
    let pg = kit.path().join("Pg");
    std::fs::create_dir_all(&pg).unwrap();
    std::fs::write(
        pg.join("sqlfile.conf"),
        ",\n# frequency,sqlfile,bindfile\n1,one.sql,\n1,plus.sql,plus-binds.txt\n",
    )
    .unwrap();
    std::fs::write(pg.join("one.sql"), "select 1\n").unwrap();
    std::fs::write(pg.join("plus.sql"), "select :1::int + :2::int;\n").unwrap();
    std::fs::write(pg.join("plus-binds.txt"), "1,2\n3,4\n").unwrap();
    let traces = kit.path().join("traces");
    let (out, err, code) = tracelab(&[
        "run",
        "--sqldir",
        kit.path().to_str().unwrap(),
        "--sessions",
        "2",
        "--transactions",
        "10",
        "--trace",
        traces.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["transactions"].as_u64(), v["executions"].as_u64()),
        (Some(20), Some(20))
    );
    let files = trace_files(&traces);
    let mut args = vec![
        "skew",
        "--name=EXEC",
        "--group=$sqlid",
        "--csv",
        "--nohead",
        "--nofoot",
    ];
    args.extend(files.iter().map(String::as_str));
    let (by_sql, _, _) = tracelab(&args);
    let calls: Vec<&str> = by_sql
        .lines()
        .map(|l| l.split(',').nth(3).unwrap())
        .collect();
    assert_eq!(
        calls,
        ["10", "10"],
        "sequential mode alternates the two statements: {by_sql}"
    );
}

#[test]
fn a_terminal_gets_a_live_progress_line_that_stops_with_the_run() {
    // `script` gives the run a terminal; a pipe gets no progress line.
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("script(1) not installed: the terminal case is not checked");
        return;
    }
    let cmd = format!(
        "{} run --sql 'select 1' --sessions 2 --runtime 2",
        env!("CARGO_BIN_EXE_tracelab")
    );
    let out = std::process::Command::new("timeout")
        .args(["60", "script", "-qc", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the run ended by itself: {text}"
    );
    assert!(
        text.contains("  tps ") && text.contains(" µs  errors 0"),
        "{text}"
    );
    assert!(text.contains("transactions: "), "{text}");
    let (piped, err, _) = tracelab(&["run", "--sql", "select 1", "--runtime", "1"]);
    assert!(
        !err.contains("  tps ") && !piped.contains("  tps "),
        "no progress when piped"
    );
}

#[test]
fn the_tally_file_gets_a_line_per_session_appended() {
    let d = tempfile::tempdir().unwrap();
    let tally = d.path().join("rc.log");
    std::fs::write(&tally, "earlier: 1\n").unwrap();
    let (_, err, code) = tracelab(&[
        "run",
        "--sql",
        "select 1",
        "--sessions",
        "3",
        "--transactions",
        "7",
        "--xact-tally-file",
        tally.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&tally).unwrap();
    assert_eq!(
        text,
        "earlier: 1\ntracelab_run_0: 7\ntracelab_run_1: 7\ntracelab_run_2: 7\n"
    );
}

#[test]
fn the_trace_header_names_the_engine_side_and_timer() {
    let d = tempfile::tempdir().unwrap();
    let traces = d.path().join("t");
    let (_, err, code) = tracelab(&[
        "run",
        "--sql",
        "select 1",
        "--transactions",
        "3",
        "--timer",
        "coarse",
        "--trace",
        traces.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(traces.join("tracelab_run_0.trc")).unwrap();
    let header: Vec<&str> = text.lines().take(4).collect();
    assert_eq!(header[0], "Trace file tracelab_run_0.trc");
    assert!(
        header[1].ends_with("client-side trace of postgres (timer: coarse)"),
        "{}",
        header[1]
    );
    assert!(
        header[3].starts_with("*** 20") && header[3].ends_with("+00:00"),
        "{}",
        header[3]
    );
}

#[test]
fn sqlite_needs_no_server_and_takes_pragmas() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("t");
    let binds = dir.path().join("b.csv");
    std::fs::write(&binds, "1\n2\n").unwrap();
    let (out, err, code) = tracelab(&[
        "run",
        "--engine",
        "sqlite",
        "--sql",
        "select :1 * 2",
        "--binds",
        binds.to_str().unwrap(),
        "-s",
        "cache_size=-4000",
        "--sessions",
        "2",
        "--transactions",
        "10",
        "--trace",
        traces.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    assert_eq!(v["transactions"], 20);
    assert_eq!(v["per_statement"][0]["executions"], 20);
    let header = std::fs::read_to_string(traces.join("tracelab_run_0.trc")).unwrap();
    assert!(header.contains("trace of sqlite"), "{header}");
    let (out, err, code) =
        tracelab(&["skew", &traces.join("tracelab_run_1.trc").to_string_lossy()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("EXEC") && out.contains("TOTAL"), "{out}");
    let (_, err, code) = tracelab(&[
        "run", "--engine", "sqlite", "--sql", "select 1", "-s", "nonsense",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--set nonsense: expected NAME=VALUE"), "{err}");
}

#[test]
fn urls_with_passwords_never_reach_the_output() {
    let (out, err, code) = tracelab(&[
        "run",
        "--db",
        "mysql://app:s3cret-pw@127.0.0.1:1/x",
        "--sql",
        "select 1",
        "--transactions",
        "1",
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("cannot connect") || out.contains("cannot connect"),
        "{out}{err}"
    );
    assert!(
        !out.contains("s3cret-pw") && !err.contains("s3cret-pw"),
        "{out}{err}"
    );
    let (out, err, code) = tracelab(&[
        "run",
        "--db",
        "oracle://scott:tiger@h/o",
        "--sql",
        "select 1",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("scott:***@h/o") && !err.contains("tiger"),
        "{err}"
    );
}

#[test]
fn a_private_mariadb_is_started_and_removed_for_the_run() {
    let (out, err, code) = tracelab(&[
        "run",
        "--engine",
        "mariadb",
        "--sql",
        "select @@version",
        "--sessions",
        "2",
        "--transactions",
        "5",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    assert_eq!(v["transactions"], 10);
    assert!(v["per_session"][0]["backend_pid"].as_i64().is_some());
}

/// The client-result-cache study's tables and query (tests/fixtures/crc-workload).
fn crc_database() -> (tempfile::TempDir, String) {
    let dir = tempfile::Builder::new()
        .prefix("tracelab-crc-")
        .tempdir_in("/tmp")
        .unwrap();
    let (url, err, code) = tracelab(&[
        "db",
        "start",
        "--dir",
        dir.path().join("pg").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let url = url.trim().to_string();
    let fx = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/crc-workload"
    );
    let out = std::process::Command::new("psql")
        .args([
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            &url,
            "-f",
            &format!("{fx}/schema-postgres.sql"),
        ])
        .args(["-c", &format!("\\copy holiday from {fx}/holiday.csv csv")])
        .args(["-c", &format!("\\copy chair from {fx}/chair.csv csv")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, url)
}

#[test]
fn the_result_cache_answers_the_holiday_lookup_from_memory() {
    let (dir, url) = crc_database();
    let fx = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/crc-workload"
    );
    let sql = std::fs::read_to_string(format!("{fx}/query.sql")).unwrap();
    let binds = format!("{fx}/bind-vals-8j53dscbsbqmb.txt");
    let traces = dir.path().join("traces");
    let common = [
        "run",
        "--db",
        &url,
        "--sql",
        &sql,
        "--binds",
        &binds,
        "--sessions",
        "4",
        "--transactions",
        "500",
        "--json",
    ];
    let mut args = common.to_vec();
    args.extend([
        "--result-cache",
        "--result-cache-table",
        "holiday:force",
        "--result-cache-table",
        "chair:force",
        "--result-cache-setup",
        "--result-cache-lag",
        "200",
        "--trace",
        traces.to_str().unwrap(),
    ]);
    let (out, err, code) = tracelab(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    let rc = &v["result_cache"];
    let finds = rc["find_count"].as_u64().unwrap();
    // The tally counts every execution; the trace only the server's.
    assert_eq!(v["executions"], 2000);
    assert!(finds > 1000, "{rc}");
    let mut skew = vec![
        "skew".to_string(),
        "--name=EXEC".into(),
        "--group=$sqlid".into(),
    ];
    skew.extend(trace_files(&traces));
    let skew: Vec<&str> = skew.iter().map(String::as_str).collect();
    let (prof, err, code) = tracelab(&skew);
    assert_eq!(code, 0, "{err}");
    let server_execs: u64 = 2000 - finds;
    assert!(
        prof.contains(&format!("{server_execs}")),
        "{prof}\nfinds {finds}"
    );
    // Without annotations there is nothing to cache: a clear refusal.
    let mut bad = common.to_vec();
    bad.push("--result-cache");
    let (_, err, code) = tracelab(&bad);
    assert_eq!(code, 2);
    assert!(
        err.contains("--result-cache-table NAME:force|manual"),
        "{err}"
    );
    let (_, _, _) = tracelab(&[
        "db",
        "stop",
        "--dir",
        dir.path().join("pg").to_str().unwrap(),
    ]);
}

#[test]
fn a_types_line_in_the_bind_file_casts_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let typed = dir.path().join("typed.csv");
    std::fs::write(&typed, "#types: text\n10\n").unwrap();
    let plain = dir.path().join("plain.csv");
    std::fs::write(&plain, "10\n").unwrap();
    let run = |binds: &std::path::Path| {
        tracelab(&[
            "run",
            "--engine",
            "sqlite",
            "--sql",
            "select typeof(:1)",
            "--binds",
            binds.to_str().unwrap(),
            "--transactions",
            "1",
        ])
    };
    // SQLite types the value by its cast: both run, and PostgreSQL-only
    // syntax never reaches SQLite.
    let (out, err, code) = run(&typed);
    assert_eq!(code, 0, "{out}{err}");
    let (_, err, code) = run(&plain);
    assert_eq!(code, 0, "{err}");
    // On PostgreSQL a text value compared with an integer is an error the
    // untyped value does not have.
    let pg = |binds: &std::path::Path| {
        tracelab(&[
            "run",
            "--sql",
            "select 1 where :1 > 5",
            "--binds",
            binds.to_str().unwrap(),
            "--transactions",
            "1",
            "--json",
        ])
    };
    let (out, err, code) = pg(&plain);
    assert_eq!(code, 0, "{out}{err}");
    let (out, _, code) = pg(&typed);
    assert_eq!(code, 1);
    assert!(out.contains("42883"), "{out}");
}

/// A paced call's latency is its own time plus its real lateness, not the
/// millisecond of a coarse timer: `select 1` on SQLite takes microseconds,
/// so at 200 tps the median latency is the wake-up latency alone (tokio's
/// 1 ms timer made it about 1,000 µs in every run: p50 1,001 µs at
/// `--rate 1000`, 1,204 µs at `--rate 100`). A busy machine only ever adds
/// lateness, so the test takes the best of up to three runs, as one takes
/// the minimum of repeated timings: a systematic millisecond still fails
/// all three, a moment of load on a shared CI machine does not. The driver
/// runs with a real-time priority when the test may give it one (as root,
/// as CI runs); bench/rate.sh compares with pgbench -R.
#[test]
fn a_paced_call_is_not_late_by_a_timer_tick() {
    // SAFETY: geteuid has no arguments and cannot fail.
    let realtime = unsafe { libc::geteuid() } == 0;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let p50 = paced_run_p50(realtime);
        seen.push(p50);
        if p50 < 500 {
            return;
        }
    }
    panic!(
        "p50 latency of three paced runs {seen:?} µs, none under 500 µs (real-time: {realtime})"
    );
}

/// `--report FILE.html`: the run as a page with its throughput and latency
/// over time (one point per second) and its latency histogram, whose
/// buckets add up to the calls; the summary on stdout is unchanged.
#[test]
fn a_run_report_charts_every_second_and_the_histogram() {
    let base = tempfile::Builder::new()
        .prefix("tracelab-runcli-")
        .tempdir_in("/tmp")
        .unwrap();
    let page = base.path().join("run.html");
    let (out, err, code) = tracelab(&[
        "run",
        "--engine",
        "sqlite",
        "--sql",
        "select 1",
        "--rate",
        "300",
        "--sessions",
        "2",
        "--runtime",
        "3",
        "--json",
        "--report",
        page.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    let seconds = v["timeline"].as_array().expect("a timeline");
    assert!((2..=5).contains(&seconds.len()), "{seconds:?}");
    let mut t_prev = 0.0;
    for s in seconds {
        let t = s["t_s"].as_f64().unwrap();
        assert!(t > t_prev, "seconds in order: {seconds:?}");
        t_prev = t;
        assert!(s["p50_us"].as_u64().unwrap() <= s["p99_us"].as_u64().unwrap());
    }
    let calls: u64 = v["latency_histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(calls, v["executions"].as_u64().unwrap());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<svg").count(), 3, "{html}");
    for title in [
        "Transactions per second",
        "Latency percentiles of each second",
        "Calls by latency",
    ] {
        assert!(html.contains(title), "{title}");
    }
    assert!(html.contains("select 1"));
    // Without --report the JSON keeps its shape.
    let (out, _, _) = tracelab(&[
        "run",
        "--engine",
        "sqlite",
        "--sql",
        "select 1",
        "--transactions",
        "3",
        "--json",
    ]);
    assert!(
        !out.contains("timeline") && !out.contains("latency_histogram"),
        "{out}"
    );
}

/// One 2-second run at 200 tps on SQLite; checks its summary and returns
/// the median latency in µs.
fn paced_run_p50(realtime: bool) -> u64 {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(common::bin());
    cmd.args([
        "run",
        "--engine",
        "sqlite",
        "--sql",
        "select 1",
        "--rate",
        "200",
        "--sessions",
        "2",
        "--runtime",
        "2",
        "--json",
    ]);
    if realtime {
        // SAFETY: sched_setscheduler only reads the parameter we pass; it
        // is async-signal-safe, as pre_exec requires.
        unsafe {
            cmd.pre_exec(|| {
                let p = libc::sched_param { sched_priority: 10 };
                if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let o = cmd.output().expect("run tracelab");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    let n = v["transactions"].as_u64().unwrap();
    assert!((200..=700).contains(&n), "about 400 paced calls: {n}");
    let p50 = v["latency_us"]["p50"].as_u64().unwrap();
    let lag = &v["schedule_lag_us"];
    assert!(lag["p50"].as_u64().unwrap() <= p50, "{out}");
    assert!(lag["max"].as_u64().unwrap() >= lag["p50"].as_u64().unwrap());
    p50
}

/// A statement that fails is traced as Oracle traces it: its EXEC (with
/// its time) and then `ERROR #c:err=CODE tim=T`, so that a profile counts
/// the errors and their time.
#[test]
fn a_failed_call_is_traced_with_an_error_line() {
    let base = tempfile::Builder::new()
        .prefix("tracelab-runcli-")
        .tempdir_in("/tmp")
        .unwrap();
    let binds = base.path().join("d.csv");
    std::fs::write(&binds, "1\n0\n2\n").unwrap();
    let traces = base.path().join("traces");
    let (out, err, code) = tracelab(&[
        "run",
        "--engine",
        "postgres",
        "--sql",
        "select 10 / :1::int",
        "--binds",
        binds.to_str().unwrap(),
        "--transactions",
        "6",
        "--trace",
        traces.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 1, "errors make the exit 1: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    assert_eq!(v["errors"], 2, "{out}");
    assert_eq!(v["executions"], 4, "{out}");
    let text = std::fs::read_to_string(traces.join("tracelab_run_0.trc")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let errors: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("ERROR #"))
        .collect();
    assert_eq!(errors.len(), 2, "{text}");
    for &i in &errors {
        assert!(
            lines[i].starts_with("ERROR #1:err=22012 tim="),
            "{}",
            lines[i]
        );
        assert!(lines[i - 1].starts_with("EXEC #1:"), "{}", lines[i - 1]);
        // The ERROR line is dated at the end of the call it belongs to.
        let tim = |l: &str| l.rsplit("tim=").next().unwrap().trim().to_string();
        assert_eq!(tim(lines[i]), tim(lines[i - 1]), "{}", lines[i]);
    }
    // Every execution's time is in the profile, the failed ones too.
    let (prof, err, code) = tracelab(&[
        "skew",
        "--name=^EXEC$",
        "--csv",
        "--nohead",
        traces.join("tracelab_run_0.trc").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(prof.starts_with("EXEC,") && prof.contains(",6,"), "{prof}");
}

/// A trace directory holding an earlier run's traces that this run would
/// not replace (it had more sessions) is refused before anything runs, so
/// that `skew DIR/*.trc` never mixes two runs; --trace-append keeps them
/// and numbers the new ones after them.
#[test]
fn a_reused_trace_directory_is_refused_unless_appending() {
    let base = tempfile::Builder::new()
        .prefix("tracelab-runcli-")
        .tempdir_in("/tmp")
        .unwrap();
    let traces = base.path().join("traces");
    let dir = traces.to_str().unwrap();
    let run = |sessions: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--engine",
            "sqlite",
            "--sql",
            "select 1",
            "--sessions",
            sessions,
            "--transactions",
            "3",
            "--trace",
            dir,
        ];
        args.extend_from_slice(extra);
        tracelab(&args)
    };
    let (_, err, code) = run("4", &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(trace_files(&traces).len(), 4);
    // The same run again replaces its own files.
    let (_, err, code) = run("4", &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(trace_files(&traces).len(), 4);
    // Fewer sessions would leave two of the earlier files beside them.
    let (out, err, code) = run("2", &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("tracelab_run_2.trc, tracelab_run_3.trc") && err.contains("--trace-append"),
        "{err}"
    );
    assert!(out.is_empty(), "nothing ran: {out}");
    let (_, err, code) = run("2", &["--trace-append"]);
    assert_eq!(code, 0, "{err}");
    let mut files: Vec<String> = trace_files(&traces)
        .iter()
        .map(|f| f.rsplit('/').next().unwrap().to_string())
        .collect();
    files.sort();
    assert_eq!(
        files,
        (0..6)
            .map(|n| format!("tracelab_run_{n}.trc"))
            .collect::<Vec<_>>()
    );
}

/// When no session can connect (or prepare), the run says so in one line
/// naming the target without its password and the cause once, counts the
/// failures as errors and exits 1; a URL that cannot be read is a usage
/// error (exit 2) before anything starts.
#[test]
fn connection_and_prepare_failures_read_as_one_line() {
    let one_line = |err: &str| {
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{err}");
        lines[0].to_string()
    };
    let (out, err, code) = tracelab(&[
        "run",
        "--db",
        "postgres://app:pw-123@127.0.0.1:1/x",
        "--sql",
        "select 1",
        "--sessions",
        "3",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "no zeroed summary: {out}");
    let line = one_line(&err);
    assert!(
        line.contains("all 3 sessions")
            && line.contains("cannot connect to postgres://app:***@127.0.0.1:1/x")
            && line.contains("Connection refused"),
        "{line}"
    );
    assert!(!err.contains("pw-123"), "{err}");
    let (out, err, code) = tracelab(&[
        "run",
        "--db",
        "postgres://app:pw-123@127.0.0.1:1/x",
        "--sql",
        "select 1",
        "--sessions",
        "3",
        "--json",
    ]);
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    assert_eq!(v["errors"], 3, "{out}");
    assert_eq!(v["errors_by_code"]["08001"][0], 3, "{out}");
    // mysql_async's error, said once.
    let (_, err, code) = tracelab(&[
        "run",
        "--db",
        "mysql://app:pw-123@127.0.0.1:1/x",
        "--sql",
        "select 1",
        "--sessions",
        "2",
    ]);
    assert_eq!(code, 1, "{err}");
    let line = one_line(&err);
    assert!(
        line.contains("cannot connect to mysql://app:***@127.0.0.1:1/x: Connection refused"),
        "{line}"
    );
    assert_eq!(line.matches("Input/output error").count(), 0, "{line}");
    // A URL the client cannot read: exit 2, before anything runs.
    let (out, err, code) = tracelab(&[
        "run",
        "--db",
        "postgres://app:pw-123@127.0.0.1:notaport/x",
        "--sql",
        "select 1",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    let line = one_line(&err);
    assert!(
        line.contains("postgres://app:***@127.0.0.1:notaport/x") && line.contains("`port`"),
        "{line}"
    );
    assert!(!line.contains("invalid connection string: invalid connection string"));
    // A statement that does not prepare: one line, the errors counted.
    let (out, err, code) = tracelab(&[
        "run",
        "--engine",
        "sqlite",
        "--sql",
        "selec 1",
        "--sessions",
        "2",
        "--json",
    ]);
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    assert_eq!(v["errors"], 2, "{out}");
    let (_, err, _) = tracelab(&[
        "run",
        "--engine",
        "sqlite",
        "--sql",
        "selec 1",
        "--sessions",
        "2",
    ]);
    let line = one_line(&err);
    assert!(
        line.contains("all 2 sessions ended early: cannot prepare `selec 1`"),
        "{line}"
    );
}

/// The README's SQLite example, as written there: each id inserted once,
/// no error (it ran the default 10 s, cycled the binds and failed on the
/// primary key hundreds of thousands of times). The same run without
/// --transactions says why its inserts fail.
#[test]
fn the_docs_sqlite_example_is_sound() {
    let dir = tempfile::tempdir().unwrap();
    let ids = dir.path().join("ids.csv");
    std::fs::write(
        &ids,
        (1..=10_000).map(|i| format!("{i}\n")).collect::<String>(),
    )
    .unwrap();
    let db = format!("sqlite:{}", dir.path().join("app.db").display());
    let readme = include_str!("../../../docs/run.md");
    assert!(
        readme.contains(
            "--sql 'insert into t values (:1)' --binds /tmp/run-ids.csv --tx-per-commit 100 --transactions 100"
        ),
        "docs/run.md's example is the one tested here"
    );
    let (_, err, code) = tracelab(&[
        "run",
        "--db",
        &db,
        "--sql",
        "create table if not exists t (id int primary key)",
        "--transactions",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    let insert = [
        "run",
        "--db",
        &db,
        "-s",
        "journal_mode=wal",
        "-s",
        "synchronous=full",
        "--sql",
        "insert into t values (:1)",
        "--binds",
        ids.to_str().unwrap(),
        "--tx-per-commit",
        "100",
    ];
    let mut args = insert.to_vec();
    args.extend(["--transactions", "100", "--json"]);
    let (out, err, code) = tracelab(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["executions"].as_u64(), v["errors"].as_u64()),
        (Some(10_000), Some(0)),
        "{out}"
    );
    // For a second with a file of 50 ids: the rows run out and come
    // round again.
    let few = dir.path().join("few.csv");
    std::fs::write(
        &few,
        (20_001..=20_050)
            .map(|i| format!("{i}\n"))
            .collect::<String>(),
    )
    .unwrap();
    let mut args = insert.to_vec();
    args[10] = few.to_str().unwrap();
    args.extend(["--runtime", "1"]);
    let (_, err, code) = tracelab(&args);
    assert_eq!(code, 1);
    assert!(
        err.contains("duplicate-key errors") && err.contains("--transactions sets how many"),
        "{err}"
    );
}

/// A run that starts a private server says so on stderr, in one line with
/// where it is and its URL (it said nothing).
#[test]
fn a_run_says_where_it_started_its_private_server() {
    let (out, err, code) = tracelab(&["run", "--sql", "select 1", "--transactions", "2", "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<serde_json::Value>(&out).expect("stdout is the JSON alone");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("tracelab: started a private PostgreSQL in ")
            && lines[0].contains("tracelab-db-")
            && lines[0].contains("(postgres://postgres@127.0.0.1:")
            && lines[0].ends_with("removed after the run"),
        "{err}"
    );
    let dir = lines[0]
        .trim_start_matches("tracelab: started a private PostgreSQL in ")
        .split(" (")
        .next()
        .unwrap();
    assert!(!std::path::Path::new(dir).exists(), "removed: {dir}");
}

/// Output that could not be written completely makes the exit non-zero
/// (3) and names the file, while the summary still goes out: a trace on a
/// full file system (here /dev/full, which refuses every write with
/// ENOSPC) exited 0 with the trace cut short, and a failed tally write
/// exited 0.
#[test]
fn a_trace_or_tally_that_cannot_be_written_is_exit_3_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    std::os::unix::fs::symlink("/dev/full", traces.join("tracelab_run_0.trc")).unwrap();
    let (out, err, code) = tracelab(&[
        "run",
        "--engine",
        "sqlite",
        "--sql",
        "select 1",
        "--transactions",
        "20000",
        "--trace",
        traces.to_str().unwrap(),
    ]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("transactions: 20000"),
        "the summary still: {out}"
    );
    assert!(
        err.contains(&format!(
            "cannot write the trace {}: No space left on device",
            traces.join("tracelab_run_0.trc").display()
        )),
        "{err}"
    );
    let (out, err, code) = tracelab(&[
        "run",
        "--engine",
        "sqlite",
        "--sql",
        "select 1",
        "--transactions",
        "5",
        "--xact-tally-file",
        "/dev/full",
    ]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("transactions: 5"), "{out}");
    assert!(
        err.contains("cannot write /dev/full: No space left on device"),
        "{err}"
    );
}

#[test]
fn a_transactions_latency_runs_from_begin_to_the_end_of_commit() {
    // Five statements of at least 2 ms per transaction: a transaction's
    // latency holds its statements' (and its BEGIN and COMMIT), and every
    // transaction counted has one, and one COMMIT.
    let dir = tempfile::Builder::new()
        .prefix("tracelab-runtx-")
        .tempdir_in("/tmp")
        .unwrap();
    let report = dir.path().join("run.html");
    let (out, err, code) = tracelab(&[
        "run",
        "--sql",
        "select pg_sleep(0.002)",
        "--sessions",
        "2",
        "--transactions",
        "6",
        "--tx-per-commit",
        "5",
        "--json",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    assert_eq!(v["transactions"], 12, "{out}");
    assert_eq!(v["executions"], 60, "{out}");
    let (tx, commit, st) = (
        &v["transaction_latency_us"],
        &v["commit_latency_us"],
        &v["latency_us"],
    );
    assert_eq!(tx["count"], 12, "{out}");
    assert_eq!(commit["count"], 12, "{out}");
    let n = |x: &serde_json::Value, k: &str| x[k].as_f64().unwrap_or_else(|| panic!("{k}: {x}"));
    assert!(n(st, "p50") >= 2000.0, "{st}");
    // Five statements back to back, each at least its p50 half the time:
    // the median transaction holds about five statement medians.
    assert!(
        n(tx, "p50") >= 4.5 * n(st, "p50") && n(tx, "p50") >= 10_000.0,
        "transaction {tx} against statement {st}"
    );
    assert!(
        n(tx, "mean") >= 10_000.0 && n(tx, "max") >= n(tx, "p99"),
        "{tx}"
    );
    // The COMMIT of a read-only transaction: a round trip, far less
    // than the transaction around it.
    assert!(
        n(commit, "p50") >= 1.0 && n(commit, "p50") < n(tx, "p50") / 5.0,
        "{commit}"
    );
    let page = std::fs::read_to_string(&report).unwrap();
    assert!(
        page.contains("transactions, BEGIN to end of COMMIT (12)")
            && page.contains("COMMIT calls (12)"),
        "the report's latency table"
    );

    // The text summary says them; in autocommit a transaction is one
    // statement, and there is no COMMIT call.
    let (text, err, code) = tracelab(&[
        "run",
        "--sql",
        "select 1",
        "--transactions",
        "5",
        "--tx-per-commit",
        "4",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("transaction latency (µs): p50 ")
            && text.contains("(5 transactions)\n")
            && text.contains("commit latency (µs): p50 ")
            && text.contains("(5 commits)\n"),
        "{text}"
    );
    let (out, err, code) =
        tracelab(&["run", "--sql", "select 1", "--transactions", "20", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["transaction_latency_us"]["count"], 20, "{out}");
    assert_eq!(
        v["transaction_latency_us"]["p50"], v["latency_us"]["p50"],
        "{out}"
    );
    assert_eq!(v["commit_latency_us"]["count"], 0, "{out}");
}

//! `run` against a real private PostgreSQL: counts, latency, traces that
//! profile, errors by SQLSTATE, and a server that dies mid-run.

use std::path::Path;
use std::time::Duration;

use tracelab_db::stop;
use tracelab_run::{run, ConnectMode, RunOptions, Stop, Workload};
use tracelab_trace::CallKind;

mod common;
use common::{count, traced, Server};

fn server() -> Server {
    common::postgres(
        "create table chair (chair int primary key, name text);
         insert into chair select g, 'chair ' || g from generate_series(1, 100) g;",
    )
}

fn opts(url: &str, sessions: usize, stop: Stop, trace: Option<&Path>) -> RunOptions {
    RunOptions {
        url: url.to_string(),
        sessions,
        stop,
        trace_dir: trace.map(Path::to_path_buf),
        ..RunOptions::default()
    }
}

fn lookup(rows: usize) -> Workload {
    let binds = (1..=rows).map(|i| vec![Some(i.to_string())]).collect();
    Workload::postgres("select name from chair where chair = :1", binds)
}

#[test]
fn counts_latency_and_traces_that_add_up() {
    let srv = server();
    let traces = tempfile::tempdir().unwrap();
    let sum = run(
        &opts(
            &srv.state.url,
            3,
            Stop::Transactions(50),
            Some(traces.path()),
        ),
        &lookup(100),
    )
    .unwrap();
    assert_eq!(sum.transactions, 150);
    assert_eq!(sum.errors, 0);
    assert!(sum
        .per_session
        .iter()
        .all(|s| s.transactions == 50 && s.failure.is_none()));
    let mut pids: Vec<i32> = sum
        .per_session
        .iter()
        .filter_map(|s| s.backend_pid)
        .collect();
    pids.sort();
    pids.dedup();
    assert_eq!(pids.len(), 3, "one server process per session");
    let l = sum.latency_us;
    assert!(
        l.p50 > 0 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.max,
        "{l:?}"
    );
    assert!(sum.json().contains("\"tps\""));

    for s in &sum.per_session {
        let calls = traced(traces.path(), s.session);
        let execs = count(&calls, CallKind::Exec);
        let rows: i64 = calls
            .iter()
            .filter(|c| c.kind == CallKind::Fetch)
            .map(|c| c.rows)
            .sum();
        let time: i64 = calls.iter().filter(|c| !c.inner).map(|c| c.dur).sum();
        assert_eq!(execs, 50);
        assert_eq!(rows, 50, "one row per lookup");
        // Calls and the waits between them account for the session's
        // elapsed time (within 1 %).
        let diff = (time - s.elapsed_us).abs() as f64;
        assert!(
            diff <= 0.01 * s.elapsed_us as f64,
            "trace {time} µs vs measured {} µs",
            s.elapsed_us
        );
    }
}

#[test]
fn runtime_bounds_the_run_and_errors_are_counted_by_sqlstate() {
    let srv = server();
    let sum = run(
        &opts(
            &srv.state.url,
            2,
            Stop::Runtime(Duration::from_millis(500)),
            None,
        ),
        &lookup(10),
    )
    .unwrap();
    assert!(sum.transactions > 10, "{}", sum.transactions);
    assert!(
        sum.runtime_s >= 0.5 && sum.runtime_s < 5.0,
        "{}",
        sum.runtime_s
    );

    // 'abc' is no integer: every execution fails with 22P02, counted, named.
    let bad = Workload::postgres(
        "select name from chair where chair = :1",
        vec![vec![Some("abc".into())]],
    );
    let sum = run(&opts(&srv.state.url, 1, Stop::Transactions(5), None), &bad).unwrap();
    assert_eq!((sum.transactions, sum.errors), (0, 5));
    let (n, msg) = &sum.errors_by_code["22P02"];
    assert_eq!(*n, 5);
    assert!(
        msg.contains("invalid input syntax for type integer") && msg.contains("bind row 1"),
        "{msg}"
    );
    assert!(!sum.failed());
}

#[test]
fn a_server_that_dies_mid_run_is_reported_and_nothing_measured_is_lost() {
    let srv = server();
    let url = srv.state.url.clone();
    let dir = srv.state.dir.clone();
    let runner = std::thread::spawn(move || {
        run(
            &opts(&url, 2, Stop::Runtime(Duration::from_secs(20)), None),
            &lookup(10),
        )
    });
    std::thread::sleep(Duration::from_millis(700));
    stop(&dir).unwrap();
    let sum = runner.join().unwrap().unwrap();
    assert!(sum.failed(), "{}", sum.text());
    assert!(sum.transactions > 0, "what ran before is still counted");
    assert!(
        sum.runtime_s < 15.0,
        "sessions stop when the server is gone"
    );
}

#[test]
fn batches_commit_every_n_statements_and_traces_show_xctend() {
    let srv = server();
    let mut c = postgres::Client::connect(&srv.state.url, postgres::NoTls).unwrap();
    c.batch_execute("create table t (n int)").unwrap();
    let traces = tempfile::tempdir().unwrap();
    let insert = Workload::postgres(
        "insert into t values (:1)",
        (1..=7).map(|i| vec![Some(i.to_string())]).collect(),
    );
    let mut o = opts(
        &srv.state.url,
        2,
        Stop::Transactions(3),
        Some(traces.path()),
    );
    o.per_commit = 4;
    let sum = run(&o, &insert).unwrap();
    assert_eq!((sum.transactions, sum.executions, sum.errors), (6, 24, 0));
    let n: i64 = c.query_one("select count(*) from t", &[]).unwrap().get(0);
    assert_eq!(n, 24, "every batch committed");
    let calls = traced(traces.path(), 0);
    let xctend = count(&calls, CallKind::Xctend);
    let time: i64 = calls.iter().filter(|c| !c.inner).map(|c| c.dur).sum();
    assert_eq!(xctend, 3);
    let s0 = &sum.per_session[0];
    assert!(
        (time - s0.elapsed_us).abs() as f64 <= 0.01 * s0.elapsed_us as f64,
        "{time} vs {}",
        s0.elapsed_us
    );

    // Rolled back batches leave nothing behind.
    o.rollback = true;
    o.trace_dir = None;
    let sum = run(&o, &insert).unwrap();
    assert_eq!(sum.transactions, 6);
    let n: i64 = c.query_one("select count(*) from t", &[]).unwrap().get(0);
    assert_eq!(n, 24);
}

#[test]
fn an_interrupt_stops_every_session_with_a_summary() {
    let srv = server();
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut o = opts(
        &srv.state.url,
        2,
        Stop::Runtime(Duration::from_secs(30)),
        None,
    );
    o.interrupt = Some(flag.clone());
    let runner = std::thread::spawn(move || run(&o, &lookup(10)));
    std::thread::sleep(Duration::from_millis(500));
    flag.store(true, std::sync::atomic::Ordering::Relaxed);
    let sum = runner.join().unwrap().unwrap();
    assert!(sum.runtime_s < 10.0);
    assert!(sum.transactions > 0);
    assert!(!sum.failed());
}

#[test]
fn trickle_spaces_the_logons_and_tsunami_starts_everyone_together() {
    let srv = server();
    let mut o = opts(&srv.state.url, 3, Stop::Transactions(2), None);
    o.connect = ConnectMode::Trickle(Duration::from_millis(300));
    let sum = run(&o, &lookup(5)).unwrap();
    assert_eq!(sum.transactions, 6);
    assert!(
        sum.runtime_s >= 0.6,
        "the third session connected 0.6 s after the first: {}",
        sum.runtime_s
    );

    o.connect = ConnectMode::Tsunami;
    o.stop = Stop::Runtime(Duration::from_millis(300));
    let sum = run(&o, &lookup(5)).unwrap();
    assert!(sum
        .per_session
        .iter()
        .all(|s| s.transactions > 0 && s.failure.is_none()));
    // Sessions that cannot even connect do not hold the run up.
    o.url = format!(
        "{}?connect_timeout=2",
        srv.state.url.replace("/postgres", "/no_such_db")
    );
    let sum = run(&o, &lookup(5)).unwrap();
    assert!(sum.failed() && sum.runtime_s < 10.0);
}

#[test]
fn a_rate_paces_arrivals() {
    let srv = server();
    let mut o = opts(
        &srv.state.url,
        2,
        Stop::Runtime(Duration::from_millis(1500)),
        None,
    );
    o.rate = Some(200.0);
    let sum = run(&o, &lookup(5)).unwrap();
    // 200 tps for 1.5 s: about 300 arrivals (Poisson), far below flat out.
    assert!(
        (180..=420).contains(&sum.transactions),
        "{}",
        sum.transactions
    );
}

#[test]
fn the_simple_protocol_inlines_the_values() {
    let srv = server();
    let traces = tempfile::tempdir().unwrap();
    let mut o = opts(
        &srv.state.url,
        2,
        Stop::Transactions(20),
        Some(traces.path()),
    );
    o.simple = true;
    let sum = run(&o, &lookup(10)).unwrap();
    assert_eq!((sum.transactions, sum.errors), (40, 0));
    let rows: i64 = traced(traces.path(), 1)
        .iter()
        .filter(|c| c.kind == CallKind::Fetch)
        .map(|c| c.rows)
        .sum();
    assert_eq!(
        rows, 20,
        "one row per lookup, counted from the simple protocol's messages"
    );
}

#[test]
fn paused_sessions_stay_connected_until_released() {
    let srv = server();
    let d = tempfile::tempdir().unwrap();
    let release = d.path().join("release");
    let mut o = opts(&srv.state.url, 3, Stop::Transactions(5), None);
    o.pause_at_exit = Some(Some(release.clone()));
    let runner = std::thread::spawn(move || run(&o, &lookup(5)));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!runner.is_finished(), "sessions wait to be released");
    let mut c = postgres::Client::connect(&srv.state.url, postgres::NoTls).unwrap();
    let n: i64 = c
        .query_one("select count(*) from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 3, "the three sessions are still connected");
    std::fs::write(&release, "").unwrap();
    let sum = runner.join().unwrap().unwrap();
    assert_eq!(sum.transactions, 15);

    // Sessions that never connect count as paused: the others are not
    // held forever.
    let mut o = opts(
        &srv.state.url.replace("/postgres", "/no_such_db"),
        2,
        Stop::Transactions(5),
        None,
    );
    o.pause_at_exit = Some(Some(d.path().join("never")));
    let sum = run(&o, &lookup(5)).unwrap();
    assert!(sum.failed());
}

#[test]
fn shuffled_binds_give_each_session_its_own_order() {
    let srv = server();
    let traces = tempfile::tempdir().unwrap();
    let mut o = opts(
        &srv.state.url,
        2,
        Stop::Transactions(20),
        Some(traces.path()),
    );
    o.shuffle_binds = true;
    run(&o, &lookup(20)).unwrap();
    let order = |i: usize| -> Vec<String> {
        traced(traces.path(), i)
            .into_iter()
            .filter(|c| c.kind == CallKind::Exec)
            .map(|c| c.bind.unwrap_or_default())
            .collect()
    };
    let (a, b) = (order(0), order(1));
    let mut sorted = a.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 20, "every row once in 20 executions");
    assert_ne!(a, b, "two sessions, two orders");
    let in_order: Vec<String> = (1..=20).map(|i| format!("\"{i}\"")).collect();
    assert_ne!(a, in_order);
}

#[test]
fn fetch_size_fetches_through_a_cursor_one_round_trip_per_batch() {
    let srv = server();
    let traces = tempfile::tempdir().unwrap();
    // 250 rows at 100 per fetch: FETCHes of 100, 100, 50.
    let w = Workload::postgres(
        "select name from chair c, generate_series(1, 3) g where chair <= :1 and g < 3 or chair <= :1 / 2 and g = 3",
        vec![vec![Some("100".into())]],
    );
    for per_commit in [0, 2] {
        let sum = run(
            &RunOptions {
                fetch_size: 100,
                per_commit,
                ..opts(
                    &srv.state.url,
                    1,
                    Stop::Transactions(2),
                    Some(traces.path()),
                )
            },
            &w,
        )
        .unwrap();
        assert_eq!(sum.errors, 0, "{:?}", sum.errors_by_code);
        let calls = &common::traces_add_up(traces.path(), &sum)[0];
        let fetches: Vec<i64> = calls
            .iter()
            .filter(|c| c.kind == CallKind::Fetch)
            .map(|c| c.rows)
            .collect();
        let executions = if per_commit == 0 { 2 } else { 4 };
        assert_eq!(
            fetches,
            [100, 100, 50].repeat(executions),
            "per_commit {per_commit}"
        );
        assert_eq!(count(calls, CallKind::Close), executions);
        // In autocommit each cursor gets a transaction of its own.
        assert_eq!(count(calls, CallKind::Xctend), 2);
    }
}

#[test]
fn session_settings_apply_to_every_session() {
    let srv = server();
    let sleep = Workload::postgres("select pg_sleep(0.2)", vec![]);
    let sum = run(
        &RunOptions {
            settings: vec![("statement_timeout".into(), "20ms".into())],
            ..opts(&srv.state.url, 2, Stop::Transactions(1), None)
        },
        &sleep,
    )
    .unwrap();
    assert_eq!(sum.errors, 2);
    assert!(
        sum.errors_by_code.contains_key("57014"),
        "{:?}",
        sum.errors_by_code
    );
    let bad = run(
        &RunOptions {
            settings: vec![("no_such_setting".into(), "1".into())],
            ..opts(&srv.state.url, 1, Stop::Transactions(1), None)
        },
        &sleep,
    )
    .unwrap();
    let why = bad.per_session[0].failure.as_deref().unwrap();
    assert!(why.contains("no_such_setting"), "{why}");
}

/// CPU of the driver's process (user + system), µs.
fn process_cpu_us() -> i64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills a struct we own.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) }, 0);
    let us = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
    us(ru.ru_utime) + us(ru.ru_stime)
}

#[test]
fn the_calls_cpu_adds_up_to_the_drivers_cpu() {
    // `c` of every call, summed over the sessions, is the CPU the worker
    // threads spent driving them: not more than the process used, and
    // most of it in a flat-out run (the rest: connecting, loading,
    // writing the summary). Here, about 95 %.
    let srv = server();
    let traces = tempfile::tempdir().unwrap();
    let before = process_cpu_us();
    let sum = run(
        &opts(
            &srv.state.url,
            4,
            Stop::Transactions(3000),
            Some(traces.path()),
        ),
        &lookup(100),
    )
    .unwrap();
    let used = process_cpu_us() - before;
    assert_eq!(sum.transactions, 12_000);
    let calls_cpu: i64 = (0..4)
        .flat_map(|i| traced(traces.path(), i))
        .filter(|c| c.kind != CallKind::Wait)
        .map(|c| c.af)
        .sum();
    assert!(
        calls_cpu <= used + used / 20 && calls_cpu >= used * 7 / 10,
        "Σc {calls_cpu} µs, process CPU {used} µs"
    );
}

//! `run` against a real private MariaDB: the binary and text protocols,
//! batches that commit or roll back, errors by MariaDB's numbers, session
//! variables, procedures, and a server that dies mid-run.

use std::time::Duration;

use tracelab_db::stop;
use tracelab_run::{run, RunOptions, Stop, Workload};
use tracelab_trace::CallKind;

mod common;
use common::{count, fetched, traces_add_up, Server};

/// Options of a run on this test's server.
fn opts(srv: &Server, sessions: usize, stop: Stop) -> RunOptions {
    RunOptions {
        url: srv.state.url.clone(),
        sessions,
        stop,
        ..RunOptions::default()
    }
}

fn server() -> Server {
    common::mariadb(
        "create table chair (chair int primary key, name varchar(40));
         insert into chair select seq, concat('chair ', seq) from seq_1_to_100;",
    )
}

fn lookup() -> Workload {
    let binds = (1..=100).map(|i| vec![Some(i.to_string())]).collect();
    Workload::postgres("select name from chair where chair = :1", binds)
}

#[test]
fn mariadb_lookups_batches_errors_and_settings() {
    let srv = server();

    // Lookups over the binary protocol: counted, traced, one server
    // connection id per session.
    let traces = tempfile::tempdir().unwrap();
    let sum = run(
        &RunOptions {
            trace_dir: Some(traces.path().to_path_buf()),
            ..opts(&srv, 3, Stop::Transactions(40))
        },
        &lookup(),
    )
    .unwrap();
    assert_eq!(
        (sum.transactions, sum.errors),
        (120, 0),
        "{:?}",
        sum.errors_by_code
    );
    let mut ids: Vec<i32> = sum
        .per_session
        .iter()
        .filter_map(|s| s.backend_pid)
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    for calls in traces_add_up(traces.path(), &sum) {
        assert_eq!(count(&calls, CallKind::Exec), 40);
        assert_eq!(fetched(&calls), 40, "one row per lookup");
    }
    let header = std::fs::read_to_string(traces.path().join("tracelab_run_0.trc")).unwrap();
    assert!(header.contains("trace of mariadb"));

    // Batches: 5 per commit commit, and rolled back leave nothing.
    let ins = |n: u32| {
        Workload::postgres(
            "insert into chair values (:1, :2)",
            (0..n)
                .map(|i| vec![Some((1000 + i).to_string()), Some(format!("b{i}"))])
                .collect(),
        )
    };
    let sum = run(
        &RunOptions {
            per_commit: 5,
            rollback: true,
            ..opts(&srv, 1, Stop::Transactions(4))
        },
        &ins(20),
    )
    .unwrap();
    assert_eq!((sum.transactions, sum.executions, sum.errors), (4, 20, 0));
    assert_eq!(
        srv.maria_sql("select count(*) from chair where chair >= 1000"),
        "0"
    );
    let sum = run(
        &RunOptions {
            per_commit: 5,
            ..opts(&srv, 1, Stop::Transactions(4))
        },
        &ins(20),
    )
    .unwrap();
    assert_eq!((sum.transactions, sum.errors), (4, 0));
    assert_eq!(
        srv.maria_sql("select count(*) from chair where chair >= 1000"),
        "20"
    );

    // The same rows again: duplicate keys, MariaDB error 1062, by number.
    let sum = run(&opts(&srv, 1, Stop::Transactions(3)), &ins(3)).unwrap();
    assert_eq!(sum.errors, 3);
    let (code, (_, msg)) = sum.errors_by_code.iter().next().unwrap();
    assert_eq!(code, "1062");
    assert!(
        msg.contains("Duplicate entry") && msg.contains("bind row 1"),
        "{msg}"
    );
    let sum = run(
        &RunOptions {
            ignore_errors: vec!["1062".into()],
            ..opts(&srv, 1, Stop::Transactions(3))
        },
        &ins(3),
    )
    .unwrap();
    assert_eq!((sum.errors, sum.ignored_errors), (0, 3));

    // The text protocol inlines values as literals: quotes and backslashes
    // arrive intact, in a value used twice.
    let odd = r"O'Brien \ x";
    let sum = run(
        &RunOptions {
            simple: true,
            ..opts(&srv, 1, Stop::Transactions(1))
        },
        &Workload::postgres(
            "insert into chair values (2000, concat(:n, '|', :n))",
            vec![vec![Some(odd.into())]],
        ),
    )
    .unwrap();
    assert_eq!(sum.errors, 0, "{:?}", sum.errors_by_code);
    assert_eq!(
        srv.maria_sql("select name from chair where chair = 2000"),
        format!("{odd}|{odd}").replace('\\', "\\\\")
    );

    // Session variables reach every session.
    let sum = run(
        &RunOptions {
            settings: vec![("max_statement_time".into(), "0.02".into())],
            ..opts(&srv, 2, Stop::Transactions(1))
        },
        &Workload::postgres("select sleep(1) from chair limit 1", vec![]),
    )
    .unwrap();
    assert_eq!(sum.errors, 2, "{:?}", sum.errors_by_code);
    assert!(
        sum.errors_by_code.contains_key("1969"),
        "{:?}",
        sum.errors_by_code
    );

    // A procedure returning rows, called with a bind.
    srv.maria_sql("create procedure two(n int) select chair from chair where chair <= n");
    let traces = tempfile::tempdir().unwrap();
    let sum = run(
        &RunOptions {
            trace_dir: Some(traces.path().to_path_buf()),
            ..opts(&srv, 1, Stop::Transactions(3))
        },
        &Workload::postgres("call two(:1)", vec![vec![Some("2".into())]]),
    )
    .unwrap();
    assert_eq!(sum.errors, 0, "{:?}", sum.errors_by_code);
    assert_eq!(fetched(&traces_add_up(traces.path(), &sum)[0]), 6);

    // A bad statement is named.
    let sum = run(
        &opts(&srv, 1, Stop::Transactions(1)),
        &Workload::postgres("selec 1", vec![]),
    )
    .unwrap();
    let why = sum.per_session[0].failure.as_deref().unwrap();
    assert!(
        why.contains("cannot prepare `selec 1`") && why.contains("1064"),
        "{why}"
    );
}

#[test]
fn a_mariadb_that_dies_mid_run_ends_the_sessions_with_a_summary() {
    let srv = server();
    let dir = srv.state.dir.clone();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        stop(&dir).unwrap();
    });
    let sum = run(
        &opts(&srv, 2, Stop::Runtime(Duration::from_secs(20))),
        &lookup(),
    )
    .unwrap();
    killer.join().unwrap();
    assert!(sum.transactions > 0, "work before the stop was kept");
    assert!(sum.failed(), "sessions report the lost server");
    assert!(
        sum.runtime_s < 15.0,
        "sessions stopped, not hung: {}",
        sum.runtime_s
    );
}

//! `run` against SQLite in process: the same measurement and traces as a
//! server engine, PRAGMA settings, and errors by SQLite's result codes.

use tracelab_run::{run, RunOptions, Stop, Workload};
use tracelab_trace::CallKind;

mod common;
use common::{count, fetched, traces_add_up};

fn setup(path: &std::path::Path) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(
        "create table chair (chair integer primary key, name text);
         insert into chair select value, 'chair ' || value from generate_series(1, 100);",
    )
    .unwrap_or_else(|_| {
        // generate_series is an optional extension: a recursive CTE works everywhere.
        c.execute_batch(
            "create table if not exists chair (chair integer primary key, name text);
             with recursive g(v) as (select 1 union all select v + 1 from g where v < 100)
             insert into chair select v, 'chair ' || v from g;",
        )
        .unwrap()
    });
}

#[test]
fn sessions_insert_in_batches_with_pragmas_and_traces_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    setup(&db);
    let traces = dir.path().join("traces");
    let binds = (1..=1000).map(|i| vec![Some(i.to_string())]).collect();
    let w = Workload::postgres(
        "insert into chair (chair, name) values (:1 + 1000, 'new')",
        binds,
    );
    // Four sessions would collide on keys: one writer, WAL, 10 per commit.
    let sum = run(
        &RunOptions {
            url: format!("sqlite:{}", db.display()),
            sessions: 1,
            stop: Stop::Transactions(20),
            per_commit: 10,
            trace_dir: Some(traces.clone()),
            settings: vec![
                ("journal_mode".into(), "wal".into()),
                ("synchronous".into(), "full".into()),
            ],
            ..RunOptions::default()
        },
        &w,
    )
    .unwrap();
    assert_eq!(sum.errors, 0, "{:?}", sum.errors_by_code);
    assert_eq!(sum.transactions, 20);
    assert_eq!(sum.executions, 200);
    let c = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = c
        .query_row("select count(*) from chair where name = 'new'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(n, 200, "every insert committed");
    let mode: String = c
        .query_row("pragma journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal", "the PRAGMA reached the database");
    let calls = traces_add_up(&traces, &sum);
    assert_eq!(
        count(&calls[0], CallKind::Exec),
        200 + 2 * 20,
        "inserts, BEGINs, COMMITs"
    );
    assert_eq!(count(&calls[0], CallKind::Xctend), 20);
}

#[test]
fn concurrent_readers_share_a_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    setup(&db);
    let traces = dir.path().join("traces");
    let binds = (1..=100).map(|i| vec![Some(i.to_string())]).collect();
    let sum = run(
        &RunOptions {
            url: format!("sqlite://{}", db.display()),
            sessions: 4,
            stop: Stop::Transactions(100),
            trace_dir: Some(traces.clone()),
            ..RunOptions::default()
        },
        &Workload::postgres("select name from chair where chair = $1", binds),
    )
    .unwrap();
    assert_eq!(sum.transactions, 400);
    assert!(sum.per_session.iter().all(|s| s.failure.is_none()));
    for calls in traces_add_up(&traces, &sum) {
        assert_eq!(fetched(&calls), 100, "one row per lookup");
    }
}

#[test]
fn errors_carry_sqlite_codes_and_can_be_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("e.db");
    setup(&db);
    // Keys 1..=100 exist: every insert fails with SQLITE_CONSTRAINT_PRIMARYKEY.
    let binds = (1..=10).map(|i| vec![Some(i.to_string())]).collect();
    let w = Workload::postgres("insert into chair values (:1, 'dup')", binds);
    let opts = RunOptions {
        url: format!("sqlite:{}", db.display()),
        stop: Stop::Transactions(10),
        ..RunOptions::default()
    };
    let sum = run(&opts, &w).unwrap();
    assert_eq!(sum.errors, 10);
    let (code, (n, msg)) = sum.errors_by_code.iter().next().unwrap();
    assert_eq!((code.as_str(), *n), ("1555", 10));
    assert!(
        msg.contains("UNIQUE constraint failed") && msg.contains("bind row"),
        "{msg}"
    );
    let sum = run(
        &RunOptions {
            ignore_errors: vec!["1555".into()],
            ..opts
        },
        &w,
    )
    .unwrap();
    assert_eq!((sum.errors, sum.ignored_errors), (0, 10));
}

#[test]
fn memory_database_and_bad_statements() {
    let w = Workload::postgres("select 1 union all select 2", vec![]);
    let sum = run(
        &RunOptions {
            url: "sqlite::memory:".into(),
            sessions: 2,
            stop: Stop::Transactions(5),
            ..RunOptions::default()
        },
        &w,
    )
    .unwrap();
    assert_eq!(sum.transactions, 10);
    let bad = run(
        &RunOptions {
            url: "sqlite::memory:".into(),
            ..RunOptions::default()
        },
        &Workload::postgres("selec 1", vec![]),
    )
    .unwrap();
    let why = bad.per_session[0].failure.as_deref().unwrap();
    assert!(
        why.contains("cannot prepare `selec 1`") && why.contains("syntax error"),
        "{why}"
    );
    let pragma = run(
        &RunOptions {
            url: "sqlite::memory:".into(),
            settings: vec![("no such; drop".into(), "1".into())],
            ..RunOptions::default()
        },
        &w,
    )
    .unwrap();
    assert!(pragma.failed());
}

#[test]
fn unknown_schemes_are_refused_without_showing_passwords() {
    let e = run(
        &RunOptions {
            url: "oracle://scott:tiger@db/orcl".into(),
            ..RunOptions::default()
        },
        &Workload::postgres("select 1", vec![]),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("postgres://") && !e.contains("tiger"), "{e}");
}

#[test]
fn each_statement_has_its_own_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    setup(&db);
    let st = |sql: &str| tracelab_run::Statement {
        sql: sql.into(),
        engine_sql: sql.into(),
        binds: Default::default(),
        weight: 1,
    };
    let w = Workload {
        statements: vec![
            st("select count(*) from chair"),
            st("select count(*) from chair a, chair b"),
        ],
        mode: tracelab_run::ExeMode::Sequential,
    };
    let sum = run(
        &RunOptions {
            url: format!("sqlite:{}", db.display()),
            sessions: 2,
            stop: Stop::Transactions(20),
            ..RunOptions::default()
        },
        &w,
    )
    .unwrap();
    let [small, big] = &sum.per_statement[..] else {
        panic!("two statements: {:?}", sum.per_statement)
    };
    assert_eq!((small.cursor, small.executions), (1, 20));
    assert_eq!((big.cursor, big.executions), (2, 20));
    // A 10,000-row join takes longer than a 100-row count.
    assert!(
        big.latency_us.p50 > small.latency_us.p50,
        "{small:?} {big:?}"
    );
    assert!(sum.text().contains("#2"));
}

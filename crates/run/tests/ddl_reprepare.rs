//! A column's type altered while `run` executes a prepared query on it,
//! on a real private PostgreSQL: the server refuses the old plan (0A000
//! "cached plan must not change result type"); the session prepares the
//! statement again, as JDBC does, and goes on. In autocommit the call is
//! made again at once (no error); in a transaction the error aborts it
//! (one error), and the next ones work.

use std::time::Duration;

use tracelab_run::{run, RunOptions, Stop, Workload};
use tracelab_trace::CallKind;

mod common;
use common::{count, traced};

/// Runs 2 sessions for 3 s of `select v from t where id = :1` while
/// another connection alters `v`'s type twice; returns the summary and
/// the trace directory.
fn run_through_ddl(
    url: &str,
    per_commit: u64,
    types: [&'static str; 2],
) -> (tracelab_run::Summary, tempfile::TempDir) {
    let traces = tempfile::tempdir().unwrap();
    let binds = (1..=100).map(|i| vec![Some(i.to_string())]).collect();
    let w = Workload::postgres("select v from t where id = :1", binds);
    let ddl = {
        let url = url.to_string();
        std::thread::spawn(move || {
            let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            for ty in types {
                std::thread::sleep(Duration::from_millis(800));
                c.batch_execute(&format!("alter table t alter column v type {ty}"))
                    .unwrap();
            }
        })
    };
    let sum = run(
        &RunOptions {
            url: url.to_string(),
            sessions: 2,
            stop: Stop::Runtime(Duration::from_secs(3)),
            per_commit,
            trace_dir: Some(traces.path().to_path_buf()),
            ..RunOptions::default()
        },
        &w,
    )
    .unwrap();
    ddl.join().unwrap();
    (sum, traces)
}

#[test]
fn a_plan_gone_stale_after_ddl_is_prepared_again() {
    let srv = common::postgres(
        "create table t (id int primary key, v int);
         insert into t select g, g from generate_series(1, 100) g;",
    );
    // Autocommit: prepared again and made again, no error.
    let (sum, traces) = run_through_ddl(&srv.state.url, 0, ["bigint", "text"]);
    assert!(sum.errors == 0, "{:?}", sum.errors_by_code);
    // Each session saw each change (at least the first: the second may
    // come while a session is between calls of the same plan).
    assert!(sum.reprepares >= 2, "re-prepares: {}", sum.reprepares);
    assert!(sum.reprepares <= 4, "re-prepares: {}", sum.reprepares);
    assert!(sum
        .per_session
        .iter()
        .all(|s| s.reprepares >= 1 && s.transactions > 10));
    assert!(sum.json().contains("\"reprepares\": "), "{}", sum.json());
    assert!(sum.text().contains("re-prepares: "), "{}", sum.text());
    // The trace shows the PARSE again, and still adds up.
    for s in &sum.per_session {
        let calls = traced(traces.path(), s.session);
        assert_eq!(
            count(&calls, CallKind::Parse) as u64,
            1 + s.reprepares,
            "session {}",
            s.session
        );
    }
    common::traces_add_up(traces.path(), &sum);

    // In transactions of 10: the error aborts one transaction per session
    // and change, then the statement works again.
    let (sum, _t) = run_through_ddl(&srv.state.url, 10, ["int using v::int", "bigint"]);
    assert!(sum.errors <= 4, "{:?}", sum.errors_by_code);
    assert!(
        sum.errors_by_code.keys().all(|c| c == "0A000"),
        "{:?}",
        sum.errors_by_code
    );
    assert!(
        sum.reprepares >= 2 && sum.reprepares == sum.errors,
        "{} re-prepares, {} errors",
        sum.reprepares,
        sum.errors
    );
    assert!(sum.per_session.iter().all(|s| s.transactions > 10));
}

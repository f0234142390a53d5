//! The PostgreSQL connection of `run` (its own protocol code) against a
//! real server that asks for passwords the three ways PostgreSQL can
//! (SCRAM-SHA-256, md5, cleartext), and over the server's unix socket:
//! the right password connects, a wrong one is refused with the server's
//! SQLSTATE, and no password ever shows in what the run reports.

use tracelab_run::{run, RunOptions, Stop, Summary, Workload};

mod common;

fn run_as(url: &str) -> Summary {
    let opts = RunOptions {
        url: url.to_string(),
        sessions: 2,
        stop: Stop::Transactions(20),
        ..RunOptions::default()
    };
    let binds = (1..=10).map(|i| vec![Some(i.to_string())]).collect();
    run(
        &opts,
        &Workload::postgres("select $1::int + 1 where current_user <> ''", binds),
    )
    .unwrap()
}

#[test]
fn passwords_scram_md5_cleartext_and_the_unix_socket() {
    let srv = common::postgres(
        "set password_encryption = 'scram-sha-256';
         create role scram_user login password 'Scr4m secret';
         set password_encryption = 'md5';
         create role md5_user login password 'md5 s3cret';
         create role clear_user login password 'cl3ar secret';",
    );
    // Local connections (the fixture's own) stay trusted; TCP asks each
    // user for its password its way.
    let hba = srv.state.data_dir().join("pg_hba.conf");
    std::fs::write(
        &hba,
        "local all all trust\n\
         host all scram_user 127.0.0.1/32 scram-sha-256\n\
         host all md5_user 127.0.0.1/32 md5\n\
         host all clear_user 127.0.0.1/32 password\n\
         host all all 127.0.0.1/32 trust\n",
    )
    .unwrap();
    let mut c = postgres::Client::connect(&srv.state.url, postgres::NoTls).unwrap();
    c.batch_execute("select pg_reload_conf()").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let port = srv.state.port;
    for (user, password) in [
        ("scram_user", "Scr4m secret"),
        ("md5_user", "md5 s3cret"),
        ("clear_user", "cl3ar secret"),
    ] {
        let enc = password.replace(' ', "%20");
        let ok = run_as(&format!(
            "postgres://{user}:{enc}@127.0.0.1:{port}/postgres"
        ));
        assert_eq!(ok.transactions, 40, "{user}: {:?}", ok.per_session);
        assert_eq!(ok.errors, 0, "{user}");
        assert!(
            ok.per_session.iter().all(|s| s.backend_pid.is_some()),
            "{user}"
        );
        let bad = run_as(&format!(
            "postgres://{user}:wrong{enc}@127.0.0.1:{port}/postgres"
        ));
        assert_eq!(bad.transactions, 0, "{user}");
        let shown = format!("{:?}", bad.per_session);
        for s in &bad.per_session {
            let f = s.failure.as_deref().unwrap_or_default();
            assert!(
                f.contains("cannot connect") && f.contains("28P01"),
                "{user}: {f}"
            );
        }
        assert!(!shown.contains(password), "{user}: {shown}");
        // No password at all: said so, not sent as empty.
        let none = run_as(&format!("postgres://{user}@127.0.0.1:{port}/postgres"));
        let f = none.per_session[0].failure.as_deref().unwrap_or_default();
        assert!(f.contains("password"), "{user}: {f}");
    }
    // The server's unix socket, named libpq's way (host=directory).
    let url = format!(
        "postgres://postgres@%2F{}:{port}/postgres",
        srv.state
            .socket_dir
            .display()
            .to_string()
            .trim_start_matches('/')
            .replace('/', "%2F")
    );
    let sock = run_as(&url);
    assert_eq!(sock.transactions, 40, "{:?}", sock.per_session);
    // A server that is not there: a clear reason, no hang.
    let gone = run_as("postgres://postgres@127.0.0.1:1/postgres");
    let f = gone.per_session[0].failure.as_deref().unwrap_or_default();
    assert!(f.contains("cannot reach 127.0.0.1:1"), "{f}");
}

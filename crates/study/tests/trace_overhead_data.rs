//! The trace-overhead study's data, made by its own setup SQL on a real
//! private PostgreSQL, a private MariaDB and SQLite: each of the original
//! study's six predicates returns the original's row count exactly.

use tracelab_study::builtin::sql_file;
use tracelab_study::statements;

/// The original's six predicates (t1; t1 join t2 on object_id for the
/// joins) and the rows each returned in the Oracle study.
const PREDICATES: &[(&str, i64)] = &[
    ("SELECT count(*) FROM t1 WHERE object_type = 'JOB'", 22),
    ("SELECT count(*) FROM t1 WHERE owner = 'DBSNMP'", 63),
    (
        "SELECT count(*) FROM t1 JOIN t2 ON t2.object_id = t1.object_id \
         WHERE t1.object_type = 'CLUSTER' AND t2.object_type = 'CLUSTER'",
        10,
    ),
    (
        "SELECT count(*) FROM t1 WHERE object_type = 'SYNONYM'",
        25_652,
    ),
    ("SELECT count(*) FROM t1 WHERE owner = 'SYS'", 32_095),
    (
        "SELECT count(*) FROM t1 JOIN t2 ON t2.object_id = t1.object_id \
         WHERE t1.object_type = 'JAVA CLASS' AND t2.object_type = 'JAVA CLASS'",
        20_788,
    ),
    // Every object once, t2 a copy of t1.
    ("SELECT count(DISTINCT object_id) FROM t1", 70_415),
    ("SELECT count(*) FROM t2", 70_415),
];

fn objects_sql() -> &'static str {
    sql_file("trace-overhead/objects.sql").expect("the study's data file is built in")
}

/// The study's own setup for an engine, its pieces in order.
fn setup(engine: &str) -> Vec<String> {
    let l = tracelab_study::load("trace-overhead").unwrap();
    let sql = l.study.setup.as_ref().unwrap();
    sql.for_engine(engine)
        .unwrap()
        .into_iter()
        .map(|p| l.sql_text("setup", p).unwrap())
        // The study's var of t2's indexes, as the study substitutes it.
        .map(|t| {
            let v = l.study.vars["t2_indexes"].as_str().unwrap().to_string();
            t.replace("{t2_indexes}", &v)
        })
        .collect()
}

fn tmp(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/tmp")
        .unwrap()
}

#[test]
fn postgres_gets_the_original_row_counts_and_runs_the_procedures() {
    let dir = tmp("tracelab-to-data-pg-");
    let state = tracelab_db::start_postgres(&tracelab_db::PgOptions {
        dir: Some(dir.path().join("pg")),
        settings: vec![],
    })
    .unwrap();
    let result = std::panic::catch_unwind(|| {
        let mut c = postgres::Client::connect(&state.url, postgres::NoTls).unwrap();
        // Statement by statement, as the study runs its scripts (VACUUM
        // refuses a multi-statement string).
        for sql in setup("postgres") {
            for st in statements(&sql) {
                c.batch_execute(&st).unwrap();
            }
        }
        for (q, n) in PREDICATES {
            let got: i64 = c.query_one(*q, &[]).unwrap().get(0);
            assert_eq!(got, *n, "{q}");
        }
        // The procedures open, fetch and close their cursors.
        c.batch_execute("CALL oltp(2); CALL dwh(1)").unwrap();
        // Deterministic: made again, the same table.
        let sum = |c: &mut postgres::Client| -> String {
            c.query_one(
                "SELECT md5(string_agg(concat_ws(',', owner, object_name, object_id, object_type), ';' ORDER BY object_id)) FROM t1",
                &[],
            )
            .unwrap()
            .get(0)
        };
        let first = sum(&mut c);
        for st in statements(objects_sql()) {
            c.batch_execute(&st).unwrap();
        }
        assert_eq!(sum(&mut c), first);
    });
    let _ = tracelab_db::stop(&state.dir);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

#[test]
fn sqlite_gets_the_original_row_counts() {
    let dir = tmp("tracelab-to-data-sqlite-");
    let c = rusqlite::Connection::open(dir.path().join("t.sqlite")).unwrap();
    for sql in setup("sqlite") {
        c.execute_batch(&sql).unwrap();
    }
    for (q, n) in PREDICATES {
        let got: i64 = c.query_row(q, [], |r| r.get(0)).unwrap();
        assert_eq!(got, *n, "{q}");
    }
}

#[test]
fn mariadb_gets_the_original_row_counts_and_runs_the_procedures() {
    use mysql_async::prelude::Queryable;
    let dir = tmp("tracelab-to-data-maria-");
    let state = tracelab_db::start_mariadb(&tracelab_db::MariaOptions {
        dir: Some(dir.path().join("m")),
        settings: vec![],
    })
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let result: Result<(), String> = rt.block_on(async {
        let mut c = mysql_async::Conn::new(mysql_async::Opts::from_url(&state.url).unwrap())
            .await
            .map_err(|e| e.to_string())?;
        // As the study's setup sends it: one multi-statement query, the
        // server parsing the procedures.
        let all: Vec<String> = setup("mariadb")
            .iter()
            .map(|s| s.trim().trim_end_matches(';').to_string())
            .collect();
        let mut r = c
            .query_iter(all.join(";\n"))
            .await
            .map_err(|e| e.to_string())?;
        while !r.is_empty() {
            let _: Vec<mysql_async::Row> = r.collect().await.map_err(|e| e.to_string())?;
        }
        for (q, n) in PREDICATES {
            let got: Option<i64> = c.query_first(*q).await.map_err(|e| e.to_string())?;
            if got != Some(*n) {
                return Err(format!("{q}: {got:?}, expected {n}"));
            }
        }
        c.query_drop("CALL oltp(2)")
            .await
            .map_err(|e| e.to_string())?;
        let _ = c.disconnect().await;
        Ok(())
    });
    let _ = tracelab_db::stop(&state.dir);
    result.unwrap();
}

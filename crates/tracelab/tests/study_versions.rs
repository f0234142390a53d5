//! The built-in studies' probes of PostgreSQL's statistics views on every
//! major version tracelab supports (14 to 18): views change between
//! versions (PostgreSQL 18 moved the WAL's sync counts and times from
//! `pg_stat_wal` to `pg_stat_io`), and a study whose probe names a column
//! the server lacks stops at its first run.

mod common;

use std::collections::BTreeSet;

use common::{postgres_builds, tempdir, tracelab_env};

/// On the machine's PostgreSQL and each build of another version
/// (`TRACELAB_TEST_PG_BINDIRS`, from scripts/fetch_servers.sh), every
/// probe of a built-in study that reads a `pg_stat` view and is for that
/// version (its `versions`) runs and returns one row, and each study's
/// probes yield the same columns on every version: a report's columns do
/// not depend on the server's version.
#[test]
fn the_studies_statistics_probes_run_on_every_supported_version() {
    let mut servers: Vec<(Option<u32>, Option<String>)> = vec![(None, None)];
    servers.extend(
        postgres_builds()
            .into_iter()
            .filter(|(major, _)| *major >= 14)
            .map(|(major, dir)| (Some(major), Some(dir))),
    );
    if servers.len() == 1 {
        println!(
            "only the machine's PostgreSQL: TRACELAB_TEST_PG_BINDIRS is not set (scripts/test.sh \
             sets it from scripts/fetch_servers.sh)"
        );
    }
    // Per study, the columns its probes yielded on the first server.
    let mut columns_of: Vec<(String, BTreeSet<String>)> = Vec::new();
    let mut seen = Vec::new();
    for (expected, bindir) in servers {
        let base = tempdir("study-versions");
        let dir = base.join("server");
        let env: Vec<(&str, &str)> = bindir
            .as_deref()
            .map(|d| vec![("TRACELAB_PG_BINDIR", d)])
            .unwrap_or_default();
        let (url, err, code) = tracelab_env(&["db", "start", "--dir", dir.to_str().unwrap()], &env);
        assert_eq!(code, 0, "{err}");
        let stop = || tracelab_env(&["db", "stop", "--dir", dir.to_str().unwrap()], &[]);
        let mut c = postgres::Client::connect(url.trim(), postgres::NoTls).unwrap();
        let num: String = c
            .query_one("select current_setting('server_version_num')", &[])
            .unwrap()
            .get(0);
        let major = num.parse::<u32>().unwrap() / 10_000;
        if let Some(e) = expected {
            assert_eq!(major, e);
        }
        for (name, text, _) in tracelab_study::builtin::STUDIES {
            let l = tracelab_study::Loaded::parse(name, text, None, &[]).unwrap();
            let mut columns = BTreeSet::new();
            for p in &l.study.probes {
                let Some(sql) = p.sql.for_engine("postgres") else {
                    continue;
                };
                if !sql.iter().any(|s| s.contains("pg_stat")) {
                    continue;
                }
                if p.versions.is_some_and(|v| !v.contains(major)) {
                    continue;
                }
                for s in sql {
                    let rows = c.query(s, &[]).unwrap_or_else(|e| {
                        stop();
                        let why = e
                            .as_db_error()
                            .map_or(e.to_string(), |d| d.message().into());
                        panic!(
                            "PostgreSQL {major}: {name}'s probe {}: `{s}`: {why}",
                            p.name
                        )
                    });
                    assert_eq!(rows.len(), 1, "PostgreSQL {major}: {name}: `{s}`");
                    columns.extend(rows[0].columns().iter().map(|c| c.name().to_string()));
                }
            }
            match columns_of.iter().find(|(n, _)| n == name) {
                Some((_, first)) => assert_eq!(
                    &columns,
                    first,
                    "PostgreSQL {major}: {name}'s probes yield other columns than on {:?}",
                    seen.first()
                ),
                None => columns_of.push((name.to_string(), columns)),
            }
        }
        stop();
        seen.push(major);
    }
    // The probes that read statistics views: commit-batch's and
    // redo-undo's, at least.
    for study in ["commit-batch", "redo-undo"] {
        let cols = &columns_of.iter().find(|(n, _)| n == study).unwrap().1;
        assert!(cols.contains("wal_bytes"), "{study}: {cols:?}");
    }
    let cb = &columns_of
        .iter()
        .find(|(n, _)| n == "commit-batch")
        .unwrap()
        .1;
    assert!(
        cb.contains("wal_sync") && cb.contains("wal_sync_time"),
        "{cb:?}"
    );
    println!("probes run on PostgreSQL {seen:?}");
}

/// redo-undo, one cell, on each version: its scripts run (the debt's
/// script reads the freeze's WAL by the WAL position, which every
/// version has), and the WAL of a conventional insert reads more than 0
/// on PostgreSQL 14 too, whose statistics reach the probes through a
/// collector's file (see `flush_stats`).
#[test]
fn redo_undo_runs_on_every_supported_version() {
    let builds: Vec<(u32, String)> = postgres_builds()
        .into_iter()
        .filter(|(major, _)| *major >= 14)
        .collect();
    if builds.is_empty() {
        println!(
            "skipped: TRACELAB_TEST_PG_BINDIRS is not set (scripts/test.sh sets it from \
             scripts/fetch_servers.sh)"
        );
        return;
    }
    for (major, bindir) in builds {
        let base = tempdir("study-versions-ru");
        let out = base.join("ru");
        let (_, err, code) = tracelab_env(
            &[
                "study",
                "run",
                "redo-undo",
                "--quick",
                "--reps",
                "1",
                "--level",
                "size=small",
                "--level",
                "wal_level=replica",
                "--level",
                "method=insert",
                "--out",
                out.to_str().unwrap(),
            ],
            &[("TRACELAB_PG_BINDIR", bindir.as_str())],
        );
        assert_eq!(code, 0, "PostgreSQL {major}: {err}");
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        let row: Vec<&str> = report
            .lines()
            .find(|l| l.starts_with("| insert |"))
            .unwrap_or_else(|| panic!("PostgreSQL {major}: no insert row in {report}"))
            .split('|')
            .map(str::trim)
            .collect();
        let number = |cell: &str| -> f64 {
            cell.trim_end_matches('*')
                .replace(',', "")
                .parse()
                .unwrap_or_else(|_| panic!("PostgreSQL {major}: {cell:?} in {row:?}"))
        };
        // | method | WAL bytes | %Δ | WAL records | ... | freeze WAL bytes | load ms |
        let (wal, freeze) = (number(row[2]), number(row[row.len() - 3]));
        assert!(wal > 1e6, "PostgreSQL {major}: WAL bytes {wal} in {row:?}");
        assert!(
            freeze > 0.0,
            "PostgreSQL {major}: freeze WAL {freeze} in {row:?}"
        );
    }
}

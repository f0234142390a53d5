//! The tutorial of docs/study.md, run as a reader runs it: its study
//! (docs/examples/sync-commit-tutorial.toml) in its quick form on a
//! private PostgreSQL shows what `synchronous_commit = off` buys, in the
//! COMMIT's own latency, which a statement's latency leaves out.

mod common;
use common::tracelab;

use std::collections::BTreeMap;
use std::path::Path;

/// Per cell (`sessions=N sync=X`), each run's measurements.
fn runs(store: &Path) -> BTreeMap<String, Vec<BTreeMap<String, f64>>> {
    let c = rusqlite::Connection::open(store.join("results.sqlite")).unwrap();
    let mut st = c
        .prepare(
            "SELECT p.cell, m.seq, m.name, m.value FROM measurements m JOIN plan p USING (seq) \
             ORDER BY m.seq",
        )
        .unwrap();
    let mut by_seq: BTreeMap<i64, (String, BTreeMap<String, f64>)> = BTreeMap::new();
    for row in st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, f64>(3)?,
            ))
        })
        .unwrap()
    {
        let (cell, seq, name, value) = row.unwrap();
        by_seq
            .entry(seq)
            .or_insert_with(|| (cell, BTreeMap::new()))
            .1
            .insert(name, value);
    }
    let mut out: BTreeMap<String, Vec<BTreeMap<String, f64>>> = BTreeMap::new();
    for (cell, m) in by_seq.into_values() {
        out.entry(cell).or_default().push(m);
    }
    out
}

fn mean(runs: &[BTreeMap<String, f64>], name: &str) -> f64 {
    let v: Vec<f64> = runs
        .iter()
        .map(|m| *m.get(name).unwrap_or_else(|| panic!("no {name} in {m:?}")))
        .collect();
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn the_tutorial_study_shows_the_commit_latency_falling_with_synchronous_commit_off() {
    let dir = tempfile::Builder::new()
        .prefix("tracelab-tutorial-")
        .tempdir_in("/tmp")
        .unwrap();
    let out = dir.path().join("sc");
    let study =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/sync-commit-tutorial.toml");
    let (stdout, err, code) = tracelab(&[
        "study",
        "run",
        study.to_str().unwrap(),
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}\n{err}");
    let cells = runs(&out);
    let names: Vec<&String> = cells.keys().collect();
    assert_eq!(
        names,
        [
            "sessions=1 sync=off",
            "sessions=1 sync=on",
            "sessions=4 sync=off",
            "sessions=4 sync=on"
        ],
        "{stdout}"
    );
    for sessions in [1, 4] {
        let on = &cells[&format!("sessions={sessions} sync=on")];
        let off = &cells[&format!("sessions={sessions} sync=off")];
        // With `on` every COMMIT waits for its WAL flush (an fdatasync on
        // this disk: hundreds of µs); with `off` it does not. Generous
        // margins: a third lower at the least (a sixth to a tenth here).
        let (c_on, c_off) = (mean(on, "commit_p50_us"), mean(off, "commit_p50_us"));
        assert!(
            c_off < 0.67 * c_on,
            "{sessions} sessions: COMMIT p50 {c_off} µs with off against {c_on} µs with on\n{stdout}"
        );
        // The transaction holds its COMMIT; with `on` the WAL was synced,
        // timed with track_wal_io_timing from the study's [server].
        for runs in [on, off] {
            assert!(
                mean(runs, "tx_p50_us") >= mean(runs, "commit_p50_us"),
                "{runs:?}"
            );
        }
        assert!(
            mean(on, "wal_sync") > 0.0 && mean(on, "wal_sync_time") > 0.0,
            "{on:?}"
        );
        assert!(
            mean(off, "wal_sync") < mean(on, "wal_sync"),
            "{off:?} against {on:?}"
        );
    }
    // The report's columns are filled in (no `—` for a measurement
    // missing).
    let table = stdout
        .lines()
        .skip_while(|l| !l.starts_with("sync "))
        .take(4)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        table.contains("COMMIT p50 (µs)") && !table.contains('—'),
        "{table}"
    );
}

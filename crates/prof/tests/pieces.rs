//! A big file is read in pieces on several threads and the pieces added
//! up: the profile must be the one a single reader makes, figure for
//! figure (recursive calls, waits and executions that straddle a cut
//! included).

use std::io::{Read, Write};
use std::path::Path;

use tracelab_prof::{profile, to_json, FileOutcome, ProfOptions};

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn json(path: &str, jobs: usize) -> String {
    let out = profile(
        &[path.to_string()],
        &ProfOptions {
            thinktime: 1.0,
            jobs,
            top: 0,
            ..ProfOptions::default()
        },
        None,
    )
    .unwrap();
    let profiles: Vec<_> = out
        .files
        .iter()
        .map(|f| match f {
            FileOutcome::Profiled(p) => &**p,
            FileOutcome::Skipped { why, .. } => panic!("{why}"),
        })
        .collect();
    to_json(&profiles)
}

#[test]
fn pieces_add_up_to_the_whole_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = big_file(dir.path());
    let whole = json(&path, 1);
    let pieces = json(&path, 4);
    let v: serde_json::Value = serde_json::from_str(&whole).unwrap();
    assert!(v[0]["statements"].as_array().unwrap().len() > 20);
    same(&whole, &pieces, "whole", "pieces");
}

/// Panics at the first line where two JSON reports differ.
fn same(a: &str, b: &str, what_a: &str, what_b: &str) {
    if a != b {
        let (x, y): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
        let i = x
            .iter()
            .zip(&y)
            .position(|(p, q)| p != q)
            .unwrap_or(x.len().min(y.len()));
        panic!(
            "{what_b} differs from {what_a} at JSON line {i}:\n{what_a}: {}\n{what_b}: {}\n(context: {})",
            x.get(i).unwrap_or(&""),
            y.get(i).unwrap_or(&""),
            x[i.saturating_sub(12)..i].join("\n")
        );
    }
}

/// The report with the first `top` statements, and how many times the file
/// was read, keeping the detail of `detail_limit` statements in a first
/// reading.
fn top_json(path: &str, jobs: usize, top: usize, detail_limit: usize) -> (String, usize) {
    let out = profile(
        &[path.to_string()],
        &ProfOptions {
            jobs,
            top,
            detail_limit,
            ..ProfOptions::default()
        },
        None,
    )
    .unwrap();
    let p = match out.files.into_iter().next().unwrap() {
        FileOutcome::Profiled(p) => p,
        FileOutcome::Skipped { why, .. } => panic!("{why}"),
    };
    (to_json(&[&*p]), p.readings)
}

#[test]
fn a_second_reading_for_the_statements_shown_gives_the_one_readings_report() {
    // Read in pieces, with recursive statements at four depths, waits,
    // binds, plans and errors: the first reading keeps the detail of 10
    // statements only (5 shown, by two rankings), the second that of those
    // shown; the report is the one a single reading makes keeping all.
    let dir = tempfile::tempdir().unwrap();
    let path = big_file(dir.path());
    let (once, n) = top_json(&path, 4, 5, usize::MAX);
    assert_eq!(n, 1);
    for jobs in [4, 1] {
        let (twice, n) = top_json(&path, jobs, 5, 1);
        assert_eq!(n, 2, "read twice");
        same(
            &once,
            &twice,
            "one reading",
            &format!("two readings, {jobs} jobs"),
        );
    }
    let v: serde_json::Value = serde_json::from_str(&once).unwrap();
    assert!(v[0]["folded"]["statements"].as_u64().unwrap() > 100);
    assert!(v[0]["statements"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| !s["children"].as_array().unwrap().is_empty()));
}

/// Over 16 MB (the reader's smallest split): eight of the real 19c
/// traces, with the trcsess merge (four depths, two processes) and the
/// dblink trace between them.
fn big_file(dir: &Path) -> String {
    let big = dir.join("big.trc");
    let mut out = std::fs::File::create(&big).unwrap();
    let mut crc: Vec<_> = std::fs::read_dir(fixtures().join("crc-local-force"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".trc.gz"))
        .collect();
    crc.sort();
    for (i, gz) in crc.iter().take(8).enumerate() {
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(gz).unwrap())
            .read_to_end(&mut text)
            .unwrap();
        out.write_all(&text).unwrap();
        if i == 3 {
            out.write_all(&std::fs::read(fixtures().join("trace-combine/main.trc")).unwrap())
                .unwrap();
        }
        if i == 5 {
            out.write_all(
                &std::fs::read(fixtures().join("db-ping/cdb1_ora_15440_PINGTEST.trc")).unwrap(),
            )
            .unwrap();
        }
    }
    drop(out);
    assert!(std::fs::metadata(&big).unwrap().len() > 20 << 20);
    big.to_string_lossy().into_owned()
}

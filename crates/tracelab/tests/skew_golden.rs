//! Golden tests: `tracelab skew` must print, character for character, the
//! tables mrskew printed for the same real trace files (published in
//! ../shared/traces/MANIFEST.md; copies in tests/fixtures/golden/).

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn crc_files() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(fixtures().join("crc-local-force"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".trc.gz"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    v.sort();
    assert_eq!(v.len(), 20, "the 20 crc-local-force traces");
    v
}

fn crc_30561() -> String {
    fixtures()
        .join("crc-local-force/orcl_ora_30561_RC-20230830160541-20230703160541.trc.gz")
        .to_string_lossy()
        .into_owned()
}

/// Runs `tracelab skew` and returns (stdout, stderr, exit code).
fn skew(args: &[&str], files: &[String]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .arg("skew")
        .args(args)
        .args(files)
        .output()
        .expect("run tracelab");
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap_or(-1),
    )
}

fn golden(name: &str) -> String {
    std::fs::read_to_string(fixtures().join("golden").join(name)).unwrap()
}

/// Splits a table row into its label and numeric cells (label may hold
/// single spaces; cells are separated by at least two).
fn cells(row: &str) -> Vec<String> {
    row.split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn db_ping_default_profile() {
    let f = fixtures().join("db-ping/cdb1_ora_15440_PINGTEST.trc");
    let (out, err, code) = skew(&[], &[f.to_string_lossy().into_owned()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, golden("db-ping-default.txt"));
}

#[test]
fn crc_where_dur_below_one_second() {
    let (out, err, code) = skew(&["--where=$dur < 1"], &crc_files());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, golden("crc-where-dur-lt-1.txt"));
}

#[test]
fn crc_long_snmfc_by_file_and_line() {
    let (out, err, code) = skew(
        &[
            "--where=$af >= 1 and $dur < 65",
            "--group=qq{$basename:$line}",
            "--group-label=FILE:LINE",
        ],
        &crc_files(),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, golden("crc-file-line-60s.txt"));
}

#[test]
fn crc_one_file_all_rows_sorted_by_label() {
    let (out, err, code) = skew(
        &[
            "--top=0",
            "--sort=1a",
            "--where=$af >= 1 and $dur < 65",
            "--group=qq{$basename:$line}",
            "--group-label=FILE:LINE",
        ],
        &[crc_30561()],
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    // header, dashes, 19 rows, dashes, total
    assert_eq!(lines.len(), 2 + 19 + 2, "{out}");
    let first = cells(lines[2]);
    assert_eq!(
        first[0],
        "orcl_ora_30561_RC-20230830160541-20230703160541.trc:53959"
    );
    assert_eq!(&first[1..4], ["60.001474", "5.3%", "1"]);
    let last = cells(lines[20]);
    assert_eq!(
        last[0],
        "orcl_ora_30561_RC-20230830160541-20230703160541.trc:58323"
    );
    assert_eq!(last[1], "60.001456");
    assert_eq!(
        cells(lines[22]),
        [
            "TOTAL (19)",
            "1,140.029350",
            "100.0%",
            "19",
            "60.001545",
            "60.001385",
            "60.002586"
        ]
    );
}

#[test]
fn crc_every_line_of_a_range_with_name_all() {
    let (out, err, code) = skew(
        &[
            "--sort=1a",
            "--top=0",
            "--alldep",
            "--name=:all",
            "-where=$line >= 55660 and $line <= 55660+230",
            "--group=qq{$line:$text}",
            "-gl=LINE:TEXT",
        ],
        &[crc_30561()],
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.len(),
        2 + 231 + 2,
        "one row per trace line in the range"
    );
    assert!(lines[0].starts_with("LINE:TEXT"));
    let first = cells(lines[2]);
    assert_eq!(
        first[0],
        "55660:WAIT #140661336887528: nam='SQL*Net message from client' ela= 60001584 driver id=1952673792 #bytes=1 p3=0 obj#=-1 tim=14522473254855"
    );
    assert_eq!(
        &first[1..],
        [
            "60.001584",
            "99.9%",
            "1",
            "60.001584",
            "60.001584",
            "60.001584"
        ]
    );
    // A line that is not a call: its label and blank cells, padded to the
    // full width of the table.
    assert_eq!(cells(lines[3]), ["55661:BINDS #140661335857648:"]);
    assert_eq!(lines[3].chars().count(), lines[0].chars().count());
    assert_eq!(
        cells(lines[lines.len() - 1]),
        [
            "TOTAL (231)",
            "60.042722",
            "100.0%",
            "3",
            "20.014241",
            "0.000964",
            "60.001584"
        ]
    );
}

#[test]
fn no_match_message_names_the_effective_filter() {
    let f = fixtures().join("trctools/simple_trace.trc");
    let (out, _, code) = skew(
        &["--where=$af >=1 and $af <= 59"],
        &[f.to_string_lossy().into_owned()],
    );
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "no calls match where '(($af >=1 and $af <= 59) and ($dep==$depmin)) and ($nam=~/.+/i)' is true\n"
    );
}

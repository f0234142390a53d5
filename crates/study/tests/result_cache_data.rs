//! The result-cache study's data is the original's: every row of its
//! setup.sql against holiday.csv and chair.csv (tests/fixtures/crc-workload,
//! the original's workload files), its bind file against the
//! original's, and the licences beside them.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn study_file(name: &str) -> String {
    std::fs::read_to_string(root().join("crates/study/studies/result-cache").join(name)).unwrap()
}

/// The rows of `INSERT INTO table VALUES (...), ...;` as text values
/// (quotes removed, '' read as ').
fn inserted(sql: &str, table: &str) -> Vec<Vec<String>> {
    let head = format!("INSERT INTO {table} VALUES\n");
    let start = sql.find(&head).expect("an INSERT of the table") + head.len();
    let body = &sql[start..];
    let body = &body[..body.find(";\n").expect("the INSERT ends")];
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cur = String::new();
    let mut chars = body.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('\'', false) => quoted = true,
            ('\'', true) if chars.peek() == Some(&'\'') => {
                chars.next();
                cur.push('\'');
            }
            ('\'', true) => quoted = false,
            (c, true) => cur.push(c),
            // Outside quotes, blanks only separate (inside, CHAR padding
            // is the value's).
            ('(', false) => {}
            (c, false) if c.is_whitespace() => {}
            (',', false) => {
                if !cur.is_empty() || !row.is_empty() {
                    row.push(cur.clone());
                }
                cur.clear();
            }
            (')', false) => {
                row.push(cur.clone());
                cur.clear();
                rows.push(std::mem::take(&mut row));
            }
            (c, false) => cur.push(c),
        }
    }
    rows
}

fn csv(name: &str) -> Vec<Vec<String>> {
    let text =
        std::fs::read_to_string(root().join("tests/fixtures/crc-workload").join(name)).unwrap();
    // Comma-separated, every value double-quoted, no quote inside one.
    text.lines()
        .map(|l| {
            l.trim_matches('"')
                .split("\",\"")
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// `20-JAN-04` as the ISO date the SQL gives it.
fn iso(d: &str) -> String {
    let p: Vec<&str> = d.split('-').collect();
    let months = [
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ];
    let m = months.iter().position(|x| *x == p[1]).unwrap() + 1;
    format!("20{}-{m:02}-{}", p[2], p[0])
}

#[test]
fn holiday_and_chair_rows_are_the_originals() {
    let sql = study_file("setup.sql");
    let holiday = inserted(&sql, "holiday");
    let want = csv("holiday.csv");
    assert_eq!(holiday.len(), 602);
    assert_eq!(want.len(), 602);
    for (got, w) in holiday.iter().zip(&want) {
        let mut w = w.clone();
        w[3] = iso(&w[3]);
        w[4] = iso(&w[4]);
        assert_eq!(got, &w);
    }
    let chair = inserted(&sql, "chair");
    let want = csv("chair.csv");
    assert_eq!(chair.len(), 122);
    assert_eq!(&chair, &want);
    // A quote inside a value survives: "Martin Luther King's Day".
    assert!(holiday
        .iter()
        .any(|r| r[2].starts_with("Martin Luther King's Day")));
}

#[test]
fn binds_and_licences_are_the_originals() {
    let binds = study_file("binds.txt");
    let original = std::fs::read_to_string(
        root().join("tests/fixtures/crc-workload/bind-vals-8j53dscbsbqmb.txt"),
    )
    .unwrap();
    assert_eq!(binds, original);
    assert_eq!(binds.lines().count(), 21);
    for l in [
        "LICENSE-pythian-blog-files.MIT.txt",
        "LICENSE-sqlrun-tests.MIT.txt",
    ] {
        assert!(
            study_file(l).contains("MIT License")
                || study_file(l).contains("Permission is hereby granted")
        );
    }
}

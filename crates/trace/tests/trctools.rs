//! The trctools project's own expectations for its edge-case traces
//! (../shared/traces/MANIFEST.md), checked through the reader.

use std::path::{Path, PathBuf};

use tracelab_trace::{open, CallKind, ReadOptions, ReadSummary, Reader, Source};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/trctools")
        .join(name)
}

/// What a test wants to know of every call.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    kind: CallKind,
    name: String,
    line: u64,
    c: i64,
    e: i64,
    ela: i64,
    sqlid: String,
    sql: String,
    binds: Vec<Option<String>>,
}

fn read_with(name: &str, opts: ReadOptions) -> (Vec<Seen>, ReadSummary) {
    let f = open(&Source::Path(fixture(name))).unwrap();
    let mut seen = Vec::new();
    let summary = Reader::new(opts)
        .read(f, |c| {
            seen.push(Seen {
                kind: c.kind,
                name: c.name.to_string(),
                line: c.line,
                c: c.db.c.unwrap_or(0),
                e: c.db.e.unwrap_or(0),
                ela: if c.kind == CallKind::Wait {
                    c.wait.ela
                } else {
                    0
                },
                sqlid: c.stmt.sqlid.clone(),
                sql: c.stmt.sql.clone(),
                binds: c
                    .binds
                    .iter()
                    .map(|b| b.as_deref().map(String::from))
                    .collect(),
            })
        })
        .unwrap();
    (seen, summary)
}

fn read(name: &str) -> (Vec<Seen>, ReadSummary) {
    read_with(
        name,
        ReadOptions {
            binds: true,
            ..ReadOptions::default()
        },
    )
}

fn sums(calls: &[Seen]) -> (i64, i64, i64) {
    let db = |s: &&Seen| {
        matches!(
            s.kind,
            CallKind::Parse | CallKind::Exec | CallKind::Fetch | CallKind::Close
        )
    };
    (
        calls.iter().filter(db).map(|s| s.c).sum(),
        calls.iter().filter(db).map(|s| s.e).sum(),
        calls.iter().map(|s| s.ela).sum(),
    )
}

fn count(calls: &[Seen], kind: CallKind) -> usize {
    calls.iter().filter(|s| s.kind == kind).count()
}

#[test]
fn simple_trace() {
    let (calls, summary) = read("simple_trace.trc");
    assert_eq!(summary.lines, 51);
    assert_eq!(sums(&calls), (553, 598, 755));
    assert_eq!(count(&calls, CallKind::Wait), 5);
    assert_eq!(count(&calls, CallKind::Fetch), 2);
    assert!(calls.iter().any(|c| c.sqlid == "atxg62s17nkj4"));
    // One BINDS block: its values reach the EXEC and the FETCHes after it.
    let exec = calls
        .iter()
        .find(|c| c.kind == CallKind::Exec && c.sqlid == "atxg62s17nkj4")
        .unwrap();
    assert_eq!(exec.binds.len(), 1, "{exec:?}");
    assert_eq!(summary.diagnostics.total, 0);
}

#[test]
fn simple_trace_2x() {
    let (calls, summary) = read("simple_trace_2x.trc");
    assert_eq!(summary.lines, 69);
    assert_eq!(sums(&calls), (1105, 1744, 1966));
    assert_eq!(count(&calls, CallKind::Wait), 12);
    assert_eq!(count(&calls, CallKind::Fetch), 4);
}

#[test]
fn missing_parse_has_a_placeholder_then_text() {
    let (calls, _) = read("simple_trace_missing_parse.trc");
    assert_eq!(count(&calls, CallKind::Xctend), 2);
    let first_db = calls.iter().find(|c| c.kind.is_dbcall()).unwrap();
    assert!(
        first_db.sqlid.starts_with('#'),
        "no SQL text before the first PARSING IN CURSOR: {first_db:?}"
    );
    assert!(
        first_db.sql.starts_with('#') && first_db.sql.contains("simple_trace_missing_parse.trc")
    );
    let cpu: i64 = calls
        .iter()
        .filter(|c| c.kind.is_dbcall() && c.sqlid == "atxg62s17nkj4")
        .map(|c| c.c)
        .sum();
    assert_eq!(cpu, 552);
}

#[test]
fn one_cursor_reused_by_three_statements() {
    let (calls, _) = read("two_statements_one_cursor.trc");
    let mut ids: Vec<&str> = calls
        .iter()
        .filter(|c| c.kind.is_dbcall() && !c.sqlid.starts_with('#'))
        .map(|c| c.sqlid.as_str())
        .collect();
    ids.dedup();
    for want in ["cdgn9f8spbxnt", "atxg62s17nkj4", "6ssxu7vjxb51a"] {
        assert!(ids.contains(&want), "{want} in {ids:?}");
    }
    assert_eq!(count(&calls, CallKind::Fetch), 14);
}

#[test]
fn stray_close_gets_a_placeholder() {
    let (calls, summary) = read("stray_close.trc");
    let close = calls.iter().find(|c| c.kind == CallKind::Close).unwrap();
    assert!(close.sqlid.starts_with('#'));
    assert_eq!(summary.diagnostics.total, 0);
}

#[test]
fn lob_calls_without_cursors() {
    let (calls, _) = read("lobs.trc");
    let n = |name: &str| calls.iter().filter(|c| c.name == name).count();
    assert_eq!(
        (n("LOBTMPCREATE"), n("LOBWRITE"), n("LOBPGSIZE")),
        (5, 5, 4)
    );
    assert!(calls
        .iter()
        .filter(|c| c.kind == CallKind::Lob)
        .all(|c| c.sqlid == format!("#():{}", fixture("lobs.trc").display())));
}

#[test]
fn xz_input_reads_like_the_plain_file() {
    let (plain, ps) = read("lobread.trc");
    let (xz, xs) = read("lobread.trc.xz");
    assert!(!plain.is_empty());
    assert_eq!(ps.lines, xs.lines);
    // Equal but for the file name inside placeholders.
    let strip = |v: Vec<Seen>| -> Vec<(CallKind, String, u64, i64, i64, i64)> {
        v.into_iter()
            .map(|s| (s.kind, s.name, s.line, s.c, s.e, s.ela))
            .collect()
    };
    assert_eq!(strip(plain), strip(xz));
}

#[test]
fn damaged_files_warn_with_line_numbers_and_keep_going() {
    let (calls, summary) = read("malformed_stat.trc");
    assert!(summary.diagnostics.total >= 1);
    let d = &summary.diagnostics.kept[0];
    assert!(d.message.contains("STAT"), "{d}");
    assert!(!calls.is_empty());

    let (calls, summary) = read("broken_trace.trc");
    assert!(summary.diagnostics.total >= 3, "{:?}", summary.diagnostics);
    let lines: Vec<u64> = summary.diagnostics.kept.iter().map(|d| d.line).collect();
    // The FETCH glued to a WAIT on line 43 is reported, not counted twice.
    assert!(lines.contains(&43), "{lines:?}");
    assert!(calls.iter().all(|c| c.line != 43));
    let mut seen_lines: Vec<u64> = calls.iter().map(|c| c.line).collect();
    seen_lines.dedup();
    assert_eq!(seen_lines.len(), calls.len(), "no line counted twice");

    let (calls, summary) = read("error.trc");
    assert!(!calls.is_empty());
    assert_eq!(
        summary.diagnostics.total, 0,
        "ERROR lines are part of the format"
    );

    let (_, summary) = read("parse_error.trc");
    assert_eq!(summary.diagnostics.total, 0);
}

#[test]
fn parse_error_text_becomes_the_cursor_statement() {
    let (calls, _) = read("parse_error.trc");
    let close = calls
        .iter()
        .find(|c| c.kind == CallKind::Close && c.sql.contains("SQL Analyze"))
        .expect("the CLOSE after PARSE ERROR carries its text");
    assert_eq!(
        close.sql,
        "/* SQL Analyze(436,0) */ select username from dba_users order by 1"
    );
}

#[test]
fn timestamps_without_zone_are_fine() {
    let (calls, summary) = read("no_timezone.trc");
    assert!(!calls.is_empty());
    assert_eq!(summary.diagnostics.total, 0);
}

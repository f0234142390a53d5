//! Rough edges of skew, prof and calls a new user hit: a Markdown page
//! read as a trace, an output path calls cannot write, `--max-line` that
//! only skew took, a statement's text cut off by the end of the file.

mod common;
use common::{db_ping, tracelab};

/// A documentation page quoting a profile: lines that start like trace
/// lines (`XCTEND `) but are none.
const MARKDOWN: &str = "\
# Profile

```
CALL-NAME  DURATION       %  CALLS      MEAN       MIN       MAX
---------  --------  ------  -----  --------  --------  --------
EXEC       0.007077    0.1%      9  0.000786  0.000000  0.005376
XCTEND     0.000000    0.0%      1  0.000000  0.000000  0.000000
```

*** the end
XCTEND     0.000000    0.0%      1  0.000000  0.000000  0.000000
";

#[test]
fn a_page_that_quotes_a_profile_is_not_a_trace_for_skew_prof_and_calls() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("README.md");
    std::fs::write(&md, MARKDOWN).unwrap();
    let md = md.to_str().unwrap();
    let out_csv = dir.path().join("c.csv");
    for args in [
        vec!["skew", md],
        vec!["prof", md],
        vec!["calls", "-o", out_csv.to_str().unwrap(), md],
    ] {
        let (out, err, code) = tracelab(&args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("README.md: not an Oracle extended SQL trace file"),
            "{args:?}: {err}"
        );
        assert!(!out.contains("XCTEND"), "{args:?}: {out}");
    }
    let (_, err, _) = tracelab(&["calls", "-o", out_csv.to_str().unwrap(), md]);
    assert!(err.contains("0 calls of 0 files"), "{err}");
}

#[test]
fn calls_refuses_an_output_in_a_format_it_does_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.xlsx");
    let (_, err, code) = tracelab(&["calls", "-o", x.to_str().unwrap(), &db_ping()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(".xlsx is not a format"), "{err}");
    assert!(!x.exists(), "x.xlsx was created");
    // A directory of that name when asked for with a slash.
    let slash = format!("{}/", x.display());
    let (_, err, code) = tracelab(&["calls", "-o", &slash, &db_ping()]);
    assert_eq!(code, 0, "{err}");
    assert!(x.join("calls").is_dir());
}

/// db-ping with `tail` appended.
fn ping_with(dir: &std::path::Path, tail: &str) -> String {
    let mut t = std::fs::read_to_string(db_ping()).unwrap();
    t.push_str(tail);
    let p = dir.join("t.trc");
    std::fs::write(&p, t).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn prof_and_calls_take_max_line_as_skew_does() {
    let dir = tempfile::tempdir().unwrap();
    // Longer than the reader's buffer, which is the least limit.
    let long = format!("{}\n", "x".repeat(3 << 20));
    let trace = ping_with(dir.path(), &long);
    let csv = dir.path().join("c.csv");
    let csv = csv.to_str().unwrap();
    for args in [
        vec!["skew", "--max-line", "1M", &trace],
        vec!["prof", "--max-line", "1M", &trace],
        vec!["calls", "--max-line", "1M", "-o", csv, &trace],
    ] {
        let (_, err, code) = tracelab(&args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("longer than 1048576 bytes (the limit; raise it with --max-line)"),
            "{args:?}: {err}"
        );
    }
    for args in [vec!["prof", &trace], vec!["calls", "-o", csv, &trace]] {
        let (_, err, code) = tracelab(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let (_, err, code) = tracelab(&["prof", "--max-line", "12", &trace]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--max-line=12"), "{err}");
}

#[test]
fn a_statement_text_cut_off_by_the_end_of_the_file_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let trace = ping_with(
        dir.path(),
        "PARSING IN CURSOR #140 len=8 dep=0 uid=0 oct=3 lid=0 tim=99999999999 hv=1 ad='0' sqlid='abcdabcdabcda'\nselect 1\n",
    );
    let lines = std::fs::read_to_string(&trace).unwrap().lines().count();
    let at = format!("t.trc:{}: expected END OF STMT", lines - 1);
    let csv = dir.path().join("c.csv");
    for args in [
        vec!["skew", trace.as_str()],
        vec!["prof", trace.as_str()],
        vec!["calls", "-o", csv.to_str().unwrap(), trace.as_str()],
    ] {
        let (_, err, code) = tracelab(&args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(&at), "{args:?}: {err}");
    }
}

//! `tracelab skew` as a user runs it: options, formats, exit statuses,
//! damaged and foreign input, standard input, and the time mrskew leaves
//! out.

mod common;
use common::{db_ping, fixture, tempdir, tracelab};

use std::io::Write;
use std::process::{Command, Stdio};

/// R = last tim − first start over every timed line, computed here from
/// the raw text, independently of the reader.
fn response_time_us(path: &str) -> i64 {
    let text = std::fs::read_to_string(path).unwrap();
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for l in text.lines() {
        if !(l.starts_with("WAIT #")
            || ["PARSE #", "EXEC #", "FETCH #", "CLOSE #", "XCTEND"]
                .iter()
                .any(|p| l.starts_with(p)))
        {
            continue;
        }
        let Some(t) = l
            .rsplit("tim=")
            .next()
            .and_then(|v| v.trim().parse::<i64>().ok())
        else {
            continue;
        };
        let d = if let Some(i) = l.find("ela= ") {
            l[i + 5..]
                .split(' ')
                .next()
                .unwrap()
                .parse::<i64>()
                .unwrap()
        } else if let Some(i) = l.find(",e=") {
            l[i + 3..]
                .split(',')
                .next()
                .unwrap()
                .parse::<i64>()
                .unwrap()
        } else {
            0
        };
        first = first.min(t - d);
        last = last.max(t);
    }
    last - first
}

#[test]
fn unaccounted_makes_the_total_the_response_time() {
    let (out, err, code) = tracelab(&["skew", "--unaccounted", "--csv", &db_ping()]);
    assert_eq!(code, 0, "{err}");
    let total = out.lines().last().unwrap();
    let secs: f64 = total.split(',').nth(1).unwrap().parse().unwrap();
    let r = response_time_us(&db_ping()) as f64 * 1e-6;
    assert!((secs - r).abs() < 1e-6, "TOTAL {secs} vs R {r}");
    assert!(out.contains("unaccounted-for between calls,"));
    assert!(out.contains("unaccounted-for within calls,"));
    // Without the option the profile is mrskew's, and smaller.
    let (plain, _, _) = tracelab(&["skew", "--csv", &db_ping()]);
    let plain_total: f64 = plain
        .lines()
        .last()
        .unwrap()
        .split(',')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(plain_total < secs);
}

#[test]
fn a_file_that_is_not_a_trace_is_skipped_and_the_others_profiled() {
    let dir = tempdir("notrace");
    let junk = dir.join("notes.txt");
    std::fs::write(&junk, "shopping list\nmilk\n").unwrap();
    let (out, err, code) = tracelab(&[
        "skew",
        junk.to_str().unwrap(),
        &db_ping(),
        "/nonexistent/x.trc",
    ]);
    assert_eq!(code, 1, "damaged or skipped input is in the exit status");
    assert!(
        err.contains("notes.txt: not an Oracle extended SQL trace file"),
        "{err}"
    );
    assert!(err.contains("/nonexistent/x.trc: cannot open"), "{err}");
    assert!(
        out.ends_with(
            "TOTAL (11)                   10.668190  100.0%     89  0.119867  0.000000  2.062658\n"
        ),
        "{out}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn damaged_lines_are_warned_with_file_and_line_and_counted_once() {
    let broken = fixture("trctools/broken_trace.trc");
    let (out, err, code) = tracelab(&["skew", "--alldepths", "--name=:dbcall", "--csv", &broken]);
    assert_eq!(code, 1);
    assert!(
        err.contains("broken_trace.trc:43: expected a number after 'tim='"),
        "{err}"
    );
    assert!(out.lines().last().unwrap().starts_with("TOTAL ("));
}

#[test]
fn standard_input_and_compressed_input() {
    let text = std::fs::read(db_ping()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .args(["skew", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let (want, _, _) = tracelab(&["skew", &db_ping()]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
}

#[test]
fn basename_of_a_compressed_trace_is_oracles_name() {
    let (out, _, code) = tracelab(&[
        "skew",
        "--group=$basename",
        "--top=0",
        &fixture("crc-local-force/orcl_ora_30561_RC-20230830160541-20230703160541.trc.gz"),
    ]);
    assert_eq!(code, 0);
    assert!(
        out.contains("\norcl_ora_30561_RC-20230830160541-20230703160541.trc "),
        "{out}"
    );
    assert!(!out.contains(".trc.gz"));
}

#[test]
fn csv_json_and_output_file() {
    let dir = tempdir("formats");
    let json_path = dir.join("p.json");
    let (out, err, code) = tracelab(&[
        "skew",
        "--json",
        "--output",
        json_path.to_str().unwrap(),
        &db_ping(),
    ]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let json = std::fs::read_to_string(&json_path).unwrap();
    assert!(json.contains("\"label\": \"PL/SQL lock timer\""), "{json}");
    assert!(json.contains("\"calls\": 89"), "{json}");
    let (csv, _, _) = tracelab(&["skew", "--csv", "--nohead", &db_ping()]);
    assert!(
        csv.starts_with("PL/SQL lock timer,10.301060,96.6,5,2.060212,2.057524,2.062658\n"),
        "{csv}"
    );
    assert_eq!(tracelab(&["skew", "--csv", "--json", &db_ping()]).2, 2);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn head_foot_dashes_commas_precision_and_top() {
    let (out, _, _) = tracelab(&[
        "skew",
        "--nohead",
        "--nofoot",
        "--top=2",
        "--precision=2",
        &db_ping(),
    ]);
    assert_eq!(
        out,
        // Columns as wide as the cells printed: no header, no total.
        "PL/SQL lock timer            10.30  96.6%   5  2.06  2.06  2.06\n\
         SQL*Net message from dblink   0.36   3.3%  14  0.03  0.02  0.03\n\
         9 others                      0.01   0.1%  70  0.00  0.00  0.01\n"
    );
}

#[test]
fn p10_histogram_shows_every_bucket() {
    let (out, _, code) = tracelab(&["skew", "--rc=p10.rc", &db_ping()]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("RANGE {min ≤ e < max}"));
    assert_eq!(lines.len(), 2 + 11 + 2);
    assert!(lines[2].starts_with(" 1.     0.000000     0.000001"));
    assert_eq!(
        lines[8].trim_end(),
        " 7.     0.100000     1.000000",
        "an empty bucket has blank cells"
    );
    assert!(lines[9].starts_with(" 8.     1.000000    10.000000  10.301060   96.6%      5"));
    assert!(lines[14].starts_with("TOTAL (11)"));
}

#[test]
fn verbose_lists_like_mrskew() {
    let (_, err, _) = tracelab(&["skew", "--verbose", &db_ping()]);
    assert!(
        err.contains("where expression:\n\t((1) and ($dep==$depmin)) and ($nam=~/.+/i)\n"),
        "{err}"
    );
    assert!(err.contains("group expression:\n\t$nam\n"));
    assert!(err.contains("'PL/SQL lock timer'"));
    assert!(err.contains("matched input files:"));
}

#[test]
fn bad_expressions_rc_and_init_are_usage_errors() {
    let (out, err, code) = tracelab(&["skew", "--where=$af < (1", &db_ping()]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.contains("--where expression"), "{err}");
    assert!(err.contains("$af < (1\n"), "{err}");
    assert!(err.contains("^"), "{err}");
    let (_, err, code) = tracelab(&["skew", "--where=$nosuch > 1", &db_ping()]);
    assert_eq!(code, 2);
    assert!(err.contains("$nosuch"), "{err}");
    let (_, err, code) = tracelab(&["skew", "--init=sub label { 1 }", &db_ping()]);
    assert_eq!(code, 2);
    assert!(err.contains("--rc=p10.rc"), "{err}");
    let (_, err, code) = tracelab(&["skew", "--rc=nosuch.rc", &db_ping()]);
    assert_eq!(code, 2);
    assert!(err.contains("built-ins"), "{err}");
    let (out, _, code) = tracelab(&["skew", "-help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Usage: tracelab skew"), "{out}");
    let (_, err, code) = tracelab(&["skew"]);
    assert_eq!(code, 2);
    assert!(err.contains("no trace files named"), "{err}");
    let (_, err, code) = tracelab(&["skew", "--sort=9x", &db_ping()]);
    assert_eq!(code, 2);
    assert!(err.contains("--sort=9x"), "{err}");
}

#[test]
fn bind_values_group_executions() {
    let (out, err, code) = tracelab(&[
        "skew",
        "--name=EXEC",
        "--where=$sqlid eq '7cmmb5pvfds2d'",
        "--group=join(',', @bind)",
        "--top=3",
        &fixture("crc-local-force/orcl_ora_30561_RC-20230830160541-20230703160541.trc.gz"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines()
            .nth(2)
            .unwrap()
            .starts_with("\"1686\",\"5/11/2023 0:0:0\""),
        "{out}"
    );
}

#[test]
fn many_files_in_parallel_equal_one_at_a_time() {
    let files: Vec<String> = std::fs::read_dir(fixture("crc-local-force"))
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".gz"))
        .collect();
    let mut a: Vec<&str> = vec!["skew", "--group=$sqlid", "--top=0", "--jobs=1"];
    a.extend(files.iter().map(String::as_str));
    let mut b: Vec<&str> = vec!["skew", "--group=$sqlid", "--top=0", "--jobs=4"];
    b.extend(files.iter().map(String::as_str));
    let (one, _, _) = tracelab(&a);
    let (many, _, _) = tracelab(&b);
    assert_eq!(one, many);
    assert!(one.lines().count() > 10);
}

#[test]
fn depmin_known_only_later_rejudges_the_start() {
    // The trace starts inside recursive SQL: the first database call has
    // dep=1, the file's minimum (0) shows only later.
    let text = "Oracle Release 11.2\n\
PARSING IN CURSOR #2 len=6 dep=1 uid=0 oct=3 lid=0 tim=50 hv=1 ad='1' sqlid='rec'\n\
select\n\
END OF STMT\n\
EXEC #2:c=5,e=5,p=0,cr=0,cu=0,mis=0,r=0,dep=1,og=3,tim=60\n\
WAIT #2: nam='db file sequential read' ela= 7 file#=1 block#=2 blocks=1 obj#=-1 tim=70\n\
PARSING IN CURSOR #1 len=6 dep=0 uid=7 oct=6 lid=7 tim=90 hv=2 ad='2' sqlid='top'\n\
insert\n\
END OF STMT\n\
EXEC #1:c=20,e=40,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=3,tim=100\n";
    let dir = tempdir("depmin");
    let f = dir.join("late.trc");
    std::fs::write(&f, text).unwrap();
    let f = f.to_string_lossy().into_owned();
    let (auto, err, code) = tracelab(&["skew", "--csv", &f]);
    assert_eq!(code, 0, "{err}");
    let (fixed, _, _) = tracelab(&["skew", "--csv", "--depmin=0", &f]);
    assert_eq!(auto, fixed);
    assert!(
        auto.contains("EXEC,0.000020,74.1,1,"),
        "the recursive EXEC is not counted: {auto}"
    );
    // The mean is 13.5 µs, an exact tie that Perl's double breaks down:
    // perl -e 'printf "%.6f\n", (7*1e-6+20*1e-6)/2'  prints 0.000013.
    assert!(
        auto.ends_with("TOTAL (2),0.000027,100.0,2,0.000013,0.000007,0.000020\n"),
        "{auto}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

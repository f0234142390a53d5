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
    let (out, err, code) = skew(
        &["--where=$af >=1 and $af <= 59"],
        &[f.to_string_lossy().into_owned()],
    );
    // mrskew's line, with tracelab's prefix, on stderr; no table; a status
    // a script can test.
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(
        err,
        "tracelab: no calls match where '(($af >=1 and $af <= 59) and ($dep==$depmin)) and ($nam=~/.+/i)' is true\n"
    );
}

fn fixture_path(rel: &str) -> String {
    fixtures().join(rel).to_string_lossy().into_owned()
}

fn temp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelab-golden-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes a small hand-made trace and returns its path.
fn hand_made(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

const HEADER: &str = "Trace file /u01/app/oracle/diag/rdbms/orcl/orcl/trace/orcl_ora_100.trc\n\
Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production\n\
Unix process pid: 100, image: oracle@db1\n\n\
*** 2023-08-30T16:05:41.000000-04:00\n";

#[test]
fn barewords_are_strings_in_labels_and_filters() {
    let f = crc_30561();
    let (out, err, code) = skew(
        &["--name=FETCH", "--gl=FETCH . sprintf(q{%10s},q{acct for})"],
        std::slice::from_ref(&f),
    );
    assert_eq!(code, 0, "{err}");
    let want = "\
FETCH  acct for  DURATION       %  CALLS      MEAN       MIN       MAX
---------------  --------  ------  -----  --------  --------  --------
FETCH            0.006734  100.0%  3,002  0.000002  0.000000  0.000639
---------------  --------  ------  -----  --------  --------  --------
TOTAL (1)        0.006734  100.0%  3,002  0.000002  0.000000  0.000639
";
    assert_eq!(out, want);
    // In a filter and a group: a bareword is its own name.
    let (by_word, _, code) = skew(
        &[
            "--where=$nam eq FETCH or $nam eq EXEC",
            "--group=$nam eq FETCH ? FETCHES : OTHER",
        ],
        std::slice::from_ref(&f),
    );
    assert_eq!(code, 0);
    let (by_string, _, _) = skew(
        &[
            "--where=$nam eq 'FETCH' or $nam eq 'EXEC'",
            "--group=$nam eq 'FETCH' ? 'FETCHES' : 'OTHER'",
            "--gl=$nam eq FETCH ? FETCHES : OTHER",
        ],
        &[f],
    );
    assert_eq!(by_word, by_string);
    assert!(by_word.contains("\nFETCHES "), "{by_word}");
    // A misspelt function is still an error with a caret under it.
    let (_, err, code) = skew(&["--group=sprntf(q{%d}, $r)"], &[crc_30561()]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown function 'sprntf'"), "{err}");
    assert!(err.contains("\n  ^"), "{err}");
}

#[test]
fn numbers_are_perls_doubles_printed_by_printf() {
    // A real trace whose sums trctools' own tests publish (Σc = 553 µs,
    // Σela = 755 µs): SQL*Net message from client is 409 µs over 2 calls,
    // 204.5 µs, an exact tie that the double breaks downwards:
    // perl -e 'printf "%.6f\n", (186*1e-6+223*1e-6)/2'  prints 0.000204.
    // SQL*Net message to client and CLOSE tie
    // at 0.000003 and keep the order they first appear in.
    let (out, err, code) = skew(&[], &[fixture_path("trctools/simple_trace.trc")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "\
CALL-NAME                    DURATION       %  CALLS      MEAN       MIN       MAX
---------------------------  --------  ------  -----  --------  --------  --------
FETCH                        0.000444   33.9%      2  0.000222  0.000000  0.000444
SQL*Net message from client  0.000409   31.3%      2  0.000204  0.000186  0.000223
db file sequential read      0.000343   26.2%      1  0.000343  0.000343  0.000343
EXEC                         0.000073    5.6%      1  0.000073  0.000073  0.000073
PARSE                        0.000033    2.5%      1  0.000033  0.000033  0.000033
SQL*Net message to client    0.000003    0.2%      2  0.000002  0.000001  0.000002
CLOSE                        0.000003    0.2%      1  0.000003  0.000003  0.000003
XCTEND                       0.000000    0.0%      1  0.000000  0.000000  0.000000
---------------------------  --------  ------  -----  --------  --------  --------
TOTAL (8)                    0.001308  100.0%     11  0.000119  0.000000  0.000444
"
    );
    // A crc trace: means of exactly half a microsecond, printed as Perl
    // prints the running sum over the calls (computed by Perl from the
    // trace's values, in read order: 254.5 µs prints 0.000255, 242.5 µs
    // 0.000242, 437.5 µs 0.000438, 2.5 µs 0.000002).
    let (out, _, _) = skew(
        &["--top=0"],
        &[fixture_path(
            "crc-local-force/orcl_ora_30537_RC-20230830160541-20230703160541.trc.gz",
        )],
    );
    for row in [
        "latch free                                       0.001527    0.0%       6  0.000255  0.000001    0.000731",
        "PARSE                                            0.000970    0.0%       4  0.000242  0.000001    0.000883",
        "ADR block file read                              0.000875    0.0%       2  0.000438  0.000259    0.000616",
        "CLOSE                                            0.000040    0.0%      16  0.000002  0.000000    0.000008",
    ] {
        assert!(out.contains(&format!("\n{row}\n")), "{row}\n{out}");
    }
    // 34,593 µs over 6 waits, 5,765.5 µs:
    // perl -e '$s=0; $s+=$_*1e-6 for 5000,6000,5593,6000,6000,6000;
    //   printf "%.6f %.5f\n", $s/6, $s/6'  prints 0.005765 0.00577
    let dir = temp("round");
    let mut t = HEADER.to_string();
    for (i, ela) in [5000, 6000, 5593, 6000, 6000, 6000].iter().enumerate() {
        t.push_str(&format!(
            "WAIT #0: nam='cursor: pin S wait on X' ela= {ela} idn=1 value=2 where=3 obj#=-1 tim={}\n",
            100_000 + i * 10_000
        ));
    }
    t.push_str("WAIT #0: nam='SQL*Net message from client' ela= 34593 driver id=1 #bytes=1 p3=0 obj#=-1 tim=200000\n");
    let f = hand_made(&dir, "crc.trc", &t);
    let (out, _, code) = skew(&[], std::slice::from_ref(&f));
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "\
CALL-NAME                    DURATION       %  CALLS      MEAN       MIN       MAX
---------------------------  --------  ------  -----  --------  --------  --------
cursor: pin S wait on X      0.034593   50.0%      6  0.005765  0.005000  0.006000
SQL*Net message from client  0.034593   50.0%      1  0.034593  0.034593  0.034593
---------------------------  --------  ------  -----  --------  --------  --------
TOTAL (2)                    0.069186  100.0%      7  0.009884  0.005000  0.034593
"
    );
    let (csv, _, _) = skew(&["--csv", "--sort=4nd"], std::slice::from_ref(&f));
    assert!(
        csv.contains("\ncursor: pin S wait on X,0.034593,50.0,6,0.005765,0.005000,0.006000\n"),
        "{csv}"
    );
    let (json, _, _) = skew(&["--json", "--sort=4nd", "--precision=5"], &[f]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["rows"][0]["mean"].to_string(), "0.00577");
    assert_eq!(v["rows"][0]["percent"].to_string(), "50.0");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn ties_keep_the_order_groups_first_appear_in() {
    let dir = temp("ties");
    let t = format!(
        "{HEADER}\
PARSING IN CURSOR #1 len=8 dep=0 uid=7 oct=3 lid=7 tim=100 hv=1 ad='1' sqlid='a'\n\
select 1\n\
END OF STMT\n\
CLOSE #9:c=0,e=1,dep=0,type=0,tim=90\n\
PARSE #1:c=0,e=5,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=100\n\
EXEC #1:c=20,e=20,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=130\n\
FETCH #1:c=0,e=3,p=0,cr=0,cu=0,mis=0,r=1,dep=0,og=1,plh=0,tim=140\n\
CLOSE #1:c=0,e=1,dep=0,type=0,tim=150\n"
    );
    let f = hand_made(&dir, "ties.trc", &t);
    let (out, err, code) = skew(&[], std::slice::from_ref(&f));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "\
CALL-NAME  DURATION       %  CALLS      MEAN       MIN       MAX
---------  --------  ------  -----  --------  --------  --------
EXEC       0.000020  100.0%      1  0.000020  0.000020  0.000020
CLOSE      0.000000    0.0%      2  0.000000  0.000000  0.000000
PARSE      0.000000    0.0%      1  0.000000  0.000000  0.000000
FETCH      0.000000    0.0%      1  0.000000  0.000000  0.000000
---------  --------  ------  -----  --------  --------  --------
TOTAL (4)  0.000020  100.0%      5  0.000004  0.000000  0.000020
"
    );
    // Ascending too: a stable sort, not a reversed one.
    let (out, _, _) = skew(&["--sort=2na", "--nohead", "--nofoot"], &[f]);
    let names: Vec<&str> = out.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(names, ["CLOSE", "PARSE", "FETCH", "EXEC"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn sqlid_rc_prints_one_clean_row_per_group() {
    let f = fixture_path("trctools/simple_trace_missing_parse.trc");
    let (out, err, code) = skew(&["--rc=sqlid.rc"], std::slice::from_ref(&f));
    assert_eq!(code, 0, "{err}");
    // The statement's text is two lines in the trace; cursors whose text
    // the trace lacks show their placeholder once.
    let want = format!(
        "\
SQLID:SQL{pad}DURATION       %  CALLS      MEAN       MIN       MAX
{dash}  --------  ------  -----  --------  --------  --------
atxg62s17nkj4:select something from some_table;{p1}0.001763   57.4%     12  0.000147  0.000000  0.000475
#140641987987624:{f}  0.001308   42.6%     10  0.000131  0.000000  0.000444
#():{f}{p2}0.000000    0.0%      2  0.000000  0.000000  0.000000
{dash}  --------  ------  -----  --------  --------  --------
TOTAL (3){pad}0.003071  100.0%     24  0.000128  0.000000  0.000475
",
        pad = " ".repeat(17 + f.len() + 2 - 9),
        dash = "-".repeat(17 + f.len()),
        p1 = " ".repeat(17 + f.len() + 2 - 47),
        p2 = " ".repeat(13 + 2),
    );
    assert_eq!(out, want);
    // Multi-line statements of a real 11.2 trace: every row one line.
    let (out, _, _) = skew(
        &["--rc=sqlid.rc", "--alldepths", "--top=0"],
        &[fixture_path("analytics-vs-groupby/oravm1_ora_26226_S1.trc")],
    );
    assert_eq!(out.lines().count(), 2 + 18 + 2, "{out}");
    assert_eq!(
        cells(out.lines().nth(2).unwrap())[..2],
        [
            "av8aqykvtxuc5:with data as ( select tmain.id , lag(tmain.id) over ( order",
            "9.197553"
        ]
    );
}

#[test]
fn shareable_statements_and_wall_clock_variables() {
    let dir = temp("vars");
    let t = format!(
        "{HEADER}\
PARSING IN CURSOR #1 len=30 dep=0 uid=7 oct=3 lid=7 tim=1000000 hv=1 ad='1' sqlid='aaaaaaaaaaaa1'\n\
select * from t where id = 42\n\
END OF STMT\n\
EXEC #1:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1000010\n\
PARSING IN CURSOR #1 len=33 dep=0 uid=7 oct=3 lid=7 tim=1500000 hv=2 ad='2' sqlid='aaaaaaaaaaaa2'\n\
select *\n  from t where id = 'x'\n\
END OF STMT\n\
EXEC #1:c=20,e=250000,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1750000\n\
*** 2023-08-30 16:10:00.5\n\
EXEC #1:c=5,e=5,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=9000000\n\
EXEC #1:c=5,e=1000005,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=11000000\n"
    );
    let f = hand_made(&dir, "vars.trc", &t);
    let (out, err, code) = skew(
        &["--group=$ssqlid . q{ } . $ssql", "--gl=SHAREABLE", "--csv"],
        std::slice::from_ref(&f),
    );
    assert_eq!(code, 0, "{err}");
    // Two texts that differ in their literals (and white space) are one.
    let ssqlid = tracelab_trace::sqlid("select * from t where id = :\"SYS_B_0\"").0;
    assert_eq!(
        out,
        format!(
            "SHAREABLE,DURATION,%,CALLS,MEAN,MIN,MAX\n\
\"{ssqlid} select * from t where id = :\"\"SYS_B_0\"\"\",0.000040,100.0,4,0.000010,0.000005,0.000020\n\
TOTAL (1),0.000040,100.0,4,0.000010,0.000005,0.000020\n"
        )
    );
    // The wall clock of each call's start and end: the first tim after a
    // `***` timestamp is that time (here the first EXEC's end).
    let (out, err, code) = skew(
        &[
            "--group=qq{$time0 $time1}",
            "--sort=1a",
            "--csv",
            "--nohead",
            "--nofoot",
        ],
        &[f],
    );
    assert_eq!(code, 0, "{err}");
    let labels: Vec<&str> = out.lines().map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "2023-08-30T16:05:40.999990 2023-08-30T16:05:41.000000",
            "2023-08-30T16:05:41.499990 2023-08-30T16:05:41.749990",
            "2023-08-30T16:10:00.499995 2023-08-30T16:10:00.500000",
            "2023-08-30T16:10:01.499995 2023-08-30T16:10:02.500000",
        ]
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn gwidth_units_and_the_percent_column() {
    let f = fixture_path("db-ping/cdb1_ora_15440_PINGTEST.trc");
    let (out, err, code) = skew(
        &[
            "--gwidth=12",
            "--pfact=1",
            "--pform=%.4f",
            "--plabel=SHARE",
            "--top=2",
        ],
        std::slice::from_ref(&f),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "\
CALL-NAME      DURATION   SHARE  CALLS      MEAN       MIN       MAX
------------  ---------  ------  -----  --------  --------  --------
PL/SQL lock   10.301060  0.9656      5  2.060212  2.057524  2.062658
SQL*Net mess   0.355877  0.0334     14  0.025420  0.020389  0.027911
9 others       0.011253  0.0011     70  0.000161  0.000000  0.005376
------------  ---------  ------  -----  --------  --------  --------
TOTAL (11)    10.668190  1.0000     89  0.119867  0.000000  2.062658
"
    );
    // An Oracle 8i trace counts centiseconds: --trcunit=0.01.
    let dir = temp("units");
    let t = "Oracle8i Enterprise Edition Release 8.1.7.4.0 - Production\n\
PARSING IN CURSOR #1 len=8 dep=0 uid=7 oct=3 lid=7 tim=1000 hv=1 ad='1'\n\
select 1\n\
END OF STMT\n\
EXEC #1:c=2,e=3,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=4,tim=1003\n\
WAIT #1: nam='db file sequential read' ela= 7 p1=1 p2=2 p3=1\n";
    let old = hand_made(&dir, "old.trc", t);
    let (out, err, code) = skew(
        &[
            "--trcunit=0.01",
            "--csv",
            "--select=$af",
            "--group=qq{$nam $tim $dur}",
        ],
        std::slice::from_ref(&old),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\nEXEC 10.03 0.03,0.020000,22.2,1,"), "{out}");
    assert!(
        out.contains("\ndb file sequential read  0.07,0.070000,77.8,1,"),
        "{out}"
    );
    let (out, _, _) = skew(&["--cpuunit=1e-6", "--trcunit=0.01", "--csv"], &[old]);
    assert!(out.contains("\nEXEC,0.000002,"), "{out}");
    std::fs::remove_dir_all(dir).unwrap();
}

//! The trace utilities (`ls`, `nl`, `tim`, `crop`, `merge`) on the bundled
//! traces. The golden outputs in tests/fixtures/golden/ were checked by
//! hand against the traces' lines (the figures are worked out in the
//! comments); the round trips (crop then skew, split then merge) compare
//! with skew on the whole file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `tracelab ARGS` from the repository's root (so that the file
/// names in outputs are the relative ones of the golden files).
fn run(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run tracelab");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn ok(args: &[&str]) -> String {
    let (out, err, code) = run(args);
    assert_eq!(code, 0, "tracelab {args:?}: {err}");
    out
}

fn golden(name: &str) -> String {
    std::fs::read_to_string(root().join("tests/fixtures/golden").join(name)).unwrap()
}

const DB_PING: &str = "tests/fixtures/db-ping/cdb1_ora_15440_PINGTEST.trc";
const P9850: &str = "tests/fixtures/trace-combine/js122a1_ora_9850.trc";
const P9854: &str = "tests/fixtures/trace-combine/js122a1_ora_9854.trc";
const CRC: &str =
    "tests/fixtures/crc-local-force/orcl_ora_30561_RC-20230830160541-20230703160541.trc.gz";

fn tmp(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).to_string_lossy().into_owned()
}

/// db-ping: the first call is `WAIT … ela= 4 … tim=9578274564137`, anchored
/// by `*** CONTAINER ID:(3) 2022-09-01T17:39:34.556715`: it starts at
/// 17:39:34.556711; the last `tim` is 9578296662449, 22.098316 s after
/// that start. 105 call lines (grep of WAIT/PARSE/EXEC/FETCH/CLOSE/XCTEND),
/// 6 distinct sqlids. js122a1_ora_9854: first WAIT ela= 1 at tim
/// 664028734818 (its anchor 09:57:07.704136), last tim 664034235819:
/// 5.501002 s; 121 calls, 9 sqlids. trcsess's main.trc has no header and no
/// SESSION ID lines (trcsess drops them): dashes.
#[test]
fn ls_lists_the_facts_of_each_file_sorted() {
    let out = ok(&[
        "ls",
        "tests/fixtures/trace-combine",
        DB_PING,
        "--sort",
        "first",
    ]);
    assert_eq!(out, golden("ls-trace-combine-db-ping.txt"));
    let rev = ok(&[
        "ls",
        "tests/fixtures/trace-combine",
        DB_PING,
        "--sort",
        "calls",
        "-r",
    ]);
    let files: Vec<&str> = rev
        .lines()
        .skip(1)
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "tests/fixtures/trace-combine/main.trc",
            P9850,
            P9854,
            DB_PING
        ]
    );
}

#[test]
fn ls_json_has_every_field_and_reads_compressed_files() {
    let out = ok(&["ls", "--json", CRC]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let f = &v[0];
    assert_eq!(f["compression"], "gzip");
    assert_eq!(f["version"], "19.3.0.0.0");
    assert_eq!(f["module"], "perl@poirot.jks.com (TNS V1-V3)");
    assert_eq!(f["client_id"], "");
    assert!(f["calls"].as_u64().unwrap() > 1000, "{f}");
    assert!(
        f["first"].as_str().unwrap().starts_with("2023-08-30T"),
        "{f}"
    );
}

#[test]
fn ls_reports_a_file_it_cannot_read_and_lists_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let bad = tmp(&dir, "notes.txt");
    std::fs::write(&bad, "just some text\nnothing else\n").unwrap();
    let (out, err, code) = run(&["ls", &bad, DB_PING]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("notes.txt") && err.contains("not an Oracle"),
        "{err}"
    );
    assert!(out.contains(DB_PING), "{out}");
    let empty = tmp(&dir, "empty");
    std::fs::create_dir(&empty).unwrap();
    let (_, err, code) = run(&["ls", &empty]);
    assert_eq!(code, 1);
    assert!(err.contains("no trace file"), "{err}");
    let (_, err, code) = run(&["ls", DB_PING, "--sort", "colour"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--sort=colour: expected one of file, size"),
        "{err}"
    );
}

/// Line 27 (`ela= 292 … tim=9578274564719`) ends 582 µs after line 26
/// (`tim=9578274564137`, anchored at 17:39:34.556715): 17:39:34.557297,
/// 0.000582; line 32, PARSE `tim=9578274564773`: 54 µs later; line 55 is
/// the first call after the timestamp `17:39:44.632123` of line 54 and
/// takes that time.
#[test]
fn nl_numbers_lines_with_wall_clock_and_elapsed_time() {
    let out = ok(&["nl", DB_PING]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 356);
    let want = golden("nl-db-ping-24-60.txt");
    assert_eq!(lines[23..60].join("\n") + "\n", want);
    assert!(lines[26].starts_with(
        "     27 2022-09-01T17:39:34.557297     0.000582 WAIT #140174156064264: nam='SQL*Net message from client' ela= 292"
    ));
    // Compressed, the same lines.
    let dir = tempfile::tempdir().unwrap();
    let gz = tmp(&dir, "db-ping.trc.zst");
    let raw = std::fs::read(root().join(DB_PING)).unwrap();
    std::fs::write(&gz, zstd::encode_all(&raw[..], 3).unwrap()).unwrap();
    assert_eq!(ok(&["nl", &gz]), out);
}

#[test]
fn tim_converts_both_ways_through_the_files_timestamps() {
    // The first anchor: 9578274564137 is 17:39:34.556715.
    let out = ok(&[
        "tim",
        "9578274564137",
        "9578274564719",
        "2022-09-01T17:39:34.557297",
        "--file",
        DB_PING,
    ]);
    assert_eq!(
        out,
        "2022-09-01T17:39:34.556715\n2022-09-01T17:39:34.557297\n9578274564719\n"
    );
    // After the timestamp of line 54 the later anchor converts.
    let out = ok(&["tim", "9578284640096", "--file", DB_PING]);
    assert_eq!(out, "2022-09-01T17:39:44.632123\n");
    // 11.2 on Linux: tim is µs since the epoch (UTC), 18:18:44 -07:00.
    assert_eq!(
        ok(&["tim", "1522977524319640"]),
        "2018-04-06T01:18:44.319640\n"
    );
    let (_, err, code) = run(&["tim", "noon", "--file", DB_PING]);
    assert_eq!(code, 2);
    assert!(err.contains("\"noon\": expected a tim"), "{err}");
}

/// The calls ending from 17:39:44.632 to 17:39:44.6335 are lines 55-65
/// (nl above); the lead-in back to the previous call (lines 53-54: a blank
/// line and the timestamp) comes with them; the CLOSE of line 56 is on a
/// cursor parsed at line 29, whose PARSING IN CURSOR block is carried; the
/// cursor of line 55 was parsed before tracing started: nothing to carry.
#[test]
fn crop_by_wall_clock_gives_a_valid_trace_with_the_cursors_it_needs() {
    let out = ok(&[
        "crop",
        DB_PING,
        "--from",
        "2022-09-01T17:39:44.632",
        "--to",
        "2022-09-01T17:39:44.6335",
    ]);
    assert_eq!(out, golden("crop-db-ping-17-39-44.trc"));
}

/// A skew table's words, file names (in the placeholders of statements
/// without text) replaced and dash rules shortened: two tables with the
/// same figures and other file names compare equal.
fn words(table: &str, names: &[&str]) -> Vec<String> {
    let mut t = table.to_string();
    for n in names {
        t = t.replace(n, "F");
    }
    t.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(|w| {
            if w.bytes().all(|b| b == b'-') {
                "-".into()
            } else {
                w.to_string()
            }
        })
        .collect()
}

fn skew(args: &[&str]) -> String {
    let mut a = vec!["skew"];
    a.extend_from_slice(args);
    ok(&a)
}

/// Crop by `tim`, line, wall clock, sqlid, on plain and compressed files:
/// skew on the part equals skew on the whole with the same window as a
/// --where, for the default profile and by statement at every depth.
#[test]
fn crop_then_skew_equals_skew_with_where_on_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[&str], &str)] = &[
        (
            DB_PING,
            &["--from", "9578276000000", "--to", "9578290000000"],
            "$tim >= 9578276 and $tim <= 9578290",
        ),
        (
            P9850,
            &["--from", "tim:664029018588", "--to", "664033000000"],
            "$tim >= 664029.018588 and $tim <= 664033",
        ),
        (
            CRC,
            &[
                "--from",
                "2023-08-30T23:10:00",
                "--to",
                "2023-08-30T23:20:00.5",
            ],
            "",
        ),
        (
            DB_PING,
            &["--sqlid", "9babjv8yq8ru3"],
            "$sqlid eq '9babjv8yq8ru3'",
        ),
    ];
    for (n, (file, opts, window)) in cases.iter().enumerate() {
        let part = tmp(&dir, &format!("part{n}.trc"));
        let mut args = vec!["crop", file, "-o", &part];
        args.extend_from_slice(opts);
        ok(&args);
        let window = if window.is_empty() {
            // The wall-clock window as tims of this file.
            let t = ok(&["tim", opts[1], opts[3], "--file", file]);
            let t: Vec<f64> = t.lines().map(|l| l.parse::<f64>().unwrap() / 1e6).collect();
            format!("$tim >= {:.6} and $tim <= {:.6}", t[0], t[1])
        } else {
            window.to_string()
        };
        let w = format!("--where={window}");
        for extra in [
            &[][..],
            &["--alldepths", "--group=$sqlid", "--top=0", "--csv"][..],
        ] {
            let mut a: Vec<&str> = extra.to_vec();
            a.push(&part);
            let cropped = skew(&a);
            let mut b: Vec<&str> = extra.to_vec();
            b.push(&w);
            b.push(file);
            let whole = skew(&b);
            // Statements without text name their file: the names differ.
            assert_eq!(
                words(&cropped, &[&part]),
                words(&whole, &[file]),
                "case {n} {extra:?}"
            );
            assert!(
                cropped.contains("TOTAL") || extra.contains(&"--csv"),
                "{cropped}"
            );
        }
    }
}

#[test]
fn crop_by_lines_carries_the_statements_and_says_when_nothing_is_kept() {
    // Lines 61-65 of db-ping: PARSE..CLOSE of a cursor parsed at line 58.
    let out = ok(&["crop", DB_PING, "--from", "line:61", "--to", "line:65"]);
    // After the header and the context in force (the timestamp of line
    // 54 the latest), the carried block, then a timestamp for the PARSE:
    // its tim 9578284640403 is 307 µs after the CLOSE anchored at
    // 17:39:44.632123 (tim 9578284640096), which is not in the part.
    let body: Vec<&str> = out.lines().skip(23).collect();
    assert_eq!(body[0], "*** 2022-09-01T17:39:44.632123-07:00 (PDB1(3))");
    assert_eq!(body[1], "=====================");
    assert!(body[2].starts_with("PARSING IN CURSOR #140174153142376 "));
    assert_eq!(body[3], "BEGIN DBMS_OUTPUT.ENABLE(NULL); END;");
    assert_eq!(body[4], "END OF STMT");
    assert_eq!(body[5], "*** 2022-09-01T17:39:44.632430-07:00");
    assert!(body[6].starts_with("PARSE #140174153142376:"));
    assert!(body[10].starts_with("CLOSE #140174153142376:"));
    assert_eq!(body.len(), 11, "{out}");
    // The PARSE keeps its wall clock (nl of the whole file: 17:39:44.632430).
    let dir = tempfile::tempdir().unwrap();
    let part = tmp(&dir, "lines.trc");
    std::fs::write(&part, &out).unwrap();
    let nl = ok(&["nl", &part]);
    assert!(
        nl.lines()
            .any(|l| l.contains("2022-09-01T17:39:44.632430")
                && l.contains("PARSE #140174153142376")),
        "{nl}"
    );
    let (_, err, code) = run(&["crop", DB_PING, "--from", "1", "--to", "2"]);
    assert_eq!(code, 1);
    assert!(err.contains("no line is in the part"), "{err}");
    let (_, err, code) = run(&["crop", DB_PING, "--from", "soon"]);
    assert_eq!(code, 2);
    assert!(err.contains("--from=\"soon\": expected a tim"), "{err}");
    let (_, err, code) = run(&["crop", "no/such.trc", "--to", "1"]);
    assert_eq!(code, 1);
    assert!(err.contains("no/such.trc: cannot open"), "{err}");
    let (_, err, code) = run(&["crop", DB_PING, "--to", "1", "-o", DB_PING]);
    assert_eq!(code, 2);
    assert!(err.contains("is one of the input files"), "{err}");
}

/// A trace cut in two by hand (the second part with the header and
/// context lines, as Oracle starts a new file, and gzip-compressed):
/// merged, it gives the original profile back, its statements' too (the
/// cursors of part two were parsed in part one: one process, one set of
/// cursor numbers).
#[test]
fn merge_of_a_trace_split_in_two_gives_the_original_profile() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join(P9850)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let p1 = tmp(&dir, "p1.trc");
    let p2 = tmp(&dir, "p2.trc.gz");
    std::fs::write(&p1, lines[..2000].join("\n") + "\n").unwrap();
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&p2).unwrap(),
        flate2::Compression::default(),
    );
    let second: Vec<&str> = lines[..24].iter().chain(&lines[2000..]).copied().collect();
    gz.write_all((second.join("\n") + "\n").as_bytes()).unwrap();
    gz.finish().unwrap();
    let merged = tmp(&dir, "merged.trc");
    // Given in the wrong order: time orders them.
    let (_, err, code) = run(&["merge", "--by", "session", &p2, &p1, "-o", &merged]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("session \"504.46635\""), "{err}");
    for args in [
        &[][..],
        &["--alldepths", "--group=$sqlid", "--top=0"][..],
        &["--alldepths", "--group=$line > 0 ? $nam : 1", "--top=0"][..],
    ] {
        let mut a = args.to_vec();
        a.push(&merged);
        let mut b = args.to_vec();
        b.push(P9850);
        let (m, o) = (skew(&a), skew(&b));
        assert_eq!(words(&m, &[&merged]), words(&o, &[P9850]), "{args:?}");
    }
}

/// The two sessions of trace-combine merged by their service give the
/// same calls as both files (and as trcsess's main.trc); the statements of
/// each keep their own cursors.
#[test]
fn merge_of_two_processes_keeps_every_call_and_statement() {
    let dir = tempfile::tempdir().unwrap();
    let merged = tmp(&dir, "m.trc");
    let (_, err, code) = run(&[
        "merge",
        "--by",
        "service",
        "--value",
        "examples.jks.com",
        P9850,
        P9854,
        "-o",
        &merged,
    ]);
    assert_eq!(code, 0, "{err}");
    let all = ["--alldepths", "--group=$sqlid", "--top=0", "--csv"];
    let mut a = all.to_vec();
    a.push(&merged);
    let mut b = all.to_vec();
    b.extend([P9850, P9854]);
    assert_eq!(
        words(&skew(&a), &[&merged]),
        words(&skew(&b), &[P9850, P9854])
    );
    let mut c = vec!["--alldepths"];
    c.push("tests/fixtures/trace-combine/main.trc");
    assert_eq!(skew(&["--alldepths", &merged]), skew(&c));
    // Time order: every tim at least the one two timed lines before it
    // in the same process is not asked; the merged tims never go back by
    // more than one call's span across processes.
    let out = std::fs::read_to_string(&merged).unwrap();
    assert!(
        out.contains("*** [ Unix process pid: 9854 ]"),
        "process markers"
    );
    assert!(out.starts_with(
        "Trace file /u01/app/oracledb/diag/rdbms/js122a/js122a1/trace/js122a1_ora_9850.trc\n"
    ));
}

/// Two processes that use the same cursor numbers for different
/// statements: the second's are renumbered, so that each call keeps its
/// own statement (without it, the second file's PARSING IN CURSOR rebinds
/// the first's cursors and the first's later calls take its statements).
#[test]
fn merge_renumbers_cursors_that_collide_between_processes() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join(DB_PING)).unwrap();
    // Another process of the same session, 1 µs later, other statements.
    let mut other = String::new();
    for l in text.lines() {
        let l = l.replace("Unix process pid: 15440", "Unix process pid: 15441");
        let l = match l.find("sqlid='") {
            Some(i) => format!("{}sqlid='X{}", &l[..i], &l[i + 7..]),
            None => l,
        };
        let l = match l.rfind("tim=") {
            Some(i) if !l.starts_with("***") => {
                let n = l[i + 4..].bytes().take_while(u8::is_ascii_digit).count();
                let t: i64 = l[i + 4..i + 4 + n].parse().unwrap();
                format!("{}tim={}{}", &l[..i], t + 1, &l[i + 4 + n..])
            }
            _ => l,
        };
        other.push_str(&l);
        other.push('\n');
    }
    let b = tmp(&dir, "b.trc");
    std::fs::write(&b, other).unwrap();
    let merged = tmp(&dir, "m.trc");
    let (_, err, code) = run(&["merge", "--by", "session", DB_PING, &b, "-o", &merged]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("renumbered"), "{err}");
    let all = ["--alldepths", "--group=$sqlid", "--top=0"];
    let mut x = all.to_vec();
    x.push(&merged);
    let mut y = all.to_vec();
    y.extend([DB_PING, b.as_str()]);
    // The statements with text (the placeholders of those without name
    // the cursor, which a renumbered cursor changes).
    let texts = |t: String| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("TOTAL"))
            .flat_map(|l| words(l, &[]))
            .collect()
    };
    let (m, w) = (texts(skew(&x)), texts(skew(&y)));
    assert!(m.iter().any(|w| w == "X9babjv8yq8ru3"), "{m:?}");
    assert_eq!(m, w);
    // Every call is in: the same total.
    let total = |t: String| {
        t.lines()
            .last()
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .to_string()
    };
    assert_eq!(total(skew(&x)), total(skew(&y)));
}

#[test]
fn merge_says_what_is_wrong() {
    let (_, err, code) = run(&["merge", "--by", "colour", DB_PING]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--by=colour: expected session, client_id"),
        "{err}"
    );
    let (_, err, code) = run(&["merge", "--by", "client_id", "--value", "nobody", DB_PING]);
    assert_eq!(code, 1);
    assert!(err.contains("0 lines of 0 files"), "{err}");
}

/// A trace holding two sessions one after the other (as a shared server
/// writes them): `--session` keeps one, whose profile is its own file's.
#[test]
fn crop_by_session_keeps_one_session_of_a_shared_trace() {
    let dir = tempfile::tempdir().unwrap();
    let shared = tmp(&dir, "shared.trc");
    let mut text = std::fs::read_to_string(root().join(DB_PING)).unwrap();
    text.push_str(&std::fs::read_to_string(root().join(P9854)).unwrap());
    std::fs::write(&shared, text).unwrap();
    let part = tmp(&dir, "one.trc");
    ok(&["crop", &shared, "--session", "450.21030", "-o", &part]);
    let all = ["--alldepths", "--group=$sqlid", "--top=0"];
    let mut a = all.to_vec();
    a.push(&part);
    let mut b = all.to_vec();
    b.push(P9854);
    assert_eq!(words(&skew(&a), &[&part]), words(&skew(&b), &[P9854]));
    let mut c = all.to_vec();
    c.push(&shared);
    assert_ne!(words(&skew(&c), &[&shared]), words(&skew(&b), &[P9854]));
}

//! `tracelab prof` as a DBA runs it: on the real traces of
//! tests/fixtures (figures checked against what mrskew and trctools
//! published for them, and against `tracelab skew`), on tracelab's own
//! traces, and on bad input.

mod common;

use std::path::{Path, PathBuf};

use common::tracelab;
use serde_json::Value;

fn fixture(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(p)
        .to_string_lossy()
        .into_owned()
}

const DB_PING: &str = "db-ping/cdb1_ora_15440_PINGTEST.trc";
const CRC_30561: &str = "crc-local-force/orcl_ora_30561_RC-20230830160541-20230703160541.trc.gz";

fn json(args: &[&str]) -> Value {
    let mut all = vec!["prof", "--json"];
    all.extend_from_slice(args);
    let (out, err, code) = tracelab(&all);
    assert!(code == 0 || code == 1, "exit {code}: {err}");
    serde_json::from_str(&out).expect("JSON")
}

/// (duration, calls) of a row of a mrskew-style table.
fn row(table: &str, label: &str) -> Option<(String, String)> {
    table.lines().find_map(|l| {
        let rest = l.strip_prefix(label)?;
        if !rest.starts_with("  ") {
            return None;
        }
        let cells: Vec<&str> = rest.split_whitespace().collect();
        Some((cells[0].to_string(), cells[2].to_string()))
    })
}

#[test]
fn the_profile_holds_mrskews_rows_and_adds_up_to_skews_unaccounted_total() {
    let (out, err, code) = tracelab(&["prof", &fixture(DB_PING)]);
    assert_eq!(code, 0, "{err}");
    // Every row mrskew published for this file, with its duration and calls.
    let golden = std::fs::read_to_string(fixture("golden/db-ping-default.txt")).unwrap();
    let mut rows = 0;
    for l in golden.lines().skip(2) {
        if l.starts_with('-') || l.starts_with("TOTAL") {
            continue;
        }
        let label = l.split("  ").next().unwrap();
        let want = row(l, label).unwrap();
        // mrskew names a call's CPU by the call; prof as the Method R
        // Profiler does.
        let ours = match label {
            "PARSE" | "EXEC" | "FETCH" | "CLOSE" | "XCTEND" => format!("CPU: {label} calls"),
            _ => label.to_string(),
        };
        assert_eq!(row(&out, &ours), Some(want), "row {label}:\n{out}");
        rows += 1;
    }
    assert_eq!(rows, 11);
    // With the time mrskew leaves out, the total is skew --unaccounted's.
    let (skew, _, _) = tracelab(&["skew", "--unaccounted", &fixture(DB_PING)]);
    let total = |t: &str| {
        t.lines().find(|l| l.starts_with("TOTAL (")).map(|l| {
            l.split_whitespace()
                .skip(2)
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    assert_eq!(total(&out), total(&skew));
    assert_eq!(total(&out).as_deref(), Some("22.098316 100.0%"));
    assert!(out.contains("Response time R = 22.098316 s"), "{out}");
}

#[test]
fn think_time_is_the_long_sql_net_message_from_client() {
    // mrskew published 19 such waits of 60 s (under 65 s) totalling
    // 1,140.029350 s for this file; it has one more of 200.949926 s.
    let v = json(&[&fixture(CRC_30561)]);
    let p = &v[0]["profile"];
    let think = p
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "think time (SQL*Net message from client >= 1 s)")
        .unwrap();
    assert_eq!(think["calls"], 20);
    assert_eq!(think["max_us"], 200_949_926);
    assert_eq!(think["duration_us"], 1_140_029_350i64 + 200_949_926);
    // A lower threshold moves more waits into think time.
    let v = json(&["--thinktime", "0.01", &fixture(CRC_30561)]);
    let think = v[0]["profile"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "think time (SQL*Net message from client >= 0.01 s)")
        .unwrap();
    assert!(think["calls"].as_u64().unwrap() > 20);
}

/// Σ over every statement and call kind of a field, and of the waits.
fn sums(p: &Value) -> (i64, i64, i64, u64, u64) {
    let (mut c, mut e, mut fetches) = (0, 0, 0);
    for s in p["statements"].as_array().unwrap() {
        for k in ["parse", "execute", "fetch", "other"] {
            c += s["with_recursive"][k]["cpu_us"].as_i64().unwrap();
            e += s["with_recursive"][k]["elapsed_us"].as_i64().unwrap();
        }
        fetches += s["with_recursive"]["fetch"]["count"].as_u64().unwrap();
    }
    let (mut ela, mut waits) = (0, 0);
    for t in ["non_recursive", "recursive"] {
        for w in p[t]["waits"].as_array().unwrap() {
            ela += w["total_us"].as_i64().unwrap();
            waits += w["times"].as_u64().unwrap();
        }
    }
    (c, e, ela, waits, fetches)
}

#[test]
fn trctools_published_sums() {
    // Values from trctools' own unit tests (MANIFEST.md).
    let v = json(&[&fixture("trctools/simple_trace.trc")]);
    assert_eq!(sums(&v[0]), (553, 598, 755, 5, 2));
    let s = &v[0]["statements"];
    assert!(s
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["sqlid"] == "atxg62s17nkj4"));
    let v = json(&[&fixture("trctools/simple_trace_2x.trc")]);
    assert_eq!(sums(&v[0]), (1105, 1744, 1966, 12, 4));
    // Tracing began after the first PARSING IN CURSOR: the CPU of the
    // statement is still 552 µs.
    let v = json(&[&fixture("trctools/simple_trace_missing_parse.trc")]);
    let cpu: i64 = v[0]["statements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["sqlid"] == "atxg62s17nkj4")
        .map(|s| {
            ["parse", "execute", "fetch", "other"]
                .iter()
                .map(|k| s["with_recursive"][k]["cpu_us"].as_i64().unwrap())
                .sum::<i64>()
        })
        .sum();
    assert_eq!(cpu, 552);
    // One cursor number, three statements, 14 FETCHes.
    let v = json(&[&fixture("trctools/two_statements_one_cursor.trc")]);
    let ids: Vec<&str> = v[0]["statements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sqlid"].as_str().unwrap())
        .collect();
    for id in ["cdgn9f8spbxnt", "atxg62s17nkj4", "6ssxu7vjxb51a"] {
        assert!(ids.contains(&id), "{ids:?}");
    }
    assert_eq!(sums(&v[0]).4, 14);
    // The same trace plain and xz-compressed: the same profile.
    let plain = json(&[&fixture("trctools/lobread.trc")]);
    let xz = json(&[&fixture("trctools/lobread.trc.xz")]);
    assert_eq!(plain[0]["profile"], xz[0]["profile"]);
    assert_eq!(plain[0]["statements"], xz[0]["statements"]);
}

#[test]
fn tkprof_layout_and_the_recursive_hierarchy() {
    let (out, err, code) = tracelab(&["prof", &fixture("trace-combine/main.trc")]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "RESOURCE PROFILE\n",
        "STATEMENTS BY SHARE OF R",
        "RECURSIVE STATEMENTS UNDER THEIR PARENTS\n",
        "call     count       cpu    elapsed       disk      query    current        rows\n",
        "------- ------  -------- ---------- ---------- ---------- ----------  ----------\n",
        "Rows (1st) Rows (avg) Rows (max)  Row Source Operation\n",
        "Parsing user id: SYS   (recursive depth: 2)\n",
        "OVERALL TOTALS FOR ALL NON-RECURSIVE STATEMENTS\n",
        "OVERALL TOTALS FOR ALL RECURSIVE STATEMENTS\n",
        "With recursive statements (gross",
        "STATEMENTS BY ELAPSED WITH THEIR RECURSIVE STATEMENTS (TVD$XTAT's ranking",
        "a trcsess merge of 11 process blocks",
        "  lines in trace file.\n",
    ] {
        assert!(out.contains(want), "missing {want:?}");
    }
    // --tkprof: tkprof's layout alone, statements in the order they first
    // appear.
    let (tk, _, _) = tracelab(&["prof", "--tkprof", &fixture("trace-combine/main.trc")]);
    assert!(!tk.contains("RESOURCE PROFILE") && !tk.contains("tracelab: rank"));
    let first = tk.find("SQL ID: ").unwrap();
    assert!(
        tk[first..].starts_with("SQL ID: 50vxqdkj4zu1w"),
        "{}",
        &tk[first..first + 40]
    );
    // The PL/SQL block's EXEC less its recursive statements: the JSON
    // tables differ by exactly what the children claimed.
    let v = json(&[&fixture("trace-combine/main.trc")]);
    let top = &v[0]["statements"][0];
    assert_eq!(top["sqlid"], "9x825n14bw9r9");
    let with = top["with_recursive"]["execute"]["elapsed_us"]
        .as_i64()
        .unwrap();
    let without = top["without_recursive"]["execute"]["elapsed_us"]
        .as_i64()
        .unwrap();
    let kids: i64 = top["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["elapsed_us"].as_i64().unwrap())
        .sum();
    assert!(kids > 0 && without < with);
    let parse_kids = with - without;
    assert!(parse_kids <= kids, "{parse_kids} > {kids}");
}

#[test]
fn the_html_page_is_self_contained_with_charts_and_links() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("p.html");
    let (_, err, code) = tracelab(&[
        "prof",
        "--html",
        page.to_str().unwrap(),
        &fixture(DB_PING),
        &fixture("trace-combine/main.trc"),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        !html.contains("<script") && !html.contains("src=\"http") && !html.contains("href=\"http")
    );
    assert!(html.contains("aria-label=\"resource profile\""));
    assert!(html.contains("aria-label=\"timeline\""));
    assert!(html.contains("by elapsed time (p10 buckets)</figcaption>"));
    // Profile rows link to statements, and every link has its target.
    assert!(html.contains("PL/SQL lock timer</td>"));
    let mut links = 0;
    for part in html.split("href=\"#").skip(1) {
        let id = &part[..part.find('"').unwrap()];
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "no target for #{id}"
        );
        links += 1;
    }
    assert!(links > 10);
    assert!(
        html.contains("id=\"f1-s1\""),
        "the second trace has its own anchors"
    );
}

#[test]
fn tracelabs_own_sqlite_trace_says_which_columns_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("t");
    let (_, err, code) = tracelab(&[
        "run",
        "--engine",
        "sqlite",
        "--sql",
        "select 1",
        "--transactions",
        "20",
        "--trace",
        traces.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let trace: PathBuf = traces.join("tracelab_run_0.trc");
    let (out, err, code) = tracelab(&["prof", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("tracelab client-side trace of sqlite"),
        "{out}"
    );
    assert!(
        out.contains("Misses in library cache during parse: n/a (sqlite has no such figure)"),
        "{out}"
    );
    // The disk, query and current cells say n/a rather than 0.
    let exec = out
        .lines()
        .find(|l| l.starts_with("Execute "))
        .expect("an Execute row");
    assert_eq!(
        exec.split_whitespace().filter(|c| *c == "n/a").count(),
        3,
        "{exec}"
    );
    let v = json(&[trace.to_str().unwrap()]);
    assert_eq!(v[0]["engine"]["kind"], "tracelab");
    assert_eq!(v[0]["engine"]["engine"], "sqlite");
    let execs = v[0]["statements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["executions"]["count"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(execs, 20);
}

#[test]
fn bad_input_is_named_and_the_rest_still_reported() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello\nworld\n").unwrap();
    let missing = dir.path().join("missing.trc");
    let (out, err, code) = tracelab(&[
        "prof",
        missing.to_str().unwrap(),
        junk.to_str().unwrap(),
        &fixture(DB_PING),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("missing.trc"), "{err}");
    assert!(
        err.contains("junk.txt") && err.contains("not an Oracle extended SQL trace"),
        "{err}"
    );
    assert!(out.contains("Response time R = 22.098316 s"));
    // A damaged trace: warnings with file and line, the report written.
    let (out, err, code) = tracelab(&["prof", &fixture("trctools/malformed_stat.trc")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("malformed_stat.trc"), "{err}");
    assert!(out.contains("OVERALL TOTALS"));
    let (_, err, code) = tracelab(&["prof"]);
    assert_eq!(code, 2, "{err}");
    let (_, err, code) = tracelab(&["prof", "--thinktime", "-1", &fixture(DB_PING)]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn traces_before_11g_keep_statements_apart_by_hash_value() {
    // 9.2: no sqlid=, cursor numbers reused by every statement, DDL with
    // hv=0. Expected: one statement per (hash value or DDL text, depth) of
    // the PARSING IN CURSOR lines, counted here from the raw lines.
    let path = fixture("oracle-samples/dokt_ora_26478.trc");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut want = std::collections::BTreeSet::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if let Some(rest) = l.strip_prefix("PARSING IN CURSOR ") {
            let field = |k: &str| {
                rest.split(' ')
                    .find_map(|w| w.strip_prefix(k))
                    .unwrap_or("")
                    .to_string()
            };
            let hv = field("hv=");
            let key = if hv == "0" {
                lines.next().unwrap_or("").to_string()
            } else {
                hv
            };
            want.insert((key, field("dep=")));
        }
    }
    // (Every statement: the report folds those past the first 100.)
    let v = json(&["--top", "0", &path]);
    let got: Vec<&Value> = v[0]["statements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["placeholder"] == false)
        .collect();
    assert!(want.len() > 20, "{}", want.len());
    assert_eq!(got.len(), want.len());
    assert!(got
        .iter()
        .any(|s| s["sqlid"].as_str().unwrap().starts_with("hv=0/")));
}

#[test]
fn the_ranks_shown_run_without_gaps() {
    // db-ping has a cursor seen only in WAIT lines (#140174153974880):
    // no call, so not shown; it used to hold rank 14 between 13 and 15.
    let (out, err, code) = tracelab(&["prof", &fixture(DB_PING)]);
    assert_eq!(code, 0, "{err}");
    let table = out
        .split("STATEMENTS BY SHARE OF R")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    let ranks: Vec<usize> = table
        .lines()
        .filter_map(|l| l.strip_prefix('#')?.split(' ').next()?.parse().ok())
        .collect();
    assert!(ranks.len() >= 14, "{table}");
    assert_eq!(ranks, (1..=ranks.len()).collect::<Vec<_>>(), "{table}");
    let p = json(&[&fixture(DB_PING)]);
    let last = p[0]["statements"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["sqlid"].as_str().unwrap().split(':').next(),
        Some("#140174153974880")
    );
}

#[test]
fn with_html_the_text_goes_only_where_output_says() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("p.html");
    let page = page.to_str().unwrap();
    let (out, err, code) = tracelab(&["prof", "--html", page, &fixture(DB_PING)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "text on stdout with --html: {out:.200}");
    assert!(std::fs::read_to_string(page)
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
    let (out, err, code) = tracelab(&["prof", "--html", page, "--output", "-", &fixture(DB_PING)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Response time R = 22.098316 s"), "{out:.300}");
    let txt = dir.path().join("p.txt");
    let (out, err, code) = tracelab(&[
        "prof",
        "--html",
        page,
        "--output",
        txt.to_str().unwrap(),
        &fixture(DB_PING),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty());
    assert!(std::fs::read_to_string(&txt)
        .unwrap()
        .contains("Response time R = 22.098316 s"));
}

#[test]
fn several_files_give_their_combined_profile_first() {
    let files: Vec<String> = (0..4)
        .map(|i| {
            fixture(&format!(
                "crc-local-force/orcl_ora_{}_RC-20230830160541-20230703160541.trc.gz",
                30537 + 2 * i
            ))
        })
        .collect();
    let args = |extra: &[&str]| {
        let mut a = vec!["prof"];
        a.extend_from_slice(extra);
        a.extend(files.iter().map(String::as_str));
        let (out, err, code) = tracelab(&a);
        assert_eq!(code, 0, "{err}");
        out
    };
    let j = json(&files.iter().map(String::as_str).collect::<Vec<_>>());
    let r: i64 = j
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["response_time_us"].as_i64().unwrap())
        .sum();
    let secs = format!("{}.{:06}", r / 1_000_000, r % 1_000_000);
    let short = args(&[]);
    assert!(
        short.starts_with("tracelab prof: combined profile of 4 trace files"),
        "{short:.300}"
    );
    let first = short.find("Response time R = ").unwrap();
    assert!(
        short[first..]
            .replace(',', "")
            .starts_with(&format!("Response time R = {secs} s")),
        "combined R is not the sum {secs}: {:.80}",
        &short[first..]
    );
    assert!(short.contains("RESOURCE PROFILE (all files)"));
    // Then each file, by default its resource profile only.
    for f in &files {
        assert!(short.contains(&format!("tracelab prof: {f}\n")), "{f}");
    }
    assert!(!short.contains("OVERALL TOTALS"));
    let full = args(&["--each", "full"]);
    assert!(full.starts_with("tracelab prof: combined profile of 4 trace files"));
    assert!(full.matches("OVERALL TOTALS").count() >= 4);
    for f in &files {
        assert!(full.contains(&format!("tracelab prof: {f}\n")), "{f}");
    }
    assert!(full.lines().count() > 2 * short.lines().count());
    let none = args(&["--each", "none"]);
    assert!(!none.contains(&format!("tracelab prof: {}\n", files[0])));
    assert!(none.contains("FILES"));
}

/// The text of a fixture, decompressed.
fn fixture_text(p: &str) -> String {
    use std::io::Read as _;
    let raw = std::fs::read(fixture(p)).unwrap();
    if p.ends_with(".gz") {
        let mut s = String::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_string(&mut s)
            .unwrap();
        s
    } else {
        String::from_utf8_lossy(&raw).into_owned()
    }
}

/// Σ c of the database calls at the top depth, read from the trace's lines
/// directly (not through tracelab's reader): `NAME #cursor:c=..,...,dep=..`.
fn top_depth_cpu(text: &str) -> i64 {
    let mut calls: Vec<(i64, i64)> = Vec::new();
    for l in text.lines() {
        let Some((head, fields)) = l.split_once(':') else {
            continue;
        };
        let name = head.split(" #").next().unwrap();
        if name.is_empty()
            || head == name
            || name == "WAIT"
            || !name.chars().all(|c| c.is_ascii_uppercase() || c == ' ')
            || !fields.starts_with("c=")
        {
            continue;
        }
        let field = |k: &str| {
            fields
                .split(',')
                .find_map(|f| f.strip_prefix(k)?.parse::<i64>().ok())
        };
        calls.push((field("c=").unwrap(), field("dep=").unwrap_or(0)));
    }
    let top = calls.iter().map(|c| c.1).min().unwrap_or(0);
    calls.iter().filter(|c| c.1 == top).map(|c| c.0).sum()
}

#[test]
fn the_cpu_rows_add_up_to_the_top_depth_calls_cpu_on_the_bundled_traces() {
    for f in [
        DB_PING,
        CRC_30561,
        "oracle-samples/dokt_ora_26478.trc",
        "analytics-vs-groupby/oravm1_ora_26226_S1.trc",
        "trctools/simple_trace.trc",
        "trctools/simple_trace_2x.trc",
        "trctools/two_statements_one_cursor.trc",
        "trctools/mixed_execs.trc",
    ] {
        let want = top_depth_cpu(&fixture_text(f));
        assert!(want > 0, "{f}");
        let v = json(&[&fixture(f)]);
        assert_eq!(v[0]["cpu_us"].as_i64(), Some(want), "{f}");
        let rows: i64 = v[0]["profile"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c.get("call").is_some())
            .inspect(|c| {
                let name = c["name"].as_str().unwrap();
                let call = c["call"].as_str().unwrap();
                assert_eq!(name, format!("CPU: {call} calls"), "{f}");
            })
            .map(|c| c["duration_us"].as_i64().unwrap())
            .sum();
        assert_eq!(rows, want, "{f}");
        let (out, err, code) = tracelab(&["prof", &fixture(f)]);
        assert!(code == 0 || code == 1, "{err}");
        let secs = format!(
            "CPU total: {}.{:06} s (",
            want / 1_000_000,
            want % 1_000_000
        );
        assert!(out.contains(&secs), "{f}: {secs}\n{out}");
    }
}

/// A statement whose PARSE, EXEC and FETCH each run recursive calls (dep=1,
/// written before the call that ran them, their figures included in its).
const RECURSIVE: &str = "\
Trace file /tmp/recursive.trc
Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production
Version 19.12.0.0.0

*** 2024-01-01T00:00:00.000000+00:00
*** SESSION ID:(12.34) 2024-01-01T00:00:00.000000+00:00
=====================
PARSING IN CURSOR #2 len=26 dep=1 uid=0 oct=3 lid=0 tim=1001000 hv=1 ad='1' sqlid='child0000000a'
select a from dict where b
END OF STMT
PARSE #2:c=500,e=1000,p=0,cr=0,cu=0,mis=1,r=0,dep=1,og=4,plh=11,tim=1001000
EXEC #2:c=500,e=3000,p=2,cr=5,cu=0,mis=0,r=0,dep=1,og=4,plh=11,tim=1004000
FETCH #2:c=1000,e=5000,p=3,cr=15,cu=0,mis=0,r=1,dep=1,og=4,plh=11,tim=1009000
=====================
PARSING IN CURSOR #1 len=21 dep=0 uid=108 oct=2 lid=108 tim=1009100 hv=2 ad='2' sqlid='parent000000b'
insert into t values 1
END OF STMT
PARSE #1:c=2000,e=9000,p=5,cr=20,cu=0,mis=1,r=0,dep=0,og=1,plh=22,tim=1009100
=====================
PARSING IN CURSOR #3 len=21 dep=1 uid=0 oct=6 lid=0 tim=1020000 hv=3 ad='3' sqlid='child0000000c'
update seq set n = n+1
END OF STMT
EXEC #3:c=10000,e=20000,p=4,cr=40,cu=3,mis=0,r=1,dep=1,og=4,plh=33,tim=1030000
EXEC #1:c=30000,e=50000,p=10,cr=100,cu=4,mis=0,r=1,dep=0,og=1,plh=22,tim=1060000
EXEC #2:c=400,e=4000,p=1,cr=4,cu=0,mis=0,r=0,dep=1,og=4,plh=11,tim=1070000
FETCH #2:c=600,e=8000,p=1,cr=6,cu=0,mis=0,r=1,dep=1,og=4,plh=11,tim=1078000
FETCH #1:c=5000,e=25000,p=3,cr=30,cu=0,mis=0,r=10,dep=0,og=1,plh=22,tim=1085000
CLOSE #1:c=0,e=10,dep=0,type=0,tim=1085100
CLOSE #2:c=0,e=5,dep=1,type=3,tim=1085200
";

/// The call table of statement `sqlid` in a `--tkprof` report.
fn call_rows(out: &str, sqlid: &str) -> Vec<String> {
    let at = out
        .find(&format!("SQL ID: {sqlid} "))
        .unwrap_or_else(|| panic!("{sqlid}:\n{out}"));
    out[at..]
        .lines()
        .filter(|l| {
            ["Parse ", "Execute ", "Fetch ", "total "]
                .iter()
                .any(|k| l.starts_with(k))
        })
        .take(4)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn tkprof_prints_calls_net_of_the_recursive_calls_inside_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recursive.trc");
    std::fs::write(&path, RECURSIVE).unwrap();
    let file = path.to_string_lossy().into_owned();
    let (out, err, code) = tracelab(&["prof", "--tkprof", &file]);
    assert_eq!(code, 0, "{err}");
    // PARSE: the child's 500+500+1000 µs CPU, 1000+3000+5000 µs, 5 reads
    // and 20 gets are all the recursive calls': 0 left, as tkprof prints.
    // EXEC: less the update's c=10000,e=20000,p=4,cr=40,cu=3. FETCH: less
    // the child's EXEC and FETCH (c=1000,e=12000,p=2,cr=10).
    assert_eq!(
        call_rows(&out, "parent000000b"),
        [
            "Parse 1 0.00 0.00 0 0 0 0",
            "Execute 1 0.02 0.03 6 60 1 1",
            "Fetch 1 0.00 0.01 1 20 0 10",
            "total 3 0.02 0.04 7 80 1 11",
        ],
        "{out}"
    );
    // The recursive statements keep their own figures.
    assert_eq!(
        call_rows(&out, "child0000000c")[1],
        "Execute 1 0.01 0.02 4 40 3 1"
    );
    assert_eq!(
        call_rows(&out, "child0000000a")[3],
        "total 5 0.00 0.02 7 30 0 2"
    );
    // tkprof's totals add the listings up: nothing counted twice.
    let overall = |out: &str, title: &str| -> String {
        let at = out.find(title).unwrap();
        out[at..]
            .lines()
            .find(|l| l.starts_with("total "))
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        overall(&out, "OVERALL TOTALS FOR ALL NON-RECURSIVE STATEMENTS"),
        "total 3 0.02 0.04 7 80 1 11"
    );
    assert_eq!(
        overall(&out, "OVERALL TOTALS FOR ALL RECURSIVE STATEMENTS"),
        "total 6 0.01 0.04 11 70 3 3"
    );
    // --gross: as the trace lines give them.
    let (gross, err, code) = tracelab(&["prof", "--tkprof", "--gross", &file]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        call_rows(&gross, "parent000000b"),
        [
            "Parse 1 0.00 0.00 5 20 0 0",
            "Execute 1 0.03 0.05 10 100 4 1",
            "Fetch 1 0.00 0.02 3 30 0 10",
            "total 3 0.03 0.08 18 150 4 11",
        ],
        "{gross}"
    );
    // The full report: tkprof's net table, the gross one beside it.
    let (full, err, code) = tracelab(&["prof", &file]);
    assert_eq!(code, 0, "{err}");
    let rows = call_rows(&full, "parent000000b");
    assert_eq!(rows[0], "Parse 1 0.00 0.00 0 0 0 0", "{full}");
    let at = full.find("With recursive statements (gross").unwrap();
    let gross_rows: Vec<String> = full[at..]
        .lines()
        .skip(4)
        .take(2)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        gross_rows,
        [
            "Parse 1 0.00 0.00 5 20 0 0",
            "Execute 1 0.03 0.05 10 100 4 1"
        ],
        "{full}"
    );
    // JSON keeps both.
    let v = json(&[&file]);
    let parent = v[0]["statements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sqlid"] == "parent000000b")
        .unwrap()
        .clone();
    assert_eq!(parent["with_recursive"]["parse"]["disk"], 5);
    assert_eq!(parent["without_recursive"]["parse"]["disk"], 0);
    assert_eq!(v[0]["non_recursive"]["with_recursive"]["fetch"]["disk"], 3);
    assert_eq!(v[0]["non_recursive"]["calls"]["fetch"]["disk"], 1);
}

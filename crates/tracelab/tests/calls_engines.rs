//! `tracelab calls` read by the engines it is for: the bundled traces are
//! exported, DuckDB and PySpark (local mode) group the export, and their
//! sums, counts, minima and maxima of `af` per group must equal those of
//! `tracelab skew --json` with the same filters, to the microsecond.
//!
//! The engines are Python packages that scripts/test.sh installs; a
//! missing one fails these tests with the install command.

mod common;
use common::tracelab;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every bundled trace: plain, gzip and xz; Oracle 10g to 19c; damaged
/// ones too (both commands read them alike).
fn all_traces() -> Vec<String> {
    let mut v = Vec::new();
    for dir in [
        "crc-local-force",
        "db-ping",
        "trace-combine",
        "analytics-vs-groupby",
        "oracle-samples",
        "trctools",
    ] {
        let mut names: Vec<PathBuf> = std::fs::read_dir(fixtures().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let n = p.to_string_lossy();
                (n.ends_with(".trc") || n.ends_with(".trc.gz") || n.ends_with(".trc.xz"))
                    && !n.contains("original_")
            })
            .collect();
        names.sort();
        v.extend(names.into_iter().map(|p| p.to_string_lossy().into_owned()));
    }
    v
}

fn crc_traces() -> Vec<String> {
    all_traces()
        .into_iter()
        .filter(|f| f.contains("crc-local-force"))
        .collect()
}

/// The exports every case reads, made once per test run.
struct Exports {
    _dir: tempfile::TempDir,
    /// Default filter, directory layout.
    default: String,
    /// `--alldepths`, directory layout.
    alldepths: String,
    /// crc traces with `--where '$dur < 1'`, one Parquet file.
    dur_lt_1: String,
    /// crc traces as CSV and JSON lines.
    csv: String,
    jsonl: String,
}

fn export(args: &[&str], files: &[String]) {
    let mut a: Vec<&str> = vec!["calls"];
    a.extend(args);
    a.extend(files.iter().map(String::as_str));
    let (_, err, code) = tracelab(&a);
    assert!(
        code == 0 || code == 1,
        "tracelab {a:?} failed ({code}): {err}"
    );
}

fn exports() -> &'static Exports {
    static E: OnceLock<Exports> = OnceLock::new();
    E.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
        let e = Exports {
            default: p("default"),
            alldepths: p("alldepths"),
            dur_lt_1: p("dur.parquet"),
            csv: p("crc.csv"),
            jsonl: p("crc.jsonl"),
            _dir: dir,
        };
        export(&["--output", &e.default], &all_traces());
        export(&["--alldepths", "--output", &e.alldepths], &all_traces());
        export(
            &["--where", "$dur < 1", "--output", &e.dur_lt_1],
            &crc_traces(),
        );
        export(&["--output", &e.csv], &crc_traces());
        export(&["--output", &e.jsonl], &crc_traces());
        e
    })
}

/// One question asked of skew and of an engine.
struct Case {
    id: &'static str,
    /// The export read, its layout and format.
    calls: String,
    layout: &'static str,
    format: &'static str,
    /// SQL over the export, per engine.
    where_sql: &'static str,
    group_duckdb: &'static str,
    group_spark: &'static str,
    /// `tracelab skew` options and files giving the same profile.
    skew: Vec<String>,
    files: Vec<String>,
}

/// (sum, calls, min, max) of af per group, in µs.
type Profile = BTreeMap<String, (i64, i64, i64, i64)>;

fn us(v: &Value) -> i64 {
    (v.as_f64().unwrap() * 1e6).round() as i64
}

/// skew's groups; a histogram's labels (" 1.     0.000000 ...") become
/// their bucket number.
fn skew_profile(c: &Case) -> Profile {
    let mut args: Vec<String> = vec!["skew".into(), "--json".into(), "--top=0".into()];
    args.extend(c.skew.iter().cloned());
    args.extend(c.files.iter().cloned());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, err, code) = tracelab(&a);
    assert!(code == 0 || code == 1, "skew {a:?}: {err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let mut p = Profile::new();
    for r in j["rows"].as_array().unwrap() {
        if r.get("calls").is_none_or(|n| n.as_i64() == Some(0)) {
            continue;
        }
        let mut label = r["label"].as_str().unwrap().to_string();
        if c.id == "p10" {
            label = label.trim().split('.').next().unwrap().to_string();
        }
        let stats = (
            us(&r["duration"]),
            r["calls"].as_i64().unwrap(),
            us(&r["min"]),
            us(&r["max"]),
        );
        assert!(p.insert(label.clone(), stats).is_none(), "{label} twice");
    }
    assert!(j["others"].is_null(), "--top=0 folds nothing");
    p
}

fn engine_profiles(engine: &str, cases: &[Case]) -> BTreeMap<String, Profile> {
    let spec: Vec<Value> = cases
        .iter()
        .map(|c| {
            json!({"id": c.id, "calls": c.calls, "layout": c.layout, "format": c.format,
                   "where": c.where_sql,
                   "group": {"duckdb": c.group_duckdb, "spark": c.group_spark}})
        })
        .collect();
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), serde_json::to_vec(&spec).unwrap()).unwrap();
    if let Ok(keep) = std::env::var("TRACELAB_KEEP_CASES") {
        std::fs::copy(f.path(), keep).unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/engines/group_export.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(engine)
        .arg(f.path())
        .output()
        .expect("python3 runs (scripts/test.sh installs what the tests need)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{engine} over the export failed: {err}\n(install the engines with: pip install duckdb pyspark, as scripts/test.sh does)"
    );
    let j: BTreeMap<String, Vec<Vec<Value>>> = serde_json::from_slice(&out.stdout).unwrap();
    j.into_iter()
        .map(|(id, rows)| {
            let mut p = Profile::new();
            for r in rows {
                let g = r[0].as_str().unwrap_or("").to_string();
                let n = |i: usize| r[i].as_i64().unwrap();
                let stats = (n(1), n(2), n(3), n(4));
                assert!(
                    p.insert(g.clone(), stats).is_none(),
                    "{engine}, {id}: '{g}' twice"
                );
            }
            (id, p)
        })
        .collect()
}

/// p10.rc's buckets as mrskew computes them: seconds are µs × 1e-6 (a
/// double), compared with 1e-6, 1e-5, ... 1e3; so 100 µs falls in the
/// 10–100 µs bucket, as in mrskew. Written the same in both engines.
const P10: &str = "CASE WHEN af * 1e-6 < 1e-6 THEN 1 WHEN af * 1e-6 < 1e-5 THEN 2 \
    WHEN af * 1e-6 < 1e-4 THEN 3 WHEN af * 1e-6 < 1e-3 THEN 4 WHEN af * 1e-6 < 1e-2 THEN 5 \
    WHEN af * 1e-6 < 1e-1 THEN 6 WHEN af * 1e-6 < 1e0 THEN 7 WHEN af * 1e-6 < 1e1 THEN 8 \
    WHEN af * 1e-6 < 1e2 THEN 9 WHEN af * 1e-6 < 1e3 THEN 10 ELSE 11 END";

fn cases() -> Vec<Case> {
    let e = exports();
    let all = all_traces();
    let crc = crc_traces();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let dir =
        |id, calls: &String, where_sql, g_duck, g_spark, skew: &[&str], files: &[String]| Case {
            id,
            calls: calls.clone(),
            layout: "dir",
            format: "parquet",
            where_sql,
            group_duckdb: g_duck,
            group_spark: g_spark,
            skew: s(skew),
            files: files.to_vec(),
        };
    let crc_where = "file LIKE '%crc-local-force%'";
    vec![
        // mrskew's default profile.
        dir("default", &e.default, "true", "name", "name", &[], &all),
        // The same, the depth filter written in SQL over every call.
        dir(
            "depth-in-sql",
            &e.alldepths,
            "coalesce(dep, 0) = depmin",
            "name",
            "name",
            &[],
            &all,
        ),
        dir(
            "alldepths",
            &e.alldepths,
            "true",
            "name",
            "name",
            &["--alldepths"],
            &all,
        ),
        // The README's worked example, filtered in SQL.
        dir(
            "dur-lt-1-sql",
            &e.default,
            "dur < 1000000 AND file LIKE '%crc-local-force%'",
            "name",
            "name",
            &["--where=$dur < 1"],
            &crc,
        ),
        // Time by statement.
        dir(
            "sqlid",
            &e.default,
            "true",
            "sqlid",
            "sqlid",
            &["--group=$sqlid"],
            &all,
        ),
        // Which lines hold the 60-second waits (FILE:LINE).
        dir(
            "file-line",
            &e.default,
            "af >= 1000000 AND dur < 65000000",
            "concat(basename, ':', cast(line AS string))",
            "concat(basename, ':', cast(line AS string))",
            &[
                "--where=$af >= 1 and $dur < 65",
                "--group=qq{$basename:$line}",
            ],
            &all,
        ),
        // The powers-of-ten histogram of client round trips.
        dir(
            "p10",
            &e.default,
            "lower(name) LIKE '%message from client%'",
            P10,
            P10,
            &["--rc=p10.rc", "--name=message from client"],
            &all,
        ),
        // Executions by bind values.
        dir(
            "binds",
            &e.default,
            "lower(name) LIKE '%exec%'",
            // Perl's join writes an undefined value as "".
            "array_to_string(list_transform(binds, lambda x: coalesce(x, '')), ',')",
            "array_join(binds, ',', '')",
            &["--name=EXEC", "--group=join(\",\", @bind)"],
            &all,
        ),
        // A filter applied by the export itself, into one file.
        Case {
            layout: "file",
            ..dir(
                "dur-lt-1-export",
                &e.dur_lt_1,
                "true",
                "name",
                "name",
                &["--where=$dur < 1"],
                &crc,
            )
        },
        Case {
            layout: "file",
            format: "csv",
            ..dir("csv", &e.csv, "true", "name", "name", &[], &crc)
        },
        Case {
            layout: "file",
            format: "jsonl",
            ..dir("jsonl", &e.jsonl, "true", "name", "name", &[], &crc)
        },
        // A subset of the fleet, chosen in SQL by file.
        dir("crc-only", &e.default, crc_where, "name", "name", &[], &crc),
    ]
}

fn check(engine: &str, cases: Vec<Case>) {
    let got = engine_profiles(engine, &cases);
    for c in &cases {
        let want = skew_profile(c);
        assert!(!want.is_empty(), "case {}: skew found no calls", c.id);
        let have = got
            .get(c.id)
            .unwrap_or_else(|| panic!("{engine}: no case {}", c.id));
        assert_eq!(have, &want, "{engine}, case {}: engine vs skew", c.id);
    }
}

#[test]
fn duckdb_profiles_the_export_as_skew_profiles_the_traces() {
    check("duckdb", cases());
}

/// One Spark session for every case: a JVM start costs seconds.
#[test]
fn pyspark_profiles_the_export_as_skew_profiles_the_traces() {
    let spark = [
        "default",
        "depth-in-sql",
        "sqlid",
        "file-line",
        "p10",
        "binds",
        "dur-lt-1-export",
    ];
    let cases = cases()
        .into_iter()
        .filter(|c| spark.contains(&c.id))
        .collect();
    check("spark", cases);
}

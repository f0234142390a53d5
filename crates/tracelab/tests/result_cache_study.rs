//! The built-in result-cache study, shortened (4 sessions, 2 s runs, one
//! repetition), on a private PostgreSQL and a private MariaDB: the proxy
//! level adds its delay to the round trip the sessions measure; the
//! proxy's traces are kept and `tracelab skew` prints of them the very
//! table the report shows; each session's cache statistics are stored;
//! the writer's changes during a cached run reach every session within
//! the lag; the report rebuilds from the store byte for byte.

mod common;
use common::tracelab;

use std::collections::BTreeMap;
use std::path::Path;

/// The built-in study with the given vars replaced (`name = value` lines).
fn shortened(dir: &Path, vars: &[(&str, &str)], lag: &str) -> std::path::PathBuf {
    let (text, err, code) = tracelab(&["study", "show", "result-cache"]);
    assert_eq!(code, 0, "{err}");
    let mut out = String::new();
    // Only vars: `runtime = "{fresh_runtime}"` of [freshness] is no var.
    let mut in_vars = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_vars = line == "[vars]" || line == "[quick.vars]";
        }
        let key = line.split(" = ").next().unwrap_or("");
        let line = match vars.iter().find(|(k, _)| *k == key && in_vars) {
            Some((k, v)) => format!("{k} = {v}"),
            None => line.to_string(),
        };
        // The freshness check's own lag and pace: short, for a short run.
        let line = line
            .replace(
                "vars = { lag = 5000 }",
                &format!("vars = {{ lag = {lag} }}"),
            )
            .replace("every_ms = 2000", "every_ms = 300");
        out.push_str(&line);
        out.push('\n');
    }
    let path = dir.join("rc.toml");
    std::fs::write(&path, out).unwrap();
    path
}

/// A run: its seq, its cell (factor: level) and its measurements.
type Run = (i64, BTreeMap<String, String>, BTreeMap<String, f64>);

/// Each run's cell and measurements.
fn runs(store: &Path) -> Vec<Run> {
    let c = rusqlite::Connection::open(store.join("results.sqlite")).unwrap();
    let mut st = c
        .prepare("SELECT p.seq, p.levels FROM plan p JOIN runs r ON r.seq = p.seq ORDER BY p.seq")
        .unwrap();
    let rows: Vec<(i64, String)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.into_iter()
        .map(|(seq, levels)| {
            let cell: Vec<(String, String)> = serde_json::from_str(&levels).unwrap();
            let mut q = c
                .prepare("SELECT name, value FROM measurements WHERE seq = ?1")
                .unwrap();
            let m = q
                .query_map([seq], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            (seq, cell.into_iter().collect(), m)
        })
        .collect()
}

fn find<'a>(all: &'a [Run], engine: &str, cache: &str, latency: &str) -> &'a Run {
    all.iter()
        .find(|(_, c, _)| c["engine"] == engine && c["cache"] == cache && c["latency"] == latency)
        .unwrap_or_else(|| panic!("no run engine={engine} cache={cache} latency={latency}"))
}

#[test]
fn result_cache_study_on_postgres_and_mariadb() {
    let dir = tempfile::Builder::new()
        .prefix("tracelab-rc-study-")
        .tempdir_in("/tmp")
        .unwrap();
    let lag_ms = 1500.0;
    let file = shortened(
        dir.path(),
        &[("sessions", "4"), ("runtime", "2"), ("fresh_runtime", "8")],
        "1500",
    );
    let out = dir.path().join("out");
    let (stdout, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--quick",
        "--reps",
        "1",
        "--level",
        "engine=postgres,mariadb",
        "--keep-traces",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}\n{stdout}");
    let all = runs(&out);
    assert_eq!(all.len(), 8, "2 engines x 2 caches x 2 latencies");

    // The proxy level adds its delay (6 ms, 1 ms of jitter, on requests)
    // to every round trip the uncached sessions wait for: their median
    // latency rises by about 6 ms (the machine is shared: wide margins).
    for engine in ["postgres", "mariadb"] {
        let local = find(&all, engine, "off", "0ms").2["p50_us"];
        let remote = find(&all, engine, "off", "6ms").2["p50_us"];
        assert!(
            remote >= 5000.0 && remote - local >= 3000.0 && remote < 60_000.0,
            "{engine}: p50 {local} µs direct through the proxy, {remote} µs with 6 ms added"
        );
        // One round trip per uncached transaction, next to none cached.
        let rt = |c: &str| {
            let m = &find(&all, engine, c, "6ms").2;
            m["trace_sql_net_message_from_dblink_calls"] / m["transactions"]
        };
        assert!((rt("off") - 1.0).abs() < 0.05, "{engine}: {}", rt("off"));
        assert!(rt("on") < 0.05, "{engine}: {}", rt("on"));
        // The proxy held the requests back by 6 ms each on average.
        let m = &find(&all, engine, "off", "6ms").2;
        let per_tx = m["proxy_delay_ms"] / m["transactions"];
        assert!(
            per_tx > 4.0 && per_tx < 12.0,
            "{engine}: {per_tx} ms per transaction"
        );
    }

    // The proxy's server-side traces are kept, and `tracelab skew` prints
    // of them the table the report shows for that cell.
    let (seq, _, m) = find(&all, "postgres", "off", "6ms");
    let tdir = out.join("traces").join(format!("{seq}-proxy"));
    let mut files: Vec<String> = std::fs::read_dir(&tdir)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert!(files.len() >= 8, "4 sessions and 4 channels: {files:?}");
    let mut args = vec!["skew", "--where=$af < 1"];
    args.extend(files.iter().map(String::as_str));
    let (table, err, code) = tracelab(&args);
    assert_eq!(code, 0, "{err}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = report
        .split("## Profiles of the proxy's server-side traces")
        .nth(1)
        .expect("the proxy profiles");
    let cell = section
        .split("### engine=postgres cache=off latency=6ms (1 run)\n\n```\n")
        .nth(1)
        .expect("the cell's profile")
        .split("```")
        .next()
        .unwrap();
    assert_eq!(cell, table, "the report's table is tracelab skew's");
    assert!(table.starts_with("CALL-NAME"), "{table}");
    // A round trip per transaction on the server's side too, and a few
    // more for connecting and for the caches' invalidation channels.
    let snmfc = m["proxy_trace_sql_net_message_from_client_calls"];
    assert!(
        snmfc >= m["transactions"] && snmfc <= 1.5 * m["transactions"],
        "{snmfc} round trips for {} transactions",
        m["transactions"]
    );
    // MariaDB's bytes go through the proxy untraced, and the report says so.
    assert!(
        report.contains("no server-side trace through the proxy"),
        "{report}"
    );
    assert!(!out
        .join("traces")
        .join(format!("{}-proxy", find(&all, "mariadb", "off", "6ms").0))
        .exists());

    // Each session's cache statistics are stored, in Oracle's names: a
    // cache per session, filled with the 21 bind values once.
    let c = rusqlite::Connection::open(out.join("results.sqlite")).unwrap();
    for engine in ["postgres", "mariadb"] {
        let (seq, _, m) = find(&all, engine, "on", "6ms");
        let mut st = c
            .prepare("SELECT session, name, value FROM session_values WHERE seq = ?1")
            .unwrap();
        let mut by: BTreeMap<i64, BTreeMap<String, f64>> = BTreeMap::new();
        for r in st
            .query_map([seq], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get(2)?))
            })
            .unwrap()
        {
            let (s, n, v) = r.unwrap();
            by.entry(s).or_default().insert(n, v);
        }
        assert_eq!(by.len(), 4, "{engine}: {by:?}");
        for (s, v) in &by {
            assert_eq!(
                v["Create Count Success"], 21.0,
                "{engine} session {s}: {v:?}"
            );
            assert_eq!(v["Block Size"], 256.0);
            assert_eq!(v["Block Count Max"], 4096.0);
            assert!(v["Find Count"] > 0.0 && v["executions"] >= v["Find Count"]);
        }
        let finds: f64 = by.values().map(|v| v["Find Count"]).sum();
        assert_eq!(finds, m["rc_find_count"], "{engine}");
        // The tally lines of the report are the sessions' executions.
        let line = format!("RC-{engine}-on-6ms-r1: {:.0}", by[&0]["executions"]);
        assert!(stdout.contains(&line), "{line} in\n{stdout}");
    }

    // A change committed during a cached run reaches every session within
    // the lag, on both engines.
    let mut st = c
        .prepare("SELECT engine, session, name, value FROM freshness")
        .unwrap();
    let mut fresh: BTreeMap<(String, i64), BTreeMap<String, f64>> = BTreeMap::new();
    for r in st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get(3)?,
            ))
        })
        .unwrap()
    {
        let (e, s, n, v) = r.unwrap();
        fresh.entry((e, s)).or_default().insert(n, v);
    }
    for engine in ["postgres", "mariadb"] {
        let w = &fresh[&(engine.to_string(), -1)];
        assert_eq!(w["lag_ms"], lag_ms);
        assert!(w["changes"] >= 5.0, "{engine}: {w:?}");
        assert_eq!(w["unseen"], 0.0, "{engine}: {w:?}");
        assert_eq!(w["backwards"], 0.0, "{engine}: {w:?}");
        assert!(w["max_staleness_cached_ms"] <= lag_ms, "{engine}: {w:?}");
        assert!(w["max_visible_ms"] <= lag_ms, "{engine}: {w:?}");
        for s in 0..4 {
            let v = &fresh[&(engine.to_string(), s)];
            assert_eq!(
                v["highest_change"], w["changes"],
                "{engine} session {s}: {v:?}"
            );
            assert!(v["cached_reads"] > 0.0, "{engine} session {s}: {v:?}");
        }
    }
    assert!(stdout.contains("Within the lag: yes."), "{stdout}");

    // The report, rebuilt from the store alone, is the same byte for byte.
    for (fmt, file) in [("markdown", "report.md"), ("html", "report.html")] {
        let (again, err, code) =
            tracelab(&["study", "report", out.to_str().unwrap(), "--format", fmt]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            again,
            std::fs::read_to_string(out.join(file)).unwrap(),
            "{fmt}"
        );
    }
    let (text, _, _) = tracelab(&["study", "report", out.to_str().unwrap()]);
    assert_eq!(text, stdout);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("Transactions per session by cell"),
        "the chart"
    );
}

//! A study's workload as `tracelab run` takes it (every option under its
//! own name, set by levels), measurements from outside tracelab (a
//! command beside each run, `perf stat` of the server), and `--reps
//! auto`: each on the private PostgreSQL, small and short.

mod common;
use common::tracelab;

/// The measurements `name` of every run, by the level of the first
/// factor (the mean where a level ran more than once).
fn by_level(store: &std::path::Path, name: &str) -> std::collections::BTreeMap<String, f64> {
    let c = rusqlite::Connection::open(store.join("results.sqlite")).unwrap();
    let mut st = c
        .prepare(
            "SELECT p.levels, avg(m.value) FROM measurements m JOIN plan p USING (seq) \
             WHERE m.name = ?1 GROUP BY p.levels",
        )
        .unwrap();
    st.query_map([name], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .map(|(levels, v)| {
        let cell: Vec<(String, String)> = serde_json::from_str(&levels).unwrap();
        (cell[0].1.clone(), v)
    })
    .collect()
}

/// Writes `text` as a study file in a new directory and runs it with
/// `args`; returns the directory (the store is `out`), stdout, stderr and
/// the exit code.
fn study(text: &str, args: &[&str]) -> (common::Scratch, String, String, i32) {
    let dir = common::tempdir("study-workload");
    let file = dir.join("s.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    let mut all = vec![
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let (stdout, err, code) = tracelab(&all);
    (dir, stdout, err, code)
}

/// `rate` is `tracelab run --rate`: a level sets it through a var, and
/// each cell's throughput follows it; one session serving a 4 ms
/// statement queues at 200 arrivals a second (near its capacity) and not
/// at 50, so the latency (counted from each arrival) follows it too.
#[test]
fn a_level_sets_the_arrival_rate_and_throughput_and_latency_follow_it() {
    let text = r#"
name = "rate-check"
reps = 1
[workload]
sql = "SELECT pg_sleep(0.004)"
sessions = 1
runtime = 2
rate = "{rate}"
exe-delay = "0s"
[[factors]]
name = "rate"
values = [50, 200]
[report]
rows = "rate"
columns = [{ name = "tps", label = "tps", expr = "$tps" }]
"#;
    let (dir, _, err, code) = study(text, &[]);
    assert_eq!(code, 0, "{err}");
    let out = dir.join("out");
    let tps = by_level(&out, "tps");
    let p50 = by_level(&out, "p50_us");
    eprintln!("tps {tps:?}, p50_us {p50:?}");
    // Generous margins: arrivals are Poisson and the machine is shared.
    assert!((35.0..=65.0).contains(&tps["50"]), "{tps:?}");
    assert!(tps["200"] > 2.0 * tps["50"], "{tps:?}");
    assert!(p50["200"] > p50["50"], "latency {p50:?}, tps {tps:?}");

    // A rate of 0 is no rate: refused by name before anything runs.
    let (_, _, err, code) = study(&text.replace("[50, 200]", "[0]"), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("key `workload.rate`") && err.contains("expected transactions per second"),
        "{err}"
    );
    // An option `run` does not have, named with its line.
    let (_, _, err, code) = study(&text.replace("exe-delay", "exe-dleay"), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("s.toml:9: key `workload.exe-dleay`: unknown field `exe-dleay`"),
        "{err}"
    );
}

//! What a study level can put around its runs besides settings, on the
//! private PostgreSQL: tracelab proxy in the path with an added round trip,
//! a server environment (a restart), and `--var`.

mod common;
use common::tracelab;

fn tmp(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/tmp")
        .unwrap()
}

/// The measurements of the run of each level of `n`, by level.
fn by_level(store: &std::path::Path, name: &str) -> std::collections::BTreeMap<String, f64> {
    let c = rusqlite::Connection::open(store.join("results.sqlite")).unwrap();
    let mut st = c
        .prepare(
            "SELECT p.levels, m.value FROM measurements m JOIN plan p USING (seq) WHERE m.name = ?1",
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

const STUDY: &str = r#"
name = "levels-check"
reps = 1
[vars]
n = 10
[workload]
sql = "SELECT 1; SELECT 2"
statements = "2 * {n}"
[[factors]]
name = "path"
levels = [
  { name = "direct" },
  { name = "proxy", proxy = { delay = "20ms" } },
  { name = "env", env = { TRACELAB_LEVEL_CHECK = "yes" } },
]
[report]
rows = "path"
columns = [{ name = "e", label = "elapsed ms", expr = "$elapsed_ms" }]
"#;

#[test]
fn a_proxy_level_adds_its_round_trip_and_vars_take_new_values() {
    let dir = tmp("tracelab-study-levels-");
    let file = dir.path().join("s.toml");
    std::fs::write(&file, STUDY).unwrap();
    let out = dir.path().join("out");
    let (stdout, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--var",
        "n=5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // Two statements per `n` (several statements with the extended
    // protocol are executed in turn), n given by --var.
    let statements = by_level(&out, "statements");
    assert!(statements.values().all(|s| *s == 10.0), "{statements:?}");
    // 20 ms more per round trip through the proxy: at least 10 × 20 ms
    // (a bound with a wide margin, nothing above it asserted).
    let elapsed = by_level(&out, "elapsed_ms");
    assert!(elapsed["proxy"] >= 200.0, "{elapsed:?}");
    assert!(elapsed["direct"] < elapsed["proxy"], "{elapsed:?}");
    assert!(stdout.contains("var.n"), "{stdout}");

    // A var the study does not have is refused before anything runs.
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--var",
        "m=5",
        "--out",
        dir.path().join("out2").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the study has no var `m`"), "{err}");
}

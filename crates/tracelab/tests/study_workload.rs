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
/// statement (some 200 a second at most) queues at 200 arrivals a second
/// and hardly at 50, so the latency (counted from each arrival) follows it too.
#[test]
fn a_level_sets_the_arrival_rate_and_throughput_and_latency_follow_it() {
    let text = r#"
name = "rate-check"
reps = 1
[workload]
sql = "SELECT pg_sleep(0.004)"
sessions = 1
runtime = 3
rate = "{rate}"
exe-delay = "0s"
[[factors]]
name = "rate"
values = [50, 200]
[report]
rows = "rate"
columns = [{ name = "tps", label = "tps", expr = "$tps" }]
"#;
    // The dry run shows each cell's rate.
    let (_, stdout, err, code) = study(text, &["--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("  run options (tracelab run's): exe-delay = \"0s\", rate = 50\n")
            && stdout.contains("rate = 200\n"),
        "{stdout}"
    );
    let (dir, _, err, code) = study(text, &[]);
    assert_eq!(code, 0, "{err}");
    let out = dir.join("out");
    let tps = by_level(&out, "tps");
    let p50 = by_level(&out, "p50_us");
    eprintln!("tps {tps:?}, p50_us {p50:?}");
    // Generous margins: arrivals are Poisson and the machine is shared.
    assert!((30.0..=70.0).contains(&tps["50"]), "{tps:?}");
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

/// A study that counts with a shell command beside each run (SIGTERM
/// after it), one after it (with a var of the cell) and `perf stat` of
/// the server: their lines are the runs' measurements.
const OUTSIDE: &str = r#"
name = "outside-check"
reps = 2
[vars]
rows = 7
[workload]
sql = "SELECT pg_sleep(0.01)"
statements = 20
[measure]
perf = { events = ["context-switches", "instructions"] }
[[measure.command]]
name = "clock"
run = "trap 'echo ticks $n; exit 0' TERM; n=0; while :; do n=$((n+1)); sleep 0.02; done"
[[measure.command]]
name = "after"
when = "after"
run = "echo rows {rows}; echo '# a comment'; echo pid $TRACELAB_SERVER_PID"
[[factors]]
name = "n"
values = [1]
[report]
rows = "n"
columns = [{ name = "t", label = "ticks", expr = "$clock_ticks" }]
"#;

#[test]
fn a_command_beside_and_after_each_run_and_perf_give_measurements() {
    let (dir, _, err, code) = study(OUTSIDE, &[]);
    assert_eq!(code, 0, "{err}");
    let out = dir.join("out");
    // 20 × 10 ms of sleep: the command beside ticked while the run went.
    let ticks = by_level(&out, "clock_ticks");
    assert!(ticks["1"] >= 3.0, "{ticks:?}");
    assert_eq!(by_level(&out, "after_rows")["1"], 7.0);
    assert!(by_level(&out, "after_pid")["1"] > 1.0);
    let perf_works = std::process::Command::new("perf")
        .args(["stat", "-e", "context-switches", "--", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    let switches = by_level(&out, "perf_context_switches");
    eprintln!("ticks {ticks:?}, perf_context_switches {switches:?}");
    if perf_works {
        // Each statement's sleep switches its backend out at least once.
        assert!(switches["1"] >= 20.0, "{switches:?}");
    } else {
        eprintln!("perf does not count here: perf_context_switches not checked");
        assert!(switches.is_empty(), "{switches:?}");
        assert_eq!(err.matches("perf events not counted").count(), 1, "{err}");
    }
    // This VM counts no hardware events: said once, not per run.
    if by_level(&out, "perf_instructions").is_empty() {
        assert_eq!(
            err.matches("perf event instructions not counted").count(),
            1,
            "{err}"
        );
    }
}

#[test]
fn a_bad_line_of_a_command_is_named_with_the_command_and_line() {
    // The dry run lists the commands, vars filled in, as reaching outside.
    let (_, stdout, err, code) = study(OUTSIDE, &["--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains(
            "  command after (after each run), sh -c:\n    echo rows 7; echo '# a comment'"
        ) && stdout.contains("^ runs a program on this machine")
            && stdout.contains("perf stat -e context-switches,instructions"),
        "{stdout}"
    );
    let bad = OUTSIDE.replace("echo rows {rows};", "echo rows {rows}; echo hello;");
    let (_, _, err, code) = study(&bad, &[]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("key `measure.command.run`: command `after`, output line 2: `hello`: expected `NAME VALUE`"),
        "{err}"
    );
    let failing = OUTSIDE.replace("echo rows {rows};", "echo oops >&2; exit 3;");
    let (_, _, err, code) = study(&failing, &[]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("command `after` failed (exit status: 3): oops"),
        "{err}"
    );
    // One that does not end in its time is killed, and said.
    let slow = OUTSIDE
        .replace(
            "when = \"after\"\n",
            "when = \"after\"\ntimeout = \"500ms\"\n",
        )
        .replace("echo rows {rows};", "sleep 30;");
    let (_, _, err, code) = study(&slow, &[]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("key `measure.command.timeout`: command `after` did not end within 0.5 s of its start: killed"),
        "{err}"
    );
}

/// Runs stored, and the repetitions the store's header says.
fn runs_and_reps(store: &std::path::Path) -> (i64, i64) {
    let c = rusqlite::Connection::open(store.join("results.sqlite")).unwrap();
    let runs = c
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    let reps = c
        .query_row("SELECT reps FROM study", [], |r| r.get(0))
        .unwrap();
    (runs, reps)
}

const TWO_LEVELS: &str = r#"
name = "auto-check"
reps = 1
[workload]
sql = "SELECT pg_sleep({ms} / 1000.0)"
statements = 10
[[factors]]
name = "ms"
values = [1, 2]
[report]
rows = "ms"
baseline = "1"
columns = [{ name = "e", label = "elapsed ms", expr = "$elapsed_ms" }]
"#;

/// `--reps auto` adds rounds of every cell until the comparison's
/// interval is as narrow as asked, or the cap: an impossible width runs
/// to the cap, a generous one stops at two repetitions (the fewest that
/// give an interval, above the file's one).
#[test]
fn reps_auto_adds_rounds_until_the_interval_is_narrow_or_the_cap() {
    let (dir, stdout, err, code) = study(
        TWO_LEVELS,
        &[
            "--reps",
            "auto",
            "--target-width",
            "0.001",
            "--max-reps",
            "3",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(runs_and_reps(&dir.join("out")), (6, 3), "{err}");
    assert!(
        err.contains("--reps auto: stopped at the cap of 3 repetitions with an interval wider than 0.001 % (widest ")
            && err.contains("`e`, 2 against 1"),
        "{err}"
    );
    assert!(stdout.contains("3 repetitions per cell"), "{stdout}");
    let report = std::fs::read_to_string(dir.join("out/report.md")).unwrap();
    assert!(report.contains("6 of 6 runs"), "{report}");

    let (dir, _, err, code) = study(TWO_LEVELS, &["--target-width", "1000"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(runs_and_reps(&dir.join("out")), (4, 2), "{err}");
    assert!(
        err.contains("--reps auto: 2 repetitions; every 95 % interval is within 1000 %"),
        "{err}"
    );
    let (_, _, err, code) = study(TWO_LEVELS, &["--reps", "3", "--max-reps", "5"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("go with --reps auto"), "{err}");
}

/// An sqlrun kit as the workload (`sqldir`, `exe_mode`): the sessions
/// pick its statements by the kit's weights, 3 to 1.
#[test]
fn a_kit_with_weights_is_a_workload() {
    let text = r#"
name = "kit-check"
reps = 1
setup = "CREATE TABLE t (v int)"
[workload]
sqldir = "kit"
exe_mode = "semi-random"
statements = 400
before = "TRUNCATE t"
[[probes]]
name = "rows"
when = "after"
sql = "SELECT count(*) FILTER (WHERE v = 1) AS ones, count(*) FILTER (WHERE v = 2) AS twos FROM t"
[[factors]]
name = "n"
values = [1]
[report]
rows = "n"
columns = [{ name = "o", label = "ones", expr = "$ones" }]
"#;
    let dir = common::tempdir("study-kit");
    std::fs::create_dir(dir.join("kit")).unwrap();
    std::fs::write(dir.join("kit/sqlfile.conf"), ",\n3,one.sql\n1,two.sql\n").unwrap();
    std::fs::write(dir.join("kit/one.sql"), "INSERT INTO t VALUES (1)").unwrap();
    std::fs::write(dir.join("kit/two.sql"), "INSERT INTO t VALUES (2)").unwrap();
    let file = dir.join("s.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (ones, twos) = (by_level(&out, "ones")["1"], by_level(&out, "twos")["1"]);
    assert_eq!(ones + twos, 400.0);
    assert!(ones > 2.0 * twos && twos > 0.0, "{ones} {twos}");
    // A kit and SQL at once is refused by name.
    std::fs::write(
        &file,
        text.replace("sqldir = \"kit\"", "sqldir = \"kit\"\nsql = \"SELECT 1\""),
    )
    .unwrap();
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("key `workload.sqldir`: expected either `sql` or `sqldir`"),
        "{err}"
    );
}

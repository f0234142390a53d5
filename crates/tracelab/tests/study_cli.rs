//! `tracelab study` as a user runs it, on the private PostgreSQL: the
//! findings of the two built-in studies, reports rebuilt from the store,
//! mistakes in study files, missing engines, and --resume.

mod common;
use common::{tracelab, tracelab_env};

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tmp(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/tmp")
        .unwrap()
}

/// Mean of a measurement expression per level of `factor`, straight from
/// the results store (`f` computes the value from a run's measurements).
fn means(
    store: &Path,
    factor: &str,
    filter: &[(&str, &str)],
    f: impl Fn(&BTreeMap<String, f64>) -> Option<f64>,
) -> BTreeMap<String, f64> {
    let c = rusqlite::Connection::open(store.join("results.sqlite")).unwrap();
    let mut st = c
        .prepare("SELECT p.seq, p.levels FROM plan p JOIN runs r ON r.seq = p.seq")
        .unwrap();
    let runs: Vec<(i64, String)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut acc: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for (seq, levels) in runs {
        let cell: Vec<(String, String)> = serde_json::from_str(&levels).unwrap();
        if !filter
            .iter()
            .all(|(f, l)| cell.iter().any(|(cf, cl)| cf == f && cl == l))
        {
            continue;
        }
        let level = cell.iter().find(|(f, _)| f == factor).unwrap().1.clone();
        let mut m = BTreeMap::new();
        let mut q = c
            .prepare("SELECT name, value FROM measurements WHERE seq = ?1")
            .unwrap();
        for row in q
            .query_map([seq], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))
            .unwrap()
        {
            let (k, v) = row.unwrap();
            m.insert(k, v);
        }
        if let Some(v) = f(&m) {
            let e = acc.entry(level).or_insert((0.0, 0.0));
            e.0 += v;
            e.1 += 1.0;
        }
    }
    acc.into_iter().map(|(k, (s, n))| (k, s / n)).collect()
}

#[test]
fn commit_batch_response_falls_then_flattens_and_the_report_rebuilds() {
    let dir = tmp("tracelab-study-cb-");
    let out = dir.path().join("cb");
    let out_s = out.to_str().unwrap();
    let (stdout, err, code) = tracelab(&[
        "study",
        "run",
        "commit-batch",
        "--quick",
        "--level",
        "batch=1,32,256",
        "--out",
        out_s,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("arrival rate (inserts/ms)"), "{stdout}");
    let resp = means(&out, "batch", &[], |m| {
        Some(m.get("elapsed_ms")? / m.get("statements")?)
    });
    let arrival = means(&out, "batch", &[], |m| {
        Some(m.get("statements")? / m.get("elapsed_ms")?)
    });
    let service = means(&out, "batch", &[], |m| {
        Some(m.get("backend_cpu_ms")? / m.get("statements")?)
    });
    let (r1, r32, r256) = (resp["1"], resp["32"], resp["256"]);
    // Falls: a commit (a WAL flush and two more round trips) per insert
    // at 1, one per 32 inserts at 32.
    assert!(r32 < 0.8 * r1, "response 1: {r1}, 32: {r32}");
    // Flattens: going from 32 to 256 gains far less than from 1 to 32.
    assert!(
        (r32 - r256).abs() < 0.5 * (r1 - r32),
        "response 1: {r1}, 32: {r32}, 256: {r256}"
    );
    assert!(arrival["32"] > 1.2 * arrival["1"], "{arrival:?}");
    // Service time was measured, and is a part of the response.
    assert!(
        service["1"] > 0.0 && service["1"] < r1,
        "{service:?} {resp:?}"
    );
    // The WAL of every commit was flushed: about one fsync per commit.
    let syncs = means(&out, "batch", &[], |m| {
        Some(m.get("wal_sync")? / m.get("transactions")?)
    });
    assert!(syncs["1"] > 0.5, "{syncs:?}");
    // The server tracer's time accounting: every commit waits for its WAL
    // flush (IO:WALSync), so the queue per insert falls with the batch;
    // CPU, waits and round trips add up to most of the elapsed time.
    let walsyncs = means(&out, "batch", &[], |m| {
        Some(m.get("server_trace_io_walsync_calls")? / m.get("transactions")?)
    });
    assert!(walsyncs["1"] > 0.5, "{walsyncs:?}");
    let queue = means(&out, "batch", &[], |m| {
        Some(m.get("server_trace_waits_s")? / m.get("statements")?)
    });
    assert!(queue["32"] < 0.5 * queue["1"], "{queue:?}");
    let accounted = means(&out, "batch", &[], |m| {
        Some(1000.0 * m.get("server_trace_total_s")? / m.get("elapsed_ms")?)
    });
    assert!(
        accounted.values().all(|a| *a > 0.5 && *a < 1.05),
        "{accounted:?}"
    );
    assert!(stdout.contains("round trips (ms/insert)"), "{stdout}");
    // The original's figures are beside ours: its largest batch (32768)
    // is not in this plan, and the report says so rather than compare
    // another batch size with it.
    assert!(stdout.contains("The original and this run"), "{stdout}");
    assert!(
        stdout.contains("No run of this plan is in a cell the original's figures are of."),
        "{stdout}"
    );

    // The report rebuilt from the store alone is the one printed.
    let (again, err, code) = tracelab(&["study", "report", out_s]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(again, stdout);
    // Markdown and HTML (with an SVG chart) were written, and rebuild too.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let (md2, _, _) = tracelab(&["study", "report", out_s, "--format", "markdown"]);
    assert_eq!(md, md2);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("(log2 scale)"),
        "{html}"
    );
    assert!(html.contains("clocksource") && html.contains("fsync_per_s"));

    // A second store of the same study compares cell by cell.
    let (cmp, err, code) = tracelab(&["study", "compare", out_s, out_s]);
    assert_eq!(code, 0, "{err}");
    // It names which store is A and which is B.
    assert!(
        cmp.starts_with(&format!("A: {out_s}\nB: {out_s}\n")),
        "{cmp}"
    );
    assert!(
        cmp.contains("no detectable difference") || cmp.contains("too few runs to tell"),
        "{cmp}"
    );
}

#[test]
fn redo_undo_wal_by_load_method() {
    let dir = tmp("tracelab-study-ru-");
    let out = dir.path().join("ru");
    let (stdout, err, code) = tracelab(&[
        "study",
        "run",
        "redo-undo",
        "--quick",
        "--reps",
        "1",
        "--level",
        "size=small",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("wal_level=minimal size=small"), "{stdout}");
    let wal = |level: &str| {
        means(&out, "method", &[("wal_level", level)], |m| {
            m.get("wal_bytes").copied()
        })
    };
    let heap = means(&out, "method", &[("wal_level", "replica")], |m| {
        m.get("heap_bytes").copied()
    });
    let (replica, minimal) = (wal("replica"), wal("minimal"));
    let table = heap["insert"];
    assert!(table > 5e6, "60k rows of 100 characters: {table}");
    // Conventional insert logs at least the table.
    assert!(replica["insert"] >= table, "{replica:?} {table}");
    assert!(minimal["insert"] >= table, "{minimal:?} {table}");
    // UNLOGGED and TEMP write almost no WAL (TEMP: the catalog rows of its
    // CREATE only).
    for l in ["replica", "minimal"] {
        let w = wal(l);
        assert!(w["unlogged"] < 0.01 * table, "{l}: {w:?}");
        assert!(w["temp"] < 0.03 * table, "{l}: {w:?}");
    }
    // With wal_level minimal, CTAS and a COPY into a table created in the
    // same transaction log little more than metadata.
    assert!(minimal["ctas"] < 0.03 * table, "{minimal:?}");
    assert!(minimal["create+copy freeze"] < 0.03 * table, "{minimal:?}");
    assert!(replica["ctas"] >= table, "{replica:?}");
    // COPY FREEZE leaves no freeze debt; a conventional insert leaves a
    // table's worth.
    let freeze = means(&out, "method", &[("wal_level", "replica")], |m| {
        m.get("freeze_wal_bytes").copied()
    });
    assert!(freeze["create+copy freeze"] < 0.01 * table, "{freeze:?}");
    assert!(freeze["insert"] > 0.5 * table, "{freeze:?}");
    // The debt is the pages still to freeze: none after COPY FREEZE, the
    // whole table after UNLOGGED, though its first read dirties none (a
    // checkpoint leaves its buffers dirty).
    for l in ["replica", "minimal"] {
        let pages = means(&out, "method", &[("wal_level", l)], |m| {
            m.get("unfrozen_pages").copied()
        });
        let dirtied = means(&out, "method", &[("wal_level", l)], |m| {
            m.get("firstread_dirtied").copied()
        });
        let table_pages = table / 8192.0;
        assert_eq!(pages["create+copy freeze"], 0.0, "{l}: {pages:?}");
        assert!(pages["unlogged"] >= table_pages, "{l}: {pages:?}");
        assert!(pages["insert"] >= table_pages, "{l}: {pages:?}");
        assert_eq!(dirtied["unlogged"], 0.0, "{l}: {dirtied:?}");
        // TEMP's WAL is its CREATE's: the CREATE alone writes about as
        // much.
        let w = wal(l);
        assert!(w["temp create"] > 0.0, "{l}: {w:?}");
        assert!(
            (w["temp"] - w["temp create"]).abs() < 0.01 * table,
            "{l}: {w:?}"
        );
    }
    // The replica table (the original's ARCHIVELOG) comes first, and the
    // original's directions are beside ours.
    let replica_at = stdout.find("wal_level=replica size=small").unwrap();
    let minimal_at = stdout.find("wal_level=minimal size=small").unwrap();
    assert!(replica_at < minimal_at);
    assert!(stdout.contains("The original and this run"), "{stdout}");
    assert!(stdout.contains("lower (no figure)"), "{stdout}");
}

#[test]
fn a_mistake_in_a_study_file_names_file_line_and_key() {
    let dir = tmp("tracelab-study-bad-");
    let file = dir.path().join("bad.toml");
    let (text, _, code) = tracelab(&["study", "show", "commit-batch"]);
    assert_eq!(code, 0);
    // A copy of the built-in with one wrong value.
    let bad = text.replace("sessions = 1", "sessions = [1]");
    assert_ne!(bad, text);
    let line = bad
        .lines()
        .position(|l| l.starts_with("sessions = [1]"))
        .unwrap()
        + 1;
    std::fs::write(&file, &bad).unwrap();
    let (_, err, code) = tracelab(&["study", "run", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    let want = format!("{}:{line}: key `workload.sessions`:", file.display());
    assert!(err.contains(&want), "{err}\nwanted {want}");
    // A misspelt key too.
    let bad = text.replace("tx_per_commit =", "tx_per_comit =");
    std::fs::write(&file, &bad).unwrap();
    let (_, err, code) = tracelab(&["study", "run", file.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("key `workload.tx_per_comit`: unknown field"),
        "{err}"
    );
}

/// A report column naming a measurement the study will not produce is
/// refused before the first run (it printed `—` after every run), with
/// the nearest name it does produce.
#[test]
fn a_report_expression_naming_an_unknown_measurement_is_refused_before_any_run() {
    let dir = tmp("tracelab-study-expr-");
    let file = dir.path().join("cb.toml");
    let out = dir.path().join("out");
    let (text, _, code) = tracelab(&["study", "show", "commit-batch"]);
    assert_eq!(code, 0);
    let bad = text.replace(
        "expr = \"$elapsed_ms / $statements\"",
        "expr = \"$elapsed_msx / $statements\"",
    );
    assert_ne!(bad, text);
    std::fs::write(&file, &bad).unwrap();
    let t0 = Instant::now();
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "key `report.columns.expr`: column `elapsed`: `$elapsed_msx` is not a measurement"
        ) && err.contains("did you mean `$elapsed_ms`?"),
        "{err}"
    );
    assert!(!out.join("results.sqlite").exists(), "no run, no store");
    // Refused before any server started (a start takes seconds).
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
}

/// On a database of the user's (`--db`), commit-batch's setup drops and
/// creates `ins_t`: the study names what it would change and runs only
/// with --yes. There `track_wal_io_timing` is off (its default): the WAL
/// flush time is not measured, and the report says why instead of
/// showing 0.0000.
#[test]
fn a_study_on_your_database_names_what_it_changes_and_needs_yes() {
    let dir = tmp("tracelab-study-yes-");
    let pg = dir.path().join("pg");
    let (url, err, code) = tracelab(&["db", "start", "--dir", pg.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let url = url.trim().to_string();
    struct Stop(std::path::PathBuf);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = tracelab(&["db", "stop", "--dir", self.0.to_str().unwrap()]);
        }
    }
    let _stop = Stop(pg.clone());
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute("CREATE TABLE ins_t (mine text); INSERT INTO ins_t VALUES ('keep me')")
        .unwrap();
    let out = dir.path().join("out");
    let args = [
        "study",
        "run",
        "commit-batch",
        "--quick",
        "--reps",
        "2",
        "--level",
        "batch=256,4096",
        "--db",
        &url,
        "--out",
        out.to_str().unwrap(),
    ];
    let (_, err, code) = tracelab(&args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("would change postgres://postgres@127.0.0.1")
            && err.contains("once, before the first run: drop table ins_t, create table ins_t")
            && err.contains("before each run: truncate ins_t")
            && err.contains("--yes"),
        "{err}"
    );
    let mine: String = c.query_one("SELECT mine FROM ins_t", &[]).unwrap().get(0);
    assert_eq!(mine, "keep me", "nothing ran");
    assert!(!out.join("results.sqlite").exists());
    let mut yes = args.to_vec();
    yes.push("--yes");
    let (report, err, code) = tracelab(&yes);
    assert_eq!(code, 0, "{err}");
    let sync = report
        .lines()
        .find(|l| l.starts_with("4096 "))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        sync.trim_end().contains("—"),
        "log sync not measured: {sync}"
    );
    assert!(!sync.contains("0.0000"), "{sync}");
    assert!(
        report.contains("server trace not taken: the server tracer is preloaded at the private server's start (run without --db)"),
        "{report}"
    );
    assert!(
        report.contains("probe wal_timing not taken: it needs track_wal_io_timing = on")
            && report.contains("the server has track_wal_io_timing = off"),
        "{report}"
    );
}

/// A report that cannot be written (a full disk: /dev/full) is named and
/// makes the exit 3; the store, the other report and the text are still
/// written.
#[test]
fn a_report_that_cannot_be_written_is_exit_3_naming_it() {
    let dir = tmp("tracelab-study-full-");
    let file = common::small_study(dir.path(), "select 1", 1);
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::os::unix::fs::symlink("/dev/full", out.join("report.md")).unwrap();
    let db = format!("sqlite:{}", dir.path().join("s.sqlite").display());
    let (text, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--db",
        &db,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(&format!(
            "cannot write {}: No space left on device",
            out.join("report.md").display()
        )),
        "{err}"
    );
    assert!(text.contains("2 of 2 runs"), "{text}");
    assert!(out.join("report.html").metadata().unwrap().len() > 0);
}

/// Amounts and names a study cannot mean are refused before anything
/// runs (exit 2), naming the file, line and key: `reps = 4294967295`
/// planned runs until memory ran out, `sessions = 0` and `sessions = 1.5`
/// ran one session, `name = ""` was accepted, a file that is not UTF-8
/// was an I/O error (exit 3), and a --db URL that cannot be read failed
/// as a session.
#[test]
fn impossible_amounts_names_and_files_are_refused_before_any_run() {
    let dir = tmp("tracelab-study-limits-");
    let file = dir.path().join("s.toml");
    let good = TINY.replace("pg_sleep(0.05)", "1");
    let cases = [
        ("reps = 3", "reps = 4294967295", "reps"),
        (
            "statements = 4",
            "statements = 4\nsessions = 0",
            "workload.sessions",
        ),
        (
            "statements = 4",
            "statements = 4\nsessions = 1.5",
            "workload.sessions",
        ),
        (
            "statements = 4",
            "statements = \"{n}\"\nsessions = \"{n}\"\ntx_per_commit = -1",
            "workload.tx_per_commit",
        ),
        ("name = \"tiny\"", "name = \"\"", "name"),
    ];
    for (from, to, key) in cases {
        let text = good.replace(from, to);
        assert_ne!(text, good);
        std::fs::write(&file, &text).unwrap();
        let t0 = Instant::now();
        let (_, err, code) = tracelab(&[
            "study",
            "run",
            file.to_str().unwrap(),
            "--out",
            dir.path().join("o").to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{to}: {err}");
        assert!(
            err.contains(&format!("{}:", file.display())) && err.contains(&format!("key `{key}`")),
            "{to}: {err}"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(3),
            "before any server: {to}"
        );
        assert!(!dir.path().join("o").join("results.sqlite").exists());
    }
    let mut bytes = good.clone().into_bytes();
    bytes.extend_from_slice(b"# \xff\n");
    std::fs::write(&file, bytes).unwrap();
    let (_, err, code) = tracelab(&["study", "run", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not UTF-8 text"), "{err}");
    std::fs::write(&file, &good).unwrap();
    let (_, err, code) = tracelab(&["study", "run", file.to_str().unwrap(), "--reps", "1000000"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--reps 1000000: expected 1 to 1000"), "{err}");
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--db",
        "postgres://u:pw@127.0.0.1:notaport/x",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`port`") && !err.contains("pw@"), "{err}");
}

#[test]
fn a_missing_engine_is_named_with_its_remedy_before_any_run() {
    let dir = tmp("tracelab-study-eng-");
    let out = dir.path().join("m");
    // A machine without MariaDB: tracelab looks only where it is told.
    let empty = dir.path().join("no-mariadb");
    std::fs::create_dir_all(&empty).unwrap();
    let (_, err, code) = tracelab_env(
        &[
            "study",
            "run",
            "commit-batch",
            "--quick",
            "--level",
            "engine=postgres,mariadb",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("TRACELAB_MARIADB_BINDIR", empty.to_str().unwrap())],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("engine mariadb:"), "{err}");
    assert!(err.contains("apt-get install -y mariadb-server"), "{err}");
    assert!(err.contains("nothing was run"), "{err}");
    assert!(!out.join("results.sqlite").exists(), "no run, no store");
}

/// A study small enough to interrupt: 4 levels × 3 repetitions of a
/// short select.
const TINY: &str = r#"
name = "tiny"
reps = 3
[workload]
sql = "SELECT pg_sleep(0.05)"
statements = 4
[[factors]]
name = "n"
values = [1, 2, 3, 4]
[report]
rows = "n"
baseline = "1"
columns = [{ name = "e", label = "elapsed ms", expr = "$elapsed_ms", change = true }]
"#;

#[test]
fn resume_after_an_interrupt_skips_the_runs_done() {
    let dir = tmp("tracelab-study-resume-");
    let file = dir.path().join("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let out = dir.path().join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .args(["study", "run", file.to_str().unwrap(), "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-C once two runs are stored.
    let deadline = Instant::now() + Duration::from_secs(60);
    let runs = |out: &Path| -> i64 {
        rusqlite::Connection::open_with_flags(
            out.join("results.sqlite"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .and_then(|c| c.query_row("SELECT count(*) FROM runs", [], |r| r.get(0)))
        .unwrap_or(0)
    };
    while runs(&out) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let first = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(130), "{err}");
    assert!(err.contains("--resume"), "{err}");
    let done_before = runs(&out);
    assert!((2..12).contains(&done_before), "{done_before}");
    let started: Vec<String> = {
        let c = rusqlite::Connection::open(out.join("results.sqlite")).unwrap();
        let mut st = c.prepare("SELECT started FROM runs ORDER BY seq").unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };

    let (stdout, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--resume",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!(
            "{} runs done now, {done_before} before",
            12 - done_before
        )),
        "{err}"
    );
    assert_eq!(runs(&out), 12);
    assert!(stdout.contains("12 of 12 runs"), "{stdout}");
    // The runs done before were not run again.
    let c = rusqlite::Connection::open(out.join("results.sqlite")).unwrap();
    let mut st = c
        .prepare("SELECT started FROM runs ORDER BY seq LIMIT ?1")
        .unwrap();
    let again: Vec<String> = st
        .query_map([done_before], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(again, started);
    // A new run into the same directory refuses to overwrite it.
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--resume"), "{err}");
}

#[test]
fn list_and_show_the_built_in_studies() {
    let (out, _, code) = tracelab(&["study", "list"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("commit-batch") && out.contains("redo-undo"),
        "{out}"
    );
    let (text, _, code) = tracelab(&["study", "show", "redo-undo"]);
    assert_eq!(code, 0);
    assert!(text.contains("name = \"redo-undo\""));
    let (sql, _, code) = tracelab(&["study", "show", "redo-undo/debt.sql"]);
    assert_eq!(code, 0);
    assert!(sql.contains("VACUUM (FREEZE) t"), "{sql}");
    let (_, err, code) = tracelab(&["study", "show", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("no study `nope`"), "{err}");
}

#[test]
fn strace_counts_the_backend_syscalls_or_says_why_not() {
    let dir = tmp("tracelab-study-strace-");
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        r#"
name = "strace-check"
reps = 1
[workload]
sql = "INSERT INTO x VALUES (1)"
statements = 20
tx_per_commit = 1
before = "CREATE TABLE IF NOT EXISTS x (a int)"
[[factors]]
name = "n"
values = [1]
[measure]
strace = true
[report]
rows = "n"
columns = [{ name = "f", label = "fdatasync", expr = "$syscall_fdatasync", digits = 0 }]
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let (stdout, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let strace = Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if strace {
        // One WAL flush per commit, by the backend itself.
        let f = means(&out, "n", &[], |m| m.get("syscall_fdatasync").copied());
        assert!(f["1"] >= 20.0, "{f:?}\n{stdout}");
    } else {
        assert!(stdout.contains("strace not installed"), "{stdout}");
    }
}

#[test]
fn trace_profiles_through_the_skew_engine_add_up_to_the_run() {
    let dir = tmp("tracelab-study-trace-");
    let file = dir.path().join("t.toml");
    std::fs::write(
        &file,
        r#"
name = "trace-check"
reps = 2
[workload]
sql = "INSERT INTO x VALUES (1)"
statements = 40
tx_per_commit = 4
before = "CREATE TABLE IF NOT EXISTS x (a int)"
[[factors]]
name = "n"
values = [1]
[measure]
trace = true
[report]
rows = "n"
columns = [{ name = "t", label = "traced s", expr = "$trace_total_s", digits = 4 }]
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let xctend = means(&out, "n", &[], |m| m.get("trace_xctend_calls").copied());
    assert_eq!(xctend["1"], 10.0, "one XCTEND per commit");
    // Every call and the time between calls: the traced total is the
    // session's elapsed time.
    let ratio = means(&out, "n", &[], |m| {
        Some(m.get("trace_total_s")? * 1000.0 / m.get("elapsed_ms")?)
    });
    assert!((0.95..1.05).contains(&ratio["1"]), "{ratio:?}");
}

#[test]
fn mariadb_session_threads_cpu_is_read_and_grows_with_the_work() {
    let dir = tmp("tracelab-study-mcpu-");
    let file = dir.path().join("m.toml");
    std::fs::write(
        &file,
        r#"
name = "mariadb-cpu-check"
reps = 1
[setup]
mariadb = "CREATE TABLE x (a int) ENGINE = InnoDB"
[workload]
sql = "INSERT INTO x VALUES (1)"
sessions = "{sessions}"
statements = "{rows}"
tx_per_commit = 1
[[factors]]
name = "engine"
levels = [{ name = "mariadb" }]
[[factors]]
name = "sessions"
values = [1, 2]
[[factors]]
name = "rows"
values = [40, 400]
[report]
rows = "rows"
columns = [{ name = "s", label = "service", expr = "$backend_cpu_ms / $statements", digits = 4 }]
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let (stdout, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for sessions in ["1", "2"] {
        let only = [("sessions", sessions)];
        let cpu = means(&out, "rows", &only, |m| m.get("backend_cpu_ms").copied());
        let elapsed = means(&out, "rows", &only, |m| m.get("elapsed_ms").copied());
        assert_eq!(cpu.len(), 2, "backend_cpu_ms missing: {cpu:?}\n{stdout}");
        let n: f64 = sessions.parse().unwrap();
        for (rows, ms) in &cpu {
            // A session's thread is on CPU for a part of the session's
            // time at most: not the whole server's CPU.
            assert!(
                *ms > 0.0 && *ms < n * elapsed[rows],
                "{sessions} sessions, rows {rows}: cpu {cpu:?}, elapsed {elapsed:?}"
            );
        }
        // The sessions' own work, not their connections': ten times the
        // inserts cost several times the CPU.
        assert!(cpu["400"] > 3.0 * cpu["40"], "{sessions} sessions: {cpu:?}");
    }
}

/// Two `study run`s on one results directory at once (a `--resume` while
/// the study still runs): the second is refused at its start, naming the
/// store and the first one's pid, and the first goes on undisturbed. They
/// once ran the same cells together, each measured under the other's
/// load, and one failed only when it wrote (UNIQUE constraint failed).
#[test]
fn a_second_run_on_a_store_in_use_is_refused_at_its_start() {
    let dir = tmp("tracelab-study-lock-");
    let file = dir.path().join("lock.toml");
    std::fs::write(
        &file,
        r#"
name = "lock"
reps = 2
[workload]
sql = "SELECT 1"
runtime = 1
[[factors]]
name = "engine"
levels = [{ name = "sqlite" }]
[[factors]]
name = "n"
values = [1, 2]
[report]
rows = "n"
columns = [{ name = "e", label = "elapsed ms", expr = "$elapsed_ms" }]
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let first = Command::new(common::bin())
        .args(["study", "run", file.to_str().unwrap(), "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !out.join("results.sqlite").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(out.join("results.sqlite").exists(), "the first run began");
    let t0 = Instant::now();
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--resume",
    ]);
    let took = t0.elapsed();
    let first_pid = first.id();
    let first = first.wait_with_output().unwrap();
    let first_err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(&out.join("results.sqlite").display().to_string())
            && err.contains(&format!("pid {first_pid}"))
            && err.contains("nothing was run"),
        "the message names the store and the holder: {err}"
    );
    assert!(!err.contains("--resume"), "no advice to resume: {err}");
    // Refused at once (4 runs of 1 s were ahead of the first run).
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert_eq!(first.status.code(), Some(0), "{first_err}");
    let c = rusqlite::Connection::open(out.join("results.sqlite")).unwrap();
    let runs: i64 = c
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(runs, 4);
    // Once the first has ended, the store is free again.
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--resume",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("0 runs done now, 4 before"), "{err}");
}

/// A `--resume` that comes after a first run made the store but before
/// it wrote its study row: the resume once opened and read the store
/// before it took the lock, and failed with "no study recorded" instead
/// of naming the run that holds the directory. Made certain here: an
/// empty store whose lock this test holds, as a first run does in that
/// moment.
#[test]
fn a_resume_of_a_store_being_made_is_refused_by_the_lock() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let dir = tmp("tracelab-study-lock-early-");
    let file = dir.path().join("lock.toml");
    std::fs::write(
        &file,
        r#"
name = "lock"
[workload]
sql = "SELECT 1"
runtime = 1
[[factors]]
name = "engine"
levels = [{ name = "sqlite" }]
[report]
rows = "engine"
columns = [{ name = "e", label = "elapsed ms", expr = "$elapsed_ms" }]
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("results.sqlite"), b"").unwrap();
    let mut lock = std::fs::File::create(out.join("results.lock")).unwrap();
    writeln!(lock, "{}", std::process::id()).unwrap();
    // SAFETY: flock on a descriptor this test owns and keeps open.
    let held = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    assert_eq!(held, 0, "the test holds the lock");
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--resume",
    ]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(&format!("pid {}", std::process::id())) && !err.contains("no study recorded"),
        "the holder is named: {err}"
    );
    drop(lock);
}

/// Issue 35: a `--resume` after the user fixed the study file went on
/// with the text stored at the start and failed again the same way. It
/// now goes on with the file as it is, says what changed and keeps the
/// new text in the store; a change to a level the runs done ran is
/// refused, naming it.
#[test]
fn a_resume_takes_the_fixed_study_file_when_the_runs_done_allow() {
    let dir = tmp("tracelab-study-revise-");
    let file = dir.path().join("revise.toml");
    let text = |label: &str, values: &str| {
        format!(
            r#"
name = "revise"
reps = 1
[workload]
sql = "SELECT 1"
runtime = 1
[[factors]]
name = "engine"
levels = [{{ name = "sqlite" }}]
[[factors]]
name = "n"
values = [{values}]
[report]
rows = "n"
columns = [{{ name = "e", label = "{label}", expr = "$elapsed_ms" }}]
"#
        )
    };
    std::fs::write(&file, text("elapsed ms", "1, 2")).unwrap();
    let out = dir.path().join("out");
    let run = || {
        tracelab(&[
            "study",
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--resume",
        ])
    };
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(&file, text("wall ms", "1, 2")).unwrap();
    let (stdout, err, code) = run();
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "the study file changed since the runs stored: report; the runs done are kept"
        ),
        "{err}"
    );
    assert!(
        stdout.contains("wall ms") && !stdout.contains("elapsed ms"),
        "{stdout}"
    );
    let c = rusqlite::Connection::open(out.join("results.sqlite")).unwrap();
    let (now, before): (String, String) = c
        .query_row(
            "SELECT s.text, e.text FROM study s, earlier_texts e",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(now.contains("wall ms") && before.contains("elapsed ms"));
    // A level the runs done ran, gone from the file: refused by name.
    std::fs::write(&file, text("wall ms", "1, 3")).unwrap();
    let (_, err, code) = run();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("factor `n`: level `2`"), "{err}");
}

/// Issue 35: `study report DIR --study FILE` lays the stored runs out by
/// FILE's `[report]` without running again, and refuses a FILE whose
/// workload or levels differ from the stored study's, naming the part.
#[test]
fn a_report_takes_a_layout_edit_from_a_given_study_file() {
    let dir = tmp("tracelab-study-relayout-");
    let file = dir.path().join("relayout.toml");
    let text = |label: &str, sql: &str| {
        format!(
            r#"
name = "relayout"
reps = 1
[workload]
sql = "{sql}"
runtime = 1
[[factors]]
name = "engine"
levels = [{{ name = "sqlite" }}]
[report]
rows = "engine"
columns = [{{ name = "e", label = "{label}", expr = "$elapsed_ms" }}]
"#
        )
    };
    std::fs::write(&file, text("elapsed ms", "SELECT 1")).unwrap();
    let out = dir.path().join("out");
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let report = || {
        tracelab(&[
            "study",
            "report",
            out.to_str().unwrap(),
            "--study",
            file.to_str().unwrap(),
        ])
    };
    std::fs::write(&file, text("time per run (ms)", "SELECT 1")).unwrap();
    let (stdout, err, code) = report();
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("time per run (ms)") && !stdout.contains("elapsed ms"),
        "{stdout}"
    );
    assert!(
        err.contains("differs from the stored study in: report"),
        "{err}"
    );
    // The store is not changed: a plain report keeps the stored label.
    let (stdout, _, _) = tracelab(&["study", "report", out.to_str().unwrap()]);
    assert!(stdout.contains("elapsed ms"), "{stdout}");
    std::fs::write(&file, text("elapsed ms", "SELECT 2")).unwrap();
    let (_, err, code) = report();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`workload` changed"), "{err}");
}

/// The freshness check when the writer's change breaks the readers' query
/// (an `ALTER ... TYPE` the query's predicate cannot take): every read
/// fails from the first change on. The check once saw no stale result
/// among the reads that came before, and said "within the lag: yes"
/// with exit 0; readers' errors fail it.
#[test]
fn a_freshness_check_whose_readers_fail_fails() {
    let dir = tmp("tracelab-study-fresh-ddl-");
    let file = dir.path().join("fresh.toml");
    std::fs::write(
        &file,
        r#"
name = "fresh-ddl"
reps = 1
setup = ["CREATE TABLE f (id int PRIMARY KEY, v text)", "INSERT INTO f VALUES (1, 'fresh 0')"]
[workload]
sql = "SELECT id, v FROM f WHERE id = :1 AND v LIKE 'fresh%'"
binds = "binds.txt"
sessions = 2
runtime = 1
[[factors]]
name = "cache"
levels = [{ name = "on", result_cache = { tables = ["f:force"], lag = 300, setup = true } }]
[report]
rows = "cache"
columns = [{ name = "t", label = "transactions", expr = "$transactions" }]
[freshness]
levels = { cache = "on" }
runtime = 4
every_ms = 300
column = 2
value = "fresh {version}"
write = "ALTER TABLE f ALTER COLUMN v TYPE int USING {version}"
"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("binds.txt"), "1\n").unwrap();
    let out = dir.path().join("out");
    let (stdout, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code, 0, "a failed check is no success:\n{err}\n{stdout}");
    assert!(
        !stdout.contains("Within the lag: yes"),
        "no pass is reported: {stdout}"
    );
    assert!(
        err.contains("freshness check") && err.contains("42883"),
        "the readers' error is named: {err}"
    );
    // The measured run before the check is kept.
    let c = rusqlite::Connection::open(out.join("results.sqlite")).unwrap();
    let runs: i64 = c
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(runs, 1);
}

/// A study file is a program: `--dry-run` lists what it would run (its
/// server settings, its SQL per cell, vars replaced) and runs nothing;
/// a server setting that runs a program is refused without
/// `--allow-server-programs`; a setting name that would write lines of
/// its own into postgresql.conf is refused at its line.
#[test]
fn a_study_that_runs_programs_is_listed_and_refused_without_consent() {
    let dir = tmp("tracelab-study-programs-");
    let ran = dir.path().join("ran");
    let copied = dir.path().join("copied");
    let vacuumed = dir.path().join("vacuumed.db");
    let file = dir.path().join("programs.toml");
    std::fs::write(
        &file,
        format!(
            r#"
name = "programs"
reps = 1
setup.postgres = "COPY (SELECT 1) TO PROGRAM 'touch {copied}'"
setup.sqlite = "VACUUM INTO '{vacuumed}'"
[server]
archive_mode = "on"
archive_command = "touch {ran}"
[workload]
sql = "SELECT {{n}}"
statements = 1
[[factors]]
name = "engine"
levels = [{{ name = "postgres" }}, {{ name = "sqlite" }}]
[[factors]]
name = "n"
values = [7]
[report]
rows = "n"
columns = [{{ name = "e", label = "elapsed ms", expr = "$elapsed_ms" }}]
"#,
            copied = copied.display(),
            vacuumed = vacuumed.display(),
            ran = ran.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let f = file.to_str().unwrap();
    let o = out.to_str().unwrap();

    let (stdout, err, code) = tracelab(&["study", "run", f, "--out", o, "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "archive_command = \"touch",
        "needs --allow-server-programs",
        "COPY (SELECT 1) TO PROGRAM 'touch",
        "^ runs a program",
        "VACUUM INTO '",
        "^ writes a database file",
        "cell engine=postgres n=7: 1 run",
        "cell engine=sqlite n=7: 1 run",
        "SELECT 7;",
    ] {
        assert!(
            stdout.contains(want),
            "the dry run shows {want:?}:\n{stdout}"
        );
    }
    assert!(!out.exists(), "a dry run makes no results directory");
    assert!(!copied.exists() && !vacuumed.exists() && !ran.exists());

    let (_, err, code) = tracelab(&["study", "run", f, "--out", o]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("archive_command") && err.contains("--allow-server-programs"),
        "{err}"
    );
    assert!(!copied.exists() && !vacuumed.exists() && !ran.exists());
    assert!(!out.join("results.sqlite").exists());

    // A name carrying lines of its own (postgresql.conf takes `name
    // value` lines) is refused at its line, before anything runs.
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "archive_mode = \"on\"",
        "\"work_mem 64MB\\nfsync\" = \"off\"",
    );
    std::fs::write(&file, text).unwrap();
    let (_, err, code) = tracelab(&["study", "run", f, "--out", o, "--dry-run"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("programs.toml:") && err.contains("not a setting name"),
        "{err}"
    );
}

/// `[report.published]` ratios and directions beside this run's: a study
/// on SQLite whose column is exact (statements per run), so that each
/// verdict is known beforehand.
#[test]
fn the_originals_ratios_and_directions_are_judged_against_ours() {
    let dir = tmp("tracelab-study-published-");
    let file = dir.path().join("published.toml");
    std::fs::write(
        &file,
        r#"
name = "published"
reps = 2
[workload]
sql = "select 1"
statements = "{n}"
[[factors]]
name = "engine"
values = ["sqlite"]
[[factors]]
name = "size"
levels = [{ name = "small", vars = { n = 100 } }, { name = "big", vars = { n = 200 } }, { name = "huge", vars = { n = 400 } }]
[report]
rows = "size"
baseline = "small"
columns = [{ name = "stmts", label = "statements", expr = "$statements" }]
[report.published]
title = "a made-up original"
columns = ["stmts"]
ratios = [
  { size = "big", stmts = 2.0 },
  { size = "huge", stmts = 3.0, why = "ours doubles twice" },
]
cells = [{ size = "small", stmts = 10 }, { size = "huge", stmts = 4, why = "the other way" }]
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let (stdout, err, code) = tracelab(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let line = |cell: &str| -> String {
        stdout
            .lines()
            .find(|l| l.starts_with(cell))
            .unwrap_or_else(|| panic!("no row {cell}: {stdout}"))
            .to_string()
    };
    // big / small: 200 / 100 against the original's ×2.00: the same.
    let big = line("size=big / small");
    assert!(big.contains("×2.00"), "{big}");
    assert!(big.contains("agrees"), "{big}");
    // huge / small: ours ×4.00 against the original's ×3.00 (a ratio)
    // and ×0.40 (its two cells, 4 / 10): larger, and opposite.
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("size=huge / small"))
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(
        rows.iter().any(|r| r.contains("×3.00")
            && r.contains("same direction (higher), larger here")
            && r.contains("ours doubles twice")),
        "{rows:?}"
    );
    assert!(
        rows.iter().any(|r| r.contains("×0.40")
            && r.contains("opposite direction: higher here, lower in the original")
            && r.contains("the other way")),
        "{rows:?}"
    );
    // A ratio of the baseline itself is a mistake in the study file.
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&file).unwrap().replace(
            r#"{ size = "big", stmts = 2.0 }"#,
            r#"{ size = "small", stmts = 2.0 }"#,
        ),
    )
    .unwrap();
    let (_, err, code) = tracelab(&["study", "run", bad.to_str().unwrap(), "--dry-run"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("report.published"), "{err}");
    assert!(err.contains("other than the baseline"), "{err}");
}

//! Ctrl-C, SIGTERM and SIGHUP are handled one way by `run`, `study` and
//! `db start`: the work stops, what was measured is printed and written,
//! the private server and its directory go, and the exit status is 128 +
//! the signal. After a SIGKILL, the next start removes the orphaned
//! server. Each test gives tracelab a temporary directory of its own
//! (TMPDIR), so that what is left behind can be seen.

mod common;
use common::bin;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A TMPDIR for one test, which the server user can reach.
fn tmpdir(prefix: &str) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/tmp")
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// Starts tracelab in a process group of its own (as a shell starts a
/// foreground job), with TMPDIR set.
fn spawn(args: &[&str], tmp: &Path) -> Child {
    Command::new(bin())
        .args(args)
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("run tracelab")
}

/// Waits (at most 60 s) until `ready` holds.
fn wait_for(what: &str, ready: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !ready() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What is in a directory.
fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Processes whose command line mentions `dir` (a server left behind).
fn processes_in(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    entries(Path::new("/proc"))
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|p| std::fs::read(p.join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle))
        .collect()
}

/// What is left in `tmp` of tracelab's own (`tracelab-db-*`, ...).
fn left_behind(tmp: &Path, prefix: &str) -> Vec<PathBuf> {
    entries(tmp)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect()
}

/// Nothing of tracelab's in `tmp`, no process running there.
fn nothing_left(tmp: &Path, prefix: &str) {
    let left = left_behind(tmp, prefix);
    assert!(left.is_empty(), "{left:?}");
    let running = processes_in(tmp);
    assert!(running.is_empty(), "{running:?}");
}

/// Waits until initdb is at work: the cluster's directories appear.
fn initdb_at_work(tmp: &Path) {
    wait_for("initdb at work", || {
        entries(tmp)
            .iter()
            .any(|d| d.join("data").join("base").exists())
    });
}

fn signal(child: &Child, sig: i32, group: bool) {
    let pid = child.id() as i32;
    // SAFETY: kill takes plain integers.
    let rc = unsafe { libc::kill(if group { -pid } else { pid }, sig) };
    assert_eq!(rc, 0);
}

fn finish(child: Child) -> (String, String, i32) {
    let o = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

/// SIGTERM and SIGHUP to a run on its private server: the summary and
/// the tally are written, the server and its directory go, the exit
/// status says which signal (it was 143 with nothing printed, and the
/// postgres process and /tmp/tracelab-db-* left behind).
#[test]
fn sigterm_and_sighup_end_a_run_as_ctrl_c_does() {
    for (sig, status) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let tmp = tmpdir("tracelab-sig-run-");
        let traces = tmp.path().join("traces");
        let tally = tmp.path().join("tally");
        let child = spawn(
            &[
                "run",
                "--sql",
                "select 1",
                "--runtime",
                "60",
                "--trace",
                traces.to_str().unwrap(),
                "--xact-tally-file",
                tally.to_str().unwrap(),
            ],
            tmp.path(),
        );
        // The session is at work once its trace exists.
        wait_for("a session at work", || {
            traces.join("tracelab_run_0.trc").exists()
        });
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, sig, false);
        let (out, err, code) = finish(child);
        assert_eq!(code, status, "{out}{err}");
        assert!(out.contains("transactions: "), "a summary: {out}");
        let tally = std::fs::read_to_string(&tally).unwrap();
        assert!(tally.starts_with("tracelab_run_0: "), "{tally}");
        nothing_left(tmp.path(), "tracelab-db-");
    }
}

/// Ctrl-C at the terminal (SIGINT to the whole foreground group) while the
/// private server is being made: exit 130, no dump of initdb's output, and
/// nothing left (it was exit 4 with initdb's output and the directory
/// left behind).
#[test]
fn ctrl_c_while_the_private_server_is_made_leaves_nothing() {
    let tmp = tmpdir("tracelab-sig-make-");
    let child = spawn(&["run", "--sql", "select 1", "--runtime", "5"], tmp.path());
    // initdb is at work once the cluster's directories appear.
    initdb_at_work(tmp.path());
    signal(&child, libc::SIGINT, true);
    let (out, err, code) = finish(child);
    assert_eq!(code, 130, "{out}{err}");
    assert!(
        err.lines().count() <= 1 && !err.contains("initdb failed"),
        "{err}"
    );
    nothing_left(tmp.path(), "");
}

/// `db start` without --dir, interrupted while it makes the server: its
/// temporary directory goes.
#[test]
fn an_interrupted_db_start_removes_what_it_made() {
    let tmp = tmpdir("tracelab-sig-db-");
    let child = spawn(&["db", "start"], tmp.path());
    initdb_at_work(tmp.path());
    signal(&child, libc::SIGTERM, false);
    let (out, err, code) = finish(child);
    assert_eq!(code, 143, "{out}{err}");
    nothing_left(tmp.path(), "");
}

/// After a SIGKILL nothing can clean up: the private server keeps running
/// in its directory, which names its owner. The next run that starts a
/// server finds it, stops it and removes it.
#[test]
fn after_a_sigkill_the_next_start_removes_the_orphaned_server() {
    let tmp = tmpdir("tracelab-sig-kill-");
    let traces = tmp.path().join("traces");
    let mut child = spawn(
        &[
            "run",
            "--sql",
            "select 1",
            "--runtime",
            "60",
            "--trace",
            traces.to_str().unwrap(),
        ],
        tmp.path(),
    );
    wait_for("a session at work", || {
        traces.join("tracelab_run_0.trc").exists()
    });
    child.kill().unwrap();
    let _ = child.wait();
    let orphan = left_behind(tmp.path(), "tracelab-db-");
    assert_eq!(orphan.len(), 1, "{orphan:?}");
    assert!(
        !processes_in(&orphan[0]).is_empty(),
        "the server outlived it"
    );
    let o = Command::new(bin())
        .args(["run", "--sql", "select 1", "--transactions", "1"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "removed an orphaned private server whose tracelab was killed: {}",
            orphan[0].display()
        )),
        "{err}"
    );
    assert!(!orphan[0].exists());
    assert!(
        processes_in(&orphan[0]).is_empty(),
        "{:?}",
        processes_in(&orphan[0])
    );
}

/// SIGTERM to a study: it stops after the run in flight, as Ctrl-C does,
/// reports, says how to resume, and removes its private server.
#[test]
fn sigterm_ends_a_study_as_ctrl_c_does() {
    let tmp = tmpdir("tracelab-sig-study-");
    let file = common::small_study(tmp.path(), "SELECT pg_sleep(0.2)", 20);
    let out = tmp.path().join("out");
    let child = spawn(
        &[
            "study",
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    // Runs are being stored.
    wait_for("a run stored", || {
        rusqlite::Connection::open(out.join("results.sqlite"))
            .and_then(|c| c.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0)))
            .is_ok_and(|n| n >= 1)
    });
    signal(&child, libc::SIGTERM, false);
    let (report, err, code) = finish(child);
    assert_eq!(code, 143, "{err}");
    assert!(report.contains("elapsed ms"), "{report}");
    assert!(err.contains("--resume"), "{err}");
    nothing_left(tmp.path(), "tracelab-");
}

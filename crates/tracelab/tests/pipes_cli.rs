//! A reader that goes away: `tracelab study list | head -1` and the like
//! end quietly with the command's own status, as Unix tools do, instead of
//! panicking (exit 101, "failed printing to stdout: Broken pipe"); and a
//! closed standard error loses the messages, not the work.

mod common;
use common::{bin, tracelab};

use std::process::{Command, Stdio};

/// Runs `tracelab ARGS` with standard output (or error) a pipe whose
/// reader has already gone, so that the first write fails with EPIPE;
/// returns the exit code and what the other stream got.
fn with_closed(args: &[&str], close_stdout: bool) -> (i32, String) {
    let mut cmd = Command::new(bin());
    cmd.args(args);
    if close_stdout {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    } else {
        cmd.stderr(Stdio::piped()).stdout(Stdio::piped());
    }
    let mut child = cmd.spawn().expect("run tracelab");
    // Close the read end before the child writes anything.
    let text = if close_stdout {
        drop(child.stdout.take());
        child.stderr.take().map(std::io::read_to_string)
    } else {
        drop(child.stderr.take());
        child.stdout.take().map(std::io::read_to_string)
    };
    let text = text.and_then(Result::ok).unwrap_or_default();
    let status = child.wait().unwrap();
    (status.code().unwrap_or(-1), text)
}

#[test]
fn a_closed_standard_output_ends_quietly() {
    for args in [
        &["study", "list"][..],
        &["study", "show", "commit-batch"],
        &["skew", "--listrc"],
    ] {
        let (code, err) = with_closed(args, true);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
    // `db status` of a stopped server: its own status (1), quietly.
    let dir = tempfile::Builder::new()
        .prefix("tracelab-pipes-")
        .tempdir_in("/tmp")
        .unwrap();
    let pg = dir.path().join("pg");
    let (_, err, code) = tracelab(&["db", "start", "--dir", pg.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (_, err, code) = tracelab(&["db", "stop", "--dir", pg.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = with_closed(&["db", "status", "--dir", pg.to_str().unwrap()], true);
    assert_eq!(code, 1, "{err}");
    assert!(err.is_empty(), "{err}");
    // `study report` of a store.
    let study = common::small_study(dir.path(), "select 1", 1);
    let out = dir.path().join("out");
    let db = format!("sqlite:{}", dir.path().join("s.sqlite").display());
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        study.to_str().unwrap(),
        "--db",
        &db,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = with_closed(&["study", "report", out.to_str().unwrap()], true);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
}

#[test]
fn a_closed_standard_error_loses_the_messages_not_the_report() {
    // A trace with a damaged line: a warning goes to standard error.
    let dir = tempfile::tempdir().unwrap();
    let trc = dir.path().join("x.trc");
    std::fs::write(
        &trc,
        "*** 2024-01-01 00:00:00.000\n\
         EXEC #1:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=100\n\
         EXEC #1:c=zz,e=10,p=0,tim=200\n\
         WAIT #1: nam='SQL*Net message from client' ela= 5 driver id=0 #bytes=1 p3=0 obj#=-1 tim=300\n",
    )
    .unwrap();
    let (code, out) = with_closed(&["skew", "--verbose", trc.to_str().unwrap()], false);
    assert_eq!(code, 1, "damaged input is exit 1, not a panic: {out}");
    assert!(
        out.starts_with("CALL-NAME") && out.contains("EXEC"),
        "{out}"
    );
}

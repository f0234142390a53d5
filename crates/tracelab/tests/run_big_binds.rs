//! `tracelab run` with a big bind file: the rows are held once for all
//! sessions, compactly (memory a small multiple of the file, whatever the
//! number of sessions), and the run's time is the sessions' work, not
//! the file's loading.

mod common;
use common::bin;

use std::process::{Command, Stdio};

/// Runs `tracelab ARGS` and returns its standard output and its peak
/// resident memory in kB (VmHWM, read from /proc while it runs: the peak
/// only grows, so the last read before it exits is the peak to within a
/// poll).
fn peak_kb(args: &[&str]) -> (String, u64) {
    let mut child = Command::new(bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tracelab");
    let status = format!("/proc/{}/status", child.id());
    let mut hwm = 0;
    while child.try_wait().unwrap().is_none() {
        if let Ok(text) = std::fs::read_to_string(&status) {
            if let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                hwm = hwm.max(kb);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (stdout, hwm)
}

#[test]
fn a_big_bind_file_is_held_once_and_not_timed() {
    let dir = tempfile::Builder::new()
        .prefix("tracelab-big-binds-")
        .tempdir_in("/tmp")
        .unwrap();
    // 2 million rows, 14.9 MB: `seq 1 2000000`.
    let big = dir.path().join("big.csv");
    let text: String = (1..=2_000_000).map(|i| format!("{i}\n")).collect();
    std::fs::write(&big, &text).unwrap();
    let small = dir.path().join("small.csv");
    std::fs::write(&small, "1\n").unwrap();
    let run = |binds: &std::path::Path| {
        peak_kb(&[
            "run",
            "--engine",
            "sqlite",
            "--sql",
            "select :1",
            "--binds",
            binds.to_str().unwrap(),
            "--binds-order",
            "shuffled",
            "--sessions",
            "8",
            "--runtime",
            "1",
            "--json",
        ])
    };
    let (_, base_kb) = run(&small);
    let (out, big_kb) = run(&big);
    let file_kb = text.len() as u64 / 1024;
    // The file's values and 4 bytes of offset each: about 1.5 times the
    // file (the rows as strings, copied for the sessions, took 40 times).
    assert!(
        big_kb.saturating_sub(base_kb) <= 3 * file_kb,
        "a {file_kb} kB bind file took {} kB more than one of one row ({base_kb} kB)",
        big_kb.saturating_sub(base_kb)
    );
    // The run's time is its sessions' second, not the loading's too (a
    // wide margin for a loaded machine; loading took seconds here).
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    let runtime = v["runtime_s"].as_f64().unwrap();
    assert!((1.0..1.7).contains(&runtime), "runtime_s {runtime}");
    let tps = v["tps"].as_f64().unwrap();
    let tx = v["transactions"].as_f64().unwrap();
    assert!(
        (tps - tx / runtime).abs() < 1.0,
        "tps {tps}, {tx} in {runtime} s"
    );
}

//! `tracelab calls` on inputs that can be read only once: a FIFO, and
//! bash's `<(cmd)`. They export the same rows as the file itself (the
//! header's facts too), as skew and prof read them.

mod common;
use common::{bin, fixture};

use std::process::Command;

/// The CSV's rows with the input's name (in `file`, and in the `sqlid`
/// of statements without one) replaced by `INPUT`, without `basename`:
/// what differs between the file and the pipe.
fn rows_without_names(csv: &std::path::Path) -> (Vec<String>, usize) {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |name: &str| head.iter().position(|c| *c == name).unwrap();
    let lines: Vec<&str> = lines.collect();
    let input = lines
        .first()
        .map_or("", |l| l.split(',').nth(col("file")).unwrap_or(""));
    assert!(!input.is_empty(), "{text}");
    let rows: Vec<String> = lines
        .iter()
        .map(|l| {
            l.replace(input, "INPUT")
                .split(',')
                .enumerate()
                .filter(|(i, _)| *i != col("basename"))
                .map(|(_, v)| v)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    let n = rows.len();
    (rows, n)
}

#[test]
fn a_fifo_and_a_process_substitution_export_what_the_file_does() {
    let dir = tempfile::Builder::new()
        .prefix("tracelab-calls-fifo-")
        .tempdir_in("/tmp")
        .unwrap();
    let trace = fixture("oracle-samples/dokt_ora_26478.trc");
    let plain = dir.path().join("plain.csv");
    let out = Command::new(bin())
        .args(["calls", &trace, "-o", plain.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (want, n) = rows_without_names(&plain);
    assert!(n >= 20, "the fixture has calls: {n}");

    // A FIFO that a writer fills once.
    let fifo = dir.path().join("dokt_ora_26478.trc");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let writer = {
        let (trace, fifo) = (trace.clone(), fifo.clone());
        std::thread::spawn(move || {
            let data = std::fs::read(trace).unwrap();
            std::fs::write(fifo, data).unwrap();
        })
    };
    let piped = dir.path().join("fifo.csv");
    let out = Command::new(bin())
        .args([
            "calls",
            fifo.to_str().unwrap(),
            "-o",
            piped.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    writer.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("{n} calls of 1 file")), "{err}");
    assert_eq!(rows_without_names(&piped).0, want);
    // The header's facts were read too (the files table).
    let files = |csv: &std::path::Path| rows_without_names(&csv.with_extension("files.csv")).0;
    assert_eq!(files(&piped), files(&plain));
    assert!(
        files(&piped)[0].contains(",n4000,DOKT,26478,42.65,"),
        "{:?}",
        files(&piped)
    );

    // bash's process substitution: /dev/fd/N, a pipe.
    let subst = dir.path().join("subst.csv");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "'{}' calls <(cat '{trace}') -o '{}'",
            bin(),
            subst.display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(rows_without_names(&subst).0, want);
    assert!(files(&subst)[0].contains(",42.65,"), "{:?}", files(&subst));
}

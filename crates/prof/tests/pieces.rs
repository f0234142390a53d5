//! A big file is read in pieces on several threads and the pieces added
//! up: the profile must be the one a single reader makes, figure for
//! figure (recursive calls, waits and executions that straddle a cut
//! included).

use std::io::{Read, Write};
use std::path::Path;

use tracelab_prof::{profile, to_json, FileOutcome, ProfOptions};

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn json(path: &str, jobs: usize) -> String {
    let out = profile(
        &[path.to_string()],
        &ProfOptions {
            thinktime: 1.0,
            jobs,
            top: 0,
            ..ProfOptions::default()
        },
        None,
    )
    .unwrap();
    let profiles: Vec<_> = out
        .files
        .iter()
        .map(|f| match f {
            FileOutcome::Profiled(p) => &**p,
            FileOutcome::Skipped { why, .. } => panic!("{why}"),
        })
        .collect();
    to_json(&profiles)
}

#[test]
fn pieces_add_up_to_the_whole_read() {
    // Over 16 MB (the reader's smallest split): eight of the real 19c
    // traces, with the trcsess merge (four depths, two processes) and the
    // dblink trace between them.
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.trc");
    let mut out = std::fs::File::create(&big).unwrap();
    let mut crc: Vec<_> = std::fs::read_dir(fixtures().join("crc-local-force"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".trc.gz"))
        .collect();
    crc.sort();
    for (i, gz) in crc.iter().take(8).enumerate() {
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(gz).unwrap())
            .read_to_end(&mut text)
            .unwrap();
        out.write_all(&text).unwrap();
        if i == 3 {
            out.write_all(&std::fs::read(fixtures().join("trace-combine/main.trc")).unwrap())
                .unwrap();
        }
        if i == 5 {
            out.write_all(
                &std::fs::read(fixtures().join("db-ping/cdb1_ora_15440_PINGTEST.trc")).unwrap(),
            )
            .unwrap();
        }
    }
    drop(out);
    assert!(std::fs::metadata(&big).unwrap().len() > 20 << 20);
    let path = big.to_string_lossy().into_owned();
    let whole = json(&path, 1);
    let pieces = json(&path, 4);
    let v: serde_json::Value = serde_json::from_str(&whole).unwrap();
    assert!(v[0]["statements"].as_array().unwrap().len() > 20);
    if whole != pieces {
        let (a, b): (Vec<&str>, Vec<&str>) = (whole.lines().collect(), pieces.lines().collect());
        let i = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        panic!(
            "pieces differ from the whole read at JSON line {i}:\nwhole:  {}\npieces: {}\n(context: {})",
            a.get(i).unwrap_or(&""),
            b.get(i).unwrap_or(&""),
            a[i.saturating_sub(12)..i].join("\n")
        );
    }
}

//! Reading a big file in pieces on several threads must hand out exactly
//! the calls, line numbers and statement contexts of a whole read.

use std::io::{Read, Write};
use std::path::Path;

use tracelab_trace::{open, ReadOptions, Reader, Source};

type Seen = (u64, String, String, Option<i64>, i64, i64);

fn big_trace(dir: &Path) -> std::path::PathBuf {
    big_trace_with(dir, |t| t)
}

fn big_trace_with(dir: &Path, edit: impl Fn(Vec<u8>) -> Vec<u8>) -> std::path::PathBuf {
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/crc-local-force");
    let mut text = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".gz"))
        .collect();
    names.sort();
    for p in names.iter().take(7) {
        let mut d = flate2::read::MultiGzDecoder::new(std::fs::File::open(p).unwrap());
        d.read_to_end(&mut text).unwrap();
    }
    let text = edit(text);
    assert!(text.len() > 17 << 20, "bigger than the split threshold");
    let path = dir.join("big.trc");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&text)
        .unwrap();
    path
}

fn seen(c: &tracelab_trace::Call<'_>) -> Seen {
    (
        c.line,
        c.name.to_string(),
        c.stmt.sqlid.clone(),
        c.dep,
        c.af_us(),
        c.depmin,
    )
}

#[test]
fn pieces_read_like_the_whole() {
    let dir = std::env::temp_dir().join(format!("tracelab-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = big_trace(&dir);

    let mut whole: Vec<Seen> = Vec::new();
    let whole_summary = Reader::new(ReadOptions::default())
        .read(open(&Source::Path(path.clone())).unwrap(), |c| {
            whole.push(seen(c))
        })
        .unwrap();

    for parts in [2, 3, 5] {
        let file = open(&Source::Path(path.clone())).unwrap();
        let mut reader = Reader::new(ReadOptions::default());
        assert!(reader.can_split(&file));
        let (states, summary) = reader
            .read_split(
                file,
                parts,
                |_| Vec::new(),
                |v: &mut Vec<Seen>, c| v.push(seen(c)),
            )
            .unwrap();
        assert!(states.len() > 1, "{parts} parts were made");
        let pieced: Vec<Seen> = states.into_iter().flatten().collect();
        assert_eq!(pieced.len(), whole.len());
        assert_eq!(pieced, whole, "{parts} parts");
        assert_eq!(summary.lines, whole_summary.lines);
        assert_eq!(summary.calls, whole_summary.calls);
        assert_eq!(summary.depmin, whole_summary.depmin);
    }
    // Without statements and line numbers the pieces are read once; lines
    // are translated afterwards and only statement context may differ.
    let lean = ReadOptions {
        statements: false,
        line_numbers: false,
        ..ReadOptions::default()
    };
    let file = open(&Source::Path(path.clone())).unwrap();
    let (states, summary) = Reader::new(lean)
        .read_split(
            file,
            4,
            |_| Vec::new(),
            |v: &mut Vec<(u64, u64, String, i64)>, c| {
                v.push((c.offset, c.line, c.name.to_string(), c.af_us()))
            },
        )
        .unwrap();
    assert!(states.len() > 1);
    let lean: Vec<(u64, String, i64)> = states
        .into_iter()
        .flatten()
        .map(|(offset, line, name, af)| (summary.absolute_line(offset, line), name, af))
        .collect();
    let want: Vec<(u64, String, i64)> = whole.iter().map(|w| (w.0, w.1.clone(), w.4)).collect();
    assert_eq!(lean, want);
    assert_eq!(summary.lines, whole_summary.lines);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every depth one deeper: no top-level call anywhere, so each piece must
/// find the file's minimum depth on its own, and the pieces that started
/// inside deeper recursive SQL guessed it wrong and are read again.
#[test]
fn pieces_that_guess_depmin_wrong_are_read_again() {
    let dir = std::env::temp_dir().join(format!("tracelab-split-deep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = big_trace_with(&dir, |t| {
        let s = String::from_utf8_lossy(&t)
            .replace(",dep=1,", ",dep=2,")
            .replace(",dep=0,", ",dep=1,")
            .replace(" dep=1 ", " dep=2 ")
            .replace(" dep=0 ", " dep=1 ");
        s.into_bytes()
    });
    let mut whole: Vec<Seen> = Vec::new();
    let whole_summary = Reader::new(ReadOptions::default())
        .read(open(&Source::Path(path.clone())).unwrap(), |c| {
            whole.push(seen(c))
        })
        .unwrap();
    assert_eq!(whole_summary.depmin, 1);
    // The whole read hands out a tentative depmin at first; compare the
    // calls after it settled, and the pieces against a read with it fixed.
    let mut fixed: Vec<Seen> = Vec::new();
    Reader::new(ReadOptions {
        depmin: Some(1),
        ..ReadOptions::default()
    })
    .read(open(&Source::Path(path.clone())).unwrap(), |c| {
        fixed.push(seen(c))
    })
    .unwrap();
    let file = open(&Source::Path(path.clone())).unwrap();
    let (states, summary) = Reader::new(ReadOptions::default())
        .read_split(
            file,
            4,
            |_| Vec::new(),
            |v: &mut Vec<Seen>, c| v.push(seen(c)),
        )
        .unwrap();
    assert!(states.len() > 1);
    let pieced: Vec<Seen> = states.into_iter().flatten().collect();
    assert_eq!(summary.depmin, 1);
    assert_eq!(pieced, fixed);
    std::fs::remove_dir_all(&dir).unwrap();
}

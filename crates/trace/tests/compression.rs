//! Compressed input is recognised by content, whatever the file is called.

use std::io::Write;
use std::path::{Path, PathBuf};

use tracelab_trace::{open, Compression, ReadOptions, Reader, Source};

fn plain() -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/db-ping/cdb1_ora_15440_PINGTEST.trc"),
    )
    .unwrap()
}

fn calls(path: &Path) -> (Compression, String, Vec<(u64, String, i64)>) {
    let f = open(&Source::Path(path.to_path_buf())).unwrap();
    let (comp, base) = (f.compression, f.basename.clone());
    let mut v = Vec::new();
    Reader::new(ReadOptions::default())
        .read(f, |c| v.push((c.line, c.name.to_string(), c.af_us())))
        .unwrap();
    (comp, base, v)
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn gzip_bzip2_xz_zstd_read_like_plain() {
    let dir = std::env::temp_dir().join(format!("tracelab-comp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = plain();
    let (c0, b0, want) = calls(&write(&dir, "x.trc", &text));
    assert_eq!((c0, b0.as_str()), (Compression::None, "x.trc"));
    let call_lines = String::from_utf8_lossy(&text)
        .lines()
        .filter(|l| {
            [
                "WAIT #", "PARSE #", "EXEC #", "FETCH #", "CLOSE #", "XCTEND ",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .count();
    assert_eq!(want.len(), call_lines);

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&text).unwrap();
    let gz = gz.finish().unwrap();
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    bz.write_all(&text).unwrap();
    let bz = bz.finish().unwrap();
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(&text).unwrap();
    let xz = xz.finish().unwrap();
    let zst = zstd::encode_all(&text[..], 1).unwrap();

    for (name, bytes, comp, base) in [
        ("x.trc.gz", &gz, Compression::Gzip, "x.trc"),
        ("x.trc.bz2", &bz, Compression::Bzip2, "x.trc"),
        ("x.trc.xz", &xz, Compression::Xz, "x.trc"),
        ("x.trc.zst", &zst, Compression::Zstd, "x.trc"),
        // Named like a plain file: recognised by content all the same.
        ("misnamed.trc", &gz, Compression::Gzip, "misnamed.trc"),
    ] {
        let (c, b, got) = calls(&write(&dir, name, bytes));
        assert_eq!(c, comp, "{name}");
        assert_eq!(b, base, "{name}");
        assert_eq!(got, want, "{name}");
    }
    // Two gzip members back to back (`cat a.gz b.gz`) read as one text.
    let mut two = gz.clone();
    two.extend_from_slice(&gz);
    let (_, _, got) = calls(&write(&dir, "two.trc.gz", &two));
    assert_eq!(got.len(), want.len() * 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

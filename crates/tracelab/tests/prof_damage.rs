//! `prof`'s response time R and `skew --unaccounted`'s TOTAL are the same
//! total, on damaged and out-of-order input too: both follow one rule for
//! `tim` going back, files concatenated, sessions taking turns, processes
//! of a trcsess merge and lines skipped (docs/prof.md, docs/skew.md). Every
//! damaged file is made here, from the real traces of tests/fixtures.

mod common;
use common::{db_ping, fixture, tempdir, tracelab};

use std::io::{Read, Write};
use std::path::Path;

const HEADER: &str = "Trace file /u01/app/oracle/diag/rdbms/orcl/orcl/trace/orcl_ora_100.trc\n\
Oracle Database 11g Enterprise Edition Release 11.1.0.7.0 - 64bit Production\n\
Unix process pid: 100, image: oracle@db1\n\n";

fn crc(pid: u32) -> Vec<u8> {
    let path = fixture(&format!(
        "crc-local-force/orcl_ora_{pid}_RC-20230830160541-20230703160541.trc.gz"
    ));
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    text
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_string_lossy().into_owned()
}

/// The TOTAL row's duration of a table.
fn total(out: &str) -> Option<String> {
    out.lines()
        .find(|l| l.starts_with("TOTAL ("))
        .and_then(|l| l.split_whitespace().nth(2).map(str::to_string))
}

fn lines(b: &[u8]) -> Vec<&[u8]> {
    b.split(|&c| c == b'\n').collect()
}

#[test]
fn prof_r_is_skews_unaccounted_total_on_every_damaged_file() {
    let dir = tempdir("prof-damage");
    let ping = std::fs::read(db_ping()).unwrap();
    let merge = std::fs::read(fixture("trace-combine/main.trc")).unwrap();
    let mut files: Vec<(&str, String)> = Vec::new();
    // 200 copies of one trace, compressed: tim goes back at each copy.
    files.push((
        "copies",
        write(&dir, "copies.trc.gz", &gz(&ping.repeat(200))),
    ));
    // Three traces of different days concatenated: tim jumps back, then
    // forward by years; the trcsess merge's processes take turns.
    files.push((
        "concatenated",
        write(
            &dir,
            "cat.trc",
            &[&ping[..], &merge, &crc(30561), &ping].concat(),
        ),
    ));
    // The same without the second file's header: a forward jump of years
    // inside one walk is a gap, as in any trace, and both count it.
    let c30561 = crc(30561);
    let headless: Vec<&[u8]> = lines(&c30561)
        .into_iter()
        .filter(|l| !l.starts_with(b"Trace file "))
        .collect();
    files.push((
        "concatenated without headers",
        write(
            &dir,
            "headless.trc",
            &[&ping[..], &headless.join(&b'\n')].concat(),
        ),
    ));
    // Lines in reverse order.
    let mut rev = lines(&ping);
    rev.reverse();
    files.push(("reversed", write(&dir, "rev.trc", &rev.join(&b'\n'))));
    // Pairs of lines swapped all along: calls out of order.
    let text = crc(30539);
    let mut swapped = lines(&text);
    for i in (0..swapped.len() - 1).step_by(7) {
        swapped.swap(i, i + 1);
    }
    files.push(("swapped", write(&dir, "swapped.trc", &swapped.join(&b'\n'))));
    // One line in three lost.
    let sparse: Vec<&[u8]> = lines(&text)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % 3 != 1)
        .map(|(_, l)| l)
        .collect();
    files.push((
        "lines lost",
        write(&dir, "sparse.trc", &sparse.join(&b'\n')),
    ));
    // Cut short in a compressed stream.
    let z = gz(&text);
    files.push(("cut", write(&dir, "cut.trc.gz", &z[..z.len() * 6 / 10])));
    // A shared server's sessions taking turns, and 11.1's overlapping calls.
    files.push((
        "shared server",
        write(
            &dir,
            "orcl_s000_100.trc",
            format!(
                "{HEADER}*** 2023-08-30 16:05:41.000\n\
*** SESSION ID:(10.1) 2023-08-30 16:05:41.000\n\
EXEC #1:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1000\n\
WAIT #1: nam='SQL*Net message from client' ela= 20 driver id=1 #bytes=1 p3=0 obj#=-1 tim=1030\n\
EXEC #1:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1050\n\
WAIT #1: nam='SQL*Net message to client' ela= 3 driver id=1 #bytes=1 p3=0 obj#=-1 tim=1060\n\
*** SESSION ID:(20.2) 2023-08-30 16:05:41.004\n\
EXEC #2:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=5000\n\
EXEC #2:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=5020\n\
*** SESSION ID:(10.1) 2023-08-30 16:05:41.008\n\
EXEC #1:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=9000\n\
EXEC #1:c=50,e=100,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=9200\n\
PARSE #1:c=10,e=50,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=9210\n\
WAIT #1: nam='SQL*Net message to client' ela= 5 driver id=1 #bytes=1 p3=0 obj#=-1 tim=9208\n\
FETCH #1:c=20,e=30,p=0,cr=0,cu=0,mis=0,r=1,dep=0,og=1,plh=0,tim=9300\n"
            )
            .as_bytes(),
        ),
    ));
    // Over 16 MB, so that prof reads it in pieces on several threads: the
    // real traces in reverse order of time, twice.
    let mut big = Vec::new();
    for _ in 0..2 {
        for pid in [30549, 30547, 30545, 30543, 30541, 30539, 30537] {
            big.extend(crc(pid));
        }
    }
    assert!(big.len() > 17 << 20);
    files.push(("big, in pieces", write(&dir, "big.trc", &big)));
    let mut checked = 0;
    for (what, f) in &files {
        let (p, perr, _) = tracelab(&["prof", "--jobs=4", f]);
        let (s, serr, _) = tracelab(&["skew", "--unaccounted", f]);
        let (r, t) = (total(&p), total(&s));
        assert!(r.is_some(), "{what}: no profile: {perr}");
        assert_eq!(
            r, t,
            "{what}: prof R against skew --unaccounted's TOTAL\n{perr}\n{serr}"
        );
        let line = p
            .lines()
            .find(|l| l.starts_with("Response time R = "))
            .unwrap();
        assert!(
            line.starts_with(&format!("Response time R = {} s", r.unwrap())),
            "{what}: {line}"
        );
        checked += 1;
    }
    assert_eq!(checked, 9);
    std::fs::remove_dir_all(dir).unwrap();
}

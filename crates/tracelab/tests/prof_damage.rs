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

/// `n` distinct statements (literals, no binds), each parsed and run once.
fn many_statements(n: usize) -> String {
    use std::fmt::Write as _;
    let mut s = String::from("Trace file /tmp/many.trc\n\n");
    let mut t = 1000;
    for i in 0..n {
        t += 10;
        let _ = write!(
            s,
            "PARSING IN CURSOR #{c} len=20 dep=0 uid=1 oct=3 lid=1 tim={t} hv={h} ad='1' sqlid='m{i:012}'\n\
             select {i} from dual\nEND OF STMT\n\
             PARSE #{c}:c=1,e=1,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim={t}\n",
            c = 1000 + i,
            h = i + 1
        );
        t += 10;
        let _ = writeln!(
            s,
            "EXEC #{}:c=5,e={},p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim={t}",
            1000 + i,
            5 + i % 7
        );
    }
    s
}

/// A chain `n` calls deep, the deepest written first (tracing began inside
/// it: no cursor parsed).
fn chain(n: usize) -> String {
    use std::fmt::Write as _;
    let mut s = String::from("Trace file /tmp/chain.trc\n\n");
    let mut t = 1000;
    for d in (0..n).rev() {
        t += 10;
        let _ = writeln!(
            s,
            "EXEC #{}:c={e},e={e},p=0,cr=0,cu=0,mis=0,r=0,dep={d},og=1,plh=0,tim={t}",
            d + 1,
            e = t - 1000
        );
    }
    s
}

#[test]
fn the_report_stays_the_same_size_however_many_statements_and_however_deep() {
    let dir = tempdir("prof-bounds");
    let report = |name: &str, text: &str| -> String {
        let f = write(&dir, name, text.as_bytes());
        let (out, err, code) = tracelab(&["prof", &f]);
        assert_eq!(code, 0, "{err}");
        out
    };
    let small = report("few.trc", &many_statements(2_000));
    let big = report("many.trc", &many_statements(8_000));
    // The 100 statements with the largest shares, the rest folded into a
    // line that says how many and how much: a report of the same size.
    assert!(
        big.contains("... and 7,900 more statements folded away (past --top 100): "),
        "{}",
        &big[..big.len().min(3000)]
    );
    assert!(small.contains("... and 1,900 more statements folded away"));
    assert!(
        big.len() < small.len() + small.len() / 20,
        "{} bytes for 8,000 statements against {} for 2,000",
        big.len(),
        small.len()
    );
    // The statements shown are the largest: e=11 µs, the longest EXEC.
    let first = big
        .lines()
        .find(|l| l.starts_with("#1 "))
        .unwrap_or_default()
        .to_string();
    assert!(first.contains("0.000012"), "{first}");
    // --top 0 shows them all.
    let f = write(&dir, "all.trc", many_statements(300).as_bytes());
    let (all, _, _) = tracelab(&["prof", "--top", "0", &f]);
    assert!(!all.contains("folded away"));
    assert_eq!(all.matches("\nSQL ID: m").count(), 300);
    // A chain 2,000 and 8,000 calls deep: the same size too, where it grew
    // with the depth (and the square of it in the tree of recursive calls).
    let shallow = report("chain2k.trc", &chain(2_000));
    let deep = report("chain8k.trc", &chain(8_000));
    assert!(
        deep.len() < shallow.len() + shallow.len() / 20,
        "{} bytes at depth 8,000 against {} at 2,000",
        deep.len(),
        shallow.len()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

//! `prof`'s memory is bounded by what its report shows (docs/prof.md,
//! "Memory"): a trace of many distinct statements (literal SQL, no binds)
//! keeps a few hundred bytes per statement, not the kilobytes of a
//! statement's detail, and a PL/SQL block that runs hundreds of thousands
//! of distinct statements is read in time that grows with their number, not
//! its square. Standard input, which cannot be read twice, is held whole,
//! and the report says so.

mod common;
use common::{bin, tempdir, tracelab};

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run of `tracelab` gave: standard output and error, exit status,
/// peak resident memory in kB (VmHWM, read from /proc while it runs: the
/// peak only grows, so the last read before it exits is the peak to within
/// a poll) and how long it took. Killed after `limit` (status `None`).
struct Run {
    stdout: String,
    stderr: String,
    code: Option<i32>,
    peak_kb: u64,
    took: Duration,
}

fn run(args: &[&str], stdin: Option<&Path>, limit: Duration) -> Run {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(match stdin {
            Some(p) => Stdio::from(std::fs::File::open(p).unwrap()),
            None => Stdio::null(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tracelab");
    // Read while it runs: a report fills a pipe.
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            r.read_to_string(&mut s).unwrap();
            s
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let status = format!("/proc/{}/status", child.id());
    let start = Instant::now();
    let mut peak_kb = 0;
    let mut killed = false;
    while child.try_wait().unwrap().is_none() {
        if let Ok(text) = std::fs::read_to_string(&status) {
            if let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak_kb = peak_kb.max(kb);
            }
        }
        if start.elapsed() > limit && !killed {
            child.kill().unwrap();
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = start.elapsed();
    let code = child.wait().unwrap().code();
    Run {
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        code: if killed { None } else { code },
        peak_kb,
        took,
    }
}

/// `n` distinct statements (literals, no binds) through 50 cursors, each
/// parsed, run once and closed: the literal SQL of an application that
/// does not use binds.
fn literal_sql(path: &Path, n: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut s = String::from("Trace file /tmp/literal.trc\n\n");
    let mut t = 1000;
    for i in 0..n {
        let c = 1000 + i % 50;
        t += 10;
        let _ = write!(
            s,
            "PARSING IN CURSOR #{c} len=20 dep=0 uid=1 oct=3 lid=1 tim={t} hv={h} ad='1' sqlid='m{i:012}'\n\
             select {i} from dual\nEND OF STMT\n\
             PARSE #{c}:c=1,e=1,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim={t}\n",
            h = i + 1
        );
        t += 10;
        let _ = writeln!(
            s,
            "EXEC #{c}:c=5,e={},p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim={t}",
            5 + i % 7
        );
        t += 1;
        let _ = writeln!(s, "CLOSE #{c}:c=0,e=1,dep=0,type=0,tim={t}");
        if s.len() > 1 << 20 {
            f.write_all(s.as_bytes()).unwrap();
            s.clear();
        }
    }
    f.write_all(s.as_bytes()).unwrap();
}

fn mb(kb: u64) -> u64 {
    kb / 1024
}

#[test]
fn many_distinct_statements_keep_a_few_hundred_bytes_each() {
    let dir = tempdir("prof-memory");
    let small = dir.join("small.trc");
    let big = dir.join("big.trc");
    literal_sql(&small, 2_000);
    literal_sql(&big, 200_000);
    let limit = Duration::from_secs(600);
    let base = run(&["prof", small.to_str().unwrap()], None, limit);
    let r = run(&["prof", big.to_str().unwrap()], None, limit);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout
            .contains("... and 199,900 more statements folded away (past --top 100): "),
        "{}",
        &r.stdout[..r.stdout.len().min(3000)]
    );
    // Measured in a debug build: 3,538 bytes per statement when every
    // statement kept its detail (694 MB for 200,000), 588 now (136 MB).
    let per_statement = (r.peak_kb.saturating_sub(base.peak_kb)) * 1024 / 198_000;
    eprintln!(
        "peak {} MB for 200,000 statements, {} MB for 2,000: {per_statement} bytes per statement",
        mb(r.peak_kb),
        mb(base.peak_kb)
    );
    assert!(
        per_statement < 1_500,
        "{per_statement} bytes per statement: {} MB for 200,000 statements, {} MB for 2,000",
        mb(r.peak_kb),
        mb(base.peak_kb)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_block_running_300000_distinct_statements_is_read_in_linear_time() {
    // One PL/SQL block (written last, when it ends) and the 300,000
    // distinct statements it ran at depth 1: each was looked for among
    // those before it, 45 billion comparisons.
    let dir = tempdir("prof-block");
    let path = dir.join("block.trc");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(
        f,
        "Trace file /tmp/block.trc\n\n\
         PARSING IN CURSOR #1 len=20 dep=0 uid=1 oct=47 lid=1 tim=1000 hv=1 ad='1' sqlid='blk000000001'\n\
         begin run_all; end;\nEND OF STMT\n\
         PARSE #1:c=1,e=1,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1000"
    )
    .unwrap();
    let (mut t, mut total) = (1000, 0);
    for i in 0..300_000 {
        let (c, e) = (1000 + i % 50, 5 + i % 7);
        t += 10;
        total += e;
        writeln!(
            f,
            "PARSING IN CURSOR #{c} len=20 dep=1 uid=1 oct=3 lid=1 tim={t} hv={h} ad='1' sqlid='k{i:012}'\n\
             select {i} from dual\nEND OF STMT\n\
             EXEC #{c}:c={e},e={e},p=0,cr=0,cu=0,mis=0,r=0,dep=1,og=1,plh=0,tim={t}\n\
             CLOSE #{c}:c=0,e=0,dep=1,type=0,tim={t}",
            h = i + 2
        )
        .unwrap();
    }
    writeln!(
        f,
        "EXEC #1:c={e},e={e},p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim={}",
        t + 10,
        e = total + 100
    )
    .unwrap();
    drop(f);
    // Generous (a debug build, on a machine shared with others): with the
    // search for each child among those before it, 50,000 children took
    // 107 s (a block of 300,000, 36 times that); now 15 s.
    let r = run(
        &["prof", "--json", path.to_str().unwrap()],
        None,
        Duration::from_secs(240),
    );
    assert_eq!(r.code, Some(0), "killed after {:?}: {}", r.took, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let stmts = v[0]["statements"].as_array().unwrap();
    let block = stmts
        .iter()
        .find(|s| s["sqlid"] == "blk000000001")
        .expect("the block is shown");
    // Its own time is its 100 µs: the rest is its recursive statements'.
    assert_eq!(block["self_elapsed_us"], 100 + 1);
    // The recursive statements shown are its children, with their calls
    // (EXEC and CLOSE) and time.
    let kids = block["children"].as_array().unwrap();
    assert_eq!(kids.len(), stmts.len() - 1);
    assert!(kids
        .iter()
        .all(|k| k["calls"] == 2 && k["elapsed_us"] == 11));
    assert_eq!(v[0]["folded"]["statements"], 300_001 - stmts.len() as u64);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn standard_input_is_read_once_and_says_what_it_held() {
    let dir = tempdir("prof-stdin");
    let path = dir.join("literal.trc");
    literal_sql(&path, 300);
    let file = path.to_str().unwrap();
    // Past the limit (forced low): a file is read twice, standard input
    // once, with every statement's detail; the reports are the same.
    let (want, err, code) = tracelab(&["prof", "--json", "--top", "10", file]);
    assert_eq!(code, 0, "{err}");
    let r = run(
        &["prof", "--json", "--top", "10", "--detail-limit", "50", "-"],
        Some(&path),
        Duration::from_secs(120),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let note =
        "-: 300 distinct statements held whole in memory (standard input cannot be read twice";
    assert!(
        r.stderr.contains(&format!("tracelab: note: {note}")),
        "{}",
        r.stderr
    );
    let mut got: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let notes = got[0]
        .as_object_mut()
        .unwrap()
        .remove("notes")
        .expect("the report's notes");
    assert!(notes[0].as_str().unwrap().starts_with(note), "{notes}");
    got[0]["file"] = file.into();
    assert_eq!(
        got,
        serde_json::from_str::<serde_json::Value>(&want).unwrap()
    );
    let (twice, err, code) = tracelab(&[
        "prof",
        "--json",
        "--top",
        "10",
        "--detail-limit",
        "50",
        file,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(twice, want);
    assert!(!err.contains("note:"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

//! A trace that starts inside a long PL/SQL block (a traced batch job: one
//! top-level call around hundreds of thousands of recursive ones) or inside
//! a very deep chain of calls: each piece keeps its first events until its
//! first top-level call, and a head too long for memory is cut. The result
//! must not depend on where it is cut: the parent's own time is its
//! elapsed time less its children's, whatever their number.

use std::fmt::Write as _;

use tracelab_prof::{profile, to_json, FileOutcome, FileProfile, ProfOptions};

/// A dep=0 block (no PARSE: tracing began inside it) running `n` EXEC/FETCH
/// pairs of a dep=1 query, 5 µs each, then ending 10 µs later.
fn loop_trace(n: usize) -> String {
    let mut s = String::from(
        "Trace file /tmp/loop.trc\n\
         Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production\n\n\
         PARSING IN CURSOR #1 len=17 dep=0 uid=1 oct=47 lid=1 tim=1000 hv=1 ad='1' sqlid='parent0000001'\n\
         begin loop; end;\nEND OF STMT\n\
         PARSING IN CURSOR #2 len=18 dep=1 uid=1 oct=3 lid=1 tim=1000 hv=2 ad='2' sqlid='child00000002'\n\
         select 1 from dual\nEND OF STMT\n",
    );
    let mut t = 1000;
    for _ in 0..n {
        t += 5;
        let _ = writeln!(
            s,
            "EXEC #2:c=5,e=5,p=0,cr=0,cu=0,mis=0,r=0,dep=1,og=1,plh=0,tim={t}"
        );
        t += 5;
        let _ = writeln!(
            s,
            "FETCH #2:c=5,e=5,p=0,cr=0,cu=0,mis=0,r=1,dep=1,og=1,plh=0,tim={t}"
        );
    }
    t += 10;
    let _ = writeln!(
        s,
        "EXEC #1:c=0,e={},p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim={t}",
        t - 1000
    );
    s
}

/// A chain `n` calls deep: the call at depth d runs the one at d + 1, each
/// taking 10 µs of its own (Oracle writes the deepest first). Tracing began
/// inside it: no cursor was parsed in the trace.
fn chain_trace(n: usize) -> String {
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

fn prof(text: &str, jobs: usize) -> FileProfile {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trc");
    std::fs::write(&path, text).unwrap();
    prof_file(&path, jobs)
}

fn prof_file(path: &std::path::Path, jobs: usize) -> FileProfile {
    let out = profile(
        &[path.to_string_lossy().into_owned()],
        &ProfOptions {
            thinktime: 1.0,
            jobs,
            top: 0,
            ..ProfOptions::default()
        },
        None,
    )
    .unwrap();
    match out.files.into_iter().next().unwrap() {
        FileOutcome::Profiled(p) => *p,
        FileOutcome::Skipped { why, .. } => panic!("{why}"),
    }
}

fn self_us(p: &FileProfile, sqlid: &str) -> i64 {
    p.statements
        .iter()
        .find(|s| s.sqlid == sqlid)
        .unwrap_or_else(|| panic!("no statement {sqlid}"))
        .self_elapsed_us
}

#[test]
fn a_recursive_head_longer_than_the_buffer_keeps_the_parents_own_time() {
    // 140,000 pairs: 280,000 recursive calls before the first top-level
    // call (the head is cut at 100,000 events), and over 16 MB, so that
    // several threads read it in pieces too.
    let n = 140_000;
    let text = loop_trace(n);
    assert!(text.len() > 16 << 20);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loop.trc");
    std::fs::write(&path, text).unwrap();
    let p = prof_file(&path, 1);
    assert_eq!(self_us(&p, "parent0000001"), 10);
    assert_eq!(self_us(&p, "child00000002"), 10 * n as i64);
    let shares: i64 = p.statements.iter().map(|s| s.self_elapsed_us).sum();
    assert_eq!(shares, p.response_time_us);
    let parent = p
        .statements
        .iter()
        .find(|s| s.sqlid == "parent0000001")
        .unwrap();
    assert_eq!(parent.children.len(), 1);
    assert_eq!(parent.children[0].calls, 2 * n as u64);
    // Read in pieces on four threads: the same profile, figure for figure.
    let pieces = prof_file(&path, 4);
    assert_eq!(to_json(&[&p]), to_json(&[&pieces]));
}

#[test]
fn a_chain_deeper_than_the_buffer_gives_each_call_its_own_time() {
    let n = 101_000;
    let p = prof(&chain_trace(n), 1);
    assert_eq!(p.response_time_us, 10 * n as i64);
    let wrong: Vec<(&str, i64)> = p
        .statements
        .iter()
        .filter(|s| s.self_elapsed_us != 10)
        .map(|s| (s.sqlid.as_str(), s.self_elapsed_us))
        .take(5)
        .collect();
    assert!(wrong.is_empty(), "own time not 10 µs: {wrong:?}");
    // Past the statements whose detail a first reading keeps (forced low),
    // a second keeps that of the five shown: the same report as one
    // reading's, the 101,000 statements (placeholders, whose side of the
    // totals their calls' depth tells) folded and added up alike.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.trc");
    std::fs::write(&path, chain_trace(n)).unwrap();
    let top5 = |detail_limit: usize| {
        let out = profile(
            &[path.to_string_lossy().into_owned()],
            &ProfOptions {
                jobs: 1,
                top: 5,
                detail_limit,
                ..ProfOptions::default()
            },
            None,
        )
        .unwrap();
        match out.files.into_iter().next().unwrap() {
            FileOutcome::Profiled(p) => (to_json(&[&*p]), p.readings),
            FileOutcome::Skipped { why, .. } => panic!("{why}"),
        }
    };
    let (once, n1) = top5(usize::MAX);
    let (twice, n2) = top5(1);
    assert_eq!((n1, n2), (1, 2));
    assert!(
        once == twice,
        "two readings differ from one:\n{twice}\n{once}"
    );
}

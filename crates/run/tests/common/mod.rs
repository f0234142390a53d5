//! What the engine tests share: reading a session's trace back.

#![allow(dead_code)]

use std::path::Path;

use tracelab_run::Summary;
use tracelab_trace::{open, CallKind, ReadOptions, Reader, Source};

/// One call of a session's trace: kind, duration (µs), rows, first bind.
pub struct Traced {
    pub kind: CallKind,
    pub dur: i64,
    pub rows: i64,
    pub bind: Option<String>,
}

/// The calls of session `i`'s trace in `dir`.
pub fn traced(dir: &Path, i: usize) -> Vec<Traced> {
    let mut v = Vec::new();
    let path = dir.join(format!("tracelab_run_{i}.trc"));
    Reader::new(ReadOptions {
        binds: true,
        ..ReadOptions::default()
    })
    .read(open(&Source::Path(path)).unwrap(), |c| {
        v.push(Traced {
            kind: c.kind,
            dur: c.dur_us(),
            rows: c.db.r.unwrap_or(0),
            bind: c.binds.first().and_then(|b| b.as_deref().map(String::from)),
        })
    })
    .unwrap();
    v
}

pub fn count(calls: &[Traced], kind: CallKind) -> usize {
    calls.iter().filter(|c| c.kind == kind).count()
}

/// Per session, the calls and waits of its trace account for the
/// session's measured elapsed time within 1 %; returns the calls of each.
pub fn traces_add_up(dir: &Path, sum: &Summary) -> Vec<Vec<Traced>> {
    sum.per_session
        .iter()
        .map(|s| {
            let calls = traced(dir, s.session);
            let time: i64 = calls.iter().map(|c| c.dur).sum();
            let diff = (time - s.elapsed_us).abs() as f64;
            assert!(
                diff <= 0.01 * s.elapsed_us as f64,
                "session {}: trace {time} µs vs measured {} µs",
                s.session,
                s.elapsed_us
            );
            calls
        })
        .collect()
}

/// The rows all FETCH lines of `calls` returned.
pub fn fetched(calls: &[Traced]) -> i64 {
    calls
        .iter()
        .filter(|c| c.kind == CallKind::Fetch)
        .map(|c| c.rows)
        .sum()
}

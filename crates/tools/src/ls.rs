//! `ls`: one line of facts per trace file, to find the file a complaint is
//! in (Method R's mrls): size, Oracle version, session, module, action,
//! client id, the wall-clock times of its first and last call, how long
//! it spans, how many calls and statements it holds.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rustc_hash::FxHashSet;
use serde::Serialize;
use tracelab_trace::{
    format_wall_clock, CallKind, Compression, LineKinds, ReadOptions, Reader, Source,
};

use crate::error::ToolsError;
use crate::scan::{self, Field, HeaderFacts, Star};

/// One trace file's facts (the first value of each context in the file).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Listing {
    pub file: String,
    /// Bytes on disk (compressed, if it is).
    pub size: u64,
    pub compression: &'static str,
    pub version: Option<String>,
    pub session: Option<String>,
    pub service: Option<String>,
    pub module: Option<String>,
    pub action: Option<String>,
    pub client_id: Option<String>,
    /// Wall clock of the first call's start and the last call's end.
    pub first: Option<String>,
    pub last: Option<String>,
    /// Seconds from the first call's start to the last call's end.
    pub duration: Option<f64>,
    pub lines: u64,
    /// Database calls and waits.
    pub calls: u64,
    /// Distinct statements parsed (by sqlid, or hash value before 11g).
    pub statements: u64,
    /// Distinct `*** SESSION ID`s (more than one: a shared server).
    pub sessions: u64,
    /// The reader's warnings (damage first), for standard error.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Columns to sort by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    File,
    Size,
    Version,
    Session,
    Module,
    Action,
    ClientId,
    First,
    Last,
    Duration,
    Calls,
    Statements,
}

impl SortKey {
    pub const NAMES: &'static [&'static str] = &[
        "file",
        "size",
        "version",
        "session",
        "module",
        "action",
        "client_id",
        "first",
        "last",
        "duration",
        "calls",
        "statements",
    ];

    pub fn from_name(s: &str) -> Option<SortKey> {
        use SortKey::*;
        let all = [
            File, Size, Version, Session, Module, Action, ClientId, First, Last, Duration, Calls,
            Statements,
        ];
        Self::NAMES.iter().position(|n| *n == s).map(|i| all[i])
    }
}

/// The files named: a directory stands for its trace files (names with
/// `.trc`, compressed or not), in name order.
pub fn list_files(args: &[String]) -> Result<Vec<String>, ToolsError> {
    let mut out = Vec::new();
    for a in args {
        let p = Path::new(a);
        if a != "-" && p.is_dir() {
            let mut v: Vec<String> = std::fs::read_dir(p)
                .map_err(|source| ToolsError::Dir {
                    path: a.clone(),
                    source,
                })?
                .filter_map(Result::ok)
                .filter(|e| e.path().is_file())
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().to_ascii_lowercase();
                    n.ends_with(".trc")
                        || [".trc.gz", ".trc.bz2", ".trc.xz", ".trc.zst", ".trc.zstd"]
                            .iter()
                            .any(|s| n.ends_with(s))
                })
                .map(|e| e.path().display().to_string())
                .collect();
            v.sort();
            out.extend(v);
        } else {
            out.push(a.clone());
        }
    }
    Ok(out)
}

/// Reads every file (`jobs` at a time); results in the files' order.
pub fn list(files: &[String], jobs: usize) -> Vec<Result<Listing, ToolsError>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Listing, ToolsError>>>> =
        Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1).min(files.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(f) = files.get(i) else { break };
                let r = list_one(f);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every file read"))
        .collect()
}

fn list_one(file: &str) -> Result<Listing, ToolsError> {
    let trace = tracelab_trace::open(&Source::from_arg(file))?;
    let compression = match trace.compression {
        Compression::None => "",
        Compression::Gzip => "gzip",
        Compression::Bzip2 => "bzip2",
        Compression::Xz => "xz",
        Compression::Zstd => "zstd",
    };
    let size = if file == "-" {
        0
    } else {
        std::fs::metadata(file).map(|m| m.len()).unwrap_or(0)
    };
    let mut reader = Reader::new(ReadOptions {
        all_lines: true,
        chained: true,
        line_kinds: LineKinds {
            sql_text: false,
            bind_details: false,
        },
        ..ReadOptions::default()
    });
    let mut facts = HeaderFacts::default();
    let mut in_header = true;
    let mut values: [Option<String>; 5] = Default::default();
    let mut sessions: FxHashSet<Vec<u8>> = FxHashSet::default();
    let mut statements: FxHashSet<Vec<u8>> = FxHashSet::default();
    let mut calls = 0u64;
    let mut first: Option<(i64, Option<i64>)> = None;
    let mut last: Option<(i64, Option<i64>)> = None;
    let summary = reader.read(trace, |c| {
        if c.kind != CallKind::Line {
            calls += 1;
            in_header = false;
            if let Some(t) = c.tim_us() {
                let start = t - c.dur_us();
                if first.is_none_or(|f| start < f.0) {
                    first = Some((start, c.wall_us(start, 1.0)));
                }
                if last.is_none_or(|l| t >= l.0) {
                    last = Some((t, c.wall_us(t, 1.0)));
                }
            }
            return;
        }
        let b = c.text;
        match b.first() {
            Some(b'*') => {
                in_header = false;
                if let Some(Star::Named(name, value)) = scan::star(b) {
                    if let Some(f) = Field::of_star(name) {
                        if f == Field::Session {
                            sessions.insert(value.to_vec());
                        }
                        let slot = &mut values[f.index()];
                        if slot.is_none() {
                            *slot = Some(String::from_utf8_lossy(value).into_owned());
                        }
                    }
                }
            }
            Some(b'P') if scan::is_pic(b) => {
                in_header = false;
                let id = scan::quoted_field(b, b"sqlid")
                    .map(<[u8]>::to_vec)
                    .or_else(|| scan::int_field(b, b"hv").map(|h| h.to_string().into_bytes()));
                if let Some(id) = id {
                    statements.insert(id);
                }
            }
            Some(b'A') => {
                if let Some((m, a)) = scan::appname(b) {
                    in_header = false;
                    for (f, v) in [(Field::Module, m), (Field::Action, a)] {
                        let slot = &mut values[f.index()];
                        if slot.is_none() {
                            *slot = Some(String::from_utf8_lossy(v).into_owned());
                        }
                    }
                }
            }
            _ if in_header => facts.see(b),
            _ => {}
        }
    })?;
    let [session, client_id, service, module, action] = values;
    Ok(Listing {
        file: file.to_string(),
        size,
        compression,
        version: facts.version,
        session,
        service,
        module,
        action,
        client_id,
        first: first.and_then(|f| f.1).map(format_wall_clock),
        last: last.and_then(|l| l.1).map(format_wall_clock),
        duration: match (first, last) {
            (Some(f), Some(l)) => Some((l.0 - f.0) as f64 / 1e6),
            _ => None,
        },
        lines: summary.lines,
        calls,
        statements: statements.len() as u64,
        sessions: sessions.len() as u64,
        warnings: summary
            .diagnostics
            .kept
            .iter()
            .map(ToString::to_string)
            .collect(),
    })
}

/// Sorts in place (ascending; absent values first), the file name
/// breaking ties.
pub fn sort(v: &mut [Listing], key: SortKey, reverse: bool) {
    use std::cmp::Ordering;
    let f = |a: &Listing, b: &Listing| -> Ordering {
        let o = match key {
            SortKey::File => Ordering::Equal,
            SortKey::Size => a.size.cmp(&b.size),
            SortKey::Version => version_key(&a.version).cmp(&version_key(&b.version)),
            SortKey::Session => a.session.cmp(&b.session),
            SortKey::Module => a.module.cmp(&b.module),
            SortKey::Action => a.action.cmp(&b.action),
            SortKey::ClientId => a.client_id.cmp(&b.client_id),
            SortKey::First => a.first.cmp(&b.first),
            SortKey::Last => a.last.cmp(&b.last),
            SortKey::Duration => a
                .duration
                .partial_cmp(&b.duration)
                .unwrap_or(Ordering::Equal),
            SortKey::Calls => a.calls.cmp(&b.calls),
            SortKey::Statements => a.statements.cmp(&b.statements),
        };
        o.then_with(|| a.file.cmp(&b.file))
    };
    v.sort_by(|a, b| if reverse { f(b, a) } else { f(a, b) });
}

/// `19.12.0.0.0` after `9.2.0.0.0`: numerically, part by part.
fn version_key(v: &Option<String>) -> Option<Vec<u64>> {
    v.as_ref()
        .map(|v| v.split('.').map(|p| p.parse().unwrap_or(0)).collect())
}

/// The listings as a table: a header row, columns two spaces apart,
/// numbers right-aligned, `-` for what a file does not say.
pub fn render_table(v: &[Listing]) -> String {
    let dash = |s: &Option<String>| match s.as_deref() {
        None | Some("") => "-".to_string(),
        Some(s) => s.to_string(),
    };
    let head = [
        "FILE",
        "SIZE",
        "VERSION",
        "SESSION",
        "MODULE",
        "ACTION",
        "CLIENT-ID",
        "FIRST",
        "LAST",
        "DURATION",
        "CALLS",
        "STATEMENTS",
    ];
    let right = [
        false, true, false, false, false, false, false, false, false, true, true, true,
    ];
    let rows: Vec<[String; 12]> = v
        .iter()
        .map(|l| {
            [
                l.file.clone(),
                l.size.to_string(),
                dash(&l.version),
                dash(&l.session),
                dash(&l.module),
                dash(&l.action),
                dash(&l.client_id),
                dash(&l.first),
                dash(&l.last),
                l.duration.map_or("-".into(), |d| format!("{d:.6}")),
                l.calls.to_string(),
                l.statements.to_string(),
            ]
        })
        .collect();
    let mut width: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = width[i] - c.chars().count();
            if right[i] {
                s.extend(std::iter::repeat_n(' ', pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                if i + 1 < cells.len() {
                    s.extend(std::iter::repeat_n(' ', pad));
                }
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&head.map(String::from));
    for r in &rows {
        line(r);
    }
    out
}

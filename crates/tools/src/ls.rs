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
    format_wall_clock, Call, CallKind, Compression, LineKinds, ReadOptions, Reader, Source,
    WallClock,
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

/// Reads every file (`jobs` at a time); results in the files' order. With
/// fewer files than `jobs`, each big plain file is read in pieces on the
/// spare threads.
pub fn list(files: &[String], jobs: usize) -> Vec<Result<Listing, ToolsError>> {
    let jobs = jobs.max(1);
    let parts = (jobs / files.len().max(1)).max(1);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Listing, ToolsError>>>> =
        Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(files.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(f) = files.get(i) else { break };
                let r = list_one(f, parts);
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

/// What one piece of a file (or the whole file) says. A piece read on its
/// own knows no `***` timestamp before its start: its calls before its
/// own first timestamp carry no wall clock, and [`Chain`] gives them the
/// one the pieces before end with, as a whole read would have.
#[derive(Default)]
struct Piece {
    seen: bool,
    in_header: bool,
    facts: HeaderFacts,
    values: [Option<String>; 5],
    sessions: FxHashSet<Vec<u8>>,
    statements: FxHashSet<Vec<u8>>,
    calls: u64,
    /// The earliest call start and the latest call end, with the wall
    /// clock anchor in force (`None`: the one inherited, if any).
    first: Option<(i64, Option<WallClock>)>,
    last: Option<(i64, Option<WallClock>)>,
    /// The piece's own `***` timestamps: whether it has one, the `tim` of
    /// its first timed call before the first, the timestamp still waiting
    /// for a `tim` at its end, and its latest anchor.
    stamped: bool,
    first_tim: Option<i64>,
    pending: Option<i64>,
    anchor: Option<WallClock>,
}

impl Piece {
    fn see(&mut self, c: &Call<'_>) {
        if !self.seen {
            self.seen = true;
            // Only the file's first piece starts with its header.
            self.in_header = c.offset == 0;
        }
        if c.kind != CallKind::Line {
            self.calls += 1;
            self.in_header = false;
            if let Some(t) = c.tim_us() {
                if c.wall.is_some() {
                    self.anchor = c.wall;
                    self.pending = None;
                } else if !self.stamped && self.first_tim.is_none() {
                    self.first_tim = Some(t);
                }
                let start = t - c.dur_us();
                if self.first.is_none_or(|f| start < f.0) {
                    self.first = Some((start, c.wall));
                }
                if self.last.is_none_or(|l| t >= l.0) {
                    self.last = Some((t, c.wall));
                }
            }
            return;
        }
        let b = c.text;
        match b.first() {
            Some(b'*') => {
                self.in_header = false;
                if let Some((wall, _)) = scan::stamp(b) {
                    self.stamped = true;
                    self.pending = Some(wall);
                }
                if let Some(Star::Named(name, value)) = scan::star(b) {
                    if let Some(f) = Field::of_star(name) {
                        if f == Field::Session {
                            self.sessions.insert(value.to_vec());
                        }
                        let slot = &mut self.values[f.index()];
                        if slot.is_none() {
                            *slot = Some(String::from_utf8_lossy(value).into_owned());
                        }
                    }
                }
            }
            Some(b'P') if scan::is_pic(b) => {
                self.in_header = false;
                let id = scan::quoted_field(b, b"sqlid")
                    .map(<[u8]>::to_vec)
                    .or_else(|| scan::int_field(b, b"hv").map(|h| h.to_string().into_bytes()));
                if let Some(id) = id {
                    self.statements.insert(id);
                }
            }
            Some(b'A') => {
                if let Some((m, a)) = scan::appname(b) {
                    self.in_header = false;
                    for (f, v) in [(Field::Module, m), (Field::Action, a)] {
                        let slot = &mut self.values[f.index()];
                        if slot.is_none() {
                            *slot = Some(String::from_utf8_lossy(v).into_owned());
                        }
                    }
                }
            }
            _ if self.in_header => self.facts.see(b),
            _ => {}
        }
    }
}

/// The reader's wall-clock state between pieces: a timestamp waiting for
/// the next `tim`, and the anchor in force.
#[derive(Default, Clone, Copy)]
struct Chain {
    pending: Option<i64>,
    anchor: Option<WallClock>,
}

impl Chain {
    /// The anchor of `p`'s calls before its own first timestamp, and the
    /// state after `p`.
    fn through(self, p: &Piece) -> (Option<WallClock>, Chain) {
        let inherited = match (self.pending, p.first_tim) {
            (Some(wall_us), Some(tim)) => Some(WallClock { wall_us, tim }),
            _ => self.anchor,
        };
        let pending = if p.stamped {
            p.pending
        } else if p.first_tim.is_some() {
            None
        } else {
            self.pending
        };
        let after = Chain {
            pending,
            anchor: p.anchor.or(inherited),
        };
        (inherited, after)
    }
}

/// The wall clock at `tim` through `w`, as [`Call::wall_us`] reckons it.
fn wall_at(w: WallClock, tim: i64) -> i64 {
    w.wall_us
        .saturating_add(((tim - w.tim) as f64).round() as i64)
}

fn list_one(file: &str, parts: usize) -> Result<Listing, ToolsError> {
    list_in_pieces(file, parts, tracelab_trace::MIN_SPLIT)
}

/// [`list_one`] with the size below which a file is read whole (tests cut
/// small files).
fn list_in_pieces(file: &str, parts: usize, min_split: u64) -> Result<Listing, ToolsError> {
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
    // Nothing here chains through the file but the wall clock, which the
    // pieces settle afterwards: a big plain file is read in pieces.
    let mut reader = Reader::new(ReadOptions {
        all_lines: true,
        line_numbers: false,
        statements: false,
        line_kinds: LineKinds {
            sql_text: false,
            bind_details: false,
        },
        min_split,
        ..ReadOptions::default()
    });
    let (pieces, summary) = reader.read_split(trace, parts, |_| Piece::default(), Piece::see)?;
    let mut chain = Chain::default();
    let mut facts = HeaderFacts::default();
    let mut values: [Option<String>; 5] = Default::default();
    let mut sessions: FxHashSet<Vec<u8>> = FxHashSet::default();
    let mut statements: FxHashSet<Vec<u8>> = FxHashSet::default();
    let mut calls = 0u64;
    let mut first: Option<(i64, Option<i64>)> = None;
    let mut last: Option<(i64, Option<i64>)> = None;
    for (i, p) in pieces.into_iter().enumerate() {
        let (inherited, after) = chain.through(&p);
        chain = after;
        let wall = |t: i64, w: Option<WallClock>| w.or(inherited).map(|w| wall_at(w, t));
        if i == 0 {
            facts = p.facts;
        }
        for (v, mine) in values.iter_mut().zip(p.values) {
            if v.is_none() {
                *v = mine;
            }
        }
        sessions.extend(p.sessions);
        statements.extend(p.statements);
        calls += p.calls;
        if let Some((start, w)) = p.first {
            if first.is_none_or(|f| start < f.0) {
                first = Some((start, wall(start, w)));
            }
        }
        if let Some((t, w)) = p.last {
            if last.is_none_or(|l| t >= l.0) {
                last = Some((t, wall(t, w)));
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// The pieces of a file give what one read gives, wherever it is cut:
    /// real traces one after the other, some without a `***` timestamp
    /// near their pieces' starts, and one whose stamps come before a cut.
    #[test]
    fn pieces_list_what_one_read_lists() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/crc-local-force");
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "gz"))
            .collect();
        names.sort();
        let mut text = Vec::new();
        for n in names.iter().take(6) {
            flate2::read::MultiGzDecoder::new(std::fs::File::open(n).unwrap())
                .read_to_end(&mut text)
                .unwrap();
        }
        // A stretch with no timestamp at all, so that pieces inherit the
        // wall clock from far back.
        let calls: Vec<Vec<u8>> = text
            .split(|&b| b == b'\n')
            .filter(|l| {
                l.starts_with(b"WAIT #") || l.starts_with(b"=====") || l.starts_with(b"FETCH #")
            })
            .map(<[u8]>::to_vec)
            .collect();
        for l in calls.iter().take(20_000) {
            text.extend_from_slice(l);
            text.push(b'\n');
        }
        let path =
            std::env::temp_dir().join(format!("tracelab-ls-pieces-{}.trc", std::process::id()));
        std::fs::write(&path, &text).unwrap();
        let file = path.to_string_lossy().into_owned();
        let whole = list_in_pieces(&file, 1, u64::MAX).unwrap();
        assert!(whole.first.is_some() && whole.last.is_some() && whole.calls > 1000);
        for parts in [2, 3, 5, 8, 13] {
            let cut = list_in_pieces(&file, parts, 1).unwrap();
            assert_eq!(cut, whole, "{parts} pieces");
        }
        std::fs::remove_file(path).unwrap();
    }
}

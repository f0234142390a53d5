//! Profiling files: each file read in pieces on all cores (or several
//! files at once), its pieces added up in file order.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tracelab_trace::{open_counted, LineKinds, ReadOptions, Reader, Source};

use crate::collect::{add_up, Keep, Piece};
use crate::report::FileProfile;

/// What `tracelab prof` was asked.
#[derive(Debug, Clone)]
pub struct ProfOptions {
    /// Seconds of SQL*Net message from client that are think time.
    pub thinktime: f64,
    /// Worker threads; 0 = one per core.
    pub jobs: usize,
    /// Statements kept in the report, by share of R (0: all): the rest are
    /// folded into one line, so that the report's size and the memory the
    /// report takes do not grow with the number of distinct statements.
    pub top: usize,
    /// Longest line read (bytes); a longer one is warned about and read as
    /// empty.
    pub max_line: usize,
    /// Distinct statements whose detail a first reading keeps (at least
    /// twice `top`); past it, only what ranks each statement is kept and
    /// the file is read again for the detail of the statements the report
    /// shows (see [`DEFAULT_DETAIL_LIMIT`]).
    pub detail_limit: usize,
}

impl Default for ProfOptions {
    fn default() -> Self {
        ProfOptions {
            thinktime: 1.0,
            jobs: 0,
            top: DEFAULT_TOP,
            max_line: tracelab_trace::DEFAULT_MAX_LINE,
            detail_limit: DEFAULT_DETAIL_LIMIT,
        }
    }
}

/// Distinct statements whose detail (tkprof's tables, waits, plans, binds,
/// histograms: 2 to 4 KB each) one reading keeps: up to this, a file is
/// read once (some 40 MB at most); past it, what is kept of each statement
/// is what ranks it and adds it to the folded line and the totals (about
/// 200 bytes), and the file is read a second time for the detail of the
/// statements the report shows. The report is the same either way.
pub const DEFAULT_DETAIL_LIMIT: usize = 10_000;

/// Statements in the report unless asked otherwise: a DBA reads the first
/// few; a trace of millions of distinct statements (literals, no binds)
/// stays readable.
pub const DEFAULT_TOP: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum ProfError {
    #[error("no trace file named (give one or more files, or - for standard input)")]
    NoInput,
    #[error("{0}")]
    Usage(String),
}

/// One input: its profile, or why it has none.
#[derive(Debug)]
pub enum FileOutcome {
    Profiled(Box<FileProfile>),
    Skipped { file: String, why: String },
}

/// The profiles, in the order the files were named.
#[derive(Debug)]
pub struct Outcome {
    pub files: Vec<FileOutcome>,
}

impl Outcome {
    /// Whether any input was skipped or damaged.
    pub fn had_trouble(&self) -> bool {
        self.files.iter().any(|f| match f {
            FileOutcome::Skipped { .. } => true,
            FileOutcome::Profiled(p) => !p.warnings.is_empty(),
        })
    }

    pub fn profiles(&self) -> impl Iterator<Item = &FileProfile> {
        self.files.iter().filter_map(|f| match f {
            FileOutcome::Profiled(p) => Some(&**p),
            FileOutcome::Skipped { .. } => None,
        })
    }
}

/// Profiles `inputs` (paths, or `-`). `progress`, if given, receives the
/// raw bytes read.
pub fn profile(
    inputs: &[String],
    opts: &ProfOptions,
    progress: Option<Arc<AtomicU64>>,
) -> Result<Outcome, ProfError> {
    if inputs.is_empty() {
        return Err(ProfError::NoInput);
    }
    if !(opts.thinktime.is_finite() && opts.thinktime >= 0.0) {
        return Err(ProfError::Usage(format!(
            "--thinktime={}: expected a number of seconds, 0 or more",
            opts.thinktime
        )));
    }
    let jobs = match opts.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .max(1);
    // Fewer files than cores: each file is cut into pieces, two per core
    // (one job reads each file whole).
    let parts = if jobs > 1 && inputs.len() < jobs {
        2 * jobs / inputs.len()
    } else {
        1
    };
    let workers = jobs.min(inputs.len());
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<FileOutcome>>> =
        Mutex::new((0..inputs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(input) = inputs.get(i) else { break };
                let out = profile_file(input, opts, parts, progress.clone());
                if let Ok(mut r) = results.lock() {
                    r[i] = Some(out);
                }
            });
        }
    });
    let files = results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .zip(inputs)
        .map(|(r, name)| {
            r.unwrap_or_else(|| FileOutcome::Skipped {
                file: name.clone(),
                why: format!("{name}: the reader stopped"),
            })
        })
        .collect();
    Ok(Outcome { files })
}

fn profile_file(
    input: &str,
    opts: &ProfOptions,
    parts: usize,
    progress: Option<Arc<AtomicU64>>,
) -> FileOutcome {
    let skipped = |why: String| FileOutcome::Skipped {
        file: input.to_string(),
        why,
    };
    let source = Source::from_arg(input);
    // A trace of many distinct statements (literals, no binds) is read
    // twice when it can be: first keeping what ranks each statement, then
    // the detail of those shown (see `DEFAULT_DETAIL_LIMIT`). Standard
    // input and pipes cannot be read twice: every statement's detail is
    // kept, and the report says what that cost.
    let again = rereadable(&source);
    let limit = opts.detail_limit.max(opts.top.saturating_mul(2));
    let keep = || {
        if again && opts.top > 0 {
            Keep::Until { limit, seen: None }
        } else {
            Keep::All
        }
    };
    // Top-level calls are those at depth 0: the reader's own `$depmin` is
    // known only at the end of a file, and a trace that starts with the
    // recursive calls of its first hard parse would see them as top-level
    // until then. A file with no call at depth 0 is read again with its
    // own minimum depth.
    let (mut col, mut summary) = match read(&source, parts, opts, 0, progress.clone(), keep()) {
        Ok(r) => r,
        Err(why) => return skipped(why),
    };
    let mut warnings = Vec::new();
    let mut depmin = 0;
    let mut readings = 1;
    if let Some(min) = col.meta.min_dep.filter(|&d| d > 0) {
        if !again {
            warnings.push(format!(
                "{input}: no call at depth 0; {} cannot be read again with depth {min} as the top",
                what_input(&source)
            ));
        } else {
            depmin = min;
            readings += 1;
            match read(&source, parts, opts, min, None, keep()) {
                Ok(r) => (col, summary) = r,
                Err(why) => return skipped(why),
            }
        }
    }
    if col.compact {
        let shown = crate::report::rank(&col.stmts, opts.top);
        let keys = Arc::new(col.keys_of(&shown.keep));
        drop(col);
        readings += 1;
        match read(&source, parts, opts, depmin, None, Keep::Only(keys)) {
            Ok(r) => (col, summary) = r,
            Err(why) => return skipped(why),
        }
    }
    let mut notes = Vec::new();
    if !again && opts.top > 0 && col.stmts.len() > limit {
        notes.push(format!(
            "{input}: {} distinct statements held whole in memory ({} cannot be read twice; \
             a file past {limit} is read twice, holding whole only the statements shown)",
            tracelab_query::number::commify(&col.stmts.len().to_string()),
            what_input(&source)
        ));
    }
    warnings.extend(summary.diagnostics.kept.iter().map(|d| d.to_string()));
    let more = summary.diagnostics.total - summary.diagnostics.kept.len() as u64;
    if more > 0 {
        warnings.push(format!("{input}: {more} more damaged lines not shown"));
    }
    if col.meta.stat_unread > 0 {
        warnings.push(format!(
            "{input}: {} STAT lines could not be read or tied to a statement",
            col.meta.stat_unread
        ));
    }
    let mut profile = FileProfile::build(
        input,
        col,
        summary.lines,
        summary.calls,
        warnings,
        opts.top,
        |offset, line| summary.absolute_line(offset, line),
    );
    profile.notes = notes;
    profile.readings = readings;
    FileOutcome::Profiled(Box::new(profile))
}

/// One reading of a file with `depmin` as the top depth.
fn read(
    source: &Source,
    parts: usize,
    opts: &ProfOptions,
    depmin: i64,
    progress: Option<Arc<AtomicU64>>,
    keep: Keep,
) -> Result<(crate::collect::Collector, tracelab_trace::ReadSummary), String> {
    let thinktime_us = (opts.thinktime * 1e6).round() as i64;
    let file = open_counted(source, progress).map_err(|e| e.to_string())?;
    let read_opts = ReadOptions {
        // Bind values, STAT lines and the header are read from the lines
        // themselves (see collect.rs), so that a big file can be read in
        // pieces; of the lines that are no call, SQL text (the reader keeps
        // it with the statement) and the details of bind blocks (most of
        // the lines of a trace with binds) are not read at all.
        binds: false,
        unaccounted: false,
        thinktime_us,
        depmin: Some(depmin),
        all_lines: true,
        line_kinds: LineKinds {
            sql_text: false,
            bind_details: false,
        },
        chained: false,
        // Line numbers are translated when the report is made
        // (`ReadSummary::absolute_line`), and the statements of cursors
        // parsed before a piece are found when the pieces are added up
        // (collect.rs): the pieces need no first pass.
        line_numbers: false,
        statements: false,
        max_line: opts.max_line,
        ..ReadOptions::default()
    };
    // The pieces count their statements together.
    let piece_keep = match &keep {
        Keep::Until { limit, .. } => Keep::Until {
            limit: *limit,
            seen: Some(Arc::new(AtomicUsize::new(0))),
        },
        k => k.clone(),
    };
    let (pieces, summary) = Reader::new(read_opts)
        .read_split(
            file,
            parts,
            |_| Piece::new(thinktime_us, piece_keep.clone()),
            |p: &mut Piece, c| p.on_call(c),
        )
        .map_err(|e| e.to_string())?;
    Ok((add_up(pieces, thinktime_us, keep), summary))
}

/// Whether `source` can be read a second time: a file, not standard input
/// or a pipe (`<(zcat ...)`), whose bytes are gone once read.
fn rereadable(source: &Source) -> bool {
    match source {
        Source::Stdin => false,
        Source::Path(p) => std::fs::metadata(p).is_ok_and(|m| m.is_file()),
    }
}

fn what_input(source: &Source) -> &'static str {
    match source {
        Source::Stdin => "standard input",
        Source::Path(_) => "a pipe",
    }
}

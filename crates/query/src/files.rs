//! Profiling many files: one reader per worker thread, files handed out
//! one at a time, each file's pieces and then the files added up in read
//! order at the end (mrskew's sums are running double sums: see
//! [`crate::aggregate`]). When a printed figure sits at a rounding tie that
//! the pieces' sums cannot settle, the files are read a second time,
//! keeping every value of the groups concerned.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tracelab_trace::{
    open_counted, Diagnostics, LineKinds, ReadOptions, ReadSummary, Reader, Source, Timeline,
};

use crate::aggregate::{at, Groups, LogBudget, Resolve, LOG_BUDGET};
use crate::error::QueryError;
use crate::query::{NameCache, Query};
use crate::question::Question;
use crate::report::{Layout, Report};
use crate::vars::CallVars;

/// What [`profile`] is asked: the question, the table's layout, and how
/// the files are read.
#[derive(Debug, Clone)]
pub struct Profiling {
    pub question: Question,
    pub layout: Layout,
    /// `--max-line`: the longest line read, in bytes.
    pub max_line: usize,
    /// A file at least this big is cut into pieces read on several cores
    /// when there are fewer files than cores (see
    /// [`tracelab_trace::ReadOptions::min_split`]).
    pub min_split: u64,
    /// Seconds of SQL*Net message from client that end an island.
    pub thinktime: f64,
    pub depmin: Option<i64>,
    pub unaccounted: bool,
    /// Keep the names of the calls that passed the filter.
    pub verbose: bool,
    /// Worker threads; 0 = one per core.
    pub jobs: usize,
}

impl Default for Profiling {
    fn default() -> Self {
        Profiling {
            question: Question::default(),
            layout: Layout::default(),
            max_line: tracelab_trace::DEFAULT_MAX_LINE,
            min_split: tracelab_trace::MIN_SPLIT,
            thinktime: 1.0,
            depmin: None,
            unaccounted: false,
            verbose: false,
            jobs: 0,
        }
    }
}

/// What happened to one input file.
#[derive(Debug, Clone, Default)]
pub struct FileOutcome {
    pub name: String,
    /// Why the file was skipped (unreadable, not a trace), if it was.
    pub skipped: Option<String>,
    /// Damaged lines, and expression errors, with file and line.
    pub warnings: Diagnostics,
    pub lines: u64,
    pub calls: u64,
    /// Calls that passed the filter.
    pub matched: u64,
    /// With `--unaccounted`: overlapping calls and session changes met.
    pub timeline: Timeline,
}

/// The profile and what the run found on the way.
pub struct Outcome {
    pub report: Report,
    pub files: Vec<FileOutcome>,
    pub matched: u64,
    /// Call names that passed the filter (only with `--verbose`).
    pub matched_names: BTreeSet<String>,
    pub query: Query,
    /// Times the inputs were read: 2 when a figure at a rounding tie
    /// needed values the first reading could not keep (see
    /// [`crate::aggregate::LOG_BUDGET`]).
    pub reads: u32,
}

impl Outcome {
    /// Whether any input was skipped or damaged: the exit status says so.
    pub fn had_trouble(&self) -> bool {
        self.files
            .iter()
            .any(|f| f.skipped.is_some() || f.warnings.total > 0)
    }
}

struct Worker {
    names: BTreeSet<String>,
}

/// What one reading of all the inputs gathered.
struct Gathered {
    files: Vec<FileOutcome>,
    /// Each file's groups, its pieces merged in read order.
    groups: Vec<Groups>,
    names: BTreeSet<String>,
}

/// Profiles `inputs` (paths, or `-` for standard input). `progress`, if
/// given, receives the raw bytes read as reading goes.
pub fn profile(
    opts: &Profiling,
    inputs: &[String],
    progress: Option<Arc<AtomicU64>>,
) -> Result<Outcome, QueryError> {
    if inputs.is_empty() {
        return Err(QueryError::NoInput);
    }
    if opts.unaccounted && opts.question.units.cpu != opts.question.units.elapsed {
        return Err(QueryError::Usage(format!(
            "--unaccounted subtracts c from e: it needs --cpuunit ({}) and --trcunit ({}) to be the same unit",
            opts.question.units.cpu, opts.question.units.elapsed
        )));
    }
    let query = Query::new(&opts.question)?;
    let read_opts = ReadOptions {
        binds: query.needs_binds,
        unaccounted: opts.unaccounted,
        // In the trace's own units of `ela`.
        thinktime_us: (opts.thinktime / opts.question.units.elapsed).round() as i64,
        depmin: opts.depmin,
        all_lines: query.all_lines,
        line_kinds: LineKinds::ALL,
        chained: query.chained,
        line_numbers: query.uses_line,
        statements: query.uses_statements,
        max_line: opts.max_line,
        min_split: opts.min_split,
    };
    let mut first = gather(opts, inputs, (&query, &read_opts), progress, None);
    let build = |files: Vec<Groups>| -> Report {
        let mut groups = Groups::default();
        for (i, label) in query.precreated.iter().enumerate() {
            groups.touch(label, (0, 0, i as u64));
        }
        for file in files {
            groups.merge(file);
        }
        Report::build(
            groups,
            &opts.layout,
            &query.group_label,
            &query.select_label,
        )
    };
    let mut report = build(std::mem::take(&mut first.groups));
    let mut reads = 1;
    // A figure at a rounding tie the pieces could not settle: read again,
    // keeping every value of the groups it depends on. Standard input
    // cannot be read twice: its figures stay as the pieces gave them.
    if !report.settled() && !inputs.iter().any(|i| i == "-") {
        let resolve = Arc::new(std::mem::take(&mut report.resolve));
        let second = gather(opts, inputs, (&query, &read_opts), None, Some(resolve));
        report = build(second.groups);
        reads = 2;
    }
    let Gathered {
        files,
        groups: _,
        names,
    } = first;
    let matched = files.iter().map(|f| f.matched).sum();
    Ok(Outcome {
        report,
        files,
        matched,
        matched_names: names,
        query,
        reads,
    })
}

/// Reads every input, on `opts.jobs` threads; `resolve` names the groups
/// whose every value is kept (a second read).
fn gather(
    opts: &Profiling,
    inputs: &[String],
    (query, read_opts): (&Query, &ReadOptions),
    progress: Option<Arc<AtomicU64>>,
    resolve: Option<Arc<Resolve>>,
) -> Gathered {
    let template = match resolve {
        Some(r) => Groups::resolving(r),
        None => Groups::logging(LogBudget::new(LOG_BUDGET)),
    };
    let jobs = match opts.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .max(1);
    // Fewer files than cores: cut each file into pieces instead, two per
    // core so that an uneven piece does not leave a core idle.
    let parts = if inputs.len() < jobs {
        2 * jobs / inputs.len()
    } else {
        1
    };
    let jobs = jobs.min(inputs.len());
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<(FileOutcome, Option<Groups>)>> = Mutex::new(
        (0..inputs.len())
            .map(|_| (FileOutcome::default(), None))
            .collect(),
    );
    let workers: Vec<Worker> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..jobs)
            .map(|_| {
                s.spawn(|| {
                    let mut w = Worker {
                        names: BTreeSet::new(),
                    };
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(input) = inputs.get(i) else { break };
                        // The first file's sums begin the input; later
                        // files' log their values for the merge.
                        let mut groups = template.fresh_at(i == 0);
                        let out = profile_file(
                            i as u32,
                            input,
                            (query, opts, read_opts),
                            parts,
                            progress.clone(),
                            (&mut w, &mut groups),
                        );
                        if let Ok(mut o) = outcomes.lock() {
                            o[i] = (out, Some(groups));
                        }
                    }
                    w
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut names = BTreeSet::new();
    for w in workers {
        names.extend(w.names);
    }
    let (files, groups) = outcomes
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .map(|(f, g)| (f, g.unwrap_or_default()))
        .unzip();
    Gathered {
        files,
        groups,
        names,
    }
}

/// What one piece of one file found.
struct Piece {
    /// `--name` verdicts by name, valid while this piece's reader lives.
    names_seen: NameCache,
    groups: Groups,
    /// Expression errors in all.
    error_count: u64,
    /// The first few expression errors (offset, line, message), turned into
    /// diagnostics once absolute line numbers are known.
    error_at: Vec<(u64, u64, String)>,
    matched: u64,
    names: BTreeSet<String>,
    /// The `$depmin` the calls so far were judged with.
    judged_with: Option<i64>,
    /// Where `$depmin` last changed: what came before was dropped and is
    /// judged again by reading up to here.
    stale_before: Option<u64>,
}

impl Piece {
    fn new(groups: Groups) -> Piece {
        Piece {
            names_seen: NameCache::default(),
            groups,
            error_count: 0,
            error_at: Vec::new(),
            matched: 0,
            names: BTreeSet::new(),
            judged_with: None,
            stale_before: None,
        }
    }

    /// Drops what was gathered (judged with a `$depmin` the file later
    /// proved wrong); keeps the name cache, which does not depend on it.
    fn restart(&mut self, at: u64) {
        let names_seen = std::mem::take(&mut self.names_seen);
        *self = Piece {
            names_seen,
            stale_before: Some(at),
            ..Piece::new(self.groups.fresh())
        };
    }

    /// Adds this piece to its file's groups, which hold what was read
    /// before it.
    fn merge_into(
        self,
        out: &mut FileOutcome,
        (w, groups): (&mut Worker, &mut Groups),
        name: &str,
        summary: &ReadSummary,
        warnings: &mut Diagnostics,
    ) {
        let unkept = self.error_count.saturating_sub(self.error_at.len() as u64);
        for (offset, line, msg) in self.error_at {
            warnings.push(name, summary.absolute_line(offset, line), msg);
        }
        warnings.total += unkept;
        out.matched += self.matched;
        groups.merge(self.groups);
        w.names.extend(self.names);
    }
}

fn profile_file(
    index: u32,
    input: &str,
    (query, opts, read_opts): (&Query, &Profiling, &ReadOptions),
    parts: usize,
    progress: Option<Arc<AtomicU64>>,
    (w, groups): (&mut Worker, &mut Groups),
) -> FileOutcome {
    let source = Source::from_arg(input);
    let mut out = FileOutcome {
        name: input.to_string(),
        ..FileOutcome::default()
    };
    let file = match open_counted(&source, progress.clone()) {
        Ok(f) => f,
        Err(e) => {
            out.skipped = Some(e.to_string());
            return out;
        }
    };
    let name = file.name.clone();
    let basename = file.basename.clone();
    let on_call = |p: &mut Piece, call: &tracelab_trace::Call<'_>| {
        if query.uses_depmin && read_opts.depmin.is_none() {
            if p.judged_with.is_some_and(|d| d != call.depmin) {
                p.restart(call.offset);
            }
            p.judged_with = Some(call.depmin);
        }
        let vars = CallVars {
            call,
            basename: &basename,
            file: &name,
            conv: &query.conv,
        };
        match query.hit(&vars, &mut p.names_seen) {
            Ok(Some(hit)) => match hit.value {
                Some(v) => {
                    p.matched += 1;
                    let first = at(index, call.offset);
                    if hit.stable {
                        p.groups.add_stable(&hit.group, v, hit.us, first);
                    } else {
                        p.groups.add(&hit.group, v, hit.us, first);
                    }
                    if opts.verbose && !p.names.contains(call.name) {
                        p.names.insert(call.name.to_string());
                    }
                }
                None => p.groups.touch(&hit.group, at(index, call.offset)),
            },
            Ok(None) => {}
            Err(msg) => {
                p.error_count += 1;
                if p.error_at.len() < Diagnostics::KEEP {
                    p.error_at.push((call.offset, call.line, msg));
                }
            }
        }
    };
    let (pieces, summary) = match Reader::new(read_opts.clone()).read_split(
        file,
        parts,
        |i| Piece::new(groups.fresh_at(i == 0)),
        on_call,
    ) {
        Ok(r) => r,
        Err(e) => {
            out.skipped = Some(e.to_string());
            return out;
        }
    };
    let mut warnings = summary.diagnostics.clone();
    for mut p in pieces {
        if let Some(end) = p.stale_before.take() {
            // $depmin is the file's minimum depth, known only at its end:
            // the calls before its last change are judged again with the
            // right value (traces that start inside recursive SQL).
            match rejudge(&source, end, summary.depmin, read_opts, &on_call, groups.fresh()) {
                Some(Ok((before, _))) => {
                    before.merge_into(&mut out, (w, groups), &name, &summary, &mut warnings);
                }
                Some(Err(e)) => warnings.push(&name, 0, format!("reading the start again: {e}")),
                None => warnings.push(
                    &name,
                    summary.lines,
                    format!(
                        "$depmin of standard input is {}, known only at its end; calls before it changed were dropped (name the file instead to have them judged again)",
                        summary.depmin
                    ),
                ),
            }
        }
        p.merge_into(&mut out, (w, groups), &name, &summary, &mut warnings);
    }
    out.warnings = warnings;
    out.lines = summary.lines;
    out.calls = summary.calls;
    out.timeline = summary.timeline;
    out
}

/// Reads `source` again up to byte `end` with `$depmin` fixed; `None` for
/// standard input, which cannot be read twice.
fn rejudge(
    source: &Source,
    end: u64,
    depmin: i64,
    read_opts: &ReadOptions,
    on_call: &(impl Fn(&mut Piece, &tracelab_trace::Call<'_>) + Sync),
    groups: Groups,
) -> Option<Result<(Piece, ReadSummary), String>> {
    if matches!(source, Source::Stdin) {
        return None;
    }
    let file = match open_counted(source, None) {
        Ok(f) => f,
        Err(e) => return Some(Err(e.to_string())),
    };
    let mut opts = read_opts.clone();
    opts.depmin = Some(depmin);
    let mut piece = Piece::new(groups);
    Some(
        Reader::new(opts)
            .read_before(file, end, |c| on_call(&mut piece, c))
            .map(|s| (piece, s))
            .map_err(|e| e.to_string()),
    )
}

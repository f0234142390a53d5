//! Profiling many files: one reader per worker thread, files handed out
//! one at a time, per-thread groups added up at the end.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tracelab_trace::{open_counted, Diagnostics, ReadOptions, Reader, Source};

use crate::aggregate::Groups;
use crate::error::SkewError;
use crate::options::SkewOptions;
use crate::query::{NameCache, Query};
use crate::report::Report;
use crate::vars::CallVars;

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
    /// The file was read twice because its `$depmin` was only known at
    /// its end.
    pub reread: bool,
}

/// The profile and what the run found on the way.
pub struct Outcome {
    pub report: Report,
    pub files: Vec<FileOutcome>,
    pub matched: u64,
    /// Call names that passed the filter (only with `--verbose`).
    pub matched_names: BTreeSet<String>,
    pub query: Query,
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
    groups: Groups,
    names: BTreeSet<String>,
}

/// Profiles `inputs` (paths, or `-` for standard input). `progress`, if
/// given, receives the raw bytes read as reading goes.
pub fn profile(
    opts: &SkewOptions,
    inputs: &[String],
    progress: Option<Arc<AtomicU64>>,
) -> Result<Outcome, SkewError> {
    if inputs.is_empty() {
        return Err(SkewError::NoInput);
    }
    let query = Query::new(opts)?;
    let read_opts = ReadOptions {
        binds: query.needs_binds,
        unaccounted: opts.unaccounted,
        thinktime_us: (opts.thinktime * 1e6).round() as i64,
        depmin: opts.depmin,
        all_lines: query.all_lines,
        chained: query.chained,
        line_numbers: query.uses_line,
        statements: query.uses_statements,
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
    let outcomes: Mutex<Vec<FileOutcome>> = Mutex::new(vec![FileOutcome::default(); inputs.len()]);
    let workers: Vec<Worker> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..jobs)
            .map(|_| {
                s.spawn(|| {
                    let mut w = Worker {
                        groups: Groups::default(),
                        names: BTreeSet::new(),
                    };
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(input) = inputs.get(i) else { break };
                        let out = profile_file(
                            i as u32,
                            input,
                            (&query, opts, &read_opts),
                            parts,
                            progress.clone(),
                            &mut w,
                        );
                        if let Ok(mut o) = outcomes.lock() {
                            o[i] = out;
                        }
                    }
                    w
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut groups = Groups::default();
    for (i, label) in query.precreated.iter().enumerate() {
        groups.touch(label, (0, i as u64));
    }
    let mut names = BTreeSet::new();
    for w in workers {
        groups.merge(w.groups);
        names.extend(w.names);
    }
    let files = outcomes.into_inner().unwrap_or_default();
    let matched = files.iter().map(|f| f.matched).sum();
    let report = Report::build(groups, opts, &query.group_label, &query.select_label);
    Ok(Outcome {
        report,
        files,
        matched,
        matched_names: names,
        query,
    })
}

/// What one piece of one file found.
#[derive(Default)]
struct Piece {
    /// `--name` verdicts by name, valid while this piece's reader lives.
    names_seen: NameCache,
    groups: Groups,
    errors: Diagnostics,
    /// Expression errors (offset, line, message), turned into diagnostics
    /// once absolute line numbers are known.
    error_at: Vec<(u64, u64, String)>,
    matched: u64,
    names: BTreeSet<String>,
}

fn profile_file(
    index: u32,
    input: &str,
    (query, opts, read_opts): (&Query, &SkewOptions, &ReadOptions),
    parts: usize,
    progress: Option<Arc<AtomicU64>>,
    w: &mut Worker,
) -> FileOutcome {
    let source = Source::from_arg(input);
    let mut out = FileOutcome {
        name: input.to_string(),
        ..FileOutcome::default()
    };
    let mut read_opts = read_opts.clone();
    loop {
        let file = match open_counted(&source, progress.clone()) {
            Ok(f) => f,
            Err(e) => {
                out.skipped = Some(e.to_string());
                return out;
            }
        };
        let name = file.name.clone();
        let basename = file.basename.clone();
        let mut reader = Reader::new(read_opts.clone());
        let on_call = |p: &mut Piece, call: &tracelab_trace::Call<'_>| {
            let vars = CallVars {
                call,
                basename: &basename,
                file: &name,
            };
            match query.hit(&vars, &mut p.names_seen) {
                Ok(Some(hit)) => match hit.value {
                    Some(v) => {
                        p.matched += 1;
                        p.groups.add(&hit.group, v, hit.us, (index, call.offset));
                        if opts.verbose && !p.names.contains(call.name) {
                            p.names.insert(call.name.to_string());
                        }
                    }
                    None => p.groups.touch(&hit.group, (index, call.offset)),
                },
                Ok(None) => {}
                Err(msg) => {
                    p.errors.total += 1;
                    if p.errors.kept.len() < Diagnostics::KEEP {
                        p.error_at.push((call.offset, call.line, msg));
                    }
                }
            }
        };
        match reader.read_split(file, parts, Piece::default, on_call) {
            Err(e) => {
                out.skipped = Some(e.to_string());
                return out;
            }
            Ok((pieces, summary)) => {
                let rereadable = !matches!(source, Source::Stdin);
                if summary.depmin_changed
                    && query.uses_depmin
                    && rereadable
                    && read_opts.depmin.is_none()
                {
                    // $depmin is the file's minimum depth, known only at its
                    // end; calls before a shallower one were judged with a
                    // wrong value. Rare (traces that start inside recursive
                    // SQL); read again with the right one.
                    read_opts.depmin = Some(summary.depmin);
                    out.reread = true;
                    continue;
                }
                let mut warnings = summary.diagnostics.clone();
                for p in pieces {
                    let unkept = p.errors.total.saturating_sub(p.error_at.len() as u64);
                    for (offset, line, msg) in p.error_at {
                        warnings.push(&name, summary.absolute_line(offset, line), msg);
                    }
                    warnings.total += unkept;
                    out.matched += p.matched;
                    w.groups.merge(p.groups);
                    w.names.extend(p.names);
                }
                if summary.depmin_changed && query.uses_depmin && !rereadable {
                    warnings.push(
                        &name,
                        summary.lines,
                        format!(
                            "$depmin of standard input is {}, known only at its end; earlier calls were filtered with a larger value (name the file instead to have it read twice)",
                            summary.depmin
                        ),
                    );
                }
                out.warnings = warnings;
                out.lines = summary.lines;
                out.calls = summary.calls;
                return out;
            }
        }
    }
}

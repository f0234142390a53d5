//! The export: files read on every core, each file's calls filtered by
//! the query engine and built into Arrow batches, the batches encoded by
//! writer threads while reading goes on.
//!
//! Every call of a file is read in order, by one thread: the columns hold
//! state that chains through a file (bind values, `$parse_id`,
//! `$exec_id`, `$island_id`), which a file cut into pieces cannot know at
//! a piece's start. The cores are kept busy instead by reading several
//! files at once and by encoding (Parquet's dictionaries and zstd) on
//! other threads than reading.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use tracelab_query::{CallVars, NameCache, Query, Question};
use tracelab_trace::{
    open, open_counted, open_raw, Call, Diagnostics, ReadOptions, Reader, Source,
};

use crate::columns::{schema, CallColumns, FileContext, ENCODINGS};
use crate::error::CallsError;
use crate::header::Header;
use crate::sink::{Encodings, Format, TableWriter};
use crate::tables::{self, StatementRow, Statements};
use crate::{CallsOptions, FileOutcome, Layout, Outcome};

/// Rows a file may hold back while its `$depmin` is not yet known (see
/// [`FileExport::take`]); past this the file is read again instead.
const HOLD_ROWS: usize = 1 << 20;

/// Batches in flight between one reader and its writer (about 3 MB
/// each): enough that neither waits when the other slows for a while (a
/// run of long bind lists, a row group's end). With 2 the two threads of
/// a 2-core export each waited 0.2-0.3 s on the 1 GB bench trace; with 8,
/// 0.05-0.15 s, for 18 MB more.
const QUEUE: usize = 8;

/// Exports `inputs` (paths, or `-` for standard input) as `opts` says.
/// `progress`, if given, receives the raw bytes read as reading goes.
pub fn export(
    opts: &CallsOptions,
    inputs: &[String],
    progress: Option<Arc<AtomicU64>>,
) -> Result<Outcome, CallsError> {
    if inputs.is_empty() {
        return Err(CallsError::NoInput);
    }
    let query = Query::new(&Question {
        where0: opts.where0.clone(),
        where1: opts.where1.clone(),
        name: opts.name.clone(),
        ..Question::default()
    })?;
    let read_opts = ReadOptions {
        binds: true,
        unaccounted: false,
        thinktime_us: (opts.thinktime * 1e6).round() as i64,
        depmin: opts.depmin,
        all_lines: query.all_lines,
        chained: true,
        line_numbers: true,
        statements: true,
        max_line: opts.max_line,
        ..ReadOptions::default()
    };
    let (layout, format) = Layout::resolve(&opts.output, opts.format)?;
    prepare(&layout)?;
    let one_file = matches!(layout, Layout::File(_));
    let cores = match opts.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .max(1);
    let jobs = cores.min(inputs.len());
    let shared = Shared {
        query: &query,
        read_opts: &read_opts,
        layout: &layout,
        format,
        // The cores the readers leave, at least one: a file output has
        // one writer for all readers, a directory one writer per file
        // being read. A reader (it builds every column of every row) is
        // as slow as an encoder: an encoder more than the cores left
        // takes its core away from it (measured on 2 cores: a fifth
        // slower, then a seventh).
        encoders: if one_file {
            cores.saturating_sub(jobs).max(1)
        } else {
            (cores.saturating_sub(jobs) / jobs).max(1)
        },
        progress,
        failed: Mutex::new(None),
        stop: AtomicBool::new(false),
    };
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<FileOutcome>> = Mutex::new(vec![FileOutcome::default(); inputs.len()]);
    let statements: Vec<HashMap<String, (i32, StatementRow)>> = std::thread::scope(|s| {
        // A file output has one writer that every reader feeds.
        let (common, writer) = if one_file {
            let (tx, rx) = sync_channel::<RecordBatch>(QUEUE * jobs);
            let path = layout.calls_path(0, format);
            let shared = &shared;
            let encoders = shared.encoders;
            let h = s
                .spawn(move || shared.note(write_table(&path, format, schema(true), encoders, rx)));
            (Some(tx), Some(h))
        } else {
            (None, None)
        };
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                let common = common.clone();
                let (shared, next, outcomes) = (&shared, &next, &outcomes);
                s.spawn(move || {
                    let mut stmts = HashMap::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(input) = inputs.get(i) else { break };
                        if shared.stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let out = shared.file(i as i32, input, common.clone(), &mut stmts);
                        if let Ok(mut o) = outcomes.lock() {
                            o[i] = out;
                        }
                    }
                    stmts
                })
            })
            .collect();
        drop(common);
        let stmts = workers.into_iter().filter_map(|h| h.join().ok()).collect();
        if let Some(h) = writer {
            let _ = h.join();
        }
        stmts
    });
    if let Some(e) = shared.failed.into_inner().ok().flatten() {
        return Err(e);
    }
    // A sqlid met in several files keeps the row of the first file (on
    // the command line), whichever worker read it first.
    let mut first: HashMap<String, (i32, StatementRow)> = HashMap::new();
    for m in statements {
        for (k, v) in m {
            match first.entry(k) {
                Entry::Occupied(mut o) if o.get().0 > v.0 => {
                    o.insert(v);
                }
                Entry::Occupied(_) => {}
                Entry::Vacant(e) => {
                    e.insert(v);
                }
            }
        }
    }
    let all: Statements = first.into_iter().map(|(k, (_, v))| (k, v)).collect();
    let files = outcomes.into_inner().unwrap_or_default();
    write_one(
        &layout.table_path("statements", format),
        format,
        &tables::statements_batch(&all),
    )?;
    write_one(
        &layout.table_path("files", format),
        format,
        &tables::files_batch(&files),
    )?;
    Ok(Outcome {
        rows: files.iter().map(|f| f.rows).sum(),
        files,
        statements: all.len(),
        layout: Some(layout),
        format: Some(format),
    })
}

/// Creates the output directory; refuses to mix a new export into the
/// calls of an old one.
fn prepare(layout: &Layout) -> Result<(), CallsError> {
    let dir = match layout {
        Layout::Dir(d) => {
            let calls = d.join("calls");
            if calls.exists() {
                return Err(CallsError::Usage(format!(
                    "{} exists: remove it, or export to another directory (the new calls would mix with the old)",
                    calls.display()
                )));
            }
            calls
        }
        Layout::File(f) => match f.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => return Ok(()),
        },
    };
    std::fs::create_dir_all(&dir).map_err(|e| CallsError::write(&dir, &e))
}

fn write_table(
    path: &Path,
    format: Format,
    schema: SchemaRef,
    encoders: usize,
    rx: Receiver<RecordBatch>,
) -> Result<(), CallsError> {
    if format == Format::Parquet {
        return crate::encode::write_parquet(path, schema, ENCODINGS, encoders, rx);
    }
    let mut w = TableWriter::create(path, format, &schema, ENCODINGS)?;
    for b in rx {
        w.write(&b)?;
    }
    w.finish()
}

fn write_one(path: &Path, format: Format, batch: &RecordBatch) -> Result<(), CallsError> {
    let mut w = TableWriter::create(path, format, &batch.schema(), Encodings::default())?;
    w.write(batch)?;
    w.finish()
}

/// What every worker reads.
struct Shared<'a> {
    query: &'a Query,
    read_opts: &'a ReadOptions,
    layout: &'a Layout,
    format: Format,
    /// Threads that encode each Parquet output.
    encoders: usize,
    progress: Option<Arc<AtomicU64>>,
    /// The first write error: it stops the export.
    failed: Mutex<Option<CallsError>>,
    stop: AtomicBool,
}

impl Shared<'_> {
    fn note(&self, r: Result<(), CallsError>) {
        if let Err(e) = r {
            self.stop.store(true, Ordering::Relaxed);
            if let Ok(mut f) = self.failed.lock() {
                f.get_or_insert(e);
            }
        }
    }

    /// Exports one file, into `common` (a file output) or a partition of
    /// its own.
    fn file(
        &self,
        file_id: i32,
        input: &str,
        common: Option<SyncSender<RecordBatch>>,
        stmts: &mut HashMap<String, (i32, StatementRow)>,
    ) -> FileOutcome {
        let mut out = FileOutcome {
            file_id,
            name: input.to_string(),
            ..FileOutcome::default()
        };
        // A FIFO is copied first, and read from the copy (see `Spool`).
        let spooled = match Spool::of(input) {
            Ok(s) => s,
            Err(e) => {
                out.skipped = Some(e);
                return out;
            }
        };
        let source = match &spooled {
            Some(s) => Source::Path(s.path.clone()),
            None => Source::from_arg(input),
        };
        // Standard input is read once: its header facts are not known.
        out.header = match &source {
            Source::Stdin => None,
            s => open(s).ok().map(Header::read),
        };
        let mut file = match open_counted(&source, self.progress.clone()) {
            Ok(f) => f,
            Err(e) => {
                out.skipped = Some(e.to_string());
                return out;
            }
        };
        // Messages name the input as the user named it, not its copy.
        file.name = input.to_string();
        out.basename = Some(file.basename.clone());
        out.compression = Some(format!("{:?}", file.compression).to_lowercase());
        let basename = file.basename.clone();
        let session = out.header.as_ref().and_then(|h| h.session.clone());
        let ctx = FileContext {
            file_id,
            file: input,
            basename: &basename,
            session: session.as_deref(),
            tim_offset_us: out.header.as_ref().and_then(|h| h.tim_offset_us),
        };
        std::thread::scope(|s| {
            let (tx, writer) = match common {
                Some(tx) => (tx, None),
                None => {
                    let (tx, rx) = sync_channel::<RecordBatch>(QUEUE);
                    let path = self.layout.calls_path(file_id, self.format);
                    let (format, encoders) = (self.format, self.encoders);
                    let made = path
                        .parent()
                        .map_or(Ok(()), std::fs::create_dir_all)
                        .map_err(|e| CallsError::write(&path, &e));
                    let h = s.spawn(move || {
                        made.and_then(|_| write_table(&path, format, schema(false), encoders, rx))
                    });
                    (tx, Some(h))
                }
            };
            let mut fe = FileExport {
                query: self.query,
                ctx: &ctx,
                cols: CallColumns::new(writer.is_none()),
                tx,
                broken: false,
                tentative: self.read_opts.depmin.is_none(),
                held: Vec::new(),
                held_rows: 0,
                used: None,
                redo_before: None,
                redo_all: false,
                names: NameCache::default(),
                stmts,
                last_sqlid: String::new(),
                rows: 0,
                errors: Diagnostics::default(),
            };
            let read = Reader::new(self.read_opts.clone()).read(file, |c| fe.take(c));
            match read {
                Ok(summary) => {
                    out.lines = summary.lines;
                    out.calls = summary.calls;
                    out.depmin = summary.depmin;
                    out.warnings = summary.diagnostics;
                    self.settle(&mut fe, &source, summary.depmin, &mut out);
                }
                // Not a trace: the rows of its trace-like lines are not
                // calls, and are dropped with the statements first seen
                // in it (rows are held until a call at depth 0 settles the
                // file's depth, which such a file has not).
                Err(e @ tracelab_trace::ReadError::NotATrace { .. }) => {
                    out.skipped = Some(e.to_string());
                    fe.drop_held();
                    drop(fe.cols.finish());
                    fe.stmts.retain(|_, (id, _)| *id != file_id);
                }
                Err(e) => {
                    out.skipped = Some(e.to_string());
                    fe.flush_held();
                    fe.flush();
                }
            }
            let FileExport {
                rows, errors, tx, ..
            } = fe;
            drop(tx);
            out.rows = rows;
            let unkept = errors.total - errors.kept.len() as u64;
            for d in errors.kept {
                out.warnings.push(&d.file, d.line, d.message);
            }
            out.warnings.total += unkept;
            if let Some(h) = writer {
                self.note(h.join().unwrap_or(Ok(())));
            }
        });
        out
    }

    /// At the end of a file: sends what was held while `$depmin` was not
    /// known if it was judged right, or reads the file again with the
    /// file's `$depmin` (all of it, or the part before it was known).
    fn settle(
        &self,
        fe: &mut FileExport<'_, '_>,
        source: &Source,
        depmin: i64,
        out: &mut FileOutcome,
    ) {
        if fe.tentative {
            fe.tentative = false;
            let right = fe.used.is_none_or(|(lo, hi)| lo == depmin && hi == depmin);
            if right && !fe.redo_all {
                fe.flush_held();
            } else {
                fe.drop_held();
                fe.redo_all = true;
            }
        }
        fe.flush();
        let end = match (fe.redo_all, fe.redo_before) {
            (true, _) => u64::MAX,
            (false, Some(end)) => end,
            (false, None) => return,
        };
        if matches!(source, Source::Stdin) {
            out.warnings.push(
                &out.name,
                out.lines,
                format!("$depmin of standard input is {depmin}, known only at its end; calls before it was known were dropped (name the file instead to have them read again)"),
            );
            return;
        }
        fe.redo_all = false;
        let mut opts = self.read_opts.clone();
        opts.depmin = Some(depmin);
        let again = open(source).map_err(|e| e.to_string()).and_then(|f| {
            Reader::new(opts)
                .read_before(f, end, |c| fe.take(c))
                .map_err(|e| e.to_string())
        });
        if let Err(e) = again {
            out.warnings
                .push(&out.name, 0, format!("reading the start again: {e}"));
        }
        fe.flush();
    }
}

/// A named input that is not a regular file (a FIFO, bash's `<(cmd)`, a
/// character device), copied to a temporary file before the export.
///
/// Why: the export reads a file's header first and may read its start
/// again once `$depmin` is known (see `Shared::settle`); a FIFO gives its
/// data to the first reader only, so the header read would swallow the
/// trace and the export find nothing. The copy keeps the input's own
/// file name, so `$basename` is what it would be for the input; the copy
/// is removed when the file is done.
struct Spool {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl Spool {
    /// The copy of `input`, or `None` for standard input (read once, as
    /// it is) and regular files (read where they are; so are names that
    /// cannot be opened, whose error the open reports).
    fn of(input: &str) -> Result<Option<Spool>, String> {
        if input == "-" {
            return Ok(None);
        }
        let path = Path::new(input);
        match std::fs::metadata(path) {
            Ok(m) if !m.is_file() && !m.is_dir() => {}
            _ => return Ok(None),
        }
        let failed = |what: &str, e: std::io::Error| format!("{input}: cannot {what}: {e}");
        let dir = tempfile::Builder::new()
            .prefix("tracelab-calls-")
            .tempdir()
            .map_err(|e| failed("make a temporary directory to copy it into", e))?;
        let name = path
            .file_name()
            .map_or_else(|| "input".into(), |n| n.to_os_string());
        let copy = dir.path().join(name);
        // A FIFO with no writer is given up on as the other commands do.
        let mut from = open_raw(path).map_err(|e| e.to_string())?;
        let mut to = std::fs::File::create(&copy)
            .map_err(|e| failed(&format!("create {}", copy.display()), e))?;
        std::io::copy(&mut from, &mut to)
            .map_err(|e| failed(&format!("copy it to {}", copy.display()), e))?;
        Ok(Some(Spool {
            _dir: dir,
            path: copy,
        }))
    }
}

/// One file being exported.
struct FileExport<'a, 'm> {
    query: &'a Query,
    ctx: &'a FileContext<'a>,
    cols: CallColumns,
    tx: SyncSender<RecordBatch>,
    /// The writer is gone (it failed): stop building.
    broken: bool,
    /// `$depmin` may still change: the file's calls so far were judged
    /// with a minimum depth a later call may lower.
    tentative: bool,
    held: Vec<RecordBatch>,
    held_rows: usize,
    /// Lowest and highest `$depmin` calls were judged with while tentative.
    used: Option<(i64, i64)>,
    /// Calls before this offset were judged wrong: read them again.
    redo_before: Option<u64>,
    /// Read the whole file again (held too much, or judged wrong).
    redo_all: bool,
    names: NameCache,
    stmts: &'m mut HashMap<String, (i32, StatementRow)>,
    last_sqlid: String,
    rows: u64,
    errors: Diagnostics,
}

impl FileExport<'_, '_> {
    /// One call: judged by the filter, kept as a row if it passes.
    ///
    /// `$depmin` is the file's minimum depth, known for sure only at its
    /// end or once a call at depth 0 is seen (usually the first lines).
    /// Until then rows are held back; if the depth the held calls were
    /// judged with proves wrong they are dropped and read again.
    fn take(&mut self, call: &Call<'_>) {
        if self.broken || self.redo_all {
            return;
        }
        if self.tentative {
            if call.dep.is_some() && call.depmin == 0 {
                self.tentative = false;
                if self.used.is_some_and(|(_, hi)| hi != 0) {
                    self.drop_held();
                    self.redo_before = Some(call.offset);
                } else {
                    self.flush_held();
                }
            } else {
                let d = call.depmin;
                self.used = Some(self.used.map_or((d, d), |(lo, hi)| (lo.min(d), hi.max(d))));
            }
        }
        let vars = CallVars {
            call,
            basename: self.ctx.basename,
            file: self.ctx.file,
            conv: &self.query.conv,
        };
        match self.query.keeps(&vars, &mut self.names) {
            Ok(true) => {}
            Ok(false) => return,
            Err(msg) => {
                self.errors.push(self.ctx.file, call.line, msg);
                return;
            }
        }
        if call.stmt.sqlid != self.last_sqlid {
            self.last_sqlid.clone_from(&call.stmt.sqlid);
            if !self.stmts.contains_key(&call.stmt.sqlid) {
                self.stmts.insert(
                    call.stmt.sqlid.clone(),
                    (self.ctx.file_id, StatementRow::of(call.stmt)),
                );
            }
        }
        self.cols.push(call, self.ctx);
        if self.cols.len() >= crate::BATCH_ROWS {
            let b = self.cols.finish();
            if self.tentative {
                self.held_rows += b.num_rows();
                self.held.push(b);
                if self.held_rows > HOLD_ROWS {
                    self.drop_held();
                    self.redo_all = true;
                }
            } else {
                self.send(b);
            }
        }
    }

    fn send(&mut self, b: RecordBatch) {
        if b.num_rows() == 0 || self.broken {
            return;
        }
        self.rows += b.num_rows() as u64;
        if self.tx.send(b).is_err() {
            self.broken = true;
        }
    }

    /// Sends the rows built so far.
    fn flush(&mut self) {
        if !self.cols.is_empty() {
            let b = self.cols.finish();
            self.send(b);
        }
    }

    fn flush_held(&mut self) {
        for b in std::mem::take(&mut self.held) {
            self.send(b);
        }
        self.held_rows = 0;
    }

    /// Drops the rows judged with a wrong `$depmin` (held and building).
    fn drop_held(&mut self) {
        self.held.clear();
        self.held_rows = 0;
        let _ = self.cols.finish();
    }
}

//! The trace state machine: lines in, [`Call`]s out.
//!
//! States, as in every 10046 reader: normal lines; the SQL text of a PARSING IN
//! CURSOR (until `END OF STMT`); a BINDS block (lines that start with a
//! space); the text after PARSE ERROR (until the next recognised line).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::call::{
    Call, CallKind, DbFields, Statement, WaitFields, WallClock, PSEUDO_BETWEEN, PSEUDO_WITHIN,
};
use crate::diag::{Diagnostic, Diagnostics};
use crate::fields;
use crate::input::{Body, TraceFile};
use crate::lines::{Line, Lines, RangeReader, DEFAULT_MAX_LINE};

/// What the consumer needs; what it does not need is not computed.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Collect bind values for `@bind` (costs an allocation per bind).
    pub binds: bool,
    /// Emit unaccounted-for pseudo-calls (see [`crate::PSEUDO_WITHIN`]).
    pub unaccounted: bool,
    /// An SQL*Net message from client at least this long (µs) is think
    /// time: it ends an island, and the calls after it get the next
    /// `island_id`.
    pub thinktime_us: i64,
    /// Fixed minimum depth; `None` computes it from the file.
    pub depmin: Option<i64>,
    /// Also hand out every line that is not a call (header, SQL text,
    /// BINDS, STAT, blank lines, ...) as a [`CallKind::Line`] record, for
    /// mrskew's `--name=:all`.
    pub all_lines: bool,
    /// With `all_lines`, which of those lines: a consumer that reads only
    /// some of them says so, and the reader skips the rest at the cost of
    /// finding their line ends.
    pub line_kinds: LineKinds,
    /// The consumer reads state that chains through the whole file
    /// (`$parse_id`, `$exec_id`, `$island_id`, the wall clock of
    /// [`Call::wall`]): never split the file. (A piece read on its own
    /// knows no `***` timestamp before its start, so its calls' `wall` is
    /// `None` until it meets one.)
    pub chained: bool,
    /// The consumer reads [`Call::line`] while reading. When false, a file
    /// read in pieces skips a counting pass and `Call::line` counts from
    /// the start of the piece; [`ReadSummary::absolute_line`] translates
    /// afterwards.
    pub line_numbers: bool,
    /// The consumer reads statement context (`$sqlid`, `$sql`, `$hv`, ...)
    /// while reading. When false, a file read in pieces skips finding the
    /// statements each piece inherits; calls on cursors parsed in an
    /// earlier piece then carry placeholders.
    pub statements: bool,
    /// The longest line kept, in bytes: a longer one is warned about and
    /// read as an empty line, so that a runaway line cannot exhaust memory.
    pub max_line: usize,
    /// Files smaller than this are read by one thread in
    /// [`Reader::read_split`] (splitting costs more than it saves); tests
    /// lower it to cut small files.
    pub min_split: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            binds: false,
            unaccounted: false,
            thinktime_us: 1_000_000,
            depmin: None,
            all_lines: false,
            line_kinds: LineKinds::ALL,
            chained: false,
            line_numbers: true,
            statements: true,
            max_line: DEFAULT_MAX_LINE,
            min_split: MIN_SPLIT,
        }
    }
}

/// The lines that are no call which [`ReadOptions::all_lines`] hands
/// out; every other line (headers, `***`, `=====`, PARSING IN CURSOR,
/// BINDS, `Bind#n` and `value=`, STAT, ERROR, ...) always is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineKinds {
    /// The SQL text after PARSING IN CURSOR, up to and including its END
    /// OF STMT, and the text after PARSE ERROR.
    pub sql_text: bool,
    /// The lines of a BINDS block other than `Bind#n` and `value=`
    /// (`oacdty=…`, `kxsbbbfp=…`, `No oacdef…`, blank lines): most of the
    /// lines of a trace with binds. A block in which a quoted value runs
    /// over lines is handed out whole from that value on.
    pub bind_details: bool,
}

impl LineKinds {
    /// Every line.
    pub const ALL: LineKinds = LineKinds {
        sql_text: true,
        bind_details: true,
    };
}

/// What [`ReadOptions::unaccounted`] met on the way that changes how the
/// time between calls is counted; the consumer says so to the user.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeline {
    /// Calls and between-call waits that start before the event before
    /// them ended (seen in 11.1 traces), and by how much in all (in the
    /// trace's units): that time is counted once, taken out of the
    /// unaccounted-for pseudo-calls.
    pub overlaps: u64,
    pub overlap: i128,
    /// Changes of `*** SESSION ID` (shared-server traces interleave
    /// sessions) or of trcsess's `*** [ Unix process pid: N ]` inside the
    /// file, the distinct sessions seen, and the time across the changes,
    /// which belongs to other sessions and is left out.
    pub session_switches: u64,
    pub sessions: u64,
    pub left_out: i128,
    /// Pseudo-calls left out because their durations did not fit in 64 bits.
    pub overflows: u64,
    /// Top-level events that end before the one before them ended: `tim`
    /// went back (files concatenated, a clock reset). Each starts a new
    /// clock walk: it counts in full, and no gap is counted across the
    /// jump.
    pub restarts: u64,
}

/// A process's clock walk while another process's block is read.
type ParkedWalk = (
    Vec<PendingWait>,
    Option<i64>,
    Option<Box<[u8]>>,
    Option<Option<i64>>,
);

/// What a read found besides its calls.
#[derive(Debug, Clone, Default)]
pub struct ReadSummary {
    pub lines: u64,
    pub calls: u64,
    /// The minimum depth of the file's database calls (or the fixed one).
    pub depmin: i64,
    pub diagnostics: Diagnostics,
    /// With [`ReadOptions::unaccounted`]: overlaps and session changes met.
    pub timeline: Timeline,
    /// (start offset, lines before it) of each piece whose line numbers
    /// were counted from the piece's start.
    pub(crate) relative_pieces: Vec<(u64, u64)>,
}

impl ReadSummary {
    /// The line number in the file of a call's `line` and `offset`, also
    /// when the file was read in pieces without line numbers.
    pub fn absolute_line(&self, offset: u64, line: u64) -> u64 {
        let i = self
            .relative_pieces
            .partition_point(|(start, _)| *start <= offset);
        match i {
            0 => line,
            i => line + self.relative_pieces[i - 1].1,
        }
    }
}

/// Why a file could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{file}:{line}: read error: {source}")]
    Io {
        file: String,
        line: u64,
        source: std::io::Error,
    },
    #[error("{file}: not an Oracle extended SQL trace file: {why}")]
    NotATrace { file: String, why: String },
}

#[derive(Default, Clone)]
struct Cursor {
    stmt: Arc<Statement>,
    binds: Vec<Option<Arc<str>>>,
    parse_id: u64,
    exec_id: u64,
}

#[derive(Clone, Copy)]
enum State {
    Normal,
    /// Inside PARSING IN CURSOR text for this cursor key, opened at `line`.
    Sql {
        key: u64,
        line: u64,
    },
    /// Inside a PARSE ERROR text for this cursor key.
    ParseErrorSql(u64),
    Binds(u64),
    /// Inside a quoted bind value that spans lines.
    BindValue(u64),
}

/// A wait kept until the next database call decides whether it was inside
/// that call or between calls (only with `--unaccounted`).
struct PendingWait {
    start: i64,
    end: i64,
}

/// How many lines may pass with nothing recognisable before a file is
/// declared not to be a trace.
const SNIFF_LINES: u64 = 5000;

/// Reads one trace file at a time; reusable across files.
pub struct Reader {
    opts: ReadOptions,
}

/// Per-file state of one read.
struct Run<'f> {
    opts: &'f ReadOptions,
    file: &'f str,
    cursors: FxHashMap<u64, Cursor>,
    /// Context for calls without a cursor (XCTEND, LOB*): `#():<file>`.
    nocursor: Cursor,
    state: State,
    depmin_seen: Option<i64>,
    depmin_used: Option<(i64, i64)>,
    island: u64,
    pending: Vec<PendingWait>,
    /// End of the latest top-level event, for between-call gaps.
    top_end: Option<i64>,
    /// The session of the lines being read: `*** SESSION ID:(sid.serial#)`
    /// in slot 0, trcsess's `*** [ Unix process pid: N ]` in slot 1; the
    /// sessions seen; and, after a change, the end of the previous
    /// session's last event (the time across the change is another
    /// session's) until the new session's first event.
    session: [Option<Box<[u8]>>; 2],
    sessions: Vec<(u8, Box<[u8]>)>,
    switched_from: Option<Option<i64>>,
    /// The clock walks of the other processes of a trcsess merge, parked
    /// while another process's block is read: (pending waits, end of the
    /// latest top-level event, session id, switched_from).
    walks: FxHashMap<Box<[u8]>, ParkedWalk>,
    recognised: u64,
    /// Calls and SQL lines read without damage: a file whose every
    /// trace-like line is damaged (a Markdown page quoting a profile's
    /// `XCTEND  0.000000 ...` row) is not a trace.
    sound: u64,
    /// PARSING IN CURSOR, PARSE ERROR, BINDS and STAT lines, and
    /// tracelab's own header: with the calls, what tells a SQL trace from
    /// Oracle's other trace files.
    sql_lines: u64,
    /// The process that wrote the file, from the header's `image:`.
    image: Option<String>,
    /// Wall clock of the latest `***` timestamp, until a `tim` anchors it.
    wall_pending: Option<i64>,
    wall: Option<WallClock>,
    /// Whether the current line was handed out as a call.
    emitted: bool,
    /// The consumer stopped the read before the end of the file.
    stopped: bool,
    /// Whether the current line is of a kind [`ReadOptions::line_kinds`]
    /// leaves out.
    unwanted: bool,
    /// A quoted bind value of the current BINDS block runs over lines: the
    /// block's details are handed out from there on.
    bind_quote: bool,
    /// Byte offset of the current line in the file.
    offset: u64,
    /// Wait and LOB call names seen, as text.
    names: FxHashMap<Box<[u8]>, Arc<str>>,
    summary: ReadSummary,
}

impl Reader {
    pub fn new(opts: ReadOptions) -> Reader {
        Reader { opts }
    }

    /// Reads `file` to its end, handing each call to `on_call`.
    pub fn read(
        &mut self,
        file: TraceFile,
        on_call: impl FnMut(&Call<'_>),
    ) -> Result<ReadSummary, ReadError> {
        self.read_to(file, u64::MAX, on_call)
    }

    /// Reads the lines of `file` that start before byte `end`: for judging
    /// again, with the right `$depmin`, the calls a first read judged with a
    /// tentative one (see [`Call::depmin`]).
    pub fn read_before(
        &mut self,
        file: TraceFile,
        end: u64,
        on_call: impl FnMut(&Call<'_>),
    ) -> Result<ReadSummary, ReadError> {
        self.read_to(file, end, on_call)
    }

    /// Reads `file` until `on_call` says to stop (a consumer that has what
    /// it wants, such as a crop past its window): the rest is not read. A
    /// stop is heeded once the file has shown it is a SQL trace (a call or
    /// a statement read whole); until then reading goes on, so that a file
    /// that is none is refused as a whole read refuses it. The summary
    /// counts the lines read.
    pub fn read_until(
        &mut self,
        file: TraceFile,
        mut on_call: impl FnMut(&Call<'_>) -> std::ops::ControlFlow<()>,
    ) -> Result<ReadSummary, ReadError> {
        let stop = std::cell::Cell::new(false);
        self.read_with(
            file,
            u64::MAX,
            || stop.get(),
            |c| {
                if on_call(c).is_break() {
                    stop.set(true);
                }
            },
        )
    }

    fn read_to(
        &mut self,
        file: TraceFile,
        limit: u64,
        on_call: impl FnMut(&Call<'_>),
    ) -> Result<ReadSummary, ReadError> {
        self.read_with(file, limit, || false, on_call)
    }

    fn read_with(
        &mut self,
        file: TraceFile,
        limit: u64,
        stop: impl Fn() -> bool,
        mut on_call: impl FnMut(&Call<'_>),
    ) -> Result<ReadSummary, ReadError> {
        let whole = limit == u64::MAX;
        let name = file.name.clone();
        let reader: Box<dyn Read + Send> = match file.body {
            Body::File { file, len, counter } => Box::new(RangeReader {
                file,
                pos: 0,
                end: len,
                counter,
            }),
            Body::Stream(r) => r,
        };
        let mut lines = Lines::new(reader).max_line(self.opts.max_line);
        let mut run = Run::new(&self.opts, &name, FxHashMap::default());
        let line_no = drive(&mut run, &mut lines, 0, whole, limit, &stop, &mut on_call)?;
        if whole && run.stopped {
            run.not_a_sql_trace(line_no)?;
        } else if whole {
            run.unended_at_end(line_no);
            run.not_a_sql_trace(line_no)?;
            run.finish(line_no, &mut on_call);
        }
        let mut summary = std::mem::take(&mut run.summary);
        summary.lines = line_no;
        summary.depmin = run.depmin();
        Ok(summary)
    }

    /// Whether [`Reader::read_split`] would cut `file` into pieces: a plain
    /// file big enough to be worth it, and options that need no state a
    /// piece cannot know at its start (bind values, the gaps between calls
    /// of `unaccounted`, the `chained` ids).
    pub fn can_split(&self, file: &TraceFile) -> bool {
        matches!(&file.body, Body::File { len, .. } if *len >= self.opts.min_split.max(1))
            && !self.opts.unaccounted
            && !self.opts.binds
            && !self.opts.chained
    }

    /// Reads `file` in up to `parts` pieces on as many threads, each piece
    /// with its own consumer state made by `new_state` (given the piece's
    /// index in file order); returns the states in file order. A file that cannot be split is read whole, with one
    /// state.
    ///
    /// Pieces start after a `=====================` separator, where the
    /// reader is between statements. When the consumer needs statement
    /// context or line numbers ([`ReadOptions::statements`],
    /// [`ReadOptions::line_numbers`]), a first pass over each piece finds
    /// its PARSING IN CURSOR statements and counts its lines by block
    /// searches, so that every piece starts with the right cursor table and
    /// line number; otherwise the pieces are read once.
    pub fn read_split<S, N, F>(
        &mut self,
        file: TraceFile,
        parts: usize,
        new_state: N,
        on_call: F,
    ) -> Result<(Vec<S>, ReadSummary), ReadError>
    where
        S: Send,
        N: Fn(usize) -> S + Sync,
        F: Fn(&mut S, &Call<'_>) + Sync,
    {
        if parts < 2 || !self.can_split(&file) {
            let mut state = new_state(0);
            let summary = self.read(file, |c| on_call(&mut state, c))?;
            return Ok((vec![state], summary));
        }
        let name = file.name.clone();
        let Body::File { file, len, counter } = file.body else {
            unreachable!("can_split checked the body is a file")
        };
        let io_err = |source: std::io::Error| ReadError::Io {
            file: name.clone(),
            line: 0,
            source,
        };
        let bounds = split_points(&file, len, parts).map_err(io_err)?;
        let n = bounds.len() - 1;
        // Pieces after the first start without knowing the file's minimum
        // depth, and a piece that guessed wrong is read again. Almost every
        // trace has a top-level call near its start: finding one settles
        // $depmin at 0 for every piece before they start.
        let mut settled = self.opts.clone();
        if settled.depmin.is_none() && has_top_level_call(&file, len).map_err(io_err)? {
            settled.depmin = Some(0);
        }
        let opts = &settled;
        let range = |i: usize, counter: Option<Arc<AtomicU64>>| {
            Lines::at(
                RangeReader {
                    file: file.clone(),
                    pos: bounds[i],
                    end: bounds[i + 1],
                    counter,
                },
                bounds[i],
            )
            .max_line(opts.max_line)
        };
        // Pass 1, only if needed: lines and statements of every piece but
        // the last.
        let mut starts: Vec<(u64, FxHashMap<u64, Cursor>)> = vec![(0, FxHashMap::default()); n];
        if opts.statements || opts.line_numbers {
            let scans: Vec<std::io::Result<(u64, FxHashMap<u64, Cursor>)>> =
                std::thread::scope(|s| {
                    let handles: Vec<_> = (0..n - 1)
                        .map(|i| {
                            let range = &range;
                            let name = &name;
                            s.spawn(move || scan_piece(opts, name, range(i, None)))
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap_or_else(|_| Ok(Default::default())))
                        .collect()
                });
            for (i, scan) in scans.into_iter().enumerate() {
                let (lines, cursors) = scan.map_err(io_err)?;
                let (prev_lines, mut merged) = starts[i].clone();
                merged.extend(cursors);
                starts[i + 1] = (prev_lines + lines, merged);
            }
        }
        // Pass 2: every piece with its own state, in parallel.
        let run_piece = |i: usize, depmin: Option<i64>| -> Result<_, ReadError> {
            let mut piece_opts = opts.clone();
            if depmin.is_some() {
                piece_opts.depmin = depmin;
            }
            let mut state = new_state(i);
            let (first_line, cursors) = starts[i].clone();
            let mut run = Run::new(&piece_opts, &name, cursors);
            let mut lines = range(
                i,
                if depmin.is_none() {
                    counter.clone()
                } else {
                    None
                },
            );
            // The first piece is checked like a whole file (binary data,
            // nothing recognisable at its start), so that the verdict does
            // not depend on how the file was cut.
            let no = drive(
                &mut run,
                &mut lines,
                first_line,
                i == 0,
                u64::MAX,
                &|| false,
                &mut |c: &Call<'_>| on_call(&mut state, c),
            )?;
            if i == n - 1 {
                run.unended_at_end(no);
            }
            let seen = run.depmin_seen;
            let used = run.depmin_used;
            let summary = std::mem::take(&mut run.summary);
            let found = (
                run.recognised,
                run.sql_lines,
                run.image.take(),
                run.sound,
                run.summary.diagnostics.kept.first().cloned(),
            );
            Ok((state, summary, no - first_line, seen, used, found))
        };
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let run_piece = &run_piece;
                    s.spawn(move || run_piece(i, None))
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        let mut results: Vec<_> = results
            .into_iter()
            .map(|r| r.unwrap_or_else(|_| Err(not_a_trace(&name, 0))))
            .collect::<Result<_, _>>()?;
        let recognised: u64 = results.iter().map(|r| r.5 .0).sum();
        let lines: u64 = results.iter().map(|r| r.2).sum();
        if recognised == 0 {
            return Err(not_a_trace(&name, lines));
        }
        let calls: u64 = results.iter().map(|r| r.1.calls).sum();
        let sql_lines: u64 = results.iter().map(|r| r.5 .1).sum();
        if calls == 0 && sql_lines == 0 {
            let image = results.iter_mut().find_map(|r| r.5 .2.take());
            return Err(not_a_sql_trace(&name, lines, image.as_deref()));
        }
        if results.iter().all(|r| r.5 .3 == 0) {
            let first = results.iter().find_map(|r| r.5 .4.as_ref());
            return Err(all_damaged(&name, lines, first));
        }
        let depmin = opts
            .depmin
            .or(results.iter().filter_map(|r| r.3).min())
            .unwrap_or(0);
        // A piece that judged calls with another $depmin is read again.
        for (i, result) in results.iter_mut().enumerate() {
            let used = result.4;
            if opts.depmin.is_none() && used.is_some_and(|(lo, hi)| lo != depmin || hi != depmin) {
                *result = run_piece(i, Some(depmin))?;
            }
        }
        // Lines were counted before the pieces only when the consumer reads
        // them; otherwise each piece counted from its own start.
        let counted = opts.line_numbers;
        let mut summary = ReadSummary {
            lines,
            depmin,
            ..ReadSummary::default()
        };
        let mut states = Vec::with_capacity(results.len());
        let mut before = 0u64;
        for (i, (state, piece, piece_lines, ..)) in results.into_iter().enumerate() {
            let shift = if counted { 0 } else { before };
            if !counted {
                summary.relative_pieces.push((bounds[i], before));
            }
            before += piece_lines;
            summary.calls += piece.calls;
            let unkept = piece.diagnostics.total - piece.diagnostics.kept.len() as u64;
            for d in piece.diagnostics.kept {
                summary.diagnostics.push(&d.file, d.line + shift, d.message);
            }
            summary.diagnostics.total += unkept;
            states.push(state);
        }
        Ok((states, summary))
    }
}

/// Feeds the lines of `lines` that start before byte `limit` to `run`,
/// numbering from `first_line + 1`; returns the last line number. `sniff`
/// checks the start of a whole file for signs that it is not a trace.
fn drive<R: Read>(
    run: &mut Run<'_>,
    lines: &mut Lines<R>,
    first_line: u64,
    sniff: bool,
    limit: u64,
    // Monomorphised: the reads that cannot stop test a constant.
    stop: &impl Fn() -> bool,
    on_call: &mut impl FnMut(&Call<'_>),
) -> Result<u64, ReadError> {
    let mut no = first_line;
    if sniff {
        // The first line's start, before it is complete: a stream of NUL
        // bytes with no line end (/dev/zero) is refused at once.
        let head = lines.head();
        let first = memchr::memchr(b'\n', head).map_or(head, |i| &head[..i]);
        if memchr::memchr(0, first).is_some() {
            return Err(not_binary(run.file));
        }
    }
    while let Some(line) = lines.next_line() {
        if line.offset >= limit {
            return Ok(no);
        }
        no += 1;
        if sniff && no == 1 && memchr::memchr(0, line.bytes).is_some() {
            return Err(not_binary(run.file));
        }
        if line.overlong {
            run.overlong(no);
        }
        run.feed(no, &line, on_call);
        if stop() && run.is_sql_trace() {
            run.stopped = true;
            return Ok(no);
        }
        if sniff && no == SNIFF_LINES && run.recognised == 0 {
            return Err(ReadError::NotATrace {
                file: run.file.to_string(),
                why: format!("no trace line in its first {SNIFF_LINES} lines"),
            });
        }
    }
    if let Some((source, cut)) = lines.take_error() {
        if run.recognised == 0 {
            // A small compressed file is often one block (bzip2's 900 KB,
            // zstd's 128 KB): cut short, none of it decodes.
            let source = std::io::Error::new(
                source.kind(),
                format!("{source}: the file is damaged or cut short before its first trace line"),
            );
            return Err(ReadError::Io {
                file: run.file.to_string(),
                line: no + 1,
                source,
            });
        }
        let what = if cut > 0 {
            format!("line {} is cut short ({cut} bytes, not read) and ", no + 1)
        } else {
            String::new()
        };
        // First among the file's warnings: the lines before it were read,
        // and what is damaged among them is explained by it.
        let message = format!(
            "read error: {source}: the file is damaged or cut short here; {what}the rest is lost (the lines before were read)"
        );
        run.summary
            .diagnostics
            .push_first(run.file, no + 1, message);
    }
    Ok(no)
}

/// Whether a database call with `dep=0` appears in the first few
/// megabytes: then the file's `$depmin` is 0 (the reader refuses negative
/// depths as damage). The line must read as the reader would read it (a
/// damaged line that merely holds `,dep=0,` proves nothing), and any such
/// line is read as a call whatever state the reader is in: it ends SQL
/// text, PARSE ERROR text and BINDS.
fn has_top_level_call(file: &File, len: u64) -> std::io::Result<bool> {
    const LOOK: u64 = 16 << 20;
    let mut lines = Lines::at(
        RangeReader {
            file: Arc::new(file.try_clone()?),
            pos: 0,
            end: len.min(LOOK),
            counter: None,
        },
        0,
    );
    let finder = memchr::memmem::Finder::new(b",dep=0,");
    while let Some((_, block)) = lines.next_block() {
        for at in finder.find_iter(block) {
            let start = memchr::memrchr(b'\n', &block[..at]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &block[at..]).map_or(block.len(), |i| at + i);
            let line = &block[start..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            const CALLS: [&[u8]; 6] = [
                b"PARSE ",
                b"EXEC ",
                b"FETCH ",
                b"CLOSE ",
                b"UNMAP ",
                b"SORT UNMAP ",
            ];
            let prefix = CALLS
                .iter()
                .find(|p| line.starts_with(p) && line.get(p.len()) == Some(&b'#'));
            let Some(prefix) = prefix else { continue };
            let mut db = DbFields::default();
            if let Some((_, _, rest)) = fields::cursor(&line[prefix.len()..]) {
                if fields::db_fields(rest, &mut db).is_ok() && db.dep == Some(0) {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// Files smaller than this are read by one thread: splitting costs more
/// than it saves.
pub const MIN_SPLIT: u64 = 16 << 20;

/// The cursor-section separator pieces start after.
const SEPARATOR: &[u8] = b"\n=====================\n";

/// Piece boundaries: `parts` roughly equal pieces, each (but the first)
/// starting on the line after a `=====================` separator found
/// near its target offset.
fn split_points(file: &File, len: u64, parts: usize) -> std::io::Result<Vec<u64>> {
    const WINDOW: usize = 1 << 20;
    let finder = memchr::memmem::Finder::new(SEPARATOR);
    let mut bounds = vec![0u64];
    let mut buf = vec![0u8; WINDOW];
    for k in 1..parts as u64 {
        let mut from = (len / parts as u64 * k).max(*bounds.last().unwrap_or(&0));
        // Look ahead a few windows at most; a trace without separators
        // there is read in fewer pieces.
        for _ in 0..16 {
            if from >= len {
                break;
            }
            let want = WINDOW.min((len - from) as usize);
            let got = file.read_at(&mut buf[..want], from)?;
            if got == 0 {
                break;
            }
            if let Some(i) = finder.find(&buf[..got]) {
                let b = from + (i + SEPARATOR.len()) as u64;
                if b < len {
                    bounds.push(b);
                }
                break;
            }
            from += (got - SEPARATOR.len().min(got)) as u64 + 1;
        }
    }
    bounds.push(len);
    bounds.dedup();
    Ok(bounds)
}

/// Pass 1 over a piece: its line count and the statements its PARSING IN
/// CURSOR and PARSE ERROR lines bind, found by block searches rather than
/// line by line.
fn scan_piece(
    opts: &ReadOptions,
    file: &str,
    mut lines: Lines<RangeReader>,
) -> std::io::Result<(u64, FxHashMap<u64, Cursor>)> {
    // One search for both PARSING IN CURSOR and PARSE ERROR; the PARSE
    // lines it also finds are few and rejected by their next bytes.
    let finder = memchr::memmem::Finder::new(b"PARS");
    let mut run = Run::new(opts, file, FxHashMap::default());
    let mut count = 0u64;
    let (file_handle, piece_end) = (lines.inner().file.clone(), lines.inner().end);
    while let Some((offset, block)) = lines.next_block() {
        if opts.line_numbers {
            count += memchr::memchr_iter(b'\n', block).count() as u64;
        }
        if !opts.statements {
            continue;
        }
        let starts = finder.find_iter(block).filter(|&at| {
            (at == 0 || block[at - 1] == b'\n')
                && (block[at..].starts_with(b"PARSING IN CURSOR #")
                    || block[at..].starts_with(b"PARSE ERROR #"))
        });
        for at in starts.collect::<Vec<_>>() {
            // The statement is almost always inside the block; one that runs
            // past its end is read on from the file.
            let mut pos = at;
            let mut first = true;
            let mut done = false;
            while pos < block.len() {
                let end = memchr::memchr(b'\n', &block[pos..]).map_or(block.len(), |i| pos + i);
                let line = Line {
                    bytes: block[pos..end]
                        .strip_suffix(b"\r")
                        .unwrap_or(&block[pos..end]),
                    terminated: end < block.len(),
                    offset: offset + pos as u64,
                    overlong: false,
                };
                if !first && !statement_goes_on(&run.state, line.bytes) {
                    done = true;
                    break;
                }
                run.feed(0, &line, &mut |_: &Call<'_>| {});
                first = false;
                pos = end + 1;
            }
            if done || first {
                continue;
            }
            let mut text = Lines::small(
                RangeReader {
                    file: file_handle.clone(),
                    pos: offset + pos as u64,
                    end: piece_end,
                    counter: None,
                },
                offset + pos as u64,
            )
            .max_line(opts.max_line);
            while let Some(line) = text.next_line() {
                if !statement_goes_on(&run.state, line.bytes) {
                    break;
                }
                run.feed(0, &line, &mut |_: &Call<'_>| {});
            }
        }
    }
    if let Some((e, _)) = lines.take_error() {
        return Err(e);
    }
    // Only statements the piece bound; placeholders would hide the
    // statements earlier pieces bound.
    run.cursors.retain(|_, c| !c.stmt.placeholder);
    Ok((count, run.cursors))
}

/// Whether `line` still belongs to the statement text being read: the
/// same rules as [`Run::line`], so that a piece starts with the statements
/// a whole read would have bound by then.
fn statement_goes_on(state: &State, line: &[u8]) -> bool {
    match state {
        State::Sql { .. } => !is_trace_line(line),
        State::ParseErrorSql(_) => !is_recognised(line),
        _ => false,
    }
}

fn not_binary(name: &str) -> ReadError {
    ReadError::NotATrace {
        file: name.to_string(),
        why: "it holds binary data (NUL bytes) in its first line".into(),
    }
}

/// An Oracle trace file of another kind: a 10053 optimizer trace, a
/// background process's trace (LGWR, LMD, ...), a SQL*Net trace. Such a
/// file has `***` lines and a header, but no line of event 10046.
fn not_a_sql_trace(name: &str, lines: u64, image: Option<&str>) -> ReadError {
    let kind = image.map_or_else(
        || {
            "another kind of Oracle trace (an optimizer 10053 trace, a background process's)"
                .to_string()
        },
        |p| format!("the trace of Oracle process {p}"),
    );
    ReadError::NotATrace {
        file: name.to_string(),
        why: format!(
            "it is not a SQL trace (event 10046) but {kind}: none of its {lines} lines is a PARSE, EXEC, FETCH, WAIT or other SQL trace line"
        ),
    }
}

/// A file whose lines only look like trace lines (a page of documentation
/// quoting a profile): none of them reads as one.
fn all_damaged(name: &str, lines: u64, first: Option<&Diagnostic>) -> ReadError {
    let first = first.map_or_else(String::new, |d| {
        format!(" (line {}: {})", d.line, d.message)
    });
    ReadError::NotATrace {
        file: name.to_string(),
        why: format!(
            "none of its {lines} lines is a trace line: the few that start like one do not read as one{first}"
        ),
    }
}

fn not_a_trace(name: &str, lines: u64) -> ReadError {
    ReadError::NotATrace {
        file: name.to_string(),
        why: if lines == 0 {
            "it is empty".into()
        } else {
            format!("none of its {lines} lines is a trace line")
        },
    }
}

fn new_placeholder(id: &[u8], file: &str) -> Cursor {
    Cursor {
        stmt: Arc::new(placeholder(lossy(id), file)),
        ..Cursor::default()
    }
}

fn placeholder(cursor: &str, file: &str) -> Statement {
    let text = format!("#{cursor}:{file}");
    Statement {
        sqlid: text.clone(),
        sql: text,
        placeholder: true,
        ..Statement::default()
    }
}

fn lossy(b: &[u8]) -> &str {
    // Names and ids are ASCII in every trace seen; a damaged byte must not
    // stop the run, so it shows as an empty name rather than an error.
    std::str::from_utf8(b).unwrap_or("")
}

impl<'f> Run<'f> {
    fn new(opts: &'f ReadOptions, file: &'f str, cursors: FxHashMap<u64, Cursor>) -> Run<'f> {
        Run {
            opts,
            file,
            cursors,
            nocursor: Cursor {
                stmt: Arc::new(placeholder("()", file)),
                ..Cursor::default()
            },
            state: State::Normal,
            depmin_seen: None,
            depmin_used: None,
            island: 1,
            pending: Vec::new(),
            top_end: None,
            session: [None, None],
            sessions: Vec::new(),
            switched_from: None,
            walks: FxHashMap::default(),
            recognised: 0,
            sound: 0,
            sql_lines: 0,
            image: None,
            wall_pending: None,
            wall: None,
            emitted: false,
            stopped: false,
            unwanted: false,
            bind_quote: false,
            offset: 0,
            names: FxHashMap::default(),
            summary: ReadSummary::default(),
        }
    }

    /// One line in; with `all_lines`, a non-call line comes out too.
    #[inline]
    fn feed(&mut self, no: u64, line: &Line<'_>, on_call: &mut impl FnMut(&Call<'_>)) {
        let (b, terminated) = (line.bytes, line.terminated);
        self.offset = line.offset;
        self.emitted = false;
        self.unwanted = false;
        self.line(no, b, terminated, on_call);
        if self.opts.all_lines && !self.emitted && !self.unwanted {
            self.other_line(no, b, on_call);
        }
    }

    fn depmin(&self) -> i64 {
        self.opts.depmin.or(self.depmin_seen).unwrap_or(0)
    }

    fn see_dep(&mut self, dep: i64) {
        if self.opts.depmin.is_none() {
            self.depmin_seen = Some(self.depmin_seen.map_or(dep, |d| d.min(dep)));
        }
    }

    fn warn(&mut self, line: u64, msg: impl Into<String>) {
        self.summary.diagnostics.push(self.file, line, msg);
    }

    #[cold]
    fn overlong(&mut self, no: u64) {
        let limit = self.opts.max_line;
        self.warn(
            no,
            format!("the line is longer than {limit} bytes (the limit; raise it with --max-line): read as an empty line"),
        );
    }

    /// Whether the lines so far show a SQL trace ([`Run::not_a_sql_trace`]
    /// would pass).
    fn is_sql_trace(&self) -> bool {
        self.recognised > 0 && (self.summary.calls > 0 || self.sql_lines > 0) && self.sound > 0
    }

    /// A whole file read with no SQL trace line in it is not a SQL trace.
    fn not_a_sql_trace(&mut self, lines: u64) -> Result<(), ReadError> {
        if self.recognised == 0 {
            return Err(not_a_trace(self.file, lines));
        }
        if self.summary.calls == 0 && self.sql_lines == 0 {
            return Err(not_a_sql_trace(self.file, lines, self.image.as_deref()));
        }
        if self.sound == 0 {
            return Err(all_damaged(
                self.file,
                lines,
                self.summary.diagnostics.kept.first(),
            ));
        }
        Ok(())
    }

    /// A statement's text that runs into a trace line: its END OF STMT is
    /// missing (a damaged or cut file). The text ends there, so that the
    /// calls after it are not swallowed.
    #[cold]
    fn unended_statement(&mut self, no: u64, opened: u64) {
        self.state = State::Normal;
        let below = no - opened;
        let s = if below == 1 { "" } else { "s" };
        self.warn(
            opened,
            format!("expected END OF STMT after the SQL text: it ends at the next trace line, {below} line{s} down"),
        );
    }

    /// A statement's text still open when the file ends: its END OF STMT
    /// is missing (a file cut short).
    #[cold]
    fn unended_at_end(&mut self, last: u64) {
        if let State::Sql { line, .. } = self.state {
            self.state = State::Normal;
            let below = last - line;
            let s = if below == 1 { "" } else { "s" };
            self.warn(
                line,
                format!(
                    "expected END OF STMT after the SQL text: the file ends {below} line{s} down"
                ),
            );
        }
    }

    fn line(&mut self, no: u64, b: &[u8], terminated: bool, on_call: &mut impl FnMut(&Call<'_>)) {
        match self.state {
            State::Sql { key, line } => {
                if b == b"END OF STMT" {
                    self.state = State::Normal;
                    self.unwanted = !self.opts.line_kinds.sql_text;
                    return;
                }
                if !is_trace_line(b) {
                    self.append_sql(key, b);
                    self.unwanted = !self.opts.line_kinds.sql_text;
                    return;
                }
                self.unended_statement(no, line);
            }
            State::BindValue(key) => {
                self.append_bind(key, b);
                if b.ends_with(b"\"") {
                    self.state = State::Binds(key);
                }
                return;
            }
            State::Binds(key) => {
                if b.is_empty() || b[0] == b' ' {
                    // Checked here: most reads want no bind values, and a
                    // call a line that returns at once cost a profile's
                    // reading 3 % (mostly the call's own entry and exit).
                    if self.opts.binds {
                        self.bind_line(key, b);
                    }
                    if self.opts.all_lines && !self.opts.line_kinds.bind_details {
                        self.unwanted = self.bind_detail(b);
                    }
                    return;
                }
                self.state = State::Normal;
            }
            State::ParseErrorSql(key) => {
                if !is_recognised(b) {
                    self.append_sql(key, b);
                    self.unwanted = !self.opts.line_kinds.sql_text;
                    return;
                }
                self.state = State::Normal;
            }
            State::Normal => {}
        }
        let Some(&first) = b.first() else { return };
        let before = (self.summary.calls, self.sql_lines);
        let res = match first {
            b'W' if b.starts_with(b"WAIT #") => self.wait(no, b, on_call),
            b'P' if b.starts_with(b"PARSING IN CURSOR ") => self.pic(no, b),
            b'P' if b.starts_with(b"PARSE ERROR ") => self.parse_error(no, b),
            b'P' if b.starts_with(b"PARSE #") => {
                self.dbcall(no, b, 6, CallKind::Parse, "PARSE", on_call)
            }
            b'E' if b.starts_with(b"EXEC #") => {
                self.dbcall(no, b, 5, CallKind::Exec, "EXEC", on_call)
            }
            b'E' if b.starts_with(b"ERROR #") => {
                self.recognised += 1;
                Ok(())
            }
            b'F' if b.starts_with(b"FETCH #") => {
                self.dbcall(no, b, 6, CallKind::Fetch, "FETCH", on_call)
            }
            b'C' if b.starts_with(b"CLOSE #") => {
                self.dbcall(no, b, 6, CallKind::Close, "CLOSE", on_call)
            }
            b'U' if b.starts_with(b"UNMAP #") => {
                self.dbcall(no, b, 6, CallKind::Unmap, "UNMAP", on_call)
            }
            b'S' if b.starts_with(b"SORT UNMAP #") => {
                self.dbcall(no, b, 11, CallKind::SortUnmap, "SORT UNMAP", on_call)
            }
            b'S' if b.starts_with(b"STAT #") => self.stat(b),
            b'B' if b.starts_with(b"BINDS #") => self.binds(b),
            b'U' if b.starts_with(b"Unix process pid: ") => {
                self.header_image(b);
                Ok(())
            }
            b'X' if b.starts_with(b"XCTEND ") => self.xctend(no, b, on_call),
            b'L' if b.starts_with(b"LOB") => self.lob(no, b, on_call),
            b'R' if b.starts_with(b"RPC EXEC:") => self.rpc(no, b, on_call),
            b'*' if b.starts_with(b"***") => {
                self.recognised += 1;
                self.context(no, b, on_call);
                Ok(())
            }
            b'=' if b.starts_with(b"=====") => {
                self.recognised += 1;
                Ok(())
            }
            b'T' if b.starts_with(b"Trace file ") => {
                self.recognised += 1;
                if self.opts.unaccounted && self.top_end.is_some() {
                    // Another file's header: files concatenated. Nothing
                    // is counted across the join (`prof` does the same).
                    self.flush_between(no, on_call);
                    self.top_end = None;
                    self.summary.timeline.restarts += 1;
                }
                Ok(())
            }
            // tracelab's own header (`tracelab 0.1.0 proxy-side trace of
            // postgres`): a SQL trace even when its session made no call
            // (a cancel request's connection, a client that only logged on).
            b't' if b.starts_with(b"tracelab ")
                && memchr::memmem::find(b, b"-side trace of ").is_some() =>
            {
                self.recognised += 1;
                self.sql_lines += 1;
                Ok(())
            }
            _ => Ok(()),
        };
        if res.is_ok() && before != (self.summary.calls, self.sql_lines) {
            self.sound += 1;
        }
        if let Err(msg) = res {
            let msg = if terminated {
                msg
            } else {
                format!("{msg} (the last line is cut short)")
            };
            self.warn(no, msg);
        }
    }

    fn cursor_entry(&mut self, id: &[u8], key: u64) -> &mut Cursor {
        let file = self.file;
        self.cursors
            .entry(key)
            .or_insert_with(|| new_placeholder(id, file))
    }

    /// Keeps one `str` per distinct wait name: validating UTF-8 on every
    /// WAIT line cost more than all its other fields.
    #[inline]
    fn intern(&mut self, name: &[u8]) {
        if !self.names.contains_key(name) {
            let s: Arc<str> = String::from_utf8_lossy(name).into();
            self.names.insert(name.into(), s);
        }
    }

    fn append_sql(&mut self, key: u64, b: &[u8]) {
        if let Some(c) = self.cursors.get_mut(&key) {
            let stmt = Arc::make_mut(&mut c.stmt);
            stmt.normalised.take();
            if !stmt.sql.is_empty() {
                stmt.sql.push('\n');
            }
            stmt.sql.push_str(&String::from_utf8_lossy(b));
        }
    }

    fn pic(&mut self, no: u64, b: &[u8]) -> Result<(), String> {
        self.recognised += 1;
        self.sql_lines += 1;
        let rest = &b[b"PARSING IN CURSOR ".len()..];
        let (id, key, tail) = fields::cursor(rest)
            .ok_or_else(|| "expected 'PARSING IN CURSOR #<cursor> len=…'".to_string())?;
        let mut p = fields::pic(tail);
        let bad_dep = negative_dep(&mut p);
        self.new_statement(id, key, &p);
        self.state = State::Sql { key, line: no };
        bad_dep
    }

    fn parse_error(&mut self, _no: u64, b: &[u8]) -> Result<(), String> {
        self.recognised += 1;
        self.sql_lines += 1;
        let rest = &b[b"PARSE ERROR ".len()..];
        let (id, key, tail) = fields::cursor(rest)
            .ok_or_else(|| "expected 'PARSE ERROR #<cursor>:len=…'".to_string())?;
        let mut p = fields::pic(tail);
        let bad_dep = negative_dep(&mut p);
        self.new_statement(id, key, &p);
        self.state = State::ParseErrorSql(key);
        bad_dep
    }

    /// The header's `Unix process pid: 3090, image: oracle@host (LGWR)`:
    /// names the process, for the message about a file that is not a SQL
    /// trace.
    #[cold]
    fn header_image(&mut self, b: &[u8]) {
        if self.image.is_some() {
            return;
        }
        let Some(at) = memchr::memmem::find(b, b"image: ") else {
            return;
        };
        let image = String::from_utf8_lossy(&b[at + 7..]);
        let process = image
            .rsplit_once('(')
            .and_then(|(_, p)| p.strip_suffix(')'))
            .unwrap_or(&image);
        self.image = Some(process.trim().to_string());
    }

    /// A `***` line: a wall-clock timestamp (alone or after a context such
    /// as `SESSION ID:(…)`), which the next `tim` anchors; a session id,
    /// whose change inside the file (shared servers, trcsess merges) cuts
    /// the timeline of `--unaccounted`.
    #[cold]
    fn context(&mut self, no: u64, b: &[u8], on_call: &mut impl FnMut(&Call<'_>)) {
        let rest = b[3..].trim_ascii_start();
        let session: Option<(u8, &[u8])> = if let Some(r) = rest.strip_prefix(b"SESSION ID:(") {
            memchr::memchr(b')', r).map(|i| (0, &r[..i]))
        } else if let Some(r) = rest.strip_prefix(b"[ Unix process pid: ") {
            memchr::memchr(b' ', r).map(|i| (1, &r[..i]))
        } else {
            None
        };
        if let Some((slot, id)) = session {
            self.session_seen(no, slot, id, on_call);
        }
        let stamp = if rest.first().is_some_and(u8::is_ascii_digit) {
            Some(rest)
        } else if rest.ends_with(b"***") || rest.starts_with(b"[") {
            None
        } else {
            // `NAME:(value) stamp`: the value may hold ") ", the stamp
            // is after the last one.
            memchr::memmem::rfind(rest, b") ").map(|i| &rest[i + 2..])
        };
        if let Some(wall) = stamp.and_then(crate::call::parse_wall_clock) {
            self.wall_pending = Some(wall);
        }
    }

    /// A session id seen: a change of session cuts the timeline.
    fn session_seen(&mut self, no: u64, slot: u8, id: &[u8], on_call: &mut impl FnMut(&Call<'_>)) {
        if !self.sessions.iter().any(|(k, s)| *k == slot && &**s == id) {
            self.sessions.push((slot, id.into()));
            let distinct = |k: u8| self.sessions.iter().filter(|s| s.0 == k).count();
            self.summary.timeline.sessions = distinct(0).max(distinct(1)) as u64;
        }
        let cur = &mut self.session[slot as usize];
        let changed = cur.as_deref().is_some_and(|c| c != id);
        let prev = if cur.as_deref() != Some(id) {
            cur.replace(id.into())
        } else {
            None
        };
        if slot == 1 {
            // Each process of a trcsess merge keeps its own clock walk
            // (and session): its blocks are read as if one file.
            if let (true, true, Some(prev)) = (changed, self.opts.unaccounted, prev) {
                self.switch_walk(prev, id);
            }
            return;
        }
        if !changed || !self.opts.unaccounted || self.switched_from.is_some() {
            return;
        }
        self.summary.timeline.session_switches += 1;
        // The waits after the previous session's last call end its
        // stretch; the time from there to this session's first event is
        // another session's and is left out.
        self.flush_between(no, on_call);
        self.switched_from = Some(self.top_end.take());
    }

    /// Parks the current process's clock walk and takes up process `id`'s.
    fn switch_walk(&mut self, prev: Box<[u8]>, id: &[u8]) {
        let next = self.walks.remove(id).unwrap_or_default();
        let (pending, top_end, session, switched) = next;
        let old = (
            std::mem::replace(&mut self.pending, pending),
            std::mem::replace(&mut self.top_end, top_end),
            std::mem::replace(&mut self.session[0], session),
            std::mem::replace(&mut self.switched_from, switched),
        );
        self.walks.insert(prev, old);
    }

    /// Anchors the latest `***` timestamp at this `tim`.
    #[cold]
    fn anchor_wall(&mut self, tim: i64) {
        if let Some(wall_us) = self.wall_pending.take() {
            self.wall = Some(WallClock { wall_us, tim });
        }
    }

    fn new_statement(&mut self, id: &[u8], key: u64, p: &fields::Pic<'_>) {
        if let Some(dep) = p.dep {
            self.see_dep(dep);
        }
        let stmt = Statement {
            sqlid: if p.sqlid.is_empty() {
                // 10g and older write no sqlid: keep the placeholder shape.
                format!("#{}:{}", lossy(id), self.file)
            } else {
                lossy(p.sqlid).to_string()
            },
            sql: String::new(),
            hv: p.hv,
            oct: p.oct,
            uid: p.uid,
            lid: p.lid,
            dep: p.dep,
            ad: lossy(p.ad).to_string(),
            placeholder: false,
            normalised: Default::default(),
        };
        let c = self.cursor_entry(id, key);
        *c = Cursor {
            stmt: Arc::new(stmt),
            ..Cursor::default()
        };
    }

    fn binds(&mut self, b: &[u8]) -> Result<(), String> {
        self.recognised += 1;
        self.sql_lines += 1;
        let (id, key, _) = fields::cursor(&b[b"BINDS ".len()..])
            .ok_or_else(|| "expected 'BINDS #<cursor>:'".to_string())?;
        let collect = self.opts.binds;
        self.bind_quote = false;
        let c = self.cursor_entry(id, key);
        if collect {
            c.binds.clear();
        }
        self.state = State::Binds(key);
        Ok(())
    }

    /// A line of a BINDS block, when bind values are collected.
    fn bind_line(&mut self, key: u64, b: &[u8]) {
        let t = b.trim_ascii_start();
        // Most lines of a block are a bind's details (`oacdty=`, `oacflg=`,
        // `kxsbbbfp=`): left by their first byte, before the cursor is
        // looked up (two thirds of an export's lines are in BINDS blocks).
        if !matches!(t.first(), Some(b'B' | b'v')) {
            return;
        }
        let Some(c) = self.cursors.get_mut(&key) else {
            return;
        };
        if t.starts_with(b"Bind#") {
            c.binds.push(None);
            if let Some(v) = value_on_bind_line(t) {
                set_last_bind(c, v);
            }
        } else if let Some(v) = t.strip_prefix(b"value=") {
            if c.binds.is_empty() {
                c.binds.push(None);
            }
            set_last_bind(c, v);
            if v.first() == Some(&b'"') && (v.len() == 1 || !v.ends_with(b"\"")) {
                self.state = State::BindValue(key);
            }
        }
    }

    /// Whether a line of a BINDS block is one of its details (see
    /// [`LineKinds::bind_details`]).
    #[inline]
    fn bind_detail(&mut self, b: &[u8]) -> bool {
        if self.bind_quote {
            return false;
        }
        let t = b.trim_ascii_start();
        // Most lines of a block are details (`oacdty=`, `kxsbbbfp=`, ...):
        // their first letter tells them apart before any comparison.
        let value = match t.first() {
            Some(b'v') if t.starts_with(b"value=") => Some(&t[b"value=".len()..]),
            // A damaged dump may put `value=` on the `Bind#n` line itself.
            Some(b'B') if t.starts_with(b"Bind#") => value_on_bind_line(t),
            _ => return true,
        };
        if let Some(v) = value {
            self.bind_quote = v.first() == Some(&b'"') && (v.len() == 1 || !v.ends_with(b"\""));
        }
        false
    }

    /// A line that continues a quoted bind value (only `bind_line`, run
    /// when bind values are collected, enters that state).
    fn append_bind(&mut self, key: u64, b: &[u8]) {
        if let Some(c) = self.cursors.get_mut(&key) {
            if let Some(Some(last)) = c.binds.last_mut() {
                let joined = format!("{last}\n{}", String::from_utf8_lossy(b));
                *last = Arc::from(joined);
            }
        }
    }

    fn stat(&mut self, b: &[u8]) -> Result<(), String> {
        self.recognised += 1;
        self.sql_lines += 1;
        match fields::cursor(&b[b"STAT ".len()..]) {
            Some((_, _, rest)) if rest.starts_with(b"id=") => Ok(()),
            _ => Err("expected 'STAT #<cursor> id=… op='…''".into()),
        }
    }

    /// The `$depmin` a call is handed out with; remembers the range of
    /// tentative values used, so that a later shallower call is noticed.
    fn depmin_for_call(&mut self) -> i64 {
        let d = self.depmin();
        if self.opts.depmin.is_none() {
            self.depmin_used = Some(match self.depmin_used {
                None => (d, d),
                Some((lo, hi)) => (lo.min(d), hi.max(d)),
            });
        }
        d
    }

    #[inline(always)]
    fn wait(
        &mut self,
        no: u64,
        b: &[u8],
        on_call: &mut impl FnMut(&Call<'_>),
    ) -> Result<(), String> {
        let offset = self.offset;
        self.recognised += 1;
        let (id, key, rest) = fields::cursor(&b[b"WAIT ".len()..])
            .ok_or_else(|| "expected 'WAIT #<cursor>: nam=…'".to_string())?;
        let w = fields::wait(rest)?;
        let depmin = self.depmin_for_call();
        let is_think = w.fields.ela >= self.opts.thinktime_us && crate::is_client_wait(w.name);
        let island = if is_think { 0 } else { self.island };
        if is_think {
            self.island += 1;
        }
        if self.wall_pending.is_some() {
            if let Some(t) = w.fields.tim {
                self.anchor_wall(t);
            }
        }
        self.intern(w.name);
        let name = self.names.get(w.name).map_or("", |n| &**n);
        let c = self
            .cursors
            .entry(key)
            .or_insert_with(|| new_placeholder(id, self.file));
        let call = Call {
            kind: CallKind::Wait,
            name,
            line: no,
            offset,
            text: b,
            cursor: id,
            cursor_key: Some(key),
            dep: None,
            depmin,
            stmt: &c.stmt,
            parse_id: c.parse_id,
            exec_id: c.exec_id,
            binds: &c.binds,
            db: DbFields::default(),
            wait: w.fields,
            pseudo_us: 0,
            island_id: island,
            wall: self.wall,
        };
        on_call(&call);
        self.emitted = true;
        self.summary.calls += 1;
        if self.opts.unaccounted {
            if let Some(t) = w.fields.tim {
                self.pending.push(PendingWait {
                    start: t - w.fields.ela,
                    end: t,
                });
            }
        }
        Ok(())
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn dbcall(
        &mut self,
        no: u64,
        b: &[u8],
        prefix: usize,
        kind: CallKind,
        name: &'static str,
        on_call: &mut impl FnMut(&Call<'_>),
    ) -> Result<(), String> {
        let offset = self.offset;
        self.recognised += 1;
        let (id, key, rest) = fields::cursor(&b[prefix..])
            .ok_or_else(|| format!("expected '{name} #<cursor>:c=…'"))?;
        let mut db = DbFields::default();
        fields::db_fields(rest, &mut db)?;
        if let Some(dep) = db.dep {
            self.see_dep(dep);
        }
        if self.wall_pending.is_some() {
            if let Some(t) = db.tim {
                self.anchor_wall(t);
            }
        }
        let depmin = self.depmin_for_call();
        let island = self.island;
        let wall = self.wall;
        let c = self.cursor_entry(id, key);
        match kind {
            CallKind::Parse => c.parse_id = no,
            CallKind::Exec => c.exec_id = no,
            _ => {}
        }
        if c.stmt.placeholder && c.stmt.dep != db.dep {
            Arc::make_mut(&mut c.stmt).dep = db.dep;
        }
        let dep = db.dep;
        let call = Call {
            kind,
            name,
            line: no,
            offset,
            text: b,
            cursor: id,
            cursor_key: Some(key),
            dep,
            depmin,
            stmt: &c.stmt,
            parse_id: c.parse_id,
            exec_id: c.exec_id,
            binds: &c.binds,
            db,
            wait: WaitFields::default(),
            pseudo_us: 0,
            island_id: island,
            wall,
        };
        on_call(&call);
        self.emitted = true;
        self.summary.calls += 1;
        if self.opts.unaccounted {
            self.account(no, Some((id, key)), &db, dep.unwrap_or(0), depmin, on_call);
        }
        if db.tim.is_none() {
            return Err(format!("expected 'tim=' in the {name} line"));
        }
        Ok(())
    }

    fn nocursor_call(
        &mut self,
        no: u64,
        b: &[u8],
        kind: CallKind,
        name: &str,
        db: DbFields,
        on_call: &mut impl FnMut(&Call<'_>),
    ) {
        let offset = self.offset;
        if self.wall_pending.is_some() {
            if let Some(t) = db.tim {
                self.anchor_wall(t);
            }
        }
        let depmin = self.depmin_for_call();
        let dep = db.dep;
        let c = &self.nocursor;
        let call = Call {
            kind,
            name,
            line: no,
            offset,
            text: b,
            cursor: b"",
            cursor_key: None,
            dep,
            depmin,
            stmt: &c.stmt,
            parse_id: 0,
            exec_id: 0,
            binds: &[],
            db,
            wait: WaitFields::default(),
            pseudo_us: 0,
            island_id: self.island,
            wall: self.wall,
        };
        on_call(&call);
        self.emitted = true;
        self.summary.calls += 1;
        if self.opts.unaccounted {
            self.account(no, None, &db, dep.unwrap_or(0), depmin, on_call);
        }
    }

    fn xctend(
        &mut self,
        no: u64,
        b: &[u8],
        on_call: &mut impl FnMut(&Call<'_>),
    ) -> Result<(), String> {
        self.recognised += 1;
        let mut db = DbFields::default();
        fields::db_fields(&b[b"XCTEND ".len()..], &mut db)?;
        self.nocursor_call(no, b, CallKind::Xctend, "XCTEND", db, on_call);
        if db.tim.is_none() && !b.ends_with(b"rd_only=1") && !b.ends_with(b"rd_only=0") {
            return Err("expected 'tim=' in the XCTEND line".into());
        }
        Ok(())
    }

    fn lob(
        &mut self,
        no: u64,
        b: &[u8],
        on_call: &mut impl FnMut(&Call<'_>),
    ) -> Result<(), String> {
        let Some(colon) = memchr::memchr(b':', b) else {
            return Ok(()); // not a LOB call line; tolerate unknown text
        };
        let name = &b[..colon];
        if !name.iter().all(|c| c.is_ascii_uppercase()) {
            return Ok(());
        }
        self.recognised += 1;
        let mut db = DbFields::default();
        fields::db_fields(&b[colon + 1..], &mut db)?;
        // Interned like wait names: a name must keep one address for as
        // long as the reader lives (consumers cache verdicts by address).
        self.intern(name);
        let name = self.names.get(name).cloned().unwrap_or_default();
        self.nocursor_call(no, b, CallKind::Lob, &name, db, on_call);
        if db.tim.is_none() {
            return Err(format!("expected 'tim=' in the {name} line"));
        }
        Ok(())
    }

    fn rpc(
        &mut self,
        no: u64,
        b: &[u8],
        on_call: &mut impl FnMut(&Call<'_>),
    ) -> Result<(), String> {
        self.recognised += 1;
        let mut db = DbFields::default();
        fields::db_fields(&b[b"RPC EXEC:".len()..], &mut db)?;
        self.nocursor_call(no, b, CallKind::Rpc, "RPC EXEC", db, on_call);
        Ok(())
    }

    /// Emits the unaccounted-for pseudo-calls a database call closes: its
    /// own within-call remainder (e − c − the waits inside it), and for a
    /// top-level call the gaps before it. Waits count at every depth, as
    /// they do in the default profile; a recursive call's waits are also
    /// inside its parent, so only top-level calls consume them.
    ///
    /// No moment counts twice: where a top-level event starts before the
    /// one before it ended (calls that overlap, seen in 11.1 traces), the
    /// overlap is taken out of the pseudo-calls, so that the TOTAL stays
    /// the session's response time; [`Timeline`] says how much there was.
    /// Sums are 128-bit: durations near the 64-bit range cannot wrap.
    fn account(
        &mut self,
        no: u64,
        cursor: Option<(&[u8], u64)>,
        db: &DbFields,
        dep: i64,
        depmin: i64,
        on_call: &mut impl FnMut(&Call<'_>),
    ) {
        let (Some(tim), Some(e)) = (db.tim, db.e) else {
            return;
        };
        // Fields hold at most 18 digits: these differences fit in an i64.
        let start = tim - e;
        // Contained in the call, with ±1 µs of tolerance for rounding (of
        // 172,282 waits inside calls in Oracle's traces, some stick out of
        // the call's interval by 1 µs); but a wait that ends when the call
        // starts, or before, lies before it (the 1 µs 'SQL*Net message
        // from client' before a call is not inside it).
        let inside = |w: &PendingWait| {
            w.start >= start - 1 && w.end <= tim + 1 && (w.end > start || w.end == w.start)
        };
        let waited: i128 = self
            .pending
            .iter()
            .filter(|w| inside(w))
            .map(|w| i128::from(w.end - w.start))
            .sum();
        let mut within = i128::from(e) - i128::from(db.c.unwrap_or(0)) - waited;
        let mut between = 0i128;
        if dep == depmin {
            let mut end = self.top_end;
            let pending = std::mem::take(&mut self.pending);
            for w in pending.iter().filter(|w| !inside(w)) {
                let (gap, overlap) = self.step(&mut end, w.start, w.end);
                between += gap - overlap;
            }
            let (gap, overlap) = self.step(&mut end, start, tim);
            between += gap;
            within -= overlap;
            self.top_end = end;
            self.pending = pending;
            self.pending.clear();
        }
        self.emit_pseudo(
            no,
            cursor,
            Some(dep),
            depmin,
            PSEUDO_WITHIN,
            within,
            on_call,
        );
        self.emit_pseudo(
            no,
            cursor,
            Some(depmin),
            depmin,
            PSEUDO_BETWEEN,
            between,
            on_call,
        );
    }

    /// One top-level event `[start, stop]` after the timeline's `end`:
    /// the gap before it, or how much of it overlaps what came before.
    fn step(&mut self, end: &mut Option<i64>, start: i64, stop: i64) -> (i128, i128) {
        let r = match *end {
            None => {
                // The first event after a change of session: the time
                // since the previous session's last event is left out.
                if let Some(Some(prev)) = self.switched_from.take() {
                    let t = &mut self.summary.timeline;
                    t.left_out += i128::from((start - prev).max(0));
                }
                (0, 0)
            }
            Some(prev) if start >= prev => (i128::from(start - prev), 0),
            // Starts before the event before it ended, ends after it (11.1
            // traces): the overlap counts once.
            Some(prev) if stop > prev => {
                let overlap = i128::from(prev - start);
                let t = &mut self.summary.timeline;
                t.overlaps += 1;
                t.overlap += overlap;
                (0, overlap)
            }
            // Ends before the event before it ended: `tim` went back. A new
            // clock walk starts here (see `Timeline::restarts`).
            Some(_) => {
                self.summary.timeline.restarts += 1;
                (0, 0)
            }
        };
        // The walk goes on from this event's end (`prof` adds up pieces of
        // a file on the same rule: the latest event's end, never a maximum).
        *end = Some(stop);
        r
    }

    /// The waits after the last top-level call (at the end of the file, or
    /// of a session's stretch): the gaps between them.
    fn flush_between(&mut self, no: u64, on_call: &mut impl FnMut(&Call<'_>)) {
        let depmin = self.depmin();
        let mut end = self.top_end;
        let pending = std::mem::take(&mut self.pending);
        let mut between = 0i128;
        for w in &pending {
            let (gap, overlap) = self.step(&mut end, w.start, w.end);
            between += gap - overlap;
        }
        self.top_end = end;
        self.pending = pending;
        self.pending.clear();
        self.emit_pseudo(
            no,
            None,
            Some(depmin),
            depmin,
            PSEUDO_BETWEEN,
            between,
            on_call,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn emit_pseudo(
        &mut self,
        no: u64,
        cursor: Option<(&[u8], u64)>,
        dep: Option<i64>,
        depmin: i64,
        name: &'static str,
        us: i128,
        on_call: &mut impl FnMut(&Call<'_>),
    ) {
        if us == 0 {
            return;
        }
        let Ok(us) = i64::try_from(us) else {
            self.summary.timeline.overflows += 1;
            self.warn(
                no,
                format!("the {name} time here ({us} units) does not fit in 64 bits: left out"),
            );
            return;
        };
        let offset = self.offset;
        let c = match cursor {
            Some((_, key)) => self.cursors.get(&key).unwrap_or(&self.nocursor),
            None => &self.nocursor,
        };
        let call = Call {
            kind: CallKind::Unaccounted,
            name,
            line: no,
            offset,
            text: b"",
            cursor: cursor.map_or(&b""[..], |(id, _)| id),
            cursor_key: cursor.map(|(_, key)| key),
            dep,
            depmin,
            stmt: &c.stmt,
            parse_id: c.parse_id,
            exec_id: c.exec_id,
            binds: &c.binds,
            db: DbFields::default(),
            wait: WaitFields::default(),
            pseudo_us: us,
            island_id: self.island,
            wall: self.wall,
        };
        on_call(&call);
    }

    /// A line that is not a call, for `--name=:all`: no name, no duration.
    fn other_line(&mut self, no: u64, b: &[u8], on_call: &mut impl FnMut(&Call<'_>)) {
        let offset = self.offset;
        let depmin = self.depmin();
        let c = &self.nocursor;
        let call = Call {
            kind: CallKind::Line,
            name: "",
            line: no,
            offset,
            text: b,
            cursor: b"",
            cursor_key: None,
            dep: None,
            depmin,
            stmt: &c.stmt,
            parse_id: 0,
            exec_id: 0,
            binds: &[],
            db: DbFields::default(),
            wait: WaitFields::default(),
            pseudo_us: 0,
            island_id: self.island,
            wall: self.wall,
        };
        on_call(&call);
    }

    /// End of file: waits after the last top-level call leave gaps too.
    fn finish(&mut self, last_line: u64, on_call: &mut impl FnMut(&Call<'_>)) {
        if self.opts.unaccounted {
            self.flush_between(last_line, on_call);
        }
    }
}

/// The value a damaged dump put on a `Bind#n` line itself (the `=` looked
/// for first: a substring search per line costs more).
fn value_on_bind_line(t: &[u8]) -> Option<&[u8]> {
    memchr::memchr(b'=', t)?;
    memchr::memmem::find(t, b"value=").map(|i| &t[i + 6..])
}

fn set_last_bind(c: &mut Cursor, v: &[u8]) {
    if let Some(last) = c.binds.last_mut() {
        // The standard check first: it has a fast path for ASCII, which
        // the lossy conversion has not.
        *last = Some(match std::str::from_utf8(v) {
            Ok(s) => Arc::from(s),
            Err(_) => Arc::from(String::from_utf8_lossy(v).as_ref()),
        });
    }
}

/// Lines that end a statement's text when its END OF STMT is missing: the
/// lines Oracle writes between statements, recognised strictly enough
/// (`EXEC #` and a digit, a `***` timestamp or context, the 21-`=`
/// separator) that no line of real SQL text looks like one.
fn is_trace_line(b: &[u8]) -> bool {
    let cursor_after = |p: &[u8]| {
        b.strip_prefix(p)
            .and_then(|r| r.first())
            .is_some_and(u8::is_ascii_digit)
    };
    match b.first() {
        Some(b'P') => {
            cursor_after(b"PARSING IN CURSOR #")
                || cursor_after(b"PARSE #")
                || cursor_after(b"PARSE ERROR #")
        }
        Some(b'E') => cursor_after(b"EXEC #") || cursor_after(b"ERROR #"),
        Some(b'F') => cursor_after(b"FETCH #"),
        Some(b'C') => cursor_after(b"CLOSE #"),
        Some(b'W') => cursor_after(b"WAIT #"),
        Some(b'S') => cursor_after(b"STAT #") || cursor_after(b"SORT UNMAP #"),
        Some(b'U') => cursor_after(b"UNMAP #"),
        Some(b'B') => cursor_after(b"BINDS #"),
        Some(b'X') => b.starts_with(b"XCTEND rlbk="),
        Some(b'R') => b.starts_with(b"RPC EXEC:c=") || b.starts_with(b"RPC CALL:"),
        Some(b'L') => {
            let name = b.iter().take_while(|c| c.is_ascii_uppercase()).count();
            name > 3 && b.starts_with(b"LOB") && b[name..].starts_with(b": type=")
        }
        Some(b'=') => b.len() == 21 && b.iter().all(|&c| c == b'='),
        Some(b'*') => b.strip_prefix(b"*** ").is_some_and(|r| {
            r.first().is_some_and(u8::is_ascii_digit) || {
                let name = r
                    .iter()
                    .take_while(|c| c.is_ascii_uppercase() || **c == b' ')
                    .count();
                name > 0 && r[name..].starts_with(b":(")
            }
        }),
        _ => false,
    }
}

/// A negative `dep=` on a PARSING IN CURSOR or PARSE ERROR line is damage
/// (Oracle's depths start at 0): it is dropped, and said.
fn negative_dep(p: &mut fields::Pic<'_>) -> Result<(), String> {
    match p.dep {
        Some(d) if d < 0 => {
            p.dep = None;
            Err(format!(
                "expected a depth of 0 or more after 'dep=', found '{d}'"
            ))
        }
        _ => Ok(()),
    }
}

/// Lines that end a PARSE ERROR text: anything the reader knows.
fn is_recognised(b: &[u8]) -> bool {
    const PREFIXES: &[&[u8]] = &[
        b"WAIT #",
        b"PARSING IN CURSOR",
        b"PARSE",
        b"EXEC #",
        b"FETCH #",
        b"CLOSE #",
        b"UNMAP #",
        b"SORT UNMAP #",
        b"STAT #",
        b"BINDS #",
        b"XCTEND",
        b"ERROR #",
        b"LOB",
        b"RPC ",
        b"***",
        b"=====",
    ];
    b.is_empty() || PREFIXES.iter().any(|p| b.starts_with(p))
}

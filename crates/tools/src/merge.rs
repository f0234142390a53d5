//! `merge`: the lines one logical session (a session id, client id,
//! service, module or action) left in many trace files, in time order, as
//! one valid trace (Oracle's trcsess, without its faults: see
//! docs/utilities.md). Each file is read by a thread of its own and its
//! chosen lines arrive in chunks, each ending at a timed line; the chunks
//! are merged by that line's `tim`.

use std::borrow::Cow;
use std::io::Write;
use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver};

use rustc_hash::FxHashMap;
use tracelab_trace::{CallKind, LineKinds, ReadOptions, Reader, Source};

use crate::error::ToolsError;
use crate::scan::{self, Field};
use crate::select::{Item, Policy, Selector, Timed, Tracker};
use crate::sink::Sink;

/// The context a logical session is found by.
pub type Key = Field;

impl Field {
    /// `session`, `client_id`, `service`, `module`, `action`.
    pub fn from_name(s: &str) -> Option<Field> {
        Some(match s {
            "session" => Field::Session,
            "client_id" | "clientid" => Field::ClientId,
            "service" => Field::Service,
            "module" => Field::Module,
            "action" => Field::Action,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Field::Session => "session",
            Field::ClientId => "client_id",
            Field::Service => "service",
            Field::Module => "module",
            Field::Action => "action",
        }
    }
}

/// Two files whose wall clocks differ from their `tim` clocks by more than
/// this were written on different clocks (RAC instances: each host's
/// `tim` counts from its own origin): their lines are ordered by wall
/// clock. Within it, the difference is the lag of a `***` timestamp behind
/// the call that anchors it, and `tim` orders them exactly.
const OTHER_CLOCK_US: i64 = 3_600_000_000;

/// Chunks handed from a file's thread to the merge at a time.
const BATCH: usize = 512;

/// A file's chosen lines as they arrive: a batch of chunks, their text in
/// one buffer (one allocation per batch, not one per line).
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    lines: Vec<Stored>,
    chunks: Vec<Chunk>,
}

/// A line of a batch: where its text is, and what the sink needs of it.
struct Stored {
    text: Range<usize>,
    span: Option<Range<usize>>,
    timed: Option<Timed>,
    header: bool,
}

impl Batch {
    fn push(&mut self, item: &Item<'_>) {
        let start = self.text.len();
        self.text.extend_from_slice(&item.text);
        self.lines.push(Stored {
            text: start..self.text.len(),
            span: item.span.clone(),
            timed: item.timed,
            header: item.header,
        });
    }

    /// The lines of `chunk`, a chunk of this batch.
    fn items<'a>(&'a self, chunk: &Chunk) -> impl Iterator<Item = Item<'a>> {
        self.lines[chunk.lines.clone()].iter().map(|l| Item {
            text: Cow::Borrowed(&self.text[l.text.clone()]),
            span: l.span.clone(),
            timed: l.timed,
            header: l.header,
        })
    }
}

/// A file's chunks as they arrive in batches.
struct Stream {
    rx: Receiver<Batch>,
    batch: Batch,
    next: usize,
}

impl Stream {
    /// The next chunk; its lines are in `self.batch` until the next call.
    fn next(&mut self) -> Option<Chunk> {
        if self.next == self.batch.chunks.len() {
            self.batch = self.rx.recv().ok()?;
            self.next = 0;
        }
        self.next += 1;
        Some(std::mem::take(&mut self.batch.chunks[self.next - 1]))
    }
}

/// What a merge did.
#[derive(Debug, Clone, Default)]
pub struct MergeOutcome {
    /// The value merged (given, or the first file's).
    pub value: String,
    /// Files that had lines of it.
    pub files: usize,
    pub lines: u64,
    /// Cursor-number lines renumbered because another process used the
    /// same number.
    pub renumbered: u64,
    pub stamps_added: u64,
    /// Files ordered by wall clock, being on another `tim` clock.
    pub other_clocks: usize,
    pub warnings: Vec<String>,
}

#[derive(Default)]
struct Chunk {
    /// Its lines in the batch's.
    lines: Range<usize>,
    /// `tim` of the chunk's last (timed) line; the file's latest for a
    /// tail without one.
    tim: Option<i64>,
    header: bool,
    /// wall − tim of the file's first anchor.
    clock: Option<i64>,
    /// The process that wrote the file: (instance, pid).
    process: Option<(String, String)>,
}

/// The first value of `key` in `file`, for a merge given no value: read
/// from the file's first MiB (where its first `***` lines are), and from
/// the whole file only if it is not there.
fn first_value(file: &str, key: Field) -> Result<Option<String>, ToolsError> {
    let mut reader = Reader::new(ReadOptions {
        all_lines: true,
        line_kinds: LineKinds {
            sql_text: false,
            bind_details: false,
        },
        ..ReadOptions::default()
    });
    for limit in [1 << 20, u64::MAX] {
        let trace = tracelab_trace::open(&Source::from_arg(file))?;
        let mut tracker = Tracker::new();
        let mut found: Option<String> = None;
        reader.read_before(trace, limit, |c| {
            if found.is_none() && c.kind == CallKind::Line && c.text.starts_with(b"***") {
                tracker.observe(c.line, c.text);
                found = tracker.value(key).map(str::to_string);
            }
        })?;
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// Reads one file on its own thread, sending its chosen lines in chunks.
fn produce(
    file: String,
    key: Field,
    value: String,
    tx: std::sync::mpsc::SyncSender<Batch>,
) -> Result<Vec<String>, ToolsError> {
    // Chunks go in batches: one channel hand-over per call cost more than
    // the merge itself.
    let mut batch = Batch::default();
    let trace = tracelab_trace::open(&Source::from_arg(&file))?;
    // Where the chunk being gathered starts in the batch's lines.
    let mut open = 0usize;
    let mut clock: Option<i64> = None;
    let mut last_tim: Option<i64> = None;
    let mut gone = false;
    let mut facts = scan::HeaderFacts::default();
    let mut pending_process = true;
    let summary = {
        let mut sel = Selector::new(Policy::Field(key, value), |item: Item<'_>| {
            if gone {
                return;
            }
            if item.header {
                facts.see(&item.text);
                batch.push(&item);
                return;
            }
            if pending_process {
                pending_process = false;
                let process = facts
                    .pid
                    .clone()
                    .map(|pid| (facts.instance.clone().unwrap_or_default(), pid));
                batch.chunks.push(Chunk {
                    lines: open..batch.lines.len(),
                    tim: None,
                    header: true,
                    clock,
                    process,
                });
                open = batch.lines.len();
            }
            let timed = item.timed;
            batch.push(&item);
            if let Some(t) = timed {
                if clock.is_none() {
                    clock = t.wall.map(|w| w.wall_us - w.tim);
                }
                last_tim = Some(t.tim);
                batch.chunks.push(Chunk {
                    lines: open..batch.lines.len(),
                    tim: Some(t.tim),
                    header: false,
                    clock,
                    process: None,
                });
                open = batch.lines.len();
                if batch.chunks.len() >= BATCH {
                    let next = Batch {
                        text: Vec::with_capacity(batch.text.len()),
                        lines: Vec::with_capacity(batch.lines.len()),
                        chunks: Vec::with_capacity(BATCH),
                    };
                    gone = tx.send(std::mem::replace(&mut batch, next)).is_err();
                    open = 0;
                }
            }
        });
        let mut reader = Reader::new(ReadOptions {
            all_lines: true,
            chained: true,
            ..ReadOptions::default()
        });
        let summary = reader.read(trace, |c| {
            sel.feed(c);
        })?;
        sel.finish();
        summary
    };
    // The lines after the last timed one; a header with no chosen line
    // after it is not sent.
    if !pending_process && open < batch.lines.len() {
        batch.chunks.push(Chunk {
            lines: open..batch.lines.len(),
            tim: last_tim,
            header: false,
            clock,
            process: None,
        });
    }
    if !batch.chunks.is_empty() && !gone {
        let _ = tx.send(batch);
    }
    Ok(summary
        .diagnostics
        .kept
        .iter()
        .map(ToString::to_string)
        .collect())
}

/// Merges the lines of `key` = `value` (or the first file's value) of
/// `files` into `out`.
pub fn merge(
    files: &[String],
    key: Field,
    value: Option<&str>,
    out: impl Write,
    what: &str,
) -> Result<MergeOutcome, ToolsError> {
    let value = match value {
        Some(v) => v.to_string(),
        None => {
            let first = files
                .first()
                .ok_or_else(|| ToolsError::Usage("merge: no file given".into()))?;
            first_value(first, key)?.ok_or_else(|| {
                ToolsError::Usage(format!(
                    "{first}: no *** {} line: give the value to merge with --value",
                    star_name(key)
                ))
            })?
        }
    };
    let mut outcome = MergeOutcome {
        value: value.clone(),
        ..MergeOutcome::default()
    };
    let mut sink = Sink::new(out, what, true);
    let result = std::thread::scope(|s| -> Result<(), ToolsError> {
        let mut rxs: Vec<Stream> = Vec::new();
        let mut handles = Vec::new();
        for f in files {
            let (tx, rx) = sync_channel::<Batch>(4);
            rxs.push(Stream {
                rx,
                batch: Batch::default(),
                next: 0,
            });
            let (f, v) = (f.clone(), value.clone());
            handles.push(s.spawn(move || produce(f, key, v, tx)));
        }
        let written = write_merged(&mut rxs, &mut sink, &mut outcome);
        drop(rxs);
        for h in handles {
            match h.join() {
                Ok(Ok(w)) => outcome.warnings.extend(w),
                Ok(Err(e)) => return Err(e),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        written
    });
    result?;
    sink.flush()?;
    outcome.renumbered = sink.renumbered;
    outcome.stamps_added = sink.stamps_added;
    Ok(outcome)
}

fn star_name(key: Field) -> &'static str {
    match key {
        Field::Session => "SESSION ID",
        Field::ClientId => "CLIENT ID",
        Field::Service => "SERVICE NAME",
        Field::Module => "MODULE NAME",
        Field::Action => "ACTION NAME",
    }
}

fn write_merged<W: Write>(
    rxs: &mut [Stream],
    sink: &mut Sink<W>,
    outcome: &mut MergeOutcome,
) -> Result<(), ToolsError> {
    let mut heads: Vec<Option<Chunk>> = rxs.iter_mut().map(Stream::next).collect();
    // The cursor numbers of one process are one namespace (a trace cut in
    // two files by hand, or by Oracle at a new tracefile_identifier,
    // shares its cursors); a file whose header names no process is one.
    let mut ns_of: FxHashMap<(String, String), usize> = FxHashMap::default();
    let mut ns: Vec<usize> = (0..rxs.len()).map(|i| rxs.len() + i).collect();
    let mut processes: Vec<Option<(String, String)>> = vec![None; rxs.len()];
    for (i, head) in heads.iter().enumerate() {
        if let Some(p) = head.as_ref().and_then(|c| c.process.clone()) {
            let n = ns_of.len();
            ns[i] = *ns_of.entry(p.clone()).or_insert(n);
            processes[i] = Some(p);
        }
    }
    // The header of the first file with lines of the session.
    let mut header_written = false;
    for (i, head) in heads.iter_mut().enumerate() {
        if head.as_ref().is_some_and(|c| c.header) {
            let c = head.take().unwrap();
            if !header_written {
                for item in rxs[i].batch.items(&c) {
                    sink.write(&item, ns[i])?;
                }
                header_written = true;
            }
            outcome.files += 1;
            *head = rxs[i].next();
        }
    }
    let mut base: Option<i64> = None;
    let mut adjust: Vec<Option<i64>> = vec![None; rxs.len()];
    let mut last_ns: Option<usize> = None;
    loop {
        for (i, h) in heads.iter().enumerate() {
            if let (None, Some(c)) = (adjust[i], h) {
                if let Some(clock) = c.clock {
                    let b = *base.get_or_insert(clock);
                    let d = clock - b;
                    adjust[i] = Some(if d.abs() > OTHER_CLOCK_US { d } else { 0 });
                    if d.abs() > OTHER_CLOCK_US {
                        outcome.other_clocks += 1;
                    }
                }
            }
        }
        let next = heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| {
                let c = h.as_ref()?;
                let key = c.tim.map_or(i64::MIN, |t| t + adjust[i].unwrap_or(0));
                Some((key, i))
            })
            .min();
        let Some((_, i)) = next else { break };
        let c = heads[i].take().unwrap();
        if last_ns != Some(ns[i]) {
            // Another process's lines: said as trcsess says it.
            if last_ns.is_some() {
                if let Some((_, pid)) = &processes[i] {
                    sink.write(
                        &Item {
                            text: format!("*** [ Unix process pid: {pid} ]")
                                .into_bytes()
                                .into(),
                            span: None,
                            timed: None,
                            header: false,
                        },
                        ns[i],
                    )?;
                }
            }
            last_ns = Some(ns[i]);
        }
        for item in rxs[i].batch.items(&c) {
            sink.write(&item, ns[i])?;
            outcome.lines += 1;
        }
        heads[i] = rxs[i].next();
    }
    Ok(())
}

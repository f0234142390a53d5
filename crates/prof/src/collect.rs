//! One pass over a file's calls builds its profile: the resource profile
//! (as `tracelab skew --unaccounted` adds it up), every statement's call
//! statistics with and without its recursive children, waits, plans,
//! binds, histograms, the recursive hierarchy and a timeline.
//!
//! A big file is read in pieces on all cores ([`tracelab_trace::Reader::read_split`]).
//! What a piece cannot know at its start (waits and recursive calls still
//! waiting for the call that contains them, the execution a cursor is in)
//! is settled when the pieces are added up in file order: each piece keeps
//! its first events up to its first top-level call (its "head") and hands
//! them to the state of the pieces before it, which then goes on exactly as
//! a single reader would have; what the piece saw after that is added.
//! The statement of a cursor parsed before a piece began is unknown to the
//! piece's reader too (it gives a placeholder): the piece keeps such calls
//! under the process and cursor, and they go to the statement the cursor
//! has when the pieces are added up.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rustc_hash::FxHashMap;
use tracelab_trace::{Call, CallKind, DbFields, Statement};

use crate::binds::{BindBuf, BindStats};
use crate::plan::{add_capture, parse_stat, Plan, StatLine};
use crate::stats::{CallSums, CallTable, ChildSums, ChildTable, Dur, P10};
use crate::timeline::Timeline;

/// Slots of the wait-name cache.
const NAME_CACHE: usize = 32;

/// Name of the resource-profile row for time inside database calls not
/// covered by their CPU or their waits.
pub const WITHIN: &str = tracelab_trace::PSEUDO_WITHIN;
/// Name of the row for the gaps between calls.
pub const BETWEEN: &str = tracelab_trace::PSEUDO_BETWEEN;
/// The wait that is think time when long enough (PostgreSQL's
/// `Client:ClientRead` in tracelab's server traces too, see
/// `tracelab_trace::is_client_wait`).
pub const SNMFC: &str = "SQL*Net message from client";

/// A cursor number as written (decimal, or hex after `0x`).
pub(crate) fn cursor_key(id: &[u8]) -> Option<u64> {
    if let Some(hex) = id.strip_prefix(b"0x").or_else(|| id.strip_prefix(b"0X")) {
        return u64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok();
    }
    if id.is_empty() || id.len() > 19 {
        return None;
    }
    let mut k: u64 = 0;
    for &b in id {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        k = k * 10 + d as u64;
    }
    Some(k)
}

/// Interned names of calls, waits and profile rows.
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    ids: FxHashMap<Box<str>, u32>,
    pub list: Vec<Box<str>>,
}

impl Names {
    #[inline]
    pub fn id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(name.into());
        self.ids.insert(name.into(), i);
        i
    }
}

/// The slowest execution of a statement.
#[derive(Debug, Clone, Default)]
pub(crate) struct Slowest {
    pub elapsed_us: i64,
    pub offset: u64,
    pub line: u64,
    pub binds: Vec<Option<String>>,
}

/// Everything kept about one statement: the little kept for every
/// statement however many there are (what ranks it, what it adds to the
/// folded line and to tkprof's totals, about 200 bytes with its key), and
/// its detail (tkprof's tables, waits, plans, binds, histograms: some
/// kilobytes), which a trace of millions of distinct statements keeps only
/// for those the report shows (see [`Keep`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct StmtAgg {
    /// (byte offset, line) where the statement first shows.
    pub first: (u64, u64),
    pub own: Own,
    /// `dep=` of the statement's PARSING IN CURSOR.
    pub dep: Option<i64>,
    /// Depth learnt from the statement's database calls.
    pub dep_seen: Option<i64>,
    hv: Option<i64>,
    sql_len: usize,
    pub placeholder: bool,
    /// What it adds to tkprof's totals while it is not known which of the
    /// two (depth 0 or deeper) it goes to: a statement with no `dep=` of its
    /// own, placed by the depth of its calls when the reading ends.
    pub unclassed: Option<Box<TotalsAgg>>,
    pub detail: Option<Box<StmtDetail>>,
}

/// A statement's calls with and without the recursive calls inside them,
/// in the few sums its rank needs.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Own {
    /// Database calls of every kind.
    pub calls: u64,
    pub elapsed_us: i64,
    pub cpu_us: i64,
    /// What the recursive calls inside them took.
    pub kids_elapsed_us: i64,
    pub kids_cpu_us: i64,
}

impl Own {
    /// Elapsed time less that of the recursive calls inside: the share of R.
    pub fn self_elapsed_us(&self) -> i64 {
        self.elapsed_us - self.kids_elapsed_us
    }

    pub fn self_cpu_us(&self) -> i64 {
        self.cpu_us - self.kids_cpu_us
    }

    fn add(&mut self, o: &Own) {
        self.calls += o.calls;
        self.elapsed_us += o.elapsed_us;
        self.cpu_us += o.cpu_us;
        self.kids_elapsed_us += o.kids_elapsed_us;
        self.kids_cpu_us += o.kids_cpu_us;
    }
}

/// What the statements of one side of tkprof's OVERALL TOTALS (depth 0,
/// or deeper) add up to: added as the calls come, so that the totals need
/// nothing per statement.
#[derive(Debug, Clone, Default)]
pub(crate) struct TotalsAgg {
    pub calls: CallTable,
    pub children: ChildTable,
    /// Waits on the statements' cursors: name id, durations, first offset.
    pub waits: Vec<(u32, Dur, u64)>,
}

impl TotalsAgg {
    /// Adds `o`, whose wait names are translated by `names`.
    pub fn add(&mut self, o: &TotalsAgg, names: Option<&[u32]>) {
        self.calls.add(&o.calls);
        self.children.add(&o.children);
        for (n, d, at) in &o.waits {
            let n = names.map_or(*n, |m| m[*n as usize]);
            merge_wait(&mut self.waits, n, d, *at);
        }
    }
}

/// The detail of a statement, what its own section of the report shows.
#[derive(Debug, Clone, Default)]
pub(crate) struct StmtDetail {
    pub stmt: Statement,
    pub calls: CallTable,
    pub children: ChildTable,
    pub og: Option<i64>,
    pub plh: i64,
    /// Waits on the statement's cursor: name id, durations, and the byte
    /// offset of the first (tkprof lists them in the order first seen).
    pub waits: Vec<(u32, Dur, u64)>,
    pub errors: Vec<String>,
    pub error_count: u64,
    pub exec_hist: P10,
    pub fetch_hist: P10,
    pub execution_hist: P10,
    pub executions: Dur,
    pub slowest: Option<Slowest>,
    pub binds: BindStats,
    pub plans: Vec<Plan>,
}

impl StmtAgg {
    fn new(stmt: &Statement, first: (u64, u64), detail: bool) -> StmtAgg {
        StmtAgg {
            first,
            dep: stmt.dep,
            hv: stmt.hv,
            sql_len: stmt.sql.len(),
            placeholder: stmt.placeholder,
            detail: detail.then(|| {
                Box::new(StmtDetail {
                    stmt: stmt.clone(),
                    ..StmtDetail::default()
                })
            }),
            ..StmtAgg::default()
        }
    }

    /// The same statement with nothing added up yet: what a piece's
    /// statement new to the pieces before it starts as there.
    fn blank(&self, detail: bool) -> StmtAgg {
        StmtAgg {
            first: self.first,
            dep: self.dep,
            hv: self.hv,
            sql_len: self.sql_len,
            placeholder: self.placeholder,
            detail: detail.then(|| {
                Box::new(StmtDetail {
                    stmt: self
                        .detail
                        .as_ref()
                        .map(|d| d.stmt.clone())
                        .unwrap_or_default(),
                    ..StmtDetail::default()
                })
            }),
            ..StmtAgg::default()
        }
    }

    /// Which side of tkprof's totals the statement is on, if known for
    /// good: a statement parsed with a `dep=` is told apart from the same
    /// text at another depth; a placeholder is not.
    fn class(&self) -> Option<usize> {
        if self.placeholder {
            return None;
        }
        self.dep.map(|d| usize::from(d > 0))
    }

    /// The side of tkprof's totals, when the reading has ended.
    pub fn final_class(&self) -> usize {
        usize::from(self.dep.or(self.dep_seen).unwrap_or(0) > 0)
    }

    fn execution_done(&mut self, x: &OpenExec, binds: Option<&BindBuf>) {
        let Some(s) = self.detail.as_deref_mut() else {
            return;
        };
        s.execution_hist.add(x.us);
        s.executions.add(x.us);
        if s.slowest.as_ref().is_none_or(|m| x.us > m.elapsed_us) {
            s.slowest = Some(Slowest {
                elapsed_us: x.us,
                offset: x.offset,
                line: x.line,
                binds: binds.map(|b| b.values()).unwrap_or_default(),
            });
        }
    }
}

/// The totals statement `sid` adds to: its side's, or its own until its
/// side is known.
fn totals_of<'a>(
    stmts: &'a mut [StmtAgg],
    totals: &'a mut [TotalsAgg; 2],
    sid: u32,
) -> &'a mut TotalsAgg {
    let s = &mut stmts[sid as usize];
    match s.class() {
        Some(c) => &mut totals[c],
        None => s.unclassed.get_or_insert_with(Box::default),
    }
}

/// The sums of calls of kind `kind` in a call table.
fn call_slot(t: &mut CallTable, kind: CallKind) -> &mut CallSums {
    match kind {
        CallKind::Parse => &mut t.parse,
        CallKind::Exec | CallKind::Unmap | CallKind::SortUnmap => &mut t.execute,
        CallKind::Fetch => &mut t.fetch,
        _ => &mut t.other,
    }
}

/// Which statements a reading keeps the detail of.
#[derive(Debug, Clone)]
pub(crate) enum Keep {
    /// Every statement's: the report shows them all (`--top 0`), or the
    /// input cannot be read again.
    All,
    /// Every statement's up to `limit` distinct statements, then none (the
    /// reading becomes `compact`, and the file is read again for the
    /// detail of those the report shows). The pieces of a reading count
    /// them together in `seen`; the state they are added up in counts its
    /// own (`None`).
    Until {
        limit: usize,
        seen: Option<Arc<AtomicUsize>>,
    },
    /// Only of these statements, by key and depth (those a first reading
    /// found the report shows), and of those a piece inherited from the
    /// pieces before it (known only when the pieces are added up).
    Only(Arc<KeySet>),
}

/// Statement keys ([`stmt_key`]) and the depths they are told apart by.
pub(crate) type KeySet = FxHashMap<Box<str>, Vec<Option<i64>>>;

/// Statement ids by key: one depth, or several (the same SQL at depth 0 and
/// in PL/SQL), without a list per statement.
#[derive(Debug, Clone)]
enum Ids {
    One(Option<i64>, u32),
    Many(Vec<(Option<i64>, u32)>),
}

impl Ids {
    fn find(&self, dep: Option<i64>) -> Option<u32> {
        match self {
            Ids::One(d, id) => (*d == dep).then_some(*id),
            Ids::Many(v) => v.iter().find(|(d, _)| *d == dep).map(|(_, id)| *id),
        }
    }

    fn push(&mut self, dep: Option<i64>, id: u32) {
        match self {
            Ids::One(d, i) => *self = Ids::Many(vec![(*d, *i), (dep, id)]),
            Ids::Many(v) => v.push((dep, id)),
        }
    }

    fn each(&self) -> impl Iterator<Item = (Option<i64>, u32)> + '_ {
        let (one, many) = match self {
            Ids::One(d, id) => (Some((*d, *id)), &[][..]),
            Ids::Many(v) => (None, &v[..]),
        };
        one.into_iter().chain(many.iter().copied())
    }
}

/// An execution in progress on a cursor: EXEC and the FETCHes after it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpenExec {
    stmt: u32,
    us: i64,
    offset: u64,
    line: u64,
    has_binds: bool,
}

/// What a cursor is doing, as far as this reader knows.
#[derive(Debug, Clone, Copy)]
enum ExecState {
    /// A piece that has not seen the cursor since its start: FETCHes
    /// before its first EXEC may belong to an execution an earlier piece
    /// started (their elapsed time so far).
    Unknown(i64),
    Idle,
    Open(OpenExec),
}

#[derive(Debug, Clone)]
struct CursorState {
    stmt_ptr: usize,
    stmt: Option<u32>,
    plh: i64,
    binds: BindBuf,
    /// The binds of the open execution.
    exec_binds: BindBuf,
    exec: ExecState,
}

impl CursorState {
    fn new(piece: bool) -> CursorState {
        CursorState {
            stmt_ptr: 0,
            stmt: None,
            plh: 0,
            binds: BindBuf::default(),
            exec_binds: BindBuf::default(),
            exec: if piece {
                ExecState::Unknown(0)
            } else {
                ExecState::Idle
            },
        }
    }
}

/// Calls at one depth not yet claimed by the call they ran inside.
#[derive(Debug, Clone, Default)]
struct Pending {
    sums: ChildSums,
    /// By child statement (those whose detail is kept: the edges of the
    /// tree of recursive statements are shown between those only). A map:
    /// a PL/SQL block may run millions of distinct statements.
    edges: FxHashMap<u32, EdgeAgg>,
}

impl Pending {
    /// Adds `o` (calls written after this level's own): the sums, and the
    /// edges by child statement.
    fn append(&mut self, o: Pending) {
        self.sums.add(&o.sums);
        for (child, e) in o.edges {
            self.edges.entry(child).or_default().add(&e);
        }
    }
}

/// Who took the calls pending at one level, first after a head was cut.
#[derive(Debug, Clone, Copy)]
enum Claim {
    /// A call of this statement and kind, at the level above.
    By(u32, CallKind),
    /// A commit (XCTEND), which runs its own recursive calls.
    Cleared,
}

/// A process whose head was cut short ([`HEAD_MAX`]) goes on in the piece
/// without the state the pieces before left; what needed that state is
/// kept here and settled when the pieces are added up, so that the result
/// is the one a single reader makes whatever the head's length.
#[derive(Debug, Clone, Default)]
struct Detached {
    /// By pending level: the first call here that claimed that level. The
    /// calls the earlier state had pending there are its children too.
    claims: Vec<Option<Claim>>,
    /// The first top-level call here, (tim, e, c, name id): its
    /// unaccounted-for time needs the earlier state's waits and the end of
    /// its latest top-level call.
    first_top: Option<(i64, i64, i64, u32)>,
    /// The waits written here before `first_top`.
    waits: Vec<(i64, i64)>,
}

impl Detached {
    #[inline]
    fn claim(&mut self, level: usize, c: Claim) {
        if self.claims.len() <= level {
            self.claims.resize(level + 1, None);
        }
        if self.claims[level].is_none() {
            self.claims[level] = Some(c);
        }
    }
}

/// The children's sums of a call of kind `kind`.
fn child_slot(t: &mut ChildTable, kind: CallKind) -> &mut ChildSums {
    match kind {
        CallKind::Parse => &mut t.parse,
        CallKind::Exec | CallKind::Unmap | CallKind::SortUnmap => &mut t.execute,
        CallKind::Fetch => &mut t.fetch,
        _ => &mut t.other,
    }
}

/// The recursive calls a call of statement `sid` and kind `kind` claimed
/// (`sums`): into the statement's figures and its side of the totals.
fn claim_children(
    stmts: &mut [StmtAgg],
    totals: &mut [TotalsAgg; 2],
    sid: u32,
    kind: CallKind,
    sums: &ChildSums,
) {
    let s = &mut stmts[sid as usize];
    s.own.kids_elapsed_us += sums.elapsed_us;
    s.own.kids_cpu_us += sums.cpu_us;
    if let Some(d) = s.detail.as_deref_mut() {
        child_slot(&mut d.children, kind).add(sums);
    }
    child_slot(&mut totals_of(stmts, totals, sid).children, kind).add(sums);
}

/// A parent statement's recursive children: calls, elapsed and CPU.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EdgeAgg {
    pub calls: u64,
    pub elapsed_us: i64,
    pub cpu_us: i64,
}

impl EdgeAgg {
    fn add(&mut self, o: &EdgeAgg) {
        self.calls += o.calls;
        self.elapsed_us += o.elapsed_us;
        self.cpu_us += o.cpu_us;
    }
}

/// Adds `e` to the edge from `parent` to `child` when both statements' detail
/// is kept (the report shows the tree between those only).
fn add_edge(
    stmts: &[StmtAgg],
    edges: &mut FxHashMap<(u32, u32), EdgeAgg>,
    parent: u32,
    child: u32,
    e: &EdgeAgg,
) {
    if stmts[parent as usize].detail.is_some() && stmts[child as usize].detail.is_some() {
        edges.entry((parent, child)).or_default().add(e);
    }
}

/// A piece's end of an execution begun before the piece, settled when
/// the pieces are added up: (cursor, statement, elapsed so far, whether the
/// piece ended it).
#[derive(Debug, Clone, Copy)]
struct Boundary {
    cursor: u64,
    stmt: u32,
    us: i64,
    ended: bool,
}

/// STAT and ERROR lines on a cursor a piece has not seen a call of.
#[derive(Debug, Clone)]
enum Orphan {
    Plan(u64, Vec<StatLine>),
    Error(u64, String),
}

/// The state of one process of the session (a trcsess merge holds
/// several, their blocks interleaved): what its next calls need.
#[derive(Debug, Clone, Default)]
struct Dyn {
    cursors: FxHashMap<u64, CursorState>,
    pending_waits: Vec<(i64, i64)>,
    /// End of the latest top-level call or wait, for the gaps between calls.
    top_end: Option<i64>,
    pending: Vec<Pending>,
    boundary: Vec<Boundary>,
    orphans: Vec<Orphan>,
    /// In a piece whose head for this process was cut short: what is
    /// settled when the pieces are added up.
    detached: Option<Box<Detached>>,
    /// The process's `*** SESSION ID` (a shared server serves several in
    /// turn: the time across a change is another session's, left out).
    session: Option<Box<[u8]>>,
    /// In a piece: the first session id seen with none known before. The
    /// pieces before may have had another: the walk is cut there as for a
    /// change (`held`: the end it had), and the gap across the line is
    /// withheld (`held_gap`) until the pieces are added up, counted only
    /// if the session was the same.
    first_session: Option<Box<[u8]>>,
    held: Option<Option<i64>>,
    held_gap: Option<(i64, i64)>,
}

/// What the trace says about itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meta {
    pub trace_name: Option<String>,
    /// The Oracle banner (`Oracle Database 19c ... Release 19.0.0.0.0`).
    pub oracle: Option<String>,
    /// tracelab's own header: (side, engine).
    pub tracelab: Option<(String, String)>,
    /// The first `***` timestamp.
    pub started: Option<String>,
    pub sessions: Vec<String>,
    /// trcsess's `*** [ Unix process pid: N ]` blocks.
    pub process_blocks: u64,
    /// PARSING IN CURSOR lines at depth 0 and deeper.
    pub pic_user: u64,
    pub pic_internal: u64,
    pub parse_errors: u64,
    pub stat_unread: u64,
    /// Whether the trace has CLOSE lines or plh= (11.1.0.7 and later).
    pub modern: bool,
    pub first_start: Option<i64>,
    pub last_end: Option<i64>,
    /// The smallest `dep=` of the database calls.
    pub min_dep: Option<i64>,
}

/// Where the collector is among the lines that are no call. (SQL text
/// is not among them: the reader keeps it with its statement and hands
/// none of it out, see run.rs.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineState {
    Normal,
    Binds(u64),
}

/// A call as the collector sees it, borrowed from the reader or from a
/// piece's head. (Built on the stack per call: its size does not matter.)
#[allow(clippy::large_enum_variant)]
pub(crate) enum Ev<'a> {
    Db {
        kind: CallKind,
        name: &'a str,
        cursor: Option<u64>,
        stmt: &'a Statement,
        f: &'a DbFields,
        depmin: i64,
        offset: u64,
        line: u64,
    },
    Wait {
        name: &'a str,
        cursor: Option<u64>,
        stmt: &'a Statement,
        ela: i64,
        tim: Option<i64>,
        offset: u64,
        line: u64,
    },
    Line {
        text: &'a [u8],
        offset: u64,
        line: u64,
    },
}

impl<'a> Ev<'a> {
    #[inline]
    pub fn from_call(c: &'a Call<'a>) -> Option<Ev<'a>> {
        let cursor = c.cursor_key;
        Some(match c.kind {
            CallKind::Unaccounted => return None,
            CallKind::Line => Ev::Line {
                text: c.text,
                offset: c.offset,
                line: c.line,
            },
            CallKind::Wait => Ev::Wait {
                name: c.name,
                cursor,
                stmt: c.stmt,
                ela: c.wait.ela,
                tim: c.wait.tim,
                offset: c.offset,
                line: c.line,
            },
            kind => Ev::Db {
                kind,
                name: c.name,
                cursor,
                stmt: c.stmt,
                f: &c.db,
                depmin: c.depmin,
                offset: c.offset,
                line: c.line,
            },
        })
    }
}

/// An [`Ev`] kept by a piece until the pieces are added up (a few per
/// piece and process: boxing the big variant would not save anything).
#[allow(clippy::large_enum_variant)]
pub(crate) enum OwnedEv {
    Db {
        kind: CallKind,
        name: Box<str>,
        cursor: Option<u64>,
        stmt: Arc<Statement>,
        f: DbFields,
        depmin: i64,
        offset: u64,
        line: u64,
    },
    Wait {
        name: Box<str>,
        cursor: Option<u64>,
        stmt: Arc<Statement>,
        ela: i64,
        tim: Option<i64>,
        offset: u64,
        line: u64,
    },
    Line {
        text: Box<[u8]>,
        offset: u64,
        line: u64,
    },
}

impl OwnedEv {
    fn view(&self) -> Ev<'_> {
        match self {
            OwnedEv::Db {
                kind,
                name,
                cursor,
                stmt,
                f,
                depmin,
                offset,
                line,
            } => Ev::Db {
                kind: *kind,
                name,
                cursor: *cursor,
                stmt,
                f,
                depmin: *depmin,
                offset: *offset,
                line: *line,
            },
            OwnedEv::Wait {
                name,
                cursor,
                stmt,
                ela,
                tim,
                offset,
                line,
            } => Ev::Wait {
                name,
                cursor: *cursor,
                stmt,
                ela: *ela,
                tim: *tim,
                offset: *offset,
                line: *line,
            },
            OwnedEv::Line { text, offset, line } => Ev::Line {
                text,
                offset: *offset,
                line: *line,
            },
        }
    }
}

/// The state of one reading: the sums, and what the next calls need.
#[derive(Debug, Clone)]
pub(crate) struct Collector {
    pub thinktime_us: i64,
    pub think_name: String,
    pub names: Names,
    /// Name ids of the calls whose name their kind fixes (by `CallKind as
    /// usize`), and of recent wait names by address.
    kind_names: [Option<u32>; 16],
    name_cache: [(usize, usize, u32); NAME_CACHE],
    /// Reused for the gaps a call closes.
    gap_buf: Vec<(i64, i64)>,
    fixed: Option<(u32, u32, u32, u32)>,
    /// Resource profile rows by name id (top-level calls, all waits,
    /// unaccounted-for time).
    pub comps: Vec<Dur>,
    pub stmts: Vec<StmtAgg>,
    /// Statement ids by key ([`stmt_key`]), then by depth.
    stmt_ids: FxHashMap<Box<str>, Ids>,
    /// In a piece: the statement ids of cursors parsed before it, by
    /// process and cursor, with the placeholder's key.
    inherited: FxHashMap<(Option<u64>, u64), (u32, Box<str>)>,
    /// Edges of the tree of recursive statements, between statements whose
    /// detail is kept.
    pub edges: FxHashMap<(u32, u32), EdgeAgg>,
    /// tkprof's OVERALL TOTALS: statements at depth 0, and deeper.
    pub totals: [TotalsAgg; 2],
    /// Their waits, by name id (durations, first offset): looked up for
    /// every wait, where a list would be searched.
    pub side_waits: [Vec<(Dur, u64)>; 2],
    /// Which statements' detail is kept.
    keep: Keep,
    /// Whether some statement's detail is not kept (the report then needs
    /// another reading, with `Keep::Only`, unless it is one).
    pub compact: bool,
    /// Waits on no statement's cursor (`WAIT #0`), by name id.
    pub loose_waits: Vec<(u32, Dur, u64)>,
    pub timeline: Timeline,
    pub meta: Meta,
    /// Whether this collector reads a piece after its head (see the module
    /// doc): cursors then start in `ExecState::Unknown`.
    piece: bool,
    /// The current process's state, and the others' by process id (`None`
    /// for the process current when this reading began).
    d: Dyn,
    pid: Option<u64>,
    procs: FxHashMap<Option<u64>, Dyn>,
    line_state: LineState,
    /// The BINDS block being read.
    cur_binds: BindBuf,
    capture: Option<(u64, Vec<StatLine>)>,
}

impl Collector {
    pub fn new(thinktime_us: i64, piece: bool, keep: Keep) -> Collector {
        Collector {
            totals: Default::default(),
            side_waits: Default::default(),
            compact: matches!(keep, Keep::Only(_)),
            keep,
            thinktime_us,
            think_name: think_name(thinktime_us),
            names: Names::default(),
            kind_names: [None; 16],
            name_cache: [(0, 0, 0); NAME_CACHE],
            gap_buf: Vec::new(),
            fixed: None,
            comps: Vec::new(),
            stmts: Vec::new(),
            stmt_ids: FxHashMap::default(),
            inherited: FxHashMap::default(),
            edges: FxHashMap::default(),
            loose_waits: Vec::new(),
            timeline: Timeline::default(),
            meta: Meta::default(),
            piece,
            d: Dyn::default(),
            pid: None,
            procs: FxHashMap::default(),
            line_state: LineState::Normal,
            cur_binds: BindBuf::default(),
            capture: None,
        }
    }

    /// Ids of the rows every call may add to: unaccounted-for within and
    /// between calls, think time, and SQL*Net message from client.
    #[inline]
    fn fixed_ids(&mut self) -> (u32, u32, u32, u32) {
        if let Some(ids) = self.fixed {
            return ids;
        }
        let think = self.think_name.clone();
        let ids = (
            self.names.id(WITHIN),
            self.names.id(BETWEEN),
            self.names.id(&think),
            self.names.id(SNMFC),
        );
        self.fixed = Some(ids);
        ids
    }

    #[inline]
    fn comp_id(&mut self, id: u32, us: i64) {
        if self.comps.len() <= id as usize {
            self.comps.resize(id as usize + 1, Dur::default());
        }
        self.comps[id as usize].add(us);
    }

    /// The name id of a call: by its kind for the fixed names, from a small
    /// cache by address for wait names (the reader keeps one copy of each;
    /// the text is compared too, so a reused address cannot mislead).
    #[inline]
    fn name_of(&mut self, kind: CallKind, name: &str) -> u32 {
        let slot = match kind {
            CallKind::Lob | CallKind::Unaccounted | CallKind::Line => None,
            CallKind::Wait => {
                let h = (name.as_ptr() as usize >> 3) % NAME_CACHE;
                let (ptr, len, id) = self.name_cache[h];
                // In a piece, wait names are the reader's one copy each, alive
                // as long as the piece: the address says it all. Elsewhere
                // (heads handed over) names are copies: no cache.
                if self.piece && ptr == name.as_ptr() as usize && len == name.len() {
                    return id;
                }
                if !self.piece {
                    return self.names.id(name);
                }
                let id = self.names.id(name);
                self.name_cache[h] = (name.as_ptr() as usize, name.len(), id);
                return id;
            }
            k => Some(k as usize),
        };
        // A database call's name names the profile row of its CPU.
        match slot {
            Some(i) => {
                if let Some(id) = self.kind_names[i] {
                    return id;
                }
                let id = self.names.id(&cpu_row_name(name));
                self.kind_names[i] = Some(id);
                id
            }
            None => self.names.id(&cpu_row_name(name)),
        }
    }

    fn seen(&mut self, start: i64, end: i64) {
        let m = &mut self.meta;
        m.first_start = Some(m.first_start.map_or(start, |s| s.min(start)));
        m.last_end = Some(m.last_end.map_or(end, |e| e.max(end)));
    }

    /// The statement a call on cursor `k` belongs to.
    fn stmt_for(&mut self, k: u64, stmt: &Statement, offset: u64, line: u64) -> u32 {
        let ptr = stmt as *const Statement as usize;
        let old = match self.d.cursors.get(&k) {
            Some(st) => {
                if let Some(id) = st.stmt {
                    // The same statement as last time on this cursor: the
                    // address alone could be a new statement's after a free.
                    if st.stmt_ptr == ptr && self.same_stmt(id, stmt) {
                        return id;
                    }
                    // A placeholder on a cursor with a statement: the
                    // reader of a piece did not see the cursor parsed, the
                    // pieces before did (a call of the piece's head, added
                    // up after them).
                    if stmt.placeholder {
                        return id;
                    }
                }
                st.stmt
            }
            None => None,
        };
        let id = if stmt.placeholder && self.piece {
            self.inherited_entry(k, stmt, (offset, line))
        } else {
            let key = stmt_key(stmt);
            let first = (offset, line);
            self.stmt_entry(&key, key_dep(stmt), first, |detail| {
                StmtAgg::new(stmt, first, detail)
            })
        };
        if old.is_some() && old != Some(id) {
            // A new statement on a reused cursor ends what the old one did.
            self.end_exec(k);
        }
        let piece = self.piece;
        let st = self
            .d
            .cursors
            .entry(k)
            .or_insert_with(|| CursorState::new(piece));
        st.stmt = Some(id);
        st.stmt_ptr = ptr;
        id
    }

    /// In a piece, the id of cursor `k`'s statement when the reader did not
    /// see it parsed: one per process and cursor, settled when the pieces
    /// are added up (the reader reads pieces without a first pass over the
    /// file for the statements each inherits).
    fn inherited_entry(&mut self, k: u64, stmt: &Statement, first: (u64, u64)) -> u32 {
        let next = self.stmts.len() as u32;
        let id = self
            .inherited
            .entry((self.pid, k))
            .or_insert_with(|| (next, stmt.sqlid.as_str().into()))
            .0;
        if id == next {
            // Its detail is kept whatever the statements kept (but not
            // when none is): which statement it is is known only when the
            // pieces are added up.
            let detail = !self.compact || matches!(self.keep, Keep::Only(_));
            self.stmts.push(StmtAgg::new(stmt, first, detail));
        }
        id
    }

    /// The statement cursor `k` of process `pid` has here, if any.
    fn cursor_stmt(&self, pid: Option<u64>, k: u64) -> Option<u32> {
        let d = if pid == self.pid {
            &self.d
        } else {
            self.procs.get(&pid)?
        };
        d.cursors.get(&k)?.stmt
    }

    fn find_stmt(&self, key: &str, dep: Option<i64>) -> Option<u32> {
        self.stmt_ids.get(key)?.find(dep)
    }

    /// Whether `b`, at the address statement `id` was last seen at, is
    /// still that statement: the reader frees a cursor's statement when
    /// the cursor is parsed again, so an address can come back with another
    /// statement. Hash value and text length tell them apart without
    /// comparing texts (with no hash value, the key does).
    fn same_stmt(&self, id: u32, b: &Statement) -> bool {
        let a = &self.stmts[id as usize];
        a.hv == b.hv
            && a.sql_len == b.sql.len()
            && a.placeholder == b.placeholder
            && (a.hv.is_some() || self.find_stmt(&stmt_key(b), key_dep(b)) == Some(id))
    }

    /// Ends the execution open on cursor `k`, if any.
    fn end_exec(&mut self, k: u64) {
        if let Some(st) = self.d.cursors.get_mut(&k) {
            end_exec_of(st, k, &mut self.stmts, &mut self.d.boundary);
        }
    }

    pub fn event(&mut self, ev: &Ev<'_>) {
        if let LineState::Binds(k) = self.line_state {
            if !matches!(ev, Ev::Line { .. }) {
                self.end_binds(k);
            }
        }
        if self.capture.is_some() {
            let stat = matches!(ev, Ev::Line { text, .. } if text.starts_with(b"STAT #"));
            if !stat {
                self.flush_capture();
            }
        }
        match *ev {
            Ev::Db {
                kind,
                name,
                cursor,
                stmt,
                f,
                depmin,
                offset,
                line,
            } => self.db(kind, name, cursor, stmt, f, depmin, (offset, line)),
            Ev::Wait {
                name,
                cursor,
                stmt,
                ela,
                tim,
                offset,
                line,
            } => self.wait(name, cursor, stmt, ela, tim, (offset, line)),
            Ev::Line { text, .. } => self.line(text),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn db(
        &mut self,
        kind: CallKind,
        name: &str,
        cursor: Option<u64>,
        stmt: &Statement,
        f: &DbFields,
        depmin: i64,
        (offset, line): (u64, u64),
    ) {
        let dep = f.dep.unwrap_or(0);
        let top = dep == depmin;
        if let Some(d) = f.dep {
            self.meta.min_dep = Some(self.meta.min_dep.map_or(d, |m| m.min(d)));
        }
        if kind == CallKind::Close || f.plh.is_some() {
            self.meta.modern = true;
        }
        let name_id = self.name_of(kind, name);
        if top {
            self.comp_id(name_id, f.c.unwrap_or(0));
        }
        match (f.tim, f.e) {
            (Some(tim), Some(e)) => {
                self.seen(tim - e, tim);
                if top {
                    match self.d.detached.as_mut() {
                        Some(det) if det.first_top.is_none() => {
                            det.first_top = Some((tim, e, f.c.unwrap_or(0), name_id));
                            det.waits = std::mem::take(&mut self.d.pending_waits);
                            self.d.top_end = Some(tim);
                        }
                        _ => self.account(tim, e, f.c.unwrap_or(0), name_id),
                    }
                }
            }
            (Some(tim), None) => self.seen(tim, tim),
            _ => {}
        }
        let Some(k) = cursor else {
            // The recursive calls a commit runs (XCTEND has no cursor and no
            // depth) are its own: the next top-level call must not claim them.
            if kind == CallKind::Xctend {
                let level = depmin.max(0) as usize + 1;
                if let Some(det) = self.d.detached.as_mut() {
                    det.claim(level, Claim::Cleared);
                }
                if let Some(p) = self.d.pending.get_mut(level) {
                    *p = Pending::default();
                }
            }
            return;
        };
        let sid = self.stmt_for(k, stmt, offset, line);
        let e = f.e.unwrap_or(0);
        {
            let s = &mut self.stmts[sid as usize];
            if f.dep.is_some() {
                s.dep_seen = f.dep;
            }
            s.own.calls += 1;
            s.own.elapsed_us += e;
            s.own.cpu_us += f.c.unwrap_or(0);
            if let Some(s) = s.detail.as_deref_mut() {
                call_slot(&mut s.calls, kind).add_call(f);
                if matches!(kind, CallKind::Parse | CallKind::Exec | CallKind::Fetch) {
                    if s.og.is_none() {
                        s.og = f.og;
                    }
                    if s.plh == 0 {
                        s.plh = f.plh.unwrap_or(0);
                    }
                }
                match kind {
                    CallKind::Exec => s.exec_hist.add(e),
                    CallKind::Fetch => s.fetch_hist.add(e),
                    _ => {}
                }
            }
            call_slot(
                &mut totals_of(&mut self.stmts, &mut self.totals, sid).calls,
                kind,
            )
            .add_call(f);
        }
        self.execution(kind, k, sid, e, f.plh, (offset, line));
        if let Some(d) = f.dep {
            self.hierarchy(kind, sid, d, depmin, f);
        }
    }

    /// EXEC starts an execution, FETCH (and UNMAP) adds to it, PARSE and
    /// CLOSE end it.
    fn execution(
        &mut self,
        kind: CallKind,
        k: u64,
        sid: u32,
        e: i64,
        plh: Option<i64>,
        (offset, line): (u64, u64),
    ) {
        // One look-up of the cursor for all of it (this runs for every
        // database call).
        let Dyn {
            cursors, boundary, ..
        } = &mut self.d;
        let Some(st) = cursors.get_mut(&k) else {
            return;
        };
        if let Some(plh) = plh.filter(|&p| p != 0) {
            st.plh = plh;
        }
        match kind {
            CallKind::Exec => {
                end_exec_of(st, k, &mut self.stmts, boundary);
                let has_binds = st.binds.fresh;
                if has_binds {
                    // The block read becomes the execution's; the buffer it
                    // replaces is reused for the cursor's next block.
                    st.binds.fresh = false;
                    std::mem::swap(&mut st.exec_binds, &mut st.binds);
                    if let Some(s) = self.stmts[sid as usize].detail.as_deref_mut() {
                        s.binds.add(&st.exec_binds);
                    }
                }
                st.exec = ExecState::Open(OpenExec {
                    stmt: sid,
                    us: e,
                    offset,
                    line,
                    has_binds,
                });
            }
            CallKind::Fetch | CallKind::Unmap | CallKind::SortUnmap => {
                match &mut st.exec {
                    ExecState::Open(x) => x.us += e,
                    ExecState::Unknown(us) => *us += e,
                    ExecState::Idle => {
                        // Tracing began inside this execution.
                        st.exec = ExecState::Open(OpenExec {
                            stmt: sid,
                            us: e,
                            offset,
                            line,
                            has_binds: false,
                        })
                    }
                }
            }
            CallKind::Parse | CallKind::Close => end_exec_of(st, k, &mut self.stmts, boundary),
            _ => {}
        }
    }

    /// A call at depth `d` claims the calls at `d + 1` written before it
    /// (Oracle writes a call when it ends, so its recursive calls come
    /// first), and waits to be claimed by a call at `d − 1`.
    fn hierarchy(&mut self, kind: CallKind, sid: u32, d: i64, depmin: i64, f: &DbFields) {
        let d = d.max(0) as usize;
        if let Some(det) = self.d.detached.as_mut() {
            det.claim(d + 1, Claim::By(sid, kind));
        }
        if let Some(p) = self.d.pending.get_mut(d + 1) {
            let sums = std::mem::take(&mut p.sums);
            claim_children(&mut self.stmts, &mut self.totals, sid, kind, &sums);
            // Drained, not taken: the map keeps its room for the next
            // parent's children.
            for (child, e) in p.edges.drain() {
                add_edge(&self.stmts, &mut self.edges, sid, child, &e);
            }
        }
        if d as i64 > depmin {
            if self.d.pending.len() <= d {
                self.d.pending.resize(d + 1, Pending::default());
            }
            let p = &mut self.d.pending[d];
            p.sums.add_call(f);
            if self.stmts[sid as usize].detail.is_some() {
                p.edges.entry(sid).or_default().add(&EdgeAgg {
                    calls: 1,
                    elapsed_us: f.e.unwrap_or(0),
                    cpu_us: f.c.unwrap_or(0),
                });
            }
        }
    }

    /// The unaccounted-for time a top-level call closes, as the trace
    /// reader's `--unaccounted` counts it: its own e − c − the waits inside
    /// it, and the gaps before it.
    fn account(&mut self, tim: i64, e: i64, c: i64, name_id: u32) {
        let start = tim - e;
        // Contained in the call, ±1 µs for rounding, but not a wait that
        // ends when the call starts (as the trace reader's, see there).
        let inside =
            |w: &(i64, i64)| w.0 >= start - 1 && w.1 <= tim + 1 && (w.1 > start || w.1 == w.0);
        let waited: i64 = self
            .d
            .pending_waits
            .iter()
            .filter(|w| inside(w))
            .map(|w| w.1 - w.0)
            .sum();
        let mut within = e - c - waited;
        // The clock walk's rule, the trace reader's for `skew
        // --unaccounted` (see `step`): gaps and overlaps from the end of
        // the latest top-level event.
        let mut end = self.d.top_end;
        let mut gaps = std::mem::take(&mut self.gap_buf);
        gaps.clear();
        if self.d.held.is_some() {
            let first = self
                .d
                .pending_waits
                .iter()
                .find(|w| !inside(w))
                .copied()
                .unwrap_or((start, tim));
            self.hold(first);
        }
        for w in self.d.pending_waits.iter().filter(|w| !inside(w)) {
            step(&mut end, w.0, w.1, &mut gaps);
        }
        let n = gaps.len();
        step(&mut end, start, tim, &mut gaps);
        if gaps.len() > n && gaps[n].0 > gaps[n].1 {
            // The call's own overlap with the event before it comes out of
            // its unaccounted-for time within.
            let (a, b) = gaps.pop().unwrap_or_default();
            within -= a - b;
        }
        self.d.top_end = end;
        self.d.pending_waits.clear();
        self.timeline.add(start, tim, name_id, c);
        if within != 0 {
            let id = self.fixed_ids().0;
            self.comp_id(id, within);
            self.timeline.add(start, tim, id, within);
        }
        if !gaps.is_empty() {
            self.gaps(&gaps);
        }
        self.gap_buf = gaps;
    }

    /// The first event `(start, stop)` after a session line a piece could
    /// not tell a change from (see `Dyn::held`): the gap across is kept
    /// apart.
    #[cold]
    fn hold(&mut self, (start, stop): (i64, i64)) {
        if let Some(Some(prev)) = self.d.held.take() {
            let mut g = Vec::new();
            step(&mut Some(prev), start, stop, &mut g);
            self.d.held_gap = g.first().copied();
        }
    }

    /// Gaps `(from, to)` between top-level events; an overlap is a
    /// reversed pair, counted negative (the time was counted already).
    fn gaps(&mut self, gaps: &[(i64, i64)]) {
        let between: i64 = gaps.iter().map(|(a, b)| b - a).sum();
        if between != 0 {
            let id = self.fixed_ids().1;
            self.comp_id(id, between);
            for &(a, b) in gaps {
                self.timeline.add(a.min(b), a.max(b), id, b - a);
            }
        }
    }

    fn wait(
        &mut self,
        name: &str,
        cursor: Option<u64>,
        stmt: &Statement,
        ela: i64,
        tim: Option<i64>,
        (offset, line): (u64, u64),
    ) {
        let name_id = self.name_of(CallKind::Wait, name);
        let (_, _, think_id, snmfc_id) = self.fixed_ids();
        let think = ela >= self.thinktime_us
            && (name_id == snmfc_id || tracelab_trace::is_client_wait(name.as_bytes()));
        let comp = if think {
            self.comp_id(think_id, ela);
            think_id
        } else {
            self.comp_id(name_id, ela);
            name_id
        };
        if let Some(t) = tim {
            self.d.pending_waits.push((t - ela, t));
            self.timeline.add(t - ela, t, comp, ela);
            self.seen(t - ela, t);
        }
        match cursor.filter(|&k| k != 0) {
            Some(k) => {
                let sid = self.stmt_for(k, stmt, offset, line);
                if let Some(s) = self.stmts[sid as usize].detail.as_deref_mut() {
                    add_loose(&mut s.waits, name_id, ela, offset);
                }
                match self.stmts[sid as usize].class() {
                    Some(c) => add_side_wait(&mut self.side_waits[c], name_id, &one(ela), offset),
                    None => add_loose(
                        &mut totals_of(&mut self.stmts, &mut self.totals, sid).waits,
                        name_id,
                        ela,
                        offset,
                    ),
                }
            }
            None => add_loose(&mut self.loose_waits, name_id, ela, offset),
        }
    }

    fn line(&mut self, b: &[u8]) {
        match self.line_state {
            LineState::Binds(k) => {
                if b.is_empty() || b[0] == b' ' || self.cur_binds.open_quote {
                    self.bind_line(b);
                    return;
                }
                self.end_binds(k);
            }
            LineState::Normal => {}
        }
        let Some(&first) = b.first() else { return };
        match first {
            b'S' if b.starts_with(b"STAT #") => self.stat(b),
            b'B' if b.starts_with(b"BINDS #") => {
                let id = &b[7..];
                let end = id.iter().position(|&c| c == b':').unwrap_or(id.len());
                if let Some(k) = cursor_key(&id[..end]) {
                    self.cur_binds.start();
                    self.line_state = LineState::Binds(k);
                }
            }
            b'P' if b.starts_with(b"PARSING IN CURSOR ") => {
                let deep = memchr::memmem::find(b, b" dep=")
                    .is_some_and(|i| b.get(i + 5).is_some_and(|&d| d != b'0'));
                if deep {
                    self.meta.pic_internal += 1;
                } else {
                    self.meta.pic_user += 1;
                }
            }
            b'P' if b.starts_with(b"PARSE ERROR ") => self.meta.parse_errors += 1,
            b'E' if b.starts_with(b"ERROR #") => self.error(b),
            b'*' if b.starts_with(b"***") => self.star(b),
            b'T' if b.starts_with(b"Trace file ") => {
                if self.meta.trace_name.is_none() {
                    self.meta.trace_name = Some(lossy(&b[11..]));
                }
                if self.d.top_end.is_some() {
                    // Another file's header: files concatenated, a new
                    // clock walk (the trace reader's rule for skew).
                    self.flush_waits();
                    self.d.top_end = None;
                }
            }
            b'D' if b.starts_with(b"Dump file ") && self.meta.trace_name.is_none() => {
                self.meta.trace_name = Some(lossy(&b[10..]));
            }
            b't' if b.starts_with(b"tracelab ") => {
                // `tracelab 0.1.0 client-side trace of postgres (timer: vdso)`
                let s = lossy(b);
                if let Some(i) = s.find("-side trace of ") {
                    let side = s[..i].rsplit(' ').next().unwrap_or("").to_string();
                    let engine = s[i + 15..]
                        .split([' ', '('])
                        .next()
                        .unwrap_or("")
                        .to_string();
                    self.meta.tracelab.get_or_insert((side, engine));
                }
            }
            b'O' if b.starts_with(b"Oracle")
                && self.meta.oracle.is_none()
                && memchr::memmem::find(b, b"Release").is_some() =>
            {
                self.meta.oracle = Some(lossy(b));
            }
            _ => {}
        }
    }

    /// A line of the BINDS block being read, into `cur_binds` (the block
    /// goes to its cursor when it ends: one look-up per block).
    fn bind_line(&mut self, b: &[u8]) {
        let binds = &mut self.cur_binds;
        if binds.open_quote {
            binds.more(b);
            return;
        }
        let t = b.trim_ascii_start();
        if t.starts_with(b"Bind#") {
            binds.bind();
            // A damaged dump may put `value=` on the Bind# line itself
            // (the `=` first: a substring search per line costs more).
            if let Some(i) =
                memchr::memchr(b'=', t).and_then(|_| memchr::memmem::find(t, b"value="))
            {
                binds.value(&t[i + 6..]);
            }
        } else if let Some(v) = t.strip_prefix(b"value=") {
            binds.value(v);
        }
    }

    /// The BINDS block of cursor `k` ended: it is the cursor's now.
    fn end_binds(&mut self, k: u64) {
        self.line_state = LineState::Normal;
        let piece = self.piece;
        let st = self
            .d
            .cursors
            .entry(k)
            .or_insert_with(|| CursorState::new(piece));
        std::mem::swap(&mut st.binds, &mut self.cur_binds);
        st.binds.fresh = true;
        st.binds.open_quote = false;
    }

    fn stat(&mut self, b: &[u8]) {
        let Some(s) = parse_stat(b) else {
            self.meta.stat_unread += 1;
            return;
        };
        let new_capture = match &self.capture {
            Some((k, lines)) => *k != s.cursor || lines.last().is_some_and(|l| s.id <= l.id),
            None => true,
        };
        if new_capture {
            self.flush_capture();
            self.capture = Some((s.cursor, Vec::new()));
        }
        if let Some((_, lines)) = self.capture.as_mut() {
            lines.push(s);
        }
    }

    fn flush_capture(&mut self) {
        let Some((k, lines)) = self.capture.take() else {
            return;
        };
        match self
            .d
            .cursors
            .get(&k)
            .and_then(|st| st.stmt.map(|s| (s, st.plh)))
        {
            Some((sid, plh)) => {
                // (Not kept: the statement's detail is not.)
                if let Some(s) = self.stmts[sid as usize].detail.as_deref_mut() {
                    add_capture(&mut s.plans, &lines, plh);
                }
            }
            None if self.piece => self.d.orphans.push(Orphan::Plan(k, lines)),
            None => self.meta.stat_unread += lines.len() as u64,
        }
    }

    fn error(&mut self, b: &[u8]) {
        // `ERROR #139637903883184:err=27403 tim=3034700188655`
        let id = &b[7..];
        let end = id.iter().position(|&c| c == b':').unwrap_or(id.len());
        let Some(k) = cursor_key(&id[..end]) else {
            return;
        };
        let err = memchr::memmem::find(b, b"err=")
            .map(|i| {
                let v = &b[i + 4..];
                lossy(&v[..v.iter().position(|&c| c == b' ').unwrap_or(v.len())])
            })
            .unwrap_or_default();
        match self.d.cursors.get(&k).and_then(|st| st.stmt) {
            Some(sid) => add_error(&mut self.stmts[sid as usize], err),
            None if self.piece => self.d.orphans.push(Orphan::Error(k, err)),
            None => {}
        }
    }

    fn star(&mut self, b: &[u8]) {
        if b.starts_with(b"*** [ ") {
            self.meta.process_blocks += 1;
            if let Some(pid) = process_of(b) {
                self.switch(pid);
            }
            return;
        }
        if let Some(rest) = b.strip_prefix(b"*** SESSION ID:(") {
            let raw = &rest[..rest.iter().position(|&c| c == b')').unwrap_or(0)];
            match self.d.session.as_deref() {
                Some(s) if s != raw => {
                    // The same rule as `skew --unaccounted`: the waits
                    // before the change end this session's stretch.
                    self.flush_waits();
                    self.d.top_end = None;
                    self.d.session = Some(raw.into());
                }
                Some(_) => {}
                None => {
                    if self.piece && self.d.first_session.is_none() {
                        self.d.first_session = Some(raw.into());
                        if self.d.top_end.is_some() {
                            self.flush_waits();
                            self.d.held = Some(self.d.top_end.take());
                        }
                    }
                    self.d.session = Some(raw.into());
                }
            }
        }
        let m = &mut self.meta;
        if let Some(rest) = b.strip_prefix(b"*** SESSION ID:(") {
            let id = lossy(&rest[..rest.iter().position(|&c| c == b')').unwrap_or(0)]);
            if !m.sessions.contains(&id) && m.sessions.len() < 100 {
                m.sessions.push(id);
            }
        } else if m.started.is_none() && b.len() > 8 && b[4].is_ascii_digit() {
            // `*** 2024-03-26T18:41:12.322015-07:00 (PDB1(3))` or, up to
            // 12.1, `*** 2013-04-09 12:19:17.047`.
            let s = lossy(&b[4..]);
            m.started = Some(s.split(" (").next().unwrap_or("").to_string());
        }
    }

    /// Ends a reading: executions still open end, waits after the last
    /// call leave gaps. Only for the last state (a whole file, or pieces
    /// added up).
    pub fn finish(&mut self) {
        self.flush_capture();
        let others: Vec<Option<u64>> = self.procs.keys().copied().collect();
        self.finish_process();
        for pid in others {
            if let Some(d) = self.procs.remove(&pid) {
                self.d = d;
                self.finish_process();
            }
        }
        self.timeline.finish();
    }

    fn finish_process(&mut self) {
        let keys: Vec<u64> = self.d.cursors.keys().copied().collect();
        for k in keys {
            self.end_exec(k);
        }
        self.flush_waits();
    }

    /// The waits after the latest top-level call (at the end, or before a
    /// change of session): the gaps between them.
    fn flush_waits(&mut self) {
        if let (Some(&w), Some(_)) = (self.d.pending_waits.first(), self.d.held) {
            self.hold(w);
        }
        let mut end = self.d.top_end;
        let mut gaps = Vec::new();
        for w in std::mem::take(&mut self.d.pending_waits) {
            step(&mut end, w.0, w.1, &mut gaps);
        }
        self.d.top_end = end;
        self.gaps(&gaps);
    }

    /// Adds the piece read after this state: its head first, then its sums;
    /// its state then goes on from where the piece ended.
    pub fn absorb(&mut self, piece: Piece) {
        let start = self.pid;
        let Piece {
            heads, col: mut o, ..
        } = piece;
        if o.compact && !self.compact {
            // The piece kept no detail of some statements: neither does the
            // sum (the file is read again for the statements shown).
            self.drop_detail();
        }
        let names: Vec<u32> = o.names.list.iter().map(|n| self.names.id(n)).collect();
        // Each statement of the piece: its key and depth, and the process
        // and cursor it was inherited on.
        let n = o.stmts.len();
        let mut keys: Vec<(&str, Option<i64>)> = vec![("", None); n];
        for (key, ids) in &o.stmt_ids {
            for (dep, id) in ids.each() {
                keys[id as usize] = (key, dep);
            }
        }
        let mut inherited: FxHashMap<u32, (Option<u64>, u64)> = FxHashMap::default();
        for (&(pid, k), (id, key)) in &o.inherited {
            inherited.insert(*id, (pid, k));
            keys[*id as usize] = (key, None);
        }
        // A statement the piece inherited is the one its cursor has here
        // (a cursor never parsed stays a placeholder, as in a whole read).
        let ids: Vec<u32> = (0..n)
            .map(|i| {
                inherited
                    .get(&(i as u32))
                    .and_then(|&(pid, k)| self.cursor_stmt(pid.or(start), k))
                    .unwrap_or_else(|| {
                        let s = &o.stmts[i];
                        let (key, dep) = keys[i];
                        self.stmt_entry(key, dep, s.first, |detail| s.blank(detail))
                    })
            })
            .collect();
        drop(keys);
        let stmts = std::mem::take(&mut o.stmts);
        let mut dyns: FxHashMap<Option<u64>, Dyn> = o.procs;
        dyns.insert(o.pid, o.d);
        // Each process's head, in the state that process had here (the
        // process current at the piece's start is ours); then the process
        // goes on from where the piece left it (a process whose head never
        // ended left nothing else).
        for h in &heads {
            if let Some(pid) = h.pid.or(start) {
                self.switch(pid);
            }
            for ev in &h.events {
                self.event(&ev.view());
            }
            if h.started {
                if let Some(d) = dyns.remove(&h.pid) {
                    self.adopt(d, &ids, &names);
                }
            }
        }
        self.flush_capture();
        for (i, d) in o.comps.iter().enumerate() {
            if d.count == 0 {
                continue;
            }
            let id = names[i] as usize;
            if self.comps.len() <= id {
                self.comps.resize(id + 1, Dur::default());
            }
            self.comps[id].merge(d);
        }
        for (i, mut s) in stmts.into_iter().enumerate() {
            let id = ids[i];
            if let Some(t) = s.unclassed.take() {
                totals_of(&mut self.stmts, &mut self.totals, id).add(&t, Some(&names));
            }
            merge_stmt(&mut self.stmts[id as usize], s, &names);
        }
        for (mine, theirs) in self.totals.iter_mut().zip(&o.totals) {
            mine.add(theirs, Some(&names));
        }
        for (mine, theirs) in self.side_waits.iter_mut().zip(&o.side_waits) {
            for (n, (d, at)) in theirs.iter().enumerate() {
                if d.count > 0 {
                    add_side_wait(mine, names[n], d, *at);
                }
            }
        }
        for ((p, c), e) in o.edges {
            add_edge(
                &self.stmts,
                &mut self.edges,
                ids[p as usize],
                ids[c as usize],
                &e,
            );
        }
        for (n, d, at) in o.loose_waits {
            merge_wait(&mut self.loose_waits, names[n as usize], &d, at);
        }
        self.timeline.merge(o.timeline, &names);
        merge_meta(&mut self.meta, o.meta);
        if let Some(pid) = o.pid.or(start) {
            self.switch(pid);
        }
        self.line_state = o.line_state;
        self.cur_binds = o.cur_binds;
        self.capture = o.capture;
    }

    /// The id of the statement of key `key` at depth `key_dep`, made by
    /// `make` (empty; with its detail if the argument says so) if new.
    fn stmt_entry(
        &mut self,
        key: &str,
        key_dep: Option<i64>,
        first: (u64, u64),
        make: impl FnOnce(bool) -> StmtAgg,
    ) -> u32 {
        if let Some(id) = self.find_stmt(key, key_dep) {
            // A piece's head, added after its statements were, saw it first.
            let s = &mut self.stmts[id as usize];
            if first.0 < s.first.0 {
                s.first = first;
            }
            return id;
        }
        let id = self.stmts.len() as u32;
        let detail = self.wants_detail(key, key_dep);
        self.stmts.push(make(detail));
        match self.stmt_ids.get_mut(key) {
            Some(ids) => ids.push(key_dep, id),
            None => {
                self.stmt_ids.insert(key.into(), Ids::One(key_dep, id));
            }
        }
        id
    }

    /// Whether a new statement's detail is kept (see [`Keep`]).
    fn wants_detail(&mut self, key: &str, key_dep: Option<i64>) -> bool {
        match &self.keep {
            Keep::All => true,
            Keep::Only(set) => set.get(key).is_some_and(|d| d.contains(&key_dep)),
            Keep::Until { limit, seen } => {
                if self.compact {
                    return false;
                }
                let n = match seen {
                    Some(c) => c.fetch_add(1, Ordering::Relaxed) + 1,
                    None => self.stmts.len() + 1,
                };
                if n <= *limit {
                    return true;
                }
                self.drop_detail();
                false
            }
        }
    }

    /// Past the statements whose detail is kept: none is any more (their
    /// figures that rank them and add up to the totals stay).
    fn drop_detail(&mut self) {
        self.compact = true;
        for s in &mut self.stmts {
            s.detail = None;
        }
        self.edges = FxHashMap::default();
        for d in std::iter::once(&mut self.d).chain(self.procs.values_mut()) {
            for p in &mut d.pending {
                p.edges = FxHashMap::default();
            }
        }
    }

    /// The keys and depths of the statements `keep` says (by id).
    pub fn keys_of(&self, keep: &[bool]) -> KeySet {
        let mut set = KeySet::default();
        for (key, ids) in &self.stmt_ids {
            for (dep, id) in ids.each() {
                if keep[id as usize] {
                    set.entry(key.clone()).or_default().push(dep);
                }
            }
        }
        set
    }

    /// Makes `pid` the current process.
    fn switch(&mut self, pid: u64) {
        if self.pid == Some(pid) {
            return;
        }
        self.flush_capture();
        let next = self.procs.remove(&Some(pid)).unwrap_or_default();
        let old = std::mem::replace(&mut self.d, next);
        self.procs.insert(self.pid, old);
        self.pid = Some(pid);
    }

    /// Goes on with the state a later piece ended with (its statement and
    /// name ids translated by `ids` and `names`), settling what it saw of
    /// executions begun here and, if its head was cut short, the calls and
    /// waits pending here.
    fn adopt(&mut self, mut o: Dyn, ids: &[u32], names: &[u32]) {
        let detached = o.detached.take();
        if let Some(det) = &detached {
            self.settle_detached(det, ids, names);
        }
        for b in o.boundary {
            self.settle(b.cursor, ids[b.stmt as usize], b.us, b.ended);
        }
        for (k, st) in o.cursors {
            let mut st = st;
            st.stmt = st.stmt.map(|s| ids[s as usize]);
            st.stmt_ptr = 0;
            if let ExecState::Open(x) = &mut st.exec {
                x.stmt = ids[x.stmt as usize];
            }
            if let ExecState::Unknown(us) = st.exec {
                if let Some(stmt) = st.stmt {
                    self.settle(k, stmt, us, false);
                }
                // The execution open here (if any) goes on.
                let (exec, exec_binds) = self
                    .d
                    .cursors
                    .get(&k)
                    .map_or((ExecState::Idle, BindBuf::default()), |mine| {
                        (mine.exec, mine.exec_binds.clone())
                    });
                st.exec = exec;
                st.exec_binds = exec_binds;
            }
            self.d.cursors.insert(k, st);
        }
        for orphan in o.orphans {
            match orphan {
                Orphan::Plan(k, lines) => {
                    self.capture = Some((k, lines));
                    self.flush_capture();
                }
                Orphan::Error(k, err) => {
                    if let Some(sid) = self.d.cursors.get(&k).and_then(|st| st.stmt) {
                        add_error(&mut self.stmts[sid as usize], err);
                    }
                }
            }
        }
        let stmts = &self.stmts;
        let theirs = o.pending.into_iter().map(|mut p| {
            // Two of the piece's statements may be one here (a statement
            // it inherited, and the same parsed again in it).
            let mut edges = FxHashMap::default();
            for (child, e) in p.edges {
                let child = ids[child as usize];
                if stmts[child as usize].detail.is_some() {
                    edges.entry(child).or_insert_with(EdgeAgg::default).add(&e);
                }
            }
            p.edges = edges;
            p
        });
        match &detached {
            // The head ended with a top-level call, which took what was
            // pending here.
            None => {
                self.d.pending_waits = o.pending_waits;
                self.d.pending = theirs.collect();
            }
            // What no call of the piece claimed is still pending, the
            // piece's calls after it.
            Some(det) => {
                if det.first_top.is_some() {
                    self.d.pending_waits = o.pending_waits;
                } else {
                    self.d.pending_waits.extend(o.pending_waits);
                }
                for (level, p) in theirs.enumerate() {
                    if self.d.pending.len() <= level {
                        self.d.pending.resize(level + 1, Pending::default());
                    }
                    let mine = &mut self.d.pending[level];
                    if det.claims.get(level).is_some_and(|c| c.is_some()) {
                        *mine = p;
                    } else {
                        mine.append(p);
                    }
                }
            }
        }
        self.d.top_end = o.top_end.or(self.d.top_end);
        if let Some(first) = &o.first_session {
            let changed = self.d.session.as_deref().is_some_and(|m| m != &**first);
            if let (false, Some((a, b))) = (changed, o.held_gap) {
                // The same session: the gap across the line counts.
                self.gaps(&[(a, b)]);
            }
            if let (Some(prev), None) = (o.held, o.top_end) {
                // Nothing after the line yet: the walk goes on from here.
                self.d.top_end = if changed {
                    None
                } else {
                    prev.or(self.d.top_end)
                };
            }
        }
        if o.session.is_some() {
            self.d.session = o.session;
        }
    }

    /// The calls pending here go to the first call of a later piece that
    /// claimed their level (its head cut short, the piece read them without
    /// this state), and its first top-level call is accounted with the
    /// waits written before it here and there.
    fn settle_detached(&mut self, det: &Detached, ids: &[u32], names: &[u32]) {
        for (level, claim) in det.claims.iter().enumerate() {
            let Some(claim) = claim else { continue };
            let Some(p) = self.d.pending.get_mut(level) else {
                continue;
            };
            let p = std::mem::take(p);
            if let Claim::By(sid, kind) = *claim {
                let sid = ids[sid as usize];
                claim_children(&mut self.stmts, &mut self.totals, sid, kind, &p.sums);
                for (child, e) in p.edges {
                    add_edge(&self.stmts, &mut self.edges, sid, child, &e);
                }
            }
        }
        if let Some((tim, e, c, name)) = det.first_top {
            self.d.pending_waits.extend_from_slice(&det.waits);
            self.account(tim, e, c, names[name as usize]);
        }
    }

    /// A later piece's FETCHes (`us`) on cursor `k` before its first EXEC:
    /// they go on the execution open here, which ends if the piece ended it.
    fn settle(&mut self, k: u64, stmt: u32, us: i64, ended: bool) {
        let open = self
            .d
            .cursors
            .get_mut(&k)
            .and_then(|st| match &mut st.exec {
                ExecState::Open(x) if x.stmt == stmt => {
                    x.us += us;
                    Some(())
                }
                _ => None,
            })
            .is_some();
        if open {
            if ended {
                self.end_exec(k);
            }
            return;
        }
        if us == 0 {
            return;
        }
        // Tracing began inside this execution.
        let x = OpenExec {
            stmt,
            us,
            offset: 0,
            line: 0,
            has_binds: false,
        };
        if ended {
            self.stmts[stmt as usize].execution_done(&x, None);
        } else {
            let piece = self.piece;
            let st = self
                .d
                .cursors
                .entry(k)
                .or_insert_with(|| CursorState::new(piece));
            st.exec = ExecState::Open(x);
        }
    }
}

/// One top-level event `[start, stop]` after the clock walk's `end`, on the
/// rule `skew --unaccounted` follows too (the trace reader's `step`): a gap
/// before it is pushed as `(end, start)`; an overlap (it starts before the
/// event before it ended and ends after it) as the reversed `(end, start)`,
/// counted once; an event that ends before the one before it ended means
/// `tim` went back (files concatenated, a clock reset) and starts a new
/// walk, with nothing across the jump. The walk goes on from `stop`.
#[inline]
fn step(end: &mut Option<i64>, start: i64, stop: i64, gaps: &mut Vec<(i64, i64)>) {
    if let Some(prev) = *end {
        if start > prev || (start < prev && stop > prev) {
            gaps.push((prev, start));
        }
    }
    *end = Some(stop);
}

/// Ends the execution open on cursor `k` (state `st`), if any: into its
/// statement's figures, or, in a piece that did not see it begin, onto the
/// piece's boundary to be settled when the pieces are added up.
fn end_exec_of(st: &mut CursorState, k: u64, stmts: &mut [StmtAgg], boundary: &mut Vec<Boundary>) {
    match st.exec {
        ExecState::Open(x) => {
            st.exec = ExecState::Idle;
            let binds = x.has_binds.then_some(&st.exec_binds);
            stmts[x.stmt as usize].execution_done(&x, binds);
        }
        ExecState::Unknown(us) => {
            st.exec = ExecState::Idle;
            if let Some(stmt) = st.stmt {
                boundary.push(Boundary {
                    cursor: k,
                    stmt,
                    us,
                    ended: true,
                });
            }
        }
        ExecState::Idle => {}
    }
}

fn ev_text<'a>(ev: &Ev<'a>) -> &'a [u8] {
    match ev {
        Ev::Line { text, .. } => text,
        _ => b"",
    }
}

/// What makes two statements one: the SQL ID, or before 11.1 (no
/// `sqlid=`, the reader then writes `#<cursor>:<file>`) the hash value:
/// cursor numbers there are small and reused by every statement.
pub(crate) fn stmt_key(s: &Statement) -> std::borrow::Cow<'_, str> {
    if s.placeholder || !s.sqlid.starts_with('#') {
        return s.sqlid.as_str().into();
    }
    match s.hv {
        Some(hv) if hv != 0 => format!("hv={hv}").into(),
        // DDL has hv=0: its text tells statements apart.
        _ => {
            use std::hash::Hasher;
            let mut h = rustc_hash::FxHasher::default();
            h.write(s.sql.as_bytes());
            format!("hv=0/{:08x}", h.finish() as u32).into()
        }
    }
}

/// The depth that, with its key, makes a statement: a placeholder has none
/// (its depth is learnt from its calls).
fn key_dep(s: &Statement) -> Option<i64> {
    if s.placeholder {
        None
    } else {
        s.dep
    }
}

/// Whether `b`, at the address `a` was last seen at, is still `a` (see
/// [`Collector::same_stmt`]).
fn same_stmt(a: &Statement, b: &Statement) -> bool {
    a.hv == b.hv
        && a.sql.len() == b.sql.len()
        && a.placeholder == b.placeholder
        && (a.hv.is_some() || a.sqlid == b.sqlid)
}

/// trcsess's `*** [ Unix process pid: 9850 ]`, which starts a block of
/// that process (Windows: `thread id`): the process id.
fn process_of(b: &[u8]) -> Option<u64> {
    let rest = b.strip_prefix(b"*** [ ")?;
    let digits: Vec<u8> = rest
        .iter()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit())
        .copied()
        .collect();
    cursor_key(&digits)
}

/// What the profile row of a database call's CPU is named before the call:
/// the Method R Profiler names it `CPU service, EXEC calls`, TVD$XTAT sums
/// them into one `CPU` row; mrskew's default shows the bare call name, which
/// a DBA does not read as CPU. No Oracle wait event begins with it.
pub const CPU_ROW: &str = "CPU: ";

/// The profile row of a database call's CPU (`CPU: EXEC calls`).
pub(crate) fn cpu_row_name(call: &str) -> String {
    format!("{CPU_ROW}{call} calls")
}

/// The database call whose CPU a profile row is, if it is one.
pub(crate) fn cpu_row_call(row: &str) -> Option<&str> {
    row.strip_prefix(CPU_ROW)?.strip_suffix(" calls")
}

/// The label of the think-time row.
pub(crate) fn think_name(thinktime_us: i64) -> String {
    format!(
        "think time ({SNMFC} >= {} s)",
        trim_secs(thinktime_us as f64 * 1e-6)
    )
}

fn trim_secs(s: f64) -> String {
    let t = format!("{s:.6}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    t.to_string()
}

/// One wait of `us`.
fn one(us: i64) -> Dur {
    let mut d = Dur::default();
    d.add(us);
    d
}

/// Adds waits `d` of name `name`, first seen at `at`, to waits by name id
/// (the first seen is the earliest: waits come in file order, the pieces'
/// after those before them).
fn add_side_wait(v: &mut Vec<(Dur, u64)>, name: u32, d: &Dur, at: u64) {
    let i = name as usize;
    if v.len() <= i {
        v.resize(i + 1, (Dur::default(), u64::MAX));
    }
    let w = &mut v[i];
    w.0.merge(d);
    w.1 = w.1.min(at);
}

fn add_loose(v: &mut Vec<(u32, Dur, u64)>, name: u32, us: i64, offset: u64) {
    match v.iter_mut().find(|(n, ..)| *n == name) {
        Some((_, d, _)) => d.add(us),
        None => {
            let mut d = Dur::default();
            d.add(us);
            v.push((name, d, offset));
        }
    }
}

/// Adds wait statistics `d` of name `name`, first seen at `at`.
pub(crate) fn merge_wait(v: &mut Vec<(u32, Dur, u64)>, name: u32, d: &Dur, at: u64) {
    match v.iter_mut().find(|(n, ..)| *n == name) {
        Some((_, x, first)) => {
            x.merge(d);
            *first = (*first).min(at);
        }
        None => v.push((name, *d, at)),
    }
}

fn add_error(s: &mut StmtAgg, err: String) {
    let Some(s) = s.detail.as_deref_mut() else {
        return;
    };
    s.error_count += 1;
    if s.errors.len() < 20 && !s.errors.contains(&err) {
        s.errors.push(err);
    }
}

fn merge_stmt(s: &mut StmtAgg, o: StmtAgg, names: &[u32]) {
    if s.dep_seen.is_none() {
        s.dep_seen = o.dep_seen;
    }
    if o.first.0 < s.first.0 {
        s.first = o.first;
    }
    s.own.add(&o.own);
    let (Some(s), Some(o)) = (s.detail.as_deref_mut(), o.detail) else {
        return;
    };
    s.calls.add(&o.calls);
    s.children.add(&o.children);
    if s.og.is_none() {
        s.og = o.og;
    }
    if s.plh == 0 {
        s.plh = o.plh;
    }
    for (n, d, at) in o.waits {
        merge_wait(&mut s.waits, names[n as usize], &d, at);
    }
    for e in o.errors {
        if s.errors.len() < 20 && !s.errors.contains(&e) {
            s.errors.push(e);
        }
    }
    s.error_count += o.error_count;
    s.exec_hist.merge(&o.exec_hist);
    s.fetch_hist.merge(&o.fetch_hist);
    s.execution_hist.merge(&o.execution_hist);
    s.executions.merge(&o.executions);
    if let Some(x) = o.slowest {
        if s.slowest
            .as_ref()
            .is_none_or(|m| x.elapsed_us > m.elapsed_us)
        {
            s.slowest = Some(x);
        }
    }
    s.binds.merge(o.binds);
    for p in o.plans {
        match s.plans.iter_mut().find(|m| m.same_plan(&p)) {
            Some(m) => m.merge(&p),
            None => s.plans.push(p),
        }
    }
}

fn merge_meta(m: &mut Meta, o: Meta) {
    if m.trace_name.is_none() {
        m.trace_name = o.trace_name;
    }
    if m.oracle.is_none() {
        m.oracle = o.oracle;
    }
    if m.tracelab.is_none() {
        m.tracelab = o.tracelab;
    }
    if m.started.is_none() {
        m.started = o.started;
    }
    for s in o.sessions {
        if !m.sessions.contains(&s) && m.sessions.len() < 100 {
            m.sessions.push(s);
        }
    }
    m.process_blocks += o.process_blocks;
    m.pic_user += o.pic_user;
    m.pic_internal += o.pic_internal;
    m.parse_errors += o.parse_errors;
    m.stat_unread += o.stat_unread;
    m.modern |= o.modern;
    if let Some(s) = o.first_start {
        m.first_start = Some(m.first_start.map_or(s, |x| x.min(s)));
    }
    if let Some(e) = o.last_end {
        m.last_end = Some(m.last_end.map_or(e, |x| x.max(e)));
    }
    if let Some(d) = o.min_dep {
        m.min_dep = Some(m.min_dep.map_or(d, |x| x.min(d)));
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).trim_end().to_string()
}

/// Most events a piece keeps as its head (memory: a batch job's trace may
/// be one top-level call around millions of recursive ones). A head this
/// long is cut at its next database call with no bind block waiting for
/// its EXEC, and the process goes on in the piece "detached": the calls and
/// waits pending across the cut are settled when the pieces are added up
/// ([`Detached`]), so the result does not depend on this number.
pub(crate) const HEAD_MAX: usize = 100_000;

/// The first events of one process in a piece, up to its first top-level
/// call: what needs the state the pieces before left.
pub(crate) struct Head {
    /// The process (`None`: the one current at the piece's start).
    pid: Option<u64>,
    events: Vec<OwnedEv>,
    started: bool,
    /// Cursors with a BINDS block in the head and no call since: the head
    /// is not cut there (the block belongs to the cursor's next EXEC).
    open_binds: Vec<u64>,
}

/// One piece of a file: the head of each process, and the collector that
/// read the rest.
pub(crate) struct Piece {
    heads: Vec<Head>,
    /// The process the piece is in (trcsess's blocks).
    cur: Option<u64>,
    pub col: Collector,
    /// The statement last copied into a head, by address.
    last_stmt: Option<(usize, Arc<Statement>)>,
}

impl Piece {
    pub fn new(thinktime_us: i64, keep: Keep) -> Piece {
        Piece {
            heads: Vec::new(),
            cur: None,
            col: Collector::new(thinktime_us, true, keep),
            last_stmt: None,
        }
    }

    #[inline]
    pub fn on_call(&mut self, c: &Call<'_>) {
        let Some(ev) = Ev::from_call(c) else { return };
        let h = match self.heads.last() {
            Some(h) if h.pid == self.cur => self.heads.len() - 1,
            _ => match self.heads.iter().position(|h| h.pid == self.cur) {
                Some(i) => i,
                None => {
                    self.heads.push(Head {
                        pid: self.cur,
                        events: Vec::new(),
                        started: false,
                        open_binds: Vec::new(),
                    });
                    self.heads.len() - 1
                }
            },
        };
        if let Ev::Line {
            text: [b'*', ..], ..
        } = ev
        {
            if let Some(pid) = process_of(ev_text(&ev)) {
                // The collector switches process; so do the heads.
                self.cur = Some(pid);
                self.col.event(&ev);
                return;
            }
        }
        if self.heads[h].started {
            self.col.event(&ev);
            return;
        }
        let (ends, cut) = match &ev {
            Ev::Db {
                kind,
                f,
                depmin,
                cursor,
                ..
            } => {
                let head = &mut self.heads[h];
                if let Some(k) = cursor {
                    head.open_binds.retain(|b| b != k);
                }
                let ends = matches!(
                    kind,
                    CallKind::Parse
                        | CallKind::Exec
                        | CallKind::Fetch
                        | CallKind::Close
                        | CallKind::Unmap
                        | CallKind::SortUnmap
                ) && f.dep == Some(*depmin)
                    && f.tim.is_some()
                    && f.e.is_some();
                let cut = head.events.len() + 1 >= HEAD_MAX && head.open_binds.is_empty();
                (ends, cut)
            }
            Ev::Line { text, .. } => {
                if let Some(k) = text.strip_prefix(b"BINDS #").and_then(|id| {
                    let end = id.iter().position(|&c| c == b':').unwrap_or(id.len());
                    cursor_key(&id[..end])
                }) {
                    let head = &mut self.heads[h];
                    if !head.open_binds.contains(&k) {
                        head.open_binds.push(k);
                    }
                }
                (false, false)
            }
            Ev::Wait { .. } => (false, false),
        };
        let owned = self.own(&ev);
        let head = &mut self.heads[h];
        head.events.push(owned);
        if ends {
            head.started = true;
            if let Ev::Db { f, .. } = &ev {
                self.col.d.top_end = f.tim;
            }
        } else if cut {
            // The collector's state is this process's (it switches with
            // the heads): it goes on without what the head leaves pending.
            head.started = true;
            self.col.d.detached = Some(Box::default());
        }
    }

    fn own(&mut self, ev: &Ev<'_>) -> OwnedEv {
        let mut arc = |s: &Statement| -> Arc<Statement> {
            let ptr = s as *const Statement as usize;
            match &self.last_stmt {
                Some((p, a)) if *p == ptr && same_stmt(a, s) => a.clone(),
                _ => {
                    let a = Arc::new(s.clone());
                    self.last_stmt = Some((ptr, a.clone()));
                    a
                }
            }
        };
        match *ev {
            Ev::Db {
                kind,
                name,
                cursor,
                stmt,
                f,
                depmin,
                offset,
                line,
            } => OwnedEv::Db {
                kind,
                name: name.into(),
                cursor,
                stmt: arc(stmt),
                f: *f,
                depmin,
                offset,
                line,
            },
            Ev::Wait {
                name,
                cursor,
                stmt,
                ela,
                tim,
                offset,
                line,
            } => OwnedEv::Wait {
                name: name.into(),
                cursor,
                stmt: arc(stmt),
                ela,
                tim,
                offset,
                line,
            },
            Ev::Line { text, offset, line } => OwnedEv::Line {
                text: text.into(),
                offset,
                line,
            },
        }
    }
}

/// Adds up the pieces of one file, in file order, and finishes.
pub(crate) fn add_up(pieces: Vec<Piece>, thinktime_us: i64, keep: Keep) -> Collector {
    let mut acc = Collector::new(thinktime_us, false, keep);
    for p in pieces {
        acc.absorb(p);
    }
    acc.finish();
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_keys() {
        assert_eq!(cursor_key(b"140661336887528"), Some(140661336887528));
        assert_eq!(cursor_key(b"0x7ff225353470"), Some(0x7ff225353470));
        assert_eq!(cursor_key(b""), None);
        assert_eq!(cursor_key(b"12a"), None);
    }

    #[test]
    fn think_label() {
        assert_eq!(
            think_name(1_000_000),
            "think time (SQL*Net message from client >= 1 s)"
        );
        assert_eq!(
            think_name(5_000),
            "think time (SQL*Net message from client >= 0.005 s)"
        );
    }
}
